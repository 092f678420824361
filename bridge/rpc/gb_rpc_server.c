/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_server: unary gRPC server on gRPC C core 1.51 with protobuf-c.
 *
 * Model: one GRPC_CQ_NEXT completion queue shared by every worker thread
 * (per-thread queues cause head-of-line blocking: a connection prefers one
 * queue, so its calls wait behind a slow handler on that queue).  Every
 * implemented unary method is registered with the core
 * (GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER), so a new call arrives with
 * its request message and is answered with one batch; a generic request
 * catches every other path and answers UNIMPLEMENTED.  Each call is a
 * context whose address is the completion tag:
 *
 *   REQUESTED --(call arrives: re-arm, dispatch, start final batch)-->
 *   FINISHING --(batch done)--> freed
 *
 * Shutdown: every context (armed requests and accepted calls) is counted.
 * The completion queue is shut down only when the count is zero, because a
 * handler still running for a call the core has already given up on (its
 * deadline passed) would otherwise start its final batch on a shut-down
 * queue, which aborts the process inside gRPC.
 */
#include "gb_rpc_server.h"
#include "gb_rpc_server_test.h"

#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_posix.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>

#include "gb_clock.h"
#include "gb_rpc_accept.h"
#include "gb_rpc_client.h"
#include "gb_tls_files.h"
#include "grpc/health/v1/health.pb-c.h"

#define MAX_METHODS 64
#define GENERIC_ARMED 2          /* generic requests kept armed (unknown paths) */

struct method {
  char *path; /* "/pkg.Svc/Method", malloc'd */
  const ProtobufCMethodDescriptor *desc;
  gb_rpc_handler fn;
  void *data;
  void *registered; /* core handle; NULL: served by the generic path */
  int light;        /* never refused for load (Health/Check) */
};

struct worker {
  struct gb_rpc_server *srv;
  pthread_t thread;
  struct gc_arena *arena; /* per-call scratch, reset after every call */
  struct gb_rpc_ctx ctx;  /* the call being handled (one at a time per worker) */
  int started;
};

struct gb_rpc_server {
  struct gb_rpc_config cfg; /* numbers copied; strings only read at start */
  char *addr;
  char *tls_cert_file, *tls_key_file, *client_ca_file;
  grpc_server *server;
  grpc_completion_queue *cq;          /* GRPC_CQ_NEXT, shared by all workers */
  grpc_completion_queue *shutdown_cq; /* GRPC_CQ_PLUCK, not registered */
  struct worker *workers;
  int nworkers;
  struct method methods[MAX_METHODS];
  int nmethods;
  int armed_per_method;
  int port;
  int started, stopped;
  int grpc_inited;
  atomic_int shutting_down;
  atomic_uint_fast64_t calls;
  /* Live call contexts (armed requests + accepted calls); see the top. */
  pthread_mutex_t mu;
  pthread_cond_t idle;
  long live;
  /* Admission of heavy calls (see gb_rpc_server_mark_light), under mu. */
  int heavy_running;
  struct call *queue_head, *queue_tail; /* heavy calls waiting, FIFO */
  int queued;
  size_t queued_bytes;
  size_t mem_used; /* estimated cost of the heavy calls running */
  uint64_t refused;
  /* The listener self-check (see gb_rpc_server_check). */
  pthread_t check_thread;
  int check_started;
  pthread_mutex_t check_mu;
  pthread_cond_t check_cv; /* CLOCK_MONOTONIC; wakes the thread to stop */
  int check_stop;
  int check_failures;      /* probes in a row without an answer */
  char check_reason[512];
  /* Plain text on a numeric address: gangbridge's own listener hands the
   * connections to the core (gb_rpc_accept.h); NULL: the core listens. */
  struct gb_rpc_accept *acceptor;
  int own_listen_fd; /* bound at start, until the acceptor takes it; -1: none */
  grpc_server_credentials *fd_creds; /* insecure, for the handed-over connections */
};

enum call_state { CALL_REQUESTED, CALL_FINISHING };

struct call {
  struct gb_rpc_server *srv;
  struct method *m; /* NULL: generic request */
  enum call_state state;
  grpc_call *call;
  gpr_timespec deadline;     /* registered calls */
  grpc_call_details details; /* generic calls */
  grpc_metadata_array req_md;
  grpc_byte_buffer *payload;
  grpc_byte_buffer *reply;
  grpc_slice status_details;
  int cancelled;
  int code;        /* status sent */
  int64_t t0_ns;   /* when the call arrived (CLOCK_MONOTONIC) */
  size_t len;      /* request bytes (heavy-call queue accounting) */
  size_t cost;     /* estimated memory of a heavy call (see memory_budget) */
  struct call *next; /* heavy-call queue link */
};

/* ------------------------------------------------------------------ codes */

void gb_rpc_config_init(struct gb_rpc_config *c) {
  memset(c, 0, sizeof(*c));
  c->max_message_bytes = GB_RPC_DEFAULT_MAX_MESSAGE;
  c->grace_ms = GB_RPC_DEFAULT_GRACE_MS;
}

/* ---------------------------------------------------------- handler helpers */

int gb_rpc_server_fail(struct gb_rpc_ctx *ctx, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->message, sizeof(ctx->message), fmt, ap);
  va_end(ap);
  ctx->code = code;
  return code;
}

int gb_rpc_server_fail_diags(struct gb_rpc_ctx *ctx, int code, const char *prefix,
                             const struct gc_diags *d) {
  size_t cap = sizeof(ctx->message), used = 0;
  size_t shown = 0, errors = 0;
  ctx->message[0] = '\0';
  if (prefix && *prefix)
    used = (size_t)snprintf(ctx->message, cap, "%s", prefix);
  for (size_t i = 0; d && i < d->n; i++) {
    if (d->is_warning && d->is_warning[i])
      continue;
    errors++;
    const char *m = d->msgs[i];
    size_t need = strlen(m) + 1;
    /* Keep room for the "(N more)" tail. */
    if (used >= cap || need + 32 > cap - used)
      continue;
    used += (size_t)snprintf(ctx->message + used, cap - used, "%s%s", used ? "\n" : "", m);
    shown++;
  }
  size_t more = errors - shown + (d ? d->dropped : 0);
  if (more && used < cap)
    snprintf(ctx->message + used, cap - used, "%s(%zu more)", used ? "\n" : "", more);
  if (!ctx->message[0])
    snprintf(ctx->message, cap, "%s", gb_rpc_code_name(code));
  ctx->code = code;
  return code;
}

static int64_t mono_ms(void) {
  gpr_timespec now = gpr_now(GPR_CLOCK_MONOTONIC);
  return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int64_t gb_rpc_ctx_ms_left(const struct gb_rpc_ctx *ctx) {
  if (ctx->deadline_ms == INT64_MAX)
    return INT64_MAX;
  return ctx->deadline_ms - mono_ms();
}

int gb_rpc_ctx_defer(struct gb_rpc_ctx *ctx, void (*fn)(void *), void *arg) {
  if (ctx->n_deferred >= GB_RPC_MAX_DEFERRED) {
    fn(arg);
    return GC_ELIMIT;
  }
  ctx->deferred[ctx->n_deferred] = fn;
  ctx->deferred_arg[ctx->n_deferred] = arg;
  ctx->n_deferred++;
  return 0;
}

void gb_rpc_ctx_reply_packed(struct gb_rpc_ctx *ctx, const void *data, size_t len) {
  ctx->packed_reply = data;
  ctx->packed_reply_len = len;
}

static void *arena_pb_alloc(void *data, size_t size) {
  return gc_arena_alloc(data, size ? size : 1);
}

static void arena_pb_free(void *data, void *ptr) {
  (void)data;
  (void)ptr;
}

/* A protobuf-c allocator that takes memory from ctx->arena (free is a no-op):
 * for unpacking nested messages inside a handler.  Valid during the call. */
static void gb_rpc_ctx_allocator(struct gb_rpc_ctx *ctx, ProtobufCAllocator *out) {
  out->alloc = arena_pb_alloc;
  out->free = arena_pb_free;
  out->allocator_data = ctx->arena;
}

/* ------------------------------------------------------------ live count */

static void live_add(struct gb_rpc_server *s, long d) {
  pthread_mutex_lock(&s->mu);
  s->live += d;
  if (s->live == 0)
    pthread_cond_broadcast(&s->idle);
  pthread_mutex_unlock(&s->mu);
}

static void call_free(struct call *c) {
  struct gb_rpc_server *s = c->srv;
  if (c->payload)
    grpc_byte_buffer_destroy(c->payload);
  if (c->reply)
    grpc_byte_buffer_destroy(c->reply);
  grpc_slice_unref(c->status_details);
  if (!c->m)
    grpc_call_details_destroy(&c->details);
  grpc_metadata_array_destroy(&c->req_md);
  if (c->call)
    grpc_call_unref(c->call);
  free(c);
  live_add(s, -1);
}

/* Arms one request for method m (NULL: the generic path).  Returns 0 or -1. */
static int request_call(struct gb_rpc_server *s, struct method *m) {
  struct call *c = calloc(1, sizeof(*c));
  if (!c)
    return -1;
  live_add(s, 1);
  c->srv = s;
  c->m = m;
  c->state = CALL_REQUESTED;
  c->status_details = grpc_empty_slice();
  grpc_metadata_array_init(&c->req_md);
  grpc_call_error err;
  if (m) {
    err = grpc_server_request_registered_call(s->server, m->registered, &c->call, &c->deadline,
                                              &c->req_md, &c->payload, s->cq, s->cq, c);
  } else {
    grpc_call_details_init(&c->details);
    err = grpc_server_request_call(s->server, &c->call, &c->details, &c->req_md, s->cq, s->cq,
                                   c);
  }
  if (err != GRPC_CALL_OK) {
    gpr_log(GPR_ERROR, "gangbridge: request_call: %s", grpc_call_error_to_string(err));
    call_free(c);
    return -1;
  }
  return 0;
}

/* Starts the final batch: initial metadata, the reply when OK, the status
 * and the close.  The context is freed when the batch completes. */
static void finish(struct call *c, int code, const char *msg) {
  c->code = code;
  grpc_op ops[4];
  size_t n = 0;
  memset(ops, 0, sizeof(ops));
  ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
  n++;
  if (code == GB_RPC_OK && c->reply) {
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = c->reply;
    n++;
  }
  grpc_slice_unref(c->status_details);
  c->status_details = grpc_slice_from_copied_string(code == GB_RPC_OK || !msg ? "" : msg);
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = (grpc_status_code)code;
  ops[n].data.send_status_from_server.status_details = &c->status_details;
  n++;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
  n++;
  c->state = CALL_FINISHING;
  grpc_call_error err = grpc_call_start_batch(c->call, ops, n, c, NULL);
  if (err != GRPC_CALL_OK) {
    gpr_log(GPR_ERROR, "gangbridge: start_batch(finish): %s", grpc_call_error_to_string(err));
    call_free(c);
  }
}

static int64_t deadline_ms(gpr_timespec d) {
  if (gpr_time_cmp(d, gpr_inf_future(d.clock_type)) == 0)
    return INT64_MAX;
  gpr_timespec m = gpr_convert_clock_type(d, GPR_CLOCK_MONOTONIC);
  return (int64_t)m.tv_sec * 1000 + m.tv_nsec / 1000000;
}

/* Decodes, runs the handler and packs the reply; leaves the status in ctx. */
/* Decodes bytes as m's request, runs the handler and checks the reply
 * size.  Returns the reply message (NULL on failure, status in ctx); the
 * caller packs it, or copies ctx->packed_reply, into *size bytes. */
static ProtobufCMessage *handle(struct gb_rpc_server *s, struct method *m, struct gb_rpc_ctx *ctx,
                               const uint8_t *bytes, size_t len, size_t *size) {
  if (len > s->cfg.max_message_bytes) {
    /* The core enforces the cap already; this guards a misconfigured core. */
    gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED,
                       "request of %zu bytes exceeds the cap of %zu", len,
                       s->cfg.max_message_bytes);
    return NULL;
  }
  ProtobufCAllocator alloc;
  gb_rpc_ctx_allocator(ctx, &alloc);
  ProtobufCMessage *req = protobuf_c_message_unpack(m->desc->input, &alloc, len, bytes);
  if (!req) {
    gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "request is not a valid %s message",
                       m->desc->input->name);
    return NULL;
  }
  if (gb_rpc_ctx_ms_left(ctx) <= 0) {
    gb_rpc_server_fail(ctx, GB_RPC_DEADLINE_EXCEEDED, "deadline passed before the call started");
    return NULL;
  }
  ProtobufCMessage *reply = NULL;
  ctx->request = bytes;
  ctx->request_len = len;
  int code = m->fn(ctx, m->data, req, &reply);
  ctx->request = NULL;
  ctx->request_len = 0;
  if (code != GB_RPC_OK) {
    if (ctx->code == GB_RPC_OK)
      gb_rpc_server_fail(ctx, code, "%s", gb_rpc_code_name(code));
    return NULL;
  }
  if (!reply) {
    gb_rpc_server_fail(ctx, GB_RPC_INTERNAL, "handler returned no reply");
    return NULL;
  }
  if (gb_rpc_ctx_ms_left(ctx) <= 0) {
    gb_rpc_server_fail(ctx, GB_RPC_DEADLINE_EXCEEDED, "deadline passed while handling the call");
    return NULL;
  }
  *size = ctx->packed_reply ? ctx->packed_reply_len : protobuf_c_message_get_packed_size(reply);
  if (*size > s->cfg.max_message_bytes) {
    gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "reply of %zu bytes exceeds the cap of %zu",
                       *size, s->cfg.max_message_bytes);
    return NULL;
  }
  ctx->code = GB_RPC_OK;
  return reply;
}

static void pack_reply(const struct gb_rpc_ctx *ctx, const ProtobufCMessage *reply, size_t size,
                       uint8_t *out) {
  if (ctx->packed_reply)
    memcpy(out, ctx->packed_reply, size);
  else
    protobuf_c_message_pack(reply, out);
}

/* Runs the call's handler and builds its reply buffer; status in ctx. */
static void run_handler(struct worker *w, struct call *c, struct gb_rpc_ctx *ctx) {
  if (!c->payload) {
    gb_rpc_server_fail(ctx, GB_RPC_INVALID_ARGUMENT, "no request message");
    return;
  }
  grpc_byte_buffer_reader r;
  if (!grpc_byte_buffer_reader_init(&r, c->payload)) {
    gb_rpc_server_fail(ctx, GB_RPC_INTERNAL, "cannot read the request");
    return;
  }
  grpc_slice flat = grpc_byte_buffer_reader_readall(&r);
  grpc_byte_buffer_reader_destroy(&r);
  size_t size = 0;
  ProtobufCMessage *reply =
      handle(w->srv, c->m, ctx, GRPC_SLICE_START_PTR(flat), GRPC_SLICE_LENGTH(flat), &size);
  grpc_slice_unref(flat);
  if (!reply)
    return;
  grpc_slice out = grpc_slice_malloc(size);
  pack_reply(ctx, reply, size, GRPC_SLICE_START_PTR(out));
  c->reply = grpc_raw_byte_buffer_create(&out, 1);
  grpc_slice_unref(out);
}

static void ctx_init(struct gb_rpc_ctx *ctx, struct gc_arena *arena, const char *method,
                     int64_t deadline, size_t max_message_bytes) {
  ctx->arena = arena;
  ctx->method = method;
  ctx->deadline_ms = deadline;
  ctx->max_message_bytes = max_message_bytes;
  ctx->code = GB_RPC_OK;
  ctx->message[0] = '\0';
  ctx->n_deferred = 0;
  ctx->request = NULL;
  ctx->request_len = 0;
  ctx->packed_reply = NULL;
  ctx->packed_reply_len = 0;
}

static void ctx_run_deferred(struct gb_rpc_ctx *ctx) {
  while (ctx->n_deferred > 0) {
    ctx->n_deferred--;
    ctx->deferred[ctx->n_deferred](ctx->deferred_arg[ctx->n_deferred]);
  }
}

int gb_rpc_server_invoke(struct gb_rpc_server *s, const char *method, const void *req,
                         size_t len, void **out, size_t *out_len, int *code, char *msg,
                         size_t msg_cap) {
  *out = NULL;
  *out_len = 0;
  struct method *m = NULL;
  for (int i = 0; i < s->nmethods; i++)
    if (!strcmp(s->methods[i].path, method))
      m = &s->methods[i];
  struct gb_rpc_ctx *ctx = malloc(sizeof(*ctx));
  struct gc_arena *arena = gc_arena_new(s->cfg.max_message_bytes * 4 + ((size_t)64 << 20));
  if (!ctx || !arena) {
    free(ctx);
    gc_arena_free(arena);
    return GC_ENOMEM;
  }
  ctx_init(ctx, arena, method, INT64_MAX, s->cfg.max_message_bytes);
  if (!m || !m->fn) {
    gb_rpc_server_fail(ctx, GB_RPC_UNIMPLEMENTED, "unknown method %.400s", method);
  } else {
    size_t size = 0;
    ProtobufCMessage *reply = handle(s, m, ctx, len ? req : (const uint8_t *)"", len, &size);
    if (reply) {
      *out = malloc(size ? size : 1);
      if (*out) {
        pack_reply(ctx, reply, size, *out);
        *out_len = size;
      } else {
        gb_rpc_server_fail(ctx, GB_RPC_RESOURCE_EXHAUSTED, "out of memory");
      }
    }
  }
  ctx_run_deferred(ctx);
  *code = ctx->code;
  if (msg && msg_cap)
    snprintf(msg, msg_cap, "%s", ctx->code == GB_RPC_OK ? "" : ctx->message);
  gc_arena_free(arena);
  free(ctx);
  return 0;
}

static void dispatch(struct worker *w, struct call *c) {
  struct gb_rpc_ctx *ctx = &w->ctx;
  ctx_init(ctx, w->arena, c->m->path, deadline_ms(c->deadline), w->srv->cfg.max_message_bytes);
  run_handler(w, c, ctx);
  ctx_run_deferred(ctx);
  gc_arena_reset(w->arena);
  finish(c, ctx->code, ctx->message);
}

/* Releases the memory estimate of the call just run (done) and takes the
 * next waiting heavy call when it fits the budget; otherwise gives up the
 * heavy slot the caller holds.  Both under one lock, so no call is
 * stranded: while a call waits for room, some running call still holds
 * budget and will look again when it ends. */
static struct call *heavy_next(struct gb_rpc_server *s, const struct call *done) {
  pthread_mutex_lock(&s->mu);
  s->mem_used -= done->cost;
  struct call *c = s->queue_head;
  if (c && s->mem_used + c->cost <= s->cfg.memory_budget) {
    s->queue_head = c->next;
    if (!s->queue_head)
      s->queue_tail = NULL;
    s->queued--;
    s->queued_bytes -= c->len;
    s->mem_used += c->cost;
  } else {
    c = NULL;
    s->heavy_running--;
  }
  pthread_mutex_unlock(&s->mu);
  return c;
}

/* Gives the memory of a large request back to the system: the worker's
 * arena starts afresh and glibc returns its free heap pages (otherwise one
 * big call keeps the process at its peak for good). */
static void give_back(struct worker *w, const struct call *c) {
  if (c->len < ((size_t)1 << 20))
    return;
  struct gc_arena *fresh = gc_arena_new(w->srv->cfg.max_message_bytes * 4 + ((size_t)64 << 20));
  if (fresh) {
    gc_arena_free(w->arena);
    w->arena = fresh;
  }
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/* Runs a heavy call and then the queued ones while any wait.  Holding one
 * heavy slot for the whole loop keeps max_heavy workers busy at most, so
 * the others stay free to poll the queue and answer light calls. */
static void heavy_run(struct worker *w, struct call *c) {
  struct gb_rpc_server *s = w->srv;
  while (c) {
    /* finish() may free c: keep what heavy_next needs. */
    struct call done = {.len = c->len, .cost = c->cost};
    if (atomic_load(&s->shutting_down))
      finish(c, GB_RPC_UNAVAILABLE, "the server is shutting down");
    else
      dispatch(w, c);
    give_back(w, &done);
    c = heavy_next(s, &done);
  }
}

/* Refuses a call whose estimated cost alone exceeds the budget. */
static void refuse_cost(struct gb_rpc_server *s, struct call *c) {
  char msg[400];
  snprintf(msg, sizeof(msg),
           "a request of %.1f MB may need about %zu MiB to parse and model, above the server's "
           "memory budget of %zu MiB (grpc.memoryBudget): send a large cluster once with "
           "ReplaceSnapshot, or raise the budget together with the pod's memory limit",
           (double)c->len / 1e6, c->cost >> 20, s->cfg.memory_budget >> 20);
  finish(c, GB_RPC_RESOURCE_EXHAUSTED, msg);
}

/* Admits a heavy call: 1 when the caller should run it now (a slot was
 * taken), 0 when it was queued or refused. */
static int heavy_admit(struct gb_rpc_server *s, struct call *c) {
  c->len = c->payload ? grpc_byte_buffer_length(c->payload) : 0;
  c->cost = c->len * GB_RPC_COST_FACTOR + GB_RPC_COST_BASE;
  if (c->cost > s->cfg.memory_budget) {
    pthread_mutex_lock(&s->mu);
    s->refused++;
    pthread_mutex_unlock(&s->mu);
    refuse_cost(s, c);
    return 0;
  }
  pthread_mutex_lock(&s->mu);
  /* Run now only when nothing waits (first come, first served) and the
   * estimate fits what the running calls leave of the budget. */
  if (s->heavy_running < s->cfg.max_heavy && !s->queue_head &&
      s->mem_used + c->cost <= s->cfg.memory_budget) {
    s->heavy_running++;
    s->mem_used += c->cost;
    pthread_mutex_unlock(&s->mu);
    return 1;
  }
  if (s->queued < s->cfg.max_queued &&
      (s->queued == 0 || s->queued_bytes + c->len <= s->cfg.max_queued_bytes)) {
    c->next = NULL;
    if (s->queue_tail)
      s->queue_tail->next = c;
    else
      s->queue_head = c;
    s->queue_tail = c;
    s->queued++;
    s->queued_bytes += c->len;
    pthread_mutex_unlock(&s->mu);
    return 0;
  }
  s->refused++;
  int running = s->heavy_running, queued = s->queued;
  pthread_mutex_unlock(&s->mu);
  char msg[200];
  snprintf(msg, sizeof(msg),
           "server busy: %d calls running and %d waiting (limits %d and %d); retry with backoff",
           running, queued, s->cfg.max_heavy, s->cfg.max_queued);
  finish(c, GB_RPC_RESOURCE_EXHAUSTED, msg);
  return 0;
}

static void on_event(struct worker *w, struct call *c, int ok) {
  struct gb_rpc_server *s = c->srv;
  switch (c->state) {
  case CALL_REQUESTED:
    if (!ok) { /* the server is shutting down: do not re-arm */
      call_free(c);
      return;
    }
    if (s->cfg.on_call)
      c->t0_ns = gb_clock_ns();
    if (!atomic_load(&s->shutting_down))
      request_call(s, c->m); /* keep the accept pipeline full */
    if (!c->m) {
      char *path = grpc_slice_to_c_string(c->details.method);
      char msg[512];
      snprintf(msg, sizeof(msg), "unknown method %.400s", path);
      gpr_free(path);
      finish(c, GB_RPC_UNIMPLEMENTED, msg);
      return;
    }
    if (c->m->light)
      dispatch(w, c);
    else if (heavy_admit(s, c))
      heavy_run(w, c);
    return;
  case CALL_FINISHING:
    atomic_fetch_add(&s->calls, 1);
    if (s->cfg.on_call)
      s->cfg.on_call(s->cfg.on_call_arg, c->m ? c->m->path : "unknown", c->code,
                     c->cancelled || !ok, (double)(gb_clock_ns() - c->t0_ns) / 1e9);
    call_free(c);
    return;
  }
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  for (;;) {
    grpc_event ev = grpc_completion_queue_next(w->srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
                                               NULL);
    if (ev.type == GRPC_QUEUE_SHUTDOWN)
      break;
    if (ev.type == GRPC_OP_COMPLETE)
      on_event(w, ev.tag, ev.success);
  }
  return NULL;
}

/* ------------------------------------------------------------ self-check */

/* Raises the soft RLIMIT_NOFILE of the process to the hard limit, so idle
 * connections need that many descriptors to exhaust the table.  Stores the
 * soft limit now in force in *now (may be NULL).  Returns 0 or GC_EIO. */
static int gb_rpc_server_raise_nofile(long *now) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
    return GC_EIO;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
      return GC_EIO;
  }
  if (now)
    *now = rl.rlim_cur == RLIM_INFINITY ? -1 : (long)rl.rlim_cur;
  return 0;
}

/* The address a probe connects to: the bound port on the listen host, or
 * on loopback when the server listens on every address. */
static void probe_target(const struct gb_rpc_server *s, char *out, size_t cap) {
  const char *colon = strrchr(s->addr, ':');
  int hostlen = colon ? (int)(colon - s->addr) : 0;
  const char *host = s->addr;
  if (hostlen == 0 || (hostlen == 7 && !strncmp(host, "0.0.0.0", 7))) {
    host = "127.0.0.1";
    hostlen = 9;
  } else if (hostlen == 4 && !strncmp(host, "[::]", 4)) {
    host = "[::1]";
    hostlen = 5;
  }
  snprintf(out, cap, "%.*s:%d", hostlen, host, s->port);
}

/* One probe on a new connection: 1 when the port answered.  In plain text
 * that is a completed Health/Check.  With TLS the probe (which has no
 * certificate to offer) talks plain text: a listener that accepts answers
 * by closing the connection at once (UNAVAILABLE), a dead one never
 * answers (DEADLINE_EXCEEDED); a refused connection is dead too. */
static int probe_once(struct gb_rpc_server *s, int timeout_ms, char *why, size_t cap) {
  char target[300];
  probe_target(s, target, sizeof(target));
  struct gb_rpc_client_config cc = {0};
  cc.addr = target;
  cc.fresh_connection = 1;
  struct gb_rpc_client *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_rpc_client_new(&cc, &c, &d);
  gc_diags_destroy(&d);
  if (rc) {
    snprintf(why, cap, "cannot create a probe client for %.300s", target);
    return 0;
  }
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  struct gb_rpc_status st = {0, NULL};
  ProtobufCMessage *reply = NULL;
  int ok = 0;
  if (gb_rpc_client_call(c, "/grpc.health.v1.Health/Check", &req.base,
                         &grpc__health__v1__health_check_response__descriptor, timeout_ms,
                         &reply, &st) == 0) {
    const char *m = st.message ? st.message : "";
    ok = s->tls_cert_file ? st.code != GB_RPC_DEADLINE_EXCEEDED && !strstr(m, "refused")
                          : st.code == GB_RPC_OK;
    if (!ok)
      snprintf(why, cap, "the gRPC port %.300s does not answer a new connection (%s: %.80s)",
               target, gb_rpc_code_name(st.code), m);
  }
  if (reply)
    protobuf_c_message_free_unpacked(reply, NULL);
  gb_rpc_status_clear(&st);
  gb_rpc_client_free(c);
  return ok;
}

/* Waits out one interval; 1 when asked to stop.  Called with check_mu. */
static int check_sleep(struct gb_rpc_server *s) {
  struct timespec until;
  gb_clock_deadline(&until, (int64_t)s->cfg.self_check_ms * 1000000);
  while (!s->check_stop)
    if (pthread_cond_timedwait(&s->check_cv, &s->check_mu, &until) != 0)
      break; /* timed out */
  return s->check_stop;
}

static void *check_main(void *arg) {
  struct gb_rpc_server *s = arg;
  /* A probe waits at most the interval, between 0.5 and 5 s. */
  int timeout = s->cfg.self_check_ms < 500 ? 500
                : s->cfg.self_check_ms > 5000 ? 5000 : s->cfg.self_check_ms;
  pthread_mutex_lock(&s->check_mu);
  while (!check_sleep(s)) {
    pthread_mutex_unlock(&s->check_mu);
    char why[sizeof(s->check_reason)];
    int ok = probe_once(s, timeout, why, sizeof(why));
    pthread_mutex_lock(&s->check_mu);
    if (ok) {
      s->check_failures = 0;
    } else {
      s->check_failures++;
      memcpy(s->check_reason, why, sizeof(why));
    }
  }
  pthread_mutex_unlock(&s->check_mu);
  return NULL;
}

int gb_rpc_server_check(struct gb_rpc_server *s, char *reason, size_t size) {
  pthread_mutex_lock(&s->check_mu);
  int dead = s->check_failures >= GB_RPC_SELF_CHECK_FAILURES;
  if (dead && reason && size)
    snprintf(reason, size, "%s", s->check_reason);
  pthread_mutex_unlock(&s->check_mu);
  return dead;
}

static void check_stop(struct gb_rpc_server *s) {
  if (!s->check_started)
    return;
  pthread_mutex_lock(&s->check_mu);
  s->check_stop = 1;
  pthread_cond_broadcast(&s->check_cv);
  pthread_mutex_unlock(&s->check_mu);
  pthread_join(s->check_thread, NULL);
  s->check_started = 0;
}

/* -------------------------------------------------------------- lifecycle */

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

int gb_rpc_server_new(const struct gb_rpc_config *cfg, struct gb_rpc_server **out,
                      struct gc_diags *diags) {
  *out = NULL;
  if (!cfg->addr || !*cfg->addr) {
    gc_diags_addf(diags, "grpc: no listen address (--grpc-addr HOST:PORT)");
    return GC_EUSAGE;
  }
  if (!!cfg->tls_cert_file != !!cfg->tls_key_file) {
    gc_diags_addf(diags, "grpc: --grpc-tls-cert and --grpc-tls-key go together");
    return GC_EUSAGE;
  }
  if (cfg->client_ca_file && !cfg->tls_cert_file) {
    gc_diags_addf(diags, "grpc: --grpc-client-ca needs --grpc-tls-cert and --grpc-tls-key");
    return GC_EUSAGE;
  }
  if (cfg->threads < 0 || cfg->threads > GB_RPC_MAX_THREADS) {
    gc_diags_addf(diags, "grpc: threads must be between 1 and %d", GB_RPC_MAX_THREADS);
    return GC_EUSAGE;
  }
  if (cfg->max_message_bytes > (size_t)1 << 30) {
    gc_diags_addf(diags, "grpc: the message cap must be at most 1 GiB");
    return GC_EUSAGE;
  }
  if (cfg->max_heavy < 0 || cfg->max_queued < 0) {
    gc_diags_addf(diags, "grpc: the heavy-call limits must not be negative");
    return GC_EUSAGE;
  }
  if (cfg->handshake_timeout_ms < 0 || cfg->self_check_ms < 0) {
    gc_diags_addf(diags, "grpc: the handshake timeout and self-check interval must not be "
                  "negative");
    return GC_EUSAGE;
  }
  if (cfg->grace_ms < 0) {
    gc_diags_addf(diags, "grpc: the grace period must not be negative");
    return GC_EUSAGE;
  }
  struct gb_rpc_server *s = calloc(1, sizeof(*s));
  if (!s)
    return GC_ENOMEM;
  s->cfg = *cfg;
  if (!s->cfg.max_message_bytes)
    s->cfg.max_message_bytes = GB_RPC_DEFAULT_MAX_MESSAGE;
  if (!s->cfg.grace_ms)
    s->cfg.grace_ms = GB_RPC_DEFAULT_GRACE_MS;
  if (!s->cfg.threads) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    s->cfg.threads = n < 2 ? 2 : n > GB_RPC_MAX_THREADS ? GB_RPC_MAX_THREADS : (int)n;
  }
  /* One worker is always left for light calls (Health/Check). */
  if (!s->cfg.max_heavy || s->cfg.max_heavy >= s->cfg.threads)
    s->cfg.max_heavy = s->cfg.threads > 1 ? s->cfg.threads - 1 : 1;
  if (!s->cfg.memory_budget)
    s->cfg.memory_budget = GB_RPC_DEFAULT_MEMORY_BUDGET;
  if (!s->cfg.handshake_timeout_ms)
    s->cfg.handshake_timeout_ms = GB_RPC_DEFAULT_HANDSHAKE_MS;
  if (!s->cfg.max_queued)
    s->cfg.max_queued = GB_RPC_DEFAULT_MAX_QUEUED;
  if (!s->cfg.max_queued_bytes)
    s->cfg.max_queued_bytes = 2 * s->cfg.max_message_bytes;
  s->own_listen_fd = -1;
  s->addr = strdup(cfg->addr);
  s->tls_cert_file = dup_or_null(cfg->tls_cert_file);
  s->tls_key_file = dup_or_null(cfg->tls_key_file);
  s->client_ca_file = dup_or_null(cfg->client_ca_file);
  s->cfg.addr = s->cfg.tls_cert_file = s->cfg.tls_key_file = s->cfg.client_ca_file = NULL;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->idle, NULL);
  pthread_mutex_init(&s->check_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->check_cv, &ca);
  pthread_condattr_destroy(&ca);
  if (!s->addr || (cfg->tls_cert_file && !s->tls_cert_file) ||
      (cfg->tls_key_file && !s->tls_key_file) || (cfg->client_ca_file && !s->client_ca_file)) {
    gb_rpc_server_free(s);
    return GC_ENOMEM;
  }
  *out = s;
  return 0;
}

int gb_rpc_server_add_service(struct gb_rpc_server *s, const ProtobufCServiceDescriptor *sd,
                              const gb_rpc_handler *handlers, const char *const *streaming,
                              void *data) {
  if (s->started || s->nmethods + (int)sd->n_methods > MAX_METHODS)
    return GC_EUSAGE;
  for (unsigned i = 0; i < sd->n_methods; i++) {
    struct method *e = &s->methods[s->nmethods];
    size_t len = strlen(sd->name) + strlen(sd->methods[i].name) + 3;
    e->path = malloc(len);
    if (!e->path)
      return GC_ENOMEM;
    snprintf(e->path, len, "/%s/%s", sd->name, sd->methods[i].name);
    e->desc = &sd->methods[i];
    e->fn = handlers[i];
    e->data = data;
    for (const char *const *st = streaming; st && *st; st++)
      if (!strcmp(*st, sd->methods[i].name))
        e->fn = NULL; /* unary-only server: streaming methods are unimplemented */
    s->nmethods++;
  }
  return 0;
}

int gb_rpc_server_mark_light(struct gb_rpc_server *s, const char *path) {
  for (int i = 0; i < s->nmethods; i++) {
    if (!strcmp(s->methods[i].path, path)) {
      s->methods[i].light = 1;
      return 0;
    }
  }
  return GC_ENOTFOUND;
}

static grpc_server_credentials *make_credentials(struct gb_rpc_server *s, int *rc,
                                                 struct gc_diags *diags) {
  *rc = 0;
  if (!s->tls_cert_file)
    return grpc_insecure_server_credentials_create();
  char *cert = NULL, *key = NULL, *ca = NULL;
  grpc_server_credentials *creds = NULL;
  if ((*rc = gb_tls_files_pem_read(s->tls_cert_file, &cert, diags)) ||
      (*rc = gb_tls_files_pem_read(s->tls_key_file, &key, diags)) ||
      (s->client_ca_file && (*rc = gb_tls_files_pem_read(s->client_ca_file, &ca, diags))))
    goto out;
  grpc_ssl_pem_key_cert_pair pair = {key, cert};
  creds = grpc_ssl_server_credentials_create_ex(
      ca, &pair, 1,
      ca ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
         : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
      NULL);
  if (!creds) {
    gc_diags_addf(diags, "grpc: cannot create TLS credentials from %s and %s",
                  s->tls_cert_file, s->tls_key_file);
    *rc = GC_EIO;
  }
out:
  free(cert);
  free(key);
  free(ca);
  return creds;
}

/* 1 if a plaintext server could listen on addr: tells a bad TLS pair from
 * a busy address, since gRPC reports both as a port of 0.  A throwaway
 * server, destroyed without being started. */
static int addr_bindable(const grpc_channel_args *args, const char *addr) {
  grpc_server *probe = grpc_server_create(args, NULL);
  grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
  grpc_server_register_completion_queue(probe, cq, NULL);
  grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
  int port = grpc_server_add_http2_port(probe, addr, creds);
  grpc_server_credentials_release(creds);
  if (port > 0) {
    /* A server with a listener must be shut down before it is destroyed. */
    static int tag;
    grpc_server_start(probe);
    grpc_server_shutdown_and_notify(probe, cq, &tag);
    grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  }
  grpc_server_destroy(probe);
  grpc_completion_queue_shutdown(cq);
  grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  grpc_completion_queue_destroy(cq);
  return port > 0;
}

/* Says why the port could not be added. */
static void listen_failed(struct gb_rpc_server *s, const grpc_channel_args *args,
                          struct gc_diags *diags) {
  if (s->tls_cert_file && addr_bindable(args, s->addr))
    gc_diags_addf(diags,
                  "grpc: the TLS key in %s does not match the certificate in %s (or one is "
                  "not a valid PEM certificate or key): gRPC cannot build a TLS context from "
                  "them",
                  s->tls_key_file, s->tls_cert_file);
  else
    gc_diags_addf(diags, "grpc: cannot listen on %s (address in use or not local?)", s->addr);
}

/* Undoes a partial start (never-started server: destroy is allowed). */
static void start_cleanup(struct gb_rpc_server *s) {
  if (s->server)
    grpc_server_destroy(s->server);
  s->server = NULL;
  if (s->cq) {
    grpc_completion_queue_shutdown(s->cq);
    while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
      ;
    grpc_completion_queue_destroy(s->cq);
    s->cq = NULL;
  }
  if (s->shutdown_cq) {
    grpc_completion_queue_shutdown(s->shutdown_cq);
    grpc_completion_queue_destroy(s->shutdown_cq);
    s->shutdown_cq = NULL;
  }
}

#define SERVER_ARGS 6

static void int_arg(grpc_arg *a, const char *key, int value) {
  a->type = GRPC_ARG_INTEGER;
  a->key = (char *)key;
  a->value.integer = value;
}

/* The server's channel arguments (SERVER_ARGS of them). */
static void server_args(const struct gb_rpc_server *s, grpc_arg *args) {
  memset(args, 0, SERVER_ARGS * sizeof(*args));
  int_arg(&args[0], GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, (int)s->cfg.max_message_bytes);
  int_arg(&args[1], GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, (int)s->cfg.max_message_bytes);
  /* SO_REUSEPORT is on by default on Linux: a second server on the same
   * port would bind "successfully" and split the connections. */
  int_arg(&args[2], GRPC_ARG_ALLOW_REUSEPORT, 0);
  /* Idle sockets hold descriptors: one that never completes its handshake
   * is cut after the handshake timeout, one with no call after 5 minutes
   * (clients reconnect transparently), and one connection cannot open more
   * than GB_RPC_MAX_STREAMS calls at once. */
  int_arg(&args[3], GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, s->cfg.handshake_timeout_ms);
  int_arg(&args[4], GRPC_ARG_MAX_CONNECTION_IDLE_MS, GB_RPC_DEFAULT_IDLE_MS);
  int_arg(&args[5], GRPC_ARG_MAX_CONCURRENT_STREAMS, GB_RPC_MAX_STREAMS);
}

/* The acceptor's hand-over: the connection becomes one of the core's. */
static void hand_fd(void *arg, int fd) {
  struct gb_rpc_server *s = arg;
  grpc_server_add_channel_from_fd(s->server, fd, s->fd_creds);
}

/* Binds the port: gangbridge's own listener for plain text on a numeric
 * address (its accept loop survives EMFILE, which the core's does not),
 * the core's otherwise (TLS: gRPC 1.51 takes only insecure credentials
 * for a connection handed over; a host name: gRPC resolves it). */
static int add_port(struct gb_rpc_server *s, const grpc_channel_args *cargs,
                    struct gc_diags *diags) {
  if (!s->tls_cert_file) {
    int rc = gb_rpc_accept_listen(s->addr, &s->own_listen_fd, &s->port, diags);
    if (rc < 0)
      return rc;
    if (rc == 0) {
      s->fd_creds = grpc_insecure_server_credentials_create();
      return s->fd_creds ? 0 : GC_ENOMEM;
    }
  }
  int rc = 0;
  grpc_server_credentials *creds = make_credentials(s, &rc, diags);
  if (!creds)
    return rc;
  s->port = grpc_server_add_http2_port(s->server, s->addr, creds);
  grpc_server_credentials_release(creds);
  if (s->port == 0) {
    listen_failed(s, cargs, diags);
    return GC_EIO;
  }
  return 0;
}

int gb_rpc_server_start(struct gb_rpc_server *s, struct gc_diags *diags) {
  if (s->started || s->stopped)
    return GC_EUSAGE;
  int rc = 0;
  if (!s->grpc_inited) {
    grpc_init();
    s->grpc_inited = 1;
  }
  /* Every connection costs a descriptor and the core's listener dies for
   * good on the first EMFILE: take all the descriptors the process may
   * have.  Failing to raise is not fatal (the self-check still watches). */
  gb_rpc_server_raise_nofile(NULL);
  grpc_arg args[SERVER_ARGS];
  server_args(s, args);
  grpc_channel_args cargs = {SERVER_ARGS, args};
  s->server = grpc_server_create(&cargs, NULL);
  s->cq = grpc_completion_queue_create_for_next(NULL);
  s->shutdown_cq = grpc_completion_queue_create_for_pluck(NULL);
  grpc_server_register_completion_queue(s->server, s->cq, NULL);
  for (int i = 0; i < s->nmethods; i++) {
    if (!s->methods[i].fn)
      continue;
    s->methods[i].registered = grpc_server_register_method(
        s->server, s->methods[i].path, NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
    if (!s->methods[i].registered) {
      gc_diags_addf(diags, "grpc: cannot register %s", s->methods[i].path);
      rc = GC_EUSAGE;
      goto fail;
    }
  }
  if ((rc = add_port(s, &cargs, diags)) < 0)
    goto fail;
  s->workers = calloc((size_t)s->cfg.threads, sizeof(*s->workers));
  if (!s->workers) {
    rc = GC_ENOMEM;
    goto fail;
  }
  s->nworkers = s->cfg.threads;
  for (int i = 0; i < s->nworkers; i++) {
    s->workers[i].srv = s;
    /* Requests are decoded into the arena too, so it must hold a few times
     * the largest message. */
    s->workers[i].arena = gc_arena_new(s->cfg.max_message_bytes * 4 + ((size_t)64 << 20));
    if (!s->workers[i].arena) {
      rc = GC_ENOMEM;
      goto fail;
    }
  }
  grpc_server_start(s->server);
  s->started = 1;
  s->armed_per_method = s->nworkers < 4 ? 4 : s->nworkers;
  for (int i = 0; i < s->nmethods; i++)
    for (int k = 0; s->methods[i].registered && k < s->armed_per_method; k++)
      request_call(s, &s->methods[i]);
  for (int k = 0; k < GENERIC_ARMED; k++)
    request_call(s, NULL);
  if (s->own_listen_fd >= 0) {
    struct gb_rpc_accept_config ac = {0, s->cfg.handshake_timeout_ms, hand_fd, s};
    int fd = s->own_listen_fd;
    s->own_listen_fd = -1; /* the acceptor's now, also when it fails */
    if (gb_rpc_accept_start(fd, &ac, &s->acceptor, diags) < 0) {
      gb_rpc_server_stop(s);
      return GC_ENOMEM;
    }
  }
  for (int i = 0; i < s->nworkers; i++) {
    if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]) != 0) {
      gc_diags_addf(diags, "grpc: cannot start worker threads");
      gb_rpc_server_stop(s);
      return GC_ENOMEM;
    }
    s->workers[i].started = 1;
  }
  if (s->cfg.self_check_ms > 0) {
    if (pthread_create(&s->check_thread, NULL, check_main, s) != 0) {
      gc_diags_addf(diags, "grpc: cannot start the self-check thread");
      gb_rpc_server_stop(s);
      return GC_ENOMEM;
    }
    s->check_started = 1;
  }
  return 0;
fail:
  if (s->own_listen_fd >= 0)
    close(s->own_listen_fd);
  s->own_listen_fd = -1;
  start_cleanup(s);
  if (s->workers) {
    for (int i = 0; i < s->nworkers; i++)
      gc_arena_free(s->workers[i].arena);
    free(s->workers);
    s->workers = NULL;
    s->nworkers = 0;
  }
  return rc;
}

int gb_rpc_server_port(const struct gb_rpc_server *s) {
  return s->port;
}

uint64_t gb_rpc_server_calls(const struct gb_rpc_server *s) {
  return atomic_load(&((struct gb_rpc_server *)s)->calls);
}

void gb_rpc_server_stop(struct gb_rpc_server *s) {
  if (!s || !s->started || s->stopped)
    return;
  s->stopped = 1;
  check_stop(s);
  /* No connection is handed over once the core shuts down. */
  gb_rpc_accept_stop(s->acceptor);
  s->acceptor = NULL;
  atomic_store(&s->shutting_down, 1);
  static int shutdown_tag;
  grpc_server_shutdown_and_notify(s->server, s->shutdown_cq, &shutdown_tag);
  grpc_event ev = grpc_completion_queue_pluck(
      s->shutdown_cq, &shutdown_tag,
      gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                   gpr_time_from_millis(s->cfg.grace_ms, GPR_TIMESPAN)),
      NULL);
  if (ev.type == GRPC_QUEUE_TIMEOUT) {
    grpc_server_cancel_all_calls(s->server);
    grpc_completion_queue_pluck(s->shutdown_cq, &shutdown_tag,
                                gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  }
  /* The core is done with its calls, but a handler may still be running and
   * about to start its final batch: wait until every context is freed (the
   * workers keep polling meanwhile) before shutting the queue down. */
  pthread_mutex_lock(&s->mu);
  while (s->live > 0)
    pthread_cond_wait(&s->idle, &s->mu);
  pthread_mutex_unlock(&s->mu);
  grpc_completion_queue_shutdown(s->cq);
  for (int i = 0; i < s->nworkers; i++)
    if (s->workers[i].started)
      pthread_join(s->workers[i].thread, NULL);
  grpc_server_destroy(s->server);
  s->server = NULL;
  grpc_completion_queue_destroy(s->cq);
  s->cq = NULL;
  grpc_completion_queue_shutdown(s->shutdown_cq);
  grpc_completion_queue_pluck(s->shutdown_cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  grpc_completion_queue_destroy(s->shutdown_cq);
  s->shutdown_cq = NULL;
}

void gb_rpc_server_free(struct gb_rpc_server *s) {
  if (!s)
    return;
  gb_rpc_server_stop(s);
  for (int i = 0; i < s->nworkers; i++)
    gc_arena_free(s->workers[i].arena);
  free(s->workers);
  for (int i = 0; i < s->nmethods; i++)
    free(s->methods[i].path);
  free(s->addr);
  free(s->tls_cert_file);
  free(s->tls_key_file);
  free(s->client_ca_file);
  if (s->fd_creds)
    grpc_server_credentials_release(s->fd_creds);
  if (s->own_listen_fd >= 0)
    close(s->own_listen_fd);
  pthread_cond_destroy(&s->idle);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->check_cv);
  pthread_mutex_destroy(&s->check_mu);
  if (s->grpc_inited)
    grpc_shutdown();
  free(s);
}
