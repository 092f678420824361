/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_requeue: the rules of `timeouts.action: requeue`, without I/O.  It owns
 * the requeue state kept on the TrainJob as annotations (attempt, resume
 * time, that gangbridge suspended it) and its parsing and merge-patch
 * writing, its validation (the TrainJob is the tenant's: an attempt beyond
 * timeouts.requeue.maxAttempts, or a resume time outside the backoff's
 * bounds from when gangbridge acted, is not believed), the never-touch rules
 * (a started gang, a TrainJob managed by another controller or really by
 * Kueue, one the user suspended), the decision at a gang's timeout and at
 * its resume time, and the backoff (base doubling, jittered, capped), as
 * Kueue's waitForPodsReady requeuing does.  Every write it builds carries
 * the TrainJob's resourceVersion as a precondition, so two leaders, or one
 * before and after a restart, cannot both act on the same state: the second
 * write fails with 409 and the caller re-reads.  Nothing on the TrainJob
 * decides when a gang's wait starts (gb_gangfacts, on gangbridge's PodGroup,
 * does), so no annotation a tenant writes can switch its timeout off.
 * Reentrant; depends on json-c and gc_diag's codes.
 */
#ifndef GB_REQUEUE_H
#define GB_REQUEUE_H

#include <json-c/json.h>
#include <stddef.h>

#define GB_ANN_REQUEUE_ATTEMPT "gangbridge.io/requeue-attempt"
#define GB_ANN_REQUEUE_RESUME_AT "gangbridge.io/requeue-resume-at"
#define GB_ANN_REQUEUED_BY "gangbridge.io/requeued-by"
#define GB_REQUEUED_BY "gangbridge"
#define GB_REQUEUE_MAX_ATTEMPTS 100 /* the largest attempt count accepted */

/* The requeue state of one TrainJob, as read from it. */
struct gb_requeue_state {
  int attempt;      /* requeues done so far (0: none) */
  double resume_at; /* unix seconds: while suspended by gangbridge, when to resume; after the
                       resume, when it was resumed (for people only: the wait's start is the
                       PodGroup's gangbridge.io/resumed-at); NAN: none */
  int ours;         /* gangbridge.io/requeued-by is "gangbridge" */
  int suspended;    /* spec.suspend is true */
};

/* Reads tj's spec.suspend and requeue annotations into st.  Returns 0, or
 * GC_EINVAL with why set to "ns/name: metadata.annotations[KEY]: ..." when
 * an annotation is malformed (the caller then leaves the TrainJob alone). */
int gb_requeue_state_read(json_object *tj, struct gb_requeue_state *st, char *why,
                          size_t why_size);

/* Why gangbridge must never suspend or resume this TrainJob, or NULL when it
 * may.  started: the gang reached its quorum once.  kueue_workload: the
 * name of a Kueue Workload the TrainJob owns (Kueue's API served: Kueue
 * really manages it), or NULL; Kueue's queue label alone is something the
 * tenant writes and exempts nothing.  Returns a static string. */
const char *gb_requeue_untouchable(json_object *tj, const struct gb_requeue_state *st, int started,
                                   const char *kueue_workload);

struct gb_backoff {
  double base_s;    /* first delay (timeouts.requeue.baseDelay, default 60) */
  double max_s;     /* cap (timeouts.requeue.maxDelay, default 3600) */
  double jitter;    /* extra fraction at most (0.1: up to +10 %) */
  int max_attempts; /* requeues before giving up (timeouts.requeue.maxAttempts) */
};

/* The delay before resuming after requeue number `attempt` (1-based):
 * min(max_s, base_s * 2^(attempt-1) * (1 + jitter * u)), u in [0, 1). */
double gb_requeue_backoff(const struct gb_backoff *b, int attempt, double u);

enum gb_requeue_step {
  GB_RQ_NOTHING = 0, /* leave it (only the Event) */
  GB_RQ_SUSPEND,     /* suspend and resume after the backoff */
  GB_RQ_GIVE_UP,     /* suspend for good: the attempts are used up */
  GB_RQ_RESUME       /* the backoff has passed: resume */
};

/* What to do when the gang of an eligible TrainJob times out: suspend it
 * while requeues are left, else give up (suspend it for good).  A stale
 * gangbridge.io/requeued-by on a running TrainJob (gangbridge gave up, the
 * user resumed it) exempts nothing: the next timeout gives up again. */
enum gb_requeue_step gb_requeue_on_timeout(const struct gb_requeue_state *st,
                                           const struct gb_backoff *b);

/* Whether a TrainJob suspended by gangbridge is due for resuming at now:
 * GB_RQ_RESUME or GB_RQ_NOTHING (not ours, given up, or not yet). */
enum gb_requeue_step gb_requeue_on_tick(const struct gb_requeue_state *st, double now);

/* The JSON merge patch that carries out step (SUSPEND, GIVE_UP or RESUME)
 * at now, with metadata.resourceVersion rv as precondition.  delay is the
 * backoff for SUSPEND.  *out is the caller's (json_object_put).  Returns 0,
 * GC_EINVAL (other step, no rv) or GC_ENOMEM. */
int gb_requeue_patch(enum gb_requeue_step step, const struct gb_requeue_state *st,
                     const char *rv, double now, double delay, json_object **out);

/* Checks st (read from the TrainJob, which its tenant may have written)
 * against what gangbridge trusts: an attempt above b->max_attempts is taken
 * as b->max_attempts; while gangbridge holds the TrainJob suspended, its
 * resume time must lie within the backoff of that attempt after
 * suspended_at (when gangbridge acted: the PodGroup's timed-out-at; NAN
 * when unknown, then only an upper bound from `now` applies: the caller
 * passes when it first saw the TrainJob suspended), and a missing
 * one with attempts left means the end of that backoff; on a running
 * TrainJob a resume time in the future is meaningless.  *out is st with
 * what is used instead.  Returns 0 when st was believed as it is, 1 when
 * something was not (why says what, for a RequeueStateIgnored Event). */
int gb_requeue_validate(const struct gb_requeue_state *st, const struct gb_backoff *b,
                        double suspended_at, double now, struct gb_requeue_state *out, char *why,
                        size_t why_size);

/* Formats unix seconds as RFC 3339 UTC ("2026-01-02T03:04:05Z"); cap >= 21. */
void gb_requeue_format_time(double t, char *buf, size_t cap);

#endif
