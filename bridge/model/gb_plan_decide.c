/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan_decide: deciding (see gb_plan.h): the documented order, the
 * starvation guard, a fresh decision with its reservation, and the check of
 * a pinned decision on every pass (kept, decided again, given a new
 * assignment inside its allowed nodes, or left waiting).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_plan.h"
#include "gb_plan_int.h"

#define PLAN_MAX_PASS 1000000 /* gangs in one gb_plan_decide */

/* The guard: the first gang in order that does not fit, has waited past
 * the starvation guard (and not past its bound) and could ever fit.  It
 * holds gangs after it of no higher priority whose assignment takes a node
 * of a domain it could use (mask, one byte per slot). */
struct guard {
  int set;
  char key[GB_PLAN_KEY_MAX + 1];
  int64_t priority, waited_ms;
  uint8_t *mask; /* malloc'd; NULL: no node */
};

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

/* Runs the evaluator for g with blocked (g's own mask, or a wider one);
 * *ok is 0 for a bad gang (reason in v). */
static int evaluate(struct gb_plan *p, const struct tp_snapshot *s, const struct gb_plan_gang *g,
                    const uint8_t *blocked, struct tp_result *r, struct gb_plan_view *v, int *ok) {
  struct tp_eval_opts eo = {0};
  eo.profile = p->o.profile;
  eo.blocked = blocked;
  if (g->gang->policy.mode == TP_MODE_UNSET)
    eo.policy = p->o.default_policy;
  struct gc_diags d;
  gc_diags_init(&d);
  gc_arena_reset(p->scratch);
  int rc = tp_place_evaluate(p->ev, s, g->gang, &eo, p->scratch, r, &d);
  *ok = rc == GC_OK;
  if (rc && rc != GC_ENOMEM) {
    snprintf(v->reason, sizeof(v->reason), "%s: %s", g->key,
             d.n ? d.msgs[d.n - 1] : gc_diag_strerror(rc));
    rc = GC_OK;
  }
  gc_diags_destroy(&d);
  return rc;
}

/* ---- the starvation guard ------------------------------------------------------ */

/* The snapshot indexes of the resources gang g is evaluated on: "pods"
 * and what its pod sets request; returns how many (at most cap). */
static size_t gang_resources(const struct tp_snapshot *s, const struct tp_gang *g, int *idx,
                             size_t cap) {
  size_t n = 0;
  int r = tp_snapshot_resource(s, "pods");
  if (r >= 0)
    idx[n++] = r;
  for (size_t k = 0; k < g->n_sets; k++)
    for (size_t j = 0; j < g->sets[k].n_req && n < cap; j++) {
      r = tp_snapshot_resource(s, g->sets[k].res[j]);
      int seen = r < 0;
      for (size_t i = 0; i < n && !seen; i++)
        seen = idx[i] == r;
      if (!seen)
        idx[n++] = r;
    }
  return n;
}

/* Sets every node's free amount of the resources idx[0..n) to its
 * allocatable (sign 1), or back (sign -1) by the deltas saved in *saved
 * (malloc'd on the way there, freed on the way back). */
static int free_as_allocatable(struct tp_snapshot *s, const int *idx, size_t n, int sign,
                               int64_t **saved) {
  size_t slots = tp_snapshot_slot_count(s);
  if (sign > 0 && !(*saved = calloc(slots * n + 1, sizeof(int64_t))))
    return GC_ENOMEM;
  for (size_t slot = 0; slot < slots; slot++) {
    if (tp_snapshot_node_state(s, (uint32_t)slot) == TP_NODE_DEAD)
      continue;
    for (size_t i = 0; i < n; i++) {
      int64_t *dl = &(*saved)[slot * n + i];
      if (sign > 0)
        *dl = tp_snapshot_node_alloc(s, idx[i], (uint32_t)slot) -
              tp_snapshot_node_free(s, idx[i], (uint32_t)slot);
      if (*dl)
        tp_snapshot_adjust_free(s, (uint32_t)slot, idx[i], sign > 0 ? *dl : -*dl);
    }
  }
  if (sign < 0) {
    free(*saved);
    *saved = NULL;
  }
  return GC_OK;
}

/* The nodes of every domain of an allowed tier that holds the gang (the
 * evaluation just made on allocatable says how many pods each holds): one
 * byte per slot in *mask. */
static int usable_nodes(const struct gb_plan *p, const struct tp_snapshot *s,
                        const struct tp_result *r, int64_t need, uint8_t **mask) {
  size_t nd = tp_snapshot_domain_count(s), slots = tp_snapshot_slot_count(s);
  uint8_t *ok = calloc(nd + 1, 1);
  *mask = calloc(slots + 1, 1);
  if (!ok || !*mask) {
    free(ok);
    return GC_ENOMEM;
  }
  for (size_t d = 1; d < nd; d++) {
    int64_t t = tp_snapshot_domain_tier(s, (uint32_t)d);
    int tier_ok = r->mode != TP_MODE_HARD || (t >= 1 && t <= r->highest_tier);
    ok[d] = tier_ok && tp_evaluator_domain_pods(p->ev, (uint32_t)d) >= need;
  }
  for (size_t slot = 0; slot < slots; slot++) {
    if (tp_snapshot_node_state(s, (uint32_t)slot) == TP_NODE_DEAD)
      continue;
    int in = r->whole_cluster;
    for (int64_t d = tp_snapshot_node_leaf(s, (uint32_t)slot); d > 0 && !in;
         d = tp_snapshot_domain_parent(s, (uint32_t)d))
      in = ok[d];
    (*mask)[slot] = (uint8_t)in;
  }
  free(ok);
  return GC_OK;
}

/* *fits 1 when gang g would fit the cluster's allocatable (every bound pod
 * and reservation gone) within its allowed tiers: it could ever start.
 * Then *mask holds the nodes of the domains it could use. */
static int could_ever_fit(struct gb_plan *p, struct tp_snapshot *s, const struct gb_plan_gang *g,
                          int *fits, uint8_t **mask) {
  *fits = 0;
  *mask = NULL;
  int64_t *saved = NULL;
  int idx[GB_PLAN_MAX_RES];
  size_t n = gang_resources(s, g->gang, idx, GB_PLAN_MAX_RES);
  int rc = free_as_allocatable(s, idx, n, 1, &saved);
  if (rc)
    return rc;
  struct tp_result r;
  struct gb_plan_view scratch_view;
  int ok = 0;
  rc = evaluate(p, s, g, g->blocked, &r, &scratch_view, &ok);
  if (!rc && ok && r.feasible) {
    *fits = 1;
    rc = usable_nodes(p, s, &r, r.pods, mask);
  }
  free_as_allocatable(s, idx, n, -1, &saved);
  return rc;
}

/* A gang that does not fit: it becomes the guard when it is the first such
 * gang in order, has waited long enough but not past the bound, and could
 * ever start. */
static int note_nofit(struct gb_plan *p, struct tp_snapshot *s, const struct gb_plan_gang *g,
                      int64_t now_ms, struct guard *gd) {
  int64_t waited = now_ms - g->created_ms;
  if (gd->set || waited < p->o.starvation_guard_ms ||
      waited >= p->o.starvation_guard_ms + p->o.starvation_guard_max_ms)
    return GC_OK;
  int fits = 0;
  uint8_t *mask = NULL;
  int rc = could_ever_fit(p, s, g, &fits, &mask);
  if (rc || !fits) {
    free(mask);
    return rc;
  }
  gd->set = 1;
  gd->mask = mask;
  snprintf(gd->key, sizeof(gd->key), "%s", g->key);
  gd->priority = g->priority;
  gd->waited_ms = waited;
  return GC_OK;
}

/* 1 when the guard holds a gang of priority prio placed as r. */
static int held_by(const struct guard *gd, int64_t prio, const struct tp_result *r) {
  if (!gd->set || prio > gd->priority || !gd->mask)
    return 0;
  for (size_t j = 0; j < r->n_assign; j++)
    if (gd->mask[r->assign[j].slot])
      return 1;
  return 0;
}

/* ---- deciding ------------------------------------------------------------------- */

/* Decides one gang afresh (any earlier decision given back): evaluates,
 * then records NOFIT, HELD or PLACED (reserving). */
static int decide_fresh(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                        const struct gb_plan_gang *g, int64_t now_ms, struct guard *gd,
                        struct gb_plan_entry *e) {
  gb_plan_give_back_all(s, e);
  gb_plan_entry_clear(e);
  view_reset(&e->v, gen, now_ms);
  struct tp_result r;
  int ok = 0;
  int rc = evaluate(p, s, g, g->blocked, &r, &e->v, &ok);
  if (rc)
    return rc;
  if (!ok || !r.feasible) {
    e->v.outcome = GB_PLAN_NOFIT;
    if (ok)
      gb_plan_nofit_reason(e->v.reason, g->gang, &r);
    return note_nofit(p, s, g, now_ms, gd);
  }
  if (held_by(gd, g->priority, &r)) {
    e->v.outcome = GB_PLAN_HELD;
    /* The reason reaches this gang's tenant: another tenant's gang is not
     * named. */
    const char *gs = strchr(gd->key, '/'), *ms = strchr(g->key, '/');
    int same_ns = gs && ms && gs - gd->key == ms - g->key &&
                  !strncmp(gd->key, g->key, (size_t)(gs - gd->key));
    snprintf(e->v.reason, sizeof(e->v.reason),
             "held: fits, but %s (priority %lld) has waited %lld s without fitting and goes first "
             "in the domains it could use (until it has waited %lld s)",
             same_ns ? gd->key : "a gang of another namespace", (long long)gd->priority,
             (long long)(gd->waited_ms / 1000),
             (long long)((p->o.starvation_guard_ms + p->o.starvation_guard_max_ms) / 1000));
    return GC_OK;
  }
  if ((rc = gb_plan_record_result(e, s, g->gang, &r, 0)))
    return rc;
  view_placed(&e->v, &r);
  e->v.id = gb_plan_new_id(p);
  return GC_OK;
}

/* 1 when a pinned decision still holds: every pod not bound yet is reserved
 * on a node that is there, a candidate (not cordoned, not tainted against
 * the gang), allowed, and not over-promised.  Else *why says what broke. */
static int still_fits(const struct gb_plan_entry *e, const struct tp_snapshot *s,
                      const struct gb_plan_gang *g, char *why, size_t cap) {
  for (size_t i = 0; i < e->d.n_nodes; i++) {
    const struct gb_plan_pnode *n = &e->d.nodes[i];
    if (n->left <= 0 && !n->dropped)
      continue;
    int64_t slot = gb_plan_node_slot(s, (struct gb_plan_pnode *)n);
    const char *what = NULL;
    if (slot < 0)
      what = "is gone";
    else if (tp_snapshot_node_state(s, (uint32_t)slot) != TP_NODE_OK)
      what = "is cordoned, not ready or tainted";
    else if (g->blocked && g->blocked[slot])
      what = "has a taint the gang does not tolerate";
    else if (e->d.members &&
             !bsearch(n->name, e->d.members, e->d.n_members, sizeof(char *), gb_plan_cmp_name))
      what = "is no longer among the gang's nodes";
    for (size_t k = 0; !what && k < e->d.n_res; k++)
      if (e->d.res_idx[k] >= 0 && tp_snapshot_node_free(s, e->d.res_idx[k], (uint32_t)slot) < 0)
        what = "no longer has room for what was planned there";
    if (!what && n->dropped)
      what = "no longer has room for what was planned there";
    if (what) {
      snprintf(why, cap, "node %s %s", n->name, what);
      return 0;
    }
  }
  int64_t need = gb_plan_gang_pods(g->gang), left = gb_plan_pods_left(e);
  if (left < need) {
    snprintf(why, cap, "only %lld of the %lld pods still have their planned place", (long long)left,
             (long long)need);
    return 0;
  }
  return 1;
}

/* The nodes a pinned, used gang may still use: not blocked for it and
 * among its allowed nodes (a malloc'd per-slot mask, 1 = blocked). */
static uint8_t *inside_mask(const struct gb_plan_entry *e, const struct tp_snapshot *s,
                            const uint8_t *blocked) {
  size_t slots = tp_snapshot_slot_count(s);
  uint8_t *m = calloc(slots + 1, 1);
  if (!m)
    return NULL;
  for (size_t slot = 0; slot < slots; slot++) {
    const char *name = tp_snapshot_node_name(s, (uint32_t)slot);
    m[slot] = (blocked && blocked[slot]) ||
              (e->d.members && (!name || !bsearch(name, e->d.members, e->d.n_members,
                                                  sizeof(char *), gb_plan_cmp_name)));
  }
  return m;
}

/* A pinned gang some pod of which was released or bound no longer fits
 * its assignment: a new assignment of its pods not bound yet inside its
 * allowed nodes (replanned), or, when there is none, the old one kept
 * where it still fits and the rest waits (waiting). */
/* A copy of what e holds per node (the amounts and pods left), to take the
 * old assignment again when nothing better is found. */
struct held {
  int64_t *amt, *left;
};

static int held_save(const struct gb_plan_entry *e, struct held *h) {
  size_t na = e->d.n_nodes * e->d.n_res;
  h->amt = malloc((na ? na : 1) * sizeof(int64_t));
  h->left = malloc((e->d.n_nodes ? e->d.n_nodes : 1) * sizeof(int64_t));
  if (!h->amt || !h->left)
    return GC_ENOMEM;
  if (na)
    memcpy(h->amt, e->d.amt, na * sizeof(int64_t));
  for (size_t i = 0; i < e->d.n_nodes; i++)
    h->left[i] = e->d.nodes[i].left;
  return GC_OK;
}

static void held_restore(struct gb_plan_entry *e, struct held *h) {
  size_t na = e->d.n_nodes * e->d.n_res;
  if (na)
    memcpy(e->d.amt, h->amt, na * sizeof(int64_t));
  for (size_t i = 0; i < e->d.n_nodes; i++)
    e->d.nodes[i].left = h->left[i];
}

static int replan(struct gb_plan *p, struct tp_snapshot *s, const struct gb_plan_gang *g,
                  struct gb_plan_entry *e, struct gb_plan_view *out) {
  struct held h = {NULL, NULL};
  uint8_t *mask = NULL;
  int rc = held_save(e, &h);
  if (!rc && !(mask = inside_mask(e, s, g->blocked)))
    rc = GC_ENOMEM;
  if (rc) {
    free(h.amt);
    free(h.left);
    return rc;
  }
  gb_plan_give_back_all(s, e);
  struct tp_result r;
  struct gb_plan_view scratch;
  memset(&scratch, 0, sizeof(scratch));
  int ok = 0;
  rc = evaluate(p, s, g, mask, &r, &scratch, &ok);
  free(mask);
  if (!rc && ok && r.feasible && !(rc = gb_plan_record_result(e, s, g->gang, &r, 1))) {
    free(h.amt);
    free(h.left);
    e->v.id = gb_plan_new_id(p);
    e->v.pods = r.pods;
    e->v.nodes_used = r.nodes_used;
    e->v.pods_reserved = gb_plan_pods_left(e);
    *out = e->v;
    out->replanned = 1;
    return GC_OK;
  }
  held_restore(e, &h);
  free(h.amt);
  free(h.left);
  if (rc)
    return rc;
  gb_plan_take_fitting(s, e, g->blocked);
  e->v.pods_reserved = gb_plan_pods_left(e);
  *out = e->v;
  out->waiting = 1;
  char need[GB_PLAN_REASON_CAP];
  need[0] = 0;
  if (ok)
    gb_plan_nofit_reason(need, g->gang, &r);
  snprintf(out->reason, sizeof(out->reason),
           "%.120s: pods of the gang are released there, so the rest waits for room in it; %.300s",
           e->v.domain[0] ? e->v.domain : "its nodes", need[0] ? need : scratch.reason);
  return GC_OK;
}

/* A RELEASED gang named in a pass: kept while it still fits; else decided
 * again when no pod used it, or replanned inside its nodes. */
static int check_pinned(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                        const struct gb_plan_gang *g, int64_t now_ms, struct guard *gd,
                        struct gb_plan_entry *e, struct gb_plan_view *out) {
  char why[256];
  if (!e->d.a || still_fits(e, s, g, why, sizeof(why))) {
    *out = e->v;
    return GC_OK;
  }
  if (e->v.used) {
    int rc = replan(p, s, g, e, out);
    snprintf(out->why, sizeof(out->why), "%s", why);
    return rc;
  }
  char prev[TP_MAX_NAME + 1];
  snprintf(prev, sizeof(prev), "%s", e->v.whole_cluster ? "the whole cluster" : e->v.domain);
  uint64_t prev_id = e->v.id;
  int rc = decide_fresh(p, s, gen, g, now_ms, gd, e);
  *out = e->v;
  out->prev_id = prev_id;
  out->fresh = out->outcome == GB_PLAN_PLACED;
  out->redecided = 1;
  snprintf(out->prev_domain, sizeof(out->prev_domain), "%s", prev);
  snprintf(out->why, sizeof(out->why), "%s", why);
  return rc;
}

/* Decides gang g (in order) into *out. */
static int decide_one(struct gb_plan *p, struct tp_snapshot *s, uint64_t gen,
                      const struct gb_plan_gang *g, int64_t now_ms, struct guard *gd,
                      struct gb_plan_view *out) {
  view_reset(out, gen, 0);
  struct gb_plan_entry *e = gb_plan_find(p, g->key);
  int has_policy = g->gang->policy.mode != TP_MODE_UNSET ||
                   p->o.default_policy.mode != TP_MODE_UNSET;
  int pinned = e && (e->v.outcome == GB_PLAN_PLACED || e->v.outcome == GB_PLAN_RELEASED);
  if (!has_policy && !pinned) {
    /* Not the plan's business; a decision left from an earlier policy goes. */
    if (e)
      gb_plan_entry_drop(p, e);
    return GC_OK;
  }
  if (e && e->v.outcome == GB_PLAN_RELEASED)
    return check_pinned(p, s, gen, g, now_ms, gd, e, out);
  /* A decision of this generation is kept, except HELD: the guard that
   * holds it ends with time, not with a change of the cluster. */
  if (e && (pinned || (e->v.generation == gen && e->v.outcome != GB_PLAN_HELD))) {
    *out = e->v; /* PLACED: another caller is recording it */
    return e->v.outcome == GB_PLAN_NOFIT ? note_nofit(p, s, g, now_ms, gd) : GC_OK;
  }
  if (!e && !(e = gb_plan_entry_get(p, g->key)))
    return p->tab.n >= GB_PLAN_MAX_ENTRIES ? GC_ELIMIT : GC_ENOMEM;
  int rc = decide_fresh(p, s, gen, g, now_ms, gd, e);
  *out = e->v;
  out->fresh = out->outcome == GB_PLAN_PLACED;
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
  struct guard gd;
  memset(&gd, 0, sizeof(gd));
  int rc = GC_OK;
  for (size_t i = 0; i < n && !rc; i++) {
    const struct gb_plan_gang *g = &gangs[ord[i].idx];
    struct gb_plan_view v;
    if (!bad_gang(g, gen, now_ms, &v))
      rc = decide_one(p, s, gen, g, now_ms, &gd, &v);
    if (rc)
      gc_diags_addf(diags, "%s: placement plan: %s", g->key, gc_diag_strerror(rc));
    else if (out)
      out[ord[i].idx] = v;
  }
  free(gd.mask);
  return rc;
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
