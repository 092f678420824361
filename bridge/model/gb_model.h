/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_model: gangbridge's live model of the cluster, the one every placement
 * decision is made on.  It follows, through its handlers on the shared
 * informers (gb_informers), Nodes, non-terminal Pods and (when discovery
 * finds the CRD served, re-checked as CRDs change; it starts and stops that
 * deferred informer) Volcano HyperNodes; a compact record per pod (node, requests by the
 * Kubernetes pod-request rule in the snapshot's units, phase, gang
 * membership by the JobSet labels, scheduling gates, PodScheduled=False
 * since when and why, tolerations interned) and per node (taints,
 * readiness, unschedulable), never the JSON; and one tp_snapshot kept
 * current incrementally (pod binds and releases, node arrival, departure
 * and cordon are O(tree depth) deltas; a change of HyperNodes or label
 * levels rebuilds once per burst).  Free capacity in the snapshot is
 * allocatable minus the requests of every non-terminal pod bound to the
 * node (bound but not yet running included) minus the reservations the plan
 * (gb_plan) holds.  Every applied change bumps the generation.  An invalid
 * HyperNode (unparsable, listing itself, on a cycle, ...) is left out of the
 * topology with a warning and an Event naming it, and the rest is built;
 * when no topology can be built from the HyperNodes at all, the last good
 * snapshot is kept (a first one falls back to one flat domain).
 *
 * Thread-safety: new/listen/start/stop/free from one thread (the factory
 * is stopped after gb_model_stop and before gb_model_free).  Informer
 * handlers, gb_model_with_snapshot and the pod iteration serialise on one
 * mutex; the change callbacks run on informer threads with no lock held.
 * Lock order: the pod informer's delivery lock (gb_model_hold_pods, and
 * the handler), then the model's mutex, then the plan's.
 */
#ifndef GB_MODEL_H
#define GB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "gb_informers.h"
#include "gb_kube_client.h"
#include "gb_plan.h"
#include "gc_diag.h"
#include "tp_snapshot.h"

/* One pod as the model keeps it; every pointer is borrowed for the
 * duration of the callback it is passed to. */
struct gb_pod_view {
  const char *ns, *name, *uid, *resource_version;
  const char *node;            /* "" while unbound */
  const char *jobset;          /* jobset.sigs.k8s.io/jobset-name, "" if none */
  const char *rjob;            /* jobset.sigs.k8s.io/replicatedjob-name, "" if none */
  int phase;                   /* 0 Pending, 1 Running, 2 Succeeded, 3 Failed, 4 Unknown */
  int placement_gated;         /* carries the gangbridge.io/placement gate */
  int n_gates;                 /* scheduling gates in all */
  int64_t created_ms;          /* metadata.creationTimestamp */
  int64_t priority;            /* spec.priority (0 when unset) */
  int unschedulable;           /* PodScheduled=False */
  int64_t unschedulable_since_ms; /* its lastTransitionTime */
  const char *unschedulable_msg;  /* its message, bounded, "" if none */
  size_t n_req;                /* requests by the pod-request rule, plus one "pods" */
  const char *const *res;      /* resource names */
  const int64_t *val;          /* amounts in the snapshot's units */
};

typedef int (*gb_pod_view_fn)(void *arg, const struct gb_pod_view *pod);

/* Called (no lock held) when a pod carrying the JobSet name label was
 * added, changed or deleted: the placement controller re-examines the
 * gang.  ns and jobset are borrowed. */
typedef void (*gb_model_gang_fn)(void *arg, const char *ns, const char *jobset);
/* Called (no lock held, at most once per burst) when free capacity may
 * have grown: a pod went away, a node was added, uncordoned or grew. */
typedef void (*gb_model_capacity_fn)(void *arg);

struct gb_events;

struct gb_model_opts {
  struct gb_kube_client *client;  /* borrowed; NULL: fed only (tests, benchmarks) */
  struct gb_informers *informers; /* borrowed; NULL: fed only.  The model registers on it */
  const char *const *levels;     /* node-label levels, top first (copied); */
  size_t n_levels;               /*   0: HyperNodes when served, else one flat domain */
  struct gb_plan *plan;          /* borrowed, optional: told of gang pod binds and
                                    re-applied after a rebuild */
  gb_model_gang_fn on_gang;
  gb_model_capacity_fn on_capacity;
  void *arg;
  /* Optional: a Warning Event (reason HyperNodeInvalid) on each HyperNode
   * the topology leaves out, written by the housekeeping thread while
   * is_leader says so (NULL: always). */
  struct gb_events *events; /* borrowed */
  int (*is_leader)(void *ctx);
  void *leader_ctx;
};

struct gb_model;

/* Creates a stopped model (copies opts) and registers its handlers on
 * o->informers (before the factory starts).  Returns 0, GC_EINVAL or
 * GC_ENOMEM; problems go to diags. */
int gb_model_new(const struct gb_model_opts *o, struct gb_model **out, struct gc_diags *diags);
/* Sets the change callbacks (replacing opts' on_gang, on_capacity and arg)
 * before the model starts: how the placer, made after the model, follows
 * it. */
void gb_model_listen(struct gb_model *m, gb_model_gang_fn on_gang, gb_model_capacity_fn on_capacity,
                     void *arg);
/* Starts HyperNode discovery and the housekeeping thread (needs a client
 * and the factory, which starts the informers).  Returns 0 or a GC_E*
 * code. */
int gb_model_start(struct gb_model *m);
/* 1 once Nodes and Pods (and HyperNodes when served) are listed and the
 * first snapshot is built. */
int gb_model_synced(struct gb_model *m);
/* Stops the housekeeping thread (waits for it).  Idempotent. */
void gb_model_stop(struct gb_model *m);
/* Stops and frees.  Accepts NULL. */
void gb_model_free(struct gb_model *m);

/* Runs fn with the current snapshot and generation under the model's lock
 * (fn may read the snapshot and reserve through gb_plan; it must not call
 * back into the model).  Returns fn's result, or GC_ENOTFOUND before the
 * first snapshot exists. */
typedef int (*gb_model_snapshot_fn)(void *arg, struct tp_snapshot *s, uint64_t generation);
int gb_model_with_snapshot(struct gb_model *m, gb_model_snapshot_fn fn, void *arg);

/* Runs fn(arg) while no pod change is being delivered (the pod informer's
 * delivery lock; fn directly for a fed model): the model's pod records and
 * every other consumer of the same pod informer (the controller's gang pod
 * counts) are then at the same change, so a gang read through the
 * controller and its pods read here agree.  fn may call
 * gb_model_foreach_gang_pod and gb_controller_gang; it must not stop the
 * informers.  Returns fn's result. */
int gb_model_hold_pods(struct gb_model *m, int (*fn)(void *arg), void *arg);

/* The pod ns/name as the shared pod informer caches it (a new json-c
 * object, caller puts): pruned to what its consumers read, which includes
 * everything the placement release's merge patch is built from
 * (metadata.resourceVersion, spec.schedulingGates and the required node
 * affinity terms).  It may lag the API server; a write built from it
 * carries its resourceVersion as precondition.  Returns 0, or GC_ENOTFOUND
 * when not cached (or the model is fed only: no informer). */
int gb_model_pod_json(struct gb_model *m, const char *ns, const char *name, json_object **out);

/* Calls fn for every pod of JobSet ns/jobset under the model's lock, in
 * creation order; stops at fn's first non-zero result and returns it. */
int gb_model_foreach_gang_pod(struct gb_model *m, const char *ns, const char *jobset,
                              gb_pod_view_fn fn, void *arg);

/* Calls fn with the key ("ns/jobset", borrowed for the call) of every gang
 * that has pods in the model, under the model's lock; stops at fn's first
 * non-zero result and returns it.  fn must not call back into the model. */
typedef int (*gb_model_gang_key_fn)(void *arg, const char *key);
int gb_model_foreach_gang(struct gb_model *m, gb_model_gang_key_fn fn, void *arg);

/* Calls fn for every pod carrying the gangbridge.io/placement gate, under
 * the model's lock, in no particular order; stops at fn's first non-zero
 * result and returns it.  fn must not call back into the model. */
int gb_model_foreach_gated_pod(struct gb_model *m, gb_pod_view_fn fn, void *arg);

/* A per-slot mask for tp_eval_opts.blocked: 1 for every node with a
 * NoSchedule or NoExecute taint that the tolerations of pod ns/name do not
 * tolerate.  *mask is NULL (nothing blocked) or a malloc'd array of
 * tp_snapshot_slot_count bytes the caller frees.  Call inside
 * gb_model_with_snapshot (the slots are that snapshot's). */
int gb_model_blocked_mask(struct gb_model *m, const struct tp_snapshot *s, const char *ns,
                          const char *pod, uint8_t **mask);

struct gb_model_stats {
  uint64_t generation;
  size_t nodes, pods, hypernodes, domains;
  uint64_t rebuilds, pod_events, node_events;
  uint64_t ticks; /* housekeeping rounds (one per 50 ms tick or wake-up) */
  size_t record_bytes; /* bytes held by pod and node records */
  size_t hn_dropped;   /* HyperNodes left out of the topology (invalid) */
};
void gb_model_stats(struct gb_model *m, struct gb_model_stats *out);

#endif
