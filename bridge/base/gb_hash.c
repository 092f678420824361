/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_hash: 64-bit FNV-1a (see gb_hash.h).
 */
#include "gb_hash.h"

#include <stdlib.h>

#include "gc_diag.h"

#define FNV_PRIME 1099511628211ULL

uint64_t gb_hash_fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= FNV_PRIME;
  }
  return h;
}

uint64_t gb_hash_bytes(const void *data, size_t len) {
  return gb_hash_fnv1a(GB_HASH_FNV_OFFSET, data, len);
}

uint64_t gb_hash_str(const char *s) {
  uint64_t h = GB_HASH_FNV_OFFSET;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= FNV_PRIME;
  }
  return h;
}

#define HTAB_MIN_BUCKETS 16
#define HTAB_MAX_BUCKETS ((size_t)1 << 30)

int gb_htab_init(struct gb_htab *t, size_t n_buckets) {
  t->buckets = NULL;
  t->n_buckets = t->n = 0;
  if (n_buckets > HTAB_MAX_BUCKETS)
    return GC_EINVAL;
  size_t nb = HTAB_MIN_BUCKETS;
  while (nb < n_buckets)
    nb *= 2;
  t->buckets = calloc(nb, sizeof(*t->buckets));
  if (!t->buckets)
    return GC_ENOMEM;
  t->n_buckets = nb;
  return 0;
}

void gb_htab_free(struct gb_htab *t) {
  if (!t)
    return;
  free(t->buckets);
  t->buckets = NULL;
  t->n_buckets = t->n = 0;
}

struct gb_hnode *gb_htab_chain(const struct gb_htab *t, uint64_t hash) {
  return t->n_buckets ? t->buckets[hash & (t->n_buckets - 1)] : NULL;
}

/* Doubles the bucket array; on failure keeps the old one. */
static void htab_grow(struct gb_htab *t) {
  if (t->n_buckets >= HTAB_MAX_BUCKETS)
    return;
  size_t nb = t->n_buckets * 2;
  struct gb_hnode **b = calloc(nb, sizeof(*b));
  if (!b)
    return;
  for (size_t i = 0; i < t->n_buckets; i++) {
    struct gb_hnode *e = t->buckets[i];
    while (e) {
      struct gb_hnode *next = e->next;
      e->next = b[e->hash & (nb - 1)];
      b[e->hash & (nb - 1)] = e;
      e = next;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->n_buckets = nb;
}

void gb_htab_insert(struct gb_htab *t, struct gb_hnode *node) {
  if (t->n + 1 > t->n_buckets)
    htab_grow(t);
  struct gb_hnode **b = &t->buckets[node->hash & (t->n_buckets - 1)];
  node->next = *b;
  *b = node;
  t->n++;
}

void gb_htab_remove(struct gb_htab *t, struct gb_hnode *node) {
  struct gb_hnode **pp = &t->buckets[node->hash & (t->n_buckets - 1)];
  while (*pp && *pp != node)
    pp = &(*pp)->next;
  if (*pp) {
    *pp = node->next;
    node->next = NULL;
    t->n--;
  }
}

struct gb_hnode *gb_htab_next(const struct gb_htab *t, size_t *bucket, struct gb_hnode *prev) {
  if (prev && prev->next)
    return prev->next;
  size_t i = prev ? *bucket + 1 : 0;
  for (; i < t->n_buckets; i++) {
    if (t->buckets[i]) {
      *bucket = i;
      return t->buckets[i];
    }
  }
  *bucket = t->n_buckets;
  return NULL;
}

void gb_htab_clear(struct gb_htab *t, void (*fn)(struct gb_hnode *node, void *ctx), void *ctx) {
  for (size_t i = 0; i < t->n_buckets; i++) {
    struct gb_hnode *e = t->buckets[i];
    t->buckets[i] = NULL;
    while (e) {
      struct gb_hnode *next = e->next;
      e->next = NULL;
      if (fn)
        fn(e, ctx);
      e = next;
    }
  }
  t->n = 0;
}
