/* SPDX-License-Identifier: Apache-2.0
 *
 * test_placer: the placement controller's passes, on a model fed by the
 * test (label levels block/rack) and a plan, releasing real pods on the
 * stand-in API server (tests/apiserver/run, which enforces the gated-pod
 * update rules): a gang waits until every counted pod exists and is gated,
 * is then released (gate removed, `rack In [r1]` added) and answers the
 * webhook with its restriction; a second gang that the first one's
 * reservation leaves no room for stays gated as NOFIT with the evaluator's
 * reason and is released once a node is added; a standby decides and
 * releases nothing until it leads; the status document and metrics say so.
 * Issue 17: the decision is recorded on the gang's PodGroup before any pod
 * is released; a new process finishes a partly released gang in the
 * recorded rack (never splitting it); a pod whose every PATCH fails keeps
 * the gang's reservation, counts in the error metric and is released once
 * the fault clears; a suspended TrainJob's pods are never released and
 * hold nothing; a gang whose domain holds another gang's reservation is
 * restricted to the nodes the plan counted for it.
 * Passes run on the test's thread (gb_placer_run_once): nothing is timed.
 */
#include <check.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gb_decision.h"
#include "gb_informer_test.h"
#include "gb_informers.h"
#include "gb_informers_test.h"
#include "gb_kube_client.h"
#include "gb_kube_client_test.h"
#include "gb_kube_watch.h"
#include "gb_kube_config.h"
#include "gb_standin.h"
#include "gb_manifest.h"
#include "gb_model.h"
#include "gb_model_test.h"
#include "gb_placer.h"
#include "gb_placer_test.h"
#include "gb_plan.h"
#include "gb_test.h"

static struct gb_standin standin;
static struct gb_kube_client *cli;

/* Starts the stand-in and a client for it.  Runs outside any test (in
 * main), so gb_standin reports failures itself instead of with ck_assert. */
static int start_server(void) {
  int rc = gb_standin_start(&standin);
  cli = standin.cli;
  if (!rc)
    rc = gb_standin_install_crd(cli, "volcano/scheduling.volcano.sh_podgroups.yaml");
  if (!rc)
    rc = gb_standin_install_crd(cli, "trainer/trainer.kubeflow.org_trainjobs.yaml");
  return rc;
}

static void stop_server(void) { gb_standin_stop(&standin); }

/* The gang of every TrainJob: 2 pods of replicated job "node", 8 cpu each,
 * required in one rack (tier 1). */
static const char GANG_YAML[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainingRuntime\n"
    "metadata: {name: torch, namespace: ns1}\n"
    "spec:\n"
    "  mlPolicy: {numNodes: 2, torch: {}}\n"
    "  podGroupPolicy: {volcano: {networkTopology: {mode: hard, highestTierAllowed: 1}}}\n"
    "  template:\n"
    "    spec:\n"
    "      replicatedJobs:\n"
    "      - name: node\n"
    "        template:\n"
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
    "          spec: {template: {spec: {containers: [{name: node, image: p, resources: "
    "{requests: {cpu: 8}}}]}}}\n"
    "---\n"
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainJob\n"
    "metadata: {name: job, namespace: ns1, uid: 11111111-2222-4333-8444-555555555555}\n"
    "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}}\n";

/* The gang of a TrainJob named blk*: 3 pods of 8 cpu in one block (tier 2). */
static const char BLOCK_YAML[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainingRuntime\n"
    "metadata: {name: torch, namespace: ns1}\n"
    "spec:\n"
    "  mlPolicy: {numNodes: 3, torch: {}}\n"
    "  podGroupPolicy: {volcano: {networkTopology: {mode: hard, highestTierAllowed: 2}}}\n"
    "  template:\n"
    "    spec:\n"
    "      replicatedJobs:\n"
    "      - name: node\n"
    "        template:\n"
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
    "          spec: {template: {spec: {containers: [{name: node, image: p, resources: "
    "{requests: {cpu: 8}}}]}}}\n"
    "---\n"
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainJob\n"
    "metadata: {name: job, namespace: ns1, uid: 11111111-2222-4333-8444-555555555555}\n"
    "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}}\n";

static int suspended; /* gang_fn: every TrainJob is suspended */

/* The uids of the TrainJobs made on the stand-in, by "ns/name". */
static char uids[32][2][128];
static int n_uids;

static char *uid_of(const char *ns, const char *name, int create) {
  char key[128];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  for (int i = 0; i < n_uids; i++)
    if (!strcmp(uids[i][0], key))
      return uids[i][1];
  if (!create || n_uids == 32)
    return NULL;
  snprintf(uids[n_uids][0], sizeof(uids[0][0]), "%s", key);
  return uids[n_uids++][1];
}

static int gang_fn(void *ctx, const char *ns, const char *name, struct gc_gang **out, char *reason,
                   size_t reason_size) {
  (void)ctx, (void)reason, (void)reason_size;
  *out = NULL;
  if (strncmp(ns, "ns", 2))
    return 0; /* not ours */
  struct gb_test_run r;
  gb_test_run(&r, strncmp(name, "blk", 3) ? GANG_YAML : BLOCK_YAML, NULL, NULL);
  ck_assert_ptr_nonnull(r.g);
  r.g->suspended = suspended;
  /* Every JobSet of ns1 is a TrainJob of this shape. */
  r.g->name = gc_arena_strdup(r.g->arena, name);
  const char *uid = uid_of(ns, name, 0);
  if (uid)
    r.g->uid = gc_arena_strdup(r.g->arena, uid);
  *out = r.g;
  r.g = NULL;
  gb_test_run_free(&r);
  return 0;
}

static int leading = 1;
static int is_leader(void *ctx) {
  (void)ctx;
  return leading;
}

static void feed(struct gb_model *m, const char *kind, const char *json) {
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_model_feed(m, kind, 0, json, &d);
  ck_assert_msg(rc == 0, "feed %s: %s: %s", kind, gc_diag_strerror(rc), d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
}

static void node(struct gb_model *m, const char *name, const char *block, const char *rack) {
  char b[512];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":"
           "{\"block\":\"%s\",\"rack\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":\"8\","
           "\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
           name, block, rack);
  feed(m, "Node", b);
}

/* Creates gated pod name of JobSet js on the stand-in and feeds what the
 * server stored to the model, as the informer would. */
static void gated_pod(struct gb_model *m, const char *ns, const char *js, const char *name) {
  char b[1024];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
           "\"%s\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"%s\","
           "\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\"}},\"spec\":{\"schedulingGates\":"
           "[{\"name\":\"gangbridge.io/placement\"}],\"containers\":[{\"name\":\"c\",\"image\":"
           "\"i\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]}}",
           name, ns, js);
  char coll[128];
  snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/pods", ns);
  json_object *o = json_tokener_parse(b), *stored = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = gb_kube_client_create(cli, coll, o, &stored, &e);
  ck_assert_msg(rc == 0, "create %s: %s", name, e.message);
  feed(m, "Pod", json_object_to_json_string(stored));
  json_object_put(o);
  json_object_put(stored);
}

/* The stand-in's pod: whether it is gated, and its affinity as JSON text. */
static const char *cur_ns = "ns1";

static int pod_gated(const char *name, char *affinity, size_t cap) {
  char path[256];
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", cur_ns, name);
  json_object *pod = NULL, *spec = NULL, *gates = NULL, *aff = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(cli, path, &pod, &e), 0);
  json_object_object_get_ex(pod, "spec", &spec);
  int gated = json_object_object_get_ex(spec, "schedulingGates", &gates) &&
              json_object_array_length(gates) > 0;
  snprintf(affinity, cap, "%s",
           json_object_object_get_ex(spec, "affinity", &aff)
               ? json_object_to_json_string_ext(aff, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE)
               : "");
  json_object_put(pod);
  return gated;
}

static const char *key(const char *job) {
  static char buf[64];
  snprintf(buf, sizeof(buf), "%s/%s", cur_ns, job);
  return buf;
}

static json_object *status(struct gb_placer *p, const char *gang) {
  struct gb_buf b;
  gb_buf_init(&b, 1 << 20);
  ck_assert_int_eq(gb_placer_status_json(p, &b), 0);
  json_object *doc = json_tokener_parse(gb_buf_ptr(&b)), *gangs = NULL, *found = NULL;
  gb_buf_free(&b);
  ck_assert(json_object_object_get_ex(doc, "gangs", &gangs));
  for (size_t i = 0; i < json_object_array_length(gangs); i++) {
    json_object *g = json_object_array_get_idx(gangs, i), *k = NULL;
    if (json_object_object_get_ex(g, "gang", &k) && !strcmp(json_object_get_string(k), gang))
      found = json_object_get(g);
  }
  json_object_put(doc);
  ck_assert_msg(found != NULL, "gang %s not in the status", gang);
  return found;
}

static const char *field(json_object *o, const char *k) {
  json_object *v = NULL;
  ck_assert(json_object_object_get_ex(o, k, &v));
  return json_object_get_string(v);
}

struct fx {
  struct gb_plan *plan;
  struct gb_model *model;
  struct gb_placer *placer;
  struct gb_metrics *reg;
  struct gb_informers *infs;     /* with_informers: the model's pods come from its cache */
  struct gb_kube_client *writer; /* with_informers: the release client */
};

static int with_informers; /* fx_process: a model on a (not started) informer factory */

static int64_t release_timeout_ms; /* 0: the default */

/* A new process: plan, model (nodes n1, n2 in b1/r1, n3 in b2/r2, plus
 * extra ones) and placer.  Decisions are read back from the stand-in. */
static int record_gangs_fn(void *ctx, const char *key,
                           int (*fn)(void *arg, const char *ns, const char *name), void *arg);
static int scan_records; /* fx_process: the placer finds gangs by their records */

static void fx_process(struct fx *f, int extra_nodes) {
  memset(f, 0, sizeof(*f));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_plan_new(NULL, &f->plan), 0);
  static const char *levels[] = {"block", "rack"};
  if (with_informers) {
    ck_assert_int_eq(gb_informers_new(cli, NULL, &f->infs), 0);
    ck_assert_int_eq(gb_kube_client_new(standin.cfg, NULL, &f->writer, &d), 0);
  }
  struct gb_model_opts mo = {
      .levels = levels, .n_levels = 2, .plan = f->plan, .informers = f->infs};
  ck_assert_int_eq(gb_model_new(&mo, &f->model, &d), 0);
  f->reg = gb_metrics_new();
  struct gb_placer_opts po = {.model = f->model,
                              .plan = f->plan,
                              .client = cli,
                              .release_client = f->writer,
                              .gang = gang_fn,
                              .is_leader = is_leader,
                              .label_levels = 1,
                              .release_timeout_ms = release_timeout_ms,
                              .reg = f->reg,
                              .record_gangs = scan_records ? record_gangs_fn : NULL};
  ck_assert_int_eq(gb_placer_new(&po, &f->placer, &d), 0);
  gc_diags_destroy(&d);
  node(f->model, "n1", "b1", "r1");
  node(f->model, "n2", "b1", "r1");
  node(f->model, "n3", "b2", "r2");
  if (extra_nodes) { /* b1 gets r1's n5, rack r5 {n6} and rack r6 {n7} */
    node(f->model, "n5", "b1", "r1");
    node(f->model, "n6", "b1", "r5");
    node(f->model, "n7", "b1", "r6");
  }
  ck_assert_int_eq(gb_model_feed_done(f->model), 0);
}

/* The namespace, the TrainJobs job, job2 and blk and gangbridge's
 * PodGroups of them (where the decisions are recorded), then a process. */
static void fx_init(struct fx *f) {
  char b[160];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", cur_ns);
  json_object *o = json_tokener_parse(b);
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_create(cli, "/api/v1/namespaces", o, NULL, &e), 0);
  json_object_put(o);
  static const char *jobs[] = {"job", "job2", "blk"};
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(gb_standin_podgroup(cli, cur_ns, jobs[i], uid_of(cur_ns, jobs[i], 1), 64), 0);
  fx_process(f, 0);
}

static void fx_free(struct fx *f) {
  gb_placer_free(f->placer);
  gb_model_free(f->model);
  gb_informers_free(f->infs);
  gb_kube_client_free(f->writer);
  gb_plan_free(f->plan);
  gb_metrics_free(f->reg);
}

START_TEST(test_release_and_nofit) {
  struct fx f;
  fx_init(&f);
  char aff[2048];
  /* One of two counted pods: the gang waits for the other. */
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  json_object *g = status(f.placer, key("job"));
  ck_assert_str_eq(field(g, "state"), "waiting-pods");
  json_object_put(g);
  ck_assert(pod_gated("job-node-0-0", aff, sizeof(aff)));
  /* The webhook gates the second pod: the gang has a policy. */
  int gate = 0;
  struct gb_restriction r;
  memset(&r, 0, sizeof(r));
  char why[128];
  ck_assert_int_eq(
      gb_placer_webhook_lookup(f.placer, cur_ns, "job", "node", &gate, &r, why, sizeof(why)), 0);
  ck_assert_int_eq(gate, 1);

  /* Both exist and are gated: released into rack r1, the only rack with two free nodes. */
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  for (int i = 0; i < 2; i++) {
    ck_assert(!pod_gated(i ? "job-node-0-1" : "job-node-0-0", aff, sizeof(aff)));
    ck_assert_msg(strstr(aff, "{\"key\":\"rack\",\"operator\":\"In\",\"values\":[\"r1\"]}"),
                  "affinity: %s", aff);
  }
  g = status(f.placer, key("job"));
  ck_assert_str_eq(field(g, "state"), "released");
  ck_assert_str_eq(field(g, "domain"), "b1/r1");
  json_object_put(g);
  /* A later-wave pod created now gets the restriction, no gate. */
  ck_assert_int_eq(
      gb_placer_webhook_lookup(f.placer, cur_ns, "job", "launcher", &gate, &r, why, sizeof(why)),
      0);
  ck_assert_int_eq(gate, 0);
  ck_assert_int_eq(r.kind, GB_RESTRICT_LABEL);
  ck_assert_str_eq(r.values[0], "r1");

  /* A second gang: rack r1 is reserved for the first (its pods are not bound
   * yet) and r2 has one node: it fits nowhere and stays gated, with the reason. */
  gated_pod(f.model, cur_ns, "job2", "job2-node-0-0");
  gated_pod(f.model, cur_ns, "job2", "job2-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job2");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  g = status(f.placer, key("job2"));
  ck_assert_str_eq(field(g, "outcome"), "nofit");
  ck_assert_str_eq(field(g, "state"), "gated");
  ck_assert_msg(strlen(field(g, "reason")) > 0, "no reason");
  json_object_put(g);
  ck_assert(pod_gated("job2-node-0-0", aff, sizeof(aff)));
  ck_assert(pod_gated("job2-node-0-1", aff, sizeof(aff)));

  /* A node joins rack r2: capacity grew, the gang is re-decided and released there. */
  node(f.model, "n4", "b2", "r2");
  gb_placer_on_capacity(f.placer);
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job2-node-0-0", aff, sizeof(aff)));
  ck_assert_msg(strstr(aff, "\"values\":[\"r2\"]"), "affinity: %s", aff);
  char *text = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_metrics_render(f.reg, &text, &len), 0);
  ck_assert_msg(strstr(text, "gangbridge_placement_decisions_total{outcome=\"nofit\"} 1"), "%s",
                text);
  ck_assert_msg(strstr(text, "gangbridge_placement_decisions_total{outcome=\"placed\"} 2"), "%s",
                text);
  free(text);
  fx_free(&f);
}
END_TEST

START_TEST(test_standby_waits) {
  struct fx f;
  cur_ns = "ns2";
  fx_init(&f);
  char aff[2048];
  leading = 0;
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  /* A standby neither decides nor releases; the gang shows as gated. */
  ck_assert(pod_gated("job-node-0-0", aff, sizeof(aff)));
  json_object *g = status(f.placer, key("job"));
  ck_assert_str_eq(field(g, "state"), "gated");
  ck_assert_str_eq(field(g, "outcome"), "none");
  json_object_put(g);
  /* Becoming the leader: the resync picks the gated gang up. */
  leading = 1;
  gb_placer_resync(f.placer);
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-0", aff, sizeof(aff)));
  ck_assert(!pod_gated("job-node-0-1", aff, sizeof(aff)));
  fx_free(&f);
}
END_TEST

/* A released gang whose pods stay unschedulable past the release timeout is
 * reported as raced: an Event on the TrainJob and the metric. */
START_TEST(test_raced) {
  struct fx f;
  cur_ns = "ns3";
  leading = 1;
  release_timeout_ms = 1;
  fx_init(&f);
  char aff[2048];
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-0", aff, sizeof(aff)));
  /* The scheduler could not place them (the cluster changed): PodScheduled=False. */
  for (int i = 0; i < 2; i++) {
    char b[1024];
    snprintf(
        b, sizeof(b),
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"job-node-0-%d\","
        "\"namespace\":\"ns3\",\"uid\":\"u%d\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":"
        "\"job\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\"}},\"spec\":{\"containers\":"
        "[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"requests\":{\"cpu\":\"8\"}}}]},"
        "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
        "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes\"}]}}",
        i, i);
    feed(f.model, "Pod", b);
  }
  /* Past the (1 ms) release timeout: wait a little on purpose, nothing is timed. */
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  json_object *g = status(f.placer, key("job"));
  json_object *raced = NULL;
  ck_assert(json_object_object_get_ex(g, "raced", &raced));
  ck_assert(json_object_get_boolean(raced));
  json_object_put(g);
  char *text = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_metrics_render(f.reg, &text, &len), 0);
  ck_assert_msg(strstr(text, "gangbridge_placement_raced_total 1"), "%s", text);
  free(text);
  fx_free(&f);
  release_timeout_ms = 0;
}
END_TEST

/* The Volcano extender's jobEnqueueable may pin a gang's domain (the plan's
 * RELEASED) before its pods exist.  The pods the webhook then gates must
 * still be released, into that domain: a RELEASED gang with gated pods is
 * not done. */
static int pin_fn(void *arg, struct tp_snapshot *s, uint64_t gen) {
  struct gb_plan *plan = arg;
  const char *res[] = {"cpu"};
  int64_t val[] = {8000};
  struct tp_podset ps = {"node", 2, 1, res, val};
  struct tp_gang g = {key("job"), &ps, 1, 0, {TP_MODE_HARD, 1, 1, NULL}};
  struct gb_plan_gang pg = {key("job"), &g, 0, 0, NULL};
  struct gb_plan_view v;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_plan_decide(plan, s, gen, &pg, 1, 0, &v, &d);
  gc_diags_destroy(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  return gb_plan_mark_released(plan, key("job"), 0);
}

START_TEST(test_pinned_elsewhere) {
  struct fx f;
  cur_ns = "ns4";
  fx_init(&f);
  char aff[2048];
  ck_assert_int_eq(gb_model_with_snapshot(f.model, pin_fn, f.plan), 0);
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  for (int i = 0; i < 2; i++) {
    ck_assert(!pod_gated(i ? "job-node-0-1" : "job-node-0-0", aff, sizeof(aff)));
    ck_assert_msg(strstr(aff, "\"values\":[\"r1\"]"), "affinity: %s", aff);
  }
  fx_free(&f);
}
END_TEST

/* ---- issue 17: one durable decision per gang ------------------------------------ */

/* POSTs (or, json NULL, DELETEs) the stand-in's fault settings. */
static void faults(const char *json) {
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = gb_kube_client_request(cli, json ? GB_KUBE_CREATE : GB_KUBE_DELETE,
                                  json ? "POST" : "DELETE", "/_control/faults", "application/json",
                                  json, json ? strlen(json) : 0, NULL, &e);
  ck_assert_msg(rc == 0, "faults: %s", e.message);
}

/* The stand-in's count of injected 500s. */
static int64_t injected_500(void) {
  json_object *st = NULL, *f = NULL, *n = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(cli, "/_control/stats", &st, &e), 0);
  int64_t v = json_object_object_get_ex(st, "faults", &f) && json_object_object_get_ex(f, "500", &n)
                  ? json_object_get_int64(n)
                  : 0;
  json_object_put(st);
  return v;
}

/* Feeds every pod the stand-in has in cur_ns to m (a new process's list). */
static void feed_stored_pods(struct gb_model *m) {
  char path[128];
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", cur_ns);
  json_object *list = NULL, *items = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(cli, path, &list, &e), 0);
  ck_assert(json_object_object_get_ex(list, "items", &items));
  for (size_t i = 0; i < json_object_array_length(items); i++)
    feed(m, "Pod", json_object_to_json_string(json_object_array_get_idx(items, i)));
  json_object_put(list);
}

/* The decision recorded on the PodGroup of job (NULL: none); caller frees. */
static struct gb_decision *recorded(const char *job) {
  char path[200];
  snprintf(path, sizeof(path), "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups/%s",
           cur_ns, job);
  json_object *pg = NULL, *md = NULL, *ann = NULL, *v = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(cli, path, &pg, &e), 0);
  struct gb_decision *d = NULL;
  if (json_object_object_get_ex(pg, "metadata", &md) &&
      json_object_object_get_ex(md, "annotations", &ann) &&
      json_object_object_get_ex(ann, GB_DECISION_ANNOTATION, &v)) {
    struct gc_diags dg;
    gc_diags_init(&dg);
    const char *t = json_object_get_string(v);
    ck_assert_msg(gb_decision_decode(t, strlen(t), &d, &dg) == 0, "%s", dg.n ? dg.msgs[0] : t);
    gc_diags_destroy(&dg);
  }
  json_object_put(pg);
  return d;
}

static int64_t metric(struct gb_metrics *reg, const char *name) {
  char *text = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_metrics_render(reg, &text, &len), 0);
  char want[128];
  snprintf(want, sizeof(want), "\n%s ", name);
  const char *at = strstr(text, want);
  int64_t v = at ? strtoll(at + strlen(want), NULL, 10) : -1;
  free(text);
  return v;
}

static int64_t field_int(json_object *o, const char *k) {
  json_object *v = NULL;
  ck_assert_msg(json_object_object_get_ex(o, k, &v), "no %s", k);
  return json_object_get_int64(v);
}

/* The record is written before any pod is released, and says what the
 * pods got. */
START_TEST(test_record_before_release) {
  struct fx f;
  cur_ns = "ns5";
  fx_init(&f);
  char aff[2048];
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-0", aff, sizeof(aff)));
  struct gb_decision *d = recorded("job");
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(d->rec.domain, "b1/r1");
  ck_assert_str_eq(d->mode, "hard");
  ck_assert_int_eq(d->restr.kind, GB_RESTRICT_LABEL);
  ck_assert_str_eq(d->restr.key, "rack");
  ck_assert_str_eq(d->restr.values[0], "r1");
  ck_assert_uint_eq(d->rec.n_assign, 2);
  ck_assert_int_eq(d->rec.pods, 2);
  json_object *g = status(f.placer, key("job"));
  char id[17];
  gb_decision_id_text(d->rec.id, id);
  ck_assert_str_eq(field(g, "decision"), id);
  ck_assert_int_eq(field_int(g, "reservedPods"), 2);
  json_object_put(g);
  gb_decision_free(d);
  fx_free(&f);
}
END_TEST

/* Defects 1 and 2: every PATCH of one pod fails.  The gang keeps its whole
 * reservation (a second gang cannot take its rack), the status counts one
 * released and one gated, the metric counts every failed request.  Then
 * the process dies; a new one, after the fault clears, finishes the gang
 * in the recorded rack (alone, the last pod would go to the tighter r2). */
START_TEST(test_failed_patch_and_restart) {
  struct fx f;
  cur_ns = "ns6";
  fx_init(&f);
  char aff[2048];
  faults("{\"error_rate\":1,\"error_codes\":[500],\"error_verbs\":[\"patch\"],"
         "\"error_resources\":[\"pods\"],\"error_names\":[\"job-node-0-1\"]}");
  int64_t before = injected_500();
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-0", aff, sizeof(aff)));
  ck_assert_msg(strstr(aff, "\"values\":[\"r1\"]"), "affinity: %s", aff);
  ck_assert(pod_gated("job-node-0-1", aff, sizeof(aff)));
  json_object *g = status(f.placer, key("job"));
  ck_assert_int_eq(field_int(g, "gated"), 1);
  ck_assert_int_eq(field_int(g, "released"), 1);
  ck_assert_int_eq(field_int(g, "reservedPods"), 2);
  json_object_put(g);
  /* A second pass fails again: the reservation stays, the metric counts. */
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  int64_t failed = injected_500() - before;
  ck_assert_int_ge(failed, 2);
  ck_assert_int_eq(metric(f.reg, "gangbridge_placement_release_errors_total"), failed);
  /* job2 needs a rack of two free nodes: r1 is job's. */
  gated_pod(f.model, cur_ns, "job2", "job2-node-0-0");
  gated_pod(f.model, cur_ns, "job2", "job2-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job2");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(pod_gated("job2-node-0-0", aff, sizeof(aff)));
  g = status(f.placer, key("job2"));
  ck_assert_str_eq(field(g, "outcome"), "nofit");
  json_object_put(g);
  /* The process dies (nothing is cleaned up); the fault clears. */
  fx_free(&f);
  faults(NULL);
  fx_process(&f, 0);
  feed_stored_pods(f.model);
  gb_placer_on_gang(f.placer, cur_ns, "job");
  gb_placer_on_gang(f.placer, cur_ns, "job2");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-1", aff, sizeof(aff)));
  ck_assert_msg(strstr(aff, "\"values\":[\"r1\"]"), "split: the last pod got %s", aff);
  ck_assert(pod_gated("job2-node-0-0", aff, sizeof(aff))); /* r1 stays job's */
  g = status(f.placer, key("job"));
  ck_assert_int_eq(field_int(g, "reservedPods"), 2);
  ck_assert_int_eq(field_int(g, "gated"), 0);
  json_object_put(g);
  fx_free(&f);
}
END_TEST

/* Defect 7: a suspended TrainJob's gated pods are never released and
 * nothing is reserved for them. */
START_TEST(test_suspended) {
  struct fx f;
  cur_ns = "ns7";
  faults(NULL);
  fx_init(&f);
  char aff[2048];
  suspended = 1;
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(pod_gated("job-node-0-0", aff, sizeof(aff)));
  ck_assert(pod_gated("job-node-0-1", aff, sizeof(aff)));
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(f.plan, key("job"), &v), GC_ENOTFOUND);
  json_object *g = status(f.placer, key("job"));
  ck_assert_str_eq(field(g, "state"), "suspended");
  json_object_put(g);
  ck_assert_ptr_null(recorded("job"));
  /* Resumed: decided and released as any gang. */
  suspended = 0;
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-0", aff, sizeof(aff)));
  fx_free(&f);
}
END_TEST

/* Defect 9: blk's block holds job's reservation (rack r1 of it): blk is
 * restricted to the nodes the plan counted for it, not to the block. */
START_TEST(test_shared_domain_restricted_to_planned_nodes) {
  struct fx f;
  cur_ns = "ns8";
  faults(NULL);
  suspended = 0;
  fx_init(&f);
  fx_free(&f);
  fx_process(&f, 1);
  char aff[2048];
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-0", aff, sizeof(aff)));
  ck_assert_msg(strstr(aff, "\"values\":[\"r1\"]"), "affinity: %s", aff);
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof(name), "blk-node-0-%d", i);
    gated_pod(f.model, cur_ns, "blk", name);
  }
  gb_placer_on_gang(f.placer, cur_ns, "blk");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("blk-node-0-0", aff, sizeof(aff)));
  ck_assert_msg(strstr(aff, "{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","
                            "\"values\":[\"n5\",\"n6\",\"n7\"]}"),
                "affinity: %s", aff);
  ck_assert_msg(!strstr(aff, "\"block\""), "affinity: %s", aff);
  /* The scheduler endpoints answer the same: n1 (job's) is not blk's. */
  ck_assert_int_eq(gb_plan_node_allowed(f.plan, key("blk"), "n1", NULL, 0), 0);
  ck_assert_int_eq(gb_plan_node_allowed(f.plan, key("blk"), "n6", NULL, 0), 1);
  fx_free(&f);
}
END_TEST

/* The controller's cache for record_gangs: the PodGroups of cur_ns that
 * carry a record (read from the stand-in). */
static int record_gangs_fn(void *ctx, const char *key,
                           int (*fn)(void *arg, const char *ns, const char *name), void *arg) {
  (void)ctx, (void)key;
  static const char *jobs[] = {"job", "job2", "blk"};
  for (int i = 0; i < 3; i++) {
    struct gb_decision *d = recorded(jobs[i]);
    if (d)
      fn(arg, cur_ns, jobs[i]);
    gb_decision_free(d);
  }
  return 0;
}

/* jobEnqueueable pinned job before any pod existed and recorded it (the
 * scheduler endpoint's recorder); a new process takes the decision back
 * from the record alone: the capacity stays reserved, the domain pinned. */
static int pin_and_record(void *arg, struct tp_snapshot *s, uint64_t gen) {
  struct fx *f = arg;
  const char *res[] = {"cpu"};
  int64_t val[] = {8000};
  struct tp_podset ps = {"node", 2, 1, res, val};
  struct tp_gang g = {key("job"), &ps, 1, 0, {TP_MODE_HARD, 1, 1, NULL}};
  struct gb_plan_gang pg = {key("job"), &g, 0, 0, NULL};
  struct gb_plan_view v;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_plan_decide(f->plan, s, gen, &pg, 1, 0, &v, &d), 0);
  gc_diags_destroy(&d);
  ck_assert(v.fresh);
  return 0;
}

START_TEST(test_pinned_without_pods_survives_restart) {
  struct fx f;
  cur_ns = "ns9";
  faults(NULL);
  suspended = 0;
  fx_init(&f);
  ck_assert_int_eq(gb_model_with_snapshot(f.model, pin_and_record, &f), 0);
  char why[512] = "";
  ck_assert_msg(
      gb_placer_record_decision(f.placer, cur_ns, "job", key("job"), 0, why, sizeof(why)) == 0,
      "%s", why);
  ck_assert_int_eq(gb_plan_mark_released(f.plan, key("job"), 0), 0);
  struct gb_decision *d = recorded("job");
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(d->rec.domain, "b1/r1");
  gb_decision_free(d);
  fx_free(&f);
  scan_records = 1;
  fx_process(&f, 0);
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  scan_records = 0;
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(f.plan, key("job"), &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert_int_eq(v.pods_reserved, 2);
  ck_assert_int_eq(gb_plan_node_allowed(f.plan, key("job"), "n3", NULL, 0), 0);
  /* The pods arrive, gated: released into the recorded rack. */
  char aff[2048];
  gated_pod(f.model, cur_ns, "job", "job-node-0-0");
  gated_pod(f.model, cur_ns, "job", "job-node-0-1");
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  ck_assert(!pod_gated("job-node-0-1", aff, sizeof(aff)));
  ck_assert_msg(strstr(aff, "\"values\":[\"r1\"]"), "affinity: %s", aff);
  fx_free(&f);
}
END_TEST

/* ---- issue 22: the release from the informer's cache, on its own client ----------- */

/* Creates pod name of job (its spec.schedulingGates and spec.affinity as
 * given, JSON) on the stand-in and delivers what the server stored through
 * the pod informer's cache, as its watch would. */
static void cached_pod(struct fx *f, const char *name, const char *gates, const char *affinity) {
  char b[2048];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
           "\"%s\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"job\","
           "\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\"}},\"spec\":{\"schedulingGates\":"
           "%s,%s%s%s\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":"
           "{\"requests\":{\"cpu\":\"8\"}}}]}}",
           name, cur_ns, gates, affinity ? "\"affinity\":" : "", affinity ? affinity : "",
           affinity ? "," : "");
  char coll[128];
  snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/pods", cur_ns);
  json_object *o = json_tokener_parse(b), *stored = NULL;
  ck_assert_ptr_nonnull(o);
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  ck_assert_msg(gb_kube_client_create(cli, coll, o, &stored, &e) == 0, "create %s: %s", name,
                e.message);
  struct gb_informer *inf = gb_informers_lookup(f->infs, "", "v1", "pods");
  ck_assert_ptr_nonnull(inf);
  ck_assert_int_eq(gb_informer_feed(inf, GB_WATCH_ADDED, stored), 0);
  json_object_put(o);
  json_object_put(stored);
}

/* The release sends one PATCH per pod built from the cached pod, on the
 * release client, with no GET; a cached copy that is stale gets 409 and
 * is read again.  What the cache holds is enough for the merge patch:
 * another controller's gate stays and the pod's own required term keeps
 * its expression, the rack AND-ed in. */
START_TEST(test_release_from_cache) {
  struct fx f;
  cur_ns = "ns10";
  faults(NULL);
  suspended = 0;
  with_informers = 1;
  fx_init(&f);
  with_informers = 0;
  cached_pod(&f, "job-node-0-0",
             "[{\"name\":\"example.com/other\"},{\"name\":\"gangbridge.io/placement\"}]",
             "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
             "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":"
             "\"In\",\"values\":[\"z1\"]}]}]}}}");
  cached_pod(&f, "job-node-0-1", "[{\"name\":\"gangbridge.io/placement\"}]", NULL);
  /* Someone labels pod 1 after the cache saw it: its copy is stale. */
  char path[200];
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/job-node-0-1", cur_ns);
  json_object *label = json_tokener_parse("{\"metadata\":{\"labels\":{\"team\":\"a\"}}}");
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_merge_patch(cli, path, label, NULL, &e), 0);
  json_object_put(label);
  /* Counted by the clients (the stand-in counts a request after it has
   * answered, so its own figures may lag). */
  struct gb_kube_stats before, after, ws;
  gb_kube_client_stats(cli, &before);
  gb_placer_on_gang(f.placer, cur_ns, "job");
  ck_assert_int_eq(gb_placer_run_once(f.placer), 0);
  gb_kube_client_stats(cli, &after);
  gb_kube_client_stats(f.writer, &ws);
  /* Three PATCHes, all on the release client: two, and pod 1's again
   * after its 409 (reading every pod first, there would be no 409 and two
   * PATCHes).  Reads on the main client: the gang's PodGroup twice (the
   * record looked up, then written before the release) and pod 1 after
   * its 409; none for pod 0. */
  ck_assert_int_eq(ws.verb[GB_KUBE_PATCH].requests, 3);
  ck_assert_int_eq(ws.verb[GB_KUBE_GET].requests, 0);
  ck_assert_int_eq(after.verb[GB_KUBE_GET].requests - before.verb[GB_KUBE_GET].requests, 3);
  char aff[2048];
  ck_assert(!pod_gated("job-node-0-1", aff, sizeof(aff)));
  ck_assert_msg(strstr(aff, "\"values\":[\"r1\"]"), "affinity: %s", aff);
  /* Pod 0: still gated by the other controller, ours gone, both terms. */
  json_object *pod = NULL;
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/job-node-0-0", cur_ns);
  ck_assert_int_eq(gb_kube_client_get(cli, path, &pod, &e), 0);
  const char *text =
      json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  ck_assert_msg(strstr(text, "\"schedulingGates\":[{\"name\":\"example.com/other\"}]"), "%s",
                text);
  ck_assert_msg(strstr(text, "\"values\":[\"z1\"]},{\"key\":\"rack\""), "%s", text);
  json_object_put(pod);
  /* The labelled pod keeps the label written after the cache saw it. */
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/job-node-0-1", cur_ns);
  ck_assert_int_eq(gb_kube_client_get(cli, path, &pod, &e), 0);
  ck_assert_msg(strstr(json_object_to_json_string(pod), "\"team\""), "label lost");
  json_object_put(pod);
  fx_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("placer");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_release_and_nofit);
  tcase_add_test(tc, test_standby_waits);
  tcase_add_test(tc, test_raced);
  tcase_add_test(tc, test_pinned_elsewhere);
  tcase_add_test(tc, test_record_before_release);
  tcase_add_test(tc, test_failed_patch_and_restart);
  tcase_add_test(tc, test_suspended);
  tcase_add_test(tc, test_shared_domain_restricted_to_planned_nodes);
  tcase_add_test(tc, test_pinned_without_pods_survives_restart);
  tcase_add_test(tc, test_release_from_cache);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  /* One stand-in for both tests (each in its own namespace), stopped here
   * whatever the tests do. */
  int failed = 1;
  if (start_server() == 0) {
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
  }
  srunner_free(sr);
  stop_server();
  return failed ? 1 : 0;
}
