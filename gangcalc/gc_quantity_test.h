/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_quantity_test: for tests only.  Functions of gc_quantity that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gc_quantity's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GC_QUANTITY_TEST_H
#define GC_QUANTITY_TEST_H

#include "gc_quantity.h"

/* A zero quantity in the given format. */
struct gc_quantity gc_quantity_zero(enum gc_qformat format);

/* acc -= q (Quantity.Sub). */
int gc_quantity_sub(struct gc_quantity *acc, const struct gc_quantity *q);

/* Returns 1 if q is zero. */
int gc_quantity_is_zero(const struct gc_quantity *q);

/* floor(num / den) for den > 0; GC_EINVAL if den <= 0, GC_ERANGE on overflow. */
int gc_quantity_div_floor(const struct gc_quantity *num, const struct gc_quantity *den,
                          int64_t *out);

#endif
