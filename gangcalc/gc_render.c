/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_render: the PodGroup object of a gang (gc_render_podgroup in
 * gc_gang.h).  Volcano scheduling.volcano.sh/v1beta1 or coscheduling
 * scheduling.x-k8s.io/v1alpha1, keys in sorted order as kubectl prints
 * them, only fields the CRDs in shared/crds define.
 */
#include <string.h>

#include "gc_gang.h"

#define ANN_BOUND "gangbridge.io/bound-replicated-jobs"
#define ANN_GANG "gangbridge.io/gang-replicated-jobs"

/* Comma-separated job names with binding counted (gang_only) or counted and
 * bound (otherwise), in template order. */
static struct gc_value *job_names(struct gc_arena *a, const struct gc_gang *g, int gang_only) {
  size_t len = 0;
  for (size_t i = 0; i < g->n_podsets; i++) {
    enum gc_binding b = g->podsets[i].binding;
    if (b == GC_BIND_COUNTED || (!gang_only && b == GC_BIND_BOUND))
      len += strlen(g->podsets[i].name) + 1;
  }
  char *buf = gc_arena_alloc(a, len + 1);
  if (!buf)
    return NULL;
  size_t used = 0;
  for (size_t i = 0; i < g->n_podsets; i++) {
    enum gc_binding b = g->podsets[i].binding;
    if (!(b == GC_BIND_COUNTED || (!gang_only && b == GC_BIND_BOUND)))
      continue;
    if (used)
      buf[used++] = ',';
    size_t n = strlen(g->podsets[i].name);
    memcpy(buf + used, g->podsets[i].name, n);
    used += n;
  }
  buf[used] = '\0';
  return gc_value_str(a, buf, used);
}

static int set(struct gc_arena *a, struct gc_value *m, const char *k, struct gc_value *v) {
  return v ? gc_map_append(a, m, k, strlen(k), v) : GC_ENOMEM;
}

static int set_str(struct gc_arena *a, struct gc_value *m, const char *k, const char *s) {
  return set(a, m, k, gc_value_strz(a, s));
}

static struct gc_value *metadata(struct gc_arena *a, const struct gc_gang *g) {
  struct gc_value *m = gc_value_map(a), *ann = gc_value_map(a), *lab = gc_value_map(a);
  if (!m || !ann || !lab)
    return NULL;
  if (set(a, ann, ANN_BOUND, job_names(a, g, 0)) || set(a, ann, ANN_GANG, job_names(a, g, 1)) ||
      set_str(a, lab, GC_MANAGED_BY_LABEL, GC_MANAGER_NAME) || set(a, m, "annotations", ann) ||
      set(a, m, "labels", lab) || set_str(a, m, "name", g->name) ||
      set_str(a, m, "namespace", g->namespace_))
    return NULL;
  if (g->uid) {
    struct gc_value *refs = gc_value_seq(a), *ref = gc_value_map(a);
    if (!refs || !ref || set_str(a, ref, "apiVersion", GC_TRAINER_API) ||
        set(a, ref, "blockOwnerDeletion", gc_value_bool(a, 1)) ||
        set(a, ref, "controller", gc_value_bool(a, 1)) || set_str(a, ref, "kind", "TrainJob") ||
        set_str(a, ref, "name", g->name) || set_str(a, ref, "uid", g->uid) ||
        gc_seq_push(a, refs, ref) || set(a, m, "ownerReferences", refs))
      return NULL;
  }
  return m;
}

int gc_render_podgroup(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out) {
  if (!out)
    return GC_EUSAGE;
  *out = NULL;
  if (!g || !a || !g->name || !g->namespace_)
    return GC_EUSAGE;
  /* A gang of no pods has nothing to schedule (and the coscheduling CRD
   * requires minMember >= 1); gc_gang_compute already refuses it. */
  if (g->min_member < 1)
    return GC_EINVAL;
  if (g->backend != GC_BACKEND_VOLCANO && g->backend != GC_BACKEND_COSCHEDULING)
    return GC_EINVAL;
  int volcano = g->backend == GC_BACKEND_VOLCANO;
  struct gc_value *pg = gc_value_map(a), *spec = gc_value_map(a);
  struct gc_value *meta = metadata(a, g);
  struct gc_value *minres = gc_reslist_to_value(a, &g->min_resources);
  if (!pg || !spec || !meta || !minres)
    return GC_ENOMEM;
  if (set(a, spec, "minMember", gc_value_int(a, g->min_member)) ||
      set(a, spec, "minResources", minres))
    return GC_ENOMEM;
  if (volcano) {
    if (g->topology.set) {
      struct gc_value *nt = gc_value_map(a);
      if (!nt)
        return GC_ENOMEM;
      if (g->topology.highest_tier_name) {
        if (set_str(a, nt, "highestTierName", g->topology.highest_tier_name))
          return GC_ENOMEM;
      } else if (set(a, nt, "highestTierAllowed",
                     gc_value_int(a, g->topology.has_highest_tier ? g->topology.highest_tier
                                                                  : 1))) {
        return GC_ENOMEM;
      }
      if (set_str(a, nt, "mode", g->topology.mode ? g->topology.mode : "hard") ||
          set(a, spec, "networkTopology", nt))
        return GC_ENOMEM;
    }
    if (g->priority_class && set_str(a, spec, "priorityClassName", g->priority_class))
      return GC_ENOMEM;
    if (g->queue && set_str(a, spec, "queue", g->queue))
      return GC_ENOMEM;
  } else {
    int32_t t = g->has_timeout ? g->schedule_timeout_seconds : 60;
    if (set(a, spec, "scheduleTimeoutSeconds", gc_value_int(a, t)))
      return GC_ENOMEM;
  }
  if (set_str(a, pg, "apiVersion",
              volcano ? "scheduling.volcano.sh/v1beta1" : "scheduling.x-k8s.io/v1alpha1") ||
      set_str(a, pg, "kind", "PodGroup") || set(a, pg, "metadata", meta) ||
      set(a, pg, "spec", spec))
    return GC_ENOMEM;
  *out = pg;
  return GC_OK;
}
