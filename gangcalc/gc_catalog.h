/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_catalog: the runtime catalog declared in gc_gang.h (gc_catalog_new,
 * gc_catalog_add, gc_catalog_trainer_kind) plus the lookup gc_gang uses.  Entries
 * borrow their documents; a later document with the same kind, namespace and
 * name replaces the earlier one.
 */
#ifndef GC_CATALOG_H
#define GC_CATALOG_H

#include "gc_gang.h"
#include "gc_podreq.h"

/* Most runtimes one catalog holds (each entry is small; this bounds memory). */
#define GC_CATALOG_MAX 100000

/* Derived data of one runtime (opaque; owned by the catalog entry). */
struct gc_rt_cache;

/* gc_catalog_find that also returns the runtime's derived data in *cache
 * (NULL when none could be built).  Both stay valid until the entry is
 * replaced or the catalog freed. */
const struct gc_value *gc_catalog_find_cached(const struct gc_catalog *c, int cluster,
                                              const char *ns, const char *default_ns,
                                              const char *name, const char **origin,
                                              const struct gc_rt_cache **cache);

/* The pod request the runtime's own pod spec yields, when podspec (a map)
 * has the very same containers, initContainers, resources and overhead
 * nodes as one of the runtime's replicated job pod specs whose request
 * computed without a problem; NULL otherwise (compute it).  The pod request
 * reads nothing else, so the result is exact; its lists live in the catalog
 * (copy what must outlive it). */
const struct gc_podreq *gc_rt_cache_podreq(const struct gc_rt_cache *cache,
                                           const struct gc_value *podspec);

#endif
