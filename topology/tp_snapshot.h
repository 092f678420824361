/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_snapshot: the cluster model the placement evaluator works on.  It is
 * built once from Kubernetes objects (Nodes, bound non-terminal Pods and
 * Volcano HyperNodes, or node-label levels instead of HyperNodes), validated
 * (cycles, double parents, bad members, tiers that do not grow upward, nodes
 * in several leaves), and then kept: node free resources, node arrival and
 * departure and bound pods are applied in place, without a rebuild.
 *
 * Layout: every quantity is converted once to an int64 in a fixed unit per
 * resource (milli-units for cpu, whole units for everything else, as
 * kube-scheduler's NodeInfo does).  Node data is a dense struct of arrays
 * indexed by a node slot (free[r][slot], leaf[slot], state[slot]); removed
 * nodes leave a dead slot that the next added node reuses.  Domains (the
 * HyperNodes or label domains, plus a virtual root holding every node) form
 * a tree with parent links, a children-before-parent order and Euler-tour
 * intervals, so membership tests and bottom-up sums are O(1) per element.
 * Per-domain free sums are kept up to date on every update.
 *
 * The struct is public for topology/'s own modules (the evaluator walks
 * it); code outside topology/ reads it through the accessors at the end of
 * this header, and everyone changes it only through the functions below.  A
 * snapshot is not thread-safe: updates and evaluations must not run
 * concurrently.  The one piece of process-wide state in the library is the
 * atomic counter that draws layout_version values, so that a version is
 * unique across every snapshot of the process (an evaluator's cache can then
 * never mistake a new snapshot for an old one); it is safe to build snapshots
 * on several threads at once.
 */
#ifndef TP_SNAPSHOT_H
#define TP_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_resources.h"
#include "gc_value.h"

/* Input bounds; larger inputs are refused with GC_ELIMIT. */
#define TP_MAX_NODES 2000000
#define TP_MAX_DOMAINS 2000000
#define TP_MAX_RESOURCES 128
#define TP_MAX_LEVELS 16
#define TP_MAX_MEMBERS 1000000 /* HyperNode members in total */
#define TP_MAX_NAME 253

/* The virtual root's display name (it has no HyperNode object). */
#define TP_ROOT_NAME "<cluster>"

/* Node slot states. */
enum tp_node_state {
  TP_NODE_OK = 0,       /* a placement candidate */
  TP_NODE_EXCLUDED = 1, /* present but not a candidate (unschedulable, tainted) */
  TP_NODE_DEAD = 2      /* an empty slot left by a removed node */
};

struct tp_member; /* a compiled HyperNode Node-member selector (private) */
struct tp_pod_table; /* bound pods by namespace/name (private) */

struct tp_snapshot {
  struct gc_arena *arena; /* names, reasons and selectors */

  /* A value unique to this snapshot's node and domain layout: it changes on
   * every add or remove of a node (and is never shared by two snapshots), so
   * an evaluator may cache orderings derived from the layout. */
  uint64_t layout_version;

  /* Resources, in the order first seen; res_milli[r] is 1 for cpu. */
  size_t n_res;
  const char *res_name[TP_MAX_RESOURCES];
  int res_milli[TP_MAX_RESOURCES];

  /* Nodes (struct of arrays, indexed by slot). */
  size_t n_slots;                        /* slots in use, dead ones included */
  size_t cap_slots;                      /* allocated length of every row */
  size_t n_alive;                        /* slots that are not TP_NODE_DEAD */
  const char **node_name;                /* NULL for dead slots */
  uint32_t *leaf;                        /* domain index of the node's leaf */
  uint8_t *state;                        /* enum tp_node_state */
  const char **excl_reason;              /* why a node is excluded, or NULL */
  int64_t *free[TP_MAX_RESOURCES];       /* allocatable - bound requests (may be < 0) */
  int64_t *alloc[TP_MAX_RESOURCES];      /* allocatable (the ceiling of free) */
  uint32_t *by_name;                     /* live slots sorted by node name */
  uint32_t *dead;                        /* reusable dead slots (a stack) */
  size_t n_dead;
  uint32_t *node_hash;                   /* open addressing: slot + 1, 0 empty */
  size_t node_hash_cap;

  /* Domains.  Index 0 is the virtual root. */
  size_t n_dom, cap_dom;
  const char **dom_name;
  int64_t *dom_tier;
  const char **dom_tier_name; /* NULL when unset */
  int32_t *dom_parent;        /* -1 for the root */
  uint32_t *dom_tin, *dom_tout; /* Euler tour: d contains e iff tin[d] <= tin[e] <= tout[d] */
  uint32_t *dom_post;         /* every domain, children before parents (root last) */
  uint32_t *dom_nodes;        /* live nodes below (candidates and excluded) */
  uint32_t *dom_excluded;     /* excluded nodes below */
  int64_t *dom_free[TP_MAX_RESOURCES]; /* sum of max(free, 0) over candidate nodes below */
  uint32_t *dom_hash;         /* name -> domain, open addressing */
  size_t dom_hash_cap;

  /* Tiers: distinct tier values ascending (the root's is the last) and the
   * domains of each, sorted by name: tier_dom[tier_start[i] .. tier_start[i+1]). */
  size_t n_tiers;
  int64_t *tiers;
  uint32_t *tier_start;
  uint32_t *tier_dom;

  /* How new nodes find their leaf. */
  int use_levels;
  const char *levels[TP_MAX_LEVELS]; /* top (coarsest) to bottom */
  size_t n_levels;
  struct tp_member *members; /* Node members of every HyperNode, compiled */
  size_t n_members;
  uint32_t *member_hash;     /* exactMatch name -> first member of that name */
  size_t member_hash_cap;
  const char **member_names; /* exactMatch name per member ("" for others) */
  uint32_t *inexact;         /* regexMatch and labelMatch members, matched one by one */
  size_t n_inexact;

  /* Pods accounted as bound (built or updated), so a release can be
   * checked against its bind. */
  struct tp_pod_table *pods;

  /* HyperNodes a lenient build left out (tp_build_opts.drop_invalid_hypernodes),
   * in name order; arena-owned. */
  struct tp_hypernode_drop *hn_dropped, *hn_dropped_tail;
  size_t n_hn_dropped;
};

/* One HyperNode left out of a lenient build: its name and why. */
struct tp_hypernode_drop {
  const char *name, *why;
  struct tp_hypernode_drop *next;
};

struct tp_build_opts {
  /* Node-label levels, top (coarsest) first; when n_levels > 0 the domains
   * come from these labels and HyperNode documents are ignored (warning).
   * A trailing "kubernetes.io/hostname" is accepted and dropped: nodes are
   * always the lowest level. */
  const char *const *levels;
  size_t n_levels;
  /* A HyperNode exactMatch member naming a Node that does not exist is an
   * error by default (a typo in a file); a live cluster sets this to make
   * it a warning, since a node may join after its HyperNode (the member is
   * kept and the node finds its leaf when it is added). */
  int missing_members_ok;
  /* A HyperNode that is invalid (unparsable, a bad member selector, listing
   * itself, on a cycle, listing a member another HyperNode lists too,
   * listing a member of a tier not below its own) fails the build by
   * default.  A live cluster sets this: each such HyperNode is left out
   * (every HyperNode on a cycle; both HyperNodes that list one member; the
   * one listing a member of a tier not below its own), named with its
   * reason in a warning and in tp_snapshot_hn_dropped, and the rest of the
   * topology is built; its children become top-level domains and its nodes
   * are in no domain of it.  A HyperNode member naming a HyperNode that does
   * not exist is then a warning (it may be created later). */
  int drop_invalid_hypernodes;
};

/* Builds a snapshot from documents (Nodes, Pods, HyperNodes; other kinds are
 * ignored).  origins[i] (may be NULL, or hold NULLs) names where docs[i] came
 * from ("file.yaml:12:1") and prefixes every message about it.  Every
 * problem is appended to diags; returns 0 and a new snapshot in *out (free
 * with tp_snapshot_free), or a negative GC_E* code and no snapshot.
 * Warnings (a node in several leaves, pods on unknown nodes) do not fail. */
int tp_snapshot_build(const struct gc_value *const *docs, const char *const *origins, size_t n,
                      const struct tp_build_opts *opts, struct tp_snapshot **out,
                      struct gc_diags *diags);

/* Frees a snapshot.  Accepts NULL. */
void tp_snapshot_free(struct tp_snapshot *s);

/* Converts a quantity to the resource's unit (rounded up).  GC_ERANGE when
 * it does not fit an int64. */
int tp_snapshot_quantity_to_units(const char *resource, const struct gc_quantity *q, int64_t *out);

/* Formats an amount of a resource in its unit as a Kubernetes quantity
 * ("16", "1500m", "64Gi") into buf (GC_QUANTITY_BUFSZ bytes suffice). */
void tp_snapshot_units_format(const char *resource, int64_t v, char *buf, size_t cap);

/* Resource index of name, or -1. */
int tp_snapshot_resource(const struct tp_snapshot *s, const char *name);

/* Node slot of name, or -1. */
int64_t tp_snapshot_node(const struct tp_snapshot *s, const char *name);

/* Domain index of name (TP_ROOT_NAME for the root), or -1. */
int64_t tp_snapshot_domain(const struct tp_snapshot *s, const char *name);

/* Tier of a tierName, or -1 when no domain has that tierName. */
int64_t tp_snapshot_tier_by_name(const struct tp_snapshot *s, const char *tier_name);

/* 1 if node slot `slot` lies in domain d. */
int tp_snapshot_in_domain(const struct tp_snapshot *s, uint32_t slot, uint32_t d);

/* ---- Updates (no rebuild; O(tree depth) or O(nodes) for add/remove) ---- */

/* Sets the free amount of one resource on a node, in the resource's unit.
 * An unknown resource is added to the resource table.  GC_ENOTFOUND for an
 * unknown node; GC_ELIMIT when the resource table is full. */
int tp_snapshot_set_free(struct tp_snapshot *s, const char *node, const char *resource,
                         int64_t value);

/* Accounts a Pod document: sign > 0 subtracts its requests from its node's
 * free resources (the pod was bound), sign < 0 gives them back (the pod
 * finished or was deleted).  Pods that are unbound, terminal or on unknown
 * nodes are ignored (returns 0 and sets *applied to 0 when applied != NULL). */
int tp_snapshot_apply_pod(struct tp_snapshot *s, const struct gc_value *pod, int sign,
                          const char *origin, int *applied, struct gc_diags *diags);

/* Strict update of one Pod document, checked against the model before
 * anything changes: sign > 0 binds it (subtracts its requests from its
 * node's free resources), sign < 0 releases it (gives them back).  `node`
 * (may be NULL or "") is the node the caller says the pod is on.  Refused
 * with GC_EINVAL and a message naming the field: no metadata.name or
 * spec.nodeName, a spec.nodeName other than `node`, binding a finished or
 * already bound pod, releasing a pod that was never bound (or bound on
 * another node), a release that would raise free above allocatable;
 * GC_ENOTFOUND when spec.nodeName is not in the snapshot. */
int tp_snapshot_update_pod(struct tp_snapshot *s, const struct gc_value *pod, int sign,
                           const char *node, const char *origin, struct gc_diags *diags);

/* Strict tp_snapshot_set_free_list: every amount must lie in [0, the
 * node's allocatable] (a resource the node does not have allows only 0),
 * else GC_EINVAL naming "<where>.free.values[<resource>]" and nothing
 * changes; GC_ENOTFOUND for an unknown node. */
int tp_snapshot_update_free(struct tp_snapshot *s, const char *node,
                            const struct gc_reslist *free, const char *where,
                            struct gc_diags *diags);

/* Adds a Node document (free = allocatable); its leaf is found with the
 * HyperNode member selectors or the label levels (new label domains are
 * created).  GC_EINVAL when a node of that name exists or the document is
 * bad. */
int tp_snapshot_add_node(struct tp_snapshot *s, const struct gc_value *node,
                         const char *origin, struct gc_diags *diags);

/* Removes a node.  GC_ENOTFOUND when unknown. */
int tp_snapshot_remove_node(struct tp_snapshot *s, const char *node);

/* Marks a node a candidate (reason NULL) or excluded with a reason (copied). */
int tp_snapshot_set_excluded(struct tp_snapshot *s, const char *node, const char *reason);

/* Adds delta (negative: takes) to the free amount of resource r on node
 * slot `slot`, keeping every domain sum above it right: the O(depth) update
 * behind a pod bind or release and a reservation, for callers that keep
 * their own per-pod records.  Free may go below zero (sums count it as 0).
 * GC_ENOTFOUND for a dead or out-of-range slot, GC_EINVAL for a bad r. */
int tp_snapshot_adjust_free(struct tp_snapshot *s, uint32_t slot, int r, int64_t delta);

/* ---- Read accessors -------------------------------------------------------
 * The way code outside topology/ reads a snapshot, so that the struct of
 * arrays above can change without touching the bridge.  Indexes are not
 * checked: d < tp_snapshot_domain_count, slot < tp_snapshot_slot_count,
 * r < n_res.  All are O(1) except tp_snapshot_child_next. */

/* Domains, the virtual root (index 0) included. */
size_t tp_snapshot_domain_count(const struct tp_snapshot *s);
/* Live nodes (dead slots not counted). */
size_t tp_snapshot_node_count(const struct tp_snapshot *s);
/* Node slots in use, dead ones included: the bound of a slot index. */
size_t tp_snapshot_slot_count(const struct tp_snapshot *s);
/* Parent domain of d, or -1 for the root. */
int64_t tp_snapshot_domain_parent(const struct tp_snapshot *s, uint32_t d);
/* Name (TP_ROOT_NAME for the root), tier, tierName (NULL when unset), live
 * nodes below, and the free sum of resource r over candidate nodes below. */
const char *tp_snapshot_domain_name(const struct tp_snapshot *s, uint32_t d);
int64_t tp_snapshot_domain_tier(const struct tp_snapshot *s, uint32_t d);
const char *tp_snapshot_domain_tier_name(const struct tp_snapshot *s, uint32_t d);
uint32_t tp_snapshot_domain_nodes(const struct tp_snapshot *s, uint32_t d);
int64_t tp_snapshot_domain_free(const struct tp_snapshot *s, int r, uint32_t d);
/* The slot of the i-th live node in name order (i < tp_snapshot_node_count). */
uint32_t tp_snapshot_node_sorted(const struct tp_snapshot *s, size_t i);
/* A node's name (NULL for a dead slot), leaf domain and enum tp_node_state. */
const char *tp_snapshot_node_name(const struct tp_snapshot *s, uint32_t slot);
uint32_t tp_snapshot_node_leaf(const struct tp_snapshot *s, uint32_t slot);
int tp_snapshot_node_state(const struct tp_snapshot *s, uint32_t slot);
/* A node's free amount and allocatable of resource r, in r's unit. */
int64_t tp_snapshot_node_free(const struct tp_snapshot *s, int r, uint32_t slot);
int64_t tp_snapshot_node_alloc(const struct tp_snapshot *s, int r, uint32_t slot);
/* Name of resource r ("cpu", "nvidia.com/gpu"). */
const char *tp_snapshot_resource_name(const struct tp_snapshot *s, int r);
/* HyperNodes the build left out (tp_build_opts.drop_invalid_hypernodes),
 * and the i-th of them (i < the count; O(i)): its name and the reason, both
 * borrowed from s. */
size_t tp_snapshot_hn_dropped_count(const struct tp_snapshot *s);
void tp_snapshot_hn_dropped(const struct tp_snapshot *s, size_t i, const char **name,
                            const char **why);

#endif
