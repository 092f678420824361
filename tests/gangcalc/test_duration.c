/* SPDX-License-Identifier: Apache-2.0
 *
 * Go duration parsing and formatting: every case's expected value is what
 * Go 1.22's time.ParseDuration returns for the same text (and its error
 * text), and Duration.String() for the formatted ones.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc_diag.h"
#include "gc_duration.h"

static int64_t parse_ok(const char *s) {
  int64_t ns = -12345;
  char why[64] = "untouched";
  int rc = gc_duration_parse(s, strlen(s), &ns, why, sizeof(why));
  ck_assert_msg(rc == 0, "\"%s\": rc %d (%s)", s, rc, why);
  return ns;
}

static const char *parse_bad(const char *s) {
  static char why[64];
  int64_t ns = 0;
  int rc = gc_duration_parse(s, strlen(s), &ns, why, sizeof(why));
  ck_assert_msg(rc == GC_EINVAL, "\"%s\": accepted as %lld", s, (long long)ns);
  return why;
}

#define S 1000000000LL

START_TEST(duration_go_accepts) {
  ck_assert_int_eq(parse_ok("0"), 0);
  ck_assert_int_eq(parse_ok("-0"), 0);
  ck_assert_int_eq(parse_ok("+0"), 0);
  ck_assert_int_eq(parse_ok("0s"), 0);
  ck_assert_int_eq(parse_ok("90s"), 90 * S);
  ck_assert_int_eq(parse_ok("15m"), 900 * S);
  ck_assert_int_eq(parse_ok("1h30m"), 5400 * S);
  ck_assert_int_eq(parse_ok("1.5h"), 5400 * S);
  ck_assert_int_eq(parse_ok("-1.5h"), -5400 * S);
  ck_assert_int_eq(parse_ok("+5s"), 5 * S);
  ck_assert_int_eq(parse_ok("1h2m3s4ms5us6ns"),
                   3723 * S + 4000000 + 5000 + 6);
  ck_assert_int_eq(parse_ok("1\xc2\xb5s"), 1000);     /* U+00B5 micro sign */
  ck_assert_int_eq(parse_ok("1\xce\xbcs"), 1000);     /* U+03BC Greek mu */
  ck_assert_int_eq(parse_ok(".5s"), S / 2);
  ck_assert_int_eq(parse_ok("5.s"), 5 * S);
  ck_assert_int_eq(parse_ok("1.0000000001s"), S);     /* Go truncates below 1 ns */
  ck_assert_int_eq(parse_ok("10m10m"), 1200 * S);     /* repeated units add up */
  ck_assert_int_eq(parse_ok("2562047h47m16.854775807s"), INT64_MAX);
  ck_assert_int_eq(parse_ok("9223372036854775807ns"), INT64_MAX);
  ck_assert_int_eq(parse_ok("-9223372036854775808ns"), INT64_MIN);
  /* Go has no length limit: leading zeros cost nothing (the report's parser
   * took these, and the tracker reads Volcano's annotations as Volcano does). */
  char zeros[120];
  memset(zeros, '0', sizeof(zeros));
  memcpy(zeros + 115, "10m", 4);
  ck_assert_int_eq(parse_ok(zeros), 600 * S);
  ck_assert_int_eq(parse_ok("1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h1h"),
                   33 * 3600 * S);
}
END_TEST

START_TEST(duration_go_rejects) {
  ck_assert_str_eq(parse_bad("15x"), "unknown unit \"x\"");
  ck_assert_str_eq(parse_bad("15 m"), "unknown unit \" m\"");
  ck_assert_str_eq(parse_bad("1d"), "unknown unit \"d\"");
  ck_assert_str_eq(parse_bad("5S"), "unknown unit \"S\"");
  ck_assert_str_eq(parse_bad("15"), "missing unit");
  ck_assert_str_eq(parse_bad("1h30"), "missing unit");
  ck_assert_str_eq(parse_bad(""), "");
  ck_assert_str_eq(parse_bad("-"), "");
  ck_assert_str_eq(parse_bad("s"), "");
  ck_assert_str_eq(parse_bad(".s"), "");
  ck_assert_str_eq(parse_bad("1h-5m"), "unknown unit \"h-\"");
  ck_assert_str_eq(parse_bad(" 5s"), "");
  ck_assert_str_eq(parse_bad("9223372036854775808ns"), "");  /* over int64 */
  ck_assert_str_eq(parse_bad("2562048h"), "");
  ck_assert_str_eq(parse_bad("99999999999999999999s"), "");
  ck_assert_str_eq(parse_bad("1s\x01"), "unknown unit \"s\\x01\"");  /* escaped */
  /* Long text is read as Go reads it: 78 digits overflow, with no reason. */
  char big[80];
  memset(big, '1', sizeof(big));
  big[78] = 's';
  big[79] = '\0';
  ck_assert_str_eq(parse_bad(big), "");
  /* An unknown unit is quoted cut at 64 bytes, whatever its length. */
  char unit[200] = "1";
  memset(unit + 1, 'x', 150);
  unit[151] = '\0';
  char long_why[256];
  int64_t long_ns;
  ck_assert_int_eq(gc_duration_parse(unit, strlen(unit), &long_ns, long_why, sizeof(long_why)),
                   GC_EINVAL);
  ck_assert_uint_eq(strlen(long_why), strlen("unknown unit \"\"") + 64);
  /* An embedded NUL is not part of any unit. */
  int64_t ns;
  char why[64];
  ck_assert_int_eq(gc_duration_parse("5s\0", 3, &ns, why, sizeof(why)), GC_EINVAL);
}
END_TEST

START_TEST(duration_format_as_go) {
  static const struct {
    int64_t s;
    const char *want;
  } cases[] = {{0, "0s"},        {1, "1s"},         {45, "45s"},       {60, "1m0s"},
               {90, "1m30s"},    {900, "15m0s"},    {3600, "1h0m0s"},  {5400, "1h30m0s"},
               {3661, "1h1m1s"}, {2592000, "720h0m0s"}};
  char buf[GC_DURATION_BUFSZ];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    ck_assert_int_eq(gc_duration_format_seconds(cases[i].s, buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, cases[i].want);
    /* What is printed parses back to the same value. */
    ck_assert_int_eq(parse_ok(buf), cases[i].s * S);
  }
  ck_assert_int_eq(gc_duration_format_seconds(-1, buf, sizeof(buf)), GC_EINVAL);
  ck_assert_int_eq(gc_duration_format_seconds(INT64_MAX / S + 1, buf, sizeof(buf)), GC_EINVAL);
  ck_assert_int_eq(gc_duration_format_seconds(3600, buf, 6), GC_EINVAL);
}
END_TEST

/* Whole seconds, magnitude rounded up: what the timeout tracker, the
 * report and the timeouts command read (they had a parser of their own). */
START_TEST(duration_seconds) {
  static const struct {
    const char *in;
    int64_t out;
  } ok[] = {{"10m", 600},       {"1h2m3s", 3723}, {"0", 0},   {"1.5s", 2},
            {"300ms", 1},       {"1h0.5m", 3630}, {"90s", 90}, {"2h", 7200},
            {"-5m", -300},      {"-1.5s", -2},    {"1000000us", 1}, {"1\xc2\xb5s", 1},
            {"1000000001ns", 2}, {"-9223372036854775808ns", -9223372037LL}};
  int64_t s = 0;
  char why[64];
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    ck_assert_msg(gc_duration_parse_seconds(ok[i].in, &s, why, sizeof(why)) == 0, "rejected %s",
                  ok[i].in);
    ck_assert_int_eq(s, ok[i].out);
  }
  const char *bad[] = {"", "10", "1d", "m", "10 m", "1h-2m", ".s", "-", "9999999999h"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(gc_duration_parse_seconds(bad[i], &s, why, sizeof(why)) == GC_EINVAL,
                  "accepted '%s'", bad[i]);
  ck_assert_int_eq(gc_duration_parse_seconds(NULL, &s, why, sizeof(why)), GC_EINVAL);
  ck_assert_int_eq(gc_duration_parse_seconds("1d", &s, why, sizeof(why)), GC_EINVAL);
  ck_assert_str_eq(why, "unknown unit \"d\"");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("duration");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, duration_go_accepts);
  tcase_add_test(tc, duration_go_rejects);
  tcase_add_test(tc, duration_format_as_go);
  tcase_add_test(tc, duration_seconds);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
