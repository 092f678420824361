/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend: the backend table and its lookups (index, name, group
 * object, wire value, extender, joins, phases, the name list) and, for
 * every descriptor of the table, the rules a descriptor must keep so that
 * the layers asking it stay correct (apiVersions that agree with group and
 * version, Kubernetes-valid keys, a join that names the group, a render
 * function, texts for every limit it states, a queue exactly when it says
 * it has one).  A new backend's descriptor is checked by the same loop.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_backend.h"
#include "gc_name.h"

static const struct gc_backend *volcano(void) { return gc_backend_by_name("volcano"); }
static const struct gc_backend *cosched(void) { return gc_backend_by_name("coscheduling"); }

START_TEST(table_index_and_default) {
  size_t n = gc_backend_count();
  ck_assert_uint_ge(n, 2);
  ck_assert_uint_le(n, GC_BACKEND_MAX);
  for (size_t i = 0; i < n; i++) {
    ck_assert_ptr_nonnull(gc_backend_at(i));
    ck_assert_int_eq(gc_backend_index(gc_backend_at(i)), (int)i);
  }
  ck_assert_ptr_null(gc_backend_at(n));
  ck_assert_int_eq(gc_backend_index(NULL), -1);
  /* A copy is not a table entry: layers key arrays by the table's index. */
  struct gc_backend copy = *gc_backend_at(0);
  ck_assert_int_eq(gc_backend_index(&copy), -1);
  /* The default (and `auto`'s first choice) is the first row: Volcano. */
  ck_assert_ptr_eq(gc_backend_default(), gc_backend_at(0));
  ck_assert_ptr_eq(gc_backend_default(), volcano());
  ck_assert_int_eq(gc_backend_index(cosched()), 1);
  ck_assert_int_eq(gc_backend_index(gc_backend_by_name("kai")), 2);
  ck_assert_int_eq(gc_backend_index(gc_backend_by_name("workload")), 3);
}
END_TEST

START_TEST(lookup_by_name) {
  for (size_t i = 0; i < gc_backend_count(); i++)
    ck_assert_ptr_eq(gc_backend_by_name(gc_backend_at(i)->name), gc_backend_at(i));
  ck_assert_ptr_null(gc_backend_by_name("auto"));
  ck_assert_ptr_null(gc_backend_by_name("Volcano"));
  ck_assert_ptr_null(gc_backend_by_name("volcano "));
  ck_assert_ptr_null(gc_backend_by_name(""));
  ck_assert_ptr_null(gc_backend_by_name(NULL));
  ck_assert_str_eq(gc_backend_name(volcano()), "volcano");
  ck_assert_str_eq(gc_backend_name(NULL), "unset");
}
END_TEST

START_TEST(lookup_by_object) {
  ck_assert_ptr_eq(gc_backend_by_object("scheduling.volcano.sh/v1beta1", "PodGroup"), volcano());
  /* Any version of the group: a dump may hold an older one. */
  ck_assert_ptr_eq(gc_backend_by_object("scheduling.volcano.sh/v1alpha1", "PodGroup"), volcano());
  ck_assert_ptr_eq(gc_backend_by_object("scheduling.x-k8s.io/v1alpha1", "PodGroup"), cosched());
  /* Coscheduling's older API group is read as coscheduling. */
  ck_assert_ptr_eq(gc_backend_by_object("scheduling.sigs.k8s.io/v1alpha1", "PodGroup"), cosched());
  ck_assert_ptr_null(gc_backend_by_object("scheduling.volcano.sh/v1beta1", "Queue"));
  ck_assert_ptr_null(gc_backend_by_object("scheduling.volcano.shx/v1beta1", "PodGroup"));
  ck_assert_ptr_null(gc_backend_by_object("x.scheduling.volcano.sh/v1beta1", "PodGroup"));
  ck_assert_ptr_null(gc_backend_by_object("scheduling.volcano.sh", "PodGroup"));
  ck_assert_ptr_null(gc_backend_by_object("topology.volcano.sh/v1alpha1", "HyperNode"));
  ck_assert_ptr_null(gc_backend_by_object(NULL, "PodGroup"));
  ck_assert_ptr_null(gc_backend_by_object("scheduling.volcano.sh/v1beta1", NULL));
}
END_TEST

START_TEST(lookup_by_proto_and_extender) {
  /* calculator.proto's Backend values; test_rpc_server checks them against
   * the generated enum. */
  ck_assert_ptr_eq(gc_backend_by_proto(1), volcano());
  ck_assert_ptr_eq(gc_backend_by_proto(2), cosched());
  ck_assert_ptr_eq(gc_backend_by_proto(4), gc_backend_by_name("workload"));
  ck_assert_ptr_null(gc_backend_by_proto(0)); /* BACKEND_UNSPECIFIED: no backend */
  ck_assert_ptr_null(gc_backend_by_proto(99));
  ck_assert_ptr_eq(gc_backend_by_proto(3), gc_backend_by_name("kai")); /* BACKEND_KAI */
  ck_assert_ptr_eq(gc_backend_by_extender("volcano"), volcano());
  ck_assert_ptr_eq(gc_backend_by_extender("kube"), cosched());
  ck_assert_ptr_null(gc_backend_by_extender("kai"));
  ck_assert_ptr_null(gc_backend_by_extender(NULL));
}
END_TEST

START_TEST(names_list) {
  char buf[128];
  ck_assert_str_eq(gc_backend_names(buf, sizeof(buf), " or "), "volcano, coscheduling, kai or workload");
  ck_assert_str_eq(gc_backend_names(buf, sizeof(buf), ", "), "volcano, coscheduling, kai, workload");
  /* No backend is render/explain only: serve uses every one (the Workload API too). */
  ck_assert_str_eq(gc_backend_serve_names(buf, sizeof(buf), " or "),
                   "volcano, coscheduling, kai or workload");
  /* Cut, never overrun, always terminated. */
  char small[9];
  memset(small, 'x', sizeof(small));
  ck_assert_str_eq(gc_backend_names(small, sizeof(small), " or "), "volcano,");
  ck_assert_ptr_eq(gc_backend_names(small, 0, " or "), small);
}
END_TEST

START_TEST(joins) {
  const struct gc_backend_join *j = gc_backend_join_of(volcano(), GC_JOIN_GROUP);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(j->at, GC_JOIN_ANNOTATION);
  ck_assert_str_eq(j->key, "scheduling.k8s.io/group-name");
  j = gc_backend_join_of(cosched(), GC_JOIN_GROUP);
  ck_assert_int_eq(j->at, GC_JOIN_LABEL);
  ck_assert_str_eq(j->key, "scheduling.x-k8s.io/pod-group");
  ck_assert_ptr_null(gc_backend_join_of(volcano(), GC_JOIN_SUBGROUP));
  ck_assert_ptr_null(gc_backend_join_of(NULL, GC_JOIN_GROUP));

  const struct gc_backend *owner = NULL;
  const char *k = "scheduling.x-k8s.io/pod-group";
  ck_assert_ptr_nonnull(gc_backend_join_find(GC_JOIN_LABEL, k, strlen(k), 0, &owner));
  ck_assert_ptr_eq(owner, cosched());
  /* The key is matched whole, at its place only. */
  ck_assert_ptr_null(gc_backend_join_find(GC_JOIN_LABEL, k, strlen(k) - 1, 0, NULL));
  ck_assert_ptr_null(gc_backend_join_find(GC_JOIN_ANNOTATION, k, strlen(k), 0, NULL));
  /* The older label is read, never written. */
  const char *old = "pod-group.scheduling.sigs.k8s.io";
  ck_assert_ptr_null(gc_backend_join_find(GC_JOIN_LABEL, old, strlen(old), 0, NULL));
  j = gc_backend_join_find(GC_JOIN_LABEL, old, strlen(old), 1, &owner);
  ck_assert_ptr_nonnull(j);
  ck_assert_int_eq(j->legacy, 1);
  ck_assert_ptr_eq(owner, cosched());
}
END_TEST

START_TEST(phases) {
  ck_assert(gc_backend_phase_started(volcano(), "Running"));
  ck_assert(gc_backend_phase_started(volcano(), "Completed"));
  ck_assert(!gc_backend_phase_started(volcano(), "Finished"));
  ck_assert(!gc_backend_phase_started(volcano(), "Inqueue"));
  ck_assert(gc_backend_phase_started(cosched(), "Finished"));
  ck_assert(!gc_backend_phase_started(cosched(), "Scheduling"));
  ck_assert_str_eq(cosched()->status.failed_phase, "Failed");
  ck_assert(!gc_backend_phase_started(NULL, "Running"));
  ck_assert(!gc_backend_phase_started(volcano(), NULL));
}
END_TEST

static const struct gc_backend *workload(void) { return gc_backend_by_name("workload"); }

START_TEST(versions) {
  const struct gc_backend *w = workload();
  char buf[64];
  ck_assert_ptr_nonnull(w);
  ck_assert_uint_eq(w->n_versions, 3);
  ck_assert_str_eq(gc_backend_version_names(w, buf, sizeof(buf)), "v1beta1, v1alpha2 or v1alpha1");
  ck_assert_str_eq(gc_backend_version_find(w, "v1alpha2")->api_version,
                   "scheduling.k8s.io/v1alpha2");
  ck_assert_ptr_null(gc_backend_version_find(w, "v1"));
  ck_assert_ptr_null(gc_backend_version_find(w, NULL));
  ck_assert_ptr_null(gc_backend_version_find(volcano(), "v1beta1")); /* one version: none */
  /* Discovery's pick: the newest served, whatever order discovery lists them in. */
  const char *both[] = {"v1alpha2", "v1beta1"}, *old[] = {"v1", "v1alpha1"}, *none[] = {"v1"};
  ck_assert_str_eq(gc_backend_version_pick(w, both, 2)->version, "v1beta1");
  ck_assert_str_eq(gc_backend_version_pick(w, both, 1)->version, "v1alpha2");
  ck_assert_str_eq(gc_backend_version_pick(w, old, 2)->version, "v1alpha1");
  ck_assert_ptr_null(gc_backend_version_pick(w, none, 1));
  ck_assert_ptr_null(gc_backend_version_pick(w, NULL, 0));
  ck_assert_ptr_null(gc_backend_version_pick(volcano(), both, 2));
  /* How pods join differs: v1alpha1 names the Workload and its group, later versions the
   * PodGroup by a field that is set at CREATE. */
  const struct gc_backend_version *a1 = gc_backend_version_find(w, "v1alpha1");
  ck_assert_uint_eq(a1->n_joins, 2);
  ck_assert_str_eq(a1->joins[0].key, "workloadRef.name");
  ck_assert_int_eq(a1->joins[0].value, GC_JOIN_PARENT);
  ck_assert_int_eq(a1->joins[1].value, GC_JOIN_TEMPLATE);
  ck_assert_ptr_null(a1->group_suffix);
  const struct gc_backend_version *b1 = gc_backend_version_find(w, "v1beta1");
  ck_assert_str_eq(b1->joins[0].key, "schedulingGroup.podGroupName");
  ck_assert_int_eq(b1->joins[0].at, GC_JOIN_SPEC_FIELD);
  ck_assert_str_eq(b1->group_suffix, "-gang");
  /* v1alpha1 has neither a priority class nor a topology constraint. */
  ck_assert(b1->caps & GC_BCAP_PRIORITY_CLASS);
  ck_assert(gc_backend_version_find(w, "v1alpha2")->caps & GC_BCAP_PRIORITY_CLASS);
  ck_assert(!(a1->caps & (GC_BCAP_PRIORITY_CLASS | GC_BCAP_NETWORK_TOPOLOGY)));
  /* The scheduled condition was renamed for 1.37 (kubernetes#139743); each version says its
   * own, on the PodGroup the tracker follows (v1alpha1 has none: its Workload has no
   * status). */
  const struct gc_backend_version *a2 = gc_backend_version_find(w, "v1alpha2");
  ck_assert_str_eq(b1->scheduled_condition, "PodGroupInitiallyScheduled");
  ck_assert_str_eq(a2->scheduled_condition, "PodGroupScheduled");
  ck_assert_ptr_null(a1->scheduled_condition);
  ck_assert_str_eq(w->status.scheduled_condition, b1->scheduled_condition);
  ck_assert_str_eq(b1->status_kind, "PodGroup");
  ck_assert_str_eq(b1->status_resource, "podgroups");
  ck_assert_ptr_null(a1->status_kind);
  ck_assert_str_eq(w->min_member_field, "schedulingPolicy.gang.minCount");
  ck_assert_ptr_eq(gc_backend_version_tracked(w, "scheduling.k8s.io/v1beta1", "PodGroup"), b1);
  ck_assert_ptr_eq(gc_backend_version_tracked(w, "scheduling.k8s.io/v1alpha2", "PodGroup"), a2);
  ck_assert_ptr_eq(gc_backend_version_tracked(w, "scheduling.k8s.io/v1alpha1", "Workload"), a1);
  ck_assert_ptr_null(gc_backend_version_tracked(w, "scheduling.k8s.io/v1beta1", "Workload"));
  ck_assert_ptr_null(gc_backend_version_tracked(w, "scheduling.k8s.io/v1alpha1", "PodGroup"));
  ck_assert_ptr_null(gc_backend_version_tracked(volcano(), "scheduling.volcano.sh/v1beta1",
                                                "PodGroup"));
  /* Last in auto, created by serve; its PodGroup resource; kube-scheduler's fixed gang wait. */
  ck_assert(w->in_auto && !w->offline_only && !w->is_crd);
  ck_assert_str_eq(w->more_kind.resource, "podgroups");
  ck_assert_int_eq(w->timeout.fixed_seconds, 300);
}
END_TEST

static int valid_key(const char *k) { return k && gc_name_is_qualified(k, strlen(k)); }

/* "group/version" of the given parts. */
static void expect_api(const char *api, const char *group, const char *version) {
  char want[300];
  snprintf(want, sizeof(want), "%s/%s", group, version);
  ck_assert_str_eq(api, want);
}

static void check_versions(const struct gc_backend *b) {
  if (!b->n_versions) {
    ck_assert_ptr_null(b->versions);
    return;
  }
  /* The descriptor names its newest version. */
  ck_assert_str_eq(b->versions[0].version, b->version);
  for (size_t i = 0; i < b->n_versions; i++) {
    const struct gc_backend_version *v = &b->versions[i];
    expect_api(v->api_version, b->group, v->version);
    ck_assert(v->release && v->maturity && v->gang_template);
    ck_assert(gc_name_is_dns1123_label(v->gang_template, strlen(v->gang_template)));
    ck_assert_uint_ge(v->n_joins, 1);
    ck_assert_uint_le(v->n_joins, GC_BACKEND_MAX_JOINS);
    /* Nothing a version carries that the backend says it cannot. */
    ck_assert_uint_eq(v->caps & ~b->caps, 0);
    for (size_t j = 0; j < i; j++)
      ck_assert_str_ne(b->versions[j].version, v->version);
  }
}

static void check_joins(const struct gc_backend *b) {
  int group_join = 0;
  ck_assert_uint_ge(b->n_joins, 1);
  ck_assert_uint_le(b->n_joins, GC_BACKEND_MAX_JOINS);
  for (size_t j = 0; j < b->n_joins; j++) {
    const struct gc_backend_join *jn = &b->joins[j];
    ck_assert_msg(jn->at == GC_JOIN_LABEL || jn->at == GC_JOIN_ANNOTATION ||
                      jn->at == GC_JOIN_SPEC_FIELD,
                  "%s: join %zu has no place", b->name, j);
    if (jn->at != GC_JOIN_SPEC_FIELD)
      ck_assert_msg(valid_key(jn->key), "%s: join key %s", b->name, jn->key);
    group_join |= jn->value == GC_JOIN_GROUP && !jn->legacy;
  }
  ck_assert_msg(group_join, "%s: no written join names the group", b->name);
}

static void check_limits(const struct gc_backend *b) {
  const struct gc_backend_timeout *t = &b->timeout;
  if (t->max_seconds > 0)
    ck_assert_msg(t->max_why && t->max_limit && t->max_rule, "%s: a cap without its texts",
                  b->name);
  if (t->default_seconds > 0)
    ck_assert_msg(t->spec_seconds, "%s: a default timeout needs the spec field", b->name);
  /* A fixed wait is one nothing sets: no annotation, no field, with its text. */
  if (t->fixed_seconds > 0)
    ck_assert_msg(t->fixed_why && !t->spec_seconds && !t->annotations[0],
                  "%s: a fixed wait that something sets", b->name);
  for (size_t k = 0; k < GC_BACKEND_MAX_KEYS && t->annotations[k]; k++)
    ck_assert_msg(valid_key(t->annotations[k]), "%s: timeout key %s", b->name, t->annotations[k]);
  /* KAI's status has no phase: its gangs start by quorum, the member count
   * gangbridge writes on the group object (GC_ANN_MIN_MEMBER). */
  ck_assert_msg(b->status.started_phases[0] || b->status.scheduled_condition ||
                    (b->caps & GC_BCAP_SUBGROUPS),
                "%s: nothing says the gang started", b->name);
  ck_assert_msg(!b->status.waiting_phase == !b->status.waiting_note, "%s: waiting note", b->name);
}

/* What a sub-group backend needs: where the spec lists them and a join
 * naming the pod's; elastic members are sub-groups; a topology level needs
 * the key naming the scheduler's topology object; a grouper key its value. */
static void check_subgroups(const struct gc_backend *b) {
  int subs = (b->caps & GC_BCAP_SUBGROUPS) != 0;
  ck_assert_msg(subs == (b->subgroups_field != NULL), "%s: subgroups_field", b->name);
  ck_assert_msg(!subs || gc_backend_join_of(b, GC_JOIN_SUBGROUP), "%s: no sub-group join",
                b->name);
  ck_assert_msg(!(b->caps & GC_BCAP_ELASTIC_MEMBERS) || subs, "%s: elastic without sub-groups",
                b->name);
  ck_assert_msg(!(b->caps & GC_BCAP_TOPOLOGY_LEVEL) ||
                    (b->topology_name_key && valid_key(b->topology_name_key)),
                "%s: topology level without its object's key", b->name);
  ck_assert_msg(!b->grouper_skip_key == !b->grouper_skip_value, "%s: grouper skip", b->name);
  ck_assert(!b->grouper_skip_key || valid_key(b->grouper_skip_key));
}

static void check_queue(const struct gc_backend *b) {
  const struct gc_backend_queue *q = &b->queue;
  int has = (b->caps & GC_BCAP_QUEUE) != 0;
  ck_assert_msg(has == (q->key != NULL), "%s: GC_BCAP_QUEUE and queue.key disagree", b->name);
  if (!has)
    return;
  ck_assert(valid_key(q->key));
  ck_assert(q->key_at == GC_JOIN_ANNOTATION || q->key_at == GC_JOIN_LABEL);
  ck_assert_ptr_nonnull(q->field);
  ck_assert_ptr_nonnull(q->default_name);
  if (q->kind) {
    ck_assert_ptr_nonnull(q->resource);
    expect_api(q->api_version, b->group, q->version);
  }
}

START_TEST(every_descriptor_is_whole) {
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    ck_assert_msg(gc_name_is_dns1123_label(b->name, strlen(b->name)), "name %s", b->name);
    ck_assert(b->short_name && strlen(b->short_name) <= 8);
    ck_assert(b->display && b->install && b->kind && b->resource && b->min_member_field);
    ck_assert(gc_name_is_dns1123_subdomain(b->group, strlen(b->group)));
    ck_assert(gc_name_is_dns1123_label(b->resource, strlen(b->resource)));
    expect_api(b->api_version, b->group, b->version);
    ck_assert_msg(b->proto > 0, "%s: no wire value", b->name);
    ck_assert_ptr_nonnull(b->render_spec);
    /* Trainer's policy fields live under a policy key. */
    ck_assert(b->runtime_policy || (!b->runtime_timeout && !b->runtime_topology));
    ck_assert(!b->runtime_topology || (b->caps & GC_BCAP_NETWORK_TOPOLOGY));
    check_joins(b);
    check_versions(b);
    check_limits(b);
    check_queue(b);
    check_subgroups(b);
    for (size_t j = 0; j < i; j++) {
      const struct gc_backend *o = gc_backend_at(j);
      ck_assert_str_ne(o->name, b->name);
      ck_assert_int_ne(o->proto, b->proto);
      ck_assert_msg(strcmp(o->group, b->group) || strcmp(o->kind, b->kind),
                    "%s and %s have the same group object", o->name, b->name);
    }
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("backend");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, table_index_and_default);
  tcase_add_test(tc, lookup_by_name);
  tcase_add_test(tc, lookup_by_object);
  tcase_add_test(tc, lookup_by_proto_and_extender);
  tcase_add_test(tc, names_list);
  tcase_add_test(tc, joins);
  tcase_add_test(tc, phases);
  tcase_add_test(tc, versions);
  tcase_add_test(tc, every_descriptor_is_whole);
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
