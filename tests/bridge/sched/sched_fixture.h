/* SPDX-License-Identifier: Apache-2.0
 *
 * sched_fixture.h: request bodies for the scheduler endpoint tests and the
 * benchmark, built from the Go structs of scheduler-side.md §1.4 and §4
 * (every field of TaskInfo, NodeInfo, JobInfo, in Go's order and names),
 * and a fake decision source.  Header-only: every function is static.
 */
#ifndef GB_TEST_SCHED_FIXTURE_H
#define GB_TEST_SCHED_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_sched.h"

/* A v1.Pod as the API server writes it (with managedFields, to be
 * realistic about size).  jobset may be NULL (no JobSet label). */
static inline void fx_pod(struct gb_buf *b, const char *ns, const char *name, const char *uid,
                          const char *jobset, const char *node) {
  gb_buf_printf(b,
                "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\","
                "\"resourceVersion\":\"81234\",\"creationTimestamp\":\"2026-08-20T10:00:00Z\","
                "\"labels\":{",
                name, ns, uid);
  if (jobset)
    gb_buf_printf(b,
                  "\"jobset.sigs.k8s.io/jobset-name\":\"%s\","
                  "\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\",",
                  jobset);
  gb_buf_printf(b,
                "\"batch.kubernetes.io/job-completion-index\":\"0\"},"
                "\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"},"
                "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":"
                "\"%s-node-0\",\"uid\":\"0c1d\",\"controller\":true}],"
                "\"managedFields\":[{\"manager\":\"kube-controller-manager\",\"operation\":"
                "\"Update\",\"apiVersion\":\"v1\",\"time\":\"2026-08-20T10:00:00Z\","
                "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":"
                "{},\"f:batch.kubernetes.io/job-completion-index\":{}}},\"f:spec\":{\"f:"
                "containers\":{\"k:{\\\"name\\\":\\\"trainer\\\"}\":{\".\":{},\"f:image\":{},"
                "\"f:resources\":{\"f:requests\":{\".\":{},\"f:cpu\":{},\"f:memory\":{}}}}}}}}]},"
                "\"spec\":{\"schedulerName\":\"volcano\",\"priority\":0,\"nodeName\":\"%s\","
                "\"containers\":[{\"name\":\"trainer\",\"image\":\"ghcr.io/kubeflow/trainer:"
                "v2.1\",\"command\":[\"torchrun\",\"--nproc-per-node=8\",\"train.py\"],"
                "\"env\":[{\"name\":\"PET_NNODES\",\"value\":\"2\"},{\"name\":\"PET_MASTER_ADDR\","
                "\"value\":\"tj-llama-node-0-0.tj-llama\"}],\"resources\":{\"requests\":"
                "{\"cpu\":\"16\",\"memory\":\"128Gi\",\"nvidia.com/gpu\":\"8\"},\"limits\":"
                "{\"nvidia.com/gpu\":\"8\"}},\"volumeMounts\":[{\"name\":\"kube-api-access\","
                "\"mountPath\":\"/var/run/secrets/kubernetes.io/serviceaccount\",\"readOnly\":"
                "true}]}],\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
                "\"effect\":\"NoSchedule\"}]},\"status\":{\"phase\":\"Pending\",\"qosClass\":"
                "\"Burstable\"}}",
                jobset ? jobset : "pg", name, node ? node : "");
}

static inline void fx_resource(struct gb_buf *b, const char *scalars) {
  gb_buf_printf(b,
                "{\"MilliCPU\":16000,\"Memory\":137438953472,\"ScalarResources\":%s,"
                "\"MaxTaskNum\":0}",
                scalars);
}

/* A TaskInfo with every field of §1.4. */
static inline void fx_task(struct gb_buf *b, const char *ns, const char *name, const char *uid,
                           const char *job, const char *jobset, const char *node) {
  gb_buf_printf(b,
                "{\"UID\":\"%s\",\"Job\":\"%s\",\"Name\":\"%s\",\"Namespace\":\"%s\","
                "\"TaskRole\":\"\",\"Resreq\":",
                uid, job, name, ns);
  fx_resource(b, "{\"nvidia.com/gpu\":8000,\"pods\":1}");
  gb_buf_addstr(b, ",\"InitResreq\":");
  fx_resource(b, "{\"nvidia.com/gpu\":8000,\"pods\":1}");
  gb_buf_printf(b,
                ",\"DRAResreq\":null,\"ResourceClaimKeys\":null,\"ResourceClaimDRAResreq\":null,"
                "\"NodeName\":\"%s\",\"EvictionOccurred\":false,\"JobAllocatedHyperNode\":\"\","
                "\"Status\":%d,\"LastTransaction\":null,\"Priority\":0,\"VolumeReady\":false,"
                "\"Preemptable\":false,\"BestEffort\":false,\"HasRestartableInitContainer\":false,"
                "\"SchGated\":false,\"RevocableZone\":\"\",\"NumaInfo\":{\"Policy\":\"\","
                "\"ResMap\":{}},\"Pod\":",
                node ? node : "", node ? 2 : 1);
  fx_pod(b, ns, name, uid, jobset, node);
  gb_buf_printf(b,
                ",\"PodAnnotations\":{\"scheduling.k8s.io/group-name\":\"%s\"},"
                "\"CustomBindErrHandlerSucceeded\":false}",
                jobset ? jobset : "pg");
}

/* A NodeInfo carrying n_tasks running pods (tasks: "{}" when 0, or null
 * when n_tasks < 0). */
static inline void fx_node(struct gb_buf *b, const char *name, int n_tasks) {
  gb_buf_printf(b,
                "{\"Name\":\"%s\",\"Node\":{\"metadata\":{\"name\":\"%s\",\"labels\":"
                "{\"kubernetes.io/hostname\":\"%s\"}},\"spec\":{},\"status\":{\"allocatable\":"
                "{\"cpu\":\"192\",\"memory\":\"2015Gi\",\"nvidia.com/gpu\":\"8\",\"pods\":"
                "\"110\"}}},\"State\":{\"Phase\":1,\"Reason\":\"\"},",
                name, name, name);
  static const char *const res[] = {"Releasing", "Pipelined",   "Idle",
                                    "Used",      "Allocatable", "Capacity"};
  for (size_t i = 0; i < 6; i++) {
    gb_buf_printf(b, "\"%s\":", res[i]);
    fx_resource(b, i < 2 ? "null" : "{\"nvidia.com/gpu\":8000,\"pods\":110}");
    gb_buf_addstr(b, ",");
  }
  gb_buf_addstr(b, "\"ResourceUsage\":{\"MetricsTime\":\"0001-01-01T00:00:00Z\",\"CPUUsageAvg\":"
                   "{},\"MEMUsageAvg\":{}},\"Tasks\":");
  if (n_tasks < 0) {
    gb_buf_addstr(b, "null");
  } else {
    gb_buf_addstr(b, "{");
    for (int i = 0; i < n_tasks; i++) {
      char uid[64], pname[64];
      snprintf(uid, sizeof(uid), "%s-uid-%d", name, i);
      snprintf(pname, sizeof(pname), "other-%s-%d", name, i);
      gb_buf_printf(b, "%s\"%s\":", i ? "," : "", uid);
      fx_task(b, "team-b", pname, uid, "team-b/other", "other", name);
    }
    gb_buf_addstr(b, "}");
  }
  gb_buf_addstr(b, ",\"NumaInfo\":null,\"UnassignedNumaPods\":null,\"NumaSchedulerInfo\":null,"
                   "\"RevocableZone\":\"\",\"Others\":{},\"OversubscriptionNode\":false,"
                   "\"OfflineJobEvicting\":false,\"OversubscriptionResource\":");
  fx_resource(b, "null");
  gb_buf_addstr(b, ",\"ImageStates\":{},\"Generation\":0,\"BindGeneration\":0}");
}

/* {"task":TaskInfo,"node":NodeInfo} */
static inline char *fx_predicate(const char *task_name, const char *uid, const char *jobset,
                                 const char *node, int node_tasks) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  char job[128];
  snprintf(job, sizeof(job), "team-a/%s", jobset ? jobset : "pg");
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", task_name, uid, job, jobset, NULL);
  gb_buf_addstr(&b, ",\"node\":");
  fx_node(&b, node, node_tasks);
  gb_buf_addstr(&b, "}");
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  return out;
}

/* ---- A fake plan: gang team-a/tj-llama placed on gpu-node-17 (2 pods)
 * and gpu-node-18 (1 pod), domain leaf-1 = {gpu-node-17..19}. */
struct fx_source {
  int events;
  struct gb_sched_vjob last_job; /* as the last enqueueable call saw it */
  int last_verdict;
  char last_reason[256];
  char last_key[320];
};

static inline int fx_in_domain(const char *node) {
  return !strcmp(node, "gpu-node-17") || !strcmp(node, "gpu-node-18") ||
         !strcmp(node, "gpu-node-19");
}

static inline int fx_allowed(void *arg, const char *key, const char *node, char *why, size_t size) {
  if (strcmp(key, "team-a/tj-llama"))
    return -1;
  if (fx_in_domain(node))
    return 1;
  snprintf(why, size, "node %s is not in domain leaf-1 chosen for team-a/tj-llama", node);
  return 0;
}

/* fx_allowed's sentence, worded once for a request's nodes. */
static inline int fx_nodes_allowed(void *arg, const char *key, const char *const *nodes, size_t n,
                                   int8_t *ans, char *head, char *tail, size_t part_size) {
  for (size_t i = 0; i < n; i++)
    ans[i] = strcmp(key, "team-a/tj-llama") ? -1 : fx_in_domain(nodes[i]) ? 1 : 0;
  snprintf(head, part_size, "node ");
  snprintf(tail, part_size, " is not in domain leaf-1 chosen for team-a/tj-llama");
  return 0;
}

static inline int64_t fx_score(void *arg, const char *key, const char *node) {
  if (strcmp(key, "team-a/tj-llama"))
    return 0;
  return !strcmp(node, "gpu-node-17") ? 2 : !strcmp(node, "gpu-node-18") ? 1 : 0;
}

static inline int fx_enqueueable(void *arg, const struct gb_sched_vjob *job, int *verdict,
                                 char *reason, size_t size) {
  struct fx_source *f = arg;
  f->last_job = *job;
  if (!strcmp(job->key, "team-a/tj-big")) {
    *verdict = GB_VC_REJECT;
    snprintf(reason, size, "16 pods of 8 nvidia.com/gpu fit nowhere: largest free block 4");
  } else if (!strcmp(job->key, "team-a/tj-held")) {
    /* The plan's reason for a gang held behind a starving one names it. */
    *verdict = GB_VC_REJECT;
    snprintf(reason, size,
             "held: fits, but team-b/big-run (priority 5) has waited 400 s without fitting and "
             "goes first; team-a/tj-old waits too; needs 8 nvidia.com/gpu");
  } else {
    *verdict = GB_VC_PERMIT;
  }
  return 0;
}

static inline void fx_event(void *arg, const struct gb_sched_vjob *job, int verdict,
                            const char *reason) {
  struct fx_source *f = arg;
  f->events++;
  f->last_verdict = verdict;
  snprintf(f->last_reason, sizeof(f->last_reason), "%s", reason);
  snprintf(f->last_key, sizeof(f->last_key), "%s", job->key);
}

static inline struct gb_sched_source fx_source_of(struct fx_source *f) {
  struct gb_sched_source be = {fx_allowed, fx_score,         fx_enqueueable, fx_event,
                               f,          NULL,             fx_nodes_allowed};
  return be;
}

#endif
