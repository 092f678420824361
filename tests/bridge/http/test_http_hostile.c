/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http against hostile clients on loopback: a slowloris flood from one
 * address (127.0.0.2) must not keep another address (127.0.0.1, the
 * kubelet's stand-in) from being served, a client that trickles its headers
 * a byte at a time is cut off at the header deadline although every byte
 * resets the idle timeout, and a port taken by someone else is reported as
 * such, naming the address.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gb_http.h"
#include "gb_log.h"
#include "gb_testhttp.h"
#include "http_client.h"

#define FLOOD 12

static int hello(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  (void)ctx;
  (void)req;
  return gb_http_response_printf(resp, 200, NULL, "ok");
}

static struct gb_http *start(struct gb_http_config *cfg) {
  static const struct gb_http_route routes[] = {
      {"/healthz", 0, GB_HTTP_GET, hello, NULL, 0},
      {"/upload", 0, GB_HTTP_POST, hello, NULL, 1u << 20},
  };
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  int rc = gb_http_start(cfg, routes, 2, &srv, &d);
  ck_assert_msg(rc == 0, "start: %d %s", rc, d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
  return srv;
}

/* A TCP socket to 127.0.0.1:port whose source address is `from`; -1 when
 * the connection is refused or reset at once. */
static int connect_from(const char *from, unsigned port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  ck_assert_int_eq(inet_pton(AF_INET, from, &a.sin_addr), 1);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* 1 when the server has closed fd (EOF or reset), 0 if still open after
 * waiting wait_ms. */
static int peer_closed(int fd, int wait_ms) {
  struct pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, wait_ms) <= 0)
    return 0;
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

START_TEST(test_slowloris_from_one_address) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.max_connections = 8;
  cfg.max_per_ip = 4;
  struct gb_http *srv = start(&cfg);
  int fds[FLOOD];
  for (int i = 0; i < FLOOD; i++) {
    fds[i] = connect_from("127.0.0.2", gb_http_port(srv));
    if (fds[i] >= 0)
      send(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32, MSG_NOSIGNAL);
  }
  /* The flood holds more connections than the cap; another address is still
   * served, because one address gets at most max_per_ip of them. */
  char u[128];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/healthz", gb_http_port(srv));
  struct hres r;
  hreq_timeout_ms = 3000;
  hreq("GET", u, NULL, &r);
  hreq_timeout_ms = 20000;
  ck_assert_msg(r.cc == CURLE_OK && r.status == 200, "probe during flood: curl %d status %ld",
                r.cc, r.status);
  hres_free(&r);
  for (int i = 0; i < FLOOD; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  gb_http_stop(srv);
}
END_TEST

/* Floods from several addresses fill what the per-address cap leaves; the
 * last slots are kept for addresses holding no connection, so a probe from
 * yet another address is still served. */
START_TEST(test_reserved_slots_for_new_addresses) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.max_connections = 8;
  cfg.max_per_ip = 4;
  struct gb_http *srv = start(&cfg);
  static const char *const from[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4"};
  int fds[3 * FLOOD];
  for (int a = 0; a < 3; a++)
    for (int i = 0; i < FLOOD; i++) {
      int fd = connect_from(from[a], gb_http_port(srv));
      if (fd >= 0)
        send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32, MSG_NOSIGNAL);
      fds[a * FLOOD + i] = fd;
    }
  char u[128];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/healthz", gb_http_port(srv));
  struct hres r;
  hreq_timeout_ms = 3000;
  hreq("GET", u, NULL, &r);
  hreq_timeout_ms = 20000;
  ck_assert_msg(r.cc == CURLE_OK && r.status == 200,
                "probe during a flood from 3 addresses: curl %d status %ld", r.cc, r.status);
  hres_free(&r);
  for (int i = 0; i < 3 * FLOOD; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  gb_http_stop(srv);
}
END_TEST

START_TEST(test_header_trickle_cut_at_deadline) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.idle_timeout_s = 30;
  cfg.header_timeout_s = 1;
  struct gb_http *srv = start(&cfg);
  int fd = raw_connect(gb_http_port(srv));
  raw_send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
  /* One byte every 100 ms for up to 8 s: each byte resets the idle timeout,
   * only the total header deadline can end this. */
  int closed = 0;
  for (int i = 0; i < 80 && !closed; i++) {
    if (send(fd, "a", 1, MSG_NOSIGNAL) != 1)
      closed = 1;
    else
      closed = peer_closed(fd, 100);
  }
  ck_assert_msg(closed, "a client trickling its headers kept the connection for 8 s");
  close(fd);
  /* The server still serves. */
  char u[128];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/healthz", gb_http_port(srv));
  struct hres r;
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.status, 200);
  hres_free(&r);
  gb_http_stop(srv);
}
END_TEST

START_TEST(test_keepalive_then_trickle) {
  /* The deadline starts again after each request on a kept-alive
   * connection: a quick first request does not buy a slow second one. */
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.idle_timeout_s = 30;
  cfg.header_timeout_s = 1;
  struct gb_http *srv = start(&cfg);
  int fd = raw_connect(gb_http_port(srv));
  raw_send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  char buf[512];
  int closed = 0;
  raw_read_all(fd, buf, sizeof(buf), 500, &closed);
  ck_assert_ptr_nonnull(strstr(buf, "200 OK"));
  ck_assert(!closed);
  closed = 0;
  for (int i = 0; i < 80 && !closed; i++) {
    if (send(fd, "G", 1, MSG_NOSIGNAL) != 1)
      closed = 1;
    else
      closed = peer_closed(fd, 100);
  }
  ck_assert_msg(closed, "a kept-alive connection trickled its next request for 8 s");
  close(fd);
  gb_http_stop(srv);
}
END_TEST

START_TEST(test_address_in_use_named) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.name = "probes";
  struct gb_http *srv = start(&cfg);
  cfg.port = gb_http_port(srv);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *second = NULL;
  static const struct gb_http_route routes[] = {{"/healthz", 0, GB_HTTP_GET, hello, NULL, 0}};
  ck_assert_int_eq(gb_http_start(&cfg, routes, 1, &second, &d), GC_EIO);
  ck_assert_ptr_null(second);
  ck_assert_uint_eq(d.n, 1);
  char want[64];
  snprintf(want, sizeof(want), "127.0.0.1:%u", cfg.port);
  ck_assert_msg(strstr(d.msgs[0], want) && strstr(d.msgs[0], "in use") &&
                    !strstr(d.msgs[0], "certificate"),
                "message: %s", d.msgs[0]);
  gc_diags_destroy(&d);
  gb_http_stop(srv);
}
END_TEST

/* Bodies held at once are bounded across all requests: one that would go
 * over the total is answered 503 (after its bytes are dropped), one within
 * it is served, and the budget is given back when a request ends. */
START_TEST(test_total_body_budget) {
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.max_body_total = 100u << 10;
  struct gb_http *srv = start(&cfg);
  char u[128];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/upload", gb_http_port(srv));
  size_t big = 300u << 10, small = 40u << 10;
  char *body = malloc(big);
  ck_assert_ptr_nonnull(body);
  memset(body, 'x', big);
  struct hres r;
  for (int round = 0; round < 3; round++) {
    hreq_full("POST", u, "text/plain", body, big, 0, NULL, &r);
    ck_assert_msg(r.status == 503, "round %d: %zu bytes over a 100 KiB budget: status %ld", round,
                  big, r.status);
    hres_free(&r);
    hreq_full("POST", u, "text/plain", body, small, 0, NULL, &r);
    ck_assert_msg(r.status == 200, "round %d: %zu bytes within the budget: status %ld", round,
                  small, r.status);
    hres_free(&r);
  }
  free(body);
  gb_http_stop(srv);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("http_hostile");
  TCase *tc = tcase_create("hostile");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_slowloris_from_one_address);
  tcase_add_test(tc, test_reserved_slots_for_new_addresses);
  tcase_add_test(tc, test_header_trickle_cut_at_deadline);
  tcase_add_test(tc, test_keepalive_then_trickle);
  tcase_add_test(tc, test_address_in_use_named);
  tcase_add_test(tc, test_total_body_budget);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return gb_testhttp_main(suite(), GB_LOG_OFF);
}
