/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_controller: the Kubernetes side of `gangbridge serve`.  It owns the
 * informers (TrainJobs, TrainingRuntimes, ClusterTrainingRuntimes,
 * Namespaces, JobSet pods (a compact record each, counted per gang),
 * CustomResourceDefinitions (name, group and versions only), and, once
 * discovery finds their APIs, the PodGroups and Queues of every backend of
 * gangcalc's table (gc_backend.h)), the work
 * queue that their events feed, the worker threads that run gb_reconcile,
 * the periodic API discovery behind `scheduling.backend: auto` (re-checked
 * at once when a scheduling CRD changes), the webhook's lookup, readiness
 * (every informer synced), and the cache-derived metrics (queue, watches).
 * TrainJob, pod and PodGroup changes also go to an optional observer (the
 * timeout tracker, wired by serve).  Writes happen
 * only while the is_leader predicate says so; gb_controller_resync re-queues
 * every TrainJob (call it on becoming leader).  `serve`'s wiring
 * (configuration, HTTP servers, webhook, gRPC, leader election, signals)
 * is the CLI's: cli/gb_serve.c.
 *
 * Thread-safety: new/start/stop/free from one thread.  resync, synced, the
 * webhook lookup, the readiness check and the metrics collector may be
 * called from any thread.
 */
#ifndef GB_CONTROLLER_H
#define GB_CONTROLLER_H

#include <stddef.h>

#include "gb_config.h"
#include "gb_informer.h"
#include "gb_kube_client.h"
#include "gb_kube_options.h"
#include "gb_metrics.h"
#include "gb_webhook.h"

/* The placement side of the webhook lookup, for a pod the lookup binds
 * (pod of replicated job `rjob` of JobSet ns/jobset): sets *gate (0 on
 * entry) when the gang has a placement policy and gangbridge places it, so
 * the pod waits behind the gangbridge.io/placement gate; or, when the
 * gang's replicated job was already released, fills *restriction (NONE on
 * entry) with the gang's placement so the pod goes to the same domain.
 * Returns 0, or a negative GC_E* code with a reason in `reason` (the
 * webhook then denies the pod so the Job controller retries, unless
 * webhook.allowOnError).  Runs on HTTP threads, concurrently: thread-safe
 * and quick. */
typedef int (*gb_placement_lookup_fn)(void *ctx, const char *ns, const char *jobset,
                                      const char *rjob, int *gate,
                                      struct gb_restriction *restriction, char *reason,
                                      size_t reason_size);
/* The caches whose changes the controller hands to its observer. */
enum gb_observe_kind {
  GB_OBSERVE_TRAINJOB,
  GB_OBSERVE_POD,     /* JobSet pods, trimmed by gb_informer_trim_pod */
  GB_OBSERVE_PODGROUP /* gangbridge's PodGroups of one backend */
};

/* Called on the informer's thread for every add, update and delete of the
 * caches above, before the controller queues the TrainJob.  backend is the
 * PodGroup's (GB_OBSERVE_PODGROUP; NULL otherwise).  ch is borrowed for the
 * call; initial is 1 while that informer's first list is delivered.
 * The observer must not block: it is how timeouts/ follows gangs without
 * the controller depending on it. */
typedef void (*gb_controller_observe_fn)(void *ctx, enum gb_observe_kind kind,
                                         const struct gc_backend *backend,
                                         const struct gb_informer_change *ch, int initial);

struct gb_controller_opts {
  const struct gb_config *cfg;      /* validated; borrowed */
  /* borrowed; kube.watchNamespaces and kube.watchTimeout (NULL: every
   * namespace, the informer's default timeout) */
  const struct gb_kube_options *kube;
  const struct gb_events_options *events;   /* borrowed; NULL: every repeat is written */
  const struct gb_webhook_options *webhook; /* borrowed; denyOnPodGroupMismatch (NULL: off) */
  struct gb_kube_client *client;    /* borrowed */
  const struct gb_service_metrics *metrics; /* optional; borrowed */
  int (*is_leader)(void *ctx);      /* NULL: always the leader */
  void *leader_ctx;
  gb_placement_lookup_fn placement_lookup; /* NULL (the default, and while placement is
                                              disabled): no pod is gated or restricted */
  void *placement_ctx;                     /* borrowed */
  gb_controller_observe_fn observe; /* optional */
  void *observe_ctx;
};

struct gb_controller;

/* Creates a stopped controller.  Returns 0, GC_EINVAL or GC_ENOMEM. */
int gb_controller_new(const struct gb_controller_opts *o, struct gb_controller **out,
                      struct gc_diags *d);

/* Starts informers, discovery and (once every cache has synced) workers.
 * Returns 0 or a GC_E* code. */
int gb_controller_start(struct gb_controller *c);

/* 1 once every running informer has synced and workers run. */
int gb_controller_synced(struct gb_controller *c);

/* Queues every cached TrainJob. */
void gb_controller_resync(struct gb_controller *c);

/* Stops workers, discovery and informers (waits for them).  Idempotent. */
void gb_controller_stop(struct gb_controller *c);
void gb_controller_free(struct gb_controller *c);

/* gb_webhook_lookup_fn over the controller's caches (ctx = controller). */
int gb_controller_webhook_lookup(void *ctx, const char *ns, const char *jobset_name,
                                 const char *rjob_name, struct gb_webhook_decision *out,
                                 char *reason, size_t reason_size);

/* The gang of the TrainJob that owns JobSet ns/jobset_name, computed from
 * the caches as the reconcile does (counted pod sets, minMember, topology
 * policy).  *out is a new gang the caller frees with gc_gang_free, or NULL
 * when gangbridge does not manage that TrainJob now (not ours, finished,
 * invalid, waiting).  Returns 0, or GC_EIO (caches not synced) / another
 * GC_E* code with a sentence in reason.  Any thread. */
int gb_controller_gang(struct gb_controller *c, const char *ns, const char *jobset_name,
                       struct gc_gang **out, char *reason, size_t reason_size);

/* The value of annotation `key` on gangbridge's PodGroup ns/name of
 * backend b as the PodGroup informer caches it (the cache keeps PodGroups
 * whole, annotations included): *out is a malloc'd copy the caller frees,
 * or NULL when the PodGroup has no such annotation.  Returns 0,
 * GC_ENOTFOUND (no such PodGroup cached, or its API is not watched) or
 * GC_ENOMEM.  Any thread. */
int gb_controller_podgroup_annotation(struct gb_controller *c, const struct gc_backend *b,
                                      const char *ns, const char *name, const char *key,
                                      char **out);

/* Calls fn(arg, ns, name) for every gangbridge PodGroup the caches hold
 * (every backend) that carries annotation `key`, until fn returns
 * non-zero.  Returns 0, fn's result, GC_EIO (caches not synced yet) or
 * GC_ENOMEM.  Any thread; fn runs with no lock held. */
typedef int (*gb_controller_pg_fn)(void *arg, const char *ns, const char *name);
int gb_controller_foreach_podgroup_annotation(struct gb_controller *c, const char *key,
                                              gb_controller_pg_fn fn, void *arg);

/* gb_health_check_fn: ready once synced (ctx = controller). */
int gb_controller_ready_check(void *ctx, char *reason, size_t size);

/* Metrics collector (ctx = controller): queue depth and retries, watch
 * restarts.  (PodGroups by phase and time to schedule are timeouts/'s.) */
void gb_controller_collect(void *ctx, struct gb_metrics *reg);

#endif
