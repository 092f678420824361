/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_plan on a hand-made HyperNode cluster: decisions and
 * their one-line reasons, reservations that subtract and give back exactly
 * (domain sums before and after), pod binds on a planned and an unplanned
 * node, expiry, forget, re-applying after a rebuild, the order and the
 * starvation guard, the lookups the scheduler endpoints use, gangs with no
 * policy, the default policy and the blocked mask.
 */
#include "plan_fixture.h"

START_TEST(decide_reserve_and_give_back) {
  struct fx f;
  setup(&f);
  int64_t before[64];
  free_state(&f, before);
  ck_assert_int_eq(dom_gpu(&f, "r1"), 16);
  ck_assert_int_eq(dom_gpu(&f, "s1"), 32);
  /* Three 2 x 8-GPU gangs in one pass: each rack takes one, the third fits
   * nowhere at tier 1 (the reservations count), with the reason. */
  struct tp_gang *g = gang(&f, 2, 8, 1);
  struct gb_plan_gang gs[3] = {pg("ns/a", g, 0, 100), pg("ns/b", g, 0, 200), pg("ns/c", g, 0, 300)};
  struct gb_plan_view v[3];
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 3, 1000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v[0].domain, "r1");
  ck_assert_int_eq(v[0].tier, 1);
  ck_assert_int_eq(v[0].pods, 2);
  ck_assert_int_eq(v[0].pods_reserved, 2);
  ck_assert_int_eq(v[0].decided_ms, 1000);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v[1].domain, "r2");
  ck_assert_int_eq(v[2].outcome, GB_PLAN_NOFIT);
  ck_assert_str_eq(v[2].reason, "needs 2 pods x (8 nvidia.com/gpu, 1 cpu) in one domain of tier "
                                "<= 1; best is r1 (tier 1): fits 0 of 2 pods; nvidia.com/gpu "
                                "short by 16");
  /* The reservations: exactly the gangs' requests (pods included). */
  ck_assert_int_eq(dom_gpu(&f, "r1"), 0);
  ck_assert_int_eq(dom_gpu(&f, "r2"), 0);
  ck_assert_int_eq(dom_gpu(&f, "s1"), 0);
  ck_assert_int_eq(dom_gpu(&f, TP_ROOT_NAME), 4);
  ck_assert_int_eq(node_free(&f, f.cpu, "a1"), 31000);
  ck_assert_int_eq(node_free(&f, f.pods, "b2"), 109);
  /* Giving back restores every node exactly. */
  ck_assert_int_eq(gb_plan_unreserve(f.p, f.s, "ns/a"), 0);
  ck_assert_int_eq(dom_gpu(&f, "r1"), 16);
  ck_assert_int_eq(gb_plan_get(f.p, "ns/a", &v[0]), GC_ENOTFOUND);
  ck_assert_int_eq(gb_plan_unreserve(f.p, f.s, "ns/c"), GC_ENOTFOUND);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/b"), 0);
  assert_same_state(&f, before);
  /* ns/c keeps its decision on generation 1; a new generation re-decides. */
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, &gs[2], 1, 2000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(v[0].decided_ms, 1000);
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 2, &gs[2], 1, 2000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v[0].domain, "r1");
  ck_assert_int_eq(v[0].generation, 2);
  /* A placed gang is never re-decided, whatever the generation. */
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 3, &gs[2], 1, 3000, v, &f.d), 0);
  ck_assert_int_eq(v[0].generation, 2);
  ck_assert_int_eq(dom_gpu(&f, "r1"), 0);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/c"), 0);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/c"), GC_ENOTFOUND);
  assert_same_state(&f, before);
  teardown(&f);
}
END_TEST

struct node_list {
  char names[8][16];
  int64_t pods[8];
  int n;
};

static int collect_node(void *arg, const char *node, int64_t pods) {
  struct node_list *l = arg;
  snprintf(l->names[l->n], sizeof(l->names[0]), "%s", node);
  l->pods[l->n++] = pods;
  return 0;
}

START_TEST(lookups) {
  struct fx f;
  setup(&f);
  struct tp_gang *g = gang(&f, 3, 4, 1);
  struct gb_plan_gang x = pg("ns/x", g, 0, 0);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, &x, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v.domain, "r1");
  struct node_list l = {0};
  ck_assert_int_eq(gb_plan_foreach_node(f.p, "ns/x", collect_node, &l), 0);
  ck_assert_int_eq(l.n, 2);
  ck_assert_str_eq(l.names[0], "a1");
  ck_assert_int_eq(l.pods[0], 2);
  ck_assert_str_eq(l.names[1], "a2");
  ck_assert_int_eq(l.pods[1], 1);
  char why[256] = "";
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/x", "a2", why, sizeof(why)), 1);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/x", "b1", why, sizeof(why)), 0);
  ck_assert_str_eq(why, "node b1 is outside the nodes gangbridge chose for ns/x (in r1, tier 1)");
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/other", "b1", why, sizeof(why)), -1);
  ck_assert_int_eq(gb_plan_node_score(f.p, "ns/x", "a1"), 2);
  ck_assert_int_eq(gb_plan_node_score(f.p, "ns/x", "a2"), 1);
  ck_assert_int_eq(gb_plan_node_score(f.p, "ns/x", "b1"), 0);
  ck_assert_int_eq(gb_plan_node_score(f.p, "ns/other", "a1"), 0);
  ck_assert_int_eq(gb_plan_foreach_node(f.p, "ns/other", collect_node, &l), GC_ENOTFOUND);
  /* A NOFIT gang has no opinion on nodes. */
  struct gb_plan_gang y = pg("ns/y", gang(&f, 9, 8, 2), 0, 0);
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, &y, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/y", "a1", why, sizeof(why)), -1);
  /* Soft mode on the whole cluster: every node is allowed. */
  struct tp_gang *w = gang(&f, 6, 4, 0);
  w->policy.mode = TP_MODE_SOFT;
  struct gb_plan_gang z = pg("ns/z", w, 0, 0);
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 2, &z, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  ck_assert(v.whole_cluster);
  ck_assert_str_eq(v.domain, "");
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/z", "c1", why, sizeof(why)), 1);
  teardown(&f);
}
END_TEST

START_TEST(pod_bound_planned_and_unplanned) {
  struct fx f;
  setup(&f);
  int64_t before[64];
  free_state(&f, before);
  /* 3 pods of 4 GPUs on r1: a1 takes 2, a2 takes 1. */
  struct gb_plan_gang x = pg("ns/x", gang(&f, 3, 4, 1), 0, 0);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, &x, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/x", 100), 0);
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/x", 100), GC_ENOTFOUND);
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a2"), 4);
  const char *res[] = {"nvidia.com/gpu", "cpu"};
  int64_t val[] = {4, 1000};
  /* A pod bound where it was planned: that node's share goes back. */
  uint32_t a2 = (uint32_t)tp_snapshot_node(f.s, "a2");
  ck_assert_int_eq(gb_plan_pod_bound(f.p, f.s, "ns/x", a2, 2, res, val), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a2"), 8);
  ck_assert_int_eq(node_free(&f, f.cpu, "a2"), 32000);
  ck_assert_int_eq(node_free(&f, f.pods, "a2"), 110);
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 0);
  ck_assert_int_eq(gb_plan_get(f.p, "ns/x", &v), 0);
  ck_assert_int_eq(v.pods_reserved, 2);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  /* A pod bound elsewhere (a2 again, no longer planned; then c1): one pod
   * comes back from the node holding the most, a1. */
  ck_assert_int_eq(gb_plan_pod_bound(f.p, f.s, "ns/x", a2, 2, res, val), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 4);
  ck_assert_int_eq(node_free(&f, f.gpu, "a2"), 8);
  uint32_t c1 = (uint32_t)tp_snapshot_node(f.s, "c1");
  ck_assert_int_eq(gb_plan_pod_bound(f.p, f.s, "ns/x", c1, 2, res, val), 0);
  ck_assert_int_eq(gb_plan_get(f.p, "ns/x", &v), 0);
  ck_assert_int_eq(v.pods_reserved, 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  assert_same_state(&f, before);
  /* Fully bound: more binds and unknown gangs change nothing. */
  ck_assert_int_eq(gb_plan_pod_bound(f.p, f.s, "ns/x", c1, 2, res, val), 0);
  ck_assert_int_eq(gb_plan_pod_bound(f.p, f.s, "ns/none", c1, 2, res, val), 0);
  assert_same_state(&f, before);
  /* The released gang keeps its domain. */
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/x", "a1", NULL, 0), 1);
  teardown(&f);
}
END_TEST

struct expired {
  char keys[4][32];
  int n;
};

static void on_expired(void *arg, const char *key) {
  struct expired *e = arg;
  snprintf(e->keys[e->n++], sizeof(e->keys[0]), "%s", key);
}

START_TEST(expiry) {
  struct fx f;
  setup(&f);
  int64_t before[64];
  free_state(&f, before);
  struct tp_gang *g = gang(&f, 2, 8, 1);
  struct gb_plan_gang gs[2] = {pg("ns/a", g, 0, 0), pg("ns/b", g, 0, 1)};
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 2, 0, NULL, &f.d), 0);
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/a", 1000), 0);
  /* ns/b stays PLACED (not released): expiry is for released gangs only. */
  struct expired ex = {0};
  ck_assert_int_eq(gb_plan_expire(f.p, f.s, 5999, on_expired, &ex), 0);
  ck_assert_int_eq(ex.n, 0);
  ck_assert_int_eq(dom_gpu(&f, "r1"), 0);
  ck_assert_int_eq(gb_plan_expire(f.p, f.s, 6000, on_expired, &ex), 1);
  ck_assert_int_eq(ex.n, 1);
  ck_assert_str_eq(ex.keys[0], "ns/a");
  ck_assert_int_eq(dom_gpu(&f, "r1"), 16);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(f.p, "ns/a", &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert_int_eq(v.deadline_ms, 6000);
  ck_assert_int_eq(v.pods_reserved, 0);
  /* Once: a second pass finds nothing, and forgetting gives back nothing more. */
  ck_assert_int_eq(gb_plan_expire(f.p, f.s, 99999, NULL, NULL), 0);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/a"), 0);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/b"), 0);
  assert_same_state(&f, before);
  teardown(&f);
}
END_TEST

START_TEST(reapply_after_rebuild) {
  struct fx f;
  setup(&f);
  struct tp_gang *g = gang(&f, 2, 8, 1);
  struct gb_plan_gang gs[2] = {pg("ns/a", g, 0, 0), pg("ns/b", g, 0, 1)};
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 2, 0, NULL, &f.d), 0);
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/a", 0), 0);
  /* The model rebuilds: a fresh snapshot without a2. */
  tp_snapshot_free(f.s);
  f.s = build(&f, CLUSTER_NO_A2);
  f.gpu = tp_snapshot_resource(f.s, "nvidia.com/gpu");
  f.cpu = tp_snapshot_resource(f.s, "cpu");
  f.pods = tp_snapshot_resource(f.s, "pods");
  int64_t before[64];
  free_state(&f, before);
  ck_assert_int_eq(gb_plan_reapply(f.p, f.s), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 0);
  ck_assert_int_eq(dom_gpu(&f, "r2"), 0);
  ck_assert_int_eq(node_free(&f, f.pods, "b1"), 109);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(f.p, "ns/a", &v), 0);
  ck_assert_int_eq(v.pods_reserved, 1); /* a2's pod went with a2 */
  ck_assert_int_eq(gb_plan_get(f.p, "ns/b", &v), 0);
  ck_assert_int_eq(v.pods_reserved, 2);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/a"), 0);
  ck_assert_int_eq(gb_plan_unreserve(f.p, f.s, "ns/b"), 0);
  assert_same_state(&f, before);
  teardown(&f);
}
END_TEST


/* A node the model takes out and puts back (relabelled, resized, or
 * deleted and re-created) comes back at allocatable: reapply_node takes
 * what the plan reserved there again, and only there. */
START_TEST(reapply_one_node) {
  struct fx f;
  setup(&f);
  struct tp_gang *g = gang(&f, 2, 8, 1);
  struct gb_plan_gang gs[1] = {pg("ns/a", g, 0, 0)};
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 1, 0, NULL, &f.d), 0);
  struct node_list c = {0};
  ck_assert_int_eq(gb_plan_foreach_node(f.p, "ns/a", collect_node, &c), 0);
  ck_assert_int_ge(c.n, 1);
  const char *nm = c.names[0];
  ck_assert_int_eq(node_free(&f, f.gpu, nm), 0);
  int64_t before[64];
  free_state(&f, before);

  char yaml[256];
  snprintf(yaml, sizeof(yaml),
           "apiVersion: v1\nkind: Node\nmetadata: {name: %s}\n"
           "status: {allocatable: {cpu: '32', nvidia.com/gpu: '8', pods: '110'}}\n", nm);
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "n.yaml", yaml, strlen(yaml), &f.d), 0);
  ck_assert_int_eq(tp_snapshot_remove_node(f.s, nm), 0);
  ck_assert_int_eq(tp_snapshot_add_node(f.s, ds->docs[0].root, NULL, &f.d), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, nm), 8);
  ck_assert_int_eq(gb_plan_reapply_node(f.p, f.s, nm), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, nm), 0);
  /* Other nodes are untouched: a second call on another node changes nothing. */
  ck_assert_int_eq(gb_plan_reapply_node(f.p, f.s, "c1"), 0);
  assert_same_state(&f, before);
  gb_docset_free(ds);
  teardown(&f);
}
END_TEST

/* Two gangs want the one free rack: the higher priority wins, then the
 * older, then the smaller key. */
START_TEST(order) {
  struct fx f;
  setup(&f);
  /* Fill r2 and c1 so that only r1 can take a 2 x 8-GPU gang. */
  ck_assert_int_eq(tp_snapshot_set_free(f.s, "b1", "nvidia.com/gpu", 0), 0);
  struct tp_gang *g = gang(&f, 2, 8, 2);
  struct gb_plan_gang gs[3] = {pg("ns/old", g, 0, 10), pg("ns/new", g, 0, 20),
                               pg("ns/high", g, 5, 30)};
  struct gb_plan_view v[3];
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 3, 100, v, &f.d), 0);
  ck_assert_int_eq(v[2].outcome, GB_PLAN_PLACED);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/high"), 0);
  gs[2].priority = 0;
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 2, gs, 3, 100, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_PLACED);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/old"), 0);
  gs[1].created_ms = gs[2].created_ms = 5;
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 3, &gs[1], 2, 100, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT);  /* ns/new */
  ck_assert_int_eq(v[1].outcome, GB_PLAN_PLACED); /* ns/high < ns/new */
  teardown(&f);
}
END_TEST

START_TEST(starvation_guard) {
  struct fx f;
  setup(&f); /* guard: 60 s */
  /* "big" needs 4 x 8 GPUs in s1, but b2 is busy: it fits nowhere.  Small
   * gangs of one 8-GPU pod keep fitting. */
  ck_assert_int_eq(tp_snapshot_set_free(f.s, "b2", "nvidia.com/gpu", 0), 0);
  struct tp_gang *big = gang(&f, 4, 8, 2), *small = gang(&f, 1, 8, 2);
  struct gb_plan_gang gs[4] = {pg("ns/big", big, 0, 0), pg("ns/s1", small, 0, 1000),
                               pg("ns/s2", small, -1, 2000), pg("ns/vip", small, 1, 3000)};
  struct gb_plan_view v[4];
  /* Before the guard: the small ones take what is free. */
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 4, 59999, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_PLACED);
  ck_assert_int_eq(v[2].outcome, GB_PLAN_PLACED);
  ck_assert_int_eq(v[3].outcome, GB_PLAN_PLACED);
  for (int i = 1; i < 4; i++)
    ck_assert_int_eq(gb_plan_unreserve(f.p, f.s, gs[i].key), 0);
  /* Past the guard: gangs behind big of no higher priority are held and
   * say why; the higher-priority one still goes. */
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 2, gs, 4, 60000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT); /* after ns/vip, by priority */
  ck_assert(strstr(v[0].reason, "needs 4 pods x (8 nvidia.com/gpu, 1 cpu) in one domain of "
                                "tier <= 2; best is s1 (tier 2): fits 2 of 4 pods") != NULL);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_HELD);
  ck_assert_str_eq(v[1].reason, "held: fits, but ns/big (priority 0) has waited 60 s without "
                                "fitting and goes first in the domains it could use (until it "
                                "has waited 1860 s)");
  ck_assert_int_eq(v[2].outcome, GB_PLAN_HELD);
  ck_assert_int_eq(v[3].outcome, GB_PLAN_PLACED);
  /* Held gangs reserve nothing: big fits once b2 frees up. */
  ck_assert_int_eq(gb_plan_unreserve(f.p, f.s, "ns/vip"), 0);
  ck_assert_int_eq(tp_snapshot_set_free(f.s, "b2", "nvidia.com/gpu", 8), 0);
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 3, gs, 2, 70000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v[0].domain, "s1");
  ck_assert_int_eq(v[1].outcome, GB_PLAN_NOFIT);
  teardown(&f);
}
END_TEST

START_TEST(policy_default_and_blocked) {
  struct fx f;
  struct gb_plan_opts o = {0};
  setup_opts(&f, &o);
  /* No policy anywhere: not the plan's business. */
  struct gb_plan_gang x = pg("ns/x", gang(&f, 1, 8, 0), 0, 0);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, &x, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_NONE);
  ck_assert_int_eq(gb_plan_get(f.p, "ns/x", &v), GC_ENOTFOUND);
  ck_assert_int_eq(dom_gpu(&f, TP_ROOT_NAME), 36);
  /* A bad key is NOFIT with the reason, and not stored. */
  struct gb_plan_gang bad = pg("", x.gang, 0, 0);
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, &bad, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_NOFIT);
  ck_assert(strstr(v.reason, "gang key") != NULL);
  gb_plan_free(f.p);
  /* A default policy (hard, tier named by number) applies to gangs with none;
   * the blocked mask keeps the gang off a1. */
  o.default_policy.mode = TP_MODE_HARD;
  o.default_policy.has_highest_tier = 1;
  o.default_policy.highest_tier = 1;
  ck_assert_int_eq(gb_plan_new(&o, &f.p), 0);
  uint8_t *mask = calloc(tp_snapshot_slot_count(f.s), 1);
  mask[tp_snapshot_node(f.s, "a1")] = 1;
  x.blocked = mask;
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, &x, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v.domain, "r1");
  ck_assert_int_eq(gb_plan_node_score(f.p, "ns/x", "a2"), 1);
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 8);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/x"), 0);
  /* A bad gang (no pods) is NOFIT with the evaluator's message. */
  struct tp_gang *empty = gang(&f, 1, 8, 1);
  empty->sets[0].count = 0;
  struct gb_plan_gang e = pg("ns/empty", empty, 0, 0);
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 2, &e, 1, 0, &v, &f.d), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_NOFIT);
  ck_assert(strstr(v.reason, "ns/empty: gang: pod set w: count must be") != NULL);
  free(mask);
  teardown(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gb_plan");
  TCase *t = tcase_create("core");
  tcase_add_test(t, decide_reserve_and_give_back);
  tcase_add_test(t, lookups);
  tcase_add_test(t, pod_bound_planned_and_unplanned);
  tcase_add_test(t, expiry);
  tcase_add_test(t, reapply_after_rebuild);
  tcase_add_test(t, reapply_one_node);
  tcase_add_test(t, order);
  tcase_add_test(t, starvation_guard);
  tcase_add_test(t, policy_default_and_blocked);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
