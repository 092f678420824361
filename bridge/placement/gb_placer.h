/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer: the placement controller.  It owns the gated gangs: the gangs
 * whose pods the webhook held back with the gangbridge.io/placement
 * scheduling gate.  When every counted pod of a gang exists and is gated
 * (counted: the gang's minMember pods of its counted replicated jobs), it
 * builds the gang from the pods' own requests (pods with equal requests
 * form one pod set), decides every ready gang in one pass on the model's
 * snapshot (gb_plan_decide: reserved at once, so two gangs of a pass never
 * share capacity), and, on the leader only, releases each placed gang: one
 * PATCH per pod (a required node-affinity term AND-ed in, the gate removed,
 * resourceVersion as precondition; a 409 re-reads and retries), a bounded
 * number in flight.  A gang that fits nowhere, or is held behind a starving
 * one, keeps its gates and gets a PlacementWaiting Event on the TrainJob and
 * the PodGroup; it is re-decided when capacity may have grown.  A released
 * gang whose pods stay unschedulable past the release timeout gets a
 * PlacementRaced Event and metric.  State lives on the pods (the gates), so
 * a restart or a new leader loses nothing: gb_placer_resync re-examines
 * every gang the model has seen.  It also owns the placement metrics, the
 * /debug/placement status document and the webhook's placement lookup.
 *
 * The pure halves (gang readiness, pod sets from pod requests, the
 * restriction of a decision) are gb_gangview's.
 *
 * Thread-safety: new/start/stop/free from one thread.  The model callbacks
 * (gb_placer_on_gang, gb_placer_on_capacity), gb_placer_resync, the lookup,
 * the status and the collector may be called from any thread; decisions and
 * releases run on the placer's own thread.  A pass reads each gang (the
 * gang callback: the controller's caches and pod count) and its pods (the
 * model's records) under the pod informer's delivery lock
 * (gb_model_hold_pods), so both come from the same pod changes.  Lock
 * order: the pass lock, then the pod informer's delivery lock, then the
 * controller's and the model's locks, then the placer's mu (which the
 * model callbacks take inside a pod handler); mu is never held while the
 * delivery lock is taken.
 */
#ifndef GB_PLACER_H
#define GB_PLACER_H

#include <stddef.h>
#include <stdint.h>

#include "gb_buf.h"
#include "gb_events.h"
#include "gb_gangview.h"
#include "gb_http.h"
#include "gb_kube_client.h"
#include "gb_metrics.h"
#include "gb_model.h"
#include "gb_plan.h"
#include "gc_gang.h"

/* The gang of TrainJob/JobSet ns/name: a new gc_gang (caller frees with
 * gc_gang_free) or NULL when gangbridge does not manage it now.  Returns 0
 * or a GC_E* code (reason set).  gb_controller_gang has this shape. */
typedef int (*gb_placer_gang_fn)(void *ctx, const char *ns, const char *name, struct gc_gang **out,
                                 char *reason, size_t reason_size);

struct gb_placer_opts {
  struct gb_model *model;        /* borrowed; required */
  struct gb_plan *plan;          /* borrowed; required */
  struct gb_kube_client *client; /* borrowed; NULL: decide only, never release */
  /* Borrowed; NULL: client.  The release PATCHes go here, so a gang's
   * release has its own budget (placement.releaseQPS/releaseBurst) and
   * connections instead of queueing behind the main client's token
   * bucket; records, reads and Events stay on client. */
  struct gb_kube_client *release_client;
  struct gb_events *events;      /* borrowed; NULL: no Events */
  gb_placer_gang_fn gang;        /* required */
  void *gang_ctx;
  int (*is_leader)(void *ctx); /* NULL: always the leader */
  void *leader_ctx;
  int label_levels;           /* the model's domains are node-label levels */
  int64_t release_timeout_ms; /* default 120000 */
  int max_inflight;           /* PATCHes in flight; default 32 */
  int64_t batch_delay_ms;     /* a burst of changes is gathered this long; default 10 */
  int64_t tick_ms;            /* periodic re-check (raced, held); default 1000 */
  struct gb_metrics *reg;     /* optional: the placement metrics are registered here */
  /* Optional: the decision record's text on gangbridge's PodGroup ns/name
   * of backend b from a cache (gb_controller_podgroup_annotation's shape:
   * *text malloc'd or NULL; GC_ENOTFOUND when not cached).  NULL: GET. */
  int (*record_lookup)(void *ctx, const struct gc_backend *b, const char *ns, const char *name,
                       const char *key, char **text);
  /* Optional: calls fn for every gang ns/name whose PodGroup carries a
   * decision record (gb_controller_foreach_podgroup_annotation's shape;
   * GC_EIO while not known yet): on start and takeover the placer takes
   * back the decisions of gangs that have no pods yet (pinned by
   * jobEnqueueable) too. */
  int (*record_gangs)(void *ctx, const char *key,
                      int (*fn)(void *arg, const char *ns, const char *name), void *arg);
  void *record_ctx;
};

struct gb_placer;

/* Creates a stopped placer (copies opts; registers its metrics).  Returns
 * 0, GC_EINVAL (a required option missing, with a message in d) or
 * GC_ENOMEM. */
int gb_placer_new(const struct gb_placer_opts *o, struct gb_placer **out, struct gc_diags *d);
/* Starts the placer's thread.  Returns 0 or GC_ENOMEM. */
int gb_placer_start(struct gb_placer *p);
/* Stops the thread (waits for a pass in progress).  Idempotent. */
void gb_placer_stop(struct gb_placer *p);
/* Stops and frees.  Accepts NULL. */
void gb_placer_free(struct gb_placer *p);

/* gb_model_gang_fn (arg = placer): gang ns/jobset changed. */
void gb_placer_on_gang(void *arg, const char *ns, const char *jobset);
/* gb_model_capacity_fn (arg = placer): re-decide every waiting gang. */
void gb_placer_on_capacity(void *arg);
/* Re-examines every gang seen, every gang the model has pods of, and every
 * gang with a decision record (call on becoming leader). */
void gb_placer_resync(struct gb_placer *p);
/* 1 once a pass that began after the last gb_placer_resync (or after start)
 * has finished on the leader with the model synced and the decision
 * records scanned: the plan then holds every gang the pods and the records
 * show, so answers made from it are the ones the last leader gave.  serve's
 * scheduler endpoints wait for it after a takeover.  Any thread. */
int gb_placer_caught_up(struct gb_placer *p);
/* Runs one pass now on the calling thread (tests, benchmarks; the thread
 * must not be started).  Returns 0 or a GC_E* code. */
int gb_placer_run_once(struct gb_placer *p);

/* gb_placement_lookup_fn (ctx = placer) for the webhook, any thread: a pod
 * of a released gang gets the gang's restriction (*gate 0); a pod of a gang
 * not released yet is gated when the gang has a topology policy. */
int gb_placer_webhook_lookup(void *ctx, const char *ns, const char *jobset, const char *rjob,
                             int *gate, struct gb_restriction *r, char *reason, size_t reason_size);

/* The scheduler endpoint's recorder (gb_sched_record_fn, ctx = placer),
 * any thread: writes the decision the plan has just made for gang key
 * (TrainJob and PodGroup ns/name) on the gang's PodGroup, replacing the
 * record of decision prev_id (0: none), before jobEnqueueable permits the
 * gang.  Returns 0 (recorded), or a GC_E* code with a sentence in reason:
 * not recorded (this replica is not the leader, the gang is not managed or
 * is suspended, its PodGroup is
 * missing or not gangbridge's, the API failed, or another decision is
 * recorded already, which the placer then takes back). */
int gb_placer_record_decision(void *ctx, const char *ns, const char *name, const char *key,
                              uint64_t prev_id, char *reason, size_t reason_size);

/* A GET route at path serving gb_placer_status_json. */
struct gb_http_route gb_placer_route(struct gb_placer *p, const char *path);
/* Metrics collector (ctx = placer): gangs gated now, snapshot generation
 * and size. */
void gb_placer_collect(void *ctx, struct gb_metrics *reg);

#endif
