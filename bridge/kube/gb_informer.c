/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informer: list/watch loops (reflectors, one thread each: one for all
 * namespaces or one namespace, one per namespace of a set) and the keyed
 * object cache they share.  A reflector's relist sweeps only its own
 * namespace's entries; handler calls are serialized by handler_mu.
 */
#include "gb_informer.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_clock.h"
#include "gb_hash.h"
#include "gb_kobj.h"
#include "gb_kube_watch.h"

#define RV_MAX 512
#define UID_MAX 128
#define KEY_MAX 512
#define MAX_NAMESPACES 256

/* A cache entry: one allocation holding key, rv, uid and JSON text. */
struct entry {
  struct entry *next;
  uint32_t hash;
  uint32_t gen;       /* list generation that last saw the object */
  uint16_t key_len, rv_len, uid_len;
  uint32_t text_len;
  char data[];        /* key \0 rv \0 uid \0 text \0 */
};

static const char *e_key(const struct entry *e) { return e->data; }
static const char *e_rv(const struct entry *e) { return e->data + e->key_len + 1; }
static const char *e_uid(const struct entry *e) {
  return e->data + e->key_len + 1 + e->rv_len + 1;
}
static const char *e_text(const struct entry *e) {
  return e->data + e->key_len + 1 + e->rv_len + 1 + e->uid_len + 1;
}
static size_t e_size(const struct entry *e) {
  return sizeof(*e) + e->key_len + e->rv_len + e->uid_len + e->text_len + 4;
}

struct gb_informer;

/* One list/watch loop: all namespaces (ns NULL), or one namespace. */
struct reflector {
  struct gb_informer *inf;
  char *ns;         /* owned; NULL: every namespace */
  char path[1024];
  char rv[RV_MAX];  /* under inf->lock */
  uint32_t gen;     /* the generation of its last list (its thread only) */
  int synced;       /* under inf->lock */
  int running;
  pthread_t thread;
  unsigned rng;
};

struct gb_informer {
  struct gb_kube_client *client;
  struct gb_informer_opts o;
  char *group, *version, *resource, *ns, *label, *field; /* owned copies */
  struct reflector *refl;
  size_t n_refl;

  pthread_rwlock_t cache_lock;
  struct entry **buckets;
  size_t n_buckets, n_entries, bytes;
  atomic_uint gen_seq; /* generations, unique across the reflectors */

  pthread_mutex_t lock; /* guards rv, stats, synced; with cond for sleeps */
  pthread_cond_t cond;
  char rv[RV_MAX];      /* the last resourceVersion seen by any reflector */
  struct gb_informer_stats st;
  int synced;           /* every reflector has listed once */
  int started;
  atomic_int stopping;
  pthread_mutex_t handler_mu; /* one handler call at a time, whatever the reflector */
  int limit_logged;
};

/* ---- helpers ------------------------------------------------------------ */

/* strdup that passes NULL through. */
static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

/* The bucket hash: the low 32 bits of FNV-1a are as well mixed as the rest
 * and the bucket index masks low bits. */
static uint32_t key_hash(const char *s, size_t n) { return (uint32_t)gb_hash_bytes(s, n); }

static void logf_(struct gb_informer *inf, int is_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(struct gb_informer *inf, int is_error, const char *fmt, ...) {
  if (!inf->o.on_log)
    return;
  char msg[1400];
  int n = snprintf(msg, sizeof(msg), "informer %s%s%s: ", inf->group[0] ? inf->group : "",
                   inf->group[0] ? "/" : "", inf->resource);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
  va_end(ap);
  inf->o.on_log(inf->o.log_arg, is_error, msg);
}

void gb_informer_strip(json_object *obj) {
  json_object *m;
  if (json_object_object_get_ex(obj, "metadata", &m) && json_object_is_type(m, json_type_object))
    json_object_object_del(m, "managedFields");
}

/* What the cache stores of obj: without managedFields, and only what the
 * owner's transform keeps. */
static void prepare(struct gb_informer *inf, json_object *obj) {
  gb_informer_strip(obj);
  if (inf->o.transform)
    inf->o.transform(obj);
}

/* Keeps only the members of obj named in keep (NULL-terminated).  The keys
 * to drop are collected first because json-c forbids deleting while
 * iterating; a batch is bounded, so very wide objects take several passes. */
static void keep_only(json_object *obj, const char *const *keep) {
  if (!obj || !json_object_is_type(obj, json_type_object))
    return;
  for (int more = 1; more;) {
    char *drop[64];
    size_t n = 0;
    more = 0;
    json_object_object_foreach(obj, k, v) {
      (void)v;
      size_t i = 0;
      while (keep[i] && strcmp(keep[i], k) != 0)
        i++;
      if (keep[i])
        continue;
      if (n == sizeof(drop) / sizeof(drop[0])) {
        more = 1;
        break;
      }
      drop[n++] = k;
    }
    for (size_t i = 0; i < n; i++)
      json_object_object_del(obj, drop[i]);
  }
}

/* Keeps only the PodScheduled and Ready entries of a pod's status.conditions (and of them
 * the fields the timeout tracker reads), rebuilt into a new array because
 * json-c arrays cannot drop elements in place. */
static void trim_conditions(json_object *status) {
  static const char *const cond[] = {"type", "status", "reason", "message", "lastTransitionTime",
                                     NULL};
  json_object *cs = gb_kobj_get(status, "conditions");
  if (!cs || !json_object_is_type(cs, json_type_array))
    return;
  json_object *keep = json_object_new_array();
  for (size_t i = 0; keep && i < json_object_array_length(cs); i++) {
    json_object *c = json_object_array_get_idx(cs, i), *t = gb_kobj_get(c, "type");
    if (t && json_object_is_type(t, json_type_string) &&
        (!strcmp(json_object_get_string(t), "PodScheduled") ||
         !strcmp(json_object_get_string(t), "Ready"))) {
      keep_only(c, cond);
      json_object_array_add(keep, json_object_get(c));
    }
  }
  if (keep && json_object_array_length(keep) > 0)
    json_object_object_add(status, "conditions", keep);
  else {
    json_object_put(keep);
    json_object_object_del(status, "conditions");
  }
}

/* Drops member k of obj when it is an empty object. */
static void drop_empty(json_object *obj, const char *k) {
  json_object *v = gb_kobj_get(obj, k);
  if (v && json_object_is_type(v, json_type_object) && json_object_object_length(v) == 0)
    json_object_object_del(obj, k);
}

void gb_informer_trim_pod(json_object *obj) {
  static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
  static const char *const meta[] = {"name",   "namespace",   "uid", "resourceVersion",
                                     "labels", "annotations", "creationTimestamp", NULL};
  static const char *const labels[] = {"jobset.sigs.k8s.io/jobset-name",
                                       "scheduling.x-k8s.io/pod-group", NULL};
  static const char *const anns[] = {"scheduling.k8s.io/group-name", NULL};
  static const char *const spec[] = {"schedulingGates", NULL};
  static const char *const status[] = {"conditions", NULL};
  keep_only(obj, top);
  json_object *m = gb_kobj_get(obj, "metadata");
  keep_only(m, meta);
  keep_only(gb_kobj_get(m, "labels"), labels);
  keep_only(gb_kobj_get(m, "annotations"), anns);
  keep_only(gb_kobj_get(obj, "spec"), spec);
  keep_only(gb_kobj_get(obj, "status"), status);
  trim_conditions(gb_kobj_get(obj, "status"));
  drop_empty(obj, "spec");
  drop_empty(obj, "status");
}

void gb_informer_trim_crd(json_object *obj) {
  static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", NULL};
  static const char *const meta[] = {"name", "uid", "resourceVersion", NULL};
  static const char *const spec[] = {"group", "names", "scope", "versions", NULL};
  static const char *const version[] = {"name", "served", "storage", NULL};
  keep_only(obj, top);
  keep_only(gb_kobj_get(obj, "metadata"), meta);
  json_object *s = gb_kobj_get(obj, "spec");
  keep_only(s, spec);
  json_object *vs = gb_kobj_get(s, "versions");
  if (vs && json_object_is_type(vs, json_type_array))
    for (size_t i = 0; i < json_object_array_length(vs); i++)
      keep_only(json_object_array_get_idx(vs, i), version);
}

/* Builds the cache key of obj into buf; returns 0 or GC_EINVAL. */
static int obj_key(json_object *obj, char *buf, size_t cap, const char **ns, const char **name) {
  *ns = gb_kobj_meta(obj, "namespace");
  *name = gb_kobj_meta(obj, "name");
  if (!*name || !(*name)[0])
    return GC_EINVAL;
  if (!*ns)
    *ns = "";
  int n = (*ns)[0] ? snprintf(buf, cap, "%s/%s", *ns, *name) : snprintf(buf, cap, "%s", *name);
  return (n < 0 || (size_t)n >= cap) ? GC_EINVAL : GC_OK;
}

/* ---- hash table (cache_lock held for writing by callers that mutate) ------ */

static struct entry **find_slot(struct gb_informer *inf, const char *key, size_t len,
                                uint32_t h) {
  struct entry **pp = &inf->buckets[h & (inf->n_buckets - 1)];
  while (*pp && !((*pp)->hash == h && (*pp)->key_len == len && !memcmp((*pp)->data, key, len)))
    pp = &(*pp)->next;
  return pp;
}

static int grow(struct gb_informer *inf) {
  size_t nb = inf->n_buckets * 2;
  struct entry **b = calloc(nb, sizeof(*b));
  if (!b)
    return GC_ENOMEM;
  for (size_t i = 0; i < inf->n_buckets; i++) {
    struct entry *e = inf->buckets[i];
    while (e) {
      struct entry *next = e->next;
      e->next = b[e->hash & (nb - 1)];
      b[e->hash & (nb - 1)] = e;
      e = next;
    }
  }
  free(inf->buckets);
  inf->buckets = b;
  inf->bytes += (nb - inf->n_buckets) * sizeof(*b);
  inf->n_buckets = nb;
  return GC_OK;
}

static struct entry *entry_new(const char *key, const char *rv, const char *uid, const char *text,
                               size_t text_len) {
  size_t kl = strlen(key), rl = strlen(rv), ul = strlen(uid);
  if (kl > UINT16_MAX || rl > UINT16_MAX || ul > UINT16_MAX || text_len > UINT32_MAX)
    return NULL;
  struct entry *e = malloc(sizeof(*e) + kl + rl + ul + text_len + 4);
  if (!e)
    return NULL;
  e->next = NULL;
  e->hash = key_hash(key, kl);
  e->gen = 0;
  e->key_len = (uint16_t)kl;
  e->rv_len = (uint16_t)rl;
  e->uid_len = (uint16_t)ul;
  e->text_len = (uint32_t)text_len;
  char *p = e->data;
  memcpy(p, key, kl + 1);
  p += kl + 1;
  memcpy(p, rv, rl + 1);
  p += rl + 1;
  memcpy(p, uid, ul + 1);
  p += ul + 1;
  memcpy(p, text, text_len);
  p[text_len] = 0;
  return e;
}

/* ---- applying changes ---------------------------------------------------- */

static void set_rv(struct gb_informer *inf, struct reflector *r, const char *rv) {
  if (!rv)
    return;
  pthread_mutex_lock(&inf->lock);
  snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
  if (r)
    snprintf(r->rv, sizeof(r->rv), "%s", rv);
  pthread_mutex_unlock(&inf->lock);
}

static void deliver(struct gb_informer *inf, enum gb_informer_op op, const char *key,
                    json_object *obj, const char *old_json) {
  pthread_mutex_lock(&inf->lock);
  if (op == GB_INFORMER_ADD)
    inf->st.adds++;
  else if (op == GB_INFORMER_UPDATE)
    inf->st.updates++;
  else
    inf->st.deletes++;
  pthread_mutex_unlock(&inf->lock);
  if (!inf->o.on_change)
    return;
  char kbuf[KEY_MAX];
  snprintf(kbuf, sizeof(kbuf), "%s", key);
  char *slash = strchr(kbuf, '/');
  struct gb_informer_change ch = {op, key, "", kbuf, obj, old_json};
  if (slash) {
    *slash = 0;
    ch.ns = kbuf;
    ch.name = slash + 1;
  }
  pthread_mutex_lock(&inf->handler_mu);
  inf->o.on_change(inf->o.handler_arg, &ch);
  pthread_mutex_unlock(&inf->handler_mu);
}

/* Inserts or replaces obj (already stripped).  Emits ADD or UPDATE unless the
 * cached copy has the same resourceVersion.  Stamps the entry with gen. */
static int upsert(struct gb_informer *inf, struct reflector *r, json_object *obj, uint32_t gen) {
  char key[KEY_MAX];
  const char *ns, *name;
  if (obj_key(obj, key, sizeof(key), &ns, &name)) {
    logf_(inf, 1, "object without a usable metadata.name ignored");
    return GC_OK;
  }
  const char *rv = gb_kobj_meta(obj, "resourceVersion");
  const char *uid = gb_kobj_meta(obj, "uid");
  if (rv && strlen(rv) >= RV_MAX) {
    logf_(inf, 1, "%s: resourceVersion longer than %d bytes ignored", key, RV_MAX - 1);
    return GC_OK;
  }
  if (uid && strlen(uid) >= UID_MAX)
    uid = NULL;
  size_t tlen = 0;
  const char *text = json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN, &tlen);
  if (!text)
    return GC_ENOMEM;
  struct entry *ne = entry_new(key, rv ? rv : "", uid ? uid : "", text, tlen);
  if (!ne)
    return GC_ENOMEM;
  ne->gen = gen;
  struct entry *old = NULL;
  int op = -1;
  pthread_rwlock_wrlock(&inf->cache_lock);
  struct entry **pp = find_slot(inf, key, ne->key_len, ne->hash);
  if (*pp) {
    old = *pp;
    if (rv && !strcmp(e_rv(old), rv)) {
      old->gen = gen; /* unchanged: keep the old entry, just mark it seen */
      pthread_rwlock_unlock(&inf->cache_lock);
      free(ne);
      return GC_OK;
    }
    ne->next = old->next;
    *pp = ne;
    inf->bytes += e_size(ne);
    inf->bytes -= e_size(old);
    op = GB_INFORMER_UPDATE;
  } else {
    size_t max = inf->o.max_objects;
    if (inf->n_entries >= max) {
      pthread_rwlock_unlock(&inf->cache_lock);
      free(ne);
      if (!inf->limit_logged++)
        logf_(inf, 1, "cache full (%zu objects); %s not cached", max, key);
      return GC_ELIMIT;
    }
    if (inf->n_entries >= inf->n_buckets && grow(inf) == GC_OK)
      pp = find_slot(inf, key, ne->key_len, ne->hash);
    *pp = ne;
    inf->n_entries++;
    inf->bytes += e_size(ne);
    op = GB_INFORMER_ADD;
  }
  pthread_rwlock_unlock(&inf->cache_lock);
  if (rv)
    set_rv(inf, r, rv);
  deliver(inf, (enum gb_informer_op)op, key, obj, old ? e_text(old) : NULL);
  free(old);
  return GC_OK;
}

/* Removes the entry of key; returns it (caller frees) or NULL. */
static struct entry *remove_key(struct gb_informer *inf, const char *key) {
  size_t len = strlen(key);
  uint32_t h = key_hash(key, len);
  pthread_rwlock_wrlock(&inf->cache_lock);
  struct entry **pp = find_slot(inf, key, len, h);
  struct entry *e = *pp;
  if (e) {
    *pp = e->next;
    inf->n_entries--;
    inf->bytes -= e_size(e);
  }
  pthread_rwlock_unlock(&inf->cache_lock);
  return e;
}

static json_object *parse_text(const char *text, size_t len) {
  json_tokener *tok = json_tokener_new_ex(GB_WATCH_DEFAULT_DEPTH);
  if (!tok)
    return NULL;
  json_object *o = json_tokener_parse_ex(tok, text, (int)len);
  if (json_tokener_get_error(tok) != json_tokener_success) {
    json_object_put(o);
    o = NULL;
  }
  json_tokener_free(tok);
  return o;
}

/* 1 when the cache key belongs to namespace ns (NULL: every key). */
static int in_ns(const char *key, const char *ns) {
  if (!ns)
    return 1;
  size_t n = strlen(ns);
  return !strncmp(key, ns, n) && key[n] == '/';
}

/* Deletes every entry of ns (NULL: all) not stamped with gen (objects gone
 * during a relist): unlinks them all in one pass under the lock, then tells
 * the handler. */
static void sweep(struct gb_informer *inf, const char *ns, uint32_t gen) {
  struct entry *victims = NULL;
  pthread_rwlock_wrlock(&inf->cache_lock);
  for (size_t i = 0; i < inf->n_buckets; i++) {
    struct entry **pp = &inf->buckets[i];
    while (*pp) {
      struct entry *e = *pp;
      if (e->gen != gen && in_ns(e_key(e), ns)) {
        *pp = e->next;
        inf->n_entries--;
        inf->bytes -= e_size(e);
        e->next = victims;
        victims = e;
      } else {
        pp = &e->next;
      }
    }
  }
  pthread_rwlock_unlock(&inf->cache_lock);
  while (victims) {
    struct entry *v = victims;
    victims = v->next;
    json_object *obj = parse_text(e_text(v), v->text_len);
    deliver(inf, GB_INFORMER_DELETE, e_key(v), obj, NULL);
    json_object_put(obj);
    free(v);
  }
}

/* ---- list and watch ------------------------------------------------------ */

struct list_ctx {
  struct reflector *r;
  uint32_t gen;
};

static int on_item(void *arg, json_object *obj) {
  struct list_ctx *lc = arg;
  struct gb_informer *inf = lc->r->inf;
  if (atomic_load(&inf->stopping))
    return GC_EUSAGE;
  prepare(inf, obj);
  int rc = upsert(inf, lc->r, obj, lc->gen);
  return rc == GC_ELIMIT ? GC_OK : rc;
}

static int do_list(struct reflector *r) {
  struct gb_informer *inf = r->inf;
  struct gb_kube_list_opts lo = {inf->label, inf->field, inf->o.page_limit};
  struct gb_kube_error e;
  char rv[RV_MAX];
  struct list_ctx lc = {r, atomic_fetch_add(&inf->gen_seq, 1) + 1};
  int rc = gb_kube_list(inf->client, r->path, &lo, on_item, &lc, rv, sizeof(rv), &e);
  if (rc) {
    if (rc != GC_EUSAGE) {
      char buf[1200];
      logf_(inf, 1, "list%s%s failed: %s", r->ns ? " in " : "", r->ns ? r->ns : "",
            gb_kube_error_str(&e, buf, sizeof(buf)));
    }
    return rc;
  }
  r->gen = lc.gen;
  sweep(inf, r->ns, lc.gen);
  pthread_mutex_lock(&inf->lock);
  snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
  snprintf(r->rv, sizeof(r->rv), "%s", rv);
  inf->st.lists++;
  r->synced = 1;
  size_t synced = 0;
  for (size_t i = 0; i < inf->n_refl; i++)
    synced += inf->refl[i].synced;
  inf->synced = synced == inf->n_refl;
  pthread_cond_broadcast(&inf->cond);
  pthread_mutex_unlock(&inf->lock);
  return GC_OK;
}

#define WATCH_GONE 1001
#define WATCH_ERROR_EVENT 1002
#define WATCH_STOP 1003

/* Removes obj's key from the cache and tells the handler (nothing when the
 * object was not cached: its delete was already delivered by a relist). */
static void apply_delete(struct gb_informer *inf, struct reflector *r, json_object *obj,
                         const char *rv) {
  char key[KEY_MAX];
  const char *ns, *name;
  if (obj_key(obj, key, sizeof(key), &ns, &name) == GC_OK) {
    struct entry *old = remove_key(inf, key);
    if (old) {
      prepare(inf, obj);
      deliver(inf, GB_INFORMER_DELETE, key, obj, NULL);
      free(old);
    }
  }
  set_rv(inf, r, rv);
}

struct watch_ctx {
  struct gb_informer *inf;
  struct reflector *r;
  uint64_t events;
  struct gb_kube_error err; /* from an ERROR event */
};

static int on_event(void *arg, const struct gb_watch_event *ev) {
  struct watch_ctx *w = arg;
  struct gb_informer *inf = w->inf;
  if (atomic_load(&inf->stopping))
    return WATCH_STOP;
  switch (ev->type) {
  case GB_WATCH_BOOKMARK:
    pthread_mutex_lock(&inf->lock);
    inf->st.bookmarks++;
    pthread_mutex_unlock(&inf->lock);
    set_rv(inf, w->r, ev->rv);
    return 0;
  case GB_WATCH_ERROR:
    gb_kube_status_from_json(ev->object, 0, &w->err);
    return gb_kube_error_is_gone(&w->err) ? WATCH_GONE : WATCH_ERROR_EVENT;
  case GB_WATCH_ADDED:
  case GB_WATCH_MODIFIED: {
    w->events++;
    pthread_mutex_lock(&inf->lock);
    inf->st.events++;
    pthread_mutex_unlock(&inf->lock);
    prepare(inf, ev->object);
    int rc = upsert(inf, w->r, ev->object, w->r->gen);
    return rc == GC_ENOMEM ? rc : 0;
  }
  case GB_WATCH_DELETED: {
    w->events++;
    pthread_mutex_lock(&inf->lock);
    inf->st.events++;
    pthread_mutex_unlock(&inf->lock);
    apply_delete(inf, w->r, ev->object, ev->rv);
    return 0;
  }
  }
  return 0;
}

static int should_abort(void *arg) {
  struct watch_ctx *w = arg;
  return atomic_load(&w->inf->stopping);
}

static double rand01(struct reflector *r) {
  return (double)rand_r(&r->rng) / ((double)RAND_MAX + 1.0);
}

/* Sleeps up to s seconds, waking early on stop. */
static void nap(struct gb_informer *inf, double s) {
  struct timespec ts;
  gb_clock_deadline_s(&ts, s);
  pthread_mutex_lock(&inf->lock);
  while (!atomic_load(&inf->stopping)) {
    if (pthread_cond_timedwait(&inf->cond, &inf->lock, &ts) == ETIMEDOUT)
      break;
  }
  pthread_mutex_unlock(&inf->lock);
}

/* Full-jitter exponential backoff: uniform in [0, min(max, base*2^n)],
 * floored at a tenth of base so failures never spin. */
static void backoff(struct reflector *r, int *attempt) {
  struct gb_informer *inf = r->inf;
  int n = *attempt < 30 ? *attempt : 30;
  double cap = inf->o.backoff_base_s * (double)(1u << n);
  if (cap > inf->o.backoff_max_s)
    cap = inf->o.backoff_max_s;
  double d = cap * rand01(r);
  if (d < inf->o.backoff_base_s / 10)
    d = inf->o.backoff_base_s / 10;
  (*attempt)++;
  nap(inf, d);
}

static void *run(void *arg) {
  struct reflector *r = arg;
  struct gb_informer *inf = r->inf;
  int need_list = 1, attempt = 0, failures = 0;
  while (!atomic_load(&inf->stopping)) {
    if (need_list) {
      int rc = do_list(r);
      if (atomic_load(&inf->stopping))
        break;
      if (rc) {
        pthread_mutex_lock(&inf->lock);
        inf->st.list_failures++;
        pthread_mutex_unlock(&inf->lock);
        backoff(r, &attempt);
        continue;
      }
      need_list = 0;
      failures = 0;
    }
    char rv[RV_MAX];
    pthread_mutex_lock(&inf->lock);
    snprintf(rv, sizeof(rv), "%s", r->rv);
    pthread_mutex_unlock(&inf->lock);
    long min = inf->o.min_watch_timeout_s;
    struct gb_kube_watch_opts wo = {rv, min + (long)(rand01(r) * (double)min), 1, inf->label,
                                    inf->field, inf->o.max_event_bytes};
    struct watch_ctx w = {0};
    w.inf = inf;
    w.r = r;
    struct gb_kube_error e;
    pthread_mutex_lock(&inf->lock);
    inf->st.watches++;
    pthread_mutex_unlock(&inf->lock);
    double t0 = gb_clock_s();
    int rc = gb_kube_watch_once(inf->client, r->path, &wo, on_event, should_abort, &w, &e);
    if (atomic_load(&inf->stopping) || rc == WATCH_STOP)
      break;
    char buf[1200];
    if (rc == WATCH_GONE || (rc == GC_EIO && gb_kube_error_is_gone(&e))) {
      pthread_mutex_lock(&inf->lock);
      inf->st.relists_gone++;
      pthread_mutex_unlock(&inf->lock);
      logf_(inf, 0, "resourceVersion %s expired (%s); relisting", rv,
            gb_kube_error_str(rc == WATCH_GONE ? &w.err : &e, buf, sizeof(buf)));
      need_list = 1;
      continue;
    }
    if (rc == GC_OK) {
      /* A normal end.  One that came back at once with nothing is treated
       * as a failure so a misbehaving server cannot make us spin. */
      if (w.events == 0 && gb_clock_s() - t0 < 1.0) {
        failures++;
        backoff(r, &attempt);
      } else {
        attempt = 0;
        failures = 0;
      }
      continue;
    }
    pthread_mutex_lock(&inf->lock);
    inf->st.watch_failures++;
    pthread_mutex_unlock(&inf->lock);
    logf_(inf, 1, "watch failed: %s",
          gb_kube_error_str(rc == WATCH_ERROR_EVENT ? &w.err : &e, buf, sizeof(buf)));
    if (w.events > 0)
      attempt = 0; /* it was working: restart the backoff sequence */
    if (++failures >= inf->o.relist_after_failures)
      need_list = 1;
    /* A 429 or 503 with Retry-After sets a floor on the wait. */
    int ra = rc == WATCH_ERROR_EVENT ? w.err.retry_after_s : e.retry_after_s;
    if (ra > 0)
      nap(inf, ra < inf->o.backoff_max_s ? ra : inf->o.backoff_max_s);
    backoff(r, &attempt);
  }
  return NULL;
}

/* ---- public API ---------------------------------------------------------- */

/* One reflector per namespace of opts->namespaces (sorted, unique), or one
 * for opts->namespace (NULL: every namespace). */
static int make_reflectors(struct gb_informer *inf, const struct gb_informer_opts *opts,
                           struct gc_diags *diags) {
  size_t n = opts->n_namespaces ? opts->n_namespaces : 1;
  if (n > MAX_NAMESPACES || (opts->n_namespaces && opts->namespace)) {
    gc_diags_addf(diags, "informer: at most %d namespaces, and not with a single namespace",
                  MAX_NAMESPACES);
    return GC_EINVAL;
  }
  inf->refl = calloc(n, sizeof(*inf->refl));
  if (!inf->refl)
    return GC_ENOMEM;
  inf->n_refl = n;
  for (size_t i = 0; i < n; i++) {
    struct reflector *r = &inf->refl[i];
    const char *ns = opts->n_namespaces ? opts->namespaces[i] : opts->namespace;
    r->inf = inf;
    if (ns && !*ns) {
      gc_diags_addf(diags, "informer: an empty namespace in the set");
      return GC_EINVAL;
    }
    for (size_t j = 0; ns && j < i; j++)
      if (!strcmp(inf->refl[j].ns, ns)) {
        gc_diags_addf(diags, "informer: namespace %s is given twice", ns);
        return GC_EINVAL;
      }
    if (ns && !(r->ns = strdup(ns)))
      return GC_ENOMEM;
    if (gb_kube_path(r->path, sizeof(r->path), inf->group, inf->version, inf->resource, r->ns,
                     NULL)) {
      gc_diags_addf(diags, "informer: invalid group/version/resource/namespace");
      return GC_EINVAL;
    }
  }
  return GC_OK;
}

int gb_informer_new(struct gb_kube_client *client, const struct gb_informer_opts *opts,
                    struct gb_informer **out, struct gc_diags *diags) {
  *out = NULL;
  if (!client || !opts || !opts->version || !opts->resource) {
    gc_diags_addf(diags, "informer: version and resource are required");
    return GC_EINVAL;
  }
  struct gb_informer *inf = calloc(1, sizeof(*inf));
  if (!inf)
    return GC_ENOMEM;
  inf->client = client;
  inf->o = *opts;
  inf->group = xstrdup(opts->group ? opts->group : "");
  inf->version = xstrdup(opts->version);
  inf->resource = xstrdup(opts->resource);
  inf->ns = opts->namespace ? xstrdup(opts->namespace) : NULL;
  inf->label = opts->label_selector ? xstrdup(opts->label_selector) : NULL;
  inf->field = opts->field_selector ? xstrdup(opts->field_selector) : NULL;
  inf->n_buckets = 64;
  inf->buckets = calloc(inf->n_buckets, sizeof(*inf->buckets));
  if (!inf->group || !inf->version || !inf->resource || !inf->buckets ||
      (opts->namespace && !inf->ns) || (opts->label_selector && !inf->label) ||
      (opts->field_selector && !inf->field)) {
    gb_informer_free(inf);
    return GC_ENOMEM;
  }
  inf->bytes = inf->n_buckets * sizeof(*inf->buckets);
  int rc = make_reflectors(inf, opts, diags);
  if (rc) {
    gb_informer_free(inf);
    return rc;
  }
  inf->o.group = inf->group;
  inf->o.version = inf->version;
  inf->o.resource = inf->resource;
  inf->o.namespace = inf->ns;
  inf->o.namespaces = NULL; /* copied into the reflectors */
  inf->o.label_selector = inf->label;
  inf->o.field_selector = inf->field;
  if (inf->o.page_limit <= 0)
    inf->o.page_limit = 500;
  if (inf->o.min_watch_timeout_s <= 0)
    inf->o.min_watch_timeout_s = 300;
  if (!inf->o.max_objects)
    inf->o.max_objects = 1000000;
  if (inf->o.backoff_base_s <= 0)
    inf->o.backoff_base_s = 0.8;
  if (inf->o.backoff_max_s <= 0)
    inf->o.backoff_max_s = 30;
  if (inf->o.relist_after_failures <= 0)
    inf->o.relist_after_failures = 5;
  pthread_rwlock_init(&inf->cache_lock, NULL);
  pthread_mutex_init(&inf->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&inf->cond, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&inf->stopping, 0);
  pthread_mutex_init(&inf->handler_mu, NULL);
  for (size_t i = 0; i < inf->n_refl; i++)
    inf->refl[i].rng = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&inf->refl[i];
  inf->started = -1; /* locks initialised */
  *out = inf;
  return GC_OK;
}

static void join_all(struct gb_informer *inf) {
  pthread_mutex_lock(&inf->lock);
  atomic_store(&inf->stopping, 1);
  pthread_cond_broadcast(&inf->cond);
  pthread_mutex_unlock(&inf->lock);
  for (size_t i = 0; i < inf->n_refl; i++)
    if (inf->refl[i].running) {
      pthread_join(inf->refl[i].thread, NULL);
      inf->refl[i].running = 0;
    }
}

int gb_informer_start(struct gb_informer *inf) {
  if (inf->started == 1)
    return GC_EUSAGE;
  atomic_store(&inf->stopping, 0);
  for (size_t i = 0; i < inf->n_refl; i++) {
    if (pthread_create(&inf->refl[i].thread, NULL, run, &inf->refl[i]) != 0) {
      join_all(inf);
      return GC_ENOMEM;
    }
    inf->refl[i].running = 1;
  }
  inf->started = 1;
  return GC_OK;
}

void gb_informer_stop(struct gb_informer *inf) {
  if (!inf || inf->started != 1)
    return;
  join_all(inf);
  inf->started = -1;
}

void gb_informer_free(struct gb_informer *inf) {
  if (!inf)
    return;
  gb_informer_stop(inf);
  for (size_t i = 0; inf->buckets && i < inf->n_buckets; i++) {
    struct entry *e = inf->buckets[i];
    while (e) {
      struct entry *next = e->next;
      free(e);
      e = next;
    }
  }
  free(inf->buckets);
  if (inf->started == -1) {
    pthread_rwlock_destroy(&inf->cache_lock);
    pthread_mutex_destroy(&inf->lock);
    pthread_cond_destroy(&inf->cond);
    pthread_mutex_destroy(&inf->handler_mu);
  }
  for (size_t i = 0; inf->refl && i < inf->n_refl; i++)
    free(inf->refl[i].ns);
  free(inf->refl);
  free(inf->group);
  free(inf->version);
  free(inf->resource);
  free(inf->ns);
  free(inf->label);
  free(inf->field);
  free(inf);
}

int gb_informer_has_synced(struct gb_informer *inf) {
  pthread_mutex_lock(&inf->lock);
  int s = inf->synced;
  pthread_mutex_unlock(&inf->lock);
  return s;
}

int gb_informer_wait_synced(struct gb_informer *inf, long timeout_ms) {
  struct timespec ts;
  gb_clock_deadline(&ts, (int64_t)timeout_ms * 1000000);
  pthread_mutex_lock(&inf->lock);
  while (!inf->synced)
    if (pthread_cond_timedwait(&inf->cond, &inf->lock, &ts) == ETIMEDOUT)
      break;
  int s = inf->synced;
  pthread_mutex_unlock(&inf->lock);
  return s;
}

void gb_informer_last_rv(struct gb_informer *inf, char *buf, size_t cap) {
  pthread_mutex_lock(&inf->lock);
  snprintf(buf, cap, "%s", inf->rv);
  pthread_mutex_unlock(&inf->lock);
}

void gb_informer_stats(struct gb_informer *inf, struct gb_informer_stats *out) {
  pthread_mutex_lock(&inf->lock);
  *out = inf->st;
  pthread_mutex_unlock(&inf->lock);
  pthread_rwlock_rdlock(&inf->cache_lock);
  out->objects = inf->n_entries;
  out->cache_bytes = inf->bytes;
  pthread_rwlock_unlock(&inf->cache_lock);
}

static const struct entry *lookup(struct gb_informer *inf, const char *ns, const char *name) {
  char key[KEY_MAX];
  int n = ns && ns[0] ? snprintf(key, sizeof(key), "%s/%s", ns, name)
                      : snprintf(key, sizeof(key), "%s", name);
  if (n < 0 || (size_t)n >= sizeof(key))
    return NULL;
  return *find_slot(inf, key, (size_t)n, key_hash(key, (size_t)n));
}

int gb_informer_get_json(struct gb_informer *inf, const char *ns, const char *name,
                         json_object **out) {
  *out = NULL;
  int rc = GC_ENOTFOUND;
  pthread_rwlock_rdlock(&inf->cache_lock);
  const struct entry *e = lookup(inf, ns, name);
  if (e) {
    *out = parse_text(e_text(e), e->text_len);
    rc = *out ? GC_OK : GC_ENOMEM;
  }
  pthread_rwlock_unlock(&inf->cache_lock);
  return rc;
}

int gb_informer_get_value(struct gb_informer *inf, const char *ns, const char *name,
                          struct gc_arena *a, struct gc_value **out) {
  *out = NULL;
  json_object *j = NULL;
  int rc = gb_informer_get_json(inf, ns, name, &j);
  if (rc)
    return rc;
  rc = gb_kube_json_to_value(a, j, 0, out);
  json_object_put(j);
  return rc;
}

int gb_informer_get_meta(struct gb_informer *inf, const char *ns, const char *name,
                         char *rv_buf, size_t rv_cap, char *uid_buf, size_t uid_cap) {
  int rc = GC_ENOTFOUND;
  pthread_rwlock_rdlock(&inf->cache_lock);
  const struct entry *e = lookup(inf, ns, name);
  if (e) {
    if (rv_buf)
      snprintf(rv_buf, rv_cap, "%s", e_rv(e));
    if (uid_buf)
      snprintf(uid_buf, uid_cap, "%s", e_uid(e));
    rc = GC_OK;
  }
  pthread_rwlock_unlock(&inf->cache_lock);
  return rc;
}

int gb_informer_foreach_key(struct gb_informer *inf, gb_informer_key_fn fn, void *arg) {
  int rc = 0;
  pthread_rwlock_rdlock(&inf->cache_lock);
  for (size_t i = 0; i < inf->n_buckets && !rc; i++)
    for (struct entry *e = inf->buckets[i]; e && !rc; e = e->next)
      rc = fn(arg, e_key(e));
  pthread_rwlock_unlock(&inf->cache_lock);
  return rc;
}

int gb_informer_feed(struct gb_informer *inf, int watch_type, json_object *obj) {
  if (inf->started == 1)
    return GC_EUSAGE;
  char key[KEY_MAX];
  const char *ns, *name;
  if (watch_type != GB_WATCH_BOOKMARK && obj_key(obj, key, sizeof(key), &ns, &name))
    return GC_EINVAL;
  int rc = GC_OK;
  const char *rv = gb_kobj_meta(obj, "resourceVersion");
  if (watch_type == GB_WATCH_ADDED || watch_type == GB_WATCH_MODIFIED) {
    prepare(inf, obj);
    rc = upsert(inf, NULL, obj, inf->refl[0].gen);
  } else if (watch_type == GB_WATCH_DELETED) {
    apply_delete(inf, NULL, obj, rv);
  } else if (watch_type == GB_WATCH_BOOKMARK) {
    set_rv(inf, NULL, rv);
  } else {
    return GC_EINVAL;
  }
  pthread_mutex_lock(&inf->lock);
  inf->synced = 1;
  pthread_cond_broadcast(&inf->cond);
  pthread_mutex_unlock(&inf->lock);
  return rc;
}

size_t gb_informer_count(struct gb_informer *inf) {
  pthread_rwlock_rdlock(&inf->cache_lock);
  size_t n = inf->n_entries;
  pthread_rwlock_unlock(&inf->cache_lock);
  return n;
}
