/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_deadline, the timeout tracker's min-heap: due items pop
 * in deadline order, moving and removing keep the heap consistent (checked
 * against a brute-force model over many random operations), the bound.
 */
#include <check.h>
#include <stdlib.h>

#include "gb_deadline.h"
#include "gc_diag.h"

START_TEST(test_pops_in_order) {
  struct gb_deadlines h;
  ck_assert_int_eq(gb_deadlines_init(&h, 0), 0);
  struct gb_deadline_item it[5];
  double at[5] = {50, 10, 40, 20, 30};
  for (int i = 0; i < 5; i++) {
    gb_deadline_item_init(&it[i]);
    ck_assert_int_eq(gb_deadlines_set(&h, &it[i], at[i]), 0);
  }
  ck_assert_ptr_eq(gb_deadlines_peek(&h), &it[1]);
  ck_assert_ptr_null(gb_deadlines_pop_due(&h, 9.5));
  ck_assert_ptr_eq(gb_deadlines_pop_due(&h, 25), &it[1]);
  ck_assert_ptr_eq(gb_deadlines_pop_due(&h, 25), &it[3]);
  ck_assert_ptr_null(gb_deadlines_pop_due(&h, 25));
  ck_assert_uint_eq(it[1].idx, GB_DEADLINE_NONE);
  /* Moving an item later and another earlier. */
  ck_assert_int_eq(gb_deadlines_set(&h, &it[4], 100), 0);
  ck_assert_int_eq(gb_deadlines_set(&h, &it[0], 1), 0);
  ck_assert_ptr_eq(gb_deadlines_pop_due(&h, 1000), &it[0]);
  ck_assert_ptr_eq(gb_deadlines_pop_due(&h, 1000), &it[2]);
  gb_deadlines_remove(&h, &it[4]);
  gb_deadlines_remove(&h, &it[4]); /* twice: a no-op */
  ck_assert_ptr_null(gb_deadlines_peek(&h));
  gb_deadlines_destroy(&h);
}
END_TEST

START_TEST(test_random_against_model) {
  enum { N = 500 };
  struct gb_deadlines h;
  ck_assert_int_eq(gb_deadlines_init(&h, 0), 0);
  static struct gb_deadline_item it[N];
  static int in[N];
  for (int i = 0; i < N; i++) {
    gb_deadline_item_init(&it[i]);
    in[i] = 0;
  }
  srand(7);
  for (int step = 0; step < 20000; step++) {
    int i = rand() % N, op = rand() % 4;
    if (op < 2) {
      ck_assert_int_eq(gb_deadlines_set(&h, &it[i], (double)(rand() % 1000)), 0);
      in[i] = 1;
    } else if (op == 2) {
      gb_deadlines_remove(&h, &it[i]);
      in[i] = 0;
    } else {
      double now = (double)(rand() % 1000);
      struct gb_deadline_item *p = gb_deadlines_pop_due(&h, now);
      /* The model's earliest member. */
      int best = -1;
      for (int j = 0; j < N; j++)
        if (in[j] && (best < 0 || it[j].at < it[best].at))
          best = j;
      if (best < 0 || it[best].at > now) {
        ck_assert_ptr_null(p);
      } else {
        ck_assert_ptr_nonnull(p);
        ck_assert(p->at == it[best].at);
        in[p - it] = 0;
      }
    }
    size_t count = 0;
    for (int j = 0; j < N; j++)
      count += (size_t)in[j];
    ck_assert_uint_eq(h.n, count);
  }
  gb_deadlines_destroy(&h);
}
END_TEST

START_TEST(test_bound) {
  struct gb_deadlines h;
  ck_assert_int_eq(gb_deadlines_init(&h, 2), 0);
  struct gb_deadline_item it[3];
  for (int i = 0; i < 3; i++)
    gb_deadline_item_init(&it[i]);
  ck_assert_int_eq(gb_deadlines_set(&h, &it[0], 1), 0);
  ck_assert_int_eq(gb_deadlines_set(&h, &it[1], 2), 0);
  ck_assert_int_eq(gb_deadlines_set(&h, &it[2], 3), GC_ELIMIT);
  ck_assert_int_eq(gb_deadlines_set(&h, &it[1], 0), 0); /* a move is not an insert */
  ck_assert_ptr_eq(gb_deadlines_peek(&h), &it[1]);
  gb_deadlines_destroy(&h);
  gb_deadlines_destroy(&h); /* twice: safe */
}
END_TEST

int main(void) {
  Suite *s = suite_create("deadline");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_pops_in_order);
  tcase_add_test(tc, test_random_against_model);
  tcase_add_test(tc, test_bound);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
