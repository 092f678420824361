/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_requeue: the requeue rules and state (see gb_requeue.h).
 */
#define _GNU_SOURCE /* strptime, timegm */
#include "gb_requeue.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_kobj.h"
#include "gc_diag.h"
#include "gc_gang.h"

static void ann_error(json_object *tj, const char *key, const char *what, const char *value,
                      char *why, size_t cap) {
  json_object *m = gb_kobj_get(tj, "metadata");
  const char *ns = gb_kobj_str(m, "namespace"), *name = gb_kobj_str(m, "name");
  snprintf(why, cap, "%s/%s: metadata.annotations[%s]: %s, got \"%.64s\"", ns ? ns : "",
           name ? name : "", key, what, value);
}

/* "YYYY-MM-DDTHH:MM:SSZ" into unix seconds; NAN when it is not that. */
static double parse_time(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end)
    return NAN;
  return (double)timegm(&tm);
}

int gb_requeue_state_read(json_object *tj, struct gb_requeue_state *st, char *why,
                          size_t why_size) {
  st->attempt = 0;
  st->resume_at = NAN;
  st->suspended = gb_kobj_bool(gb_kobj_get(tj, "spec"), "suspend", 0);
  const char *by = gb_kobj_annotation(tj, GB_ANN_REQUEUED_BY);
  st->ours = by && !strcmp(by, GB_REQUEUED_BY);
  const char *a = gb_kobj_annotation(tj, GB_ANN_REQUEUE_ATTEMPT);
  if (a) {
    char *end = NULL;
    errno = 0;
    long n = strtol(a, &end, 10);
    if (!*a || *end || errno || n < 0 || n > GB_REQUEUE_MAX_ATTEMPTS) {
      ann_error(tj, GB_ANN_REQUEUE_ATTEMPT, "must be a whole number from 0 to 100", a, why,
                why_size);
      return GC_EINVAL;
    }
    st->attempt = (int)n;
  }
  const char *r = gb_kobj_annotation(tj, GB_ANN_REQUEUE_RESUME_AT);
  if (r) {
    st->resume_at = parse_time(r);
    if (isnan(st->resume_at)) {
      ann_error(tj, GB_ANN_REQUEUE_RESUME_AT, "must be an RFC 3339 UTC time (2006-01-02T15:04:05Z)",
                r, why, why_size);
      return GC_EINVAL;
    }
  }
  return 0;
}

const char *gb_requeue_untouchable(json_object *tj, const struct gb_requeue_state *st, int started,
                                   const char *kueue_workload) {
  const char *managed = gb_kobj_str(gb_kobj_get(tj, "spec"), "managedBy");
  if (managed && strcmp(managed, GC_TRAINER_CONTROLLER) != 0)
    return "spec.managedBy names another controller";
  if (kueue_workload)
    return "Kueue manages it (a Kueue Workload owns its admission): Kueue's waitForPodsReady "
           "owns its requeueing";
  if (st->suspended && !st->ours)
    return "suspended by the user";
  if (started)
    return "its gang has started (every counted pod was scheduled)";
  return NULL;
}

double gb_requeue_backoff(const struct gb_backoff *b, int attempt, double u) {
  if (attempt < 1)
    attempt = 1;
  if (attempt > 62)
    attempt = 62; /* 2^61 is far past any cap and still exact in a double */
  double d = b->base_s * ldexp(1.0, attempt - 1) * (1.0 + b->jitter * u);
  return d > b->max_s ? b->max_s : d;
}

enum gb_requeue_step gb_requeue_on_timeout(const struct gb_requeue_state *st,
                                           const struct gb_backoff *b) {
  if (st->suspended)
    return GB_RQ_NOTHING;
  return st->attempt < b->max_attempts ? GB_RQ_SUSPEND : GB_RQ_GIVE_UP;
}

enum gb_requeue_step gb_requeue_on_tick(const struct gb_requeue_state *st, double now) {
  if (!st->suspended || !st->ours || isnan(st->resume_at) || now < st->resume_at)
    return GB_RQ_NOTHING;
  return GB_RQ_RESUME;
}

/* Seconds of clock skew and API latency allowed around the backoff's
 * bounds: gangbridge writes the claim, then suspends, a round trip later. */
#define SLACK_S 60.0

int gb_requeue_validate(const struct gb_requeue_state *st, const struct gb_backoff *b,
                        double suspended_at, double now, struct gb_requeue_state *out, char *why,
                        size_t why_size) {
  char at[32], lo_s[32], hi_s[32];
  int changed = 0;
  *out = *st;
  if (why_size)
    why[0] = '\0';
  if (st->attempt > b->max_attempts) {
    out->attempt = b->max_attempts;
    snprintf(why, why_size,
             "metadata.annotations[" GB_ANN_REQUEUE_ATTEMPT "]: %d is more than "
             "timeouts.requeue.maxAttempts (%d); %d is used",
             st->attempt, b->max_attempts, b->max_attempts);
    changed = 1;
  }
  if (!st->suspended) {
    if (!isnan(st->resume_at) && st->resume_at > now + SLACK_S) {
      gb_requeue_format_time(st->resume_at, at, sizeof(at));
      snprintf(why, why_size,
               "metadata.annotations[" GB_ANN_REQUEUE_RESUME_AT "]: %s is in the future on a "
               "running TrainJob; ignored (it does not move the gang's timeout)",
               at);
      out->resume_at = NAN;
      return 1;
    }
    return changed;
  }
  if (!st->ours)
    return changed;
  int a = out->attempt < 1 ? 1 : out->attempt;
  double base = isnan(suspended_at) ? now : suspended_at;
  double lo = isnan(suspended_at) ? -INFINITY : base + gb_requeue_backoff(b, a, 0) - SLACK_S;
  double hi = base + ceil(gb_requeue_backoff(b, a, 1)) + SLACK_S;
  if (isnan(st->resume_at) && out->attempt >= b->max_attempts)
    return changed; /* given up: suspended for good, nothing to resume */
  if (!isnan(st->resume_at) && st->resume_at >= lo && st->resume_at <= hi)
    return changed;
  /* A missing one: the end of the backoff itself (the slack is tolerance
   * for a value gangbridge wrote, not a delay). */
  out->resume_at = isnan(st->resume_at) ? hi - SLACK_S : fmin(hi, fmax(lo, st->resume_at));
  gb_requeue_format_time(out->resume_at, at, sizeof(at));
  gb_requeue_format_time(isfinite(lo) ? lo : base, lo_s, sizeof(lo_s));
  gb_requeue_format_time(hi, hi_s, sizeof(hi_s));
  if (isnan(st->resume_at))
    snprintf(why, why_size,
             "metadata.annotations[" GB_ANN_REQUEUE_RESUME_AT "] is missing while gangbridge "
             "holds the TrainJob suspended with requeues left; it is resumed at %s, the end of "
             "its backoff",
             at);
  else
    snprintf(why, why_size,
             "metadata.annotations[" GB_ANN_REQUEUE_RESUME_AT "]: the resume time is outside "
             "the backoff of attempt %d (%s to %s); it is resumed at %s",
             a, lo_s, hi_s, at);
  return 1;
}

void gb_requeue_format_time(double t, char *buf, size_t cap) {
  time_t s = (time_t)floor(t);
  struct tm tm;
  gmtime_r(&s, &tm);
  if (!strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) && cap)
    buf[0] = '\0';
}

static json_object *time_str(double t) {
  char buf[32];
  gb_requeue_format_time(t, buf, sizeof(buf));
  return json_object_new_string(buf);
}

/* The annotations of step: NULL values delete (merge-patch semantics). */
static void step_annotations(json_object *ann, enum gb_requeue_step step,
                             const struct gb_requeue_state *st, double now, double delay) {
  char n[16];
  switch (step) {
  case GB_RQ_SUSPEND:
    snprintf(n, sizeof(n), "%d", st->attempt + 1);
    json_object_object_add(ann, GB_ANN_REQUEUE_ATTEMPT, json_object_new_string(n));
    json_object_object_add(ann, GB_ANN_REQUEUE_RESUME_AT, time_str(ceil(now + delay)));
    json_object_object_add(ann, GB_ANN_REQUEUED_BY, json_object_new_string(GB_REQUEUED_BY));
    break;
  case GB_RQ_GIVE_UP:
    json_object_object_add(ann, GB_ANN_REQUEUE_RESUME_AT, NULL);
    json_object_object_add(ann, GB_ANN_REQUEUED_BY, json_object_new_string(GB_REQUEUED_BY));
    break;
  default: /* GB_RQ_RESUME */
    json_object_object_add(ann, GB_ANN_REQUEUE_RESUME_AT, time_str(now));
    json_object_object_add(ann, GB_ANN_REQUEUED_BY, NULL);
    break;
  }
}

int gb_requeue_patch(enum gb_requeue_step step, const struct gb_requeue_state *st,
                     const char *rv, double now, double delay, json_object **out) {
  *out = NULL;
  if (!rv || !rv[0] || (step != GB_RQ_SUSPEND && step != GB_RQ_GIVE_UP && step != GB_RQ_RESUME))
    return GC_EINVAL;
  json_object *p = json_object_new_object(), *meta = json_object_new_object(),
              *ann = json_object_new_object(), *spec = json_object_new_object();
  if (!p || !meta || !ann || !spec) {
    json_object_put(p);
    json_object_put(meta);
    json_object_put(ann);
    json_object_put(spec);
    return GC_ENOMEM;
  }
  json_object_object_add(meta, "resourceVersion", json_object_new_string(rv));
  step_annotations(ann, step, st, now, delay);
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(p, "metadata", meta);
  json_object_object_add(spec, "suspend", json_object_new_boolean(step != GB_RQ_RESUME));
  json_object_object_add(p, "spec", spec);
  *out = p;
  return 0;
}
