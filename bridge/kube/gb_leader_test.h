/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_leader_test: for tests only.  Functions of gb_leader that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_leader's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_LEADER_TEST_H
#define GB_LEADER_TEST_H

#include "gb_leader.h"

/* Formats unix time t as a Kubernetes MicroTime ("2026-11-22T06:13:00.123456Z",
 * always UTC, six fraction digits) into buf (cap >= GB_LEADER_TIME_MAX).
 * Returns 0 or GC_EINVAL (t out of range or buf too small). */
int gb_leader_format_microtime(double t, char *buf, size_t cap);

/* Reads spec of a Lease object into rec.  Absent fields are empty/0; wrong
 * types or over-long strings are GC_EINVAL (message in d, may be NULL). */
int gb_lease_record_from_json(json_object *lease, struct gb_lease_record *rec,
                              struct gc_diags *d);

/* Stops: ends the loops (interrupting their sleeps; an API request in flight
 * finishes first, bounded by the client's timeout), stops leading
 * (on_stopped runs if on_started ran) and, unless no_release_on_cancel,
 * releases a lease we hold (holderIdentity "", leaseDurationSeconds 1) so a
 * standby acquires it on its next try.  Idempotent. */
void gb_leader_stop(struct gb_leader *le);

/* Runs one iteration of the elector loop without threads at the injected
 * clock's time: one tryAcquireOrRenew, the leading-state change and its
 * callbacks (on the calling thread).  Returns the seconds until the next
 * iteration is due (jitter included).  Must not be used after start. */
double gb_leader_step(struct gb_leader *le);

/* Re-evaluates the deadline at the injected clock's time and runs the
 * callbacks a change calls for (what the notifier thread does).  Tests. */
void gb_leader_poll(struct gb_leader *le);

/* What gb_leader_stop does after the loops end, on the calling thread:
 * stop leading and release.  Tests (no threads started). */
void gb_leader_release_now(struct gb_leader *le);

#endif
