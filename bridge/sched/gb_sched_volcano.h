/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_volcano: the JSON of Volcano's `extender` scheduler plugin
 * (pkg/scheduler/plugins/extender, pkg/scheduler/api).  It owns decoding the
 * request bodies of the verbs gangbridge serves into the few fields it uses
 * (TaskInfo: UID, Job, Name, Namespace, NodeName, Status and the Pod's
 * identity; NodeInfo: Name; JobInfo: UID, Name, Namespace, Queue,
 * MinAvailable, the task count, NetworkTopology and the PodGroup's
 * managed-by label) and encoding the responses exactly as the plugin's Go
 * structs decode them.  Volcano's structs carry no json tags, so keys are Go
 * field names, matched case-insensitively as Go does; unknown fields are
 * skipped (validated, never kept) and null reads as empty.
 *
 * The plan key of a task is "ns/<JobSet name>" from the pod's
 * jobset.sigs.k8s.io/jobset-name label, else the task's Job ("ns/<PodGroup>",
 * which for gangbridge's PodGroups is the TrainJob's, hence the JobSet's,
 * name).  The plan key of a job is "Namespace/Name" of its PodGroup.
 */
#ifndef GB_SCHED_VOLCANO_H
#define GB_SCHED_VOLCANO_H

#include <stddef.h>
#include <stdint.h>

#include "gb_buf.h"
#include "gb_sched_kube.h"

/* Predicate codes (volcano pkg/scheduler/api/types.go). */
#define GB_VC_SUCCESS 0
#define GB_VC_ERROR 1
#define GB_VC_UNSCHEDULABLE 2
#define GB_VC_UNRESOLVABLE 3
/* jobEnqueueable verdicts (plugins/util/util.go). */
#define GB_VC_PERMIT 1
#define GB_VC_ABSTAIN 0
#define GB_VC_REJECT (-1)

/* A TaskInfo, decoded. */
struct gb_sched_vtask {
  char uid[GB_SCHED_UID_MAX + 1];
  char job[GB_SCHED_KEY_MAX + 1];
  char name[GB_SCHED_NAME_MAX + 1];
  char ns[GB_SCHED_NS_MAX + 1];
  char node[GB_SCHED_NAME_MAX + 1]; /* NodeName: "" while pending */
  int64_t status;                   /* TaskStatus bits */
  struct gb_sched_pod pod;
  char key[GB_SCHED_KEY_MAX + 1]; /* the plan key, "" when none */
};

#define GB_SCHED_MAX_SHAPES 64  /* distinct task requests in one job (TP_MAX_PODSETS) */
#define GB_SCHED_MAX_SCALARS 16 /* scalar resources in one request */
#define GB_SCHED_RES_NAME_MAX 63

/* One request shape of a job's tasks: InitResreq (the pod's effective
 * request, init containers and overhead included), Volcano's units. */
struct gb_sched_vshape {
  int64_t count;            /* tasks with this request */
  double milli_cpu, memory; /* millicores, bytes */
  size_t n_scalar;
  char scalar[GB_SCHED_MAX_SCALARS][GB_SCHED_RES_NAME_MAX + 1];
  double scalar_milli[GB_SCHED_MAX_SCALARS]; /* ScalarResources: milli-units; "pods" left out */
};

/* A JobInfo, decoded. */
struct gb_sched_vjob {
  char uid[GB_SCHED_KEY_MAX + 1];
  char name[GB_SCHED_NAME_MAX + 1];
  char ns[GB_SCHED_NS_MAX + 1];
  char queue[GB_SCHED_NAME_MAX + 1];
  int64_t min_available;
  size_t n_tasks;
  int managed;            /* the PodGroup carries app.kubernetes.io/managed-by=gangbridge */
  char topology_mode[16]; /* NetworkTopology.mode, "" when none */
  int64_t highest_tier;   /* NetworkTopology.highestTierAllowed, 0 when none */
  char highest_tier_name[GB_SCHED_NAME_MAX + 1]; /* NetworkTopology.highestTierName */
  int64_t priority;                              /* Priority */
  int64_t created_ms;                            /* CreationTimestamp (0 when null or unreadable) */
  char first_task[GB_SCHED_NAME_MAX + 1];        /* Name of the first task (for its tolerations) */
  struct gb_sched_vshape shapes[GB_SCHED_MAX_SHAPES]; /* the Tasks, grouped by request */
  size_t n_shapes;
  char key[GB_SCHED_KEY_MAX + 1];
};

/* Node names of a request; names point into block (which grows with the
 * names, never to the body's size).  Owned by the struct. */
struct gb_sched_vnodes {
  char **names;
  size_t n, cap;
  char *block;
  size_t used, block_size;
  size_t *off; /* while decoding: each name's offset in block */
};
void gb_sched_vnodes_free(struct gb_sched_vnodes *v);

/* Request decoders over a whole body (borrowed).  Each returns 0, GC_EINVAL
 * or GC_ELIMIT with the reason in msg ("body:L:C: field: ..."), or
 * GC_ENOMEM.  A missing "task" or "node" is an error; a missing "job" too. */
int gb_sched_volcano_predicate_decode(const char *body, size_t len, struct gb_sched_vtask *t,
                                      char *node, size_t node_size, char *msg, size_t msg_size);
/* nodes is filled (free with gb_sched_vnodes_free even after a failure). */
int gb_sched_volcano_prioritize_decode(const char *body, size_t len, struct gb_sched_vtask *t,
                                       struct gb_sched_vnodes *nodes, char *msg, size_t msg_size);
/* {"task":TaskInfo}: allocateFunc and deallocateFunc. */
int gb_sched_volcano_task_decode(const char *body, size_t len, struct gb_sched_vtask *t, char *msg,
                                 size_t msg_size);
/* {"job":JobInfo}: jobEnqueueable. */
int gb_sched_volcano_job_decode(const char *body, size_t len, struct gb_sched_vjob *j, char *msg,
                                size_t msg_size);

/* Response encoders (append to out; return 0 or out's error). */
/* {"status":"<message>","code":N}; message "" with code 0 is a pass. */
int gb_sched_volcano_predicate_encode(int code, const char *message, struct gb_buf *out);
/* {"nodeScore":{name:score,...},"errorMessage":""} (nodeScore never null). */
int gb_sched_volcano_prioritize_encode(const struct gb_sched_vnodes *nodes, const int64_t *score,
                                       struct gb_buf *out);
/* {"errorMessage":"<message>"}: allocateFunc/deallocateFunc. */
int gb_sched_volcano_error_encode(const char *message, struct gb_buf *out);
/* {"status":N}: jobEnqueueable. */
int gb_sched_volcano_enqueue_encode(int verdict, struct gb_buf *out);

#endif
