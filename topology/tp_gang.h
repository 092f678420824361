/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_gang: the gang the placement evaluator places: one or more pod sets,
 * each a pod count and a per-pod request converted to the snapshot's units
 * (milli-units for cpu, whole units otherwise), plus an optional network
 * topology policy.  It comes from a compact Gang document
 * (gangbridge.io/v1alpha1, kind Gang) or from a gangcalc gang computed for
 * a TrainJob (its counted pod sets).  Everything is allocated in the
 * caller's arena.
 */
#ifndef TP_GANG_H
#define TP_GANG_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_gang.h"
#include "gc_resources.h"
#include "gc_value.h"

#define TP_GANG_API "gangbridge.io/v1alpha1"
#define TP_GANG_KIND "Gang"

#define TP_MAX_PODSETS 64
#define TP_MAX_SET_PODS 1000000    /* pods in one pod set */
#define TP_MAX_GANG_PODS 10000000  /* pods in a gang */

enum tp_mode { TP_MODE_UNSET = 0, TP_MODE_HARD, TP_MODE_SOFT };

const char *tp_mode_name(enum tp_mode m); /* "hard", "soft", "unset" */

struct tp_policy {
  enum tp_mode mode;            /* TP_MODE_UNSET: no policy given */
  int has_highest_tier;
  int64_t highest_tier;         /* highestTierAllowed */
  const char *highest_tier_name; /* highestTierName, NULL if unset */
};

struct tp_podset {
  const char *name;
  int64_t count;      /* pods */
  size_t n_req;
  const char **res;   /* resource names (no "pods": one is always added) */
  int64_t *val;       /* per-pod request in the resource's unit, > 0 */
};

struct tp_gang {
  const char *name;   /* "namespace/name" or the document name; may be NULL */
  struct tp_podset *sets;
  size_t n_sets;
  int64_t min_member; /* 0: every pod; otherwise for a single pod set, the pods placed */
  struct tp_policy policy;
};

/* 1 if doc is a compact Gang document. */
int tp_gang_is_doc(const struct gc_value *doc);

/* Reads a compact Gang document:
 *   apiVersion: gangbridge.io/v1alpha1
 *   kind: Gang
 *   metadata: {name: N}
 *   spec:
 *     minMember: M                      # optional
 *     podSets: [{name, count, requests: {cpu: "8", nvidia.com/gpu: 8}}]
 *     networkTopology: {mode: hard|soft, highestTierAllowed: 2 | highestTierName: rack}
 * Problems are reported as "origin: Gang/N: spec.path: message".  Strings
 * point into doc or arena a. */
int tp_gang_from_doc(struct gc_arena *a, const struct gc_value *doc, const char *origin,
                     struct tp_gang *out, struct gc_diags *diags);

/* Converts the counted pod sets of a gangcalc gang (binding GC_BIND_COUNTED,
 * `count` pods each, as minMember counts them) and its network topology
 * policy. */
int tp_gang_from_gc(struct gc_arena *a, const struct gc_gang *g, struct tp_gang *out,
                    struct gc_diags *diags);

/* Fills ps->res/val from a ResourceList (zero amounts and "pods" dropped). */
int tp_podset_set_requests(struct gc_arena *a, struct tp_podset *ps, const struct gc_reslist *req,
                           const char *where, struct gc_diags *diags);

/* Total pods of the gang (saturating at INT64_MAX). */
int64_t tp_gang_pods(const struct tp_gang *g);

#endif
