/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_restriction_test: for tests only.  Functions of gb_restriction that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_restriction's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_RESTRICTION_TEST_H
#define GB_RESTRICTION_TEST_H

#include "gb_restriction.h"

/* The requirement as a nodeSelectorRequirement object, or NULL for NONE (or
 * on allocation failure).  Caller puts it. */
json_object *gb_restriction_requirement(const struct gb_restriction *r);

#endif
