/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gangview_test: for tests only.  Functions of gb_gangview that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_gangview's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_GANGVIEW_TEST_H
#define GB_GANGVIEW_TEST_H

#include "gb_gangview.h"

/* One planned node per pod for a gang whose restriction would list more
 * than GB_RESTRICTION_MAX_HOSTS nodes: the plan's assignment expanded in
 * node-name order, n entries (arena-owned names in out[0..n)).  Returns 0,
 * GC_ENOTFOUND (no assignment) or GC_ENOMEM; pods beyond the assignment
 * get NULL (no restriction). */
int gb_placer_pod_nodes(struct gb_plan *plan, const char *key, struct gc_arena *a, size_t n,
                        const char **out);

#endif
