/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts: the gang timeout tracker of `gangbridge serve`.  It follows
 * every gang from the controller's informer changes (PodGroups, the pods
 * bound to them, TrainJobs; gb_timeouts_observe is a
 * gb_controller_observe_fn) and keeps, per gang: its effective timeout as
 * the PodGroup carries it (coscheduling spec.scheduleTimeoutSeconds,
 * Volcano's volcano.sh/sla-waiting-time or sla-waiting-time annotation),
 * when its wait started (PodGroup creation, or the resume of a requeue),
 * how many of its pods exist, are gated, unschedulable and scheduled, and
 * the TrainJob's requeue state.  A deadline heap (gb_deadline) holds the
 * next due time of every gang; one timer thread sleeps until the earliest
 * and, while this replica leads, runs the action (gb_toaction) at once: no
 * scan of all gangs.  A gang that has started (every counted pod scheduled
 * once) is never acted on again.
 *
 * It also owns the measuring: PodGroups by phase (gb_tts), and histograms
 * of the time to schedule (PodGroup creation to the PodScheduled time of the
 * pod that completed the gang), its assembly part (first to last gang pod
 * created) and its gated part (first gated pod seen to the last gate
 * removed), plus counters of timeouts and requeue actions, all labelled by
 * backend, queue (folded into "other" beyond timeouts.maxQueues) and gang
 * size class.
 *
 * Thread-safety: observe, collect, resync and run_due may be called from any
 * thread (one internal mutex, never held across API calls).
 */
#ifndef GB_TIMEOUTS_H
#define GB_TIMEOUTS_H

#include <stddef.h>

#include "gb_config.h"
#include "gb_controller.h"
#include "gb_kube_client.h"
#include "gb_metrics.h"

struct gb_timeouts_opts {
  const struct gb_config *cfg;              /* validated; borrowed; timeouts.* */
  struct gb_kube_client *client;            /* borrowed; NULL: no API writes */
  const struct gb_service_metrics *metrics; /* optional; borrowed (time to schedule) */
  struct gb_metrics *reg;                   /* optional; its own families go here */
  int (*is_leader)(void *ctx);              /* NULL: always the leader */
  void *leader_ctx;
};

struct gb_timeouts_stats {
  size_t gangs;     /* gangs tracked */
  size_t armed;     /* deadlines in the heap */
  unsigned long long fired, suspended, resumed, gave_up, retries, refused;
};

struct gb_timeouts;

/* Creates a tracker (not started).  Caller frees with gb_timeouts_free.
 * Returns 0, GC_EINVAL (no cfg), GC_ENOMEM, or a metrics registration error
 * (in d). */
int gb_timeouts_new(const struct gb_timeouts_opts *o, struct gb_timeouts **out,
                    struct gc_diags *d);

/* Starts the timer thread.  Returns 0, GC_EUSAGE (started) or GC_ENOMEM. */
int gb_timeouts_start(struct gb_timeouts *t);

/* Stops and joins the timer thread.  Idempotent. */
void gb_timeouts_stop(struct gb_timeouts *t);

/* Stops and frees everything.  Accepts NULL. */
void gb_timeouts_free(struct gb_timeouts *t);

/* gb_controller_observe_fn (ctx = the tracker). */
void gb_timeouts_observe(void *ctx, enum gb_observe_kind kind,
                         const struct gb_informer_change *ch, int initial);

/* Wakes the timer thread (call on becoming leader: deadlines that passed
 * while following are acted on at once). */
void gb_timeouts_kick(struct gb_timeouts *t);

/* Runs every deadline due at `now` (unix seconds) on the calling thread, as
 * the timer thread does; for tests and benchmarks.  Returns how many ran. */
size_t gb_timeouts_run_due(struct gb_timeouts *t, double now);

/* The earliest deadline (unix seconds), or 0 when none is armed. */
double gb_timeouts_next(struct gb_timeouts *t);

void gb_timeouts_get_stats(struct gb_timeouts *t, struct gb_timeouts_stats *out);

/* Metrics collector (ctx = the tracker): gangbridge_podgroups{backend,phase}. */
void gb_timeouts_collect(void *ctx, struct gb_metrics *reg);

#endif
