/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_catalog: the runtime catalog declared in gc_gang.h (gc_catalog_new,
 * gc_catalog_add, gc_doc_trainer_kind) plus the lookup gc_gang uses.  Entries
 * borrow their documents; a later document with the same kind, namespace and
 * name replaces the earlier one.
 */
#ifndef GC_CATALOG_H
#define GC_CATALOG_H

#include "gc_gang.h"

/* Most runtimes one catalog holds (each entry is small; this bounds memory). */
#define GC_CATALOG_MAX 100000

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
