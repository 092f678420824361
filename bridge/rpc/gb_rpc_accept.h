/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc_accept: the plain-text gRPC port's own listener.  gRPC core 1.51
 * stops accepting for good the first time accept4 fails with EMFILE (its
 * listener is then dead while the process lives on), so gangbridge accepts
 * the connections itself and hands each to the core
 * (grpc_server_add_channel_from_fd, which 1.51 supports for insecure
 * credentials only: a TLS port keeps the core's listener and relies on the
 * self-check).  It owns the listening socket, one acceptor thread, the
 * connections not yet handed over and the count of those handed over:
 *   - a connection is handed over once the client has sent the 24-byte
 *     HTTP/2 client preface (read with MSG_PEEK, so the core still sees
 *     it); one that sends anything else is closed at once, one that has not
 *     sent it within the handshake timeout is closed then (as the core's
 *     handshake timeout did);
 *   - at most max_connections are open at once (waiting plus handed over;
 *     handed ones are counted until their descriptor is closed or reused,
 *     checked with fstat against the socket's inode); beyond that the
 *     acceptor stops accepting and the kernel's backlog holds the rest;
 *   - accept4 failing for lack of descriptors or memory (EMFILE, ENFILE,
 *     ENOBUFS, ENOMEM) pauses accepting with a back-off from 10 ms to 1 s
 *     instead of ending it: the port comes back once descriptors are free.
 * Thread-safety: start and stop from one thread; the hand function runs on
 * the acceptor thread; stats may be read from any thread.
 */
#ifndef GB_RPC_ACCEPT_H
#define GB_RPC_ACCEPT_H

#include <stddef.h>
#include <stdint.h>

#include "gc_diag.h"

#define GB_RPC_ACCEPT_RESERVE 64 /* descriptors kept for the rest of the process */

/* Called on the acceptor thread with a connected socket that has sent the
 * HTTP/2 preface (unread); the callee owns fd from then on. */
typedef void (*gb_rpc_accept_hand_fn)(void *arg, int fd);

struct gb_rpc_accept_config {
  int max_connections;      /* 0: the soft RLIMIT_NOFILE minus GB_RPC_ACCEPT_RESERVE (>= 16) */
  int handshake_timeout_ms; /* time to send the preface; 0: 10 s */
  gb_rpc_accept_hand_fn hand;
  void *arg;
};

struct gb_rpc_accept;

/* Binds and listens on addr ("HOST:PORT", numeric host, "[v6]" brackets;
 * port 0 picks one).  Returns 0 with *fd (non-blocking, close-on-exec)
 * and *port; 1 when HOST is not a numeric address (the caller
 * then lets gRPC resolve and bind it); GC_EIO when it cannot bind (the
 * system's reason in d). */
int gb_rpc_accept_listen(const char *addr, int *fd, int *port, struct gc_diags *d);

/* Starts the acceptor on listen_fd (which it owns from then on, also on
 * failure).  Returns 0, GC_EUSAGE (no hand function) or GC_ENOMEM. */
int gb_rpc_accept_start(int listen_fd, const struct gb_rpc_accept_config *cfg,
                        struct gb_rpc_accept **out, struct gc_diags *d);

/* Stops accepting, joins the thread, closes the listening socket and the
 * connections not yet handed over, and frees.  Accepts NULL. */
void gb_rpc_accept_stop(struct gb_rpc_accept *a);

#endif
