/* SPDX-License-Identifier: Apache-2.0
 *
 * The Volcano extender verbs through gb_sched_handle, over bodies built from
 * the reference structs (sched_fixture.h) and a fake plan: exact responses
 * for predicate, prioritize, allocateFunc/deallocateFunc, jobEnqueueable and
 * the session verbs; Go's case-insensitive keys, unknown fields, null versus
 * empty maps, truncated JSON and wrong types (400 naming the place).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_metrics.h"
#include "gb_sched.h"
#include "gb_sched_test.h"
#include "gb_sched_volcano.h"
#include "sched_fixture.h"

static struct fx_source fb;
static struct gb_sched *S;
static struct gb_metrics *M;

static void setup(void) {
  memset(&fb, 0, sizeof(fb));
  struct gb_sched_source be = fx_source_of(&fb);
  struct gb_sched_config cfg = {0};
  M = gb_metrics_new();
  cfg.metrics = M;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_sched_new(&cfg, &be, &S, &d), 0);
  gc_diags_destroy(&d);
}

static void teardown(void) {
  gb_sched_free(S);
  gb_metrics_free(M);
}

struct answer {
  int status;
  char *body;
};

static struct answer post(const char *path, const char *body) {
  struct gb_http_response r = {200, NULL, 0, NULL};
  ck_assert_int_eq(gb_sched_handle(S, path, body, strlen(body), &r), 0);
  struct answer a = {r.status, r.body};
  ck_assert_ptr_nonnull(a.body);
  return a;
}

/* Posts body (freed here) and checks the exact answer. */
static void expect(const char *path, char *body, int status, const char *want) {
  struct answer a = post(path, body);
  ck_assert_int_eq(a.status, status);
  ck_assert_str_eq(a.body, want);
  free(a.body);
  free(body);
}

static void expect_prefix(const char *path, const char *body, int status, const char *want) {
  struct answer a = post(path, body);
  ck_assert_int_eq(a.status, status);
  ck_assert_msg(!strncmp(a.body, want, strlen(want)), "got %s", a.body);
  free(a.body);
}

/* The value of one decisions series, read from the exposition (0 when absent). */
static double decisions(const char *verb, const char *decision) {
  char *text = NULL, want[256];
  size_t len;
  ck_assert_int_eq(gb_metrics_render(M, &text, &len), 0);
  snprintf(want, sizeof(want),
           "gangbridge_sched_decisions_total{protocol=\"volcano\",verb=\"%s\",decision=\"%s\"} ",
           verb, decision);
  const char *at = strstr(text, want);
  double v = at ? strtod(at + strlen(want), NULL) : 0;
  free(text);
  return v;
}

START_TEST(predicate_in_domain_passes) {
  expect("/volcano/predicate",
         fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-17", 3), 200,
         "{\"status\":\"\",\"code\":0}");
}
END_TEST

START_TEST(predicate_outside_domain_code_2) {
  expect("/volcano/predicate", fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", 3),
         200,
         "{\"status\":\"gangbridge: node gpu-node-3 is not in domain leaf-1 chosen for "
         "team-a/tj-llama\",\"code\":2}");
  ck_assert(decisions("predicate", "fail") == 1);
}
END_TEST

START_TEST(predicate_other_task_passes) {
  /* No JobSet label and a PodGroup the plan does not know. */
  expect("/volcano/predicate", fx_predicate("web-0", "u9", NULL, "gpu-node-3", 2), 200,
         "{\"status\":\"\",\"code\":0}");
  ck_assert(decisions("predicate", "no_opinion") == 1);
}
END_TEST

START_TEST(predicate_key_from_job_when_no_label) {
  /* Without the JobSet label the task's Job ("ns/podgroup") is the key. */
  expect("/volcano/predicate",
         strdup("{\"task\":{\"UID\":\"u1\",\"Job\":\"team-a/tj-llama\",\"Pod\":null},"
                "\"node\":{\"Name\":\"gpu-node-4\",\"Tasks\":null}}"),
         200,
         "{\"status\":\"gangbridge: node gpu-node-4 is not in domain leaf-1 chosen for "
         "team-a/tj-llama\",\"code\":2}");
}
END_TEST

START_TEST(predicate_keys_case_insensitive_unknown_ignored) {
  expect("/volcano/predicate",
         strdup("{\"TASK\":{\"uid\":\"u1\",\"job\":\"x/y\",\"namespace\":\"team-a\",\"NewField\":"
                "[1,{\"a\":null}],\"POD\":{\"Metadata\":{\"LABELS\":{"
                "\"jobset.sigs.k8s.io/jobset-name\":\"tj-llama\"}}}},\"Node\":{\"name\":"
                "\"gpu-node-5\",\"Future\":{\"x\":[true,false]}},\"extra\":1.5e3}"),
         200,
         "{\"status\":\"gangbridge: node gpu-node-5 is not in domain leaf-1 chosen for "
         "team-a/tj-llama\",\"code\":2}");
  /* Label keys are map keys: exact, so a differently cased label is not the
   * JobSet label and the Job "x/y" is the key (no opinion). */
  expect("/volcano/predicate",
         strdup("{\"task\":{\"Job\":\"x/y\",\"Namespace\":\"team-a\",\"Pod\":{\"metadata\":"
                "{\"labels\":{\"JOBSET.sigs.k8s.io/jobset-name\":\"tj-llama\"}}}},"
                "\"node\":{\"Name\":\"gpu-node-5\"}}"),
         200, "{\"status\":\"\",\"code\":0}");
}
END_TEST

START_TEST(predicate_node_name_from_node_object) {
  expect("/volcano/predicate",
         strdup("{\"task\":{\"Job\":\"team-a/tj-llama\"},\"node\":{\"Name\":\"\",\"Node\":"
                "{\"metadata\":{\"name\":\"gpu-node-18\"}}}}"),
         200, "{\"status\":\"\",\"code\":0}");
}
END_TEST

START_TEST(predicate_malformed_400) {
  char *full = fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-17", 2);
  full[strlen(full) / 2] = '\0'; /* truncated */
  struct answer a = post("/volcano/predicate", full);
  ck_assert_int_eq(a.status, 400);
  ck_assert_msg(strstr(a.body, "volcano predicate: body:1:"), "%s", a.body);
  free(a.body);
  free(full);
  expect_prefix("/volcano/predicate", "{\"task\":{\"UID\":7},\"node\":{\"Name\":\"n\"}}", 400,
                "volcano predicate: body:1:16: task.UID: expected a string, found a number");
  expect_prefix("/volcano/predicate", "{\"task\":[],\"node\":{\"Name\":\"n\"}}", 400,
                "volcano predicate: body:1:9: task: expected an object, found an array");
  expect_prefix("/volcano/predicate", "{\"node\":{\"Name\":\"n\"}}", 400,
                "volcano predicate: request: no \"task\"");
  expect_prefix("/volcano/predicate", "{\"task\":{},\"node\":{\"Tasks\":{}}}", 400,
                "volcano predicate: body:1:31: node: no Name");
  expect_prefix("/volcano/predicate", "{\"task\":{},\"node\":{\"Name\":\"n\"}} x", 400,
                "volcano predicate: body:1:33: unexpected data after the JSON value");
  expect_prefix("/volcano/predicate", "{\"task\":{},\"node\":{\"Name\":\"n\",}}", 400,
                "volcano predicate: body:1:31: trailing comma");
  expect_prefix("/volcano/predicate", "{\"task\":{\"a\":tru},\"node\":{\"Name\":\"n\"}}", 400,
                "volcano predicate: body:1:14: invalid literal");
  expect_prefix("/volcano/predicate", "", 400,
                "volcano predicate: body:1:1: PredicateRequest: expected an object, found the end");
  ck_assert(decisions("predicate", "invalid") == 9);
}
END_TEST

START_TEST(predicate_null_vs_empty_maps) {
  /* Tasks null and {}, ScalarResources null, labels null: all decode. */
  expect("/volcano/predicate",
         fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", -1), 200,
         "{\"status\":\"gangbridge: node gpu-node-3 is not in domain leaf-1 chosen for "
         "team-a/tj-llama\",\"code\":2}");
  expect("/volcano/predicate",
         strdup("{\"task\":{\"Job\":\"team-a/tj-llama\",\"Pod\":{\"metadata\":{\"labels\":null,"
                "\"annotations\":{}}}},\"node\":{\"Name\":\"gpu-node-19\",\"Tasks\":{}}}"),
         200, "{\"status\":\"\",\"code\":0}");
}
END_TEST

static char *prio_body(const char *jobset, const char *const *nodes, size_t n) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  char job[128];
  snprintf(job, sizeof(job), "team-a/%s", jobset);
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", "t-0", "u0", job, jobset, NULL);
  gb_buf_addstr(&b, ",\"nodes\":[");
  for (size_t i = 0; i < n; i++) {
    gb_buf_addstr(&b, i ? "," : "");
    fx_node(&b, nodes[i], 2);
  }
  gb_buf_addstr(&b, "]}");
  char *out = NULL;
  size_t len;
  gb_buf_take(&b, &out, &len);
  return out;
}

static char *task_body(const char *uid, const char *jobset, const char *node) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  char job[128];
  snprintf(job, sizeof(job), "team-a/%s", jobset);
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", uid, uid, job, jobset, node);
  gb_buf_addstr(&b, "}");
  char *out = NULL;
  size_t len;
  gb_buf_take(&b, &out, &len);
  return out;
}

static const char *const THREE[] = {"gpu-node-17", "gpu-node-18", "gpu-node-3"};

START_TEST(prioritize_scores_plan) {
  expect("/volcano/prioritize", prio_body("tj-llama", THREE, 3), 200,
         "{\"nodeScore\":{\"gpu-node-17\":100,\"gpu-node-18\":50,\"gpu-node-3\":0},"
         "\"errorMessage\":\"\"}");
  /* Other gangs: every node 0, the map never null. */
  expect("/volcano/prioritize", prio_body("other", THREE, 3), 200,
         "{\"nodeScore\":{\"gpu-node-17\":0,\"gpu-node-18\":0,\"gpu-node-3\":0},"
         "\"errorMessage\":\"\"}");
  expect("/volcano/prioritize", strdup("{\"task\":{\"Job\":\"team-a/tj-llama\"},\"nodes\":null}"),
         200, "{\"nodeScore\":{},\"errorMessage\":\"\"}");
  expect("/volcano/prioritize", strdup("{\"task\":{\"Job\":\"team-a/tj-llama\"},\"nodes\":[]}"),
         200, "{\"nodeScore\":{},\"errorMessage\":\"\"}");
}
END_TEST

START_TEST(session_allocations_steer_prioritize) {
  expect("/volcano/onSessionOpen", strdup(""), 200, "{}");
  expect("/volcano/allocateFunc", task_body("a0", "tj-llama", "gpu-node-17"), 200,
         "{\"errorMessage\":\"\"}");
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-llama", "gpu-node-17"), 1);
  /* Repeated (Pipeline, unevict): counted once. */
  expect("/volcano/allocateFunc", task_body("a0", "tj-llama", "gpu-node-17"), 200,
         "{\"errorMessage\":\"\"}");
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-llama", "gpu-node-17"), 1);
  /* One of two planned places on 17 taken: 17 and 18 have one left each. */
  expect("/volcano/prioritize", prio_body("tj-llama", THREE, 3), 200,
         "{\"nodeScore\":{\"gpu-node-17\":100,\"gpu-node-18\":100,\"gpu-node-3\":0},"
         "\"errorMessage\":\"\"}");
  expect("/volcano/allocateFunc", task_body("a1", "tj-llama", "gpu-node-17"), 200,
         "{\"errorMessage\":\"\"}");
  expect("/volcano/prioritize", prio_body("tj-llama", THREE, 3), 200,
         "{\"nodeScore\":{\"gpu-node-17\":0,\"gpu-node-18\":100,\"gpu-node-3\":0},"
         "\"errorMessage\":\"\"}");
  /* Outside the domain: refused, so Volcano rolls the allocation back. */
  expect("/volcano/allocateFunc", task_body("a2", "tj-llama", "gpu-node-3"), 200,
         "{\"errorMessage\":\"gangbridge: task team-a/a2 on node gpu-node-3: node gpu-node-3 is "
         "not in domain leaf-1 chosen for team-a/tj-llama\"}");
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-llama", "gpu-node-3"), 0);
  /* A deallocation (Evict, a discarded dry run) gives the place back. */
  expect("/volcano/deallocateFunc", task_body("a1", "tj-llama", "gpu-node-17"), 200,
         "{\"errorMessage\":\"\"}");
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-llama", "gpu-node-17"), 1);
  /* A task moved to another node is counted there only. */
  expect("/volcano/allocateFunc", task_body("a0", "tj-llama", "gpu-node-18"), 200,
         "{\"errorMessage\":\"\"}");
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-llama", "gpu-node-17"), 0);
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-llama", "gpu-node-18"), 1);
  /* Other gangs are not recorded; a session's end forgets everything. */
  expect("/volcano/allocateFunc", task_body("b0", "other", "gpu-node-3"), 200,
         "{\"errorMessage\":\"\"}");
  expect("/volcano/onSessionClose", strdup("{}"), 200, "{}");
  struct gb_sched_stats st;
  gb_sched_stats(S, &st);
  ck_assert_int_eq(st.overlay_tasks, 0);
  ck_assert_int_eq(st.sessions, 2);
  expect("/volcano/prioritize", prio_body("tj-llama", THREE, 3), 200,
         "{\"nodeScore\":{\"gpu-node-17\":100,\"gpu-node-18\":50,\"gpu-node-3\":0},"
         "\"errorMessage\":\"\"}");
}
END_TEST

START_TEST(allocate_malformed_400) {
  expect_prefix("/volcano/allocateFunc", "{\"task\":{\"NodeName\":false}}", 400,
                "volcano allocateFunc: body:1:21: task.NodeName: expected a string, found a "
                "boolean");
  expect_prefix("/volcano/deallocateFunc", "{\"task\":null}", 400,
                "volcano deallocateFunc: request: no \"task\"");
}
END_TEST

static char *job_body(const char *name, int managed, int n_tasks) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  gb_buf_printf(&b,
                "{\"job\":{\"UID\":\"team-a/%s\",\"PgUID\":\"9f1e\",\"Name\":\"%s\","
                "\"Namespace\":\"team-a\",\"Queue\":\"default\",\"Priority\":0,"
                "\"MinAvailable\":%d,\"WaitingTime\":null,\"JobFitErrors\":\"\","
                "\"NodesFitErrors\":{},\"AllocatedHyperNode\":\"\",\"NetworkTopology\":"
                "{\"mode\":\"hard\",\"highestTierAllowed\":1},\"SubJobs\":{},\"TaskToSubJob\":{},"
                "\"MinSubJobs\":{},\"TaskStatusIndex\":{\"1\":{}},\"Tasks\":{",
                name, name, n_tasks);
  for (int i = 0; i < n_tasks; i++) {
    char uid[64], pname[96], job[96];
    snprintf(uid, sizeof(uid), "%s-uid-%d", name, i);
    snprintf(pname, sizeof(pname), "%s-node-0-%d", name, i);
    snprintf(job, sizeof(job), "team-a/%s", name);
    gb_buf_printf(&b, "%s\"%s\":", i ? "," : "", uid);
    fx_task(&b, "team-a", pname, uid, job, name, NULL);
  }
  gb_buf_printf(&b,
                "},\"TaskMinAvailable\":{\"node\":%d},\"TaskMinAvailableTotal\":%d,"
                "\"Allocated\":{\"MilliCPU\":0,\"Memory\":0,\"ScalarResources\":null,"
                "\"MaxTaskNum\":0},\"TotalRequest\":{\"MilliCPU\":0,\"Memory\":0,"
                "\"ScalarResources\":null,\"MaxTaskNum\":0},\"CreationTimestamp\":"
                "\"2026-08-20T10:00:00Z\",\"ScheduleStartTimestamp\":null,\"PodGroup\":{"
                "\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\",\"labels\":%s},"
                "\"spec\":{\"minMember\":%d},\"status\":{\"phase\":\"Pending\"},\"Version\":"
                "\"v1beta1\"},\"Preemptable\":false,\"RevocableZone\":\"\",\"Budget\":null}}",
                n_tasks, n_tasks, name,
                managed ? "{\"app.kubernetes.io/managed-by\":\"gangbridge\"}" : "{}", n_tasks);
  char *out = NULL;
  size_t len;
  gb_buf_take(&b, &out, &len);
  return out;
}

START_TEST(enqueueable_verdicts) {
  expect("/volcano/jobEnqueueable", job_body("tj-llama", 1, 2), 200, "{\"status\":1}");
  ck_assert_int_eq(fb.events, 1);
  /* What the backend is given: the key, the tasks grouped by InitResreq
   * ("pods" left out), MinAvailable, the topology policy, the age. */
  const struct gb_sched_vjob *j = &fb.last_job;
  ck_assert_str_eq(j->key, "team-a/tj-llama");
  ck_assert_int_eq(j->managed, 1);
  ck_assert_int_eq(j->n_tasks, 2);
  ck_assert_int_eq(j->min_available, 2);
  ck_assert_int_eq(j->n_shapes, 1);
  ck_assert_int_eq(j->shapes[0].count, 2);
  ck_assert(j->shapes[0].milli_cpu == 16000 && j->shapes[0].memory == 137438953472.0);
  ck_assert_int_eq(j->shapes[0].n_scalar, 1);
  ck_assert_str_eq(j->shapes[0].scalar[0], "nvidia.com/gpu");
  ck_assert(j->shapes[0].scalar_milli[0] == 8000);
  ck_assert_str_eq(j->topology_mode, "hard");
  ck_assert_int_eq(j->highest_tier, 1);
  ck_assert_int_eq(j->created_ms, 1787220000000LL);
  ck_assert_str_eq(j->first_task, "tj-llama-node-0-0");
  ck_assert_int_eq(fb.last_verdict, GB_VC_PERMIT);
  expect("/volcano/jobEnqueueable", job_body("tj-big", 1, 4), 200, "{\"status\":-1}");
  ck_assert_int_eq(fb.events, 2);
  ck_assert_str_eq(fb.last_key, "team-a/tj-big");
  ck_assert_str_eq(fb.last_reason, "16 pods of 8 nvidia.com/gpu fit nowhere: largest free block 4");
  /* A reason that reaches team-a's PodGroup Event never names a gang of
   * another namespace (its own namespace's and resource names stay). */
  expect("/volcano/jobEnqueueable", job_body("tj-held", 1, 1), 200, "{\"status\":-1}");
  ck_assert_int_eq(fb.events, 3);
  ck_assert_str_eq(fb.last_reason,
                   "held: fits, but a gang of another namespace (priority 5) has waited 400 s "
                   "without fitting and goes first; team-a/tj-old waits too; needs 8 "
                   "nvidia.com/gpu");
  /* Not gangbridge's PodGroup: Abstain, no event. */
  expect("/volcano/jobEnqueueable", job_body("tj-big", 0, 1), 200, "{\"status\":0}");
  ck_assert_int_eq(fb.events, 3);
  expect("/volcano/jobEnqueueable", strdup("{\"job\":{\"PodGroup\":null,\"Tasks\":null}}"), 200,
         "{\"status\":0}");
  expect_prefix("/volcano/jobEnqueueable", "{\"job\":{\"MinAvailable\":\"2\"}}", 400,
                "volcano jobEnqueueable: body:1:24: job.MinAvailable: expected a number, found a "
                "string");
  expect_prefix("/volcano/jobEnqueueable", "{\"job\":{\"MinAvailable\":2.5}}", 400,
                "volcano jobEnqueueable: body:1:24: job.MinAvailable: number 2.5 is not an integer "
                "in [-2147483648, 2147483647]");
  /* MinAvailable is an int32 in Go: 2^31 does not fit, and 1e300 is not
   * cast to an integer before its range is known. */
  expect_prefix("/volcano/jobEnqueueable", "{\"job\":{\"MinAvailable\":2147483648}}", 400,
                "volcano jobEnqueueable: body:1:24: job.MinAvailable: number 2147483648 is not "
                "an integer in [-2147483648, 2147483647]");
  expect_prefix("/volcano/jobEnqueueable", "{\"job\":{\"Priority\":1e300}}", 400,
                "volcano jobEnqueueable: body:1:20: job.Priority: number 1e300 is not an "
                "integer");
  /* Trailing data (a NUL byte too) is refused, as Go's decoder does. */
  expect_prefix("/volcano/jobEnqueueable", "{\"job\":{}}x", 400,
                "volcano jobEnqueueable: body:1:11: unexpected data after the JSON value");
  ck_assert(decisions("jobEnqueueable", "permit") == 1);
  ck_assert(decisions("jobEnqueueable", "reject") == 2);
  ck_assert(decisions("jobEnqueueable", "abstain") == 2);
}
END_TEST

/* The scores are written as printf's %lld writes them, every edge of
 * int64 included (the encoder formats them itself). */
START_TEST(prioritize_encode_scores_like_printf) {
  static const int64_t scores[] = {0,
                                   7,
                                   10,
                                   100,
                                   -1,
                                   -10,
                                   99999,
                                   1000000007,
                                   INT64_MAX,
                                   INT64_MIN,
                                   INT64_MIN + 1,
                                   -9223372036854775807LL + 5};
  size_t n = sizeof(scores) / sizeof(scores[0]);
  char *names[sizeof(scores) / sizeof(scores[0])];
  char block[sizeof(scores) / sizeof(scores[0])][16];
  for (size_t i = 0; i < n; i++) {
    snprintf(block[i], sizeof(block[i]), "n%zu", i);
    names[i] = block[i];
  }
  struct gb_sched_vnodes nodes = {names, n, n, NULL, 0, 0, NULL};
  struct gb_buf out, want;
  gb_buf_init(&out, 1 << 20);
  gb_buf_init(&want, 1 << 20);
  ck_assert_int_eq(gb_sched_volcano_prioritize_encode(&nodes, scores, &out), 0);
  gb_buf_addstr(&want, "{\"nodeScore\":{");
  for (size_t i = 0; i < n; i++)
    gb_buf_printf(&want, "%s\"n%zu\":%lld", i ? "," : "", i, (long long)scores[i]);
  gb_buf_addstr(&want, "},\"errorMessage\":\"\"}");
  ck_assert_str_eq(gb_buf_ptr(&out), gb_buf_ptr(&want));
  gb_buf_free(&out);
  gb_buf_free(&want);
}
END_TEST

START_TEST(unknown_path_404) {
  struct answer a = post("/volcano/preemptable", "{}");
  ck_assert_int_eq(a.status, 404);
  free(a.body);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_volcano");
  TCase *tc = tcase_create("verbs");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, predicate_in_domain_passes);
  tcase_add_test(tc, predicate_outside_domain_code_2);
  tcase_add_test(tc, predicate_other_task_passes);
  tcase_add_test(tc, predicate_key_from_job_when_no_label);
  tcase_add_test(tc, predicate_keys_case_insensitive_unknown_ignored);
  tcase_add_test(tc, predicate_node_name_from_node_object);
  tcase_add_test(tc, predicate_malformed_400);
  tcase_add_test(tc, predicate_null_vs_empty_maps);
  tcase_add_test(tc, prioritize_scores_plan);
  tcase_add_test(tc, session_allocations_steer_prioritize);
  tcase_add_test(tc, allocate_malformed_400);
  tcase_add_test(tc, enqueueable_verdicts);
  tcase_add_test(tc, unknown_path_404);
  tcase_add_test(tc, prioritize_encode_scores_like_printf);
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
