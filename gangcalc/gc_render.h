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

/* Most objects one gang renders to: a Workload and a PodGroup for each of
 * its (at most 8) templates. */
#define GC_RENDER_MAX_OBJECTS 9

/* Every object g's backend needs, in the order they are created: the
 * group object (gc_render_podgroup) first, then the backend's others (the
 * upstream Workload API's PodGroups), each with the same metadata rules
 * and named TrainJob name + suffix.  out[0..cap), count in *n
 * (arena-owned); none for a gang something else makes (g->ganged_by).  Returns 0, GC_EUSAGE, GC_EINVAL, GC_ELIMIT or GC_ENOMEM. */
int gc_render_objects(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out,
                      size_t cap, size_t *n);

/* The node label key g's group object constrains the gang to (a topology
 * constraint its scheduler enforces), or NULL.  Only a backend that can
 * carry a topology (GC_BCAP_NETWORK_TOPOLOGY, at g's version) by node
 * label key (no Trainer runtime topology of its own) gets one, and only
 * for a hard policy whose tier is one of config topology.levels: a soft
 * policy, a tier number or a HyperNode tier name stay gangbridge's own
 * placement. */
const char *gc_render_topology_key(const struct gc_gang *g);

#endif
