/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_workqueue: de-duplicating, rate-limited work queue (see the header).
 * One mutex guards everything.  Each distinct key has one entry in a chained
 * hash table; the entry carries its flags (dirty, processing), its failure
 * count, its place in the FIFO (an intrusive list) and in the delay heap.
 * An entry is freed as soon as nothing refers to it any more.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_bucket.h"
#include "gb_clock.h"
#include "gb_hash.h"
#include "gb_workqueue.h"
#include "gb_workqueue_test.h"

struct wq_entry {
  struct gb_hnode node;  /* first member: the key table's link and hash */
  struct wq_entry *next; /* FIFO list */
  int dirty, processing, in_fifo;
  int failures;
  long heap_idx; /* -1 when not delayed */
  double ready_at;
  char key[];
};

struct gb_workqueue {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  struct gb_workqueue_opts o;
  struct gb_htab keys; /* of struct wq_entry */
  struct wq_entry *head, *tail;
  size_t fifo_len;
  struct wq_entry **heap;
  size_t heap_len, heap_cap;
  struct gb_bucket bucket;
  unsigned long long retries;
  int shutdown;
};

static void opts_fill(struct gb_workqueue_opts *o, const struct gb_workqueue_opts *in) {
  memset(o, 0, sizeof(*o));
  if (in)
    *o = *in;
  if (!(o->base_delay_s > 0))
    o->base_delay_s = 0.005;
  if (!(o->max_delay_s > 0))
    o->max_delay_s = 1000;
  if (o->qps == 0)
    o->qps = 10;
  if (o->burst <= 0)
    o->burst = 100;
  if (!o->max_keys)
    o->max_keys = 1000000;
}

double gb_workqueue_backoff(const struct gb_workqueue_opts *opts, int failures) {
  struct gb_workqueue_opts o;
  opts_fill(&o, opts);
  if (failures < 0)
    failures = 0;
  if (failures > 62)
    return o.max_delay_s;
  double d = o.base_delay_s * ldexp(1.0, failures);
  return d > o.max_delay_s ? o.max_delay_s : d;
}

struct gb_workqueue *gb_workqueue_new(const struct gb_workqueue_opts *opts) {
  struct gb_workqueue *q = calloc(1, sizeof(*q));
  if (!q)
    return NULL;
  opts_fill(&q->o, opts);
  if (gb_htab_init(&q->keys, 1024) < 0) {
    free(q);
    return NULL;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&q->cond, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&q->mu, NULL);
  gb_bucket_init(&q->bucket, q->o.qps < 0 ? 0 : q->o.qps, q->o.burst, gb_clock_s());
  return q;
}

static void free_entry(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  free(n);
}

void gb_workqueue_free(struct gb_workqueue *q) {
  if (!q)
    return;
  gb_htab_clear(&q->keys, free_entry, NULL);
  gb_htab_free(&q->keys);
  free(q->heap);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mu);
  free(q);
}

/* ---- hash table (caller holds mu) ---------------------------------------- */

static struct wq_entry *find(struct gb_workqueue *q, const char *key, uint64_t h) {
  for (struct gb_hnode *n = gb_htab_chain(&q->keys, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct wq_entry *)n)->key, key))
      return (struct wq_entry *)n;
  return NULL;
}

static int lookup_or_add(struct gb_workqueue *q, const char *key, struct wq_entry **out) {
  size_t len = strlen(key);
  uint64_t h = gb_hash_str(key);
  struct wq_entry *e = find(q, key, h);
  if (e) {
    *out = e;
    return 0;
  }
  if (q->keys.n >= q->o.max_keys)
    return GC_ELIMIT;
  e = calloc(1, sizeof(*e) + len + 1);
  if (!e)
    return GC_ENOMEM;
  memcpy(e->key, key, len + 1);
  e->node.hash = h;
  e->heap_idx = -1;
  gb_htab_insert(&q->keys, &e->node);
  *out = e;
  return 0;
}

/* Frees e when nothing refers to it any more. */
static void maybe_release(struct gb_workqueue *q, struct wq_entry *e) {
  if (e->dirty || e->processing || e->in_fifo || e->failures || e->heap_idx >= 0)
    return;
  gb_htab_remove(&q->keys, &e->node);
  free(e);
}

/* ---- FIFO and heap (caller holds mu) --------------------------------------- */

static void fifo_push(struct gb_workqueue *q, struct wq_entry *e) {
  e->next = NULL;
  e->in_fifo = 1;
  if (q->tail)
    q->tail->next = e;
  else
    q->head = e;
  q->tail = e;
  q->fifo_len++;
  pthread_cond_signal(&q->cond);
}

static struct wq_entry *fifo_pop(struct gb_workqueue *q) {
  struct wq_entry *e = q->head;
  if (!e)
    return NULL;
  q->head = e->next;
  if (!q->head)
    q->tail = NULL;
  e->next = NULL;
  e->in_fifo = 0;
  q->fifo_len--;
  return e;
}

static void heap_swap(struct gb_workqueue *q, size_t i, size_t j) {
  struct wq_entry *t = q->heap[i];
  q->heap[i] = q->heap[j];
  q->heap[j] = t;
  q->heap[i]->heap_idx = (long)i;
  q->heap[j]->heap_idx = (long)j;
}

static void heap_up(struct gb_workqueue *q, size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (q->heap[p]->ready_at <= q->heap[i]->ready_at)
      break;
    heap_swap(q, i, p);
    i = p;
  }
}

static void heap_down(struct gb_workqueue *q, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < q->heap_len && q->heap[l]->ready_at < q->heap[m]->ready_at)
      m = l;
    if (r < q->heap_len && q->heap[r]->ready_at < q->heap[m]->ready_at)
      m = r;
    if (m == i)
      return;
    heap_swap(q, i, m);
    i = m;
  }
}

static void heap_remove_top(struct gb_workqueue *q) {
  struct wq_entry *top = q->heap[0];
  q->heap_len--;
  if (q->heap_len) {
    q->heap[0] = q->heap[q->heap_len];
    q->heap[0]->heap_idx = 0;
    heap_down(q, 0);
  }
  top->heap_idx = -1;
}

/* Marks e dirty and queues it unless it is queued or being processed. */
static void add_locked(struct gb_workqueue *q, struct wq_entry *e) {
  if (e->dirty)
    return;
  e->dirty = 1;
  if (!e->processing)
    fifo_push(q, e);
}

/* Moves every delayed key whose time has come into the queue; returns the
 * time of the next delayed key (INFINITY when none). */
static double promote_due(struct gb_workqueue *q, double now) {
  while (q->heap_len && q->heap[0]->ready_at <= now) {
    struct wq_entry *e = q->heap[0];
    heap_remove_top(q);
    add_locked(q, e);
  }
  return q->heap_len ? q->heap[0]->ready_at : INFINITY;
}

static int check_key(const char *key) {
  if (!key || !*key || strlen(key) > GB_WORKQUEUE_KEY_MAX)
    return GC_EINVAL;
  return 0;
}

/* ---- public ------------------------------------------------------------------- */

int gb_workqueue_add(struct gb_workqueue *q, const char *key) {
  return gb_workqueue_add_after(q, key, 0);
}

int gb_workqueue_add_after(struct gb_workqueue *q, const char *key, double delay_s) {
  int rc = check_key(key);
  if (rc)
    return rc;
  pthread_mutex_lock(&q->mu);
  struct wq_entry *e = NULL;
  if (q->shutdown) {
    rc = GC_EUSAGE;
    goto out;
  }
  if ((rc = lookup_or_add(q, key, &e)))
    goto out;
  if (!(delay_s > 0)) {
    add_locked(q, e);
    goto out;
  }
  double at = gb_clock_s() + delay_s;
  if (e->heap_idx >= 0) {
    /* Already waiting: keep the earlier time, as client-go does. */
    if (at < e->ready_at) {
      e->ready_at = at;
      heap_up(q, (size_t)e->heap_idx);
    }
    goto out;
  }
  if (q->heap_len == q->heap_cap) {
    size_t cap = q->heap_cap ? q->heap_cap * 2 : 64;
    struct wq_entry **h = realloc(q->heap, cap * sizeof(*h));
    if (!h) {
      rc = GC_ENOMEM;
      maybe_release(q, e);
      goto out;
    }
    q->heap = h;
    q->heap_cap = cap;
  }
  e->ready_at = at;
  e->heap_idx = (long)q->heap_len;
  q->heap[q->heap_len++] = e;
  heap_up(q, (size_t)e->heap_idx);
  pthread_cond_broadcast(&q->cond); /* a waiter may need to wake earlier */
out:
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int gb_workqueue_add_rate_limited(struct gb_workqueue *q, const char *key) {
  int rc = check_key(key);
  if (rc)
    return rc;
  pthread_mutex_lock(&q->mu);
  struct wq_entry *e = NULL;
  if (q->shutdown) {
    pthread_mutex_unlock(&q->mu);
    return GC_EUSAGE;
  }
  if ((rc = lookup_or_add(q, key, &e))) {
    pthread_mutex_unlock(&q->mu);
    return rc;
  }
  double per_key = gb_workqueue_backoff(&q->o, e->failures);
  if (e->failures < 1000000)
    e->failures++;
  double overall = q->o.qps > 0 ? gb_bucket_reserve(&q->bucket, gb_clock_s()) : 0;
  q->retries++;
  pthread_mutex_unlock(&q->mu);
  return gb_workqueue_add_after(q, key, per_key > overall ? per_key : overall);
}

void gb_workqueue_forget(struct gb_workqueue *q, const char *key) {
  if (check_key(key))
    return;
  pthread_mutex_lock(&q->mu);
  struct wq_entry *e = find(q, key, gb_hash_str(key));
  if (e) {
    e->failures = 0;
    maybe_release(q, e);
  }
  pthread_mutex_unlock(&q->mu);
}

int gb_workqueue_num_requeues(struct gb_workqueue *q, const char *key) {
  if (check_key(key))
    return 0;
  pthread_mutex_lock(&q->mu);
  struct wq_entry *e = find(q, key, gb_hash_str(key));
  int n = e ? e->failures : 0;
  pthread_mutex_unlock(&q->mu);
  return n;
}

int gb_workqueue_get(struct gb_workqueue *q, char *buf, size_t cap, long timeout_ms) {
  if (!buf || cap == 0)
    return -1;
  pthread_mutex_lock(&q->mu);
  double deadline = timeout_ms < 0 ? INFINITY : gb_clock_s() + (double)timeout_ms / 1000.0;
  int rc = 0;
  for (;;) {
    if (q->shutdown) {
      rc = -1;
      break;
    }
    double now = gb_clock_s();
    double next = promote_due(q, now);
    struct wq_entry *e = fifo_pop(q);
    if (e) {
      e->processing = 1;
      e->dirty = 0;
      size_t n = strlen(e->key);
      if (n >= cap)
        n = cap - 1;
      memcpy(buf, e->key, n);
      buf[n] = '\0';
      rc = 1;
      break;
    }
    double until = next < deadline ? next : deadline;
    if (now >= deadline)
      break;
    if (isinf(until)) {
      pthread_cond_wait(&q->cond, &q->mu);
    } else {
      struct timespec ts;
      double whole = floor(until);
      ts.tv_sec = (time_t)whole;
      ts.tv_nsec = (long)((until - whole) * 1e9);
      if (ts.tv_nsec >= 1000000000L)
        ts.tv_nsec = 999999999L;
      pthread_cond_timedwait(&q->cond, &q->mu, &ts);
    }
  }
  pthread_mutex_unlock(&q->mu);
  return rc;
}

void gb_workqueue_done(struct gb_workqueue *q, const char *key) {
  if (check_key(key))
    return;
  pthread_mutex_lock(&q->mu);
  struct wq_entry *e = find(q, key, gb_hash_str(key));
  if (e && e->processing) {
    e->processing = 0;
    if (e->dirty && !q->shutdown)
      fifo_push(q, e);
    else if (q->shutdown)
      e->dirty = 0;
    maybe_release(q, e);
  }
  pthread_mutex_unlock(&q->mu);
}

size_t gb_workqueue_len(struct gb_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  promote_due(q, gb_clock_s());
  size_t n = q->fifo_len;
  pthread_mutex_unlock(&q->mu);
  return n;
}

size_t gb_workqueue_delayed(struct gb_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  size_t n = q->heap_len;
  pthread_mutex_unlock(&q->mu);
  return n;
}

unsigned long long gb_workqueue_retries(struct gb_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  unsigned long long n = q->retries;
  pthread_mutex_unlock(&q->mu);
  return n;
}

void gb_workqueue_shutdown(struct gb_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  q->shutdown = 1;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->mu);
}
