/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_server: a unary-only gRPC server on gRPC C core with protobuf-c
 * messages.  It owns the listening port (plain, TLS or mutual TLS), one
 * shared completion queue polled by N worker threads, the per-method
 * dispatch through protobuf-c service descriptors, the message size caps,
 * deadlines and the graceful stop.  Handlers see only protobuf-c messages, a
 * per-call arena and a status to fill; no gRPC type crosses this header.
 * Threading and shutdown are described in docs/internals/rpc.md.
 */
#ifndef GB_RPC_SERVER_H
#define GB_RPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "gb_rpc.h"
#include "gc_arena.h"
#include "gc_diag.h"

#define GB_RPC_DEFAULT_GRACE_MS 5000
#define GB_RPC_MAX_THREADS 64
#define GB_RPC_DEFAULT_MAX_QUEUED 64
#define GB_RPC_DEFAULT_HANDSHAKE_MS 10000
#define GB_RPC_DEFAULT_MEMORY_BUDGET ((size_t)640 << 20)
#define GB_RPC_COST_FACTOR 24          /* measured 17x to 30x (bench_rpc_memory) */
#define GB_RPC_COST_BASE ((size_t)256 << 10)
#define GB_RPC_DEFAULT_IDLE_MS 300000 /* connections with no call for 5 min are closed */
#define GB_RPC_MAX_STREAMS 128        /* concurrent calls per connection */
#define GB_RPC_SELF_CHECK_FAILURES 3  /* consecutive failed probes before "dead" */
/* Status messages longer than this are cut (they travel in a header). */
#define GB_RPC_MAX_STATUS_MESSAGE 4096

/* Everything `gangbridge serve` needs to start the gRPC side.  Strings are
 * borrowed until gb_rpc_server_start returns. */
struct gb_rpc_config {
  const char *addr;           /* "HOST:PORT"; port 0 picks a free port */
  const char *tls_cert_file;  /* PEM certificate chain; with the key: TLS */
  const char *tls_key_file;   /* PEM private key */
  const char *client_ca_file; /* PEM CA bundle: require and verify client certs */
  int threads;                /* worker threads; 0: online CPUs, at least 2 */
  size_t max_message_bytes;   /* receive and send cap; 0: the default */
  int grace_ms;               /* stop: time calls get to finish; 0: default */
  /* Heavy calls (every method not marked light) running at once; 0 or
   * >= threads: threads - 1 (at least 1), so a worker is always free for
   * Health/Check.  Beyond it calls wait in a FIFO of max_queued calls and
   * max_queued_bytes request bytes (0: GB_RPC_DEFAULT_MAX_QUEUED and twice
   * the message cap; one call is always admitted); beyond that they are
   * answered RESOURCE_EXHAUSTED at once. */
  int max_heavy;
  int max_queued;
  size_t max_queued_bytes;
  /* A connection that has not finished its TLS handshake and sent the
   * HTTP/2 preface and SETTINGS within this time is closed (the core holds
   * it 120 s otherwise); 0: GB_RPC_DEFAULT_HANDSHAKE_MS. */
  int handshake_timeout_ms;
  /* Memory the heavy calls running at once may need, estimated as
   * GB_RPC_COST_FACTOR x request bytes + GB_RPC_COST_BASE each (parsing
   * YAML and building a snapshot costs far more than the message).  A call
   * whose estimate alone exceeds it is refused RESOURCE_EXHAUSTED; others
   * wait in the FIFO until it has room.  0: GB_RPC_DEFAULT_MEMORY_BUDGET. */
  size_t memory_budget;
  /* Every self_check_ms a thread opens a new connection to the bound port
   * and calls Health/Check (see gb_rpc_server_check); 0: off. */
  int self_check_ms;
  /* Called on a worker thread when a call has ended: its method path (or
   * "unknown" for paths the server does not serve), status code, whether
   * the client cancelled or the deadline cut it, and the seconds since it
   * arrived.  For metrics and access logs; must be thread-safe and quick.
   * NULL: none. */
  void (*on_call)(void *arg, const char *method, int code, int cancelled, double seconds);
  void *on_call_arg;
};

/* Fills c with the defaults (no address, plain text). */
void gb_rpc_config_init(struct gb_rpc_config *c);

#define GB_RPC_MAX_DEFERRED 4

/* One call as a handler sees it.  Valid only during the handler. */
struct gb_rpc_ctx {
  struct gc_arena *arena; /* per call: build the reply here; reset after the call */
  const char *method;     /* "/package.Service/Method" */
  int64_t deadline_ms;    /* absolute, CLOCK_MONOTONIC ms; INT64_MAX: none */
  size_t max_message_bytes;
  const uint8_t *request; /* the request's wire bytes (e.g. as a cache key) */
  size_t request_len;
  const uint8_t *packed_reply; /* set by gb_rpc_ctx_reply_packed */
  size_t packed_reply_len;
  int code; /* enum gb_rpc_code, set by gb_rpc_server_fail */
  char message[GB_RPC_MAX_STATUS_MESSAGE];
  void (*deferred[GB_RPC_MAX_DEFERRED])(void *); /* see gb_rpc_ctx_defer */
  void *deferred_arg[GB_RPC_MAX_DEFERRED];
  int n_deferred;
};

/* A unary handler.  `req` is the decoded request (server-owned, freed after
 * the call).  On success it stores the reply in *reply (allocated from
 * ctx->arena or static; never freed by the server) and returns GB_RPC_OK;
 * otherwise it returns gb_rpc_server_fail(ctx, code, ...).  `data` is the pointer
 * given to gb_rpc_server_add_service.  Handlers run on worker threads,
 * several at a time. */
typedef int (*gb_rpc_handler)(struct gb_rpc_ctx *ctx, void *data, const ProtobufCMessage *req,
                              ProtobufCMessage **reply);

/* Sets the call's status and message; returns code. */
int gb_rpc_server_fail(struct gb_rpc_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fails with every error message of d joined by newlines (cut at the
 * status size cap, saying how many were left out); returns code. */
int gb_rpc_server_fail_diags(struct gb_rpc_ctx *ctx, int code, const char *prefix,
                             const struct gc_diags *d);

/* Milliseconds left before the call's deadline (INT64_MAX when none; <= 0
 * when it has passed). */
int64_t gb_rpc_ctx_ms_left(const struct gb_rpc_ctx *ctx);

/* Runs fn(arg) after the reply has been packed (or the call failed), in
 * reverse order of registration: for objects the reply borrows from.
 * Returns 0, or GC_ELIMIT when GB_RPC_MAX_DEFERRED are registered already
 * (fn(arg) is then run at once, so the caller must not use the object). */
int gb_rpc_ctx_defer(struct gb_rpc_ctx *ctx, void (*fn)(void *), void *arg);

/* Answers with reply bytes that are already encoded (a cached reply):
 * data must stay valid until the handler's deferred functions run (the
 * call arena qualifies).  The handler then returns GB_RPC_OK with any
 * non-NULL *reply; the bytes are sent instead of packing it. */
void gb_rpc_ctx_reply_packed(struct gb_rpc_ctx *ctx, const void *data, size_t len);

struct gb_rpc_server;

/* Creates a stopped server with a copy of cfg's numbers (file names are
 * read at start).  Returns 0, GC_EUSAGE for a bad config (to diags), or
 * GC_ENOMEM.  Free with gb_rpc_server_free. */
int gb_rpc_server_new(const struct gb_rpc_config *cfg, struct gb_rpc_server **out,
                      struct gc_diags *diags);

/* Adds a service: handlers[i] serves sd->methods[i] (NULL entries and
 * streaming methods answer UNIMPLEMENTED).  `streaming` lists method names
 * of sd that are streaming (protoc-c drops that flag), NULL-terminated, or
 * NULL.  data is borrowed for the server's life.  Before start only. */
int gb_rpc_server_add_service(struct gb_rpc_server *s, const ProtobufCServiceDescriptor *sd,
                              const gb_rpc_handler *handlers, const char *const *streaming,
                              void *data);

/* Marks method path ("/pkg.Svc/Method", added already) as light: it is
 * never refused for load.  Every other method is heavy: at most
 * cfg.max_heavy of them run at once (so a worker is always free for light
 * calls such as Health/Check) and the rest are answered RESOURCE_EXHAUSTED
 * at once.  Before start only.  Returns 0 or GC_ENOTFOUND. */
int gb_rpc_server_mark_light(struct gb_rpc_server *s, const char *path);

/* Reads the TLS files, binds the address and starts the workers.  Returns
 * 0; a TLS file's gb_file_read code (GC_ENOTFOUND missing, GC_EIO
 * unreadable, GC_ELIMIT too large, GC_EINVAL empty or binary); GC_EIO when
 * the address cannot be bound (a port in use is an error: SO_REUSEPORT is
 * off); messages to diags. */
int gb_rpc_server_start(struct gb_rpc_server *s, struct gc_diags *diags);

/* The listener self-check (cfg.self_check_ms): returns 0 while the port
 * accepts (or the check is off or has not failed yet); otherwise 1 with
 * why in reason (NUL-terminated, at most size bytes).  gRPC core 1.51
 * stops accepting for good once accept4 fails with EMFILE, while calls on
 * open connections still work: only a new connection shows it.  The check
 * fails after GB_RPC_SELF_CHECK_FAILURES probes in a row get no answer.
 * Thread-safe. */
int gb_rpc_server_check(struct gb_rpc_server *s, char *reason, size_t size);

/* The bound port (after a successful start). */
int gb_rpc_server_port(const struct gb_rpc_server *s);

/* Stops (if needed) and frees.  Accepts NULL. */
void gb_rpc_server_free(struct gb_rpc_server *s);

#endif
