/* SPDX-License-Identifier: Apache-2.0
 *
 * /healthz, /livez, /readyz (gb_health) and /metrics over a real HTTP server:
 * kube-apiserver's answer format (plain, ?verbose, failures with reasons
 * withheld, ?exclude, /readyz/<check>), flags flipped from another thread,
 * the shutdown check, and the metrics endpoint's content type and counting.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_health.h"
#include "gb_health_test.h"
#include "gb_http.h"
#include "gb_log.h"
#include "gb_metrics.h"
#include "gb_testhttp.h"
#include "http_client.h"

struct fixture {
  struct gb_health *h;
  struct gb_metrics *reg;
  struct gb_service_metrics sm;
  struct gb_http *srv;
};

static int api_reachable = 1;

static int api_check(void *ctx, char *reason, size_t size) {
  int *ok = ctx;
  if (*ok)
    return 0;
  snprintf(reason, size, "GET /version: connection refused");
  return 1;
}

static void up(struct fixture *f) {
  f->h = gb_health_new();
  ck_assert_ptr_nonnull(f->h);
  ck_assert_int_eq(gb_health_add_flag(f->h, GB_HEALTH_READY, "informers-synced", 0,
                                      "trainjobs not synced"), 0);
  ck_assert_int_eq(gb_health_add_flag(f->h, GB_HEALTH_READY, "leader-or-standby", 1, NULL), 0);
  ck_assert_int_eq(gb_health_add_check(f->h, GB_HEALTH_LIVE | GB_HEALTH_READY, "api-server",
                                       api_check, &api_reachable), 0);
  f->reg = gb_metrics_new();
  ck_assert_int_eq(gb_service_metrics_register(f->reg, "test", &f->sm, NULL), 0);
  struct gb_http_route routes[4];
  ck_assert_uint_eq(gb_health_routes(f->h, routes, 4), 3);
  routes[3] = gb_health_metrics_route(f->reg, "/metrics");
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.name = "probe";
  cfg.requests = f->sm.http_requests;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_http_start(&cfg, routes, 4, &f->srv, &d), 0);
  gc_diags_destroy(&d);
  api_reachable = 1;
}

static void down(struct fixture *f) {
  gb_http_stop(f->srv);
  gb_health_free(f->h);
  gb_metrics_free(f->reg);
}

static void get(struct fixture *f, const char *path, struct hres *r) {
  char u[256];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u%s", gb_http_port(f->srv), path);
  hreq("GET", u, NULL, r);
  ck_assert_int_eq(r->cc, CURLE_OK);
}

START_TEST(test_liveness) {
  struct fixture f;
  up(&f);
  struct hres r;
  get(&f, "/healthz", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "ok");
  ck_assert_str_eq(r.ctype, "text/plain; charset=utf-8");
  hres_free(&r);
  get(&f, "/livez?verbose", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "[+]ping ok\n[+]api-server ok\nlivez check passed\n");
  hres_free(&r);
  /* Readiness-only checks do not affect liveness. */
  get(&f, "/healthz?verbose", &r);
  ck_assert_str_eq(r.body, "[+]ping ok\n[+]api-server ok\nhealthz check passed\n");
  hres_free(&r);
  down(&f);
}
END_TEST

START_TEST(test_readiness) {
  struct fixture f;
  up(&f);
  struct hres r;
  /* Not synced yet: 500, every check listed, the reason withheld. */
  get(&f, "/readyz", &r);
  ck_assert_int_eq(r.status, 500);
  ck_assert_str_eq(r.body, "[+]ping ok\n[+]shutdown ok\n[-]informers-synced failed: reason "
                           "withheld\n[+]leader-or-standby ok\n[+]api-server ok\nreadyz check "
                           "failed\n");
  hres_free(&r);
  ck_assert(!gb_health_ok(f.h, GB_HEALTH_READY));
  ck_assert(gb_health_ok(f.h, GB_HEALTH_LIVE));
  /* One check on its own shows its reason. */
  get(&f, "/readyz/informers-synced", &r);
  ck_assert_int_eq(r.status, 500);
  ck_assert_str_eq(r.body, "internal server error: trainjobs not synced\n");
  hres_free(&r);
  get(&f, "/readyz/no-such-check", &r);
  ck_assert_int_eq(r.status, 404);
  hres_free(&r);
  /* Excluding the failing check makes it pass, and says so. */
  get(&f, "/readyz?exclude=informers-synced&exclude=nope&verbose", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "[+]ping ok\n[+]shutdown ok\n[+]informers-synced excluded: ok\n"
                           "[+]leader-or-standby ok\n[+]api-server ok\nwarn: some health checks "
                           "cannot be excluded: no matches for \"nope\"\nreadyz check passed\n");
  hres_free(&r);
  /* Synced: plain "ok". */
  ck_assert_int_eq(gb_health_set_flag(f.h, "informers-synced", 1, NULL), 0);
  ck_assert_int_eq(gb_health_set_flag(f.h, "no-such-flag", 1, NULL), GC_ENOTFOUND);
  get(&f, "/readyz", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "ok");
  hres_free(&r);
  get(&f, "/readyz/informers-synced", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.body, "ok");
  hres_free(&r);
  /* A failing callback check fails both endpoints. */
  api_reachable = 0;
  get(&f, "/healthz", &r);
  ck_assert_int_eq(r.status, 500);
  ck_assert_ptr_nonnull(strstr(r.body, "[-]api-server failed: reason withheld\n"));
  hres_free(&r);
  get(&f, "/livez/api-server", &r);
  ck_assert_str_eq(r.body, "internal server error: GET /version: connection refused\n");
  hres_free(&r);
  api_reachable = 1;
  /* Shutting down: not ready, still alive. */
  gb_health_shutdown(f.h);
  get(&f, "/readyz", &r);
  ck_assert_int_eq(r.status, 500);
  ck_assert_ptr_nonnull(strstr(r.body, "[-]shutdown failed: reason withheld\n"));
  hres_free(&r);
  get(&f, "/healthz", &r);
  ck_assert_int_eq(r.status, 200);
  hres_free(&r);
  down(&f);
}
END_TEST

START_TEST(test_registration_errors) {
  struct gb_health *h = gb_health_new();
  ck_assert_int_eq(gb_health_add_flag(h, GB_HEALTH_READY, "Bad_Name", 1, NULL), GC_EINVAL);
  ck_assert_int_eq(gb_health_add_flag(h, GB_HEALTH_READY, "", 1, NULL), GC_EINVAL);
  ck_assert_int_eq(gb_health_add_flag(h, 0, "x", 1, NULL), GC_EINVAL);
  ck_assert_int_eq(gb_health_add_flag(h, GB_HEALTH_READY, "ping", 1, NULL), GC_EUSAGE);
  ck_assert_int_eq(gb_health_add_check(h, GB_HEALTH_READY, "x", NULL, NULL), GC_EINVAL);
  char name[16];
  int added = 0, rc = 0;
  for (int i = 0; i < 100 && rc == 0; i++) {
    snprintf(name, sizeof(name), "c%d", i);
    rc = gb_health_add_flag(h, GB_HEALTH_LIVE, name, 1, NULL);
    if (rc == 0)
      added++;
  }
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_int_eq(added, GB_HEALTH_MAX_CHECKS - 2); /* ping and shutdown are built in */
  gb_health_free(h);
  gb_health_free(NULL);
}
END_TEST

START_TEST(test_metrics_endpoint) {
  struct fixture f;
  up(&f);
  gb_metric_counter_inc(f.sm.reconciles, (const char *[]){GB_M_RESULT_SUCCESS});
  struct hres r;
  get(&f, "/healthz", &r);
  hres_free(&r);
  get(&f, "/nope", &r);
  hres_free(&r);
  get(&f, "/metrics", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
  ck_assert_ptr_nonnull(strstr(r.body, "gangbridge_reconciles_total{result=\"success\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(r.body, "gangbridge_http_requests_total{server=\"probe\","
                                       "route=\"/healthz\",code=\"200\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(r.body, "gangbridge_http_requests_total{server=\"probe\","
                                       "route=\"unmatched\",code=\"404\"} 1\n"));
  ck_assert_ptr_nonnull(strstr(r.body, "gangbridge_build_info{version=\"test\"} 1\n"));
  hres_free(&r);
  char u[256];
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/metrics", gb_http_port(f.srv));
  hreq("POST", u, "x", &r);
  ck_assert_int_eq(r.status, 405);
  hres_free(&r);
  down(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("http_health");
  TCase *tc = tcase_create("health");
  tcase_add_test(tc, test_liveness);
  tcase_add_test(tc, test_readiness);
  tcase_add_test(tc, test_registration_errors);
  tcase_add_test(tc, test_metrics_endpoint);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return gb_testhttp_main(suite(), GB_LOG_ERROR);
}
