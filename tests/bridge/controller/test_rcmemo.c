/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_rcmemo: a stored fingerprint matches only itself and
 * only for its key, a new one replaces it, 0 forgets the key (and is never
 * a match), many keys survive the table's growth and removals, and threads
 * storing and asking at once.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>

#include "gb_rcmemo.h"
#include "gb_rcmemo_test.h"

START_TEST(test_same_replace_forget) {
  struct gb_rcmemo *m = gb_rcmemo_new();
  ck_assert_ptr_nonnull(m);
  ck_assert(!gb_rcmemo_same(m, "ns/a", 7)); /* empty */
  gb_rcmemo_put(m, "ns/a", 7);
  ck_assert(gb_rcmemo_same(m, "ns/a", 7));
  ck_assert(!gb_rcmemo_same(m, "ns/a", 8));
  ck_assert(!gb_rcmemo_same(m, "ns/b", 7));
  ck_assert(!gb_rcmemo_same(m, "ns/a", 0));
  gb_rcmemo_put(m, "ns/a", 8);
  ck_assert(!gb_rcmemo_same(m, "ns/a", 7));
  ck_assert(gb_rcmemo_same(m, "ns/a", 8));
  ck_assert_uint_eq(gb_rcmemo_count(m), 1);
  gb_rcmemo_put(m, "ns/a", 0);
  ck_assert(!gb_rcmemo_same(m, "ns/a", 8));
  ck_assert_uint_eq(gb_rcmemo_count(m), 0);
  gb_rcmemo_put(m, "ns/never", 0); /* forgetting an unknown key stores nothing */
  ck_assert_uint_eq(gb_rcmemo_count(m), 0);
  gb_rcmemo_free(m);
  gb_rcmemo_free(NULL);
}
END_TEST

START_TEST(test_many_keys_grow_and_remove) {
  struct gb_rcmemo *m = gb_rcmemo_new();
  char k[64];
  for (int round = 0; round < 3; round++) {
    for (unsigned i = 0; i < 20000; i++) {
      snprintf(k, sizeof(k), "ns%u/job-%u", i % 7, i);
      gb_rcmemo_put(m, k, 1000u * round + i + 1);
    }
    /* Every other key forgotten: the removed slots must not hide the rest. */
    for (unsigned i = 0; i < 20000; i += 2) {
      snprintf(k, sizeof(k), "ns%u/job-%u", i % 7, i);
      gb_rcmemo_put(m, k, 0);
    }
    ck_assert_uint_eq(gb_rcmemo_count(m), 10000);
    for (unsigned i = 0; i < 20000; i++) {
      snprintf(k, sizeof(k), "ns%u/job-%u", i % 7, i);
      ck_assert_int_eq(gb_rcmemo_same(m, k, 1000u * round + i + 1), (int)(i % 2));
    }
  }
  gb_rcmemo_free(m);
}
END_TEST

struct worker {
  struct gb_rcmemo *m;
  int id;
  int bad;
};

static void *run(void *arg) {
  struct worker *w = arg;
  char k[64];
  for (unsigned i = 0; i < 5000; i++) {
    snprintf(k, sizeof(k), "t%d/job-%u", w->id, i);
    gb_rcmemo_put(w->m, k, i + 1);
    if (!gb_rcmemo_same(w->m, k, i + 1))
      w->bad++;
  }
  return NULL;
}

START_TEST(test_threads) {
  struct gb_rcmemo *m = gb_rcmemo_new();
  pthread_t th[4];
  struct worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (struct worker){m, i, 0};
    ck_assert_int_eq(pthread_create(&th[i], NULL, run, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(w[i].bad, 0);
  }
  ck_assert_uint_eq(gb_rcmemo_count(m), 20000);
  gb_rcmemo_free(m);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rcmemo");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_same_replace_forget);
  tcase_add_test(tc, test_many_keys_grow_and_remove);
  tcase_add_test(tc, test_threads);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
