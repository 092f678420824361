/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_render: the group object (PodGroup) of a computed gang, for its
 * backend (gc_backend.h), as a gc_value tree with keys in the order kubectl
 * prints them and only the fields the CRDs define.  It owns the metadata
 * every backend shares and the mapping of the gang's timeout onto the
 * backend's timeout annotation; the spec comes from the backend's
 * render_spec.  gc_gang computes the gang.
 */
#ifndef GC_RENDER_H
#define GC_RENDER_H

#include "gc_arena.h"
#include "gc_value.h"

struct gc_gang;

/* Builds the group object for g's backend (apiVersion, kind, metadata with
 * name, namespace, managed-by label, controller ownerReference when the
 * TrainJob has a uid, the backend's timeout annotation when the gang has a
 * timeout and the backend has one, and spec) as a tree in arena a (*out is arena-owned;
 * g is borrowed and may be freed afterwards: the tree copies its strings).
 * Keys are in the order kubectl prints them (sorted).  Returns 0,
 * GC_EUSAGE, GC_EINVAL (no pods, or no backend chosen) or GC_ENOMEM. */
int gc_render_podgroup(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out);

#endif
