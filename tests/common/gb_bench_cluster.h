/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_bench_cluster: the synthetic clusters of the placement benchmarks
 * (bench_place, bench_plan): Node documents of 8-GPU nodes and Volcano
 * HyperNodes grouping nodes or HyperNodes, either with a fixed fan-in
 * (racks of 16, spines of 8 racks, ...) or split evenly into a given
 * number of parents (Volcano's reported shape).  Header-only (static
 * inline) because benchmarks link gbcore alone.
 */
#ifndef GB_BENCH_CLUSTER_H
#define GB_BENCH_CLUSTER_H

#include <stdio.h>
#include <stdlib.h>

#include "gc_arena.h"
#include "gc_value.h"

static inline struct gc_value *gb_bench_mapkv(struct gc_arena *a, struct gc_value *m, const char *k,
                                              struct gc_value *v) {
  if (!m || !v || gc_map_set(a, m, k, v)) {
    fprintf(stderr, "bench: out of memory building documents\n");
    exit(1);
  }
  return v;
}

static inline struct gc_value *gb_bench_node_doc(struct gc_arena *a, const char *name) {
  struct gc_value *d = gc_value_map(a);
  gb_bench_mapkv(a, d, "apiVersion", gc_value_strz(a, "v1"));
  gb_bench_mapkv(a, d, "kind", gc_value_strz(a, "Node"));
  struct gc_value *md = gb_bench_mapkv(a, d, "metadata", gc_value_map(a));
  gb_bench_mapkv(a, md, "name", gc_value_strz(a, name));
  struct gc_value *st = gb_bench_mapkv(a, d, "status", gc_value_map(a));
  struct gc_value *al = gb_bench_mapkv(a, st, "allocatable", gc_value_map(a));
  gb_bench_mapkv(a, al, "cpu", gc_value_strz(a, "128"));
  gb_bench_mapkv(a, al, "memory", gc_value_strz(a, "1Ti"));
  gb_bench_mapkv(a, al, "nvidia.com/gpu", gc_value_strz(a, "8"));
  gb_bench_mapkv(a, al, "pods", gc_value_strz(a, "110"));
  return d;
}

static inline struct gc_value *gb_bench_hn_doc(struct gc_arena *a, const char *name, int tier,
                                               const char *mtype, char **members, size_t n) {
  struct gc_value *d = gc_value_map(a);
  gb_bench_mapkv(a, d, "apiVersion", gc_value_strz(a, "topology.volcano.sh/v1alpha1"));
  gb_bench_mapkv(a, d, "kind", gc_value_strz(a, "HyperNode"));
  struct gc_value *md = gb_bench_mapkv(a, d, "metadata", gc_value_map(a));
  gb_bench_mapkv(a, md, "name", gc_value_strz(a, name));
  struct gc_value *sp = gb_bench_mapkv(a, d, "spec", gc_value_map(a));
  gb_bench_mapkv(a, sp, "tier", gc_value_int(a, tier));
  struct gc_value *ms = gb_bench_mapkv(a, sp, "members", gc_value_seq(a));
  for (size_t i = 0; i < n; i++) {
    struct gc_value *m = gc_value_map(a);
    gb_bench_mapkv(a, m, "type", gc_value_strz(a, mtype));
    struct gc_value *sel = gb_bench_mapkv(a, m, "selector", gc_value_map(a));
    struct gc_value *ex = gb_bench_mapkv(a, sel, "exactMatch", gc_value_map(a));
    gb_bench_mapkv(a, ex, "name", gc_value_strz(a, members[i]));
    gc_seq_push(a, ms, m);
  }
  return d;
}

struct gb_bench_docs {
  const struct gc_value **v;
  size_t n, cap;
};

static inline void gb_bench_push(struct gb_bench_docs *d, const struct gc_value *v) {
  if (d->n == d->cap) {
    d->cap = d->cap ? d->cap * 2 : 1024;
    d->v = realloc(d->v, d->cap * sizeof(*d->v));
    if (!d->v)
      exit(1);
  }
  d->v[d->n++] = v;
}

/* Groups `n` children named by child(i) into parents of `fan` each (the last
 * may be smaller), named "<prefix><j>", at tier `tier`. */
static inline size_t gb_bench_group(struct gc_arena *a, struct gb_bench_docs *d, size_t n,
                                    size_t fan, const char *prefix, const char *child_prefix,
                                    const char *mtype, int tier) {
  size_t parents = (n + fan - 1) / fan;
  char **mem = calloc(fan, sizeof(char *));
  for (size_t j = 0; j < parents; j++) {
    size_t k = 0;
    for (size_t i = j * fan; i < n && i < (j + 1) * fan; i++)
      mem[k++] = gc_arena_printf(a, "%s%zu", child_prefix, i);
    gb_bench_push(d,
                  gb_bench_hn_doc(a, gc_arena_printf(a, "%s%zu", prefix, j), tier, mtype, mem, k));
  }
  free(mem);
  return parents;
}

/* Volcano's shape: nodes split over tier-1 HyperNodes, each level with
 * fan-in so that the totals are 4,800 + 3,200 + 1,600 = 9,600. */
static inline size_t gb_bench_group_counts(struct gc_arena *a, struct gb_bench_docs *d, size_t n,
                                           size_t parents, const char *prefix,
                                           const char *child_prefix, const char *mtype, int tier) {
  char **mem = calloc(n, sizeof(char *));
  for (size_t j = 0; j < parents; j++) {
    size_t lo = j * n / parents, hi = (j + 1) * n / parents, k = 0;
    for (size_t i = lo; i < hi; i++)
      mem[k++] = gc_arena_printf(a, "%s%zu", child_prefix, i);
    gb_bench_push(d,
                  gb_bench_hn_doc(a, gc_arena_printf(a, "%s%zu", prefix, j), tier, mtype, mem, k));
  }
  free(mem);
  return parents;
}

#endif
