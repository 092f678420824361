/* SPDX-License-Identifier: Apache-2.0
 *
 * Property test for tp_place against an exhaustive search.  For 3,000
 * seeds it builds a random small cluster (1-6 nodes with random cpu, GPU
 * and pod room, some cordoned; up to three tiers of HyperNodes, some nodes
 * in none) and a random gang (one pod set, or two or three with different
 * shapes), evaluates it under a random policy and profile, and checks:
 *   - every assignment is valid: nodes inside the chosen domain, not
 *     excluded, within every node's free resources with all pod sets
 *     together, pod counts exact;
 *   - the chosen tier is the lowest tier with a feasible allowed domain
 *     (homogeneous gangs always; heterogeneous gangs whenever the bounded
 *     exact search did not run out of budget), and "infeasible" means no
 *     allowed domain is feasible;
 *   - BestFit picks the tightest fitting domain of that tier, Spread the
 *     most free (homogeneous gangs).
 * The oracle is independent of the library: it enumerates every way to
 * spread each pod set over the nodes of every domain.  It also measures how
 * often the greedy pass alone (exact search disabled) misses a feasible
 * heterogeneous placement, and prints the figure.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

#define SEEDS 3000
#define MAXN 6
#define MAXS 3
#define NRES 3 /* cpu (milli), gpu, pods */

struct rng {
  uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return n ? (uint32_t)(r->s % n) : 0;
}

struct world {
  int n;                   /* nodes */
  int64_t freev[MAXN][NRES];
  int excluded[MAXN];
  int leaf_of[MAXN];       /* -1: none */
  int nl, nm, nt;          /* leaves, mids, tops generated */
  int leaf_parent[3], mid_parent[2];
  int leaf_used[3], mid_used[2], top_used;
  /* Domains for the oracle: name, tier, node mask. */
  int nd;
  char dname[8][16];
  int dtier[8];
  int dmask[8];
  int root_tier;
  /* Gang. */
  int S;
  int64_t count[MAXS];
  int64_t req[MAXS][NRES];
  enum tp_mode mode;
  int64_t H;
  enum tp_profile prof;
};

static const char *RES[NRES] = {"cpu", "nvidia.com/gpu", "pods"};

static void gen(struct world *w, uint64_t seed) {
  struct rng r = {seed * 2654435761u + 88172645463325252ULL};
  memset(w, 0, sizeof(*w));
  w->n = 1 + (int)rnd(&r, MAXN);
  w->nl = 1 + (int)rnd(&r, 3);
  w->nm = (int)rnd(&r, 3);
  w->nt = (int)rnd(&r, 2);
  for (int i = 0; i < w->n; i++) {
    w->freev[i][0] = (int64_t)rnd(&r, 9) * 500;
    w->freev[i][1] = rnd(&r, 5);
    w->freev[i][2] = 1 + rnd(&r, 6);
    w->excluded[i] = rnd(&r, 10) == 0;
    w->leaf_of[i] = rnd(&r, 7) == 0 ? -1 : (int)rnd(&r, (uint32_t)w->nl);
    if (w->leaf_of[i] >= 0)
      w->leaf_used[w->leaf_of[i]] = 1;
  }
  for (int l = 0; l < w->nl; l++) {
    w->leaf_parent[l] = w->nm && rnd(&r, 5) ? (int)rnd(&r, (uint32_t)w->nm) : -1;
    if (w->leaf_used[l] && w->leaf_parent[l] >= 0)
      w->mid_used[w->leaf_parent[l]] = 1;
  }
  for (int m = 0; m < w->nm; m++) {
    w->mid_parent[m] = w->nt && rnd(&r, 5) ? 0 : -1;
    if (w->mid_used[m] && w->mid_parent[m] == 0)
      w->top_used = 1;
  }
  /* Oracle domains. */
  int max_tier = 0;
  for (int l = 0; l < w->nl; l++)
    if (w->leaf_used[l]) {
      snprintf(w->dname[w->nd], 16, "l%d", l);
      w->dtier[w->nd] = 1;
      for (int i = 0; i < w->n; i++)
        if (w->leaf_of[i] == l)
          w->dmask[w->nd] |= 1 << i;
      w->nd++;
      max_tier = 1;
    }
  for (int m = 0; m < w->nm; m++)
    if (w->mid_used[m]) {
      snprintf(w->dname[w->nd], 16, "m%d", m);
      w->dtier[w->nd] = 2;
      for (int i = 0; i < w->n; i++)
        if (w->leaf_of[i] >= 0 && w->leaf_parent[w->leaf_of[i]] == m)
          w->dmask[w->nd] |= 1 << i;
      w->nd++;
      max_tier = 2;
    }
  if (w->top_used) {
    snprintf(w->dname[w->nd], 16, "t0");
    w->dtier[w->nd] = 3;
    for (int i = 0; i < w->n; i++)
      if (w->leaf_of[i] >= 0 && w->leaf_parent[w->leaf_of[i]] >= 0 &&
          w->mid_parent[w->leaf_parent[w->leaf_of[i]]] == 0)
        w->dmask[w->nd] |= 1 << i;
    w->nd++;
    max_tier = 3;
  }
  w->root_tier = max_tier + 1;
  snprintf(w->dname[w->nd], 16, "<root>");
  w->dtier[w->nd] = w->root_tier;
  w->dmask[w->nd] = (1 << w->n) - 1;
  w->nd++;
  /* Gang. */
  w->S = rnd(&r, 2) ? 1 : 2 + (int)rnd(&r, 2);
  for (int k = 0; k < w->S; k++) {
    w->count[k] = 1 + rnd(&r, w->S == 1 ? 8 : 4);
    w->req[k][0] = (int64_t)rnd(&r, 4) * 500;
    w->req[k][1] = rnd(&r, 3);
    w->req[k][2] = 1;
  }
  w->mode = rnd(&r, 5) < 3 ? TP_MODE_HARD : TP_MODE_SOFT;
  w->H = 1 + rnd(&r, 4);
  w->prof = rnd(&r, 2) ? TP_PROFILE_SPREAD : TP_PROFILE_BESTFIT;
}

static size_t emit(const struct world *w, char *buf, size_t cap) {
  size_t len = 0;
#define OUT(...) len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__)
  for (int i = 0; i < w->n; i++)
    OUT("apiVersion: v1\nkind: Node\nmetadata: {name: n%d}\nspec: {unschedulable: %s}\n"
        "status: {allocatable: {cpu: '%lldm', nvidia.com/gpu: '%lld', pods: '%lld'}}\n---\n",
        i, w->excluded[i] ? "true" : "false", (long long)w->freev[i][0],
        (long long)w->freev[i][1], (long long)w->freev[i][2]);
  for (int l = 0; l < w->nl; l++) {
    if (!w->leaf_used[l])
      continue;
    OUT("apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: l%d}\n"
        "spec:\n  tier: 1\n  tierName: leaf\n  members:\n", l);
    for (int i = 0; i < w->n; i++)
      if (w->leaf_of[i] == l)
        OUT("  - {type: Node, selector: {exactMatch: {name: n%d}}}\n", i);
    OUT("---\n");
  }
  for (int m = 0; m < w->nm; m++) {
    if (!w->mid_used[m])
      continue;
    OUT("apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: m%d}\n"
        "spec:\n  tier: 2\n  members:\n", m);
    for (int l = 0; l < w->nl; l++)
      if (w->leaf_used[l] && w->leaf_parent[l] == m)
        OUT("  - {type: HyperNode, selector: {exactMatch: {name: l%d}}}\n", l);
    OUT("---\n");
  }
  if (w->top_used) {
    OUT("apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: t0}\n"
        "spec:\n  tier: 3\n  members:\n");
    for (int m = 0; m < w->nm; m++)
      if (w->mid_used[m] && w->mid_parent[m] == 0)
        OUT("  - {type: HyperNode, selector: {exactMatch: {name: m%d}}}\n", m);
  }
#undef OUT
  ck_assert_uint_lt(len, cap);
  return len;
}

/* ---- oracle ---- */

struct orc {
  const struct world *w;
  int nodes[MAXN];
  int k;
  int64_t f[MAXN][NRES];
};

static int orc_dfs(struct orc *o, int set, int i, int64_t rem) {
  const struct world *w = o->w;
  if (set == w->S)
    return 1;
  if (rem == 0)
    return orc_dfs(o, set + 1, 0, set + 1 < w->S ? w->count[set + 1] : 0);
  if (i == o->k)
    return 0;
  for (int64_t x = rem; x >= 0; x--) {
    int ok = 1;
    for (int r = 0; r < NRES; r++)
      if (x * w->req[set][r] > o->f[i][r])
        ok = 0;
    if (!ok)
      continue;
    for (int r = 0; r < NRES; r++)
      o->f[i][r] -= x * w->req[set][r];
    int found = orc_dfs(o, set, i + 1, rem - x);
    for (int r = 0; r < NRES; r++)
      o->f[i][r] += x * w->req[set][r];
    if (found)
      return 1;
  }
  return 0;
}

static int oracle_feasible(const struct world *w, int d) {
  struct orc o = {w, {0}, 0, {{0}}};
  for (int i = 0; i < w->n; i++)
    if ((w->dmask[d] >> i & 1) && !w->excluded[i]) {
      o.nodes[o.k] = i;
      memcpy(o.f[o.k], w->freev[i], sizeof(o.f[0]));
      o.k++;
    }
  return orc_dfs(&o, 0, 0, w->count[0]);
}

static int eligible(const struct world *w, int d) {
  return w->mode == TP_MODE_SOFT || w->dtier[d] <= w->H;
}

/* Pods of a homogeneous gang's shape that domain d holds, counted per node. */
static int64_t oracle_capacity(const struct world *w, int d) {
  int64_t t = 0;
  for (int i = 0; i < w->n; i++) {
    if (!(w->dmask[d] >> i & 1) || w->excluded[i])
      continue;
    int64_t c = INT64_MAX;
    for (int r = 0; r < NRES; r++)
      if (w->req[0][r] > 0 && w->freev[i][r] / w->req[0][r] < c)
        c = w->freev[i][r] / w->req[0][r];
    t += c;
  }
  return t;
}

/* ---- the test ---- */

struct stats {
  int feasible, infeasible, hetero, hetero_feasible, greedy_missed, exact_used, exhausted;
  int whole_cluster;
};

static void check_seed(uint64_t seed, struct stats *st) {
  struct world w;
  gen(&w, seed);
  char yaml[16384];
  size_t len = emit(&w, yaml, sizeof(yaml));
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "w.yaml", yaml, len, &d), 0);
  const struct gc_value *docs[32];
  for (size_t i = 0; i < ds->n; i++)
    docs[i] = ds->docs[i].root;
  struct tp_snapshot *s = NULL;
  int rc = tp_snapshot_build(docs, NULL, ds->n, NULL, &s, &d);
  ck_assert_msg(rc == 0, "seed %llu: build %d: %s", (unsigned long long)seed, rc,
                d.n ? d.msgs[0] : "");
  struct gc_arena *a = gc_arena_new(0);
  struct tp_gang g = {0};
  g.n_sets = (size_t)w.S;
  g.sets = gc_arena_alloc(a, (size_t)w.S * sizeof(*g.sets));
  static const char *names[MAXS] = {"a", "b", "c"};
  for (int k = 0; k < w.S; k++) {
    g.sets[k].name = names[k];
    g.sets[k].count = w.count[k];
    g.sets[k].res = gc_arena_alloc(a, 2 * sizeof(char *));
    g.sets[k].val = gc_arena_alloc(a, 2 * sizeof(int64_t));
    for (int r = 0; r < 2; r++)
      if (w.req[k][r]) {
        g.sets[k].res[g.sets[k].n_req] = RES[r];
        g.sets[k].val[g.sets[k].n_req++] = w.req[k][r];
      }
  }
  struct tp_eval_opts o = {0};
  o.policy.mode = w.mode;
  o.policy.has_highest_tier = 1;
  o.policy.highest_tier = w.H;
  o.profile = w.prof;
  struct tp_evaluator *ev = tp_evaluator_new();
  struct tp_result res;
  ck_assert_int_eq(tp_place_evaluate(ev, s, &g, &o, a, &res, &d), 0);

  /* Oracle: the lowest tier with an eligible feasible domain. */
  int best_tier = -1;
  int feas[8];
  for (int k = 0; k < w.nd; k++) {
    feas[k] = eligible(&w, k) && oracle_feasible(&w, k);
    if (feas[k] && (best_tier < 0 || w.dtier[k] < best_tier))
      best_tier = w.dtier[k];
  }
  int exact_ok = w.S == 1 || !res.search_exhausted;
  if (w.S > 1) {
    st->hetero++;
    st->hetero_feasible += best_tier >= 0;
    st->exhausted += res.search_exhausted;
    st->exact_used += res.exact_search;
  }
  if (!res.feasible) {
    st->infeasible++;
    if (exact_ok)
      ck_assert_msg(best_tier < 0, "seed %llu: reported infeasible but tier %d is feasible",
                    (unsigned long long)seed, best_tier);
  } else {
    st->feasible++;
    st->whole_cluster += res.whole_cluster;
    int dom = -1;
    for (int k = 0; k < w.nd; k++)
      if (res.whole_cluster ? k == w.nd - 1 : !strcmp(w.dname[k], res.domain_name))
        dom = k;
    ck_assert_msg(dom >= 0, "seed %llu: unknown domain", (unsigned long long)seed);
    ck_assert_msg(eligible(&w, dom), "seed %llu: domain %s not allowed", (unsigned long long)seed,
                  w.dname[dom]);
    /* Valid assignment. */
    int64_t used[MAXN][NRES] = {{0}};
    int64_t per_set[MAXS] = {0};
    for (size_t i = 0; i < res.n_assign; i++) {
      int node = -1;
      sscanf(res.assign[i].node, "n%d", &node);
      ck_assert(node >= 0 && node < w.n);
      ck_assert_msg(w.dmask[dom] >> node & 1, "seed %llu: node n%d outside %s",
                    (unsigned long long)seed, node, w.dname[dom]);
      ck_assert(!w.excluded[node]);
      ck_assert_int_gt(res.assign[i].pods, 0);
      per_set[res.assign[i].podset] += res.assign[i].pods;
      for (int r = 0; r < NRES; r++)
        used[node][r] += res.assign[i].pods * w.req[res.assign[i].podset][r];
    }
    for (int node = 0; node < w.n; node++)
      for (int r = 0; r < NRES; r++)
        ck_assert_msg(used[node][r] <= w.freev[node][r], "seed %llu: n%d over %s: %lld > %lld",
                      (unsigned long long)seed, node, RES[r], (long long)used[node][r],
                      (long long)w.freev[node][r]);
    for (int k = 0; k < w.S; k++)
      ck_assert_int_eq(per_set[k], w.count[k]);
    ck_assert(best_tier >= 0);
    if (exact_ok)
      ck_assert_msg(w.dtier[dom] == best_tier, "seed %llu: tier %d chosen, %d is feasible",
                    (unsigned long long)seed, w.dtier[dom], best_tier);
    else
      ck_assert_int_ge(w.dtier[dom], best_tier);
    if (w.S == 1) {
      /* Profile: tightest (BestFit) or most free (Spread) fitting domain of the tier. */
      int64_t mine = oracle_capacity(&w, dom);
      for (int k = 0; k < w.nd; k++) {
        if (!feas[k] || w.dtier[k] != w.dtier[dom])
          continue;
        int64_t c = oracle_capacity(&w, k);
        if (w.prof == TP_PROFILE_BESTFIT)
          ck_assert_msg(mine < c || (mine == c && strcmp(w.dname[dom], w.dname[k]) <= 0),
                        "seed %llu: bestfit chose %s (%lld) over %s (%lld)",
                        (unsigned long long)seed, w.dname[dom], (long long)mine, w.dname[k],
                        (long long)c);
        else
          ck_assert_msg(mine > c || (mine == c && strcmp(w.dname[dom], w.dname[k]) <= 0),
                        "seed %llu: spread chose %s (%lld) over %s (%lld)",
                        (unsigned long long)seed, w.dname[dom], (long long)mine, w.dname[k],
                        (long long)c);
      }
    }
  }
  /* Greedy alone: never wrong when it claims a placement (checked above for
   * the full evaluator; here only the miss rate is counted). */
  if (w.S > 1 && best_tier >= 0) {
    o.search_budget = -1;
    struct tp_result gr;
    ck_assert_int_eq(tp_place_evaluate(ev, s, &g, &o, a, &gr, &d), 0);
    int gtier = -1;
    if (gr.feasible)
      gtier = gr.whole_cluster ? w.root_tier : (int)gr.tier;
    if (gtier != best_tier)
      st->greedy_missed++;
  }
  tp_evaluator_free(ev);
  tp_snapshot_free(s);
  gc_arena_free(a);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}

START_TEST(against_exhaustive_search) {
  struct stats st = {0};
  for (uint64_t seed = 1; seed <= SEEDS; seed++)
    check_seed(seed, &st);
  printf("tp_property: %d seeds: %d feasible (%d on the whole cluster), %d infeasible\n", SEEDS,
         st.feasible, st.whole_cluster, st.infeasible);
  printf("tp_property: heterogeneous gangs: %d (%d feasible); greedy pass alone missed the "
         "optimal tier in %d (%.1f%% of feasible); exact search placed %d; budget exhausted %d\n",
         st.hetero, st.hetero_feasible, st.greedy_missed,
         st.hetero_feasible ? 100.0 * st.greedy_missed / st.hetero_feasible : 0.0, st.exact_used,
         st.exhausted);
  /* The generator must exercise both outcomes and heterogeneous gangs. */
  ck_assert_int_gt(st.feasible, SEEDS / 10);
  ck_assert_int_gt(st.infeasible, SEEDS / 10);
  ck_assert_int_gt(st.hetero_feasible, SEEDS / 20);
  ck_assert_int_eq(st.exhausted, 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tp_property");
  TCase *t = tcase_create("core");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, against_exhaustive_search);
  suite_add_tcase(s, t);
  SRunner *r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
