/* SPDX-License-Identifier: Apache-2.0
 *
 * The upstream Workload API backend (gc_backend_workload.c) rendered by
 * gc_render_objects at each of its versions: one Workload owned by the
 * TrainJob with a gang template of minCount = minMember (and a basic one
 * for the other phases), one PodGroup for the gang template from v1alpha2
 * on, the fields each version has and no others, the bound on the objects
 * a gang renders to, and the rule for the topology constraint (a required
 * level that is a configured node label key, at a version that has one).
 * tests/golden/test_workload_fields.py checks the same output against the
 * stand-in's schemas.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"
#include "gc_policy.h"
#include "gc_render.h"

static const char *runtime(void) {
  return "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
         "metadata: {name: rt}\nspec:\n  mlPolicy: {numNodes: 2, torch: {}}\n"
         "  template:\n    spec:\n      replicatedJobs:\n"
         "      - name: dataset-initializer\n"
         "        template:\n          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-"
         "step: dataset-initializer}}\n"
         "          spec: {template: {spec: {containers: [{name: i, resources: {requests: "
         "{cpu: 1}}}]}}}\n"
         "      - name: node\n        dependsOn: [{name: dataset-initializer, status: Complete}]\n"
         "        template:\n          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-"
         "step: trainer}}\n"
         "          spec: {template: {spec: {priorityClassName: high, containers: [{name: node, "
         "resources: {requests: {cpu: 2}}}]}}}\n";
}

static const char *trainjob(const char *annotation) {
  return gb_test_fmt("---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                     "metadata: {name: tj, namespace: ml, uid: u-1, annotations: {%s}}\n"
                     "spec:\n  runtimeRef: {name: rt}\n  trainer: {numNodes: 4}\n",
                     annotation);
}

static const char *const LEVELS[] = {"topology.kubernetes.io/zone", "kubernetes.io/hostname"};

/* Computes tj's gang with the workload backend at version v (NULL: the
 * newest) and the two label levels configured. */
static void run(struct gb_test_run *r, const char *version, const char *annotation) {
  const struct gc_backend *w = gc_backend_by_name("workload");
  struct gc_policy_context pc;
  memset(&pc, 0, sizeof(pc));
  pc.topology_levels = LEVELS;
  pc.n_topology_levels = 2;
  struct gc_options o = {w,     TB_UNSET, GC_SCOPE_WAVE,
                         NULL,  &pc,      version ? gc_backend_version_find(w, version) : NULL,
                         "test"};
  gb_test_run(r, gb_test_fmt("%s%s", runtime(), trainjob(annotation)), NULL, &o);
  if (r->rc)
    gb_test_dump(&r->diags);
  ck_assert_int_eq(r->rc, 0);
}

static const char *str_at(const struct gc_value *v, const char *path) {
  const char *s = gc_value_as_str(gc_value_path(v, path));
  ck_assert_msg(s != NULL, "%s: missing", path);
  return s;
}

static int64_t int_at(const struct gc_value *v, const char *path) {
  const struct gc_value *n = gc_value_path(v, path);
  ck_assert_msg(n && n->type == GC_INT, "%s: not an integer", path);
  return n->u.i;
}

static const struct gc_value *item(const struct gc_value *v, const char *path, size_t i) {
  const struct gc_value *s = gc_value_path(v, path);
  ck_assert_msg(s && s->type == GC_SEQ && i < s->len, "%s[%zu]: missing", path, i);
  return s->u.items[i];
}

static size_t render(struct gb_test_run *r, struct gc_arena *a, struct gc_value **objs) {
  size_t n = 0;
  ck_assert_int_eq(gc_render_objects(r->g, a, objs, GC_RENDER_MAX_OBJECTS, &n), 0);
  return n;
}

START_TEST(v1beta1_workload_and_podgroup) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *objs[GC_RENDER_MAX_OBJECTS];
  run(&r, NULL, "gangbridge.io/topology-required: topology.kubernetes.io/zone");
  ck_assert_str_eq(r.g->backend_version->version, "v1beta1"); /* the newest by default */
  ck_assert_uint_eq(render(&r, a, objs), 2);
  const struct gc_value *w = objs[0], *pg = objs[1];
  ck_assert_str_eq(str_at(w, "apiVersion"), "scheduling.k8s.io/v1beta1");
  ck_assert_str_eq(str_at(w, "kind"), "Workload");
  ck_assert_str_eq(str_at(w, "metadata.name"), "tj");
  /* Owned by the TrainJob, and naming it as its controller. */
  ck_assert_str_eq(str_at(item(w, "metadata.ownerReferences", 0), "uid"), "u-1");
  ck_assert_str_eq(str_at(w, "spec.controllerRef.apiGroup"), "trainer.kubeflow.org");
  ck_assert_str_eq(str_at(w, "spec.controllerRef.kind"), "TrainJob");
  ck_assert_str_eq(str_at(w, "spec.controllerRef.name"), "tj");
  /* The gang phase's template: minCount = minMember (the initializer is not counted). */
  const struct gc_value *gang = item(w, "spec.podGroupTemplates", 0);
  ck_assert_int_eq(r.g->min_member, 4);
  ck_assert_str_eq(str_at(gang, "name"), "gang");
  ck_assert_int_eq(int_at(gang, "schedulingPolicy.gang.minCount"), 4);
  ck_assert_str_eq(str_at(gang, "priorityClassName"), "high");
  ck_assert_str_eq(str_at(item(gang, "schedulingConstraints.topology", 0), "key"),
                   "topology.kubernetes.io/zone");
  ck_assert_ptr_nonnull(gc_value_path(gang, "disruptionMode.all"));
  /* The other phase: basic. */
  const struct gc_value *other = item(w, "spec.podGroupTemplates", 1);
  ck_assert_str_eq(str_at(other, "name"), "other");
  ck_assert_ptr_nonnull(gc_value_path(other, "schedulingPolicy.basic"));
  ck_assert_ptr_null(gc_value_path(other, "schedulingPolicy.gang"));
  /* The gang template's PodGroup, named as the pods' join names it. */
  ck_assert_str_eq(str_at(pg, "kind"), "PodGroup");
  ck_assert_str_eq(str_at(pg, "apiVersion"), "scheduling.k8s.io/v1beta1");
  ck_assert_str_eq(str_at(pg, "metadata.name"), "tj-gang");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(gc_value_path(pg, "metadata.labels"),
                                              "app.kubernetes.io/managed-by")),
                   "gangbridge");
  ck_assert_str_eq(str_at(item(pg, "metadata.ownerReferences", 0), "kind"), "TrainJob");
  ck_assert_str_eq(str_at(pg, "spec.workloadRef.workloadName"), "tj");
  ck_assert_str_eq(str_at(pg, "spec.workloadRef.templateName"), "gang");
  ck_assert_int_eq(int_at(pg, "spec.schedulingPolicy.gang.minCount"), 4);
  ck_assert_str_eq(str_at(pg, "spec.priorityClassName"), "high");
  ck_assert_ptr_null(gc_value_path(pg, "spec.podGroupTemplateRef"));
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

START_TEST(v1alpha2_shapes) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *objs[GC_RENDER_MAX_OBJECTS];
  run(&r, "v1alpha2", "gangbridge.io/topology-required: topology.kubernetes.io/zone");
  ck_assert_uint_eq(render(&r, a, objs), 2);
  const struct gc_value *gang = item(objs[0], "spec.podGroupTemplates", 0), *pg = objs[1];
  ck_assert_str_eq(str_at(objs[0], "apiVersion"), "scheduling.k8s.io/v1alpha2");
  /* 1.36's disruptionMode is a string, not 1.37's union; the priority class and the
   * topology it has. */
  ck_assert_str_eq(str_at(gang, "disruptionMode"), "PodGroup");
  ck_assert_str_eq(str_at(gang, "priorityClassName"), "high");
  ck_assert_str_eq(str_at(item(gang, "schedulingConstraints.topology", 0), "key"),
                   "topology.kubernetes.io/zone");
  ck_assert_str_eq(str_at(pg, "spec.podGroupTemplateRef.workload.workloadName"), "tj");
  ck_assert_str_eq(str_at(pg, "spec.podGroupTemplateRef.workload.podGroupTemplateName"), "gang");
  ck_assert_ptr_null(gc_value_path(pg, "spec.workloadRef"));
  ck_assert_str_eq(str_at(pg, "spec.priorityClassName"), "high");
  ck_assert_str_eq(str_at(pg, "spec.disruptionMode"), "PodGroup");
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

START_TEST(v1alpha1_inline_groups) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *objs[GC_RENDER_MAX_OBJECTS];
  run(&r, "v1alpha1", "gangbridge.io/topology-required: topology.kubernetes.io/zone");
  /* 1.35: the Workload alone, its groups inline; no PodGroup objects, no topology. */
  ck_assert_uint_eq(render(&r, a, objs), 1);
  ck_assert_str_eq(str_at(objs[0], "apiVersion"), "scheduling.k8s.io/v1alpha1");
  const struct gc_value *gang = item(objs[0], "spec.podGroups", 0);
  ck_assert_str_eq(str_at(gang, "name"), "gang");
  ck_assert_int_eq(int_at(gang, "policy.gang.minCount"), 4);
  ck_assert_ptr_null(gc_value_path(gang, "schedulingConstraints"));
  ck_assert_ptr_nonnull(gc_value_path(item(objs[0], "spec.podGroups", 1), "policy.basic"));
  ck_assert_ptr_null(gc_value_path(objs[0], "spec.podGroupTemplates"));
  ck_assert_ptr_null(gc_render_topology_key(r.g));
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

START_TEST(topology_key_rule) {
  struct gb_test_run r;
  /* A preferred level is gangbridge's placement, not a constraint. */
  run(&r, NULL, "gangbridge.io/topology-preferred: topology.kubernetes.io/zone");
  ck_assert_ptr_null(gc_render_topology_key(r.g));
  gb_test_run_free(&r);
  /* A tier number is not a node label key. */
  run(&r, NULL, "gangbridge.io/topology-required: \"2\"");
  ck_assert_ptr_null(gc_render_topology_key(r.g));
  gb_test_run_free(&r);
  /* A name that is not a configured level is not one either. */
  run(&r, NULL, "gangbridge.io/topology-required: example.com/block");
  ck_assert_ptr_null(gc_render_topology_key(r.g));
  gb_test_run_free(&r);
  run(&r, NULL, "gangbridge.io/topology-required: kubernetes.io/hostname");
  ck_assert_str_eq(gc_render_topology_key(r.g), "kubernetes.io/hostname");
  gb_test_run_free(&r);
  /* Volcano carries only its runtime's own topology: never a label key. */
  gb_test_run_with(
      &r, gb_test_fmt("%s%s", runtime(), trainjob("gangbridge.io/topology-required: \"1\"")),
      TB_VOLCANO, GC_SCOPE_WAVE);
  ck_assert_ptr_null(gc_render_topology_key(r.g));
  ck_assert_ptr_null(r.g->backend_version);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(objects_bounded) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *objs[GC_RENDER_MAX_OBJECTS];
  size_t n = 99;
  run(&r, NULL, "");
  /* Room for the Workload only: refused, nothing written past the end. */
  ck_assert_int_eq(gc_render_objects(r.g, a, objs, 1, &n), GC_ELIMIT);
  ck_assert_int_eq(gc_render_objects(r.g, a, objs, 0, &n), GC_ELIMIT);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(gc_render_objects(r.g, a, NULL, 2, &n), GC_EUSAGE);
  ck_assert_int_eq(gc_render_objects(r.g, a, objs, 2, &n), 0);
  ck_assert_uint_eq(n, 2);
  /* The initializer's phase is the basic template. */
  ck_assert_uint_eq(gc_value_path(objs[0], "spec.podGroupTemplates")->len, 2);
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

/* runtime() with `extra` spliced in: after "spec:\n" (runtime level) or in
 * the node's pod spec. */
static const char *runtime_with(const char *rt_extra, const char *pod_extra) {
  const char *base = runtime();
  const char *spec = strstr(base, "spec:\n") + strlen("spec:\n");
  const char *pod = strstr(base, "priorityClassName: high,");
  return gb_test_fmt("%.*s%s%.*s%s%s", (int)(spec - base), base, rt_extra, (int)(pod - spec), spec,
                     pod_extra, pod);
}

START_TEST(steps_aside) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *objs[GC_RENDER_MAX_OBJECTS];
  size_t n = 99;
  const struct gc_backend *w = gc_backend_by_name("workload");
  const char *cases[][2] = {
      {"  scheduling: {schedulingPolicy: {gang: {}}}\n", ""},
      {"", "schedulingGroup: {podGroupName: mine}, "},
      {"", "workloadRef: {name: w, podGroup: g}, "},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *yaml = gb_test_fmt("%s%s", runtime_with(cases[i][0], cases[i][1]), trainjob(""));
    gb_test_run_with(&r, yaml, w, GC_SCOPE_WAVE);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_msg(r.g->ganged_by != NULL, "case %zu not stepped aside", i);
    ck_assert(gb_test_has_warning(r.g, GC_WARN_GANGED_ELSEWHERE, "writes no Workload"));
    /* Nothing is rendered: never a second Workload for one TrainJob. */
    ck_assert_int_eq(gc_render_objects(r.g, a, objs, GC_RENDER_MAX_OBJECTS, &n), 0);
    ck_assert_uint_eq(n, 0);
    gb_test_run_free(&r);
    /* Volcano has no such stanza or pod field: the same runtime is its to gang. */
    gb_test_run_with(&r, yaml, TB_VOLCANO, GC_SCOPE_WAVE);
    ck_assert_int_eq(r.rc, 0);
    ck_assert_ptr_null(r.g->ganged_by);
    gb_test_run_free(&r);
  }
  /* An explicit null is not a stanza. */
  gb_test_run_with(&r, gb_test_fmt("%s%s", runtime_with("  scheduling: null\n", ""), trainjob("")),
                   w, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_ptr_null(r.g->ganged_by);
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("render_workload");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, v1beta1_workload_and_podgroup);
  tcase_add_test(tc, v1alpha2_shapes);
  tcase_add_test(tc, v1alpha1_inline_groups);
  tcase_add_test(tc, topology_key_rule);
  tcase_add_test(tc, objects_bounded);
  tcase_add_test(tc, steps_aside);
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
