/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_render: the group object of a gang (see gc_render.h): the metadata
 * every backend shares here, the spec from the backend's descriptor
 * (gc_backend_<name>.c), keys in sorted order as kubectl prints them, only
 * fields the CRDs in shared/crds define.
 */
#include "gc_render.h"

#include <stdio.h>
#include <string.h>

#include "gc_backend.h"
#include "gc_duration.h"
#include "gc_gang.h"
#include "gc_render_int.h"

#define ANN_BOUND "gangbridge.io/bound-replicated-jobs"
#define ANN_GANG "gangbridge.io/gang-replicated-jobs"

/* The tree is built with gc_render_int's builders (exact-size maps,
 * borrowed literal keys); adding a key later (gc_map_set) reallocates as
 * usual. */
#define node gc_rv_node
#define map_of gc_rv_map
#define LIT GC_RV_LIT
#define str gc_rv_str
#define PUT GC_RV_PUT

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

/* The effective timeout as a Go duration: gangbridge reads it from its own
 * annotation, a backend's scheduler may read it from one of its own. */
static struct gc_value *timeout_text(struct gc_arena *a, const struct gc_gang *g) {
  char buf[GC_DURATION_BUFSZ];
  if (gc_duration_format_seconds(g->timeout.seconds, buf, sizeof(buf)))
    return NULL;
  return str(a, buf);
}

/* Sorts the members of map m by key (a handful: insertion sort), so that a
 * backend's annotation lands where kubectl prints it. */
static void sort_keys(struct gc_value *m) {
  for (size_t i = 1; i < m->len; i++) {
    struct gc_member x = m->u.members[i];
    size_t j = i;
    for (; j > 0 && strcmp(m->u.members[j - 1].key, x.key) > 0; j--)
      m->u.members[j] = m->u.members[j - 1];
    m->u.members[j] = x;
  }
}

static struct gc_value *metadata(struct gc_arena *a, const struct gc_gang *g,
                                 struct gc_value *name) {
  /* The annotation the backend's scheduler reads the timeout from. */
  const char *bt = g->timeout.set ? g->backend->timeout.annotations[0] : NULL;
  int split = (g->backend->caps & GC_BCAP_SUBGROUPS) != 0;
  char count[16];
  snprintf(count, sizeof(count), "%d", (int)g->min_member);
  struct gc_value *m = map_of(a, g->uid ? 5 : 4),
                  *ann = map_of(a, 2 + (size_t)(bt != NULL) + (size_t)g->timeout.set +
                                       (size_t)split),
                  *lab = map_of(a, 3);
  if (!m || !ann || !lab)
    return NULL;
  /* The JobSet and TrainJob name labels let `kubectl get podgroup -l ...`
   * find a job's PodGroup the way its pods and JobSet are found. */
  if (PUT(ann, ANN_BOUND, job_names(a, g, 0)) || PUT(ann, ANN_GANG, job_names(a, g, 1)) ||
      /* The effective timeout, unclamped, on the PodGroup gangbridge owns:
       * the service's deadline reads it from the object (a backend's own
       * timeout field may be capped below the policy). */
      (g->timeout.set && PUT(ann, GC_ANN_SCHEDULE_TIMEOUT, timeout_text(a, g))) ||
      (bt && gc_rv_put(ann, bt, strlen(bt), timeout_text(a, g))) ||
      /* The member count, where the spec splits it over sub-groups. */
      (split && PUT(ann, GC_ANN_MIN_MEMBER, str(a, count))) ||
      PUT(lab, GC_MANAGED_BY_LABEL, LIT(a, GC_MANAGER_NAME)) ||
      PUT(lab, GC_JOBSET_NAME_LABEL, str(a, g->name)) ||
      PUT(lab, GC_TRAINJOB_NAME_LABEL, str(a, g->name)) || PUT(m, "annotations", ann) ||
      PUT(m, "labels", lab) || PUT(m, "name", name) || PUT(m, "namespace", str(a, g->namespace_)))
    return NULL;
  sort_keys(ann);
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

/* The apiVersion g's objects are written at: its backend's, or the
 * version the gang chose of a backend with several. */
static const char *api_version(const struct gc_gang *g) {
  return g->backend_version ? g->backend_version->api_version : g->backend->api_version;
}

/* "<name><suffix>" in a. */
static struct gc_value *suffixed(struct gc_arena *a, const char *name, const char *suffix) {
  size_t n = strlen(name), k = suffix ? strlen(suffix) : 0;
  char *buf = gc_arena_alloc(a, n + k + 1);
  struct gc_value *v = node(a, GC_STR);
  if (!buf || !v)
    return NULL;
  memcpy(buf, name, n);
  if (k)
    memcpy(buf + n, suffix, k);
  buf[n + k] = '\0';
  v->u.s = buf;
  v->len = n + k;
  return v;
}

int gc_render_podgroup(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out) {
  if (!out)
    return GC_EUSAGE;
  *out = NULL;
  if (!g || !a || !g->name || !g->namespace_)
    return GC_EUSAGE;
  /* A gang of no pods has nothing to schedule (and some CRDs require
   * minMember >= 1); gc_gang_compute already refuses it. */
  if (g->min_member < 1)
    return GC_EINVAL;
  const struct gc_backend *be = g->backend;
  if (gc_backend_index(be) < 0 || !be->render_spec)
    return GC_EINVAL;
  struct gc_value *pg = map_of(a, 4), *spec = NULL;
  struct gc_value *meta = metadata(a, g, str(a, g->name));
  if (!pg || !meta)
    return GC_ENOMEM;
  int rc = be->render_spec(g, a, &spec);
  if (rc)
    return rc;
  const char *api = api_version(g);
  if (PUT(pg, "apiVersion", gc_rv_lit(a, api, strlen(api))) ||
      PUT(pg, "kind", gc_rv_lit(a, be->kind, strlen(be->kind))) || PUT(pg, "metadata", meta) ||
      PUT(pg, "spec", spec))
    return GC_ENOMEM;
  *out = pg;
  return GC_OK;
}

int gc_render_objects(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out,
                      size_t cap, size_t *n) {
  if (!n || !out)
    return GC_EUSAGE;
  *n = 0;
  if (g && g->ganged_by)
    return GC_OK;
  if (cap < 1)
    return GC_ELIMIT;
  int rc = gc_render_podgroup(g, a, &out[0]);
  if (rc)
    return rc;
  const struct gc_backend *be = g->backend;
  struct gc_backend_object more[GC_RENDER_MAX_OBJECTS - 1];
  size_t k = 0;
  if (be->render_more && (rc = be->render_more(g, a, more, sizeof(more) / sizeof(more[0]), &k)))
    return rc;
  if (k + 1 > cap)
    return GC_ELIMIT;
  const char *api = api_version(g);
  for (size_t i = 0; i < k; i++) {
    struct gc_value *o = map_of(a, 4),
                    *meta = metadata(a, g, suffixed(a, g->name, more[i].name_suffix));
    if (!o || !meta || PUT(o, "apiVersion", gc_rv_lit(a, api, strlen(api))) ||
        PUT(o, "kind", gc_rv_lit(a, more[i].kind, strlen(more[i].kind))) ||
        PUT(o, "metadata", meta) || PUT(o, "spec", more[i].spec))
      return GC_ENOMEM;
    out[1 + i] = o;
  }
  *n = 1 + k;
  return GC_OK;
}

const char *gc_render_topology_key(const struct gc_gang *g) {
  if (!g || !g->backend)
    return NULL;
  const struct gc_backend *be = g->backend;
  unsigned caps = g->backend_version ? g->backend_version->caps : be->caps;
  const struct gc_topology_policy *tp = &g->topology;
  if (!(caps & GC_BCAP_NETWORK_TOPOLOGY) || be->runtime_topology || !tp->set)
    return NULL;
  if ((tp->mode && strcmp(tp->mode, "hard") != 0) || tp->level < 1 || !tp->highest_tier_name)
    return NULL;
  return tp->highest_tier_name;
}
