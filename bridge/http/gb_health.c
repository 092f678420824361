/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_health: /healthz, /livez and /readyz (see gb_health.h).
 */
#include "gb_health.h"
#include "gb_health_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_log.h"

struct check {
  char name[GB_HEALTH_NAME_MAX + 1];
  unsigned kinds;
  gb_health_check_fn fn; /* NULL for a flag */
  void *ctx;
  int flag_ok;                          /* flags only; guarded by mu */
  char flag_reason[GB_HEALTH_REASON_MAX]; /* flags only; guarded by mu */
};

/* Where one endpoint's checks come from. */
struct endpoint {
  struct gb_health *h;
  unsigned kind;
  const char *name; /* "healthz", "livez", "readyz" */
};

struct gb_health {
  pthread_mutex_t mu;
  struct endpoint eps[3]; /* healthz, livez, readyz: route contexts */
  struct check checks[GB_HEALTH_MAX_CHECKS];
  size_t n;
  atomic_int shutting_down;
};

static int ping_check(void *ctx, char *reason, size_t size) { return 0; }

static int shutdown_check(void *ctx, char *reason, size_t size) {
  struct gb_health *h = ctx;
  if (!atomic_load(&h->shutting_down))
    return 0;
  snprintf(reason, size, "process is shutting down");
  return 1;
}

static int valid_name(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (!n || n > GB_HEALTH_NAME_MAX)
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
      return 0;
  return 1;
}

static int add(struct gb_health *h, unsigned kinds, const char *name, gb_health_check_fn fn,
               void *ctx, int ok, const char *reason) {
  if (!h || !valid_name(name) || !kinds || (kinds & ~(GB_HEALTH_LIVE | GB_HEALTH_READY)))
    return GC_EINVAL;
  int rc = 0;
  pthread_mutex_lock(&h->mu);
  for (size_t i = 0; i < h->n; i++)
    if (!strcmp(h->checks[i].name, name)) {
      rc = GC_EUSAGE;
      goto out;
    }
  if (h->n >= GB_HEALTH_MAX_CHECKS) {
    rc = GC_ELIMIT;
    goto out;
  }
  struct check *c = &h->checks[h->n++];
  memset(c, 0, sizeof(*c));
  snprintf(c->name, sizeof(c->name), "%s", name);
  c->kinds = kinds;
  c->fn = fn;
  c->ctx = ctx;
  c->flag_ok = ok;
  snprintf(c->flag_reason, sizeof(c->flag_reason), "%s", reason ? reason : "not ready");
out:
  pthread_mutex_unlock(&h->mu);
  return rc;
}

struct gb_health *gb_health_new(void) {
  struct gb_health *h = calloc(1, sizeof(*h));
  if (!h)
    return NULL;
  pthread_mutex_init(&h->mu, NULL);
  h->eps[0] = (struct endpoint){h, GB_HEALTH_LIVE, "healthz"};
  h->eps[1] = (struct endpoint){h, GB_HEALTH_LIVE, "livez"};
  h->eps[2] = (struct endpoint){h, GB_HEALTH_READY, "readyz"};
  add(h, GB_HEALTH_LIVE | GB_HEALTH_READY, "ping", ping_check, NULL, 1, NULL);
  add(h, GB_HEALTH_READY, "shutdown", shutdown_check, h, 1, NULL);
  return h;
}

void gb_health_free(struct gb_health *h) {
  if (!h)
    return;
  pthread_mutex_destroy(&h->mu);
  free(h);
}

int gb_health_add_check(struct gb_health *h, unsigned kinds, const char *name,
                        gb_health_check_fn fn, void *ctx) {
  if (!fn)
    return GC_EINVAL;
  return add(h, kinds, name, fn, ctx, 1, NULL);
}

int gb_health_add_flag(struct gb_health *h, unsigned kinds, const char *name, int ok,
                       const char *reason) {
  return add(h, kinds, name, NULL, NULL, ok, reason);
}

int gb_health_set_flag(struct gb_health *h, const char *name, int ok, const char *reason) {
  if (!h || !name)
    return GC_EINVAL;
  int rc = GC_ENOTFOUND;
  pthread_mutex_lock(&h->mu);
  for (size_t i = 0; i < h->n; i++) {
    struct check *c = &h->checks[i];
    if (c->fn || strcmp(c->name, name))
      continue;
    c->flag_ok = ok;
    snprintf(c->flag_reason, sizeof(c->flag_reason), "%s", reason ? reason : "not ready");
    rc = 0;
    break;
  }
  pthread_mutex_unlock(&h->mu);
  return rc;
}

void gb_health_shutdown(struct gb_health *h) {
  if (h)
    atomic_store(&h->shutting_down, 1);
}

/* Runs check i; returns 0 when healthy, else fills reason. */
static int run_check(struct gb_health *h, size_t i, char *reason, size_t size) {
  gb_health_check_fn fn;
  void *ctx;
  pthread_mutex_lock(&h->mu);
  struct check *c = &h->checks[i];
  fn = c->fn;
  ctx = c->ctx;
  int bad = 0;
  if (!fn && !c->flag_ok) {
    bad = 1;
    snprintf(reason, size, "%s", c->flag_reason);
  }
  pthread_mutex_unlock(&h->mu);
  if (!fn)
    return bad;
  reason[0] = '\0';
  if (!fn(ctx, reason, size))
    return 0;
  reason[size - 1] = '\0';
  if (!reason[0])
    snprintf(reason, size, "check failed");
  return 1;
}

static size_t n_checks(struct gb_health *h) {
  pthread_mutex_lock(&h->mu);
  size_t n = h->n;
  pthread_mutex_unlock(&h->mu);
  return n;
}

int gb_health_ok(struct gb_health *h, unsigned kind) {
  if (!h)
    return 0;
  char reason[GB_HEALTH_REASON_MAX];
  size_t n = n_checks(h);
  for (size_t i = 0; i < n; i++)
    if ((h->checks[i].kinds & kind) && run_check(h, i, reason, sizeof(reason)))
      return 0;
  return 1;
}

/* The largest answer (and failure log line) built: a few hundred checks
 * with their reasons stay far below it. */
#define HEALTH_TEXT_MAX ((size_t)1 << 20)

/* Hands the text to the response with the status code. */
static int answer(struct gb_http_response *resp, int code, struct gb_buf *t) {
  char *text = NULL;
  size_t len = 0;
  int rc = gb_buf_take(t, &text, &len);
  if (!rc)
    gb_http_response_take(resp, code, NULL, text, len);
  return rc;
}

static int single_check(struct endpoint *ep, const char *name, struct gb_http_response *resp) {
  struct gb_health *h = ep->h;
  size_t n = n_checks(h);
  for (size_t i = 0; i < n; i++) {
    if (!(h->checks[i].kinds & ep->kind) || strcmp(h->checks[i].name, name))
      continue;
    char reason[GB_HEALTH_REASON_MAX];
    if (run_check(h, i, reason, sizeof(reason)))
      return gb_http_response_printf(resp, 500, NULL, "internal server error: %s\n", reason);
    return gb_http_response_printf(resp, 200, NULL, "ok");
  }
  return gb_http_response_printf(resp, 404, NULL, "404 page not found\n");
}

static int is_excluded(const struct gb_http_request *req, const char *name, int *used) {
  for (size_t i = 0; i < req->n_query; i++)
    if (!strcmp(req->query[i].key, "exclude") && req->query[i].value &&
        !strcmp(req->query[i].value, name)) {
      used[i] = 1;
      return 1;
    }
  return 0;
}

static int health_handler(void *ctx, const struct gb_http_request *req,
                          struct gb_http_response *resp) {
  struct endpoint *ep = ctx;
  struct gb_health *h = ep->h;
  if (req->subpath && req->subpath[0])
    return single_check(ep, req->subpath, resp);

  int used[GB_HTTP_MAX_QUERY] = {0};
  struct gb_buf t, failed_log;
  gb_buf_init(&t, HEALTH_TEXT_MAX);
  gb_buf_init(&failed_log, HEALTH_TEXT_MAX);
  int failed = 0;
  size_t n = n_checks(h);
  for (size_t i = 0; i < n; i++) {
    const struct check *c = &h->checks[i];
    if (!(c->kinds & ep->kind))
      continue;
    if (is_excluded(req, c->name, used)) {
      gb_buf_printf(&t, "[+]%s excluded: ok\n", c->name);
      continue;
    }
    char reason[GB_HEALTH_REASON_MAX];
    if (run_check(h, i, reason, sizeof(reason))) {
      failed = 1;
      gb_buf_printf(&t, "[-]%s failed: reason withheld\n", c->name);
      gb_buf_printf(&failed_log, "%s%s: %s", gb_buf_len(&failed_log) ? "; " : "", c->name, reason);
    } else {
      gb_buf_printf(&t, "[+]%s ok\n", c->name);
    }
  }
  /* Exclusions that named no check are reported, as kube-apiserver does. */
  int warned = 0;
  for (size_t i = 0; i < req->n_query && i < GB_HTTP_MAX_QUERY; i++) {
    if (used[i] || strcmp(req->query[i].key, "exclude") || !req->query[i].value)
      continue;
    int dup = 0;
    for (size_t j = 0; j < i; j++)
      if (!used[j] && !strcmp(req->query[j].key, "exclude") && req->query[j].value &&
          !strcmp(req->query[j].value, req->query[i].value))
        dup = 1;
    if (dup)
      continue;
    gb_buf_printf(&t, "%s\"%s\"",
                  warned ? "," : "warn: some health checks cannot be excluded: no matches for ",
                  req->query[i].value);
    warned = 1;
  }
  if (warned)
    gb_buf_printf(&t, "\n");

  int rc = 0;
  if (t.err || failed_log.err) {
    rc = t.err ? t.err : failed_log.err;
  } else if (failed) {
    gb_log(GB_LOG_WARN, "health check failed", "endpoint", ep->name, "failed",
           gb_buf_ptr(&failed_log), NULL);
    gb_buf_printf(&t, "%s check failed\n", ep->name);
    rc = answer(resp, 500, &t);
  } else if (gb_http_request_query(req, "verbose", NULL)) {
    gb_buf_printf(&t, "%s check passed\n", ep->name);
    rc = answer(resp, 200, &t);
  } else {
    rc = gb_http_response_printf(resp, 200, NULL, "ok");
  }
  gb_buf_free(&t);
  gb_buf_free(&failed_log);
  return rc;
}

size_t gb_health_routes(struct gb_health *h, struct gb_http_route *out, size_t cap) {
  if (!h || !out || cap < 3)
    return 0;
  struct endpoint *eps = h->eps;
  out[0] = (struct gb_http_route){"/healthz", 1, GB_HTTP_GET, health_handler, &eps[0], 0};
  out[1] = (struct gb_http_route){"/livez", 1, GB_HTTP_GET, health_handler, &eps[1], 0};
  out[2] = (struct gb_http_route){"/readyz", 1, GB_HTTP_GET, health_handler, &eps[2], 0};
  return 3;
}

/* ---- /metrics ---------------------------------------------------------- */

static int metrics_handler(void *ctx, const struct gb_http_request *req,
                           struct gb_http_response *resp) {
  char *text = NULL;
  size_t len = 0;
  int rc = gb_metrics_render(ctx, &text, &len);
  if (rc < 0)
    return rc;
  gb_http_response_take(resp, 200, GB_METRICS_CONTENT_TYPE, text, len);
  return 0;
}

struct gb_http_route gb_health_metrics_route(struct gb_metrics *reg, const char *path) {
  struct gb_http_route r = {path ? path : "/metrics", 0, GB_HTTP_GET, metrics_handler, reg, 0};
  return r;
}
