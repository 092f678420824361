/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for the placement side of gb_webhook: a bound pod of a gang
 * that gangbridge places gets the gangbridge.io/placement scheduling gate
 * (the list created when absent, appended to other gates, never
 * duplicated); a bound pod of a gang already released gets the placement
 * restriction instead (AND-ed into every required term); pods that are not
 * bound, not managed, of a mismatched PodGroup, or not CREATEs get neither;
 * and a pod the webhook will not hold loses a gangbridge gate it carries
 * (issue 19, finding 7), other gates kept.
 * Each answer's patch is compared exactly.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_base64.h"
#include "gb_log.h"
#include "gb_webhook.h"
#include "gb_webhook_test.h"

#define GATE_OP_NEW                                                                          \
  "[{\"op\":\"add\",\"path\":\"/spec/schedulingGates\",\"value\":[{\"name\":"                  \
  "\"gangbridge.io/placement\"}]}]"
#define REQ "{\"key\":\"topology.example.com/block\",\"operator\":\"In\",\"values\":[\"b1\"]}"
#define RD "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution"

/* The lookup: jobset names say what the placement side decided. */
static int lookup(void *ctx, const char *ns, const char *jobset, const char *rjob,
                  struct gb_webhook_decision *out, char *reason, size_t reason_size) {
  (void)ctx;
  (void)ns;
  (void)reason;
  (void)reason_size;
  out->managed = strcmp(jobset, "unmanaged") != 0;
  out->bind = strcmp(rjob, "initializer") != 0;
  out->backend = gc_backend_by_name("volcano");
  snprintf(out->group, sizeof(out->group), "%s", jobset);
  out->mismatch = !strcmp(jobset, "mismatch");
  if (!strcmp(jobset, "released") || !strcmp(jobset, "both"))
    ck_assert_int_eq(gb_restriction_label(&out->restriction, "topology.example.com/block", "b1",
                                          NULL),
                     0);
  out->gate = strcmp(jobset, "released") != 0 && strcmp(jobset, "nopolicy") != 0;
  return 0;
}

/* A review of a CREATE (or `op`) of a pod of `jobset`/`rjob` whose group
 * annotation is already right, so only placement adds operations. */
static char *review(const char *op, const char *jobset, const char *rjob, const char *spec) {
  char *b = malloc(8192);
  ck_assert_ptr_nonnull(b);
  snprintf(b, 8192,
           "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
           "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
           "\"namespace\":\"team-a\",\"operation\":\"%s\",\"object\":{\"apiVersion\":\"v1\","
           "\"kind\":\"Pod\",\"metadata\":{\"generateName\":\"x-\",\"labels\":{"
           "\"jobset.sigs.k8s.io/jobset-name\":\"%s\",\"jobset.sigs.k8s.io/replicatedjob-name\":"
           "\"%s\"},\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"}},\"spec\":%s}}}",
           op, jobset, rjob, jobset, spec);
  return b;
}

/* Reviews and returns the decoded patch (caller frees; NULL when none),
 * with the answer's warnings counted in *warnings. */
static char *patch_of(const char *op, const char *jobset, const char *rjob, const char *spec,
                      size_t *warnings) {
  struct gb_webhook_config cfg = {lookup, NULL, 0, 0, NULL, 0};
  struct gb_webhook *wh = NULL;
  ck_assert_int_eq(gb_webhook_new(&cfg, &wh), 0);
  char *body = review(op, jobset, rjob, spec), *out = NULL, *patch = NULL;
  size_t len = 0;
  int status = 0;
  const char *ctype = NULL;
  ck_assert_int_eq(gb_webhook_review(wh, "application/json", body, strlen(body), &status, &out,
                                     &len, &ctype),
                   0);
  ck_assert_int_eq(status, 200);
  json_object *ans = json_tokener_parse(out), *resp, *p, *allowed, *w;
  ck_assert(json_object_object_get_ex(ans, "response", &resp));
  ck_assert(json_object_object_get_ex(resp, "allowed", &allowed));
  ck_assert(json_object_get_boolean(allowed));
  *warnings = json_object_object_get_ex(resp, "warnings", &w) ? json_object_array_length(w) : 0;
  if (json_object_object_get_ex(resp, "patch", &p)) {
    const char *b64 = json_object_get_string(p);
    unsigned char *raw = NULL;
    size_t n = 0;
    ck_assert_int_eq(gb_base64_decode(b64, strlen(b64), &raw, &n), 0);
    patch = (char *)raw;
  }
  json_object_put(ans);
  free(out);
  free(body);
  gb_webhook_free(wh);
  return patch;
}

static void expect(const char *op, const char *jobset, const char *rjob, const char *spec,
                   const char *want) {
  size_t warnings = 0;
  char *patch = patch_of(op, jobset, rjob, spec, &warnings);
  if (!want)
    ck_assert_msg(patch == NULL, "unexpected patch %s", patch);
  else
    ck_assert_msg(patch && !strcmp(patch, want), "patch\n  %s\nwanted\n  %s",
                  patch ? patch : "(none)", want);
  ck_assert_uint_eq(warnings, 0);
  free(patch);
}

/* Neither the gate nor a restriction is in the answer (a pod that is not
 * bound loses its group annotation as before, with a warning). */
static void expect_no_placement(const char *op, const char *jobset, const char *rjob,
                                const char *spec) {
  size_t warnings = 0;
  char *patch = patch_of(op, jobset, rjob, spec, &warnings);
  ck_assert_msg(!patch || (!strstr(patch, "schedulingGates") && !strstr(patch, "affinity")),
                "%s/%s got %s", jobset, rjob, patch);
  free(patch);
}

#define C "\"containers\":[{\"name\":\"node\",\"image\":\"pytorch:1\"}]"

START_TEST(test_gate_added_to_pod_without_gates) {
  expect("CREATE", "gated", "node", "{" C "}", GATE_OP_NEW);
  expect("CREATE", "gated", "node", "{" C ",\"schedulingGates\":null}", GATE_OP_NEW);
  expect("CREATE", "gated", "node", "{" C ",\"schedulingGates\":[]}", GATE_OP_NEW);
}
END_TEST

START_TEST(test_gate_appended_to_other_gates) {
  expect("CREATE", "gated", "node", "{" C ",\"schedulingGates\":[{\"name\":\"kueue.x-k8s.io/"
                                    "admission\"}]}",
         "[{\"op\":\"add\",\"path\":\"/spec/schedulingGates/-\",\"value\":{\"name\":"
         "\"gangbridge.io/placement\"}}]");
}
END_TEST

START_TEST(test_gate_never_duplicated) {
  expect("CREATE", "gated", "node", "{" C ",\"schedulingGates\":[{\"name\":\"a\"},{\"name\":"
                                    "\"gangbridge.io/placement\"}]}",
         NULL);
}
END_TEST

START_TEST(test_gate_only_for_bound_managed_creates) {
  expect_no_placement("CREATE", "gated", "initializer", "{" C "}"); /* not in the gang */
  expect("CREATE", "unmanaged", "node", "{" C "}", NULL);           /* managed elsewhere */
  expect("UPDATE", "gated", "node", "{" C "}", NULL);
  /* A PodGroup that is not the gang's: the pod is not bound, so not gated. */
  expect_no_placement("CREATE", "mismatch", "node", "{" C "}");
}
END_TEST

START_TEST(test_released_gang_gets_restriction) {
  expect("CREATE", "released", "launcher", "{" C "}",
         "[{\"op\":\"add\",\"path\":\"/spec/affinity\",\"value\":{\"nodeAffinity\":{"
         "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
         "{\"matchExpressions\":[" REQ "]}]}}}}]");
  /* An existing required affinity with two terms: AND-ed into both. */
  expect("CREATE", "released", "launcher",
         "{" C ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
         "Execution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"gpu\","
         "\"operator\":\"Exists\"}]},{\"matchExpressions\":[{\"key\":\"cpu-only\",\"operator\":"
         "\"DoesNotExist\"}]}]}}}}",
         "[{\"op\":\"add\",\"path\":\"" RD "/nodeSelectorTerms/0/matchExpressions/-\",\"value\":"
         REQ "},{\"op\":\"add\",\"path\":\"" RD "/nodeSelectorTerms/1/matchExpressions/-\","
         "\"value\":" REQ "}]");
  /* Gated and restricted at once: the gate wins, the release adds the rest. */
  expect("CREATE", "both", "node", "{" C "}", GATE_OP_NEW);
  expect_no_placement("CREATE", "released", "initializer", "{" C "}");
}
END_TEST

#define KUEUE "{\"name\":\"kueue.x-k8s.io/admission\"}"
#define OURS "{\"name\":\"gangbridge.io/placement\"}"

/* The patch for a pod the webhook will not hold: exactly the removal of
 * gangbridge's gate (by its index, other gates kept), with one warning. */
static void expect_stripped(const char *jobset, const char *rjob, const char *spec,
                            const char *want, size_t want_warnings) {
  size_t warnings = 0;
  char *patch = patch_of("CREATE", jobset, rjob, spec, &warnings);
  ck_assert_msg(patch && !strcmp(patch, want), "%s/%s: patch\n  %s\nwanted\n  %s", jobset, rjob,
                patch ? patch : "(none)", want);
  ck_assert_uint_eq(warnings, want_warnings);
  free(patch);
}

START_TEST(test_stray_gate_stripped) {
  /* A gang without a topology policy: gangbridge does not hold it. */
  expect_stripped("nopolicy", "node", "{" C ",\"schedulingGates\":[" KUEUE "," OURS "]}",
                  "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/1\"}]", 1);
  /* A TrainJob gangbridge does not manage. */
  expect_stripped("unmanaged", "node", "{" C ",\"schedulingGates\":[" OURS "," KUEUE "]}",
                  "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/0\"}]", 1);
  /* A replicated job outside the gang: the group annotation and the gate go. */
  expect_stripped("gated", "initializer", "{" C ",\"schedulingGates\":[" OURS "]}",
                  "[{\"op\":\"remove\",\"path\":\"/metadata/annotations/scheduling.k8s.io~1"
                  "group-name\"},{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/0\"}]",
                  2);
  /* A released gang's later pod: the gate goes, the restriction comes. */
  expect_stripped("released", "launcher", "{" C ",\"schedulingGates\":[" OURS "]}",
                  "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/0\"},{\"op\":"
                  "\"add\",\"path\":\"/spec/affinity\",\"value\":{\"nodeAffinity\":{"
                  "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":["
                  "{\"matchExpressions\":[" REQ "]}]}}}}]",
                  1);
  /* A gang gangbridge places keeps its one gate. */
  expect("CREATE", "gated", "node", "{" C ",\"schedulingGates\":[" OURS "]}", NULL);
}
END_TEST

START_TEST(test_stray_gate_on_non_jobset_pod) {
  struct gb_webhook_config cfg = {lookup, NULL, 0, 0, NULL, 0};
  struct gb_webhook *wh = NULL;
  ck_assert_int_eq(gb_webhook_new(&cfg, &wh), 0);
  const char *body =
      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
      "\"uid\":\"u-2\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
      "\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\","
      "\"kind\":\"Pod\",\"metadata\":{\"name\":\"lone\"},\"spec\":{" C ","
      "\"schedulingGates\":[" KUEUE "," OURS "]}}}}";
  char *out = NULL;
  size_t len = 0;
  int status = 0;
  const char *ctype = NULL;
  ck_assert_int_eq(
      gb_webhook_review(wh, "application/json", body, strlen(body), &status, &out, &len, &ctype),
      0);
  ck_assert_int_eq(status, 200);
  json_object *ans = json_tokener_parse(out), *resp, *p;
  ck_assert(json_object_object_get_ex(ans, "response", &resp));
  ck_assert(json_object_object_get_ex(resp, "patch", &p));
  const char *b64 = json_object_get_string(p);
  unsigned char *raw = NULL;
  size_t n = 0;
  ck_assert_int_eq(gb_base64_decode(b64, strlen(b64), &raw, &n), 0);
  ck_assert_str_eq((char *)raw, "[{\"op\":\"remove\",\"path\":\"/spec/schedulingGates/1\"}]");
  free(raw);
  json_object_put(ans);
  free(out);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_malformed_affinity_warns) {
  size_t warnings = 0;
  char *patch = patch_of("CREATE", "released", "launcher", "{" C ",\"affinity\":[]}", &warnings);
  ck_assert_ptr_null(patch);
  ck_assert_uint_eq(warnings, 1);
  patch = patch_of("CREATE", "gated", "node", "{" C ",\"schedulingGates\":{}}", &warnings);
  ck_assert_ptr_null(patch);
  ck_assert_uint_eq(warnings, 1);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("webhook_gate");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_gate_added_to_pod_without_gates);
  tcase_add_test(tc, test_gate_appended_to_other_gates);
  tcase_add_test(tc, test_gate_never_duplicated);
  tcase_add_test(tc, test_gate_only_for_bound_managed_creates);
  tcase_add_test(tc, test_released_gang_gets_restriction);
  tcase_add_test(tc, test_malformed_affinity_warns);
  tcase_add_test(tc, test_stray_gate_stripped);
  tcase_add_test(tc, test_stray_gate_on_non_jobset_pod);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  gb_log_set_level(GB_LOG_ERROR);
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
