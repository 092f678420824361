/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_podreq: the Kubernetes pod request rule (see gc_podreq.h).
 */
#include "gc_podreq.h"

#include <string.h>

/* Bound on containers per list; Kubernetes itself has no hard cap, but no
 * real pod comes near it and it keeps hostile input linear and small. */
#define PODREQ_MAX_CONTAINERS 1000

static int type_error(struct gc_diags *d, const char *where, const char *field,
                      const char *want, const struct gc_value *got) {
  gc_diags_addf(d, "%s.%s: must be %s, not %s", where, field, want, gc_type_name(got->type));
  return GC_EINVAL;
}

/* Reads one container's (or the pod's) `resources` node into its effective
 * requests (requests, plus limits for resources requests do not name) and
 * the limits-only part.  `where` is the path of the resources node.  Used by
 * gc_podreq_compute and by tests. */
static int gc_podreq_effective(struct gc_arena *a, const struct gc_value *resources, const char *where,
                        struct gc_reslist *requests, struct gc_reslist *limits_only,
                        struct gc_diags *diags) {
  struct gc_reslist req = GC_RESLIST_INIT, lim = GC_RESLIST_INIT, only = GC_RESLIST_INIT;
  int rc = GC_OK;
  if (!resources || resources->type == GC_NULL)
    goto out;
  if (resources->type != GC_MAP) {
    gc_diags_addf(diags, "%s: must be an object, not %s", where,
                  gc_type_name(resources->type));
    return GC_EINVAL;
  }
  const struct gc_value *r = gc_map_get(resources, "requests");
  const struct gc_value *l = gc_map_get(resources, "limits");
  const char *path;
  if (r && r->type != GC_NULL) {
    if (r->type != GC_MAP) {
      rc = type_error(diags, where, "requests", "an object", r);
    } else {
      path = diags ? gc_arena_printf(a, "%s.requests", where) : "";
      if (!path)
        return GC_ENOMEM;
      int e = gc_reslist_from_value(a, r, path, &req, diags);
      if (e)
        rc = e;
    }
  }
  if (l && l->type != GC_NULL) {
    if (l->type != GC_MAP) {
      rc = type_error(diags, where, "limits", "an object", l);
    } else {
      path = diags ? gc_arena_printf(a, "%s.limits", where) : "";
      if (!path)
        return GC_ENOMEM;
      int e = gc_reslist_from_value(a, l, path, &lim, diags);
      if (e)
        rc = e;
    }
  }
  if (rc)
    return rc;
  for (size_t i = 0; i < lim.n; i++) {
    if (gc_reslist_get(&req, lim.items[i].name))
      continue;
    if (gc_reslist_set(a, &req, lim.items[i].name, &lim.items[i].q) ||
        gc_reslist_set(a, &only, lim.items[i].name, &lim.items[i].q))
      return GC_ENOMEM;
  }
out:
  *requests = req;
  *limits_only = only;
  return GC_OK;
}

/* Records one limits-only note per resource of `only`. */
static int add_notes(struct gc_arena *a, struct gc_podreq *out, const char *container,
                     const struct gc_reslist *only) {
  if (!only->n)
    return GC_OK;
  struct gc_podreq_note *n = gc_arena_alloc(a, (out->n_notes + only->n) * sizeof(*n));
  if (!n)
    return GC_ENOMEM;
  if (out->n_notes)
    memcpy(n, out->notes, out->n_notes * sizeof(*n));
  for (size_t i = 0; i < only->n; i++) {
    n[out->n_notes + i].container = container;
    n[out->n_notes + i].resource = only->items[i].name;
  }
  out->notes = n;
  out->n_notes += only->n;
  return gc_reslist_add(a, &out->limits_only, only);
}

/* Pod-level resources may only replace these (IsSupportedPodLevelResource). */
static int pod_level_supported(const char *name) {
  return strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
         strncmp(name, "hugepages-", 10) == 0;
}

/* Reads one container list.  For init containers, applies the sidecar and
 * init-max rules onto *sum; for regular containers adds to *sum. */
static int walk_containers(struct gc_arena *a, const struct gc_value *list, const char *where,
                           const char *field, int init, struct gc_reslist *sum,
                           struct gc_podreq *out, struct gc_diags *diags) {
  struct gc_reslist sidecars = GC_RESLIST_INIT, init_max = GC_RESLIST_INIT;
  int rc = GC_OK;
  if (!list || list->type == GC_NULL)
    return GC_OK;
  if (list->type != GC_SEQ)
    return type_error(diags, where, field, "an array", list);
  if (list->len > PODREQ_MAX_CONTAINERS) {
    gc_diags_addf(diags, "%s.%s: more than %d containers", where, field,
                  PODREQ_MAX_CONTAINERS);
    return GC_ELIMIT;
  }
  for (size_t i = 0; i < list->len; i++) {
    const struct gc_value *c = list->u.items[i];
    if (c->type != GC_MAP) {
      gc_diags_addf(diags, "%s.%s[%zu]: must be an object, not %s", where, field, i,
                    gc_type_name(c->type));
      rc = GC_EINVAL;
      continue;
    }
    const char *name = gc_value_as_str(gc_map_get(c, "name"));
    const char *rpath = diags ? gc_arena_printf(a, "%s.%s[%zu].resources", where, field, i) : "";
    if (!rpath)
      return GC_ENOMEM;
    struct gc_reslist req, only;
    int e = gc_podreq_effective(a, gc_map_get(c, "resources"), rpath, &req, &only, diags);
    if (e == GC_ENOMEM)
      return e;
    if (e) {
      rc = e;
      continue;
    }
    if (rc)
      continue; /* keep checking, but sums no longer matter */
    if ((e = add_notes(a, out, name ? name : "(unnamed)", &only)))
      return e;
    if (!init) {
      if ((e = gc_reslist_add(a, sum, &req)))
        return e;
      continue;
    }
    const char *policy = gc_value_as_str(gc_map_get(c, "restartPolicy"));
    struct gc_reslist use = GC_RESLIST_INIT;
    if (policy && strcmp(policy, "Always") == 0) {
      /* A native sidecar keeps running: it adds to the pod's sum and to the
       * need of every init container started after it. */
      if ((e = gc_reslist_add(a, sum, &req)) || (e = gc_reslist_add(a, &sidecars, &req)) ||
          (e = gc_reslist_copy(a, &use, &sidecars)))
        return e;
    } else {
      if ((e = gc_reslist_copy(a, &use, &req)) || (e = gc_reslist_add(a, &use, &sidecars)))
        return e;
    }
    if ((e = gc_reslist_max(a, &init_max, &use)))
      return e;
  }
  if (rc)
    return rc;
  if (init)
    return gc_reslist_max(a, sum, &init_max);
  return GC_OK;
}

int gc_podreq_compute(struct gc_arena *a, const struct gc_value *podspec, const char *where,
                      struct gc_podreq *out, struct gc_diags *diags) {
  struct gc_reslist sum = GC_RESLIST_INIT;
  int rc = GC_OK, e;
  memset(out, 0, sizeof(*out));
  if (!podspec || podspec->type == GC_NULL)
    return GC_OK;
  if (podspec->type != GC_MAP) {
    gc_diags_addf(diags, "%s: must be an object, not %s", where, gc_type_name(podspec->type));
    return GC_EINVAL;
  }
  e = walk_containers(a, gc_map_get(podspec, "containers"), where, "containers", 0, &sum, out,
                      diags);
  if (e == GC_ENOMEM || e == GC_ERANGE)
    return e;
  if (e)
    rc = e;
  e = walk_containers(a, gc_map_get(podspec, "initContainers"), where, "initContainers", 1,
                      &sum, out, diags);
  if (e == GC_ENOMEM || e == GC_ERANGE)
    return e;
  if (e)
    rc = e;

  const struct gc_value *podres = gc_map_get(podspec, "resources");
  if (podres && podres->type != GC_NULL) {
    const char *rpath = diags ? gc_arena_printf(a, "%s.resources", where) : "";
    struct gc_reslist req, only, only_supported = GC_RESLIST_INIT;
    if (!rpath)
      return GC_ENOMEM;
    e = gc_podreq_effective(a, podres, rpath, &req, &only, diags);
    if (e == GC_ENOMEM)
      return e;
    if (e) {
      rc = e;
    } else if (!rc) {
      for (size_t i = 0; i < req.n; i++) {
        if (!pod_level_supported(req.items[i].name))
          continue;
        if (gc_reslist_set(a, &sum, req.items[i].name, &req.items[i].q))
          return GC_ENOMEM;
        const struct gc_quantity *q = gc_reslist_get(&only, req.items[i].name);
        if (q && gc_reslist_set(a, &only_supported, req.items[i].name, q))
          return GC_ENOMEM;
      }
      if ((e = add_notes(a, out, "(pod)", &only_supported)))
        return e;
    }
  }

  const struct gc_value *ovh = gc_map_get(podspec, "overhead");
  if (ovh && ovh->type != GC_NULL) {
    struct gc_reslist o = GC_RESLIST_INIT;
    const char *opath = diags ? gc_arena_printf(a, "%s.overhead", where) : "";
    if (!opath)
      return GC_ENOMEM;
    if (ovh->type != GC_MAP) {
      gc_diags_addf(diags, "%s: must be an object, not %s", opath, gc_type_name(ovh->type));
      rc = GC_EINVAL;
    } else if ((e = gc_reslist_from_value(a, ovh, opath, &o, diags))) {
      rc = e;
    } else if (!rc && (e = gc_reslist_add(a, &sum, &o))) {
      return e;
    }
  }
  if (rc)
    return rc;
  out->request = sum;
  return GC_OK;
}
