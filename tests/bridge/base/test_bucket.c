/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_bucket, the token bucket shared by the Kubernetes client
 * and the work queue: the burst is free, then callers queue at 1/qps, idle
 * time refills only up to the burst, and qps <= 0 is unlimited.
 */
#include <check.h>

#include "gb_bucket.h"

START_TEST(token_bucket) {
  struct gb_bucket b;
  gb_bucket_init(&b, 10, 3, 100.0);
  /* The burst is free. */
  ck_assert(gb_bucket_reserve(&b, 100.0) == 0);
  ck_assert(gb_bucket_reserve(&b, 100.0) == 0);
  ck_assert(gb_bucket_reserve(&b, 100.0) == 0);
  /* Then callers queue up at 1/qps intervals. */
  ck_assert_double_eq_tol(gb_bucket_reserve(&b, 100.0), 0.1, 1e-9);
  ck_assert_double_eq_tol(gb_bucket_reserve(&b, 100.0), 0.2, 1e-9);
  /* Half a second later 5 tokens came back, 2 of which repay the debt. */
  ck_assert(gb_bucket_reserve(&b, 100.5) == 0);
  ck_assert(gb_bucket_reserve(&b, 100.5) == 0);
  ck_assert(gb_bucket_reserve(&b, 100.5) == 0);
  ck_assert_double_eq_tol(gb_bucket_reserve(&b, 100.5), 0.1, 1e-9);
  /* A long idle period refills only up to the burst. */
  double waits = 0;
  for (int i = 0; i < 4; i++)
    waits += gb_bucket_reserve(&b, 1000.0);
  ck_assert_double_eq_tol(waits, 0.1, 1e-9);
  /* qps <= 0 is unlimited. */
  gb_bucket_init(&b, -1, 1, 0);
  for (int i = 0; i < 100; i++)
    ck_assert(gb_bucket_reserve(&b, 0) == 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("bucket");
  TCase *tc = tcase_create("bucket");
  tcase_add_test(tc, token_bucket);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
