/* SPDX-License-Identifier: Apache-2.0
 *
 * Gang counts and totals: Trainer's worked numbers (kubeflow-trainer.md
 * section 2.7, reproduced with scope "all"), every mlPolicy kind, MPI
 * runLauncherAsNode, numNodes 0, TrainJob overriding the runtime, replicas,
 * resourcesPerNode merging.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"

#define CTR "ClusterTrainingRuntime"
#define TRAINER "trainer"

static char qbuf[GC_QUANTITY_BUFSZ];

static void expect_ok(struct gb_test_run *r) {
  if (r->rc != 0)
    gb_test_dump(&r->diags);
  ck_assert_int_eq(r->rc, 0);
  ck_assert_ptr_nonnull(r->g);
}

static void expect_res(const struct gc_reslist *l, const char *name, const char *want) {
  const char *got = gb_test_qty(l, name, qbuf);
  ck_assert_msg(got != NULL, "%s missing", name);
  ck_assert_str_eq(got, want);
}

static const char *containers(const char *cpu, const char *mem) {
  if (mem)
    return gb_test_fmt("[{name: node, image: x, resources: {requests: {cpu: \"%s\", memory: "
                       "\"%s\"}}}]", cpu, mem);
  return gb_test_fmt("[{name: node, image: x, resources: {requests: {cpu: \"%s\"}}}]", cpu);
}

static const char *init_job(const char *name, const char *cpu, const char *mem) {
  return gb_test_job(name, name, -1,
                     gb_test_fmt("[{name: %s, image: x, resources: {requests: {cpu: \"%s\", "
                                 "memory: \"%s\"}}}]", name, cpu, mem),
                     NULL, NULL, NULL);
}

/* coscheduling: node 2 x (500m, 1Gi) + dataset-initializer 1 x (250m, 512Mi). */
START_TEST(worked_coscheduling) {
  struct gb_test_run r;
  const char *y = gb_test_fmt(
      "%s%s",
      gb_test_runtime(CTR, "rt",
                      "  mlPolicy: {numNodes: 2, torch: {}}\n"
                      "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 100}}\n",
                      init_job("dataset-initializer", "250m", "512Mi"),
                      gb_test_job("node", TRAINER, -1, containers("500m", "1Gi"), NULL, NULL,
                                  NULL),
                      NULL),
      gb_test_trainjob("job", "rt", NULL));
  gb_test_run_with(&r, y, TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_ptr_eq(r.g->backend, TB_COSCHED);
  ck_assert_int_eq(r.g->min_member, 3);
  expect_res(&r.g->min_resources, "cpu", "1250m");
  expect_res(&r.g->min_resources, "memory", "2560Mi");
  ck_assert_int_eq(r.g->schedule_timeout_seconds, 100);
  gb_test_run_free(&r);
}
END_TEST

/* volcano: launcher 1 x (300m, 1Gi) + worker 4 x (500m, 0.5Gi). */
START_TEST(worked_volcano) {
  struct gb_test_run r;
  const char *y = gb_test_fmt(
      "%s%s",
      gb_test_runtime(CTR, "rt", "  podGroupPolicy: {volcano: {}}\n",
                      gb_test_job("launcher", NULL, -1, containers("300m", "1Gi"), NULL, NULL,
                                  NULL),
                      gb_test_job("worker", NULL, 4, containers("500m", "0.5Gi"), NULL, NULL,
                                  NULL),
                      NULL),
      gb_test_trainjob("job", "rt", NULL));
  gb_test_run_with(&r, y, TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_ptr_eq(r.g->backend, TB_VOLCANO);
  ck_assert_int_eq(r.g->min_member, 5);
  expect_res(&r.g->min_resources, "cpu", "2300m");
  expect_res(&r.g->min_resources, "memory", "3Gi");
  gb_test_run_free(&r);
}
END_TEST

/* 2 initializers 1 x (1, 4Gi) + trainer numNodes 100 x (2, 8Gi). */
START_TEST(worked_framework) {
  struct gb_test_run r;
  const char *y = gb_test_fmt(
      "%s%s",
      gb_test_runtime(CTR, "rt", "  mlPolicy: {numNodes: 100, torch: {}}\n",
                      init_job("dataset-initializer", "1", "4Gi"),
                      init_job("model-initializer", "1", "4Gi"),
                      gb_test_job("node", TRAINER, -1, containers("2", "8Gi"),
                                  "[{name: dataset-initializer, status: Complete}, "
                                  "{name: model-initializer, status: Complete}]",
                                  NULL, NULL),
                      NULL),
      gb_test_trainjob("job", "rt", NULL));
  char *copy = strdup(y); /* gb_test_run_free frees y */
  gb_test_run_with(&r, copy, TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_int_eq(r.g->min_member, 102);
  expect_res(&r.g->min_resources, "cpu", "202");
  expect_res(&r.g->min_resources, "memory", "808Gi");
  gb_test_run_free(&r);

  /* The same with the default scope: the 100 trainer pods form the gang and
   * the initializers, which run before them, are left unbound. */
  gb_test_run_with(&r, copy, TB_UNSET, GC_SCOPE_WAVE);
  expect_ok(&r);
  ck_assert_int_eq(r.g->min_member, 100);
  expect_res(&r.g->min_resources, "cpu", "200");
  expect_res(&r.g->min_resources, "memory", "800Gi");
  ck_assert_int_eq(gb_test_podset(r.g, "dataset-initializer")->binding, GC_BIND_UNBOUND);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->binding, GC_BIND_COUNTED);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_GANG_SCOPE_NARROWED, "minMember 102"));
  gb_test_run_free(&r);
  free(copy);
}
END_TEST

/* runtime numNodes 100, TrainJob numNodes 30, cpu 1 each, 2 initializers. */
START_TEST(worked_trainjob_overrides_runtime) {
  struct gb_test_run r;
  const char *cpu1 = "[{name: %s, image: x, resources: {requests: {cpu: 1}}}]";
  const char *y = gb_test_fmt(
      "%s%s",
      gb_test_runtime("TrainingRuntime", "rt", "  mlPolicy: {numNodes: 100, torch: {}}\n",
                      gb_test_job("dataset-initializer", "dataset-initializer", -1,
                                  gb_test_fmt(cpu1, "dataset-initializer"), NULL, NULL, NULL),
                      gb_test_job("model-initializer", "model-initializer", -1,
                                  gb_test_fmt(cpu1, "model-initializer"), NULL, NULL, NULL),
                      gb_test_job("node", TRAINER, -1, gb_test_fmt(cpu1, "node"), NULL, NULL,
                                  NULL),
                      NULL),
      gb_test_fmt("---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                  "metadata: {name: job, namespace: default}\n"
                  "spec:\n  runtimeRef: {name: rt, kind: TrainingRuntime}\n"
                  "  trainer: {numNodes: 30}\n"));
  gb_test_run_with(&r, y, TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_int_eq(r.g->min_member, 32);
  expect_res(&r.g->min_resources, "cpu", "32");
  ck_assert_int_eq(gb_test_podset(r.g, "node")->count, 30);
  ck_assert_str_eq(r.g->runtime_kind, "TrainingRuntime");
  gb_test_run_free(&r);
}
END_TEST

/* ClusterTrainingRuntime numNodes 100, cpu 1 each, with initializers;
 * envtest: numNodes 100, (1, 4Gi) each. */
START_TEST(worked_runtime_numnodes) {
  struct gb_test_run r;
  const char *y = gb_test_fmt(
      "%s%s",
      gb_test_runtime(CTR, "rt", "  mlPolicy: {numNodes: 100, torch: {}}\n",
                      init_job("dataset-initializer", "1", "4Gi"),
                      init_job("model-initializer", "1", "4Gi"),
                      gb_test_job("node", TRAINER, -1, containers("1", "4Gi"), NULL, NULL, NULL),
                      NULL),
      gb_test_trainjob("job", "rt", NULL));
  gb_test_run_with(&r, y, TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_int_eq(r.g->min_member, 102);
  expect_res(&r.g->min_resources, "cpu", "102");
  expect_res(&r.g->min_resources, "memory", "408Gi");
  gb_test_run_free(&r);
}
END_TEST

/* Every non-MPI mlPolicy kind: runtime numNodes for the trainer step, the
 * TrainJob's numNodes over it; no mlPolicy: parallelism, TrainJob still
 * applies (PlainML). */
START_TEST(counts_every_policy_kind) {
  static const char *const kinds[] = {"torch: {}", "jax: {}", "xgboost: {}", "flux: {}", NULL};
  for (int k = 0; k < 5; k++) {
    for (int with_tj = 0; with_tj < 2; with_tj++) {
      struct gb_test_run r;
      const char *ml = kinds[k] ? gb_test_fmt("  mlPolicy: {numNodes: 3, %s}\n", kinds[k]) : "";
      const char *y = gb_test_fmt(
          "%s%s",
          gb_test_runtime(CTR, "rt", ml,
                          gb_test_job("node", TRAINER, 2, containers("1", NULL), NULL, NULL,
                                      NULL),
                          gb_test_job("aux", NULL, 2, containers("1", NULL), NULL, NULL, NULL),
                          NULL),
          gb_test_trainjob("job", "rt", with_tj ? "  trainer: {numNodes: 7}\n" : NULL));
      gb_test_run_with(&r, y, TB_UNSET, GC_SCOPE_ALL);
      expect_ok(&r);
      int want = with_tj ? 7 : kinds[k] ? 3 : 2;
      ck_assert_int_eq(gb_test_podset(r.g, "node")->count, want);
      ck_assert_int_eq(gb_test_podset(r.g, "aux")->count, 2);
      ck_assert_int_eq(r.g->min_member, want + 2);
      gb_test_run_free(&r);
    }
  }
}
END_TEST

/* mlPolicy without numNodes gives the trainer step 1 pod; parallelism 0
 * becomes 1 (WithPodSet's max). */
START_TEST(counts_defaults) {
  struct gb_test_run r;
  const char *y = gb_test_fmt(
      "%s%s",
      gb_test_runtime(CTR, "rt", "  mlPolicy: {torch: {}}\n",
                      gb_test_job("node", TRAINER, 8, containers("1", NULL), NULL, NULL, NULL),
                      gb_test_job("aux", NULL, 0, containers("1", NULL), NULL, NULL, NULL), NULL),
      gb_test_trainjob("job", "rt", NULL));
  gb_test_run_with(&r, y, TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->count, 1);
  ck_assert_int_eq(gb_test_podset(r.g, "aux")->count, 1);
  gb_test_run_free(&r);
}
END_TEST

static const char *mpi_runtime(int rlan) {
  /* The deepspeed shape: launcher carries the trainer label, node none. */
  return gb_test_runtime(
      CTR, "mpi",
      gb_test_fmt("  mlPolicy: {numNodes: 1, mpi: {numProcPerNode: 1, runLauncherAsNode: %s}}\n",
                  rlan ? "true" : "false"),
      gb_test_job("node", NULL, -1, containers("1", NULL), NULL, NULL, NULL),
      gb_test_job("launcher", TRAINER, -1, containers("2", NULL),
                  "[{name: node, status: Ready}]", NULL, NULL),
      NULL);
}

START_TEST(counts_mpi_run_launcher_as_node) {
  static const struct {
    int rlan;
    int numnodes; /* -1: TrainJob leaves it unset */
    int want_node;
  } cases[] = {{1, 4, 3}, {1, 2, 1}, {1, 1, 1}, {1, 0, 1}, {1, -1, 1},
               {0, 4, 4}, {0, 1, 1}, {0, -1, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gb_test_run r;
    const char *tj = cases[i].numnodes >= 0
                         ? gb_test_fmt("  trainer: {numNodes: %d}\n", cases[i].numnodes)
                         : NULL;
    gb_test_run_with(
        &r, gb_test_fmt("%s%s", mpi_runtime(cases[i].rlan), gb_test_trainjob("job", "mpi", tj)),
        TB_UNSET, GC_SCOPE_ALL);
    expect_ok(&r);
    ck_assert_msg(gb_test_podset(r.g, "node")->count == cases[i].want_node,
                  "case %zu: node count %d, want %d", i, gb_test_podset(r.g, "node")->count,
                  cases[i].want_node);
    /* The launcher keeps the runtime's mlPolicy.numNodes (1). */
    ck_assert_int_eq(gb_test_podset(r.g, "launcher")->count, 1);
    ck_assert_int_eq(r.g->min_member, cases[i].want_node + 1);
    gb_test_run_free(&r);
  }
}
END_TEST

/* MPI with the default wave scope: node (wave 0) is the gang, the launcher
 * that waits for node Ready is bound but not counted. */
START_TEST(counts_mpi_waves) {
  struct gb_test_run r;
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", mpi_runtime(1),
                               gb_test_trainjob("job", "mpi", "  trainer: {numNodes: 5}\n")),
                   TB_UNSET, GC_SCOPE_WAVE);
  expect_ok(&r);
  ck_assert_int_eq(r.g->gang_wave, 0);
  ck_assert_int_eq(r.g->min_member, 4);
  expect_res(&r.g->min_resources, "cpu", "4");
  ck_assert_int_eq(gb_test_podset(r.g, "launcher")->binding, GC_BIND_BOUND);
  ck_assert_int_eq(gb_test_podset(r.g, "launcher")->wave, 1);
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_GANG_SCOPE_NARROWED, NULL));
  gb_test_run_free(&r);
}
END_TEST

/* numNodes 0 is allowed: the trainer step gets 0 pods. */
START_TEST(counts_numnodes_zero) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 4, torch: {}}\n",
      init_job("dataset-initializer", "1", "1Gi"),
      gb_test_job("node", TRAINER, -1, containers("1", NULL), NULL, NULL, NULL), NULL);
  gb_test_run_with(
      &r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", "  trainer: {numNodes: 0}\n")),
      TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->count, 0);
  ck_assert_int_eq(r.g->min_member, 1);
  expect_res(&r.g->min_resources, "cpu", "1");
  gb_test_run_free(&r);

  /* With only the trainer step, a gang of no pods is refused. */
  rt = gb_test_runtime(CTR, "rt", "  mlPolicy: {numNodes: 4, torch: {}}\n",
                       gb_test_job("node", TRAINER, -1, containers("1", NULL), NULL, NULL, NULL),
                       NULL);
  gb_test_run_with(
      &r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", "  trainer: {numNodes: 0}\n")),
      TB_UNSET, GC_SCOPE_ALL);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert_ptr_null(r.g);
  ck_assert(gb_test_has_diag(&r.diags, "default/job: spec.trainer.numNodes: 0 leaves the gang "
                             "with no pods; a PodGroup needs minMember >= 1"));
  gb_test_run_free(&r);
}
END_TEST

START_TEST(counts_replicas_warned) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      CTR, "rt", "",
      gb_test_job("node", NULL, 2, containers("1", NULL), NULL, "          replicas: 3\n", NULL),
      NULL);
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)), TB_UNSET,
                   GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->count, 2);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->replicas, 3);
  ck_assert_int_eq(r.g->min_member, 2);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "replicas 3"));
  gb_test_run_free(&r);
}
END_TEST

/* resourcesPerNode merges per key into the trainer's node container. */
START_TEST(counts_resources_per_node_merge) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {}}\n",
      gb_test_job("node", TRAINER, -1,
                  "[{name: node, image: x, resources: {requests: {cpu: 1, memory: 2Gi}}}, "
                  "{name: side, image: y, resources: {requests: {cpu: 100m}}}]",
                  NULL, NULL, NULL),
      NULL);
  const char *tj = gb_test_trainjob(
      "job", "rt",
      "  trainer:\n    numNodes: 3\n    resourcesPerNode:\n"
      "      requests: {cpu: 4}\n      limits: {cpu: 8, nvidia.com/gpu: 2}\n");
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, tj), TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  const struct gc_podset *ps = gb_test_podset(r.g, "node");
  expect_res(&ps->request, "cpu", "4100m");
  expect_res(&ps->request, "memory", "2Gi");
  expect_res(&ps->request, "nvidia.com/gpu", "2");
  expect_res(&ps->limits_only, "nvidia.com/gpu", "2");
  ck_assert_int_eq(r.g->min_member, 3);
  expect_res(&r.g->min_resources, "cpu", "12300m");
  expect_res(&r.g->min_resources, "nvidia.com/gpu", "6");
  ck_assert(gb_test_has_warning(r.g, GC_WARN_LIMITS_ONLY, "nvidia.com/gpu"));
  gb_test_run_free(&r);
}
END_TEST

/* Computing never changes the input documents (the runtime is read in
 * place when the TrainJob has no overrides or patches). */
START_TEST(counts_inputs_untouched) {
  const char *rt = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {}}\n",
      gb_test_job("node", TRAINER, -1,
                  "[{name: node, image: x, resources: {requests: {cpu: 1}}}]", NULL, NULL, NULL),
      NULL);
  static const char *const extras[] = {
      "  trainer: {numNodes: 3, resourcesPerNode: {requests: {cpu: 4}, limits: {x.io/y: 1}}}\n",
      "  trainer: {resourcesPerNode: {requests: {cpu: 4}}}\n  runtimePatches: [{manager: a.io/b,"
      " trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: node, template: {spec:"
      " {template: {spec: {nodeSelector: {a: b}}}}}}]}}}}]\n",
      "  podTemplateOverrides: [{targetJobs: [{name: node}], spec: {nodeSelector: {a: b}}}]\n"};
  for (size_t k = 0; k < 3; k++) {
    struct gb_docset *ds = gb_test_load(gb_test_fmt("%s%s", rt,
                                                     gb_test_trainjob("job", "rt", extras[k])));
    struct gc_value *rt_before = gc_value_clone(ds->arena, ds->docs[0].root);
    struct gc_value *tj_before = gc_value_clone(ds->arena, ds->docs[1].root);
    struct gc_catalog *cat = gc_catalog_new();
    struct gc_diags d;
    gc_diags_init(&d);
    ck_assert_int_eq(gc_catalog_add(cat, ds->docs[0].root, "t", &d), 0);
    struct gc_gang *g = NULL;
    ck_assert_int_eq(gc_gang_compute(ds->docs[1].root, cat, NULL, &g, &d), 0);
    ck_assert(gc_value_equal(rt_before, ds->docs[0].root));
    ck_assert(gc_value_equal(tj_before, ds->docs[1].root));
    expect_res(&g->podsets[0].request, "cpu", k < 2 ? "4" : "1");
    gc_gang_free(g);
    gc_catalog_free(cat);
    gc_diags_destroy(&d);
    gb_docset_free(ds);
  }
}
END_TEST

/* Without an mlPolicy, Trainer does not merge resourcesPerNode at all. */
START_TEST(counts_resources_per_node_needs_ml_policy) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      CTR, "rt", "",
      gb_test_job("node", TRAINER, -1, containers("1", NULL), NULL, NULL, NULL), NULL);
  const char *tj = gb_test_trainjob(
      "job", "rt", "  trainer:\n    resourcesPerNode: {requests: {cpu: 4}}\n");
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, tj), TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  expect_res(&gb_test_podset(r.g, "node")->request, "cpu", "1");
  gb_test_run_free(&r);
}
END_TEST

/* MPI runLauncherAsNode: resourcesPerNode reaches both node and launcher. */
START_TEST(counts_resources_per_node_mpi) {
  struct gb_test_run r;
  const char *tj = gb_test_trainjob(
      "job", "mpi", "  trainer:\n    numNodes: 3\n    resourcesPerNode: {requests: {cpu: 5}}\n");
  gb_test_run_with(&r, gb_test_fmt("%s%s", mpi_runtime(1), tj), TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  expect_res(&gb_test_podset(r.g, "node")->request, "cpu", "5");
  expect_res(&gb_test_podset(r.g, "launcher")->request, "cpu", "5");
  expect_res(&r.g->min_resources, "cpu", "15");
  gb_test_run_free(&r);
}
END_TEST

/* The ancestor label on the pod template is not where Trainer looks. */
START_TEST(counts_ancestor_label_on_pod_template) {
  struct gb_test_run r;
  const char *rt =
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
      "metadata: {name: rt}\nspec:\n  mlPolicy: {numNodes: 2, torch: {}}\n"
      "  template:\n    spec:\n      replicatedJobs:\n        - name: node\n"
      "          template:\n            spec:\n              template:\n"
      "                metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
      "                spec: {containers: [{name: node, resources: {requests: {cpu: 1}}}]}\n";
  gb_test_run_with(
      &r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", "  trainer: {numNodes: 8}\n")),
      TB_UNSET, GC_SCOPE_ALL);
  expect_ok(&r);
  ck_assert_int_eq(r.g->min_member, 1);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "pod template"));
  ck_assert(gb_test_has_warning(r.g, GC_WARN_OTHER, "numNodes has no effect"));
  gb_test_run_free(&r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gang_counts");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, worked_coscheduling);
  tcase_add_test(tc, worked_volcano);
  tcase_add_test(tc, worked_framework);
  tcase_add_test(tc, worked_trainjob_overrides_runtime);
  tcase_add_test(tc, worked_runtime_numnodes);
  tcase_add_test(tc, counts_every_policy_kind);
  tcase_add_test(tc, counts_defaults);
  tcase_add_test(tc, counts_mpi_run_launcher_as_node);
  tcase_add_test(tc, counts_mpi_waves);
  tcase_add_test(tc, counts_numnodes_zero);
  tcase_add_test(tc, counts_replicas_warned);
  tcase_add_test(tc, counts_resources_per_node_merge);
  tcase_add_test(tc, counts_resources_per_node_needs_ml_policy);
  tcase_add_test(tc, counts_inputs_untouched);
  tcase_add_test(tc, counts_resources_per_node_mpi);
  tcase_add_test(tc, counts_ancestor_label_on_pod_template);
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
