/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_render: the PodGroup object of a gang (see gc_render.h).  Volcano
 * scheduling.volcano.sh/v1beta1 or coscheduling scheduling.x-k8s.io/v1alpha1,
 * keys in sorted order as kubectl prints them, only fields the CRDs in
 * shared/crds define.
 */
#include "gc_render.h"

#include <string.h>

#include "gc_duration.h"
#include "gc_gang.h"

#define ANN_BOUND "gangbridge.io/bound-replicated-jobs"
#define ANN_GANG "gangbridge.io/gang-replicated-jobs"

/* The tree is built directly: maps get member arrays of the exact size,
 * keys and constant values point at string literals (they outlive every
 * arena), and only the gang's own strings are copied, so the PodGroup stays
 * valid after the gang is freed.  Maps keep spare capacity 0; adding a key
 * later (gc_map_set) reallocates as usual. */

static struct gc_value *node(struct gc_arena *a, enum gc_type t) {
  struct gc_value *v = gc_arena_alloc(a, sizeof(*v));
  if (v)
    v->type = t;
  return v;
}

/* A map with room for cap members. */
static struct gc_value *map_of(struct gc_arena *a, size_t cap) {
  struct gc_value *m = node(a, GC_MAP);
  if (!m || !(m->u.members = gc_arena_alloc(a, cap * sizeof(struct gc_member))))
    return NULL;
  m->cap = cap;
  return m;
}

/* A string node borrowing a literal. */
static struct gc_value *lit(struct gc_arena *a, const char *s, size_t len) {
  struct gc_value *v = node(a, GC_STR);
  if (v) {
    v->u.s = s;
    v->len = len;
  }
  return v;
}
#define LIT(a, s) lit((a), (s), sizeof(s) - 1)

/* A string node with its own copy of s. */
static struct gc_value *str(struct gc_arena *a, const char *s) {
  return s ? gc_value_str(a, s, strlen(s)) : NULL;
}

static struct gc_value *int_node(struct gc_arena *a, int64_t i) {
  struct gc_value *v = node(a, GC_INT);
  if (v)
    v->u.i = i;
  return v;
}

/* Appends key (a literal) = v to m, which has room; fails on a NULL v. */
static int put(struct gc_value *m, const char *key, size_t klen, struct gc_value *v) {
  if (!m || !v || m->len >= m->cap)
    return GC_ENOMEM;
  m->u.members[m->len++] = (struct gc_member){key, klen, v};
  return GC_OK;
}
#define PUT(m, k, v) put((m), (k), sizeof(k) - 1, (v))

/* Comma-separated job names with binding counted (gang_only) or counted and
 * bound (otherwise), in template order. */
static struct gc_value *job_names(struct gc_arena *a, const struct gc_gang *g, int gang_only) {
  size_t len = 0;
  for (size_t i = 0; i < g->n_podsets; i++) {
    enum gc_binding b = g->podsets[i].binding;
    if (b == GC_BIND_COUNTED || (!gang_only && b == GC_BIND_BOUND))
      len += strlen(g->podsets[i].name) + 1;
  }
  struct gc_value *v = node(a, GC_STR);
  char *buf = gc_arena_alloc(a, len + 1);
  if (!v || !buf)
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
  v->u.s = buf;
  v->len = used;
  return v;
}

/* The effective timeout as a Go duration: Volcano's sla plugin reads it from
 * its annotation, and gangbridge from its own. */
static struct gc_value *timeout_text(struct gc_arena *a, const struct gc_gang *g) {
  char buf[GC_DURATION_BUFSZ];
  if (gc_duration_format_seconds(g->timeout.seconds, buf, sizeof(buf)))
    return NULL;
  return str(a, buf);
}

static struct gc_value *metadata(struct gc_arena *a, const struct gc_gang *g) {
  int sla = g->backend == GC_BACKEND_VOLCANO && g->timeout.set;
  struct gc_value *m = map_of(a, g->uid ? 5 : 4),
                  *ann = map_of(a, 2 + (size_t)sla + (size_t)g->timeout.set),
                  *lab = map_of(a, 3);
  if (!m || !ann || !lab)
    return NULL;
  /* The JobSet and TrainJob name labels let `kubectl get podgroup -l ...`
   * find a job's PodGroup the way its pods and JobSet are found. */
  if (PUT(ann, ANN_BOUND, job_names(a, g, 0)) || PUT(ann, ANN_GANG, job_names(a, g, 1)) ||
      /* The effective timeout, unclamped, on the PodGroup gangbridge owns:
       * the service's deadline reads it from the object (coscheduling's
       * scheduleTimeoutSeconds is capped at 900 s; a policy may be longer).
       * Keys go in sorted order: gangbridge.io/... before volcano.sh/... */
      (g->timeout.set && PUT(ann, GC_ANN_SCHEDULE_TIMEOUT, timeout_text(a, g))) ||
      (sla && PUT(ann, GC_VOLCANO_SLA_ANNOTATION, timeout_text(a, g))) ||
      PUT(lab, GC_MANAGED_BY_LABEL, LIT(a, GC_MANAGER_NAME)) ||
      PUT(lab, GC_JOBSET_NAME_LABEL, str(a, g->name)) ||
      PUT(lab, GC_TRAINJOB_NAME_LABEL, str(a, g->name)) || PUT(m, "annotations", ann) ||
      PUT(m, "labels", lab) || PUT(m, "name", str(a, g->name)) ||
      PUT(m, "namespace", str(a, g->namespace_)))
    return NULL;
  if (g->uid) {
    struct gc_value *refs = node(a, GC_SEQ), *ref = map_of(a, 6);
    struct gc_value *t1 = node(a, GC_BOOL), *t2 = node(a, GC_BOOL);
    if (!refs || !ref || !t1 || !t2)
      return NULL;
    t1->u.b = t2->u.b = 1;
    if (PUT(ref, "apiVersion", LIT(a, GC_TRAINER_API)) || PUT(ref, "blockOwnerDeletion", t1) ||
        PUT(ref, "controller", t2) || PUT(ref, "kind", LIT(a, "TrainJob")) ||
        PUT(ref, "name", str(a, g->name)) || PUT(ref, "uid", str(a, g->uid)) ||
        gc_seq_push(a, refs, ref) || PUT(m, "ownerReferences", refs))
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
  struct gc_value *pg = map_of(a, 4), *spec = map_of(a, 5);
  struct gc_value *meta = metadata(a, g);
  struct gc_value *minres = gc_reslist_to_value(a, &g->min_resources);
  if (!pg || !spec || !meta || !minres)
    return GC_ENOMEM;
  if (PUT(spec, "minMember", int_node(a, g->min_member)) || PUT(spec, "minResources", minres))
    return GC_ENOMEM;
  if (volcano) {
    /* Only the runtime's own networkTopology is Volcano's to act on; a
     * policy from gangbridge's annotations or config is gangbridge's
     * placement, and Volcano searching HyperNodes for it as well would
     * undo the point (and a label level means nothing to Volcano). */
    if (g->topology.set && g->topology.in_podgroup) {
      struct gc_value *nt = map_of(a, 2);
      if (!nt)
        return GC_ENOMEM;
      if (g->topology.highest_tier_name) {
        if (PUT(nt, "highestTierName", str(a, g->topology.highest_tier_name)))
          return GC_ENOMEM;
      } else if (PUT(nt, "highestTierAllowed",
                     int_node(a, g->topology.has_highest_tier ? g->topology.highest_tier : 1))) {
        return GC_ENOMEM;
      }
      if (PUT(nt, "mode", str(a, g->topology.mode ? g->topology.mode : "hard")) ||
          PUT(spec, "networkTopology", nt))
        return GC_ENOMEM;
    }
    if (g->priority_class && PUT(spec, "priorityClassName", str(a, g->priority_class)))
      return GC_ENOMEM;
    if (g->queue && PUT(spec, "queue", str(a, g->queue)))
      return GC_ENOMEM;
  } else {
    int32_t t = g->has_timeout ? g->schedule_timeout_seconds : 60;
    if (PUT(spec, "scheduleTimeoutSeconds", int_node(a, t)))
      return GC_ENOMEM;
  }
  if (PUT(pg, "apiVersion", volcano ? LIT(a, "scheduling.volcano.sh/v1beta1")
                                    : LIT(a, "scheduling.x-k8s.io/v1alpha1")) ||
      PUT(pg, "kind", LIT(a, "PodGroup")) || PUT(pg, "metadata", meta) || PUT(pg, "spec", spec))
    return GC_ENOMEM;
  *out = pg;
  return GC_OK;
}
