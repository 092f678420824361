/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tts: PodGroup phases and time-to-schedule (see gb_tts.h).
 */
#include "gb_tts.h"
#include "gb_tts_test.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_hash.h"
#include "gc_backend.h"
#include "gc_diag.h"

struct tts_pg {
  struct gb_hnode node; /* first member: the table's link and hash */
  char backend[GB_TTS_BACKEND_MAX + 1];
  char uid[GB_TTS_UID_MAX + 1];
  char phase[GB_TTS_PHASE_MAX + 1];
  int done; /* observed, or never to be: see the rule in gb_tts.h */
  char key[];
};

struct gb_tts {
  pthread_mutex_t mu;
  struct gb_htab table; /* of struct tts_pg */
  size_t max;
};

struct gb_tts *gb_tts_new(size_t max_tracked) {
  struct gb_tts *t = calloc(1, sizeof(*t));
  if (!t)
    return NULL;
  if (gb_htab_init(&t->table, 1024) < 0) {
    free(t);
    return NULL;
  }
  pthread_mutex_init(&t->mu, NULL);
  t->max = max_tracked ? max_tracked : 1000000;
  return t;
}

static void free_pg(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  free(n);
}

void gb_tts_free(struct gb_tts *t) {
  if (!t)
    return;
  gb_htab_clear(&t->table, free_pg, NULL);
  gb_htab_free(&t->table);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

/* The backend label and key hashed as one ("backend\0key"). */
static uint64_t pg_hash(const char *backend, const char *key) {
  return gb_hash_fnv1a(gb_hash_fnv1a(GB_HASH_FNV_OFFSET, backend, strlen(backend) + 1), key,
                       strlen(key));
}

/* The entry of (backend, key), or NULL.  Called with mu held. */
static struct tts_pg *pg_find(struct gb_tts *t, const char *backend, const char *key, uint64_t h) {
  for (struct gb_hnode *n = gb_htab_chain(&t->table, h); n; n = n->next) {
    struct tts_pg *pg = (struct tts_pg *)n;
    if (n->hash == h && !strncmp(pg->backend, backend, GB_TTS_BACKEND_MAX) && !strcmp(pg->key, key))
      return pg;
  }
  return NULL;
}

/* A new entry for (backend, key), linked in.  Called with mu held. */
static int pg_add(struct gb_tts *t, const char *backend, const char *key, uint64_t h,
                  struct tts_pg **out) {
  if (t->table.n >= t->max)
    return GC_ELIMIT;
  size_t kl = strlen(key);
  struct tts_pg *pg = calloc(1, sizeof(*pg) + kl + 1);
  if (!pg)
    return GC_ENOMEM;
  snprintf(pg->backend, sizeof(pg->backend), "%s", backend);
  memcpy(pg->key, key, kl + 1);
  pg->node.hash = h;
  gb_htab_insert(&t->table, &pg->node);
  *out = pg;
  return 0;
}

/* Applies the observation rule to a known entry (the backend's started and
 * failed phases, gc_backend.h); 1 with *seconds when observed. */
static int pg_observe(struct tts_pg *pg, const struct gb_tts_event *ev, double *seconds) {
  const struct gc_backend *b = gc_backend_by_name(ev->backend);
  int scheduled = gc_backend_phase_started(b, pg->phase);
  int failed = b && b->status.failed_phase && !strcmp(pg->phase, b->status.failed_phase);
  if (pg->done || (!scheduled && !failed))
    return 0;
  pg->done = 1;
  /* Scheduled before we saw it (initial list), failed, or no creation time:
   * there is no duration to report. */
  if (!scheduled || ev->initial || isnan(ev->created_unix))
    return 0;
  double v = ev->now_unix - ev->created_unix;
  *seconds = v < 0 ? 0 : v; /* clock skew between the API server and us */
  return 1;
}

int gb_tts_update(struct gb_tts *t, const struct gb_tts_event *ev, double *seconds) {
  if (!t || !ev || !ev->backend || !ev->key || !ev->key[0] || !seconds)
    return GC_EINVAL;
  uint64_t h = pg_hash(ev->backend, ev->key);
  const char *uid = ev->uid ? ev->uid : "";
  pthread_mutex_lock(&t->mu);
  struct tts_pg *pg = pg_find(t, ev->backend, ev->key, h);
  int rc = pg ? 0 : pg_add(t, ev->backend, ev->key, h, &pg);
  if (rc == 0) {
    /* A new uid under a known name is a PodGroup created again: start afresh. */
    if (uid[0] && strncmp(pg->uid, uid, GB_TTS_UID_MAX) != 0) {
      snprintf(pg->uid, sizeof(pg->uid), "%s", uid);
      pg->done = 0;
    }
    snprintf(pg->phase, sizeof(pg->phase), "%s", ev->phase && ev->phase[0] ? ev->phase : "None");
    rc = pg_observe(pg, ev, seconds);
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

void gb_tts_forget(struct gb_tts *t, const char *backend, const char *key) {
  if (!t || !backend || !key)
    return;
  uint64_t h = pg_hash(backend, key);
  pthread_mutex_lock(&t->mu);
  struct tts_pg *pg = pg_find(t, backend, key, h);
  if (pg) {
    gb_htab_remove(&t->table, &pg->node);
    free(pg);
  }
  pthread_mutex_unlock(&t->mu);
}

size_t gb_tts_phases(struct gb_tts *t, const char *backend, struct gb_tts_phase_count *out,
                     size_t cap) {
  if (!t || !backend || !out)
    return 0;
  if (cap > GB_TTS_MAX_PHASES)
    cap = GB_TTS_MAX_PHASES;
  size_t n = 0, cursor = 0;
  pthread_mutex_lock(&t->mu);
  for (struct gb_hnode *e = gb_htab_next(&t->table, &cursor, NULL); e;
       e = gb_htab_next(&t->table, &cursor, e)) {
    const struct tts_pg *pg = (const struct tts_pg *)e;
    if (strncmp(pg->backend, backend, GB_TTS_BACKEND_MAX) != 0)
      continue;
    size_t j = 0;
    while (j < n && strcmp(out[j].phase, pg->phase) != 0)
      j++;
    if (j == n) {
      if (n == cap)
        continue;
      snprintf(out[n].phase, sizeof(out[n].phase), "%s", pg->phase);
      out[n++].count = 0;
    }
    out[j].count++;
  }
  pthread_mutex_unlock(&t->mu);
  return n;
}

size_t gb_tts_size(struct gb_tts *t) {
  if (!t)
    return 0;
  pthread_mutex_lock(&t->mu);
  size_t n = t->table.n;
  pthread_mutex_unlock(&t->mu);
  return n;
}
