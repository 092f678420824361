/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gatesweep_test: for tests only.  Functions of gb_gatesweep that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_gatesweep's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_GATESWEEP_TEST_H
#define GB_GATESWEEP_TEST_H

#include "gb_gatesweep.h"

/* Reads pod (borrowed) into *out.  Returns 1 when it carries gangbridge's
 * gate, 0 when it does not (or is not a pod object). */
int gb_gatesweep_pod_of(json_object *pod, struct gb_gated_pod *out);

/* One sweep on the calling thread (tests; the thread must not run): on
 * the leader, removes the gates it should.  *removed (may be NULL) gets how
 * many.  Returns 0 or a GC_E* code (the first failure; the rest still ran). */
int gb_gatesweep_run_once(struct gb_gatesweep *g, size_t *removed);

#endif
