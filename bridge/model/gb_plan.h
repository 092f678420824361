/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan: the placement plan, shared by the placement controller (gating
 * and release), the scheduler endpoints (Volcano and kube-scheduler
 * extenders) and `placement status`.  It owns, per gang key ("ns/jobset"):
 * the decision made on a snapshot generation (the chosen domain, the
 * per-node assignment, the evaluator's reasons), made once per generation
 * and pinned once the gang is released (a released gang's domain never
 * changes, so a predicate never disagrees with the gating or the
 * prioritize); and the reservation of every released gang whose pods are
 * not all bound yet.  A reservation is the assignment's requests taken from
 * the snapshot's free capacity (tp_snapshot_adjust_free), so a later
 * evaluation on the same snapshot cannot promise that capacity again; it is
 * given back pod by pod as the gang's pods bind, and whole when the gang is
 * forgotten or its deadline passes.  Waiting gangs are decided in a
 * documented order (docs/placement.md): higher priority first, then older;
 * a gang that has waited past the starvation guard holds back every gang
 * behind it of no higher priority, so small gangs cannot starve a large one,
 * but only a gang that could ever start (it fits the cluster's allocatable
 * within its tiers), only gangs that would take capacity in the domains it
 * could use, and only for starvation_guard_max_ms.
 *
 * A decision is durable outside the plan (placement/ writes it on the
 * gang's PodGroup before anything acts on it): every PLACED or RELEASED
 * decision has an id, gb_plan_record_of copies it out for writing and
 * gb_plan_restore takes a written one back (on start or takeover), its
 * reservation taken again only where it still fits.  A pinned decision is
 * checked on every gb_plan_decide that names its gang: when it no longer
 * fits (a planned node gone, cordoned, tainted against the gang, shrunk or
 * filled, or its reservation lost) and no pod used it yet, it is decided
 * again as a whole gang; once a pod was released or bound it keeps its
 * domain and allowed nodes (a released pod's affinity cannot change): the
 * rest gets a new assignment inside them, or waits.
 *
 * Thread-safety: functions taking a snapshot must be called inside
 * gb_model_with_snapshot (the model's lock, taken before the plan's own);
 * the lookups (gb_plan_get, gb_plan_node_allowed, gb_plan_node_score,
 * gb_plan_foreach) take only the plan's lock and may run on any thread.
 */
#ifndef GB_PLAN_H
#define GB_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

#define GB_PLAN_KEY_MAX 318 /* "namespace/name" */

enum gb_plan_outcome {
  GB_PLAN_NONE = 0,   /* nothing decided (unknown gang) */
  GB_PLAN_PLACED,     /* fits: domain and assignment set */
  GB_PLAN_NOFIT,      /* fits nowhere now (hard mode, or nothing at all) */
  GB_PLAN_HELD,       /* fits, but an older starving gang goes first */
  GB_PLAN_RELEASED    /* placed, reserved and released: pinned */
};

/* One gang to decide.  All pointers borrowed for the call. */
struct gb_plan_gang {
  const char *key;         /* "ns/jobset" */
  const struct tp_gang *gang; /* counted pods not bound yet, their own requests, the policy */
  int64_t priority;
  int64_t created_ms;      /* age: the gang's first pod (or PodGroup) creation */
  const uint8_t *blocked;  /* optional per-slot mask (gb_model_blocked_mask) */
};

/* A decision, copied out (gb_plan_get) into caller-owned storage. */
struct gb_plan_view {
  enum gb_plan_outcome outcome;
  uint64_t generation;       /* of the snapshot it was made on */
  int whole_cluster;         /* placed on the virtual root (soft fallback) */
  char domain[TP_MAX_NAME + 1]; /* chosen domain, "" when none or whole cluster */
  int64_t tier;              /* -1 when none */
  char tier_name[TP_MAX_NAME + 1];
  int64_t pods;              /* pods planned */
  size_t nodes_used;
  char reason[512];          /* NOFIT/HELD: the evaluator's one-line reason */
  int64_t pods_reserved;     /* PLACED/RELEASED: pods still reserved (not bound, not expired) */
  int64_t decided_ms, released_ms, deadline_ms; /* 0 when not yet */
  uint64_t id; /* PLACED/RELEASED: this version of the decision (its record's) */
  int used;    /* RELEASED: a pod of it was released or bound */
  /* What gb_plan_decide did in this call (never stored):  */
  int fresh;     /* PLACED now: write the record, then mark released */
  int redecided; /* a pinned, unused decision no longer fitted: decided again */
  int replanned; /* pinned and used: a new assignment inside its allowed nodes */
  int waiting;   /* pinned and used: the rest does not fit its domain now */
  char prev_domain[TP_MAX_NAME + 1]; /* redecided: the domain given up */
  uint64_t prev_id;                  /* redecided: the id of the decision given up */
  char why[256];                     /* redecided/replanned/waiting: what no longer fitted */
};

struct gb_plan_opts {
  int64_t reservation_ttl_ms;   /* released -> every pod bound; default 120000 */
  int64_t starvation_guard_ms;  /* default 300000 */
  int64_t starvation_guard_max_ms; /* how long a gang may hold others back; default 1800000 */
  enum tp_profile profile;      /* default BestFit */
  struct tp_policy default_policy; /* applied when a gang has none (mode UNSET: no placement) */
};

struct gb_plan;

/* Creates an empty plan (copies opts; zeros mean the defaults).  Returns 0
 * or GC_ENOMEM. */
int gb_plan_new(const struct gb_plan_opts *o, struct gb_plan **out);
/* Frees the plan (reservations are not given back: the snapshot is the
 * caller's).  Accepts NULL. */
void gb_plan_free(struct gb_plan *p);

/* Decides every gang of `gangs` in the plan's order on snapshot s of
 * generation gen at time now_ms: a gang already decided on gen keeps its
 * decision; a PLACED gang (decided and not yet recorded, by another caller)
 * is kept as it is (fresh 0); a RELEASED gang is checked: when it still
 * fits it is kept, else (see the header) decided again (redecided, and
 * fresh when PLACED), given a new assignment inside its allowed nodes
 * (replanned), or left waiting (waiting, reason set).  Gangs placed in
 * this pass are reserved at once (outcome PLACED, tentatively, so two gangs
 * of one pass never share capacity): the caller then releases them and
 * calls gb_plan_mark_released, or gb_plan_unreserve when it could not.
 * The order is priority descending, then created_ms ascending, then key.
 * The starvation guard: the first gang in that order that does not fit,
 * has waited (now_ms - created_ms) at least starvation_guard_ms and less
 * than starvation_guard_ms + starvation_guard_max_ms, and would fit the
 * cluster's allocatable within its allowed tiers, holds every gang after
 * it of no higher priority whose assignment takes a node of a domain the
 * guard could use (HELD, reason naming it), so small gangs cannot keep
 * taking what frees up.  A gang with no policy and
 * no default policy (both mode UNSET) is not the plan's business: its view
 * is NONE and any earlier NOFIT/HELD decision of it is dropped.  out[i]
 * (may be NULL) receives gang i's view.  Returns 0, or GC_ENOMEM/GC_ELIMIT
 * (too many gangs) with details in diags (a bad gang, or a key that is not
 * 1 to GB_PLAN_KEY_MAX bytes, is NOFIT with the reason, not an error). */
int gb_plan_decide(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                   const struct gb_plan_gang *gangs, size_t n, int64_t now_ms,
                   struct gb_plan_view *out, struct gc_diags *diags);

/* The assignment of a PLACED or RELEASED gang: calls fn for each node with
 * the pods planned there (summed over pod sets), in node-name order, with
 * the plan's lock held (fn must not call into the plan); stops at fn's
 * first non-zero result and returns it.  GC_ENOTFOUND when not placed. */
typedef int (*gb_plan_node_fn)(void *arg, const char *node, int64_t pods);
int gb_plan_foreach_node(struct gb_plan *p, const char *key, gb_plan_node_fn fn, void *arg);

/* The decision of `key` is recorded (or pinned) at now_ms: the
 * reservation now lasts until every pod binds or now_ms +
 * reservation_ttl_ms.  GC_ENOTFOUND when the gang is not PLACED. */
int gb_plan_mark_released(struct gb_plan *p, const char *key, int64_t now_ms);
/* A RELEASED gang still has pods to release at now_ms (its reservation
 * lasts reservation_ttl_ms from now: a failing release never loses it);
 * used: one of its pods was released.  GC_ENOTFOUND when not RELEASED. */
int gb_plan_hold(struct gb_plan *p, const char *key, int64_t now_ms, int used);
/* Gives back a PLACED gang's tentative reservation (release failed, or
 * this process is not the leader).  */
int gb_plan_unreserve(struct gb_plan *p, struct tp_snapshot *s, const char *key);

/* A pod of gang `key` with per-pod requests (res/val, the snapshot's
 * units) was bound to node slot `slot`: one pod's reservation goes back,
 * from that node when it was planned there, else from the node holding
 * the most.  Unknown gangs and fully bound ones are ignored. */
int gb_plan_pod_bound(struct gb_plan *p, struct tp_snapshot *s, const char *key,
                      uint32_t slot, size_t n_req, const char *const *res, const int64_t *val);
/* Gives back reservations whose deadline passed (the gang stays RELEASED:
 * its domain is pinned); fn (may be NULL) is called for each such gang (a
 * raced placement), with the plan's lock held: it must not call back into
 * the plan.  Returns how many. */
int gb_plan_expire(struct gb_plan *p, struct tp_snapshot *s, int64_t now_ms,
                   void (*fn)(void *arg, const char *key), void *arg);
/* Forgets gang `key` (deleted or suspended), giving back its reservation. */
int gb_plan_forget(struct gb_plan *p, struct tp_snapshot *s, const char *key);
/* After the model rebuilt its snapshot: takes every held reservation from
 * the new snapshot again (by node name; nodes that vanished drop theirs).
 * Call once per new snapshot: the amounts are taken again, not checked. */
int gb_plan_reapply(struct gb_plan *p, struct tp_snapshot *s);
/* After the model took node `node` out of the snapshot and put it back
 * (its labels or allocatable changed, or it was deleted and came back):
 * takes what every held reservation planned there from it again. */
int gb_plan_reapply_node(struct gb_plan *p, struct tp_snapshot *s, const char *node);

/* ---- Durable decisions ----------------------------------------------- */

/* One line of an assignment: `pods` pods of pod set `set` on node. */
struct gb_plan_assign {
  const char *node;
  uint32_t set;
  int64_t pods;
};

/* A decision as it is written down and read back (placement/gb_decision). */
struct gb_plan_record {
  uint64_t id, generation;
  int64_t decided_ms;
  int whole_cluster;
  const char *domain, *tier_name; /* "" when none */
  int64_t tier, pods;
  const struct tp_podset *sets; /* per-pod requests of each pod set (snapshot units) */
  size_t n_sets;
  const struct gb_plan_assign *assign; /* node, set, pods */
  size_t n_assign;
  int64_t truncated;          /* pods of the assignment not listed */
  const char *const *members; /* allowed nodes, sorted; NULL: the domain's in s */
  size_t n_members;
};

/* A pod of the gang bound before the restore (its node and requests). */
struct gb_plan_bound {
  const char *node;
  size_t n_req;
  const char *const *res;
  const int64_t *val;
};

/* Copies the PLACED or RELEASED decision of `key` into *out (everything in
 * arena a).  GC_ENOTFOUND when there is none. */
int gb_plan_record_of(struct gb_plan *p, const char *key, struct gc_arena *a,
                      struct gb_plan_record *out);
/* Takes a written decision back as RELEASED (replacing, and giving back,
 * any decision the plan holds for key): its assignment less the pods bound
 * since (one per bound pod, from its node or the node holding the most),
 * taken from s node by node only where everything planned there still
 * fits.  used: a pod of it was released or bound.  Returns 0, GC_ENOMEM,
 * GC_ELIMIT or GC_EINVAL (an assignment naming a pod set the record does
 * not have). */
int gb_plan_restore(struct gb_plan *p, struct tp_snapshot *s, const char *key,
                    const struct gb_plan_record *rec, const struct gb_plan_bound *bound,
                    size_t n_bound, int used, int64_t now_ms);
/* Narrows the nodes `key` may use (what its restriction lets the scheduler
 * use: node_allowed answers from it) to names (copied).  GC_ENOTFOUND when
 * not PLACED or RELEASED. */
int gb_plan_set_members(struct gb_plan *p, const char *key, const char *const *names, size_t n);
/* 1 when another gang holds a reservation on a node `key` may use. */
int gb_plan_shared(struct gb_plan *p, const char *key);
/* 1 when another pinned gang with a reservation may use a node `key`'s
 * assignment takes (its restriction cannot be narrowed any more): its key
 * is copied to other. */
int gb_plan_overlap(struct gb_plan *p, const char *key, char *other, size_t other_size);

/* ---- Lookups (any thread) ------------------------------------------- */

/* Copies the decision of `key`.  GC_ENOTFOUND when there is none. */
int gb_plan_get(struct gb_plan *p, const char *key, struct gb_plan_view *out);
/* 1: node is in the chosen domain of `key`; 0: it is not (a sentence
 * saying why in why); -1: no opinion (no PLACED/RELEASED decision). */
int gb_plan_node_allowed(struct gb_plan *p, const char *key, const char *node, char *why,
                         size_t why_size);
/* The sentence gb_plan_node_allowed writes for a refused node, in two
 * parts around the node's name: head, the name, tail.  Sized so that
 * neither part is ever cut. */
#define GB_PLAN_WHY_PART_MAX (64 + GB_PLAN_KEY_MAX + TP_MAX_NAME + 32)
struct gb_plan_why {
  char head[16];
  char tail[GB_PLAN_WHY_PART_MAX];
};
/* gb_plan_node_allowed for the n nodes of one request under one lock (a
 * kube filter carries up to 5,000): ans[i] is what it answers for
 * nodes[i].  When any is 0, why (may be NULL) is filled, and a refused
 * node's sentence is why->head + its name + why->tail, byte for byte what
 * gb_plan_node_allowed writes into a buffer large enough.  Returns 0 or
 * GC_EUSAGE. */
int gb_plan_nodes_allowed(struct gb_plan *p, const char *key, const char *const *nodes, size_t n,
                          int8_t *ans, struct gb_plan_why *why);
/* Pods the plan puts on node for `key` (0 when none or unknown). */
int64_t gb_plan_node_score(struct gb_plan *p, const char *key, const char *node);
/* Calls fn for each node where `key` still holds a reservation, with the
 * pods reserved there, in node-name order (plan's lock held); stops at
 * fn's first non-zero result and returns it. */
int gb_plan_foreach_reserved(struct gb_plan *p, const char *key, gb_plan_node_fn fn, void *arg);
/* Calls fn for every decision (placement status, metrics), in no
 * particular order, with the plan's lock held (fn must not call into the
 * plan); stops at fn's first non-zero result and returns it. */
typedef int (*gb_plan_view_fn)(void *arg, const char *key, const struct gb_plan_view *v);

#endif
