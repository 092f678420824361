/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_toaction: the claim, the GangTimeout Event, the requeue writes and the
 * gang's facts on gangbridge's PodGroup (see gb_toaction.h).
 */
#include "gb_toaction.h"
#include "gb_kobj.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_kueue.h"
#include "gb_log.h"
#include "gc_diag.h"
#include "gc_gang.h"

#define FIELD_MANAGER_QUERY "?fieldManager=" GB_TIMEOUTS_FIELD_MANAGER
#define CLAIM_TRIES 3 /* a 409 on the claim re-reads the PodGroup at most this often */

/* Writes the "what it waited for" sentence of g into buf (always terminated). */
static void gb_toaction_describe(const struct gb_toa_gang *g, char *buf, size_t cap) {
  struct gb_buf b;
  gb_buf_init(&b, 65536); /* bounded; the result is cut to cap below */
  if (g->until_ready)
    gb_buf_printf(&b,
                  "the gang did not become ready within its timeout of %.0fs (%s): %d of %d "
                  "pods ready, %d scheduled, %d created",
                  g->timeout_s, g->timeout_source, g->ready, g->min_member, g->scheduled, g->pods);
  else
    gb_buf_printf(&b,
                  "the gang did not start within its timeout of %.0fs (%s): %d of %d pods "
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
  const struct gc_backend_status *bs = g->backend ? &g->backend->status : NULL;
  if (bs && bs->waiting_phase && bs->waiting_note && !strcmp(g->phase, bs->waiting_phase))
    gb_buf_printf(&b, ": %s", bs->waiting_note);
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

/* The object the tracker followed for g: apiVersion, kind, resource and
 * name (the group object, or its version's status object). */
struct tracked {
  const char *api, *version, *kind, *resource;
  char name[300];
};

static void tracked_of(const struct gb_toa_gang *g, struct tracked *o) {
  const struct gc_backend *b = g->backend;
  const struct gc_backend_version *v = g->version;
  int status = v && v->status_kind && v->status_resource;
  o->api = v ? v->api_version : b->api_version;
  o->version = v ? v->version : b->version;
  o->kind = status ? v->status_kind : b->kind;
  o->resource = status ? v->status_resource : b->resource;
  snprintf(o->name, sizeof(o->name), "%s%s", g->name,
           status && v->group_suffix ? v->group_suffix : "");
}

static void event_both(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                       const char *type, const char *reason, const char *msg) {
  event_on(env, GC_TRAINER_API, "TrainJob", g->ns, g->name, g->tj_uid, type, reason, msg);
  if (g->backend) {
    struct tracked o;
    tracked_of(g, &o);
    event_on(env, o.api, o.kind, g->ns, o.name, g->pg_uid, type, reason, msg);
  }
}

void gb_toaction_state_ignored(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                               const char *why) {
  char msg[GB_EVENT_MESSAGE_MAX];
  snprintf(msg, sizeof(msg), "requeue state not believed: %s", why);
  event_on(env, GC_TRAINER_API, "TrainJob", g->ns, g->name, g->tj_uid, GB_EVENT_WARNING,
           "RequeueStateIgnored", msg);
}

static int trainjob_path(const char *ns, const char *name, char *buf, size_t cap) {
  return gb_kube_client_path(buf, cap, GC_TRAINER_GROUP, "v1alpha1", "trainjobs", ns, name);
}

static int podgroup_path(const struct gb_toa_gang *g, char *buf, size_t cap) {
  const struct gc_backend *b = g->backend;
  if (!b)
    return GC_EINVAL;
  struct tracked o;
  tracked_of(g, &o);
  return gb_kube_client_path(buf, cap, b->group, o.version, o.resource, g->ns, o.name);
}

/* A merge patch under gangbridge-timeouts.  Returns 0 or GC_EIO (e says
 * why; a 409 when the precondition did not hold). */
static int merge_patch(const struct gb_toa_env *env, const char *path, json_object *patch,
                       struct gb_kube_error *e) {
  char p[640];
  int n = snprintf(p, sizeof(p), "%s" FIELD_MANAGER_QUERY, path);
  if (n < 0 || (size_t)n >= sizeof(p))
    return GC_EIO;
  int rc = gb_kube_client_merge_patch(env->client, p, patch, NULL, e);
  return rc == GC_ENOMEM ? rc : rc ? GC_EIO : 0;
}

/* ---- the TrainJob --------------------------------------------------------------- */

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
    rc = gb_kube_client_get(env->client, path, tj, &e);
  if (rc) {
    snprintf(why, cap, "cannot read TrainJob %s/%s: %s", ns, name,
             e.message[0] ? e.message : gc_diag_strerror(rc));
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
  const char *ns = gb_kobj_meta(tj, "namespace"), *name = gb_kobj_meta(tj, "name");
  char path[512];
  json_object *patch = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = trainjob_path(ns, name, path, sizeof(path));
  if (!rc)
    rc = gb_requeue_patch(step, st, gb_kobj_meta(tj, "resourceVersion"), now, delay, &patch);
  if (!rc)
    rc = merge_patch(env, path, patch, &e);
  json_object_put(patch);
  if (rc)
    snprintf(why, cap, "cannot write TrainJob %s/%s: %s", ns, name,
             e.message[0] ? e.message : gc_diag_strerror(rc));
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

/* Why the TrainJob must not be requeued, or NULL; GC_EIO in *rc when the
 * Kueue check could not be made. */
static const char *why_untouchable(const struct gb_toa_env *env, json_object *tj,
                                   const struct gb_requeue_state *st, int *rc) {
  char wl[254];
  *rc = 0;
  const char *never = gb_requeue_untouchable(tj, st, 0, NULL);
  if (never)
    return never;
  int k = gb_kueue_workload(env->client, env->discovery, gb_kobj_meta(tj, "namespace"),
                            gb_kobj_meta(tj, "uid"), wl, sizeof(wl));
  if (k < 0) {
    *rc = GC_EIO;
    return NULL;
  }
  return gb_requeue_untouchable(tj, st, 0, k ? wl : NULL);
}

/* The requeue half of a timeout: the TrainJob read fresh, then suspended,
 * given up on or only reported. */
static enum gb_toa_outcome requeue(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                   double now, int complete, const char *what, char *detail,
                                   size_t cap) {
  json_object *tj = NULL;
  struct gb_requeue_state st;
  int rc = read_trainjob(env, g->ns, g->name, &tj, &st, detail, cap);
  if (rc == GC_EIO)
    return GB_TOA_RETRY;
  struct gb_requeue_state use = st;
  char why[512];
  if (!rc && gb_requeue_validate(&st, &env->backoff, NAN, now, &use, why, sizeof(why)))
    gb_toaction_state_ignored(env, g, why);
  if (complete && (rc || use.suspended)) {
    json_object_put(tj);
    snprintf(detail, cap, "already suspended or gone");
    return GB_TOA_NOTHING; /* the claimed act was done, or cannot be any more */
  }
  int krc = 0;
  const char *never = rc ? detail : why_untouchable(env, tj, &use, &krc);
  enum gb_toa_outcome out = GB_TOA_REPORTED;
  if (complete && never && !krc) {
    out = GB_TOA_NOTHING; /* the claimer reported it; a restart does not say it again */
    snprintf(detail, cap, "not requeued: %s", never);
  } else if (krc) {
    snprintf(detail, cap, "cannot tell whether Kueue manages it");
    out = GB_TOA_RETRY;
  } else {
    enum gb_requeue_step step = never ? GB_RQ_NOTHING : gb_requeue_on_timeout(&use, &env->backoff);
    struct gb_gangfacts unused;
    if ((step == GB_RQ_SUSPEND || step == GB_RQ_GIVE_UP) && complete &&
        gb_toaction_claim(env, g, now, 1, &unused, detail, cap) != GB_CLAIM_OK) {
      out = GB_TOA_RETRY; /* the claim must say when the suspend happened */
    } else if (step == GB_RQ_SUSPEND || step == GB_RQ_GIVE_UP) {
      out = suspend(env, g, tj, &use, step, now, what, detail, cap);
    } else {
      char msg[GB_EVENT_MESSAGE_MAX];
      snprintf(msg, sizeof(msg), "%s; not requeued: %s", what, never ? never : "already suspended");
      event_both(env, g, GB_EVENT_WARNING, "GangTimeout", msg);
      snprintf(detail, cap, "not requeued: %s", never ? never : "suspended");
    }
  }
  json_object_put(tj);
  return out;
}

enum gb_toa_outcome gb_toaction_timeout(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                        double now, int complete, char *detail, size_t cap) {
  char what[GB_EVENT_MESSAGE_MAX - 200];
  gb_toaction_describe(g, what, sizeof(what));
  snprintf(detail, cap, "reported");
  if (env->action == GB_TIMEOUT_NONE)
    return GB_TOA_NONE;
  if (env->action != GB_TIMEOUT_REQUEUE || !env->client) {
    event_both(env, g, GB_EVENT_WARNING, "GangTimeout", what);
    return GB_TOA_REPORTED;
  }
  return requeue(env, g, now, complete, what, detail, cap);
}

enum gb_toa_outcome gb_toaction_resume(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                       double resume_at, double now, char *detail, size_t cap) {
  snprintf(detail, cap, "nothing to do");
  if (!env->client || env->action != GB_TIMEOUT_REQUEUE)
    return GB_TOA_NOTHING;
  json_object *tj = NULL;
  struct gb_requeue_state st;
  int rc = read_trainjob(env, g->ns, g->name, &tj, &st, detail, cap);
  if (rc)
    return rc == GC_EIO ? GB_TOA_RETRY : GB_TOA_NOTHING;
  enum gb_toa_outcome out = GB_TOA_NOTHING;
  struct gb_requeue_state use = st;
  char why[512];
  gb_requeue_validate(&st, &env->backoff, NAN, now, &use, why, sizeof(why));
  use.resume_at = resume_at; /* validated by the caller: the annotation cannot delay it */
  if (!gb_requeue_untouchable(tj, &use, 0, NULL) && gb_requeue_on_tick(&use, now) == GB_RQ_RESUME) {
    /* The next wait starts now: record it where the tenant cannot move it,
     * before the TrainJob resumes. */
    struct gb_gangfacts add;
    gb_gangfacts_clear(&add);
    add.resumed_at = now;
    int frc = gb_toaction_add_facts(env, g, NULL, &add, detail, cap);
    if (frc && frc != GC_ENOTFOUND) {
      out = GB_TOA_RETRY;
    } else if (write_step(env, tj, GB_RQ_RESUME, &use, now, 0, detail, cap)) {
      out = GB_TOA_RETRY;
    } else {
      char msg[256];
      snprintf(msg, sizeof(msg),
               "resumed after the requeue backoff (attempt %d of %d): the gang is created again",
               use.attempt, env->backoff.max_attempts);
      event_on(env, GC_TRAINER_API, "TrainJob", g->ns, g->name, gb_kobj_meta(tj, "uid"),
               GB_EVENT_NORMAL, "GangResumed", msg);
      snprintf(detail, cap, "resumed (attempt %d)", use.attempt);
      out = GB_TOA_RESUMED;
    }
  }
  json_object_put(tj);
  return out;
}

/* ---- gangbridge's PodGroup ------------------------------------------------------ */

/* GETs gangbridge's PodGroup of g and reads its facts.  Returns 0,
 * GC_ENOTFOUND (absent), or GC_EIO. */
static int read_podgroup(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                         json_object **pg, struct gb_gangfacts *facts, char *detail, size_t cap) {
  char path[512], why[256];
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  *pg = NULL;
  gb_gangfacts_clear(facts);
  int rc = podgroup_path(g, path, sizeof(path));
  if (!rc)
    rc = gb_kube_client_get(env->client, path, pg, &e);
  if (rc == GC_ENOTFOUND)
    return rc;
  if (rc) {
    snprintf(detail, cap, "cannot read PodGroup %s/%s: %s", g->ns, g->name,
             e.message[0] ? e.message : gc_diag_strerror(rc));
    return GC_EIO;
  }
  if (gb_gangfacts_read(*pg, facts, why, sizeof(why)))
    gb_log(GB_LOG_WARN, "PodGroup fact ignored", "error", why, NULL);
  return 0;
}

static int patch_facts(const struct gb_toa_env *env, const struct gb_toa_gang *g, const char *rv,
                       const struct gb_gangfacts *add, struct gb_kube_error *e) {
  char path[512];
  json_object *patch = NULL;
  int rc = podgroup_path(g, path, sizeof(path));
  if (!rc)
    rc = gb_gangfacts_patch(rv, add, &patch);
  if (!rc)
    rc = merge_patch(env, path, patch, e);
  json_object_put(patch);
  return rc;
}

static int is_started(const struct gb_gangfacts *f, int until_ready) {
  return !isnan(f->ready_at) || (!until_ready && !isnan(f->started_at));
}

enum gb_toaction_claim gb_toaction_claim(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                         double now, int refresh, struct gb_gangfacts *facts,
                                         char *detail, size_t cap) {
  gb_gangfacts_clear(facts);
  if (!env->client)
    return GB_CLAIM_FOREIGN;
  for (int i = 0; i < CLAIM_TRIES; i++) {
    json_object *pg = NULL;
    int rc = read_podgroup(env, g, &pg, facts, detail, cap);
    if (rc)
      return rc == GC_ENOTFOUND ? GB_CLAIM_GONE : GB_CLAIM_RETRY;
    enum gb_toaction_claim out = GB_CLAIM_OK;
    if (!gb_gangfacts_ours(pg, g->tj_uid[0] ? g->tj_uid : NULL))
      out = GB_CLAIM_FOREIGN;
    else if (is_started(facts, g->until_ready))
      out = GB_CLAIM_STARTED;
    else if (!refresh && !isnan(facts->timed_out_at) && facts->timed_out_at >= g->wait_start)
      out = GB_CLAIM_TAKEN;
    if (out != GB_CLAIM_OK) {
      json_object_put(pg);
      return out;
    }
    struct gb_gangfacts add;
    struct gb_kube_error e;
    gb_kube_error_clear(&e);
    gb_gangfacts_clear(&add);
    add.timed_out_at = now;
    rc = patch_facts(env, g, gb_kobj_meta(pg, "resourceVersion"), &add, &e);
    json_object_put(pg);
    if (!rc) {
      facts->timed_out_at = floor(now);
      return GB_CLAIM_OK;
    }
    snprintf(detail, cap, "cannot claim the timeout on PodGroup %s/%s: %s", g->ns, g->name,
             e.message[0] ? e.message : gc_diag_strerror(rc));
    if (e.http != 409)
      return GB_CLAIM_RETRY;
  }
  return GB_CLAIM_RETRY;
}

int gb_toaction_add_facts(const struct gb_toa_env *env, const struct gb_toa_gang *g, const char *rv,
                          const struct gb_gangfacts *add, char *detail, size_t cap) {
  if (!env->client)
    return 0;
  for (int i = 0; i < CLAIM_TRIES; i++) {
    json_object *pg = NULL;
    struct gb_gangfacts have, want = *add;
    int rc = 0;
    if (!rv || i > 0) {
      rc = read_podgroup(env, g, &pg, &have, detail, cap);
      if (rc)
        return rc;
      if (!gb_gangfacts_ours(pg, g->tj_uid[0] ? g->tj_uid : NULL)) {
        json_object_put(pg);
        return GC_ENOTFOUND;
      }
      /* Written once: a fact already there stays as it is. */
      if (!isnan(have.started_at))
        want.started_at = NAN;
      if (!isnan(have.ready_at))
        want.ready_at = NAN;
      if (isnan(want.started_at) && isnan(want.ready_at) && isnan(want.timed_out_at) &&
          isnan(want.resumed_at)) {
        json_object_put(pg);
        return 0;
      }
    }
    struct gb_kube_error e;
    gb_kube_error_clear(&e);
    rc = patch_facts(env, g, pg ? gb_kobj_meta(pg, "resourceVersion") : rv, &want, &e);
    json_object_put(pg);
    if (!rc)
      return 0;
    snprintf(detail, cap, "cannot write PodGroup %s/%s: %s", g->ns, g->name,
             e.message[0] ? e.message : gc_diag_strerror(rc));
    if (e.http == 404)
      return GC_ENOTFOUND;
    if (e.http != 409)
      return GC_EIO;
  }
  return GC_EIO;
}
