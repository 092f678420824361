/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_gang: compact Gang documents and gangcalc gangs as placement input.
 */
#include "tp_gang.h"

#include <stdio.h>
#include <string.h>

#include "tp_snapshot.h"

static const char *pfx(const char *origin) { return origin ? origin : "<input>"; }

int tp_gang_is_doc(const struct gc_value *doc) {
  const char *a = gc_value_as_str(gc_map_get(doc, "apiVersion"));
  const char *k = gc_value_as_str(gc_map_get(doc, "kind"));
  return a && k && !strcmp(a, TP_GANG_API) && !strcmp(k, TP_GANG_KIND);
}

int64_t tp_gang_pods(const struct tp_gang *g) {
  int64_t t = 0;
  for (size_t i = 0; g && i < g->n_sets; i++)
    if (__builtin_add_overflow(t, g->sets[i].count, &t))
      return INT64_MAX;
  return t;
}

int tp_podset_set_requests(struct gc_arena *a, struct tp_podset *ps, const struct gc_reslist *req,
                           const char *where, struct gc_diags *diags) {
  ps->n_req = 0;
  ps->res = req->n ? gc_arena_alloc(a, req->n * sizeof(*ps->res)) : NULL;
  ps->val = req->n ? gc_arena_alloc(a, req->n * sizeof(*ps->val)) : NULL;
  if (req->n && (!ps->res || !ps->val))
    return GC_ENOMEM;
  for (size_t i = 0; i < req->n; i++) {
    const char *name = req->items[i].name;
    int64_t v;
    if (!strcmp(name, "pods"))
      continue;
    if (req->items[i].q.mant < 0) {
      gc_diags_addf(diags, "%s.%s: must not be negative", where, name);
      return GC_EINVAL;
    }
    if (tp_snapshot_quantity_to_units(name, &req->items[i].q, &v)) {
      gc_diags_addf(diags, "%s.%s: quantity out of range", where, name);
      return GC_ERANGE;
    }
    if (!v)
      continue;
    ps->res[ps->n_req] = name;
    ps->val[ps->n_req++] = v;
  }
  return GC_OK;
}

static int policy_from_value(const struct gc_value *nt, const char *where, struct tp_policy *p,
                             struct gc_diags *diags) {
  memset(p, 0, sizeof(*p));
  if (!nt || nt->type == GC_NULL)
    return GC_OK;
  if (nt->type != GC_MAP) {
    gc_diags_addf(diags, "%s: must be an object", where);
    return GC_EINVAL;
  }
  const struct gc_value *mode = gc_map_get(nt, "mode");
  const struct gc_value *ht = gc_map_get(nt, "highestTierAllowed");
  const struct gc_value *hn = gc_map_get(nt, "highestTierName");
  p->mode = TP_MODE_HARD; /* Volcano's default mode */
  if (mode) {
    const char *m = gc_value_as_str(mode);
    if (!m || (strcmp(m, "hard") && strcmp(m, "soft"))) {
      gc_diags_addf(diags, "%s.mode: must be \"hard\" or \"soft\"", where);
      return GC_EINVAL;
    }
    p->mode = !strcmp(m, "hard") ? TP_MODE_HARD : TP_MODE_SOFT;
  }
  if (ht) {
    if (ht->type != GC_INT || ht->u.i < 0) {
      gc_diags_addf(diags, "%s.highestTierAllowed: must be an integer from 0", where);
      return GC_EINVAL;
    }
    p->has_highest_tier = 1;
    p->highest_tier = ht->u.i;
  }
  if (hn) {
    p->highest_tier_name = gc_value_as_str(hn);
    if (!p->highest_tier_name || !*p->highest_tier_name) {
      gc_diags_addf(diags, "%s.highestTierName: must be a non-empty string", where);
      return GC_EINVAL;
    }
  }
  if (ht && hn) {
    gc_diags_addf(diags, "%s: set highestTierAllowed or highestTierName, not both", where);
    return GC_EINVAL;
  }
  return GC_OK;
}

int tp_gang_from_doc(struct gc_arena *a, const struct gc_value *doc, const char *origin,
                     struct tp_gang *out, struct gc_diags *diags) {
  if (!a || !doc || !out)
    return GC_EUSAGE;
  memset(out, 0, sizeof(*out));
  if (!tp_gang_is_doc(doc)) {
    gc_diags_addf(diags, "%s: not a %s %s document", pfx(origin), TP_GANG_API, TP_GANG_KIND);
    return GC_EINVAL;
  }
  const char *name = gc_value_as_str(gc_value_path(doc, "metadata.name"));
  char who[512];
  snprintf(who, sizeof(who), "%s: Gang/%s", pfx(origin), name ? name : "?");
  out->name = name;
  const struct gc_value *sets = gc_value_path(doc, "spec.podSets");
  if (!sets || sets->type != GC_SEQ || sets->len == 0) {
    gc_diags_addf(diags, "%s: spec.podSets: required, a non-empty list", who);
    return GC_EINVAL;
  }
  if (sets->len > TP_MAX_PODSETS) {
    gc_diags_addf(diags, "%s: spec.podSets: at most %d pod sets", who, TP_MAX_PODSETS);
    return GC_ELIMIT;
  }
  out->sets = gc_arena_alloc(a, sets->len * sizeof(*out->sets));
  if (!out->sets)
    return GC_ENOMEM;
  int rc = GC_OK;
  int64_t total = 0;
  for (size_t i = 0; i < sets->len; i++) {
    const struct gc_value *ps = sets->u.items[i];
    struct tp_podset *o = &out->sets[out->n_sets];
    char where[640];
    snprintf(where, sizeof(where), "%s: spec.podSets[%zu]", who, i);
    if (ps->type != GC_MAP) {
      gc_diags_addf(diags, "%s: must be an object", where);
      rc = GC_EINVAL;
      continue;
    }
    o->name = gc_value_as_str(gc_map_get(ps, "name"));
    if (!o->name || !*o->name) {
      gc_diags_addf(diags, "%s.name: required", where);
      rc = GC_EINVAL;
      continue;
    }
    for (size_t j = 0; j < out->n_sets; j++)
      if (!strcmp(out->sets[j].name, o->name)) {
        gc_diags_addf(diags, "%s.name: duplicate pod set \"%s\"", where, o->name);
        rc = GC_EINVAL;
      }
    const struct gc_value *count = gc_map_get(ps, "count");
    if (!count || count->type != GC_INT || count->u.i < 1 || count->u.i > TP_MAX_SET_PODS) {
      gc_diags_addf(diags, "%s.count: required, an integer from 1 to %d", where, TP_MAX_SET_PODS);
      rc = GC_EINVAL;
      continue;
    }
    o->count = count->u.i;
    total += o->count;
    struct gc_reslist req = GC_RESLIST_INIT;
    const struct gc_value *rv = gc_map_get(ps, "requests");
    char rwhere[700];
    snprintf(rwhere, sizeof(rwhere), "%s.requests", where);
    if (rv && rv->type != GC_NULL) {
      int e = gc_reslist_from_value(a, rv, rwhere, &req, diags);
      if (e) {
        rc = e == GC_ENOMEM ? e : GC_EINVAL;
        continue;
      }
    }
    int e = tp_podset_set_requests(a, o, &req, rwhere, diags);
    if (e) {
      rc = e;
      continue;
    }
    out->n_sets++;
  }
  if (rc)
    return rc;
  if (total > TP_MAX_GANG_PODS) {
    gc_diags_addf(diags, "%s: spec.podSets: %lld pods in total, more than %d", who,
                  (long long)total, TP_MAX_GANG_PODS);
    return GC_ELIMIT;
  }
  const struct gc_value *mm = gc_value_path(doc, "spec.minMember");
  if (mm) {
    if (mm->type != GC_INT || mm->u.i < 1 || mm->u.i > total) {
      gc_diags_addf(diags, "%s: spec.minMember: must be an integer from 1 to %lld (the pods of "
                    "every pod set)",
                    who, (long long)total);
      return GC_EINVAL;
    }
    out->min_member = mm->u.i;
  }
  char pwhere[600];
  snprintf(pwhere, sizeof(pwhere), "%s: spec.networkTopology", who);
  return policy_from_value(gc_value_path(doc, "spec.networkTopology"), pwhere, &out->policy, diags);
}

int tp_gang_from_gc(struct gc_arena *a, const struct gc_gang *g, struct tp_gang *out,
                    struct gc_diags *diags) {
  if (!a || !g || !out)
    return GC_EUSAGE;
  memset(out, 0, sizeof(*out));
  out->name = gc_arena_printf(a, "%s/%s", g->namespace_ ? g->namespace_ : "default",
                              g->name ? g->name : "?");
  out->sets = gc_arena_alloc(a, (g->n_podsets ? g->n_podsets : 1) * sizeof(*out->sets));
  if (!out->name || !out->sets)
    return GC_ENOMEM;
  int64_t total = 0;
  for (size_t i = 0; i < g->n_podsets; i++) {
    const struct gc_podset *p = &g->podsets[i];
    if (p->binding != GC_BIND_COUNTED)
      continue;
    /* The gang's own count (what minMember sums), not count x replicas:
     * gangcalc follows Trainer, which counts one child Job's pods. */
    int64_t pods = p->count;
    if (pods <= 0)
      continue;
    if (out->n_sets >= TP_MAX_PODSETS || pods > TP_MAX_SET_PODS) {
      gc_diags_addf(diags, "%s: replicatedJob %s: too many pods or pod sets to place", out->name,
                    p->name);
      return GC_ELIMIT;
    }
    struct tp_podset *o = &out->sets[out->n_sets];
    o->name = p->name;
    o->count = pods;
    total += pods;
    char where[600];
    snprintf(where, sizeof(where), "%s: replicatedJob %s: request", out->name, p->name);
    int e = tp_podset_set_requests(a, o, &p->request, where, diags);
    if (e)
      return e;
    out->n_sets++;
  }
  if (!out->n_sets) {
    gc_diags_addf(diags, "%s: the gang has no pods to place", out->name);
    return GC_EINVAL;
  }
  if (total > TP_MAX_GANG_PODS)
    return GC_ELIMIT;
  if (g->min_member > 0 && g->min_member < total)
    out->min_member = g->min_member;
  if (g->topology.set) {
    out->policy.mode =
        g->topology.mode && !strcmp(g->topology.mode, "soft") ? TP_MODE_SOFT : TP_MODE_HARD;
    out->policy.highest_tier_name = g->topology.highest_tier_name;
    if (!out->policy.highest_tier_name) {
      out->policy.has_highest_tier = 1;
      out->policy.highest_tier = g->topology.has_highest_tier ? g->topology.highest_tier : 1;
    }
  }
  return GC_OK;
}

const char *tp_mode_name(enum tp_mode m) {
  return m == TP_MODE_HARD ? "hard" : m == TP_MODE_SOFT ? "soft" : "unset";
}
