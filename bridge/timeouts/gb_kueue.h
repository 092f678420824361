/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kueue: whether Kueue really manages a TrainJob, from facts its tenant
 * cannot set alone: Kueue's Workload API is served (discovery, v1beta2
 * preferred over v1beta1) and a Workload owned by the TrainJob exists
 * (Kueue labels its Workloads with kueue.x-k8s.io/job-uid; the
 * ownerReference to the TrainJob's uid is checked as well).  Kueue's queue
 * label on the TrainJob is the tenant's and counts for nothing here.  It
 * only lists Workloads in the TrainJob's namespace (RBAC: list on
 * kueue.x-k8s.io workloads).  Reentrant; client and cache borrowed.
 */
#ifndef GB_KUEUE_H
#define GB_KUEUE_H

#include <stddef.h>

#include "gb_kube_client.h"
#include "gb_kube_discovery.h"

#define GB_KUEUE_GROUP "kueue.x-k8s.io"
#define GB_KUEUE_JOB_UID_LABEL "kueue.x-k8s.io/job-uid" /* on a Workload: its job's uid */

/* Looks for a Workload in namespace ns owned by the TrainJob of uid tj_uid.
 * Returns 1 (its name in name, cap bytes), 0 (none, Kueue's API not served,
 * or no discovery cache / uid given), or GC_EIO (unknown: the caller tries
 * again rather than guess). */
int gb_kueue_workload(struct gb_kube_client *c, struct gb_kube_discovery *d, const char *ns,
                      const char *tj_uid, char *name, size_t cap);

#endif
