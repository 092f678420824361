/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts: the gang timeout tracker of `gangbridge serve`.  It follows
 * every gang through its own handlers on the shared informers of the
 * objects the controller watches (PodGroups, the pods bound to them,
 * TrainJobs: gb_controller_watch_spec's selection, so it sees what the
 * controller sees; gb_timeouts_observe is the entry of every change) and
 * keeps, per gang: its effective timeout as
 * the PodGroup carries it (gangbridge's own gangbridge.io/schedule-timeout,
 * coscheduling spec.scheduleTimeoutSeconds, Volcano's sla-waiting-time
 * annotations; within config timeouts.max), when its wait started (the
 * PodGroup's creation, or a later resume), how many of its pods exist, are
 * gated, unschedulable, scheduled and ready, the durable facts on
 * gangbridge's PodGroup (gb_gangfacts: started, ready, timed out, resumed)
 * and the TrainJob's requeue state.  A deadline heap (gb_deadline) holds
 * the next due time of every gang; one timer thread sleeps until the
 * earliest and, while this replica leads and every informer has synced,
 * acts at once (gb_toaction): no scan of all gangs.  What ends a gang's
 * wait is timeouts.until: minMember pods scheduled (default) or Ready.  A
 * gang that reached it once is never acted on again: the leader records the
 * fact on gangbridge's own PodGroup the moment it happens, so a restart or
 * a new leader knows it even after the pods were replaced.  Nothing on the
 * TrainJob (its tenant's) moves a wait's start or exempts a gang.
 *
 * It also owns the measuring: PodGroups by phase (gb_tts), and histograms
 * of the time to schedule (PodGroup creation to the PodScheduled time of the
 * pod that completed the gang), the time to ready, the assembly part (first
 * to last gang pod created) and the gated part (first gated pod seen to the
 * last gate removed), plus counters of timeouts and requeue actions, all
 * labelled by backend, queue (gb_qlabels: the timeouts.maxQueues queues in
 * use that sort first, the rest "other") and gang size class, taken from
 * the gang's PodGroup.
 *
 * Thread-safety: observe, collect, kick and run_due may be called from any
 * thread (one internal mutex, never held across API calls; an informer's
 * delivery lock comes before it).
 */
#ifndef GB_TIMEOUTS_H
#define GB_TIMEOUTS_H

#include <stddef.h>

#include "gb_config.h"
#include "gb_controller.h"
#include "gb_informers.h"
#include "gb_kube_client.h"
#include "gb_kube_options.h"
#include "gb_metrics.h"
#include "gb_timeouts_options.h"

/* The changes the tracker follows. */
enum gb_observe_kind {
  GB_OBSERVE_TRAINJOB,
  GB_OBSERVE_POD,     /* JobSet pods */
  GB_OBSERVE_PODGROUP /* gangbridge's PodGroups of one backend */
};

struct gb_timeouts_opts {
  const struct gb_config *cfg;               /* validated; borrowed; timeouts.max (the policy) */
  const struct gb_timeouts_options *options; /* validated; borrowed; the tracker's timeouts.* */
  const struct gb_events_options *events;    /* borrowed; NULL: every repeat is written */
  struct gb_kube_client *client;            /* borrowed; NULL: no API writes */
  struct gb_informers *informers;           /* borrowed; NULL: fed by gb_timeouts_observe */
  /* borrowed; kube.watchNamespaces, the controller's selection the tracker
   * registers with (NULL: every namespace) */
  const struct gb_kube_options *kube;
  const struct gb_service_metrics *metrics; /* optional; borrowed (time to schedule) */
  struct gb_metrics *reg;                   /* optional; its own families go here */
  int (*is_leader)(void *ctx);              /* NULL: always the leader */
  void *leader_ctx;
  int (*synced)(void *ctx); /* NULL: always; else nothing is acted on before it says 1 */
  void *synced_ctx;
};

struct gb_timeouts_stats {
  size_t gangs;     /* gangs tracked */
  size_t armed;     /* deadlines in the heap */
  unsigned long long fired, suspended, resumed, gave_up, retries, refused;
};

struct gb_timeouts;

/* Creates a tracker (not started) and registers its handlers on
 * o->informers (before the factory starts).  Caller frees with
 * gb_timeouts_free, after the factory has stopped.  Returns 0, GC_EINVAL
 * (no cfg or options), GC_ENOMEM, or a metrics or handler registration
 * error (in d). */
int gb_timeouts_new(const struct gb_timeouts_opts *o, struct gb_timeouts **out,
                    struct gc_diags *d);

/* Starts the timer thread.  Returns 0, GC_EUSAGE (started) or GC_ENOMEM. */
int gb_timeouts_start(struct gb_timeouts *t);

/* Stops and joins the timer thread.  Idempotent. */
void gb_timeouts_stop(struct gb_timeouts *t);

/* Stops and frees everything.  Accepts NULL. */
void gb_timeouts_free(struct gb_timeouts *t);

/* Wakes the timer thread (call on becoming leader: deadlines that passed
 * while following are acted on at once). */
void gb_timeouts_kick(struct gb_timeouts *t);

/* Metrics collector (ctx = the tracker): gangbridge_podgroups{backend,phase}. */
void gb_timeouts_collect(void *ctx, struct gb_metrics *reg);

#endif
