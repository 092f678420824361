/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts_int: what the tracker's two halves share and nothing else
 * includes: the gang record and the tracker (gb_timeouts.c follows the
 * informers and arms deadlines; gb_timeouts_fire.c runs them, owns the
 * timer thread, the lifecycle and the metrics).  Every field is guarded by
 * the tracker's mutex.
 */
#ifndef GB_TIMEOUTS_INT_H
#define GB_TIMEOUTS_INT_H

#include <pthread.h>

#include "gb_deadline.h"
#include "gb_gangfacts.h"
#include "gb_hash.h"
#include "gb_qlabels.h"
#include "gb_timeouts.h"
#include "gb_toaction.h"
#include "gb_tts.h"
#include "gc_backend.h"

/* Sub-groups whose pods a gang record counts apart (gang.sub). */
#define GB_TIMEOUTS_SUBGROUPS 8

enum dl_kind {
  DL_TIMEOUT = 1, /* the wait's deadline */
  DL_RESUME,      /* the end of a requeue backoff */
  DL_WRITE,       /* facts to record on the PodGroup, a note to report */
  DL_COMPLETE     /* a timeout claimed before whose requeue is not done */
};

/* Facts and notes waiting for the leader to write them. */
#define W_STARTED 1u
#define W_READY 2u
#define W_RESUMED 4u
#define W_NOTE 8u

struct gang {
  struct gb_hnode node; /* first member: the table's link and hash */
  struct gb_deadline_item dl;
  enum dl_kind dl_kind;
  /* the PodGroup (labels stay when it goes: a resume is still counted under them) */
  /* be: the PodGroup's backend as its gc_backend_index (kept when it goes; an
   * int, not a pointer: a gang record stays the size it was), -1: none yet */
  int has_pg, be, pg_ours, labels_known, queue_counted, pg_sched_cond;
  /* ver: the backend version whose status object was seen, as its index in
   * the backend's versions (-1: the group object of a one-version backend) */
  int ver;
  char uid[64], rv[32], queue[64], phase[24], pg_msg[GB_TOA_MSG_MAX];
  int min_member;
  double created, timeout_s; /* timeout_s NAN: none */
  const char *timeout_source;
  struct gb_gangfacts facts; /* the durable facts, as last read or written */
  /* the TrainJob */
  char tj_uid[64];
  int tj_suspended, tj_ours, tj_attempt;
  double tj_resume_at, tj_resumed_cond, suspended_seen, resumed_seen;
  /* the pods bound to the group */
  int pods, gated, scheduled, unschedulable, ready;
  /* Per sub-group (a backend with GC_BCAP_ELASTIC_MEMBERS: KAI binds every
   * pod of the TrainJob, initializers too), the scheduled and Ready pods,
   * by the hash of the pod's sub-group name; `uncounted` marks those the
   * group object says need no pods (minMember 0): the quorum leaves them
   * out.  Sub-groups past GB_TIMEOUTS_SUBGROUPS are counted, as before. */
  struct gang_subgroup {
    uint32_t hash;
    int32_t scheduled, ready;
  } sub[GB_TIMEOUTS_SUBGROUPS];
  uint8_t n_sub, uncounted; /* uncounted: bit i for sub[i] */
  double first_pod, last_pod, last_sched, last_ready, gated_since, ungated_at;
  char pod_msg[GB_TOA_MSG_MAX];
  /* progress */
  int started, ready_reached, observed, observed_ready;
  unsigned pending;                                 /* W_* */
  double write_started, write_ready, write_resumed; /* the values to write */
  char *note;           /* RequeueStateIgnored text to report (heap), or NULL */
  uint64_t noted;       /* hash of the last note reported */
  double fired_for;     /* wait start whose timeout was acted on (no claim); NAN: none */
  double completed_for; /* wait start whose claimed act is done here; NAN: none */
  double not_before;    /* a failed write or act is tried again from then on */
  double resume_idle;   /* resume time at which nothing was to be done; NAN: none */
  char key[];
};

/* The backend of g's PodGroup, NULL when none was seen. */
static inline const struct gc_backend *gb_timeouts_gang_backend(const struct gang *g) {
  return g->be < 0 ? NULL : gc_backend_at((size_t)g->be);
}

/* The backend version whose status object g follows, or NULL. */
static inline const struct gc_backend_version *gb_timeouts_gang_version(const struct gang *g) {
  const struct gc_backend *b = gb_timeouts_gang_backend(g);
  return b && g->ver >= 0 && (size_t)g->ver < b->n_versions ? &b->versions[g->ver] : NULL;
}

struct gb_timeouts {
  struct gb_timeouts_opts o;
  struct gb_toa_env env;
  struct gb_events *events;
  struct gb_kube_discovery *discovery;
  struct gb_tts *tts;
  pthread_mutex_t mu; /* guards everything below; with cond */
  pthread_cond_t cond;
  struct gb_htab gangs;
  struct gb_deadlines heap;
  size_t max_gangs;
  struct gb_qlabels queues;
  struct gb_timeouts_stats st;
  int stop, kicked, started;
  pthread_t thread;
  struct gb_metric *assembly, *gated, *fired, *requeues, *to_ready;
  /* The handler arguments of the PodGroup informers: one per backend. */
  struct gb_timeouts_pg_arg {
    struct gb_timeouts *t;
    const struct gc_backend *backend;
  } pg_arg[GC_BACKEND_MAX];
  /* What the tracker reads of a pod: the fixed paths and every backend's
   * group keys (built at register). */
  struct gb_keep pod_keep[8 + 2 * GC_BACKEND_MAX * GC_BACKEND_MAX_JOINS];
  size_t n_pod_keep;
  /* The first steps of the backends' pod-spec-field joins, which pod_keep
   * points into. */
  char keep_step[GC_BACKEND_MAX * GC_BACKEND_MAX_JOINS][64];
};

/* gb_timeouts.c (mu held, except wall_now) */
struct gang *gb_timeouts_find(struct gb_timeouts *t, const char *key);
/* Puts g's one deadline where its state says, or takes it out. */
void gb_timeouts_arm(struct gb_timeouts *t, struct gang *g, double now);
/* When g's current wait began: the PodGroup's creation, or a later resume. */
double gb_timeouts_wait_start(const struct gang *g);
/* backend, queue and size class labels of g (from its PodGroup; "unknown"
 * each when none was ever seen). */
void gb_timeouts_labels(struct gb_timeouts *t, const struct gang *g, const char *out[3]);
/* The validated resume time of a TrainJob gangbridge holds suspended (a
 * RequeueStateIgnored note is queued when its annotations were not
 * believed), or NAN when it is not to be resumed. */
double gb_timeouts_resume_time(struct gb_timeouts *t, struct gang *g, double now);
double gb_timeouts_wall_now(void);
/* Registers the tracker's handlers (TrainJobs, pods, both PodGroup APIs)
 * on f with the controller's selection.  Returns 0 or a GC_E* code (d). */
int gb_timeouts_register(struct gb_timeouts *t, struct gb_informers *f, struct gc_diags *d);

#endif
