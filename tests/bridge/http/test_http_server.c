/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http over real sockets on 127.0.0.1 (ephemeral ports) with a libcurl
 * client: routing, 404/405/413/408/500, HEAD, query strings, prefix routes,
 * malformed HTTP, connection limits and idle timeouts, concurrent requests on
 * a thread pool, graceful stop with a request in flight and with a stalled
 * client, and start-up errors.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gb_http.h"
#include "gb_http_test.h"
#include "gb_log.h"
#include "gb_metrics.h"
#include "gb_metrics_test.h"
#include "gb_testhttp.h"
#include "http_client.h"

static int hello(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  return gb_http_response_printf(resp, 200, NULL, "hello %s", (const char *)ctx);
}

/* Echoes method, route, subpath, query and body. */
static int echo(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  char q[512] = "";
  size_t n = 0;
  for (size_t i = 0; i < req->n_query; i++) {
    int w = snprintf(q + n, sizeof(q) - n, "[%s=%s]", req->query[i].key,
                     req->query[i].value ? req->query[i].value : "(null)");
    if (w > 0 && (size_t)w < sizeof(q) - n)
      n += (size_t)w;
  }
  const char *hdr = gb_http_request_header(req, "X-Test");
  return gb_http_response_printf(resp, 200, "application/x-echo",
                                 "%s %s route=%s sub=%s q=%s ct=%s hdr=%s len=%zu body=%s",
                                 req->method, req->path, req->route, req->subpath, q,
                                 req->content_type ? req->content_type : "-", hdr ? hdr : "-",
                                 req->body_len, req->body);
}

static int failing(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  resp->body = malloc(10); /* the server must free it on failure */
  return GC_EINVAL;
}

static int bad_request(void *ctx, const struct gb_http_request *req,
                       struct gb_http_response *resp) {
  return gb_http_response_printf(resp, 400, NULL, "bad input: %s\n", "missing field x");
}

static atomic_int slow_started;
static atomic_int stop_called;

/* Blocks until the test is about to stop the server (at most 5 s), then a
 * little longer, so the request is surely in flight during the stop. */
static int slow(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  atomic_fetch_add(&slow_started, 1);
  struct timespec tick = {0, 5 * 1000000L};
  for (int i = 0; i < 1000 && !atomic_load(&stop_called); i++)
    nanosleep(&tick, NULL);
  struct timespec ts = {0, 200 * 1000000L};
  nanosleep(&ts, NULL);
  return gb_http_response_printf(resp, 200, NULL, "slow done");
}

static struct gb_http *start(struct gb_http_config *cfg) {
  static const struct gb_http_route routes[] = {
      {"/hello", 0, GB_HTTP_GET, hello, "world", 0},
      {"/echo", 0, GB_HTTP_GET | GB_HTTP_POST | GB_HTTP_PUT, echo, NULL, 64},
      {"/items", 1, GB_HTTP_GET | GB_HTTP_DELETE, echo, NULL, 0},
      {"/fail", 0, GB_HTTP_GET, failing, NULL, 0},
      {"/bad", 0, GB_HTTP_POST, bad_request, NULL, 0},
      {"/slow", 0, GB_HTTP_GET, slow, NULL, 0},
  };
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  int rc = gb_http_start(cfg, routes, sizeof(routes) / sizeof(routes[0]), &srv, &d);
  ck_assert_msg(rc == 0, "start: %d %s", rc, d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
  ck_assert_uint_gt(gb_http_port(srv), 0);
  return srv;
}

static struct gb_http *start_default(void) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.name = "test";
  return start(&cfg);
}

static void url(char *buf, size_t size, struct gb_http *srv, const char *path) {
  snprintf(buf, size, "http://127.0.0.1:%u%s", gb_http_port(srv), path);
}

START_TEST(test_routes) {
  struct gb_http *srv = start_default();
  char u[256];
  struct hres r;
  url(u, sizeof(u), srv, "/hello");
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.cc, CURLE_OK);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "hello world");
  ck_assert_str_eq(r.ctype, "text/plain; charset=utf-8");
  hres_free(&r);

  url(u, sizeof(u), srv, "/echo?verbose&exclude=a&exclude=b%20c&empty=");
  hreq_full("POST", u, "application/json", "{\"x\":1}", 7, 0, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.ctype, "application/x-echo");
  ck_assert_str_eq(r.body, "POST /echo route=/echo sub= q=[verbose=(null)][exclude=a]"
                           "[exclude=b c][empty=] ct=application/json hdr=- len=7 "
                           "body={\"x\":1}");
  hres_free(&r);

  /* Prefix route: subpath is what follows "/items/". */
  url(u, sizeof(u), srv, "/items/a/b");
  hreq("DELETE", u, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(strstr(r.body, "DELETE /items/a/b route=/items sub=a/b "));
  hres_free(&r);
  url(u, sizeof(u), srv, "/items");
  hreq("GET", u, NULL, &r);
  ck_assert_ptr_nonnull(strstr(r.body, "route=/items sub= "));
  hres_free(&r);

  /* HEAD works wherever GET does, without a body. */
  url(u, sizeof(u), srv, "/hello");
  hreq("HEAD", u, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(r.len, 0);
  hres_free(&r);
  gb_http_stop(srv);
}
END_TEST

START_TEST(test_errors) {
  struct gb_http *srv = start_default();
  char u[256];
  struct hres r;
  const char *missing[] = {"/", "/nope", "/hello/x", "/itemsx", "/hello/"};
  for (size_t i = 0; i < sizeof(missing) / sizeof(*missing); i++) {
    url(u, sizeof(u), srv, missing[i]);
    hreq("GET", u, NULL, &r);
    ck_assert_msg(r.status == 404, "%s: %ld", missing[i], r.status);
    ck_assert_str_eq(r.body, "404 page not found\n");
    hres_free(&r);
  }
  url(u, sizeof(u), srv, "/hello");
  hreq("POST", u, "x", &r);
  ck_assert_int_eq(r.status, 405);
  ck_assert_str_eq(r.allow, "GET, HEAD");
  hres_free(&r);
  url(u, sizeof(u), srv, "/echo");
  hreq("DELETE", u, NULL, &r);
  ck_assert_int_eq(r.status, 405);
  ck_assert_str_eq(r.allow, "GET, HEAD, POST, PUT");
  hres_free(&r);
  hreq("OPTIONS", u, NULL, &r);
  ck_assert_int_eq(r.status, 405);
  hres_free(&r);

  url(u, sizeof(u), srv, "/fail");
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.status, 500);
  ck_assert_str_eq(r.body, "500 internal error\n");
  hres_free(&r);
  url(u, sizeof(u), srv, "/bad");
  hreq("POST", u, "{}", &r);
  ck_assert_int_eq(r.status, 400);
  ck_assert_str_eq(r.body, "bad input: missing field x\n");
  hres_free(&r);
  gb_http_stop(srv);
}
END_TEST

START_TEST(test_body_limit) {
  struct gb_http *srv = start_default();
  char u[256];
  struct hres r;
  url(u, sizeof(u), srv, "/echo");
  char body[200];
  memset(body, 'b', sizeof(body));
  /* Exactly the route's cap (64) is fine. */
  hreq_full("POST", u, "text/plain", body, 64, 0, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(strstr(r.body, "len=64 "));
  hres_free(&r);
  /* One more byte, announced by Content-Length: 413 before reading it. */
  hreq_full("POST", u, "text/plain", body, 65, 0, NULL, &r);
  ck_assert_int_eq(r.status, 413);
  ck_assert_str_eq(r.body, "413 request entity too large\n");
  hres_free(&r);
  /* Chunked, so the size is only known while reading. */
  hreq_full("PUT", u, "text/plain", NULL, 0, 5000, NULL, &r);
  ck_assert_int_eq(r.status, 413);
  hres_free(&r);
  hreq_full("PUT", u, "text/plain", NULL, 0, 50, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_ptr_nonnull(strstr(r.body, "len=50 "));
  hres_free(&r);
  /* A client that waits for "100 Continue" gets the 413 instead, at once. */
  int efd = raw_connect(gb_http_port(srv));
  raw_send(efd, "PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
                "Expect: 100-continue\r\n\r\n");
  char ebuf[2048];
  int eclosed;
  raw_read_all(efd, ebuf, sizeof(ebuf), 5000, &eclosed);
  ck_assert_msg(!strncmp(ebuf, "HTTP/1.1 413", 12), "got: %s", ebuf);
  close(efd);
  /* A huge announced body on the server-wide cap (1 MiB). */
  int fd = raw_connect(gb_http_port(srv));
  raw_send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n");
  char buf[2048];
  int closed;
  raw_read_all(fd, buf, sizeof(buf), 5000, &closed);
  ck_assert_msg(!strncmp(buf, "HTTP/1.1 413", 12), "got: %s", buf);
  close(fd);
  gb_http_stop(srv);
}
END_TEST

START_TEST(test_malformed_http) {
  struct gb_http *srv = start_default();
  const char *reqs[] = {
      "GARBAGE\r\n\r\n",
      "GET /hello HTTP/1.1\r\nContent-Length: abc\r\nHost: x\r\n\r\n",
      "\x01\x02\x03\x04\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof(reqs) / sizeof(*reqs); i++) {
    int fd = raw_connect(gb_http_port(srv));
    raw_send(fd, reqs[i]);
    char buf[2048];
    int closed;
    raw_read_all(fd, buf, sizeof(buf), 5000, &closed);
    ck_assert_msg(!strncmp(buf, "HTTP/1.1 400", 12) || (closed && buf[0] == '\0'),
                  "request %zu got: %s", i, buf);
    close(fd);
  }
  /* The server still works. */
  char u[256];
  struct hres r;
  url(u, sizeof(u), srv, "/hello");
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  hres_free(&r);
  gb_http_stop(srv);
}
END_TEST

/* A body trickling in past the request timeout: libmicrohttpd 0.9.75 cannot
 * queue an answer in the middle of a body, so the connection is closed (as Go's
 * ReadTimeout does); the server keeps serving others. */
START_TEST(test_request_timeout) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.request_timeout_s = 1;
  struct gb_http *srv = start(&cfg);
  int fd = raw_connect(gb_http_port(srv));
  raw_send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n12345");
  sleep(2);
  raw_send(fd, "67890");
  char buf[2048];
  int closed;
  raw_read_all(fd, buf, sizeof(buf), 5000, &closed);
  ck_assert_msg(closed && (buf[0] == '\0' || !strncmp(buf, "HTTP/1.1 408", 12)), "got: %s", buf);
  close(fd);
  ck_assert_uint_eq(gb_http_inflight(srv), 0);
  char u[256];
  struct hres r;
  url(u, sizeof(u), srv, "/hello");
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  hres_free(&r);
  gb_http_stop(srv);
}
END_TEST

/* Reads from fd until `needle` arrives (at most 5 s); returns 1 if it did. */
static int read_until(int fd, const char *needle) {
  char buf[4096];
  size_t n = 0;
  for (int i = 0; i < 100; i++) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0)
      continue;
    ssize_t got = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
    if (got <= 0)
      return 0;
    n += (size_t)got;
    buf[n] = '\0';
    if (strstr(buf, needle))
      return 1;
  }
  return 0;
}

START_TEST(test_idle_timeout_and_connection_limit) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.idle_timeout_s = 2;
  cfg.max_connections = 2;
  struct gb_http *srv = start(&cfg);
  /* Two keep-alive connections, each served once, so both are surely
   * accepted and now idle. */
  int a = raw_connect(gb_http_port(srv));
  int b = raw_connect(gb_http_port(srv));
  raw_send(a, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  raw_send(b, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  ck_assert(read_until(a, "hello world"));
  ck_assert(read_until(b, "hello world"));
  /* A third connection is over the limit: libmicrohttpd stops accepting, so
   * it waits in the listen backlog and is not served while the two last. */
  char u[256];
  struct hres r;
  url(u, sizeof(u), srv, "/hello");
  hreq_timeout_ms = 400;
  hreq("GET", u, NULL, &r);
  hreq_timeout_ms = 20000;
  ck_assert_msg(r.cc == CURLE_OPERATION_TIMEDOUT, "third connection: curl %d status %ld", r.cc,
                r.status);
  hres_free(&r);
  /* The idle connections are closed by the server after the idle timeout. */
  char buf[64];
  int closed_a, closed_b;
  raw_read_all(a, buf, sizeof(buf), 6000, &closed_a);
  raw_read_all(b, buf, sizeof(buf), 6000, &closed_b);
  ck_assert(closed_a && closed_b);
  close(a);
  close(b);
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  hres_free(&r);
  gb_http_stop(srv);
}
END_TEST

/* ---- concurrency and shutdown ------------------------------------------- */

#define CLIENTS 8
#define PER_CLIENT 25

struct client {
  unsigned port;
  int id;
  int ok;
};

static void *client_main(void *arg) {
  struct client *c = arg;
  char u[128], body[64], want[80];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/echo", c->port);
  for (int i = 0; i < PER_CLIENT; i++) {
    snprintf(body, sizeof(body), "c%d-r%d", c->id, i);
    struct hres r;
    hreq_full("POST", u, "text/plain", body, strlen(body), 0, NULL, &r);
    snprintf(want, sizeof(want), "body=%s", body);
    if (r.cc == CURLE_OK && r.status == 200 && strstr(r.body, want))
      c->ok++;
    hres_free(&r);
  }
  return NULL;
}

START_TEST(test_concurrent_pool) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.threads = 4;
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_service_metrics sm;
  ck_assert_int_eq(gb_service_metrics_register(reg, "t", &sm, NULL), 0);
  cfg.requests = sm.http_requests;
  cfg.name = "pool";
  struct gb_http *srv = start(&cfg);
  pthread_t t[CLIENTS];
  struct client c[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    c[i] = (struct client){gb_http_port(srv), i, 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, client_main, &c[i]), 0);
  }
  for (int i = 0; i < CLIENTS; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(c[i].ok, PER_CLIENT);
  }
  gb_http_stop(srv);
  double v = 0;
  ck_assert_int_eq(gb_metric_value(sm.http_requests, (const char *[]){"pool", "/echo", "200"}, &v),
                   0);
  ck_assert(v == CLIENTS * PER_CLIENT);
  gb_metrics_free(reg);
}
END_TEST

struct slow_call {
  unsigned port;
  struct hres r;
};

static void *slow_client(void *arg) {
  struct slow_call *s = arg;
  char u[128];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/slow", s->port);
  hreq("GET", u, NULL, &s->r);
  return NULL;
}

START_TEST(test_graceful_stop) {
  struct gb_http *srv = start_default();
  unsigned port = gb_http_port(srv);
  atomic_store(&slow_started, 0);
  atomic_store(&stop_called, 0);
  struct slow_call sc = {port, {0}};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, slow_client, &sc), 0);
  while (!atomic_load(&slow_started)) {
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  ck_assert_uint_eq(gb_http_inflight(srv), 1);
  atomic_store(&stop_called, 1);
  gb_http_stop(srv); /* waits for the slow request */
  pthread_join(t, NULL);
  ck_assert_int_eq(sc.r.cc, CURLE_OK);
  ck_assert_int_eq(sc.r.status, 200);
  ck_assert_str_eq(sc.r.body, "slow done");
  ck_assert_str_eq(sc.r.connection, "close");
  hres_free(&sc.r);
  /* Nothing listens any more. */
  char u[128];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/hello", port);
  struct hres r;
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.cc, CURLE_COULDNT_CONNECT);
  hres_free(&r);
}
END_TEST

START_TEST(test_stop_with_stalled_client) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.grace_ms = 200;
  struct gb_http *srv = start(&cfg);
  /* A client that announces a body and never sends it. */
  int fd = raw_connect(gb_http_port(srv));
  raw_send(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\nabc");
  for (int i = 0; i < 1000 && gb_http_inflight(srv) == 0; i++) {
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  ck_assert_uint_eq(gb_http_inflight(srv), 1);
  gb_http_stop(srv); /* must return after the grace period, not hang */
  char buf[64];
  int closed;
  raw_read_all(fd, buf, sizeof(buf), 5000, &closed);
  ck_assert(closed);
  close(fd);
}
END_TEST

START_TEST(test_start_errors) {
  static const struct gb_http_route ok[] = {{"/hello", 0, GB_HTTP_GET, hello, "x", 0}};
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  cfg.address = "localhost"; /* names are not resolved: numeric only */
  ck_assert_int_eq(gb_http_start(&cfg, ok, 1, &srv, &d), GC_EINVAL);
  ck_assert_ptr_null(srv);
  cfg.address = "127.0.0.1";
  cfg.port = 70000;
  ck_assert_int_eq(gb_http_start(&cfg, ok, 1, &srv, &d), GC_EINVAL);
  cfg.port = 0;
  cfg.tls_cert_file = "/nonexistent/cert.pem";
  ck_assert_int_eq(gb_http_start(&cfg, ok, 1, &srv, &d), GC_EINVAL); /* key missing */
  cfg.tls_key_file = "/nonexistent/key.pem";
  /* A missing file is GC_ENOTFOUND, as for every file gb_file reads. */
  ck_assert_int_eq(gb_http_start(&cfg, ok, 1, &srv, &d), GC_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(d.msgs[d.n - 1], "/nonexistent/cert.pem"));
  cfg.tls_cert_file = cfg.tls_key_file = NULL;
  struct gb_http_route dup[] = {ok[0], ok[0]};
  ck_assert_int_eq(gb_http_start(&cfg, dup, 2, &srv, &d), GC_EINVAL);
  struct gb_http_route nohandler[] = {{"/x", 0, GB_HTTP_GET, NULL, NULL, 0}};
  ck_assert_int_eq(gb_http_start(&cfg, nohandler, 1, &srv, &d), GC_EINVAL);
  struct gb_http_route relative[] = {{"x", 0, GB_HTTP_GET, hello, NULL, 0}};
  ck_assert_int_eq(gb_http_start(&cfg, relative, 1, &srv, &d), GC_EINVAL);
  /* The same port twice: the second bind fails. */
  ck_assert_int_eq(gb_http_start(&cfg, ok, 1, &srv, &d), 0);
  struct gb_http *second = NULL;
  cfg.port = gb_http_port(srv);
  ck_assert_int_eq(gb_http_start(&cfg, ok, 1, &second, &d), GC_EIO);
  ck_assert_ptr_null(second);
  gb_http_stop(srv);
  gb_http_stop(NULL);
  ck_assert_uint_ge(d.errors, 8);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_ipv6_loopback) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "::1";
  static const struct gb_http_route ok[] = {{"/hello", 0, GB_HTTP_GET, hello, "six", 0}};
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  int rc = gb_http_start(&cfg, ok, 1, &srv, &d);
  gc_diags_destroy(&d);
  /* A sandbox without IPv6 cannot bind ::1; then the failure must be clean. */
  if (rc != 0) {
    ck_assert_int_eq(rc, GC_EIO);
    return;
  }
  char u[128];
  snprintf(u, sizeof(u), "http://[::1]:%u/hello", gb_http_port(srv));
  struct hres r;
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "hello six");
  hres_free(&r);
  gb_http_stop(srv);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("http_server");
  TCase *tc = tcase_create("server");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_routes);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_body_limit);
  tcase_add_test(tc, test_malformed_http);
  tcase_add_test(tc, test_request_timeout);
  tcase_add_test(tc, test_idle_timeout_and_connection_limit);
  tcase_add_test(tc, test_concurrent_pool);
  tcase_add_test(tc, test_graceful_stop);
  tcase_add_test(tc, test_stop_with_stalled_client);
  tcase_add_test(tc, test_start_errors);
  tcase_add_test(tc, test_ipv6_loopback);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return gb_testhttp_main(suite(), GB_LOG_ERROR);
}
