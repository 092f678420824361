/* SPDX-License-Identifier: Apache-2.0
 *
 * Validation: every problem is reported (not only the first) with the
 * object and the exact field path; nothing is computed from bad input.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"
#include "gc_catalog.h"
#include "gc_catalog_test.h"

#define CTR "ClusterTrainingRuntime"
#define NODE "[{name: node, image: x, resources: {requests: {cpu: 1}}}]"

static const char *good_rt(void) {
  return gb_test_runtime(CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {}}\n",
                         gb_test_job("node", "trainer", -1, NODE, NULL, NULL, NULL), NULL);
}

static void expect_errors(const char *yaml, const char *const *msgs) {
  struct gb_test_run r;
  gb_test_run(&r, yaml, NULL, NULL);
  if (r.rc == 0)
    gb_test_dump(&r.diags);
  ck_assert_int_ne(r.rc, 0);
  ck_assert_ptr_null(r.g);
  size_t n = 0;
  for (; msgs[n]; n++) {
    if (!gb_test_has_diag(&r.diags, msgs[n])) {
      gb_test_dump(&r.diags);
      ck_abort_msg("missing diagnostic: %s", msgs[n]);
    }
  }
  if (r.diags.errors != n)
    gb_test_dump(&r.diags);
  ck_assert_uint_eq(r.diags.errors, n);
  gb_test_run_free(&r);
}

#define ERRS(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(errors_trainjob_fields_all_reported) {
  expect_errors(
      gb_test_fmt("%s%s", good_rt(),
                  gb_test_trainjob("job", "rt",
                                   "  trainer:\n    numNodes: -1\n    numProcPerNode: 0\n"
                                   "    resourcesPerNode: {requests: {cpu: lots}, limits: 5}\n"
                                   "  suspend: maybe\n")),
      ERRS("default/job: spec.trainer.numNodes: must be >= 0",
           "default/job: spec.trainer.numProcPerNode: numProcPerNode must be greater than or "
           "equal to 1",
           "default/job: spec.trainer.resourcesPerNode.limits: must be an object",
           "default/job: spec.suspend: must be a boolean",
           "default/job: spec.trainer.resourcesPerNode.requests.cpu: invalid quantity \"lots\": "
           "quantities must match the regular expression "
           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
}
END_TEST

START_TEST(errors_numnodes_type) {
  expect_errors(gb_test_fmt("%s%s", good_rt(),
                            gb_test_trainjob("job", "rt", "  trainer: {numNodes: \"4\"}\n")),
                ERRS("default/job: spec.trainer.numNodes: must be an integer"));
  expect_errors(gb_test_fmt("%s%s", good_rt(),
                            gb_test_trainjob("job", "rt", "  trainer: {numNodes: 2.5}\n")),
                ERRS("default/job: spec.trainer.numNodes: must be an integer"));
  expect_errors(gb_test_fmt("%s%s", good_rt(),
                            gb_test_trainjob("job", "rt", "  trainer: {numNodes: 3000000000}\n")),
                ERRS("default/job: spec.trainer.numNodes: must be <= 2147483647"));
  /* numProcPerNode is an int32 (IntOrString) too. */
  expect_errors(gb_test_fmt("%s%s", good_rt(),
                            gb_test_trainjob("job", "rt",
                                             "  trainer: {numProcPerNode: 2147483648}\n")),
                ERRS("default/job: spec.trainer.numProcPerNode: must be <= 2147483647"));
  expect_errors(gb_test_fmt("%s%s", good_rt(),
                            gb_test_trainjob("job", "rt", "  trainer: {numNodes: 1e300}\n")),
                ERRS("default/job: spec.trainer.numNodes: must be <= 2147483647"));
}
END_TEST

START_TEST(errors_total_above_int64) {
  /* 1e400 is capped at 2^63-1 per pod; two pods do not fit (before, the
   * PodGroup said 20e399).  The message names the resource and where. */
  const char *rt = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {}}\n",
      gb_test_job("node", "trainer", -1,
                  "[{name: node, image: x, resources: {requests: {memory: 1e400, cpu: 1}}}]",
                  NULL, NULL, NULL),
      NULL);
  expect_errors(gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)),
                ERRS("default/job: minResources.memory: the total does not fit: replicated job "
                     "\"node\" adds 2 pod(s) x 9223372036854775807 (ClusterTrainingRuntime/rt: "
                     "spec.template.spec.replicatedJobs[0].template.spec.template.spec) and the "
                     "sum exceeds 9223372036854775807 (2^63-1), the largest quantity Kubernetes "
                     "can use"));
  /* 5E fits; 2 x 5E does not, though it has few digits. */
  rt = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 2, torch: {}}\n",
      gb_test_job("node", "trainer", -1,
                  "[{name: node, image: x, resources: {requests: {example.com/x: 5E}}}]", NULL,
                  NULL, NULL),
      NULL);
  expect_errors(gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)),
                ERRS("default/job: minResources.example.com/x: the total does not fit: "
                     "replicated job \"node\" adds 2 pod(s) x 5E (ClusterTrainingRuntime/rt: "
                     "spec.template.spec.replicatedJobs[0].template.spec.template.spec) and the "
                     "sum exceeds 9223372036854775807 (2^63-1), the largest quantity Kubernetes "
                     "can use"));
}
END_TEST

START_TEST(errors_override_too_large_once) {
  /* An override merged into several jobs hits the list bound once per job;
   * it is reported once, at the override's path. */
  const char *rt = gb_test_runtime(
      CTR, "rt", "  mlPolicy: {numNodes: 1, torch: {}}\n",
      gb_test_job("node", "trainer", -1, NODE, NULL, NULL, "volumes: [{name: base}]"),
      gb_test_job("a", NULL, -1, "[{name: a, image: x}]", NULL, NULL, "volumes: [{name: base}]"),
      gb_test_job("b", NULL, -1, "[{name: b, image: x}]", NULL, NULL, "volumes: [{name: base}]"),
      NULL);
  size_t cap = 4100 * 16 + 256, n = 0;
  char *vols = malloc(cap);
  ck_assert_ptr_nonnull(vols);
  n += (size_t)snprintf(vols + n, cap - n, "[");
  for (int i = 0; i < 4097; i++)
    n += (size_t)snprintf(vols + n, cap - n, "%s{name: v%d}", i ? ", " : "", i);
  snprintf(vols + n, cap - n, "]");
  const char *tj = gb_test_trainjob(
      "job", "rt",
      gb_test_fmt("  podTemplateOverrides:\n  - targetJobs: [{name: node}, {name: a}, {name: b}]\n"
                  "    spec: {volumes: %s}\n", vols));
  free(vols);
  expect_errors(gb_test_fmt("%s%s", rt, tj),
                ERRS("default/job: spec.podTemplateOverrides[0].spec: the merged pod spec is too "
                     "large or nested too deeply (at most 4096 items in a merged list and 128 "
                     "levels)"));
}
END_TEST

START_TEST(integral_floats_accepted) {
  /* The API server accepts a JSON number with an integral value (1.0, 2e0)
   * for an integer field, as kube-openapi's validation does. */
  struct gb_test_run r;
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", good_rt(),
                               gb_test_trainjob("job", "rt",
                                                "  trainer: {numNodes: 3.0, "
                                                "numProcPerNode: 2e0}\n")),
                   TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_int_eq(r.g->min_member, 3);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(errors_names) {
  const char *tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                   "metadata: {name: My_Job}\nspec: {runtimeRef: {name: rt}}\n";
  expect_errors(gb_test_fmt("%s%s", good_rt(), tj),
                ERRS("default/My_Job: metadata.name: must match RFC 1035 DNS label format "
                     "(lowercase letters, digits and '-', starting with a letter and ending "
                     "with a letter or digit)"));
  tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
       "metadata: {namespace: ns}\nspec: {runtimeRef: {name: rt}}\n";
  expect_errors(gb_test_fmt("%s%s", good_rt(), tj),
                ERRS("ns/(no name): metadata.name: required"));
  tj = gb_test_fmt("---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                   "metadata: {name: a%0*d}\nspec: {runtimeRef: {name: rt}}\n", 63, 0);
  expect_errors(gb_test_fmt("%s%s", good_rt(), tj),
                ERRS(gb_test_fmt("default/a%0*d: metadata.name: must be no more than 63 "
                                 "characters", 63, 0)));
  tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
       "metadata: {name: job, namespace: team.a, uid: 7}\nspec: {runtimeRef: {name: rt}}\n";
  expect_errors(gb_test_fmt("%s%s", good_rt(), tj),
                ERRS("team.a/job: metadata.namespace: must be an RFC 1123 label",
                     "team.a/job: metadata.uid: must be a string"));
  tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
       "metadata: {name: job}\nspec: {trainer: {}}\n";
  expect_errors(gb_test_fmt("%s%s", good_rt(), tj),
                ERRS("default/job: spec.runtimeRef: required"));
  tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
       "metadata: {name: job}\nspec: {runtimeRef: {name: ''}}\n";
  expect_errors(gb_test_fmt("%s%s", good_rt(), tj),
                ERRS("default/job: spec.runtimeRef.name: required"));
}
END_TEST

START_TEST(errors_runtime_side) {
  const char *rt = gb_test_runtime(
      CTR, "bad", "  mlPolicy: {numNodes: -2, torch: {}, mpi: {}}\n",
      gb_test_job("node", "trainer", -3, NODE, NULL, NULL, NULL),
      gb_test_job("node", NULL, -1, "[{name: x, resources: {requests: {cpu: 1x}}}]", NULL, NULL,
                  NULL),
      NULL);
  expect_errors(gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "bad", NULL)),
                ERRS("ClusterTrainingRuntime/bad: spec.mlPolicy.numNodes: must be >= 0",
                     "ClusterTrainingRuntime/bad: spec.mlPolicy: Only one of the policy can be "
                     "configured",
                     "ClusterTrainingRuntime/bad: spec.template.spec.replicatedJobs[1].name: "
                     "duplicate replicated job name \"node\""));
}
END_TEST

START_TEST(errors_runtime_job_fields) {
  const char *rt = gb_test_runtime(
      CTR, "bad", "",
      gb_test_job("node", "trainer", 2, "[{name: x, resources: {requests: {cpu: 1x}}}]",
                  "[{name: a, status: Sometime}]", "          replicas: -1\n", NULL),
      gb_test_job("a", NULL, -1, "[]", NULL, NULL, NULL), NULL);
  const char *p = "ClusterTrainingRuntime/bad: spec.template.spec.replicatedJobs";
  struct gb_test_run r;
  gb_test_run(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "bad", NULL)), NULL, NULL);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, gb_test_fmt("%s[0].replicas: must be >= 0", p)));
  ck_assert(gb_test_has_diag(&r.diags, gb_test_fmt(
      "%s[0].dependsOn[0].status: Unsupported value: \"Sometime\": supported values: \"Ready\", "
      "\"Complete\"", p)));
  ck_assert(gb_test_has_diag(&r.diags, gb_test_fmt(
      "%s[1].template.spec.template.spec.containers: required (at least one container)", p)));
  gb_test_run_free(&r);

  /* A parallelism below zero and a bad quantity. */
  rt = gb_test_runtime(CTR, "bad", "",
                       gb_test_job("node", NULL, -1,
                                   "[{name: x, resources: {requests: {cpu: 1x}}}]", NULL,
                                   NULL, NULL),
                       NULL);
  rt = gb_test_fmt("%s", rt);
  char *at = strstr((char *)rt, "            spec:\n");
  ck_assert_ptr_nonnull(at);
  const char *rt2 = gb_test_fmt("%.*s            spec:\n              parallelism: -4\n%s",
                                (int)(at - rt), rt, at + strlen("            spec:\n"));
  gb_test_run(&r, gb_test_fmt("%s%s", rt2, gb_test_trainjob("job", "bad", NULL)), NULL, NULL);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&r.diags, gb_test_fmt("%s[0].template.spec.parallelism: must be "
                                                   ">= 0", p)));
  gb_test_run_free(&r);

  rt = gb_test_runtime(CTR, "bad", "",
                       gb_test_job("node", NULL, -1,
                                   "[{name: x, resources: {requests: {cpu: 1x}}}]", NULL,
                                   NULL, NULL),
                       NULL);
  gb_test_run(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "bad", NULL)), NULL, NULL);
  ck_assert_int_eq(r.rc, GC_EINVAL);
  int found = 0;
  for (size_t i = 0; i < r.diags.n; i++)
    found |= strstr(r.diags.msgs[i], "ClusterTrainingRuntime/bad: spec.template.spec."
                    "replicatedJobs[0].template.spec.template.spec.containers[0].resources."
                    "requests.cpu") == r.diags.msgs[i];
  ck_assert(found);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(errors_runtime_shape) {
  const char *rt = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
                   "metadata: {name: empty}\nspec: {mlPolicy: {numNodes: 1}}\n";
  expect_errors(gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "empty", NULL)),
                ERRS("ClusterTrainingRuntime/empty: spec.template: required"));
  rt = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
       "metadata: {name: empty}\nspec: {template: {spec: {replicatedJobs: []}}}\n";
  expect_errors(gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "empty", NULL)),
                ERRS("ClusterTrainingRuntime/empty: spec.template.spec.replicatedJobs: required "
                     "(at least one replicated job)"));
  rt = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
       "metadata: {name: tr, namespace: default}\nspec: {template: {spec: {replicatedJobs: 3}}}\n";
  const char *tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                   "metadata: {name: job}\nspec: {runtimeRef: {name: tr, kind: TrainingRuntime}}\n";
  expect_errors(gb_test_fmt("%s%s", rt, tj),
                ERRS("TrainingRuntime default/tr: spec.template.spec.replicatedJobs: must be an "
                     "array"));
}
END_TEST

/* Policy problems are reported even when the job list is broken too. */
START_TEST(errors_policy_and_jobs_together) {
  const char *rt = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
                   "metadata: {name: both}\nspec:\n"
                   "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: -1}}\n"
                   "  template: {spec: {replicatedJobs: [{name: Bad_Name}]}}\n";
  expect_errors(gb_test_fmt("%s---\n%s", rt, gb_test_trainjob("job", "both", NULL)),
                ERRS("ClusterTrainingRuntime/both: spec.podGroupPolicy.coscheduling."
                     "scheduleTimeoutSeconds: must be >= 0",
                     "ClusterTrainingRuntime/both: spec.template.spec.replicatedJobs[0].name: "
                     "\"Bad_Name\" must be an RFC 1035 label (lowercase letters, digits and '-', "
                     "starting with a letter, at most 63 characters)"));
}
END_TEST

START_TEST(errors_patch_containers_type) {
  expect_errors(gb_test_fmt("%s%s", good_rt(), gb_test_trainjob("job", "rt",
      "  runtimePatches:\n  - manager: x.io/m\n    trainingRuntimeSpec: {template: {spec: "
      "{replicatedJobs: [{name: node, template: {spec: {template: {spec: {containers: "
      "{name: node}}}}}}]}}}\n")),
      ERRS("default/job: spec.runtimePatches[0].trainingRuntimeSpec.template.spec."
           "replicatedJobs[0].template.spec.template.spec.containers: must be an array"));
}
END_TEST

START_TEST(errors_mpi_needs_launcher) {
  const char *rt = gb_test_runtime(
      CTR, "mpi", "  mlPolicy: {mpi: {runLauncherAsNode: true}}\n",
      gb_test_job("node", NULL, -1, NODE, NULL, NULL, NULL), NULL);
  expect_errors(gb_test_fmt("%s%s", rt,
                            gb_test_trainjob("job", "mpi", "  trainer: {numNodes: 3}\n")),
                ERRS("default/job: spec.runtimeRef: runtime ClusterTrainingRuntime/mpi must "
                     "contain the replicated jobs \"launcher\" and \"node\" when "
                     "mpi.runLauncherAsNode is true and numNodes >= 2"));
}
END_TEST

START_TEST(errors_not_a_trainjob) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_test_load("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n");
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_gang *g = NULL;
  ck_assert_int_eq(gc_gang_compute(ds->docs[0].root, cat, NULL, &g, &d), GC_EINVAL);
  ck_assert_ptr_null(g);
  ck_assert_int_eq(gc_catalog_add(cat, ds->docs[0].root, "f.yaml:1:1", &d), GC_EINVAL);
  ck_assert(gb_test_has_diag(&d, "f.yaml:1:1: not a trainer.kubeflow.org/v1alpha1 "
                             "TrainingRuntime or ClusterTrainingRuntime"));
  gc_catalog_free(cat);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(catalog_replace_and_find) {
  struct gb_docset *ds = gb_test_load(
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
      "metadata: {name: a}\nspec: {x: 1}\n---\n"
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
      "metadata: {name: a}\nspec: {x: 2}\n---\n"
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
      "metadata: {name: a, namespace: ns1}\nspec: {x: 3}\n---\n"
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
      "metadata: {labels: {}}\nspec: {x: 4}\n");
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_catalog_add(cat, ds->docs[0].root, "f:1", &d), 0);
  ck_assert_int_eq(gc_catalog_add(cat, ds->docs[1].root, "f:2", &d), 0);
  ck_assert_int_eq(gc_catalog_add(cat, ds->docs[2].root, "f:3", &d), 0);
  ck_assert_int_eq(gc_catalog_add(cat, ds->docs[3].root, "f:4", &d), GC_EINVAL);
  ck_assert(gb_test_has_diag(&d, "f:4: TrainingRuntime: metadata.name: required"));
  ck_assert_uint_eq(gc_catalog_size(cat), 2);
  const char *origin = NULL;
  const struct gc_value *found = gc_catalog_find(cat, 1, NULL, NULL, "a", &origin);
  ck_assert_ptr_eq(found, ds->docs[1].root); /* the later document replaced the first */
  ck_assert_str_eq(origin, "f:2");
  ck_assert_ptr_eq(gc_catalog_find(cat, 0, "ns1", NULL, "a", NULL), ds->docs[2].root);
  ck_assert_ptr_null(gc_catalog_find(cat, 0, "ns2", NULL, "a", NULL));
  ck_assert_ptr_null(gc_catalog_find(cat, 1, NULL, NULL, "b", NULL));
  gc_catalog_free(cat);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gang_errors");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, errors_trainjob_fields_all_reported);
  tcase_add_test(tc, errors_numnodes_type);
  tcase_add_test(tc, integral_floats_accepted);
  tcase_add_test(tc, errors_total_above_int64);
  tcase_add_test(tc, errors_override_too_large_once);
  tcase_add_test(tc, errors_names);
  tcase_add_test(tc, errors_runtime_side);
  tcase_add_test(tc, errors_runtime_job_fields);
  tcase_add_test(tc, errors_runtime_shape);
  tcase_add_test(tc, errors_policy_and_jobs_together);
  tcase_add_test(tc, errors_patch_containers_type);
  tcase_add_test(tc, errors_mpi_needs_launcher);
  tcase_add_test(tc, errors_not_a_trainjob);
  tcase_add_test(tc, catalog_replace_and_find);
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
