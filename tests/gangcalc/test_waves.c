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
      {"a", NULL, 0},       {"b", D("a"), 1}, {"c", D("a", "b"), 2},
      {"d", NULL, 0},       {"e", D("d"), 1},
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
  struct gc_wave_job jobs[] = {{"late", D("early"), 1}, {"early", NULL, 0}};
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
  struct gc_wave_job jobs[] = {{"a", NULL, 0}, {"b", D("a", "nope"), 2}};
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
  struct gc_wave_job jobs[] = {{"a", D("c"), 1}, {"b", D("a"), 1}, {"c", D("b"), 1},
                               {"self", D("self"), 1}};
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

START_TEST(waves_pick) {
  int waves[] = {0, 0, 1};
  int32_t counts[] = {1, 1, 4};
  int trainer[] = {0, 0, 1};
  ck_assert_int_eq(gc_waves_pick_gang(waves, counts, trainer, 3), 1);
  /* Tie 2 vs 2: the trainer's wave wins. */
  counts[2] = 2;
  ck_assert_int_eq(gc_waves_pick_gang(waves, counts, trainer, 3), 1);
  /* Tie without a trainer: the earliest. */
  trainer[2] = 0;
  ck_assert_int_eq(gc_waves_pick_gang(waves, counts, trainer, 3), 0);
  /* Trainer in wave 0 and a tie: wave 0. */
  trainer[0] = 1;
  ck_assert_int_eq(gc_waves_pick_gang(waves, counts, trainer, 3), 0);
  /* More pods beat the trainer. */
  trainer[0] = 0;
  trainer[2] = 1;
  counts[2] = 1;
  ck_assert_int_eq(gc_waves_pick_gang(waves, counts, trainer, 3), 0);
  ck_assert_int_eq(gc_waves_pick_gang(waves, counts, trainer, 0), -1);
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
  gb_test_run_with(&r, gb_test_fmt("%s%s", torchtune(),
                                   gb_test_trainjob("tune", "torchtune",
                                                    "  trainer: {numNodes: 4}\n")),
                   GC_BACKEND_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_wave, 1);
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
  gb_test_run_with(&r, gb_test_fmt("%s%s", torchtune(),
                                   gb_test_trainjob("tune", "torchtune",
                                                    "  trainer: {numNodes: 4}\n")),
                   GC_BACKEND_UNSET, GC_SCOPE_ALL);
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
  /* numNodes 1: the initializer wave (2 pods) is larger than the trainer
   * wave (1 pod), so it forms the gang and the trainer is bound only. */
  struct gb_test_run r;
  gb_test_run_with(&r, gb_test_fmt("%s%s", torchtune(), gb_test_trainjob("tune", "torchtune", NULL)),
                   GC_BACKEND_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_wave, 0);
  ck_assert_int_eq(r.g->min_member, 2);
  ck_assert_int_eq(gb_test_podset(r.g, "node")->binding, GC_BIND_BOUND);
  gb_test_run_free(&r);

  /* numNodes 2: a tie (2 vs 2) goes to the trainer's wave. */
  gb_test_run_with(&r, gb_test_fmt("%s%s", torchtune(),
                                   gb_test_trainjob("tune", "torchtune",
                                                    "  trainer: {numNodes: 2}\n")),
                   GC_BACKEND_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->gang_wave, 1);
  ck_assert_int_eq(r.g->min_member, 2);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(waves_errors_in_gang) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      "ClusterTrainingRuntime", "rt", "",
      gb_test_job("a", NULL, -1, "[{name: a}]", "[{name: b, status: Ready}]", NULL, NULL),
      gb_test_job("b", NULL, -1, "[{name: b}]", "[{name: a, status: Complete}]", NULL, NULL),
      gb_test_job("c", NULL, -1, "[{name: c}]", "[{name: zz, status: Ready}]", NULL, NULL), NULL);
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)),
                   GC_BACKEND_UNSET, GC_SCOPE_WAVE);
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
  tcase_add_test(tc, waves_pick);
  tcase_add_test(tc, waves_torchtune_plan);
  tcase_add_test(tc, waves_torchtune_one_node);
  tcase_add_test(tc, waves_errors_in_gang);
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
