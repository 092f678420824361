/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_base64: the RFC 4648 vectors both ways, every byte value
 * round-tripping, whitespace and optional padding accepted on decode, and
 * refusals: bad characters, a lone trailing sextet, data after padding,
 * padding that does not complete the quantum ("QQQ==", which the old
 * kubeconfig decoder took), non-zero leftover bits and oversized input.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_base64.h"
#include "gc_diag.h"

static const char *vectors[][2] = {{"", ""},
                                   {"f", "Zg=="},
                                   {"fo", "Zm8="},
                                   {"foo", "Zm9v"},
                                   {"foob", "Zm9vYg=="},
                                   {"fooba", "Zm9vYmE="},
                                   {"foobar", "Zm9vYmFy"}};

START_TEST(test_vectors) {
  for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
    char *e = NULL;
    size_t elen = 99;
    ck_assert_int_eq(gb_base64_encode(vectors[i][0], strlen(vectors[i][0]), &e, &elen), 0);
    ck_assert_str_eq(e, vectors[i][1]);
    ck_assert_uint_eq(elen, strlen(vectors[i][1]));
    free(e);
    unsigned char *d = NULL;
    size_t dlen = 99;
    ck_assert_int_eq(gb_base64_decode(vectors[i][1], strlen(vectors[i][1]), &d, &dlen), 0);
    ck_assert_uint_eq(dlen, strlen(vectors[i][0]));
    ck_assert_str_eq((char *)d, vectors[i][0]);
    free(d);
  }
}
END_TEST

START_TEST(test_all_bytes_round_trip) {
  unsigned char in[256 * 3];
  for (size_t i = 0; i < sizeof(in); i++)
    in[i] = (unsigned char)(i * 7 + i / 256);
  for (size_t len = 0; len <= sizeof(in); len += 37) {
    char *e = NULL;
    ck_assert_int_eq(gb_base64_encode(in, len, &e, NULL), 0);
    unsigned char *d = NULL;
    size_t dlen = 0;
    ck_assert_int_eq(gb_base64_decode(e, strlen(e), &d, &dlen), 0);
    ck_assert_uint_eq(dlen, len);
    ck_assert(len == 0 || memcmp(d, in, len) == 0);
    free(e);
    free(d);
  }
}
END_TEST

static int decodes(const char *text, const char *want) {
  unsigned char *d = NULL;
  size_t n = 0;
  int rc = gb_base64_decode(text, strlen(text), &d, &n);
  int ok = rc == 0 && n == strlen(want) && memcmp(d, want, n) == 0;
  free(d);
  return ok;
}

static int refused(const char *text) {
  unsigned char *d = (unsigned char *)"x";
  size_t n = 7;
  int rc = gb_base64_decode(text, strlen(text), &d, &n);
  return rc == GC_EINVAL && d == NULL && n == 0;
}

START_TEST(test_lenient_forms) {
  ck_assert(decodes("aGVsbG8=", "hello"));
  ck_assert(decodes("aGVs\nbG8", "hello"));      /* no padding, a newline */
  ck_assert(decodes(" aGVs bG8=\r\n", "hello")); /* spaces and CRLF */
  ck_assert(decodes("Zg", "f"));
  ck_assert(decodes("Zg=\n=", "f"));
}
END_TEST

START_TEST(test_refusals) {
  ck_assert(refused("aGVsbG8*"));
  ck_assert(refused("a"));
  ck_assert(refused("aGVsbG8=x"));
  ck_assert(refused("aGVsbG9=")); /* non-zero trailing bits */
  ck_assert(refused("QUFB="));    /* padding after a whole quantum */
  ck_assert(refused("QQQ=="));    /* three sextets take one '=', not two */
  ck_assert(refused("QQ="));      /* two sextets take two '=' when padded */
  ck_assert(refused("Zg==="));
  ck_assert(refused("===="));
  ck_assert(refused("Zm9v-_")); /* the URL alphabet is not this one */
}
END_TEST

START_TEST(test_bounds) {
  char *e = (char *)"x";
  ck_assert_int_eq(gb_base64_encode("", GB_BASE64_MAX_INPUT + 1, &e, NULL), GC_ELIMIT);
  ck_assert_ptr_null(e);
  unsigned char *d = (unsigned char *)"x";
  size_t n = 3;
  ck_assert_int_eq(gb_base64_decode("", GB_BASE64_MAX_INPUT + 1, &d, &n), GC_ELIMIT);
  ck_assert_ptr_null(d);
  ck_assert_uint_eq(n, 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("base64");
  TCase *tc = tcase_create("base64");
  tcase_add_test(tc, test_vectors);
  tcase_add_test(tc, test_all_bytes_round_trip);
  tcase_add_test(tc, test_lenient_forms);
  tcase_add_test(tc, test_refusals);
  tcase_add_test(tc, test_bounds);
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
