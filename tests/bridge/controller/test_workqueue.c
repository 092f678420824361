/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_workqueue: de-duplication, the processing set (a key is
 * never handed to two workers and is re-queued when added while processed),
 * FIFO order, delayed adds (earliest time wins), per-key exponential backoff
 * and forget, the overall token bucket, bounds, shutdown, and many threads
 * adding and processing at once.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gb_workqueue.h"
#include "gb_workqueue_test.h"

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

START_TEST(test_dedup_and_processing) {
  struct gb_workqueue *q = gb_workqueue_new(NULL);
  char k[64];
  ck_assert_int_eq(gb_workqueue_add(q, "ns/a"), 0);
  ck_assert_int_eq(gb_workqueue_add(q, "ns/a"), 0);
  ck_assert_int_eq(gb_workqueue_add(q, "ns/b"), 0);
  ck_assert_int_eq(gb_workqueue_add(q, "ns/a"), 0);
  ck_assert_uint_eq(gb_workqueue_len(q), 2);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 1);
  ck_assert_str_eq(k, "ns/a");
  /* Added while processing: not handed out again until done. */
  ck_assert_int_eq(gb_workqueue_add(q, "ns/a"), 0);
  ck_assert_uint_eq(gb_workqueue_len(q), 1);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 1);
  ck_assert_str_eq(k, "ns/b");
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 0);
  gb_workqueue_done(q, "ns/a");
  ck_assert_uint_eq(gb_workqueue_len(q), 1);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 1);
  ck_assert_str_eq(k, "ns/a");
  gb_workqueue_done(q, "ns/a");
  gb_workqueue_done(q, "ns/b");
  ck_assert_uint_eq(gb_workqueue_len(q), 0);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 0);
  gb_workqueue_free(q);
}
END_TEST

START_TEST(test_fifo_order) {
  struct gb_workqueue *q = gb_workqueue_new(NULL);
  char k[64], want[64];
  for (int i = 0; i < 100; i++) {
    snprintf(want, sizeof(want), "k%d", i);
    ck_assert_int_eq(gb_workqueue_add(q, want), 0);
  }
  for (int i = 0; i < 100; i++) {
    snprintf(want, sizeof(want), "k%d", i);
    ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 1);
    ck_assert_str_eq(k, want);
    gb_workqueue_done(q, k);
  }
  gb_workqueue_free(q);
}
END_TEST

START_TEST(test_add_after) {
  struct gb_workqueue *q = gb_workqueue_new(NULL);
  char k[64];
  double t0 = mono();
  ck_assert_int_eq(gb_workqueue_add_after(q, "late", 0.2), 0);
  ck_assert_uint_eq(gb_workqueue_delayed(q), 1);
  ck_assert_uint_eq(gb_workqueue_len(q), 0);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 0);
  /* An earlier add_after of the same key wins; a later one does not delay it. */
  ck_assert_int_eq(gb_workqueue_add_after(q, "late", 0.1), 0);
  ck_assert_int_eq(gb_workqueue_add_after(q, "late", 5), 0);
  ck_assert_uint_eq(gb_workqueue_delayed(q), 1);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 5000), 1);
  double waited = mono() - t0;
  ck_assert_str_eq(k, "late");
  ck_assert(waited >= 0.099);
  ck_assert_uint_eq(gb_workqueue_delayed(q), 0);
  gb_workqueue_done(q, k);
  /* A plain add of a delayed key makes it ready now, once. */
  ck_assert_int_eq(gb_workqueue_add_after(q, "x", 10), 0);
  ck_assert_int_eq(gb_workqueue_add(q, "x"), 0);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 1);
  ck_assert_str_eq(k, "x");
  gb_workqueue_done(q, k);
  gb_workqueue_free(q);
}
END_TEST

START_TEST(test_backoff_and_forget) {
  struct gb_workqueue_opts o = {0.01, 0.08, -1, 0, 0};
  ck_assert_double_eq_tol(gb_workqueue_backoff(&o, 0), 0.01, 1e-12);
  ck_assert_double_eq_tol(gb_workqueue_backoff(&o, 1), 0.02, 1e-12);
  ck_assert_double_eq_tol(gb_workqueue_backoff(&o, 2), 0.04, 1e-12);
  ck_assert_double_eq_tol(gb_workqueue_backoff(&o, 3), 0.08, 1e-12);
  ck_assert_double_eq_tol(gb_workqueue_backoff(&o, 30), 0.08, 1e-12);
  ck_assert_double_eq_tol(gb_workqueue_backoff(&o, 100000), 0.08, 1e-12);
  ck_assert_double_eq_tol(gb_workqueue_backoff(NULL, 0), 0.005, 1e-12);
  ck_assert_double_eq_tol(gb_workqueue_backoff(NULL, 40), 1000, 1e-9);

  struct gb_workqueue *q = gb_workqueue_new(&o);
  char k[64];
  for (int i = 0; i < 4; i++) {
    double t0 = mono();
    ck_assert_int_eq(gb_workqueue_add_rate_limited(q, "ns/j"), 0);
    ck_assert_int_eq(gb_workqueue_num_requeues(q, "ns/j"), i + 1);
    ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 5000), 1);
    ck_assert(mono() - t0 >= gb_workqueue_backoff(&o, i) - 0.001);
    gb_workqueue_done(q, k);
  }
  ck_assert_uint_eq(gb_workqueue_retries(q), 4);
  gb_workqueue_forget(q, "ns/j");
  ck_assert_int_eq(gb_workqueue_num_requeues(q, "ns/j"), 0);
  ck_assert_int_eq(gb_workqueue_num_requeues(q, "never"), 0);
  gb_workqueue_free(q);
}
END_TEST

START_TEST(test_overall_bucket) {
  /* qps 20, burst 2: the third and later keys wait on the bucket even
   * though each key's own backoff is tiny. */
  struct gb_workqueue_opts o = {0.0001, 1, 20, 2, 0};
  struct gb_workqueue *q = gb_workqueue_new(&o);
  char k[64];
  double t0 = mono();
  for (int i = 0; i < 6; i++) {
    snprintf(k, sizeof(k), "k%d", i);
    ck_assert_int_eq(gb_workqueue_add_rate_limited(q, k), 0);
  }
  /* delayed() and len() are two reads: a key the delay thread moves between
   * them is counted twice.  Read until delayed() is the same on both sides
   * of len() (keys only ever move from delayed to ready here). */
  size_t seen = 0;
  for (int tries = 0; tries < 1000; tries++) {
    size_t d0 = gb_workqueue_delayed(q);
    size_t ready = gb_workqueue_len(q);
    if (gb_workqueue_delayed(q) == d0) {
      seen = d0 + ready;
      break;
    }
  }
  ck_assert_uint_eq(seen, 6);
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 5000), 1);
    gb_workqueue_done(q, k);
  }
  /* Four keys beyond the burst need four tokens at 20/s. */
  ck_assert(mono() - t0 >= 0.19);
  gb_workqueue_free(q);
}
END_TEST

START_TEST(test_bounds_and_errors) {
  struct gb_workqueue_opts o = {0, 0, 0, 0, 3};
  struct gb_workqueue *q = gb_workqueue_new(&o);
  char big[GB_WORKQUEUE_KEY_MAX + 2];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  ck_assert_int_eq(gb_workqueue_add(q, ""), GC_EINVAL);
  ck_assert_int_eq(gb_workqueue_add(q, NULL), GC_EINVAL);
  ck_assert_int_eq(gb_workqueue_add(q, big), GC_EINVAL);
  big[GB_WORKQUEUE_KEY_MAX] = '\0';
  ck_assert_int_eq(gb_workqueue_add(q, big), 0);
  ck_assert_int_eq(gb_workqueue_add(q, "b"), 0);
  ck_assert_int_eq(gb_workqueue_add(q, "c"), 0);
  ck_assert_int_eq(gb_workqueue_add(q, "d"), GC_ELIMIT);
  ck_assert_int_eq(gb_workqueue_add(q, "c"), 0); /* known keys still fine */
  char k[8];                                      /* short buffer: key is cut, not overrun */
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 1);
  ck_assert_uint_eq(strlen(k), 7);
  gb_workqueue_done(q, big);
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), 1);
  gb_workqueue_done(q, k);
  /* Released entries free room for new keys. */
  ck_assert_int_eq(gb_workqueue_add(q, "d"), 0);
  gb_workqueue_done(q, "not-processing"); /* harmless */
  gb_workqueue_forget(q, "");
  gb_workqueue_free(q);
  gb_workqueue_free(NULL);
}
END_TEST

struct waiter {
  struct gb_workqueue *q;
  int rc;
};

static void *wait_get(void *arg) {
  struct waiter *w = arg;
  char k[64];
  w->rc = gb_workqueue_get(w->q, k, sizeof(k), -1);
  return NULL;
}

START_TEST(test_shutdown) {
  struct gb_workqueue *q = gb_workqueue_new(NULL);
  struct waiter w = {q, 7};
  pthread_t t;
  pthread_create(&t, NULL, wait_get, &w);
  struct timespec ts = {0, 50 * 1000000L};
  nanosleep(&ts, NULL);
  gb_workqueue_shutdown(q);
  pthread_join(t, NULL);
  ck_assert_int_eq(w.rc, -1);
  ck_assert_int_eq(gb_workqueue_add(q, "a"), GC_EUSAGE);
  ck_assert_int_eq(gb_workqueue_add_rate_limited(q, "a"), GC_EUSAGE);
  char k[8];
  ck_assert_int_eq(gb_workqueue_get(q, k, sizeof(k), 0), -1);
  gb_workqueue_free(q);
}
END_TEST

#define N_KEYS 64
#define N_ADDS 20000

struct stress {
  struct gb_workqueue *q;
  atomic_int inflight[N_KEYS];
  atomic_int processed[N_KEYS];
  atomic_int overlap;
  atomic_int stop;
};

static void *producer(void *arg) {
  struct stress *s = arg;
  char k[16];
  unsigned seed = (unsigned)(size_t)pthread_self();
  for (int i = 0; i < N_ADDS; i++) {
    seed = seed * 1103515245u + 12345u;
    snprintf(k, sizeof(k), "k%u", (seed >> 8) % N_KEYS);
    ck_assert_int_eq(gb_workqueue_add(s->q, k), 0);
  }
  return NULL;
}

static void *worker(void *arg) {
  struct stress *s = arg;
  char k[16];
  for (;;) {
    int rc = gb_workqueue_get(s->q, k, sizeof(k), 20);
    if (rc < 0)
      break;
    if (rc == 0) {
      if (atomic_load(&s->stop))
        break;
      continue;
    }
    int i = 0;
    sscanf(k, "k%d", &i);
    if (atomic_fetch_add(&s->inflight[i], 1) != 0)
      atomic_fetch_add(&s->overlap, 1);
    atomic_fetch_add(&s->processed[i], 1);
    atomic_fetch_sub(&s->inflight[i], 1);
    gb_workqueue_done(s->q, k);
  }
  return NULL;
}

START_TEST(test_threads) {
  static struct stress s;
  memset(&s, 0, sizeof(s));
  s.q = gb_workqueue_new(NULL);
  pthread_t p[4], w[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&w[i], NULL, worker, &s);
  for (int i = 0; i < 4; i++)
    pthread_create(&p[i], NULL, producer, &s);
  for (int i = 0; i < 4; i++)
    pthread_join(p[i], NULL);
  /* After the last add every key must still be processed once more. */
  for (int i = 0; i < N_KEYS; i++)
    atomic_store(&s.processed[i], 0);
  for (int i = 0; i < N_KEYS; i++) {
    char k[16];
    snprintf(k, sizeof(k), "k%d", i);
    gb_workqueue_add(s.q, k);
  }
  double end = mono() + 30;
  int all = 0;
  while (!all && mono() < end) {
    all = 1;
    for (int i = 0; i < N_KEYS; i++)
      if (atomic_load(&s.processed[i]) == 0)
        all = 0;
    struct timespec ts = {0, 1000000L};
    nanosleep(&ts, NULL);
  }
  atomic_store(&s.stop, 1);
  for (int i = 0; i < 4; i++)
    pthread_join(w[i], NULL);
  ck_assert_int_eq(all, 1);
  ck_assert_int_eq(atomic_load(&s.overlap), 0);
  ck_assert_uint_eq(gb_workqueue_len(s.q), 0);
  gb_workqueue_free(s.q);
}
END_TEST

int main(void) {
  Suite *s = suite_create("workqueue");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_dedup_and_processing);
  tcase_add_test(tc, test_fifo_order);
  tcase_add_test(tc, test_add_after);
  tcase_add_test(tc, test_backoff_and_forget);
  tcase_add_test(tc, test_overall_bucket);
  tcase_add_test(tc, test_bounds_and_errors);
  tcase_add_test(tc, test_shutdown);
  tcase_add_test(tc, test_threads);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
