/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rcmemo_test: for tests only.  Functions of gb_rcmemo that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_rcmemo's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_RCMEMO_TEST_H
#define GB_RCMEMO_TEST_H

#include "gb_rcmemo.h"

/* Keys remembered now. */
size_t gb_rcmemo_count(struct gb_rcmemo *m);

#endif
