/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_reconcile_test: for tests only.  Functions of gb_reconcile that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_reconcile's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_RECONCILE_TEST_H
#define GB_RECONCILE_TEST_H

#include "gb_reconcile.h"

/* 1 when gangbridge made PodGroup pg for the TrainJob with uid tj_uid: it
 * carries the managed-by label and a controller ownerReference to tj_uid. */
int gb_reconcile_podgroup_ours(const struct gc_value *pg, const char *tj_uid);

/* 1 when the TrainJob has a Complete or Failed condition with status True. */
int gb_reconcile_trainjob_finished(const struct gc_value *tj);

#endif
