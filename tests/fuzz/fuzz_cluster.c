/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the topology cluster loader and the evaluator.
 * Arbitrary bytes are loaded as manifests (small limits) and built into a
 * snapshot, with HyperNodes or, when the first byte is '#', with node-label
 * levels "block,rack".  Properties checked:
 *   - building never crashes, leaks or hangs, and succeeds exactly when no
 *     error message was recorded;
 *   - on success the snapshot is consistent: the root's node count equals
 *     the live nodes, every parent's tier is above its child's, and the
 *     root's free sums equal the sum over candidate nodes (or are saturated
 *     at INT64_MAX, an over-estimate);
 *   - evaluating a homogeneous and a heterogeneous gang returns 0 and every
 *     assignment fits its node;
 *   - removing and re-adding every node (from a fresh load of the input,
 *     the first one freed) keeps the sums: updates agree with the build and
 *     the snapshot borrows nothing from its documents.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; run fuzz/fuzz_cluster
 * with tests/fuzz/corpus/cluster as the seed corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_manifest.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

static void check_sums(const struct tp_snapshot *s) {
  uint32_t alive = 0;
  for (size_t i = 0; i < s->n_slots; i++)
    alive += s->state[i] != TP_NODE_DEAD;
  if (alive != s->n_alive || s->dom_nodes[0] != s->n_alive)
    abort();
  for (size_t d = 1; d < s->n_dom; d++)
    if (s->dom_tier[s->dom_parent[d]] <= s->dom_tier[d])
      abort();
  for (size_t r = 0; r < s->n_res; r++) {
    int64_t sum = 0;
    int over = 0;
    for (size_t i = 0; i < s->n_slots; i++)
      if (s->state[i] == TP_NODE_OK && s->free[r][i] > 0 &&
          __builtin_add_overflow(sum, s->free[r][i], &sum))
        over = 1;
    /* Sums are exact, or saturated for good (an over-estimate). */
    if (s->dom_free[r][0] != INT64_MAX && (over || sum != s->dom_free[r][0]))
      abort();
  }
}

static void evaluate(const struct tp_snapshot *s) {
  static const char *res[] = {"cpu", "nvidia.com/gpu"};
  static int64_t va[] = {1000, 1}, vb[] = {500};
  struct tp_podset sets[2] = {{"a", 3, 2, res, va}, {"b", 2, 1, res, vb}};
  struct gc_arena *a = gc_arena_new(1 << 24);
  struct tp_evaluator *ev = tp_evaluator_new();
  struct gc_diags d;
  gc_diags_init(&d);
  for (int mode = 0; mode < 2; mode++)
    for (size_t n = 1; n <= 2; n++) {
      struct tp_gang g = {0};
      g.sets = sets;
      g.n_sets = n;
      struct tp_eval_opts o = {0};
      o.policy.mode = mode ? TP_MODE_SOFT : TP_MODE_HARD;
      o.policy.has_highest_tier = 1;
      o.policy.highest_tier = 2;
      o.profile = n == 2 ? TP_PROFILE_SPREAD : TP_PROFILE_BESTFIT;
      struct tp_result r;
      if (tp_place_evaluate(ev, s, &g, &o, a, &r, &d))
        abort();
      int64_t pods = 0;
      for (size_t i = 0; i < r.n_assign; i++) {
        uint32_t slot = r.assign[i].slot;
        if (s->state[slot] != TP_NODE_OK || r.assign[i].pods <= 0)
          abort();
        pods += r.assign[i].pods;
      }
      if (r.feasible && pods != 3 + (n == 2 ? 2 : 0))
        abort();
      if (!r.feasible && r.n_assign)
        abort();
    }
  gc_diags_destroy(&d);
  tp_evaluator_free(ev);
  gc_arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gb_limits lim = {1 << 16, 1 << 16, 32, 20000, 200};
  struct gb_docset *ds = gb_docset_new(&lim);
  struct gc_diags d;
  gc_diags_init(&d);
  gb_manifest_load_buffer(ds, "fuzz.yaml", (const char *)data, size, &d);
  const struct gc_value **docs = calloc(ds->n + 1, sizeof(*docs));
  for (size_t i = 0; i < ds->n; i++)
    docs[i] = ds->docs[i].root;
  static const char *levels[] = {"block", "rack"};
  struct tp_build_opts o = {.levels = levels, .n_levels = size && data[0] == '#' ? 2 : 0};
  struct tp_snapshot *s = NULL;
  size_t before = d.errors;
  int rc = tp_snapshot_build(docs, NULL, ds->n, &o, &s, &d);
  if ((rc == 0) != (d.errors == before) || (rc == 0) != (s != NULL))
    abort();
  if (s) {
    check_sums(s);
    evaluate(s);
    /* The snapshot must not borrow from its documents: reload them. */
    gb_docset_free(ds);
    ds = gb_docset_new(&lim);
    gb_manifest_load_buffer(ds, "fuzz.yaml", (const char *)data, size, &d);
    for (size_t i = 0; i < ds->n; i++)
      docs[i] = ds->docs[i].root;
    /* Remove and re-add every Node document. */
    for (size_t i = 0; i < ds->n; i++) {
      const char *kind = gc_value_as_str(gc_map_get(docs[i], "kind"));
      const char *name = gc_value_as_str(gc_value_path(docs[i], "metadata.name"));
      if (!kind || strcmp(kind, "Node") || !name || tp_snapshot_node(s, name) < 0)
        continue;
      if (tp_snapshot_remove_node(s, name))
        abort();
      check_sums(s);
      tp_snapshot_add_node(s, docs[i], "fuzz.yaml", &d);
    }
    check_sums(s);
    evaluate(s);
    tp_snapshot_free(s);
  }
  free(docs);
  gc_diags_destroy(&d);
  gb_docset_free(ds);
  return 0;
}
