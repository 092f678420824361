/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_release: the pod side of topology placement.  It owns the placement
 * restriction (struct gb_restriction: a label level `key In [value]`, or a
 * bounded list of `kubernetes.io/hostname` values), the node-affinity
 * requirement it stands for and how that requirement is AND-ed into a pod:
 * appended to the matchExpressions of every required nodeSelectorTerm (or
 * set as the single term when the pod has none), which is the only change
 * Kubernetes allows on a pod that still has a scheduling gate (KEP-3838).
 * It builds the two writes that carry it: the JSON Patch operations the
 * webhook adds to a pod it creates after its gang was released, and the
 * release body, ONE JSON merge patch per pod that adds the requirement,
 * removes only the gangbridge.io/placement gate (other gates stay, in
 * order) and carries metadata.resourceVersion as a precondition (a pod that
 * changed since it was read gets 409 Conflict: re-read and build again).
 * gb_release_state tells whether a pod is still gated, already released or
 * was ungated by someone else, so a retry after a crash is idempotent.
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
 * Size rule: the requirement is bounded (at most GB_RESTRICTION_MAX_HOSTS
 * host names of at most 63 bytes), and the bytes a write adds to a pod spec
 * (the requirement's JSON once per term it is AND-ed into) must stay within
 * GB_RELEASE_MAX_GROWTH, or the builders refuse with GC_ELIMIT and the
 * caller restricts by a label level instead.  Empty nodeSelectorTerms match
 * no node and Kubernetes lets them gain nothing: they are left alone.
 *
 * Pure functions over json-c objects they only read; thread-safe.
 */
#ifndef GB_RELEASE_H
#define GB_RELEASE_H

#include <json-c/json.h>
#include <stddef.h>

#include "gc_diag.h"

/* The scheduling gate gangbridge holds placed pods back with (the same text
 * as bridge/model/gb_model.h, which the controller layer cannot include). */
#define GB_PLACEMENT_GATE "gangbridge.io/placement"
#define GB_HOSTNAME_LABEL "kubernetes.io/hostname"
#define GB_RESTRICTION_KEY_MAX 317  /* a qualified name: 253-byte prefix, '/', 63 */
#define GB_RESTRICTION_VALUE_MAX 63 /* a label value */
#define GB_RESTRICTION_MAX_HOSTS 64
#define GB_RELEASE_MAX_GROWTH 4096 /* bytes a write may add to a pod spec */

enum gb_restriction_kind {
  GB_RESTRICT_NONE = 0, /* no requirement: the release only removes the gate */
  GB_RESTRICT_LABEL,    /* key In [value]: one domain of a label level */
  GB_RESTRICT_HOSTS     /* kubernetes.io/hostname In [values]: a node list */
};

/* A bounded placement restriction; zero-initialised it is NONE.  Fill it
 * with gb_restriction_label or gb_restriction_add_host, which validate. */
struct gb_restriction {
  enum gb_restriction_kind kind;
  char key[GB_RESTRICTION_KEY_MAX + 1];
  size_t n_values; /* LABEL: 1 */
  char values[GB_RESTRICTION_MAX_HOSTS][GB_RESTRICTION_VALUE_MAX + 1];
};

/* Makes *r the restriction `key In [value]`.  Returns 0, or GC_EINVAL (r
 * unchanged) when key is not a qualified name or value not a non-empty
 * label value, with a message naming it in d. */
int gb_restriction_label(struct gb_restriction *r, const char *key, const char *value,
                         struct gc_diags *d);

/* Adds a node's kubernetes.io/hostname label value to a HOSTS restriction
 * (a NONE one becomes HOSTS; duplicates are ignored).  Returns 0, GC_EINVAL
 * (not a label value, or r is a LABEL restriction) or GC_ELIMIT (more than
 * GB_RESTRICTION_MAX_HOSTS hosts, or a requirement over
 * GB_RELEASE_MAX_GROWTH bytes), r unchanged, with a message in d. */
int gb_restriction_add_host(struct gb_restriction *r, const char *host, struct gc_diags *d);

/* The requirement as a nodeSelectorRequirement object, or NULL for NONE (or
 * on allocation failure).  Caller puts it. */
json_object *gb_restriction_requirement(const struct gb_restriction *r);

/* Appends to `ops` (a JSON array) the RFC 6902 operations that AND r into
 * the required node affinity of `pod` (a Pod object, borrowed): one "add"
 * per term, or one "add" of the missing affinity level.  Adds nothing for
 * NONE or when every non-empty term already has the requirement.  Returns
 * 0, GC_EINVAL (a field of the pod's affinity has the wrong type),
 * GC_ELIMIT (growth over GB_RELEASE_MAX_GROWTH) or GC_ENOMEM, with a
 * message naming the pod and field in d; ops is unchanged on error. */
int gb_release_affinity_ops(json_object *pod, const struct gb_restriction *r, json_object *ops,
                            struct gc_diags *d);

/* Builds the release body of `pod` (borrowed; it must carry the
 * gangbridge.io/placement gate and metadata.resourceVersion) into *out
 * (caller puts; send it with gb_kube_merge_patch): metadata.resourceVersion,
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
int gb_release_state(json_object *pod, const struct gb_restriction *r,
                     enum gb_release_state *state, struct gc_diags *d);

#endif
