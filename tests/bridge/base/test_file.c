/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_file: a whole file read and NUL-terminated, the limit
 * taken exactly (max bytes pass, max + 1 fail with GC_ELIMIT), a missing
 * file (GC_ENOTFOUND), a directory (GC_EIO), empty and binary files refused
 * only when asked, bad limits, and the messages naming the path.  The last
 * test holds the PEM reader of gb_tls_files to the same codes: it used to
 * answer GC_EIO for an oversized or empty file.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gb_file.h"
#include "gb_tls_files.h"
#include "gc_diag.h"

static char dir[64];
static char path[128];

static void setup(void) {
  snprintf(dir, sizeof(dir), "/tmp/gb_test_file.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/f", dir);
}

static void teardown(void) {
  unlink(path);
  rmdir(dir);
}

static void put(const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, n, f), n);
  fclose(f);
}

/* The last message of d contains want. */
static int last_has(const struct gc_diags *d, const char *want) {
  return d->n > 0 && strstr(d->msgs[d->n - 1], want) != NULL;
}

START_TEST(test_reads_whole_file) {
  put("hello\n", 6);
  struct gc_diags d;
  gc_diags_init(&d);
  char *buf = NULL;
  size_t n = 0;
  struct stat st;
  ck_assert_int_eq(gb_file_read(path, 6, GB_FILE_NONEMPTY | GB_FILE_TEXT, &buf, &n, &st, &d), 0);
  ck_assert_uint_eq(n, 6);
  ck_assert_str_eq(buf, "hello\n");
  ck_assert_int_eq(st.st_size, 6);
  ck_assert_uint_eq(d.n, 0);
  free(buf);
  ck_assert_int_eq(gb_file_read(path, 5, 0, &buf, &n, NULL, &d), GC_ELIMIT);
  ck_assert_ptr_null(buf);
  ck_assert_uint_eq(n, 0);
  ck_assert(last_has(&d, path));
  ck_assert(last_has(&d, "larger than the limit of 5 bytes"));
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_missing_and_directory) {
  struct gc_diags d;
  gc_diags_init(&d);
  char *buf = NULL;
  ck_assert_int_eq(gb_file_read(path, 10, 0, &buf, NULL, NULL, &d), GC_ENOTFOUND);
  ck_assert(last_has(&d, path));
  ck_assert(last_has(&d, "cannot open"));
  ck_assert_int_eq(gb_file_read(dir, 10, 0, &buf, NULL, NULL, &d), GC_EIO);
  ck_assert(last_has(&d, dir));
  ck_assert_ptr_null(buf);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_flags) {
  struct gc_diags d;
  gc_diags_init(&d);
  char *buf = NULL;
  size_t n = 9;
  put("", 0);
  ck_assert_int_eq(gb_file_read(path, 10, 0, &buf, &n, NULL, &d), 0);
  ck_assert_uint_eq(n, 0);
  ck_assert_str_eq(buf, "");
  free(buf);
  ck_assert_int_eq(gb_file_read(path, 10, GB_FILE_NONEMPTY, &buf, &n, NULL, &d), GC_EINVAL);
  ck_assert(last_has(&d, "empty file"));
  put("a\0b", 3);
  ck_assert_int_eq(gb_file_read(path, 10, 0, &buf, &n, NULL, &d), 0);
  ck_assert_uint_eq(n, 3);
  ck_assert_mem_eq(buf, "a\0b", 3);
  free(buf);
  ck_assert_int_eq(gb_file_read(path, 10, GB_FILE_TEXT, &buf, &n, NULL, &d), GC_EINVAL);
  ck_assert(last_has(&d, "not a text file"));
  ck_assert_ptr_null(buf);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_bad_limits) {
  put("x", 1);
  char *buf = NULL;
  ck_assert_int_eq(gb_file_read(path, 0, 0, &buf, NULL, NULL, NULL), GC_EUSAGE);
  ck_assert_int_eq(gb_file_read(path, GB_FILE_MAX_LIMIT + 1, 0, &buf, NULL, NULL, NULL), GC_EUSAGE);
  ck_assert_int_eq(gb_file_read(path, GB_FILE_MAX_LIMIT, 0, &buf, NULL, NULL, NULL), 0);
  ck_assert_str_eq(buf, "x");
  free(buf);
}
END_TEST

START_TEST(test_pem_reader_codes) {
  struct gc_diags d;
  gc_diags_init(&d);
  char *pem = NULL;
  size_t big = (size_t)GB_TLS_PEM_MAX + 1;
  char *junk = malloc(big);
  ck_assert_ptr_nonnull(junk);
  memset(junk, 'A', big);
  put(junk, big);
  free(junk);
  ck_assert_int_eq(gb_tls_files_pem_read(path, &pem, &d), GC_ELIMIT);
  ck_assert(last_has(&d, "larger than the limit"));
  put("", 0);
  ck_assert_int_eq(gb_tls_files_pem_read(path, &pem, &d), GC_EINVAL);
  ck_assert(last_has(&d, "empty file"));
  unlink(path);
  ck_assert_int_eq(gb_tls_files_pem_read(path, &pem, &d), GC_ENOTFOUND);
  ck_assert(last_has(&d, "cannot open"));
  ck_assert_ptr_null(pem);
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("file");
  TCase *tc = tcase_create("file");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_reads_whole_file);
  tcase_add_test(tc, test_missing_and_directory);
  tcase_add_test(tc, test_flags);
  tcase_add_test(tc, test_bad_limits);
  tcase_add_test(tc, test_pem_reader_codes);
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
