/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve_sched, serve's wiring of the scheduler endpoints, with a fed
 * model and the real plan, writing Events to the stand-in API server: a
 * gang jobEnqueueable rejects gets one Warning GangNotEnqueueable Event on
 * its PodGroup however often Volcano asks, the Permit that follows one
 * Normal GangEnqueueable, and the endpoint listens on sched.address.
 * Waits poll with a generous bound and never assert a duration.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../http/http_client.h"
#include "../sched/sched_fixture.h"
#include "gb_serve_config.h"
#include "gb_serve_config_test.h"
#include "gb_kube_client.h"
#include "gb_kube_config.h"
#include "gb_standin.h"
#include "gb_model.h"
#include "gb_model_test.h"
#include "gb_plan.h"
#include "gb_serve_sched.h"
#include "gb_testhttp.h"

static struct gb_standin standin;
static struct gb_kube_client *cli;

static void start_server(void) {
  ck_assert_int_eq(gb_standin_start(&standin), 0);
  cli = standin.cli;
  json_object *ns = json_tokener_parse(
      "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-a\"}}");
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  ck_assert_int_eq(gb_kube_client_create(cli, "/api/v1/namespaces", ns, NULL, &e), 0);
  json_object_put(ns);
}

static void stop_server(void) { gb_standin_stop(&standin); }

static void feed(struct gb_model *m, const char *kind, const char *json) {
  ck_assert_int_eq(gb_model_feed(m, kind, 0, json, NULL), 0);
}

static void node(struct gb_model *m, const char *name, const char *rack) {
  char b[512];
  snprintf(b, sizeof(b),
           "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"rack\":\"%s\"}},\"spec\":{},\"status\":"
           "{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":\"8\","
           "\"pods\":\"110\"}}}",
           name, rack);
  feed(m, "Node", b);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Reasons and counts of the PodGroup Events in team-a, sorted:
 * "R1:1,R2:1,". */
static void events(char *out, size_t size) {
  const char *r[16];
  size_t n_r = 0;
  json_object *list = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  ck_assert_int_eq(gb_kube_client_get(cli, "/api/v1/namespaces/team-a/events", &list, &e), 0);
  out[0] = '\0';
  json_object *items = NULL;
  json_object_object_get_ex(list, "items", &items);
  for (size_t i = 0; items && i < json_object_array_length(items); i++) {
    json_object *ev = json_object_array_get_idx(items, i), *io, *kind, *reason;
    if (!json_object_object_get_ex(ev, "involvedObject", &io) ||
        !json_object_object_get_ex(io, "kind", &kind) ||
        strcmp(json_object_get_string(kind), "PodGroup") ||
        !json_object_object_get_ex(ev, "reason", &reason))
      continue;
    json_object *count = NULL;
    json_object_object_get_ex(ev, "count", &count);
    static char buf[16][96];
    if (n_r < 16) {
      snprintf(buf[n_r], sizeof(buf[n_r]), "%s:%d", json_object_get_string(reason),
               count ? json_object_get_int(count) : 0);
      r[n_r] = buf[n_r];
      n_r++;
    }
  }
  qsort(r, n_r, sizeof(r[0]), cmp_str);
  for (size_t i = 0; i < n_r; i++) {
    size_t n = strlen(out);
    snprintf(out + n, size - n, "%s,", r[i]);
  }
  json_object_put(list);
}

static void wait_events(const char *want) {
  char got[512] = "";
  for (int i = 0; i < 600; i++) {
    events(got, sizeof(got));
    if (!strcmp(got, want))
      return;
    usleep(50000);
  }
  ck_abort_msg("events %s, want %s", got, want);
}

static char *job(void) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 24);
  gb_buf_addstr(&b, "{\"job\":{\"Name\":\"tj-big\",\"Namespace\":\"team-a\",\"MinAvailable\":2,"
                    "\"NetworkTopology\":{\"mode\":\"hard\",\"highestTierAllowed\":1},\"Tasks\":{");
  for (int i = 0; i < 2; i++) {
    char uid[8];
    snprintf(uid, sizeof(uid), "t%d", i);
    gb_buf_printf(&b, "%s\"%s\":", i ? "," : "", uid);
    fx_task(&b, "team-a", uid, uid, "team-a/tj-big", "tj-big", NULL);
  }
  gb_buf_addstr(&b, "},\"PodGroup\":{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":"
                    "\"gangbridge\"}}}}}");
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  return out;
}

static void enqueue(unsigned port, const char *want) {
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/volcano/jobEnqueueable", port);
  char *body = job();
  struct hres r;
  hreq("POST", url, body, &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, want);
  hres_free(&r);
  free(body);
}

/* A port free now, for sched.address (the wiring takes a fixed address).  It is drawn from
 * below the kernel's ephemeral range (32768 and up by default), where bind(0) and outgoing
 * connections never take it between this call and the server's own bind. */
static unsigned free_port(void) {
  for (unsigned seed = (unsigned)getpid();; seed = seed * 1103515245u + 12345u) {
    unsigned port = 10000 + (seed >> 8) % 22000;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    if (ok) return port;
  }
}

START_TEST(one_event_per_verdict_change) {
  start_server();
  static const char *const levels[] = {"rack"};
  struct gb_plan *plan = NULL;
  struct gb_plan_opts po = {0};
  ck_assert_int_eq(gb_plan_new(&po, &plan), 0);
  struct gb_model_opts mo = {.levels = levels, .n_levels = 1, .plan = plan};
  struct gb_model *m = NULL;
  ck_assert_int_eq(gb_model_new(&mo, &m, NULL), 0);
  node(m, "n1", "r1");
  feed(m, "Pod",
       "{\"metadata\":{\"namespace\":\"team-b\",\"name\":\"f\",\"uid\":\"uf\",\"resourceVersion\":"
       "\"1\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"resources\":"
       "{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}]},\"status\":{\"phase\":\"Running\"}}");
  ck_assert_int_eq(gb_model_feed_done(m), 0);

  struct gb_serve_config cfg;
  ck_assert_int_eq(gb_serve_config_init(&cfg, NULL), 0);
  char addr[64];
  unsigned port = free_port();
  snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_set(&cfg, "sched.address", addr, &d), 0);
  ck_assert_int_eq(gb_serve_config_set(&cfg, "events.minInterval", "0s", &d), 0);
  struct gb_serve_sched *ss = NULL;
  ck_assert_int_eq(
      gb_serve_sched_start(&cfg, m, plan, NULL, NULL, cli, NULL, NULL, NULL, NULL, &ss, &d), 0);
  ck_assert_ptr_nonnull(ss);

  enqueue(port, "{\"status\":-1}");
  enqueue(port, "{\"status\":-1}");
  enqueue(port, "{\"status\":-1}");
  wait_events("GangNotEnqueueable:1,");
  node(m, "n2", "r1"); /* two free nodes in the same rack: the gang fits */
  node(m, "n3", "r1");
  enqueue(port, "{\"status\":1}");
  enqueue(port, "{\"status\":1}");
  wait_events("GangEnqueueable:1,GangNotEnqueueable:1,");

  gb_serve_sched_free(ss);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&cfg);
  gb_model_free(m);
  gb_plan_free(plan);
  stop_server();
}
END_TEST

START_TEST(off_without_address) {
  struct gb_serve_config cfg;
  ck_assert_int_eq(gb_serve_config_init(&cfg, NULL), 0);
  struct gb_serve_sched *ss = (struct gb_serve_sched *)&cfg; /* must be reset */
  ck_assert_int_eq(
      gb_serve_sched_start(&cfg, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &ss, NULL),
      0);
  ck_assert_ptr_null(ss);
  gb_serve_config_destroy(&cfg);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("serve_sched");
  TCase *tc = tcase_create("events");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, one_event_per_verdict_change);
  tcase_add_test(tc, off_without_address);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return gb_testhttp_main(suite(), GB_LOG_ERROR); }
