/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gangview: readiness, the gang from the pods' requests, and the
 * restriction of a decision (see the header).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_gangview.h"
#include "gb_gangview_test.h"

const char *gb_gang_state_name(enum gb_gang_state s) {
  switch (s) {
  case GB_GANG_WAITING_PODS: return "waiting-pods";
  case GB_GANG_READY: return "gated";
  case GB_GANG_PARTLY: return "releasing";
  case GB_GANG_RELEASED: return "released";
  case GB_GANG_SUSPENDED: return "suspended";
  default: return "unmanaged";
  }
}

enum gb_gang_state gb_gangview_classify(const struct gb_placer_pod *pods, size_t n,
                                        int64_t min_member) {
  int64_t counted = 0, counted_gated = 0, gated = 0;
  for (size_t i = 0; i < n; i++) {
    gated += pods[i].gated != 0;
    if (!pods[i].counted)
      continue;
    counted++;
    counted_gated += pods[i].gated != 0;
  }
  if (!gated)
    return GB_GANG_RELEASED;
  /* A released pod among gated ones means a release was cut short (a crash
   * or a lost leadership): finish it with the same decision. */
  if (gated < (int64_t)n && counted_gated < counted)
    return GB_GANG_PARTLY;
  if (min_member <= 0 || counted_gated < min_member)
    return GB_GANG_WAITING_PODS;
  return GB_GANG_READY;
}

/* 1 when pods a and b request exactly the same (names and amounts; the
 * model gives them in one canonical order). */
static int same_requests(const struct gb_placer_pod *a, const struct gb_placer_pod *b) {
  if (a->n_req != b->n_req)
    return 0;
  for (size_t i = 0; i < a->n_req; i++)
    if (strcmp(a->res[i], b->res[i]) || a->val[i] != b->val[i])
      return 0;
  return 1;
}

static void copy_policy(const struct gc_topology_policy *topo, struct tp_policy *out) {
  memset(out, 0, sizeof(*out));
  if (!topo || !topo->set)
    return;
  out->mode = topo->mode && !strcmp(topo->mode, "soft") ? TP_MODE_SOFT : TP_MODE_HARD;
  out->has_highest_tier = topo->has_highest_tier;
  out->highest_tier = topo->highest_tier;
  out->highest_tier_name = topo->highest_tier_name;
}

/* Adds pod p to the pod set of its shape, opening a new set when none
 * matches; shapes[k] is the first pod of set k. */
static int add_to_set(struct gc_arena *a, struct tp_gang *g, const struct gb_placer_pod **shapes,
                      const struct gb_placer_pod *p) {
  for (size_t k = 0; k < g->n_sets; k++)
    if (same_requests(shapes[k], p)) {
      g->sets[k].count++;
      return 0;
    }
  if (g->n_sets == TP_MAX_PODSETS)
    return GC_ELIMIT;
  struct tp_podset *ps = &g->sets[g->n_sets];
  shapes[g->n_sets++] = p;
  ps->name = gc_arena_printf(a, "shape-%zu", g->n_sets);
  ps->count = 1;
  ps->n_req = 0;
  ps->res = gc_arena_alloc(a, (p->n_req + 1) * sizeof(*ps->res));
  ps->val = gc_arena_alloc(a, (p->n_req + 1) * sizeof(*ps->val));
  if (!ps->name || !ps->res || !ps->val)
    return GC_ENOMEM;
  /* The evaluator adds "pods" itself and wants positive amounts only. */
  for (size_t r = 0; r < p->n_req; r++) {
    if (p->val[r] <= 0 || !strcmp(p->res[r], "pods"))
      continue;
    ps->res[ps->n_req] = p->res[r];
    ps->val[ps->n_req++] = p->val[r];
  }
  return 0;
}

int gb_gangview_build_gang(struct gc_arena *a, const char *key, const struct gb_placer_pod *pods,
                           size_t n, const struct gc_topology_policy *topo, struct tp_gang *out) {
  memset(out, 0, sizeof(*out));
  out->name = key;
  copy_policy(topo, &out->policy);
  out->sets = gc_arena_alloc(a, TP_MAX_PODSETS * sizeof(*out->sets));
  const struct gb_placer_pod **shapes = gc_arena_alloc(a, TP_MAX_PODSETS * sizeof(*shapes));
  if (!out->sets || !shapes)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (!pods[i].counted)
      continue;
    int rc = add_to_set(a, out, shapes, &pods[i]);
    if (rc)
      return rc;
  }
  return out->n_sets ? 0 : GC_EINVAL;
}

/* The label value of label-level domain d: the model names such a domain
 * by the values of every level down to it joined with '/' (label values
 * cannot hold one) and gives it the level's label key as tier name. */
static const char *level_value(const struct tp_snapshot *s, uint32_t d) {
  const char *id = tp_snapshot_domain_name(s, d);
  const char *slash = strrchr(id, '/');
  return slash ? slash + 1 : id;
}

/* 1 when another domain of d's level carries the same label value. */
static int value_repeats(const struct tp_snapshot *s, uint32_t d) {
  const char *key = tp_snapshot_domain_tier_name(s, d), *value = level_value(s, d);
  size_t n = tp_snapshot_domain_count(s);
  for (uint32_t o = 1; o < n; o++) {
    const char *ok = tp_snapshot_domain_tier_name(s, o);
    if (o != d && ok && !strcmp(ok, key) && !strcmp(level_value(s, o), value))
      return 1;
  }
  return 0;
}

static int add_planned_node(void *arg, const char *node, int64_t pods) {
  (void)pods;
  return gb_restriction_add_host(arg, node, NULL);
}

/* The names of domain d's candidate nodes, in the snapshot's name order. */
static int domain_nodes(const struct tp_snapshot *s, uint32_t d, struct gb_restriction *out) {
  size_t n = tp_snapshot_node_count(s);
  for (size_t i = 0; i < n; i++) {
    uint32_t slot = tp_snapshot_node_sorted(s, i);
    /* Cordoned, not ready or dead nodes are no candidates: leaving them out
     * keeps the list short and says where the pods may really go. */
    if (!tp_snapshot_in_domain(s, slot, d) || tp_snapshot_node_state(s, slot) != TP_NODE_OK)
      continue;
    int rc = gb_restriction_add_host(out, tp_snapshot_node_name(s, slot), NULL);
    if (rc)
      return rc;
  }
  return 0;
}

int gb_gangview_restriction_of(const struct tp_snapshot *s, struct gb_plan *plan, const char *key,
                               const struct gb_plan_view *v, int label_levels,
                               struct gb_restriction *out) {
  memset(out, 0, sizeof(*out));
  if (v->outcome != GB_PLAN_PLACED && v->outcome != GB_PLAN_RELEASED)
    return GC_ENOTFOUND;
  if (v->whole_cluster || !v->domain[0])
    return 0;
  int64_t d = tp_snapshot_domain(s, v->domain);
  if (d <= 0)
    return GC_ENOTFOUND;
  const char *tier_key = tp_snapshot_domain_tier_name(s, (uint32_t)d);
  if (label_levels && tier_key && !value_repeats(s, (uint32_t)d) &&
      gb_restriction_label(out, tier_key, level_value(s, (uint32_t)d), NULL) == 0)
    return 0;
  memset(out, 0, sizeof(*out));
  if (tp_snapshot_domain_nodes(s, (uint32_t)d) <= GB_RESTRICTION_MAX_HOSTS &&
      domain_nodes(s, (uint32_t)d, out) == 0)
    return 0;
  /* The domain is too large to list: the nodes the plan chose in it. */
  memset(out, 0, sizeof(*out));
  return gb_plan_foreach_node(plan, key, add_planned_node, out);
}

struct expand {
  struct gc_arena *a;
  size_t n, at;
  const char **out;
  int oom;
};

static int expand_node(void *arg, const char *node, int64_t pods) {
  struct expand *e = arg;
  const char *name = gc_arena_strdup(e->a, node);
  if (!name) {
    e->oom = 1;
    return 1;
  }
  for (int64_t k = 0; k < pods && e->at < e->n; k++)
    e->out[e->at++] = name;
  return e->at == e->n;
}

int gb_placer_pod_nodes(struct gb_plan *plan, const char *key, struct gc_arena *a, size_t n,
                        const char **out) {
  memset(out, 0, n * sizeof(*out));
  struct expand e = {a, n, 0, out, 0};
  int rc = gb_plan_foreach_node(plan, key, expand_node, &e);
  if (e.oom)
    return GC_ENOMEM;
  return rc < 0 ? rc : 0;
}

int gb_gangview_exact_restriction(struct gb_plan *plan, const char *key,
                                  struct gb_restriction *out) {
  memset(out, 0, sizeof(*out));
  int rc = gb_plan_foreach_node(plan, key, add_planned_node, out);
  return rc == GC_ELIMIT || rc == GC_ENOTFOUND ? rc : rc ? GC_ELIMIT : 0;
}

struct named {
  const char *name;
  size_t i;
};

static int cmp_named(const void *a, const void *b) {
  return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

int gb_gangview_map_pod_nodes(struct gb_plan *plan, const char *key, struct gc_arena *a,
                              const struct gb_placer_pod *pods, size_t n, const char **out) {
  memset(out, 0, n * sizeof(*out));
  size_t counted = 0;
  struct named *idx = gc_arena_alloc(a, (n ? n : 1) * sizeof(*idx));
  const char **planned = gc_arena_alloc(a, (n ? n : 1) * sizeof(*planned));
  if (!idx || !planned)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (pods[i].counted)
      idx[counted++] = (struct named){pods[i].name, i};
  int rc = gb_placer_pod_nodes(plan, key, a, counted, planned);
  if (rc)
    return rc;
  qsort(idx, counted, sizeof(*idx), cmp_named);
  for (size_t k = 0; k < counted; k++)
    out[idx[k].i] = planned[k];
  return 0;
}
