/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_toaction: what gangbridge writes when a gang's timeout passes, when a
 * requeued TrainJob's backoff ends and when a gang's durable facts change,
 * against the API server.  The claim: before acting on a timeout, the
 * leader records gangbridge.io/timed-out-at on gangbridge's own PodGroup
 * with a resourceVersion precondition, so of two replicas (or one before
 * and after a restart) exactly one acts and counts it, and a restarted one
 * finds the decision and finishes it.  The acts: the GangTimeout Warning
 * Event (on the TrainJob and the PodGroup) saying what the gang waited for,
 * and, with timeouts.action requeue, the suspend and resume writes on the
 * TrainJob, which read the TrainJob fresh (GET), apply gb_requeue's rules
 * to what they read (Kueue counts as managing it only when its API is
 * served and a Workload owned by the TrainJob exists) and send a merge
 * patch with that resourceVersion as precondition.  It also writes the
 * gang's other facts (gb_gangfacts) and the RequeueStateIgnored Event.
 * Every write uses the field manager gangbridge-timeouts.  The caller
 * (gb_timeouts) decides when; this module does the I/O.  Reentrant; the
 * client, discovery cache and events are borrowed.
 */
#ifndef GB_TOACTION_H
#define GB_TOACTION_H

#include <stddef.h>

#include "gb_events.h"
#include "gb_gangfacts.h"
#include "gb_kube_client.h"
#include "gb_kube_discovery.h"
#include "gb_requeue.h"
#include "gb_timeouts_options.h"

struct gc_backend;

#define GB_TOA_KEY_MAX 317 /* "namespace/name": 63 + 1 + 253 */
#define GB_TOA_MSG_MAX 256

/* What the tracker knew of a gang when its deadline passed (a copy). */
struct gb_toa_gang {
  char ns[64];
  char name[254];
  const struct gc_backend *backend; /* the PodGroup's; NULL: none was seen */
  /* The backend version whose status object the tracker followed (the
   * upstream Workload API's PodGroup `<name>-gang`), NULL: the backend's
   * group object named `name`.  Facts, claims and Events go on it. */
  const struct gc_backend_version *version;
  char pg_uid[64];
  char tj_uid[64];
  double timeout_s;
  const char *timeout_source; /* static text: where the timeout was read */
  int until_ready;            /* timeouts.until: ready (the wait ends at Ready pods) */
  double wait_start;          /* unix seconds: when this wait began */
  int min_member, pods, gated, scheduled, unschedulable, ready;
  char phase[24];                  /* PodGroup status.phase, "" when none */
  char pg_message[GB_TOA_MSG_MAX]; /* the backend's unschedulable condition message */
  char pod_message[GB_TOA_MSG_MAX]; /* a pod's PodScheduled=False message */
};

struct gb_toa_env {
  struct gb_kube_client *client;       /* NULL: no writes (only the outcome is computed) */
  struct gb_kube_discovery *discovery; /* NULL: Kueue is taken as not served */
  struct gb_events *events;            /* NULL: no Events */
  enum gb_timeout_action action;
  struct gb_backoff backoff;
  double (*rand01)(void); /* jitter source; NULL: random() */
};

enum gb_toa_outcome {
  GB_TOA_REPORTED = 0, /* Event only (action event, or requeue not allowed) */
  GB_TOA_NONE,         /* action none: nothing written */
  GB_TOA_SUSPENDED,    /* requeued: suspended, to be resumed after the backoff */
  GB_TOA_GAVE_UP,      /* suspended for good */
  GB_TOA_RESUMED,
  GB_TOA_NOTHING, /* the fresh read said there was nothing to do */
  GB_TOA_RETRY    /* the API failed or a precondition did not hold: try again */
};

/* The claim of a timeout on gangbridge's PodGroup. */
enum gb_toaction_claim {
  GB_CLAIM_OK = 0,  /* recorded: this replica acts and counts */
  GB_CLAIM_TAKEN,   /* already recorded for this wait (another replica, or before a restart) */
  GB_CLAIM_STARTED, /* the PodGroup says the gang started: nothing to act on */
  GB_CLAIM_FOREIGN, /* not gangbridge's PodGroup: act without a claim */
  GB_CLAIM_GONE,    /* the PodGroup does not exist */
  GB_CLAIM_RETRY    /* the API failed */
};

/* Claims g's timeout of the wait that began at g->wait_start (GET the
 * PodGroup, check it, PATCH timed-out-at = now with its resourceVersion;
 * a 409 re-reads).  With refresh, an existing claim of this wait is written
 * again at now (before finishing a claimed requeue, so its resume time is
 * checked against when the suspend really happened).  *facts gets what the
 * PodGroup said (NAN each when unknown). */
enum gb_toaction_claim gb_toaction_claim(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                         double now, int refresh, struct gb_gangfacts *facts,
                                         char *detail, size_t detail_size);

/* Acts on g's timeout (the caller is the leader and holds the claim, or the
 * PodGroup is not gangbridge's).  now is unix seconds.  With complete, the
 * act of a claim made before (by this or another replica) is finished: a
 * TrainJob already suspended is left silently, and the claim is refreshed
 * right before a suspend.  Returns the outcome; *detail gets a short reason
 * for logs. */
enum gb_toa_outcome gb_toaction_timeout(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                        double now, int complete, char *detail, size_t detail_size);

/* A TrainJob that gangbridge suspended is due for resuming: resume_at is
 * the validated resume time (gb_requeue_validate), which the TrainJob's own
 * annotation cannot push later.  Before the TrainJob, gangbridge's
 * PodGroup (if any) gets resumed-at = now: the next wait starts there. */
enum gb_toa_outcome gb_toaction_resume(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                       double resume_at, double now, char *detail,
                                       size_t detail_size);

/* Adds facts to gangbridge's PodGroup of g (rv: the resourceVersion the
 * caller saw, or NULL to GET it).  A fact the PodGroup already has is not
 * written again.  Returns 0, GC_ENOTFOUND (no such PodGroup, or not
 * gangbridge's) or GC_EIO. */
int gb_toaction_add_facts(const struct gb_toa_env *env, const struct gb_toa_gang *g, const char *rv,
                          const struct gb_gangfacts *add, char *detail, size_t detail_size);

/* Records a RequeueStateIgnored Warning on the TrainJob (once per message). */
void gb_toaction_state_ignored(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                               const char *why);

#endif
