/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_plan: the scheduler endpoints' decision source on the shared placement
 * plan and the live model.  It owns the answers' link to gb_plan: a node is
 * allowed for a gang when the plan's PLACED or RELEASED decision has it in
 * the chosen domain (gb_plan_node_allowed), a node scores the pods the
 * plan puts there (gb_plan_node_score), and jobEnqueueable is decided on
 * the model's current snapshot: a gang the plan already placed is
 * permitted; otherwise the gang built from the JobInfo (its tasks grouped
 * by InitResreq into pod sets, MinAvailable, NetworkTopology; the first
 * task's tolerations) goes through gb_plan_decide, once per snapshot
 * generation.  A gang it finds a place for is recorded first (the
 * recorder, wired to the placement controller, writes the decision on the
 * gang's PodGroup), then marked released: Volcano enqueues it now, so its
 * domain is pinned for every later verb (predicate, prioritize, allocate)
 * and for gating, and its reservation lasts until its pods bind or the
 * plan's reservation TTL passes.  A decision that cannot be recorded is
 * given back and the gang rejected for this session.  A pinned gang no pod
 * of which was released or bound is checked on every call: when its nodes
 * no longer hold it, it is decided again (and recorded again).  A gang
 * that fits nowhere (or is held behind a starving one) is rejected with the
 * evaluator's reason; no snapshot yet, or no policy at all, is Abstain.
 *
 * Thread-safety: every function may be called from any thread (the plan
 * and the model have their own locks).
 */
#ifndef GB_SCHED_PLAN_H
#define GB_SCHED_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "gb_model.h"
#include "gb_plan.h"
#include "gb_sched.h"
#include "gc_arena.h"
#include "tp_gang.h"

/* Records the decision the plan has just made for gang key (the job's
 * PodGroup ns/name) before it is acted on, replacing the record of
 * decision prev_id (0: none).  Returns 0 when recorded, else a GC_E* code
 * with a sentence in reason. */
typedef int (*gb_sched_record_fn)(void *ctx, const char *ns, const char *name, const char *key,
                                  uint64_t prev_id, char *reason, size_t reason_size);

struct gb_sched_plan {
  struct gb_model *model;    /* borrowed */
  struct gb_plan *plan;      /* borrowed */
  gb_sched_record_fn record; /* NULL: decisions are pinned in memory only (tests) */
  void *record_ctx;
};

/* Fills be with functions answering from sp (be->arg = sp, borrowed until
 * the endpoint is freed); job_event is left NULL for the wiring to set. */
void gb_sched_plan_source(struct gb_sched_plan *sp, struct gb_sched_source *be);

#endif
