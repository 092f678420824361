/* SPDX-License-Identifier: Apache-2.0
 *
 * The endpoints on the real plan and a live model (fed Nodes and Pods as
 * the informers would): a gang of two 8-GPU pods with a hard one-rack
 * policy on racks fragmented to 4 free GPUs is rejected by jobEnqueueable
 * with the evaluator's reason and a PodGroup event; after a node is added
 * it is permitted and its domain pinned; then, for every task and node,
 * predicate and filter pass exactly where gb_plan_node_allowed says,
 * prioritize scores exactly the nodes gb_plan_node_score plans pods on,
 * allocateFunc/deallocateFunc keep the session consistent, and the
 * kube-scheduler shapes give the same answers.  Issue 17: a new decision is
 * recorded before jobEnqueueable permits (a failing recorder gives the
 * reservation back and rejects); a pinned decision no pod used, whose rack
 * lost a node, is decided again and recorded again (defect 4).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_model.h"
#include "gb_model_test.h"
#include "gb_plan.h"
#include "gb_sched.h"
#include "gb_sched_test.h"
#include "gb_sched_plan.h"
#include "sched_fixture.h"

static struct gb_plan *P;
static struct gb_model *Mo;
static struct gb_sched_plan SP;
static struct gb_sched *S;
static int events, last_verdict;
static char last_reason[512];

/* The recorder: records what it was asked, fails while record_fail. */
static int recorded, record_fail;
static uint64_t recorded_prev;
static char recorded_key[128];

static int record(void *ctx, const char *ns, const char *name, const char *key, uint64_t prev_id,
                  char *reason, size_t size) {
  (void)ctx, (void)ns, (void)name;
  snprintf(recorded_key, sizeof(recorded_key), "%s", key);
  recorded_prev = prev_id;
  if (record_fail) {
    snprintf(reason, size, "cannot write the decision on PodGroup team-a/tj-big: injected");
    return GC_EIO;
  }
  /* Recorded before anything acts on it: the plan still holds it as new. */
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(P, key, &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  recorded++;
  return 0;
}

static void on_event(void *arg, const struct gb_sched_vjob *j, int verdict, const char *reason) {
  events++;
  last_verdict = verdict;
  snprintf(last_reason, sizeof(last_reason), "%s", reason);
}

static void feed(const char *kind, const char *json) {
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_model_feed(Mo, kind, 0, json, &d);
  ck_assert_msg(rc == 0, "feed %s: %s", kind, d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
}

static void add_node(const char *name, const char *rack) {
  char b[1024];
  snprintf(b, sizeof(b),
           "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"rack\":\"%s\"}},\"spec\":{},"
           "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\","
           "\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"}}}",
           name, rack);
  feed("Node", b);
}

/* A running pod of another job using 4 GPUs on node. */
static void add_filler(const char *name, const char *node) {
  char b[1024];
  snprintf(b, sizeof(b),
           "{\"metadata\":{\"namespace\":\"team-b\",\"name\":\"%s\",\"uid\":\"u-%s\","
           "\"resourceVersion\":\"1\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
           "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":"
           "{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"4\"}}}]},"
           "\"status\":{\"phase\":\"Running\"}}",
           name, name, node);
  feed("Pod", b);
}

static void setup(void) {
  static const char *const levels[] = {"rack"};
  struct gb_plan_opts po = {0};
  ck_assert_int_eq(gb_plan_new(&po, &P), 0);
  struct gb_model_opts mo = {.levels = levels, .n_levels = 1, .plan = P};
  ck_assert_int_eq(gb_model_new(&mo, &Mo, NULL), 0);
  SP.model = Mo;
  SP.plan = P;
  SP.record = record;
  recorded = record_fail = 0;
  struct gb_sched_source be;
  gb_sched_plan_source(&SP, &be);
  be.job_event = on_event;
  struct gb_sched_config cfg = {0};
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_sched_new(&cfg, &be, &S, &d), 0);
  gc_diags_destroy(&d);
  events = 0;
  /* Rack r1: two nodes with 4 of 8 GPUs taken; rack r2: one free node. */
  add_node("n1", "r1");
  add_node("n2", "r1");
  add_node("n3", "r2");
  add_filler("f1", "n1");
  add_filler("f2", "n2");
  ck_assert_int_eq(gb_model_feed_done(Mo), 0);
}

static void teardown(void) {
  gb_sched_free(S);
  gb_model_free(Mo);
  gb_plan_free(P);
}

struct answer {
  int status;
  char *body;
};

static struct answer post(const char *path, const char *body) {
  struct gb_http_response r = {200, NULL, 0, NULL};
  ck_assert_int_eq(gb_sched_handle(S, path, body, strlen(body), &r), 0);
  return (struct answer){r.status, r.body};
}

static void expect(const char *path, char *body, const char *want) {
  struct answer a = post(path, body);
  ck_assert_int_eq(a.status, 200);
  ck_assert_str_eq(a.body, want);
  free(a.body);
  free(body);
}

/* jobEnqueueable for tj-big: two tasks of 8 GPUs, hard, one rack. */
static char *job_with(const char *topology) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 24);
  gb_buf_printf(&b,
                "{\"job\":{\"UID\":\"team-a/tj-big\",\"Name\":\"tj-big\",\"Namespace\":"
                "\"team-a\",\"Queue\":\"default\",\"Priority\":0,\"MinAvailable\":2,"
                "\"NetworkTopology\":%s,\"Tasks\":{",
                topology);
  for (int i = 0; i < 2; i++) {
    char uid[16], name[32];
    snprintf(uid, sizeof(uid), "t%d", i);
    snprintf(name, sizeof(name), "tj-big-node-0-%d", i);
    gb_buf_printf(&b, "%s\"%s\":", i ? "," : "", uid);
    fx_task(&b, "team-a", name, uid, "team-a/tj-big", "tj-big", NULL);
  }
  gb_buf_addstr(&b, "},\"CreationTimestamp\":\"2026-08-20T10:00:00Z\",\"PodGroup\":{\"metadata\":"
                    "{\"name\":\"tj-big\",\"namespace\":\"team-a\",\"labels\":"
                    "{\"app.kubernetes.io/managed-by\":\"gangbridge\"}}}}}");
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  return out;
}

static char *task_req(const char *uid, const char *node_or_null, const char *verb_node) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 24);
  char name[32];
  snprintf(name, sizeof(name), "tj-big-node-0-%s", uid);
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", name, uid, "team-a/tj-big", "tj-big", node_or_null);
  if (verb_node) {
    gb_buf_addstr(&b, ",\"node\":");
    fx_node(&b, verb_node, 2);
  }
  gb_buf_addstr(&b, "}");
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  return out;
}

static char *job(void) { return job_with("{\"mode\":\"hard\",\"highestTierAllowed\":1}"); }

static const char *const NODES[] = {"n1", "n2", "n3", "n4"};

/* gb_plan_nodes_allowed against gb_plan_node_allowed: the same answer for
 * every node (the cluster's, unknown ones, one of 253 bytes) and gang
 * (pinned, unknown), and the refusal head + node + tail byte for byte. */
static void check_batch_agrees(void) {
  static char longname[254];
  memset(longname, 'z', 253);
  const char *nodes[] = {"n1", "n2", "n3", "n4", "n0", "team-b/x", "", longname};
  const char *keys[] = {"team-a/tj-big", "team-a/none", "x"};
  size_t n = sizeof(nodes) / sizeof(*nodes);
  for (size_t k = 0; k < 3; k++) {
    int8_t ans[8];
    struct gb_plan_why w = {"", ""};
    ck_assert_int_eq(gb_plan_nodes_allowed(P, keys[k], nodes, n, ans, &w), 0);
    for (size_t i = 0; i < n; i++) {
      char why[2048] = "", joined[2048];
      ck_assert_int_eq(ans[i], gb_plan_node_allowed(P, keys[k], nodes[i], why, sizeof(why)));
      snprintf(joined, sizeof(joined), "%s%s%s", w.head, nodes[i], w.tail);
      if (ans[i] == 0)
        ck_assert_str_eq(joined, why);
    }
  }
}

/* Predicate and filter against the plan, node by node, for both tasks. */
static void check_agreement(void) {
  check_batch_agrees();
  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < 4; i++) {
      char why[512], uid[8];
      snprintf(uid, sizeof(uid), "t%d", t);
      int ok = gb_plan_node_allowed(P, "team-a/tj-big", NODES[i], why, sizeof(why));
      ck_assert_int_ge(ok, 0);
      char *body = task_req(uid, NULL, NODES[i]);
      struct answer a = post("/volcano/predicate", body);
      ck_assert_int_eq(a.status, 200);
      if (ok) {
        ck_assert_str_eq(a.body, "{\"status\":\"\",\"code\":0}");
      } else {
        char want[1024];
        snprintf(want, sizeof(want), "{\"status\":\"gangbridge: %s\",\"code\":2}", why);
        ck_assert_str_eq(a.body, want);
      }
      free(a.body);
      free(body);
    }
}

START_TEST(enqueue_reject_then_permit_and_agree) {
  expect("/volcano/jobEnqueueable", job(), "{\"status\":-1}");
  ck_assert_int_eq(events, 1);
  ck_assert_int_eq(last_verdict, GB_VC_REJECT);
  ck_assert_msg(last_reason[0], "a reason is given");
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(P, "team-a/tj-big", &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_NOFIT);
  ck_assert_str_eq(last_reason, v.reason);
  /* Predicates while it waits: no placed decision, no opinion: pass. */
  expect("/volcano/predicate", task_req("t0", NULL, "n1"), "{\"status\":\"\",\"code\":0}");

  /* Capacity appears: a second free node in rack r2. */
  add_node("n4", "r2");
  expect("/volcano/jobEnqueueable", job(), "{\"status\":1}");
  ck_assert_int_eq(last_verdict, GB_VC_PERMIT);
  ck_assert_int_eq(gb_plan_get(P, "team-a/tj-big", &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert_str_eq(v.domain, "r2");
  /* Asked again (every session while Pending): the same answer, no new
   * decision. */
  expect("/volcano/jobEnqueueable", job(), "{\"status\":1}");
  check_agreement();
  ck_assert_int_eq(gb_plan_node_score(P, "team-a/tj-big", "n3"), 1);
  ck_assert_int_eq(gb_plan_node_score(P, "team-a/tj-big", "n4"), 1);

  /* Prioritize scores the plan's nodes; a session allocation steers the
   * second task to the other planned node. */
  struct gb_buf b;
  gb_buf_init(&b, 1u << 24);
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", "tj-big-node-0-1", "t1", "team-a/tj-big", "tj-big", NULL);
  gb_buf_addstr(&b, ",\"nodes\":[");
  for (size_t i = 0; i < 4; i++) {
    gb_buf_addstr(&b, i ? "," : "");
    fx_node(&b, NODES[i], 1);
  }
  gb_buf_addstr(&b, "]}");
  expect("/volcano/prioritize", strdup(gb_buf_ptr(&b)),
         "{\"nodeScore\":{\"n1\":0,\"n2\":0,\"n3\":100,\"n4\":100},\"errorMessage\":\"\"}");
  expect("/volcano/onSessionOpen", strdup(""), "{}");
  expect("/volcano/allocateFunc", task_req("t0", "n3", NULL), "{\"errorMessage\":\"\"}");
  expect("/volcano/prioritize", strdup(gb_buf_ptr(&b)),
         "{\"nodeScore\":{\"n1\":0,\"n2\":0,\"n3\":0,\"n4\":100},\"errorMessage\":\"\"}");
  char why[512], want[2048];
  ck_assert_int_eq(gb_plan_node_allowed(P, "team-a/tj-big", "n1", why, sizeof(why)), 0);
  snprintf(want, sizeof(want),
           "{\"errorMessage\":\"gangbridge: task team-a/tj-big-node-0-t1 on node n1: %s\"}", why);
  expect("/volcano/allocateFunc", task_req("t1", "n1", NULL), want);
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-big", "n1"), 0);
  expect("/volcano/allocateFunc", task_req("t1", "n4", NULL), "{\"errorMessage\":\"\"}");
  expect("/volcano/deallocateFunc", task_req("t0", "n3", NULL), "{\"errorMessage\":\"\"}");
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-big", "n3"), 0);
  ck_assert_int_eq(gb_sched_session_count(S, "team-a/tj-big", "n4"), 1);
  expect("/volcano/prioritize", strdup(gb_buf_ptr(&b)),
         "{\"nodeScore\":{\"n1\":0,\"n2\":0,\"n3\":100,\"n4\":0},\"errorMessage\":\"\"}");
  gb_buf_free(&b);

  /* The same through kube-scheduler's shapes. */
  gb_buf_init(&b, 1u << 24);
  gb_buf_addstr(&b, "{\"Pod\":");
  fx_pod(&b, "team-a", "tj-big-node-0-0", "t0", "tj-big", NULL);
  gb_buf_addstr(&b, ",\"NodeNames\":[\"n1\",\"n2\",\"n3\",\"n4\"]}");
  ck_assert_int_eq(gb_plan_node_allowed(P, "team-a/tj-big", "n1", why, sizeof(why)), 0);
  char why2[512];
  ck_assert_int_eq(gb_plan_node_allowed(P, "team-a/tj-big", "n2", why2, sizeof(why2)), 0);
  snprintf(want, sizeof(want),
           "{\"Nodes\":null,\"NodeNames\":[\"n3\",\"n4\"],\"FailedNodes\":{\"n1\":\"%s\","
           "\"n2\":\"%s\"},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}",
           why, why2);
  expect("/kube/filter", strdup(gb_buf_ptr(&b)), want);
  expect("/kube/prioritize", strdup(gb_buf_ptr(&b)),
         "[{\"Host\":\"n1\",\"Score\":0},{\"Host\":\"n2\",\"Score\":0},{\"Host\":\"n3\","
         "\"Score\":10},{\"Host\":\"n4\",\"Score\":0}]");
  gb_buf_free(&b);
}
END_TEST

START_TEST(enqueue_abstains_without_policy_or_snapshot) {
  /* No NetworkTopology and no default policy: not the plan's business. */
  expect("/volcano/jobEnqueueable", job_with("null"), "{\"status\":0}");
  ck_assert_int_eq(events, 0);
  /* A model that has not built its first snapshot: Abstain too. */
  struct gb_model *fresh = NULL;
  struct gb_model_opts mo = {.plan = P};
  ck_assert_int_eq(gb_model_new(&mo, &fresh, NULL), 0);
  struct gb_sched_plan sp = {fresh, P, NULL, NULL};
  struct gb_sched_source be;
  gb_sched_plan_source(&sp, &be);
  struct gb_sched *s2 = NULL;
  struct gb_sched_config cfg = {0};
  ck_assert_int_eq(gb_sched_new(&cfg, &be, &s2, NULL), 0);
  char *body = job();
  struct gb_http_response r = {200, NULL, 0, NULL};
  ck_assert_int_eq(gb_sched_handle(s2, "/volcano/jobEnqueueable", body, strlen(body), &r), 0);
  ck_assert_str_eq(r.body, "{\"status\":0}");
  free(r.body);
  free(body);
  gb_sched_free(s2);
  gb_model_free(fresh);
}
END_TEST

START_TEST(enqueue_records_before_permit) {
  add_node("n4", "r2"); /* r2 {n3, n4}: the gang fits there */
  record_fail = 1;
  expect("/volcano/jobEnqueueable", job(), "{\"status\":-1}");
  ck_assert_msg(strstr(last_reason, "cannot write the decision"), "%s", last_reason);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(P, "team-a/tj-big", &v), GC_ENOTFOUND); /* given back */
  ck_assert_int_eq(gb_plan_node_allowed(P, "team-a/tj-big", "n3", NULL, 0), -1);
  record_fail = 0;
  expect("/volcano/jobEnqueueable", job(), "{\"status\":1}");
  ck_assert_int_eq(recorded, 1);
  ck_assert_str_eq(recorded_key, "team-a/tj-big");
  ck_assert_uint_eq(recorded_prev, 0);
  ck_assert_int_eq(gb_plan_get(P, "team-a/tj-big", &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  /* Asked again: permitted, nothing new to record. */
  expect("/volcano/jobEnqueueable", job(), "{\"status\":1}");
  ck_assert_int_eq(recorded, 1);
}
END_TEST

/* Defect 4: pinned to r2 with no pod released, n3 is deleted; r1 frees
 * up: the next jobEnqueueable decides the gang again (into r1), records
 * the new decision replacing the old one, and the predicates follow. */
START_TEST(enqueue_redecides_unused_pin) {
  add_node("n4", "r2");
  expect("/volcano/jobEnqueueable", job(), "{\"status\":1}");
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(P, "team-a/tj-big", &v), 0);
  uint64_t first = v.id;
  ck_assert_str_eq(v.domain, "r2");
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_model_feed(Mo, "Node", 1, "{\"metadata\":{\"name\":\"n3\"}}", &d), 0);
  ck_assert_int_eq(
      gb_model_feed(Mo, "Pod", 1, "{\"metadata\":{\"namespace\":\"team-b\",\"name\":\"f1\"}}", &d),
      0);
  ck_assert_int_eq(
      gb_model_feed(Mo, "Pod", 1, "{\"metadata\":{\"namespace\":\"team-b\",\"name\":\"f2\"}}", &d),
      0);
  gc_diags_destroy(&d);
  expect("/volcano/jobEnqueueable", job(), "{\"status\":1}");
  ck_assert_int_eq(recorded, 2);
  ck_assert_uint_eq(recorded_prev, first);
  ck_assert_int_eq(gb_plan_get(P, "team-a/tj-big", &v), 0);
  ck_assert_str_eq(v.domain, "r1");
  ck_assert_int_eq(gb_plan_node_allowed(P, "team-a/tj-big", "n4", NULL, 0), 0);
  expect("/volcano/predicate", task_req("t0", NULL, "n1"), "{\"status\":\"\",\"code\":0}");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_plan");
  TCase *tc = tcase_create("plan");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, enqueue_reject_then_permit_and_agree);
  tcase_add_test(tc, enqueue_abstains_without_policy_or_snapshot);
  tcase_add_test(tc, enqueue_records_before_permit);
  tcase_add_test(tc, enqueue_redecides_unused_pin);
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
