/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_options: the grpc.* keys of serve's configuration (the gRPC
 * server: address, TLS files, threads, message cap, grace period, memory
 * budget, handshake timeout, listener self-check; and whether gRPC callers
 * may replace the snapshot), their table (base/gb_opt.h), their rules, and
 * how they become a gb_rpc_config, which both serve modes (the controller
 * and --offline) start their server with.  Plain data: strings are owned by
 * the loader (doc/gb_options).
 */
#ifndef GB_RPC_OPTIONS_H
#define GB_RPC_OPTIONS_H

#include "gb_opt.h"
#include "gb_rpc_server.h"

struct gb_rpc_options {
  const char *address; /* "": no gRPC server */
  const char *tls_cert;
  const char *tls_key;
  const char *client_ca;
  int threads; /* 0: online CPUs, at least 2 */
  int max_message_bytes;
  double grace_s;
  int memory_budget_mib;      /* estimated memory of heavy calls in flight, MiB */
  double handshake_timeout_s; /* connections must finish TLS + HTTP/2 preface by then */
  double self_check_s;        /* listener self-check interval; 0: off */
  int allow_snapshot_writes; /* ReplaceSnapshot/UpdateNodes over gRPC (off: the cluster feeds it) */
};
extern const struct gb_opt_table gb_rpc_options_table;

/* Fills *out (caller-owned; strings borrowed from o) from o. */
void gb_rpc_options_apply(const struct gb_rpc_options *o, struct gb_rpc_config *out);

#endif
