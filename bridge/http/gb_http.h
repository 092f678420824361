/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http: the service's HTTP(S) server on libmicrohttpd.  The caller gives a
 * fixed table of routes (exact paths, or prefixes for "/readyz/<check>"), each
 * with the methods it accepts, a handler and a body cap.  The server answers
 * by itself: 404 for an unknown path, 405 with an Allow header for a known
 * path and another method, 413 for a body over the route's cap (after reading
 * and dropping the rest of the body within the request timeout, so that the
 * client sees the answer instead of a reset; at once to a client waiting
 * for "100 Continue", or announcing more than 1 GiB and 4 x the cap),
 * 500 when a handler fails, 503 for a body that would take the bodies held at
 * once over max_body_total (a memory bound whatever the number of clients;
 * the rest of the body is dropped first), and 400 for malformed HTTP
 * (libmicrohttpd).  A
 * body still arriving after the request timeout closes the connection (as
 * Go's ReadTimeout does).  HEAD is accepted wherever GET is.
 * Connections are bounded in number (in total and per client address), in
 * idle time, and in the total time from accepting a connection (or ending
 * its previous request) to having the next request's headers, TLS handshake
 * included: a client trickling a byte at a time is cut off at that header
 * deadline although each byte resets the idle timeout.  TLS uses a PEM
 * certificate chain and key read from files at start and checked to match;
 * with a client CA, only clients whose certificate it verifies are served
 * (403 for every other, before any route runs).  One internal polling
 * thread, or a pool of them, runs the handlers, so handlers must be
 * thread-safe and must not block for long (the webhook's lookup reads a
 * cache).  gb_http_stop stops accepting, lets requests in flight finish for a
 * grace period, then closes everything; nothing leaks.
 */
#ifndef GB_HTTP_H
#define GB_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "gc_diag.h"

struct gb_metric;

#define GB_HTTP_GET 1u
#define GB_HTTP_POST 2u
#define GB_HTTP_PUT 4u
#define GB_HTTP_DELETE 8u
#define GB_HTTP_PATCH 16u
/* A route flag, or'ed into methods: the body is read and dropped as it
 * arrives (never held, not counted in max_body_total, still capped by the
 * route's max_body); the handler sees body "" and body_len = the bytes
 * read.  For a client that must send a body nobody needs. */
#define GB_HTTP_BODY_DISCARD 256u

#define GB_HTTP_MAX_ROUTES 32
#define GB_HTTP_MAX_QUERY 32
#define GB_HTTP_DEFAULT_MAX_BODY (1u << 20)
#define GB_HTTP_TLS_FILE_MAX (1u << 20)

struct gb_http_query {
  const char *key;
  const char *value; /* NULL when the key came without "=" (e.g. "?verbose") */
};

/* What a handler sees.  Every pointer is borrowed for the handler call. */
struct gb_http_request {
  const char *method;       /* "GET", "POST", ... ("HEAD" is passed as is) */
  const char *path;         /* URL path without the query, percent-decoded */
  const char *route;        /* the matched route's path (for metrics and logs) */
  const char *subpath;      /* prefix routes: what follows "<route>/" ("" if nothing) */
  const char *content_type; /* Content-Type header or NULL */
  const char *body;         /* NUL-terminated (the NUL is not counted); "" when none */
  size_t body_len;
  const struct gb_http_query *query; /* in request order, at most GB_HTTP_MAX_QUERY */
  size_t n_query;
  void *conn; /* the libmicrohttpd connection, for gb_http_request_header; NULL in unit tests */
};

/* What a handler fills in.  It starts as {200, NULL, 0, NULL}. */
struct gb_http_response {
  int status;
  char *body;               /* malloc'd; the server frees it after sending */
  size_t body_len;
  const char *content_type; /* static string; NULL means "text/plain; charset=utf-8" */
};

/* Returns 0 to send `resp`, or a negative GC_E* code: the server then frees
 * resp->body and answers 500 "internal error". */
typedef int (*gb_http_handler_fn)(void *ctx, const struct gb_http_request *req,
                                  struct gb_http_response *resp);

struct gb_http_route {
  const char *path;     /* "/metrics"; copied at start */
  int prefix;           /* non-zero: also serves path + "/" + anything */
  unsigned methods;     /* GB_HTTP_* bits */
  gb_http_handler_fn handler;
  void *ctx;            /* borrowed until gb_http_stop returns */
  size_t max_body;      /* 0 means the server's max_body */
};

struct gb_http_config {
  const char *name;            /* for logs and the http_requests metric; NULL = "http" */
  const char *address;         /* numeric IPv4 or IPv6 address; NULL = "0.0.0.0" */
  unsigned port;               /* 0 = an ephemeral port (see gb_http_port) */
  const char *tls_cert_file;   /* PEM chain; with tls_key_file enables HTTPS */
  const char *tls_key_file;    /* PEM private key (read once at start; restart to rotate) */
  /* PEM CA bundle (needs TLS): every request must come with a client
   * certificate that chains to it and is valid for client authentication
   * (GnuTLS verifies it); any other is answered 403 before its route runs. */
  const char *tls_client_ca_file;
  size_t max_body;             /* default GB_HTTP_DEFAULT_MAX_BODY */
  unsigned idle_timeout_s;     /* connection idle timeout; default (and 0) 30 */
  unsigned request_timeout_s;  /* whole-body receive limit; default 30; 0 = none */
  unsigned max_connections;    /* in total (split across a pool's threads); default 128 */
  unsigned max_per_ip;         /* connections from one client address; default 32; 0 = no cap */
  unsigned header_timeout_s;   /* TLS handshake + request line + headers, in total; default 10 */
  size_t max_body_total;       /* bodies held at once, all requests; default 64 MiB; over: 503 */
  /* A keep-alive connection keeps its last body buffer, when it is at most
   * this many bytes, for its next request (counted in max_body_total while
   * kept); 0 (the default): every request allocates its own. */
  size_t keep_body;
  unsigned threads;            /* 0 or 1: one polling thread; N > 1: a pool of N */
  unsigned grace_ms;           /* gb_http_stop's wait for requests in flight; default 5000 */
  struct gb_metric *requests;  /* optional counter with labels {server, route, code} */
};

struct gb_http;

/* Fills `cfg` with the defaults above (all pointers NULL). */
void gb_http_config_init(struct gb_http_config *cfg);

/* Starts a server.  `routes` (at most GB_HTTP_MAX_ROUTES) is copied.  Returns
 * 0 with *out set (caller stops it with gb_http_stop), GC_EINVAL (bad
 * address, route or config; TLS files given but this libmicrohttpd has no
 * TLS; a TLS file that is not PEM, or a key that does not match the
 * certificate, named with both files, or an empty or binary TLS file),
 * a client CA without TLS or that GnuTLS cannot read (GC_EINVAL),
 * a missing (GC_ENOTFOUND), unreadable (GC_EIO) or oversized (GC_ELIMIT)
 * TLS file, GC_EIO (cannot bind, with the system's reason and the address;
 * cannot start) or GC_ENOMEM; every failure adds one message to `d`. */
int gb_http_start(const struct gb_http_config *cfg, const struct gb_http_route *routes,
                  size_t n_routes, struct gb_http **out, struct gc_diags *d);

/* The bound TCP port (useful after port 0). */
unsigned gb_http_port(const struct gb_http *srv);

/* Stops accepting connections, waits up to grace_ms for requests in flight
 * (responses sent meanwhile carry "Connection: close"), stops the daemon and
 * frees everything.  Accepts NULL.  Must not be called from a handler. */
void gb_http_stop(struct gb_http *srv);

/* Finds a query parameter: returns 1 and sets *value (NULL for a bare key)
 * when present, 0 otherwise.  `value` may be NULL. */
int gb_http_request_query(const struct gb_http_request *req, const char *key, const char **value);

/* Sets the response to a formatted body (malloc'd) with the given status and
 * static content type (NULL = text/plain).  Returns 0 or GC_ENOMEM. */
int gb_http_response_printf(struct gb_http_response *resp, int status, const char *content_type,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Sets the response body to `body` (malloc'd, ownership moves to the response). */
void gb_http_response_take(struct gb_http_response *resp, int status, const char *content_type,
                           char *body, size_t len);

#endif
