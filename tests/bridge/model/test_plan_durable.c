/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_plan's durable decisions and the checks of issue 17, on
 * the plan_fixture cluster: a decision copied out and taken back (bound
 * pods discounted, nothing promised beyond allocatable); a partly released
 * gang whose domain no longer fits keeps it and waits, never moving to
 * another rack (defect 1); a reservation held while pods are still being
 * released outlives the TTL of the first release (defect 2); a pinned,
 * unused decision that no longer fits is decided again (defect 4); the
 * starvation guard holds only for a gang that could ever start, only in
 * the domains it could use, and only for starvationGuardMax (defect 5);
 * another gang's reservation in the domain and overlapping allowed nodes
 * are seen, and narrowed allowed nodes answer the lookups (defect 9).
 */
#include "plan_fixture.h"

static void setup_guard(struct fx *f, int64_t max_ms) {
  struct gb_plan_opts o = {0};
  o.reservation_ttl_ms = 5000;
  o.starvation_guard_ms = 60000;
  o.starvation_guard_max_ms = max_ms;
  setup_opts(f, &o);
}

/* Decides gang key alone on f's snapshot at now_ms; returns the view. */
static struct gb_plan_view decide1(struct fx *f, const char *key, const struct tp_gang *g,
                                   uint64_t gen, int64_t now_ms) {
  struct gb_plan_gang x = pg(key, g, 0, 0);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_decide(f->p, f->s, gen, &x, 1, now_ms, &v, &f->d), 0);
  return v;
}

/* What the model does when a pod of 8 GPUs and 1 cpu binds to node. */
static void bind_pod(struct fx *f, const char *node) {
  uint32_t slot = (uint32_t)tp_snapshot_node(f->s, node);
  tp_snapshot_adjust_free(f->s, slot, f->gpu, -8);
  tp_snapshot_adjust_free(f->s, slot, f->cpu, -1000);
  tp_snapshot_adjust_free(f->s, slot, f->pods, -1);
}

static const char *RES[] = {"nvidia.com/gpu", "cpu"};
static const int64_t VAL[] = {8, 1000};

START_TEST(record_and_restore) {
  struct fx f;
  setup(&f);
  int64_t before[64];
  free_state(&f, before);
  struct tp_gang *g = gang(&f, 2, 8, 1);
  struct gb_plan_view v = decide1(&f, "ns/a", g, 1, 1000);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  ck_assert(v.fresh);
  ck_assert_uint_ne(v.id, 0);
  ck_assert_str_eq(v.domain, "r1");
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/a", 1000), 0);
  struct gb_plan_record r;
  ck_assert_int_eq(gb_plan_record_of(f.p, "ns/a", f.a, &r), 0);
  ck_assert_uint_eq(r.id, v.id);
  ck_assert_str_eq(r.domain, "r1");
  ck_assert_int_eq(r.pods, 2);
  ck_assert_uint_eq(r.n_sets, 1);
  ck_assert_int_eq(r.sets[0].count, 2);
  ck_assert_uint_eq(r.n_assign, 2);
  ck_assert_str_eq(r.assign[0].node, "a1");
  ck_assert_str_eq(r.assign[1].node, "a2");
  ck_assert_uint_eq(r.n_members, 2);
  /* A restart: the plan is empty, one pod of the gang bound to a1 since. */
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/a"), 0);
  assert_same_state(&f, before);
  bind_pod(&f, "a1");
  struct gb_plan_bound b = {"a1", 2, RES, VAL};
  ck_assert_int_eq(gb_plan_restore(f.p, f.s, "ns/a", &r, &b, 1, 1, 2000), 0);
  ck_assert_int_eq(gb_plan_get(f.p, "ns/a", &v), 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert_uint_eq(v.id, r.id);
  ck_assert(v.used);
  ck_assert_int_eq(v.pods_reserved, 1); /* the bound pod holds its own capacity */
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a2"), 0);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/a", "b1", NULL, 0), 0);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/a", "a2", NULL, 0), 1);
  /* The rest (one pod, a2) still fits: kept, not decided again. */
  v = decide1(&f, "ns/a", gang(&f, 1, 8, 1), 2, 3000);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert(!v.fresh && !v.redecided && !v.replanned && !v.waiting);
  teardown(&f);
}
END_TEST

/* A restore never promises a node more than it has: a planned node whose
 * capacity went to someone else meanwhile is not taken. */
START_TEST(restore_never_overpromises) {
  struct fx f;
  setup(&f);
  struct tp_gang *g = gang(&f, 2, 8, 1);
  decide1(&f, "ns/a", g, 1, 0);
  struct gb_plan_record r;
  ck_assert_int_eq(gb_plan_record_of(f.p, "ns/a", f.a, &r), 0);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/a"), 0);
  bind_pod(&f, "a2"); /* another tenant's pod took a2 */
  ck_assert_int_eq(gb_plan_restore(f.p, f.s, "ns/a", &r, NULL, 0, 0, 0), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a2"), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 0);
  struct gb_plan_view v;
  ck_assert_int_eq(gb_plan_get(f.p, "ns/a", &v), 0);
  ck_assert_int_eq(v.pods_reserved, 1);
  teardown(&f);
}
END_TEST

/* Defect 1: a partly released hard gang whose recorded rack no longer fits
 * the rest is never split: the rest waits there (another rack would fit
 * it), and once the rack has room again it is finished there. */
START_TEST(partly_released_waits_in_its_domain) {
  struct fx f;
  setup(&f);
  struct tp_gang *g = gang(&f, 2, 8, 2); /* tier 2: r1, r2 and s1 are all allowed */
  struct gb_plan_view v = decide1(&f, "ns/a", g, 1, 0);
  ck_assert_str_eq(v.domain, "r1");
  struct gb_plan_record r;
  ck_assert_int_eq(gb_plan_record_of(f.p, "ns/a", f.a, &r), 0);
  ck_assert_int_eq(gb_plan_forget(f.p, f.s, "ns/a"), 0);
  /* Restart after one pod was released (not bound); a2 is filled meanwhile. */
  bind_pod(&f, "a2");
  ck_assert_int_eq(gb_plan_restore(f.p, f.s, "ns/a", &r, NULL, 0, 1, 100), 0);
  v = decide1(&f, "ns/a", g, 2, 200);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert(v.waiting);
  ck_assert(!v.redecided && !v.fresh);
  ck_assert_str_eq(v.domain, "r1");
  ck_assert_msg(strstr(v.reason, "r1: pods of the gang are released there") != NULL, "%s",
                v.reason);
  ck_assert_msg(strstr(v.why, "a2") != NULL, "%s", v.why);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/a", "b1", NULL, 0), 0);
  ck_assert_int_eq(dom_gpu(&f, "r2"), 16);         /* nothing taken in another rack */
  ck_assert_int_eq(node_free(&f, f.gpu, "a1"), 0); /* what still fits stays held */
  /* a2 frees up: the rest gets a new assignment inside r1. */
  tp_snapshot_adjust_free(f.s, (uint32_t)tp_snapshot_node(f.s, "a2"), f.gpu, 8);
  tp_snapshot_adjust_free(f.s, (uint32_t)tp_snapshot_node(f.s, "a2"), f.cpu, 1000);
  tp_snapshot_adjust_free(f.s, (uint32_t)tp_snapshot_node(f.s, "a2"), f.pods, 1);
  v = decide1(&f, "ns/a", g, 3, 300);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert(v.replanned);
  ck_assert_uint_ne(v.id, r.id);
  ck_assert_str_eq(v.domain, "r1");
  ck_assert_int_eq(dom_gpu(&f, "r1"), 0);
  ck_assert_int_eq(dom_gpu(&f, "r2"), 16);
  teardown(&f);
}
END_TEST

/* Defect 2: while pods are still being released (their PATCHes failing),
 * the reservation is held from the last attempt, not the first release. */
START_TEST(hold_outlives_the_first_ttl) {
  struct fx f;
  setup(&f); /* TTL 5 s */
  decide1(&f, "ns/a", gang(&f, 2, 8, 1), 1, 0);
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/a", 0), 0);
  ck_assert_int_eq(gb_plan_hold(f.p, "ns/a", 4000, 1), 0);
  ck_assert_int_eq(gb_plan_expire(f.p, f.s, 6000, NULL, NULL), 0);
  ck_assert_int_eq(dom_gpu(&f, "r1"), 0);
  ck_assert_int_eq(gb_plan_hold(f.p, "ns/a", 8000, 0), 0);
  ck_assert_int_eq(gb_plan_expire(f.p, f.s, 12999, NULL, NULL), 0);
  ck_assert_int_eq(gb_plan_expire(f.p, f.s, 13000, NULL, NULL), 1);
  ck_assert_int_eq(dom_gpu(&f, "r1"), 16);
  ck_assert_int_eq(gb_plan_hold(f.p, "ns/none", 0, 0), GC_ENOTFOUND);
  teardown(&f);
}
END_TEST

/* Defect 4: a pinned decision no pod used, whose rack lost a node, is
 * decided again as a whole gang (the new id replaces the old one). */
START_TEST(unused_pinned_is_decided_again) {
  struct fx f;
  setup(&f);
  struct tp_gang *g = gang(&f, 2, 8, 1);
  struct gb_plan_view v = decide1(&f, "ns/a", g, 1, 0);
  uint64_t first = v.id;
  ck_assert_str_eq(v.domain, "r1");
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/a", 0), 0); /* pinned by jobEnqueueable */
  /* Still fits: kept on every pass. */
  v = decide1(&f, "ns/a", g, 2, 10);
  ck_assert_int_eq(v.outcome, GB_PLAN_RELEASED);
  ck_assert(!v.redecided);
  /* a1 is deleted. */
  ck_assert_int_eq(tp_snapshot_remove_node(f.s, "a1"), 0);
  v = decide1(&f, "ns/a", g, 3, 20);
  ck_assert(v.redecided);
  ck_assert(v.fresh);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v.domain, "r2");
  ck_assert_str_eq(v.prev_domain, "r1");
  ck_assert_uint_eq(v.prev_id, first);
  ck_assert_uint_ne(v.id, first);
  ck_assert_msg(strstr(v.why, "node a1 is gone") != NULL, "%s", v.why);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/a", "b1", NULL, 0), 1);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/a", "a2", NULL, 0), 0);
  ck_assert_int_eq(node_free(&f, f.gpu, "a2"), 8); /* the old reservation went back */
  /* Cordoned is the same: r2 loses b1 before anything is released. */
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/a", 20), 0);
  ck_assert_int_eq(tp_snapshot_set_excluded(f.s, "b1", "cordoned"), 0);
  v = decide1(&f, "ns/a", g, 4, 30);
  ck_assert(v.redecided);
  ck_assert_int_eq(v.outcome, GB_PLAN_NOFIT); /* one rack of 8-GPU nodes is left whole: none */
  ck_assert_msg(strstr(v.why, "b1 is cordoned") != NULL, "%s", v.why);
  teardown(&f);
}
END_TEST

/* Defect 5: a gang that could never start holds nobody back. */
START_TEST(impossible_gang_holds_nobody) {
  struct fx f;
  setup_guard(&f, 0);
  /* 5 x 8 GPUs in one tier-2 domain: s1 has 4 such nodes, s2 one 4-GPU
   * node: impossible whatever frees up. */
  struct tp_gang *hog = gang(&f, 5, 8, 2), *small = gang(&f, 1, 8, 2);
  struct gb_plan_gang gs[2] = {pg("team-a/hog", hog, 0, 0), pg("team-b/small", small, 0, 1000)};
  struct gb_plan_view v[2];
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 2, 600000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_PLACED);
  teardown(&f);
}
END_TEST

/* Defect 5: a gang that could start holds back only gangs that would take
 * capacity in the domains it could use, and only for the bound. */
START_TEST(guard_only_on_its_domains_and_bounded) {
  struct fx f;
  setup_guard(&f, 120000); /* holds from 60 s to 180 s of waiting */
  ck_assert_int_eq(tp_snapshot_set_free(f.s, "b2", "nvidia.com/gpu", 0), 0);
  struct tp_gang *big = gang(&f, 4, 8, 2); /* only s1 could hold it, and does once b2 frees */
  struct tp_gang *in_s1 = gang(&f, 1, 8, 2), *in_s2 = gang(&f, 1, 4, 1);
  struct gb_plan_gang gs[4] = {pg("ns/big", big, 0, 0), pg("ns/s1", in_s1, 0, 1000),
                               pg("ns/s2", in_s2, 0, 2000), pg("other/s1", in_s1, 0, 3000)};
  struct gb_plan_view v[4];
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 4, 60000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_HELD); /* would take a node of s1 */
  ck_assert(strstr(v[1].reason, "ns/big") != NULL);
  ck_assert_int_eq(v[2].outcome, GB_PLAN_PLACED); /* c1 in s2: not big's */
  ck_assert_str_eq(v[2].domain, "r3");
  /* Another tenant's held gang is not told whose gang goes first. */
  ck_assert_int_eq(v[3].outcome, GB_PLAN_HELD);
  ck_assert_msg(strstr(v[3].reason, "a gang of another namespace") &&
                    !strstr(v[3].reason, "ns/big"),
                "%s", v[3].reason);
  ck_assert_int_eq(gb_plan_unreserve(f.p, f.s, "ns/s2"), 0);
  /* Past starvationGuard + starvationGuardMax: big holds nobody any more,
   * although nothing in the cluster changed (same generation). */
  ck_assert_int_eq(gb_plan_decide(f.p, f.s, 1, gs, 2, 180000, v, &f.d), 0);
  ck_assert_int_eq(v[0].outcome, GB_PLAN_NOFIT);
  ck_assert_int_eq(v[1].outcome, GB_PLAN_PLACED);
  teardown(&f);
}
END_TEST

/* Defect 9: gang b's domain holds a's reservation (shared), and a, released
 * with its whole rack allowed, may take a node planned for b (overlap);
 * narrowing b's allowed nodes to its assignment answers the lookups. */
START_TEST(shared_and_overlap) {
  struct fx f;
  setup(&f);
  struct gb_plan_view v = decide1(&f, "ns/a", gang(&f, 1, 8, 1), 1, 0);
  ck_assert_str_eq(v.domain, "r1");
  ck_assert_int_eq(gb_plan_mark_released(f.p, "ns/a", 0), 0);
  ck_assert_int_eq(gb_plan_shared(f.p, "ns/a"), 0);
  v = decide1(&f, "ns/b", gang(&f, 3, 8, 2), 1, 0);
  ck_assert_int_eq(v.outcome, GB_PLAN_PLACED);
  ck_assert_str_eq(v.domain, "s1");
  ck_assert_int_eq(gb_plan_shared(f.p, "ns/b"), 1);
  char other[64] = "";
  ck_assert_int_eq(gb_plan_overlap(f.p, "ns/b", other, sizeof(other)), 1);
  ck_assert_str_eq(other, "ns/a");
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/b", "a1", NULL, 0), 1);
  const char *mine[] = {"b2", "a2", "b1"};
  ck_assert_int_eq(gb_plan_set_members(f.p, "ns/b", mine, 3), 0);
  char why[256];
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/b", "a1", why, sizeof(why)), 0);
  ck_assert_int_eq(gb_plan_node_allowed(f.p, "ns/b", "a2", NULL, 0), 1);
  ck_assert_int_eq(gb_plan_set_members(f.p, "ns/none", mine, 3), GC_ENOTFOUND);
  /* a, narrowed to its own node, no longer overlaps b's nodes. */
  const char *a_nodes[] = {"a1"};
  ck_assert_int_eq(gb_plan_set_members(f.p, "ns/a", a_nodes, 1), 0);
  ck_assert_int_eq(gb_plan_overlap(f.p, "ns/b", other, sizeof(other)), 0);
  teardown(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gb_plan_durable");
  TCase *t = tcase_create("core");
  tcase_add_test(t, record_and_restore);
  tcase_add_test(t, restore_never_overpromises);
  tcase_add_test(t, partly_released_waits_in_its_domain);
  tcase_add_test(t, hold_outlives_the_first_ttl);
  tcase_add_test(t, unused_pinned_is_decided_again);
  tcase_add_test(t, impossible_gang_holds_nobody);
  tcase_add_test(t, guard_only_on_its_domains_and_bounded);
  tcase_add_test(t, shared_and_overlap);
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
