/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_buf: appending bytes, strings and formatted text, the
 * limit taken exactly (toobig - 1 bytes fit, toobig do not), the sticky
 * error that frees the contents, reset and reuse, reserve, and handing the
 * contents over (an empty buffer gives "").
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gc_diag.h"

START_TEST(test_append) {
  struct gb_buf b;
  gb_buf_init(&b, 1 << 20);
  ck_assert_str_eq(gb_buf_ptr(&b), "");
  ck_assert_uint_eq(gb_buf_len(&b), 0);
  ck_assert_int_eq(gb_buf_add(&b, "ab", 2), 0);
  ck_assert_int_eq(gb_buf_addstr(&b, "cd"), 0);
  ck_assert_int_eq(gb_buf_printf(&b, "-%d-%s", 42, "x"), 0);
  ck_assert_int_eq(gb_buf_add(&b, NULL, 0), 0);
  ck_assert_str_eq(gb_buf_ptr(&b), "abcd-42-x");
  ck_assert_uint_eq(gb_buf_len(&b), 9);
  /* Growth over many doublings keeps every byte. */
  for (int i = 0; i < 10000; i++)
    ck_assert_int_eq(gb_buf_printf(&b, "%04d", i % 10000), 0);
  ck_assert_uint_eq(gb_buf_len(&b), 9 + 40000);
  ck_assert_mem_eq(gb_buf_ptr(&b) + 9 + 4 * 1234, "1234", 4);
  ck_assert_int_eq(gb_buf_add(&b, "\0z", 2), 0); /* bytes, not only text */
  ck_assert_uint_eq(gb_buf_len(&b), 40011);
  gb_buf_free(&b);
  gb_buf_free(NULL);
}
END_TEST

START_TEST(test_limit_exact) {
  struct gb_buf b;
  gb_buf_init(&b, 8);
  ck_assert_int_eq(gb_buf_add(&b, "1234567", 7), 0); /* 7 < 8 */
  ck_assert_str_eq(gb_buf_ptr(&b), "1234567");
  ck_assert_int_eq(gb_buf_add(&b, "8", 1), GC_ELIMIT);
  /* The error sticks and the contents are gone. */
  ck_assert_uint_eq(gb_buf_len(&b), 0);
  ck_assert_str_eq(gb_buf_ptr(&b), "");
  ck_assert_int_eq(gb_buf_addstr(&b, ""), GC_ELIMIT);
  ck_assert_int_eq(gb_buf_printf(&b, "x"), GC_ELIMIT);
  char *out = (char *)"x";
  ck_assert_int_eq(gb_buf_take(&b, &out, NULL), GC_ELIMIT);
  ck_assert_ptr_null(out);
  /* A huge length cannot wrap the check. */
  gb_buf_init(&b, 8);
  ck_assert_int_eq(gb_buf_add(&b, "ab", 2), 0);
  ck_assert_int_eq(gb_buf_reserve(&b, SIZE_MAX), GC_ELIMIT);
  gb_buf_free(&b);
  gb_buf_init(&b, 5);
  ck_assert_int_eq(gb_buf_printf(&b, "%s", "12345"), GC_ELIMIT);
  gb_buf_free(&b);
  /* A writer's own failure sticks the same way; the first error wins. */
  gb_buf_init(&b, 100);
  ck_assert_int_eq(gb_buf_addstr(&b, "x"), 0);
  ck_assert_int_eq(gb_buf_fail(&b, GC_ENOMEM), GC_ENOMEM);
  ck_assert_int_eq(gb_buf_fail(&b, GC_ELIMIT), GC_ENOMEM);
  ck_assert_int_eq(gb_buf_addstr(&b, "y"), GC_ENOMEM);
  ck_assert_uint_eq(gb_buf_len(&b), 0);
  gb_buf_free(&b);
}
END_TEST

START_TEST(test_reset_reserve_take) {
  struct gb_buf b;
  gb_buf_init(&b, 100);
  ck_assert_int_eq(gb_buf_addstr(&b, "hello"), 0);
  gb_buf_reset(&b);
  ck_assert_str_eq(gb_buf_ptr(&b), "");
  ck_assert_int_eq(gb_buf_reserve(&b, 50), 0);
  ck_assert_uint_ge(b.cap, 51);
  const char *before = gb_buf_ptr(&b);
  ck_assert_int_eq(gb_buf_add(&b, "0123456789012345678901234567890123456789", 40), 0);
  ck_assert_ptr_eq(gb_buf_ptr(&b), before); /* reserved: no move */
  char *out = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_buf_take(&b, &out, &len), 0);
  ck_assert_uint_eq(len, 40);
  ck_assert_uint_eq(strlen(out), 40);
  free(out);
  ck_assert_uint_eq(gb_buf_len(&b), 0);
  ck_assert_int_eq(gb_buf_take(&b, &out, &len), 0); /* empty: a malloc'd "" */
  ck_assert_str_eq(out, "");
  ck_assert_uint_eq(len, 0);
  free(out);
  /* After an error, reset makes the buffer usable again. */
  ck_assert_int_eq(gb_buf_reserve(&b, 100), GC_ELIMIT);
  gb_buf_reset(&b);
  ck_assert_int_eq(gb_buf_addstr(&b, "ok"), 0);
  ck_assert_str_eq(gb_buf_ptr(&b), "ok");
  gb_buf_free(&b);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("buf");
  TCase *tc = tcase_create("buf");
  tcase_add_test(tc, test_append);
  tcase_add_test(tc, test_limit_exact);
  tcase_add_test(tc, test_reset_reserve_take);
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
