/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_toaction: what gangbridge does when a gang's timeout passes and when a
 * requeued TrainJob's backoff ends, against the API server: the GangTimeout
 * Warning Event (on the TrainJob and the PodGroup) saying what the gang
 * waited for, and, with timeouts.action requeue, the suspend and resume
 * writes.  Those writes read the TrainJob fresh (GET), apply gb_requeue's
 * rules to what they read, and send a merge patch with that
 * resourceVersion as precondition: a 409 means another writer (a former
 * leader, the user) got there first and the caller retries from a fresh
 * read, so a restart or a leader change neither loses nor repeats a
 * requeue.  The caller (gb_timeouts) decides when; this module does the
 * I/O.  Reentrant; the client and events are borrowed.
 */
#ifndef GB_TOACTION_H
#define GB_TOACTION_H

#include <stddef.h>

#include "gb_config.h"
#include "gb_events.h"
#include "gb_kube_client.h"
#include "gb_requeue.h"

#define GB_TOA_KEY_MAX 317 /* "namespace/name": 63 + 1 + 253 */
#define GB_TOA_MSG_MAX 256

/* What the tracker knew of a gang when its deadline passed (a copy). */
struct gb_toa_gang {
  char ns[64];
  char name[254];
  char backend[16]; /* "volcano" or "coscheduling" */
  char pg_uid[64];
  char tj_uid[64];
  double timeout_s;
  const char *timeout_source; /* static text: where the timeout was read */
  int min_member, pods, gated, scheduled, unschedulable;
  char phase[24];                  /* PodGroup status.phase, "" when none */
  char pg_message[GB_TOA_MSG_MAX]; /* Volcano's Unschedulable condition message */
  char pod_message[GB_TOA_MSG_MAX]; /* a pod's PodScheduled=False message */
};

struct gb_toa_env {
  struct gb_kube_client *client; /* NULL: no writes (only the outcome is computed) */
  struct gb_events *events;      /* NULL: no Events */
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

/* Writes the "what it waited for" sentence of g into buf (always terminated). */
void gb_toa_describe(const struct gb_toa_gang *g, char *buf, size_t cap);

/* The gang's deadline passed (the caller is the leader).  now is unix
 * seconds.  Returns the outcome; *detail gets a short reason for logs. */
enum gb_toa_outcome gb_toa_timeout(const struct gb_toa_env *env, const struct gb_toa_gang *g,
                                   double now, char *detail, size_t detail_size);

/* A TrainJob that gangbridge suspended is due for resuming. */
enum gb_toa_outcome gb_toa_resume(const struct gb_toa_env *env, const char *ns,
                                  const char *name, double now, char *detail,
                                  size_t detail_size);

#endif
