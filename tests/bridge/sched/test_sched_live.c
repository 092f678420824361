/* SPDX-License-Identifier: Apache-2.0
 *
 * test_sched_live: the scheduler endpoints end to end on the stand-in API
 * server (tests/apiserver/run) with the live model (informers) and the
 * plan, over HTTP on an ephemeral port.  A gang of two 8-GPU pods with a
 * hard one-rack policy, on racks fragmented to 4 free GPUs, is rejected by
 * jobEnqueueable with the evaluator's reason; a Node created in the
 * stand-in reaches the model and the gang is permitted; then predicate and
 * filter pass exactly on the plan's domain for every task and node,
 * prioritize scores the planned nodes, and allocate/deallocate keep the
 * session consistent.  Waits poll with a generous bound and never assert a
 * duration.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../http/http_client.h"
#include "gb_kube_client.h"
#include "gb_kube_config.h"
#include "gb_standin.h"
#include "gb_model.h"
#include "gb_plan.h"
#include "gb_sched.h"
#include "gb_sched_plan.h"
#include "gb_testhttp.h"
#include "sched_fixture.h"

static struct gb_standin standin;
static struct gb_kube_client *cli;

static void start_server(void) {
  ck_assert_int_eq(gb_standin_start(&standin), 0);
  cli = standin.cli;
}

static void stop_server(void) { gb_standin_stop(&standin); }

static void kube(int create, const char *path, const char *json) {
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  json_object *o = json_tokener_parse(json);
  ck_assert_ptr_nonnull(o);
  int rc = create ? gb_kube_client_create(cli, path, o, NULL, &e)
                  : gb_kube_client_merge_patch(cli, path, o, NULL, &e);
  ck_assert_msg(rc == 0, "%s: %s (%ld %s)", path, gc_diag_strerror(rc), e.http, e.message);
  json_object_put(o);
}

static void add_node(const char *name, const char *rack) {
  char b[512], path[128];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":"
           "{\"rack\":\"%s\"}}}",
           name, rack);
  kube(1, "/api/v1/nodes", b);
  snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", name);
  kube(0, path,
       "{\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":"
       "\"8\",\"pods\":\"110\"}}}");
}

static void add_filler(const char *name, const char *node) {
  char b[1024];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},\"spec\":"
           "{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":"
           "{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"4\"}}}]}}",
           name, node);
  kube(1, "/api/v1/namespaces/team-b/pods", b);
}

struct seen {
  const char *node;
  int found;
};

static int read_node(void *arg, struct tp_snapshot *s, uint64_t gen) {
  struct seen *q = arg;
  q->found = tp_snapshot_node(s, q->node) >= 0;
  return 0;
}

/* Polls (up to 30 s) until the model's snapshot has node. */
static void wait_node(struct gb_model *m, const char *node) {
  struct seen q = {node, 0};
  for (int i = 0; i < 600; i++) {
    if (gb_model_with_snapshot(m, read_node, &q) == 0 && q.found)
      return;
    usleep(50000);
  }
  ck_abort_msg("the model never saw node %s", node);
}

static char base[64];

static char *post(const char *path, const char *body, long want_status) {
  char url[128];
  snprintf(url, sizeof(url), "%s%s", base, path);
  struct hres r;
  hreq("POST", url, body, &r);
  ck_assert_msg(r.status == want_status, "%s: %ld %s", path, r.status, r.body ? r.body : "");
  char *out = r.body ? strdup(r.body) : strdup("");
  hres_free(&r);
  return out;
}

static void expect(const char *path, char *body, const char *want) {
  char *got = post(path, body, 200);
  ck_assert_str_eq(got, want);
  free(got);
  free(body);
}

static char *job(void) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 24);
  gb_buf_addstr(&b, "{\"job\":{\"UID\":\"team-a/tj-big\",\"Name\":\"tj-big\",\"Namespace\":"
                    "\"team-a\",\"MinAvailable\":2,\"NetworkTopology\":{\"mode\":\"hard\","
                    "\"highestTierAllowed\":1},\"Tasks\":{");
  for (int i = 0; i < 2; i++) {
    char uid[8], name[32];
    snprintf(uid, sizeof(uid), "t%d", i);
    snprintf(name, sizeof(name), "tj-big-node-0-%d", i);
    gb_buf_printf(&b, "%s\"%s\":", i ? "," : "", uid);
    fx_task(&b, "team-a", name, uid, "team-a/tj-big", "tj-big", NULL);
  }
  gb_buf_addstr(&b, "},\"PodGroup\":{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":"
                    "\"gangbridge\"}}}}}");
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  return out;
}

static char *task_req(const char *uid, const char *alloc_node, const char *pred_node) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 24);
  char name[32];
  snprintf(name, sizeof(name), "tj-big-node-0-%s", uid);
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", name, uid, "team-a/tj-big", "tj-big", alloc_node);
  if (pred_node) {
    gb_buf_addstr(&b, ",\"node\":");
    fx_node(&b, pred_node, 30);
  }
  gb_buf_addstr(&b, "}");
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  return out;
}

static const char *const NODES[] = {"n1", "n2", "n3", "n4"};

START_TEST(reject_then_permit_on_the_stand_in) {
  start_server();
  add_node("n1", "r1");
  add_node("n2", "r1");
  add_node("n3", "r2");
  kube(1, "/api/v1/namespaces",
       "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-b\"}}");
  add_filler("f1", "n1");
  add_filler("f2", "n2");
  static const char *const levels[] = {"rack"};
  struct gb_plan *plan = NULL;
  struct gb_plan_opts po = {0};
  ck_assert_int_eq(gb_plan_new(&po, &plan), 0);
  struct gb_informers *f = NULL;
  ck_assert_int_eq(gb_informers_new(cli, NULL, &f), 0);
  struct gb_model_opts mo = {
      .client = cli, .informers = f, .levels = levels, .n_levels = 1, .plan = plan};
  struct gb_model *m = NULL;
  ck_assert_int_eq(gb_model_new(&mo, &m, NULL), 0);
  ck_assert_int_eq(gb_informers_start(f), 0);
  ck_assert_int_eq(gb_model_start(m), 0);
  wait_node(m, "n3");
  struct gb_sched_plan sp = {m, plan, NULL, NULL};
  struct gb_sched_source be;
  gb_sched_plan_source(&sp, &be);
  struct gb_sched *s = NULL;
  struct gb_sched_config cfg = {0};
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_sched_new(&cfg, &be, &s, &d), 0);
  struct gb_http_config h;
  gb_http_config_init(&h);
  h.address = "127.0.0.1";
  ck_assert_int_eq(gb_sched_start(s, &h, &d), 0);
  gc_diags_destroy(&d);
  snprintf(base, sizeof(base), "http://127.0.0.1:%u", gb_sched_port(s));

  expect("/volcano/jobEnqueueable", job(), "{\"status\":-1}");
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(plan, "team-a/tj-big", &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_NOFIT);
  ck_assert_msg(v.reason[0], "a NOFIT decision has a reason");

  add_node("n4", "r2");
  wait_node(m, "n4");
  /* The node's allocatable arrives by a second event: ask until the gang
   * fits (each generation is decided once). */
  char *got = NULL;
  for (int i = 0; i < 600; i++) {
    free(got);
    char *body = job();
    got = post("/volcano/jobEnqueueable", body, 200);
    free(body);
    if (!strcmp(got, "{\"status\":1}"))
      break;
    usleep(50000);
  }
  ck_assert_str_eq(got, "{\"status\":1}");
  free(got);
  ck_assert_int_eq(gb_plan_get(plan, "team-a/tj-big", &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert_str_eq(v.domain, "r2");

  for (int t = 0; t < 2; t++)
    for (size_t i = 0; i < 4; i++) {
      char why[512], uid[8], want[1024];
      snprintf(uid, sizeof(uid), "t%d", t);
      int ok = gb_plan_node_allowed(plan, "team-a/tj-big", NODES[i], why, sizeof(why));
      ck_assert_int_eq(ok, i >= 2);
      if (ok)
        snprintf(want, sizeof(want), "{\"status\":\"\",\"code\":0}");
      else
        snprintf(want, sizeof(want), "{\"status\":\"gangbridge: %s\",\"code\":2}", why);
      expect("/volcano/predicate", task_req(uid, NULL, NODES[i]), want);
    }
  expect("/volcano/onSessionOpen", strdup("{\"Jobs\":{},\"Nodes\":{}}"), "{}");
  expect("/volcano/allocateFunc", task_req("t0", "n3", NULL), "{\"errorMessage\":\"\"}");
  char *req = task_req("t1", "n2", NULL);
  char *r = post("/volcano/allocateFunc", req, 200);
  free(req);
  ck_assert_msg(strstr(r, "\"errorMessage\":\"gangbridge: task team-a/tj-big-node-0-t1 on node n2"),
                "%s", r);
  free(r);
  expect("/volcano/deallocateFunc", task_req("t0", "n3", NULL), "{\"errorMessage\":\"\"}");
  expect("/volcano/onSessionClose", strdup("{}"), "{}");
  expect("/kube/filter",
         strdup("{\"Pod\":{\"metadata\":{\"namespace\":\"team-a\",\"labels\":{"
                "\"jobset.sigs.k8s.io/jobset-name\":\"tj-big\"}}},\"NodeNames\":[\"n3\",\"n4\"]}"),
         "{\"Nodes\":null,\"NodeNames\":[\"n3\",\"n4\"],\"FailedNodes\":{},"
         "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  expect("/kube/prioritize",
         strdup("{\"Pod\":{\"metadata\":{\"namespace\":\"team-a\",\"labels\":{"
                "\"jobset.sigs.k8s.io/jobset-name\":\"tj-big\"}}},\"NodeNames\":[\"n1\",\"n3\","
                "\"n4\"]}"),
         "[{\"Host\":\"n1\",\"Score\":0},{\"Host\":\"n3\",\"Score\":10},{\"Host\":\"n4\","
         "\"Score\":10}]");

  gb_sched_free(s);
  gb_model_stop(m);
  gb_informers_stop(f);
  gb_model_free(m);
  gb_informers_free(f);
  gb_plan_free(plan);
  stop_server();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_live");
  TCase *tc = tcase_create("live");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, reject_then_permit_on_the_stand_in);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return gb_testhttp_main(suite(), GB_LOG_ERROR); }
