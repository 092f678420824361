/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_service_test: for tests only.  Functions of gb_rpc_service that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_rpc_service's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_RPC_SERVICE_TEST_H
#define GB_RPC_SERVICE_TEST_H

#include "gb_rpc_service.h"

/* Live snapshot facts: whether one exists, its generation (bumped on every
 * change) and its sizes.  Thread-safe. */
void gb_rpc_service_snapshot_status(struct gb_rpc_service *svc, int *ready, uint64_t *generation,
                                    size_t *nodes, size_t *domains);

#endif
