/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_resources: a ResourceList (resource name -> quantity), kept sorted by
 * name so output is deterministic and lookups are binary searches.  Lists are
 * arena-backed; the caller picks the arena and frees it.  Also the per-key
 * operations the gang rules need: sum, scale by a count, per-key max.
 */
#ifndef GC_RESOURCES_H
#define GC_RESOURCES_H

#include <stddef.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_quantity.h"
#include "gc_value.h"

struct gc_resource {
  const char *name; /* arena-owned */
  struct gc_quantity q;
};

struct gc_reslist {
  struct gc_resource *items; /* sorted by name, unique */
  size_t n;
  size_t cap;
};

/* An empty list; no allocation until the first set. */
#define GC_RESLIST_INIT {NULL, 0, 0}

/* Looks name up; NULL when absent. */
const struct gc_quantity *gc_reslist_get(const struct gc_reslist *l, const char *name);

/* Sets name to q (replacing).  The name is copied into a. */
int gc_reslist_set(struct gc_arena *a, struct gc_reslist *l, const char *name,
                   const struct gc_quantity *q);

/* dst[name] += src[name] for every name in src. */
int gc_reslist_add(struct gc_arena *a, struct gc_reslist *dst, const struct gc_reslist *src);

/* dst[name] = max(dst[name], src[name]) for every name in src. */
int gc_reslist_max(struct gc_arena *a, struct gc_reslist *dst, const struct gc_reslist *src);

/* Deep copy of src into dst (dst is overwritten, not freed). */
int gc_reslist_copy(struct gc_arena *a, struct gc_reslist *dst, const struct gc_reslist *src);

/* Reads a Kubernetes ResourceList object (map of name -> quantity) from a
 * document node.  Bad quantities are reported as "<where>.<name>: ..." with
 * `where` the caller's path prefix (e.g. "default/job: spec.trainer.
 * resourcesPerNode.requests"); returns GC_EINVAL if any was bad. */
int gc_reslist_from_value(struct gc_arena *a, const struct gc_value *v, const char *where,
                          struct gc_reslist *out, struct gc_diags *diags);

/* Builds a map node name -> canonical quantity string (for rendering). */
struct gc_value *gc_reslist_to_value(struct gc_arena *a, const struct gc_reslist *l);

#endif
