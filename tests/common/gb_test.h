/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_test: helpers for the gangcalc unit tests.  They load YAML text with
 * the real manifest loader, build a runtime catalog from it, compute the
 * gang of one TrainJob and give short ways to look results up.  Helpers
 * never skip: a load failure fails the calling test.
 */
#ifndef GB_TEST_H
#define GB_TEST_H

#include <stddef.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "gc_gang.h"

/* The backends of the table, by name (tests may name them; product code
 * asks the table). */
#define TB_UNSET ((const struct gc_backend *)NULL)
#define TB_VOLCANO (gc_backend_by_name("volcano"))
#define TB_COSCHED (gc_backend_by_name("coscheduling"))

struct gb_test_run {
  struct gb_docset *ds;
  struct gc_catalog *cat;
  struct gc_diags diags; /* catalog and compute problems */
  struct gc_gang *g;     /* NULL when compute failed */
  int rc;                /* gc_gang_compute's result */
};

/* Loads yaml (must parse cleanly; fails the test otherwise) into a docset.
 * Free with gb_docset_free. */
struct gb_docset *gb_test_load(const char *yaml);

/* Loads yaml, adds every runtime to a catalog and computes the gang of the
 * TrainJob called job_name (NULL: the first TrainJob).  opts may be NULL
 * (volcano default, scope wave).  Free with gb_test_run_free. */
void gb_test_run(struct gb_test_run *r, const char *yaml, const char *job_name,
                 const struct gc_options *opts);
void gb_test_run_free(struct gb_test_run *r);

/* As gb_test_run, with the backend and scope given directly. */
void gb_test_run_with(struct gb_test_run *r, const char *yaml, const struct gc_backend *backend,
                      enum gc_scope scope);

/* The canonical string of l[name] in buf (at least GC_QUANTITY_BUFSZ), or
 * NULL when absent. */
const char *gb_test_qty(const struct gc_reslist *l, const char *name, char *buf);

/* 1 if diags holds exactly this message (error or warning). */
int gb_test_has_diag(const struct gc_diags *d, const char *msg);

/* 1 if the gang has a warning of code whose message contains substr (NULL:
 * any message). */
int gb_test_has_warning(const struct gc_gang *g, enum gc_warning_code code, const char *substr);

/* The podset called name, or NULL. */
const struct gc_podset *gb_test_podset(const struct gc_gang *g, const char *name);

/* Prints every diagnostic to stderr (for failing tests' context). */
void gb_test_dump(const struct gc_diags *d);

/* Reads a file below the source tree (path relative to GB_SRC_DIR) into a
 * malloc'd NUL-terminated buffer; fails the test when unreadable. */
char *gb_test_read_src(const char *relpath);

/* printf into a string that lives until gb_test_strings_free, which suites
 * register as a checked fixture teardown. */
const char *gb_test_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gb_test_strings_free(void);

/* A ClusterTrainingRuntime (kind "ClusterTrainingRuntime" or
 * "TrainingRuntime") called name whose spec holds `spec_extra` (YAML lines
 * already indented by 2, e.g. "  mlPolicy: {numNodes: 2, torch: {}}\n", or
 * "") and the replicated jobs given as gb_test_job items, NULL-terminated. */
const char *gb_test_runtime(const char *kind, const char *name, const char *spec_extra, ...);

/* One replicatedJobs item: ancestor label value (NULL: none), parallelism
 * (< 0: not set), containers as a YAML flow sequence (e.g. "[{name: node,
 * resources: {requests: {cpu: 1}}}]"), dependsOn as a flow sequence or NULL,
 * extra lines for the job (indented by 10, e.g. "          replicas: 2\n")
 * or NULL, extra pod spec keys as a flow fragment ("priorityClassName: hi")
 * or NULL. */
const char *gb_test_job(const char *name, const char *ancestor, int parallelism,
                        const char *containers, const char *deps, const char *job_extra,
                        const char *pod_extra);

/* A TrainJob "default/<name>" on the ClusterTrainingRuntime rt with spec
 * lines `spec_extra` (indented by 2) added after runtimeRef. */
const char *gb_test_trainjob(const char *name, const char *rt, const char *spec_extra);

#endif
