/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_client: a blocking unary gRPC client on gRPC C core for the
 * gangbridge services (and any unary method): one channel per client,
 * plain text, TLS or mutual TLS, a deadline per call, and the status code
 * and message of every call.  Used by `gangbridge call` and the tests.
 * A client may be used from several threads at once.
 */
#ifndef GB_RPC_CLIENT_H
#define GB_RPC_CLIENT_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "gc_diag.h"

struct gb_rpc_client_config {
  const char *addr;          /* "HOST:PORT" */
  const char *tls_ca_file;   /* PEM roots: enables TLS (NULL: plain text) */
  const char *tls_cert_file; /* PEM client certificate for mutual TLS */
  const char *tls_key_file;  /* PEM client key */
  const char *tls_server_name; /* expected name in the server certificate (tests) */
  size_t max_message_bytes;  /* receive cap; 0: 32 MiB */
  int fresh_connection;      /* 1: never share a connection with another client
                              * (the server's self-check must pass its accept) */
};

/* The outcome of a call. */
struct gb_rpc_status {
  int code;      /* enum gb_rpc_code (gb_rpc_server.h) */
  char *message; /* status message, malloc'd (caller frees with gb_rpc_status_clear) */
};

void gb_rpc_status_clear(struct gb_rpc_status *st);

struct gb_rpc_client;

/* Creates a client (connects lazily).  Returns 0, GC_EUSAGE (bad config),
 * a PEM file's gb_tls_files_pem_read code (GC_ENOTFOUND, GC_EIO, GC_ELIMIT,
 * GC_EINVAL; to diags) or GC_ENOMEM.  Free with gb_rpc_client_free. */
int gb_rpc_client_new(const struct gb_rpc_client_config *cfg, struct gb_rpc_client **out,
                      struct gc_diags *diags);
void gb_rpc_client_free(struct gb_rpc_client *c);

/* Calls `method` ("/pkg.Svc/Method") with req and waits at most timeout_ms
 * (<= 0: no deadline).  Returns 0 when the call completed, whatever its
 * status (in *st); *reply is the decoded reply when st->code is OK (caller
 * frees with protobuf_c_message_free_unpacked(*reply, NULL)), else NULL.
 * Returns GC_ENOMEM, or GC_EINVAL when an OK reply does not decode (st
 * then says INTERNAL). */
int gb_rpc_client_call(struct gb_rpc_client *c, const char *method, const ProtobufCMessage *req,
                       const ProtobufCMessageDescriptor *reply_desc, int timeout_ms,
                       ProtobufCMessage **reply, struct gb_rpc_status *st);

#endif
