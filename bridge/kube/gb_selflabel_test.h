/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_selflabel_test: for tests only.  Functions of gb_selflabel that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_selflabel's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_SELFLABEL_TEST_H
#define GB_SELFLABEL_TEST_H

#include "gb_selflabel.h"

void gb_selflabel_status(struct gb_selflabel *s, struct gb_selflabel_status *out);

#endif
