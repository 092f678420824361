/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_controller: the Kubernetes side of `gangbridge serve`.  It watches,
 * through the shared informer factory (gb_informers: one informer per
 * resource, whose other consumers are the model and the timeout tracker),
 * TrainJobs, TrainingRuntimes, ClusterTrainingRuntimes, Namespaces, JobSet
 * pods (the gang label only, counted per gang), CustomResourceDefinitions
 * (names only), and, once discovery finds their APIs, the PodGroups and
 * Queues of every backend of gangcalc's table (gc_backend.h; deferred
 * informers it starts).  gb_controller_watch_spec says what it watches of each, so a
 * consumer that follows the same objects (timeouts/) registers the same
 * selection.  It owns the work queue that their events feed, the worker
 * threads that run gb_reconcile, the periodic API discovery behind
 * `scheduling.backend: auto` (re-checked at once when a scheduling CRD
 * changes), the webhook's lookup (asking the placement lookup set with
 * gb_controller_set_placement), readiness (every informer synced), and the
 * queue metrics.  Writes happen only while the is_leader predicate says so;
 * gb_controller_resync re-queues every TrainJob (call it on becoming
 * leader).  `serve`'s wiring (configuration, HTTP servers, webhook, gRPC,
 * leader election, signals) is the CLI's: cli/gb_serve.c.
 *
 * Thread-safety: new/set_placement/start/stop/free from one thread (the
 * factory is stopped after gb_controller_stop and before
 * gb_controller_free).  resync, synced, the webhook lookup, the gang and
 * record reads, the readiness check and the metrics collector may be
 * called from any thread.  Lock order: an informer's delivery lock, then
 * the controller's mu, then gang_mu (the pod handler); nothing here calls
 * back into an informer while holding them.
 */
#ifndef GB_CONTROLLER_H
#define GB_CONTROLLER_H

#include <stddef.h>

#include "gb_config.h"
#include "gb_informer.h"
#include "gb_informers.h"
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
/* The resources the controller watches: the core ones, then one PodGroup
 * and one Queue slot per backend of gangcalc's table (GB_CTL_PG(i),
 * GB_CTL_QUEUE(i) for gc_backend_at(i); deferred: started once discovery
 * finds the API).  A slot past the table, or the Queue slot of a backend
 * without Queue objects, is empty. */
enum gb_ctl_res {
  GB_CTL_TRAINJOBS,
  GB_CTL_RUNTIMES,
  GB_CTL_CLUSTER_RUNTIMES,
  GB_CTL_NAMESPACES,
  GB_CTL_PODS, /* JobSet pods */
  GB_CTL_CRDS,
  GB_CTL_PG0,
  GB_CTL_Q0 = GB_CTL_PG0 + GC_BACKEND_MAX,
  GB_CTL_N = GB_CTL_Q0 + GC_BACKEND_MAX
};
#define GB_CTL_PG(i) ((enum gb_ctl_res)(GB_CTL_PG0 + (int)(i)))
#define GB_CTL_QUEUE(i) ((enum gb_ctl_res)(GB_CTL_Q0 + (int)(i)))

/* What the controller watches of r: *spec (the resource, deferred or not)
 * and the selection of *h (namespaces from kube.watchNamespaces, kube NULL:
 * every namespace; the label selector); h's keep and handler are left empty
 * for the caller.  Strings are borrowed from static data, the backend's
 * descriptor and kube.  Returns 1, or 0 for an empty slot (nothing set). */
int gb_controller_watch_spec(const struct gb_kube_options *kube, enum gb_ctl_res r,
                             struct gb_informer_spec *spec, struct gb_informer_handler *h);

struct gb_controller_opts {
  const struct gb_config *cfg; /* validated; borrowed */
  /* borrowed; kube.watchNamespaces (NULL: every namespace; the watch
   * timeout is the factory's) */
  const struct gb_kube_options *kube;
  const struct gb_events_options *events;   /* borrowed; NULL: every repeat is written */
  const struct gb_webhook_options *webhook; /* borrowed; denyOnPodGroupMismatch (NULL: off) */
  struct gb_kube_client *client;            /* borrowed */
  struct gb_informers *informers;           /* borrowed; the controller registers on it */
  const struct gb_service_metrics *metrics; /* optional; borrowed */
  int (*is_leader)(void *ctx);              /* NULL: always the leader */
  void *leader_ctx;
};

struct gb_controller;

/* Creates a stopped controller and registers its handlers on
 * o->informers (before the factory starts).  Returns 0, GC_EINVAL or
 * GC_ENOMEM. */
int gb_controller_new(const struct gb_controller_opts *o, struct gb_controller **out,
                      struct gc_diags *d);

/* The placement side of the webhook lookup (the placer's, while placement
 * is enabled; unset: no pod is gated or restricted).  Before the webhook
 * serves. */
void gb_controller_set_placement(struct gb_controller *c, gb_placement_lookup_fn fn, void *ctx);

/* Starts discovery (and the deferred informers of served APIs) and, once
 * every cache has synced, the workers; the factory starts the rest.
 * Returns 0 or a GC_E* code. */
int gb_controller_start(struct gb_controller *c);

/* 1 once every running informer has synced and workers run. */
int gb_controller_synced(struct gb_controller *c);

/* Queues every cached TrainJob. */
void gb_controller_resync(struct gb_controller *c);

/* Stops workers and discovery (waits for them).  Idempotent. */
void gb_controller_stop(struct gb_controller *c);
void gb_controller_free(struct gb_controller *c);

/* gb_webhook_lookup_fn over the controller's caches (ctx = controller). */
int gb_controller_webhook_lookup(void *ctx, const char *ns, const char *jobset_name,
                                 const char *rjob_name, struct gb_webhook_decision *out,
                                 char *reason, size_t reason_size);

/* The gang of the TrainJob that owns JobSet ns/jobset_name, computed from
 * the caches as the reconcile does (counted pod sets, minMember, topology
 * policy; the gang's pod count from the pod informer's changes).  *out is a
 * new gang the caller frees with gc_gang_free, or NULL when gangbridge does
 * not manage that TrainJob now (not ours, finished, invalid, waiting).
 * ctx is the controller (the placer's gb_placer_gang_fn shape).  Returns
 * 0, or GC_EIO (caches not synced) / another GC_E* code with a sentence in
 * reason.  Any thread. */
int gb_controller_gang(void *ctx, const char *ns, const char *jobset_name, struct gc_gang **out,
                       char *reason, size_t reason_size);

/* The value of annotation `key` on gangbridge's PodGroup ns/name of
 * backend b as the PodGroup informer caches it (the cache keeps PodGroups
 * whole, annotations included): *out is a malloc'd copy the caller frees,
 * or NULL when the PodGroup has no such annotation.  ctx is the
 * controller.  Returns 0, GC_ENOTFOUND (no such PodGroup cached, or its API
 * is not watched) or GC_ENOMEM.  Any thread. */
int gb_controller_podgroup_annotation(void *ctx, const struct gc_backend *b, const char *ns,
                                      const char *name, const char *key, char **out);

/* Calls fn(arg, ns, name) for every gangbridge PodGroup the caches hold
 * (every backend) that carries annotation `key`, until fn returns
 * non-zero (ctx is the controller).  Returns 0, fn's result, GC_EIO (caches
 * not synced yet) or GC_ENOMEM.  Any thread; fn runs with no lock held. */
typedef int (*gb_controller_pg_fn)(void *arg, const char *ns, const char *name);
int gb_controller_foreach_podgroup_annotation(void *ctx, const char *key, gb_controller_pg_fn fn,
                                              void *arg);

/* gb_health_check_fn: ready once synced (ctx = controller). */
int gb_controller_ready_check(void *ctx, char *reason, size_t size);

/* Metrics collector (ctx = controller): queue depth and retries.  (Watch
 * restarts are the factory's, gb_informers_collect; PodGroups by phase and
 * time to schedule are timeouts/'s.) */
void gb_controller_collect(void *ctx, struct gb_metrics *reg);

#endif
