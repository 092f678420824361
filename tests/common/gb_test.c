/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_test: gangcalc unit-test helpers (see gb_test.h).
 */
#include "gb_test.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_quantity.h"

struct gb_docset *gb_test_load(const char *yaml) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_ptr_nonnull(ds);
  int rc = gb_manifest_load_buffer(ds, "test.yaml", yaml, strlen(yaml), &d);
  if (rc)
    gb_test_dump(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(d.errors, 0);
  gc_diags_destroy(&d);
  return ds;
}

void gb_test_run(struct gb_test_run *r, const char *yaml, const char *job_name,
                 const struct gc_options *opts) {
  memset(r, 0, sizeof(*r));
  gc_diags_init(&r->diags);
  r->ds = gb_test_load(yaml);
  r->cat = gc_catalog_new();
  ck_assert_ptr_nonnull(r->cat);
  const struct gc_value *job = NULL;
  for (size_t i = 0; i < r->ds->n; i++) {
    const char *kind = NULL;
    const struct gc_value *doc = r->ds->docs[i].root;
    if (!gc_catalog_trainer_kind(doc, &kind))
      continue;
    if (strcmp(kind, "TrainJob") == 0) {
      const char *n = gc_value_as_str(gc_value_path(doc, "metadata.name"));
      if (!job && (!job_name || (n && strcmp(n, job_name) == 0)))
        job = doc;
      continue;
    }
    char origin[64];
    snprintf(origin, sizeof(origin), "test.yaml:%u:%u", r->ds->docs[i].line, r->ds->docs[i].col);
    gc_catalog_add(r->cat, doc, origin, &r->diags);
  }
  ck_assert_msg(job != NULL, "no TrainJob in the test input");
  r->rc = gc_gang_compute(job, r->cat, opts, &r->g, &r->diags);
}

void gb_test_run_with(struct gb_test_run *r, const char *yaml, const struct gc_backend *backend,
                      enum gc_scope scope) {
  struct gc_options o = {backend, TB_UNSET, scope, NULL, NULL, NULL, NULL};
  gb_test_run(r, yaml, NULL, &o);
}

static char **g_strings;
static size_t g_nstrings;

const char *gb_test_fmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  ck_assert_int_ge(n, 0);
  char *s = malloc((size_t)n + 1);
  char **list = realloc(g_strings, (g_nstrings + 1) * sizeof(char *));
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(list);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  g_strings = list;
  g_strings[g_nstrings++] = s;
  return s;
}

void gb_test_strings_free(void) {
  for (size_t i = 0; i < g_nstrings; i++)
    free(g_strings[i]);
  free(g_strings);
  g_strings = NULL;
  g_nstrings = 0;
}

const char *gb_test_runtime(const char *kind, const char *name, const char *spec_extra, ...) {
  const char *jobs = "";
  va_list ap;
  va_start(ap, spec_extra);
  for (const char *j = va_arg(ap, const char *); j; j = va_arg(ap, const char *))
    jobs = gb_test_fmt("%s%s", jobs, j);
  va_end(ap);
  return gb_test_fmt("---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: %s\nmetadata:\n"
                     "  name: %s\n%sspec:\n%s  template:\n    spec:\n      replicatedJobs:\n%s",
                     kind, name, strcmp(kind, "TrainingRuntime") ? "" : "  namespace: default\n",
                     spec_extra ? spec_extra : "", jobs);
}

const char *gb_test_job(const char *name, const char *ancestor, int parallelism,
                        const char *containers, const char *deps, const char *job_extra,
                        const char *pod_extra) {
  return gb_test_fmt(
      "        - name: %s\n%s%s%s%s          template:\n%s%s%s            spec:\n%s"
      "              template: {spec: {containers: %s%s%s}}\n",
      name, deps ? "          dependsOn: " : "", deps ? deps : "", deps ? "\n" : "",
      job_extra ? job_extra : "",
      ancestor ? "            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: "
               : "",
      ancestor ? ancestor : "", ancestor ? "}}\n" : "",
      parallelism >= 0 ? gb_test_fmt("              parallelism: %d\n", parallelism) : "",
      containers, pod_extra ? ", " : "", pod_extra ? pod_extra : "");
}

const char *gb_test_trainjob(const char *name, const char *rt, const char *spec_extra) {
  return gb_test_fmt("---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                     "metadata:\n  name: %s\n  namespace: default\n  uid: uid-%s\nspec:\n"
                     "  runtimeRef: {name: %s}\n%s",
                     name, name, rt, spec_extra ? spec_extra : "");
}

void gb_test_run_free(struct gb_test_run *r) {
  gc_gang_free(r->g);
  gc_catalog_free(r->cat);
  gb_docset_free(r->ds);
  gc_diags_destroy(&r->diags);
  memset(r, 0, sizeof(*r));
}

const char *gb_test_qty(const struct gc_reslist *l, const char *name, char *buf) {
  const struct gc_quantity *q = gc_reslist_get(l, name);
  if (!q)
    return NULL;
  ck_assert_int_eq(gc_quantity_format(q, buf, GC_QUANTITY_BUFSZ), 0);
  return buf;
}

int gb_test_has_diag(const struct gc_diags *d, const char *msg) {
  for (size_t i = 0; i < d->n; i++)
    if (strcmp(d->msgs[i], msg) == 0)
      return 1;
  return 0;
}

int gb_test_has_warning(const struct gc_gang *g, enum gc_warning_code code, const char *substr) {
  if (!g)
    return 0;
  for (size_t i = 0; i < g->n_warnings; i++)
    if (g->warnings[i].code == code && (!substr || strstr(g->warnings[i].message, substr)))
      return 1;
  return 0;
}

const struct gc_podset *gb_test_podset(const struct gc_gang *g, const char *name) {
  for (size_t i = 0; g && i < g->n_podsets; i++)
    if (strcmp(g->podsets[i].name, name) == 0)
      return &g->podsets[i];
  return NULL;
}

void gb_test_dump(const struct gc_diags *d) {
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "  diag: %s%s\n", d->is_warning[i] ? "warning: " : "", d->msgs[i]);
}

char *gb_test_read_src(const char *relpath) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", GB_SRC_DIR, relpath);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 65536;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
    size_t n = fread(buf + len, 1, 4096, f);
    len += n;
    if (n < 4096)
      break;
  }
  fclose(f);
  buf[len] = '\0';
  return buf;
}
