/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the gang calculator.  The input is a YAML stream;
 * every TrainingRuntime/ClusterTrainingRuntime goes into a catalog and the
 * gang of every TrainJob is computed with each backend and both scopes.
 * Properties checked:
 *   - nothing crashes, leaks or hangs;
 *   - gc_gang_compute returns 0 exactly when it added no error message, and
 *     then returns a gang; on failure it returns no gang;
 *   - a gang has minMember >= 1 equal to the sum of its counted podsets,
 *     bindings consistent with the scope and gang phase, and it renders (with
 *     sorted keys) and explains without error.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; run fuzz/fuzz_gang
 * with tests/fuzz/corpus/gang as the seed corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gb_manifest.h"
#include "gc_gang.h"

static void sorted_keys(const struct gc_value *v) {
  if (v->type == GC_MAP) {
    for (size_t i = 0; i < v->len; i++) {
      if (i && strcmp(v->u.members[i - 1].key, v->u.members[i].key) >= 0)
        abort();
      sorted_keys(v->u.members[i].value);
    }
  } else if (v->type == GC_SEQ) {
    for (size_t i = 0; i < v->len; i++)
      sorted_keys(v->u.items[i]);
  }
}

static void check_gang(const struct gc_gang *g, enum gc_scope scope) {
  int64_t members = 0;
  for (size_t i = 0; i < g->n_podsets; i++) {
    const struct gc_podset *ps = &g->podsets[i];
    if (ps->count < 0 || ps->wave < 0)
      abort();
    if (scope == GC_SCOPE_ALL && ps->binding != GC_BIND_COUNTED)
      abort();
    if (scope == GC_SCOPE_WAVE &&
        (ps->binding != GC_BIND_UNBOUND) != (ps->phase == g->gang_phase))
      abort();
    if (ps->binding == GC_BIND_COUNTED)
      members += ps->count;
  }
  if (g->min_member < 1 || members != g->min_member)
    abort();
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *pg = NULL;
  if (!a || gc_render_podgroup(g, a, &pg) != 0 || !pg)
    abort();
  sorted_keys(pg);
  gc_arena_free(a);
  char *text = NULL;
  if (gc_explain(g, &text) != 0 || !text)
    abort();
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct gb_limits lim = {1 << 16, 1 << 18, 32, 20000, 64};
  struct gb_docset *ds = gb_docset_new(&lim);
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_diags d;
  gc_diags_init(&d);
  if (!ds || !cat)
    abort();
  gb_manifest_load_buffer(ds, "fuzz", (const char *)data, size, &d);
  for (size_t i = 0; i < ds->n; i++) {
    const char *kind = NULL;
    if (gc_catalog_trainer_kind(ds->docs[i].root, &kind) && strcmp(kind, "TrainJob"))
      gc_catalog_add(cat, ds->docs[i].root, "fuzz", &d);
  }
  for (size_t i = 0; i < ds->n; i++) {
    const char *kind = NULL;
    if (!gc_catalog_trainer_kind(ds->docs[i].root, &kind) || strcmp(kind, "TrainJob"))
      continue;
    for (size_t b = 0; b <= gc_backend_count(); b++) {
      for (int scope = 0; scope < 2; scope++) {
        struct gc_options o = {
            b ? gc_backend_at(b - 1) : NULL, NULL, (enum gc_scope)scope, NULL, NULL, NULL, NULL};
        struct gc_gang *g = NULL;
        size_t before = d.errors;
        int rc = gc_gang_compute(ds->docs[i].root, cat, &o, &g, &d);
        if ((rc == 0) != (d.errors == before) || (rc == 0) != (g != NULL))
          abort();
        if (g)
          check_gang(g, (enum gc_scope)scope);
        gc_gang_free(g);
      }
    }
  }
  gc_diags_destroy(&d);
  gc_catalog_free(cat);
  gb_docset_free(ds);
  return 0;
}
