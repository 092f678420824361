/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_reconcile: the reconcile of one TrainJob.  It has two halves.
 * gb_reconcile_plan is pure: from the TrainJob, its runtime, its Namespace,
 * the PodGroups that exist, which PodGroup APIs the cluster serves, the
 * backends' Queues and the policy defaults of the configuration (the
 * Namespace, Queue and config feed gangcalc's gc_policy_context), it
 * decides what should happen (skip, keep, apply a
 * rendered PodGroup, delete, wait, or report an invalid TrainJob) and which
 * Events to emit; gangcalc computes the gang.  gb_reconcile_run reads those
 * inputs from the informer caches, calls the plan, and carries it out: a
 * PodGroup is created by POST only when none of its name exists (409: a
 * foreign one, left alone), updated by server-side apply (field manager
 * "gangbridge", never forced over another manager, metadata and spec only,
 * uid precondition) only when it carries gangbridge's label and a controller
 * ownerReference to the TrainJob, deleted with a uid precondition; Events go
 * on the TrainJob and the PodGroup.  A backend with several API versions
 * (the upstream Workload API) is read by GET at the version discovery
 * picked, and its other object (the Workload's PodGroup) is created by POST
 * when missing, never changed, and deleted with the group object, which
 * also goes on suspend.  The rules are
 * listed in docs/operating.md ("What the controller does").
 *
 * Thread-safety: gb_reconcile_plan is reentrant.  gb_reconcile_run may run
 * on several workers at once for different keys.
 */
#ifndef GB_RECONCILE_H
#define GB_RECONCILE_H

#include <stddef.h>

#include "gb_config.h"
#include "gb_events.h"
#include "gb_informer.h"
#include "gb_kube_client.h"
#include "gc_arena.h"
#include "gc_gang.h"
#include "gc_value.h"

/* Annotations and labels gangbridge reads. */
#define GB_ANN_BACKEND "gangbridge.io/backend"         /* Namespace: a backend name or auto */
#define GB_ANN_GANG_SCOPE "gangbridge.io/gang-scope"   /* Namespace: wave|all */
#define GB_ANN_BOUND_JOBS "gangbridge.io/bound-replicated-jobs"
#define GB_ANN_GANG_JOBS "gangbridge.io/gang-replicated-jobs"
#define GB_LABEL_ENABLED "gangbridge.io/enabled"       /* TrainJob: "false" opts out */
#define GB_FIELD_MANAGER "gangbridge"

enum gb_rc_action {
  GB_RC_SKIP = 0, /* not ours (filtered out, managed elsewhere, Trainer's policy) */
  GB_RC_KEEP,     /* ours; the PodGroup is right or is left as it is */
  GB_RC_APPLY,    /* apply `desired` */
  GB_RC_DELETE,   /* delete the PodGroups listed (TrainJob finished) */
  GB_RC_WAIT,     /* cannot act yet (runtime or API missing): retry with backoff */
  GB_RC_INVALID   /* the TrainJob cannot be rendered: Event, no retry until it changes */
};

const char *gb_rc_action_name(enum gb_rc_action a);

#define GB_RC_MAX_EVENTS 8

struct gb_rc_event {
  const char *type;   /* GB_EVENT_NORMAL or GB_EVENT_WARNING */
  const char *reason; /* QueueNotFound, QueueClosed, RuntimeNotFound, ... */
  const char *message;
  int once;           /* a state seen on every reconcile: record it once, never count it */
  int on_podgroup;    /* also post it on the PodGroup (plan.backend, pg_uid) */
};

/* Queue lookup of backend b (one with GC_BCAP_QUEUE): returns 1 when the
 * queue exists (*state is its state field or NULL), 0 when it does not, -1
 * when unknown (no cache). */
typedef int (*gb_rc_queue_fn)(void *ctx, const struct gc_backend *b, const char *name,
                              const char **state, struct gc_arena *a);

/* Queue object lookup of backend b: the Queue `name` as a tree in a, or
 * NULL when it does not exist or is unknown.  Its annotations are a source
 * of the gang timeout (gc_policy). */
typedef const struct gc_value *(*gb_rc_queue_doc_fn)(void *ctx, const struct gc_backend *b,
                                                     const char *name, struct gc_arena *a);

struct gb_rc_input {
  const struct gb_config *cfg;          /* validated */
  const struct gc_value *trainjob;      /* required */
  const struct gc_value *runtime;       /* the referenced runtime, NULL: not found */
  const struct gc_value *ns;            /* the Namespace, NULL: not known */
  /* By gc_backend_index: the existing PodGroups (or NULL), and whether each
   * backend's API is served (1), not (0) or unknown (-1). */
  const struct gc_value *pg[GC_BACKEND_MAX];
  int served[GC_BACKEND_MAX];
  /* By gc_backend_index, for a backend with several API versions (the
   * Workload API): the version discovery picked (NULL: none served), and
   * the object besides the group object that exists (its more_kind, named
   * after the TrainJob with the version's group_suffix), or NULL. */
  const struct gc_backend_version *version[GC_BACKEND_MAX];
  const struct gc_value *more[GC_BACKEND_MAX];
  long pods;                            /* the gang's pods that exist; -1 unknown (as if some) */
  gb_rc_queue_fn queue_state;           /* NULL: queues unknown */
  gb_rc_queue_doc_fn queue_doc;         /* NULL: queues unknown (same queue_ctx) */
  void *queue_ctx;
  /* Optional: when the plan is KEEP or APPLY, the gang it computed is handed
   * over here (the caller frees it with gc_gang_free); else it is left NULL.
   * The placement controller reads the counted pod sets and the policy. */
  struct gc_gang **keep_gang;
};

struct gb_rc_plan {
  enum gb_rc_action action;
  const char *why;        /* a short sentence for logs (arena) */
  int managed;            /* gangbridge is responsible for this TrainJob's PodGroup */
  const struct gc_backend *backend; /* the PodGroup's backend (APPLY, KEEP), or NULL */
  const struct gc_backend_version *version; /* its API version (NULL: backend->version) */
  struct gc_value *desired; /* APPLY: the PodGroup to apply (arena) */
  /* APPLY, KEEP: the backend's other object (the Workload API's PodGroup),
   * created when missing and never changed; NULL: none. */
  struct gc_value *desired_more;
  /* PodGroups to delete (DELETE, or a stale other backend's on APPLY). */
  const struct gc_backend *del[GC_BACKEND_MAX];
  const char *del_uid[GC_BACKEND_MAX];
  const struct gc_backend_version *del_version[GC_BACKEND_MAX]; /* NULL: del[i]->version */
  const char *del_more_uid[GC_BACKEND_MAX]; /* its other object, ours, deleted first; or NULL */
  size_t n_del;
  const char *bound_jobs;   /* binding plan: comma-separated replicated jobs whose pods join */
  const char *pg_uid;       /* APPLY: the uid of the PodGroup updated (precondition);
                               NULL: none is known, create it */
  const char *pg_rv;        /* APPLY: its cached resourceVersion */
  struct gb_rc_event events[GB_RC_MAX_EVENTS];
  size_t n_events;
};

/* The runtime a TrainJob refers to: *cluster 1 for ClusterTrainingRuntime
 * (the default kind), *name borrowed from tj.  Returns 0 or GC_EINVAL. */
int gb_reconcile_runtime_ref(const struct gc_value *tj, int *cluster, const char **name);

/* Decides what to do.  Everything in *out lives in arena a.  Returns 0 or
 * GC_ENOMEM. */
int gb_reconcile_plan(const struct gb_rc_input *in, struct gc_arena *a, struct gb_rc_plan *out);

/* 1 when every member of `want` is present with an equal value in `have`
 * (maps recursively; sequences element by element), so fields the server
 * or others added do not count as differences. */
int gb_reconcile_value_subset(const struct gc_value *want, const struct gc_value *have);

/* ---- execution ------------------------------------------------------------ */

struct gb_rc_env {
  const struct gb_config *cfg;
  struct gb_kube_client *client;
  struct gb_events *events;          /* NULL: no Events */
  struct gb_informer *trainjobs;
  struct gb_informer *runtimes;      /* TrainingRuntimes */
  struct gb_informer *cluster_runtimes;
  struct gb_informer *namespaces;    /* NULL: none */
  /* By gc_backend_index; NULL when not watched. */
  struct gb_informer *pg[GC_BACKEND_MAX];     /* the backend's PodGroups */
  struct gb_informer *queues[GC_BACKEND_MAX]; /* its Queues (backends that have them) */
  int served[GC_BACKEND_MAX];
  /* The version discovery picked of a backend with several (NULL: none);
   * such a backend has no informer: its objects are read from the API. */
  const struct gc_backend_version *version[GC_BACKEND_MAX];
  /* The number of pods labelled with JobSet `name` in `ns`; NULL: unknown. */
  long (*gang_pods)(void *ctx, const char *ns, const char *name);
  void *pods_ctx;
  int (*is_leader)(void *ctx);       /* NULL: always */
  void *leader_ctx;
};

enum gb_rc_outcome {
  GB_RC_DONE = 0,   /* success: forget the key */
  GB_RC_SKIPPED,    /* nothing to do (not ours, gone, not leader): forget */
  GB_RC_RETRY,      /* error or waiting: add rate-limited */
  GB_RC_CONFLICT,   /* another manager owns a field: Event, forget (no fight) */
  GB_RC_BAD         /* invalid TrainJob: Event, forget */
};

struct gb_rc_result {
  enum gb_rc_outcome outcome;
  enum gb_rc_action action;
  char message[512]; /* what happened, for logs */
  const char *error_reason; /* gangbridge_errors_total reason, or NULL */
  /* The PodGroup this reconcile wrote, or found already as desired
   * (pg_backend NULL: none): its uid and resourceVersion as the API server
   * answered, which the watch event of the write will carry.  The
   * controller remembers them so that the echo is not reconciled again. */
  const struct gc_backend *pg_backend;
  char pg_uid[128], pg_rv[64];
};

/* Reads the plan's inputs for TrainJob ns/name from env's caches into *in
 * (trees in arena a).  Returns 0, GC_ENOTFOUND (no such TrainJob) or another
 * GC_E* code (cache read failed). */
int gb_reconcile_gather(struct gb_rc_env *env, const char *ns, const char *name,
                        struct gc_arena *a, struct gb_rc_input *in);

/* Reconciles the TrainJob "ns/name".  attempts is how often the key was
 * retried so far (failures are reported as Events from the third on). */
void gb_reconcile_run(struct gb_rc_env *env, const char *key, int attempts,
                      struct gb_rc_result *res);

#endif
