/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gatesweep against the stand-in API server (issue 17 defect 8, issue 19
 * finding 7).  Placement disabled (no model): every pod carrying
 * gangbridge's gate loses it in one sweep, on the leader only; other gates
 * (Kueue's) stay, in order; pods without our gate are untouched; each
 * removal has a Normal PlacementGateRemoved Event on the pod and counts in
 * gangbridge_placement_gates_removed_total{reason="disabled"}; a second
 * sweep does nothing; a sweeper limited to other namespaces
 * (kube.watchNamespaces) touches none of them.  Placement enabled (a fed model): a gated pod
 * gangbridge holds (a counted pod of a gang with a topology policy) keeps
 * its gate; stray gates older than the grace period go, with a Warning
 * Event saying why (no JobSet label, a TrainJob gangbridge does not manage,
 * a replicated job outside the gang, no topology policy); a stray gate
 * younger than the grace, and a pod whose gang cannot be looked up now,
 * stay.  gb_gatesweep_pod_of reads the gate's index and every gate.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_gatesweep.h"
#include "gb_gatesweep_test.h"
#include "gb_release.h"
#include "gb_standin.h"
#include "gb_test.h"
#include "gb_model_test.h"

#define KUEUE "{\"name\":\"kueue.x-k8s.io/admission\"}"
#define OURS "{\"name\":\"gangbridge.io/placement\"}"
#define OLD_TS "2020-01-01T00:00:00Z"

static struct gb_standin standin;
static struct gb_kube_client *cli;

static void start_server(void) {
  ck_assert_int_eq(gb_standin_start(&standin), 0);
  cli = standin.cli;
  json_object *o = json_tokener_parse(
      "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns1\"}}");
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_create(cli, "/api/v1/namespaces", o, NULL, &e), 0);
  json_object_put(o);
}
static void stop_server(void) { gb_standin_stop(&standin); }

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
    "      - name: init\n"
    "        template:\n"
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: "
    "dataset-initializer}}\n"
    "          spec: {template: {spec: {containers: [{name: i, image: p}]}}}\n"
    "      - name: node\n"
    "        dependsOn: [{name: init, status: Complete}]\n"
    "        template:\n"
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
    "          spec: {template: {spec: {containers: [{name: node, image: p}]}}}\n"
    "---\n"
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainJob\n"
    "metadata: {name: job, namespace: ns1, uid: 11111111-2222-4333-8444-555555555555}\n"
    "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}}\n";

/* JobSets "held": the gang above; "plain": the same without its policy;
 * "broken": the caches cannot tell; anything else: not managed. */
static int gang_fn(void *ctx, const char *ns, const char *name, struct gc_gang **out, char *reason,
                   size_t reason_size) {
  (void)ctx, (void)ns;
  *out = NULL;
  if (!strcmp(name, "broken")) {
    snprintf(reason, reason_size, "caches not synced");
    return GC_EIO;
  }
  if (strcmp(name, "held") && strcmp(name, "plain"))
    return 0;
  struct gb_test_run r;
  gb_test_run(&r, GANG_YAML, NULL, NULL);
  ck_assert_ptr_nonnull(r.g);
  if (!strcmp(name, "plain"))
    r.g->topology.set = 0;
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

/* Creates pod ns1/name with labels (JSON object text) and gates (JSON list
 * text); returns the stored object (caller puts). */
static json_object *create_pod(const char *name, const char *labels, const char *gates) {
  char b[2048];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
           "\"ns1\",\"labels\":%s},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}],"
           "\"schedulingGates\":%s}}",
           name, labels, gates);
  json_object *o = json_tokener_parse(b), *stored = NULL;
  ck_assert_ptr_nonnull(o);
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = gb_kube_client_create(cli, "/api/v1/namespaces/ns1/pods", o, &stored, &e);
  ck_assert_msg(rc == 0, "create %s: %s", name, e.message);
  json_object_put(o);
  return stored;
}

/* The pod's gate names, comma-separated ("" when none). */
static void gates_of(const char *name, char *out, size_t size) {
  char path[256];
  snprintf(path, sizeof(path), "/api/v1/namespaces/ns1/pods/%s", name);
  json_object *pod = NULL, *spec = NULL, *gates = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(cli, path, &pod, &e), 0);
  out[0] = '\0';
  json_object_object_get_ex(pod, "spec", &spec);
  if (json_object_object_get_ex(spec, "schedulingGates", &gates) &&
      json_object_is_type(gates, json_type_array))
    for (size_t i = 0; i < json_object_array_length(gates); i++) {
      json_object *g = json_object_array_get_idx(gates, i), *n = NULL;
      json_object_object_get_ex(g, "name", &n);
      snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? "," : "",
               json_object_get_string(n));
    }
  json_object_put(pod);
}

/* The PlacementGateRemoved Event on pod name: its type, or "" when none. */
static void event_of(const char *name, char *type, size_t size, char *msg, size_t msg_size) {
  char path[256];
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/ns1/events?fieldSelector=involvedObject.name%%3D%s", name);
  json_object *list = NULL, *items = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(cli, path, &list, &e), 0);
  type[0] = msg[0] = '\0';
  json_object_object_get_ex(list, "items", &items);
  for (size_t i = 0; i < json_object_array_length(items); i++) {
    json_object *ev = json_object_array_get_idx(items, i), *r = NULL, *t = NULL, *m = NULL;
    json_object_object_get_ex(ev, "reason", &r);
    if (strcmp(json_object_get_string(r), "PlacementGateRemoved"))
      continue;
    json_object_object_get_ex(ev, "type", &t);
    json_object_object_get_ex(ev, "message", &m);
    snprintf(type, size, "%s", json_object_get_string(t));
    snprintf(msg, msg_size, "%s", json_object_get_string(m));
  }
  json_object_put(list);
}

static void expect_gates(const char *pod, const char *want) {
  char got[256];
  gates_of(pod, got, sizeof(got));
  ck_assert_msg(!strcmp(got, want), "%s: gates %s, want %s", pod, got, want);
}

static double removed_metric(struct gb_metrics *reg, const char *reason) {
  char *text = NULL, want[128];
  size_t len;
  ck_assert_int_eq(gb_metrics_render(reg, &text, &len), 0);
  snprintf(want, sizeof(want), "gangbridge_placement_gates_removed_total{reason=\"%s\"} ", reason);
  const char *at = strstr(text, want);
  double v = at ? strtod(at + strlen(want), NULL) : 0;
  free(text);
  return v;
}

START_TEST(pod_of_reads_gates) {
  json_object *p = json_tokener_parse(
      "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\",\"creationTimestamp\":"
      "\"2026-01-02T03:04:05Z\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"js\"}},"
      "\"spec\":{\"schedulingGates\":[" KUEUE "," OURS "]}}");
  struct gb_gated_pod g;
  ck_assert_int_eq(gb_gatesweep_pod_of(p, &g), 1);
  ck_assert_uint_eq(g.index, 1);
  ck_assert_uint_eq(g.n_gates, 2);
  ck_assert_str_eq(g.gates[0], "kueue.x-k8s.io/admission");
  ck_assert_str_eq(g.jobset, "js");
  ck_assert_str_eq(g.rjob, "");
  ck_assert_int_eq(g.created_ms, 1767323045000LL);
  json_object_put(p);
  p = json_tokener_parse("{\"spec\":{\"schedulingGates\":[" KUEUE "]}}");
  ck_assert_int_eq(gb_gatesweep_pod_of(p, &g), 0);
  json_object_put(p);
}
END_TEST

START_TEST(disabled_releases_every_gate) {
  json_object_put(create_pod("d-both", "{}", "[" KUEUE "," OURS "]"));
  json_object_put(
      create_pod("d-ours", "{\"jobset.sigs.k8s.io/jobset-name\":\"held\"}", "[" OURS "]"));
  json_object_put(create_pod("d-kueue", "{}", "[" KUEUE "]"));
  json_object_put(create_pod("d-none", "{}", "[]"));
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_events *ev = gb_events_new(cli, NULL);
  struct gb_gatesweep_opts o = {.client = cli, .events = ev, .is_leader = is_leader, .reg = reg};
  struct gb_gatesweep *g = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_gatesweep_new(&o, &g, &d), 0);
  size_t n = 9;
  /* kube.watchNamespaces without ns1: nothing of ns1 is touched. */
  static const char *const elsewhere[] = {"team-x"};
  struct gb_gatesweep_opts ox = o;
  ox.namespaces = elsewhere;
  ox.n_namespaces = 1;
  ox.reg = NULL;
  struct gb_gatesweep *gx = NULL;
  ck_assert_int_eq(gb_gatesweep_new(&ox, &gx, &d), 0);
  ck_assert_int_eq(gb_gatesweep_run_once(gx, &n), 0);
  ck_assert_uint_eq(n, 0);
  expect_gates("d-ours", "gangbridge.io/placement");
  gb_gatesweep_free(gx);
  leading = 0; /* a standby writes nothing */
  ck_assert_int_eq(gb_gatesweep_run_once(g, &n), 0);
  ck_assert_uint_eq(n, 0);
  expect_gates("d-ours", "gangbridge.io/placement");
  leading = 1;
  ck_assert_int_eq(gb_gatesweep_run_once(g, &n), 0);
  ck_assert_uint_eq(n, 2);
  expect_gates("d-both", "kueue.x-k8s.io/admission");
  expect_gates("d-ours", "");
  expect_gates("d-kueue", "kueue.x-k8s.io/admission");
  expect_gates("d-none", "");
  char type[32], msg[1100];
  event_of("d-both", type, sizeof(type), msg, sizeof(msg));
  ck_assert_str_eq(type, "Normal");
  ck_assert_ptr_nonnull(strstr(msg, "placement is disabled"));
  event_of("d-kueue", type, sizeof(type), msg, sizeof(msg));
  ck_assert_str_eq(type, "");
  ck_assert(removed_metric(reg, "disabled") == 2);
  ck_assert_int_eq(gb_gatesweep_run_once(g, &n), 0);
  ck_assert_uint_eq(n, 0);
  gb_gatesweep_free(g);
  gb_events_free(ev);
  gb_metrics_free(reg);
  gc_diags_destroy(&d);
}
END_TEST

/* Creates the pod on the stand-in and feeds it to the model, created at ts
 * (the model's copy; the stand-in stamps its own). */
static void pod_both(struct gb_model *m, const char *name, const char *labels, const char *ts) {
  json_object *stored = create_pod(name, labels, "[" KUEUE "," OURS "]"), *md = NULL;
  json_object_object_get_ex(stored, "metadata", &md);
  if (ts)
    json_object_object_add(md, "creationTimestamp", json_object_new_string(ts));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_model_feed(m, "Pod", 0, json_object_to_json_string(stored), &d), 0);
  gc_diags_destroy(&d);
  json_object_put(stored);
}

START_TEST(enabled_removes_only_stray_gates) {
  struct gb_plan *plan = NULL;
  struct gb_model *model = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_plan_new(NULL, &plan), 0);
  struct gb_model_opts mo = {.plan = plan};
  ck_assert_int_eq(gb_model_new(&mo, &model, &d), 0);
#define JS(js, rj)                                                                                 \
  "{\"jobset.sigs.k8s.io/jobset-name\":\"" js "\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"" rj \
  "\"}"
  pod_both(model, "e-held", JS("held", "node"), OLD_TS);
  pod_both(model, "e-lone", "{}", OLD_TS);
  pod_both(model, "e-other", JS("other", "node"), OLD_TS);
  pod_both(model, "e-plain", JS("plain", "node"), OLD_TS);
  pod_both(model, "e-init", JS("held", "init"), OLD_TS);
  pod_both(model, "e-broken", JS("broken", "node"), OLD_TS);
  pod_both(model, "e-young", "{}", NULL); /* created now: within the grace */
  ck_assert_int_eq(gb_model_feed_done(model), 0);
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_events *ev = gb_events_new(cli, NULL);
  struct gb_gatesweep_opts o = {.client = cli,
                                .model = model,
                                .gang = gang_fn,
                                .events = ev,
                                .is_leader = is_leader,
                                .grace_ms = 60000,
                                .reg = reg};
  struct gb_gatesweep *g = NULL;
  ck_assert_int_eq(gb_gatesweep_new(&o, &g, &d), 0);
  size_t n = 0;
  ck_assert_int_eq(gb_gatesweep_run_once(g, &n), 0);
  ck_assert_uint_eq(n, 4);
  const char *both = "kueue.x-k8s.io/admission,gangbridge.io/placement";
  expect_gates("e-held", both);
  expect_gates("e-broken", both);
  expect_gates("e-young", both);
  static const char *const gone[] = {"e-lone", "e-other", "e-plain", "e-init"};
  static const char *const why[] = {"not a JobSet pod", "does not manage TrainJob ns1/other",
                                    "has no topology policy", "replicated job \"init\""};
  for (size_t i = 0; i < 4; i++) {
    expect_gates(gone[i], "kueue.x-k8s.io/admission");
    char type[32], msg[1100];
    event_of(gone[i], type, sizeof(type), msg, sizeof(msg));
    ck_assert_str_eq(type, "Warning");
    ck_assert_msg(strstr(msg, why[i]), "%s: %s", gone[i], msg);
  }
  ck_assert(removed_metric(reg, "stray") == 4);
  gb_gatesweep_free(g);
  gb_events_free(ev);
  gb_metrics_free(reg);
  gb_model_free(model);
  gb_plan_free(plan);
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gatesweep");
  TCase *tc = tcase_create("live");
  tcase_add_unchecked_fixture(tc, start_server, stop_server);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, pod_of_reads_gates);
  tcase_add_test(tc, disabled_releases_every_gate);
  tcase_add_test(tc, enabled_removes_only_stray_gates);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
