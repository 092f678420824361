/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_podreq: the request of one pod built from a PodSpec, by Kubernetes'
 * pod request rule (component-helpers resource.PodRequests): the sum of the
 * containers, native sidecars (init containers with restartPolicy Always)
 * added to the sum and to a running sidecar total, each other init
 * container's need (its request plus the sidecars started before it) taken
 * as a per-resource maximum, pod-level requests replacing cpu, memory and
 * hugepages-*, plus spec.overhead.  Unlike Trainer, and like the API server
 * does for real pods, a resource a container (or the pod) gives only in
 * `limits` counts as its request; every such resource is reported.
 */
#ifndef GC_PODREQ_H
#define GC_PODREQ_H

#include <stddef.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_resources.h"
#include "gc_value.h"

/* One resource taken from limits because requests did not name it. */
struct gc_podreq_note {
  const char *container; /* container name, or "(pod)" for pod-level resources */
  const char *resource;
};

struct gc_podreq {
  struct gc_reslist request;     /* the pod's request */
  struct gc_reslist limits_only; /* sum of the quantities that came only from limits */
  struct gc_podreq_note *notes;  /* arena-owned, one per (container, resource) */
  size_t n_notes;
};

/* Computes the request of a pod with spec `podspec` (a map, or NULL for an
 * empty pod).  Every quantity and type problem is reported to diags as
 * "<where>.containers[i].resources.requests.cpu: ..." (where is the path of
 * the pod spec, including its object prefix) and GC_EINVAL is returned after
 * looking at the whole spec.  With diags NULL nothing is reported and no
 * path is formatted (where may then be NULL): callers compute quietly first
 * and repeat with diags only when that failed.  Results are arena-owned.  Returns 0, GC_EINVAL,
 * GC_ERANGE (a sum does not fit) or GC_ENOMEM. */
int gc_podreq_compute(struct gc_arena *a, const struct gc_value *podspec, const char *where,
                      struct gc_podreq *out, struct gc_diags *diags);

#endif
