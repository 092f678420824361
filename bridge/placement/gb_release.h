/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_release: the release of a gated pod, which the placer decides and
 * sends: ONE JSON merge patch per pod that adds the gang's restriction
 * (controller/gb_restriction: the requirement AND-ed into the pod's
 * required terms), removes only the gangbridge.io/placement gate (other
 * gates stay, in order) and carries metadata.resourceVersion as a
 * precondition (a pod that changed since it was read gets 409 Conflict:
 * re-read and build again).  gb_release_state tells whether a pod is still
 * gated, already released or was ungated by someone else, so a retry after
 * a crash is idempotent.  It lives in placement/ with the placer
 * (gb_placer_release sends it, gb_gatesweep removes stray gates with it),
 * not in controller/: the decision and the release are one concern.
 *
 * Why a merge patch: a resourceVersion in a merge patch is a precondition
 * the API server answers with 409 Conflict, the usual signal to re-read;
 * a JSON Patch `test` that fails is a 422, indistinguishable from a refused
 * mutation.  A merge patch replaces lists whole, which the precondition
 * makes safe: the gates and terms written are those of the version read.
 * Nested maps merge, so nothing else in spec.affinity is touched.  A
 * strategic merge patch would need its list directives for one gate and is
 * not available to every client.
 *
 * Pure functions over json-c objects they only read; thread-safe.
 */
#ifndef GB_RELEASE_H
#define GB_RELEASE_H

#include <json-c/json.h>

#include "gb_restriction.h"
#include "gc_diag.h"

/* Builds the release body of `pod` (borrowed; it must carry the
 * gangbridge.io/placement gate and metadata.resourceVersion) into *out
 * (caller puts; send it with gb_kube_client_merge_patch): metadata.resourceVersion,
 * spec.schedulingGates without ours (null when it was the only one) and,
 * unless r is NONE or already present in every non-empty term,
 * spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
 * .nodeSelectorTerms with the requirement AND-ed in.  Returns 0,
 * GC_ENOTFOUND (the pod has no gangbridge gate: see gb_release_state),
 * GC_EINVAL, GC_ELIMIT or GC_ENOMEM, with a message in d. */
int gb_release_patch(json_object *pod, const struct gb_restriction *r, json_object **out,
                     struct gc_diags *d);

enum gb_release_state {
  GB_RELEASE_GATED = 0,   /* carries gangbridge's gate: release it */
  GB_RELEASE_DONE,        /* no gate and the restriction is in place: nothing to do */
  GB_RELEASE_UNRESTRICTED /* no gate, restriction missing: ungated by someone else (or
                             created while the webhook was down); it can no longer
                             be restricted */
};

/* Where `pod` (borrowed) stands against restriction r.  Returns 0 with
 * *state set, or GC_EINVAL (malformed gates or affinity, message in d). */
int gb_release_state(json_object *pod, const struct gb_restriction *r, enum gb_release_state *state,
                     struct gc_diags *d);

#endif
