/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_log: logfmt and JSON records, escaping, the level filter,
 * parsing of level and format names, bounded records that stay well formed
 * when cut, and whole lines (never interleaved) from several threads.
 */
#include <check.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_log.h"
#include "gb_log_test.h"
#include "gc_diag.h"

static FILE *capture;

static void setup(void) {
  capture = tmpfile();
  ck_assert_ptr_nonnull(capture);
  gb_log_set_stream(capture);
  gb_log_set_level(GB_LOG_DEBUG);
  gb_log_set_format(GB_LOG_TEXT);
}

static void teardown(void) {
  gb_log_set_stream(NULL);
  fclose(capture);
}

/* Everything written so far (caller frees). */
static char *captured(void) {
  fflush(capture);
  long n = ftell(capture);
  char *b = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(b);
  rewind(capture);
  ck_assert_uint_eq(fread(b, 1, (size_t)n, capture), (size_t)n);
  b[n] = '\0';
  fseek(capture, 0, SEEK_END);
  return b;
}

START_TEST(test_text) {
  gb_log(GB_LOG_INFO, "reconciled trainjob", "namespace", "team-a", "name", "mnist", "took",
         "1.5ms", "empty", "", "quote", "say \"hi\"\n", "nil", NULL, NULL);
  char *out = captured();
  ck_assert_msg(!strncmp(out, "ts=", 3), "%s", out);
  /* ts=YYYY-MM-DDTHH:MM:SS.mmmZ */
  ck_assert_int_eq(out[7], '-');
  ck_assert_int_eq(out[13], 'T');
  ck_assert_int_eq(out[26], 'Z');
  const char *rest = strstr(out, " level=");
  ck_assert_ptr_nonnull(rest);
  ck_assert_str_eq(rest, " level=info msg=\"reconciled trainjob\" namespace=team-a name=mnist "
                         "took=1.5ms empty=\"\" quote=\"say \\\"hi\\\"\\n\" nil=\"\"\n");
  free(out);
}
END_TEST

START_TEST(test_json) {
  gb_log_set_format(GB_LOG_JSON);
  const char *kv[] = {"path", "/mutate\tpods", "bad key!", "v\x01"};
  gb_log_kv(GB_LOG_WARN, "webhook \"lookup\" failed", kv, 2);
  char *out = captured();
  size_t n = strlen(out);
  ck_assert_int_eq(out[n - 1], '\n');
  json_object *o = json_tokener_parse(out);
  ck_assert_msg(o != NULL, "not JSON: %s", out);
  json_object *v;
  ck_assert(json_object_object_get_ex(o, "level", &v));
  ck_assert_str_eq(json_object_get_string(v), "warn");
  ck_assert(json_object_object_get_ex(o, "msg", &v));
  ck_assert_str_eq(json_object_get_string(v), "webhook \"lookup\" failed");
  ck_assert(json_object_object_get_ex(o, "path", &v));
  ck_assert_str_eq(json_object_get_string(v), "/mutate\tpods");
  ck_assert(json_object_object_get_ex(o, "bad_key_", &v));
  ck_assert_str_eq(json_object_get_string(v), "v\x01");
  ck_assert(json_object_object_get_ex(o, "ts", &v));
  ck_assert_uint_eq(strlen(json_object_get_string(v)), 24);
  json_object_put(o);
  free(out);
}
END_TEST

START_TEST(test_levels) {
  gb_log_set_level(GB_LOG_WARN);
  ck_assert(!gb_log_enabled(GB_LOG_INFO));
  ck_assert(gb_log_enabled(GB_LOG_ERROR));
  gb_log(GB_LOG_DEBUG, "hidden", NULL);
  gb_log(GB_LOG_INFO, "hidden", NULL);
  gb_log(GB_LOG_WARN, "shown-warn", NULL);
  gb_log(GB_LOG_ERROR, "shown-error", NULL);
  char *out = captured();
  ck_assert_ptr_null(strstr(out, "hidden"));
  ck_assert_ptr_nonnull(strstr(out, "level=warn msg=shown-warn\n"));
  ck_assert_ptr_nonnull(strstr(out, "level=error msg=shown-error\n"));
  free(out);
  gb_log_set_level(GB_LOG_OFF);
  gb_log(GB_LOG_ERROR, "nothing", NULL);
  out = captured();
  ck_assert_ptr_null(strstr(out, "nothing"));
  free(out);
  enum gb_log_level l;
  ck_assert_int_eq(gb_log_level_parse("DEBUG", &l), 0);
  ck_assert_int_eq(l, GB_LOG_DEBUG);
  ck_assert_int_eq(gb_log_level_parse("warning", &l), 0);
  ck_assert_int_eq(l, GB_LOG_WARN);
  ck_assert_int_eq(gb_log_level_parse("off", &l), 0);
  ck_assert_int_eq(l, GB_LOG_OFF);
  ck_assert_int_eq(gb_log_level_parse("verbose", &l), GC_EINVAL);
  ck_assert_int_eq(gb_log_level_parse(NULL, &l), GC_EINVAL);
  enum gb_log_format f;
  ck_assert_int_eq(gb_log_format_parse("JSON", &f), 0);
  ck_assert_int_eq(f, GB_LOG_JSON);
  ck_assert_int_eq(gb_log_format_parse("logfmt", &f), GC_EINVAL);
  ck_assert_str_eq(gb_log_level_name(GB_LOG_ERROR), "error");
}
END_TEST

START_TEST(test_bounded) {
  /* Values far past the limits, full of characters that need escaping. */
  size_t big = 100000;
  char *v = malloc(big + 1);
  for (size_t i = 0; i < big; i++)
    v[i] = i % 3 ? '"' : '\x02';
  v[big] = '\0';
  for (int fmt = 0; fmt < 2; fmt++) {
    gb_log_set_format(fmt ? GB_LOG_JSON : GB_LOG_TEXT);
    long before = ftell(capture);
    gb_log(GB_LOG_INFO, v, "a", v, "b", v, "c", v, "d", v, "e", v, NULL);
    char *out = captured();
    char *line = out + before;
    size_t n = strlen(line);
    ck_assert_uint_le(n, GB_LOG_LINE_MAX);
    ck_assert_int_eq(line[n - 1], '\n');
    ck_assert(strchr(line, '\n') == line + n - 1); /* exactly one line */
    ck_assert_ptr_nonnull(strstr(line, "..."));
    if (fmt) {
      json_object *o = json_tokener_parse(line);
      ck_assert_msg(o != NULL, "cut JSON record is not valid JSON");
      json_object_put(o);
    }
    free(out);
  }
  free(v);
}
END_TEST

#define LOG_THREADS 4
#define LOG_LINES 500

static void *log_worker(void *arg) {
  char id[8];
  snprintf(id, sizeof(id), "%d", (int)(long)arg);
  char pad[600];
  memset(pad, 'a' + (int)(long)arg, sizeof(pad) - 1);
  pad[sizeof(pad) - 1] = '\0';
  for (int i = 0; i < LOG_LINES; i++)
    gb_log(GB_LOG_INFO, "line", "thread", id, "pad", pad, NULL);
  return NULL;
}

START_TEST(test_threads) {
  gb_log_set_format(GB_LOG_JSON);
  pthread_t t[LOG_THREADS];
  for (long i = 0; i < LOG_THREADS; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, log_worker, (void *)i), 0);
  for (int i = 0; i < LOG_THREADS; i++)
    pthread_join(t[i], NULL);
  char *out = captured();
  int lines = 0;
  for (char *p = out; *p;) {
    char *nl = strchr(p, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    json_object *o = json_tokener_parse(p);
    ck_assert_msg(o != NULL, "interleaved or broken line: %.80s", p);
    json_object *th, *pad;
    ck_assert(json_object_object_get_ex(o, "thread", &th));
    ck_assert(json_object_object_get_ex(o, "pad", &pad));
    /* The pad letter matches the thread: no mixing inside a record. */
    ck_assert_int_eq(json_object_get_string(pad)[0], 'a' + atoi(json_object_get_string(th)));
    json_object_put(o);
    lines++;
    p = nl + 1;
  }
  ck_assert_int_eq(lines, LOG_THREADS * LOG_LINES);
  free(out);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("log");
  TCase *tc = tcase_create("log");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_text);
  tcase_add_test(tc, test_json);
  tcase_add_test(tc, test_levels);
  tcase_add_test(tc, test_bounded);
  tcase_add_test(tc, test_threads);
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
