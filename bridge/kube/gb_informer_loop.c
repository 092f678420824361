/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informer_loop: the reflectors of gb_informer, one thread each (one for
 * all namespaces or one namespace, one per namespace of a set): a paged
 * list stamped with a fresh generation, then watches from its
 * resourceVersion, with client-go's rules for a normal end (rewatch), 410
 * Gone (relist) and failures (full-jitter backoff, a relist after several).
 * Every object goes through gb_informer_upsert / apply_delete / sweep,
 * which cache it and tell the handlers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_clock.h"
#include "gb_informer_int.h"
#include "gb_informer_test.h"
#include "gb_kube_watch.h"

/* ---- list ---------------------------------------------------------------------- */

struct list_ctx {
  struct gb_inf_reflector *r;
  uint32_t gen;
};

static int on_item(void *arg, json_object *obj) {
  struct list_ctx *lc = arg;
  struct gb_informer *inf = lc->r->inf;
  if (atomic_load(&inf->stopping))
    return GC_EUSAGE;
  int rc = gb_informer_upsert(inf, lc->r, obj, lc->gen);
  return rc == GC_ELIMIT ? GC_OK : rc;
}

static int do_list(struct gb_inf_reflector *r) {
  struct gb_informer *inf = r->inf;
  struct gb_kube_list_opts lo = {inf->label, inf->field, inf->o.page_limit};
  struct gb_kube_error e;
  char rv[GB_INF_RV_MAX];
  struct list_ctx lc = {r, atomic_fetch_add(&inf->gen_seq, 1) + 1};
  int rc = gb_kube_client_list(inf->client, r->path, &lo, on_item, &lc, rv, sizeof(rv), &e);
  if (rc) {
    if (rc != GC_EUSAGE) {
      char buf[1200];
      gb_informer_logf(inf, 1, "list%s%s failed: %s", r->ns ? " in " : "", r->ns ? r->ns : "",
                       gb_kube_error_str(&e, buf, sizeof(buf)));
    }
    return rc;
  }
  r->gen = lc.gen;
  gb_informer_sweep(inf, r->ns, lc.gen);
  pthread_mutex_lock(&inf->lock);
  snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
  snprintf(r->rv, sizeof(r->rv), "%s", rv);
  inf->st.lists++;
  r->synced = 1;
  size_t synced = 0;
  for (size_t i = 0; i < inf->n_refl; i++)
    synced += inf->refl[i].synced;
  inf->synced = synced == inf->n_refl;
  pthread_cond_broadcast(&inf->cond);
  pthread_mutex_unlock(&inf->lock);
  return GC_OK;
}

/* ---- watch ---------------------------------------------------------------------- */

struct watch_ctx {
  struct gb_informer *inf;
  struct gb_inf_reflector *r;
  uint64_t events;
  struct gb_kube_error err; /* from an ERROR event */
};

static void count_event(struct watch_ctx *w) {
  w->events++;
  pthread_mutex_lock(&w->inf->lock);
  w->inf->st.events++;
  pthread_mutex_unlock(&w->inf->lock);
}

static int on_event(void *arg, const struct gb_watch_event *ev) {
  struct watch_ctx *w = arg;
  struct gb_informer *inf = w->inf;
  if (atomic_load(&inf->stopping))
    return GB_INF_WATCH_STOP;
  switch (ev->type) {
  case GB_WATCH_BOOKMARK:
    pthread_mutex_lock(&inf->lock);
    inf->st.bookmarks++;
    pthread_mutex_unlock(&inf->lock);
    gb_informer_set_rv(inf, w->r, ev->rv);
    return 0;
  case GB_WATCH_ERROR:
    gb_kube_client_status_from_json(ev->object, 0, &w->err);
    return gb_kube_error_is_gone(&w->err) ? GB_INF_WATCH_GONE : GB_INF_WATCH_ERROR_EVENT;
  case GB_WATCH_ADDED:
  case GB_WATCH_MODIFIED: {
    count_event(w);
    int rc = gb_informer_upsert(inf, w->r, ev->object, w->r->gen);
    return rc == GC_ENOMEM ? rc : 0;
  }
  case GB_WATCH_DELETED:
    count_event(w);
    gb_informer_apply_delete(inf, w->r, ev->object, ev->rv);
    return 0;
  }
  return 0;
}

static int should_abort(void *arg) {
  struct watch_ctx *w = arg;
  return atomic_load(&w->inf->stopping);
}

/* ---- backoff --------------------------------------------------------------------- */

static double rand01(struct gb_inf_reflector *r) {
  return (double)rand_r(&r->rng) / ((double)RAND_MAX + 1.0);
}

/* Sleeps up to s seconds, waking early on stop. */
static void nap(struct gb_informer *inf, double s) {
  struct timespec ts;
  gb_clock_deadline_s(&ts, s);
  pthread_mutex_lock(&inf->lock);
  while (!atomic_load(&inf->stopping)) {
    if (pthread_cond_timedwait(&inf->cond, &inf->lock, &ts) == ETIMEDOUT)
      break;
  }
  pthread_mutex_unlock(&inf->lock);
}

/* Full-jitter exponential backoff: uniform in [0, min(max, base*2^n)],
 * floored at a tenth of base so failures never spin. */
static void backoff(struct gb_inf_reflector *r, int *attempt) {
  struct gb_informer *inf = r->inf;
  int n = *attempt < 30 ? *attempt : 30;
  double cap = inf->o.backoff_base_s * (double)(1u << n);
  if (cap > inf->o.backoff_max_s)
    cap = inf->o.backoff_max_s;
  double d = cap * rand01(r);
  if (d < inf->o.backoff_base_s / 10)
    d = inf->o.backoff_base_s / 10;
  (*attempt)++;
  nap(inf, d);
}

static void count(struct gb_informer *inf, uint64_t *field) {
  pthread_mutex_lock(&inf->lock);
  (*field)++;
  pthread_mutex_unlock(&inf->lock);
}

/* One watch from the reflector's resourceVersion.  Returns what ended it
 * (0 for a normal end) and fills *w and *e. */
static int watch_once(struct gb_inf_reflector *r, struct watch_ctx *w, struct gb_kube_error *e,
                      char *rv, size_t rv_cap) {
  struct gb_informer *inf = r->inf;
  pthread_mutex_lock(&inf->lock);
  snprintf(rv, rv_cap, "%s", r->rv);
  pthread_mutex_unlock(&inf->lock);
  long min = inf->o.min_watch_timeout_s;
  struct gb_kube_watch_opts wo = {rv,         min + (long)(rand01(r) * (double)min),
                                  1,          inf->label,
                                  inf->field, inf->o.max_event_bytes,
                                  inf->wkeeps, inf->n_wkeep};
  memset(w, 0, sizeof(*w));
  w->inf = inf;
  w->r = r;
  count(inf, &inf->st.watches);
  return gb_kube_watch_once(inf->client, r->path, &wo, on_event, should_abort, w, e);
}

/* ---- what the watch decodes ------------------------------------------------------ */

/* Adds a path of n steps (copied into the arena) to the watch's extra
 * paths; returns 1 when it does not fit (too many, too deep, a bad step). */
static int add_wpath(struct gb_informer *inf, const char *const *steps, size_t n) {
  if (inf->n_wkeep >= GB_KEEP_MAX - 1 || n == 0 || n > GB_KEEP_DEPTH - 1)
    return 1;
  struct gb_keep *k = &inf->wextra[inf->n_wkeep];
  memset(k, 0, sizeof(*k));
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(steps[i]);
    if (!len || len > GB_KEEP_STEP_MAX || !(k->path[i] = gc_arena_strdup(inf->warena, steps[i])))
      return 1;
  }
  inf->wkeeps[inf->n_wkeep++] = k;
  return 0;
}

/* The paths a handler's selection reads: the labels, each field's path. */
static int add_selection_paths(struct gb_informer *inf, const struct gb_selector *sel) {
  static const char *const labels[] = {"metadata", "labels"};
  for (size_t i = 0; i < sel->n; i++) {
    const char *key = sel->reqs[i].key;
    char seg[GB_KEEP_DEPTH][GB_KEEP_STEP_MAX + 1];
    const char *steps[GB_KEEP_DEPTH];
    size_t n = 0;
    for (const char *p = key; sel->reqs[i].field && *p && n < GB_KEEP_DEPTH;) {
      const char *dot = strchr(p, '.');
      size_t len = dot ? (size_t)(dot - p) : strlen(p);
      if (len > GB_KEEP_STEP_MAX)
        return 1;
      memcpy(seg[n], p, len);
      seg[n][len] = '\0';
      steps[n] = seg[n];
      n++;
      p += len + (dot != NULL);
      if (dot && !*p)
        return 1;
    }
    if (sel->reqs[i].field ? add_wpath(inf, steps, n) : add_wpath(inf, labels, 2))
      return 1;
  }
  return 0;
}

/* For every "[key=value]" step of the paths so far, the path to the
 * element's `key` member: a pruning after the watch's decode then selects
 * the same elements as a pruning of the whole object would. */
static int add_selector_keys(struct gb_informer *inf) {
  for (size_t i = 0, n = inf->n_wkeep; i < n; i++) {
    const struct gb_keep *k = inf->wkeeps[i];
    for (size_t s = 0; s < GB_KEEP_DEPTH && k->path[s]; s++) {
      const char *eq = k->path[s][0] == '[' ? strchr(k->path[s], '=') : NULL;
      if (!eq)
        continue;
      char key[GB_KEEP_STEP_MAX + 1];
      size_t kl = (size_t)(eq - k->path[s]) - 1;
      memcpy(key, k->path[s] + 1, kl);
      key[kl] = '\0';
      const char *steps[GB_KEEP_DEPTH + 1];
      for (size_t j = 0; j <= s; j++)
        steps[j] = k->path[j];
      steps[s + 1] = key;
      if (add_wpath(inf, steps, s + 2))
        return 1;
    }
  }
  return 0;
}

int gb_informer_seal_watch(struct gb_informer *inf) {
  inf->n_wkeep = 0;
  if (!inf->n_keeps)
    return GC_OK;
  if (!inf->warena && !(inf->warena = gc_arena_new(256u << 10)))
    return GC_ENOMEM;
  for (size_t i = 0; i < inf->n_keeps; i++)
    inf->wkeeps[inf->n_wkeep++] = inf->keeps[i];
  int whole = inf->n_wkeep >= GB_KEEP_MAX;
  for (size_t i = 0; i < inf->n_h && !whole; i++)
    whole = add_selection_paths(inf, &inf->h[i].sel);
  if (whole || add_selector_keys(inf))
    inf->n_wkeep = 0; /* does not fit: the watch parses whole objects */
  return GC_OK;
}

void gb_informer_watch_keeps(struct gb_informer *inf, const struct gb_keep *const **paths,
                             size_t *n) {
  *paths = inf->wkeeps;
  *n = inf->n_wkeep;
}

void *gb_informer_run(void *arg) {
  struct gb_inf_reflector *r = arg;
  struct gb_informer *inf = r->inf;
  int need_list = 1, attempt = 0, failures = 0;
  while (!atomic_load(&inf->stopping)) {
    if (need_list) {
      int rc = do_list(r);
      if (atomic_load(&inf->stopping))
        break;
      if (rc) {
        count(inf, &inf->st.list_failures);
        backoff(r, &attempt);
        continue;
      }
      need_list = 0;
      failures = 0;
    }
    char rv[GB_INF_RV_MAX], buf[1200];
    struct watch_ctx w;
    struct gb_kube_error e;
    double t0 = gb_clock_s();
    int rc = watch_once(r, &w, &e, rv, sizeof(rv));
    if (atomic_load(&inf->stopping) || rc == GB_INF_WATCH_STOP)
      break;
    if (rc == GB_INF_WATCH_GONE || (rc == GC_EIO && gb_kube_error_is_gone(&e))) {
      count(inf, &inf->st.relists_gone);
      gb_informer_logf(inf, 0, "resourceVersion %s expired (%s); relisting", rv,
                       gb_kube_error_str(rc == GB_INF_WATCH_GONE ? &w.err : &e, buf, sizeof(buf)));
      need_list = 1;
      continue;
    }
    if (rc == GC_OK) {
      /* A normal end.  One that came back at once with nothing is treated
       * as a failure so a misbehaving server cannot make us spin. */
      if (w.events == 0 && gb_clock_s() - t0 < 1.0) {
        failures++;
        backoff(r, &attempt);
      } else {
        attempt = 0;
        failures = 0;
      }
      continue;
    }
    count(inf, &inf->st.watch_failures);
    gb_informer_logf(
        inf, 1, "watch failed: %s",
        gb_kube_error_str(rc == GB_INF_WATCH_ERROR_EVENT ? &w.err : &e, buf, sizeof(buf)));
    if (w.events > 0)
      attempt = 0; /* it was working: restart the backoff sequence */
    if (++failures >= inf->o.relist_after_failures)
      need_list = 1;
    /* A 429 or 503 with Retry-After sets a floor on the wait. */
    int ra = rc == GB_INF_WATCH_ERROR_EVENT ? w.err.retry_after_s : e.retry_after_s;
    if (ra > 0)
      nap(inf, ra < inf->o.backoff_max_s ? ra : inf->o.backoff_max_s);
    backoff(r, &attempt);
  }
  return NULL;
}
