/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend_test: what gc_backend exports for tests only.  Discovery's
 * rule for a backend with several API versions is here until serve's
 * discovery uses it (issue 21: serve does not create Workloads yet).
 */
#ifndef GC_BACKEND_TEST_H
#define GC_BACKEND_TEST_H

#include <stddef.h>

#include "gc_backend.h"

/* The newest version of b among served[0..n) (version names as discovery
 * lists them; order does not matter), or NULL when none is served. */
const struct gc_backend_version *gc_backend_version_pick(const struct gc_backend *b,
                                                         const char *const *served, size_t n);

#endif
