/* SPDX-License-Identifier: Apache-2.0
 *
 * Strategic merge rules: maps recursively, lists by merge key (name,
 * mountPath), other lists replaced, null deletes, inputs never modified.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"
#include "gc_merge.h"
#include "gc_merge_test.h"

/* Loads "base", "patch" and "want" documents (a multi-doc YAML with those
 * three maps under key "v") and checks merge(base, patch) == want. */
static void check_merge(const char *yaml, const char *field) {
  struct gb_docset *ds = gb_test_load(yaml);
  ck_assert_uint_eq(ds->n, 3);
  const struct gc_value *base = gc_map_get(ds->docs[0].root, "v");
  const struct gc_value *patch = gc_map_get(ds->docs[1].root, "v");
  const struct gc_value *want = gc_map_get(ds->docs[2].root, "v");
  struct gc_value *base_copy = gc_value_clone(ds->arena, base);
  struct gc_value *patch_copy = gc_value_clone(ds->arena, patch);
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *out = NULL;
  ck_assert_int_eq(gc_merge_strategic(a, base, patch, field, &out), 0);
  ck_assert_msg(gc_value_equal(out, want), "merge result differs");
  /* The inputs are untouched. */
  ck_assert(gc_value_equal(base, base_copy));
  ck_assert(gc_value_equal(patch, patch_copy));
  gc_arena_free(a);
  gb_docset_free(ds);
}

START_TEST(merge_maps_recursively) {
  check_merge("v: {a: 1, b: {c: 2, d: 3}, e: x}\n---\nv: {b: {d: 4, f: 5}, g: [1]}\n---\n"
              "v: {a: 1, b: {c: 2, d: 4, f: 5}, e: x, g: [1]}\n",
              NULL);
}
END_TEST

START_TEST(merge_null_deletes) {
  check_merge("v: {a: 1, b: {c: 2, d: 3}}\n---\nv: {a: null, b: {c: null}, z: null}\n---\n"
              "v: {b: {d: 3}}\n",
              NULL);
}
END_TEST

START_TEST(merge_containers_by_name) {
  check_merge(
      "v: {containers: [{name: a, image: i1, env: [{name: X, value: '1'}, {name: Y, value: '2'}]},"
      " {name: b, image: i2}]}\n---\n"
      "v: {containers: [{name: b, image: i3}, {name: c, image: i4},"
      " {name: a, env: [{name: Y, value: '9'}, {name: Z, value: '3'}]}]}\n---\n"
      "v: {containers: [{name: a, image: i1, env: [{name: X, value: '1'}, {name: Y, value: '9'},"
      " {name: Z, value: '3'}]}, {name: b, image: i3}, {name: c, image: i4}]}\n",
      NULL);
}
END_TEST

START_TEST(merge_volume_mounts_by_mount_path) {
  check_merge("v: {volumeMounts: [{name: a, mountPath: /x}, {name: b, mountPath: /y}]}\n---\n"
              "v: {volumeMounts: [{name: c, mountPath: /x}, {name: d, mountPath: /z}]}\n---\n"
              "v: {volumeMounts: [{name: c, mountPath: /x}, {name: b, mountPath: /y},"
              " {name: d, mountPath: /z}]}\n",
              NULL);
}
END_TEST

START_TEST(merge_other_lists_replace) {
  check_merge("v: {tolerations: [{key: a}], args: [x, y], command: [p]}\n---\n"
              "v: {tolerations: [{key: b}], args: [z]}\n---\n"
              "v: {tolerations: [{key: b}], args: [z], command: [p]}\n",
              NULL);
}
END_TEST

START_TEST(merge_replicated_jobs_keep_order) {
  check_merge("v: {replicatedJobs: [{name: init, replicas: 1}, {name: node, replicas: 1}]}\n---\n"
              "v: {replicatedJobs: [{name: node, template: {x: 1}}, {name: init, replicas: 2}]}\n"
              "---\n"
              "v: {replicatedJobs: [{name: init, replicas: 2}, {name: node, replicas: 1,"
              " template: {x: 1}}]}\n",
              NULL);
}
END_TEST

START_TEST(merge_resources_per_key_and_claims) {
  check_merge("v: {requests: {cpu: 1, memory: 2Gi}, limits: {nvidia.com/gpu: 1},"
              " claims: [{name: a}, {name: b, request: r1}]}\n---\n"
              "v: {requests: {cpu: 4}, limits: {cpu: 8}, claims: [{name: b, request: r2}]}\n---\n"
              "v: {requests: {cpu: 4, memory: 2Gi}, limits: {nvidia.com/gpu: 1, cpu: 8},"
              " claims: [{name: a}, {name: b, request: r2}]}\n",
              "resources");
}
END_TEST

START_TEST(merge_field_decides_list_rule) {
  /* At the root, the field name given by the caller picks the rule. */
  check_merge("v: [{name: a, x: 1}]\n---\nv: [{name: a, y: 2}]\n---\nv: [{name: a, x: 1, y: 2}]\n",
              "env");
  check_merge("v: [{name: a, x: 1}]\n---\nv: [{name: a, y: 2}]\n---\nv: [{name: a, y: 2}]\n",
              "ports");
}
END_TEST

START_TEST(merge_type_change_replaces) {
  check_merge("v: {a: {b: 1}, c: [1]}\n---\nv: {a: 5, c: {d: 1}}\n---\nv: {a: 5, c: {d: 1}}\n",
              NULL);
}
END_TEST

START_TEST(merge_depth_limited) {
  /* A patch nested deeper than the limit is refused, not recursed into. */
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *deep = gc_value_map(a), *cur = deep;
  for (int i = 0; i < GC_MERGE_MAX_DEPTH + 10; i++) {
    struct gc_value *n = gc_value_map(a);
    ck_assert_int_eq(gc_map_set(a, cur, "k", n), 0);
    cur = n;
  }
  struct gc_value *out = NULL;
  ck_assert_int_eq(gc_merge_strategic(a, deep, deep, NULL, &out), GC_ELIMIT);
  gc_arena_free(a);
}
END_TEST

START_TEST(merge_list_limit) {
  /* Keyed merging is quadratic: very long lists are refused. */
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *base = gc_value_map(a), *patch = gc_value_map(a);
  struct gc_value *bl = gc_value_seq(a), *pl = gc_value_seq(a);
  for (int i = 0; i < GC_MERGE_MAX_LIST; i++) {
    struct gc_value *item = gc_value_map(a);
    char name[32];
    snprintf(name, sizeof(name), "v%d", i);
    ck_assert_int_eq(gc_map_set(a, item, "name", gc_value_strz(a, name)), 0);
    ck_assert_int_eq(gc_seq_push(a, i % 2 ? bl : pl, item), 0);
  }
  ck_assert_int_eq(gc_map_set(a, base, "env", bl), 0);
  ck_assert_int_eq(gc_map_set(a, patch, "env", pl), 0);
  struct gc_value *out = NULL;
  ck_assert_int_eq(gc_merge_strategic(a, base, patch, NULL, &out), 0);
  ck_assert_uint_eq(gc_map_get(out, "env")->len, GC_MERGE_MAX_LIST);
  ck_assert_int_eq(gc_seq_push(a, pl, gc_value_map(a)), 0);
  ck_assert_int_eq(gc_merge_strategic(a, base, patch, NULL, &out), GC_ELIMIT);
  gc_arena_free(a);
}
END_TEST

START_TEST(merge_key_table) {
  ck_assert_str_eq(gc_merge_key_for("containers"), "name");
  ck_assert_str_eq(gc_merge_key_for("initContainers"), "name");
  ck_assert_str_eq(gc_merge_key_for("env"), "name");
  ck_assert_str_eq(gc_merge_key_for("volumes"), "name");
  ck_assert_str_eq(gc_merge_key_for("imagePullSecrets"), "name");
  ck_assert_str_eq(gc_merge_key_for("replicatedJobs"), "name");
  ck_assert_str_eq(gc_merge_key_for("volumeMounts"), "mountPath");
  ck_assert_ptr_null(gc_merge_key_for("tolerations"));
  ck_assert_ptr_null(gc_merge_key_for(NULL));
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("merge");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, merge_maps_recursively);
  tcase_add_test(tc, merge_null_deletes);
  tcase_add_test(tc, merge_containers_by_name);
  tcase_add_test(tc, merge_volume_mounts_by_mount_path);
  tcase_add_test(tc, merge_other_lists_replace);
  tcase_add_test(tc, merge_replicated_jobs_keep_order);
  tcase_add_test(tc, merge_resources_per_key_and_claims);
  tcase_add_test(tc, merge_field_decides_list_rule);
  tcase_add_test(tc, merge_type_change_replaces);
  tcase_add_test(tc, merge_depth_limited);
  tcase_add_test(tc, merge_list_limit);
  tcase_add_test(tc, merge_key_table);
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
