/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_options: the grpc.* keys (see the header).
 */
#include "gb_rpc_options.h"
#include "gb_addr.h"

#define S struct gb_rpc_options
static const struct gb_opt keys[] = {
    GB_KEY_STR(S, "grpc.address", address, "", "grpc-addr",
               "gRPC listen HOST:PORT; empty: no gRPC server"),
    GB_KEY_STR(S, "grpc.tlsCert", tls_cert, "", "grpc-tls-cert",
               "PEM certificate: serve TLS (with grpc.tlsKey)"),
    GB_KEY_STR(S, "grpc.tlsKey", tls_key, "", "grpc-tls-key", "PEM key of grpc.tlsCert"),
    GB_KEY_STR(S, "grpc.clientCA", client_ca, "", "grpc-client-ca",
               "PEM CA bundle: require client certificates (mutual TLS)"),
    GB_KEY_INT(S, "grpc.threads", threads, 0, 64, "0", "grpc-threads",
               "gRPC worker threads; 0: online CPUs, at least 2"),
    GB_KEY_INT(S, "grpc.maxMessageBytes", max_message_bytes, 1024, 1073741824, "33554432",
               "max-message-bytes", "receive and send cap per gRPC message"),
    GB_KEY_DUR(S, "grpc.gracePeriod", grace_s, 0, 3600, "5s", "grace-period",
               "time running gRPC calls get at shutdown"),
    GB_KEY_BOOL(S, "grpc.allowSnapshotWrites", allow_snapshot_writes, "false", NULL,
                "accept ReplaceSnapshot and UpdateNodes over gRPC (off: the cluster feeds the "
                "snapshot)"),
    GB_KEY_INT(S, "grpc.memoryBudget", memory_budget_mib, 16, 1048576, "640", NULL,
               "MiB of estimated memory the gRPC calls in flight may need"),
    GB_KEY_DUR(S, "grpc.handshakeTimeout", handshake_timeout_s, 0.1, 600, "10s", NULL,
               "a connection without TLS and the HTTP/2 preface by then is closed"),
    GB_KEY_DUR(S, "grpc.selfCheckInterval", self_check_s, 0, 3600, "10s", NULL,
               "a new connection to the port calls Health/Check this often; 0s: off"),
};

static int check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_rpc_options *o = opts;
  int rc = gb_addr_check("grpc.address", o->address, d);
  (void)a;
  if (!*o->tls_cert != !*o->tls_key) {
    gc_diags_addf(d, "grpc.tlsCert (--grpc-tls-cert) and grpc.tlsKey (--grpc-tls-key) go "
                     "together");
    rc = GC_EINVAL;
  }
  if (*o->client_ca && !*o->tls_cert) {
    gc_diags_addf(d, "grpc.clientCA needs grpc.tlsCert and grpc.tlsKey");
    rc = GC_EINVAL;
  }
  return rc;
}

const struct gb_opt_table gb_rpc_options_table = GB_OPT_TABLE("rpc", "gRPC server", S, keys, check);

/* Milliseconds of s seconds, at least 1 when s is above 0: a short value
 * written is honoured as the shortest the server keeps, never as 0 (which
 * the server reads as its default, or as off). */
static int ms_of(double s) {
  double ms = s * 1000;
  return s > 0 && ms < 1 ? 1 : (int)ms;
}

void gb_rpc_options_apply(const struct gb_rpc_options *o, struct gb_rpc_config *out) {
  gb_rpc_config_init(out);
  out->addr = o->address;
  out->tls_cert_file = *o->tls_cert ? o->tls_cert : NULL;
  out->tls_key_file = *o->tls_key ? o->tls_key : NULL;
  out->client_ca_file = *o->client_ca ? o->client_ca : NULL;
  out->threads = o->threads;
  out->max_message_bytes = (size_t)o->max_message_bytes;
  /* 0 s still gives calls 1 ms, since 0 means "default" in the gRPC config. */
  out->grace_ms = o->grace_s > 0 ? ms_of(o->grace_s) : 1;
  out->handshake_timeout_ms = ms_of(o->handshake_timeout_s);
  out->memory_budget = (size_t)o->memory_budget_mib << 20;
  out->self_check_ms = ms_of(o->self_check_s);
}
