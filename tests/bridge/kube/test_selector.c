/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_selector on whole objects: label requirements against metadata.labels
 * and field requirements against the object's paths (what a shared
 * informer applies for a handler whose selection the server did not),
 * field-selector parse errors, and that a label-only match ignores field
 * requirements.  (Label parsing and matching on label maps:
 * tests/bridge/cli/test_serve_config.c, test_selectors.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_selector.h"

static json_object *pod(const char *labels, const char *phase, const char *node) {
  char t[512];
  snprintf(t, sizeof(t),
           "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"labels\":{%s}},"
           "\"spec\":{\"nodeName\":\"%s\",\"priority\":5,\"hostNetwork\":true},"
           "\"status\":{\"phase\":\"%s\"}}",
           labels, node, phase);
  json_object *o = json_tokener_parse(t);
  ck_assert_ptr_nonnull(o);
  return o;
}

static int match(const char *label, const char *field, json_object *obj) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_selector s;
  ck_assert_int_eq(gb_selector_parse(a, label, &s, &d), 0);
  ck_assert_int_eq(gb_selector_add_fields(a, field, &s, &d), 0);
  int m = gb_selector_match_object(&s, obj);
  gc_diags_destroy(&d);
  gc_arena_free(a);
  return m;
}

START_TEST(selector_matches_objects) {
  json_object *js = pod("\"jobset.sigs.k8s.io/jobset-name\":\"j\"", "Running", "n1");
  json_object *web = pod("\"app\":\"web\"", "Succeeded", "");
  /* The model's selection and the controller's. */
  const char *live = "status.phase!=Succeeded,status.phase!=Failed";
  ck_assert_int_eq(match(NULL, live, js), 1);
  ck_assert_int_eq(match(NULL, live, web), 0);
  ck_assert_int_eq(match("jobset.sigs.k8s.io/jobset-name", NULL, js), 1);
  ck_assert_int_eq(match("jobset.sigs.k8s.io/jobset-name", NULL, web), 0);
  ck_assert_int_eq(match("jobset.sigs.k8s.io/jobset-name", live, js), 1);
  /* Fields: names, a missing field reads "", numbers and bools as text. */
  ck_assert_int_eq(match(NULL, "metadata.name=p,metadata.namespace==ns", js), 1);
  ck_assert_int_eq(match(NULL, "metadata.name=q", js), 0);
  ck_assert_int_eq(match(NULL, "spec.nodeName=", web), 1);
  ck_assert_int_eq(match(NULL, "spec.schedulerName=", js), 1);
  ck_assert_int_eq(match(NULL, "spec.priority=5,spec.hostNetwork=true", js), 1);
  ck_assert_int_eq(match(NULL, "spec=x", js), 0); /* an object is not a scalar */
  /* Labels: != and notin match an object without the label. */
  ck_assert_int_eq(match("app!=web", NULL, js), 1);
  ck_assert_int_eq(match("app notin (web)", NULL, web), 0);
  ck_assert_int_eq(match("!app", NULL, js), 1);
  ck_assert_int_eq(match("", "", js), 1);
  json_object_put(js);
  json_object_put(web);
}
END_TEST

START_TEST(selector_fields_ignored_by_label_match) {
  struct gc_arena *a = gc_arena_new(0);
  struct gb_selector s;
  ck_assert_int_eq(gb_selector_parse(a, "team=ml", &s, NULL), 0);
  ck_assert_int_eq(gb_selector_add_fields(a, "metadata.name=zzz", &s, NULL), 0);
  ck_assert_uint_eq(s.n, 2);
  struct gc_value *labels = gc_value_map(a);
  ck_assert_ptr_nonnull(labels);
  ck_assert_int_eq(gc_map_set(a, labels, "team", gc_value_strz(a, "ml")), 0);
  ck_assert_int_eq(gb_selector_match(&s, labels), 1);
  /* A field selector alone, without a label parse first. */
  struct gb_selector f = {NULL, 0};
  ck_assert_int_eq(gb_selector_add_fields(a, "status.phase=Running", &f, NULL), 0);
  ck_assert_uint_eq(f.n, 1);
  gc_arena_free(a);
}
END_TEST

START_TEST(selector_field_errors) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_diags d;
  gc_diags_init(&d);
  const char *bad[] = {"status.phase", "=x", "a=b,", "status.phase in (a)", "a\\=b=c"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct gb_selector s = {NULL, 0};
    ck_assert_msg(gb_selector_add_fields(a, bad[i], &s, &d) == GC_EINVAL, "\"%s\"", bad[i]);
  }
  ck_assert_str_eq(d.msgs[0], "field selector: cannot parse requirement at \"status.phase\" "
                              "(expected PATH=VALUE or PATH!=VALUE, at most 64)");
  char big[5000];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  struct gb_selector s = {NULL, 0};
  ck_assert_int_eq(gb_selector_add_fields(a, big, &s, &d), GC_EINVAL);
  gc_diags_destroy(&d);
  gc_arena_free(a);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("selector");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, selector_matches_objects);
  tcase_add_test(tc, selector_fields_ignored_by_label_match);
  tcase_add_test(tc, selector_field_errors);
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
