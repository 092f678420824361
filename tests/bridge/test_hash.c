/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_hash: the published FNV-1a 64-bit test vectors, the
 * string and byte forms agreeing, hashing in pieces equal to hashing the
 * whole, and bytes above 0x7f hashed as unsigned (a signed char copy would
 * differ there).
 */
#include <check.h>
#include <string.h>

#include "gb_hash.h"

START_TEST(test_vectors) {
  /* From the FNV reference (isthe.com/chongo/tech/comp/fnv). */
  ck_assert_uint_eq(gb_hash_str(""), 0xcbf29ce484222325ULL);
  ck_assert_uint_eq(gb_hash_str("a"), 0xaf63dc4c8601ec8cULL);
  ck_assert_uint_eq(gb_hash_str("foobar"), 0x85944171f73967e8ULL);
  ck_assert_uint_eq(gb_hash_bytes("foobar", 6), 0x85944171f73967e8ULL);
  ck_assert_uint_eq(gb_hash_bytes(NULL, 0), 0xcbf29ce484222325ULL);
}
END_TEST

START_TEST(test_pieces) {
  uint64_t h = gb_hash_fnv1a(GB_HASH_FNV_OFFSET, "foo", 3);
  h = gb_hash_fnv1a(h, "bar", 3);
  ck_assert_uint_eq(h, gb_hash_str("foobar"));
  ck_assert_uint_eq(gb_hash_fnv1a(h, NULL, 0), h);
}
END_TEST

START_TEST(test_high_bytes) {
  const char s[] = "\xff\x80x";
  uint64_t want = GB_HASH_FNV_OFFSET;
  for (size_t i = 0; i < 3; i++)
    want = (want ^ (unsigned char)s[i]) * 1099511628211ULL;
  ck_assert_uint_eq(gb_hash_str(s), want);
  ck_assert_uint_eq(gb_hash_bytes(s, 3), want);
  ck_assert_uint_ne(gb_hash_str("ab"), gb_hash_str("ba"));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("hash");
  TCase *tc = tcase_create("hash");
  tcase_add_test(tc, test_vectors);
  tcase_add_test(tc, test_pieces);
  tcase_add_test(tc, test_high_bytes);
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
