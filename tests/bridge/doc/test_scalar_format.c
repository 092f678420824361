/* SPDX-License-Identifier: Apache-2.0
 *
 * Float formatting in gb_scalar: gb_scalar_format_double (how the emitters
 * write float values, always with a '.' or an exponent) and
 * gb_scalar_format_float32_key (Go's FormatFloat(f, 'g', -1, 32), the
 * spelling sigs.k8s.io/yaml gives float map keys).  Both share the shortest
 * digits search and Go's layout; the expected texts are Go's.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "gb_scalar.h"

static const char *dbl(double d) {
  static char buf[64];
  size_t n = gb_scalar_format_double(d, buf, sizeof(buf));
  ck_assert_uint_eq(n, strlen(buf));
  return buf;
}

static const char *key(double f) {
  static char buf[64];
  size_t n = gb_scalar_format_float32_key(f, buf, sizeof(buf));
  ck_assert_uint_eq(n, strlen(buf));
  return buf;
}

START_TEST(test_double) {
  ck_assert_str_eq(dbl(2), "2.0");
  ck_assert_str_eq(dbl(-1.5), "-1.5");
  ck_assert_str_eq(dbl(0.1), "0.1");
  ck_assert_str_eq(dbl(0.0001), "0.0001");
  ck_assert_str_eq(dbl(0.00001), "1e-05");
  ck_assert_str_eq(dbl(1e20), "100000000000000000000.0");
  ck_assert_str_eq(dbl(1e21), "1e+21");
  ck_assert_str_eq(dbl(123456.789), "123456.789");
  ck_assert_str_eq(dbl(1.0 / 3), "0.3333333333333333");
  ck_assert_str_eq(dbl(5e-324), "5e-324");
  ck_assert_str_eq(dbl(1.7976931348623157e308), "1.7976931348623157e+308");
  ck_assert_str_eq(dbl(0.0), "0.0");
  ck_assert_str_eq(dbl(-0.0), "-0.0");
  ck_assert_str_eq(dbl(INFINITY), ".inf");
  ck_assert_str_eq(dbl(-INFINITY), "-.inf");
  ck_assert_str_eq(dbl(NAN), ".nan");
  char small[16];
  ck_assert_uint_eq(gb_scalar_format_double(1.5, small, sizeof(small)), 0);
}
END_TEST

START_TEST(test_float32_key) {
  ck_assert_str_eq(key(1.5), "1.5");
  ck_assert_str_eq(key(2), "2");
  ck_assert_str_eq(key(123456), "123456");
  ck_assert_str_eq(key(1e6), "1e+06");
  ck_assert_str_eq(key(1234567), "1.234567e+06");
  ck_assert_str_eq(key(0.0001), "0.0001");
  ck_assert_str_eq(key(0.00001), "1e-05");
  /* float32 precision: 0.1 is the float nearest to it, 16777217 rounds. */
  ck_assert_str_eq(key(0.1), "0.1");
  ck_assert_str_eq(key(16777217), "1.6777216e+07");
  ck_assert_str_eq(key(1.0 / 3), "0.33333334");
  ck_assert_str_eq(key(-2.5e-7), "-2.5e-07");
  ck_assert_str_eq(key(3.4e38), "3.4e+38");
  ck_assert_str_eq(key(0.0), "0");
  ck_assert_str_eq(key(-0.0), "-0");
  ck_assert_str_eq(key(NAN), ".nan");
  char small[16];
  ck_assert_uint_eq(gb_scalar_format_float32_key(1.5, small, sizeof(small)), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("scalar_format");
  TCase *tc = tcase_create("format");
  tcase_add_test(tc, test_double);
  tcase_add_test(tc, test_float32_key);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
