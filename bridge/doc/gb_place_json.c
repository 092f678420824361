/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_place_json: the placement result document shared by the place command
 * and the gRPC service.
 */
#include "gb_place_json.h"

#include "gc_diag.h"
#include "gc_quantity.h"

static int put(struct gc_arena *a, struct gc_value *m, const char *k, struct gc_value *v) {
  return v ? gc_map_set(a, m, k, v) : GC_ENOMEM;
}

static struct gc_value *str_or_null(struct gc_arena *a, const char *s) {
  return s ? gc_value_strz(a, s) : gc_value_null(a);
}

/* Free resources of domain d for the resources the gang requests. */
static struct gc_value *domain_free_value(struct gc_arena *a, const struct tp_snapshot *snap,
                                          const struct tp_gang *g, uint32_t d) {
  struct gc_value *m = gc_value_map(a);
  if (!m)
    return NULL;
  for (size_t k = 0; k < g->n_sets; k++)
    for (size_t j = 0; j <= g->sets[k].n_req; j++) {
      const char *name = j < g->sets[k].n_req ? g->sets[k].res[j] : "pods";
      int ri = tp_snapshot_resource(snap, name);
      if (ri < 0 || gc_map_get(m, name))
        continue;
      char q[GC_QUANTITY_BUFSZ];
      tp_snapshot_units_format(name, tp_snapshot_domain_free(snap, ri, d), q, sizeof(q));
      if (put(a, m, name, gc_value_strz(a, q)))
        return NULL;
    }
  return m;
}

int gb_place_json_result_to_value(struct gc_arena *a, const struct tp_snapshot *snap,
                                  const struct tp_gang *g, const struct tp_result *res,
                                  struct gc_value **out) {
  struct gc_value *root = gc_value_map(a), *as = gc_value_seq(a), *rs = gc_value_seq(a);
  if (!root || !as || !rs)
    return GC_ENOMEM;
  int rc = 0;
  rc |= put(a, root, "feasible", gc_value_bool(a, res->feasible));
  rc |= put(a, root, "hyperNode", str_or_null(a, res->domain_name));
  rc |= put(a, root, "tier", res->feasible && !res->whole_cluster ? gc_value_int(a, res->tier)
                                                                  : gc_value_null(a));
  rc |= put(a, root, "tierName", str_or_null(a, res->feasible ? res->tier_name : NULL));
  rc |= put(a, root, "wholeCluster", gc_value_bool(a, res->feasible && res->whole_cluster));
  for (size_t i = 0; i < res->n_assign; i++) {
    struct gc_value *e = gc_value_map(a);
    if (!e)
      return GC_ENOMEM;
    rc |= put(a, e, "node", gc_value_strz(a, res->assign[i].node));
    rc |= put(a, e, "podSet", gc_value_strz(a, g->sets[res->assign[i].podset].name));
    rc |= put(a, e, "pods", gc_value_int(a, res->assign[i].pods));
    rc |= gc_seq_push(a, as, e);
  }
  rc |= put(a, root, "assignments", as);
  for (size_t i = 0; i < res->n_reasons; i++)
    rc |= gc_seq_push(a, rs, gc_value_strz(a, res->reasons[i]));
  rc |= put(a, root, "reasons", rs);
  rc |= put(a, root, "gang", str_or_null(a, g->name));
  rc |= put(a, root, "pods", gc_value_int(a, res->feasible ? res->pods : tp_gang_pods(g)));
  rc |= put(a, root, "mode", gc_value_strz(a, tp_mode_name(res->mode)));
  rc |= put(a, root, "highestTier",
            res->highest_tier >= 0 ? gc_value_int(a, res->highest_tier) : gc_value_null(a));
  rc |= put(a, root, "profile", gc_value_strz(a, tp_profile_name(res->profile)));
  if (res->feasible) {
    rc |= put(a, root, "nodesUsed", gc_value_int(a, (int64_t)res->nodes_used));
    rc |= put(a, root, "domainPods", gc_value_int(a, res->domain_pods));
    rc |= put(a, root, "leftoverPods", gc_value_int(a, res->leftover));
    rc |= put(a, root, "domainFree", domain_free_value(a, snap, g, (uint32_t)res->domain));
    rc |= put(a, root, "exactSearch", gc_value_bool(a, res->exact_search));
  }
  if (rc)
    return GC_ENOMEM;
  *out = root;
  return GC_OK;
}
