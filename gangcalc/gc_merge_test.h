/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_merge_test: for tests only.  Functions of gc_merge that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gc_merge's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GC_MERGE_TEST_H
#define GC_MERGE_TEST_H

#include "gc_merge.h"

/* Returns the patch merge key for a list stored under `field` ("name" for
 * containers, env, volumes, ...; "mountPath" for volumeMounts), or NULL when
 * such a list is replaced as a whole. */
const char *gc_merge_key_for(const char *field);

#endif
