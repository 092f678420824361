/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_events: Kubernetes Events (core v1) about the objects the controller
 * reconciles, de-duplicated the way client-go's event correlator does it: an
 * event with the same object, type, reason and message as an earlier one is
 * not created again; the earlier Event's `count` and `lastTimestamp` are
 * patched instead (a new Event is created if the old one has expired).  To
 * keep a hot loop from flooding the API server, a repeat within
 * `min_interval_s` of the last write is only counted locally and written
 * with the next write.  The cache of recent events is a bounded LRU.  An
 * Event's name is derived from its de-duplication key, so after a restart or
 * a leader change the first emit finds the Event already recorded (409) and
 * adopts it (reading its count) instead of creating a duplicate.
 *
 * Thread-safety: gb_events_emit may be called from any thread; the same
 * object should be reported from one thread at a time (the work queue
 * guarantees it), otherwise counts may be written out of order.
 */
#ifndef GB_EVENTS_H
#define GB_EVENTS_H

#include <stddef.h>

#include "gb_kube_client.h"

#define GB_EVENT_MESSAGE_MAX 1024 /* longer messages are cut (as the API server does) */
#define GB_EVENT_NORMAL "Normal"
#define GB_EVENT_WARNING "Warning"

/* The object an event is about.  Strings are borrowed for the call. */
struct gb_event_ref {
  const char *api_version; /* "trainer.kubeflow.org/v1alpha1" */
  const char *kind;        /* "TrainJob" */
  const char *ns;          /* NULL or "" for a cluster-scoped object: the Event goes to
                              namespace default, as client-go's recorder puts it */
  const char *name;
  const char *uid; /* may be NULL */
};

struct gb_events_opts {
  const char *component; /* source.component; default "gangbridge" */
  const char *instance;  /* source.host / reportingInstance; default the host name */
  double min_interval_s; /* default 0: every repeat is written; < 0 likewise */
  size_t max_cache;      /* events remembered; default 4096 */
};

struct gb_events_stats {
  unsigned long long created;  /* Events POSTed */
  unsigned long long patched;  /* count bumps PATCHed */
  unsigned long long deferred; /* repeats only counted locally */
  unsigned long long failed;   /* API calls that failed */
  unsigned long long adopted;  /* first emits that met an Event recorded before a restart */
};

struct gb_events;

/* client is borrowed.  opts may be NULL.  NULL on OOM. */
struct gb_events *gb_events_new(struct gb_kube_client *client, const struct gb_events_opts *opts);
void gb_events_free(struct gb_events *ev);

/* Records an event (type GB_EVENT_NORMAL or GB_EVENT_WARNING; reason a
 * CamelCase word).  Returns 0 (written or counted), GC_EINVAL (missing
 * object fields), GC_EIO (the API call failed; e says why) or GC_ENOMEM. */
int gb_events_emit(struct gb_events *ev, const struct gb_event_ref *obj, const char *type,
                   const char *reason, const char *message, struct gb_kube_error *e);

/* As gb_events_emit; with `once`, an Event already recorded (in this process
 * or, found by its name, before a restart) is left as it is instead of being
 * counted again: for Events that describe a state, seen on every reconcile. */
int gb_events_record(struct gb_events *ev, const struct gb_event_ref *obj, const char *type,
                     const char *reason, const char *message, int once,
                     struct gb_kube_error *e);

#endif
