/* SPDX-License-Identifier: Apache-2.0
 *
 * The scheduler endpoints with a leadership predicate (issue 17, defect 3):
 * while the replica leads, every verb answers from the decision source as without
 * one; as a standby, every verb of both protocols answers 503 with the
 * standby message, never consults the decision source (no decision, no Event, no
 * session overlay change), and is counted with code 503 and decision
 * "standby".  Leadership read at each request: a standby that becomes the
 * leader answers at once, and a leader that steps down stops at once; a
 * leader still reading decisions back answers 503 saying so.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_metrics.h"
#include "gb_sched.h"
#include "gb_sched_test.h"
#include "sched_fixture.h"

static struct fx_source fb;
static struct gb_sched *S;
static struct gb_metrics *M;
static int leading;

static int is_leader(void *ctx) { return *(int *)ctx; }

static void setup(void) {
  memset(&fb, 0, sizeof(fb));
  struct gb_sched_source be = fx_source_of(&fb);
  struct gb_sched_config cfg = {0};
  M = gb_metrics_new();
  cfg.metrics = M;
  cfg.is_leader = is_leader;
  cfg.leader_ctx = &leading;
  leading = 0;
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

static double series(const char *name, const char *labels) {
  char *text = NULL, want[256];
  size_t len;
  ck_assert_int_eq(gb_metrics_render(M, &text, &len), 0);
  snprintf(want, sizeof(want), "%s{%s} ", name, labels);
  const char *at = strstr(text, want);
  double v = at ? strtod(at + strlen(want), NULL) : 0;
  free(text);
  return v;
}

static char *job_body(const char *jobset) {
  char *b = malloc(512);
  ck_assert_ptr_nonnull(b);
  /* The smallest JobInfo gangbridge takes for its own PodGroup. */
  snprintf(b, 512,
           "{\"job\":{\"Name\":\"%s\",\"Namespace\":\"team-a\",\"MinAvailable\":1,"
           "\"PodGroup\":{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":"
           "\"gangbridge\"}}},\"Tasks\":{}}}",
           jobset);
  return b;
}

START_TEST(standby_answers_503_on_every_verb) {
  char *pred = fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", 1);
  char *job = job_body("tj-big");
  const char *kube = "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"team-a\",\"labels\":"
                     "{\"jobset.sigs.k8s.io/jobset-name\":\"tj-llama\"}}},\"Nodes\":null,"
                     "\"NodeNames\":[\"gpu-node-3\"]}";
  const struct {
    const char *path, *body;
  } calls[] = {
      {"/volcano/onSessionOpen", "{}"}, {"/volcano/onSessionClose", "{}"},
      {"/volcano/predicate", pred},     {"/volcano/prioritize", "{}"},
      {"/volcano/allocateFunc", "{}"},  {"/volcano/deallocateFunc", "{}"},
      {"/volcano/jobEnqueueable", job}, {"/kube/filter", kube},
      {"/kube/prioritize", kube},
  };
  for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
    struct answer a = post(calls[i].path, calls[i].body);
    ck_assert_msg(a.status == 503, "%s answered %d", calls[i].path, a.status);
    ck_assert_str_eq(a.body, GB_SCHED_STANDBY_MSG);
    free(a.body);
  }
  /* Nothing reached the plan: no verdict, no Event, no session. */
  ck_assert_int_eq(fb.events, 0);
  ck_assert_str_eq(fb.last_job.key, "");
  struct gb_sched_stats st;
  gb_sched_stats(S, &st);
  ck_assert_uint_eq(st.sessions, 0);
  ck_assert(series("gangbridge_sched_requests_total",
                   "protocol=\"volcano\",verb=\"predicate\",code=\"503\"") == 1);
  ck_assert(series("gangbridge_sched_decisions_total",
                   "protocol=\"kube\",verb=\"filter\",decision=\"standby\"") == 1);
  free(pred);
  free(job);
}
END_TEST

START_TEST(leadership_read_per_request) {
  char *pred = fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", 1);
  struct answer a = post("/volcano/predicate", pred);
  ck_assert_int_eq(a.status, 503);
  free(a.body);
  leading = 1; /* took over */
  a = post("/volcano/predicate", pred);
  ck_assert_int_eq(a.status, 200);
  ck_assert_str_eq(a.body, "{\"status\":\"gangbridge: node gpu-node-3 is not in domain leaf-1 "
                           "chosen for team-a/tj-llama\",\"code\":2}");
  free(a.body);
  char *job = job_body("tj-big");
  a = post("/volcano/jobEnqueueable", job);
  ck_assert_int_eq(a.status, 200);
  ck_assert_str_eq(a.body, "{\"status\":-1}");
  free(a.body);
  ck_assert_int_eq(fb.events, 1);
  leading = 0; /* stepped down: the very next call is refused */
  a = post("/volcano/jobEnqueueable", job);
  ck_assert_int_eq(a.status, 503);
  ck_assert_str_eq(a.body, GB_SCHED_STANDBY_MSG);
  free(a.body);
  ck_assert_int_eq(fb.events, 1);
  leading = -1; /* leads again, the plan not read back yet */
  a = post("/kube/filter", "{\"Pod\":null,\"Nodes\":null,\"NodeNames\":[\"n\"]}");
  ck_assert_int_eq(a.status, 503);
  ck_assert_str_eq(a.body, GB_SCHED_CATCHING_UP_MSG);
  free(a.body);
  ck_assert(series("gangbridge_sched_decisions_total",
                   "protocol=\"kube\",verb=\"filter\",decision=\"catching_up\"") == 1);
  free(pred);
  free(job);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_leader");
  TCase *tc = tcase_create("leader");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, standby_answers_503_on_every_verb);
  tcase_add_test(tc, leadership_read_per_request);
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
