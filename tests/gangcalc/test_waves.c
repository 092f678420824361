/* SPDX-License-Identifier: Apache-2.0
 *
 * dependsOn waves and the gang choice: wave numbers, unknown names and
 * cycles with exact paths, tie rules, and the binding plan of whole gangs.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"
#include "gc_waves.h"

#define D(...) ((const char *const[]){__VA_ARGS__})

START_TEST(waves_numbers) {
  struct gc_wave_job jobs[] = {
      {"a", NULL, 0, NULL},       {"b", D("a"), 1, NULL}, {"c", D("a", "b"), 2, NULL},
      {"d", NULL, 0, NULL},       {"e", D("d"), 1, NULL},
  };
  int w[5];
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_waves_compute(jobs, 5, "rt", w, &d), 0);
  ck_assert_int_eq(w[0], 0);
  ck_assert_int_eq(w[1], 1);
  ck_assert_int_eq(w[2], 2);
  ck_assert_int_eq(w[3], 0);
  ck_assert_int_eq(w[4], 1);
  ck_assert_uint_eq(d.n, 0);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(waves_forward_reference) {
  /* Order in the list does not matter for the wave. */
  struct gc_wave_job jobs[] = {{"late", D("early"), 1, NULL}, {"early", NULL, 0, NULL}};
  int w[2];
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_waves_compute(jobs, 2, "rt", w, &d), 0);
  ck_assert_int_eq(w[0], 1);
  ck_assert_int_eq(w[1], 0);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(waves_unknown_dependency) {
  struct gc_wave_job jobs[] = {{"a", NULL, 0, NULL}, {"b", D("a", "nope"), 2, NULL}};
  int w[2];
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_waves_compute(jobs, 2, "ClusterTrainingRuntime/x", w, &d), GC_EINVAL);
  ck_assert_uint_eq(d.errors, 1);
  ck_assert_str_eq(d.msgs[0], "ClusterTrainingRuntime/x: spec.template.spec.replicatedJobs[1]."
                              "dependsOn[1].name: unknown replicated job \"nope\"");
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(waves_cycles) {
  struct gc_wave_job jobs[] = {{"a", D("c"), 1, NULL}, {"b", D("a"), 1, NULL}, {"c", D("b"), 1, NULL},
                               {"self", D("self"), 1, NULL}};
  int w[4];
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_waves_compute(jobs, 4, "rt", w, &d), GC_EINVAL);
  ck_assert_uint_eq(d.errors, 2);
  ck_assert(gb_test_has_diag(&d, "rt: spec.template.spec.replicatedJobs[1].dependsOn[0].name: "
                             "dependency cycle: a -> c -> b -> a"));
  ck_assert(gb_test_has_diag(&d, "rt: spec.template.spec.replicatedJobs[3].dependsOn[0].name: "
                             "dependency cycle: self -> self"));
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(waves_limit) {
  struct gc_wave_job *jobs = calloc(GC_WAVES_MAX_JOBS + 1, sizeof(*jobs));
  int *w = calloc(GC_WAVES_MAX_JOBS + 1, sizeof(int));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_waves_compute(jobs, GC_WAVES_MAX_JOBS + 1, "rt", w, &d), GC_ELIMIT);
  gc_diags_destroy(&d);
  free(jobs);
  free(w);
}
END_TEST

START_TEST(waves_long_chain) {
  /* A chain as long as the job limit: no stack or time trouble. */
  size_t n = GC_WAVES_MAX_JOBS;
  struct gc_wave_job *jobs = calloc(n, sizeof(*jobs));
  char (*names)[16] = calloc(n, 16);
  const char **deps = calloc(n, sizeof(char *));
  int *w = calloc(n, sizeof(int));
  for (size_t i = 0; i < n; i++) {
    snprintf(names[i], 16, "j%zu", i);
    jobs[i].name = names[i];
    if (i) {
      deps[i] = names[i - 1];
      jobs[i].deps = &deps[i];
      jobs[i].n_deps = 1;
    }
  }
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_waves_compute(jobs, n, "rt", w, &d), 0);
  ck_assert_int_eq(w[n - 1], (int)n - 1);
  gc_diags_destroy(&d);
  free(jobs);
  free(names);
  free(deps);
  free(w);
}
END_TEST

static const char *torchtune(void) {
  /* The shape of the shipped torchtune runtimes. */
  return gb_test_runtime(
      "ClusterTrainingRuntime", "torchtune", "  mlPolicy: {numNodes: 1, torch: {}}\n",
      gb_test_job("dataset-initializer", "dataset-initializer", -1,
                  "[{name: dataset-initializer, image: x}]", NULL, NULL, NULL),
      gb_test_job("model-initializer", "model-initializer", -1,
                  "[{name: model-initializer, image: x}]", NULL, NULL, NULL),
      gb_test_job("node", "trainer", -1,
                  "[{name: node, image: x, resources: {limits: {nvidia.com/gpu: 2}}}]",
                  "[{name: dataset-initializer, status: Complete}, "
                  "{name: model-initializer, status: Complete}]",
                  NULL, NULL),
      NULL);
}

START_TEST(waves_torchtune_plan) {
  struct gb_test_run r;
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", torchtune(),
                               gb_test_trainjob("tune", "torchtune", "  trainer: {numNodes: 4}\n")),
                   TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_phase, 1);
  ck_assert_int_eq(r.g->min_member, 4);
  char buf[GC_QUANTITY_BUFSZ];
  ck_assert_str_eq(gb_test_qty(&r.g->min_resources, "nvidia.com/gpu", buf), "8");
  ck_assert_int_eq(gb_test_podset(r.g, "dataset-initializer")->binding, GC_BIND_UNBOUND);
  ck_assert_int_eq(gb_test_podset(r.g, "model-initializer")->binding, GC_BIND_UNBOUND);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->binding, GC_BIND_COUNTED);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->wave, 1);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_GANG_SCOPE_NARROWED, "minMember 6"));
  gb_test_run_free(&r);

  /* Scope all: Trainer's numbers exactly (the GPU in limits still counts). */
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", torchtune(),
                               gb_test_trainjob("tune", "torchtune", "  trainer: {numNodes: 4}\n")),
                   TB_UNSET, GC_SCOPE_ALL);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_wave, -1);
  ck_assert_int_eq(r.g->min_member, 6);
  for (size_t i = 0; i < r.g->n_podsets; i++)
    ck_assert_int_eq(r.g->podsets[i].binding, GC_BIND_COUNTED);
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_GANG_SCOPE_NARROWED, NULL));
  gb_test_run_free(&r);
}
END_TEST

START_TEST(waves_torchtune_one_node) {
  /* numNodes 1: the initializers (2 pods, phase 0) outnumber the trainer
   * (1 pod, phase 1, after they Complete), but the gang is the phase holding
   * the trainer step: the trainer pod and its 2 GPUs are counted. */
  struct gb_test_run r;
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", torchtune(), gb_test_trainjob("tune", "torchtune", NULL)),
                   TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_phase, 1);
  ck_assert_int_eq(r.g->min_member, 1);
  char buf[GC_QUANTITY_BUFSZ];
  ck_assert_str_eq(gb_test_qty(&r.g->min_resources, "nvidia.com/gpu", buf), "2");
  ck_assert_int_eq(gb_test_podset(r.g, "node")->binding, GC_BIND_COUNTED);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->phase, 1);
  ck_assert_int_eq(gb_test_podset(r.g, "dataset-initializer")->binding, GC_BIND_UNBOUND);
  ck_assert_int_eq(gb_test_podset(r.g, "model-initializer")->phase, 0);
  gb_test_run_free(&r);

  /* numNodes 2: the same phase. */
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", torchtune(),
                               gb_test_trainjob("tune", "torchtune", "  trainer: {numNodes: 2}\n")),
                   TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_phase, 1);
  ck_assert_int_eq(r.g->min_member, 2);
  gb_test_run_free(&r);
}
END_TEST

static const char *deepspeed(void) {
  /* The shape of deepspeed_distributed.yaml: the launcher carries the
   * trainer label and starts once the `node` workers are Ready. */
  return gb_test_runtime(
      "ClusterTrainingRuntime", "ds", "  mlPolicy: {numNodes: 1, mpi: {numProcPerNode: 1, "
      "mpiImplementation: OpenMPI, runLauncherAsNode: false}}\n",
      gb_test_job("launcher", "trainer", -1, "[{name: node, image: x}]",
                  "[{name: node, status: Ready}]", NULL, NULL),
      gb_test_job("node", NULL, -1,
                  "[{name: node, image: x, resources: {requests: {nvidia.com/gpu: 1}}}]", NULL,
                  NULL, NULL),
      NULL);
}

START_TEST(waves_deepspeed_ready_same_phase) {
  /* numNodes 1: launcher and node hold 1 pod each.  The launcher runs beside
   * the workers (Ready: same phase) but is created only once they are
   * Ready: the gang is the node workers; the launcher is bound. */
  struct gb_test_run r;
  gb_test_run_with(&r, gb_test_fmt("%s%s", deepspeed(), gb_test_trainjob("ds1", "ds", NULL)),
                   TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_phase, 0);
  ck_assert_int_eq(r.g->min_member, 1);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->binding, GC_BIND_COUNTED);
  ck_assert_int_eq(gb_test_podset(r.g, "launcher")->binding, GC_BIND_BOUND);
  ck_assert_int_eq(gb_test_podset(r.g, "launcher")->phase, 0);
  char buf[GC_QUANTITY_BUFSZ];
  ck_assert_str_eq(gb_test_qty(&r.g->min_resources, "nvidia.com/gpu", buf), "1");
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_GANG_SCOPE_NARROWED, NULL));
  gb_test_run_free(&r);

  gb_test_run_with(
      &r,
      gb_test_fmt("%s%s", deepspeed(), gb_test_trainjob("ds3", "ds", "  trainer: {numNodes: 3}\n")),
      TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->min_member, 3);
  ck_assert_str_eq(gb_test_qty(&r.g->min_resources, "nvidia.com/gpu", buf), "3");
  gb_test_run_free(&r);
}
END_TEST

START_TEST(waves_phases_unit) {
  /* a, b: phase 0; c Ready on a: phase 0, later wave; d Complete on b:
   * phase 1; e Ready on d: phase 1, later wave; f Complete on c and Ready on
   * d: phase 1 (max), not first (Ready on a job of its own phase). */
  struct gc_wave_job jobs[] = {
      {"a", NULL, 0, NULL},
      {"b", NULL, 0, NULL},
      {"c", D("a"), 1, D("Ready")},
      {"d", D("b"), 1, D("Complete")},
      {"e", D("d"), 1, D("Ready")},
      {"f", D("c", "d"), 2, D("Complete", "Ready")},
  };
  int w[6], ph[6], first[6];
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_waves_compute(jobs, 6, "rt", w, &d), 0);
  ck_assert_int_eq(gc_waves_phases(jobs, 6, w, ph, first), 0);
  int want_ph[] = {0, 0, 0, 1, 1, 1};
  int want_first[] = {1, 1, 0, 1, 0, 0};
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(ph[i], want_ph[i]);
    ck_assert_int_eq(first[i], want_first[i]);
  }
  /* The trainer's phase wins over a larger phase; without a trainer the
   * phase with the most pods, ties to the earliest. */
  int32_t counts[] = {1, 1, 1, 1, 1, 1};
  int trainer[] = {0, 0, 0, 1, 0, 0};
  ck_assert_int_eq(gc_waves_pick_phase(ph, counts, trainer, 6), 1);
  trainer[3] = 0;
  ck_assert_int_eq(gc_waves_pick_phase(ph, counts, trainer, 6), 0);
  counts[4] = 5;
  ck_assert_int_eq(gc_waves_pick_phase(ph, counts, trainer, 6), 1);
  ck_assert_int_eq(gc_waves_pick_phase(ph, counts, trainer, 0), -1);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(waves_errors_in_gang) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      "ClusterTrainingRuntime", "rt", "",
      gb_test_job("a", NULL, -1, "[{name: a}]", "[{name: b, status: Ready}]", NULL, NULL),
      gb_test_job("b", NULL, -1, "[{name: b}]", "[{name: a, status: Complete}]", NULL, NULL),
      gb_test_job("c", NULL, -1, "[{name: c}]", "[{name: zz, status: Ready}]", NULL, NULL), NULL);
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)), TB_UNSET,
                   GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.template.spec."
                             "replicatedJobs[1].dependsOn[0].name: dependency cycle: a -> b -> a"));
  ck_assert(gb_test_has_diag(&r.diags, "ClusterTrainingRuntime/rt: spec.template.spec."
                             "replicatedJobs[2].dependsOn[0].name: unknown replicated job \"zz\""));
  gb_test_run_free(&r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("waves");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, waves_numbers);
  tcase_add_test(tc, waves_forward_reference);
  tcase_add_test(tc, waves_unknown_dependency);
  tcase_add_test(tc, waves_cycles);
  tcase_add_test(tc, waves_limit);
  tcase_add_test(tc, waves_long_chain);
  tcase_add_test(tc, waves_torchtune_plan);
  tcase_add_test(tc, waves_torchtune_one_node);
  tcase_add_test(tc, waves_errors_in_gang);
  tcase_add_test(tc, waves_deepspeed_ready_same_phase);
  tcase_add_test(tc, waves_phases_unit);
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
