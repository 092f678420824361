/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts_test: for tests only.  Functions of gb_timeouts that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_timeouts's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_TIMEOUTS_TEST_H
#define GB_TIMEOUTS_TEST_H

#include "gb_timeouts.h"

/* One change of kind (ch borrowed; ch->initial: from the informer's first
 * list; backend: the PodGroup's, a table entry, NULL for the other kinds),
 * as the tracker's informer handlers deliver it; tests and benchmarks call
 * it directly. */
void gb_timeouts_observe(struct gb_timeouts *t, enum gb_observe_kind kind,
                         const struct gc_backend *backend, const struct gb_informer_change *ch);

/* Runs every deadline due at `now` (unix seconds) on the calling thread, as
 * the timer thread does; for tests and benchmarks.  Returns how many ran. */
size_t gb_timeouts_run_due(struct gb_timeouts *t, double now);

/* The earliest deadline (unix seconds), or 0 when none is armed. */
double gb_timeouts_next(struct gb_timeouts *t);

void gb_timeouts_get_stats(struct gb_timeouts *t, struct gb_timeouts_stats *out);

#endif
