/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_kube: the kube-scheduler HTTP extender's JSON, and the pod
 * identity both protocols need.  It owns the decoding of ExtenderArgs
 * ({"Pod", "Nodes", "NodeNames"}, Go field names matched as Go's decoder
 * does, unknown fields ignored, null and absent alike) into the few fields
 * gangbridge uses, and the exact encoding of ExtenderFilterResult and
 * HostPriorityList (extender/v1/types.go: no json tags, so the keys are the
 * Go field names).  Every string is bounded; a body that is not JSON, or a
 * field of the wrong type, is refused with the place of the problem.
 */
#ifndef GB_SCHED_KUBE_H
#define GB_SCHED_KUBE_H

#include <stddef.h>
#include <stdint.h>

#include "gb_buf.h"
#include "gb_jscan.h"

#define GB_SCHED_KEY_MAX 318 /* "namespace/name", as GB_PLAN_KEY_MAX */
#define GB_SCHED_NAME_MAX 253
#define GB_SCHED_NS_MAX 63 /* a namespace is a DNS label */
#define GB_SCHED_UID_MAX 128
#define GB_SCHED_MAX_NODES 100000 /* nodes in one request */

#define GB_SCHED_JOBSET_LABEL "jobset.sigs.k8s.io/jobset-name"

/* What gangbridge reads of a v1.Pod. */
struct gb_sched_pod {
  char ns[GB_SCHED_NS_MAX + 1];
  char name[GB_SCHED_NAME_MAX + 1];
  char uid[GB_SCHED_UID_MAX + 1];
  char jobset[GB_SCHED_NAME_MAX + 1];    /* the JobSet name label, "" if none */
  char pod_group[GB_SCHED_NAME_MAX + 1]; /* a backend's group label, else its annotation */
  char node[GB_SCHED_NAME_MAX + 1];      /* spec.nodeName */
};

/* Decodes the v1.Pod at the cursor (null leaves *pod zeroed).  Returns 0 or
 * a GC_E* code with s->msg set. */
int gb_sched_pod_decode(struct gb_sj *s, struct gb_sched_pod *pod);

/* The plan key of a pod: "ns/<JobSet name>", else "ns/<PodGroup name>" when
 * it names a group, else "" (not a gang member).  out holds
 * GB_SCHED_KEY_MAX + 1 bytes. */
void gb_sched_pod_key(const struct gb_sched_pod *pod, char *out);

/* ExtenderArgs, decoded.  names point into one block owned by the args. */
struct gb_sched_kube_args {
  struct gb_sched_pod pod;
  char key[GB_SCHED_KEY_MAX + 1];
  int node_names;           /* 1: the NodeNames form (nodeCacheCapable), 0: Nodes */
  char **nodes;             /* node names in request order */
  struct gb_sj_span *items; /* Nodes form: each node's raw JSON (borrowed from the body) */
  size_t n_nodes;
  size_t cap_nodes; /* room in nodes and items */
  char *block;      /* owned: the names' bytes */
  int bad_utf8;     /* the body held bytes that are not UTF-8: items are cleaned when echoed */
};

/* Decodes an ExtenderArgs body (borrowed).  Returns 0, GC_EINVAL or
 * GC_ELIMIT with the reason in msg, or GC_ENOMEM.  Free with
 * gb_sched_kube_args_free (also after a failure). */
int gb_sched_kube_args_decode(const char *body, size_t len, struct gb_sched_kube_args *a, char *msg,
                              size_t msg_size);
void gb_sched_kube_args_free(struct gb_sched_kube_args *a);

/* Failed nodes' reasons worded once per request: where joined[i], node
 * i's reason is head + its name + tail (why[i] is not read), so the
 * encoder escapes head and tail once, not once per node. */
struct gb_sched_kube_why {
  const char *head, *tail;
  const uint8_t *joined;
};

/* Writes an ExtenderFilterResult: the nodes with pass[i] in the form the
 * request used (NodeNames, or Nodes with each passing node's JSON as sent),
 * the others in FailedNodes with why[i] or their joined reason (parts may
 * be NULL) (or in FailedAndUnresolvableNodes when unresolvable[i]), and
 * Error (NULL: "").  Returns 0 or out's error. */
int gb_sched_kube_filter_encode(const struct gb_sched_kube_args *a, const uint8_t *pass,
                                const uint8_t *unresolvable, const char *const *why,
                                const struct gb_sched_kube_why *parts, const char *error,
                                struct gb_buf *out);
/* Writes a HostPriorityList: [{"Host":name,"Score":score}] in request order. */
int gb_sched_kube_priority_encode(const struct gb_sched_kube_args *a, const int64_t *score,
                                  struct gb_buf *out);

/* Appends s as a JSON string literal (json-c's escaping). */
int gb_sched_kube_json_str(struct gb_buf *out, const char *s);

#endif
