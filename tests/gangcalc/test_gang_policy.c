/* SPDX-License-Identifier: Apache-2.0
 *
 * Runtime resolution and PodGroup policy: catalog and runtimeRef rules,
 * API generations, queue, priority class, network topology, coscheduling
 * timeout, backend choice, deprecation and elasticPolicy.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"

#define CTR "ClusterTrainingRuntime"
#define NODE "[{name: node, image: x, resources: {requests: {cpu: 1}}}]"

static const char *rt_with(const char *spec_extra, const char *meta_ann) {
  const char *rt = gb_test_runtime(CTR, "rt", spec_extra,
                                   gb_test_job("node", "trainer", -1, NODE, NULL, NULL, NULL),
                                   NULL);
  if (!meta_ann)
    return rt;
  /* Put template metadata annotations in front of template.spec. */
  const char *at = strstr(rt, "  template:\n    spec:\n");
  ck_assert_ptr_nonnull(at);
  return gb_test_fmt("%.*s  template:\n    metadata: {annotations: {%s}}\n%s", (int)(at - rt), rt,
                     meta_ann, at + strlen("  template:\n"));
}

static void run(struct gb_test_run *r, const char *rt, const char *tj_extra,
                const struct gc_backend *b) {
  gb_test_run_with(r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", tj_extra)), b,
                   GC_SCOPE_WAVE);
}

static void ok(struct gb_test_run *r) {
  if (r->rc)
    gb_test_dump(&r->diags);
  ck_assert_int_eq(r->rc, 0);
}

START_TEST(queue_sources_in_order) {
  struct gb_test_run r;
  const char *q = "scheduling.volcano.sh/queue-name";
  run(&r, rt_with("", gb_test_fmt("%s: runtime-q", q)), NULL, TB_UNSET);
  ok(&r);
  ck_assert_str_eq(r.g->queue, "runtime-q");
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_NO_QUEUE, NULL));
  ck_assert_str_eq(r.g->api_generation, "v2.2+");
  gb_test_run_free(&r);

  run(&r, rt_with("", gb_test_fmt("%s: runtime-q", q)),
      gb_test_fmt("  annotations: {%s: v21-q}\n", q), TB_UNSET);
  ok(&r);
  ck_assert_str_eq(r.g->queue, "v21-q");
  ck_assert_str_eq(r.g->api_generation, "v2.1");
  gb_test_run_free(&r);

  run(&r, rt_with("", gb_test_fmt("%s: runtime-q", q)),
      gb_test_fmt("  runtimePatches:\n"
                  "  - manager: a.io/one\n"
                  "    trainingRuntimeSpec: {template: {metadata: {annotations: {%s: p1}}}}\n"
                  "  - manager: b.io/two\n"
                  "    trainingRuntimeSpec: {template: {metadata: {annotations: {%s: p2}}}}\n"
                  "  - manager: c.io/three\n"
                  "    trainingRuntimeSpec: {template: {metadata: {labels: {x: z}}}}\n",
                  q, q),
      TB_UNSET);
  ok(&r);
  ck_assert_str_eq(r.g->queue, "p2");
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_NO_QUEUE, NULL));
  ck_assert_str_eq(r.g->api_generation, "v2.2+");
  gb_test_run_free(&r);
}
END_TEST

/* A queue name with a label longer than 63 bytes is a valid RFC 1123
 * subdomain for apimachinery and for the PodGroup CRD's spec.queue pattern
 * (only the whole name is limited, to 253 bytes): it is accepted. */
START_TEST(queue_long_label) {
  struct gb_test_run r;
  const char *name = gb_test_fmt("%s%s.team", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  ck_assert_uint_eq(strlen(name), 64 + 5);
  run(&r, rt_with("", gb_test_fmt("scheduling.volcano.sh/queue-name: %s", name)), NULL, TB_VOLCANO);
  ok(&r);
  ck_assert_str_eq(r.g->queue, name);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(queue_empty_and_missing) {
  struct gb_test_run r;
  run(&r, rt_with("", "scheduling.volcano.sh/queue-name: ''"), NULL, TB_UNSET);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.template.metadata."
                             "annotations[scheduling.volcano.sh/queue-name]: Volcano queue name "
                             "must not be empty"));
  gb_test_run_free(&r);

  run(&r, rt_with("", NULL),
      "  runtimePatches:\n  - manager: a.io/x\n    trainingRuntimeSpec: {template: {metadata: "
      "{annotations: {scheduling.volcano.sh/queue-name: Bad_Queue}}}}\n",
      TB_UNSET);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "default/job: spec.runtimePatches[0].trainingRuntimeSpec."
                             "template.metadata.annotations[scheduling.volcano.sh/queue-name]: "
                             "\"Bad_Queue\" is not a valid Volcano queue name (an RFC 1123 "
                             "subdomain)"));
  gb_test_run_free(&r);

  run(&r, rt_with("", NULL), NULL, TB_VOLCANO);
  ok(&r);
  ck_assert_ptr_null(r.g->queue);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_NO_QUEUE, NULL));
  gb_test_run_free(&r);

  run(&r, rt_with("", NULL), NULL, TB_COSCHED);
  ok(&r);
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_NO_QUEUE, NULL));
  gb_test_run_free(&r);
}
END_TEST

START_TEST(priority_class_last_wins) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      CTR, "rt", "",
      gb_test_job("a", NULL, -1, NODE, NULL, NULL, "priorityClassName: low"),
      gb_test_job("node", "trainer", -1, NODE, NULL, NULL, "priorityClassName: high"),
      gb_test_job("c", NULL, -1, NODE, NULL, NULL, "priorityClassName: ''"), NULL);
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)), TB_UNSET,
                   GC_SCOPE_WAVE);
  ok(&r);
  ck_assert_str_eq(r.g->priority_class, "high");
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "different priorityClassName"));
  gb_test_run_free(&r);
}
END_TEST

START_TEST(topology_rules) {
  struct gb_test_run r;
  run(&r, rt_with("  podGroupPolicy: {volcano: {networkTopology: {}}}\n", NULL), NULL, TB_UNSET);
  ok(&r);
  ck_assert(r.g->topology.set);
  ck_assert_str_eq(r.g->topology.mode, "hard");
  ck_assert(r.g->topology.has_highest_tier);
  ck_assert_int_eq(r.g->topology.highest_tier, 1);
  gb_test_run_free(&r);

  run(&r,
      rt_with("  podGroupPolicy: {volcano: {networkTopology: {mode: soft, "
              "highestTierName: spine}}}\n",
              NULL),
      NULL, TB_UNSET);
  ok(&r);
  ck_assert_str_eq(r.g->topology.mode, "soft");
  ck_assert_str_eq(r.g->topology.highest_tier_name, "spine");
  ck_assert(!r.g->topology.has_highest_tier);
  gb_test_run_free(&r);

  run(&r,
      rt_with("  podGroupPolicy: {volcano: {networkTopology: {mode: loose, "
              "highestTierAllowed: 2, highestTierName: spine}}}\n",
              NULL),
      NULL, TB_UNSET);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.podGroupPolicy.volcano."
                             "networkTopology.mode: Unsupported value: \"loose\": supported "
                             "values: \"hard\", \"soft\""));
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.podGroupPolicy.volcano."
                             "networkTopology: must not specify 'highestTierAllowed' and "
                             "'highestTierName' in networkTopology simultaneously."));
  gb_test_run_free(&r);

  run(&r,
      rt_with("  podGroupPolicy: {volcano: {networkTopology: {highestTierAllowed: -1}}}\n", NULL),
      NULL, TB_UNSET);
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.podGroupPolicy.volcano."
                             "networkTopology.highestTierAllowed: must be >= 0"));
  gb_test_run_free(&r);
}
END_TEST

START_TEST(timeout_rules) {
  static const struct {
    const char *policy;
    int want;
    enum gc_warning_code warn;
  } cases[] = {
      {"coscheduling: {}", 60, 0},
      {"coscheduling: {scheduleTimeoutSeconds: 300}", 300, 0},
      {"coscheduling: {scheduleTimeoutSeconds: 0}", 60, GC_WARN_OTHER},
      {"coscheduling: {scheduleTimeoutSeconds: 900}", 900, 0},
      {"coscheduling: {scheduleTimeoutSeconds: 901}", 900, GC_WARN_TIMEOUT_CLAMPED},
      {"coscheduling: {scheduleTimeoutSeconds: 100000}", 900, GC_WARN_TIMEOUT_CLAMPED},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gb_test_run r;
    run(&r, rt_with(gb_test_fmt("  podGroupPolicy: {%s}\n", cases[i].policy), NULL), NULL,
        TB_UNSET);
    ok(&r);
    ck_assert_ptr_eq(r.g->backend, TB_COSCHED);
    ck_assert(r.g->has_timeout);
    ck_assert_int_eq(r.g->schedule_timeout_seconds, cases[i].want);
    if (cases[i].warn)
      ck_assert(gb_test_has_warning(r.g, cases[i].warn, "scheduleTimeoutSeconds"));
    else
      ck_assert_uint_eq(r.g->n_warnings, 0);
    gb_test_run_free(&r);
  }
  struct gb_test_run r;
  run(&r, rt_with("  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: -5}}\n", NULL), NULL,
      TB_UNSET);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.podGroupPolicy."
                             "coscheduling.scheduleTimeoutSeconds: must be >= 0"));
  gb_test_run_free(&r);
  /* Coscheduling requested for a runtime without a coscheduling policy. */
  run(&r, rt_with("", NULL), NULL, TB_COSCHED);
  ok(&r);
  ck_assert_int_eq(r.g->schedule_timeout_seconds, 60);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(backend_choice) {
  struct gb_test_run r;
  run(&r, rt_with("  podGroupPolicy: {coscheduling: {}, volcano: {}}\n", NULL), NULL, TB_UNSET);
  ok(&r);
  ck_assert_ptr_eq(r.g->backend, TB_VOLCANO);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_POLICY_BOTH, NULL));
  gb_test_run_free(&r);

  run(&r, rt_with("  podGroupPolicy: {coscheduling: {}, volcano: {}}\n", NULL), NULL, TB_COSCHED);
  ok(&r);
  ck_assert_ptr_eq(r.g->backend, TB_COSCHED);
  gb_test_run_free(&r);

  run(&r, rt_with("  podGroupPolicy: {coscheduling: {}}\n", NULL), NULL, TB_VOLCANO);
  ok(&r);
  ck_assert_ptr_eq(r.g->backend, TB_VOLCANO);
  ck_assert(r.g->backend_from_runtime);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "podGroupPolicy names coscheduling"));
  gb_test_run_free(&r);

  run(&r, rt_with("", NULL), NULL, TB_UNSET);
  ok(&r);
  ck_assert_ptr_eq(r.g->backend, TB_VOLCANO);
  ck_assert(!r.g->backend_from_runtime);
  gb_test_run_free(&r);

  struct gc_options o = {TB_UNSET, TB_COSCHED, GC_SCOPE_WAVE, NULL, NULL, NULL, NULL};
  gb_test_run(&r, gb_test_fmt("%s%s", rt_with("", NULL), gb_test_trainjob("job", "rt", NULL)),
              NULL, &o);
  ok(&r);
  ck_assert_ptr_eq(r.g->backend, TB_COSCHED);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(runtime_ref_rules) {
  struct gb_test_run r;
  const char *tr = gb_test_runtime("TrainingRuntime", "local", "",
                                   gb_test_job("node", "trainer", -1, NODE, NULL, NULL, NULL),
                                   NULL);
  /* TrainingRuntime in namespace default; a TrainJob in "other" cannot use it. */
  const char *tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                   "metadata: {name: job, namespace: other}\n"
                   "spec: {runtimeRef: {name: local, kind: TrainingRuntime}}\n";
  gb_test_run(&r, gb_test_fmt("%s%s", tr, tj), NULL, NULL);
  ck_assert_int_eq(r.rc, GC_ENOTFOUND);
  ck_assert(gb_test_has_diag(&r.diags, "other/job: spec.runtimeRef: TrainingRuntime \"local\" "
                             "not found in namespace \"other\""));
  gb_test_run_free(&r);

  /* Default kind is ClusterTrainingRuntime: the TrainingRuntime is not it. */
  gb_test_run(&r, gb_test_fmt("%s%s", tr, gb_test_trainjob("job", "local", NULL)), NULL, NULL);
  ck_assert_int_eq(r.rc, GC_ENOTFOUND);
  ck_assert(gb_test_has_diag(&r.diags, "default/job: spec.runtimeRef: ClusterTrainingRuntime "
                             "\"local\" not found"));
  gb_test_run_free(&r);

  /* A TrainingRuntime without a namespace is in the default namespace. */
  const char *tr_nons =
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\nmetadata: {name: nons}\n"
      "spec:\n  template:\n    spec:\n      replicatedJobs:\n"
      "      - {name: node, template: {spec: {template: {spec: {containers: " NODE "}}}}}\n";
  const char *tj2 = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                    "metadata: {name: job}\n"
                    "spec: {runtimeRef: {name: nons, kind: TrainingRuntime}}\n";
  gb_test_run(&r, gb_test_fmt("%s%s", tr_nons, tj2), NULL, NULL);
  ok(&r);
  ck_assert_str_eq(r.g->namespace_, "default");
  gb_test_run_free(&r);
  struct gc_options o = {TB_UNSET, TB_UNSET, GC_SCOPE_WAVE, "team-a", NULL, NULL, NULL};
  gb_test_run(&r, gb_test_fmt("%s%s", tr_nons, tj2), NULL, &o);
  ok(&r);
  ck_assert_str_eq(r.g->namespace_, "team-a");
  gb_test_run_free(&r);

  const char *tj3 = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                    "metadata: {name: job}\n"
                    "spec: {runtimeRef: {name: x, apiGroup: example.com, kind: Thing}}\n";
  gb_test_run(&r, gb_test_fmt("%s%s", tr_nons, tj3), NULL, NULL);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "default/job: spec.runtimeRef.kind: Unsupported value: "
                             "\"Thing\": supported values: \"ClusterTrainingRuntime\", "
                             "\"TrainingRuntime\""));
  gb_test_run_free(&r);

  const char *tj4 = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                    "metadata: {name: job}\n"
                    "spec: {runtimeRef: {name: x, apiGroup: example.com, kind: TrainingRuntime}}\n";
  gb_test_run(&r, gb_test_fmt("%s%s", tr_nons, tj4), NULL, NULL);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "default/job: spec.runtimeRef: unsupported runtime: "
                             "TrainingRuntime.example.com"));
  gb_test_run_free(&r);
}
END_TEST

START_TEST(deprecated_and_elastic) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(CTR, "rt", "  mlPolicy: {torch: {elasticPolicy: {minNodes: 1, "
                                   "maxNodes: 4}, numProcPerNode: auto}}\n",
                                   gb_test_job("node", "trainer", -1, NODE, NULL, NULL, NULL),
                                   NULL);
  rt = gb_test_fmt("%.*s  labels: {trainer.kubeflow.org/support: deprecated}\n%s",
                   (int)(strstr(rt, "spec:\n") - rt), rt, strstr(rt, "spec:\n"));
  gb_test_run_with(
      &r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", "  trainer: {numNodes: 3}\n")),
      TB_UNSET, GC_SCOPE_WAVE);
  ok(&r);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_DEPRECATED_RUNTIME, NULL));
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "elasticPolicy is ignored"));
  ck_assert_int_eq(r.g->min_member, 3);
  ck_assert_str_eq(r.g->api_generation, "v2.1");
  gb_test_run_free(&r);

  rt = gb_test_runtime(CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {elasticPolicy: {}}}\n",
                       gb_test_job("node", "trainer", -1, NODE, NULL, NULL, NULL), NULL);
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)), TB_UNSET,
                   GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.mlPolicy: numNodes "
                             "should not be set if torch.elasticPolicy is configured"));
  gb_test_run_free(&r);
}
END_TEST

START_TEST(generations_overrides_and_patches) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {}}\n",
      gb_test_job("node", "trainer", -1,
                  "[{name: node, image: x, resources: {requests: {cpu: 1}}}]", NULL, NULL, NULL),
      NULL);
  /* v2.0 podSpecOverrides may not change resources: ignored with a warning. */
  gb_test_run_with(
      &r,
      gb_test_fmt("%s%s", rt,
                  gb_test_trainjob("job", "rt",
                                   "  podSpecOverrides:\n  - targetJobs: [{name: node}]\n"
                                   "    serviceAccountName: sa\n"
                                   "    containers: [{name: node, env: [{name: A, value: b}], "
                                   "resources: {requests: {cpu: 64}}}, {name: ghost, env: []}]\n")),
      TB_UNSET, GC_SCOPE_WAVE);
  ok(&r);
  ck_assert_str_eq(r.g->api_generation, "v2.0");
  char buf[GC_QUANTITY_BUFSZ];
  ck_assert_str_eq(gb_test_qty(&r.g->min_resources, "cpu", buf), "2");
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "resources is not a field"));
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "container \"ghost\" not found"));
  gb_test_run_free(&r);

  /* v2.1 podTemplateOverrides with an unknown target job: warning only. */
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", rt,
                               gb_test_trainjob("job", "rt",
                                                "  podTemplateOverrides:\n  - targetJobs: [{name: "
                                                "nope}]\n    spec: {nodeSelector: {a: b}}\n"
                                                "  trainer: {numProcPerNode: gpu}\n")),
                   TB_UNSET, GC_SCOPE_WAVE);
  ok(&r);
  ck_assert_str_eq(r.g->api_generation, "v2.1");
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "\"nope\" not found"));
  gb_test_run_free(&r);

  /* v2.2 runtime patches: unknown job and container are errors, env on the
   * node container is refused (Trainer's webhook rules). */
  gb_test_run_with(
      &r,
      gb_test_fmt(
          "%s%s", rt,
          gb_test_trainjob(
              "job", "rt",
              "  runtimePatches:\n  - manager: x.io/m\n    trainingRuntimeSpec:\n      template:\n"
              "        spec:\n          replicatedJobs:\n"
              "          - {name: ghost}\n"
              "          - name: node\n            template: {spec: {template: {spec: "
              "{containers: [{name: node, env: [{name: A}]}, {name: other}]}}}}\n")),
      TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  const char *p = "default/job: spec.runtimePatches[0].trainingRuntimeSpec.template.spec.";
  ck_assert(gb_test_has_diag(&r.diags, gb_test_fmt("%sreplicatedJobs[0].name: replicated job "
                                                   "\"ghost\" not found in the runtime", p)));
  ck_assert(gb_test_has_diag(&r.diags, gb_test_fmt(
      "%sreplicatedJobs[1].template.spec.template.spec.containers[1].name: container \"other\" "
      "not found in replicated job \"node\" of the runtime", p)));
  ck_assert(gb_test_has_diag(&r.diags, gb_test_fmt(
      "%sreplicatedJobs[1].template.spec.template.spec.containers[0].env: must not be set for "
      "the \"node\" container (use spec.trainer.env or spec.initializer)", p)));
  gb_test_run_free(&r);

  /* A runtime patch may add a sidecar-free volume and label a job, which
   * reaches the gang (the ancestor label makes numNodes apply). */
  const char *rt2 = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {}}\n",
      gb_test_job("node", NULL, -1, "[{name: node, image: x, resources: {requests: {cpu: 1}}}]",
                  NULL, NULL, NULL),
      NULL);
  gb_test_run_with(
      &r,
      gb_test_fmt(
          "%s%s", rt2,
          gb_test_trainjob(
              "job", "rt",
              "  trainer: {numNodes: 5}\n"
              "  runtimePatches:\n  - manager: x.io/m\n    trainingRuntimeSpec:\n      template:\n"
              "        spec:\n          replicatedJobs:\n"
              "          - name: node\n            template:\n              metadata: {labels: "
              "{trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
              "              spec: {template: {spec: {volumes: [{name: v, emptyDir: {}}]}}}\n")),
      TB_UNSET, GC_SCOPE_WAVE);
  ok(&r);
  ck_assert_int_eq(r.g->min_member, 5);
  gb_test_run_free(&r);
}
END_TEST

/* The gang owns every string it holds: it stays usable after the input
 * documents and the catalog are freed (checked under ASan). */
START_TEST(gang_outlives_inputs) {
  struct gb_test_run r;
  const char *rt = rt_with("  podGroupPolicy: {volcano: {networkTopology: {mode: soft, "
                           "highestTierName: leaf}}}\n", "scheduling.volcano.sh/queue-name: team-q");
  rt = gb_test_fmt("%s%s", rt, gb_test_job("eval", NULL, -1, NODE, "[{name: node, status: Complete}]",
                                           NULL, "priorityClassName: p1, schedulerName: volcano"));
  /* Without overrides or patches (the runtime is read in place) and with. */
  for (int patched = 0; patched < 2; patched++) {
    run(&r, rt,
        patched ? "  trainer: {numNodes: 2}\n  runtimePatches: [{manager: a.io/b}]\n"
                : "  trainer: {numNodes: 2}\n",
        TB_UNSET);
    ok(&r);
    struct gc_gang *g = r.g;
    r.g = NULL;
    gb_test_run_free(&r);
    ck_assert_str_eq(g->queue, "team-q");
    ck_assert_str_eq(g->runtime_name, "rt");
    ck_assert_str_eq(g->topology.mode, "soft");
    ck_assert_str_eq(g->topology.highest_tier_name, "leaf");
    ck_assert_str_eq(g->podsets[0].name, "node");
    ck_assert_str_eq(g->podsets[0].ancestor, "trainer");
    ck_assert_str_eq(g->podsets[1].name, "eval");
    ck_assert_str_eq(g->podsets[1].depends_on[0], "node");
    ck_assert_str_eq(g->podsets[1].depends_status[0], "Complete");
    ck_assert_str_eq(g->podsets[1].priority_class, "p1");
    ck_assert_str_eq(g->podsets[1].scheduler_name, "volcano");
    struct gc_arena *a = gc_arena_new(0);
    struct gc_value *pg = NULL;
    ck_assert_int_eq(gc_render_podgroup(g, a, &pg), 0);
    char *text = NULL;
    ck_assert_int_eq(gc_explain(g, &text), 0);
    ck_assert_ptr_nonnull(strstr(text, "team-q"));
    free(text);
    gc_arena_free(a);
    gc_gang_free(g);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gang_policy");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, queue_sources_in_order);
  tcase_add_test(tc, queue_empty_and_missing);
  tcase_add_test(tc, queue_long_label);
  tcase_add_test(tc, priority_class_last_wins);
  tcase_add_test(tc, topology_rules);
  tcase_add_test(tc, timeout_rules);
  tcase_add_test(tc, backend_choice);
  tcase_add_test(tc, runtime_ref_rules);
  tcase_add_test(tc, deprecated_and_elastic);
  tcase_add_test(tc, generations_overrides_and_patches);
  tcase_add_test(tc, gang_outlives_inputs);
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
