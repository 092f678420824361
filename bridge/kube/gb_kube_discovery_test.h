/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_discovery_test: for tests only.  Functions of gb_kube_discovery that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_kube_discovery's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_KUBE_DISCOVERY_TEST_H
#define GB_KUBE_DISCOVERY_TEST_H

#include "gb_kube_discovery.h"

/* Asks the server now.  *served is 1 or 0.  Returns 0, or GC_EIO when the
 * answer is unknown (transport error, 5xx, bad document; e says why). */
int gb_kube_discovery_check(struct gb_kube_client *c, const char *group, const char *version,
                            const char *resource, int *served, struct gb_kube_error *e);

#endif
