/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_requeue: the rules of `timeouts.action: requeue`, without I/O.  It owns
 * the requeue state kept on the TrainJob as annotations (attempt, resume
 * time, that gangbridge suspended it) and its parsing and merge-patch
 * writing, the never-touch rules (a started gang, a TrainJob managed by
 * another controller or by Kueue, one the user suspended), the decision at
 * a gang's timeout and at its resume time, and the backoff (base doubling,
 * jittered, capped), as Kueue's waitForPodsReady requeuing does.  Every
 * write it builds carries the TrainJob's resourceVersion as a precondition,
 * so two leaders, or one before and after a restart, cannot both act on the
 * same state: the second write fails with 409 and the caller re-reads.
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
#define GB_KUEUE_QUEUE_LABEL "kueue.x-k8s.io/queue-name"
#define GB_REQUEUE_MAX_ATTEMPTS 100 /* the largest attempt count accepted */

/* The requeue state of one TrainJob, as read from it. */
struct gb_requeue_state {
  int attempt;      /* requeues done so far (0: none) */
  double resume_at; /* unix seconds: while suspended by gangbridge, when to resume; after the
                       resume, when it was resumed (the gang's wait restarts there); NAN: none */
  int ours;         /* gangbridge.io/requeued-by is "gangbridge" */
  int suspended;    /* spec.suspend is true */
};

/* Reads tj's spec.suspend and requeue annotations into st.  Returns 0, or
 * GC_EINVAL with why set to "ns/name: metadata.annotations[KEY]: ..." when
 * an annotation is malformed (the caller then leaves the TrainJob alone). */
int gb_requeue_state_read(json_object *tj, struct gb_requeue_state *st, char *why,
                          size_t why_size);

/* Why gangbridge must never suspend or resume this TrainJob, or NULL when it
 * may.  started: every counted pod of its gang has been scheduled once.
 * Returns a static string. */
const char *gb_requeue_untouchable(json_object *tj, const struct gb_requeue_state *st,
                                   int started);

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

/* What to do when the gang of an eligible TrainJob times out.  A TrainJob
 * that gangbridge gave up on and the user resumed is only reported. */
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

/* Formats unix seconds as RFC 3339 UTC ("2026-01-02T03:04:05Z"); cap >= 21. */
void gb_requeue_format_time(double t, char *buf, size_t cap);

#endif
