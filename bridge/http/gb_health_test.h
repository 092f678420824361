/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_health_test: for tests only.  Functions of gb_health that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_health's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_HEALTH_TEST_H
#define GB_HEALTH_TEST_H

#include "gb_health.h"

/* Adds a flag check, initially `ok` (non-zero = healthy) with `reason`
 * (copied, may be NULL) reported while it fails. */
int gb_health_add_flag(struct gb_health *h, unsigned kinds, const char *name, int ok,
                       const char *reason);

/* Sets a flag check.  Thread-safe.  Returns 0, or GC_ENOTFOUND when no flag
 * check has that name. */
int gb_health_set_flag(struct gb_health *h, const char *name, int ok, const char *reason);

/* 1 when every check of `kind` passes (no exclusions), else 0. */
int gb_health_ok(struct gb_health *h, unsigned kind);

#endif
