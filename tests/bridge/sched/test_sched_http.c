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
#include "gb_testhttp.h"
#include "sched_fixture.h"

static struct fx_backend fb;
static struct gb_sched *S;
static char base[64];

static void start(size_t max_body, size_t max_body_total) {
  memset(&fb, 0, sizeof(fb));
  struct gb_sched_backend be = fx_backend_of(&fb);
  struct gb_sched_config cfg = {0};
  cfg.max_body = max_body;
  cfg.max_list_body = max_body;
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
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return gb_testhttp_main(suite(), GB_LOG_ERROR); }
