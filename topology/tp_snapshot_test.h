/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_snapshot_test: for tests only.  Functions of tp_snapshot that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except tp_snapshot's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef TP_SNAPSHOT_TEST_H
#define TP_SNAPSHOT_TEST_H

#include "tp_snapshot.h"

/* Sets the free amounts of every resource listed in `free` on a node
 * (quantities); resources not listed keep their value. */
int tp_snapshot_set_free_list(struct tp_snapshot *s, const char *node,
                              const struct gc_reslist *free, struct gc_diags *diags);

/* Child iterator: the first child domain of d after `prev` in index order
 * (prev = -1 for the first), or -1 when there is none.  O(domains) per
 * call: for walking small trees (a rendering), not for hot paths. */
int64_t tp_snapshot_child_next(const struct tp_snapshot *s, uint32_t d, int64_t prev);

#endif
