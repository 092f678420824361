/* SPDX-License-Identifier: Apache-2.0
 *
 * The scheduler endpoint on its own server (127.0.0.1, ephemeral port):
 * bodies over a verb's cap get 413, onSessionOpen's body is read and
 * dropped whatever its size (never held, so not refused by the bodies'
 * memory bound), other methods 405, and a realistic predicate and
 * jobEnqueueable round trip over HTTP.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../http/http_client.h"
#include "gb_http.h"
#include "gb_sched.h"
#include "gb_sched_test.h"
#include "gb_testhttp.h"
#include "sched_fixture.h"

static struct fx_source fb;
static struct gb_sched *S;
static char base[64];

static void start_caps(size_t max_body, size_t max_list_body, size_t max_body_total) {
  memset(&fb, 0, sizeof(fb));
  struct gb_sched_source be = fx_source_of(&fb);
  struct gb_sched_config cfg = {0};
  cfg.max_body = max_body;
  cfg.max_list_body = max_list_body;
  cfg.max_session_body = 64u << 20;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_sched_new(&cfg, &be, &S, &d), 0);
  struct gb_http_config h;
  gb_http_config_init(&h);
  h.address = "127.0.0.1";
  h.port = 0;
  if (max_body_total)
    h.max_body_total = max_body_total;
  ck_assert_int_eq(gb_sched_start(S, &h, &d), 0);
  gc_diags_destroy(&d);
  snprintf(base, sizeof(base), "http://127.0.0.1:%u", gb_sched_port(S));
}

static void start(size_t max_body, size_t max_body_total) {
  start_caps(max_body, max_body, max_body_total);
}

static void stop(void) {
  gb_sched_free(S);
  S = NULL;
}

static void url(char *out, size_t size, const char *path) {
  snprintf(out, size, "%s%s", base, path);
}

START_TEST(predicate_round_trip) {
  start(0, 0);
  char u[128];
  url(u, sizeof(u), "/volcano/predicate");
  char *body = fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", 30);
  struct hres r;
  hreq("POST", u, body, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.ctype, "application/json");
  ck_assert_str_eq(r.body, "{\"status\":\"gangbridge: node gpu-node-3 is not in domain leaf-1 "
                           "chosen for team-a/tj-llama\",\"code\":2}");
  hres_free(&r);
  free(body);
  hreq("GET", u, NULL, &r);
  ck_assert_int_eq(r.status, 405);
  hres_free(&r);
  stop();
}
END_TEST

START_TEST(over_cap_413) {
  start(64u << 10, 0);
  char u[128];
  url(u, sizeof(u), "/volcano/predicate");
  char *body = fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", 100);
  ck_assert_uint_gt(strlen(body), 64u << 10);
  struct hres r;
  hreq("POST", u, body, &r);
  ck_assert_int_eq(r.status, 413);
  hres_free(&r);
  url(u, sizeof(u), "/kube/filter");
  hreq("POST", u, body, &r);
  ck_assert_int_eq(r.status, 413);
  hres_free(&r);
  free(body);
  stop();
}
END_TEST

/* kube-scheduler with nodeCacheCapable: false sends every candidate Node
 * object: 5,000 full Nodes of about 5 KB (25 MB) must fit with
 * deploy/configmap.yaml's caps (4 MiB small bodies, 128 MiB list bodies);
 * 1,000 used to get 413 under the small-body cap. */
START_TEST(kube_filter_5000_full_nodes) {
  start_caps(4u << 20, 128u << 20, 0);
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  gb_buf_addstr(&b, "{\"Pod\":");
  fx_pod(&b, "team-a", "tj-llama-node-0-1", "u1", "tj-llama", NULL);
  gb_buf_addstr(&b, ",\"Nodes\":{\"kind\":\"NodeList\",\"items\":[");
  char pad[4801];
  memset(pad, 'x', sizeof(pad) - 1);
  pad[sizeof(pad) - 1] = '\0';
  for (int i = 0; i < 5000; i++)
    gb_buf_printf(&b,
                  "%s{\"metadata\":{\"name\":\"gpu-node-%d\",\"annotations\":{\"pad\":\"%s\"}},"
                  "\"status\":{\"allocatable\":{\"cpu\":\"64\",\"nvidia.com/gpu\":\"8\"}}}",
                  i ? "," : "", i, pad);
  gb_buf_addstr(&b, "]},\"NodeNames\":null}");
  ck_assert_int_eq(b.err, 0);
  ck_assert_uint_gt(gb_buf_len(&b), 24000000);
  char u[128];
  url(u, sizeof(u), "/kube/filter");
  struct hres r;
  hreq("POST", u, gb_buf_ptr(&b), &r);
  ck_assert_int_eq(r.status, 200);
  /* gpu-node-17 and -18 are the gang's domain in the fixture's plan. */
  ck_assert_ptr_nonnull(strstr(r.body, "\"name\":\"gpu-node-17\""));
  ck_assert_ptr_nonnull(strstr(r.body, "\"FailedNodes\":{\"gpu-node-0\":"));
  hres_free(&r);
  url(u, sizeof(u), "/kube/prioritize");
  hreq("POST", u, gb_buf_ptr(&b), &r);
  ck_assert_int_eq(r.status, 200);
  hres_free(&r);
  gb_buf_free(&b);
  stop();
}
END_TEST

/* A body over its cap is answered 413 after it is drained, as the docs
 * say: a 25 MB body over a 4 MiB cap used to be refused at once, and the
 * client saw its connection reset mid-upload instead of the answer. */
START_TEST(oversize_413_after_drain) {
  start_caps(4u << 20, 128u << 20, 0);
  /* A client that writes its whole body before it reads, as Go's
   * net/http does: an answer sent before the body is read is followed by
   * a reset, and the write (or the read) fails instead of seeing 413. */
  size_t n = 25u << 20;
  char *body = malloc(n);
  ck_assert_ptr_nonnull(body);
  memset(body, ' ', n);
  body[0] = '{';
  body[n - 1] = '}';
  int fd = raw_connect(gb_sched_port(S));
  char head[256];
  snprintf(head, sizeof(head),
           "POST /volcano/predicate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: %zu\r\n\r\n",
           n);
  raw_send(fd, head);
  size_t sent = 0;
  while (sent < n) {
    ssize_t w = send(fd, body + sent, n - sent, MSG_NOSIGNAL);
    if (w <= 0)
      break;
    sent += (size_t)w;
  }
  ck_assert_msg(sent == n, "the connection was cut after %zu of %zu bytes", sent, n);
  char buf[512];
  int closed;
  raw_read_all(fd, buf, sizeof(buf), 10000, &closed);
  ck_assert_msg(!strncmp(buf, "HTTP/1.1 413", 12), "got: %s", buf);
  close(fd);
  free(body);
  stop();
}
END_TEST

START_TEST(session_open_body_dropped) {
  /* 24 MiB of NodeInfos, far over the 64 KiB cap of the other verbs and
   * the 4 MiB all bodies held at once may take: read, dropped, answered
   * 200; the overlay is reset. */
  start(64u << 10, 4u << 20);
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  gb_buf_addstr(&b, "{\"Jobs\":{},\"Nodes\":{");
  for (int i = 0; gb_buf_len(&b) < (24u << 20); i++) {
    char name[32];
    snprintf(name, sizeof(name), "node-%d", i);
    gb_buf_printf(&b, "%s\"%s\":", i ? "," : "", name);
    fx_node(&b, name, 20);
  }
  gb_buf_addstr(&b,
                "},\"Queues\":{},\"NamespaceInfo\":{},\"RevocableNodes\":{},\"NodeList\":null}");
  ck_assert_int_eq(b.err, 0);
  char u[128];
  url(u, sizeof(u), "/volcano/onSessionOpen");
  struct hres r;
  hreq("POST", u, gb_buf_ptr(&b), &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "{}");
  hres_free(&r);
  gb_buf_free(&b);
  struct gb_sched_stats st;
  gb_sched_stats(S, &st);
  ck_assert_int_eq(st.sessions, 1);
  stop();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_http");
  TCase *tc = tcase_create("server");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, predicate_round_trip);
  tcase_add_test(tc, over_cap_413);
  tcase_add_test(tc, session_open_body_dropped);
  tcase_add_test(tc, kube_filter_5000_full_nodes);
  tcase_add_test(tc, oversize_413_after_drain);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return gb_testhttp_main(suite(), GB_LOG_ERROR); }
