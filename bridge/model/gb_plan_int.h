/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan_int: the plan's private state, shared by its three files and by
 * nothing outside bridge/model/: gb_plan.c (the table, reservations, the
 * record of a placement, the life cycle of a reservation, the lookups),
 * gb_plan_decide.c (the order, the starvation guard, deciding and checking
 * pinned decisions) and gb_plan_durable.c (decisions written down and read
 * back, the allowed nodes, overlaps).  Every function here is called with
 * the plan's lock held.
 */
#ifndef GB_PLAN_INT_H
#define GB_PLAN_INT_H

#include <pthread.h>

#include "gb_hash.h"
#include "gb_plan.h"
#include "gc_arena.h"

#define GB_PLAN_MAX_ENTRIES 1000000 /* gangs with a decision */
#define GB_PLAN_MAX_RES (TP_MAX_RESOURCES + 1)
#define GB_PLAN_REASON_CAP sizeof(((struct gb_plan_view *)0)->reason)

struct gb_plan_pnode {
  const char *name; /* entry arena */
  int64_t slot;     /* in the snapshot the amounts were last taken from */
  int64_t planned;  /* pods the decision put here */
  int64_t left;     /* of them, still reserved (not bound) */
  int dropped;      /* not taken again (the node was gone or full): the plan no longer fits */
};

/* A decision's data: everything lives in its arena, freed when it goes. */
struct gb_plan_data {
  struct gc_arena *a;          /* NULL for NONE/NOFIT/HELD */
  struct gb_plan_pnode *nodes; /* sorted by name */
  size_t n_nodes;
  const char **res; /* resource names reserved */
  int *res_idx;     /* their index in the snapshot, -1 when it has none */
  size_t n_res;
  int64_t *amt;         /* amt[node * n_res + k]: still taken from that node */
  int reserved;         /* amounts are held in the snapshot */
  const char **members; /* the nodes the gang may use, by name, sorted; NULL: whole cluster */
  size_t n_members;
  struct tp_podset *sets; /* the gang's pod sets as decided */
  size_t n_sets;
  struct gb_plan_assign *assign; /* the assignment, sorted by node name then set */
  size_t n_assign;
  int64_t truncated; /* pods a restored record did not list */
};

struct gb_plan_entry {
  struct gb_hnode h; /* first: the table links it */
  char key[GB_PLAN_KEY_MAX + 1];
  struct gb_plan_view v;
  struct gb_plan_data d;
};

struct gb_plan {
  pthread_mutex_t mu;
  struct gb_plan_opts o;
  struct gb_htab tab;
  struct tp_evaluator *ev;
  struct gc_arena *scratch; /* one evaluation's result, reset per gang */
  char *default_tier_name;  /* the default policy's highestTierName, owned */
  uint64_t id_seed, id_seq; /* decision ids */
};

/* The entry of key, or NULL. */
struct gb_plan_entry *gb_plan_find(const struct gb_plan *p, const char *key);
/* The entry of key, made (empty, outcome NONE) when missing; NULL when the
 * table is full or memory is out. */
struct gb_plan_entry *gb_plan_entry_get(struct gb_plan *p, const char *key);
/* Drops the decision's data (not the reservation: give it back first). */
void gb_plan_entry_clear(struct gb_plan_entry *e);
/* Removes and frees e. */
void gb_plan_entry_drop(struct gb_plan *p, struct gb_plan_entry *e);
/* A new decision id (never 0). */
uint64_t gb_plan_new_id(struct gb_plan *p);

/* The slot of node n in s (re-found by name), -1 when it is gone. */
int64_t gb_plan_node_slot(const struct tp_snapshot *s, struct gb_plan_pnode *n);
/* Gives back the whole reservation of e. */
void gb_plan_give_back_all(struct tp_snapshot *s, struct gb_plan_entry *e);
/* Takes e's amounts node by node, only where the node is a candidate (not
 * gone, cordoned or blocked) and everything planned there fits its free
 * capacity; other nodes drop their part. */
void gb_plan_take_fitting(struct tp_snapshot *s, struct gb_plan_entry *e, const uint8_t *blocked);
/* Pods still reserved. */
int64_t gb_plan_pods_left(const struct gb_plan_entry *e);
/* The pods a gang places: minMember of a single pod set, else every pod. */
int64_t gb_plan_gang_pods(const struct tp_gang *g);

/* Records a feasible result of gang g in e (its data replaced) and takes
 * its reservation from s.  keep_members: the allowed nodes stay those e
 * had (a new assignment inside a pinned domain).  Returns 0, GC_ENOMEM or
 * GC_EINVAL. */
int gb_plan_record_result(struct gb_plan_entry *e, struct tp_snapshot *s, const struct tp_gang *g,
                          const struct tp_result *r, int keep_members);
/* Builds decision data in a new arena in *d (zeroed by the caller): the pod
 * sets, the resources of s they request, the assignment (copied, sorted)
 * and the per-node amounts.  On error the caller frees d->a.  Returns 0,
 * GC_ENOMEM or GC_EINVAL (an assignment naming a set that is not there). */
int gb_plan_data_build(struct gb_plan_data *d, const struct tp_snapshot *s,
                       const struct tp_podset *sets, size_t n_sets, const struct gb_plan_assign *as,
                       size_t n_assign);
/* Copies names (sorted) into d's allowed nodes. */
int gb_plan_copy_members(struct gb_plan_data *d, const char *const *names, size_t n);
/* Replaces e's data by *d (whose ownership moves; *d is zeroed).  The
 * reservation of the old data must have been given back. */
void gb_plan_data_install(struct gb_plan_entry *e, struct gb_plan_data *d);
/* The one-line reason of a NOFIT evaluation of g into buf (REASON_CAP). */
void gb_plan_nofit_reason(char *buf, const struct tp_gang *g, const struct tp_result *r);
/* bsearch comparator of a name against an array of names. */
int gb_plan_cmp_name(const void *k, const void *m);

#endif
