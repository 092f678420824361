/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend: the scheduler backends gangbridge makes gangs for, one
 * descriptor each (as curl's struct Curl_ssl), in one table.  A descriptor
 * holds everything about its backend that the rest of gangbridge acts on:
 * the API group, version, kind and resource of its group object; how a pod
 * joins the group (a label, an annotation or a pod spec field, each holding
 * the group's, a sub-group's, a parent's or a template's name); how the
 * group object is rendered (a function building its spec); which status
 * says the gang was scheduled and started; the keys its scheduler reads a
 * timeout from, with its default and cap; its queues; what it cannot
 * express (capability flags); and whether `backend: auto` may pick it and
 * by which served API.  Each backend lives in its own file,
 * gc_backend_<name>.c, and is named there only: every other layer asks the
 * table (docs/internals/backend.md says how to add one).
 *
 * The table is in `auto` order: `backend: auto` picks the first backend
 * whose API is served, and a gang whose runtime names no backend and whose
 * caller gives none gets the first entry.  Descriptors are immutable and
 * live for the whole program; every function here is pure and thread-safe.
 */
#ifndef GC_BACKEND_H
#define GC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"
#include "gc_value.h"

struct gc_gang;

/* Room in arrays indexed by gc_backend_index (the table holds fewer). */
#define GC_BACKEND_MAX 8
#define GC_BACKEND_MAX_JOINS 4 /* pod joins of one backend */
#define GC_BACKEND_MAX_KEYS 4  /* timeout annotations, phases, queue states */

/* Where a pod carries a join key. */
enum gc_join_at {
  GC_JOIN_NONE = 0,
  GC_JOIN_LABEL,      /* metadata.labels[key] */
  GC_JOIN_ANNOTATION, /* metadata.annotations[key] */
  GC_JOIN_SPEC_FIELD  /* the pod spec field at the dotted path key ("schedulingGroup.
                         podGroupName", as the upstream Workload API joins); set when the
                         pod is created, immutable afterwards */
};

/* What a join key holds. */
enum gc_join_value {
  GC_JOIN_GROUP = 1, /* the group object's name (the TrainJob's) */
  GC_JOIN_SUBGROUP,  /* the pod's sub-group within the group object (KAI's subGroups) */
  GC_JOIN_PARENT,    /* the name of the object above the group (a Workload) */
  GC_JOIN_TEMPLATE   /* the template of that object the pod belongs to */
};

/* One key a pod joins its gang by.  A backend may need several (KAI: an
 * annotation naming the group and a label naming the sub-group). */
struct gc_backend_join {
  enum gc_join_at at;
  const char *key;
  enum gc_join_value value;
  int legacy; /* an older spelling: recognised when read, never written or removed */
};

/* What a backend's group object can carry.  A flag that is absent is a
 * thing the backend cannot express: validation warns, explain says so and
 * the docs list it. */
enum gc_backend_cap {
  GC_BCAP_QUEUE = 1u << 0,            /* a scheduler queue (see gc_backend_queue) */
  GC_BCAP_PRIORITY_CLASS = 1u << 1,   /* spec.priorityClassName */
  GC_BCAP_NETWORK_TOPOLOGY = 1u << 2, /* the runtime's network topology, for the scheduler */
  GC_BCAP_MIN_RESOURCES = 1u << 3,    /* the gang's summed requests (spec.minResources) */
  GC_BCAP_SUBGROUPS = 1u << 4,        /* sub-gangs inside one group object: one per
                                         replicated job, named after it (subgroups_field) */
  GC_BCAP_ELASTIC_MEMBERS = 1u << 5,  /* every pod of the TrainJob joins the group object;
                                         a replicated job outside the gang is a sub-group
                                         that needs none of its pods (the scheduler runs
                                         no pod outside a group) */
  GC_BCAP_TOPOLOGY_LEVEL = 1u << 6    /* the group object carries gangbridge's topology
                                         policy as a named level (a tier name or node label) */
};

/* How the scheduler reads a gang timeout from the group object. */
struct gc_backend_timeout {
  /* Annotations holding a Go duration, in the order the scheduler reads them
   * (the first that is a duration above 0 wins); gangbridge writes [0].
   * NULL-terminated; none: no annotation. */
  const char *annotations[GC_BACKEND_MAX_KEYS];
  const char *spec_seconds; /* spec field of whole seconds, or NULL */
  int64_t default_seconds;  /* what the scheduler waits when none is set; 0: without limit */
  int64_t max_seconds;      /* the scheduler's cap on one wait; 0: none */
  int64_t fixed_seconds;    /* the scheduler's own gang wait when nothing can set it
                               (no annotation, no spec field); 0: none */
  const char *fixed_why;    /* that wait as a clause, for explain and the docs */
  const char *needs;        /* what must run for the annotation to act, or NULL */
  const char *max_why;      /* why the cap, as a clause ("x caps y at 15 minutes") */
  const char *max_limit;    /* the cap as a noun with its value ("x's 15m y limit") */
  const char *max_rule;     /* the cap as a noun, for rule texts ("x's y limit") */
};

/* What the group object's status says. */
struct gc_backend_status {
  /* status.phase values once the gang was scheduled (running, or finished
   * since); NULL-terminated. */
  const char *started_phases[GC_BACKEND_MAX_KEYS];
  const char *failed_phase;            /* a gang that failed; NULL: none */
  const char *scheduled_condition;     /* a condition type that stays True once scheduled */
  const char *unschedulable_condition; /* a condition whose message says why not, or NULL */
  const char *waiting_phase;           /* the phase waiting_note explains, or NULL */
  const char *waiting_note;            /* e.g. "the queue has not admitted it" */
};

/* The backend's queues (with GC_BCAP_QUEUE). */
struct gc_backend_queue {
  const char *key;          /* the annotation or label naming a gang's queue on runtime
                               templates, TrainJobs and Namespaces */
  enum gc_join_at key_at;   /* GC_JOIN_ANNOTATION or GC_JOIN_LABEL */
  const char *field;        /* the group object's spec field naming it */
  const char *default_name; /* the queue of a group object that names none */
  /* Its Queue objects, in the backend's API group (NULL kind: none). */
  const char *kind, *version, *resource, *api_version;
  const char *state_field;                        /* status field of the queue's state */
  const char *closed_states[GC_BACKEND_MAX_KEYS]; /* states admitting no new gang */
};

/* Builds the spec of g's group object in arena a (*spec arena-owned, keys in
 * the order kubectl prints them).  g->backend is this backend.  Returns 0 or
 * GC_ENOMEM. */
typedef int (*gc_backend_render_fn)(const struct gc_gang *g, struct gc_arena *a,
                                    struct gc_value **spec);

/* An object a gang needs besides its group object: its kind (in the
 * group object's apiVersion), the suffix of its name after the TrainJob's,
 * and its spec (arena-owned).  gc_render gives it the common metadata. */
struct gc_backend_object {
  const char *kind;
  const char *name_suffix;
  struct gc_value *spec;
};

/* A kind render_more writes and its resource (plural), for serve's paths. */
struct gc_backend_kind {
  const char *kind, *resource;
};

/* Builds the objects g needs besides its group object (the upstream
 * Workload API's PodGroups) into out[0..cap), their count in *n.  Returns
 * 0, GC_ELIMIT (more than cap) or GC_ENOMEM. */
typedef int (*gc_backend_render_more_fn)(const struct gc_gang *g, struct gc_arena *a,
                                         struct gc_backend_object *out, size_t cap, size_t *n);

/* One API version of a backend whose API changes shape between the
 * releases serving it (the upstream Workload API: v1alpha1 in Kubernetes
 * 1.35, v1alpha2 in 1.36, v1beta1 in 1.37).  The descriptor's group,
 * version and api_version name its newest; a gang records the version it
 * is written at (gc_gang.backend_version). */
struct gc_backend_version {
  const char *version;     /* "v1beta1" */
  const char *api_version; /* "<group>/<version>" */
  const char *release;     /* what serves it, for explain: "Kubernetes 1.37" */
  const char *maturity;    /* its status and gate, for explain and messages */
  unsigned caps;           /* what this version's objects can carry (enum gc_backend_cap) */
  /* How a pod joins at this version (written at CREATE when the joins are
   * pod spec fields). */
  struct gc_backend_join joins[GC_BACKEND_MAX_JOINS];
  size_t n_joins;
  /* The object a GC_JOIN_GROUP key names is the TrainJob's name with this
   * suffix (NULL: the group object, named as the TrainJob), and the
   * template GC_JOIN_TEMPLATE names. */
  const char *group_suffix;
  const char *gang_template;
  /* The object of this version that carries the gang's scheduling status
   * (kind and resource, in the backend's group at this version; named as
   * the TrainJob with group_suffix): the one the timeout tracker follows and
   * writes gangbridge's facts on.  NULL: the group object itself. */
  const char *status_kind, *status_resource;
  /* Its condition that turns True once the gang was scheduled (and stays
   * so), and the condition whose message says why not (when it is the same
   * condition, its message while False).  NULL: none at this version. */
  const char *scheduled_condition, *unschedulable_condition;
};

struct gc_backend {
  const char *name;       /* "volcano": config and annotation values, metrics labels, explain */
  const char *short_name; /* for narrow table cells */
  const char *display;    /* the scheduler's name in sentences: "Volcano" */
  const char *install;    /* what to install when its API is missing */
  int proto;              /* its value of gangbridge.v1.Backend (calculator.proto) */
  /* The group object: API group, version, kind, resource (plural) and
   * apiVersion (group "/" version). */
  const char *group, *version, *kind, *resource, *api_version;
  /* Older API groups of the same object, read (dumps, reports), never written;
   * NULL-terminated. */
  const char *legacy_groups[GC_BACKEND_MAX_KEYS];
  int is_crd;  /* its API comes from a CustomResourceDefinition (resource.group) */
  int in_auto; /* `backend: auto` may pick it (in table order) when its API is served */
  /* render, explain and call only: serve does not create its objects, so its
   * config refuses it and a Namespace naming it is ignored (none today). */
  int offline_only;
  const char *scheduler_name; /* default spec.schedulerName of its pods */
  const char *extender;       /* the extender protocol its scheduler calls gangbridge by
                                 ("volcano", "kube"), or NULL */
  struct gc_backend_join joins[GC_BACKEND_MAX_JOINS];
  size_t n_joins;
  unsigned caps;                /* enum gc_backend_cap flags */
  const char *min_member_field; /* spec field of the gang's member count, a dotted
                                   path under spec ("schedulingPolicy.gang.minCount")
                                   of the object the tracker follows (with
                                   GC_BCAP_SUBGROUPS the spec may split it over
                                   sub-groups: gangbridge's group objects carry it
                                   as annotation GC_ANN_MIN_MEMBER) */
  struct gc_backend_timeout timeout;
  struct gc_backend_status status;
  struct gc_backend_queue queue;
  /* Kubeflow Trainer's runtime policy naming this backend: the key under
   * spec.podGroupPolicy (NULL: Trainer has none), its timeout field (whole
   * seconds, a gang timeout source) and its network topology field. */
  const char *runtime_policy, *runtime_timeout, *runtime_topology;
  /* Where another controller's own gang of this backend is asked for, so
   * that gangbridge steps aside: the runtime's spec field (Trainer's
   * KEP-3015 stanza) and a replicated job's Job spec field (the Job
   * controller's own); NULL: none.  A pod template already setting a
   * pod-spec-field join of the backend steps aside too. */
  const char *runtime_stanza, *job_stanza;
  /* The annotation (key = value) that tells the scheduler's own grouper to
   * leave a workload to gangbridge, on the TrainJob or its runtime's
   * templates; NULL: the scheduler has no grouper of its own. */
  const char *grouper_skip_key, *grouper_skip_value;
  /* The annotation on the TrainJob or its runtime's JobSet template naming
   * the scheduler's topology object (with GC_BCAP_TOPOLOGY_LEVEL), or NULL. */
  const char *topology_name_key;
  const char *subgroups_field; /* spec field listing sub-groups (GC_BCAP_SUBGROUPS) */
  gc_backend_render_fn render_spec;
  gc_backend_render_more_fn render_more; /* NULL: the group object is all */
  /* The kind render_more writes (one per gang: the object a versions[].
   * group_suffix names), and its resource; {NULL}: none. */
  struct gc_backend_kind more_kind;
  /* Its API versions, newest first (NULL, 0: only `version`); discovery
   * writes the newest one the API server serves. */
  const struct gc_backend_version *versions;
  size_t n_versions;
};

/* The table.  gc_backend_count() entries, index 0 first (the `auto` order). */
size_t gc_backend_count(void);
/* The descriptor at index i, NULL past the end. */
const struct gc_backend *gc_backend_at(size_t i);
/* The index of b in the table (0 .. count-1), or -1 for NULL or a foreign
 * descriptor.  Arrays keyed by backend are GC_BACKEND_MAX long. */
int gc_backend_index(const struct gc_backend *b);
/* The default backend: the table's first entry. */
const struct gc_backend *gc_backend_default(void);

/* Lookups; NULL when none matches. */
const struct gc_backend *gc_backend_by_name(const char *name);
/* By the group object's apiVersion ("group/version" or a legacy group's)
 * and kind. */
const struct gc_backend *gc_backend_by_object(const char *api_version, const char *kind);
const struct gc_backend *gc_backend_by_proto(int proto);
/* The first backend whose scheduler calls extender protocol `extender`. */
const struct gc_backend *gc_backend_by_extender(const char *extender);

/* The name of b, "unset" for NULL. */
const char *gc_backend_name(const struct gc_backend *b);

/* Writes the backends' names into buf ("volcano, coscheduling", with `last`
 * before the last one: " or " gives "volcano or coscheduling"), cut to cap.
 * Returns buf. */
const char *gc_backend_names(char *buf, size_t cap, const char *last);

/* As gc_backend_names, of the backends serve can use (not offline_only). */
const char *gc_backend_serve_names(char *buf, size_t cap, const char *last);

/* The first join of b holding `value`, written (not legacy), or NULL. */
const struct gc_backend_join *gc_backend_join_of(const struct gc_backend *b,
                                                 enum gc_join_value value);

/* The join of any backend with key[0..len) at `at` (legacy ones too when
 * with_legacy), or NULL; *owner (optional) is its backend. */
const struct gc_backend_join *gc_backend_join_find(enum gc_join_at at, const char *key, size_t len,
                                                   int with_legacy,
                                                   const struct gc_backend **owner);

/* The version of b named `version` ("v1alpha2"), or NULL (also for a
 * backend with one version). */
const struct gc_backend_version *gc_backend_version_find(const struct gc_backend *b,
                                                         const char *version);

/* The version of b whose object `kind` at `api_version` the timeout
 * tracker follows (its status_kind, or the group object's kind when it has
 * none), or NULL (also for a backend with one version). */
const struct gc_backend_version *gc_backend_version_tracked(const struct gc_backend *b,
                                                            const char *api_version,
                                                            const char *kind);
/* The newest version of b among served[0..n) (version names as discovery
 * lists them; order does not matter), or NULL when none is served:
 * discovery's rule for a backend with several API versions. */
const struct gc_backend_version *gc_backend_version_pick(const struct gc_backend *b,
                                                         const char *const *served, size_t n);

/* Writes b's version names ("v1beta1, v1alpha2 or v1alpha1", newest
 * first) into buf, cut to cap.  Returns buf. */
const char *gc_backend_version_names(const struct gc_backend *b, char *buf, size_t cap);

/* 1 when phase is one of b's started phases. */
int gc_backend_phase_started(const struct gc_backend *b, const char *phase);

#endif
