/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan: the placement plan (see gb_plan.h for what it owns).  One hash
 * table entry per gang key holds the view handed out, and, for a PLACED or
 * RELEASED gang, the per-node assignment and the reservation: the amounts
 * taken from each node's free resources, by node and resource name so that
 * they can be taken again from a rebuilt snapshot.  Everything a decision
 * keeps lives in the entry's own arena, freed when the decision goes.
 * Deciding is gb_plan_decide.c's; decisions written down and read back
 * are gb_plan_durable.c's.
 */
#include "gb_plan.h"
#include "gb_plan_test.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gb_hash.h"
#include "gb_plan_int.h"
#include "gc_arena.h"

static int gb_plan_cmp_strp(const void *a, const void *b);

/* ------------------------------------------------------------------ */
/* Table                                                                */

struct gb_plan_entry *gb_plan_find(const struct gb_plan *p, const char *key) {
  uint64_t h = gb_hash_str(key);
  for (struct gb_hnode *n = gb_htab_chain(&p->tab, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct gb_plan_entry *)n)->key, key))
      return (struct gb_plan_entry *)n;
  return NULL;
}

struct gb_plan_entry *gb_plan_entry_get(struct gb_plan *p, const char *key) {
  struct gb_plan_entry *e = gb_plan_find(p, key);
  if (e)
    return e;
  if (p->tab.n >= GB_PLAN_MAX_ENTRIES || !(e = calloc(1, sizeof(*e))))
    return NULL;
  snprintf(e->key, sizeof(e->key), "%s", key);
  e->v.tier = -1;
  e->h.hash = gb_hash_str(e->key);
  gb_htab_insert(&p->tab, &e->h);
  return e;
}

void gb_plan_entry_clear(struct gb_plan_entry *e) {
  gc_arena_free(e->d.a);
  memset(&e->d, 0, sizeof(e->d));
}

static void entry_free(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  struct gb_plan_entry *e = (struct gb_plan_entry *)n;
  gb_plan_entry_clear(e);
  free(e);
}

void gb_plan_entry_drop(struct gb_plan *p, struct gb_plan_entry *e) {
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
  if (p->o.starvation_guard_max_ms <= 0)
    p->o.starvation_guard_max_ms = 1800000;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  p->id_seed = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
               ((uint64_t)getpid() << 40);
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

/* splitmix64 over a per-plan seed: ids differ between processes (the seed
 * holds the time and the pid) and between decisions of one process. */
uint64_t gb_plan_new_id(struct gb_plan *p) {
  uint64_t x = p->id_seed + ++p->id_seq * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x ? x : 1;
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
int64_t gb_plan_node_slot(const struct tp_snapshot *s, struct gb_plan_pnode *n) {
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
static void give_back(struct tp_snapshot *s, struct gb_plan_entry *e, size_t i, size_t k,
                      int64_t amount) {
  int64_t *held = &e->d.amt[i * e->d.n_res + k];
  if (amount > *held)
    amount = *held;
  if (amount <= 0)
    return;
  *held -= amount;
  int64_t slot = gb_plan_node_slot(s, &e->d.nodes[i]);
  int r = e->d.res_idx[k];
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
static void give_back_node(struct tp_snapshot *s, struct gb_plan_entry *e, size_t i) {
  for (size_t k = 0; k < e->d.n_res; k++)
    give_back(s, e, i, k, e->d.amt[i * e->d.n_res + k]);
  e->d.nodes[i].left = 0;
}

/* Gives back the whole reservation of e. */
void gb_plan_give_back_all(struct tp_snapshot *s, struct gb_plan_entry *e) {
  if (!e->d.reserved)
    return;
  for (size_t i = 0; i < e->d.n_nodes; i++)
    give_back_node(s, e, i);
  e->d.reserved = 0;
}

/* Takes e's recorded amounts from s (at decision, or again after a
 * rebuild): resources and nodes are looked up by name; a node that is gone
 * drops its part. */
static void gb_plan_take_all(struct tp_snapshot *s, struct gb_plan_entry *e) {
  for (size_t k = 0; k < e->d.n_res; k++)
    e->d.res_idx[k] = tp_snapshot_resource(s, e->d.res[k]);
  int64_t left = 0;
  for (size_t i = 0; i < e->d.n_nodes; i++) {
    struct gb_plan_pnode *n = &e->d.nodes[i];
    int64_t slot = n->left > 0 ? gb_plan_node_slot(s, n) : -1;
    for (size_t k = 0; k < e->d.n_res; k++) {
      int64_t *held = &e->d.amt[i * e->d.n_res + k];
      if (slot < 0 || e->d.res_idx[k] < 0)
        *held = 0;
      else if (*held > 0)
        tp_snapshot_adjust_free(s, (uint32_t)slot, e->d.res_idx[k], -*held);
    }
    if (slot < 0 && n->left > 0) {
      n->dropped = 1;
      n->left = 0;
    }
    left += n->left;
  }
  e->d.reserved = left > 0;
}

int64_t gb_plan_pods_left(const struct gb_plan_entry *e) {
  int64_t t = 0;
  for (size_t i = 0; i < e->d.n_nodes; i++)
    t += e->d.nodes[i].left;
  return t;
}

int64_t gb_plan_gang_pods(const struct tp_gang *g) {
  if (g->n_sets == 1 && g->min_member > 0 && g->min_member < g->sets[0].count)
    return g->min_member;
  int64_t t = 0;
  for (size_t k = 0; k < g->n_sets; k++)
    t += g->sets[k].count;
  return t;
}

/* 1 when everything node i of e plans fits the free capacity of slot. */
static int node_fits(const struct tp_snapshot *s, const struct gb_plan_entry *e, size_t i,
                     uint32_t slot) {
  for (size_t k = 0; k < e->d.n_res; k++) {
    int r = e->d.res_idx[k];
    int64_t want = e->d.amt[i * e->d.n_res + k];
    if (want > 0 && (r < 0 || tp_snapshot_node_free(s, r, slot) < want))
      return 0;
  }
  return 1;
}

void gb_plan_take_fitting(struct tp_snapshot *s, struct gb_plan_entry *e, const uint8_t *blocked) {
  for (size_t k = 0; k < e->d.n_res; k++)
    e->d.res_idx[k] = tp_snapshot_resource(s, e->d.res[k]);
  int64_t left = 0;
  for (size_t i = 0; i < e->d.n_nodes; i++) {
    struct gb_plan_pnode *n = &e->d.nodes[i];
    int64_t slot = n->left > 0 ? gb_plan_node_slot(s, n) : -1;
    int ok = slot >= 0 && tp_snapshot_node_state(s, (uint32_t)slot) == TP_NODE_OK &&
             !(blocked && blocked[slot]) && node_fits(s, e, i, (uint32_t)slot);
    for (size_t k = 0; k < e->d.n_res; k++) {
      int64_t *held = &e->d.amt[i * e->d.n_res + k];
      if (!ok)
        *held = 0;
      else if (*held > 0)
        tp_snapshot_adjust_free(s, (uint32_t)slot, e->d.res_idx[k], -*held);
    }
    if (!ok && n->left > 0) {
      n->dropped = 1;
      n->left = 0;
    }
    left += n->left;
  }
  e->d.reserved = left > 0;
}

/* ------------------------------------------------------------------ */
/* Recording a placement                                                */

/* Index of resource name in d->res, adding it (n_res grows); -1 when full. */
static int res_index(struct gb_plan_data *d, const char *name) {
  for (size_t k = 0; k < d->n_res; k++)
    if (!strcmp(d->res[k], name))
      return (int)k;
  if (d->n_res == GB_PLAN_MAX_RES || !(d->res[d->n_res] = gc_arena_strdup(d->a, name)))
    return -1;
  return (int)d->n_res++;
}

/* The resources the gang's sets request that the snapshot has, plus
 * "pods" (one per pod, as the evaluator counts it), into d->res. */
static int record_resources(struct gb_plan_data *d, const struct tp_snapshot *s) {
  d->res = gc_arena_alloc(d->a, GB_PLAN_MAX_RES * sizeof(char *));
  d->res_idx = gc_arena_alloc(d->a, GB_PLAN_MAX_RES * sizeof(int));
  if (!d->res || !d->res_idx)
    return GC_ENOMEM;
  if (tp_snapshot_resource(s, "pods") >= 0 && res_index(d, "pods") < 0)
    return GC_ENOMEM;
  for (size_t k = 0; k < d->n_sets; k++)
    for (size_t j = 0; j < d->sets[k].n_req; j++) {
      const char *name = d->sets[k].res[j];
      if (strcmp(name, "pods") && d->sets[k].val[j] > 0 && tp_snapshot_resource(s, name) >= 0 &&
          res_index(d, name) < 0)
        return GC_ENOMEM;
    }
  return GC_OK;
}

/* Copies the gang's pod sets (their per-pod requests) into d. */
static int record_sets(struct gb_plan_data *d, const struct tp_podset *sets, size_t n) {
  d->sets = gc_arena_alloc(d->a, (n ? n : 1) * sizeof(*d->sets));
  if (!d->sets)
    return GC_ENOMEM;
  for (size_t k = 0; k < n; k++) {
    struct tp_podset *ps = &d->sets[k];
    *ps = sets[k];
    ps->name = gc_arena_strdup(d->a, sets[k].name ? sets[k].name : "");
    ps->res = gc_arena_alloc(d->a, (ps->n_req ? ps->n_req : 1) * sizeof(*ps->res));
    ps->val = gc_arena_alloc(d->a, (ps->n_req ? ps->n_req : 1) * sizeof(*ps->val));
    if (!ps->name || !ps->res || !ps->val)
      return GC_ENOMEM;
    for (size_t j = 0; j < ps->n_req; j++)
      if (!(ps->res[j] = gc_arena_strdup(d->a, sets[k].res[j])))
        return GC_ENOMEM;
    if (ps->n_req)
      memcpy(ps->val, sets[k].val, ps->n_req * sizeof(*ps->val));
  }
  d->n_sets = n;
  return GC_OK;
}

/* Adds `pods` pods of set `set` to node i's amounts. */
static void add_pods(struct gb_plan_data *d, size_t i, const struct tp_podset *ps, int64_t pods) {
  for (size_t k = 0; k < d->n_res; k++) {
    int64_t per = 0;
    if (!strcmp(d->res[k], "pods"))
      per = 1;
    for (size_t j = 0; j < ps->n_req && !per; j++)
      if (!strcmp(ps->res[j], d->res[k]))
        per = ps->val[j];
    d->amt[i * d->n_res + k] += per * pods;
  }
  d->nodes[i].planned += pods;
  d->nodes[i].left += pods;
}

static int cmp_assign(const void *a, const void *b) {
  const struct gb_plan_assign *x = a, *y = b;
  int c = strcmp(x->node, y->node);
  return c ? c : (x->set > y->set) - (x->set < y->set);
}

/* Copies an assignment into d (sorted by node name, then pod set). */
static int record_assign(struct gb_plan_data *d, const struct gb_plan_assign *as, size_t n) {
  d->assign = gc_arena_alloc(d->a, (n ? n : 1) * sizeof(*d->assign));
  if (!d->assign)
    return GC_ENOMEM;
  for (size_t j = 0; j < n; j++) {
    if (as[j].set >= d->n_sets || as[j].pods < 0 || as[j].pods > TP_MAX_GANG_PODS)
      return GC_EINVAL;
    d->assign[j] = as[j];
    if (!(d->assign[j].node = gc_arena_strdup(d->a, as[j].node)))
      return GC_ENOMEM;
  }
  d->n_assign = n;
  qsort(d->assign, n, sizeof(*d->assign), cmp_assign);
  return GC_OK;
}

/* The assignment into d->nodes and d->amt, one record per node. */
static int build_nodes(struct gb_plan_data *d, const struct tp_snapshot *s) {
  size_t n = d->n_assign ? d->n_assign : 1;
  d->nodes = gc_arena_alloc(d->a, n * sizeof(*d->nodes));
  d->amt = gc_arena_alloc(d->a, n * (d->n_res ? d->n_res : 1) * sizeof(int64_t));
  if (!d->nodes || !d->amt)
    return GC_ENOMEM;
  memset(d->amt, 0, n * (d->n_res ? d->n_res : 1) * sizeof(int64_t));
  for (size_t j = 0; j < d->n_assign; j++) {
    const struct gb_plan_assign *as = &d->assign[j];
    if (!d->n_nodes || strcmp(d->nodes[d->n_nodes - 1].name, as->node)) {
      struct gb_plan_pnode *pn = &d->nodes[d->n_nodes++];
      memset(pn, 0, sizeof(*pn));
      pn->name = as->node;
      pn->slot = tp_snapshot_node(s, as->node);
    }
    add_pods(d, d->n_nodes - 1, &d->sets[as->set], as->pods);
  }
  return GC_OK;
}

/* The chosen domain's nodes in name order, for node_allowed. */
static int record_members(struct gb_plan_data *d, const struct tp_snapshot *s, int64_t dom) {
  uint32_t cnt = tp_snapshot_domain_nodes(s, (uint32_t)dom);
  d->members = gc_arena_alloc(d->a, (cnt ? cnt : 1) * sizeof(char *));
  if (!d->members)
    return GC_ENOMEM;
  size_t n = tp_snapshot_node_count(s);
  for (size_t i = 0; i < n && d->n_members < cnt; i++) {
    uint32_t slot = tp_snapshot_node_sorted(s, i);
    if (tp_snapshot_in_domain(s, slot, (uint32_t)dom) &&
        !(d->members[d->n_members++] = gc_arena_strdup(d->a, tp_snapshot_node_name(s, slot))))
      return GC_ENOMEM;
  }
  return GC_OK;
}

int gb_plan_copy_members(struct gb_plan_data *d, const char *const *names, size_t n) {
  d->members = gc_arena_alloc(d->a, (n ? n : 1) * sizeof(char *));
  if (!d->members)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (!(d->members[i] = gc_arena_strdup(d->a, names[i])))
      return GC_ENOMEM;
  d->n_members = n;
  qsort(d->members, n, sizeof(char *), gb_plan_cmp_strp);
  return GC_OK;
}

int gb_plan_data_build(struct gb_plan_data *d, const struct tp_snapshot *s,
                       const struct tp_podset *sets, size_t n_sets, const struct gb_plan_assign *as,
                       size_t n_assign) {
  if (!(d->a = gc_arena_new(0)))
    return GC_ENOMEM;
  int rc = record_sets(d, sets, n_sets);
  if (!rc)
    rc = record_resources(d, s);
  if (!rc)
    rc = record_assign(d, as, n_assign);
  if (!rc)
    rc = build_nodes(d, s);
  return rc;
}

void gb_plan_data_install(struct gb_plan_entry *e, struct gb_plan_data *d) {
  gb_plan_entry_clear(e);
  e->d = *d;
  memset(d, 0, sizeof(*d));
}

int gb_plan_record_result(struct gb_plan_entry *e, struct tp_snapshot *s, const struct tp_gang *g,
                          const struct tp_result *r, int keep_members) {
  struct gb_plan_data d;
  memset(&d, 0, sizeof(d));
  struct gb_plan_assign *as = malloc((r->n_assign ? r->n_assign : 1) * sizeof(*as));
  if (!as)
    return GC_ENOMEM;
  for (size_t j = 0; j < r->n_assign; j++)
    as[j] = (struct gb_plan_assign){r->assign[j].node, r->assign[j].podset, r->assign[j].pods};
  int rc = gb_plan_data_build(&d, s, g->sets, g->n_sets, as, r->n_assign);
  free(as);
  if (!rc && keep_members && e->d.members)
    rc = gb_plan_copy_members(&d, (const char *const *)e->d.members, e->d.n_members);
  else if (!rc && !keep_members && !r->whole_cluster)
    rc = record_members(&d, s, r->domain);
  if (rc) {
    gc_arena_free(d.a);
    return rc;
  }
  gb_plan_data_install(e, &d);
  gb_plan_take_all(s, e);
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Reasons                                                              */

static void cat(char *buf, size_t *len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void cat(char *buf, size_t *len, const char *fmt, ...) {
  if (*len >= GB_PLAN_REASON_CAP - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *len, GB_PLAN_REASON_CAP - *len, fmt, ap);
  va_end(ap);
  if (w > 0)
    *len = *len + (size_t)w < GB_PLAN_REASON_CAP - 1 ? *len + (size_t)w : GB_PLAN_REASON_CAP - 1;
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
      tp_snapshot_units_format(ps->res[j], ps->val[j], q, sizeof(q));
      cat(buf, len, "%s%s %s", j ? ", " : "", q, ps->res[j]);
    }
    cat(buf, len, "%s", ps->n_req > 1 ? ")" : ps->n_req ? "" : "nothing");
  }
}

/* The one-line reason of a NOFIT decision: what the gang needs, where, and
 * the evaluator's reason for the best domain of the highest tier tried. */
void gb_plan_nofit_reason(char *buf, const struct tp_gang *g, const struct tp_result *r) {
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
/* Lifecycle of a reservation                                           */

int gb_plan_mark_released(struct gb_plan *p, const char *key, int64_t now_ms) {
  if (!p || !key)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
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

int gb_plan_hold(struct gb_plan *p, const char *key, int64_t now_ms, int used) {
  if (!p || !key)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  int rc = GC_ENOTFOUND;
  if (e && e->v.outcome == GB_PLAN_RELEASED) {
    e->v.released_ms = now_ms;
    e->v.deadline_ms = now_ms + p->o.reservation_ttl_ms;
    e->v.used |= used != 0;
    rc = GC_OK;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

int gb_plan_unreserve(struct gb_plan *p, struct tp_snapshot *s, const char *key) {
  if (!p || !s || !key)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  int rc = GC_ENOTFOUND;
  if (e && e->v.outcome == GB_PLAN_PLACED) {
    gb_plan_give_back_all(s, e);
    gb_plan_entry_drop(p, e);
    rc = GC_OK;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* The node whose reservation a pod bound to `slot` ends: that node when it
 * still holds pods of the gang, else the one holding the most; -1 when
 * none holds any. */
static int64_t bound_node(const struct tp_snapshot *s, struct gb_plan_entry *e, uint32_t slot) {
  const char *name = slot < tp_snapshot_slot_count(s) ? tp_snapshot_node_name(s, slot) : NULL;
  int64_t best = -1;
  for (size_t i = 0; i < e->d.n_nodes; i++) {
    if (name && e->d.nodes[i].left > 0 && !strcmp(e->d.nodes[i].name, name))
      return (int64_t)i;
    if (e->d.nodes[i].left > 0 && (best < 0 || e->d.nodes[i].left > e->d.nodes[best].left))
      best = (int64_t)i;
  }
  return best;
}

/* Gives back one pod's requests from node i of e. */
static void give_back_pod(struct tp_snapshot *s, struct gb_plan_entry *e, size_t i, size_t n_req,
                          const char *const *res, const int64_t *val) {
  for (size_t k = 0; k < e->d.n_res; k++) {
    int64_t per = !strcmp(e->d.res[k], "pods") ? 1 : 0;
    for (size_t j = 0; j < n_req; j++)
      if (res[j] && !strcmp(res[j], e->d.res[k]))
        per = val[j];
    give_back(s, e, i, k, per);
  }
  if (--e->d.nodes[i].left == 0)
    give_back_node(s, e, i); /* what rounding or a changed request left */
}

int gb_plan_pod_bound(struct gb_plan *p, struct tp_snapshot *s, const char *key, uint32_t slot,
                      size_t n_req, const char *const *res, const int64_t *val) {
  if (!p || !s || !key || (n_req && (!res || !val)))
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  if (e && e->v.outcome == GB_PLAN_RELEASED)
    e->v.used = 1; /* a pod of it is on a node now: its domain is fixed */
  if (e && e->d.reserved) {
    int64_t i = bound_node(s, e, slot);
    if (i >= 0)
      give_back_pod(s, e, (size_t)i, n_req, res, val);
    e->v.pods_reserved = gb_plan_pods_left(e);
    e->d.reserved = e->v.pods_reserved > 0;
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
    struct gb_plan_entry *e = (struct gb_plan_entry *)h;
    if (e->v.outcome != GB_PLAN_RELEASED || !e->d.reserved || e->v.deadline_ms > now_ms)
      continue;
    gb_plan_give_back_all(s, e);
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
  struct gb_plan_entry *e = gb_plan_find(p, key);
  if (e) {
    gb_plan_give_back_all(s, e);
    gb_plan_entry_drop(p, e);
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
    struct gb_plan_entry *e = (struct gb_plan_entry *)h;
    if (!e->d.reserved)
      continue;
    for (size_t i = 0; i < e->d.n_nodes; i++)
      e->d.nodes[i].slot = -1; /* the old slots mean nothing in the new snapshot */
    gb_plan_take_all(s, e);
    e->v.pods_reserved = gb_plan_pods_left(e);
  }
  pthread_mutex_unlock(&p->mu);
  return GC_OK;
}

/* Takes again what e holds on node `node` (one entry of e->d.nodes at most). */
static void take_node(struct tp_snapshot *s, struct gb_plan_entry *e, const char *node) {
  for (size_t i = 0; i < e->d.n_nodes; i++) {
    struct gb_plan_pnode *n = &e->d.nodes[i];
    if (strcmp(n->name, node))
      continue;
    n->slot = -1;
    int64_t slot = n->left > 0 ? gb_plan_node_slot(s, n) : -1;
    for (size_t k = 0; slot >= 0 && k < e->d.n_res; k++) {
      int64_t held = e->d.amt[i * e->d.n_res + k];
      if (e->d.res_idx[k] < 0)
        e->d.res_idx[k] = tp_snapshot_resource(s, e->d.res[k]);
      if (held > 0 && e->d.res_idx[k] >= 0)
        tp_snapshot_adjust_free(s, (uint32_t)slot, e->d.res_idx[k], -held);
    }
    return;
  }
}

int gb_plan_reapply_node(struct gb_plan *p, struct tp_snapshot *s, const char *node) {
  if (!p || !s || !node)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  size_t b = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->tab, &b, NULL); h; h = gb_htab_next(&p->tab, &b, h)) {
    struct gb_plan_entry *e = (struct gb_plan_entry *)h;
    if (e->d.reserved)
      take_node(s, e, node);
  }
  pthread_mutex_unlock(&p->mu);
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Lookups                                                              */

int gb_plan_cmp_name(const void *k, const void *m) {
  return strcmp((const char *)k, *(const char *const *)m);
}

/* qsort comparator of an array of names. */
static int gb_plan_cmp_strp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_pnode(const void *k, const void *n) {
  return strcmp((const char *)k, ((const struct gb_plan_pnode *)n)->name);
}

int gb_plan_foreach_node(struct gb_plan *p, const char *key, gb_plan_node_fn fn, void *arg) {
  if (!p || !key || !fn)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  int rc = e && e->d.a ? GC_OK : GC_ENOTFOUND;
  for (size_t i = 0; !rc && e && i < e->d.n_nodes; i++)
    rc = fn(arg, e->d.nodes[i].name, e->d.nodes[i].planned);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

int gb_plan_get(struct gb_plan *p, const char *key, struct gb_plan_view *out) {
  if (!p || !key || !out)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  if (e)
    *out = e->v;
  pthread_mutex_unlock(&p->mu);
  return e ? GC_OK : GC_ENOTFOUND;
}

/* The decision's answer for node: 1 allowed, 0 not, -1 no opinion. */
static int entry_allows(const struct gb_plan_entry *e, const char *node) {
  if (!e || !e->d.a)
    return -1;
  if (e->v.whole_cluster)
    return 1;
  return bsearch(node, e->d.members, e->d.n_members, sizeof(char *), gb_plan_cmp_name) != NULL;
}

/* The one place the refusal's sentence is worded: head + node + tail. */
static void why_parts(const struct gb_plan_entry *e, const char *key, struct gb_plan_why *w) {
  snprintf(w->head, sizeof(w->head), "node ");
  snprintf(w->tail, sizeof(w->tail),
           " is outside the nodes gangbridge chose for %s (in %s, tier %lld)", key, e->v.domain,
           (long long)e->v.tier);
}

int gb_plan_node_allowed(struct gb_plan *p, const char *key, const char *node, char *why,
                         size_t why_size) {
  if (!p || !key || !node)
    return -1;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  int ans = entry_allows(e, node);
  if (ans == 0 && why && why_size) {
    struct gb_plan_why w;
    why_parts(e, key, &w);
    snprintf(why, why_size, "%s%s%s", w.head, node, w.tail);
  }
  pthread_mutex_unlock(&p->mu);
  return ans;
}

int gb_plan_nodes_allowed(struct gb_plan *p, const char *key, const char *const *nodes, size_t n,
                          int8_t *ans, struct gb_plan_why *why) {
  if (!p || !key || (n && (!nodes || !ans)))
    return GC_EUSAGE;
  int refused = 0;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  for (size_t i = 0; i < n; i++) {
    ans[i] = (int8_t)entry_allows(e, nodes[i]);
    refused |= ans[i] == 0;
  }
  if (refused && why)
    why_parts(e, key, why);
  pthread_mutex_unlock(&p->mu);
  return GC_OK;
}

int64_t gb_plan_node_score(struct gb_plan *p, const char *key, const char *node) {
  if (!p || !key || !node)
    return 0;
  int64_t pods = 0;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  /* Nodes are in name order: the extenders ask for every node of the
   * cluster, so this stays O(log nodes planned). */
  const struct gb_plan_pnode *n = e && e->d.n_nodes ? bsearch(node, e->d.nodes, e->d.n_nodes,
                                                              sizeof(*e->d.nodes), cmp_pnode)
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
  struct gb_plan_entry *e = gb_plan_find(p, key);
  const struct gb_plan_pnode *n = e && e->d.n_nodes ? bsearch(node, e->d.nodes, e->d.n_nodes,
                                                              sizeof(*e->d.nodes), cmp_pnode)
                                                    : NULL;
  for (size_t k = 0; n && k < e->d.n_res; k++)
    if (!strcmp(e->d.res[k], resource))
      amt = e->d.amt[(size_t)(n - e->d.nodes) * e->d.n_res + k];
  pthread_mutex_unlock(&p->mu);
  return amt;
}

int gb_plan_foreach_reserved(struct gb_plan *p, const char *key, gb_plan_node_fn fn, void *arg) {
  if (!p || !key || !fn)
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  int rc = e && e->d.a ? GC_OK : GC_ENOTFOUND;
  for (size_t i = 0; !rc && e && e->d.reserved && i < e->d.n_nodes; i++)
    if (e->d.nodes[i].left > 0)
      rc = fn(arg, e->d.nodes[i].name, e->d.nodes[i].left);
  pthread_mutex_unlock(&p->mu);
  return rc;
}
