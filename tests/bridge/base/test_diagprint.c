/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_diagprint: errors and warnings one a line, the prefix on
 * every line, and the "... and N more problems" line when the bounded list
 * dropped messages (the copy in gb_cmd_call.c used to leave it out).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_diagprint.h"
#include "gc_diag.h"

/* Prints d with prefix into a temporary file; returns the text (caller frees). */
static char *printed(const char *prefix, const struct gc_diags *d) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  gb_diagprint_write(f, prefix, d);
  fflush(f);
  long n = ftell(f);
  ck_assert_int_ge(n, 0);
  char *b = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(b);
  rewind(f);
  ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = '\0';
  fclose(f);
  return b;
}

START_TEST(test_lines) {
  struct gc_diags d;
  gc_diags_init(&d);
  gc_diags_addf(&d, "a.yaml:1:2: bad");
  gc_diags_warnf(&d, "ns/x: spec.y: odd");
  char *s = printed(NULL, &d);
  ck_assert_str_eq(s, "a.yaml:1:2: bad\nwarning: ns/x: spec.y: odd\n");
  free(s);
  s = printed("gangbridge serve: ", &d);
  ck_assert_str_eq(s, "gangbridge serve: a.yaml:1:2: bad\n"
                      "gangbridge serve: warning: ns/x: spec.y: odd\n");
  free(s);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_dropped) {
  struct gc_diags d;
  gc_diags_init(&d);
  d.max = 2;
  for (int i = 0; i < 5; i++)
    gc_diags_addf(&d, "problem %d", i);
  ck_assert_uint_eq(d.dropped, 3);
  char *s = printed("p: ", &d);
  ck_assert_str_eq(s, "p: problem 0\np: problem 1\np: ... and 3 more problems\n");
  free(s);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_empty_and_null) {
  struct gc_diags d;
  gc_diags_init(&d);
  char *s = printed("x: ", &d);
  ck_assert_str_eq(s, "");
  free(s);
  s = printed("x: ", NULL);
  ck_assert_str_eq(s, "");
  free(s);
  gb_diagprint_write(NULL, NULL, &d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("diagprint");
  TCase *tc = tcase_create("diagprint");
  tcase_add_test(tc, test_lines);
  tcase_add_test(tc, test_dropped);
  tcase_add_test(tc, test_empty_and_null);
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
