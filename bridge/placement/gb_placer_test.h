/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_test: for tests only.  Functions of gb_placer that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_placer's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_PLACER_TEST_H
#define GB_PLACER_TEST_H

#include "gb_placer.h"

/* Writes the status document of /debug/placement (JSON: every gang seen,
 * its state, outcome, reason, age; the model's size) into b. */
int gb_placer_status_json(struct gb_placer *p, struct gb_buf *b);

#endif
