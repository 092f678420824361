/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informers_test: for tests only.  Functions of gb_informers that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_informers's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_INFORMERS_TEST_H
#define GB_INFORMERS_TEST_H

#include "gb_informers.h"

/* The informer of group/version/resource, or NULL when none registered. */
struct gb_informer *gb_informers_lookup(struct gb_informers *f, const char *group,
                                        const char *version, const char *resource);

/* How many informers (resources) the factory holds. */
size_t gb_informers_count(struct gb_informers *f);

#endif
