/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the manifest loader and the emitters.  Arbitrary
 * bytes go through gb_manifest_load_buffer with small limits (so deep, huge and
 * alias-bomb inputs hit the bounds quickly).  Properties checked:
 *   - loading never crashes, leaks or hangs, and returns 0 exactly when no
 *     error message was recorded; every message starts with "fuzz:";
 *   - every loaded document is a map within the depth and node bounds;
 *   - every document emits as YAML, and the YAML loads back (with default
 *     limits) into equal trees; documents without Inf/NaN also emit as
 *     JSON (pretty and compact) and load back equal.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; run fuzz/fuzz_loader
 * with tests/fuzz/corpus/loader as the seed corpus.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_emit.h"
#include "gb_manifest.h"

static int has_nonfinite(const struct gc_value *v) {
  if (v->type == GC_FLOAT)
    return !isfinite(v->u.f);
  if (v->type == GC_SEQ) {
    for (size_t i = 0; i < v->len; i++)
      if (has_nonfinite(v->u.items[i]))
        return 1;
  }
  if (v->type == GC_MAP) {
    for (size_t i = 0; i < v->len; i++)
      if (has_nonfinite(v->u.members[i].value))
        return 1;
  }
  return 0;
}

static int has_nul_key(const struct gc_value *v) {
  if (v->type == GC_SEQ) {
    for (size_t i = 0; i < v->len; i++)
      if (has_nul_key(v->u.items[i]))
        return 1;
  }
  if (v->type == GC_MAP) {
    for (size_t i = 0; i < v->len; i++)
      if (memchr(v->u.members[i].key, '\0', v->u.members[i].key_len) ||
          has_nul_key(v->u.members[i].value))
        return 1;
  }
  return 0;
}

/* gc_value_equal, except that NaN equals NaN (a .nan survives a round
 * trip as a NaN). */
static int same(const struct gc_value *x, const struct gc_value *y) {
  if (x->type == GC_FLOAT && y->type == GC_FLOAT && isnan(x->u.f) && isnan(y->u.f))
    return 1;
  if (x->type == GC_SEQ && y->type == GC_SEQ) {
    if (x->len != y->len)
      return 0;
    for (size_t i = 0; i < x->len; i++)
      if (!same(x->u.items[i], y->u.items[i]))
        return 0;
    return 1;
  }
  if (x->type == GC_MAP && y->type == GC_MAP) {
    if (x->len != y->len)
      return 0;
    for (size_t i = 0; i < x->len; i++) {
      const struct gc_member *m = &x->u.members[i];
      const struct gc_value *o = gc_map_getn(y, m->key, m->key_len);
      if (!o || !same(m->value, o))
        return 0;
    }
    return 1;
  }
  return gc_value_equal(x, y);
}

/* Container depth of v (a scalar is 0) and its node count, keys included. */
static size_t tree_depth(const struct gc_value *v, size_t *nodes) {
  size_t d = 0;
  (*nodes)++;
  if (v->type == GC_SEQ) {
    for (size_t i = 0; i < v->len; i++) {
      size_t c = tree_depth(v->u.items[i], nodes);
      d = c > d ? c : d;
    }
    return d + 1;
  }
  if (v->type == GC_MAP) {
    for (size_t i = 0; i < v->len; i++) {
      (*nodes)++;
      size_t c = tree_depth(v->u.members[i].value, nodes);
      d = c > d ? c : d;
    }
    return d + 1;
  }
  return 0;
}

static void fail(const char *what, const char *text) {
  fprintf(stderr, "fuzz_loader: %s\n%s\n", what, text ? text : "");
  abort();
}

/* Loads text and requires one equal document per root. */
static void reload_equal(const char *name, const char *text, size_t len,
                         const struct gc_value *const *roots, size_t n) {
  struct gb_docset *back = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  if (!back)
    abort();
  int rc = gb_manifest_load_buffer(back, name, text, len, &d);
  if (rc || back->n != n) {
    for (size_t i = 0; i < d.n; i++)
      fprintf(stderr, "  %s\n", d.msgs[i]);
    fail("emitted text does not load back", text);
  }
  for (size_t i = 0; i < n; i++)
    if (!same(roots[i], back->docs[i].root))
      fail("round trip changed a document", text);
  gb_docset_free(back);
  gc_diags_destroy(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gb_limits l = {.max_source_bytes = 64 * 1024,
                        .max_total_bytes = 64 * 1024,
                        .max_depth = 24,
                        .max_nodes = 20000,
                        .max_docs = 64};
  struct gb_docset *ds = gb_docset_new(&l);
  if (!ds)
    return 0;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_manifest_load_buffer(ds, "fuzz", (const char *)data, size, &d);
  if ((rc == 0) != (d.errors == 0))
    fail("return code and diagnostics disagree", NULL);
  for (size_t i = 0; i < d.n; i++)
    if (strncmp(d.msgs[i], "fuzz:", 5) != 0)
      fail("message without the source name", d.msgs[i]);
  const struct gc_value **roots = ds->n ? malloc(ds->n * sizeof(*roots)) : NULL;
  if (ds->n && !roots)
    abort();
  for (size_t i = 0; i < ds->n; i++) {
    roots[i] = ds->docs[i].root;
    if (!roots[i] || roots[i]->type != GC_MAP)
      fail("a document is not a map", NULL);
    size_t nodes = 0;
    if (tree_depth(roots[i], &nodes) > l.max_depth)
      fail("a document is deeper than the bound", NULL);
    if (nodes > l.max_nodes)
      fail("a document has more nodes than the bound", NULL);
  }
  char *out = NULL;
  size_t len = 0;
  if (gb_emit_yaml(roots, ds->n, &out, &len) != 0)
    fail("YAML emit failed", NULL);
  reload_equal("rt.yaml", out, len, roots, ds->n);
  free(out);
  for (size_t i = 0; i < ds->n; i++) {
    if (has_nonfinite(roots[i]) || has_nul_key(roots[i]))
      continue;
    for (int pretty = 0; pretty <= 1; pretty++) {
      if (gb_emit_json(roots[i], pretty, &out, &len) != 0)
        fail("JSON emit failed", NULL);
      reload_equal("rt.json", out, len, &roots[i], 1);
      free(out);
    }
  }
  free(roots);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  return 0;
}
