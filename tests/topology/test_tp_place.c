/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for tp_place on hand-made clusters: tier choice in hard and
 * soft mode, BestFit and Spread (domains and nodes), minMember, "why not"
 * reasons with the limiting resource, heterogeneous gangs sharing nodes,
 * evaluation after snapshot updates, and the compact Gang document.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "gc_quantity.h"
#include "gc_resources.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"
#include "tp_snapshot_test.h"

#define NODE(n, cpu, gpu)                                                                   \
  "apiVersion: v1\nkind: Node\nmetadata: {name: " n "}\n"                                  \
  "status: {allocatable: {cpu: '" cpu "', nvidia.com/gpu: '" gpu "', pods: '110'}}\n---\n"
#define HN(name, tier, tn, members)                                                        \
  "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: " name "}\n" \
  "spec:\n  tier: " tier "\n  tierName: " tn "\n  members:\n" members "---\n"
#define MN(n) "  - {type: Node, selector: {exactMatch: {name: " n "}}}\n"
#define MH(n) "  - {type: HyperNode, selector: {exactMatch: {name: " n "}}}\n"

/* Racks r1 {a1 4gpu, a2 2gpu}, r2 {b1 8, b2 8}, r3 {c1 1}; spines s1 {r1, r2}, s2 {r3};
 * node z (8 gpu) in no HyperNode. */
static const char *CLUSTER =
    NODE("a1", "32", "4") NODE("a2", "32", "2") NODE("b1", "32", "8") NODE("b2", "32", "8")
    NODE("c1", "32", "1") NODE("z", "32", "8")
    HN("s1", "2", "spine", MH("r1") MH("r2")) HN("s2", "2", "spine", MH("r3"))
    HN("r1", "1", "rack", MN("a1") MN("a2")) HN("r2", "1", "rack", MN("b1") MN("b2"))
    HN("r3", "1", "rack", MN("c1"));

struct fx {
  struct gb_docset *ds;
  struct tp_snapshot *s;
  struct tp_evaluator *ev;
  struct gc_arena *a;
  struct gc_diags d;
};

static void setup(struct fx *f, const char *yaml) {
  memset(f, 0, sizeof(*f));
  gc_diags_init(&f->d);
  f->ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(f->ds, "c.yaml", yaml, strlen(yaml), &f->d), 0);
  const struct gc_value *docs[64];
  for (size_t i = 0; i < f->ds->n; i++)
    docs[i] = f->ds->docs[i].root;
  ck_assert_int_eq(tp_snapshot_build(docs, NULL, f->ds->n, NULL, &f->s, &f->d), 0);
  f->ev = tp_evaluator_new();
  f->a = gc_arena_new(0);
}

static void teardown(struct fx *f) {
  tp_evaluator_free(f->ev);
  tp_snapshot_free(f->s);
  gb_docset_free(f->ds);
  gc_arena_free(f->a);
  gc_diags_destroy(&f->d);
}

/* A one-set gang of `count` pods each asking `gpu` GPUs and 1 cpu. */
static struct tp_gang gang1(struct fx *f, int64_t count, int64_t gpu) {
  struct tp_gang g = {0};
  g.n_sets = 1;
  g.sets = gc_arena_alloc(f->a, sizeof(*g.sets));
  g.sets[0].name = "w";
  g.sets[0].count = count;
  g.sets[0].res = gc_arena_alloc(f->a, 2 * sizeof(char *));
  g.sets[0].val = gc_arena_alloc(f->a, 2 * sizeof(int64_t));
  g.sets[0].res[0] = "cpu";
  g.sets[0].val[0] = 1000;
  g.sets[0].res[1] = "nvidia.com/gpu";
  g.sets[0].val[1] = gpu;
  g.sets[0].n_req = gpu ? 2 : 1;
  return g;
}

static struct tp_result eval(struct fx *f, const struct tp_gang *g, enum tp_mode mode,
                             int64_t tier, enum tp_profile prof) {
  struct tp_eval_opts o = {0};
  o.policy.mode = mode;
  if (tier >= 0) {
    o.policy.has_highest_tier = 1;
    o.policy.highest_tier = tier;
  }
  o.profile = prof;
  struct tp_result r;
  int rc = tp_place_evaluate(f->ev, f->s, g, &o, f->a, &r, &f->d);
  ck_assert_int_eq(rc, 0);
  return r;
}

static int64_t pods_on(const struct tp_result *r, const char *node) {
  int64_t n = 0;
  for (size_t i = 0; i < r->n_assign; i++)
    if (!strcmp(r->assign[i].node, node))
      n += r->assign[i].pods;
  return n;
}

static int has_reason(const struct tp_result *r, const char *needle) {
  for (size_t i = 0; i < r->n_reasons; i++)
    if (strstr(r->reasons[i], needle))
      return 1;
  return 0;
}

static void print_reasons(const struct tp_result *r) {
  for (size_t i = 0; i < r->n_reasons; i++)
    fprintf(stderr, "  reason: %s\n", r->reasons[i]);
}

START_TEST(bestfit_lowest_tier_tightest_domain) {
  struct fx f;
  setup(&f, CLUSTER);
  /* 4 one-GPU pods: r1 (6 free) and r2 (16) fit at tier 1; BestFit takes the
   * tighter r1; nodes: a1 holds all four (fewest nodes, exact). */
  struct tp_gang g = gang1(&f, 4, 1);
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert(r.feasible);
  ck_assert_str_eq(r.domain_name, "r1");
  ck_assert_int_eq(r.tier, 1);
  ck_assert_str_eq(r.tier_name, "rack");
  ck_assert_int_eq(pods_on(&r, "a1"), 4);
  ck_assert_uint_eq(r.nodes_used, 1);
  ck_assert_int_eq(r.leftover, 2);
  /* 5 pods: a1 takes 4, the last one goes to the tightest node that holds
   * one (a2); the tier-1 search still picks r1. */
  g = gang1(&f, 5, 1);
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert_str_eq(r.domain_name, "r1");
  ck_assert_int_eq(pods_on(&r, "a1"), 4);
  ck_assert_int_eq(pods_on(&r, "a2"), 1);
  /* 3 pods of 3 GPUs: b1 fits 2 and b2 2 (r2); BestFit: b1 2, then the
   * tightest for 1 more: b2 (a1 is in another rack). */
  g = gang1(&f, 3, 3);
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert_str_eq(r.domain_name, "r2");
  ck_assert_int_eq(pods_on(&r, "b1") + pods_on(&r, "b2"), 3);
  teardown(&f);
}
END_TEST

START_TEST(bestfit_nodes_kueue_example) {
  struct fx f;
  /* Kueue's KEP example: node capacities 3, 3, 2, 1 and 7 pods: BestFit
   * takes 3 and 3, then the node with exactly 1 (the 2 stays whole). */
  setup(&f, NODE("p", "32", "3") NODE("q", "32", "3") NODE("r", "32", "2") NODE("s", "32", "1")
                HN("rk", "1", "rack", MN("p") MN("q") MN("r") MN("s")));
  struct tp_gang g = gang1(&f, 7, 1);
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert(r.feasible);
  ck_assert_int_eq(pods_on(&r, "p"), 3);
  ck_assert_int_eq(pods_on(&r, "q"), 3);
  ck_assert_int_eq(pods_on(&r, "r"), 0);
  ck_assert_int_eq(pods_on(&r, "s"), 1);
  ck_assert_uint_eq(r.nodes_used, 3);
  /* 2 pods: every node but s holds them; the tightest is r (exactly 2). */
  g = gang1(&f, 2, 1);
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert_int_eq(pods_on(&r, "r"), 2);
  /* Spread: 7 pods over 3, 3, 2, 1 -> level 2: 2, 2, 2, 1. */
  g = gang1(&f, 7, 1);
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_SPREAD);
  ck_assert_int_eq(pods_on(&r, "p") + pods_on(&r, "q"), 4);
  ck_assert_int_eq(pods_on(&r, "r"), 2);
  ck_assert_int_eq(pods_on(&r, "s"), 1);
  teardown(&f);
  /* Capacities above the gang size (10, 9, 8 for 5 pods) all sort as 5:
   * the tightest true capacity (8) still wins. */
  setup(&f, NODE("a", "64", "10") NODE("b", "64", "9") NODE("c", "64", "8")
                HN("rk", "1", "rack", MN("a") MN("b") MN("c")));
  g = gang1(&f, 5, 1);
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert_int_eq(pods_on(&r, "c"), 5);
  ck_assert_uint_eq(r.nodes_used, 1);
  teardown(&f);
}
END_TEST

START_TEST(spread_most_free_domain) {
  struct fx f;
  setup(&f, CLUSTER);
  struct tp_gang g = gang1(&f, 4, 1);
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_SPREAD);
  ck_assert(r.feasible);
  ck_assert_str_eq(r.domain_name, "r2");
  ck_assert_int_eq(pods_on(&r, "b1"), 2);
  ck_assert_int_eq(pods_on(&r, "b2"), 2);
  teardown(&f);
}
END_TEST

START_TEST(tiers_hard_soft_and_reasons) {
  struct fx f;
  setup(&f, CLUSTER);
  /* 3 pods of 4 GPUs: no rack fits (r2 holds 4 pods of... b1 2, b2 2 = 4 -> fits!).
   * Use 5 pods: r2 holds 4; s1 holds r1 (a1 1) + r2 (4) = 5 at tier 2. */
  struct tp_gang g = gang1(&f, 5, 4);
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  print_reasons(&r);
  ck_assert(!r.feasible);
  ck_assert_int_eq(r.domain, -1);
  ck_assert(has_reason(&r, "r2 (tier 1): fits 4 of 5 pods; nvidia.com/gpu short by 4"));
  ck_assert(has_reason(&r, "hard mode: domains above tier 1 were not considered"));
  r = eval(&f, &g, TP_MODE_HARD, 2, TP_PROFILE_BESTFIT);
  ck_assert(r.feasible);
  ck_assert_str_eq(r.domain_name, "s1");
  ck_assert_int_eq(r.tier, 2);
  ck_assert(has_reason(&r, "r2 (tier 1): fits 4 of 5 pods"));
  /* By tierName. */
  struct tp_eval_opts o = {0};
  o.policy.mode = TP_MODE_HARD;
  o.policy.highest_tier_name = "spine";
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), 0);
  ck_assert_str_eq(r.domain_name, "s1");
  o.policy.highest_tier_name = "nope";
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), GC_ENOTFOUND);
  /* 7 pods of 4 GPUs: no HyperNode holds them (s1 5, s2 0); soft mode falls
   * back to the whole cluster, which adds z (2 more). */
  g = gang1(&f, 7, 4);
  r = eval(&f, &g, TP_MODE_SOFT, -1, TP_PROFILE_BESTFIT);
  ck_assert(r.feasible);
  ck_assert(r.whole_cluster);
  ck_assert_ptr_null(r.domain_name);
  ck_assert_int_eq(pods_on(&r, "z"), 2);
  ck_assert(has_reason(&r, "s1 (tier 2): fits 5 of 7 pods; nvidia.com/gpu short by 6"));
  r = eval(&f, &g, TP_MODE_HARD, 2, TP_PROFILE_BESTFIT);
  ck_assert(!r.feasible);
  /* 8 pods: nowhere. */
  g = gang1(&f, 8, 4);
  r = eval(&f, &g, TP_MODE_SOFT, -1, TP_PROFILE_BESTFIT);
  ck_assert(!r.feasible);
  ck_assert(has_reason(&r, "whole cluster (tier 3): fits 7 of 8 pods; nvidia.com/gpu short by 1"));
  /* Default policy (none anywhere): hard at tier 1. */
  g = gang1(&f, 5, 4);
  o = (struct tp_eval_opts){0};
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), 0);
  ck_assert_int_eq(r.mode, TP_MODE_HARD);
  ck_assert_int_eq(r.highest_tier, 1);
  ck_assert(!r.feasible);
  teardown(&f);
}
END_TEST

START_TEST(fragmentation_and_missing_resources) {
  struct fx f;
  setup(&f, CLUSTER);
  /* 2 pods of 3 GPUs in r1: 6 GPUs free in total but a1 holds 1, a2 0. */
  struct tp_gang g = gang1(&f, 2, 3);
  g.sets[0].count = 3;
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert(r.feasible); /* r2: 2 + 2 */
  /* Ask for a resource nobody has. */
  g.sets[0].res[1] = "example.com/fpga";
  g.sets[0].val[1] = 1;
  r = eval(&f, &g, TP_MODE_SOFT, -1, TP_PROFILE_BESTFIT);
  ck_assert(!r.feasible);
  ck_assert(has_reason(&r, "no node offers example.com/fpga"));
  teardown(&f);
  setup(&f, NODE("a", "8", "2") NODE("b", "8", "2")
                HN("r", "1", "rack", MN("a") MN("b")));
  g = gang1(&f, 1, 3); /* 4 GPUs free in r, but 3 on no single node */
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  print_reasons(&r);
  ck_assert(!r.feasible);
  ck_assert(has_reason(&r, "r (tier 1): fits 0 of 1 pods; enough free resources in total, but "
                           "fragmented across nodes"));
  teardown(&f);
}
END_TEST

START_TEST(min_member) {
  struct fx f;
  setup(&f, CLUSTER);
  struct tp_gang g = gang1(&f, 20, 1);
  g.min_member = 6;
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert(r.feasible);
  ck_assert_int_eq(r.pods, 6);
  ck_assert_str_eq(r.domain_name, "r1");
  teardown(&f);
}
END_TEST

START_TEST(heterogeneous_share_nodes) {
  struct fx f;
  /* Two nodes of 4 cpu / 4 gpu.  Set A: 2 pods x (3 cpu, 0 gpu); set B:
   * 2 pods x (1 cpu, 4 gpu).  Each node must take one A and one B; a greedy
   * that packs A tightly (both on one node) would fail. */
  setup(&f, NODE("a", "4", "4") NODE("b", "4", "4") HN("r", "1", "rack", MN("a") MN("b")));
  struct tp_gang g = {0};
  g.n_sets = 2;
  g.sets = gc_arena_alloc(f.a, 2 * sizeof(*g.sets));
  static const char *ra[] = {"cpu"}, *rb[] = {"cpu", "nvidia.com/gpu"};
  static int64_t va[] = {3000}, vb[] = {1000, 4};
  g.sets[0] = (struct tp_podset){"A", 2, 1, ra, va};
  g.sets[1] = (struct tp_podset){"B", 2, 2, rb, vb};
  for (int p = 0; p < 2; p++) {
    struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, p ? TP_PROFILE_SPREAD : TP_PROFILE_BESTFIT);
    print_reasons(&r);
    ck_assert(r.feasible);
    ck_assert_str_eq(r.domain_name, "r");
    ck_assert_uint_eq(r.n_assign, 4);
    for (size_t i = 0; i < r.n_assign; i++)
      ck_assert_int_eq(r.assign[i].pods, 1);
  }
  /* Three A pods cannot fit with the Bs (cpu 9+2 > 8): reasons say cpu. */
  g.sets[0].count = 3;
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert(!r.feasible);
  print_reasons(&r);
  ck_assert(has_reason(&r, "r (tier 1): fits 4 of 5 pods (A 2/3, B 2/2); cpu short by 3"));
  teardown(&f);
}
END_TEST

START_TEST(after_updates) {
  struct fx f;
  setup(&f, CLUSTER);
  struct tp_gang g = gang1(&f, 4, 1);
  struct tp_result r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert_str_eq(r.domain_name, "r1");
  /* a1 loses 3 GPUs (as quantities: the gRPC "free" update): r1 holds 3
   * now, so r2 is the only tier-1 fit. */
  struct gc_reslist fl = GC_RESLIST_INIT;
  struct gc_quantity q;
  ck_assert_int_eq(gc_quantity_parse("1", 1, &q), 0);
  ck_assert_int_eq(gc_reslist_set(f.a, &fl, "nvidia.com/gpu", &q), 0);
  ck_assert_int_eq(gc_quantity_parse("4500m", 5, &q), 0);
  ck_assert_int_eq(gc_reslist_set(f.a, &fl, "cpu", &q), 0);
  ck_assert_int_eq(tp_snapshot_set_free_list(f.s, "a1", &fl, &f.d), 0);
  ck_assert_int_eq(f.s->free[tp_snapshot_resource(f.s, "cpu")][tp_snapshot_node(f.s, "a1")], 4500);
  ck_assert_int_eq(tp_snapshot_set_free_list(f.s, "zz", &fl, &f.d), GC_ENOTFOUND);
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  ck_assert_str_eq(r.domain_name, "r2");
  /* b1 and b2 leave: no rack fits any more, the cluster still does. */
  ck_assert_int_eq(tp_snapshot_remove_node(f.s, "b1"), 0);
  ck_assert_int_eq(tp_snapshot_set_excluded(f.s, "b2", "drained"), 0);
  ck_assert_int_eq(tp_snapshot_set_excluded(f.s, "a2", "drained"), 0);
  r = eval(&f, &g, TP_MODE_HARD, 1, TP_PROFILE_BESTFIT);
  print_reasons(&r);
  ck_assert(!r.feasible);
  ck_assert(has_reason(&r, "r1 (tier 1): fits 1 of 4 pods; nvidia.com/gpu short by 3; 1 node(s) "
                           "excluded (a2: drained)"));
  r = eval(&f, &g, TP_MODE_SOFT, -1, TP_PROFILE_BESTFIT);
  ck_assert(r.whole_cluster);
  ck_assert_int_eq(pods_on(&r, "z"), 4);
  /* A node that no HyperNode lists joins: only the whole cluster gains. */
  struct gb_docset *extra = gb_docset_new(NULL);
  const char *doc = NODE("new", "64", "16");
  ck_assert_int_eq(gb_manifest_load_buffer(extra, "y.yaml", doc, strlen(doc), &f.d), 0);
  int rc = tp_snapshot_add_node(f.s, extra->docs[0].root, "y.yaml", &f.d);
  for (size_t i = 0; rc && i < f.d.n; i++)
    fprintf(stderr, "  diag: %s\n", f.d.msgs[i]);
  ck_assert_int_eq(rc, 0);
  g = gang1(&f, 16, 1);
  r = eval(&f, &g, TP_MODE_SOFT, -1, TP_PROFILE_BESTFIT);
  ck_assert(r.whole_cluster);
  ck_assert_int_eq(pods_on(&r, "new"), 16);
  gb_docset_free(extra);
  teardown(&f);
}
END_TEST

START_TEST(gang_document) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(NULL);
  const char *y =
      "apiVersion: gangbridge.io/v1alpha1\nkind: Gang\nmetadata: {name: g}\n"
      "spec:\n  minMember: 3\n  podSets:\n"
      "  - {name: w, count: 4, requests: {cpu: 1500m, memory: 1Gi, pods: '3', nvidia.com/gpu: 0}}\n"
      "  networkTopology: {mode: hard, highestTierName: rack}\n---\n"
      "apiVersion: gangbridge.io/v1alpha1\nkind: Gang\nmetadata: {name: bad}\n"
      "spec:\n  podSets:\n  - {name: w, count: 0}\n  - {name: w, count: 1, requests: {cpu: x}}\n"
      "  networkTopology: {mode: firm}\n";
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "g.yaml", y, strlen(y), &d), 0);
  struct gc_arena *a = gc_arena_new(0);
  struct tp_gang g;
  ck_assert(tp_gang_is_doc(ds->docs[0].root));
  ck_assert_int_eq(tp_gang_from_doc(a, ds->docs[0].root, "g.yaml:1:1", &g, &d), 0);
  ck_assert_uint_eq(g.n_sets, 1);
  ck_assert_int_eq(g.min_member, 3);
  ck_assert_uint_eq(g.sets[0].n_req, 2); /* pods and zero amounts dropped */
  ck_assert_str_eq(g.sets[0].res[0], "cpu");
  ck_assert_int_eq(g.sets[0].val[0], 1500);
  ck_assert_int_eq(g.sets[0].val[1], 1073741824);
  ck_assert_int_eq(g.policy.mode, TP_MODE_HARD);
  ck_assert_str_eq(g.policy.highest_tier_name, "rack");
  ck_assert_int_ne(tp_gang_from_doc(a, ds->docs[1].root, "g.yaml:7:1", &g, &d), 0);
  int count_err = 0, req_err = 0;
  for (size_t i = 0; i < d.n; i++) {
    count_err |= strstr(d.msgs[i], "g.yaml:7:1: Gang/bad: spec.podSets[0].count") != NULL;
    req_err |= strstr(d.msgs[i], "spec.podSets[1].requests.cpu") != NULL;
  }
  ck_assert(count_err);
  ck_assert(req_err);
  gc_arena_free(a);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* A per-gang blocked mask (taints the gang does not tolerate): a blocked node
 * is never assigned, and a domain that fits only with it is infeasible, with
 * a reason that counts the blocked nodes and sums that leave them out. */
START_TEST(blocked_nodes) {
  struct fx f;
  setup(&f, CLUSTER);
  uint8_t *mask = calloc(tp_snapshot_slot_count(f.s), 1);
  ck_assert_ptr_nonnull(mask);
  struct tp_eval_opts o = {0};
  o.policy.mode = TP_MODE_HARD;
  o.policy.has_highest_tier = 1;
  o.policy.highest_tier = 2;
  o.blocked = mask;
  /* 2 pods of 4 GPUs: r2 holds them, BestFit puts both on b1 (the first
   * tightest); with b1 blocked both go to b2. */
  struct tp_gang g = gang1(&f, 2, 4);
  struct tp_result r;
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), 0);
  ck_assert(r.feasible);
  ck_assert_int_eq(pods_on(&r, "b1"), 2);
  mask[tp_snapshot_node(f.s, "b1")] = 1;
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), 0);
  ck_assert(r.feasible);
  ck_assert_str_eq(r.domain_name, "r2");
  ck_assert_int_eq(pods_on(&r, "b1"), 0);
  ck_assert_int_eq(pods_on(&r, "b2"), 2);
  ck_assert_int_eq(tp_evaluator_node_pods(f.ev, 0, (uint32_t)tp_snapshot_node(f.s, "b1")), 0);
  /* 2 pods of 8 GPUs fit only on b1 + b2: with b1 blocked nothing at tier
   * <= 2 holds them, and the reason says why (the sums leave b1 out). */
  g = gang1(&f, 2, 8);
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), 0);
  print_reasons(&r);
  ck_assert(!r.feasible);
  ck_assert(has_reason(&r, "r2 (tier 1): fits 1 of 2 pods; nvidia.com/gpu short by 8"));
  ck_assert(has_reason(&r, "1 node(s) blocked for this gang (b1)"));
  /* A heterogeneous gang (several pod sets) is pruned by the same sums. */
  struct tp_gang h = gang1(&f, 1, 8);
  struct tp_podset sets[2] = {h.sets[0], h.sets[0]};
  sets[1].name = "v";
  h.sets = sets;
  h.n_sets = 2;
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &h, &o, f.a, &r, &f.d), 0);
  ck_assert(!r.feasible);
  ck_assert(has_reason(&r, "nvidia.com/gpu short by 8"));
  mask[tp_snapshot_node(f.s, "b1")] = 0;
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &h, &o, f.a, &r, &f.d), 0);
  ck_assert(r.feasible);
  /* Soft mode on the whole cluster: z and b2 hold the 8-GPU pods when b1
   * is blocked; with every 8-GPU node blocked nothing does. */
  mask[tp_snapshot_node(f.s, "b1")] = 1;
  o.policy.mode = TP_MODE_SOFT;
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), 0);
  ck_assert(r.feasible);
  ck_assert(r.whole_cluster);
  ck_assert_int_eq(pods_on(&r, "b1"), 0);
  mask[tp_snapshot_node(f.s, "b2")] = 1;
  mask[tp_snapshot_node(f.s, "z")] = 1;
  ck_assert_int_eq(tp_place_evaluate(f.ev, f.s, &g, &o, f.a, &r, &f.d), 0);
  ck_assert(!r.feasible);
  ck_assert(has_reason(&r, "3 node(s) blocked for this gang"));
  free(mask);
  teardown(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("tp_place");
  TCase *t = tcase_create("core");
  tcase_add_test(t, bestfit_lowest_tier_tightest_domain);
  tcase_add_test(t, bestfit_nodes_kueue_example);
  tcase_add_test(t, spread_most_free_domain);
  tcase_add_test(t, tiers_hard_soft_and_reasons);
  tcase_add_test(t, fragmentation_and_missing_resources);
  tcase_add_test(t, min_member);
  tcase_add_test(t, heterogeneous_share_nodes);
  tcase_add_test(t, after_updates);
  tcase_add_test(t, gang_document);
  tcase_add_test(t, blocked_nodes);
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
