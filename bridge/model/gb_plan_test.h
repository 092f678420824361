/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan_test: for tests only.  Functions of gb_plan that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_plan's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_PLAN_TEST_H
#define GB_PLAN_TEST_H

#include "gb_plan.h"

/* The amount of `resource` (the snapshot's unit; "pods" counts pods) the
 * plan still holds on node for key: 0 when none or unknown. */
int64_t gb_plan_reserved(struct gb_plan *p, const char *key, const char *node,
                         const char *resource);

#endif
