/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informer: the handlers and their sealing into one list and watch, the
 * keyed object cache the reflectors (gb_informer_loop.c) fill, and the
 * delivery of each change to the handlers that select the object.  A
 * reflector's relist sweeps only its own namespace's entries; handler
 * calls are serialized by handler_mu.
 */
#include "gb_informer.h"
#include "gb_informer_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_clock.h"
#include "gb_hash.h"
#include "gb_informer_int.h"
#include "gb_kobj.h"
#include "gb_kube_watch.h"

typedef struct gb_inf_entry entry_t;

static const char *e_key(const entry_t *e) { return e->data; }
static const char *e_rv(const entry_t *e) { return e->data + e->key_len + 1; }
static const char *e_uid(const entry_t *e) { return e->data + e->key_len + 1 + e->rv_len + 1; }
static const char *e_text(const entry_t *e) {
  return e->data + e->key_len + 1 + e->rv_len + 1 + e->uid_len + 1;
}
static size_t e_size(const entry_t *e) {
  return sizeof(*e) + e->key_len + e->rv_len + e->uid_len + e->text_len + 4;
}

/* What the informer itself reads of every object, whatever its handlers keep. */
static const struct gb_keep OWN_KEEP[] = {{{"metadata", "name"}},
                                          {{"metadata", "namespace"}},
                                          {{"metadata", "uid"}},
                                          {{"metadata", "resourceVersion"}}};
#define N_OWN_KEEP (sizeof(OWN_KEEP) / sizeof(OWN_KEEP[0]))
#define SEL_ARENA_LIMIT (256u << 10) /* a parsed selector: 4 KiB of text at most */

/* ---- helpers ------------------------------------------------------------------- */

static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

static int streq(const char *a, const char *b) {
  return (!a || !*a) ? (!b || !*b) : (b && !strcmp(a, b));
}

/* The bucket hash: the low 32 bits of FNV-1a are as well mixed as the rest
 * and the bucket index masks low bits. */
static uint32_t key_hash(const char *s, size_t n) { return (uint32_t)gb_hash_bytes(s, n); }

void gb_informer_logf(struct gb_informer *inf, int is_error, const char *fmt, ...) {
  if (!inf->o.on_log)
    return;
  char msg[1400];
  int n = snprintf(msg, sizeof(msg), "informer %s: ", inf->name);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
  va_end(ap);
  inf->o.on_log(inf->o.log_arg, is_error, msg);
}

/* What the cache stores of obj: without managedFields, and only what the
 * handlers read. */
static void prepare(struct gb_informer *inf, json_object *obj) {
  json_object *md = gb_kobj_obj(obj, "metadata");
  if (md)
    json_object_object_del(md, "managedFields");
  if (inf->n_keeps)
    gb_keep_prune(obj, inf->keeps, inf->n_keeps);
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

/* ---- handlers and sealing ------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int in_set(char *const *set, size_t n, const char *s) {
  return bsearch(&s, set, n, sizeof(*set), cmp_str) != NULL;
}

/* Copies names (n of them) into a sorted set without duplicates. */
static int copy_set(const char *const *names, size_t n, char ***out, size_t *n_out,
                    struct gc_diags *d) {
  *out = NULL;
  *n_out = 0;
  if (!n)
    return 0;
  if (n > GB_INF_MAX_NAMESPACES) {
    gc_diags_addf(d, "informer: at most %d namespaces", GB_INF_MAX_NAMESPACES);
    return GC_EINVAL;
  }
  char **set = calloc(n, sizeof(*set));
  if (!set)
    return GC_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (!names[i] || !*names[i]) {
      gc_diags_addf(d, "informer: an empty namespace in the set");
      goto bad;
    }
    if (!(set[k++] = strdup(names[i])))
      goto oom;
  }
  qsort(set, k, sizeof(*set), cmp_str);
  size_t u = 0;
  for (size_t i = 0; i < k; i++) {
    if (u && !strcmp(set[u - 1], set[i])) {
      free(set[i]);
      continue;
    }
    set[u++] = set[i];
  }
  *out = set;
  *n_out = u;
  return 0;
oom:
  for (size_t i = 0; i < k; i++)
    free(set[i]);
  free(set);
  return GC_ENOMEM;
bad:
  for (size_t i = 0; i < k; i++)
    free(set[i]);
  free(set);
  return GC_EINVAL;
}

static void handler_free(struct gb_inf_handler *h) {
  for (size_t i = 0; i < h->n_ns; i++)
    free(h->ns[i]);
  free(h->ns);
  free(h->label);
  free(h->field);
  gc_arena_free(h->sel_arena);
  memset(h, 0, sizeof(*h));
}

int gb_informer_add_handler(struct gb_informer *inf, const struct gb_informer_handler *h,
                            struct gc_diags *diags) {
  if (inf->sealed || inf->n_h == GB_INFORMER_MAX_HANDLERS) {
    gc_diags_addf(diags, "informer %s: %s", inf->name,
                  inf->sealed ? "a handler added after the start" : "too many handlers");
    return GC_EUSAGE;
  }
  int rc = h->keep ? gb_keep_check(h->keep, h->n_keep, diags) : 0;
  if (rc)
    return rc;
  struct gb_inf_handler *x = &inf->h[inf->n_h];
  memset(x, 0, sizeof(*x));
  /* Parsed now, so a bad selector is refused here; applied here only when
   * the list's selection turns out wider than this handler's. */
  x->sel_arena = gc_arena_new(SEL_ARENA_LIMIT);
  rc = x->sel_arena ? gb_selector_parse(x->sel_arena, h->label_selector, &x->sel, diags)
                    : GC_ENOMEM;
  if (!rc)
    rc = gb_selector_add_fields(x->sel_arena, h->field_selector, &x->sel, diags);
  if (rc) {
    handler_free(x);
    return rc;
  }
  x->fn = h->on_change;
  x->arg = h->arg;
  x->keep = h->keep;
  x->n_keep = h->keep ? h->n_keep : 0;
  x->max_objects = h->max_objects;
  x->label = h->label_selector && *h->label_selector ? strdup(h->label_selector) : NULL;
  x->field = h->field_selector && *h->field_selector ? strdup(h->field_selector) : NULL;
  rc = copy_set(h->namespaces, h->n_namespaces, &x->ns, &x->n_ns, diags);
  for (size_t i = 0; !rc && i < x->n_ns; i++) {
    char path[1024];
    if (gb_kube_client_path(path, sizeof(path), inf->group, inf->version, inf->resource, x->ns[i],
                            NULL)) {
      gc_diags_addf(diags, "informer %s: namespace \"%.64s\": not a valid namespace", inf->name,
                    x->ns[i]);
      rc = GC_EINVAL;
    }
  }
  if (!rc && ((h->label_selector && *h->label_selector && !x->label) ||
              (h->field_selector && *h->field_selector && !x->field)))
    rc = GC_ENOMEM;
  if (rc) {
    handler_free(x);
    return rc;
  }
  inf->n_h++;
  return 0;
}

/* The namespaces the list spans: NULL and 0 when some handler (or none)
 * watches every namespace, else the union of theirs (sorted, unique). */
static int union_namespaces(struct gb_informer *inf, char ***out, size_t *n_out) {
  *out = NULL;
  *n_out = 0;
  size_t total = 0;
  for (size_t i = 0; i < inf->n_h; i++) {
    if (!inf->h[i].n_ns)
      return 0;
    total += inf->h[i].n_ns;
  }
  if (!inf->n_h)
    return 0;
  const char **all = calloc(total, sizeof(*all));
  if (!all)
    return GC_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < inf->n_h; i++)
    for (size_t j = 0; j < inf->h[i].n_ns; j++)
      all[k++] = inf->h[i].ns[j];
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = copy_set(all, k, out, n_out, &d);
  if (rc == GC_EINVAL)
    gb_informer_logf(inf, 1, "%s", d.n ? d.msgs[0] : "bad namespaces");
  gc_diags_destroy(&d);
  free(all);
  return rc;
}

/* The selectors every handler shares become the list's; a handler that
 * has others, or fewer namespaces than the list, filters here. */
static int seal_selection(struct gb_informer *inf, char **ns, size_t n_ns) {
  inf->label = inf->n_h ? inf->h[0].label : NULL;
  inf->field = inf->n_h ? inf->h[0].field : NULL;
  for (size_t i = 1; i < inf->n_h; i++) {
    if (!streq(inf->label, inf->h[i].label))
      inf->label = NULL;
    if (!streq(inf->field, inf->h[i].field))
      inf->field = NULL;
  }
  for (size_t i = 0; i < inf->n_h; i++) {
    struct gb_inf_handler *h = &inf->h[i];
    h->ns_filter = h->n_ns && h->n_ns != (n_ns ? n_ns : (size_t)-1);
    for (size_t j = 0; !h->ns_filter && j < h->n_ns; j++)
      h->ns_filter = strcmp(h->ns[j], ns[j]) != 0;
    h->sel_filter = !streq(h->label, inf->label) || !streq(h->field, inf->field);
  }
  return 0;
}

/* The cached record keeps the union of the handlers' paths (none when one
 * of them reads everything, or when there is no handler). */
static void seal_keep(struct gb_informer *inf) {
  size_t n = N_OWN_KEEP, max = 0;
  int all = inf->n_h == 0;
  for (size_t i = 0; i < inf->n_h; i++) {
    all |= !inf->h[i].keep;
    n += inf->h[i].n_keep;
    if (inf->h[i].max_objects > max)
      max = inf->h[i].max_objects;
  }
  if (max && !inf->o.max_objects)
    inf->o.max_objects = max;
  if (!inf->o.max_objects)
    inf->o.max_objects = 1000000;
  inf->n_keeps = 0;
  if (all || n > GB_KEEP_MAX) {
    if (!all)
      gb_informer_logf(inf, 1, "more than %d keep paths: objects are cached whole", GB_KEEP_MAX);
    return;
  }
  for (size_t i = 0; i < N_OWN_KEEP; i++)
    inf->keeps[inf->n_keeps++] = &OWN_KEEP[i];
  for (size_t i = 0; i < inf->n_h; i++)
    for (size_t j = 0; j < inf->h[i].n_keep; j++)
      inf->keeps[inf->n_keeps++] = &inf->h[i].keep[j];
}

/* One reflector per namespace of the list's set, or one for all. */
static int make_reflectors(struct gb_informer *inf, char **ns, size_t n_ns) {
  size_t n = n_ns ? n_ns : 1;
  inf->refl = calloc(n, sizeof(*inf->refl));
  if (!inf->refl)
    return GC_ENOMEM;
  inf->n_refl = n;
  for (size_t i = 0; i < n; i++) {
    struct gb_inf_reflector *r = &inf->refl[i];
    r->inf = inf;
    r->rng = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)r;
    if (n_ns && !(r->ns = strdup(ns[i])))
      return GC_ENOMEM;
    if (gb_kube_client_path(r->path, sizeof(r->path), inf->group, inf->version, inf->resource,
                            r->ns, NULL)) {
      gb_informer_logf(inf, 1, "invalid group/version/resource/namespace");
      return GC_EINVAL;
    }
  }
  return GC_OK;
}

/* Joins the handlers into the list's selection, the cache's record and
 * the reflectors; from then on no handler is added. */
static int seal(struct gb_informer *inf) {
  if (inf->sealed)
    return 0;
  char **ns = NULL;
  size_t n_ns = 0;
  int rc = union_namespaces(inf, &ns, &n_ns);
  if (!rc)
    rc = seal_selection(inf, ns, n_ns);
  if (!rc) {
    seal_keep(inf);
    rc = gb_informer_seal_watch(inf);
  }
  if (!rc)
    rc = make_reflectors(inf, ns, n_ns);
  for (size_t i = 0; i < n_ns; i++)
    free(ns[i]);
  free(ns);
  inf->sealed = rc == 0;
  return rc;
}

/* Bit i set when handler i selects obj (cluster-scoped: ns ""). */
static uint32_t selected_by(struct gb_informer *inf, json_object *obj, const char *ns) {
  uint32_t bits = 0;
  for (size_t i = 0; i < inf->n_h; i++) {
    const struct gb_inf_handler *h = &inf->h[i];
    if ((h->ns_filter && !in_set(h->ns, h->n_ns, ns)) ||
        (h->sel_filter && !gb_selector_match_object(&h->sel, obj)))
      continue;
    bits |= 1u << i;
  }
  return bits;
}

/* ---- hash table (cache_lock held for writing by callers that mutate) ------------- */

static entry_t **find_slot(struct gb_informer *inf, const char *key, size_t len, uint32_t h) {
  entry_t **pp = &inf->buckets[h & (inf->n_buckets - 1)];
  while (*pp && !((*pp)->hash == h && (*pp)->key_len == len && !memcmp((*pp)->data, key, len)))
    pp = &(*pp)->next;
  return pp;
}

static int grow(struct gb_informer *inf) {
  size_t nb = inf->n_buckets * 2;
  entry_t **b = calloc(nb, sizeof(*b));
  if (!b)
    return GC_ENOMEM;
  for (size_t i = 0; i < inf->n_buckets; i++) {
    entry_t *e = inf->buckets[i];
    while (e) {
      entry_t *next = e->next;
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

static entry_t *entry_new(const char *key, const char *rv, const char *uid, const char *text,
                          size_t text_len) {
  size_t kl = strlen(key), rl = strlen(rv), ul = strlen(uid);
  if (kl > UINT16_MAX || rl > UINT16_MAX || ul > UINT16_MAX || text_len > UINT32_MAX)
    return NULL;
  entry_t *e = malloc(sizeof(*e) + kl + rl + ul + text_len + 4);
  if (!e)
    return NULL;
  memset(e, 0, sizeof(*e));
  e->hash = key_hash(key, kl);
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

/* Removes the entry of key; returns it (caller frees) or NULL. */
static entry_t *remove_key(struct gb_informer *inf, const char *key) {
  size_t len = strlen(key);
  uint32_t h = key_hash(key, len);
  pthread_rwlock_wrlock(&inf->cache_lock);
  entry_t **pp = find_slot(inf, key, len, h);
  entry_t *e = *pp;
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

/* ---- delivery -------------------------------------------------------------------- */

void gb_informer_set_rv(struct gb_informer *inf, struct gb_inf_reflector *r, const char *rv) {
  if (!rv)
    return;
  pthread_mutex_lock(&inf->lock);
  snprintf(inf->rv, sizeof(inf->rv), "%s", rv);
  if (r)
    snprintf(r->rv, sizeof(r->rv), "%s", rv);
  pthread_mutex_unlock(&inf->lock);
}

/* Tells every handler what the change is to it: the object entered its
 * selection (was 0, now 1: an add), stayed (an update) or left (a delete). */
static void deliver(struct gb_informer *inf, const char *key, json_object *obj,
                    const char *old_json, uint32_t was, uint32_t now) {
  pthread_mutex_lock(&inf->lock);
  if (!was)
    inf->st.adds++;
  else if (now)
    inf->st.updates++;
  else
    inf->st.deletes++;
  int initial = !inf->synced;
  pthread_mutex_unlock(&inf->lock);
  char kbuf[GB_INF_KEY_MAX];
  snprintf(kbuf, sizeof(kbuf), "%s", key);
  char *slash = strchr(kbuf, '/');
  struct gb_informer_change ch = {GB_INFORMER_ADD, key, "", kbuf, obj, NULL, initial};
  if (slash) {
    *slash = 0;
    ch.ns = kbuf;
    ch.name = slash + 1;
  }
  pthread_mutex_lock(&inf->handler_mu);
  for (size_t i = 0; i < inf->n_h; i++) {
    int w = (was >> i) & 1, n = (now >> i) & 1;
    if ((!w && !n) || !inf->h[i].fn)
      continue;
    ch.op = w && n ? GB_INFORMER_UPDATE : n ? GB_INFORMER_ADD : GB_INFORMER_DELETE;
    ch.old_json = w && n ? old_json : NULL;
    inf->h[i].fn(inf->h[i].arg, &ch);
  }
  pthread_mutex_unlock(&inf->handler_mu);
}

/* With no handler the cache holds every object under bit 0. */
static uint32_t all_bits(const struct gb_informer *inf, uint32_t bits) {
  return inf->n_h ? bits : 1;
}

/* Inserts or replaces obj (prepared) with the handlers' bits.  Returns the
 * entry it replaced (caller frees) through *old, or sets *same when the
 * cached copy has the same resourceVersion (nothing to deliver). */
static int cache_put(struct gb_informer *inf, const char *key, entry_t *ne, const char *rv,
                     entry_t **old, int *same) {
  *old = NULL;
  *same = 0;
  pthread_rwlock_wrlock(&inf->cache_lock);
  entry_t **pp = find_slot(inf, key, ne->key_len, ne->hash);
  if (*pp && rv && !strcmp(e_rv(*pp), rv)) {
    (*pp)->gen = ne->gen; /* unchanged: keep the old entry, just mark it seen */
    *same = 1;
  } else if (*pp) {
    *old = *pp;
    ne->next = (*old)->next;
    *pp = ne;
    inf->bytes += e_size(ne);
    inf->bytes -= e_size(*old);
  } else if (inf->n_entries >= inf->o.max_objects) {
    pthread_rwlock_unlock(&inf->cache_lock);
    return GC_ELIMIT;
  } else {
    if (inf->n_entries >= inf->n_buckets && grow(inf) == GC_OK)
      pp = find_slot(inf, key, ne->key_len, ne->hash);
    *pp = ne;
    inf->n_entries++;
    inf->bytes += e_size(ne);
  }
  pthread_rwlock_unlock(&inf->cache_lock);
  return GC_OK;
}

int gb_informer_upsert(struct gb_informer *inf, struct gb_inf_reflector *r, json_object *obj,
                       uint32_t gen) {
  char key[GB_INF_KEY_MAX];
  const char *ns, *name;
  if (obj_key(obj, key, sizeof(key), &ns, &name)) {
    gb_informer_logf(inf, 1, "object without a usable metadata.name ignored");
    return GC_OK;
  }
  const char *rv = gb_kobj_meta(obj, "resourceVersion"), *uid = gb_kobj_meta(obj, "uid");
  if (rv && strlen(rv) >= GB_INF_RV_MAX) {
    gb_informer_logf(inf, 1, "%s: resourceVersion longer than %d bytes ignored", key,
                     GB_INF_RV_MAX - 1);
    return GC_OK;
  }
  uint32_t bits = all_bits(inf, selected_by(inf, obj, ns));
  prepare(inf, obj); /* key, rv and uid point into it: kept by OWN_KEEP */
  if (!bits) {       /* in no handler's selection (any more) */
    entry_t *gone = remove_key(inf, key);
    if (gone)
      deliver(inf, key, obj, NULL, gone->match, 0);
    free(gone);
    gb_informer_set_rv(inf, r, rv);
    return GC_OK;
  }
  size_t tlen = 0;
  const char *text = json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN, &tlen);
  entry_t *ne = text ? entry_new(key, rv ? rv : "", uid && strlen(uid) < GB_INF_UID_MAX ? uid : "",
                                 text, tlen)
                     : NULL;
  if (!ne)
    return GC_ENOMEM;
  ne->gen = gen;
  ne->match = bits;
  entry_t *old = NULL;
  int same = 0, rc = cache_put(inf, key, ne, rv, &old, &same);
  if (rc || same) {
    free(ne);
    if (rc && !inf->limit_logged++)
      gb_informer_logf(inf, 1, "cache full (%zu objects); %s not cached", inf->o.max_objects, key);
    return rc;
  }
  gb_informer_set_rv(inf, r, rv);
  deliver(inf, key, obj, old ? e_text(old) : NULL, old ? old->match : 0, bits);
  free(old);
  return GC_OK;
}

/* 1 when the cache key belongs to namespace ns (NULL: every key). */
static int in_ns(const char *key, const char *ns) {
  if (!ns)
    return 1;
  size_t n = strlen(ns);
  return !strncmp(key, ns, n) && key[n] == '/';
}

/* Delivers the deletes of a detached chain of entries and frees them. */
static void deliver_gone(struct gb_informer *inf, entry_t *victims) {
  while (victims) {
    entry_t *v = victims;
    victims = v->next;
    json_object *obj = parse_text(e_text(v), v->text_len);
    deliver(inf, e_key(v), obj, NULL, v->match, 0);
    json_object_put(obj);
    free(v);
  }
}

/* Detaches every entry of ns (NULL: all) not stamped with gen (any gen when
 * all_gens), under the lock, in one pass. */
static entry_t *detach(struct gb_informer *inf, const char *ns, uint32_t gen, int all_gens) {
  entry_t *victims = NULL;
  pthread_rwlock_wrlock(&inf->cache_lock);
  for (size_t i = 0; i < inf->n_buckets; i++) {
    entry_t **pp = &inf->buckets[i];
    while (*pp) {
      entry_t *e = *pp;
      if ((all_gens || e->gen != gen) && in_ns(e_key(e), ns)) {
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
  return victims;
}

void gb_informer_sweep(struct gb_informer *inf, const char *ns, uint32_t gen) {
  deliver_gone(inf, detach(inf, ns, gen, 0));
}

void gb_informer_apply_delete(struct gb_informer *inf, struct gb_inf_reflector *r, json_object *obj,
                              const char *rv) {
  char key[GB_INF_KEY_MAX];
  const char *ns, *name;
  if (obj_key(obj, key, sizeof(key), &ns, &name) == GC_OK) {
    entry_t *old = remove_key(inf, key);
    if (old) {
      prepare(inf, obj);
      deliver(inf, key, obj, NULL, old->match, 0);
      free(old);
    }
  }
  gb_informer_set_rv(inf, r, rv);
}

/* ---- public API -------------------------------------------------------------------- */

/* The handler opts describe, when they describe one. */
static int opts_handler(struct gb_informer *inf, const struct gb_informer_opts *opts,
                        struct gc_diags *diags) {
  if (!opts->on_change && !opts->namespace && !opts->n_namespaces && !opts->label_selector &&
      !opts->field_selector && !opts->keep)
    return 0;
  if (opts->namespace && opts->n_namespaces) {
    gc_diags_addf(diags, "informer: a namespace and a set of namespaces");
    return GC_EINVAL;
  }
  struct gb_informer_handler h = {opts->namespace ? &opts->namespace : opts->namespaces,
                                  opts->namespace ? 1 : opts->n_namespaces,
                                  opts->label_selector,
                                  opts->field_selector,
                                  opts->keep,
                                  opts->n_keep,
                                  0,
                                  opts->on_change,
                                  opts->handler_arg};
  return gb_informer_add_handler(inf, &h, diags);
}

static void set_defaults(struct gb_informer_opts *o) {
  if (o->page_limit <= 0)
    o->page_limit = 500;
  if (o->min_watch_timeout_s <= 0)
    o->min_watch_timeout_s = 300;
  if (o->backoff_base_s <= 0)
    o->backoff_base_s = 0.8;
  if (o->backoff_max_s <= 0)
    o->backoff_max_s = 30;
  if (o->relist_after_failures <= 0)
    o->relist_after_failures = 5;
}

static void init_locks(struct gb_informer *inf) {
  pthread_rwlock_init(&inf->cache_lock, NULL);
  pthread_mutex_init(&inf->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&inf->cond, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&inf->stopping, 0);
  pthread_mutex_init(&inf->handler_mu, NULL);
  inf->started = -1; /* locks initialised */
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
  inf->n_buckets = 64;
  inf->buckets = calloc(inf->n_buckets, sizeof(*inf->buckets));
  init_locks(inf);
  if (!inf->group || !inf->version || !inf->resource || !inf->buckets) {
    gb_informer_free(inf);
    return GC_ENOMEM;
  }
  snprintf(inf->name, sizeof(inf->name), "%s%s%s", inf->resource, inf->group[0] ? "." : "",
           inf->group);
  char path[1024];
  if (gb_kube_client_path(path, sizeof(path), inf->group, inf->version, inf->resource, NULL,
                          NULL)) {
    gc_diags_addf(diags, "informer: invalid group/version/resource %s/%s", inf->name, inf->version);
    gb_informer_free(inf);
    return GC_EINVAL;
  }
  inf->bytes = inf->n_buckets * sizeof(*inf->buckets);
  /* Only the tuning stays in o: the selection lives in the handlers. */
  inf->o.group = inf->group;
  inf->o.version = inf->version;
  inf->o.resource = inf->resource;
  inf->o.namespace = inf->o.label_selector = inf->o.field_selector = NULL;
  inf->o.namespaces = NULL;
  inf->o.keep = NULL;
  set_defaults(&inf->o);
  int rc = opts_handler(inf, opts, diags);
  if (rc) {
    gb_informer_free(inf);
    return rc;
  }
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
  if (gb_informer_running(inf))
    return GC_EUSAGE;
  int rc = seal(inf);
  if (rc)
    return rc;
  atomic_store(&inf->stopping, 0);
  for (size_t i = 0; i < inf->n_refl; i++) {
    if (pthread_create(&inf->refl[i].thread, NULL, gb_informer_run, &inf->refl[i]) != 0) {
      join_all(inf);
      return GC_ENOMEM;
    }
    inf->refl[i].running = 1;
  }
  pthread_mutex_lock(&inf->lock);
  inf->started = 1;
  pthread_mutex_unlock(&inf->lock);
  return GC_OK;
}

int gb_informer_running(struct gb_informer *inf) {
  pthread_mutex_lock(&inf->lock);
  int r = inf->started == 1;
  pthread_mutex_unlock(&inf->lock);
  return r;
}

void gb_informer_stop(struct gb_informer *inf) {
  if (!inf || !gb_informer_running(inf))
    return;
  join_all(inf);
  pthread_mutex_lock(&inf->lock);
  inf->started = -1;
  pthread_mutex_unlock(&inf->lock);
}

int gb_informer_reset(struct gb_informer *inf) {
  if (gb_informer_running(inf))
    return GC_EUSAGE;
  deliver_gone(inf, detach(inf, NULL, 0, 1));
  pthread_mutex_lock(&inf->lock);
  inf->rv[0] = '\0';
  inf->synced = 0;
  for (size_t i = 0; i < inf->n_refl; i++) {
    inf->refl[i].rv[0] = '\0';
    inf->refl[i].synced = 0;
  }
  pthread_mutex_unlock(&inf->lock);
  return 0;
}

int gb_informer_hold(struct gb_informer *inf, int (*fn)(void *arg), void *arg) {
  pthread_mutex_lock(&inf->handler_mu);
  int rc = fn(arg);
  pthread_mutex_unlock(&inf->handler_mu);
  return rc;
}

void gb_informer_free(struct gb_informer *inf) {
  if (!inf)
    return;
  gb_informer_stop(inf);
  for (size_t i = 0; inf->buckets && i < inf->n_buckets; i++) {
    entry_t *e = inf->buckets[i];
    while (e) {
      entry_t *next = e->next;
      free(e);
      e = next;
    }
  }
  free(inf->buckets);
  pthread_rwlock_destroy(&inf->cache_lock);
  pthread_mutex_destroy(&inf->lock);
  pthread_cond_destroy(&inf->cond);
  pthread_mutex_destroy(&inf->handler_mu);
  for (size_t i = 0; i < inf->n_h; i++)
    handler_free(&inf->h[i]);
  gc_arena_free(inf->warena);
  for (size_t i = 0; inf->refl && i < inf->n_refl; i++)
    free(inf->refl[i].ns);
  free(inf->refl);
  free(inf->group);
  free(inf->version);
  free(inf->resource);
  free(inf);
}

const char *gb_informer_name(struct gb_informer *inf) { return inf->name; }

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

static const entry_t *lookup(struct gb_informer *inf, const char *ns, const char *name) {
  char key[GB_INF_KEY_MAX];
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
  const entry_t *e = lookup(inf, ns, name);
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
  rc = gb_kube_client_json_to_value(a, j, 0, out);
  json_object_put(j);
  return rc;
}

int gb_informer_get_meta(struct gb_informer *inf, const char *ns, const char *name,
                         char *rv_buf, size_t rv_cap, char *uid_buf, size_t uid_cap) {
  int rc = GC_ENOTFOUND;
  pthread_rwlock_rdlock(&inf->cache_lock);
  const entry_t *e = lookup(inf, ns, name);
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
    for (entry_t *e = inf->buckets[i]; e && !rc; e = e->next)
      rc = fn(arg, e_key(e));
  pthread_rwlock_unlock(&inf->cache_lock);
  return rc;
}

int gb_informer_feed(struct gb_informer *inf, int watch_type, json_object *obj) {
  if (gb_informer_running(inf))
    return GC_EUSAGE;
  int rc = seal(inf);
  if (rc)
    return rc;
  char key[GB_INF_KEY_MAX];
  const char *ns, *name;
  if (watch_type != GB_WATCH_BOOKMARK && obj_key(obj, key, sizeof(key), &ns, &name))
    return GC_EINVAL;
  const char *rv = gb_kobj_meta(obj, "resourceVersion");
  if (watch_type == GB_WATCH_ADDED || watch_type == GB_WATCH_MODIFIED)
    rc = gb_informer_upsert(inf, NULL, obj, inf->refl[0].gen);
  else if (watch_type == GB_WATCH_DELETED)
    gb_informer_apply_delete(inf, NULL, obj, rv);
  else if (watch_type == GB_WATCH_BOOKMARK)
    gb_informer_set_rv(inf, NULL, rv);
  else
    return GC_EINVAL;
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
