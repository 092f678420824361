/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_clock: the three readings agree and never go back, and
 * deadlines are normalised, in the future by the asked amount and clamped
 * at both ends.  No timed assertions: only orderings and bounds.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "gb_clock.h"

static int64_t ts_ns(const struct timespec *ts) {
  return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

START_TEST(test_monotonic_and_units) {
  int64_t a = gb_clock_ns();
  int64_t ms = gb_clock_ms();
  double s = gb_clock_s();
  int64_t b = gb_clock_ns();
  ck_assert_int_le(a, b);
  ck_assert_int_ge(ms, a / 1000000);
  ck_assert_int_le(ms, b / 1000000);
  ck_assert(s * 1e9 >= (double)a - 1e3 && s * 1e9 <= (double)b + 1e3);
  for (int i = 0; i < 1000; i++) {
    int64_t c = gb_clock_ns();
    ck_assert_int_ge(c, b);
    b = c;
  }
}
END_TEST

START_TEST(test_deadline) {
  const int64_t cases[] = {0, 1, 999999999, 1000000000, 1500000000, 250000000};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    /* Many tries so that a carry of tv_nsec past a second is met. */
    for (int k = 0; k < 200; k++) {
      struct timespec ts;
      int64_t before = gb_clock_ns();
      gb_clock_deadline(&ts, cases[i]);
      int64_t after = gb_clock_ns();
      ck_assert_int_ge(ts.tv_nsec, 0);
      ck_assert_int_lt(ts.tv_nsec, 1000000000L);
      ck_assert_int_ge(ts_ns(&ts), before + cases[i]);
      ck_assert_int_le(ts_ns(&ts), after + cases[i]);
    }
  }
}
END_TEST

START_TEST(test_deadline_clamped) {
  struct timespec ts;
  int64_t before = gb_clock_ns();
  gb_clock_deadline(&ts, -5000000000LL);
  ck_assert_int_ge(ts_ns(&ts), before);
  ck_assert_int_le(ts_ns(&ts), gb_clock_ns());
  before = gb_clock_ns();
  gb_clock_deadline(&ts, INT64_MAX);
  ck_assert_int_ge(ts_ns(&ts), before + GB_CLOCK_MAX_WAIT_NS);
  ck_assert_int_le(ts_ns(&ts), gb_clock_ns() + GB_CLOCK_MAX_WAIT_NS);
}
END_TEST

START_TEST(test_deadline_seconds) {
  struct timespec ts;
  int64_t before = gb_clock_ns();
  gb_clock_deadline_s(&ts, 1.25);
  ck_assert_int_ge(ts_ns(&ts), before + 1249999000LL);
  ck_assert_int_le(ts_ns(&ts), gb_clock_ns() + 1250000000LL);
  const double odd[] = {-1.0, NAN, 1e300};
  for (size_t i = 0; i < 3; i++) {
    before = gb_clock_ns();
    gb_clock_deadline_s(&ts, odd[i]);
    ck_assert_int_ge(ts.tv_nsec, 0);
    ck_assert_int_lt(ts.tv_nsec, 1000000000L);
    ck_assert_int_ge(ts_ns(&ts), before);
    ck_assert_int_le(ts_ns(&ts), gb_clock_ns() + GB_CLOCK_MAX_WAIT_NS);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("clock");
  TCase *tc = tcase_create("clock");
  tcase_add_test(tc, test_monotonic_and_units);
  tcase_add_test(tc, test_deadline);
  tcase_add_test(tc, test_deadline_clamped);
  tcase_add_test(tc, test_deadline_seconds);
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
