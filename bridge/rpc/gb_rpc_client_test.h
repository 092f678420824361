/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_client_test: for tests only.  Functions of gb_rpc_client that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_rpc_client's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_RPC_CLIENT_TEST_H
#define GB_RPC_CLIENT_TEST_H

#include "gb_rpc_client.h"

/* The same with raw request and reply bytes (tests send malformed bytes).
 * *out is malloc'd (caller frees), NULL when there is no reply message. */
int gb_rpc_client_call_raw(struct gb_rpc_client *c, const char *method, const void *data,
                           size_t len, int timeout_ms, void **out, size_t *out_len,
                           struct gb_rpc_status *st);

#endif
