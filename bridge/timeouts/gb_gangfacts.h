/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gangfacts: the durable facts of a gang's wait, kept as annotations on
 * gangbridge's own PodGroup, without I/O.  A fact the timeout tracker acts
 * on must survive a restart and a leader change, and must not be one a
 * tenant can write: tenants write their TrainJobs and pods, not PodGroups.
 * The facts are when the gang first reached its quorum of scheduled pods
 * (gangbridge.io/started-at) and of ready pods (gangbridge.io/ready-at),
 * written once; when a timeout was acted on (gangbridge.io/timed-out-at,
 * the claim that makes one replica, once, act and count it); and when the
 * TrainJob was last resumed (gangbridge.io/resumed-at: the gang's wait
 * restarts there).  This module reads them (a malformed value is ignored,
 * with the reason), tells whether a PodGroup is gangbridge's own for a
 * TrainJob, and builds the JSON merge patch that adds facts with the
 * PodGroup's resourceVersion as precondition.  Every write goes out under
 * the field manager gangbridge-timeouts, so the controller's server-side
 * apply (manager gangbridge), which does not list these annotations,
 * neither removes them nor sees them as drift.  Reentrant; json-c only.
 */
#ifndef GB_GANGFACTS_H
#define GB_GANGFACTS_H

#include <json-c/json.h>
#include <stddef.h>

#define GB_ANN_STARTED_AT "gangbridge.io/started-at"
#define GB_ANN_READY_AT "gangbridge.io/ready-at"
#define GB_ANN_TIMED_OUT_AT "gangbridge.io/timed-out-at"
#define GB_ANN_RESUMED_AT "gangbridge.io/resumed-at"
#define GB_TIMEOUTS_FIELD_MANAGER "gangbridge-timeouts"

/* The facts one PodGroup carries; NAN where absent or malformed.  Times
 * are unix seconds. */
struct gb_gangfacts {
  double started_at, ready_at, timed_out_at, resumed_at;
};

/* Reads pg's facts into f.  Returns 0, or GC_EINVAL when one of them is
 * malformed (that one stays NAN; why says "ns/name: metadata.annotations[K]:
 * ..."), so a bad value never counts as a fact. */
int gb_gangfacts_read(json_object *pg, struct gb_gangfacts *f, char *why, size_t why_size);

/* 1 when pg is gangbridge's own PodGroup of the TrainJob with uid tj_uid
 * (label app.kubernetes.io/managed-by=gangbridge and a controller
 * ownerReference to that uid); with tj_uid NULL, to any TrainJob.  Only such
 * a PodGroup is ever written. */
int gb_gangfacts_ours(json_object *pg, const char *tj_uid);

/* The JSON merge patch that sets the facts of `add` that are not NAN, with
 * metadata.resourceVersion rv as precondition.  *out is the caller's
 * (json_object_put).  Returns 0, GC_EINVAL (no rv, nothing to add) or
 * GC_ENOMEM. */
int gb_gangfacts_patch(const char *rv, const struct gb_gangfacts *add, json_object **out);

/* Sets every fact to NAN. */
void gb_gangfacts_clear(struct gb_gangfacts *f);

#endif
