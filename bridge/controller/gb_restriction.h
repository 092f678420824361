/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_restriction: the placement restriction (struct gb_restriction: a label
 * level `key In [value]`, or a bounded list of `kubernetes.io/hostname`
 * values), the node-affinity requirement it stands for and how that
 * requirement is AND-ed into a pod: appended to the matchExpressions of
 * every required nodeSelectorTerm (or set as the single term when the pod
 * has none), which is the only change Kubernetes allows on a pod that still
 * has a scheduling gate (KEP-3838).  Both writes that carry it use it: the
 * JSON Patch operations the webhook adds to a pod it creates after its gang
 * was released (here), and the terms of the release merge patch the placer
 * sends (placement/gb_release, which owns the release itself).
 *
 * Size rule: the requirement is bounded (at most GB_RESTRICTION_MAX_HOSTS
 * host names of at most 63 bytes), and the bytes a write adds to a pod spec
 * (the requirement's JSON once per term it is AND-ed into) must stay within
 * GB_RESTRICTION_MAX_GROWTH, or the builders refuse with GC_ELIMIT and the
 * caller restricts by a label level instead.  Empty nodeSelectorTerms match
 * no node and Kubernetes lets them gain nothing: they are left alone.
 *
 * Pure functions over json-c objects they only read; thread-safe.
 */
#ifndef GB_RESTRICTION_H
#define GB_RESTRICTION_H

#include <json-c/json.h>
#include <stddef.h>

#include "gc_diag.h"

#define GB_HOSTNAME_LABEL "kubernetes.io/hostname"
#define GB_RESTRICTION_KEY_MAX 317  /* a qualified name: 253-byte prefix, '/', 63 */
#define GB_RESTRICTION_VALUE_MAX 63 /* a label value */
#define GB_RESTRICTION_MAX_HOSTS 64
#define GB_RESTRICTION_MAX_GROWTH 4096 /* bytes a write may add to a pod spec */

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
 * GB_RESTRICTION_MAX_GROWTH bytes), r unchanged, with a message in d. */
int gb_restriction_add_host(struct gb_restriction *r, const char *host, struct gc_diags *d);

/* Appends to `ops` (a JSON array) the RFC 6902 operations that AND r into
 * the required node affinity of `pod` (a Pod object, borrowed): one "add"
 * per term, or one "add" of the missing affinity level.  Adds nothing for
 * NONE or when every non-empty term already has the requirement.  Returns
 * 0, GC_EINVAL (a field of the pod's affinity has the wrong type),
 * GC_ELIMIT (growth over GB_RESTRICTION_MAX_GROWTH) or GC_ENOMEM, with a
 * message naming the pod and field in d; ops is unchanged on error. */
int gb_restriction_affinity_ops(json_object *pod, const struct gb_restriction *r, json_object *ops,
                                struct gc_diags *d);

/* The pod's required nodeSelectorTerms with r AND-ed into each that needs
 * it: *out is a new array (caller puts), the single term {r} when the pod
 * has none, or NULL when no term changes (r NONE, or every non-empty term
 * has the requirement).  Returns 0, GC_EINVAL (a field of the pod's
 * affinity has the wrong type), GC_ELIMIT (growth over
 * GB_RESTRICTION_MAX_GROWTH) or GC_ENOMEM, with a message naming the pod
 * and field in d. */
int gb_restriction_anded_terms(json_object *pod, const struct gb_restriction *r, json_object **out,
                               struct gc_diags *d);

/* *in_place = 1 when every non-empty required term of pod holds r (or r is
 * NONE), else 0.  Returns 0 or GC_EINVAL / GC_ENOMEM (message in d). */
int gb_restriction_in_place(json_object *pod, const struct gb_restriction *r, int *in_place,
                            struct gc_diags *d);

#endif
