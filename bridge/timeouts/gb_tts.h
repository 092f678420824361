/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tts: what the controller remembers of every PodGroup it watches, for
 * two metrics: its status.phase (gangbridge_podgroups{backend,phase}) and
 * its time-to-schedule (gangbridge_gang_time_to_schedule_seconds).  Entries
 * are keyed by backend label and "namespace/name" and carry the uid, so a
 * PodGroup deleted and created again under the same name starts afresh.
 *
 * Time-to-schedule rule: a PodGroup is observed once, with the value
 * now - creationTimestamp (negative values from clock skew count as 0), at
 * the first update in which its phase is one of its backend's started
 * phases (gc_backend.h: running, or finished when the pods ran and ended
 * between two updates).  It is not observed when that is already its phase
 * in the informer's initial list (when it got scheduled is unknown), nor
 * after it was seen in its backend's failed phase (a gang that failed
 * before running).  One
 * first seen running after the initial list was created while we watched,
 * so its value is known and observed.
 *
 * Thread-safe (one internal mutex); at most `max_tracked` PodGroups are
 * remembered, further ones are refused until some are forgotten.  Depends
 * on libc, pthreads, gb_hash, gc_diag's codes and gc_backend's phases.
 */
#ifndef GB_TTS_H
#define GB_TTS_H

#include <stddef.h>

/* Longest stored uid, phase and backend label (longer ones are cut). */
#define GB_TTS_UID_MAX 63
#define GB_TTS_PHASE_MAX 23
#define GB_TTS_BACKEND_MAX 15
/* Distinct phases counted per backend by gb_tts_phases. */
#define GB_TTS_MAX_PHASES 16

struct gb_tts;

/* One PodGroup event, as the informer reports it (all borrowed). */
struct gb_tts_event {
  const char *backend; /* the backend's name (gc_backend.h); not NULL */
  const char *key;     /* "namespace/name"; not NULL or empty */
  const char *uid;     /* NULL or "" when unknown */
  const char *phase;   /* status.phase; NULL or "" when unset ("None") */
  int initial;         /* 1 while the informer's initial list is delivered */
  double created_unix; /* metadata.creationTimestamp; NaN when unknown */
  double now_unix;     /* the current wall-clock time */
};

/* A phase and how many PodGroups of a backend are in it. */
struct gb_tts_phase_count {
  char phase[GB_TTS_PHASE_MAX + 1];
  double count;
};

/* Creates a tracker; max_tracked 0 means 1,000,000.  Caller frees with
 * gb_tts_free.  NULL when out of memory. */
struct gb_tts *gb_tts_new(size_t max_tracked);

/* Frees the tracker and everything it remembers.  Accepts NULL. */
void gb_tts_free(struct gb_tts *t);

/* Records an add or update.  Returns 1 with *seconds set when this event
 * observes the PodGroup's time-to-schedule, 0 when not, GC_EINVAL for a
 * missing backend or key, GC_ELIMIT when the tracker is full or GC_ENOMEM. */
int gb_tts_update(struct gb_tts *t, const struct gb_tts_event *ev, double *seconds);

/* Forgets a deleted PodGroup (no-op when unknown). */
void gb_tts_forget(struct gb_tts *t, const char *backend, const char *key);

/* Fills out[0..cap) with the phases of backend's PodGroups and their counts
 * (at most GB_TTS_MAX_PHASES distinct phases; PodGroups in further ones are
 * not counted).  Returns the number of entries written. */
size_t gb_tts_phases(struct gb_tts *t, const char *backend, struct gb_tts_phase_count *out,
                     size_t cap);

#endif
