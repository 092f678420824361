/* SPDX-License-Identifier: Apache-2.0
 *
 * Property test of gb_plan against an exhaustive oracle.  Each case is a
 * random small cluster (2 to 12 nodes; 2 or 3 tiers of node-label levels or
 * HyperNodes; GPUs and pod slots, and cpu in half the cases) and a random
 * sequence of passes: new gangs (1 or 2 pod sets, hard up to a random tier
 * or soft, some with a blocked mask) are decided with the waiting ones,
 * placed gangs are released or given back, released pods bind (on a
 * planned node or anywhere they fit), reservations expire, finished gangs
 * are forgotten.  The oracle replays each pass in the plan's order on its
 * own free amounts (allocatable - bound - reservations held) and checks:
 *   - a PLACED gang's planned nodes lie in its domain, its reservation is
 *     exactly its demand, fits the free amounts at its turn (every earlier
 *     reservation and bound pod counted), and the domain really fits it;
 *   - no domain of a lower tier fits it (the lowest tier is chosen), and in
 *     hard mode its tier is allowed;
 *   - a NOFIT gang fits no domain at its allowed tiers (nor the whole
 *     cluster in soft mode);
 *   - after every step, per node and resource, bound + every reservation
 *     <= allocatable, and the snapshot's free is exactly allocatable - bound
 *     - reservations (so reservations never overlap and come back exactly).
 * "Fits" is decided by a dynamic programme over the domain's nodes and the
 * pods of each set still to place: exact, not the evaluator's search.
 * Seeded (GB_PLAN_PROP_SEED, GB_PLAN_PROP_CASES); a failure prints the seed
 * and the case.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_manifest.h"
#include "gb_plan.h"
#include "gb_plan_test.h"
#include "gc_diag.h"
#include "tp_gang.h"
#include "tp_snapshot.h"

#define MAXN 12
#define MAXG 24 /* gangs per case */
#define MAXC 4  /* pods per pod set */
#define NR 3    /* gpu, cpu, pods */
#define PASSES 6

static const char *RES[NR] = {"nvidia.com/gpu", "cpu", "pods"};

static uint64_t rs;
/* What the cases exercised, printed at the end (a property test that never
 * reaches a branch proves nothing about it). */
static long n_placed, n_nofit, n_lower_tier, n_binds, n_expired, n_blocked;
static uint32_t rnd(uint32_t n) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (uint32_t)(rs % n);
}

struct pgang {
  char key[32];
  struct tp_gang g;
  struct tp_podset sets[2];
  const char *res[2][2];
  int64_t val[2][2];
  int64_t req[2][NR]; /* per pod, oracle's resource order */
  int64_t priority, created;
  uint8_t blocked[MAXN]; /* by slot */
  int has_blocked;
  int64_t unbound[2];      /* pods of each set not bound yet */
  int64_t bound[MAXN][NR]; /* what its bound pods hold, by slot */
  int state;               /* 0 waiting, 1 placed, 2 released, 3 forgotten */
};

struct pcase {
  uint64_t seed;
  struct gb_docset *ds;
  struct tp_snapshot *s;
  struct gb_plan *p;
  int n, ntiers, labels, two_res;
  int slot[MAXN];          /* node i -> slot */
  int64_t alloc[MAXN][NR]; /* by slot */
  int64_t bound[MAXN][NR]; /* by slot: every bound pod */
  struct pgang g[MAXG];
  int ng;
  int64_t now;
  char yaml[16384];
  char what[1024];
};

#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "seed %llu: ", (unsigned long long)pc->seed);                                \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n(%s)\ncluster:\n%s\n", pc->what, pc->yaml);                               \
      ck_abort_msg("property failed (seed %llu)", (unsigned long long)pc->seed);                   \
    }                                                                                              \
  } while (0)

/* ---- The cluster ------------------------------------------------------ */

static size_t addf(char *buf, size_t len, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t addf(char *buf, size_t len, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
  ck_assert(w >= 0 && (size_t)w < cap - len);
  return len + (size_t)w;
}

/* A random tree: grp[t][i] is the group at level t (0 = leaf level) of
 * node i; every group of every level is non-empty. */
static void make_tree(struct pcase *pc, int grp[3][MAXN], int count[3]) {
  int below = pc->n;
  int last[MAXN];
  for (int i = 0; i < pc->n; i++)
    last[i] = i;
  for (int t = 0; t < pc->ntiers; t++) {
    int k = 1 + (int)rnd((uint32_t)(below < 4 ? below : 4));
    int of[MAXN]; /* group of each element of the level below */
    for (int j = 0; j < below; j++)
      of[j] = j < k ? j : (int)rnd((uint32_t)k);
    for (int i = 0; i < pc->n; i++) {
      grp[t][i] = of[last[i]];
      last[i] = grp[t][i];
    }
    count[t] = k;
    below = k;
  }
}

static void node_yaml(struct pcase *pc, size_t *len, int i, int grp[3][MAXN]) {
  char labels[256] = "";
  size_t ll = 0;
  for (int t = pc->ntiers - 1; pc->labels && t >= 0; t--)
    ll = addf(labels, ll, sizeof(labels), "%sl/t%d: g%d-%d", ll ? ", " : "", t, t, grp[t][i]);
  *len = addf(pc->yaml, *len, sizeof(pc->yaml),
              "apiVersion: v1\nkind: Node\nmetadata: {name: n%02d, labels: {%s}}\n"
              "status: {allocatable: {nvidia.com/gpu: '%lld', cpu: '%lld', pods: '%lld'}}\n---\n",
              i, labels, (long long)pc->alloc[i][0], (long long)pc->alloc[i][1] / 1000,
              (long long)pc->alloc[i][2]);
}

static void hypernode_yaml(struct pcase *pc, size_t *len, int grp[3][MAXN], const int count[3]) {
  for (int t = 0; t < pc->ntiers; t++)
    for (int k = 0; k < count[t]; k++) {
      *len = addf(pc->yaml, *len, sizeof(pc->yaml),
                  "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\n"
                  "metadata: {name: h%d-%d}\nspec:\n  tier: %d\n  members:\n",
                  t, k, t + 1);
      int seen[MAXN] = {0};
      for (int i = 0; i < pc->n; i++) {
        if (grp[t][i] != k)
          continue;
        if (t == 0) {
          *len = addf(pc->yaml, *len, sizeof(pc->yaml),
                      "  - {type: Node, selector: {exactMatch: {name: n%02d}}}\n", i);
        } else if (!seen[grp[t - 1][i]]) {
          seen[grp[t - 1][i]] = 1;
          *len = addf(pc->yaml, *len, sizeof(pc->yaml),
                      "  - {type: HyperNode, selector: {exactMatch: {name: h%d-%d}}}\n", t - 1,
                      grp[t - 1][i]);
        }
      }
      *len = addf(pc->yaml, *len, sizeof(pc->yaml), "---\n");
    }
}

static void make_cluster(struct pcase *pc) {
  pc->n = 2 + (int)rnd(MAXN - 1);
  pc->ntiers = 2 + (int)rnd(2);
  pc->labels = (int)rnd(2);
  pc->two_res = (int)rnd(2);
  int grp[3][MAXN], count[3];
  make_tree(pc, grp, count);
  int64_t alloc[MAXN][NR];
  for (int i = 0; i < pc->n; i++) {
    alloc[i][0] = rnd(9);
    alloc[i][1] = 1000 * (1 + (int64_t)rnd(8));
    alloc[i][2] = 1 + (int64_t)rnd(6);
  }
  memcpy(pc->alloc, alloc, sizeof(alloc)); /* by node index until the slots are known */
  size_t len = 0;
  for (int i = 0; i < pc->n; i++)
    node_yaml(pc, &len, i, grp);
  if (!pc->labels)
    hypernode_yaml(pc, &len, grp, count);
  struct gc_diags d;
  gc_diags_init(&d);
  pc->ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(pc->ds, "c.yaml", pc->yaml, len, &d), 0);
  const struct gc_value *docs[64];
  for (size_t i = 0; i < pc->ds->n; i++)
    docs[i] = pc->ds->docs[i].root;
  const char *levels[3];
  char lv[3][16];
  for (int t = 0; t < pc->ntiers; t++) {
    snprintf(lv[t], sizeof(lv[t]), "l/t%d", pc->ntiers - 1 - t);
    levels[t] = lv[t];
  }
  struct tp_build_opts bo = {.levels = levels, .n_levels = pc->labels ? (size_t)pc->ntiers : 0};
  int rc = tp_snapshot_build(docs, NULL, pc->ds->n, &bo, &pc->s, &d);
  for (size_t i = 0; rc && i < d.n; i++)
    fprintf(stderr, "%s\n", d.msgs[i]);
  ck_assert_int_eq(rc, 0);
  gc_diags_destroy(&d);
  memset(pc->alloc, 0, sizeof(pc->alloc));
  for (int i = 0; i < pc->n; i++) {
    char name[16];
    snprintf(name, sizeof(name), "n%02d", i);
    pc->slot[i] = (int)tp_snapshot_node(pc->s, name);
    ck_assert_int_ge(pc->slot[i], 0);
    memcpy(pc->alloc[pc->slot[i]], alloc[i], sizeof(alloc[i]));
  }
}

/* ---- Gangs ---------------------------------------------------------- */

static void make_gang(struct pcase *pc, struct pgang *g, int idx) {
  memset(g, 0, sizeof(*g));
  snprintf(g->key, sizeof(g->key), "ns/g%02d", idx);
  g->g.name = g->key;
  g->g.sets = g->sets;
  g->g.n_sets = 1 + rnd(2);
  for (size_t k = 0; k < g->g.n_sets; k++) {
    struct tp_podset *ps = &g->sets[k];
    ps->name = k ? "b" : "a";
    ps->count = 1 + rnd(MAXC);
    ps->res = g->res[k];
    ps->val = g->val[k];
    int64_t gpu = rnd(4), cpu = pc->two_res ? 1000 * (int64_t)rnd(3) : 0;
    if (!gpu && !cpu)
      gpu = 1;
    if (gpu) {
      ps->res[ps->n_req] = "nvidia.com/gpu";
      ps->val[ps->n_req++] = gpu;
    }
    if (cpu) {
      ps->res[ps->n_req] = "cpu";
      ps->val[ps->n_req++] = cpu;
    }
    g->req[k][0] = gpu;
    g->req[k][1] = cpu;
    g->req[k][2] = 1;
    g->unbound[k] = ps->count;
  }
  if (rnd(4)) {
    g->g.policy.mode = TP_MODE_HARD;
    g->g.policy.has_highest_tier = 1;
    g->g.policy.highest_tier = 1 + rnd((uint32_t)pc->ntiers);
  } else {
    g->g.policy.mode = TP_MODE_SOFT;
  }
  g->priority = rnd(3);
  g->created = pc->now - (int64_t)rnd(1000);
  if (!rnd(3)) {
    g->has_blocked = 1;
    for (int i = 0; i < pc->n; i++)
      g->blocked[pc->slot[i]] = !rnd(4);
  }
}

/* ---- The oracle ------------------------------------------------------- */

/* free[slot][r] = alloc - bound - every reservation the plan holds. */
static void oracle_free(struct pcase *pc, int64_t free[MAXN][NR]) {
  for (int i = 0; i < pc->n; i++) {
    int sl = pc->slot[i];
    char name[16];
    snprintf(name, sizeof(name), "n%02d", i);
    for (int r = 0; r < NR; r++) {
      free[sl][r] = pc->alloc[sl][r] - pc->bound[sl][r];
      for (int k = 0; k < pc->ng; k++)
        free[sl][r] -= gb_plan_reserved(pc->p, pc->g[k].key, name, RES[r]);
    }
  }
}

/* 1 if gang g fits on the nodes of domain d (not blocked for it) with the
 * free amounts given: a DP over nodes of the reachable (pods of set a,
 * pods of set b) still to place. */
static int fits(struct pcase *pc, const struct pgang *g, uint32_t d, int64_t free[MAXN][NR]) {
  int64_t need[2] = {g->sets[0].count, g->g.n_sets > 1 ? g->sets[1].count : 0};
  uint8_t reach[MAXC + 1][MAXC + 1] = {{0}};
  reach[need[0]][need[1]] = 1;
  for (int i = 0; i < pc->n; i++) {
    int sl = pc->slot[i];
    if (!tp_snapshot_in_domain(pc->s, (uint32_t)sl, d) || (g->has_blocked && g->blocked[sl]))
      continue;
    uint8_t next[MAXC + 1][MAXC + 1] = {{0}};
    for (int a = 0; a <= need[0]; a++)
      for (int b = 0; b <= need[1]; b++) {
        if (!reach[a][b])
          continue;
        for (int x = 0; x <= a; x++)
          for (int y = 0; y <= b; y++) {
            int ok = 1;
            for (int r = 0; r < NR && ok; r++) {
              int64_t f = free[sl][r] > 0 ? free[sl][r] : 0;
              ok = x * g->req[0][r] + y * g->req[1][r] <= f;
            }
            if (ok)
              next[a - x][b - y] = 1;
          }
      }
    memcpy(reach, next, sizeof(reach));
  }
  return reach[0][0];
}

/* The lowest tier (the root's counted) at which some domain fits g, up to
 * max_tier; -1 when none.  *dom is that domain. */
static int64_t lowest_fit(struct pcase *pc, const struct pgang *g, int64_t max_tier,
                          int64_t free[MAXN][NR]) {
  int64_t best = -1;
  size_t nd = tp_snapshot_domain_count(pc->s);
  for (uint32_t d = 0; d < nd; d++) {
    int64_t t = tp_snapshot_domain_tier(pc->s, d);
    if (t <= max_tier && (best < 0 || t < best) && fits(pc, g, d, free))
      best = t;
  }
  return best;
}

struct sum_ctx {
  struct pcase *pc;
  const struct pgang *g;
  uint32_t dom;
  int64_t pods;
};

static int planned_node(void *arg, const char *node, int64_t pods) {
  struct sum_ctx *x = arg;
  struct pcase *pc = x->pc;
  int64_t sl = tp_snapshot_node(pc->s, node);
  CHECK(sl >= 0 && tp_snapshot_in_domain(pc->s, (uint32_t)sl, x->dom),
        "%s: planned node %s is outside its domain", x->g->key, node);
  CHECK(!x->g->has_blocked || !x->g->blocked[sl], "%s: planned on blocked node %s", x->g->key,
        node);
  x->pods += pods;
  return 0;
}

/* Checks a PLACED gang at its turn and takes its reservation from free. */
static void check_placed(struct pcase *pc, const struct pgang *g, const struct gb_plan_view *v,
                         int64_t free[MAXN][NR]) {
  int64_t d = v->whole_cluster ? 0 : tp_snapshot_domain(pc->s, v->domain);
  CHECK(d >= 0, "%s: placed in unknown domain %s", g->key, v->domain);
  int64_t tier = tp_snapshot_domain_tier(pc->s, (uint32_t)d);
  int hard = g->g.policy.mode == TP_MODE_HARD;
  CHECK(!hard || tier <= g->g.policy.highest_tier, "%s: tier %lld above the allowed %lld", g->key,
        (long long)tier, (long long)g->g.policy.highest_tier);
  CHECK(fits(pc, g, (uint32_t)d, free), "%s: domain %s does not fit it", g->key, v->domain);
  int64_t low = lowest_fit(pc, g, tier, free);
  CHECK(low == tier, "%s: placed at tier %lld but tier %lld fits", g->key, (long long)tier,
        (long long)low);
  struct sum_ctx x = {pc, g, (uint32_t)d, 0};
  ck_assert_int_eq(gb_plan_foreach_node(pc->p, g->key, planned_node, &x), 0);
  int64_t want[NR] = {0}, got[NR] = {0};
  for (size_t k = 0; k < g->g.n_sets; k++)
    for (int r = 0; r < NR; r++)
      want[r] += g->sets[k].count * g->req[k][r];
  CHECK(x.pods == want[2], "%s: %lld pods planned, %lld wanted", g->key, (long long)x.pods,
        (long long)want[2]);
  for (int i = 0; i < pc->n; i++) {
    char name[16];
    snprintf(name, sizeof(name), "n%02d", i);
    int sl = pc->slot[i];
    for (int r = 0; r < NR; r++) {
      int64_t h = gb_plan_reserved(pc->p, g->key, name, RES[r]);
      CHECK(h <= (free[sl][r] > 0 ? free[sl][r] : 0),
            "%s: reserves %lld %s on %s where %lld were free", g->key, (long long)h, RES[r], name,
            (long long)free[sl][r]);
      free[sl][r] -= h;
      got[r] += h;
    }
  }
  for (int r = 0; r < NR; r++)
    CHECK(got[r] == want[r], "%s: reserves %lld %s in all, its demand is %lld", g->key,
          (long long)got[r], RES[r], (long long)want[r]);
}

/* Every node: bound + reservations <= allocatable, and the snapshot's free
 * is exactly allocatable - bound - reservations. */
static void check_accounts(struct pcase *pc) {
  int64_t free[MAXN][NR];
  oracle_free(pc, free);
  for (int i = 0; i < pc->n; i++) {
    int sl = pc->slot[i];
    for (int r = 0; r < NR; r++) {
      int ri = tp_snapshot_resource(pc->s, RES[r]);
      CHECK(free[sl][r] >= 0, "n%02d: %s over-committed by %lld", i, RES[r],
            (long long)-free[sl][r]);
      CHECK(tp_snapshot_node_free(pc->s, ri, (uint32_t)sl) == free[sl][r],
            "n%02d: snapshot free %s %lld, oracle %lld", i, RES[r],
            (long long)tp_snapshot_node_free(pc->s, ri, (uint32_t)sl), (long long)free[sl][r]);
    }
  }
}

static int cmp_gang(const void *a, const void *b) {
  const struct pgang *x = *(const struct pgang *const *)a, *y = *(const struct pgang *const *)b;
  if (x->priority != y->priority)
    return x->priority > y->priority ? -1 : 1;
  if (x->created != y->created)
    return x->created < y->created ? -1 : 1;
  return strcmp(x->key, y->key);
}

/* One pass: decides every waiting gang and replays it in order. */
static void decide_pass(struct pcase *pc, uint64_t gen) {
  struct pgang *w[MAXG];
  int nw = 0;
  for (int k = 0; k < pc->ng; k++)
    if (pc->g[k].state == 0)
      w[nw++] = &pc->g[k];
  qsort(w, (size_t)nw, sizeof(*w), cmp_gang);
  int64_t free[MAXN][NR];
  oracle_free(pc, free); /* before the pass: nothing of it reserved yet */
  struct gb_plan_gang in[MAXG];
  struct gb_plan_view out[MAXG];
  for (int k = 0; k < nw; k++)
    in[k] = (struct gb_plan_gang){w[k]->key, &w[k]->g, w[k]->priority, w[k]->created,
                                  w[k]->has_blocked ? w[k]->blocked : NULL};
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_plan_decide(pc->p, pc->s, gen, in, (size_t)nw, pc->now, out, &d), 0);
  gc_diags_destroy(&d);
  for (int k = 0; k < nw; k++) {
    struct pgang *g = w[k];
    snprintf(pc->what, sizeof(pc->what), "pass %llu, gang %s: %s", (unsigned long long)gen, g->key,
             out[k].reason);
    CHECK(out[k].outcome == GB_PLAN_PLACED || out[k].outcome == GB_PLAN_NOFIT, "%s: outcome %d",
          g->key, out[k].outcome);
    if (out[k].outcome == GB_PLAN_PLACED) {
      check_placed(pc, g, &out[k], free);
      g->state = 1;
      n_placed++;
      n_lower_tier += !out[k].whole_cluster && out[k].tier == 1;
      n_blocked += g->has_blocked;
    } else {
      int hard = g->g.policy.mode == TP_MODE_HARD;
      int64_t low = lowest_fit(pc, g, hard ? g->g.policy.highest_tier : INT64_MAX, free);
      CHECK(low < 0, "%s: NOFIT but a domain of tier %lld fits", g->key, (long long)low);
      n_nofit++;
    }
  }
}

/* ---- Events between passes ---------------------------------------------- */

/* Binds one pod of set k of g where a scheduler could: a node where the
 * gang holds the pod's requests, or one with that much free. */
static void bind_one(struct pcase *pc, struct pgang *g, size_t k) {
  int i = (int)rnd((uint32_t)pc->n), sl = pc->slot[i];
  char name[16];
  snprintf(name, sizeof(name), "n%02d", i);
  int held = 1, room = 1;
  for (int r = 0; r < NR; r++) {
    int ri = tp_snapshot_resource(pc->s, RES[r]);
    held &= gb_plan_reserved(pc->p, g->key, name, RES[r]) >= g->req[k][r];
    room &= tp_snapshot_node_free(pc->s, ri, (uint32_t)sl) >= g->req[k][r];
  }
  if (!held && !room)
    return;
  for (int r = 0; r < NR; r++) {
    int ri = tp_snapshot_resource(pc->s, RES[r]);
    ck_assert_int_eq(tp_snapshot_adjust_free(pc->s, (uint32_t)sl, ri, -g->req[k][r]), 0);
    pc->bound[sl][r] += g->req[k][r];
    g->bound[sl][r] += g->req[k][r];
  }
  g->unbound[k]--;
  n_binds++;
  ck_assert_int_eq(gb_plan_pod_bound(pc->p, pc->s, g->key, (uint32_t)sl, g->sets[k].n_req,
                                     g->sets[k].res, g->sets[k].val),
                   0);
}

/* The gang is deleted: its bound pods go away, the plan forgets it. */
static void forget(struct pcase *pc, struct pgang *g) {
  for (int i = 0; i < pc->n; i++) {
    int sl = pc->slot[i];
    for (int r = 0; r < NR; r++) {
      if (!g->bound[sl][r])
        continue;
      int ri = tp_snapshot_resource(pc->s, RES[r]);
      ck_assert_int_eq(tp_snapshot_adjust_free(pc->s, (uint32_t)sl, ri, g->bound[sl][r]), 0);
      pc->bound[sl][r] -= g->bound[sl][r];
      g->bound[sl][r] = 0;
    }
  }
  gb_plan_forget(pc->p, pc->s, g->key);
  g->state = 3;
}

static void events(struct pcase *pc) {
  for (int k = 0; k < pc->ng; k++) {
    struct pgang *g = &pc->g[k];
    if (g->state == 1 && rnd(5)) {
      ck_assert_int_eq(gb_plan_mark_released(pc->p, g->key, pc->now), 0);
      g->state = 2;
    } else if (g->state == 1) {
      ck_assert_int_eq(gb_plan_unreserve(pc->p, pc->s, g->key), 0);
      g->state = 0;
    } else if (g->state == 2) {
      for (size_t s = 0; s < g->g.n_sets; s++)
        for (int64_t j = g->unbound[s]; j > 0; j--)
          if (rnd(2))
            bind_one(pc, g, s);
      if (!rnd(5))
        forget(pc, g);
    }
    snprintf(pc->what, sizeof(pc->what), "after the events of %s", g->key);
    check_accounts(pc);
  }
  pc->now += rnd(3000);
  n_expired += gb_plan_expire(pc->p, pc->s, pc->now, NULL, NULL);
  snprintf(pc->what, sizeof(pc->what), "after expiry at %lld", (long long)pc->now);
  check_accounts(pc);
}

static void run_case(uint64_t seed) {
  struct pcase *pc = calloc(1, sizeof(*pc));
  ck_assert_ptr_nonnull(pc);
  pc->seed = seed;
  rs = seed * 0x9E3779B97F4A7C15ULL + 1;
  make_cluster(pc);
  struct gb_plan_opts o = {0};
  o.reservation_ttl_ms = 4000;
  o.starvation_guard_ms = INT64_MAX / 4; /* the guard has its own unit test */
  ck_assert_int_eq(gb_plan_new(&o, &pc->p), 0);
  pc->now = 100000;
  for (uint64_t pass = 1; pass <= PASSES; pass++) {
    for (int k = 1 + (int)rnd(4); k > 0 && pc->ng < MAXG; k--, pc->ng++)
      make_gang(pc, &pc->g[pc->ng], pc->ng);
    decide_pass(pc, pass);
    snprintf(pc->what, sizeof(pc->what), "after pass %llu", (unsigned long long)pass);
    check_accounts(pc);
    events(pc);
  }
  gb_plan_free(pc->p);
  tp_snapshot_free(pc->s);
  gb_docset_free(pc->ds);
  free(pc);
}

START_TEST(plan_against_oracle) {
  const char *se = getenv("GB_PLAN_PROP_SEED"), *ce = getenv("GB_PLAN_PROP_CASES");
  uint64_t first = se ? strtoull(se, NULL, 10) : 1;
  long cases = ce ? strtol(ce, NULL, 10) : (se ? 1 : 3000);
  for (long c = 0; c < cases; c++)
    run_case(first + (uint64_t)c);
  fprintf(stderr,
          "%ld cases from seed %llu: %ld placed (%ld at tier 1, %ld with blocked nodes), %ld "
          "nofit, %ld pods bound, %ld reservations expired\n",
          cases, (unsigned long long)first, n_placed, n_lower_tier, n_blocked, n_nofit, n_binds,
          n_expired);
  ck_assert_int_gt(n_placed, 0);
  ck_assert_int_gt(n_nofit, 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("gb_plan_property");
  TCase *t = tcase_create("oracle");
  tcase_set_timeout(t, 600);
  tcase_add_test(t, plan_against_oracle);
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
