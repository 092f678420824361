/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_place: placement evaluation cost on synthetic clusters.
 *
 * Clusters: 1k, 10k and 100k GPU nodes in racks of 16 (tier 1), spines of
 * 8 racks (tier 2) and blocks of 8 spines (tier 3), plus the cluster root;
 * and Volcano's reported shape (PR #5811): 6,000 nodes under 9,600
 * HyperNodes in four tiers.  Free resources are random (seeded) and set
 * through the snapshot update API.  Gangs: 8, 64, 512 and 4,096 pods,
 * homogeneous (1 GPU, 8 cpu, 64Gi) and mixed (a launcher, GPU workers and
 * cpu-only servers), in soft mode with BestFit, plus a hard-mode 1,000-pod
 * gang on the Volcano shape.
 *
 * Prints, per case, p50 and p99 of one evaluation, the ratio of p50 to one
 * pass over the node free-resource array (reading every requested resource
 * of every node once), and ns per node.  Also the cost of snapshot updates.
 * Goals (docs/topology.md): <= 5 ms for the Volcano shape, <= 25 ms at 100k
 * nodes, ratio <= 10x, linear in nodes.  These are printed, not asserted.
 * --short runs 1k and 10k nodes and the Volcano shape with few iterations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_bench_cluster.h"
#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_value.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t rng_state = 88172645463325252ULL;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state % n);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static struct tp_snapshot *make_cluster(size_t nodes, int volcano_shape, double *build_ms) {
  struct gc_arena *a = gc_arena_new(0);
  struct gb_bench_docs d = {0};
  for (size_t i = 0; i < nodes; i++)
    gb_bench_push(&d, gb_bench_node_doc(a, gc_arena_printf(a, "node-%zu", i)));
  if (volcano_shape) {
    gb_bench_group_counts(a, &d, nodes, 4800, "leaf-", "node-", "Node", 1);
    gb_bench_group_counts(a, &d, 4800, 3200, "agg-", "leaf-", "HyperNode", 2);
    gb_bench_group_counts(a, &d, 3200, 1600, "spine-", "agg-", "HyperNode", 3);
  } else {
    size_t racks = gb_bench_group(a, &d, nodes, 16, "rack-", "node-", "Node", 1);
    size_t spines = gb_bench_group(a, &d, racks, 8, "spine-", "rack-", "HyperNode", 2);
    gb_bench_group(a, &d, spines, 8, "block-", "spine-", "HyperNode", 3);
  }
  struct gc_diags diags;
  gc_diags_init(&diags);
  struct tp_snapshot *s = NULL;
  double t0 = now_ns();
  int rc = tp_snapshot_build(d.v, NULL, d.n, NULL, &s, &diags);
  *build_ms = (now_ns() - t0) / 1e6;
  if (rc) {
    fprintf(stderr, "bench_place: build failed: %s\n",
            diags.n ? diags.msgs[0] : gc_diag_strerror(rc));
    exit(1);
  }
  /* Random usage: free GPUs 0-8 (a third of nodes full), cpu and memory
   * in proportion, pods 110 minus a few. */
  int gpu = tp_snapshot_resource(s, "nvidia.com/gpu"), cpu = tp_snapshot_resource(s, "cpu"),
      mem = tp_snapshot_resource(s, "memory"), pods = tp_snapshot_resource(s, "pods");
  for (size_t i = 0; i < s->n_slots; i++) {
    const char *name = s->node_name[i];
    int64_t g = rnd(3) == 0 ? 0 : rnd(9);
    tp_snapshot_set_free(s, name, s->res_name[gpu], g);
    tp_snapshot_set_free(s, name, s->res_name[cpu], 16000 + (int64_t)g * 14000);
    tp_snapshot_set_free(s, name, s->res_name[mem], ((int64_t)128 + g * 100) << 30);
    tp_snapshot_set_free(s, name, s->res_name[pods], 100 - rnd(20));
  }
  gc_diags_destroy(&diags);
  free(d.v);
  gc_arena_free(a);
  return s;
}

/* ---- gangs ---- */

static const char *R3[] = {"cpu", "memory", "nvidia.com/gpu"};
static int64_t V_WORKER[] = {8000, (int64_t)64 << 30, 1};
static int64_t V_LAUNCH[] = {16000, (int64_t)32 << 30};
static int64_t V_SERVER[] = {4000, (int64_t)16 << 30};

static struct tp_gang make_gang(struct tp_podset *sets, int64_t pods, int mixed) {
  struct tp_gang g = {0};
  g.sets = sets;
  if (!mixed) {
    sets[0] = (struct tp_podset){"worker", pods, 3, R3, V_WORKER};
    g.n_sets = 1;
    return g;
  }
  int64_t workers = pods * 3 / 4, servers = pods - workers - 1;
  sets[0] = (struct tp_podset){"launcher", 1, 2, R3, V_LAUNCH};
  sets[1] = (struct tp_podset){"worker", workers, 3, R3, V_WORKER};
  g.n_sets = 2;
  if (servers > 0)
    sets[g.n_sets++] = (struct tp_podset){"server", servers, 2, R3, V_SERVER};
  return g;
}

/* The yardstick: one pass over the nodes reading the free amount of every
 * requested resource (cpu, memory, GPUs and the implicit pods) from the
 * snapshot's own rows, side by side as the evaluator streams them, and
 * summing them.  The sum goes to a volatile sink so the loop cannot be
 * dropped; the compiler may vectorise it, as it may the evaluator. */
struct base {
  double p50, min;
};

static struct base baseline(const struct tp_snapshot *s, int iters) {
  int rs[4] = {tp_snapshot_resource(s, "cpu"), tp_snapshot_resource(s, "memory"),
               tp_snapshot_resource(s, "nvidia.com/gpu"), tp_snapshot_resource(s, "pods")};
  const int64_t *r0 = s->free[rs[0]], *r1 = s->free[rs[1]], *r2 = s->free[rs[2]],
                *r3 = s->free[rs[3]];
  double *t = malloc((size_t)iters * sizeof(double));
  volatile int64_t sink = 0;
  for (int it = 0; it < iters; it++) {
    double t0 = now_ns();
    int64_t acc = 0;
    for (size_t i = 0; i < s->n_slots; i++)
      acc += r0[i] + r1[i] + r2[i] + r3[i];
    sink += acc;
    t[it] = now_ns() - t0;
  }
  qsort(t, (size_t)iters, sizeof(double), cmp_double);
  struct base b = {t[iters / 2], t[0]};
  free(t);
  (void)sink;
  return b;
}

struct figures {
  double p50, p99, min;
  int feasible;
  int64_t tier;
  int exact, exhausted;
};

static struct figures run_case(const struct tp_snapshot *s, struct tp_evaluator *ev,
                               const struct tp_gang *g, enum tp_mode mode, int64_t tier, int iters) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_diags d;
  gc_diags_init(&d);
  struct tp_eval_opts o = {0};
  o.policy.mode = mode;
  o.policy.has_highest_tier = tier >= 0;
  o.policy.highest_tier = tier;
  double *t = malloc((size_t)iters * sizeof(double));
  struct tp_result r;
  memset(&r, 0, sizeof(r));
  /* One untimed evaluation sizes the evaluator's scratch buffers, as in a
   * long-running service. */
  tp_place_evaluate(ev, s, g, &o, a, &r, &d);
  for (int it = 0; it < iters; it++) {
    gc_arena_reset(a);
    double t0 = now_ns();
    int rc = tp_place_evaluate(ev, s, g, &o, a, &r, &d);
    t[it] = now_ns() - t0;
    if (rc) {
      fprintf(stderr, "bench_place: evaluate failed: %s\n", d.n ? d.msgs[0] : gc_diag_strerror(rc));
      exit(1);
    }
  }
  qsort(t, (size_t)iters, sizeof(double), cmp_double);
  struct figures f = {t[iters / 2], t[(size_t)((iters - 1) * 0.99)], t[0], r.feasible,
                      r.feasible ? (r.whole_cluster ? -2 : r.tier) : -1, r.exact_search,
                      r.search_exhausted};
  free(t);
  gc_diags_destroy(&d);
  gc_arena_free(a);
  return f;
}

static void print_row(const char *cluster, size_t nodes, const char *gang, int64_t pods,
                      const char *mode, struct figures f, struct base base) {
  char where[32];
  if (!f.feasible)
    snprintf(where, sizeof(where), "infeasible");
  else if (f.tier == -2)
    snprintf(where, sizeof(where), "cluster");
  else
    snprintf(where, sizeof(where), "tier %lld", (long long)f.tier);
  printf("%-14s %7zu  %-6s %5lld  %-4s  %-10s  %9.3f  %9.3f  %6.1fx  %6.1fx  %6.1f%s%s\n",
         cluster, nodes, gang, (long long)pods, mode, where, f.p50 / 1e6, f.p99 / 1e6,
         f.p50 / base.p50, f.min / base.min, f.p50 / (double)nodes, f.exact ? "  exact-search" : "",
         f.exhausted ? "  search-budget-exhausted" : "");
}

/* --only SUBSTRING restricts the run to cases whose label
 * ("<cluster>/<nodes>/<gang>/<pods>/<mode>", e.g. "racks/100000/mixed/4096/soft")
 * contains it, for profiling one case; --iters N overrides the iteration count. */
static const char *only;
static int iters_override;

static int selected(const char *cluster, size_t nodes, const char *gang, int64_t pods,
                    const char *mode) {
  char label[128];
  snprintf(label, sizeof(label), "%s/%zu/%s/%lld/%s", cluster, nodes, gang, (long long)pods, mode);
  return !only || strstr(label, only) != NULL;
}

int main(int argc, char **argv) {
  int short_run = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short")) {
      short_run = 1;
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
      char *end;
      long v = strtol(argv[++i], &end, 10);
      if (*end || v < 1 || v > 1000000) {
        fprintf(stderr, "bench_place: --iters: expected 1 to 1000000\n");
        return 2;
      }
      iters_override = (int)v;
    } else {
      fprintf(stderr, "usage: bench_place [--short] [--only LABEL-SUBSTRING] [--iters N]\n");
      return 2;
    }
  }
  size_t sizes_full[] = {1000, 10000, 100000}, sizes_short[] = {1000, 10000};
  size_t *sizes = short_run ? sizes_short : sizes_full;
  size_t n_sizes = short_run ? 2 : 3;
  int64_t gangs[] = {8, 64, 512, 4096};
  struct tp_evaluator *ev = tp_evaluator_new();
  struct tp_podset sets[3];
  printf("bench_place%s: p50/p99 of one evaluation (ms); ratio = p50 / p50 of one pass over the "
         "free arrays of the requested resources; min ratio = fastest / fastest (steadier on a "
         "loaded machine); ns/node = p50 / nodes\n\n",
         short_run ? " --short" : "");
  printf("%-14s %7s  %-6s %5s  %-4s  %-10s  %9s  %9s  %7s  %7s  %6s\n", "cluster", "nodes",
         "gang", "pods", "mode", "placed", "p50 ms", "p99 ms", "ratio", "min-rat", "ns/node");
  for (size_t si = 0; si < n_sizes; si++) {
    int any = 0;
    for (size_t gi = 0; gi < 4; gi++)
      for (int mixed = 0; mixed < 2; mixed++)
        any |= selected("racks", sizes[si], mixed ? "mixed" : "homog", gangs[gi], "soft");
    if (!any)
      continue;
    double build_ms;
    struct tp_snapshot *s = make_cluster(sizes[si], 0, &build_ms);
    int iters = short_run ? 20 : (sizes[si] >= 100000 ? 60 : 200);
    if (iters_override)
      iters = iters_override;
    struct base base = baseline(s, iters);
    for (size_t gi = 0; gi < 4; gi++)
      for (int mixed = 0; mixed < 2; mixed++) {
        if (!selected("racks", sizes[si], mixed ? "mixed" : "homog", gangs[gi], "soft"))
          continue;
        struct tp_gang g = make_gang(sets, gangs[gi], mixed);
        struct figures f = run_case(s, ev, &g, TP_MODE_SOFT, -1, iters);
        print_row("racks/spines", s->n_alive, mixed ? "mixed" : "homog", gangs[gi], "soft", f,
                  base);
      }
    printf("%-14s %7zu  build %.1f ms, %zu domains; one pass %.3f ms\n", "", s->n_alive, build_ms,
           s->n_dom, base.p50 / 1e6);
    tp_snapshot_free(s);
  }
  /* Volcano's shape. */
  int vsel = 0;
  for (int mixed = 0; mixed < 2; mixed++)
    vsel |= selected("volcano", 6000, mixed ? "mixed" : "homog", 1000, "soft") |
            selected("volcano", 6000, mixed ? "mixed" : "homog", 1000, "hard");
  vsel |= selected("volcano", 6000, "homog", 8, "hard");
  if (vsel) {
    double build_ms;
    struct tp_snapshot *s = make_cluster(6000, 1, &build_ms);
    int iters = short_run ? 30 : 300;
    if (iters_override)
      iters = iters_override;
    struct base base = baseline(s, iters);
    for (int mixed = 0; mixed < 2; mixed++) {
      const char *gn = mixed ? "mixed" : "homog";
      struct tp_gang g = make_gang(sets, 1000, mixed);
      if (selected("volcano", 6000, gn, 1000, "soft"))
        print_row("volcano-shape", s->n_alive, gn, 1000, "soft",
                  run_case(s, ev, &g, TP_MODE_SOFT, -1, iters), base);
      if (selected("volcano", 6000, gn, 1000, "hard"))
        print_row("volcano-shape", s->n_alive, gn, 1000, "hard",
                  run_case(s, ev, &g, TP_MODE_HARD, 3, iters), base);
    }
    struct tp_gang g = make_gang(sets, 8, 0);
    if (selected("volcano", 6000, "homog", 8, "hard"))
      print_row("volcano-shape", s->n_alive, "homog", 8, "hard",
                run_case(s, ev, &g, TP_MODE_HARD, 3, iters), base);
    printf("%-14s %7zu  build %.1f ms, %zu HyperNodes; one pass %.3f ms\n", "", s->n_alive,
           build_ms, s->n_dom - 1, base.p50 / 1e6);
    if (only) {
      tp_snapshot_free(s);
      tp_evaluator_free(ev);
      return 0;
    }

    /* Update costs. */
    int reps = short_run ? 20000 : 200000;
    double t0 = now_ns();
    for (int i = 0; i < reps; i++)
      tp_snapshot_set_free(s, s->node_name[s->by_name[(size_t)i % s->n_alive]], "nvidia.com/gpu",
                           i % 9);
    double upd = (now_ns() - t0) / reps;
    struct gc_arena *a = gc_arena_new(0);
    struct gc_diags d;
    gc_diags_init(&d);
    int cycles = short_run ? 200 : 2000;
    t0 = now_ns();
    for (int i = 0; i < cycles; i++) {
      char name[32];
      snprintf(name, sizeof(name), "node-%d", i);
      struct gc_value *doc = gb_bench_node_doc(a, name);
      tp_snapshot_remove_node(s, name);
      tp_snapshot_add_node(s, doc, NULL, &d);
    }
    double addrm = (now_ns() - t0) / cycles;
    printf("\nupdates on volcano-shape: set one free resource %.0f ns; remove + re-add a node "
           "%.1f us (%zu errors)\n",
           upd, addrm / 1e3, d.errors);
    gc_diags_destroy(&d);
    gc_arena_free(a);
    tp_snapshot_free(s);
  }
  tp_evaluator_free(ev);
  return 0;
}
