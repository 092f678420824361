/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_service: the gangbridge gRPC handlers.  Every reply is built in the
 * call's arena and packed by gb_rpc_server; every library object (docsets,
 * catalogs, gangs) is freed before the handler returns.
 */
#include "gb_rpc_service.h"
#include "gb_rpc_service_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gangbridge/v1/calculator.pb-c.h"
#include "gangbridge/v1/placement.pb-c.h"
#include "gb_emit.h"
#include "gb_manifest.h"
#include "gb_place_json.h"
#include "gc_gang.h"
#include "grpc/health/v1/health.pb-c.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

#define EVALUATOR_POOL 64

/* Calculate's reply cache (see memo_get). */
#define MEMO_BUCKETS 4096
#define MEMO_MAX_ENTRIES 4096
#define MEMO_MAX_BYTES ((size_t)64 << 20)
#define MEMO_MAX_ENTRY ((size_t)1 << 20)

struct memo_entry {
  struct memo_entry *next;             /* in its bucket */
  struct memo_entry *newer, *older;    /* LRU list */
  uint64_t hash;
  size_t key_len, val_len;
  uint8_t *key, *val;                  /* one allocation: the entry, key, val */
};

/* Calculate is a pure function of its request bytes (it reads no server
 * state), so replies are kept by request bytes: a scheduler asking again
 * about the same TrainJob is answered without parsing.  Bounded by entry
 * count and bytes, least recently used first out; full keys are compared,
 * so a hash collision can only cost a miss. */
struct memo {
  pthread_mutex_t mu;
  struct memo_entry *buckets[MEMO_BUCKETS];
  struct memo_entry *newest, *oldest;
  size_t n, bytes;
};


/* Static empty string for proto3 string fields that have no value. */
static char empty[] = "";

static char *str_or_empty(const char *s) {
  return s ? (char *)s : empty;
}

/* ------------------------------------------------------------ document cache */

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    h = (h ^ v) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
    p += 8;
    n -= 8;
  }
  uint64_t v = 0;
  memcpy(&v, p, n);
  h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 29);
}

/* Parsed manifests kept by their bytes.  The same runtime documents arrive
 * with many TrainJobs, and parsing YAML costs more than everything else a
 * Calculate does, so each manifest entry that parsed cleanly is kept as an
 * immutable docset, shared read-only by every call that sends the same
 * bytes.  Entries are reference-counted: eviction (least recently used,
 * bounded by count and bytes) drops the cache's reference, the last holder
 * frees the docset. */
#define DOC_BUCKETS 1024
#define DOC_MAX_ENTRIES 1024
#define DOC_MAX_BYTES ((size_t)64 << 20)
#define DOC_MAX_ENTRY ((size_t)1 << 20)

struct doc_entry {
  struct doc_entry *next, *newer, *older;
  uint64_t hash;
  size_t key_len, cost;
  uint8_t *key; /* malloc'd when the entry is offered to the cache */
  struct gb_docset *ds;
  int refs;   /* holders, the cache included while cached */
  int cached; /* in the table and the LRU list */
};

struct doc_cache {
  pthread_mutex_t mu;
  struct doc_entry *buckets[DOC_BUCKETS];
  struct doc_entry *newest, *oldest;
  size_t n, bytes;
};

static void doc_entry_free(struct doc_entry *e) {
  gb_docset_free(e->ds);
  free(e->key);
  free(e);
}

static void doc_lru_unlink(struct doc_cache *c, struct doc_entry *e) {
  if (e->newer)
    e->newer->older = e->older;
  else
    c->newest = e->older;
  if (e->older)
    e->older->newer = e->newer;
  else
    c->oldest = e->newer;
  e->newer = e->older = NULL;
}

static void doc_lru_push(struct doc_cache *c, struct doc_entry *e) {
  e->older = c->newest;
  e->newer = NULL;
  if (c->newest)
    c->newest->newer = e;
  c->newest = e;
  if (!c->oldest)
    c->oldest = e;
}

/* Takes e out of the cache (lock held); frees it when nobody holds it. */
static void doc_evict(struct doc_cache *c, struct doc_entry *e) {
  struct doc_entry **pp = &c->buckets[e->hash % DOC_BUCKETS];
  while (*pp != e)
    pp = &(*pp)->next;
  *pp = e->next;
  doc_lru_unlink(c, e);
  c->n--;
  c->bytes -= e->cost;
  e->cached = 0;
  if (--e->refs == 0)
    doc_entry_free(e);
}

static void doc_release(struct doc_cache *c, struct doc_entry *e) {
  if (!c) {
    doc_entry_free(e);
    return;
  }
  pthread_mutex_lock(&c->mu);
  int last = --e->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (last)
    doc_entry_free(e);
}

/* A held reference to the entry for these bytes, or NULL. */
static struct doc_entry *doc_get(struct doc_cache *c, uint64_t h, const uint8_t *key,
                                 size_t len) {
  struct doc_entry *found = NULL;
  pthread_mutex_lock(&c->mu);
  for (struct doc_entry *e = c->buckets[h % DOC_BUCKETS]; e; e = e->next)
    if (e->hash == h && e->key_len == len && !memcmp(e->key, key, len)) {
      found = e;
      e->refs++;
      doc_lru_unlink(c, e);
      doc_lru_push(c, e);
      break;
    }
  pthread_mutex_unlock(&c->mu);
  return found;
}

/* Offers e (refs == 1, held by the caller, parsed from `bytes`) to the
 * cache; it stays held by the caller either way.  Skipped when an equal
 * entry exists or memory is short. */
static void doc_put(struct doc_cache *c, struct doc_entry *e, const uint8_t *bytes) {
  if (e->cost > DOC_MAX_ENTRY || e->key)
    return;
  e->key = malloc(e->key_len ? e->key_len : 1);
  if (!e->key)
    return;
  if (e->key_len)
    memcpy(e->key, bytes, e->key_len);
  pthread_mutex_lock(&c->mu);
  for (struct doc_entry *o = c->buckets[e->hash % DOC_BUCKETS]; o; o = o->next)
    if (o->hash == e->hash && o->key_len == e->key_len && !memcmp(o->key, e->key, e->key_len)) {
      pthread_mutex_unlock(&c->mu);
      return;
    }
  e->next = c->buckets[e->hash % DOC_BUCKETS];
  c->buckets[e->hash % DOC_BUCKETS] = e;
  doc_lru_push(c, e);
  e->cached = 1;
  e->refs++;
  c->n++;
  c->bytes += e->cost;
  while (c->oldest && (c->n > DOC_MAX_ENTRIES || c->bytes > DOC_MAX_BYTES))
    doc_evict(c, c->oldest);
  pthread_mutex_unlock(&c->mu);
}

static void doc_cache_destroy(struct doc_cache *c) {
  pthread_mutex_lock(&c->mu);
  while (c->oldest)
    doc_evict(c, c->oldest);
  pthread_mutex_unlock(&c->mu);
  pthread_mutex_destroy(&c->mu);
}

struct gb_rpc_service {
  atomic_int serving;
  atomic_int allow_writes; /* ReplaceSnapshot and UpdateNodes; off by default */
  /* The live snapshot: evaluations hold the read lock, changes the write
   * lock.  NULL until the first replace. */
  pthread_rwlock_t lock;
  struct tp_snapshot *snap;
  uint64_t generation;
  /* serve's live cluster model, when set: Evaluate without inline
   * documents and GetSnapshotStatus read it instead of snap. */
  gb_rpc_snapshot_source_fn source;
  void *source_ctx;
  struct memo memo;
  struct doc_cache docs;
  /* Idle evaluators (their scratch buffers are reused across calls). */
  pthread_mutex_t pool_mu;
  struct tp_evaluator *pool[EVALUATOR_POOL];
  int n_pool;
};

/* ------------------------------------------------------------ documents */

/* The documents of a repeated bytes field: one parsed docset per entry,
 * shared through the document cache when one is given. */
struct doclist {
  struct doc_cache *cache;
  struct doc_entry **held; /* one per field entry, malloc'd */
  size_t n_held;
  const struct gc_value **docs; /* every document in order, malloc'd */
  const char **origins;         /* "field[i]:line:col", in the call arena */
  size_t n;
};

static void doclist_free(struct doclist *l) {
  for (size_t i = 0; i < l->n_held; i++)
    doc_release(l->cache, l->held[i]);
  free(l->held);
  free(l->docs);
  free(l->origins);
  memset(l, 0, sizeof(*l));
}

/* Parses one entry into a new, unshared doc entry (refs 1). */
static int doc_parse(const char *name, const ProtobufCBinaryData *b, uint64_t h,
                     const struct gb_limits *lim, struct doc_entry **out,
                     struct gc_diags *diags) {
  *out = NULL;
  struct doc_entry *e = calloc(1, sizeof(*e));
  if (!e)
    return GC_ENOMEM;
  e->ds = gb_docset_new(lim);
  if (!e->ds) {
    free(e);
    return GC_ENOMEM;
  }
  e->refs = 1;
  e->hash = h;
  e->key_len = b->len;
  size_t errors = diags->errors;
  int rc = gb_manifest_load_buffer(e->ds, name, (const char *)b->data, b->len, diags);
  if (!rc && diags->errors > errors)
    rc = GC_EINVAL;
  e->cost = b->len + gc_arena_used(e->ds->arena) + sizeof(*e);
  *out = e;
  return rc;
}

/* 1 if the entry's documents are worth keeping: runtimes and the like come
 * again with every TrainJob, whereas a TrainJob (or compact Gang) entry is
 * usually new, and a repeated request is answered by the reply cache. */
static int doc_shareable(const struct gb_docset *ds) {
  for (size_t i = 0; i < ds->n; i++) {
    const char *kind = NULL;
    if (tp_gang_is_doc(ds->docs[i].root) ||
        (gc_catalog_trainer_kind(ds->docs[i].root, &kind) && !strcmp(kind, "TrainJob")))
      return 0;
  }
  return 1;
}

/* Loads n byte buffers named "<field>[i]" into l, through cache (may be
 * NULL).  Returns a gb_rpc_code and fails ctx with every problem. */
static int doclist_load(struct gb_rpc_ctx *ctx, struct doc_cache *cache, const char *field,
                        const ProtobufCBinaryData *bufs, size_t n, struct doclist *l,
                        struct gc_diags *diags) {
  memset(l, 0, sizeof(*l));
  l->cache = cache;
  if (n > GB_RPC_MAX_MANIFESTS)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "%s: %zu entries, at most %d allowed",
                              field, n, GB_RPC_MAX_MANIFESTS);
  struct gb_limits lim = {0};
  lim.max_source_bytes = ctx->max_message_bytes;
  lim.max_total_bytes = ctx->max_message_bytes;
  lim.max_docs = GB_RPC_MAX_DOCS;
  l->held = calloc(n ? n : 1, sizeof(*l->held));
  if (!l->held)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  int rc = 0;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t h = cache ? hash_bytes(bufs[i].data, bufs[i].len) : 0;
    struct doc_entry *e = cache ? doc_get(cache, h, bufs[i].data, bufs[i].len) : NULL;
    if (!e) {
      char name[64];
      snprintf(name, sizeof(name), "%s[%zu]", field, i);
      int r = doc_parse(name, &bufs[i], h, &lim, &e, diags);
      if (r && !rc)
        rc = r;
      if (!r && cache && doc_shareable(e->ds))
        doc_put(cache, e, bufs[i].data);
    }
    if (e) {
      l->held[l->n_held++] = e;
      total += e->ds->n;
    }
  }
  if (rc || diags->errors)
    return gb_rpc_server_fail_diags(ctx, gb_rpc_code_of(rc, GB_RPC_INVALID_ARGUMENT), NULL, diags);
  if (total > GB_RPC_MAX_DOCS)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "%s: %zu documents, at most %d allowed",
                              field, total, GB_RPC_MAX_DOCS);
  l->docs = calloc(total ? total : 1, sizeof(*l->docs));
  l->origins = calloc(total ? total : 1, sizeof(*l->origins));
  if (!l->docs || !l->origins)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < l->n_held; i++) {
    const struct gb_docset *ds = l->held[i]->ds;
    for (size_t k = 0; k < ds->n; k++) {
      const struct gb_doc *d = &ds->docs[k];
      l->docs[l->n] = d->root;
      /* Named by this request's index: a cached entry may have come at
       * another position in an earlier request. */
      l->origins[l->n] = gc_arena_printf(ctx->arena, "%s[%zu]:%u:%u", field, i, d->line, d->col);
      if (!l->origins[l->n])
        return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
      l->n++;
    }
  }
  return GB_RPC_OK;
}

/* ------------------------------------------------------------ the gang */

/* Everything one gang computation holds. */
struct calc {
  struct doclist docs;
  struct gc_catalog *catalog;
  struct gc_gang *gang;
  struct gc_diags diags;
};

static void calc_free(struct calc *c) {
  gc_gang_free(c->gang);
  gc_catalog_free(c->catalog);
  doclist_free(&c->docs);
  gc_diags_destroy(&c->diags);
}

/* 1 if TrainJob doc is "ns/name" (namespace defaulted as the gang does). */
static int trainjob_matches(const struct gc_value *doc, const char *want, const char *def_ns) {
  const char *slash = strchr(want, '/');
  const char *ns = gc_value_as_str(gc_value_path(doc, "metadata.namespace"));
  const char *name = gc_value_as_str(gc_value_path(doc, "metadata.name"));
  if (!ns || !*ns)
    ns = def_ns && *def_ns ? def_ns : "default";
  if (!name)
    return 0;
  if (!slash)
    return !strcmp(name, want) && !strcmp(ns, def_ns && *def_ns ? def_ns : "default");
  return strlen(ns) == (size_t)(slash - want) && !strncmp(ns, want, (size_t)(slash - want)) &&
         !strcmp(name, slash + 1);
}

/* Computes the gang a CalculateRequest describes into c (zeroed by the
 * caller; free with calc_free).  `field` prefixes field paths. */
static int calc_run(struct gb_rpc_ctx *ctx, struct doc_cache *cache,
                    const Gangbridge__V1__CalculateRequest *req, const char *field,
                    struct calc *c) {
  gc_diags_init(&c->diags);
  char path[64];
  snprintf(path, sizeof(path), "%smanifests", field);
  if (req->n_manifests == 0)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "%s: give the TrainJob and its runtime as JSON or YAML documents",
                              path);
  struct gc_options opts;
  memset(&opts, 0, sizeof(opts));
  /* The wire value of each backend is its descriptor's (gc_backend.proto). */
  if (req->backend != GANGBRIDGE__V1__BACKEND__BACKEND_UNSPECIFIED &&
      !(opts.backend = gc_backend_by_proto((int)req->backend)))
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "%sbackend: unknown value %d", field,
                              (int)req->backend);
  switch (req->gang_scope) {
  case GANGBRIDGE__V1__GANG_SCOPE__GANG_SCOPE_WAVE: opts.scope = GC_SCOPE_WAVE; break;
  case GANGBRIDGE__V1__GANG_SCOPE__GANG_SCOPE_ALL: opts.scope = GC_SCOPE_ALL; break;
  default:
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "%sgang_scope: unknown value %d", field,
                              (int)req->gang_scope);
  }
  opts.default_namespace = req->default_namespace[0] ? req->default_namespace : NULL;

  int code =
      doclist_load(ctx, cache, path, req->manifests, req->n_manifests, &c->docs, &c->diags);
  if (code)
    return code;
  c->catalog = gc_catalog_new();
  if (!c->catalog)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  const struct gc_value *job = NULL;
  size_t n_jobs = 0, n_match = 0;
  for (size_t i = 0; i < c->docs.n; i++) {
    const char *kind = NULL;
    if (!gc_catalog_trainer_kind(c->docs.docs[i], &kind))
      continue;
    if (strcmp(kind, "TrainJob") != 0) {
      gc_catalog_add(c->catalog, c->docs.docs[i], c->docs.origins[i], &c->diags);
      continue;
    }
    n_jobs++;
    if (req->trainjob[0] &&
        !trainjob_matches(c->docs.docs[i], req->trainjob, opts.default_namespace))
      continue;
    n_match++;
    job = c->docs.docs[i];
  }
  if (c->diags.errors)
    return gb_rpc_server_fail_diags(ctx, GB_RPC_INVALID_ARGUMENT, NULL, &c->diags);
  if (n_jobs == 0)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "%s: no TrainJob (%s) in the documents",
                              path, GC_TRAINER_API);
  if (req->trainjob[0] && n_match == 0)
    return gb_rpc_server_fail(ctx, GB_RPC_NOT_FOUND, "%strainjob: no TrainJob %s in %s", field,
                              req->trainjob, path);
  if (n_match > 1)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "%s: %zu TrainJobs; name one with %strainjob (\"namespace/name\")",
                              path, n_match, field);
  if (gb_rpc_ctx_ms_left(ctx) <= 0)
    return gb_rpc_server_fail(ctx, GB_RPC_DEADLINE_EXCEEDED, "deadline passed");
  int rc = gc_gang_compute(job, c->catalog, &opts, &c->gang, &c->diags);
  if (rc)
    return gb_rpc_server_fail_diags(ctx, gb_rpc_code_of(rc, GB_RPC_INVALID_ARGUMENT), NULL,
                                    &c->diags);
  return GB_RPC_OK;
}

/* Map entries of the three generated map types share one layout: base,
 * key, value.  One macro builds each kind from a resource list. */
#define RESLIST_TO_MAP(fn, T, INIT)                                                          \
  static int fn(struct gc_arena *a, const struct gc_reslist *l, T ***out, size_t *n) {      \
    *out = NULL;                                                                              \
    *n = 0;                                                                                   \
    if (!l->n)                                                                                \
      return 0;                                                                               \
    T **items = gc_arena_alloc(a, l->n * sizeof(*items));                                     \
    if (!items)                                                                               \
      return GC_ENOMEM;                                                                       \
    for (size_t i = 0; i < l->n; i++) {                                                       \
      T *e = gc_arena_alloc(a, sizeof(*e));                                                   \
      char buf[GC_QUANTITY_BUFSZ];                                                            \
      if (!e || gc_quantity_format(&l->items[i].q, buf, sizeof(buf)))                         \
        return GC_ENOMEM;                                                                     \
      T init = INIT;                                                                          \
      *e = init;                                                                              \
      e->key = (char *)l->items[i].name;                                                      \
      e->value = gc_arena_strdup(a, buf);                                                     \
      if (!e->value)                                                                          \
        return GC_ENOMEM;                                                                     \
      items[i] = e;                                                                           \
    }                                                                                         \
    *out = items;                                                                             \
    *n = l->n;                                                                                \
    return 0;                                                                                 \
  }

RESLIST_TO_MAP(min_resources_map, Gangbridge__V1__Gang__MinResourcesEntry,
               GANGBRIDGE__V1__GANG__MIN_RESOURCES_ENTRY__INIT)
RESLIST_TO_MAP(request_map, Gangbridge__V1__PodSet__RequestEntry,
               GANGBRIDGE__V1__POD_SET__REQUEST_ENTRY__INIT)
RESLIST_TO_MAP(limits_only_map, Gangbridge__V1__PodSet__LimitsOnlyEntry,
               GANGBRIDGE__V1__POD_SET__LIMITS_ONLY_ENTRY__INIT)

static const char *warning_code(enum gc_warning_code c) {
  switch (c) {
  case GC_WARN_GANG_SCOPE_NARROWED: return "gang-scope-narrowed";
  case GC_WARN_TIMEOUT_CLAMPED: return "timeout-clamped";
  case GC_WARN_NO_QUEUE: return "no-queue";
  case GC_WARN_DEPRECATED_RUNTIME: return "deprecated-runtime";
  case GC_WARN_LIMITS_ONLY: return "limits-only";
  case GC_WARN_POLICY_BOTH: return "policy-both";
  case GC_WARN_GROUPER_NOT_SKIPPED: return "grouper-not-skipped";
  case GC_WARN_TOPOLOGY_DROPPED: return "topology-dropped";
  default: return "other";
  }
}

static Gangbridge__V1__Binding binding_of(enum gc_binding b) {
  switch (b) {
  case GC_BIND_BOUND: return GANGBRIDGE__V1__BINDING__BINDING_BOUND;
  case GC_BIND_UNBOUND: return GANGBRIDGE__V1__BINDING__BINDING_UNBOUND;
  default: return GANGBRIDGE__V1__BINDING__BINDING_GANG;
  }
}

/* Converts g into a Gang message in arena a.  All strings are borrowed
 * from g or copied into a; g must outlive the packing. */
static int gang_to_proto(struct gc_arena *a, const struct gc_gang *g, Gangbridge__V1__Gang **out) {
  Gangbridge__V1__Gang *m = gc_arena_alloc(a, sizeof(*m));
  if (!m)
    return GC_ENOMEM;
  gangbridge__v1__gang__init(m);
  m->namespace_ = str_or_empty(g->namespace_);
  m->name = str_or_empty(g->name);
  m->uid = str_or_empty(g->uid);
  m->runtime_kind = str_or_empty(g->runtime_kind);
  m->runtime_name = str_or_empty(g->runtime_name);
  m->api_generation = str_or_empty(g->api_generation);
  m->suspended = g->suspended ? 1 : 0;
  m->backend = (Gangbridge__V1__Backend)g->backend->proto;
  m->gang_scope = g->scope == GC_SCOPE_ALL ? GANGBRIDGE__V1__GANG_SCOPE__GANG_SCOPE_ALL
                                           : GANGBRIDGE__V1__GANG_SCOPE__GANG_SCOPE_WAVE;
  m->min_member = g->min_member;
  m->gang_wave = g->gang_wave;
  m->queue = str_or_empty(g->queue);
  m->priority_class = str_or_empty(g->priority_class);
  if (min_resources_map(a, &g->min_resources, &m->min_resources, &m->n_min_resources))
    return GC_ENOMEM;
  if (g->n_podsets) {
    m->pod_sets = gc_arena_alloc(a, g->n_podsets * sizeof(*m->pod_sets));
    if (!m->pod_sets)
      return GC_ENOMEM;
  }
  for (size_t i = 0; i < g->n_podsets; i++) {
    const struct gc_podset *p = &g->podsets[i];
    Gangbridge__V1__PodSet *ps = gc_arena_alloc(a, sizeof(*ps));
    if (!ps)
      return GC_ENOMEM;
    gangbridge__v1__pod_set__init(ps);
    ps->name = str_or_empty(p->name);
    ps->count = p->count;
    ps->replicas = p->replicas;
    ps->wave = p->wave;
    ps->binding = binding_of(p->binding);
    ps->ancestor = str_or_empty(p->ancestor);
    ps->priority_class = str_or_empty(p->priority_class);
    ps->scheduler_name = str_or_empty(p->scheduler_name);
    if (request_map(a, &p->request, &ps->request, &ps->n_request) ||
        limits_only_map(a, &p->limits_only, &ps->limits_only, &ps->n_limits_only))
      return GC_ENOMEM;
    if (p->n_depends_on) {
      ps->depends_on = gc_arena_alloc(a, p->n_depends_on * sizeof(*ps->depends_on));
      if (!ps->depends_on)
        return GC_ENOMEM;
      for (size_t k = 0; k < p->n_depends_on; k++) {
        Gangbridge__V1__Dependency *d = gc_arena_alloc(a, sizeof(*d));
        if (!d)
          return GC_ENOMEM;
        gangbridge__v1__dependency__init(d);
        d->name = str_or_empty(p->depends_on[k]);
        d->status = str_or_empty(p->depends_status ? p->depends_status[k] : NULL);
        ps->depends_on[k] = d;
      }
      ps->n_depends_on = p->n_depends_on;
    }
    m->pod_sets[i] = ps;
  }
  m->n_pod_sets = g->n_podsets;
  if (g->topology.set) {
    Gangbridge__V1__NetworkTopology *t = gc_arena_alloc(a, sizeof(*t));
    if (!t)
      return GC_ENOMEM;
    gangbridge__v1__network_topology__init(t);
    t->mode = str_or_empty(g->topology.mode);
    if (g->topology.has_highest_tier) {
      t->highest_tier_allowed_opt_case =
          GANGBRIDGE__V1__NETWORK_TOPOLOGY__HIGHEST_TIER_ALLOWED_OPT_HIGHEST_TIER_ALLOWED;
      t->highest_tier_allowed = g->topology.highest_tier;
    }
    t->highest_tier_name = str_or_empty(g->topology.highest_tier_name);
    m->network_topology = t;
  }
  if (g->has_timeout) {
    m->schedule_timeout_seconds_opt_case =
        GANGBRIDGE__V1__GANG__SCHEDULE_TIMEOUT_SECONDS_OPT_SCHEDULE_TIMEOUT_SECONDS;
    m->schedule_timeout_seconds = g->schedule_timeout_seconds;
  }
  if (g->n_warnings) {
    m->warnings = gc_arena_alloc(a, g->n_warnings * sizeof(*m->warnings));
    if (!m->warnings)
      return GC_ENOMEM;
    for (size_t i = 0; i < g->n_warnings; i++) {
      Gangbridge__V1__Warning *w = gc_arena_alloc(a, sizeof(*w));
      if (!w)
        return GC_ENOMEM;
      gangbridge__v1__warning__init(w);
      w->code = (char *)warning_code(g->warnings[i].code);
      w->message = str_or_empty(g->warnings[i].message);
      m->warnings[i] = w;
    }
    m->n_warnings = g->n_warnings;
  }
  *out = m;
  return 0;
}

/* ------------------------------------------------------------ reply cache */

static void memo_unlink_lru(struct memo *m, struct memo_entry *e) {
  if (e->newer)
    e->newer->older = e->older;
  else
    m->newest = e->older;
  if (e->older)
    e->older->newer = e->newer;
  else
    m->oldest = e->newer;
  e->newer = e->older = NULL;
}

static void memo_push_newest(struct memo *m, struct memo_entry *e) {
  e->older = m->newest;
  e->newer = NULL;
  if (m->newest)
    m->newest->newer = e;
  m->newest = e;
  if (!m->oldest)
    m->oldest = e;
}

static struct memo_entry *memo_find(struct memo *m, uint64_t h, const uint8_t *key, size_t len) {
  for (struct memo_entry *e = m->buckets[h % MEMO_BUCKETS]; e; e = e->next)
    if (e->hash == h && e->key_len == len && !memcmp(e->key, key, len))
      return e;
  return NULL;
}

/* Copies the cached reply for key into arena a.  Returns 1 on a hit. */
static int memo_get(struct memo *m, uint64_t h, const uint8_t *key, size_t len,
                    struct gc_arena *a, const uint8_t **val, size_t *val_len) {
  int hit = 0;
  pthread_mutex_lock(&m->mu);
  struct memo_entry *e = memo_find(m, h, key, len);
  if (e) {
    uint8_t *copy = gc_arena_alloc(a, e->val_len ? e->val_len : 1);
    if (copy) {
      memcpy(copy, e->val, e->val_len);
      *val = copy;
      *val_len = e->val_len;
      memo_unlink_lru(m, e);
      memo_push_newest(m, e);
      hit = 1;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return hit;
}

static void memo_remove(struct memo *m, struct memo_entry *e) {
  struct memo_entry **pp = &m->buckets[e->hash % MEMO_BUCKETS];
  while (*pp != e)
    pp = &(*pp)->next;
  *pp = e->next;
  memo_unlink_lru(m, e);
  m->n--;
  m->bytes -= e->key_len + e->val_len;
  free(e);
}

/* Keeps a copy of (key, val); evicts the least recently used entries to
 * stay within the bounds.  Silently does nothing when out of memory. */
static void memo_put(struct memo *m, uint64_t h, const uint8_t *key, size_t len,
                     const uint8_t *val, size_t val_len) {
  if (len + val_len > MEMO_MAX_ENTRY)
    return;
  struct memo_entry *e = malloc(sizeof(*e) + len + val_len);
  if (!e)
    return;
  e->hash = h;
  e->key = (uint8_t *)(e + 1);
  e->val = e->key + len;
  e->key_len = len;
  e->val_len = val_len;
  memcpy(e->key, key, len);
  memcpy(e->val, val, val_len);
  pthread_mutex_lock(&m->mu);
  if (memo_find(m, h, key, len)) {
    pthread_mutex_unlock(&m->mu);
    free(e);
    return;
  }
  e->next = m->buckets[h % MEMO_BUCKETS];
  m->buckets[h % MEMO_BUCKETS] = e;
  memo_push_newest(m, e);
  m->n++;
  m->bytes += len + val_len;
  while (m->oldest && (m->n > MEMO_MAX_ENTRIES || m->bytes > MEMO_MAX_BYTES))
    memo_remove(m, m->oldest);
  pthread_mutex_unlock(&m->mu);
}

static void memo_destroy(struct memo *m) {
  while (m->oldest)
    memo_remove(m, m->oldest);
  pthread_mutex_destroy(&m->mu);
}

/* ------------------------------------------------------------ Calculate */

static void calc_release(void *arg) {
  calc_free(arg);
  free(arg);
}

/* Runs a CalculateRequest into a calc that lives until the reply is packed
 * (the reply borrows the gang's strings).  *out is NULL on failure. */
static int calc_start(struct gb_rpc_ctx *ctx, struct gb_rpc_service *svc,
                      const Gangbridge__V1__CalculateRequest *req, const char *field,
                      struct calc **out) {
  *out = NULL;
  struct calc *c = calloc(1, sizeof(*c));
  if (!c)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  if (gb_rpc_ctx_defer(ctx, calc_release, c))
    return gb_rpc_server_fail(ctx, GB_RPC_INTERNAL, "too many deferred objects");
  int code = calc_run(ctx, &svc->docs, req, field, c);
  if (code == GB_RPC_OK)
    *out = c;
  return code;
}

static int calculate(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *msg,
                     ProtobufCMessage **reply) {
  struct gb_rpc_service *svc = data;
  const Gangbridge__V1__CalculateRequest *req = (const Gangbridge__V1__CalculateRequest *)msg;
  uint64_t h = ctx->request ? hash_bytes(ctx->request, ctx->request_len) : 0;
  const uint8_t *cached = NULL;
  size_t cached_len = 0;
  if (ctx->request &&
      memo_get(&svc->memo, h, ctx->request, ctx->request_len, ctx->arena, &cached, &cached_len)) {
    gb_rpc_ctx_reply_packed(ctx, cached, cached_len);
    *reply = (ProtobufCMessage *)msg; /* any message: the packed bytes are sent */
    return GB_RPC_OK;
  }
  struct calc *c = NULL;
  int code = calc_start(ctx, svc, req, "", &c);
  if (code)
    return code;
  Gangbridge__V1__CalculateResponse *resp = gc_arena_alloc(ctx->arena, sizeof(*resp));
  if (!resp)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  gangbridge__v1__calculate_response__init(resp);
  struct gc_value *pg = NULL;
  char *json = NULL;
  size_t json_len = 0;
  /* Something else gangs it (gc_gang.ganged_by): there is no object to give. */
  if (c->gang->ganged_by)
    return gb_rpc_server_fail(ctx, GB_RPC_FAILED_PRECONDITION, "%s/%s: %s; gangbridge writes no %s",
                              c->gang->namespace_, c->gang->name, c->gang->ganged_by,
                              c->gang->backend->kind);
  int rc = gang_to_proto(ctx->arena, c->gang, &resp->gang);
  if (!rc)
    rc = gc_render_podgroup(c->gang, ctx->arena, &pg);
  if (!rc)
    rc = gb_emit_json(pg, 1, &json, &json_len);
  if (!rc && gb_rpc_ctx_defer(ctx, free, json))
    rc = GC_ELIMIT;
  if (rc)
    return gb_rpc_server_fail(ctx, gb_rpc_code_of(rc, GB_RPC_INTERNAL),
                              "%s/%s: cannot render the PodGroup: %s", c->gang->namespace_,
                              c->gang->name, gc_diag_strerror(rc));
  resp->pod_group_json.data = (uint8_t *)json;
  resp->pod_group_json.len = json_len;
  *reply = &resp->base;
  size_t size = gangbridge__v1__calculate_response__get_packed_size(resp);
  uint8_t *packed = ctx->request ? gc_arena_alloc(ctx->arena, size ? size : 1) : NULL;
  if (packed) {
    gangbridge__v1__calculate_response__pack(resp, packed);
    memo_put(&svc->memo, h, ctx->request, ctx->request_len, packed, size);
    gb_rpc_ctx_reply_packed(ctx, packed, size);
  }
  return GB_RPC_OK;
}

/* ------------------------------------------------------------ Health */

static int health_check(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *msg,
                        ProtobufCMessage **reply) {
  struct gb_rpc_service *svc = data;
  const Grpc__Health__V1__HealthCheckRequest *req =
      (const Grpc__Health__V1__HealthCheckRequest *)msg;
  const char *name = req->service;
  if (name[0] && strcmp(name, GB_RPC_SERVICE_CALCULATOR) &&
      strcmp(name, GB_RPC_SERVICE_PLACEMENT) &&
      strcmp(name, GB_RPC_SERVICE_HEALTH))
    return gb_rpc_server_fail(ctx, GB_RPC_NOT_FOUND, "unknown service %.200s", name);
  Grpc__Health__V1__HealthCheckResponse *resp = gc_arena_alloc(ctx->arena, sizeof(*resp));
  if (!resp)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  grpc__health__v1__health_check_response__init(resp);
  resp->status = atomic_load(&svc->serving)
                     ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
                     : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
  *reply = &resp->base;
  return GB_RPC_OK;
}

/* ------------------------------------------------------------ snapshot */

static void status_fill(struct gb_rpc_service *svc, Gangbridge__V1__SnapshotStatus *st) {
  /* Called with the lock held. */
  gangbridge__v1__snapshot_status__init(st);
  st->ready = svc->snap != NULL;
  st->generation = svc->generation;
  if (svc->snap) {
    st->nodes = (int32_t)tp_snapshot_node_count(svc->snap);
    size_t n_dom = tp_snapshot_domain_count(svc->snap); /* the virtual root included */
    st->domains = (int32_t)(n_dom ? n_dom - 1 : 0);
  }
}

int gb_rpc_service_snapshot_replace(struct gb_rpc_service *svc, const struct gc_value *const *docs,
                                    const char *const *origins, size_t n,
                                    const char *const *levels, size_t n_levels,
                                    struct gc_diags *diags) {
  struct tp_build_opts opts = {.levels = levels, .n_levels = n_levels};
  struct tp_snapshot *snap = NULL;
  int rc = tp_snapshot_build(docs, origins, n, &opts, &snap, diags);
  if (rc)
    return rc;
  pthread_rwlock_wrlock(&svc->lock);
  struct tp_snapshot *old = svc->snap;
  svc->snap = snap;
  svc->generation++;
  pthread_rwlock_unlock(&svc->lock);
  tp_snapshot_free(old);
  return 0;
}

void gb_rpc_service_set_snapshot_source(struct gb_rpc_service *svc, gb_rpc_snapshot_source_fn fn,
                                        void *ctx) {
  svc->source = fn;
  svc->source_ctx = ctx;
}

void gb_rpc_service_snapshot_status(struct gb_rpc_service *svc, int *ready, uint64_t *generation,
                                    size_t *nodes, size_t *domains) {
  pthread_rwlock_rdlock(&svc->lock);
  *ready = svc->snap != NULL;
  *generation = svc->generation;
  *nodes = svc->snap ? tp_snapshot_node_count(svc->snap) : 0;
  size_t n_dom = svc->snap ? tp_snapshot_domain_count(svc->snap) : 0; /* root included */
  *domains = n_dom ? n_dom - 1 : 0;
  pthread_rwlock_unlock(&svc->lock);
}

/* Replies with the snapshot's status.  The caller holds svc->lock (read or
 * write) and releases it: this function never touches the lock. */
static int snapshot_reply_locked(struct gb_rpc_ctx *ctx, struct gb_rpc_service *svc,
                                 ProtobufCMessage **reply) {
  Gangbridge__V1__SnapshotStatus *st = gc_arena_alloc(ctx->arena, sizeof(*st));
  if (!st)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  status_fill(svc, st);
  *reply = &st->base;
  return GB_RPC_OK;
}

/* As snapshot_reply_locked, taking and releasing the read lock itself. */
/* gb_rpc_snapshot_use_fn filling a SnapshotStatus from the source's
 * snapshot (arg = the status). */
static int status_from_source(void *arg, struct tp_snapshot *s, uint64_t generation) {
  Gangbridge__V1__SnapshotStatus *st = arg;
  st->ready = 1;
  st->generation = generation;
  st->nodes = (int32_t)tp_snapshot_node_count(s);
  size_t n_dom = tp_snapshot_domain_count(s); /* the virtual root included */
  st->domains = (int32_t)(n_dom ? n_dom - 1 : 0);
  return 0;
}

static int snapshot_reply(struct gb_rpc_ctx *ctx, struct gb_rpc_service *svc,
                          ProtobufCMessage **reply) {
  if (svc->source) {
    Gangbridge__V1__SnapshotStatus *st = gc_arena_alloc(ctx->arena, sizeof(*st));
    if (!st)
      return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
    gangbridge__v1__snapshot_status__init(st);
    svc->source(svc->source_ctx, status_from_source, st); /* not synced: ready = 0 */
    *reply = &st->base;
    return GB_RPC_OK;
  }
  pthread_rwlock_rdlock(&svc->lock);
  int code = snapshot_reply_locked(ctx, svc, reply);
  pthread_rwlock_unlock(&svc->lock);
  return code;
}

static int writes_refused(struct gb_rpc_ctx *ctx, struct gb_rpc_service *svc);
static int has_node(const struct doclist *l);

static int replace_snapshot(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *msg,
                            ProtobufCMessage **reply) {
  struct gb_rpc_service *svc = data;
  const Gangbridge__V1__ReplaceSnapshotRequest *req =
      (const Gangbridge__V1__ReplaceSnapshotRequest *)msg;
  struct doclist l;
  struct gc_diags diags;
  gc_diags_init(&diags);
  int code = GB_RPC_OK;
  memset(&l, 0, sizeof(l));
  if (writes_refused(ctx, svc)) {
    code = ctx->code;
    goto out;
  }
  if (req->n_levels > TP_MAX_LEVELS) {
    code = gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "levels: at most %d allowed",
                              TP_MAX_LEVELS);
    goto out;
  }
  code = doclist_load(ctx, NULL, "cluster", req->cluster, req->n_cluster, &l, &diags);
  if (code)
    goto out;
  if (!has_node(&l)) {
    code = gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "cluster: no Node document; an empty snapshot is refused (it would "
                              "make every gang unplaceable)");
    goto out;
  }
  if (gb_rpc_ctx_ms_left(ctx) <= 0) {
    code = gb_rpc_server_fail(ctx, GB_RPC_DEADLINE_EXCEEDED, "deadline passed");
    goto out;
  }
  int rc = gb_rpc_service_snapshot_replace(svc, l.docs, l.origins, l.n,
                                           (const char *const *)req->levels, req->n_levels,
                                           &diags);
  if (rc) {
    code = gb_rpc_server_fail_diags(ctx, gb_rpc_code_of(rc, GB_RPC_INVALID_ARGUMENT), NULL, &diags);
    goto out;
  }
  code = snapshot_reply(ctx, svc, reply);
out:
  doclist_free(&l);
  gc_diags_destroy(&diags);
  return code;
}

static int get_snapshot_status(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *msg,
                               ProtobufCMessage **reply) {
  (void)msg;
  return snapshot_reply(ctx, data, reply);
}

/* One parsed update: the document (for node and pod updates), the node
 * name it concerns and, for a free update, the parsed quantities. */
struct parsed_update {
  const struct gc_value *doc;
  const char *origin;
  const char *node;
  struct gc_reslist free; /* quantities in the request's arena (qa) */
};

/* Loads one document of updates[i] into ds; exactly one is required. */
static int update_doc(struct gb_rpc_ctx *ctx, struct gb_docset *ds, size_t i, const char *what,
                      const ProtobufCBinaryData *b, struct parsed_update *pu,
                      struct gc_diags *diags) {
  char name[64];
  snprintf(name, sizeof(name), "updates[%zu].%s", i, what);
  size_t before = ds->n;
  int rc = gb_manifest_load_buffer(ds, name, (const char *)b->data, b->len, diags);
  if (rc || diags->errors)
    return gb_rpc_server_fail_diags(ctx, GB_RPC_INVALID_ARGUMENT, NULL, diags);
  if (ds->n != before + 1)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "%s: exactly one document expected, got %zu", name, ds->n - before);
  const struct gb_doc *d = &ds->docs[before];
  pu->doc = d->root;
  pu->origin = gc_arena_printf(ds->arena, "%s:%u:%u", d->file, d->line, d->col);
  if (!pu->origin)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  return GB_RPC_OK;
}

/* NOT_FOUND unless every node a remove or free update names exists in snap
 * or is added earlier in the same request.  Returns the status. */
static int check_named_nodes(struct gb_rpc_ctx *ctx, const struct tp_snapshot *snap,
                             const Gangbridge__V1__UpdateNodesRequest *req,
                             const struct parsed_update *pu) {
  for (size_t i = 0; i < req->n_updates; i++) {
    const Gangbridge__V1__NodeUpdate *u = req->updates[i];
    if ((u->change_case == GANGBRIDGE__V1__NODE_UPDATE__CHANGE_REMOVE ||
         u->change_case == GANGBRIDGE__V1__NODE_UPDATE__CHANGE_FREE) &&
        tp_snapshot_node(snap, u->name) < 0) {
      /* A node added earlier in the same request may be the one named. */
      int added = 0;
      for (size_t k = 0; k < i; k++)
        if (req->updates[k]->change_case == GANGBRIDGE__V1__NODE_UPDATE__CHANGE_NODE &&
            !strcmp(pu[k].node, u->name))
          added = 1;
      if (!added)
        return gb_rpc_server_fail(ctx, GB_RPC_NOT_FOUND, "updates[%zu].name: no node '%.200s'", i,
                                  u->name);
    }
  }
  return GB_RPC_OK;
}

/* Pass 1 validators, one per change kind: each parses updates[i] (u) into
 * pu without touching the snapshot and returns the status. */

static int check_node_update(struct gb_rpc_ctx *ctx, struct gb_docset *ds, size_t i,
                             const Gangbridge__V1__NodeUpdate *u, struct parsed_update *pu,
                             struct gc_diags *diags) {
  int code = update_doc(ctx, ds, i, "node", &u->node, pu, diags);
  if (code)
    return code;
  const char *kind = gc_value_as_str(gc_map_get(pu->doc, "kind"));
  const char *nm = gc_value_as_str(gc_value_path(pu->doc, "metadata.name"));
  if (!kind || strcmp(kind, "Node") || !nm || !*nm)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "updates[%zu].node: a Node document with metadata.name is required",
                              i);
  if (u->name[0] && strcmp(u->name, nm))
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "updates[%zu].name: '%.200s' differs from the document's '%.200s'", i,
                              u->name, nm);
  pu->node = nm;
  return GB_RPC_OK;
}

static int check_pod_update(struct gb_rpc_ctx *ctx, struct gb_docset *ds, size_t i,
                            const Gangbridge__V1__NodeUpdate *u, struct parsed_update *pu,
                            struct gc_diags *diags) {
  int bound = u->change_case == GANGBRIDGE__V1__NODE_UPDATE__CHANGE_BOUND_POD;
  const char *what = bound ? "bound_pod" : "released_pod";
  int code = update_doc(ctx, ds, i, what, bound ? &u->bound_pod : &u->released_pod, pu, diags);
  if (code)
    return code;
  const char *kind = gc_value_as_str(gc_map_get(pu->doc, "kind"));
  if (!kind || strcmp(kind, "Pod"))
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "updates[%zu].%s: a Pod document is required", i, what);
  return GB_RPC_OK;
}

/* The quantities go into pu->free, allocated from qa. */
static int check_free_update(struct gb_rpc_ctx *ctx, struct gc_arena *qa, size_t i,
                             const Gangbridge__V1__NodeUpdate *u, struct parsed_update *pu) {
  if (!u->name[0])
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "updates[%zu].name: required", i);
  const Gangbridge__V1__Quantities *q = u->free;
  for (size_t k = 0; q && k < q->n_values; k++) {
    struct gc_quantity qty;
    const char *v = q->values[k]->value;
    if (gc_quantity_parse(v, strlen(v), &qty) ||
        gc_reslist_set(qa, &pu->free, q->values[k]->key, &qty))
      return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                                "updates[%zu].free.values[%.100s]: '%.100s' is not a quantity", i,
                                q->values[k]->key, v);
  }
  return GB_RPC_OK;
}

static int check_remove_update(struct gb_rpc_ctx *ctx, size_t i,
                               const Gangbridge__V1__NodeUpdate *u) {
  if (!u->name[0])
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "updates[%zu].name: required", i);
  return GB_RPC_OK;
}

/* Pass 1: parses and checks every update of req into pu (req->n_updates
 * entries) without touching the snapshot.  Returns the status. */
static int check_updates(struct gb_rpc_ctx *ctx, const Gangbridge__V1__UpdateNodesRequest *req,
                         struct gb_docset *ds, struct gc_arena *qa, struct parsed_update *pu,
                         struct gc_diags *diags) {
  for (size_t i = 0; i < req->n_updates; i++) {
    const Gangbridge__V1__NodeUpdate *u = req->updates[i];
    int code;
    pu[i].node = u->name;
    switch (u->change_case) {
    case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_NODE:
      code = check_node_update(ctx, ds, i, u, &pu[i], diags);
      break;
    case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_BOUND_POD:
    case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_RELEASED_POD:
      code = check_pod_update(ctx, ds, i, u, &pu[i], diags);
      break;
    case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_FREE:
      code = check_free_update(ctx, qa, i, u, &pu[i]);
      break;
    case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_REMOVE:
      code = check_remove_update(ctx, i, u);
      break;
    default:
      code = gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "updates[%zu].change: not set", i);
    }
    if (code)
      return code;
  }
  return GB_RPC_OK;
}

/* Applies updates[i] (u, parsed as pu) to snap.  Returns 0 or a GC_E*
 * code, with messages in diags. */
static int apply_update(struct tp_snapshot *snap, size_t i, const Gangbridge__V1__NodeUpdate *u,
                        const struct parsed_update *pu, struct gc_diags *diags) {
  int rc = 0;
  switch (u->change_case) {
  case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_NODE:
    if (tp_snapshot_node(snap, pu->node) >= 0)
      rc = tp_snapshot_remove_node(snap, pu->node);
    if (!rc)
      rc = tp_snapshot_add_node(snap, pu->doc, pu->origin, diags);
    return rc;
  case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_REMOVE:
    return tp_snapshot_remove_node(snap, u->name);
  case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_FREE: {
    char where[32];
    snprintf(where, sizeof(where), "updates[%zu]", i);
    return tp_snapshot_update_free(snap, u->name, &pu->free, where, diags);
  }
  case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_BOUND_POD:
    return tp_snapshot_update_pod(snap, pu->doc, 1, u->name, pu->origin, diags);
  case GANGBRIDGE__V1__NODE_UPDATE__CHANGE_RELEASED_POD:
    return tp_snapshot_update_pod(snap, pu->doc, -1, u->name, pu->origin, diags);
  default: return 0;
  }
}

/* Pass 2: applies every update in order.  The caller holds svc->lock for
 * writing and releases it.  The generation moves on even when an update
 * fails part way, because the updates before it stay applied.  Returns the
 * status. */
static int apply_updates_locked(struct gb_rpc_ctx *ctx, struct gb_rpc_service *svc,
                                const Gangbridge__V1__UpdateNodesRequest *req,
                                const struct parsed_update *pu, struct gc_diags *diags) {
  if (!svc->snap)
    return gb_rpc_server_fail(ctx, GB_RPC_FAILED_PRECONDITION,
                              "no live snapshot: call ReplaceSnapshot first");
  int code = check_named_nodes(ctx, svc->snap, req, pu);
  if (code)
    return code;
  for (size_t i = 0; i < req->n_updates; i++) {
    int rc = apply_update(svc->snap, i, req->updates[i], &pu[i], diags);
    if (rc) {
      svc->generation++;
      if (!diags->errors)
        gc_diags_addf(diags, "updates[%zu]: %s", i, gc_diag_strerror(rc));
      char prefix[128];
      snprintf(prefix, sizeof(prefix), "updates[%zu] failed; updates[0..%zu) were applied\n", i,
               i);
      return gb_rpc_server_fail_diags(ctx, gb_rpc_code_of(rc, GB_RPC_INVALID_ARGUMENT), prefix,
                                      diags);
    }
  }
  svc->generation++;
  return GB_RPC_OK;
}

static int update_nodes(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *msg,
                        ProtobufCMessage **reply) {
  struct gb_rpc_service *svc = data;
  const Gangbridge__V1__UpdateNodesRequest *req = (const Gangbridge__V1__UpdateNodesRequest *)msg;
  struct gc_diags diags;
  gc_diags_init(&diags);
  struct gb_limits lim = {0};
  lim.max_source_bytes = ctx->max_message_bytes;
  lim.max_total_bytes = ctx->max_message_bytes;
  struct gb_docset *ds = NULL;
  struct parsed_update *pu = NULL;
  struct gc_arena *qa = NULL;
  int code = GB_RPC_OK;
  if (writes_refused(ctx, svc)) {
    code = ctx->code;
    goto out;
  }
  if (req->n_updates > (size_t)TP_MAX_NODES) {
    code = gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "updates: at most %d allowed",
                              TP_MAX_NODES);
    goto out;
  }
  ds = gb_docset_new(&lim);
  pu = calloc(req->n_updates ? req->n_updates : 1, sizeof(*pu));
  qa = gc_arena_new(0);
  if (!ds || !pu || !qa) {
    code = gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  if ((code = check_updates(ctx, req, ds, qa, pu, &diags)))
    goto out;
  pthread_rwlock_wrlock(&svc->lock);
  code = apply_updates_locked(ctx, svc, req, pu, &diags);
  if (!code)
    code = snapshot_reply_locked(ctx, svc, reply);
  pthread_rwlock_unlock(&svc->lock);
out:
  gc_arena_free(qa);
  free(pu);
  gb_docset_free(ds);
  gc_diags_destroy(&diags);
  return code;
}

/* ------------------------------------------------------------ Evaluate */

static struct tp_evaluator *evaluator_get(struct gb_rpc_service *svc) {
  struct tp_evaluator *ev = NULL;
  pthread_mutex_lock(&svc->pool_mu);
  if (svc->n_pool > 0)
    ev = svc->pool[--svc->n_pool];
  pthread_mutex_unlock(&svc->pool_mu);
  return ev ? ev : tp_evaluator_new();
}

static void evaluator_put(struct gb_rpc_service *svc, struct tp_evaluator *ev) {
  if (!ev)
    return;
  pthread_mutex_lock(&svc->pool_mu);
  if (svc->n_pool < EVALUATOR_POOL) {
    svc->pool[svc->n_pool++] = ev;
    ev = NULL;
  }
  pthread_mutex_unlock(&svc->pool_mu);
  tp_evaluator_free(ev);
}

static void doclist_release(void *arg) {
  doclist_free(arg);
  free(arg);
}

/* Reads a GangSpec into a tp_gang in arena a. */
static int gang_from_spec(struct gb_rpc_ctx *ctx, const Gangbridge__V1__GangSpec *spec,
                          struct tp_gang *g, struct gc_diags *diags) {
  struct gc_arena *a = ctx->arena;
  memset(g, 0, sizeof(*g));
  if (spec->n_pod_sets == 0 || spec->n_pod_sets > TP_MAX_PODSETS)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "gang.pod_sets: 1..%d pod sets required", TP_MAX_PODSETS);
  if (spec->min_member < 0)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "gang.min_member: must not be negative");
  g->name = "gang";
  g->min_member = spec->min_member;
  g->sets = gc_arena_alloc(a, spec->n_pod_sets * sizeof(*g->sets));
  if (!g->sets)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < spec->n_pod_sets; i++) {
    const Gangbridge__V1__GangPodSet *ps = spec->pod_sets[i];
    struct tp_podset *o = &g->sets[i];
    if (ps->pods <= 0 || ps->pods > TP_MAX_SET_PODS)
      return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                                "gang.pod_sets[%zu].pods: must be 1..%d", i, TP_MAX_SET_PODS);
    o->name = ps->name[0] ? ps->name : gc_arena_printf(a, "set-%zu", i);
    o->count = ps->pods;
    struct gc_reslist req = GC_RESLIST_INIT;
    for (size_t k = 0; k < ps->n_request; k++) {
      struct gc_quantity q;
      const char *v = ps->request[k]->value;
      if (gc_quantity_parse(v, strlen(v), &q))
        return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                                  "gang.pod_sets[%zu].request[%.100s]: '%.100s' is not a quantity",
                                  i, ps->request[k]->key, v);
      if (gc_reslist_set(a, &req, ps->request[k]->key, &q))
        return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
    }
    char where[64];
    snprintf(where, sizeof(where), "gang.pod_sets[%zu].request", i);
    int rc = tp_podset_set_requests(a, o, &req, where, diags);
    if (rc)
      return gb_rpc_server_fail_diags(ctx, GB_RPC_INVALID_ARGUMENT, NULL, diags);
  }
  g->n_sets = spec->n_pod_sets;
  return GB_RPC_OK;
}

/* The gang of an EvaluateRequest: a GangSpec, a compact Gang document among
 * the calculate manifests, or a TrainJob computed as Calculate does. */
static int evaluate_gang(struct gb_rpc_ctx *ctx, struct gb_rpc_service *svc,
                         const Gangbridge__V1__EvaluateRequest *req, struct tp_gang *g,
                         struct gc_diags *diags) {
  if (req->gang_source_case == GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_GANG)
    return gang_from_spec(ctx, req->gang, g, diags);
  if (req->gang_source_case != GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_CALCULATE)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "gang_source: set gang (a compact gang) or calculate (manifests)");
  const Gangbridge__V1__CalculateRequest *cr = req->calculate;
  /* A compact Gang document among the manifests is used as is. */
  struct doclist *l = calloc(1, sizeof(*l));
  if (!l)
    return gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
  if (gb_rpc_ctx_defer(ctx, doclist_release, l)) /* l is already released then */
    return gb_rpc_server_fail(ctx, GB_RPC_INTERNAL, "too many deferred objects");
  int code = doclist_load(ctx, &svc->docs, "calculate.manifests", cr->manifests,
                          cr->n_manifests, l, diags);
  if (code)
    return code;
  for (size_t i = 0; i < l->n; i++) {
    if (!tp_gang_is_doc(l->docs[i]))
      continue;
    if (tp_gang_from_doc(ctx->arena, l->docs[i], l->origins[i], g, diags))
      return gb_rpc_server_fail_diags(ctx, GB_RPC_INVALID_ARGUMENT, NULL, diags);
    return GB_RPC_OK;
  }
  struct calc *c = NULL;
  code = calc_start(ctx, svc, cr, "calculate.", &c);
  if (code)
    return code;
  if (tp_gang_from_gc(ctx->arena, c->gang, g, diags))
    return gb_rpc_server_fail_diags(ctx, GB_RPC_INVALID_ARGUMENT, NULL, diags);
  return GB_RPC_OK;
}

/* Applies the request's policy to the gang's own, as `place` applies its
 * --mode/--highest-tier/--highest-tier-name flags. */
static int policy_apply(struct gb_rpc_ctx *ctx, const Gangbridge__V1__TopologyPolicy *p,
                        const struct tp_gang *g, struct tp_policy *out) {
  *out = g->policy;
  if (!p)
    return GB_RPC_OK;
  int has_tier = p->highest_tier_opt_case ==
                 GANGBRIDGE__V1__TOPOLOGY_POLICY__HIGHEST_TIER_OPT_HIGHEST_TIER;
  if (has_tier && p->highest_tier_name[0])
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "policy: highest_tier and highest_tier_name exclude each other");
  if (has_tier && p->highest_tier < 0)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "policy.highest_tier: must not be negative");
  if (!strcmp(p->mode, "hard"))
    out->mode = TP_MODE_HARD;
  else if (!strcmp(p->mode, "soft"))
    out->mode = TP_MODE_SOFT;
  else if (p->mode[0])
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "policy.mode: must be \"hard\" or \"soft\", not \"%.100s\"", p->mode);
  if (has_tier) {
    out->has_highest_tier = 1;
    out->highest_tier = p->highest_tier;
    out->highest_tier_name = NULL;
  }
  if (p->highest_tier_name[0]) {
    out->has_highest_tier = 0;
    out->highest_tier_name = p->highest_tier_name;
  }
  if (out->mode == TP_MODE_UNSET && (has_tier || p->highest_tier_name[0]))
    out->mode = TP_MODE_HARD;
  return GB_RPC_OK;
}

/* Fills resp from r, copying every string into the call arena (snapshot
 * names are only valid under the lock). */
static int result_to_proto(struct gb_rpc_ctx *ctx, const struct tp_snapshot *snap,
                           const struct tp_gang *g, const struct tp_result *r,
                           Gangbridge__V1__EvaluateResponse *resp) {
  struct gc_arena *a = ctx->arena;
  resp->feasible = r->feasible ? 1 : 0;
  if (r->domain_name && !(resp->hyper_node = gc_arena_strdup(a, r->domain_name)))
    return GC_ENOMEM;
  if (r->feasible && !r->whole_cluster && r->tier >= 0) {
    resp->tier_opt_case = GANGBRIDGE__V1__EVALUATE_RESPONSE__TIER_OPT_TIER;
    resp->tier = (int32_t)r->tier;
  }
  if (r->n_assign) {
    resp->assignments = gc_arena_alloc(a, r->n_assign * sizeof(*resp->assignments));
    if (!resp->assignments)
      return GC_ENOMEM;
  }
  for (size_t i = 0; i < r->n_assign; i++) {
    Gangbridge__V1__Assignment *as = gc_arena_alloc(a, sizeof(*as));
    if (!as)
      return GC_ENOMEM;
    gangbridge__v1__assignment__init(as);
    as->node = gc_arena_strdup(a, r->assign[i].node);
    as->pod_set = gc_arena_strdup(a, g->sets[r->assign[i].podset].name);
    as->pods = (int32_t)r->assign[i].pods;
    if (!as->node || !as->pod_set)
      return GC_ENOMEM;
    resp->assignments[i] = as;
  }
  resp->n_assignments = r->n_assign;
  if (r->n_reasons) {
    resp->reasons = gc_arena_alloc(a, r->n_reasons * sizeof(*resp->reasons));
    if (!resp->reasons)
      return GC_ENOMEM;
    for (size_t i = 0; i < r->n_reasons; i++)
      if (!(resp->reasons[i] = gc_arena_strdup(a, r->reasons[i])))
        return GC_ENOMEM;
    resp->n_reasons = r->n_reasons;
  }
  struct gc_value *v = NULL;
  char *json = NULL;
  size_t len = 0;
  int rc = gb_place_json_result_to_value(a, snap, g, r, &v);
  if (!rc)
    rc = gb_emit_json(v, 1, &json, &len);
  if (rc)
    return rc;
  if (gb_rpc_ctx_defer(ctx, free, json))
    return GC_ELIMIT;
  resp->place_json.data = (uint8_t *)json;
  resp->place_json.len = len;
  return 0;
}

/* One evaluation's inputs and answer, so that it can run inside a
 * snapshot source's lock (run_on_snapshot) as well as on the service's
 * own or an inline snapshot. */
struct eval_job {
  struct gb_rpc_ctx *ctx;
  struct gb_rpc_service *svc;
  const struct tp_gang *gang;
  const struct tp_eval_opts *opts;
  struct gc_diags *diags;
  ProtobufCMessage **reply;
  int ran;  /* run_on_snapshot ran inside the source */
  int code; /* and answered this gRPC code */
};

/* Evaluates the job on snap and builds the reply.  Returns a gRPC code. */
static int run_on_snapshot(struct eval_job *j, const struct tp_snapshot *snap,
                           uint64_t generation) {
  struct gb_rpc_ctx *ctx = j->ctx;
  if (gb_rpc_ctx_ms_left(ctx) <= 0)
    return gb_rpc_server_fail(ctx, GB_RPC_DEADLINE_EXCEEDED, "deadline passed");
  struct tp_evaluator *ev = evaluator_get(j->svc);
  Gangbridge__V1__EvaluateResponse *resp = gc_arena_alloc(ctx->arena, sizeof(*resp));
  int code;
  if (!ev || !resp) {
    code = gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
    goto out;
  }
  gangbridge__v1__evaluate_response__init(resp);
  struct tp_result res;
  int rc = tp_place_evaluate(ev, snap, j->gang, j->opts, ctx->arena, &res, j->diags);
  if (rc) {
    if (!j->diags->errors)
      gc_diags_addf(j->diags, "evaluate: %s", gc_diag_strerror(rc));
    code = gb_rpc_server_fail_diags(ctx, gb_rpc_code_of(rc, GB_RPC_INVALID_ARGUMENT), NULL,
                                    j->diags);
    goto out;
  }
  rc = result_to_proto(ctx, snap, j->gang, &res, resp);
  if (rc) {
    code = gb_rpc_server_fail(ctx, gb_rpc_code_of(rc, GB_RPC_INTERNAL),
                              "cannot build the reply: %s", gc_diag_strerror(rc));
    goto out;
  }
  resp->snapshot_generation = generation;
  *j->reply = &resp->base;
  code = GB_RPC_OK;
out:
  evaluator_put(j->svc, ev);
  return code;
}

/* gb_rpc_snapshot_use_fn over run_on_snapshot (arg = the job); the gRPC
 * code stays in the job, apart from the source's own error codes. */
static int use_source_snapshot(void *arg, struct tp_snapshot *s, uint64_t generation) {
  struct eval_job *j = arg;
  j->code = run_on_snapshot(j, s, generation);
  j->ran = 1;
  return 0;
}

/* Runs the job on the live snapshot: the source's (serve's model) when one
 * is set, else the service's own. */
static int run_on_live(struct eval_job *j) {
  struct gb_rpc_service *svc = j->svc;
  if (svc->source) {
    int rc = svc->source(svc->source_ctx, use_source_snapshot, j);
    if (j->ran)
      return j->code;
    return gb_rpc_server_fail(j->ctx, rc == GC_ENOTFOUND ? GB_RPC_UNAVAILABLE : GB_RPC_INTERNAL,
                              "the live cluster model has no snapshot yet (%s): send cluster "
                              "documents with the request, or retry",
                              gc_diag_strerror(rc));
  }
  pthread_rwlock_rdlock(&svc->lock);
  int code = svc->snap
                 ? run_on_snapshot(j, svc->snap, svc->generation)
                 : gb_rpc_server_fail(j->ctx, GB_RPC_UNAVAILABLE,
                                      "no live cluster snapshot yet: send cluster documents with "
                                      "the request, or ReplaceSnapshot first");
  pthread_rwlock_unlock(&svc->lock);
  return code;
}

/* Checks the request's profile and levels into opts.  Returns a gRPC code. */
static int evaluate_args(struct gb_rpc_ctx *ctx, const Gangbridge__V1__EvaluateRequest *req,
                         struct tp_eval_opts *opts) {
  switch (req->profile) {
  case GANGBRIDGE__V1__PROFILE__PROFILE_BESTFIT: opts->profile = TP_PROFILE_BESTFIT; break;
  case GANGBRIDGE__V1__PROFILE__PROFILE_SPREAD: opts->profile = TP_PROFILE_SPREAD; break;
  default:
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "profile: unknown value %d",
                              (int)req->profile);
  }
  if (req->n_levels && !req->n_cluster)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT,
                              "levels: only with cluster (the live snapshot has its own)");
  if (req->n_levels > TP_MAX_LEVELS)
    return gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "levels: at most %d allowed",
                              TP_MAX_LEVELS);
  return GB_RPC_OK;
}

/* Builds the request's inline cluster snapshot.  Returns a gRPC code. */
static int inline_snapshot(struct gb_rpc_ctx *ctx, const Gangbridge__V1__EvaluateRequest *req,
                           struct tp_snapshot **out, struct gc_diags *diags) {
  struct doclist l;
  int code = doclist_load(ctx, NULL, "cluster", req->cluster, req->n_cluster, &l, diags);
  if (!code) {
    struct tp_build_opts bo = {.levels = (const char *const *)req->levels,
                               .n_levels = req->n_levels};
    int rc = tp_snapshot_build(l.docs, l.origins, l.n, &bo, out, diags);
    if (rc)
      code = gb_rpc_server_fail_diags(ctx, gb_rpc_code_of(rc, GB_RPC_INVALID_ARGUMENT), NULL,
                                      diags);
  }
  doclist_free(&l);
  return code;
}

static int evaluate(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *msg,
                    ProtobufCMessage **reply) {
  struct gb_rpc_service *svc = data;
  const Gangbridge__V1__EvaluateRequest *req = (const Gangbridge__V1__EvaluateRequest *)msg;
  struct gc_diags diags;
  gc_diags_init(&diags);
  struct tp_snapshot *inline_snap = NULL;
  struct tp_eval_opts opts;
  memset(&opts, 0, sizeof(opts));
  struct tp_gang gang;
  struct eval_job job = {ctx, svc, &gang, &opts, &diags, reply, 0, 0};
  int code = evaluate_args(ctx, req, &opts);
  if (!code)
    code = evaluate_gang(ctx, svc, req, &gang, &diags);
  if (!code)
    code = policy_apply(ctx, req->policy, &gang, &opts.policy);
  if (code)
    goto out;
  if (req->n_cluster) {
    code = inline_snapshot(ctx, req, &inline_snap, &diags);
    if (!code)
      code = run_on_snapshot(&job, inline_snap, 0);
  } else {
    code = run_on_live(&job);
  }
out:
  tp_snapshot_free(inline_snap);
  gc_diags_destroy(&diags);
  return code;
}

/* ------------------------------------------------------------ service */

struct gb_rpc_service *gb_rpc_service_new(void) {
  struct gb_rpc_service *svc = calloc(1, sizeof(*svc));
  if (!svc)
    return NULL;
  atomic_store(&svc->serving, 1);
  if (pthread_rwlock_init(&svc->lock, NULL)) {
    free(svc);
    return NULL;
  }
  pthread_mutex_init(&svc->pool_mu, NULL);
  pthread_mutex_init(&svc->memo.mu, NULL);
  pthread_mutex_init(&svc->docs.mu, NULL);
  return svc;
}

void gb_rpc_service_free(struct gb_rpc_service *svc) {
  if (!svc)
    return;
  tp_snapshot_free(svc->snap);
  for (int i = 0; i < svc->n_pool; i++)
    tp_evaluator_free(svc->pool[i]);
  pthread_mutex_destroy(&svc->pool_mu);
  memo_destroy(&svc->memo);
  doc_cache_destroy(&svc->docs);
  pthread_rwlock_destroy(&svc->lock);
  free(svc);
}

void gb_rpc_service_allow_writes(struct gb_rpc_service *svc, int allow) {
  atomic_store(&svc->allow_writes, allow != 0);
}

/* FAILED_PRECONDITION rather than PERMISSION_DENIED: no caller may write,
 * whoever it is; the server is in a mode (fed by the cluster) where the
 * operation does not apply. */
static int writes_refused(struct gb_rpc_ctx *ctx, struct gb_rpc_service *svc) {
  if (atomic_load(&svc->allow_writes))
    return 0;
  gb_rpc_server_fail(ctx, GB_RPC_FAILED_PRECONDITION,
                     "snapshot writes are disabled: the live snapshot follows the cluster; run "
                     "`serve --offline` or set grpc.allowSnapshotWrites to feed it over gRPC");
  return 1;
}

/* 1 if some document is a Node: a snapshot without nodes would make every
 * gang unplaceable, so a replace with none is a mistake, not an update. */
static int has_node(const struct doclist *l) {
  for (size_t i = 0; i < l->n; i++) {
    const char *kind = gc_value_as_str(gc_map_get(l->docs[i], "kind"));
    if (kind && !strcmp(kind, "Node"))
      return 1;
  }
  return 0;
}

void gb_rpc_service_set_serving(struct gb_rpc_service *svc, int serving) {
  atomic_store(&svc->serving, serving ? 1 : 0);
}

int gb_rpc_service_register(struct gb_rpc_service *svc, struct gb_rpc_server *srv) {
  const ProtobufCServiceDescriptor *calc_sd = &gangbridge__v1__gang_calculator__descriptor;
  const ProtobufCServiceDescriptor *place_sd = &gangbridge__v1__placement_evaluator__descriptor;
  const ProtobufCServiceDescriptor *health_sd = &grpc__health__v1__health__descriptor;
  gb_rpc_handler calc_h[1] = {NULL};
  gb_rpc_handler place_h[4] = {NULL, NULL, NULL, NULL};
  gb_rpc_handler health_h[2] = {NULL, NULL};
  static const char *const health_streaming[] = {"Watch", NULL};
  if (calc_sd->n_methods != 1 || place_sd->n_methods != 4 || health_sd->n_methods != 2)
    return GC_EUSAGE;
  /* Handlers by name, so a reordered .proto cannot mix them up. */
  for (unsigned i = 0; i < calc_sd->n_methods; i++)
    if (!strcmp(calc_sd->methods[i].name, "Calculate"))
      calc_h[i] = calculate;
  for (unsigned i = 0; i < place_sd->n_methods; i++) {
    const char *n = place_sd->methods[i].name;
    if (!strcmp(n, "Evaluate"))
      place_h[i] = evaluate;
    else if (!strcmp(n, "ReplaceSnapshot"))
      place_h[i] = replace_snapshot;
    else if (!strcmp(n, "UpdateNodes"))
      place_h[i] = update_nodes;
    else if (!strcmp(n, "GetSnapshotStatus"))
      place_h[i] = get_snapshot_status;
  }
  for (unsigned i = 0; i < health_sd->n_methods; i++)
    if (!strcmp(health_sd->methods[i].name, "Check"))
      health_h[i] = health_check;
  int rc = gb_rpc_server_add_service(srv, calc_sd, calc_h, NULL, svc);
  if (!rc)
    rc = gb_rpc_server_add_service(srv, place_sd, place_h, NULL, svc);
  if (!rc)
    rc = gb_rpc_server_add_service(srv, health_sd, health_h, health_streaming, svc);
  /* Light methods never wait behind big Evaluates: a readiness probe on
   * Health/Check must answer whatever the load. */
  if (!rc)
    rc = gb_rpc_server_mark_light(srv, "/" GB_RPC_SERVICE_HEALTH "/Check");
  if (!rc)
    rc = gb_rpc_server_mark_light(srv, "/" GB_RPC_SERVICE_PLACEMENT "/GetSnapshotStatus");
  return rc;
}
