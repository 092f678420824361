/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_gang: the gang of one TrainJob.  Given a TrainJob document and a catalog
 * of TrainingRuntime/ClusterTrainingRuntime documents, it resolves the
 * runtime exactly as Kubeflow Trainer does (runtimeRef defaults, namespace
 * rule, numNodes, MPI runLauncherAsNode, resourcesPerNode merge, runtime
 * patches and the v2.0/v2.1 override fields), computes each replicated job's
 * pod count and per-pod request (Kubernetes' pod request rule, limits-only
 * resources counted), orders replicated jobs into dependsOn waves and picks
 * the gang, then derives minMember, minResources, queue, priority class,
 * network topology and timeout policy (gc_policy weighs the TrainJob, the
 * runtime and the caller's gc_policy_context: Namespace, the backend's Queue
 * and configured defaults).  The backend is a descriptor (gc_backend.h).
 * The result owns all its memory in one arena.  This module is pure: no
 * I/O, no printing.
 */
#ifndef GC_GANG_H
#define GC_GANG_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"
#include "gc_backend.h"
#include "gc_diag.h"
#include "gc_policy.h"
#include "gc_resources.h"
#include "gc_value.h"

/* Well-known keys. */
#define GC_TRAINER_GROUP "trainer.kubeflow.org"
#define GC_TRAINER_API "trainer.kubeflow.org/v1alpha1"
#define GC_ANCESTOR_LABEL "trainer.kubeflow.org/trainjob-ancestor-step"
#define GC_MANAGED_BY_LABEL "app.kubernetes.io/managed-by"
#define GC_JOBSET_NAME_LABEL "jobset.sigs.k8s.io/jobset-name"   /* on PodGroups and pods */
#define GC_TRAINJOB_NAME_LABEL "trainer.kubeflow.org/trainjob-name" /* on PodGroups */
#define GC_MANAGER_NAME "gangbridge"
#define GC_TRAINER_CONTROLLER "trainer.kubeflow.org/trainjob-controller"

enum gc_scope { GC_SCOPE_WAVE = 0, GC_SCOPE_ALL };

/* How a replicated job's pods relate to the PodGroup. */
enum gc_binding {
  GC_BIND_COUNTED = 0, /* first wave of the gang phase: labelled and counted */
  GC_BIND_BOUND,       /* later wave of the gang phase: labelled, not counted */
  GC_BIND_UNBOUND      /* another phase: must not carry the group label */
};

/* Machine-readable warning kinds (the bridge turns some into Events). */
enum gc_warning_code {
  GC_WARN_GANG_SCOPE_NARROWED = 1, /* other phases left out: deadlock avoided */
  GC_WARN_TIMEOUT_CLAMPED,
  GC_WARN_NO_QUEUE,
  GC_WARN_DEPRECATED_RUNTIME,
  GC_WARN_LIMITS_ONLY,
  GC_WARN_POLICY_BOTH, /* the runtime's podGroupPolicy names two backends */
  GC_WARN_OTHER,
  GC_WARN_GROUPER_NOT_SKIPPED, /* the scheduler's own grouper was not told to keep out */
  GC_WARN_TOPOLOGY_DROPPED,    /* the backend cannot carry the topology policy as given */
  GC_WARN_GANGED_ELSEWHERE     /* something else gangs it: gangbridge writes no group object */
};

struct gc_warning {
  enum gc_warning_code code;
  const char *message; /* arena-owned full sentence */
};

struct gc_podset {
  const char *name;     /* replicated job name */
  const char *ancestor; /* trainjob-ancestor-step label value, or NULL */
  int32_t count;        /* pods per Trainer's rule (parallelism or numNodes) */
  int32_t replicas;     /* replicatedJob replicas (JobSet default 1) */
  int wave;             /* 0-based dependsOn wave (the order JobSet creates jobs) */
  int phase;            /* 0-based phase: Ready dependencies share it, Complete ones end it */
  enum gc_binding binding;
  struct gc_reslist request;     /* per-pod request */
  struct gc_reslist limits_only; /* resources that came only from limits */
  const char *priority_class;    /* NULL if unset */
  const char *scheduler_name;    /* NULL if unset */
  const char **depends_on;       /* names this job waits for */
  const char **depends_status;   /* "Ready" or "Complete", parallel to depends_on */
  size_t n_depends_on;
};

/* The topology policy gangbridge places the gang by (gc_policy.h says
 * where it comes from).  Annotations "required" are mode hard, "preferred"
 * mode soft; a number is highestTierAllowed, anything else highestTierName. */
struct gc_topology_policy {
  int set;                   /* some source gave a policy */
  const char *mode;          /* "hard" or "soft" (default hard) */
  int has_highest_tier;      /* highestTierAllowed given (defaults to 1 when */
  int64_t highest_tier;      /*   neither it nor highestTierName is given)  */
  const char *highest_tier_name; /* NULL if unset */
  const char *source;        /* where it came from, e.g. "Namespace team-a: metadata.annotations
                                [gangbridge.io/topology-required]"; NULL when unset */
  int in_podgroup;           /* from the runtime's podGroupPolicy network topology of the
                                gang's own backend: its group object carries it */
  int level;                 /* highest_tier_name is config topology.levels[level - 1]
                                (top level first); 0 when it is not one of them */
};

/* The gang's schedule timeout, before the backend's limits. */
struct gc_timeout_policy {
  int set;             /* some source gave a timeout */
  int64_t seconds;     /* > 0, at most GC_TIMEOUT_MAX_SECONDS (sub-second values round up) */
  const char *source;  /* where it came from, as in gc_topology_policy; NULL when unset */
};

struct gc_gang {
  struct gc_arena *arena; /* owns every pointer below */
  const char *namespace_;
  const char *name;
  const char *uid; /* NULL when the TrainJob has none */
  const char *runtime_kind;
  const char *runtime_name;
  const char *api_generation; /* "v2.0", "v2.1" or "v2.2+" by the fields used */
  int suspended;
  const struct gc_backend *backend; /* resolved: option, else runtime policy, else the
                                       default backend (never NULL in a computed gang) */
  int backend_from_runtime; /* the runtime's podGroupPolicy named a backend */
  /* The API version of a backend with several (gc_backend.versions) the
   * objects are written at, and why that one (a literal); NULL for others. */
  const struct gc_backend_version *backend_version;
  const char *backend_version_why;
  /* What else gangs this TrainJob for its backend (Trainer's own stanza in
   * the runtime, a Job's own scheduling, a pod template already naming a
   * scheduling group), as "runtime path: what"; NULL: gangbridge does.  When
   * set gangbridge writes nothing for it (gc_render_objects renders none). */
  const char *ganged_by;
  enum gc_scope scope;
  struct gc_podset *podsets; /* in runtime template order */
  size_t n_podsets;
  int gang_phase; /* the phase that forms the gang (-1 with scope all) */
  int gang_wave;  /* the earliest wave of the counted jobs (-1 with scope all) */
  int32_t min_member;
  struct gc_reslist min_resources;
  const char *queue;          /* NULL when no queue annotation */
  const char *priority_class; /* NULL when unset */
  struct gc_topology_policy topology;
  int has_timeout;                  /* the backend carries whole seconds in its spec
                                       (timeout.spec_seconds): they are set */
  int32_t schedule_timeout_seconds; /* after clamping to the backend's cap */
  struct gc_warning *warnings;
  size_t n_warnings;
  struct gc_timeout_policy timeout; /* effective, with its source (both backends) */
  const char *topology_object; /* the scheduler's topology object (backend's
                                  topology_name_key), NULL when not named */
  int grouper_skipped; /* the backend's grouper_skip annotation was found */
};

/* A set of runtime documents, indexed by kind, namespace and name.  Borrows
 * the documents: they must outlive the catalog. */
struct gc_catalog;

/* Creates an empty catalog; NULL on OOM.  Free with gc_catalog_free. */
struct gc_catalog *gc_catalog_new(void);
void gc_catalog_free(struct gc_catalog *c);

/* Adds a TrainingRuntime or ClusterTrainingRuntime document.  Returns 0,
 * GC_EINVAL (not a runtime, or no name: reported to diags with `origin`, e.g.
 * "file.yaml:3:1"), or GC_ENOMEM.  A later document with the same kind,
 * namespace and name replaces the earlier one. */
int gc_catalog_add(struct gc_catalog *c, const struct gc_value *doc, const char *origin,
                   struct gc_diags *diags);

/* Returns 1 if doc is a TrainJob, TrainingRuntime or ClusterTrainingRuntime
 * of trainer.kubeflow.org/v1alpha1 (kind in *kind: "TrainJob",
 * "TrainingRuntime", "ClusterTrainingRuntime"), 0 otherwise. */
int gc_catalog_trainer_kind(const struct gc_value *doc, const char **kind);

struct gc_options {
  const struct gc_backend *backend;         /* NULL: the runtime's policy, else default_backend */
  const struct gc_backend *default_backend; /* NULL: gc_backend_default() */
  enum gc_scope scope;
  const char *default_namespace; /* for TrainJobs without one; NULL = "default" */
  const struct gc_policy_context *policy; /* Namespace, Queues, config defaults; NULL: none */
  /* The version to write when the gang's backend has several and this is
   * one of them (discovery's pick, or --api-version), and why, as a clause
   * for explain (borrowed; must outlive the gang).  NULL: the newest, "the
   * newest version gangbridge writes". */
  const struct gc_backend_version *backend_version;
  const char *backend_version_why;
};

/* Computes the gang of trainjob.  On success *out is a new gang (free with
 * gc_gang_free) and 0 is returned; warnings are in the gang, not in diags.
 * On failure every problem is appended to diags as "ns/name: spec.path:
 * message" and a negative code is returned (GC_ENOTFOUND when the runtime is
 * missing, naming the ref). */
int gc_gang_compute(const struct gc_value *trainjob, const struct gc_catalog *runtimes,
                    const struct gc_options *opts, struct gc_gang **out,
                    struct gc_diags *diags);

/* Frees a gang and its arena.  Accepts NULL. */
void gc_gang_free(struct gc_gang *g);

const char *gc_binding_name(enum gc_binding b); /* "gang", "bound", "unbound" */

/* The PodGroup and the explanation of a gang have their own modules; their
 * headers are included here so that callers of gc_gang.h keep compiling. */
#include "gc_explain.h"
#include "gc_render.h"

#endif
