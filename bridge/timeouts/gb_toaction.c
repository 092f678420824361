/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_toaction: the GangTimeout Event and the requeue writes (see
 * gb_toaction.h).
 */
#include "gb_toaction.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_log.h"
#include "gc_diag.h"
#include "gc_gang.h"

#define VOLCANO_PG_API "scheduling.volcano.sh/v1beta1"
#define COSCHED_PG_API "scheduling.x-k8s.io/v1alpha1"

void gb_toa_describe(const struct gb_toa_gang *g, char *buf, size_t cap) {
  struct gb_buf b;
  gb_buf_init(&b, 65536); /* bounded; the result is cut to cap below */
  gb_buf_printf(&b, "the gang did not start within its timeout of %.0fs (%s): %d of %d pods "
                    "scheduled, %d created",
                g->timeout_s, g->timeout_source, g->scheduled, g->min_member, g->pods);
  if (g->gated)
    gb_buf_printf(&b, "; %d held by scheduling gates (placement)", g->gated);
  if (g->unschedulable)
    gb_buf_printf(&b, "; %d unschedulable%s%s", g->unschedulable, g->pod_message[0] ? ": " : "",
                  g->pod_message);
  gb_buf_printf(&b, "; PodGroup phase %s", g->phase[0] ? g->phase : "(none yet)");
  if (g->pg_message[0])
    gb_buf_printf(&b, " (%s)", g->pg_message);
  if (!strcmp(g->phase, "Pending") && !strcmp(g->backend, "volcano"))
    gb_buf_printf(&b, ": the queue has not admitted it");
  snprintf(buf, cap, "%s", gb_buf_ptr(&b) ? gb_buf_ptr(&b) : "");
  gb_buf_free(&b);
}

static void event_on(const struct gb_toa_env *env, const char *api, const char *kind,
                     const char *ns, const char *name, const char *uid, const char *type,
                     const char *reason, const char *msg) {
  if (!env->events)
    return;
  struct gb_event_ref ref = {api, kind, ns, name, uid && uid[0] ? uid : NULL};
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  /* once: a restarted or new leader that reports the same timeout finds the
   * Event it recorded before and leaves it as it is. */
  if (gb_events_record(env->events, &ref, type, reason, msg, 1, &e))
    gb_log(GB_LOG_WARN, "cannot record event", "reason", reason, "object", name, "error",
           e.message, NULL);
}

static void event_both(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                       const char *type, const char *reason, const char *msg) {
  event_on(env, GC_TRAINER_API, "TrainJob", g->ns, g->name, g->tj_uid, type, reason, msg);
  event_on(env, !strcmp(g->backend, "volcano") ? VOLCANO_PG_API : COSCHED_PG_API, "PodGroup",
           g->ns, g->name, g->pg_uid, type, reason, msg);
}

static int trainjob_path(const char *ns, const char *name, char *buf, size_t cap) {
  return gb_kube_path(buf, cap, GC_TRAINER_GROUP, "v1alpha1", "trainjobs", ns, name);
}

/* GETs the TrainJob and reads its requeue state.  Returns 0, GC_ENOTFOUND,
 * GC_EINVAL (malformed annotations: why says which) or GC_EIO. */
static int read_trainjob(const struct gb_toa_env *env, const char *ns, const char *name,
                         json_object **tj, struct gb_requeue_state *st, char *why, size_t cap) {
  char path[512];
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  *tj = NULL;
  int rc = trainjob_path(ns, name, path, sizeof(path));
  if (!rc)
    rc = gb_kube_get(env->client, path, tj, &e);
  if (rc) {
    snprintf(why, cap, "cannot read TrainJob %s/%s: %s", ns, name,
             e.message[0] ? e.message : gc_strerror(rc));
    return rc == GC_ENOTFOUND ? rc : GC_EIO;
  }
  rc = gb_requeue_state_read(*tj, st, why, cap);
  if (rc) {
    json_object_put(*tj);
    *tj = NULL;
  }
  return rc;
}

/* Sends step's patch with tj's resourceVersion as precondition.  Returns 0,
 * or GC_EIO (409 included: the TrainJob changed since it was read). */
static int write_step(const struct gb_toa_env *env, json_object *tj, enum gb_requeue_step step,
                      const struct gb_requeue_state *st, double now, double delay, char *why,
                      size_t cap) {
  const char *ns = gb_kube_meta_str(tj, "namespace"), *name = gb_kube_meta_str(tj, "name");
  char path[512];
  json_object *patch = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = trainjob_path(ns, name, path, sizeof(path));
  if (!rc)
    rc = gb_requeue_patch(step, st, gb_kube_meta_str(tj, "resourceVersion"), now, delay, &patch);
  if (!rc)
    rc = gb_kube_merge_patch(env->client, path, patch, NULL, &e);
  json_object_put(patch);
  if (rc)
    snprintf(why, cap, "cannot write TrainJob %s/%s: %s", ns, name,
             e.message[0] ? e.message : gc_strerror(rc));
  return rc ? GC_EIO : 0;
}

static double jitter_u(const struct gb_toa_env *env) {
  return env->rand01 ? env->rand01() : (double)random() / ((double)RAND_MAX + 1.0);
}

/* Suspends (step SUSPEND or GIVE_UP) and reports it. */
static enum gb_toa_outcome suspend(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                   json_object *tj, const struct gb_requeue_state *st,
                                   enum gb_requeue_step step, double now, const char *what,
                                   char *detail, size_t cap) {
  double delay = gb_requeue_backoff(&env->backoff, st->attempt + 1, jitter_u(env));
  if (write_step(env, tj, step, st, now, delay, detail, cap))
    return GB_TOA_RETRY;
  char msg[GB_EVENT_MESSAGE_MAX];
  if (step == GB_RQ_SUSPEND) {
    char at[32];
    gb_requeue_format_time(ceil(now + delay), at, sizeof(at));
    snprintf(msg, sizeof(msg),
             "%s; requeued (attempt %d of %d): suspended, resumes at %s (after %.0fs)", what,
             st->attempt + 1, env->backoff.max_attempts, at, ceil(delay));
    event_both(env, g, GB_EVENT_WARNING, "GangTimeout", msg);
    snprintf(detail, cap, "suspended; resumes at %s", at);
    return GB_TOA_SUSPENDED;
  }
  snprintf(msg, sizeof(msg),
           "%s; gave up after %d requeues (timeouts.requeue.maxAttempts): the TrainJob stays "
           "suspended; to try again remove the annotation " GB_ANN_REQUEUE_ATTEMPT
           " and set spec.suspend to false",
           what, st->attempt);
  event_both(env, g, GB_EVENT_WARNING, "GangTimeout", msg);
  event_both(env, g, GB_EVENT_WARNING, "GangRequeueGaveUp", msg);
  snprintf(detail, cap, "gave up after %d requeues", st->attempt);
  return GB_TOA_GAVE_UP;
}

enum gb_toa_outcome gb_toa_timeout(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                   double now, char *detail, size_t cap) {
  char what[GB_EVENT_MESSAGE_MAX - 200];
  gb_toa_describe(g, what, sizeof(what));
  snprintf(detail, cap, "reported");
  if (env->action == GB_TIMEOUT_NONE)
    return GB_TOA_NONE;
  if (env->action != GB_TIMEOUT_REQUEUE || !env->client) {
    event_both(env, g, GB_EVENT_WARNING, "GangTimeout", what);
    return GB_TOA_REPORTED;
  }
  json_object *tj = NULL;
  struct gb_requeue_state st;
  int rc = read_trainjob(env, g->ns, g->name, &tj, &st, detail, cap);
  if (rc == GC_EIO)
    return GB_TOA_RETRY;
  const char *never = rc ? detail : gb_requeue_untouchable(tj, &st, 0);
  enum gb_requeue_step step = never ? GB_RQ_NOTHING : gb_requeue_on_timeout(&st, &env->backoff);
  enum gb_toa_outcome out = GB_TOA_REPORTED;
  if (step == GB_RQ_SUSPEND || step == GB_RQ_GIVE_UP) {
    out = suspend(env, g, tj, &st, step, now, what, detail, cap);
  } else {
    char msg[GB_EVENT_MESSAGE_MAX];
    snprintf(msg, sizeof(msg), "%s; not requeued: %s", what,
             never ? never
                   : st.suspended ? "already suspended"
                                  : "gangbridge gave up on it before and the user resumed it");
    event_both(env, g, GB_EVENT_WARNING, "GangTimeout", msg);
    snprintf(detail, cap, "not requeued: %s", never ? never : "suspended or given up");
  }
  json_object_put(tj);
  return out;
}

enum gb_toa_outcome gb_toa_resume(const struct gb_toa_env *env, const char *ns,
                                  const char *name, double now, char *detail, size_t cap) {
  snprintf(detail, cap, "nothing to do");
  if (!env->client || env->action != GB_TIMEOUT_REQUEUE)
    return GB_TOA_NOTHING;
  json_object *tj = NULL;
  struct gb_requeue_state st;
  int rc = read_trainjob(env, ns, name, &tj, &st, detail, cap);
  if (rc)
    return rc == GC_EIO ? GB_TOA_RETRY : GB_TOA_NOTHING;
  enum gb_toa_outcome out = GB_TOA_NOTHING;
  if (!gb_requeue_untouchable(tj, &st, 0) && gb_requeue_on_tick(&st, now) == GB_RQ_RESUME) {
    if (write_step(env, tj, GB_RQ_RESUME, &st, now, 0, detail, cap)) {
      out = GB_TOA_RETRY;
    } else {
      char msg[256];
      snprintf(msg, sizeof(msg),
               "resumed after the requeue backoff (attempt %d of %d): the gang is created again",
               st.attempt, env->backoff.max_attempts);
      event_on(env, GC_TRAINER_API, "TrainJob", ns, name, gb_kube_meta_str(tj, "uid"),
               GB_EVENT_NORMAL, "GangResumed", msg);
      snprintf(detail, cap, "resumed (attempt %d)", st.attempt);
      out = GB_TOA_RESUMED;
    }
  }
  json_object_put(tj);
  return out;
}
