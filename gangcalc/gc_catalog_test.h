/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_catalog_test: for tests only.  Functions of gc_catalog that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gc_catalog's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GC_CATALOG_TEST_H
#define GC_CATALOG_TEST_H

#include "gc_catalog.h"

/* Looks a runtime up.  cluster != 0 finds a ClusterTrainingRuntime by name
 * (ns ignored); otherwise a TrainingRuntime in namespace ns, where a runtime
 * document without a namespace counts as being in default_ns.  Returns the
 * borrowed document or NULL; *origin (if non-NULL) gets the origin string
 * given to gc_catalog_add, owned by the catalog. */
const struct gc_value *gc_catalog_find(const struct gc_catalog *c, int cluster, const char *ns,
                                       const char *default_ns, const char *name,
                                       const char **origin);

/* Number of runtimes held. */
size_t gc_catalog_size(const struct gc_catalog *c);

#endif
