/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_leader: leader election on a coordination.k8s.io/v1 Lease with
 * client-go's leaderelection semantics (resourcelock "leases").  The elector
 * owns the Lease record (spec.holderIdentity, leaseDurationSeconds,
 * acquireTime, renewTime as MicroTime, leaseTransitions), the acquire loop
 * (try every RetryPeriod with client-go's jitter, take the lease when it is
 * absent, released, or not seen to change for LeaseDuration on OUR clock:
 * remote timestamps are never compared with local time), the renew loop
 * (update carrying the resourceVersion; a 409 re-reads; give up when no
 * renewal succeeded within RenewDeadline), ReleaseOnCancel (a clean stop
 * clears holderIdentity so a standby takes over at once) and the
 * `gangbridge_leader` gauge and transitions counter.
 *
 * "Leading" is a lock-free predicate: gb_leader_is_leader() is true only
 * while the elector holds the lease AND the local monotonic clock is before
 * (time the last successful renewal was sent + RenewDeadline).  So the moment
 * the deadline passes, every reader sees "not leader", even when the elector
 * thread is still blocked in a slow API request.  Callers check it before
 * every write.  The on_started/on_stopped callbacks run on the elector's
 * notifier thread, strictly alternating (started, stopped, started, ...),
 * on_stopped at the deadline itself when renewals stall.
 *
 * Thread-safety: gb_leader_is_leader, gb_leader_is_leader_fn,
 * gb_leader_identity and gb_leader_snapshot may be called from any thread at
 * any time between new and free.  new/start/stop/free are called from one
 * controlling thread.  Callbacks must not call gb_leader_stop/free.
 * gb_leader_step (tests) must not be mixed with start.
 */
#ifndef GB_LEADER_H
#define GB_LEADER_H

#include <stddef.h>
#include <stdint.h>

#include "gb_kube_client.h"
#include "gb_metrics.h"
#include "gc_diag.h"

#define GB_LEADER_IDENTITY_MAX 256 /* bytes with the NUL */
#define GB_LEADER_TIME_MAX 40      /* a MicroTime string with the NUL */

/* client-go's defaults. */
#define GB_LEADER_DEFAULT_LEASE_S 15.0
#define GB_LEADER_DEFAULT_RENEW_S 10.0
#define GB_LEADER_DEFAULT_RETRY_S 2.0
/* wait.JitterUntil factor client-go's acquire loop uses. */
#define GB_LEADER_JITTER 1.2

/* ---- the lease record ----------------------------------------------------- */

/* client-go's LeaderElectionRecord as stored in a Lease spec. */
struct gb_lease_record {
  char holder[GB_LEADER_IDENTITY_MAX];     /* "" : released / nobody */
  long long duration_s;                    /* leaseDurationSeconds */
  char acquire_time[GB_LEADER_TIME_MAX];   /* MicroTime or "" */
  char renew_time[GB_LEADER_TIME_MAX];     /* MicroTime or "" */
  long long transitions;                   /* leaseTransitions */
};

/* Parses RFC 3339 with an optional fraction (up to 9 digits) and "Z" or a
 * +hh:mm/-hh:mm offset into unix seconds.  Returns 0 or GC_EINVAL.  Only used
 * to validate and report; timing never depends on remote times. */
int gb_leader_parse_time(const char *s, double *out);

/* ---- storage and clock (injectable for tests) ----------------------------- */

/* Where the lease lives.  Each function returns 0 or a GC_E* code (GC_EIO
 * for API failures, with a message in d); a 409 Conflict / AlreadyExists is
 * GC_EIO with *conflict set to 1, and the elector re-reads the lease at once.
 * timeout_s (> 0) is how long the request may take: the elector gives each
 * request what is left of its attempt (see gb_leader_new), and a request
 * that takes longer must fail as a timeout.  `rv` buffers hold the
 * resourceVersion (opaque; compared for equality only) and are
 * GB_LEADER_RV_MAX bytes. */
#define GB_LEADER_RV_MAX 128
struct gb_leader_store {
  /* Reads the lease.  GC_ENOTFOUND when it does not exist. */
  int (*get)(void *ctx, double timeout_s, struct gb_lease_record *rec, char *rv,
             struct gc_diags *d);
  /* Creates it; an AlreadyExists answer sets *conflict. */
  int (*create)(void *ctx, double timeout_s, const struct gb_lease_record *rec, char *rv,
                int *conflict, struct gc_diags *d);
  /* Replaces the spec if the lease is still at resourceVersion rv (updated in
   * place on success); a 409 sets *conflict. */
  int (*update)(void *ctx, double timeout_s, const struct gb_lease_record *rec, char *rv,
                int *conflict, struct gc_diags *d);
  void *ctx;
};

/* Clock: monotonic seconds (timing) and wall seconds (MicroTime stamps).
 * NULL functions use CLOCK_MONOTONIC / CLOCK_REALTIME. */
struct gb_leader_clock {
  double (*mono)(void *ctx);
  double (*wall)(void *ctx);
  void *ctx;
};

/* ---- the elector ------------------------------------------------------------ */

struct gb_leader_callbacks {
  /* This replica became the leader (gb_leader_is_leader is already true). */
  void (*on_started)(void *arg);
  /* This replica stopped leading (gb_leader_is_leader is already false). */
  void (*on_stopped)(void *arg);
  /* The observed holder changed (identity "" when released).  Optional;
   * runs on the elector thread. */
  void (*on_new_leader)(void *arg, const char *identity);
  void *arg;
};

struct gb_leader_config {
  const char *lease_namespace;  /* required */
  const char *lease_name;       /* required */
  const char *identity;         /* NULL: hostname + "_" + random UUID */
  double lease_duration_s;      /* 0: 15 */
  double renew_deadline_s;      /* 0: 10 */
  double retry_period_s;        /* 0: 2 */
  int no_release_on_cancel;     /* 0 (default): release on clean stop */
  /* Metrics hooks (optional, borrowed): the gangbridge_leader gauge (no
   * labels), the gangbridge_leader_transitions_total counter (no labels;
   * gb_leader_metrics_register makes one) and gangbridge_errors_total
   * ({component="leader", reason}). */
  struct gb_metric *leader_gauge;
  struct gb_metric *transitions;
  struct gb_metric *errors;
  /* Tests: a store other than the API server (client may then be NULL) and
   * a fake clock.  NULL: the Lease through `client`, the system clocks. */
  const struct gb_leader_store *store;
  const struct gb_leader_clock *clock;
};

struct gb_leader;

/* Creates a stopped elector.  cfg is copied; client (borrowed, must outlive
 * the elector) performs the Lease requests: give the elector its own client
 * without retries.  The elector times each request out itself, as client-go
 * bounds its loops: an acquire attempt may take up to RenewDeadline, a
 * renewal what is left of the renew window (never past the deadline), so an
 * API slower than RetryPeriod but faster than RenewDeadline still lets one
 * replica hold the lease.
 * Requires lease_duration > renew_deadline > retry_period * 1.2 (client-go's
 * checks).  Returns 0, GC_EINVAL (message in d) or GC_ENOMEM. */
int gb_leader_new(const struct gb_leader_config *cfg, struct gb_kube_client *client,
                  const struct gb_leader_callbacks *cb, struct gb_leader **out,
                  struct gc_diags *d);

/* Starts the elector and notifier threads.  Returns 0, GC_EUSAGE (already
 * started) or GC_ENOMEM. */
int gb_leader_start(struct gb_leader *le);

/* Stops if needed and frees.  NULL ok. */
void gb_leader_free(struct gb_leader *le);

/* 1 while this replica leads (see above), else 0.  Lock-free; NULL gives 0. */
int gb_leader_is_leader(const struct gb_leader *le);

/* The same with the `int (*)(void *)` shape gb_reconcile/gb_controller take. */
int gb_leader_is_leader_fn(void *le);

/* This elector's identity (borrowed until free). */
const char *gb_leader_identity(const struct gb_leader *le);

struct gb_leader_status {
  int leading;                          /* gb_leader_is_leader */
  int alive;                            /* elector thread running */
  char holder[GB_LEADER_IDENTITY_MAX];  /* last observed holder */
  long long transitions;                /* last observed leaseTransitions */
  uint64_t terms;                       /* times this replica started leading */
  uint64_t attempts, failures;          /* tryAcquireOrRenew calls / failed ones */
};

/* Copies the current state (takes a short lock). */
void gb_leader_snapshot(struct gb_leader *le, struct gb_leader_status *out);

/* Registers gangbridge_leader_transitions_total (counter, no labels: times
 * this replica started leading) in reg.  Returns 0 or a GC_E* code. */
int gb_leader_metrics_register(struct gb_metrics *reg, struct gb_metric **out,
                               struct gc_diags *d);

/* ---- deterministic stepping (unit tests) ------------------------------------ */

#endif
