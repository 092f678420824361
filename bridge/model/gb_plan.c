/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan: the placement plan (see gb_plan.h for what it owns).  One hash
 * table entry per gang key holds the view handed out, and, for a PLACED or
 * RELEASED gang, the per-node assignment and the reservation: the amounts
 * taken from each node's free resources, by node and resource name so that
 * they can be taken again from a rebuilt snapshot.  Everything a decision
 * keeps lives in the entry's own arena, freed when the decision goes.
 */
#include "gb_plan.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_hash.h"
#include "gc_arena.h"

#define PLAN_MAX_ENTRIES 1000000 /* gangs with a decision */
#define PLAN_MAX_PASS 1000000    /* gangs in one gb_plan_decide */
#define PLAN_MAX_RES (TP_MAX_RESOURCES + 1)
#define REASON_CAP sizeof(((struct gb_plan_view *)0)->reason)

struct pnode {
  const char *name; /* entry arena */
  int64_t slot;     /* in the snapshot the amounts were last taken from */
  int64_t planned;  /* pods the decision put here */
  int64_t left;     /* of them, still reserved (not bound) */
};

struct entry {
  struct gb_hnode h; /* first: the table links it */
  char key[GB_PLAN_KEY_MAX + 1];
  struct gb_plan_view v;
  struct gc_arena *a;  /* the decision's data below; NULL for NONE/NOFIT/HELD */
  struct pnode *nodes; /* sorted by name */
  size_t n_nodes;
  const char **res; /* resource names reserved (entry arena) */
  int *res_idx;     /* their index in the snapshot, -1 when it has none */
  size_t n_res;
  int64_t *amt;         /* amt[node * n_res + k]: still taken from that node */
  int reserved;         /* amounts are held in the snapshot */
  const char **members; /* the chosen domain's nodes by name; NULL: whole cluster */
  size_t n_members;
};

struct gb_plan {
  pthread_mutex_t mu;
  struct gb_plan_opts o;
  struct gb_htab tab;
  struct tp_evaluator *ev;
  struct gc_arena *scratch; /* one evaluation's result, reset per gang */
  char *default_tier_name;  /* the default policy's highestTierName, owned */
};

/* The first gang in order that does not fit and has waited past the
 * starvation guard: gangs after it of no higher priority are held. */
struct guard {
  int set;
  char key[GB_PLAN_KEY_MAX + 1];
  int64_t priority, waited_ms;
};

/* ------------------------------------------------------------------ */
/* Table                                                                */

static struct entry *find(const struct gb_plan *p, const char *key) {
  uint64_t h = gb_hash_str(key);
  for (struct gb_hnode *n = gb_htab_chain(&p->tab, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct entry *)n)->key, key))
      return (struct entry *)n;
  return NULL;
}

/* Drops the decision's data (not the reservation: give it back first). */
static void entry_clear(struct entry *e) {
  gc_arena_free(e->a);
  e->a = NULL;
  e->nodes = NULL;
  e->n_nodes = 0;
  e->res = NULL;
  e->res_idx = NULL;
  e->n_res = 0;
  e->amt = NULL;
  e->reserved = 0;
  e->members = NULL;
  e->n_members = 0;
}

static void entry_free(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  struct entry *e = (struct entry *)n;
  entry_clear(e);
  free(e);
}

static void entry_drop(struct gb_plan *p, struct entry *e) {
  gb_htab_remove(&p->tab, &e->h);
  entry_free(&e->h, NULL);
}

int gb_plan_new(const struct gb_plan_opts *o, struct gb_plan **out) {
  if (!out)
    return GC_EUSAGE;
  *out = NULL;
  struct gb_plan *p = calloc(1, sizeof(*p));
  if (!p)
    return GC_ENOMEM;
  if (o)
    p->o = *o;
  if (p->o.reservation_ttl_ms <= 0)
    p->o.reservation_ttl_ms = 120000;
  if (p->o.starvation_guard_ms <= 0)
    p->o.starvation_guard_ms = 300000;
  int rc = GC_ENOMEM;
  if (pthread_mutex_init(&p->mu, NULL)) {
    free(p);
    return GC_ENOMEM;
  }
  if (gb_htab_init(&p->tab, 64) || !(p->ev = tp_evaluator_new()) || !(p->scratch = gc_arena_new(0)))
    goto fail;
  /* The default policy's tier name is the caller's: keep a copy. */
  if (p->o.default_policy.highest_tier_name) {
    if (!(p->default_tier_name = strdup(p->o.default_policy.highest_tier_name)))
      goto fail;
    p->o.default_policy.highest_tier_name = p->default_tier_name;
  }
  *out = p;
  return GC_OK;
fail:
  gb_plan_free(p);
  return rc;
}

void gb_plan_free(struct gb_plan *p) {
  if (!p)
    return;
  if (p->tab.buckets)
    gb_htab_clear(&p->tab, entry_free, NULL);
  gb_htab_free(&p->tab);
  tp_evaluator_free(p->ev);
  gc_arena_free(p->scratch);
  free(p->default_tier_name);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* ------------------------------------------------------------------ */
/* Reservations                                                         */

/* The slot of node i in s, re-found by name when the snapshot's slot no
 * longer holds that node (it was removed, or the snapshot rebuilt); -1
 * when the node is gone. */
static int64_t node_slot(const struct tp_snapshot *s, struct pnode *n) {
  if (n->slot >= 0 && (size_t)n->slot < tp_snapshot_slot_count(s)) {
    const char *cur = tp_snapshot_node_name(s, (uint32_t)n->slot);
    if (cur && !strcmp(cur, n->name))
      return n->slot;
  }
  n->slot = tp_snapshot_node(s, n->name);
  return n->slot;
}

/* Gives back up to `amount` of resource k on node i (never raising free
 * above allocatable, in case the node was replaced under the reservation)
 * and lowers the recorded amount by what the plan held. */
static void give_back(struct tp_snapshot *s, struct entry *e, size_t i, size_t k, int64_t amount) {
  int64_t *held = &e->amt[i * e->n_res + k];
  if (amount > *held)
    amount = *held;
  if (amount <= 0)
    return;
  *held -= amount;
  int64_t slot = node_slot(s, &e->nodes[i]);
  int r = e->res_idx[k];
  if (slot < 0 || r < 0)
    return;
  int64_t room = tp_snapshot_node_alloc(s, r, (uint32_t)slot) -
                 tp_snapshot_node_free(s, r, (uint32_t)slot);
  if (amount > room)
    amount = room > 0 ? room : 0;
  if (amount)
    tp_snapshot_adjust_free(s, (uint32_t)slot, r, amount);
}

/* Gives back everything node i still holds; its pods are no longer reserved. */
static void give_back_node(struct tp_snapshot *s, struct entry *e, size_t i) {
  for (size_t k = 0; k < e->n_res; k++)
    give_back(s, e, i, k, e->amt[i * e->n_res + k]);
  e->nodes[i].left = 0;
}

/* Gives back the whole reservation of e. */
static void give_back_all(struct tp_snapshot *s, struct entry *e) {
  if (!e->reserved)
    return;
  for (size_t i = 0; i < e->n_nodes; i++)
    give_back_node(s, e, i);
  e->reserved = 0;
}

/* Takes e's recorded amounts from s (at decision, or again after a
 * rebuild): resources and nodes are looked up by name; a node that is gone
 * drops its part. */
static void take_all(struct tp_snapshot *s, struct entry *e) {
  for (size_t k = 0; k < e->n_res; k++)
    e->res_idx[k] = tp_snapshot_resource(s, e->res[k]);
  int64_t left = 0;
  for (size_t i = 0; i < e->n_nodes; i++) {
    struct pnode *n = &e->nodes[i];
    int64_t slot = n->left > 0 ? node_slot(s, n) : -1;
    for (size_t k = 0; k < e->n_res; k++) {
      int64_t *held = &e->amt[i * e->n_res + k];
      if (slot < 0 || e->res_idx[k] < 0)
        *held = 0;
      else if (*held > 0)
        tp_snapshot_adjust_free(s, (uint32_t)slot, e->res_idx[k], -*held);
    }
    if (slot < 0)
      n->left = 0;
    left += n->left;
  }
  e->reserved = left > 0;
}

static int64_t pods_left(const struct entry *e) {
  int64_t t = 0;
  for (size_t i = 0; i < e->n_nodes; i++)
    t += e->nodes[i].left;
  return t;
}

/* ------------------------------------------------------------------ */
/* Recording a placement                                                */

/* Index of resource name in e->res, adding it (n_res grows); -1 when full. */
static int res_index(struct entry *e, const char *name, size_t cap) {
  for (size_t k = 0; k < e->n_res; k++)
    if (!strcmp(e->res[k], name))
      return (int)k;
  if (e->n_res == cap || !(e->res[e->n_res] = gc_arena_strdup(e->a, name)))
    return -1;
  return (int)e->n_res++;
}

/* The resources the gang requests that the snapshot has, plus "pods" (one
 * per pod, as the evaluator counts it), into e->res. */
static int record_resources(struct entry *e, const struct tp_snapshot *s, const struct tp_gang *g) {
  e->res = gc_arena_alloc(e->a, PLAN_MAX_RES * sizeof(char *));
  e->res_idx = gc_arena_alloc(e->a, PLAN_MAX_RES * sizeof(int));
  if (!e->res || !e->res_idx)
    return GC_ENOMEM;
  if (tp_snapshot_resource(s, "pods") >= 0 && res_index(e, "pods", PLAN_MAX_RES) < 0)
    return GC_ENOMEM;
  for (size_t k = 0; k < g->n_sets; k++)
    for (size_t j = 0; j < g->sets[k].n_req; j++) {
      const char *name = g->sets[k].res[j];
      if (strcmp(name, "pods") && g->sets[k].val[j] > 0 && tp_snapshot_resource(s, name) >= 0 &&
          res_index(e, name, PLAN_MAX_RES) < 0)
        return GC_ENOMEM;
    }
  return GC_OK;
}

/* Adds `pods` pods of set `set` to node i's amounts. */
static void add_pods(struct entry *e, size_t i, const struct tp_podset *ps, int64_t pods) {
  for (size_t k = 0; k < e->n_res; k++) {
    int64_t per = 0;
    if (!strcmp(e->res[k], "pods"))
      per = 1;
    for (size_t j = 0; j < ps->n_req && !per; j++)
      if (!strcmp(ps->res[j], e->res[k]))
        per = ps->val[j];
    e->amt[i * e->n_res + k] += per * pods;
  }
  e->nodes[i].planned += pods;
  e->nodes[i].left += pods;
}

/* The assignment (sorted by node name, then pod set) into e->nodes and
 * e->amt, one record per node. */
static int record_nodes(struct entry *e, const struct tp_gang *g, const struct tp_result *r) {
  size_t n = r->nodes_used ? r->nodes_used : 1;
  e->nodes = gc_arena_alloc(e->a, n * sizeof(*e->nodes));
  e->amt = gc_arena_alloc(e->a, n * (e->n_res ? e->n_res : 1) * sizeof(int64_t));
  if (!e->nodes || !e->amt)
    return GC_ENOMEM;
  for (size_t j = 0; j < r->n_assign; j++) {
    const struct tp_assignment *as = &r->assign[j];
    if (!e->n_nodes || e->nodes[e->n_nodes - 1].slot != as->slot) {
      if (e->n_nodes == n)
        return GC_EINVAL; /* the evaluator's nodes_used is the distinct count */
      struct pnode *pn = &e->nodes[e->n_nodes++];
      pn->slot = as->slot;
      if (!(pn->name = gc_arena_strdup(e->a, as->node)))
        return GC_ENOMEM;
    }
    add_pods(e, e->n_nodes - 1, &g->sets[as->podset], as->pods);
  }
  return GC_OK;
}

/* The chosen domain's nodes in name order, for node_allowed. */
static int record_members(struct entry *e, const struct tp_snapshot *s, int64_t d) {
  uint32_t cnt = tp_snapshot_domain_nodes(s, (uint32_t)d);
  e->members = gc_arena_alloc(e->a, (cnt ? cnt : 1) * sizeof(char *));
  if (!e->members)
    return GC_ENOMEM;
  size_t n = tp_snapshot_node_count(s);
  for (size_t i = 0; i < n && e->n_members < cnt; i++) {
    uint32_t slot = tp_snapshot_node_sorted(s, i);
    if (tp_snapshot_in_domain(s, slot, (uint32_t)d) &&
        !(e->members[e->n_members++] = gc_arena_strdup(e->a, tp_snapshot_node_name(s, slot))))
      return GC_ENOMEM;
  }
  return GC_OK;
}

/* Records a feasible result in e and takes its reservation from s. */
static int record_placement(struct entry *e, struct tp_snapshot *s, const struct tp_gang *g,
                            const struct tp_result *r) {
  entry_clear(e);
  if (!(e->a = gc_arena_new(0)))
    return GC_ENOMEM;
  int rc = record_resources(e, s, g);
  if (!rc)
    rc = record_nodes(e, g, r);
  if (!rc && !r->whole_cluster)
    rc = record_members(e, s, r->domain);
  if (rc) {
    entry_clear(e);
    return rc;
  }
  take_all(s, e);
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Reasons                                                              */

static void cat(char *buf, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void cat(char *buf, size_t *len, const char *fmt, ...) {
  if (*len >= REASON_CAP - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *len, REASON_CAP - *len, fmt, ap);
  va_end(ap);
  if (w > 0)
    *len = *len + (size_t)w < REASON_CAP - 1 ? *len + (size_t)w : REASON_CAP - 1;
}

/* "16 pods x 8 nvidia.com/gpu", "2 pods x (1 cpu, 8 nvidia.com/gpu) + 1 pods x 1 cpu". */
static void cat_demand(char *buf, size_t *len, const struct tp_gang *g) {
  for (size_t k = 0; k < g->n_sets; k++) {
    const struct tp_podset *ps = &g->sets[k];
    int64_t pods = ps->count;
    if (g->n_sets == 1 && g->min_member > 0 && g->min_member < pods)
      pods = g->min_member;
    cat(buf, len, "%s%lld pods x %s", k ? " + " : "", (long long)pods, ps->n_req > 1 ? "(" : "");
    for (size_t j = 0; j < ps->n_req; j++) {
      char q[GC_QUANTITY_BUFSZ];
      tp_units_format(ps->res[j], ps->val[j], q, sizeof(q));
      cat(buf, len, "%s%s %s", j ? ", " : "", q, ps->res[j]);
    }
    cat(buf, len, "%s", ps->n_req > 1 ? ")" : ps->n_req ? "" : "nothing");
  }
}

/* The one-line reason of a NOFIT decision: what the gang needs, where, and
 * the evaluator's reason for the best domain of the highest tier tried. */
static void nofit_reason(char *buf, const struct tp_gang *g, const struct tp_result *r) {
  size_t len = 0;
  buf[0] = 0;
  cat(buf, &len, "needs ");
  cat_demand(buf, &len, g);
  if (r->mode == TP_MODE_HARD)
    cat(buf, &len, " in one domain of tier <= %lld", (long long)r->highest_tier);
  else
    cat(buf, &len, " anywhere in the cluster");
  const char *best = NULL, *note = NULL;
  for (size_t i = 0; i < r->n_reasons; i++) {
    if (!strncmp(r->reasons[i], "hard mode:", 10))
      note = note ? note : r->reasons[i];
    else
      best = r->reasons[i];
  }
  if (best)
    cat(buf, &len, "; best is %s", best);
  else
    cat(buf, &len, "; %s", note ? note : "no domain at an allowed tier");
}

/* ------------------------------------------------------------------ */
/* Deciding                                                             */

struct order_item {
  size_t idx;
  int64_t priority, created_ms;
  const char *key;
};

static int cmp_order(const void *a, const void *b) {
  const struct order_item *x = a, *y = b;
  if (x->priority != y->priority)
    return x->priority > y->priority ? -1 : 1;
  if (x->created_ms != y->created_ms)
    return x->created_ms < y->created_ms ? -1 : 1;
  return strcmp(x->key, y->key);
}

static void view_reset(struct gb_plan_view *v, uint64_t gen, int64_t now_ms) {
  memset(v, 0, sizeof(*v));
  v->generation = gen;
  v->tier = -1;
  v->decided_ms = now_ms;
}

/* Fills the view of a feasible result. */
static void view_placed(struct gb_plan_view *v, const struct tp_result *r) {
  v->outcome = GB_PLAN_PLACED;
  v->whole_cluster = r->whole_cluster;
  snprintf(v->domain, sizeof(v->domain), "%s", r->domain_name ? r->domain_name : "");
  v->tier = r->tier;
  snprintf(v->tier_name, sizeof(v->tier_name), "%s", r->tier_name ? r->tier_name : "");
  v->pods = r->pods;
  v->pods_reserved = r->pods;
  v->nodes_used = r->nodes_used;
}

/* Runs the evaluator for g; *ok is 0 for a bad gang (reason in v). */
static int evaluate(struct gb_plan *p, const struct tp_snapshot *s, const struct gb_plan_gang *g,
                    struct tp_result *r, struct gb_plan_view *v, int *ok) {
  struct tp_eval_opts eo = {0};
  eo.profile = p->o.profile;
  eo.blocked = g->blocked;
  if (g->gang->policy.mode == TP_MODE_UNSET)
    eo.policy = p->o.default_policy;
  struct gc_diags d;
  gc_diags_init(&d);
  gc_arena_reset(p->scratch);
  int rc = tp_evaluate(p->ev, s, g->gang, &eo, p->scratch, r, &d);
  *ok = rc == GC_OK;
  if (rc && rc != GC_ENOMEM) {
    snprintf(v->reason, sizeof(v->reason), "%s: %s", g->key,
             d.n ? d.msgs[d.n - 1] : gc_strerror(rc));
    rc = GC_OK;
  }
  gc_diags_destroy(&d);
  return rc;
}

/* Records a gang that does not fit, and makes it the guard when it is the
 * first such gang in order and has waited long enough. */
static void note_nofit(const struct gb_plan *p, const struct gb_plan_gang *g, int64_t now_ms,
                       struct guard *gd) {
  int64_t waited = now_ms - g->created_ms;
  if (gd->set || waited < p->o.starvation_guard_ms)
    return;
  gd->set = 1;
  snprintf(gd->key, sizeof(gd->key), "%s", g->key);
  gd->priority = g->priority;
  gd->waited_ms = waited;
}

/* Decides one gang whose decision is not kept: evaluates, then records
 * NOFIT, HELD or PLACED (reserving). */
static int decide_fresh(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                        const struct gb_plan_gang *g, int64_t now_ms, struct guard *gd,
                        struct entry *e) {
  give_back_all(s, e);
  entry_clear(e);
  view_reset(&e->v, gen, now_ms);
  struct tp_result r;
  int ok = 0;
  int rc = evaluate(p, s, g, &r, &e->v, &ok);
  if (rc)
    return rc;
  if (!ok || !r.feasible) {
    e->v.outcome = GB_PLAN_NOFIT;
    if (ok)
      nofit_reason(e->v.reason, g->gang, &r);
    note_nofit(p, g, now_ms, gd);
    return GC_OK;
  }
  if (gd->set && g->priority <= gd->priority) {
    e->v.outcome = GB_PLAN_HELD;
    snprintf(e->v.reason, sizeof(e->v.reason),
             "held: fits, but %s (priority %lld) has waited %lld s without fitting and goes "
             "first",
             gd->key, (long long)gd->priority, (long long)(gd->waited_ms / 1000));
    return GC_OK;
  }
  if ((rc = record_placement(e, s, g->gang, &r)))
    return rc;
  view_placed(&e->v, &r);
  return GC_OK;
}

/* Decides gang g (in order) into *out. */
static int decide_one(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                      const struct gb_plan_gang *g, int64_t now_ms, struct guard *gd,
                      struct gb_plan_view *out) {
  view_reset(out, gen, 0);
  struct entry *e = find(p, g->key);
  int has_policy = g->gang->policy.mode != TP_MODE_UNSET ||
                   p->o.default_policy.mode != TP_MODE_UNSET;
  int pinned = e && (e->v.outcome == GB_PLAN_PLACED || e->v.outcome == GB_PLAN_RELEASED);
  if (!has_policy && !pinned) {
    /* Not the plan's business; a decision left from an earlier policy goes. */
    if (e)
      entry_drop(p, e);
    return GC_OK;
  }
  if (e && (pinned || e->v.generation == gen)) {
    if (e->v.outcome == GB_PLAN_NOFIT)
      note_nofit(p, g, now_ms, gd);
    *out = e->v;
    return GC_OK;
  }
  if (!e) {
    if (p->tab.n >= PLAN_MAX_ENTRIES)
      return GC_ELIMIT;
    if (!(e = calloc(1, sizeof(*e))))
      return GC_ENOMEM;
    snprintf(e->key, sizeof(e->key), "%s", g->key);
    e->h.hash = gb_hash_str(e->key);
    gb_htab_insert(&p->tab, &e->h);
  }
  int rc = decide_fresh(p, s, gen, g, now_ms, gd, e);
  *out = e->v;
  return rc;
}

/* A bad entry of the pass: a NOFIT view with the reason, not stored. */
static int bad_gang(const struct gb_plan_gang *g, uint64_t gen, int64_t now_ms,
                    struct gb_plan_view *v) {
  view_reset(v, gen, now_ms);
  v->outcome = GB_PLAN_NOFIT;
  if (!g->key || !g->key[0] || strlen(g->key) > GB_PLAN_KEY_MAX)
    snprintf(v->reason, sizeof(v->reason), "gang key: must be \"namespace/name\" of 1 to %d bytes",
             GB_PLAN_KEY_MAX);
  else if (!g->gang)
    snprintf(v->reason, sizeof(v->reason), "%s: no gang given", g->key);
  else
    return 0;
  return 1;
}

static int decide_ordered(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                          const struct gb_plan_gang *gangs, const struct order_item *ord, size_t n,
                          int64_t now_ms, struct gb_plan_view *out, struct gc_diags *diags) {
  struct guard gd = {0};
  for (size_t i = 0; i < n; i++) {
    const struct gb_plan_gang *g = &gangs[ord[i].idx];
    struct gb_plan_view v;
    int rc = GC_OK;
    if (!bad_gang(g, gen, now_ms, &v))
      rc = decide_one(p, s, gen, g, now_ms, &gd, &v);
    if (rc) {
      gc_diags_addf(diags, "%s: placement plan: %s", g->key, gc_strerror(rc));
      return rc;
    }
    if (out)
      out[ord[i].idx] = v;
  }
  return GC_OK;
}

int gb_plan_decide(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                   const struct gb_plan_gang *gangs, size_t n, int64_t now_ms,
                   struct gb_plan_view *out, struct gc_diags *diags) {
  if (!p || !s || (n && !gangs))
    return GC_EUSAGE;
  if (n > PLAN_MAX_PASS) {
    gc_diags_addf(diags, "placement plan: %zu gangs in one pass, more than %d", n, PLAN_MAX_PASS);
    return GC_ELIMIT;
  }
  struct order_item *ord = malloc((n ? n : 1) * sizeof(*ord));
  if (!ord)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    ord[i] = (struct order_item){i, gangs[i].priority, gangs[i].created_ms,
                                 gangs[i].key ? gangs[i].key : ""};
  qsort(ord, n, sizeof(*ord), cmp_order);
  pthread_mutex_lock(&p->mu);
  int rc = decide_ordered(p, s, gen, gangs, ord, n, now_ms, out, diags);
  pthread_mutex_unlock(&p->mu);
  free(ord);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Lifecycle of a reservation                                           */

int gb_plan_mark_released(struct gb_plan *p, const char *key, int64_t now_ms) {
  if (!p || !key)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  int rc = GC_ENOTFOUND;
  if (e && e->v.outcome == GB_PLAN_PLACED) {
    e->v.outcome = GB_PLAN_RELEASED;
    e->v.released_ms = now_ms;
    e->v.deadline_ms = now_ms + p->o.reservation_ttl_ms;
    rc = GC_OK;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

int gb_plan_unreserve(struct gb_plan *p, struct tp_snapshot *s, const char *key) {
  if (!p || !s || !key)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  int rc = GC_ENOTFOUND;
  if (e && e->v.outcome == GB_PLAN_PLACED) {
    give_back_all(s, e);
    entry_drop(p, e);
    rc = GC_OK;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* The node whose reservation a pod bound to `slot` ends: that node when it
 * still holds pods of the gang, else the one holding the most; -1 when
 * none holds any. */
static int64_t bound_node(const struct tp_snapshot *s, struct entry *e, uint32_t slot) {
  const char *name = slot < tp_snapshot_slot_count(s) ? tp_snapshot_node_name(s, slot) : NULL;
  int64_t best = -1;
  for (size_t i = 0; i < e->n_nodes; i++) {
    if (name && e->nodes[i].left > 0 && !strcmp(e->nodes[i].name, name))
      return (int64_t)i;
    if (e->nodes[i].left > 0 && (best < 0 || e->nodes[i].left > e->nodes[best].left))
      best = (int64_t)i;
  }
  return best;
}

/* Gives back one pod's requests from node i of e. */
static void give_back_pod(struct tp_snapshot *s, struct entry *e, size_t i, size_t n_req,
                          const char *const *res, const int64_t *val) {
  for (size_t k = 0; k < e->n_res; k++) {
    int64_t per = !strcmp(e->res[k], "pods") ? 1 : 0;
    for (size_t j = 0; j < n_req; j++)
      if (res[j] && !strcmp(res[j], e->res[k]))
        per = val[j];
    give_back(s, e, i, k, per);
  }
  if (--e->nodes[i].left == 0)
    give_back_node(s, e, i); /* what rounding or a changed request left */
}

int gb_plan_pod_bound(struct gb_plan *p, struct tp_snapshot *s, const char *key, uint32_t slot,
                      size_t n_req, const char *const *res, const int64_t *val) {
  if (!p || !s || !key || (n_req && (!res || !val)))
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  if (e && e->reserved) {
    int64_t i = bound_node(s, e, slot);
    if (i >= 0)
      give_back_pod(s, e, (size_t)i, n_req, res, val);
    e->v.pods_reserved = pods_left(e);
    e->reserved = e->v.pods_reserved > 0;
  }
  pthread_mutex_unlock(&p->mu);
  return GC_OK;
}

int gb_plan_expire(struct gb_plan *p, struct tp_snapshot *s, int64_t now_ms,
                   void (*fn)(void *arg, const char *key), void *arg) {
  if (!p || !s)
    return GC_EUSAGE;
  int n = 0;
  pthread_mutex_lock(&p->mu);
  size_t b = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->tab, &b, NULL); h; h = gb_htab_next(&p->tab, &b, h)) {
    struct entry *e = (struct entry *)h;
    if (e->v.outcome != GB_PLAN_RELEASED || !e->reserved || e->v.deadline_ms > now_ms)
      continue;
    give_back_all(s, e);
    e->v.pods_reserved = 0;
    n++;
    if (fn)
      fn(arg, e->key);
  }
  pthread_mutex_unlock(&p->mu);
  return n;
}

int gb_plan_forget(struct gb_plan *p, struct tp_snapshot *s, const char *key) {
  if (!p || !s || !key)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  if (e) {
    give_back_all(s, e);
    entry_drop(p, e);
  }
  pthread_mutex_unlock(&p->mu);
  return e ? GC_OK : GC_ENOTFOUND;
}

int gb_plan_reapply(struct gb_plan *p, struct tp_snapshot *s) {
  if (!p || !s)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  size_t b = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->tab, &b, NULL); h; h = gb_htab_next(&p->tab, &b, h)) {
    struct entry *e = (struct entry *)h;
    if (!e->reserved)
      continue;
    for (size_t i = 0; i < e->n_nodes; i++)
      e->nodes[i].slot = -1; /* the old slots mean nothing in the new snapshot */
    take_all(s, e);
    e->v.pods_reserved = pods_left(e);
  }
  pthread_mutex_unlock(&p->mu);
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Lookups                                                              */

static int cmp_name(const void *k, const void *m) {
  return strcmp((const char *)k, *(const char *const *)m);
}

static int cmp_pnode(const void *k, const void *n) {
  return strcmp((const char *)k, ((const struct pnode *)n)->name);
}

int gb_plan_foreach_node(struct gb_plan *p, const char *key, gb_plan_node_fn fn, void *arg) {
  if (!p || !key || !fn)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  int rc = e && e->a ? GC_OK : GC_ENOTFOUND;
  for (size_t i = 0; !rc && e && i < e->n_nodes; i++)
    rc = fn(arg, e->nodes[i].name, e->nodes[i].planned);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

int gb_plan_get(struct gb_plan *p, const char *key, struct gb_plan_view *out) {
  if (!p || !key || !out)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  if (e)
    *out = e->v;
  pthread_mutex_unlock(&p->mu);
  return e ? GC_OK : GC_ENOTFOUND;
}

int gb_plan_node_allowed(struct gb_plan *p, const char *key, const char *node, char *why,
                         size_t why_size) {
  if (!p || !key || !node)
    return -1;
  int ans = -1;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  if (e && e->a && e->v.whole_cluster)
    ans = 1;
  else if (e && e->a)
    ans = bsearch(node, e->members, e->n_members, sizeof(char *), cmp_name) != NULL;
  if (ans == 0 && why && why_size)
    snprintf(why, why_size, "node %s is outside %s (tier %lld), the domain gangbridge chose for %s",
             node, e->v.domain, (long long)e->v.tier, key);
  pthread_mutex_unlock(&p->mu);
  return ans;
}

int64_t gb_plan_node_score(struct gb_plan *p, const char *key, const char *node) {
  if (!p || !key || !node)
    return 0;
  int64_t pods = 0;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  /* Nodes are in name order: the extenders ask for every node of the
   * cluster, so this stays O(log nodes planned). */
  const struct pnode *n = e && e->n_nodes
                              ? bsearch(node, e->nodes, e->n_nodes, sizeof(*e->nodes), cmp_pnode)
                              : NULL;
  if (n)
    pods = n->planned;
  pthread_mutex_unlock(&p->mu);
  return pods;
}

int64_t gb_plan_reserved(struct gb_plan *p, const char *key, const char *node,
                         const char *resource) {
  if (!p || !key || !node || !resource)
    return 0;
  int64_t amt = 0;
  pthread_mutex_lock(&p->mu);
  struct entry *e = find(p, key);
  const struct pnode *n = e && e->n_nodes
                              ? bsearch(node, e->nodes, e->n_nodes, sizeof(*e->nodes), cmp_pnode)
                              : NULL;
  for (size_t k = 0; n && k < e->n_res; k++)
    if (!strcmp(e->res[k], resource))
      amt = e->amt[(size_t)(n - e->nodes) * e->n_res + k];
  pthread_mutex_unlock(&p->mu);
  return amt;
}

int gb_plan_foreach(struct gb_plan *p, gb_plan_view_fn fn, void *arg) {
  if (!p || !fn)
    return GC_EUSAGE;
  int rc = GC_OK;
  pthread_mutex_lock(&p->mu);
  size_t b = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->tab, &b, NULL); h && !rc;
       h = gb_htab_next(&p->tab, &b, h))
    rc = fn(arg, ((struct entry *)h)->key, &((struct entry *)h)->v);
  pthread_mutex_unlock(&p->mu);
  return rc;
}
