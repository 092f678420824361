/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http: routes, limits and graceful stop on libmicrohttpd (see gb_http.h).
 *
 * Life of a request: libmicrohttpd calls on_access once when the headers are
 * in (we pick the route and answer 404/405/413 at once when we can), then once
 * per piece of body (we append up to the cap), then once more with no data
 * (we run the handler and queue its response).  on_completed runs when the
 * request is over, however it ended, and is the only place a request's state
 * is freed and the in-flight count goes down.
 *
 * Header deadline: libmicrohttpd's connection timeout is an idle timeout that
 * every received byte resets, so a client sending one byte a second (or a
 * TLS client that never finishes its handshake and trickles) holds a slot
 * for ever.  Each connection therefore gets a record (on_connection) with a
 * deadline by which its request headers must be complete: set when it is
 * accepted and again when a request on it completes (keep-alive), cleared
 * when on_access first sees the headers.  A watchdog thread shuts down the
 * socket of a connection past its deadline; libmicrohttpd then sees the
 * socket end and closes the connection itself.  The record lives until
 * libmicrohttpd reports the connection closed, and libmicrohttpd closes the
 * descriptor only after that report, so the watchdog, which works under the
 * same mutex, never touches a descriptor that was reused.
 */
#include "gb_http.h"
#include "gb_http_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gb_clock.h"
#include "gb_file.h"
#include "gb_log.h"
#include "gb_metrics.h"

#define TEXT_PLAIN "text/plain; charset=utf-8"

struct route {
  char *path;
  size_t path_len;
  int prefix;
  unsigned methods;
  gb_http_handler_fn handler;
  void *ctx;
  size_t max_body;
};

/* One accepted connection, for the header deadline (see the top). */
struct conn_rec {
  struct conn_rec *prev, *next;
  int fd;
  int family;               /* AF_INET or AF_INET6 (0: unknown) */
  unsigned char ip[16];     /* the client's address, for the reserved slots */
  long long deadline_ms; /* monotonic; 0 = none (headers in, request running) */
  /* The last request's body buffer, kept for the next request on this
   * connection (keep_body); only the connection's own thread touches it,
   * and its bytes stay counted in body_held. */
  char *spare;
  size_t spare_cap;
};

struct gb_http {
  struct MHD_Daemon *daemon;
  int listen_fd;
  atomic_int starting;  /* 1 while MHD_start_daemon runs: its log line is kept */
  char start_log[512];  /* libmicrohttpd's lines while starting, joined */
  struct route routes[GB_HTTP_MAX_ROUTES];
  size_t n_routes;
  char *name;
  size_t max_body;
  unsigned request_timeout_s;
  unsigned grace_ms;
  unsigned port;
  struct gb_metric *requests;
  atomic_int stopping;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned inflight;
  char *tls_key;
  size_t tls_key_len;
  char *tls_cert;
  char *tls_trust; /* the client CA bundle (PEM), or NULL: no client certificates */
  /* The header-deadline watchdog: records of open connections, guarded by
   * conn_mu, which also guards watch_stop. */
  unsigned header_timeout_s;
  unsigned max_connections;
  unsigned reserved; /* last slots kept for addresses that hold no connection */
  pthread_mutex_t conn_mu;
  pthread_cond_t conn_cv;
  struct conn_rec *conns;
  int watch_stop;
  int watch_running;
  pthread_t watch;
  atomic_ulong cut; /* connections closed at the header deadline */
  size_t body_budget;  /* max_body_total */
  size_t keep_body;    /* largest body buffer a connection keeps between requests */
  atomic_size_t body_held; /* bytes of body buffers allocated now, all requests */
};

struct req_state {
  const struct route *route; /* NULL when the path matched nothing */
  int answered;              /* a response is queued */
  int status;                /* the status queued (for metrics) */
  int pending;               /* an error status to send once the body is drained */
  char *buf;
  size_t len, cap;
  size_t expect;             /* Content-Length (0: not given), at most the route's cap */
  int64_t start_ns;
};

void gb_http_config_init(struct gb_http_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->max_body = GB_HTTP_DEFAULT_MAX_BODY;
  cfg->idle_timeout_s = 30;
  cfg->request_timeout_s = 30;
  cfg->max_connections = 128;
  cfg->max_per_ip = 32;
  cfg->header_timeout_s = 10;
  cfg->max_body_total = 64u << 20;
  cfg->grace_ms = 5000;
}

static unsigned method_bit(const char *m) {
  if (!strcmp(m, "GET") || !strcmp(m, "HEAD"))
    return GB_HTTP_GET;
  if (!strcmp(m, "POST"))
    return GB_HTTP_POST;
  if (!strcmp(m, "PUT"))
    return GB_HTTP_PUT;
  if (!strcmp(m, "DELETE"))
    return GB_HTTP_DELETE;
  if (!strcmp(m, "PATCH"))
    return GB_HTTP_PATCH;
  return 0;
}

static void allow_header(unsigned methods, char *buf, size_t size) {
  static const struct {
    unsigned bit;
    const char *names;
  } all[] = {{GB_HTTP_GET, "GET, HEAD"},
             {GB_HTTP_POST, "POST"},
             {GB_HTTP_PUT, "PUT"},
             {GB_HTTP_DELETE, "DELETE"},
             {GB_HTTP_PATCH, "PATCH"}};
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
    if (!(methods & all[i].bit))
      continue;
    int w = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", all[i].names);
    if (w < 0 || (size_t)w >= size - n)
      break;
    n += (size_t)w;
  }
}

/* The largest over-limit body that is read and dropped before the 413 is
 * sent: 1 GiB, or 4 x the cap when that is more.  Draining costs no memory
 * and the request timeout bounds its time, so it is generous: a 25 MB
 * body over a 4 MiB cap used to be refused at once, and its client saw a
 * reset mid-upload instead of the 413. */
static unsigned long long drain_limit(size_t max_body) {
  unsigned long long four = 4ULL * max_body + (1ULL << 20);
  return four > (1ULL << 30) ? four : 1ULL << 30;
}

/* The client address of sa in (family, ip); 0 or -1 when not IP. */
static int addr_key(const struct sockaddr *sa, unsigned char ip[16]) {
  if (sa && sa->sa_family == AF_INET) {
    memcpy(ip, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    return AF_INET;
  }
  if (sa && sa->sa_family == AF_INET6) {
    memcpy(ip, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    return AF_INET6;
  }
  return 0;
}

/* libmicrohttpd's accept policy: the last `reserved` connection slots go
 * only to addresses that hold no connection yet.  The per-address cap alone
 * lets a few addresses fill the server; with this, a flood needs many more
 * addresses to keep out a prober (the kubelet) that comes with one
 * connection at a time. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
  struct gb_http *s = cls;
  (void)addrlen;
  unsigned char ip[16];
  int family = addr_key(addr, ip);
  size_t len = family == AF_INET ? 4 : 16;
  unsigned total = 0, same = 0;
  pthread_mutex_lock(&s->conn_mu);
  for (const struct conn_rec *r = s->conns; r; r = r->next) {
    total++;
    same += family && r->family == family && !memcmp(r->ip, ip, len);
  }
  pthread_mutex_unlock(&s->conn_mu);
  return total + s->reserved >= s->max_connections && same ? MHD_NO : MHD_YES;
}

/* libmicrohttpd's connection start and close notification: keeps the
 * record the watchdog scans. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  struct gb_http *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_CONNECTION_FD);
    struct conn_rec *r = calloc(1, sizeof(*r));
    if (!ci || !r) {
      /* Without a record the connection still has the idle timeout. */
      free(r);
      return;
    }
    r->fd = ci->connect_fd;
    const union MHD_ConnectionInfo *ai = MHD_get_connection_info(
        c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    r->family = addr_key(ai ? ai->client_addr : NULL, r->ip);
    r->deadline_ms = gb_clock_ms() + (long long)s->header_timeout_s * 1000;
    pthread_mutex_lock(&s->conn_mu);
    r->next = s->conns;
    if (s->conns)
      s->conns->prev = r;
    s->conns = r;
    pthread_mutex_unlock(&s->conn_mu);
    *socket_context = r;
    return;
  }
  struct conn_rec *r = *socket_context;
  if (!r)
    return;
  *socket_context = NULL;
  if (r->spare) {
    atomic_fetch_sub(&s->body_held, r->spare_cap);
    free(r->spare);
  }
  pthread_mutex_lock(&s->conn_mu);
  if (r->prev)
    r->prev->next = r->next;
  else
    s->conns = r->next;
  if (r->next)
    r->next->prev = r->prev;
  pthread_mutex_unlock(&s->conn_mu);
  free(r);
}

/* Starts (headers_due non-zero: the connection now waits for request
 * headers) or clears the header deadline of the connection behind c. */
static void conn_deadline(struct gb_http *s, struct MHD_Connection *c, int headers_due) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                               MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  struct conn_rec *r = ci ? ci->socket_context : NULL;
  if (!r)
    return;
  pthread_mutex_lock(&s->conn_mu);
  r->deadline_ms = headers_due ? gb_clock_ms() + (long long)s->header_timeout_s * 1000 : 0;
  pthread_mutex_unlock(&s->conn_mu);
}

/* Logs, at most once a minute and outside the mutex, how many connections
 * were cut since the last report, so that a flood shows in the log without
 * flooding it. */
static void watch_report(struct gb_http *s, unsigned long *reported, long long *last_ms) {
  long long now = gb_clock_ms();
  unsigned long cut = atomic_load(&s->cut);
  if (cut == *reported || now - *last_ms < 60000)
    return;
  char n[24];
  snprintf(n, sizeof(n), "%lu", cut - *reported);
  pthread_mutex_unlock(&s->conn_mu);
  gb_log(GB_LOG_WARN, "http connections closed at the header deadline (slow or silent clients)",
         "server", s->name, "count", n, NULL);
  pthread_mutex_lock(&s->conn_mu);
  *reported = cut;
  *last_ms = now;
}

/* The watchdog: five times a second, shuts down every connection past its
 * header deadline.  shutdown() (not close) leaves the descriptor to
 * libmicrohttpd, which sees the end of the stream and cleans up. */
static void *watch_main(void *arg) {
  struct gb_http *s = arg;
  unsigned long reported = 0;
  long long last_ms = 0;
  pthread_mutex_lock(&s->conn_mu);
  while (!s->watch_stop) {
    watch_report(s, &reported, &last_ms);
    struct timespec until;
    gb_clock_deadline(&until, 200 * 1000000LL);
    pthread_cond_timedwait(&s->conn_cv, &s->conn_mu, &until);
    long long now = gb_clock_ms();
    for (struct conn_rec *r = s->conns; r; r = r->next) {
      if (!r->deadline_ms || now < r->deadline_ms)
        continue;
      r->deadline_ms = 0;
      shutdown(r->fd, SHUT_RDWR);
      atomic_fetch_add(&s->cut, 1);
    }
  }
  pthread_mutex_unlock(&s->conn_mu);
  return NULL;
}

static void watch_stop(struct gb_http *s) {
  if (!s->watch_running)
    return;
  pthread_mutex_lock(&s->conn_mu);
  s->watch_stop = 1;
  pthread_cond_broadcast(&s->conn_cv);
  pthread_mutex_unlock(&s->conn_mu);
  pthread_join(s->watch, NULL);
  s->watch_running = 0;
}

static const struct route *find_route(const struct gb_http *s, const char *path,
                                      const char **subpath) {
  for (size_t i = 0; i < s->n_routes; i++) {
    const struct route *r = &s->routes[i];
    if (strncmp(path, r->path, r->path_len))
      continue;
    if (path[r->path_len] == '\0') {
      *subpath = "";
      return r;
    }
    if (r->prefix && path[r->path_len] == '/') {
      *subpath = path + r->path_len + 1;
      return r;
    }
  }
  return NULL;
}

/* Queues a response.  `body` is malloc'd (or NULL) and always consumed. */
static enum MHD_Result send_response(struct gb_http *s, struct MHD_Connection *c,
                                     struct req_state *st, int status, const char *ctype,
                                     char *body, size_t len, const char *allow) {
  struct MHD_Response *r;
  if (body)
    r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  else
    r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype ? ctype : TEXT_PLAIN);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  if (allow)
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
  if (atomic_load(&s->stopping) || status == 413 || status == 408)
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  if (ret == MHD_YES) {
    st->answered = 1;
    st->status = status;
  }
  return ret;
}

static enum MHD_Result send_text(struct gb_http *s, struct MHD_Connection *c,
                                 struct req_state *st, int status, const char *text,
                                 const char *allow) {
  size_t n = strlen(text);
  char *b = malloc(n + 1);
  if (!b)
    return MHD_NO;
  memcpy(b, text, n + 1);
  return send_response(s, c, st, status, TEXT_PLAIN, b, n, allow);
}

static const char *status_text(int status) {
  switch (status) {
  case 404: return "404 page not found\n";
  case 405: return "405 method not allowed\n";
  case 408: return "408 request timeout: the body took too long\n";
  case 403: return "403 forbidden: this port serves only clients with a verified certificate\n";
  case 413: return "413 request entity too large\n";
  case 503: return "503 service busy: too many request bodies at once, retry\n";
  default: return "500 internal error\n";
  }
}

/* Frees a request's body buffer and gives its bytes back to the budget. */
static void body_release(struct gb_http *s, struct req_state *st) {
  if (st->cap)
    atomic_fetch_sub(&s->body_held, st->cap);
  free(st->buf);
  st->buf = NULL;
  st->len = st->cap = 0;
}

/* The connection record of c (NULL when it has none). */
static struct conn_rec *conn_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                               MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

/* Starts a request's body in the buffer its connection kept from the last
 * request, when there is one: a keep-alive caller (the scheduler's 16
 * predicate callers) then allocates no body at all. */
static void body_adopt(struct gb_http *s, struct MHD_Connection *c, struct req_state *st) {
  struct conn_rec *r = s->keep_body ? conn_of(c) : NULL;
  if (!r || !r->spare)
    return;
  st->buf = r->spare;
  st->cap = r->spare_cap;
  r->spare = NULL;
  r->spare_cap = 0;
}

/* At the end of a request: its connection keeps the body buffer when it is
 * small enough (keep_body), else it is freed. */
static void body_return(struct gb_http *s, struct MHD_Connection *c, struct req_state *st) {
  struct conn_rec *r = st->cap && st->cap <= s->keep_body ? conn_of(c) : NULL;
  if (r && !r->spare && !atomic_load(&s->stopping)) {
    r->spare = st->buf;
    r->spare_cap = st->cap;
    st->buf = NULL;
    st->len = st->cap = 0;
    return;
  }
  body_release(s, st);
}

/* Grows a request's body buffer to hold `want` bytes (and a NUL) within the
 * route's cap and the server's total.  Returns 0, GC_ELIMIT when the total
 * would be exceeded, or GC_ENOMEM. */
static int body_grow(struct gb_http *s, struct req_state *st, size_t want) {
  if (want + 1 <= st->cap)
    return 0;
  /* With a Content-Length the buffer is sized once, not doubled (and
   * copied) all the way up. */
  if (st->expect > want && st->expect <= st->route->max_body)
    want = st->expect;
  size_t cap = st->cap ? st->cap : 4096;
  while (cap < want + 1)
    cap *= 2;
  if (cap > st->route->max_body + 1)
    cap = st->route->max_body + 1;
  size_t more = cap - st->cap;
  if (atomic_fetch_add(&s->body_held, more) + more > s->body_budget) {
    atomic_fetch_sub(&s->body_held, more);
    return GC_ELIMIT;
  }
  char *nb = realloc(st->buf, cap);
  if (!nb) {
    atomic_fetch_sub(&s->body_held, more);
    return GC_ENOMEM;
  }
  st->buf = nb;
  st->cap = cap;
  return 0;
}

/* Answers an error found while the body is still arriving.  libmicrohttpd
 * 0.9.75 refuses a response queued in the middle of a body; then a too-large
 * body is read and dropped (within the request timeout) and answered at its
 * end, and a timed-out one closes the connection, since waiting longer for
 * a slow client is what the timeout forbids. */
static enum MHD_Result fail_mid_body(struct gb_http *s, struct MHD_Connection *c,
                                     struct req_state *st, int status) {
  body_release(s, st);
  if (send_text(s, c, st, status, status_text(status), NULL) == MHD_YES)
    return MHD_YES;
  if (status == 408)
    return MHD_NO;
  st->pending = status;
  return MHD_YES;
}

struct query_collect {
  struct gb_http_query q[GB_HTTP_MAX_QUERY];
  size_t n;
};

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
  struct query_collect *qc = cls;
  if (qc->n >= GB_HTTP_MAX_QUERY)
    return MHD_NO;
  qc->q[qc->n].key = key;
  qc->q[qc->n].value = value;
  qc->n++;
  return MHD_YES;
}

static enum MHD_Result run_handler(struct gb_http *s, struct MHD_Connection *c,
                                   struct req_state *st, const char *url, const char *method) {
  struct query_collect qc;
  qc.n = 0;
  MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, &qc);
  const char *subpath = "";
  (void)find_route(s, url, &subpath);
  struct gb_http_request req = {
      .method = method,
      .path = url,
      .route = st->route->path,
      .subpath = subpath,
      .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_CONTENT_TYPE),
      .body = st->buf ? st->buf : "",
      .body_len = st->len,
      .query = qc.q,
      .n_query = qc.n,
      .conn = c,
  };
  struct gb_http_response resp = {200, NULL, 0, NULL};
  int rc = st->route->handler(st->route->ctx, &req, &resp);
  if (rc < 0 || resp.status < 100 || resp.status > 599) {
    gb_log(GB_LOG_ERROR, "http handler failed", "server", s->name, "path", url, "error",
           rc < 0 ? gc_diag_strerror(rc) : "invalid status", NULL);
    free(resp.body);
    return send_text(s, c, st, 500, status_text(500), NULL);
  }
  return send_response(s, c, st, resp.status, resp.content_type, resp.body, resp.body_len, NULL);
}

/* 1 when the TLS client of c sent a certificate that chains to the client
 * CA and may authenticate a TLS client.  libmicrohttpd only asks for the
 * certificate (GNUTLS_CERT_REQUEST); GnuTLS checks it here, once the
 * handshake is over. */
static int client_verified(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (!ci || !ci->tls_session)
    return 0;
  gnutls_session_t session = (gnutls_session_t)ci->tls_session;
  unsigned n = 0;
  if (!gnutls_certificate_get_peers(session, &n) || n == 0)
    return 0;
  gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID,
                                   (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
  unsigned status = 0;
  return gnutls_certificate_verify_peers(session, &purpose, 1, &status) == GNUTLS_E_SUCCESS &&
         status == 0;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls) {
  struct gb_http *s = cls;
  struct req_state *st = *con_cls;
  if (!st) {
    st = calloc(1, sizeof(*st));
    if (!st)
      return MHD_NO;
    st->start_ns = gb_clock_ns();
    *con_cls = st;
    conn_deadline(s, c, 0);
    pthread_mutex_lock(&s->mu);
    s->inflight++;
    pthread_mutex_unlock(&s->mu);
    const char *subpath = "";
    st->route = find_route(s, url, &subpath);
    /* Before anything about the routes is told: an unverified client
     * learns nothing but that it is refused. */
    if (s->tls_trust && !client_verified(c))
      return send_text(s, c, st, 403, status_text(403), NULL);
    if (!st->route)
      return send_text(s, c, st, 404, status_text(404), NULL);
    unsigned bit = method_bit(method);
    if (!(bit & st->route->methods)) {
      char allow[64];
      allow_header(st->route->methods, allow, sizeof(allow));
      return send_text(s, c, st, 405, status_text(405), allow);
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl) {
      errno = 0;
      char *end = NULL;
      unsigned long long want = strtoull(cl, &end, 10);
      if (errno != ERANGE && want <= st->route->max_body &&
          !(st->route->methods & GB_HTTP_BODY_DISCARD)) {
        st->expect = (size_t)want;
        if (want)
          body_adopt(s, c, st);
      }
      if (errno == ERANGE || want > st->route->max_body) {
        /* Answering before the body is read makes the kernel reset the
         * connection when unread data remains, and the client loses the
         * answer: the body is read and dropped first (never held; the
         * request timeout bounds how long), then 413 is sent.  A client
         * that waits for "100 Continue" has sent nothing yet, and one that
         * announces more than the drain limit asked for it: both are
         * answered at once. */
        const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                         MHD_HTTP_HEADER_EXPECT);
        int waits = expect && !strcasecmp(expect, "100-continue");
        if (waits || errno == ERANGE || want > drain_limit(st->route->max_body))
          return send_text(s, c, st, 413, status_text(413), NULL);
        st->pending = 413;
      }
    }
    return MHD_YES;
  }
  if (*upload_size) {
    size_t n = *upload_size;
    *upload_size = 0;
    int late = s->request_timeout_s &&
               gb_clock_ns() - st->start_ns > (int64_t)s->request_timeout_s * 1000000000;
    if (st->answered || st->pending)
      return late ? MHD_NO : MHD_YES; /* drop the rest of a body already answered */
    if (late)
      return fail_mid_body(s, c, st, 408);
    if (n > st->route->max_body - st->len)
      return fail_mid_body(s, c, st, 413);
    if (st->route->methods & GB_HTTP_BODY_DISCARD) {
      st->len += n; /* counted, never held */
      return MHD_YES;
    }
    int grown = body_grow(s, st, st->len + n);
    if (grown == GC_ELIMIT) {
      gb_log(GB_LOG_WARN, "http request refused: request bodies at their memory bound",
             "server", s->name, "route", st->route->path, NULL);
      return fail_mid_body(s, c, st, 503);
    }
    if (grown < 0)
      return MHD_NO;
    memcpy(st->buf + st->len, upload, n);
    st->len += n;
    st->buf[st->len] = '\0';
    return MHD_YES;
  }
  if (st->answered)
    return MHD_YES;
  if (st->pending)
    return send_text(s, c, st, st->pending, status_text(st->pending), NULL);
  return run_handler(s, c, st, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
  struct gb_http *s = cls;
  struct req_state *st = *con_cls;
  if (!st)
    return;
  *con_cls = NULL;
  /* A kept-alive connection now waits for its next request's headers. */
  if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
    conn_deadline(s, c, 1);
  body_return(s, c, st);
  if (s->requests) {
    char code[16];
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && st->answered)
      snprintf(code, sizeof(code), "%d", st->status);
    else
      snprintf(code, sizeof(code), "aborted");
    const char *labels[3] = {s->name, st->route ? st->route->path : "unmatched", code};
    gb_metric_counter_inc(s->requests, labels);
  }
  body_release(s, st);
  free(st);
  pthread_mutex_lock(&s->mu);
  s->inflight--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  struct gb_http *s = cls;
  char msg[512];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = '\0';
  /* Only the starting thread calls this before the daemon exists. */
  if (s->starting) {
    size_t used = strlen(s->start_log);
    snprintf(s->start_log + used, sizeof(s->start_log) - used, "%s%s", used ? "; " : "", msg);
  }
  gb_log(GB_LOG_WARN, "libmicrohttpd", "server", s->name, "detail", msg, NULL);
}

static void free_server(struct gb_http *s) {
  if (!s)
    return;
  watch_stop(s);
  if (s->listen_fd >= 0)
    close(s->listen_fd);
  while (s->conns) {
    struct conn_rec *r = s->conns;
    s->conns = r->next;
    free(r->spare);
    free(r);
  }
  for (size_t i = 0; i < s->n_routes; i++)
    free(s->routes[i].path);
  if (s->tls_key) {
    /* Do not leave the private key in freed memory. */
    volatile char *p = s->tls_key;
    for (size_t i = 0; i < s->tls_key_len; i++)
      p[i] = 0;
    free(s->tls_key);
  }
  free(s->tls_cert);
  free(s->tls_trust);
  free(s->name);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->conn_mu);
  pthread_cond_destroy(&s->conn_cv);
  free(s);
}

static int copy_routes(struct gb_http *s, const struct gb_http_route *routes, size_t n,
                       struct gc_diags *d) {
  if (n > GB_HTTP_MAX_ROUTES) {
    gc_diags_addf(d, "http: %zu routes, at most %d allowed", n, GB_HTTP_MAX_ROUTES);
    return GC_ELIMIT;
  }
  for (size_t i = 0; i < n; i++) {
    const struct gb_http_route *r = &routes[i];
    if (!r->path || r->path[0] != '/' || !r->handler || !r->methods ||
        (r->methods & ~(GB_HTTP_GET | GB_HTTP_POST | GB_HTTP_PUT | GB_HTTP_DELETE |
                        GB_HTTP_PATCH | GB_HTTP_BODY_DISCARD))) {
      gc_diags_addf(d, "http: route %zu (%s): needs a path starting with '/', a handler and "
                       "known methods", i, r->path ? r->path : "(null)");
      return GC_EINVAL;
    }
    for (size_t j = 0; j < i; j++)
      if (!strcmp(routes[j].path, r->path)) {
        gc_diags_addf(d, "http: route %s is given twice", r->path);
        return GC_EINVAL;
      }
    struct route *dst = &s->routes[s->n_routes];
    dst->path = strdup(r->path);
    if (!dst->path)
      return GC_ENOMEM;
    s->n_routes++;
    dst->path_len = strlen(dst->path);
    dst->prefix = r->prefix;
    dst->methods = r->methods;
    dst->handler = r->handler;
    dst->ctx = r->ctx;
    dst->max_body = r->max_body ? r->max_body : s->max_body;
  }
  return 0;
}

/* Parses a numeric address into ss.  Returns 0 or GC_EINVAL. */
static int parse_address(const char *name, const char *addr, unsigned port,
                         struct sockaddr_storage *ss, socklen_t *len, struct gc_diags *d) {
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *sin = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    *len = sizeof(*sin);
    return 0;
  }
  if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons((uint16_t)port);
    *len = sizeof(*sin6);
    return 0;
  }
  gc_diags_addf(d, "%s: address '%s' is not a numeric IPv4 or IPv6 address", name, addr);
  return GC_EINVAL;
}

/* Binds and listens on our own socket, so that a bind failure is reported
 * with its real cause ("address already in use") and not lumped together
 * with every other reason libmicrohttpd may fail to start. */
static int open_listener(struct gb_http *s, const char *addr, unsigned port,
                         const struct sockaddr_storage *ss, socklen_t len, struct gc_diags *d) {
  int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    gc_diags_addf(d, "%s: cannot create a socket: %s", s->name, strerror(errno));
    return GC_EIO;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  /* A long backlog (as libmicrohttpd's own listen uses): with a short one, a
   * burst of connections from a flood overflows it and the kernel drops the
   * kubelet's SYN, which is retried only a second later. */
  if (bind(fd, (const struct sockaddr *)ss, len) != 0 || listen(fd, SOMAXCONN) != 0) {
    int e = errno;
    close(fd);
    gc_diags_addf(d, ss->ss_family == AF_INET6 ? "%s: cannot listen on [%s]:%u: %s"
                                                : "%s: cannot listen on %s:%u: %s",
                  s->name, addr, port, strerror(e));
    return GC_EIO;
  }
  s->listen_fd = fd;
  return 0;
}

/* Reads the TLS files.  Whether they form a pair is known only when
 * libmicrohttpd loads them (start_daemon), whose log line says why not. */
static int load_tls(struct gb_http *s, const struct gb_http_config *cfg, struct gc_diags *d) {
  size_t cert_len = 0, ca_len = 0;
  const unsigned pem = GB_FILE_NONEMPTY | GB_FILE_TEXT;
  int rc = gb_file_read(cfg->tls_cert_file, GB_HTTP_TLS_FILE_MAX, pem, &s->tls_cert, &cert_len,
                        NULL, d);
  if (rc == 0)
    rc = gb_file_read(cfg->tls_key_file, GB_HTTP_TLS_FILE_MAX, pem, &s->tls_key, &s->tls_key_len,
                      NULL, d);
  if (rc < 0 || !cfg->tls_client_ca_file)
    return rc;
  rc = gb_file_read(cfg->tls_client_ca_file, GB_HTTP_TLS_FILE_MAX, pem, &s->tls_trust, &ca_len,
                    NULL, d);
  if (rc < 0)
    return rc;
  /* libmicrohttpd would take a bundle with no certificate in it and then
   * verify nobody: say so at start instead. */
  gnutls_x509_crt_t *list = NULL;
  unsigned n = 0;
  gnutls_datum_t data = {(unsigned char *)s->tls_trust, (unsigned)ca_len};
  if (gnutls_x509_crt_list_import2(&list, &n, &data, GNUTLS_X509_FMT_PEM, 0) < 0 || n == 0) {
    gc_diags_addf(d, "%s: the client CA file %s holds no PEM certificate", s->name,
                  cfg->tls_client_ca_file);
    rc = GC_EINVAL;
  }
  for (unsigned i = 0; i < n; i++)
    gnutls_x509_crt_deinit(list[i]);
  gnutls_free(list);
  return rc;
}

/* The socket is bound before libmicrohttpd starts, so with TLS a failed start
 * is the certificate pair (or no threads/memory): name the files, and say a
 * mismatch plainly when libmicrohttpd's log line reports GnuTLS's verdict. */
static void report_start_failure(const struct gb_http *s, const struct gb_http_config *cfg,
                                 struct gc_diags *d) {
  const char *why = s->start_log;
  if (s->tls_cert && strstr(why, "do not match"))
    gc_diags_addf(d, "%s: the private key in %s does not match the certificate in %s", s->name,
                  cfg->tls_key_file, cfg->tls_cert_file);
  else if (s->tls_cert && why[0])
    gc_diags_addf(d, "%s: cannot use certificate %s with key %s: %s", s->name,
                  cfg->tls_cert_file, cfg->tls_key_file, why);
  else
    gc_diags_addf(d, "%s: cannot start the HTTP%s server: %s", s->name, s->tls_cert ? "S" : "",
                  why[0] ? why : "out of threads or memory");
}

static struct gb_http *server_new(const struct gb_http_config *cfg) {
  struct gb_http *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->listen_fd = -1;
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->conn_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &ca);
  pthread_cond_init(&s->conn_cv, &ca);
  pthread_condattr_destroy(&ca);
  s->max_body = cfg->max_body ? cfg->max_body : GB_HTTP_DEFAULT_MAX_BODY;
  s->request_timeout_s = cfg->request_timeout_s;
  s->grace_ms = cfg->grace_ms;
  s->requests = cfg->requests;
  s->header_timeout_s = cfg->header_timeout_s ? cfg->header_timeout_s : 10;
  s->max_connections = cfg->max_connections ? cfg->max_connections : 128;
  /* A quarter of the slots, and none on a server too small to spare any. */
  s->reserved = s->max_connections >= 4 ? s->max_connections / 4 : 0;
  s->body_budget = cfg->max_body_total ? cfg->max_body_total : (64u << 20);
  s->keep_body = cfg->keep_body;
  s->name = strdup(cfg->name ? cfg->name : "http");
  if (!s->name) {
    free_server(s);
    return NULL;
  }
  return s;
}

/* Starts libmicrohttpd on s->listen_fd (which it then owns). */
static int start_daemon(struct gb_http *s, const struct gb_http_config *cfg, int ipv6,
                        struct gc_diags *d) {
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC |
                   MHD_USE_ERROR_LOG;
  if (ipv6)
    flags |= MHD_USE_IPv6;
  if (s->tls_cert)
    flags |= MHD_USE_TLS;
  unsigned idle = cfg->idle_timeout_s ? cfg->idle_timeout_s : 30; /* never unbounded */
  unsigned maxconn = s->max_connections;
  unsigned pool = cfg->threads > 1 ? cfg->threads : 1;
  /* Optional settings: a thread pool only when more than one thread is asked
   * for (libmicrohttpd warns about a pool of 0 or 1), TLS only with a cert,
   * a per-address cap only when one is set. */
  struct MHD_OptionItem opts[6];
  size_t nopt = 0;
  if (pool > 1)
    opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)pool, NULL};
  if (cfg->max_per_ip)
    opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                           (intptr_t)cfg->max_per_ip, NULL};
  if (s->tls_cert) {
    opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key};
    opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert};
  }
  if (s->tls_trust)
    opts[nopt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, s->tls_trust};
  opts[nopt] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  s->starting = 1;
  s->daemon = MHD_start_daemon(
      /* The logger goes first: libmicrohttpd warns about any option before it. */
      flags, 0, on_accept, s, on_access, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
      MHD_OPTION_LISTEN_SOCKET, (MHD_socket)s->listen_fd, MHD_OPTION_CONNECTION_LIMIT, maxconn,
      MHD_OPTION_CONNECTION_TIMEOUT, idle, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
      MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
  s->starting = 0;
  if (!s->daemon) {
    report_start_failure(s, cfg, d);
    return s->tls_cert && s->start_log[0] ? GC_EINVAL : GC_EIO;
  }
  s->listen_fd = -1; /* the daemon's now */
  if (pthread_create(&s->watch, NULL, watch_main, s) != 0) {
    gc_diags_addf(d, "%s: cannot start the header-deadline thread", s->name);
    return GC_ENOMEM;
  }
  s->watch_running = 1;
  return 0;
}

int gb_http_start(const struct gb_http_config *cfg, const struct gb_http_route *routes,
                  size_t n_routes, struct gb_http **out, struct gc_diags *d) {
  if (!cfg || !out || (n_routes && !routes)) {
    gc_diags_addf(d, "http: missing configuration");
    return GC_EUSAGE;
  }
  *out = NULL;
  const char *name = cfg->name ? cfg->name : "http";
  if (cfg->port > 65535) {
    gc_diags_addf(d, "%s: port %u is out of range", name, cfg->port);
    return GC_EINVAL;
  }
  if (!cfg->tls_cert_file != !cfg->tls_key_file) {
    gc_diags_addf(d, "%s: TLS needs both a certificate file and a key file", name);
    return GC_EINVAL;
  }
  if (cfg->tls_client_ca_file && !cfg->tls_cert_file) {
    gc_diags_addf(d, "%s: a client CA needs TLS (a certificate and a key)", name);
    return GC_EINVAL;
  }
  struct sockaddr_storage ss;
  socklen_t sslen = 0;
  const char *addr = cfg->address ? cfg->address : "0.0.0.0";
  int rc = parse_address(name, addr, cfg->port, &ss, &sslen, d);
  if (rc < 0)
    return rc;
  if (cfg->tls_cert_file && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    gc_diags_addf(d, "%s: this libmicrohttpd was built without TLS", name);
    return GC_EINVAL;
  }
  struct gb_http *s = server_new(cfg);
  if (!s)
    return GC_ENOMEM;
  if ((rc = copy_routes(s, routes, n_routes, d)) < 0 ||
      (cfg->tls_cert_file && (rc = load_tls(s, cfg, d)) < 0) ||
      (rc = open_listener(s, addr, cfg->port, &ss, sslen, d)) < 0 ||
      (rc = start_daemon(s, cfg, ss.ss_family == AF_INET6, d)) < 0)
    goto fail;
  struct sockaddr_storage bound;
  socklen_t blen = sizeof(bound);
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_LISTEN_FD);
  if (info && getsockname(info->listen_fd, (struct sockaddr *)&bound, &blen) == 0) {
    if (bound.ss_family == AF_INET)
      s->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    else
      s->port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
  }
  char port[16];
  snprintf(port, sizeof(port), "%u", s->port);
  gb_log(GB_LOG_INFO, "http server listening", "server", s->name, "address", addr, "port", port,
         "tls", s->tls_trust ? "mutual" : s->tls_cert ? "true" : "false", NULL);
  *out = s;
  return 0;

fail:
  if (s->daemon) {
    watch_stop(s);
    MHD_stop_daemon(s->daemon);
  }
  free_server(s);
  return rc;
}

unsigned gb_http_port(const struct gb_http *srv) { return srv ? srv->port : 0; }

unsigned gb_http_inflight(struct gb_http *srv) {
  if (!srv)
    return 0;
  pthread_mutex_lock(&srv->mu);
  unsigned n = srv->inflight;
  pthread_mutex_unlock(&srv->mu);
  return n;
}

void gb_http_stop(struct gb_http *s) {
  if (!s)
    return;
  atomic_store(&s->stopping, 1);
  MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
  struct timespec deadline;
  gb_clock_deadline(&deadline, (int64_t)s->grace_ms * 1000000);
  pthread_mutex_lock(&s->mu);
  while (s->inflight > 0) {
    if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == ETIMEDOUT)
      break;
  }
  unsigned left = s->inflight;
  pthread_mutex_unlock(&s->mu);
  if (left) {
    char n[16];
    snprintf(n, sizeof(n), "%u", left);
    gb_log(GB_LOG_WARN, "http server stopping with requests in flight", "server", s->name,
           "inflight", n, NULL);
  }
  MHD_stop_daemon(s->daemon);
  if (lfd != MHD_INVALID_SOCKET)
    close(lfd);
  watch_stop(s);
  unsigned long cut = atomic_load(&s->cut);
  char ncut[24];
  snprintf(ncut, sizeof(ncut), "%lu", cut);
  gb_log(GB_LOG_INFO, "http server stopped", "server", s->name, "header_deadline_closed", ncut,
         NULL);
  free_server(s);
}

const char *gb_http_request_header(const struct gb_http_request *req, const char *name) {
  if (!req || !req->conn || !name)
    return NULL;
  return MHD_lookup_connection_value((struct MHD_Connection *)req->conn, MHD_HEADER_KIND, name);
}

int gb_http_request_query(const struct gb_http_request *req, const char *key, const char **value) {
  if (!req || !key)
    return 0;
  for (size_t i = 0; i < req->n_query; i++)
    if (req->query[i].key && !strcmp(req->query[i].key, key)) {
      if (value)
        *value = req->query[i].value;
      return 1;
    }
  return 0;
}

int gb_http_response_printf(struct gb_http_response *resp, int status, const char *content_type,
                            const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return GC_EINVAL;
  char *b = malloc((size_t)n + 1);
  if (!b)
    return GC_ENOMEM;
  va_start(ap, fmt);
  vsnprintf(b, (size_t)n + 1, fmt, ap);
  va_end(ap);
  gb_http_response_take(resp, status, content_type, b, (size_t)n);
  return 0;
}

void gb_http_response_take(struct gb_http_response *resp, int status, const char *content_type,
                           char *body, size_t len) {
  free(resp->body);
  resp->status = status;
  resp->content_type = content_type;
  resp->body = body;
  resp->body_len = len;
}
