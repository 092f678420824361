/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_options_test: for tests only.  Functions of gb_options that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_options's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_OPTIONS_TEST_H
#define GB_OPTIONS_TEST_H

#include "gb_options.h"

/* The key of that path, or NULL. */
const struct gb_opt *gb_options_find(const struct gb_options *s, const char *path);

/* Where the key at path was set, or NULL (its default, or no such key). */
const char *gb_options_where(const struct gb_options *s, const char *path);

#endif
