/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_webhook: the mutating admission webhook that binds a managed TrainJob's
 * pods to their PodGroup.  It reads an `admission.k8s.io/v1` AdmissionReview
 * for a Pod CREATE, takes the pod's JobSet labels
 * (jobset.sigs.k8s.io/jobset-name and jobset.sigs.k8s.io/replicatedjob-name),
 * and asks a caller-supplied lookup what to do; the webhook itself knows
 * nothing about the cluster.  For a managed pod whose replicated job the
 * binding plan names, it answers with a base64 JSON Patch (RFC 6902) that
 * adds the label or annotation the backend's descriptor joins pods by
 * (gc_backend.h; the ones naming the group, and the ones naming the pod's
 * sub-group when the decision names one), creating the map when the pod
 * has none, or the pod spec field (the upstream Workload API's
 * spec.schedulingGroup / spec.workloadRef, at the decision's version;
 * immutable once the pod exists, so only at CREATE) — a pod whose spec
 * already names a scheduling group is left exactly as it is, with an
 * admission warning and a log line — and sets `spec.schedulerName` when the decision names one and
 * the pod has none or "default-scheduler".  When gangbridge places the
 * gang (decision.gate) such a pod also gets the scheduling gate
 * gangbridge.io/placement (the list created when the pod has none, the gate
 * appended after other controllers' gates, never twice), so it waits for
 * the placement; a pod of a gang already released (a later-wave pod, e.g.
 * an MPI launcher) gets the placement restriction at once instead
 * (decision.restriction, AND-ed into its required node affinity, see
 * gb_restriction.h).  Only bound pods get either.  A managed pod that must not join
 * the gang (its replicated job is not in the plan, or the PodGroup that
 * exists is not the gang's: decision.mismatch) gets "remove" operations for
 * any group label or annotation it carries (Kubeflow Trainer puts one on
 * every pod template), so it is never counted by the scheduler; a mismatch
 * may instead be denied (deny_on_mismatch).  Every other pod is allowed
 * untouched.  Strings the webhook reads (the uid, the namespace, the JobSet
 * labels, the group keys, spec.schedulerName) must not hold NUL bytes and
 * the body must be UTF-8: such reviews are refused naming the field, never
 * cut.  Malformed input never crashes and is always answered; see
 * gb_webhook_review for which answer.  Thread-safe: a review keeps all its
 * state on the stack and in json-c objects it frees.
 */
#ifndef GB_WEBHOOK_H
#define GB_WEBHOOK_H

#include <stddef.h>

#include "gb_http.h"
#include "gb_restriction.h"
#include "gc_gang.h"
#include "gc_value.h"

#define GB_JOBSET_NAME_LABEL "jobset.sigs.k8s.io/jobset-name"
#define GB_JOBSET_RJOB_LABEL "jobset.sigs.k8s.io/replicatedjob-name"
#define GB_DEFAULT_SCHEDULER "default-scheduler"
#define GB_WEBHOOK_DEFAULT_MAX_BODY (3u << 20) /* above etcd's 1.5 MiB object limit, twice */
#define GB_WEBHOOK_MAX_BODY_LIMIT (64u << 20) /* max_body is clamped to this */
#define GB_WEBHOOK_NAME_MAX 253

/* What the lookup says about one pod. */
struct gb_webhook_decision {
  int managed;                               /* 0: gangbridge does not manage this TrainJob */
  int bind;                                  /* 0: this replicated job is not in the binding plan */
  const struct gc_backend *backend;          /* a backend of the table (gc_backend.h) */
  /* The API version the backend's objects are written at, for a backend
   * with several (its joins are the version's); NULL: the backend's own. */
  const struct gc_backend_version *version;
  char group[GB_WEBHOOK_NAME_MAX + 1];       /* PodGroup name */
  char subgroup[64]; /* the pod's sub-group within it (a DNS label), written to the
                        backend's GC_JOIN_SUBGROUP keys; "" = none */
  char scheduler_name[GB_WEBHOOK_NAME_MAX + 1]; /* "" = leave spec.schedulerName alone */
  int mismatch; /* with bind: the PodGroup that exists is not gangbridge's (label
                   app.kubernetes.io/managed-by=gangbridge and a controller
                   ownerReference to the TrainJob's uid) or its spec is not the
                   gang's; the pod is not bound (or denied, see deny_on_mismatch) */
  char why[256]; /* with mismatch: what does not match, for the warning */
  int gate;      /* with bind: the gang has a placement policy and gangbridge places it:
                    hold the pod with the gangbridge.io/placement gate */
  struct gb_restriction restriction; /* with bind and no gate: the gang was released;
                                        restrict the pod to its domain (NONE: do not) */
};

/* Fills *out (zeroed on entry) for the pod of JobSet `jobset_name`,
 * replicated job `rjob_name` in `ns`.  Returns 0, or a negative GC_E* code
 * with a reason in `reason` (e.g. caches not synced yet).  Runs on an HTTP
 * thread, concurrently with other calls: it must be thread-safe and quick. */
typedef int (*gb_webhook_lookup_fn)(void *ctx, const char *ns, const char *jobset_name,
                                    const char *rjob_name, struct gb_webhook_decision *out,
                                    char *reason, size_t reason_size);

struct gb_webhook_config {
  gb_webhook_lookup_fn lookup; /* required */
  void *ctx;                   /* borrowed until gb_webhook_free */
  int allow_on_error;          /* non-zero: admit the pod unbound (with a warning) when the
                                  lookup fails; default 0 denies it so the Job controller
                                  retries, because an unbound gang pod defeats gang scheduling */
  size_t max_body;             /* 0 = GB_WEBHOOK_DEFAULT_MAX_BODY; at most 64 MiB */
  struct gb_metric *admissions; /* optional counter {backend, result} */
  int deny_on_mismatch;        /* non-zero: deny (code 409) a pod whose PodGroup does not
                                  match (decision.mismatch) so the Job controller retries;
                                  default 0 admits it unbound, without any group label or
                                  annotation, with a warning */
};

struct gb_webhook;

/* Creates a webhook; copies `cfg`.  Returns 0, GC_EINVAL (no lookup) or
 * GC_ENOMEM.  Free with gb_webhook_free. */
int gb_webhook_new(const struct gb_webhook_config *cfg, struct gb_webhook **out);
void gb_webhook_free(struct gb_webhook *wh);

/* A POST route at `path` (e.g. "/mutate-pods") serving gb_webhook_review,
 * with the body cap set to the webhook's max_body. */
struct gb_http_route gb_webhook_route(struct gb_webhook *wh, const char *path);

/* The binding rule for an existing PodGroup `pg` (NULL: none yet, which
 * gangbridge is about to create: bindable).  A PodGroup is bindable only when
 * gangbridge owns it (label app.kubernetes.io/managed-by=gangbridge and a
 * controller ownerReference with the TrainJob's uid `trainjob_uid`) and,
 * when `desired` (the PodGroup gangbridge renders for the gang; NULL: not
 * computed) is given, its spec holds every field of the desired spec with
 * the same value.  Returns 1 when bindable, else 0 with a sentence naming the
 * PodGroup and what differs in `why`.  All arguments are borrowed. */
int gb_webhook_podgroup_bindable(const struct gc_value *pg, const char *trainjob_uid,
                                 const struct gc_value *desired, char *why, size_t why_size);

#endif
