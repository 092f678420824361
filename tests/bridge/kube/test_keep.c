/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_keep: pruning an object to the union of keep paths (members, every
 * element with "[]", the elements whose member has a value with
 * "[key=value]", a path that reaches a scalar early), and the checks of
 * malformed paths.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_keep.h"

static const char *pruned(const char *json, const struct gb_keep *paths, size_t n) {
  static char out[2048];
  const struct gb_keep *ptrs[GB_KEEP_MAX];
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &paths[i];
  json_object *o = json_tokener_parse(json);
  ck_assert_ptr_nonnull(o);
  gb_keep_prune(o, ptrs, n);
  snprintf(
      out, sizeof(out), "%s",
      json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
  return out;
}

static const char *POD =
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\",\"b/c.d\":\"2\"}},"
    "\"spec\":{\"nodeName\":\"n\",\"containers\":[{\"name\":\"x\",\"image\":\"i\","
    "\"resources\":{\"requests\":{\"cpu\":\"1\"}}},{\"name\":\"y\",\"image\":\"j\"}],"
    "\"volumes\":[]},\"status\":{\"phase\":\"Running\",\"conditions\":["
    "{\"type\":\"Ready\",\"status\":\"True\",\"lastProbeTime\":null},"
    "{\"type\":\"Initialized\",\"status\":\"True\"},"
    "{\"type\":\"PodScheduled\",\"status\":\"True\",\"reason\":\"r\"}]}}";

START_TEST(keep_members_elements_and_filters) {
  static const struct gb_keep k1[] = {{{"metadata", "name"}}, {{"metadata", "labels", "b/c.d"}}};
  ck_assert_str_eq(pruned(POD, k1, 2),
                   "{\"metadata\":{\"name\":\"p\",\"labels\":{\"b/c.d\":\"2\"}}}");
  static const struct gb_keep k2[] = {{{"spec", "containers", "[]", "resources"}},
                                      {{"spec", "containers", "[]", "name"}}};
  ck_assert_str_eq(pruned(POD, k2, 2),
                   "{\"spec\":{\"containers\":[{\"name\":\"x\",\"resources\":{\"requests\":{"
                   "\"cpu\":\"1\"}}},{\"name\":\"y\"}]}}");
  static const struct gb_keep k3[] = {{{"status", "conditions", "[type=PodScheduled]"}},
                                      {{"status", "conditions", "[type=Ready]", "status"}}};
  ck_assert_str_eq(pruned(POD, k3, 2),
                   "{\"status\":{\"conditions\":[{\"status\":\"True\"},{\"type\":\"PodScheduled\","
                   "\"status\":\"True\",\"reason\":\"r\"}]}}");
  /* Two paths through the same element: the union of what they keep. */
  static const struct gb_keep k4[] = {{{"status", "conditions", "[]", "type"}},
                                      {{"status", "conditions", "[type=Ready]", "status"}}};
  ck_assert_str_eq(pruned(POD, k4, 2),
                   "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
                   "{\"type\":\"Initialized\"},{\"type\":\"PodScheduled\"}]}}");
  /* A whole subtree; a path that meets a scalar keeps the scalar. */
  static const struct gb_keep k5[] = {{{"spec"}}, {{"kind", "deeper"}}};
  ck_assert_ptr_nonnull(
      strstr(pruned(POD, k5, 2), "\"kind\":\"Pod\",\"spec\":{\"nodeName\":\"n\""));
  ck_assert_ptr_null(strstr(pruned(POD, k5, 2), "status"));
  /* No path: nothing is left. */
  ck_assert_str_eq(pruned(POD, k1, 0), "{}");
}
END_TEST

START_TEST(keep_checks_paths) {
  struct gc_diags d;
  gc_diags_init(&d);
  static const struct gb_keep ok[] = {{{"a", "[]", "[k=v]", "b"}}};
  ck_assert_int_eq(gb_keep_check(ok, 1, &d), 0);
  static const struct gb_keep empty[] = {{{NULL}}};
  ck_assert_int_eq(gb_keep_check(empty, 1, &d), GC_EINVAL);
  static const struct gb_keep bad_elem[] = {{{"a", "[k]"}}};
  ck_assert_int_eq(gb_keep_check(bad_elem, 1, &d), GC_EINVAL);
  static const struct gb_keep no_value[] = {{{"a", "[k=]"}}};
  ck_assert_int_eq(gb_keep_check(no_value, 1, &d), GC_EINVAL);
  static const struct gb_keep open[] = {{{"a", "[k=v"}}};
  ck_assert_int_eq(gb_keep_check(open, 1, &d), GC_EINVAL);
  static const struct gb_keep deep[] = {{{"1", "2", "3", "4", "5", "6", "7"}}};
  ck_assert_int_eq(gb_keep_check(deep, 1, &d), GC_EINVAL);
  static const struct gb_keep blank[] = {{{"a", ""}}};
  ck_assert_int_eq(gb_keep_check(blank, 1, &d), GC_EINVAL);
  ck_assert_uint_eq(d.errors, 6);
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("keep");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, keep_members_elements_and_filters);
  tcase_add_test(tc, keep_checks_paths);
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
