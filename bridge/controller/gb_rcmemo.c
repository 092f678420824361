/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rcmemo: the fingerprint of each key's last reconcile (see the header).
 * Linear probing over a power-of-two array of {key hash, fingerprint};
 * key hash 0 is an empty slot and 1 a removed one (real hashes are moved
 * off both); the array doubles, dropping removed slots, when more than
 * three quarters of it are in use (16 to 32 bytes a key).
 */
#include "gb_rcmemo.h"
#include "gb_rcmemo_test.h"

#include <pthread.h>
#include <stdlib.h>

#include "gb_hash.h"

#define EMPTY 0
#define GONE 1

struct slot {
  uint64_t kh, fp;
};

struct gb_rcmemo {
  pthread_mutex_t mu;
  struct slot *s;
  size_t cap;  /* a power of two, or 0 */
  size_t live; /* slots holding a key */
  size_t used; /* live and removed slots */
};

struct gb_rcmemo *gb_rcmemo_new(void) {
  struct gb_rcmemo *m = calloc(1, sizeof(*m));
  if (m)
    pthread_mutex_init(&m->mu, NULL);
  return m;
}

void gb_rcmemo_free(struct gb_rcmemo *m) {
  if (!m)
    return;
  pthread_mutex_destroy(&m->mu);
  free(m->s);
  free(m);
}

static uint64_t key_hash(const char *key) {
  uint64_t h = gb_hash_str(key);
  return h <= GONE ? h + 2 : h;
}

/* The slot of kh, or (find_free) the first free one on its probe path;
 * NULL when absent (or the array is empty). */
static struct slot *probe(struct gb_rcmemo *m, uint64_t kh, int find_free) {
  if (!m->cap)
    return NULL;
  struct slot *free_slot = NULL;
  for (size_t i = kh & (m->cap - 1), n = 0; n < m->cap; i = (i + 1) & (m->cap - 1), n++) {
    struct slot *s = &m->s[i];
    if (s->kh == kh)
      return s;
    if (s->kh == GONE && !free_slot)
      free_slot = s;
    if (s->kh == EMPTY)
      return find_free ? (free_slot ? free_slot : s) : NULL;
  }
  return find_free ? free_slot : NULL;
}

/* Doubles the array (or makes the first), dropping removed slots. */
static int grow(struct gb_rcmemo *m) {
  size_t cap = m->cap ? m->cap * 2 : 1024;
  struct slot *old = m->s, *s = calloc(cap, sizeof(*s));
  size_t old_cap = m->cap;
  if (!s)
    return -1;
  m->s = s;
  m->cap = cap;
  m->used = m->live;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].kh > GONE)
      *probe(m, old[i].kh, 1) = old[i];
  free(old);
  return 0;
}

int gb_rcmemo_same(struct gb_rcmemo *m, const char *key, uint64_t fp) {
  if (!m || !fp)
    return 0;
  uint64_t kh = key_hash(key);
  pthread_mutex_lock(&m->mu);
  const struct slot *s = probe(m, kh, 0);
  int same = s && s->fp == fp;
  pthread_mutex_unlock(&m->mu);
  return same;
}

void gb_rcmemo_put(struct gb_rcmemo *m, const char *key, uint64_t fp) {
  if (!m)
    return;
  uint64_t kh = key_hash(key);
  pthread_mutex_lock(&m->mu);
  struct slot *s = probe(m, kh, 0);
  if (s && !fp) {
    s->kh = GONE;
    m->live--;
  } else if (s) {
    s->fp = fp;
  } else if (fp && m->live < GB_RCMEMO_MAX &&
             ((m->used + 1) * 4 <= m->cap * 3 || grow(m) == 0)) {
    s = probe(m, kh, 1);
    m->used += s->kh == EMPTY;
    *s = (struct slot){kh, fp};
    m->live++;
  }
  pthread_mutex_unlock(&m->mu);
}

size_t gb_rcmemo_count(struct gb_rcmemo *m) {
  if (!m)
    return 0;
  pthread_mutex_lock(&m->mu);
  size_t n = m->live;
  pthread_mutex_unlock(&m->mu);
  return n;
}
