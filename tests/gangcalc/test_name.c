/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_name: one test per apimachinery rule (IsDNS1035Label, IsDNS1123Label,
 * IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue), with the edge
 * cases apimachinery's own tests use, and one per difference found between
 * the copies the project had.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_name.h"

/* Tests a C string (the length is strlen). */
#define OK(f, s) ck_assert_msg(f((s), strlen(s)), #f "(\"%s\") should be valid", (s))
#define BAD(f, s) ck_assert_msg(!f((s), strlen(s)), #f "(\"%s\") should be invalid", (s))

/* A string of n copies of ch, in a static buffer big enough for every case. */
static const char *rep(char ch, size_t n) {
  static char buf[4][400];
  static int which;
  char *b = buf[which++ % 4];
  ck_assert_uint_lt(n, sizeof(buf[0]));
  memset(b, ch, n);
  b[n] = '\0';
  return b;
}

START_TEST(name_dns1035_label) {
  OK(gc_name_is_dns1035, "a");
  OK(gc_name_is_dns1035, "ab-c1");
  OK(gc_name_is_dns1035, rep('a', 63));
  BAD(gc_name_is_dns1035, "");
  BAD(gc_name_is_dns1035, "1a");
  BAD(gc_name_is_dns1035, "a-");
  BAD(gc_name_is_dns1035, "A");
  BAD(gc_name_is_dns1035, "a.b");
  BAD(gc_name_is_dns1035, rep('a', 64));
  /* An embedded NUL byte is not cut short. */
  ck_assert(!gc_name_is_dns1035("a\0b", 3));
  ck_assert(!gc_name_is_dns1035(NULL, 0));
}
END_TEST

START_TEST(name_dns1123_label) {
  OK(gc_name_is_dns1123_label, "a");
  OK(gc_name_is_dns1123_label, "0");
  OK(gc_name_is_dns1123_label, "1-a");
  OK(gc_name_is_dns1123_label, rep('a', 63));
  BAD(gc_name_is_dns1123_label, "");
  BAD(gc_name_is_dns1123_label, "-a");
  BAD(gc_name_is_dns1123_label, "a-");
  BAD(gc_name_is_dns1123_label, "a.b");
  BAD(gc_name_is_dns1123_label, "a_b");
  BAD(gc_name_is_dns1123_label, "A");
  BAD(gc_name_is_dns1123_label, rep('a', 64));
  ck_assert(!gc_name_is_dns1123_label("a\0b", 3));
}
END_TEST

START_TEST(name_dns1123_subdomain) {
  OK(gc_name_is_dns1123_subdomain, "a");
  OK(gc_name_is_dns1123_subdomain, "a.b.c");
  OK(gc_name_is_dns1123_subdomain, "0.a-1.b");
  OK(gc_name_is_dns1123_subdomain, rep('a', 253));
  BAD(gc_name_is_dns1123_subdomain, "");
  BAD(gc_name_is_dns1123_subdomain, ".a");
  BAD(gc_name_is_dns1123_subdomain, "a.");
  BAD(gc_name_is_dns1123_subdomain, "a..b");
  BAD(gc_name_is_dns1123_subdomain, "a-.b");
  BAD(gc_name_is_dns1123_subdomain, "a.-b");
  BAD(gc_name_is_dns1123_subdomain, "A.b");
  BAD(gc_name_is_dns1123_subdomain, "a_b");
  BAD(gc_name_is_dns1123_subdomain, rep('a', 254));
  ck_assert(!gc_name_is_dns1123_subdomain("a\0b", 3));
}
END_TEST

/* The difference found: gangcalc's copy limited each label of a subdomain
 * to 63 bytes, bridge/gb_reconcile.c's did not.  apimachinery's
 * IsDNS1123Subdomain checks only the total length and the pattern, and the
 * API server names a Volcano Queue with it, so a queue "<64 a's>.x" can
 * exist: refusing it would refuse a real queue.  apimachinery's rule is
 * kept. */
START_TEST(name_subdomain_label_not_limited) {
  char buf[80];
  snprintf(buf, sizeof(buf), "%s.x", rep('a', 64));
  OK(gc_name_is_dns1123_subdomain, buf);
  OK(gc_name_is_dns1123_subdomain, rep('b', 64));
}
END_TEST

START_TEST(name_qualified) {
  OK(gc_name_is_qualified, "simple");
  OK(gc_name_is_qualified, "now-with-dashes");
  OK(gc_name_is_qualified, "1-starts-with-num");
  OK(gc_name_is_qualified, "1234");
  OK(gc_name_is_qualified, "simple/simple");
  OK(gc_name_is_qualified, "now-with-dashes/simple");
  OK(gc_name_is_qualified, "now-with-dashes/now-with-dashes");
  OK(gc_name_is_qualified, "now.with.dots/simple");
  OK(gc_name_is_qualified, "now-with.dashes-and.dots/simple");
  OK(gc_name_is_qualified, "1-num.2-num/3-num");
  OK(gc_name_is_qualified, "1234/5678");
  OK(gc_name_is_qualified, "1.2.3.4/5678");
  OK(gc_name_is_qualified, "Uppercase_Is_OK_123");
  OK(gc_name_is_qualified, "example.com/Uppercase_Is_OK_123");
  OK(gc_name_is_qualified, "requests.storage-foo");
  OK(gc_name_is_qualified, rep('a', 63));
  char buf[400];
  snprintf(buf, sizeof(buf), "%s/b", rep('a', 253));
  OK(gc_name_is_qualified, buf);
  BAD(gc_name_is_qualified, "");
  BAD(gc_name_is_qualified, "nospecialchars%^=@");
  BAD(gc_name_is_qualified, "cantendwithadash-");
  BAD(gc_name_is_qualified, "-cantstartwithadash-");
  BAD(gc_name_is_qualified, "only/one/slash");
  BAD(gc_name_is_qualified, "Example.com/abc");
  BAD(gc_name_is_qualified, "example_com/abc");
  BAD(gc_name_is_qualified, "example.com/");
  BAD(gc_name_is_qualified, "/simple");
  BAD(gc_name_is_qualified, rep('a', 64));
  snprintf(buf, sizeof(buf), "%s/b", rep('a', 254));
  BAD(gc_name_is_qualified, buf);
  ck_assert(!gc_name_is_qualified("a\0b", 3));
}
END_TEST

START_TEST(name_label_value) {
  OK(gc_name_is_label_value, "");
  OK(gc_name_is_label_value, "simple");
  OK(gc_name_is_label_value, "now-with-dashes");
  OK(gc_name_is_label_value, "1-starts-with-num");
  OK(gc_name_is_label_value, "end-with-num-1");
  OK(gc_name_is_label_value, "1234");
  OK(gc_name_is_label_value, "Uppercase_Is_OK_123");
  OK(gc_name_is_label_value, "a.b");
  OK(gc_name_is_label_value, rep('a', 63));
  ck_assert(gc_name_is_label_value(NULL, 0));
  BAD(gc_name_is_label_value, "nospecialchars%^=@");
  BAD(gc_name_is_label_value, "Tama-nui-te-rā.is.Māori.sun");
  BAD(gc_name_is_label_value, "\\backslashes\\are\\bad");
  BAD(gc_name_is_label_value, "-starts-with-dash");
  BAD(gc_name_is_label_value, "ends-with-dash-");
  BAD(gc_name_is_label_value, ".starts.with.dot");
  BAD(gc_name_is_label_value, "ends.with.dot.");
  BAD(gc_name_is_label_value, "a/b");
  BAD(gc_name_is_label_value, rep('a', 64));
  ck_assert(!gc_name_is_label_value("a\0b", 3));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("name");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, name_dns1035_label);
  tcase_add_test(tc, name_dns1123_label);
  tcase_add_test(tc, name_dns1123_subdomain);
  tcase_add_test(tc, name_subdomain_label_not_limited);
  tcase_add_test(tc, name_qualified);
  tcase_add_test(tc, name_label_value);
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
