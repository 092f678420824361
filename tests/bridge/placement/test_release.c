/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_release (placement/): the exact release bodies (merge
 * patches) for pods with and without gates, other controllers' gates, no
 * affinity, required affinity with several terms (the requirement AND-ed
 * into each), empty terms (left alone), terms that already hold the
 * requirement (idempotent), the growth bound, and the release state of a
 * pod.  (The restriction itself and the webhook's operations:
 * tests/bridge/controller/test_restriction.c.)
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_release.h"

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

/* Builds the release body of a pod with `spec` and compares it with `want`. */
static void expect_patch(const char *spec, const struct gb_restriction *r, const char *want) {
  json_object *p = pod(spec), *out = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_release_patch(p, r, &out, &d);
  ck_assert_msg(rc == 0, "rc %d: %s", rc, d.n ? d.msgs[0] : "");
  ck_assert_str_eq(plain(out), want);
  json_object_put(out);
  json_object_put(p);
  gc_diags_destroy(&d);
}

/* The release fails with `code` and a message containing `msg`. */
static void expect_refused(const char *spec, const struct gb_restriction *r, int code,
                           const char *msg) {
  json_object *p = pod(spec), *out = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_release_patch(p, r, &out, &d), code);
  ck_assert_ptr_null(out);
  ck_assert_uint_ge(d.n, 1);
  ck_assert_msg(strstr(d.msgs[0], msg) != NULL, "message \"%s\" lacks \"%s\"", d.msgs[0], msg);
  json_object_put(p);
  gc_diags_destroy(&d);
}

START_TEST(test_only_our_gate_no_affinity) {
  struct gb_restriction r;
  block(&r);
  expect_patch("{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],"
               "\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}",
               &r,
               "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"schedulingGates\":null," AFF
               "{\"nodeSelectorTerms\":[{\"matchExpressions\":[" REQ_BLOCK "]}]}}}}}");
}
END_TEST

START_TEST(test_other_gates_kept_terms_anded) {
  struct gb_restriction r;
  block(&r);
  /* Two required terms (the second with matchFields only) and a preferred
   * term: the requirement goes into both required terms, after what they
   * hold; the preferred one and podAntiAffinity are not in the patch. */
  expect_patch(
      "{\"schedulingGates\":[{\"name\":\"a.io/x\"},{\"name\":\"gangbridge.io/placement\"},"
      "{\"name\":\"b.io/y\"}],\"affinity\":{\"podAntiAffinity\":{},\"nodeAffinity\":{"
      "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":1,\"preference\":{}}],"
      "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
      "{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]},"
      "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n9\"]}]}"
      "]}}}}",
      &r,
      "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"schedulingGates\":["
      "{\"name\":\"a.io/x\"},{\"name\":\"b.io/y\"}]," AFF "{\"nodeSelectorTerms\":["
      "{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}," REQ_BLOCK "]},"
      "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n9\"]}],"
      "\"matchExpressions\":[" REQ_BLOCK "]}]}}}}}");
}
END_TEST

START_TEST(test_empty_and_satisfied_terms_left_alone) {
  struct gb_restriction r;
  block(&r);
  /* An empty term matches nothing and may gain nothing; a term that has
   * the requirement already keeps it once. */
  expect_patch("{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],"
               "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
               "{\"nodeSelectorTerms\":[{},{\"matchExpressions\":[" REQ_BLOCK "]},"
               "{\"matchExpressions\":[]}]}}}}",
               &r,
               "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"schedulingGates\":null}}");
  /* Required affinity without terms: a single term is set. */
  expect_patch("{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],"
               "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
               "{}}}}",
               &r,
               "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"schedulingGates\":null," AFF
               "{\"nodeSelectorTerms\":[{\"matchExpressions\":[" REQ_BLOCK "]}]}}}}}");
}
END_TEST

START_TEST(test_unrestricted_release_and_hosts) {
  struct gb_restriction r;
  memset(&r, 0, sizeof(r));
  expect_patch("{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"},{\"name\":\"o\"}],"
               "\"affinity\":null}",
               &r,
               "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"schedulingGates\":["
               "{\"name\":\"o\"}]}}");
  ck_assert_int_eq(gb_restriction_add_host(&r, "n1", NULL), 0);
  ck_assert_int_eq(gb_restriction_add_host(&r, "n2", NULL), 0);
  expect_patch(
      "{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}]}", &r,
      "{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"schedulingGates\":null," AFF
      "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
      "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"n1\",\"n2\"]}]}]}}}}}");
}
END_TEST

START_TEST(test_refused_inputs) {
  struct gb_restriction r;
  block(&r);
  expect_refused("{\"schedulingGates\":[{\"name\":\"other\"}]}", &r, GC_ENOTFOUND,
                 "ns1/p-0: spec.schedulingGates: no gangbridge.io/placement gate");
  expect_refused("{}", &r, GC_ENOTFOUND, "no gangbridge.io/placement gate");
  expect_refused("{\"schedulingGates\":{\"name\":\"gangbridge.io/placement\"}}", &r, GC_EINVAL,
                 "ns1/p-0: spec.schedulingGates: not a list");
  expect_refused("{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],\"affinity\":"
                 "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                 "{\"nodeSelectorTerms\":{}}}}}",
                 &r, GC_EINVAL,
                 "ns1/p-0: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
                 "Execution.nodeSelectorTerms: not a list");
  expect_refused("{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],\"affinity\":"
                 "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                 "{\"nodeSelectorTerms\":[{\"matchExpressions\":{}}]}}}}",
                 &r, GC_EINVAL, "nodeSelectorTerms[0].matchExpressions: not a list");
  expect_refused("{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],"
                 "\"affinity\":[]}",
                 &r, GC_EINVAL, "ns1/p-0: spec.affinity: not an object");

  /* No resourceVersion: no precondition, no release. */
  json_object *p = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\"},\"spec\":"
                         "{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}]}}");
  json_object *out = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_release_patch(p, &r, &out, &d), GC_EINVAL);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "n/p: metadata.resourceVersion: missing"));
  json_object_put(p);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_growth_bounded_over_terms) {
  /* 32 hosts of 40 bytes: 1433 bytes per term; three terms would add 4299. */
  struct gb_restriction r;
  memset(&r, 0, sizeof(r));
  char name[64];
  for (int i = 0; i < 32; i++) {
    snprintf(name, sizeof(name), "node-%035d", i);
    ck_assert_int_eq(gb_restriction_add_host(&r, name, NULL), 0);
  }
  const char *two = "{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],\"affinity\":"
                    "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                    "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
                    "\"Exists\"}]},{\"matchExpressions\":[{\"key\":\"b\",\"operator\":"
                    "\"Exists\"}]}]}}}}";
  const char *three = "{\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}],\"affinity\":"
                      "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
                      "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
                      "\"Exists\"}]},{\"matchExpressions\":[{\"key\":\"b\",\"operator\":"
                      "\"Exists\"}]},{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
                      "\"In\",\"values\":[\"x\"]}]}]}}}}";
  json_object *p = pod(two), *out = NULL;
  ck_assert_int_eq(gb_release_patch(p, &r, &out, NULL), 0);
  json_object_put(out);
  json_object_put(p);
  out = NULL;
  expect_refused(three, &r, GC_ELIMIT, "over the 4096-byte limit");
}
END_TEST

static enum gb_release_state state_of(const char *spec, const struct gb_restriction *r) {
  json_object *p = pod(spec);
  enum gb_release_state st = GB_RELEASE_GATED;
  ck_assert_int_eq(gb_release_state(p, r, &st, NULL), 0);
  json_object_put(p);
  return st;
}

START_TEST(test_release_state) {
  struct gb_restriction r, none;
  block(&r);
  memset(&none, 0, sizeof(none));
  ck_assert_int_eq(state_of("{\"schedulingGates\":[{\"name\":\"x\"},{\"name\":"
                            "\"gangbridge.io/placement\"}]}",
                            &r),
                   GB_RELEASE_GATED);
  ck_assert_int_eq(state_of("{\"schedulingGates\":[{\"name\":\"x\"}]," AFF
                            "{\"nodeSelectorTerms\":[{\"matchExpressions\":[" REQ_BLOCK
                            "]},{}]}}}}",
                            &r),
                   GB_RELEASE_DONE);
  ck_assert_int_eq(state_of("{" AFF "{\"nodeSelectorTerms\":[{\"matchExpressions\":[" REQ_BLOCK
                            "]},{\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
                            "\"Exists\"}]}]}}}}",
                            &r),
                   GB_RELEASE_UNRESTRICTED);
  ck_assert_int_eq(state_of("{}", &r), GB_RELEASE_UNRESTRICTED);
  ck_assert_int_eq(state_of("{}", &none), GB_RELEASE_DONE);
  json_object *p = pod("{\"schedulingGates\":\"x\"}");
  enum gb_release_state st;
  ck_assert_int_eq(gb_release_state(p, &r, &st, NULL), GC_EINVAL);
  json_object_put(p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("release");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_only_our_gate_no_affinity);
  tcase_add_test(tc, test_other_gates_kept_terms_anded);
  tcase_add_test(tc, test_empty_and_satisfied_terms_left_alone);
  tcase_add_test(tc, test_unrestricted_release_and_hosts);
  tcase_add_test(tc, test_refused_inputs);
  tcase_add_test(tc, test_growth_bounded_over_terms);
  tcase_add_test(tc, test_release_state);
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
