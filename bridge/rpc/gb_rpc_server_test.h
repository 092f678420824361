/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_server_test: for tests only.  Functions of gb_rpc_server that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_rpc_server's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_RPC_SERVER_TEST_H
#define GB_RPC_SERVER_TEST_H

#include "gb_rpc_server.h"

/* Graceful stop: refuses new calls, lets running calls finish for the grace
 * period, cancels the rest, waits until no handler runs, then joins the
 * workers.  Idempotent; safe on a server that never started. */
void gb_rpc_server_stop(struct gb_rpc_server *s);

/* Runs `method` ("/pkg.Svc/Method") on request bytes in the calling
 * thread exactly as a call would be (decode, handler, encode), with no
 * deadline and no network: for fuzzing, tests and benchmarks.  Works on a
 * server that was never started (no gRPC runtime needed).  Returns 0 (the
 * outcome in *code and msg) or GC_ENOMEM; *out is the encoded reply when
 * *code is OK (malloc'd, caller frees), else NULL. */
int gb_rpc_server_invoke(struct gb_rpc_server *s, const char *method, const void *req,
                         size_t len, void **out, size_t *out_len, int *code, char *msg,
                         size_t msg_cap);

/* Calls that ended since start, for tests and logs. */
uint64_t gb_rpc_server_calls(const struct gb_rpc_server *s);

#endif
