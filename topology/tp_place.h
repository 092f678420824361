/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_place: the placement evaluator.  Given a snapshot and a gang it finds
 * the lowest-tier domain that holds the whole gang (hard mode: only up to
 * the highest allowed tier; soft mode: falling back to the whole cluster),
 * picks one domain of that tier by profile (BestFit: the tightest; Spread:
 * the most free) and assigns pods to nodes, or explains per tier why
 * nothing fits.  An evaluation costs O(nodes x distinct requests +
 * domains x pod sets) for the capacities (one fused pass over the nodes)
 * plus the chosen domain's nodes for the assignment; homogeneous gangs are
 * placed exactly (a domain is chosen iff it fits, at the lowest tier that
 * has one).  Heterogeneous gangs
 * are placed greedily with a bounded exact search as fallback (see
 * docs/topology.md for the guarantees).  Scratch memory lives in the
 * evaluator and is reused; results go to the caller's arena.
 */
#ifndef TP_PLACE_H
#define TP_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "tp_gang.h"
#include "tp_snapshot.h"

enum tp_profile { TP_PROFILE_BESTFIT = 0, TP_PROFILE_SPREAD };

#define TP_DEFAULT_SEARCH_BUDGET 200000

struct tp_eval_opts {
  /* Overrides the gang's policy when mode != TP_MODE_UNSET.  With no policy
   * at all the mode is hard at tier 1 (the gRPC contract's default); hard
   * mode without a tier means tier 1. */
  struct tp_policy policy;
  enum tp_profile profile;
  /* Steps of exact search for heterogeneous gangs when the greedy pass
   * fails on a domain that passes every necessary condition: 0 means
   * TP_DEFAULT_SEARCH_BUDGET, negative disables the search. */
  int64_t search_budget;
  /* Optional per-slot mask, tp_snapshot_slot_count bytes (borrowed for the
   * call): 1 marks a node that is not a candidate for this gang although it
   * is for others (a NoSchedule or NoExecute taint the gang's pods do not
   * tolerate).  A blocked node gets no pods, counts in no domain's capacity
   * or free sums, and the reasons say how many nodes were blocked.  NULL:
   * nothing blocked. */
  const uint8_t *blocked;
};

struct tp_assignment {
  const char *node; /* borrowed from the snapshot until the node is removed */
  uint32_t slot;
  uint32_t podset;  /* index into the gang's sets */
  int64_t pods;
};

struct tp_result {
  int feasible;
  int whole_cluster;       /* the chosen domain is the virtual root */
  int64_t domain;          /* domain index, -1 when infeasible */
  const char *domain_name; /* NULL when infeasible or the whole cluster */
  int64_t tier;            /* the chosen domain's tier, -1 when infeasible or root */
  const char *tier_name;   /* NULL when unset */
  /* The policy applied. */
  enum tp_mode mode;
  int64_t highest_tier;    /* -1 when unbounded (soft) */
  enum tp_profile profile;
  int64_t pods;            /* pods placed (the gang's, or minMember) */
  int64_t domain_pods;     /* pods of the gang's shapes the chosen domain holds, per set summed */
  int64_t leftover;        /* domain_pods - pods: BestFit minimises this */
  size_t nodes_used;
  struct tp_assignment *assign; /* sorted by node name, then pod set */
  size_t n_assign;
  const char **reasons;    /* why lower tiers (or all) did not fit, and notes */
  size_t n_reasons;
  int exact_search;        /* heterogeneous: the exact search found the placement */
  int search_exhausted;    /* heterogeneous: a search ran out of budget */
};

struct tp_evaluator;

/* A new evaluator (scratch buffers grow on first use).  NULL on OOM. */
struct tp_evaluator *tp_evaluator_new(void);
void tp_evaluator_free(struct tp_evaluator *ev);

/* Evaluates gang g on snapshot s.  The result (assignments, reasons) is
 * allocated in arena a; it borrows node and domain names from s.  Returns 0
 * whether or not the gang fits (see out->feasible), GC_EINVAL for a bad gang
 * or policy (an unknown highestTierName: GC_ENOTFOUND), GC_ENOMEM. */
int tp_place_evaluate(struct tp_evaluator *ev, const struct tp_snapshot *s, const struct tp_gang *g,
                      const struct tp_eval_opts *opts, struct gc_arena *a, struct tp_result *out,
                      struct gc_diags *diags);

/* After an evaluation: how many pods of the gang's shapes domain d holds
 * (summed over pod sets, each set counted alone), or -1. */
int64_t tp_evaluator_domain_pods(const struct tp_evaluator *ev, uint32_t d);

/* After an evaluation: the per-node pod capacity of pod set `set` on node
 * `slot` (free resources only, before placement), or -1. */
int64_t tp_evaluator_node_pods(const struct tp_evaluator *ev, uint32_t set, uint32_t slot);

const char *tp_profile_name(enum tp_profile p); /* "bestfit", "spread" */

#endif
