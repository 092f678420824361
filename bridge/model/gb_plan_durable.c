/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan_durable: decisions written down and read back (see gb_plan.h):
 * a decision copied out for its record, a record taken back after a
 * restart or a takeover, the nodes a gang's restriction lets it use, and
 * which other gangs' reservations share or overlap them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_plan.h"
#include "gb_plan_int.h"

/* ---- copying a decision out ------------------------------------------------- */

static const char *dup_or_empty(struct gc_arena *a, const char *s) {
  return gc_arena_strdup(a, s ? s : "");
}

static int copy_sets(struct gc_arena *a, const struct gb_plan_data *d, struct gb_plan_record *out) {
  struct tp_podset *sets = gc_arena_alloc(a, (d->n_sets ? d->n_sets : 1) * sizeof(*sets));
  if (!sets)
    return GC_ENOMEM;
  for (size_t k = 0; k < d->n_sets; k++) {
    sets[k] = d->sets[k];
    sets[k].name = dup_or_empty(a, d->sets[k].name);
    sets[k].res = gc_arena_alloc(a, (sets[k].n_req ? sets[k].n_req : 1) * sizeof(char *));
    sets[k].val = gc_arena_alloc(a, (sets[k].n_req ? sets[k].n_req : 1) * sizeof(int64_t));
    if (!sets[k].name || !sets[k].res || !sets[k].val)
      return GC_ENOMEM;
    for (size_t j = 0; j < sets[k].n_req; j++) {
      sets[k].val[j] = d->sets[k].val[j];
      if (!(sets[k].res[j] = gc_arena_strdup(a, d->sets[k].res[j])))
        return GC_ENOMEM;
    }
  }
  out->sets = sets;
  out->n_sets = d->n_sets;
  return GC_OK;
}

static int copy_lists(struct gc_arena *a, const struct gb_plan_data *d,
                      struct gb_plan_record *out) {
  struct gb_plan_assign *as = gc_arena_alloc(a, (d->n_assign ? d->n_assign : 1) * sizeof(*as));
  const char **m = gc_arena_alloc(a, (d->n_members ? d->n_members : 1) * sizeof(char *));
  if (!as || !m)
    return GC_ENOMEM;
  for (size_t j = 0; j < d->n_assign; j++) {
    as[j] = d->assign[j];
    if (!(as[j].node = gc_arena_strdup(a, d->assign[j].node)))
      return GC_ENOMEM;
  }
  for (size_t i = 0; i < d->n_members; i++)
    if (!(m[i] = gc_arena_strdup(a, d->members[i])))
      return GC_ENOMEM;
  out->assign = as;
  out->n_assign = d->n_assign;
  out->members = d->members ? m : NULL;
  out->n_members = d->n_members;
  out->truncated = d->truncated;
  return GC_OK;
}

int gb_plan_record_of(struct gb_plan *p, const char *key, struct gc_arena *a,
                      struct gb_plan_record *out) {
  if (!p || !key || !a || !out)
    return GC_EUSAGE;
  memset(out, 0, sizeof(*out));
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  int rc = GC_ENOTFOUND;
  if (e && e->d.a && (e->v.outcome == GB_PLAN_PLACED || e->v.outcome == GB_PLAN_RELEASED)) {
    out->id = e->v.id;
    out->generation = e->v.generation;
    out->decided_ms = e->v.decided_ms;
    out->whole_cluster = e->v.whole_cluster;
    out->tier = e->v.tier;
    out->pods = e->v.pods;
    out->domain = gc_arena_strdup(a, e->v.domain);
    out->tier_name = gc_arena_strdup(a, e->v.tier_name);
    rc = !out->domain || !out->tier_name ? GC_ENOMEM : copy_sets(a, &e->d, out);
    if (!rc)
      rc = copy_lists(a, &e->d, out);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* ---- taking a record back ---------------------------------------------------- */

/* The node a pod bound to `node` ends the reservation of: that node when
 * it still holds pods of the gang, else the one holding the most; -1. */
static int64_t bound_index(const struct gb_plan_data *d, const char *node) {
  int64_t best = -1;
  for (size_t i = 0; i < d->n_nodes; i++) {
    if (node && d->nodes[i].left > 0 && !strcmp(d->nodes[i].name, node))
      return (int64_t)i;
    if (d->nodes[i].left > 0 && (best < 0 || d->nodes[i].left > d->nodes[best].left))
      best = (int64_t)i;
  }
  return best;
}

/* One bound pod less to reserve on node i (nothing is taken yet). */
static void discount(struct gb_plan_data *d, size_t i, const struct gb_plan_bound *b) {
  for (size_t k = 0; k < d->n_res; k++) {
    int64_t per = !strcmp(d->res[k], "pods") ? 1 : 0;
    for (size_t j = 0; j < b->n_req; j++)
      if (b->res[j] && !strcmp(b->res[j], d->res[k]))
        per = b->val[j];
    int64_t *amt = &d->amt[i * d->n_res + k];
    *amt = *amt > per ? *amt - per : 0;
  }
  if (--d->nodes[i].left == 0)
    for (size_t k = 0; k < d->n_res; k++)
      d->amt[i * d->n_res + k] = 0;
}

/* The allowed nodes of a restored decision: the record's, else the
 * domain's in s, else (the domain is gone) the assignment's. */
static int restore_members(struct gb_plan_data *d, const struct tp_snapshot *s,
                           const struct gb_plan_record *rec) {
  if (rec->whole_cluster)
    return GC_OK;
  if (rec->members)
    return gb_plan_copy_members(d, rec->members, rec->n_members);
  int64_t dom = rec->domain && rec->domain[0] ? tp_snapshot_domain(s, rec->domain) : -1;
  size_t cap = dom > 0 ? tp_snapshot_domain_nodes(s, (uint32_t)dom) : d->n_nodes;
  const char **names = malloc((cap ? cap : 1) * sizeof(char *));
  if (!names)
    return GC_ENOMEM;
  size_t n = 0;
  if (dom > 0) {
    for (size_t i = 0; i < tp_snapshot_node_count(s) && n < cap; i++) {
      uint32_t slot = tp_snapshot_node_sorted(s, i);
      if (tp_snapshot_in_domain(s, slot, (uint32_t)dom))
        names[n++] = tp_snapshot_node_name(s, slot);
    }
  } else {
    for (size_t i = 0; i < d->n_nodes; i++)
      names[n++] = d->nodes[i].name;
  }
  int rc = gb_plan_copy_members(d, names, n);
  free(names);
  return rc;
}

static void restore_view(struct gb_plan *p, struct gb_plan_entry *e,
                         const struct gb_plan_record *rec, int used, int64_t now_ms) {
  memset(&e->v, 0, sizeof(e->v));
  e->v.outcome = GB_PLAN_RELEASED;
  e->v.id = rec->id;
  e->v.generation = rec->generation;
  e->v.decided_ms = rec->decided_ms;
  e->v.whole_cluster = rec->whole_cluster;
  snprintf(e->v.domain, sizeof(e->v.domain), "%s", rec->domain ? rec->domain : "");
  snprintf(e->v.tier_name, sizeof(e->v.tier_name), "%s", rec->tier_name ? rec->tier_name : "");
  e->v.tier = rec->tier;
  e->v.pods = rec->pods;
  e->v.nodes_used = e->d.n_nodes;
  e->v.used = used != 0;
  /* A restart cannot know how long the pods waited: the reservation lasts
   * one TTL from now (and longer while pods are still being released). */
  e->v.released_ms = now_ms;
  e->v.deadline_ms = now_ms + p->o.reservation_ttl_ms;
}

int gb_plan_restore(struct gb_plan *p, struct tp_snapshot *s, const char *key,
                    const struct gb_plan_record *rec, const struct gb_plan_bound *bound,
                    size_t n_bound, int used, int64_t now_ms) {
  if (!p || !s || !key || !rec || (n_bound && !bound) || (rec->n_sets && !rec->sets) ||
      (rec->n_assign && !rec->assign) || rec->n_sets > TP_MAX_PODSETS)
    return GC_EUSAGE;
  if (!key[0] || strlen(key) > GB_PLAN_KEY_MAX)
    return GC_EINVAL;
  struct gb_plan_data d;
  memset(&d, 0, sizeof(d));
  int rc = gb_plan_data_build(&d, s, rec->sets, rec->n_sets, rec->assign, rec->n_assign);
  if (!rc)
    rc = restore_members(&d, s, rec);
  if (rc) {
    gc_arena_free(d.a);
    return rc;
  }
  d.truncated = rec->truncated;
  for (size_t b = 0; b < n_bound; b++) {
    int64_t i = bound_index(&d, bound[b].node);
    if (i >= 0)
      discount(&d, (size_t)i, &bound[b]);
  }
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_entry_get(p, key);
  if (!e) {
    pthread_mutex_unlock(&p->mu);
    gc_arena_free(d.a);
    return p->tab.n >= GB_PLAN_MAX_ENTRIES ? GC_ELIMIT : GC_ENOMEM;
  }
  gb_plan_give_back_all(s, e);
  gb_plan_data_install(e, &d);
  restore_view(p, e, rec, used, now_ms);
  gb_plan_take_fitting(s, e, NULL);
  e->v.pods_reserved = gb_plan_pods_left(e);
  pthread_mutex_unlock(&p->mu);
  return GC_OK;
}

/* ---- allowed nodes and other gangs ------------------------------------------- */

int gb_plan_set_members(struct gb_plan *p, const char *key, const char *const *names, size_t n) {
  if (!p || !key || (n && !names))
    return GC_EUSAGE;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  int rc = GC_ENOTFOUND;
  if (e && e->d.a && (e->v.outcome == GB_PLAN_PLACED || e->v.outcome == GB_PLAN_RELEASED)) {
    /* The arena only grows: the old list stays until the decision goes. */
    e->d.members = NULL;
    e->d.n_members = 0;
    rc = gb_plan_copy_members(&e->d, names, n);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* 1 when node may be used by entry o (its allowed nodes, or anywhere). */
static int may_use(const struct gb_plan_entry *o, const char *node) {
  if (!o->d.members)
    return 1;
  return bsearch(node, o->d.members, o->d.n_members, sizeof(char *), gb_plan_cmp_name) != NULL;
}

int gb_plan_shared(struct gb_plan *p, const char *key) {
  if (!p || !key)
    return 0;
  int shared = 0;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  size_t b = 0;
  for (struct gb_hnode *h = e ? gb_htab_next(&p->tab, &b, NULL) : NULL; h && !shared;
       h = gb_htab_next(&p->tab, &b, h)) {
    const struct gb_plan_entry *o = (const struct gb_plan_entry *)h;
    for (size_t i = 0; o != e && o->d.reserved && i < o->d.n_nodes && !shared; i++)
      shared = o->d.nodes[i].left > 0 && may_use(e, o->d.nodes[i].name);
  }
  pthread_mutex_unlock(&p->mu);
  return shared;
}

int gb_plan_overlap(struct gb_plan *p, const char *key, char *other, size_t other_size) {
  if (!p || !key)
    return 0;
  int found = 0;
  pthread_mutex_lock(&p->mu);
  struct gb_plan_entry *e = gb_plan_find(p, key);
  size_t b = 0;
  for (struct gb_hnode *h = e ? gb_htab_next(&p->tab, &b, NULL) : NULL; h && !found;
       h = gb_htab_next(&p->tab, &b, h)) {
    const struct gb_plan_entry *o = (const struct gb_plan_entry *)h;
    if (o == e || o->v.outcome != GB_PLAN_RELEASED || !o->d.reserved)
      continue;
    for (size_t i = 0; i < e->d.n_nodes && !found; i++)
      found = e->d.nodes[i].left > 0 && may_use(o, e->d.nodes[i].name);
    if (found && other && other_size)
      snprintf(other, other_size, "%s", o->key);
  }
  pthread_mutex_unlock(&p->mu);
  return found;
}
