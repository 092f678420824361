/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_resources_test: for tests only.  Functions of gc_resources that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gc_resources's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GC_RESOURCES_TEST_H
#define GC_RESOURCES_TEST_H

#include "gc_resources.h"

/* Every quantity *= n. */
int gc_reslist_scale(struct gc_reslist *l, int64_t n);

#endif
