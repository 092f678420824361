/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched: the scheduler endpoints, one HTTP(S) server on its own port
 * serving Volcano's `extender` plugin under <volcano prefix>/<verb>
 * (onSessionOpen, onSessionClose, predicate, prioritize, allocateFunc,
 * deallocateFunc, jobEnqueueable) and kube-scheduler's HTTP extender under
 * <kube prefix>/<verb> (filter, prioritize).  It owns the routes and their
 * body caps, the answers (exact JSON shapes of both protocols), the session
 * overlay (the tasks Volcano allocated in the current session, per gang and
 * node, reset at onSessionOpen/onSessionClose) and the per-verb metrics.
 * Decisions come from a decision source (struct gb_sched_source): the wiring gives
 * one reading the shared placement plan (gb_sched_plan.h), tests give
 * fakes.  The rule: a task or pod of a gang whose plan is PLACED or
 * RELEASED may only go to nodes of the gang's chosen domain; everything the
 * source has no opinion on passes at once; jobEnqueueable answers Permit,
 * Reject or Abstain for gangbridge's own PodGroups and Abstain for others.
 * A malformed body gets 400 with the place of the problem (Volcano and
 * kube-scheduler then apply their `ignorable` setting).  With a leadership
 * predicate (several replicas), only the leader answers from its plan: a
 * standby answers 503 to every verb, so two replicas never give two
 * answers for one gang (the leader-only Service normally keeps the
 * scheduler away from a standby; the 503 covers a stale label).  No handler waits on
 * anything but the source's short lock.  onSessionOpen's body (the whole
 * cluster, every second) is read and dropped as it arrives, never held.
 *
 * Thread-safety: handlers run concurrently (Volcano sends up to 16
 * predicates at once); the overlay has its own mutex; source functions
 * must be thread-safe.
 */
#ifndef GB_SCHED_H
#define GB_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "gb_http.h"
#include "gb_sched_volcano.h"
#include "gc_diag.h"

struct gb_metrics;

/* The decision source: where the endpoint's answers come from (not a scheduler
 * backend, which is a gc_backend descriptor).  Every function may be NULL (no
 * opinion).  All strings are borrowed for the call. */
struct gb_sched_source {
  /* 1: node is in the chosen domain of gang `key`; 0: it is not (a sentence
   * in why); -1: no opinion. */
  int (*node_allowed)(void *arg, const char *key, const char *node, char *why, size_t why_size);
  /* Pods the plan puts on node for `key` (0 when none). */
  int64_t (*node_score)(void *arg, const char *key, const char *node);
  /* jobEnqueueable for a gangbridge PodGroup: *verdict is GB_VC_PERMIT,
   * GB_VC_REJECT (reason filled) or GB_VC_ABSTAIN.  Returns 0 or a GC_E*
   * code (answered Abstain). */
  int (*enqueueable)(void *arg, const struct gb_sched_vjob *job, int *verdict, char *reason,
                     size_t reason_size);
  /* Called after every Permit and Reject (reason set for a Reject), for
   * the PodGroup Event; must not block (queue the write). */
  void (*job_event)(void *arg, const struct gb_sched_vjob *job, int verdict, const char *reason);
  void *arg;
  void *event_arg; /* job_event's argument (NULL: arg) */
  /* Optional (NULL: node_allowed per node): node_allowed for the n nodes
   * of one request at once.  ans[i] is what node_allowed answers for
   * nodes[i]; a refused node's sentence is head + its name + tail (each
   * NUL-terminated in part_size bytes), so the reason is worded once per
   * request, not once per node.  Returns 0, or a GC_E* code: then
   * node_allowed is asked per node. */
  int (*nodes_allowed)(void *arg, const char *key, const char *const *nodes, size_t n,
                       int8_t *ans, char *head, char *tail, size_t part_size);
};

struct gb_sched_config {
  const char *volcano_prefix; /* default "/volcano" */
  const char *kube_prefix;    /* default "/kube" */
  size_t max_body;            /* predicate, allocate, deallocate; default 16 MiB */
  size_t max_list_body;       /* Volcano prioritize, jobEnqueueable, kube filter and prioritize
                               * (every candidate Node); default 256 MiB */
  size_t max_session_body;    /* onSessionOpen, read and dropped; default 4 GiB */
  size_t max_session_tasks;   /* overlay entries; default 262144 */
  struct gb_metrics *metrics; /* optional: the gangbridge_sched_* families are registered */
  /* Optional: 1 while this replica leads and may answer.  When set, 0 (a
   * standby) answers every verb 503 GB_SCHED_STANDBY_MSG and a negative
   * value (a new leader still reading the last one's decisions back) 503
   * GB_SCHED_CATCHING_UP_MSG, without reading the body's JSON. */
  int (*is_leader)(void *ctx);
  void *leader_ctx;
};

/* The body of a standby's 503. */
#define GB_SCHED_STANDBY_MSG                                                                       \
  "gangbridge: this replica is a standby, not the leader; the scheduler endpoints answer "         \
  "only on the leader (point the scheduler at the gangbridge-sched Service, which selects "        \
  "the pod labelled gangbridge.io/leader=true)\n"
/* The body of a new leader's 503 before its plan holds the last leader's
 * decisions. */
#define GB_SCHED_CATCHING_UP_MSG                                                                   \
  "gangbridge: this replica has just become the leader and is reading the placement decisions "    \
  "back; it answers in a moment\n"

/* The extender protocols, as a backend's descriptor names the one its
 * scheduler calls (gc_backend.extender): Volcano's `extender` plugin and
 * kube-scheduler's HTTP extender.  They are also the metrics' protocol
 * label. */
#define GB_SCHED_EXTENDER_VOLCANO "volcano"
#define GB_SCHED_EXTENDER_KUBE "kube"

/* The verbs, as the last path element. */
#define GB_SCHED_VERB_SESSION_OPEN "onSessionOpen"
#define GB_SCHED_VERB_SESSION_CLOSE "onSessionClose"
#define GB_SCHED_VERB_PREDICATE "predicate"
#define GB_SCHED_VERB_PRIORITIZE "prioritize"
#define GB_SCHED_VERB_ALLOCATE "allocateFunc"
#define GB_SCHED_VERB_DEALLOCATE "deallocateFunc"
#define GB_SCHED_VERB_ENQUEUEABLE "jobEnqueueable"
#define GB_SCHED_VERB_FILTER "filter"

/* The body buffer a connection keeps between requests (a predicate with a
 * node's pods is tens of KB). */
#define GB_SCHED_KEEP_BODY (256u << 10)

struct gb_sched;

/* Creates the endpoint (copies cfg and be; registers the metrics).
 * Returns 0, GC_EINVAL (a prefix not starting with '/' or too long),
 * GC_EUSAGE (metrics already registered) or GC_ENOMEM; messages to d. */
int gb_sched_new(const struct gb_sched_config *cfg, const struct gb_sched_source *be,
                 struct gb_sched **out, struct gc_diags *d);
/* Frees the endpoint (stop its server first).  Accepts NULL. */
void gb_sched_free(struct gb_sched *s);

/* Starts the endpoint's own server with http (name "sched" when unset; the
 * body total is raised to hold one list body; connections keep body
 * buffers up to GB_SCHED_KEEP_BODY unless http sets keep_body).  Returns gb_http_start's
 * result. */
int gb_sched_start(struct gb_sched *s, const struct gb_http_config *http, struct gc_diags *d);
unsigned gb_sched_port(const struct gb_sched *s);

struct gb_sched_stats {
  uint64_t sessions;     /* onSessionOpen/Close seen */
  size_t overlay_tasks;  /* tasks allocated in the current session */
  uint64_t overlay_full; /* allocations not recorded: the overlay was full */
};

#endif
