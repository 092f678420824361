/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_gangview, the placement controller's pure halves: when
 * a gang is ready (every counted pod exists and is gated; a cut-short
 * release), the gang built from the pods' own requests (equal requests
 * share a pod set, later-wave pods are not counted, the policy carried
 * over), and the restriction of a decision: a label level's `key In
 * [value]`, the node names when the value repeats under another parent or
 * the domain is a HyperNode, the assignment's nodes when the domain is too
 * large to list, and one node per pod when even those are too many.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gb_gangview.h"
#include "gb_gangview_test.h"
#include "gb_manifest.h"
#include "gb_plan.h"
#include "tp_place.h"

static const char *CPU_GPU[] = {"cpu", "nvidia.com/gpu"};

static struct gb_placer_pod pod(const char *name, int counted, int gated, int64_t cpu,
                                int64_t gpu) {
  static int64_t vals[64][2];
  static int next;
  int64_t *v = vals[next++ % 64];
  v[0] = cpu;
  v[1] = gpu;
  struct gb_placer_pod p;
  memset(&p, 0, sizeof(p));
  p.name = name;
  p.node = "";
  p.rjob = counted ? "node" : "launcher";
  p.counted = counted;
  p.gated = gated;
  p.n_req = gpu ? 2 : 1;
  p.res = CPU_GPU;
  p.val = v;
  return p;
}

START_TEST(test_classify) {
  struct gb_placer_pod pods[4] = {pod("a", 1, 1, 1000, 8), pod("b", 1, 1, 1000, 8),
                                  pod("c", 1, 1, 1000, 8), pod("l", 0, 1, 500, 0)};
  /* minMember 4 with 3 counted pods: still waiting for one. */
  ck_assert_int_eq(gb_gangview_classify(pods, 4, 4), GB_GANG_WAITING_PODS);
  ck_assert_int_eq(gb_gangview_classify(pods, 4, 3), GB_GANG_READY);
  /* The later-wave pod is not needed to be ready. */
  ck_assert_int_eq(gb_gangview_classify(pods, 3, 3), GB_GANG_READY);
  /* One counted pod released, the others gated: a release cut short. */
  pods[1].gated = 0;
  ck_assert_int_eq(gb_gangview_classify(pods, 4, 3), GB_GANG_PARTLY);
  for (int i = 0; i < 4; i++)
    pods[i].gated = 0;
  ck_assert_int_eq(gb_gangview_classify(pods, 4, 3), GB_GANG_RELEASED);
  /* Nothing gated at all (webhook down, or no policy): never ours to hold. */
  ck_assert_int_eq(gb_gangview_classify(pods, 0, 3), GB_GANG_RELEASED);
  /* A gated later-wave pod after the counted ones were released. */
  pods[3].gated = 1;
  ck_assert_int_eq(gb_gangview_classify(pods, 4, 3), GB_GANG_PARTLY);
}
END_TEST

START_TEST(test_build_gang) {
  struct gc_arena *a = gc_arena_new(0);
  struct gb_placer_pod pods[5] = {pod("a", 1, 1, 8000, 8), pod("b", 1, 1, 8000, 8),
                                  pod("c", 1, 1, 4000, 0), pod("d", 1, 1, 8000, 8),
                                  pod("l", 0, 1, 500, 0)};
  struct gc_topology_policy topo = {
      .set = 1, .mode = "soft", .has_highest_tier = 1, .highest_tier = 2};
  struct tp_gang g;
  ck_assert_int_eq(gb_gangview_build_gang(a, "ns/job", pods, 5, &topo, &g), 0);
  ck_assert_str_eq(g.name, "ns/job");
  /* Two shapes of the counted pods; the launcher is not part of it. */
  ck_assert_uint_eq(g.n_sets, 2);
  ck_assert_int_eq(g.sets[0].count, 3);
  ck_assert_uint_eq(g.sets[0].n_req, 2);
  ck_assert_str_eq(g.sets[0].res[1], "nvidia.com/gpu");
  ck_assert_int_eq(g.sets[0].val[1], 8);
  ck_assert_int_eq(g.sets[1].count, 1);
  ck_assert_uint_eq(g.sets[1].n_req, 1);
  ck_assert_int_eq(tp_gang_pods(&g), 4);
  ck_assert_int_eq(g.policy.mode, TP_MODE_SOFT);
  ck_assert_int_eq(g.policy.highest_tier, 2);
  /* No policy: the mode stays unset (the plan's default applies). */
  struct gc_topology_policy none = {0};
  ck_assert_int_eq(gb_gangview_build_gang(a, "ns/job", pods, 5, &none, &g), 0);
  ck_assert_int_eq(g.policy.mode, TP_MODE_UNSET);
  /* No counted pod: nothing to place. */
  ck_assert_int_eq(gb_gangview_build_gang(a, "ns/job", &pods[4], 1, &topo, &g), GC_EINVAL);
  gc_arena_free(a);
}
END_TEST

/* A cluster: block b1 {rack r1: n1, n2}, block b2 {rack r1: n3; rack r2: n4}, and, when
 * big, block b3 {rack r9: 70 nodes}. */
static struct tp_snapshot *cluster(int big, struct gb_docset **ds) {
  char *yaml = malloc(1 << 16);
  size_t len = 0;
  const char *nodes[][3] = {
      {"n1", "b1", "r1"}, {"n2", "b1", "r1"}, {"n3", "b2", "r1"}, {"n4", "b2", "r2"}};
  for (int i = 0; i < 4; i++)
    len += (size_t)snprintf(yaml + len, (1 << 16) - len,
                            "apiVersion: v1\nkind: Node\nmetadata: {name: %s, labels: {block: %s, "
                            "rack: %s}}\nstatus: {allocatable: {cpu: '8', pods: '10'}}\n---\n",
                            nodes[i][0], nodes[i][1], nodes[i][2]);
  for (int i = 0; big && i < 70; i++)
    len += (size_t)snprintf(yaml + len, (1 << 16) - len,
                            "apiVersion: v1\nkind: Node\nmetadata: {name: big-%02d, labels: "
                            "{block: b3, rack: r9}}\nstatus: {allocatable: {cpu: '8', pods: "
                            "'10'}}\n---\n",
                            i);
  struct gc_diags d;
  gc_diags_init(&d);
  *ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(*ds, "c.yaml", yaml, len, &d), 0);
  free(yaml);
  const struct gc_value *docs[80];
  for (size_t i = 0; i < (*ds)->n; i++)
    docs[i] = (*ds)->docs[i].root;
  const char *levels[] = {"block", "rack"};
  struct tp_build_opts o = {.levels = levels, .n_levels = 2};
  struct tp_snapshot *s = NULL;
  ck_assert_int_eq(tp_snapshot_build(docs, NULL, (*ds)->n, &o, &s, &d), 0);
  gc_diags_destroy(&d);
  return s;
}

static struct gb_plan_view placed(const char *domain) {
  struct gb_plan_view v;
  memset(&v, 0, sizeof(v));
  v.outcome = GB_PLAN_PLACED;
  snprintf(v.domain, sizeof(v.domain), "%s", domain);
  return v;
}

START_TEST(test_restriction_levels) {
  struct gb_docset *ds = NULL;
  struct tp_snapshot *s = cluster(0, &ds);
  struct gb_plan *plan = NULL;
  ck_assert_int_eq(gb_plan_new(NULL, &plan), 0);
  struct gb_restriction r;
  /* Rack r2 is unique: rack In [r2]. */
  struct gb_plan_view v = placed("b2/r2");
  ck_assert_int_eq(gb_gangview_restriction_of(s, plan, "ns/j", &v, 1, &r), 0);
  ck_assert_int_eq(r.kind, GB_RESTRICT_LABEL);
  ck_assert_str_eq(r.key, "rack");
  ck_assert_str_eq(r.values[0], "r2");
  /* A block: block In [b1]. */
  v = placed("b1");
  ck_assert_int_eq(gb_gangview_restriction_of(s, plan, "ns/j", &v, 1, &r), 0);
  ck_assert_int_eq(r.kind, GB_RESTRICT_LABEL);
  ck_assert_str_eq(r.key, "block");
  ck_assert_str_eq(r.values[0], "b1");
  /* Rack r1 exists under b1 and b2: rack In [r1] would let pods into b2, so
   * the domain's nodes are listed instead. */
  v = placed("b1/r1");
  ck_assert_int_eq(gb_gangview_restriction_of(s, plan, "ns/j", &v, 1, &r), 0);
  ck_assert_int_eq(r.kind, GB_RESTRICT_HOSTS);
  ck_assert_uint_eq(r.n_values, 2);
  ck_assert_str_eq(r.values[0], "n1");
  ck_assert_str_eq(r.values[1], "n2");
  /* The whole cluster (soft fallback): no restriction. */
  v = placed("");
  v.whole_cluster = 1;
  ck_assert_int_eq(gb_gangview_restriction_of(s, plan, "ns/j", &v, 1, &r), 0);
  ck_assert_int_eq(r.kind, GB_RESTRICT_NONE);
  /* Not placed: nothing to restrict to. */
  v.outcome = GB_PLAN_NOFIT;
  ck_assert_int_eq(gb_gangview_restriction_of(s, plan, "ns/j", &v, 1, &r), GC_ENOTFOUND);
  gb_plan_free(plan);
  tp_snapshot_free(s);
  gb_docset_free(ds);
}
END_TEST

START_TEST(test_restriction_large_domain) {
  struct gb_docset *ds = NULL;
  struct tp_snapshot *s = cluster(1, &ds);
  struct gb_plan *plan = NULL;
  ck_assert_int_eq(gb_plan_new(NULL, &plan), 0);
  struct gc_arena *a = gc_arena_new(0);
  /* Three whole-node pods, required in one rack (tier 1): only r9 holds them. */
  struct gb_placer_pod pods[3] = {pod("a", 1, 1, 8000, 0), pod("b", 1, 1, 8000, 0),
                                  pod("c", 1, 1, 8000, 0)};
  struct gc_topology_policy topo = {
      .set = 1, .mode = "hard", .has_highest_tier = 1, .highest_tier = 1};
  struct tp_gang g;
  ck_assert_int_eq(gb_gangview_build_gang(a, "ns/j", pods, 3, &topo, &g), 0);
  struct gb_plan_gang pg = {"ns/j", &g, 0, 1000, NULL};
  struct gb_plan_view v;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_plan_decide(plan, s, 1, &pg, 1, 2000, &v, &d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v.domain, "b3/r9");
  /* As a HyperNode domain (no label levels) of 70 nodes it is too large to
   * list: the three planned nodes are. */
  struct gb_restriction r;
  ck_assert_int_eq(gb_gangview_restriction_of(s, plan, "ns/j", &v, 0, &r), 0);
  ck_assert_int_eq(r.kind, GB_RESTRICT_HOSTS);
  ck_assert_uint_eq(r.n_values, 3);
  for (size_t i = 0; i < 3; i++)
    ck_assert(!strncmp(r.values[i], "big-", 4));
  /* One node per pod, in the plan's node order. */
  const char *nodes[4];
  ck_assert_int_eq(gb_placer_pod_nodes(plan, "ns/j", a, 4, nodes), 0);
  ck_assert_str_eq(nodes[0], r.values[0]);
  ck_assert_str_eq(nodes[2], r.values[2]);
  ck_assert_ptr_null(nodes[3]);
  ck_assert_int_eq(gb_placer_pod_nodes(plan, "ns/other", a, 1, nodes), GC_ENOTFOUND);
  gc_diags_destroy(&d);
  gc_arena_free(a);
  gb_plan_free(plan);
  tp_snapshot_free(s);
  gb_docset_free(ds);
}
END_TEST

int main(void) {
  Suite *s = suite_create("gangview");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_classify);
  tcase_add_test(tc, test_build_gang);
  tcase_add_test(tc, test_restriction_levels);
  tcase_add_test(tc, test_restriction_large_domain);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
