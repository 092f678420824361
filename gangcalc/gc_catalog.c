/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_catalog: TrainingRuntime / ClusterTrainingRuntime index (see
 * gc_catalog.h).  A plain array searched linearly: catalogs hold a handful
 * to a few hundred runtimes, and lookups happen once per TrainJob.
 */
#include "gc_catalog.h"
#include "gc_catalog_test.h"

#include <stdlib.h>
#include <string.h>

#include "gc_waves.h"

/* The fields of a pod spec the pod request reads. */
static const char *const PODREQ_FIELDS[4] = {"containers", "initContainers", "resources",
                                             "overhead"};

struct podreq_entry {
  const struct gc_value *fields[4]; /* the runtime pod spec's nodes (NULL if absent) */
  struct gc_podreq req;
};

struct gc_rt_cache {
  struct gc_arena *arena; /* owns this struct and every list below */
  struct podreq_entry *reqs;
  size_t n_reqs;
};

struct entry {
  int cluster;
  const char *ns;   /* borrowed from the document; NULL when it has none */
  const char *name; /* borrowed */
  const struct gc_value *doc;
  char *origin; /* owned */
  struct gc_rt_cache *cache; /* owned; NULL when it could not be built */
};

struct gc_catalog {
  struct entry *e;
  size_t n, cap;
};

struct gc_catalog *gc_catalog_new(void) { return calloc(1, sizeof(struct gc_catalog)); }

void gc_catalog_free(struct gc_catalog *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n; i++) {
    free(c->e[i].origin);
    if (c->e[i].cache)
      gc_arena_free(c->e[i].cache->arena);
  }
  free(c->e);
  free(c);
}

size_t gc_catalog_size(const struct gc_catalog *c) { return c ? c->n : 0; }

int gc_catalog_trainer_kind(const struct gc_value *doc, const char **kind) {
  static const char *const KINDS[] = {"TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"};
  if (!doc || doc->type != GC_MAP)
    return 0;
  const char *api = gc_value_as_str(gc_map_get(doc, "apiVersion"));
  const char *k = gc_value_as_str(gc_map_get(doc, "kind"));
  if (!api || !k || strcmp(api, GC_TRAINER_API) != 0)
    return 0;
  for (size_t i = 0; i < 3; i++) {
    if (strcmp(k, KINDS[i]) == 0) {
      if (kind)
        *kind = KINDS[i];
      return 1;
    }
  }
  return 0;
}

/* Computes the pod request of every replicated job's pod spec of a runtime,
 * quietly (problems are reported when a TrainJob uses the runtime, where
 * the request is then computed again with paths).  Returns NULL when the
 * document has no usable job list or memory runs out: callers then simply
 * compute everything. */
static struct gc_rt_cache *cache_build(const struct gc_value *doc) {
  const struct gc_value *jobs = gc_value_path(doc, "spec.template.spec.replicatedJobs");
  if (!jobs || jobs->type != GC_SEQ || jobs->len == 0 || jobs->len > GC_WAVES_MAX_JOBS)
    return NULL;
  struct gc_arena *a = gc_arena_new(0);
  struct gc_rt_cache *rc = a ? gc_arena_alloc(a, sizeof(*rc)) : NULL;
  if (rc)
    rc->reqs = gc_arena_alloc(a, jobs->len * sizeof(*rc->reqs));
  if (!rc || !rc->reqs) {
    gc_arena_free(a);
    return NULL;
  }
  rc->arena = a;
  for (size_t i = 0; i < jobs->len; i++) {
    const struct gc_value *ps = gc_value_path(jobs->u.items[i], "template.spec.template.spec");
    if (!ps || ps->type != GC_MAP)
      continue;
    struct podreq_entry *e = &rc->reqs[rc->n_reqs];
    if (gc_podreq_compute(a, ps, NULL, &e->req, NULL) != GC_OK)
      continue;
    for (size_t k = 0; k < 4; k++)
      e->fields[k] = gc_map_get(ps, PODREQ_FIELDS[k]);
    rc->n_reqs++;
  }
  return rc;
}

const struct gc_podreq *gc_rt_cache_podreq(const struct gc_rt_cache *cache,
                                           const struct gc_value *podspec) {
  if (!cache || !podspec || podspec->type != GC_MAP)
    return NULL;
  const struct gc_value *f[4];
  for (size_t k = 0; k < 4; k++)
    f[k] = gc_map_get(podspec, PODREQ_FIELDS[k]);
  for (size_t i = 0; i < cache->n_reqs; i++) {
    const struct podreq_entry *e = &cache->reqs[i];
    if (e->fields[0] == f[0] && e->fields[1] == f[1] && e->fields[2] == f[2] &&
        e->fields[3] == f[3])
      return &e->req;
  }
  return NULL;
}

static char *dup_str(const char *s) {
  size_t len = strlen(s);
  char *d = malloc(len + 1);
  if (d)
    memcpy(d, s, len + 1);
  return d;
}

int gc_catalog_add(struct gc_catalog *c, const struct gc_value *doc, const char *origin,
                   struct gc_diags *diags) {
  const char *kind = NULL;
  if (!origin)
    origin = "(input)";
  if (!c)
    return GC_EUSAGE;
  if (!gc_catalog_trainer_kind(doc, &kind) || strcmp(kind, "TrainJob") == 0) {
    gc_diags_addf(diags, "%s: not a %s TrainingRuntime or ClusterTrainingRuntime", origin,
                  GC_TRAINER_API);
    return GC_EINVAL;
  }
  int cluster = strcmp(kind, "ClusterTrainingRuntime") == 0;
  const struct gc_value *meta = gc_map_get(doc, "metadata");
  const struct gc_value *namev = gc_map_get(meta, "name");
  const char *name = gc_value_as_str(namev);
  if (!name || !*name || strlen(name) != namev->len) {
    gc_diags_addf(diags, "%s: %s: metadata.name: required", origin, kind);
    return GC_EINVAL;
  }
  const struct gc_value *nsv = gc_map_get(meta, "namespace");
  const char *ns = NULL;
  if (nsv && nsv->type != GC_NULL) {
    ns = gc_value_as_str(nsv);
    if (!ns) {
      gc_diags_addf(diags, "%s: %s %s: metadata.namespace: must be a string", origin, kind,
                    name);
      return GC_EINVAL;
    }
    if (!*ns)
      ns = NULL;
  }
  char *orig = dup_str(origin);
  if (!orig)
    return GC_ENOMEM;
  for (size_t i = 0; i < c->n; i++) {
    struct entry *e = &c->e[i];
    if (e->cluster != cluster || strcmp(e->name, name) != 0)
      continue;
    if (!cluster && !((!e->ns && !ns) || (e->ns && ns && strcmp(e->ns, ns) == 0)))
      continue;
    free(e->origin);
    /* The derived data belongs to the document being replaced. */
    if (e->cache)
      gc_arena_free(e->cache->arena);
    e->ns = ns;
    e->doc = doc;
    e->origin = orig;
    e->cache = cache_build(doc);
    return GC_OK;
  }
  if (c->n >= GC_CATALOG_MAX) {
    free(orig);
    gc_diags_addf(diags, "%s: more than %d runtimes", origin, GC_CATALOG_MAX);
    return GC_ELIMIT;
  }
  if (c->n == c->cap) {
    size_t ncap = c->cap ? c->cap * 2 : 16;
    struct entry *ne = realloc(c->e, ncap * sizeof(*ne));
    if (!ne) {
      free(orig);
      return GC_ENOMEM;
    }
    c->e = ne;
    c->cap = ncap;
  }
  c->e[c->n++] = (struct entry){cluster, ns, name, doc, orig, cache_build(doc)};
  return GC_OK;
}

const struct gc_value *gc_catalog_find(const struct gc_catalog *c, int cluster, const char *ns,
                                       const char *default_ns, const char *name,
                                       const char **origin) {
  return gc_catalog_find_cached(c, cluster, ns, default_ns, name, origin, NULL);
}

const struct gc_value *gc_catalog_find_cached(const struct gc_catalog *c, int cluster,
                                              const char *ns, const char *default_ns,
                                              const char *name, const char **origin,
                                              const struct gc_rt_cache **cache) {
  if (cache)
    *cache = NULL;
  if (!c || !name)
    return NULL;
  if (!default_ns)
    default_ns = "default";
  for (size_t i = 0; i < c->n; i++) {
    const struct entry *e = &c->e[i];
    if (e->cluster != cluster || strcmp(e->name, name) != 0)
      continue;
    if (!cluster) {
      const char *ens = e->ns ? e->ns : default_ns;
      if (!ns || strcmp(ens, ns) != 0)
        continue;
    }
    if (origin)
      *origin = e->origin;
    if (cache)
      *cache = e->cache;
    return e->doc;
  }
  return NULL;
}
