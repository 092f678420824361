/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_workqueue_test: for tests only.  Functions of gb_workqueue that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_workqueue's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_WORKQUEUE_TEST_H
#define GB_WORKQUEUE_TEST_H

#include "gb_workqueue.h"

/* Queues key after delay_s seconds (<= 0: now). */
int gb_workqueue_add_after(struct gb_workqueue *q, const char *key, double delay_s);

/* The delay the next add_rate_limited of a key with `failures` previous
 * failures gets from the per-key backoff alone (for tests and docs). */
double gb_workqueue_backoff(const struct gb_workqueue_opts *opts, int failures);

/* Keys waiting for their delay to pass. */
size_t gb_workqueue_delayed(struct gb_workqueue *q);

#endif
