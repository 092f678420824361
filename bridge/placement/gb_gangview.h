/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gangview: the placement controller's pure halves, over copies of a
 * gang's pods: whether the gang is ready to place (every counted pod exists
 * and is gated), the tp_gang built from the pods' own requests (pods with
 * equal requests form one pod set; the requests are the truth, not the
 * template), and the restriction a decision puts on the pods (a label level
 * `key In [value]`, the chosen domain's node names, or one node per pod).
 * No I/O and no locks: the placer calls these with its own data and, for
 * the restriction, inside gb_model_with_snapshot.
 */
#ifndef GB_GANGVIEW_H
#define GB_GANGVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "gb_plan.h"
#include "gb_restriction.h"
#include "gc_arena.h"
#include "gc_gang.h"
#include "tp_gang.h"
#include "tp_snapshot.h"

/* A restriction (controller/gb_restriction) lists at most
 * GB_RESTRICTION_MAX_HOSTS node names; a larger domain is restricted to the
 * nodes of the assignment, and when those are more, each pod to its own
 * planned node (docs/placement.md). */

/* ---- The pure halves (exported for tests) ------------------------------- */

/* One pod of a gang, copied out of the model (arena-owned). */
struct gb_placer_pod {
  const char *name, *uid, *rjob, *node;
  int gated;   /* carries the placement gate */
  int counted; /* its replicated job is a counted one */
  int phase;
  int unschedulable;
  int64_t unschedulable_since_ms, created_ms, priority;
  size_t n_req;
  const char **res;
  int64_t *val;
};

enum gb_gang_state {
  GB_GANG_UNMANAGED = 0, /* no gang, no policy: nothing to do */
  GB_GANG_WAITING_PODS,  /* counted pods still missing */
  GB_GANG_READY,         /* every counted pod exists and is gated: decide */
  GB_GANG_PARTLY,        /* some pods gated, others released: finish the release */
  GB_GANG_RELEASED,      /* no pod gated */
  GB_GANG_SUSPENDED      /* its TrainJob is suspended: nothing reserved, nothing released */
};
const char *gb_gang_state_name(enum gb_gang_state s);

/* Classifies a gang from its pods (counted set by the caller) and its
 * minMember. */
enum gb_gang_state gb_gangview_classify(const struct gb_placer_pod *pods, size_t n,
                                        int64_t min_member);

/* Builds *out from the counted pods' own requests: pods with equal
 * requests share a pod set (at most TP_MAX_PODSETS shapes; more is
 * GC_ELIMIT).  The policy is copied from topo.  Everything lives in a.
 * Returns 0, GC_EINVAL (no counted pod), GC_ELIMIT or GC_ENOMEM. */
int gb_gangview_build_gang(struct gc_arena *a, const char *key, const struct gb_placer_pod *pods,
                           size_t n, const struct gc_topology_policy *topo, struct tp_gang *out);

/* The restriction of decision v (PLACED or RELEASED) of gang key on
 * snapshot s: NONE on the whole cluster; with label levels, `key In
 * [value]` of the chosen domain's level when no other domain of that level
 * has the same value (a rack name may repeat under another block);
 * otherwise the chosen domain's node names when at most
 * GB_RESTRICTION_MAX_HOSTS, else the nodes of the plan's assignment.  Call
 * inside gb_model_with_snapshot.  Returns 0, GC_ELIMIT (even the
 * assignment has too many nodes: use gb_placer_pod_nodes) or
 * GC_ENOTFOUND (no such decision or domain). */
int gb_gangview_restriction_of(const struct tp_snapshot *s, struct gb_plan *plan, const char *key,
                               const struct gb_plan_view *v, int label_levels,
                               struct gb_restriction *out);

/* The nodes of the plan's assignment of `key` as a host restriction (the
 * exact form, used when another gang's reservation shares the domain).
 * Returns 0, GC_ELIMIT (more than GB_RESTRICTION_MAX_HOSTS nodes: one node
 * per pod instead) or GC_ENOTFOUND. */
int gb_gangview_exact_restriction(struct gb_plan *plan, const char *key,
                                  struct gb_restriction *out);

/* The planned node of each counted pod of pods[0..n) (out[i], NULL for a
 * pod not counted or beyond the assignment): the counted pods in name
 * order take the assignment's nodes in node-name order, so every process
 * that reads the same decision maps the same pod to the same node.
 * Returns 0, GC_ENOTFOUND or GC_ENOMEM. */
int gb_gangview_map_pod_nodes(struct gb_plan *plan, const char *key, struct gc_arena *a,
                              const struct gb_placer_pod *pods, size_t n, const char **out);

#endif
