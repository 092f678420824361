/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kobj: the accessors read what is there with the right type and read
 * everything else (absent, null, another type, a NULL object) as absent,
 * without asserting inside json-c; metadata, labels, annotations, owner
 * references and conditions of a Pod-shaped object.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_kobj.h"
#include "gb_kobj_test.h"

static const char *POD =
    "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\",\"resourceVersion\":\"7\","
    "\"labels\":{\"a\":\"1\",\"n\":2},\"annotations\":{\"k\":\"v\",\"nul\":null},"
    "\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u9\"},"
    "{\"kind\":\"TrainJob\",\"name\":\"t\",\"uid\":\"u2\",\"controller\":true},"
    "{\"kind\":\"TrainJob\",\"name\":\"t\",\"uid\":\"u3\",\"controller\":\"yes\"}]},"
    "\"spec\":{\"priority\":5,\"x\":null,\"gates\":[{\"name\":\"g\"}],\"b\":true,\"s\":\"str\"},"
    "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\"},"
    "{\"type\":\"Ready\",\"status\":\"True\"}]}}";

static json_object *pod;

static void setup(void) { pod = json_tokener_parse(POD); }
static void teardown(void) { json_object_put(pod); }

START_TEST(kobj_typed_reads) {
  json_object *spec = gb_kobj_get(pod, "spec");
  ck_assert_ptr_nonnull(spec);
  ck_assert_str_eq(gb_kobj_str(spec, "s"), "str");
  ck_assert_ptr_null(gb_kobj_str(spec, "priority")); /* an integer, not a string */
  ck_assert_ptr_null(gb_kobj_get(spec, "x"));        /* JSON null */
  ck_assert_ptr_null(gb_kobj_get(spec, "missing"));
  int64_t v = -1;
  ck_assert_int_eq(gb_kobj_int(spec, "priority", &v), 0);
  ck_assert_int_eq(v, 5);
  ck_assert_int_eq(gb_kobj_int(spec, "s", &v), -1);
  ck_assert_int_eq(v, 5);
  ck_assert_int_eq(gb_kobj_bool(spec, "b", 0), 1);
  ck_assert_int_eq(gb_kobj_bool(spec, "s", 7), 7);
  ck_assert_ptr_nonnull(gb_kobj_arr(spec, "gates"));
  ck_assert_ptr_null(gb_kobj_obj(spec, "gates"));
  ck_assert_ptr_null(gb_kobj_arr(spec, "s"));
  ck_assert_uint_eq(gb_kobj_len(gb_kobj_get(spec, "gates")), 1);
  ck_assert_str_eq(gb_kobj_str(gb_kobj_at(gb_kobj_get(spec, "gates"), 0), "name"), "g");
  ck_assert_ptr_null(gb_kobj_at(gb_kobj_get(spec, "gates"), 1));
  /* The wrong type where an array or object is expected: absent, not an abort. */
  ck_assert_uint_eq(gb_kobj_len(spec), 0);
  ck_assert_ptr_null(gb_kobj_at(spec, 0));
  ck_assert_ptr_null(gb_kobj_get(gb_kobj_get(spec, "gates"), "name"));
  ck_assert_ptr_null(gb_kobj_get(NULL, "a"));
  ck_assert_ptr_null(gb_kobj_str(NULL, "a"));
}
END_TEST

START_TEST(kobj_dig) {
  ck_assert_str_eq(gb_kobj_str(gb_kobj_dig(pod, "metadata", "labels", NULL), "a"), "1");
  ck_assert_ptr_null(gb_kobj_dig(pod, "metadata", "nope", "deeper", NULL));
  ck_assert_ptr_null(gb_kobj_dig(pod, "spec", "s", "x", NULL)); /* a string has no members */
  /* The same by a dotted path, as backends name nested fields. */
  ck_assert_str_eq(json_object_get_string(gb_kobj_path(pod, "metadata.labels.a")), "1");
  ck_assert_ptr_nonnull(gb_kobj_path(pod, "metadata"));
  ck_assert_ptr_null(gb_kobj_path(pod, "metadata.nope.deeper"));
  ck_assert_ptr_null(gb_kobj_path(pod, "spec.s.x"));
  ck_assert_ptr_null(gb_kobj_path(pod, "metadata..labels")); /* an empty step */
  ck_assert_ptr_null(gb_kobj_path(pod, "metadata.labels."));
  ck_assert_ptr_null(gb_kobj_path(pod, NULL));
  ck_assert_ptr_null(gb_kobj_path(NULL, "metadata"));
  ck_assert_ptr_null(gb_kobj_path(pod, "a.b.c.d.e.f.g.h.i")); /* more than 8 steps */
  ck_assert_ptr_eq(gb_kobj_dig(pod, NULL), pod);
  ck_assert_ptr_null(gb_kobj_dig(NULL, "a", NULL));
}
END_TEST

START_TEST(kobj_metadata) {
  ck_assert_str_eq(gb_kobj_meta(pod, "name"), "p");
  ck_assert_str_eq(gb_kobj_meta(pod, "namespace"), "ns");
  ck_assert_str_eq(gb_kobj_meta(pod, "uid"), "u1");
  ck_assert_str_eq(gb_kobj_meta(pod, "resourceVersion"), "7");
  ck_assert_ptr_null(gb_kobj_meta(pod, "labels")); /* not a string */
  ck_assert_str_eq(gb_kobj_label(pod, "a"), "1");
  ck_assert_ptr_null(gb_kobj_label(pod, "n"));
  ck_assert_str_eq(gb_kobj_annotation(pod, "k"), "v");
  ck_assert_ptr_null(gb_kobj_annotation(pod, "nul"));
  ck_assert_ptr_null(gb_kobj_annotation(pod, "a"));
}
END_TEST

START_TEST(kobj_owner) {
  json_object *r = gb_kobj_owner(pod, "TrainJob", NULL, 1);
  ck_assert_str_eq(gb_kobj_str(r, "uid"), "u2");
  ck_assert_ptr_eq(gb_kobj_owner(pod, NULL, "u2", 1), r);
  ck_assert_ptr_null(gb_kobj_owner(pod, "TrainJob", "u3", 1)); /* controller is not a bool */
  ck_assert_ptr_nonnull(gb_kobj_owner(pod, "TrainJob", "u3", 0));
  ck_assert_str_eq(gb_kobj_str(gb_kobj_owner(pod, NULL, NULL, 0), "kind"), "Job");
  ck_assert_ptr_null(gb_kobj_owner(pod, "Job", "u9", 1));
  ck_assert_ptr_null(gb_kobj_owner(gb_kobj_get(pod, "spec"), NULL, NULL, 0));
}
END_TEST

START_TEST(kobj_condition) {
  ck_assert_str_eq(gb_kobj_str(gb_kobj_condition(pod, "Ready"), "status"), "True");
  ck_assert_str_eq(gb_kobj_str(gb_kobj_condition(pod, "PodScheduled"), "status"), "False");
  ck_assert_ptr_null(gb_kobj_condition(pod, "Initialized"));
  ck_assert_ptr_null(gb_kobj_condition(gb_kobj_get(pod, "spec"), "Ready"));
}
END_TEST

START_TEST(kobj_where_and_copy) {
  char buf[64];
  ck_assert_str_eq(gb_kobj_where(pod, buf, sizeof(buf)), "ns/p");
  json_object *gen = json_tokener_parse(
      "{\"metadata\":{\"namespace\":\"a\",\"generateName\":\"g-\"}}");
  ck_assert_str_eq(gb_kobj_where(gen, buf, sizeof(buf)), "a/g-*");
  ck_assert_str_eq(gb_kobj_where(NULL, buf, sizeof(buf)), "/(unnamed)");
  json_object *c = gb_kobj_copy(pod);
  ck_assert(json_object_equal(c, pod));
  ck_assert_ptr_ne(c, pod);
  json_object_put(c);
  ck_assert_ptr_null(gb_kobj_copy(NULL));
  json_object_put(gen);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kobj");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, kobj_typed_reads);
  tcase_add_test(tc, kobj_dig);
  tcase_add_test(tc, kobj_metadata);
  tcase_add_test(tc, kobj_owner);
  tcase_add_test(tc, kobj_condition);
  tcase_add_test(tc, kobj_where_and_copy);
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
