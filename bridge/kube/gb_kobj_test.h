/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kobj_test: for tests only.  Functions of gb_kobj that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_kobj's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_KOBJ_TEST_H
#define GB_KOBJ_TEST_H

#include "gb_kobj.h"

/* o[key] when it is an integer: 0 with *out set, or -1 (*out untouched). */
int gb_kobj_int(json_object *o, const char *key, int64_t *out);

#endif
