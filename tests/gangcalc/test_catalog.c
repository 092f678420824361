/* SPDX-License-Identifier: Apache-2.0
 *
 * The runtime catalog's derived data (pod requests computed once per
 * runtime): a replaced runtime is never answered from the old one's data,
 * the gang does not point into the catalog, and pod specs a TrainJob changes
 * (resourcesPerNode, runtime patches) are computed, not taken from the
 * runtime's data.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"
#include "gc_catalog.h"
#include "gc_catalog_test.h"

static char qbuf[GC_QUANTITY_BUFSZ];

/* A ClusterTrainingRuntime "rt" whose trainer job requests `cpu`, with an
 * extra pod spec line (or ""). */
static const char *runtime(const char *cpu, const char *pod_extra) {
  return gb_test_fmt(
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
      "metadata: {name: rt}\n"
      "spec:\n  mlPolicy: {numNodes: 1, torch: {}}\n"
      "  template:\n    spec:\n      replicatedJobs:\n"
      "        - name: node\n"
      "          template:\n"
      "            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
      "            spec:\n              template:\n                spec:\n"
      "                  %s\n"
      "                  containers:\n"
      "                    - name: node\n"
      "                      image: x\n"
      "                      resources: {requests: {cpu: \"%s\"}}\n",
      pod_extra, cpu);
}

static const char *trainjob(const char *spec_extra) {
  return gb_test_fmt("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                     "metadata: {name: job, namespace: default}\n"
                     "spec:\n  runtimeRef: {name: rt}\n  trainer: {numNodes: 2}\n%s",
                     spec_extra);
}

/* Computes the gang of tj against cat; returns minResources cpu. */
static const char *cpu_of(const struct gc_catalog *cat, const struct gc_value *tj) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gc_gang *g = NULL;
  int rc = gc_gang_compute(tj, cat, NULL, &g, &d);
  if (rc)
    gb_test_dump(&d);
  ck_assert_int_eq(rc, 0);
  const char *got = gb_test_qty(&g->min_resources, "cpu", qbuf);
  ck_assert_ptr_nonnull(got);
  const char *out = gb_test_fmt("%s", got);
  gc_gang_free(g);
  gc_diags_destroy(&d);
  return out;
}

START_TEST(replaced_runtime_is_not_answered_from_old_data) {
  struct gb_docset *r1 = gb_test_load(runtime("1", ""));
  struct gb_docset *r3 = gb_test_load(runtime("3", ""));
  struct gb_docset *tj = gb_test_load(trainjob(""));
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_catalog_add(cat, r1->docs[0].root, "r1", &d), 0);
  ck_assert_str_eq(cpu_of(cat, tj->docs[0].root), "2");
  ck_assert_int_eq(gc_catalog_add(cat, r3->docs[0].root, "r3", &d), 0);
  ck_assert_uint_eq(gc_catalog_size(cat), 1);
  ck_assert_str_eq(cpu_of(cat, tj->docs[0].root), "6");
  ck_assert_int_eq(gc_catalog_add(cat, r1->docs[0].root, "r1", &d), 0);
  ck_assert_str_eq(cpu_of(cat, tj->docs[0].root), "2");
  gc_catalog_free(cat);
  gc_diags_destroy(&d);
  gb_docset_free(tj);
  gb_docset_free(r3);
  gb_docset_free(r1);
}
END_TEST

START_TEST(gang_outlives_catalog) {
  struct gb_docset *rt = gb_test_load(runtime("250m", ""));
  struct gb_docset *tj = gb_test_load(trainjob(""));
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_catalog_add(cat, rt->docs[0].root, "rt", &d), 0);
  struct gc_gang *g = NULL;
  ck_assert_int_eq(gc_gang_compute(tj->docs[0].root, cat, NULL, &g, &d), 0);
  gc_catalog_free(cat);
  /* The per-pod request came from the catalog's data; the gang has a copy. */
  const struct gc_podset *ps = gb_test_podset(g, "node");
  ck_assert_ptr_nonnull(ps);
  ck_assert_str_eq(gb_test_qty(&ps->request, "cpu", qbuf), "250m");
  ck_assert_str_eq(gb_test_qty(&g->min_resources, "cpu", qbuf), "500m");
  gc_gang_free(g);
  gc_diags_destroy(&d);
  gb_docset_free(tj);
  gb_docset_free(rt);
}
END_TEST

START_TEST(changed_pod_specs_are_computed) {
  struct gb_docset *rt = gb_test_load(runtime("1", "overhead: {cpu: 100m}"));
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_catalog_add(cat, rt->docs[0].root, "rt", &d), 0);
  /* Unchanged: 2 x (1 + 100m overhead). */
  struct gb_docset *plain = gb_test_load(trainjob(""));
  ck_assert_str_eq(cpu_of(cat, plain->docs[0].root), "2200m");
  /* resourcesPerNode replaces the node container's cpu. */
  struct gb_docset *rpn2 = gb_test_load(gb_test_fmt(
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
      "metadata: {name: job, namespace: default}\n"
      "spec:\n  runtimeRef: {name: rt}\n"
      "  trainer: {numNodes: 2, resourcesPerNode: {requests: {cpu: \"5\"}}}\n"));
  ck_assert_str_eq(cpu_of(cat, rpn2->docs[0].root), "10200m");
  /* A patch that leaves the request fields alone shares them: same result. */
  struct gb_docset *sel = gb_test_load(trainjob(
      "  runtimePatches:\n    - manager: x.io/m\n      trainingRuntimeSpec:\n        template:\n"
      "          spec:\n            replicatedJobs:\n              - name: node\n"
      "                template: {spec: {template: {spec: {nodeSelector: {a: b}}}}}\n"));
  ck_assert_str_eq(cpu_of(cat, sel->docs[0].root), "2200m");
  /* A patch into the containers makes a new list: computed again. */
  struct gb_docset *env = gb_test_load(trainjob(
      "  runtimePatches:\n    - manager: x.io/m\n      trainingRuntimeSpec:\n        template:\n"
      "          spec:\n            replicatedJobs:\n              - name: node\n"
      "                template: {spec: {template: {spec: {containers: [{name: node, "
      "volumeMounts: [{name: v, mountPath: /v}]}]}}}}\n"));
  ck_assert_str_eq(cpu_of(cat, env->docs[0].root), "2200m");
  gc_catalog_free(cat);
  gc_diags_destroy(&d);
  gb_docset_free(env);
  gb_docset_free(sel);
  gb_docset_free(rpn2);
  gb_docset_free(plain);
  gb_docset_free(rt);
}
END_TEST

START_TEST(cache_answers_only_identical_request_fields) {
  struct gb_docset *rt = gb_test_load(runtime("1", ""));
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gc_catalog_add(cat, rt->docs[0].root, "rt", &d), 0);
  const struct gc_rt_cache *cache = NULL;
  const struct gc_value *doc =
      gc_catalog_find_cached(cat, 1, NULL, NULL, "rt", NULL, &cache);
  ck_assert_ptr_eq(doc, rt->docs[0].root);
  ck_assert_ptr_nonnull(cache);
  const struct gc_value *ps =
      gc_value_path(gc_value_path(doc, "spec.template.spec.replicatedJobs")->u.items[0],
                    "template.spec.template.spec");
  const struct gc_podreq *req = gc_rt_cache_podreq(cache, ps);
  ck_assert_ptr_nonnull(req);
  ck_assert_str_eq(gb_test_qty(&req->request, "cpu", qbuf), "1");
  /* An equal but distinct pod spec (another document) is not answered. */
  struct gb_docset *other = gb_test_load(runtime("1", ""));
  const struct gc_value *ops = gc_value_path(
      gc_value_path(other->docs[0].root, "spec.template.spec.replicatedJobs")->u.items[0],
      "template.spec.template.spec");
  ck_assert_ptr_null(gc_rt_cache_podreq(cache, ops));
  ck_assert_ptr_null(gc_rt_cache_podreq(NULL, ps));
  gc_catalog_free(cat);
  gc_diags_destroy(&d);
  gb_docset_free(other);
  gb_docset_free(rt);
}
END_TEST

int main(void) {
  Suite *s = suite_create("catalog");
  TCase *tc = tcase_create("cache");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, replaced_runtime_is_not_answered_from_old_data);
  tcase_add_test(tc, gang_outlives_catalog);
  tcase_add_test(tc, changed_pod_specs_are_computed);
  tcase_add_test(tc, cache_answers_only_identical_request_fields);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
