/* SPDX-License-Identifier: Apache-2.0
 *
 * plan_fixture: the hand-made HyperNode cluster the gb_plan tests decide
 * on (racks r1 {a1, a2} and r2 {b1, b2} of 8-GPU nodes under spine s1, rack
 * r3 {c1, 4 GPUs} under spine s2), one-set gangs, and helpers to read free
 * capacity.  Included by test_plan.c and test_plan_durable.c only.
 */
#ifndef PLAN_FIXTURE_H
#define PLAN_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_manifest.h"
#include "gb_plan.h"
#include "gc_diag.h"
#include "tp_gang.h"
#include "tp_snapshot.h"

#define NODE(n, gpu)                                                                               \
  "apiVersion: v1\nkind: Node\nmetadata: {name: " n "}\n"                                          \
  "status: {allocatable: {cpu: '32', nvidia.com/gpu: '" gpu "', pods: '110'}}\n---\n"
#define HN(name, tier, members)                                                                    \
  "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: " name "}\n"        \
  "spec:\n  tier: " tier "\n  members:\n" members "---\n"
#define MN(n) "  - {type: Node, selector: {exactMatch: {name: " n "}}}\n"
#define MH(n) "  - {type: HyperNode, selector: {exactMatch: {name: " n "}}}\n"

#define RACKS(r1)                                                                                  \
  HN("s1", "2", MH("r1") MH("r2"))                                                                 \
  HN("s2", "2", MH("r3")) HN("r1", "1", r1) HN("r2", "1", MN("b1") MN("b2")) HN("r3", "1", MN("c1"))

/* Racks r1 {a1, a2} and r2 {b1, b2} of 8-GPU nodes under spine s1; rack r3
 * {c1, 4 GPUs} under spine s2. */
static inline const char *cluster_yaml(void) {
  return NODE("a1", "8") NODE("a2", "8") NODE("b1", "8") NODE("b2", "8") NODE("c1", "4")
      RACKS(MN("a1") MN("a2"));
}
#define CLUSTER cluster_yaml()
/* The same cluster without a2 (for a rebuild after a node went away). */
static inline const char *cluster_no_a2_yaml(void) {
  return NODE("a1", "8") NODE("b1", "8") NODE("b2", "8") NODE("c1", "4") RACKS(MN("a1"));
}
#define CLUSTER_NO_A2 cluster_no_a2_yaml()

struct fx {
  struct gb_docset *ds;
  struct tp_snapshot *s;
  struct gb_plan *p;
  struct gc_arena *a;
  struct gc_diags d;
  int gpu, cpu, pods;
};

static inline struct tp_snapshot *build(struct fx *f, const char *yaml) {
  gb_docset_free(f->ds);
  f->ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(f->ds, "c.yaml", yaml, strlen(yaml), &f->d), 0);
  const struct gc_value *docs[64];
  for (size_t i = 0; i < f->ds->n; i++)
    docs[i] = f->ds->docs[i].root;
  struct tp_snapshot *s = NULL;
  int rc = tp_snapshot_build(docs, NULL, f->ds->n, NULL, &s, &f->d);
  for (size_t i = 0; rc && i < f->d.n; i++)
    fprintf(stderr, "%s\n", f->d.msgs[i]);
  ck_assert_int_eq(rc, 0);
  return s;
}

static inline void setup_opts(struct fx *f, const struct gb_plan_opts *o) {
  memset(f, 0, sizeof(*f));
  gc_diags_init(&f->d);
  f->s = build(f, CLUSTER);
  f->gpu = tp_snapshot_resource(f->s, "nvidia.com/gpu");
  f->cpu = tp_snapshot_resource(f->s, "cpu");
  f->pods = tp_snapshot_resource(f->s, "pods");
  ck_assert_int_eq(gb_plan_new(o, &f->p), 0);
  f->a = gc_arena_new(0);
}

static inline void setup(struct fx *f) {
  struct gb_plan_opts o = {0};
  o.reservation_ttl_ms = 5000;
  o.starvation_guard_ms = 60000;
  setup_opts(f, &o);
}

static inline void teardown(struct fx *f) {
  gb_plan_free(f->p);
  tp_snapshot_free(f->s);
  gb_docset_free(f->ds);
  gc_arena_free(f->a);
  gc_diags_destroy(&f->d);
}

/* A one-set gang of `count` pods of `gpu` GPUs and 1 cpu, hard mode up to
 * tier `tier` (0: no policy). */
static inline struct tp_gang *gang(struct fx *f, int64_t count, int64_t gpu, int64_t tier) {
  struct tp_gang *g = gc_arena_alloc(f->a, sizeof(*g));
  g->n_sets = 1;
  g->sets = gc_arena_alloc(f->a, sizeof(*g->sets));
  g->sets[0].name = "w";
  g->sets[0].count = count;
  g->sets[0].res = gc_arena_alloc(f->a, 2 * sizeof(char *));
  g->sets[0].val = gc_arena_alloc(f->a, 2 * sizeof(int64_t));
  g->sets[0].res[0] = "nvidia.com/gpu";
  g->sets[0].val[0] = gpu;
  g->sets[0].res[1] = "cpu";
  g->sets[0].val[1] = 1000;
  g->sets[0].n_req = 2;
  if (tier > 0) {
    g->policy.mode = TP_MODE_HARD;
    g->policy.has_highest_tier = 1;
    g->policy.highest_tier = tier;
  }
  return g;
}

static inline struct gb_plan_gang pg(const char *key, const struct tp_gang *g, int64_t prio,
                                     int64_t created) {
  struct gb_plan_gang x = {key, g, prio, created, NULL};
  return x;
}

static inline int64_t dom_gpu(struct fx *f, const char *dom) {
  int64_t d = tp_snapshot_domain(f->s, dom);
  ck_assert_int_ge(d, 0);
  return tp_snapshot_domain_free(f->s, f->gpu, (uint32_t)d);
}

static inline int64_t node_free(struct fx *f, int r, const char *node) {
  int64_t slot = tp_snapshot_node(f->s, node);
  ck_assert_int_ge(slot, 0);
  return tp_snapshot_node_free(f->s, r, (uint32_t)slot);
}

/* Every node's free amounts of gpu, cpu and pods, in slot order. */
static inline void free_state(struct fx *f, int64_t *out) {
  size_t n = tp_snapshot_slot_count(f->s);
  for (size_t i = 0; i < n; i++) {
    out[3 * i] = tp_snapshot_node_free(f->s, f->gpu, (uint32_t)i);
    out[3 * i + 1] = tp_snapshot_node_free(f->s, f->cpu, (uint32_t)i);
    out[3 * i + 2] = tp_snapshot_node_free(f->s, f->pods, (uint32_t)i);
  }
}

static inline void assert_same_state(struct fx *f, const int64_t *before) {
  int64_t now[64];
  free_state(f, now);
  for (size_t i = 0; i < 3 * tp_snapshot_slot_count(f->s); i++)
    ck_assert_int_eq(now[i], before[i]);
}

#endif
