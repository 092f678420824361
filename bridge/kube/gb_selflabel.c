/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_selflabel: one label on this process's own pod (see the header).
 */
#include "gb_selflabel.h"
#include "gb_selflabel_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_clock.h"
#include "gb_log.h"
#include "gc_name.h"

#define KEY_MAX 317
#define VALUE_MAX 63
#define FINAL_TIMEOUT_MS 2000 /* the removal at shutdown: within the termination grace */

struct gb_selflabel {
  struct gb_selflabel_opts o;
  char ns[254], pod[254], key[KEY_MAX + 1], value[VALUE_MAX + 1];
  char path[600];
  pthread_mutex_t mu; /* guards everything below; with cond */
  pthread_cond_t cond;
  int want, have, pod_missing, stopping, started, kick;
  int failing;          /* the last round failed */
  int known;            /* the label's state has been known once (read or written) */
  int64_t off_since_ms; /* when the label was last wanted off (monotonic) */
  uint64_t reads, writes, failures;
  char last_error[256];
  pthread_t th;
};

/* ---- one read or write ------------------------------------------------------ */

/* 1 when obj carries the label with our value, else 0. */
static int label_of(const struct gb_selflabel *s, json_object *obj) {
  json_object *md = NULL, *labels = NULL, *v = NULL;
  if (!json_object_object_get_ex(obj, "metadata", &md) ||
      !json_object_object_get_ex(md, "labels", &labels) ||
      !json_object_object_get_ex(labels, s->key, &v) || !json_object_is_type(v, json_type_string))
    return 0;
  return !strcmp(json_object_get_string(v), s->value);
}

static void count_error(struct gb_selflabel *s, const struct gb_kube_error *e) {
  if (!s->o.errors)
    return;
  const char *reason = e->http == 0     ? "transport"
                       : e->http >= 500 ? "status_5xx"
                       : e->http == 429 ? "throttled"
                                        : "status_4xx";
  gb_metric_counter_inc(s->o.errors, (const char *[]){"leader-label", reason});
}

/* Result of one request: have = 0/1 when known, -1 when it failed. */
static int finish(struct gb_selflabel *s, int rc, json_object *obj, const struct gb_kube_error *e,
                  const char *what, int *missing) {
  *missing = 0;
  if (rc == 0)
    return label_of(s, obj);
  if (rc == GC_ENOTFOUND || (rc == GC_EIO && e->http == 403)) {
    /* A pod we may not read or that does not exist carries no label of ours. */
    *missing = 1;
    return 0;
  }
  count_error(s, e);
  char buf[200];
  gb_kube_error_str(e, buf, sizeof(buf));
  pthread_mutex_lock(&s->mu); /* the readiness check reads it */
  snprintf(s->last_error, sizeof(s->last_error), "%s: %s", what, buf);
  pthread_mutex_unlock(&s->mu);
  return -1;
}

static int do_read(struct gb_selflabel *s, int *missing) {
  json_object *obj = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = gb_kube_client_request_timeout(s->o.client, GB_KUBE_GET, "GET", s->path, NULL, NULL, 0,
                                          s->o.request_timeout_ms, &obj, &e);
  int have = finish(s, rc, obj, &e, "read", missing);
  json_object_put(obj);
  return have;
}

/* Sets (on) or removes the label: a merge patch of metadata.labels only,
 * within timeout_ms. */
static int do_write(struct gb_selflabel *s, int on, long timeout_ms, int *missing) {
  json_object *patch = json_object_new_object(), *md = json_object_new_object(),
              *labels = json_object_new_object(), *obj = NULL;
  if (!patch || !md || !labels) {
    json_object_put(patch);
    json_object_put(md);
    json_object_put(labels);
    *missing = 0;
    return -1;
  }
  json_object_object_add(labels, s->key, on ? json_object_new_string(s->value) : NULL);
  json_object_object_add(md, "labels", labels);
  json_object_object_add(patch, "metadata", md);
  const char *body = json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN);
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = gb_kube_client_request_timeout(s->o.client, GB_KUBE_PATCH, "PATCH", s->path,
                                          "application/merge-patch+json", body, strlen(body),
                                          timeout_ms, &obj, &e);
  int have = finish(s, rc, obj, &e, on ? "label" : "unlabel", missing);
  json_object_put(obj);
  json_object_put(patch);
  return have;
}

/* ---- the worker ----------------------------------------------------------------- */

/* Logs what changed: a pod that cannot carry the label (once), the first
 * failure of a run of them, and the recovery. */
static void note(struct gb_selflabel *s, int have, int missing, int was_missing, int was_failing) {
  if (missing && !was_missing)
    gb_log(GB_LOG_WARN, "cannot read or label this process's own pod: no leader label", "namespace",
           s->ns, "pod", s->pod, "label", s->key, NULL);
  if (have < 0 && !was_failing)
    gb_log(GB_LOG_WARN, "leader label not in step; retrying", "pod", s->pod, "error", s->last_error,
           NULL);
  if (have >= 0 && was_failing)
    gb_log(GB_LOG_INFO, "leader label in step again", "pod", s->pod, NULL);
}

/* One round: read when unknown or due, write when it differs.  Called
 * without mu.  Returns the time to wait before the next round (ns). */
static int64_t round_once(struct gb_selflabel *s, int want, int have, int resync) {
  int missing = 0;
  if (have < 0 || resync) {
    have = do_read(s, &missing);
    pthread_mutex_lock(&s->mu);
    s->reads++;
    pthread_mutex_unlock(&s->mu);
  }
  if (have >= 0 && have != want && !missing) {
    have = do_write(s, want, s->o.request_timeout_ms, &missing);
    pthread_mutex_lock(&s->mu);
    s->writes++;
    pthread_mutex_unlock(&s->mu);
    if (have >= 0 && !missing)
      gb_log(GB_LOG_INFO, want ? "labelled this pod as the leader" : "removed the leader label",
             "pod", s->pod, "label", s->key, NULL);
  }
  pthread_mutex_lock(&s->mu);
  int was_missing = s->pod_missing, was_failing = s->failing;
  s->pod_missing = missing;
  s->have = have;
  s->known |= have >= 0;
  s->failing = have < 0;
  s->failures += have < 0;
  pthread_mutex_unlock(&s->mu);
  note(s, have, missing, was_missing, was_failing);
  return (int64_t)((have < 0 ? s->o.retry_s : s->o.resync_s) * 1e9);
}

static void *worker(void *arg) {
  struct gb_selflabel *s = arg;
  int resync = 1;
  pthread_mutex_lock(&s->mu);
  while (!s->stopping) {
    int want = s->want, have = s->have;
    s->kick = 0;
    pthread_mutex_unlock(&s->mu);
    int64_t wait_ns = round_once(s, want, have, resync);
    pthread_mutex_lock(&s->mu);
    struct timespec until;
    gb_clock_deadline(&until, wait_ns);
    while (!s->stopping && !s->kick && (s->have < 0 || s->have == s->want || s->pod_missing) &&
           pthread_cond_timedwait(&s->cond, &s->mu, &until) == 0)
      ;
    /* Woken by the timer (not a kick, not a difference): time to re-read.
     * A pod last seen missing is always read again first: a write is only
     * ever sent to a pod that was just read. */
    resync = s->pod_missing || (!s->kick && s->have >= 0 && s->have == s->want);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- the interface ---------------------------------------------------------------- */

int gb_selflabel_new(const struct gb_selflabel_opts *o, struct gb_selflabel **out,
                     struct gc_diags *d) {
  *out = NULL;
  if (!o || !o->client || !o->ns || !*o->ns || !o->pod || !*o->pod || !o->key || !o->value) {
    gc_diags_addf(d, "leader label: the client, the pod's namespace and name, and the label "
                     "are required");
    return GC_EINVAL;
  }
  if (!gc_name_is_qualified(o->key, strlen(o->key)) || strlen(o->key) > KEY_MAX ||
      !gc_name_is_label_value(o->value, strlen(o->value)) || strlen(o->value) > VALUE_MAX) {
    gc_diags_addf(d, "leader label: %s=%s is not a valid label", o->key, o->value);
    return GC_EINVAL;
  }
  struct gb_selflabel *s = calloc(1, sizeof(*s));
  if (!s)
    return GC_ENOMEM;
  s->o = *o;
  if (s->o.retry_s <= 0)
    s->o.retry_s = 1;
  if (s->o.resync_s <= 0)
    s->o.resync_s = 30;
  if (s->o.stale_s <= 0)
    s->o.stale_s = 5;
  if (s->o.request_timeout_ms <= 0)
    s->o.request_timeout_ms = 5000;
  snprintf(s->ns, sizeof(s->ns), "%s", o->ns);
  snprintf(s->pod, sizeof(s->pod), "%s", o->pod);
  snprintf(s->key, sizeof(s->key), "%s", o->key);
  snprintf(s->value, sizeof(s->value), "%s", o->value);
  int rc = gb_kube_client_path(s->path, sizeof(s->path), "", "v1", "pods", s->ns, s->pod);
  if (rc) {
    gc_diags_addf(d, "leader label: pod %s/%s is not a valid name", o->ns, o->pod);
    free(s);
    return GC_EINVAL;
  }
  s->have = -1;
  s->off_since_ms = gb_clock_ms();
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cond, &ca);
  pthread_condattr_destroy(&ca);
  *out = s;
  return 0;
}

int gb_selflabel_start(struct gb_selflabel *s) {
  if (s->started)
    return 0;
  if (pthread_create(&s->th, NULL, worker, s))
    return GC_ENOMEM;
  s->started = 1;
  return 0;
}

void gb_selflabel_set(struct gb_selflabel *s, int on) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  on = !!on;
  if (s->want && !on)
    s->off_since_ms = gb_clock_ms();
  s->want = on;
  s->kick = 1;
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->mu);
}

void gb_selflabel_free(struct gb_selflabel *s) {
  if (!s)
    return;
  if (s->started) {
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
  }
  /* A stopping process leads no more: take the label off unless it is known
   * to be off (an unknown state may be a label from an earlier term). */
  if (s->have != 0 && !s->pod_missing) {
    int missing = 0;
    long t = s->o.request_timeout_ms < FINAL_TIMEOUT_MS ? s->o.request_timeout_ms
                                                        : FINAL_TIMEOUT_MS;
    if (do_write(s, 0, t, &missing) < 0)
      gb_log(GB_LOG_WARN, "cannot remove the leader label at shutdown", "pod", s->pod, "error",
             s->last_error, NULL);
  }
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

int gb_selflabel_check(void *ctx, char *reason, size_t size) {
  struct gb_selflabel *s = ctx;
  pthread_mutex_lock(&s->mu);
  /* Until the pod has been read, a label left by an earlier process may be
   * on it: not ready at all.  After that, a removal gets stale_s. */
  int stale = !s->want && s->have != 0 &&
              (!s->known || gb_clock_ms() - s->off_since_ms > s->o.stale_s * 1000);
  if (stale)
    snprintf(reason, size,
             "this pod may still carry %s=%s although it does not lead (%s): not ready, so the "
             "scheduler's Service stops sending it requests",
             s->key, s->value,
             s->last_error[0] ? s->last_error
             : s->have < 0    ? "not read yet"
                              : "the removal has not completed");
  pthread_mutex_unlock(&s->mu);
  return stale;
}

void gb_selflabel_status(struct gb_selflabel *s, struct gb_selflabel_status *out) {
  pthread_mutex_lock(&s->mu);
  out->want = s->want;
  out->have = s->have;
  out->pod_missing = s->pod_missing;
  out->reads = s->reads;
  out->writes = s->writes;
  out->failures = s->failures;
  pthread_mutex_unlock(&s->mu);
}
