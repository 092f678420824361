/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_gang_int: what the modules of the gang computation share and nothing
 * else does: the computation's context (struct ctx), the parsed TrainJob
 * (struct tj_info), runtime (struct rt_info) and replicated job (struct
 * job), and the field readers that report a problem at its path.  The
 * modules are gc_gang.c (the computation), gc_trainjob.c, gc_runtime.c,
 * gc_override.c, gc_jobs.c and gc_policy.c.  Not part of the public gangcalc API: only
 * those files include it (as curl's lib/vtls/vtls_int.h).
 */
#ifndef GC_GANG_INT_H
#define GC_GANG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gc_gang.h"
#include "gc_name.h"
#include "gc_podreq.h"

#define INT32_MAXV 2147483647LL
#define RUNTIME_PATCHES_MAX 16
/* Longest name shown in a message. */
#define NAME_SHOW_MAX 253

/* Map lookup of a literal key, its length known at compile time (the ""
 * around k make anything but a string literal a compile error). */
#define GET(m, k) gc_map_getn((m), "" k "", sizeof(k) - 1)

struct job {
  const char *name;
  struct gc_value *node; /* merged replicatedJob (arena) */
  const char *ancestor;
  int64_t parallelism;
  int has_parallelism;
  int64_t replicas;
  const char **deps;
  const char **dep_status;
  size_t n_deps;
  struct gc_value *podspec;
  const char *priority_class;
  const char *scheduler_name;
  int32_t count;
  struct gc_podreq req;
};

struct ctx {
  struct gc_gang *g;
  struct gc_arena *a;
  struct gc_diags *d;
  const struct gc_options *opts;
  const char *tj; /* "ns/name" */
  const char *rt; /* "ClusterTrainingRuntime/x" or "TrainingRuntime ns/x" */
  size_t errors;
  int oom;
  const struct gc_rt_cache *cache; /* the runtime's derived data, or NULL */
};

struct tj_info {
  const struct gc_value *spec;
  const struct gc_value *trainer;
  const char *ref_name;
  int ref_cluster;
  int ref_ok;
  int has_numnodes;
  int64_t numnodes;
  const struct gc_value *rpn; /* resourcesPerNode, valid, or NULL */
  int v20, v21, v22;
};

struct rt_info {
  const struct gc_value *spec;
  const struct gc_value *jobs; /* runtime template.spec.replicatedJobs (valid) */
  const struct gc_value *ml;
  int has_ml, mpi, rlan, has_ml_numnodes;
  int64_t ml_numnodes;
  /* spec.podGroupPolicy.<key> of each backend Trainer knows (by
   * gc_backend_index; NULL: absent or not a map). */
  const struct gc_value *policy[GC_BACKEND_MAX];
  /* The runtime's own policy fields, read by gc_runtime_resolve_policy and
   * weighed against the other sources by gc_policy_resolve. */
  int rt_timeout_set; /* a backend policy's timeout field given and > 0 */
  int64_t rt_timeout;
  const char *rt_timeout_path;  /* "spec.podGroupPolicy.<key>.<field>" (arena) */
  struct gc_topology_policy nt; /* the network topology (nt.set), for its own backend only */
  const char *nt_path;          /* where it was read (arena), or NULL */
};

/* A path formatted only when a message needs it: f takes (i, j) as two %zu,
 * or with `s` set, (s, i) as %s and %zu. */
struct lpath {
  const char *f;
  const char *s;
  size_t i, j;
  char *done;
};

/* Appends a formatted warning to g (arena-owned).  Returns 0 or GC_ENOMEM. */
int gc_gang_warnf(struct gc_gang *g, enum gc_warning_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define WARN(c, code, ...)                                                                         \
  do {                                                                                             \
    if (gc_gang_warnf((c)->g, (code), __VA_ARGS__))                                                \
      (c)->oom = 1;                                                                                \
  } while (0)

/* Weighs every source of the gang's timeout and topology policy (gc_policy:
 * the TrainJob, the runtime r and its document rt, the Namespace and Queue
 * in c->opts->policy, the config defaults) and sets g->timeout,
 * g->topology and the timeout the backend's spec carries.  Needs the backend and the
 * queue resolved.  Problems are reported through c. */
void gc_policy_resolve(struct ctx *c, const struct gc_value *trainjob, const struct gc_value *rt,
                       const struct rt_info *r);

/* 1 when v is absent or null. */
static inline int gc_is_null(const struct gc_value *v) { return !v || v->type == GC_NULL; }

/* The integer a number holds: an integer, or a float with an integral
 * value (the API server takes 1.0 or 2e0 for an integer field).  Values
 * beyond int64 saturate.  Returns 1 (stored in *out) or 0. */
int gc_gang_int_value(const struct gc_value *v, int64_t *out);

/* Reports "<prefix>: <message>" to c's diagnostics and counts an error. */
void gc_gang_fail(struct ctx *c, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Formats a path into c's arena (cut at 2 KiB).  Never NULL: on OOM it sets
 * c->oom and returns "". */
char *gc_gang_fmt(struct ctx *c, const char *f, ...) __attribute__((format(printf, 2, 3)));

/* The text of p, formatted into c's arena the first time it is asked for. */
const char *gc_gang_lpath(struct ctx *c, struct lpath *p);

/* Readers of optional fields (v borrowed).  Each returns 1 (set, *out
 * holds the value, borrowed from v), 0 (absent or null) or -1 (reported
 * at "<prefix>: <path>": wrong type or, for integers, out of [min, max]). */
int gc_gang_get_int(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                    int64_t min, int64_t max, int64_t *out);
int gc_gang_get_str(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                    const char **out);
int gc_gang_get_bool(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                     int *out);

/* Return v if it is a map (a sequence), NULL if absent or null; any other
 * type is reported and sets *bad (when bad is not NULL). */
const struct gc_value *gc_gang_get_map(struct ctx *c, const char *prefix, const struct gc_value *v,
                                       const char *path, int *bad);
const struct gc_value *gc_gang_get_seq(struct ctx *c, const char *prefix, const struct gc_value *v,
                                       const char *path, int *bad);

/* Checks a map of string to string (labels, annotations). */
void gc_gang_check_string_map(struct ctx *c, const char *prefix, const struct gc_value *v,
                              const char *path);

#endif
