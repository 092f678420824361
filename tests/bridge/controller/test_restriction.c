/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_restriction (controller/): the restriction's validation
 * and size bounds, the webhook's operations (JSON Patch) for a new pod of a
 * released gang, and the terms of the release (the requirement AND-ed into
 * each term that needs it; none when it is in place).
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_restriction.h"
#include "gb_restriction_test.h"

#define REQ_BLOCK "{\"key\":\"topology.example.com/block\",\"operator\":\"In\",\"values\":[\"b1\"]}"
#define AFF "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  ck_assert_msg(o != NULL, "bad test JSON: %s", text);
  return o;
}

static const char *plain(json_object *o) {
  return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* A pod in namespace ns1 at resourceVersion 42 with the given spec text. */
static json_object *pod(const char *spec) {
  char buf[8192];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-0\","
           "\"namespace\":\"ns1\",\"resourceVersion\":\"42\"},\"spec\":%s}",
           spec);
  return parse(buf);
}

static void block(struct gb_restriction *r) {
  memset(r, 0, sizeof(*r));
  ck_assert_int_eq(gb_restriction_label(r, "topology.example.com/block", "b1", NULL), 0);
}

START_TEST(test_label_restriction_validated) {
  struct gb_restriction r;
  memset(&r, 0, sizeof(r));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_restriction_label(&r, "bad key!", "b1", &d), GC_EINVAL);
  ck_assert_int_eq(gb_restriction_label(&r, "zone", "not a value", &d), GC_EINVAL);
  ck_assert_int_eq(gb_restriction_label(&r, "zone", "", &d), GC_EINVAL);
  ck_assert_int_eq(r.kind, GB_RESTRICT_NONE);
  ck_assert_uint_eq(d.n, 3);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "\"bad key!\""));
  ck_assert_int_eq(gb_restriction_label(&r, "topology.kubernetes.io/zone", "z-1", &d), 0);
  json_object *req = gb_restriction_requirement(&r);
  ck_assert_str_eq(
      plain(req),
      "{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[\"z-1\"]}");
  json_object_put(req);
  ck_assert_int_eq(gb_restriction_add_host(&r, "n1", &d), GC_EINVAL); /* a LABEL one */
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_host_list_bounded) {
  struct gb_restriction r;
  memset(&r, 0, sizeof(r));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_restriction_add_host(&r, "node-a", &d), 0);
  ck_assert_int_eq(gb_restriction_add_host(&r, "node-a", &d), 0); /* duplicate: ignored */
  ck_assert_int_eq(gb_restriction_add_host(&r, "Node_b.x", &d), 0);
  ck_assert_int_eq(gb_restriction_add_host(&r, "-bad", &d), GC_EINVAL);
  ck_assert_int_eq(r.kind, GB_RESTRICT_HOSTS);
  ck_assert_uint_eq(r.n_values, 2);
  json_object *req = gb_restriction_requirement(&r);
  ck_assert_str_eq(plain(req), "{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","
                               "\"values\":[\"node-a\",\"Node_b.x\"]}");
  json_object_put(req);

  /* 63-byte names: the byte budget stops the list before the count cap. */
  memset(&r, 0, sizeof(r));
  char name[64];
  size_t n = 0;
  int rc = 0;
  for (; n < 100 && rc == 0; n++) {
    snprintf(name, sizeof(name), "%059zu-abc", n);
    ck_assert_uint_eq(strlen(name), 63);
    rc = gb_restriction_add_host(&r, name, &d);
  }
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_uint_lt(r.n_values, GB_RESTRICTION_MAX_HOSTS);
  req = gb_restriction_requirement(&r);
  size_t bytes = strlen(plain(req));
  ck_assert_uint_le(bytes, GB_RESTRICTION_MAX_GROWTH);
  ck_assert_uint_gt(bytes + 66, GB_RESTRICTION_MAX_GROWTH); /* one more name would not fit */
  json_object_put(req);

  /* Short names: the count cap. */
  memset(&r, 0, sizeof(r));
  for (n = 0; n < GB_RESTRICTION_MAX_HOSTS; n++) {
    snprintf(name, sizeof(name), "gpu-%03zu", n);
    ck_assert_int_eq(gb_restriction_add_host(&r, name, &d), 0);
  }
  ck_assert_int_eq(gb_restriction_add_host(&r, "gpu-999", &d), GC_ELIMIT);
  ck_assert_uint_eq(r.n_values, GB_RESTRICTION_MAX_HOSTS);
  gc_diags_destroy(&d);
}
END_TEST

/* The webhook's operations for a new pod of a released gang. */
static void expect_ops(const char *spec, const char *want) {
  struct gb_restriction r;
  block(&r);
  json_object *p = pod(spec), *ops = json_object_new_array();
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_restriction_affinity_ops(p, &r, ops, &d);
  ck_assert_msg(rc == 0, "rc %d: %s", rc, d.n ? d.msgs[0] : "");
  ck_assert_str_eq(plain(ops), want);
  json_object_put(ops);
  json_object_put(p);
  gc_diags_destroy(&d);
}

#define RD "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"

START_TEST(test_affinity_ops) {
  expect_ops("{}", "[{\"op\":\"add\",\"path\":\"/spec/affinity\",\"value\":{\"nodeAffinity\":{"
                   "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
                   "{\"matchExpressions\":[" REQ_BLOCK "]}]}}}}]");
  expect_ops("{\"affinity\":{\"podAffinity\":{}}}",
             "[{\"op\":\"add\",\"path\":\"/spec/affinity/nodeAffinity\",\"value\":{"
             "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
             "{\"matchExpressions\":[" REQ_BLOCK "]}]}}}]");
  expect_ops("{\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuring"
             "Execution\":[]}}}",
             "[{\"op\":\"add\",\"path\":\"" RD "\",\"value\":{\"nodeSelectorTerms\":["
             "{\"matchExpressions\":[" REQ_BLOCK "]}]}}]");
  expect_ops("{" AFF "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\","
             "\"operator\":\"Exists\"}]},{\"matchFields\":[{\"key\":\"metadata.name\","
             "\"operator\":\"In\",\"values\":[\"n\"]}]},{}]}}}}",
             "[{\"op\":\"add\",\"path\":\"" RD "/nodeSelectorTerms/0/matchExpressions/-\","
             "\"value\":" REQ_BLOCK "},{\"op\":\"add\",\"path\":\"" RD
             "/nodeSelectorTerms/1/matchExpressions\",\"value\":[" REQ_BLOCK "]}]");
  expect_ops("{" AFF "{\"nodeSelectorTerms\":[{\"matchExpressions\":[" REQ_BLOCK "]}]}}}}", "[]");
}
END_TEST

/* The seam the release (placement/gb_release) builds on. */
START_TEST(test_anded_terms_and_in_place) {
  struct gb_restriction r, none;
  block(&r);
  memset(&none, 0, sizeof(none));
  json_object *p = pod("{" AFF "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\","
                       "\"operator\":\"Exists\"}]},{}]}}}}"),
              *terms = NULL;
  int in_place = -1;
  ck_assert_int_eq(gb_restriction_anded_terms(p, &r, &terms, NULL), 0);
  ck_assert_str_eq(plain(terms), "[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
                                 "\"Exists\"}," REQ_BLOCK "]},{}]");
  json_object_put(terms);
  ck_assert_int_eq(gb_restriction_in_place(p, &r, &in_place, NULL), 0);
  ck_assert_int_eq(in_place, 0);
  ck_assert_int_eq(gb_restriction_anded_terms(p, &none, &terms, NULL), 0);
  ck_assert_ptr_null(terms);
  ck_assert_int_eq(gb_restriction_in_place(p, &none, &in_place, NULL), 0);
  ck_assert_int_eq(in_place, 1);
  json_object_put(p);
  p = pod("{" AFF "{\"nodeSelectorTerms\":[{\"matchExpressions\":[" REQ_BLOCK "]}]}}}}");
  ck_assert_int_eq(gb_restriction_anded_terms(p, &r, &terms, NULL), 0);
  ck_assert_ptr_null(terms); /* in place already */
  ck_assert_int_eq(gb_restriction_in_place(p, &r, &in_place, NULL), 0);
  ck_assert_int_eq(in_place, 1);
  json_object_put(p);
  p = pod("{\"affinity\":[]}");
  ck_assert_int_eq(gb_restriction_anded_terms(p, &r, &terms, NULL), GC_EINVAL);
  ck_assert_int_eq(gb_restriction_in_place(p, &r, &in_place, NULL), GC_EINVAL);
  json_object_put(p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("restriction");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_label_restriction_validated);
  tcase_add_test(tc, test_host_list_bounded);
  tcase_add_test(tc, test_affinity_ops);
  tcase_add_test(tc, test_anded_terms_and_in_place);
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
