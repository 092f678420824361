/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_metrics: the exact text exposition (format 0.0.4) of
 * counters, gauges and histograms with labels, escaping, number formatting as
 * client_golang writes it, name validation, the series limit, collectors,
 * the service metric set, and exact totals when several threads update the
 * same series at once.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_metrics.h"
#include "gb_metrics_test.h"

static char *render(struct gb_metrics *reg) {
  char *out = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_metrics_render(reg, &out, &len), 0);
  ck_assert_ptr_nonnull(out);
  ck_assert_uint_eq(strlen(out), len);
  return out;
}

START_TEST(test_exact_exposition) {
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_metric *c, *g, *h, *u;
  const char *cl[] = {"result"};
  const char *hl[] = {"verb", "code"};
  ck_assert_int_eq(gb_metrics_counter(reg, "demo_requests_total", "Requests.\nSecond \\ line.",
                                      cl, 1, &c, NULL), 0);
  ck_assert_int_eq(gb_metrics_gauge(reg, "demo_depth", "Queue depth.", NULL, 0, &g, NULL), 0);
  double b[] = {0.1, 1, 10};
  ck_assert_int_eq(gb_metrics_histogram(reg, "demo_latency_seconds", "Latency.", hl, 2, b, 3, &h,
                                        NULL), 0);
  ck_assert_int_eq(gb_metrics_counter(reg, "demo_unused_total", "Never used.", cl, 1, &u, NULL),
                   0);
  ck_assert_int_eq(gb_metric_counter_inc(c, (const char *[]){"ok"}), 0);
  ck_assert_int_eq(gb_metric_counter_add(c, (const char *[]){"ok"}, 2), 0);
  ck_assert_int_eq(gb_metric_counter_inc(c, (const char *[]){"a \"q\" \\ b\nc"}), 0);
  ck_assert_int_eq(gb_metric_gauge_set(g, NULL, 7), 0);
  ck_assert_int_eq(gb_metric_gauge_add(g, NULL, -2.5), 0);
  ck_assert_int_eq(gb_metric_histogram_observe(h, (const char *[]){"GET", "200"}, 0.05), 0);
  ck_assert_int_eq(gb_metric_histogram_observe(h, (const char *[]){"GET", "200"}, 0.1),
                   0); /* le is <= */
  ck_assert_int_eq(gb_metric_histogram_observe(h, (const char *[]){"GET", "200"}, 5), 0);
  ck_assert_int_eq(gb_metric_histogram_observe(h, (const char *[]){"GET", "200"}, 100), 0);
  ck_assert_int_eq(gb_metric_histogram_observe(h, (const char *[]){"DELETE", "404"}, 0.5), 0);
  char *out = render(reg);
  const char *want =
      "# HELP demo_depth Queue depth.\n"
      "# TYPE demo_depth gauge\n"
      "demo_depth 4.5\n"
      "# HELP demo_latency_seconds Latency.\n"
      "# TYPE demo_latency_seconds histogram\n"
      "demo_latency_seconds_bucket{verb=\"DELETE\",code=\"404\",le=\"0.1\"} 0\n"
      "demo_latency_seconds_bucket{verb=\"DELETE\",code=\"404\",le=\"1\"} 1\n"
      "demo_latency_seconds_bucket{verb=\"DELETE\",code=\"404\",le=\"10\"} 1\n"
      "demo_latency_seconds_bucket{verb=\"DELETE\",code=\"404\",le=\"+Inf\"} 1\n"
      "demo_latency_seconds_sum{verb=\"DELETE\",code=\"404\"} 0.5\n"
      "demo_latency_seconds_count{verb=\"DELETE\",code=\"404\"} 1\n"
      "demo_latency_seconds_bucket{verb=\"GET\",code=\"200\",le=\"0.1\"} 2\n"
      "demo_latency_seconds_bucket{verb=\"GET\",code=\"200\",le=\"1\"} 2\n"
      "demo_latency_seconds_bucket{verb=\"GET\",code=\"200\",le=\"10\"} 3\n"
      "demo_latency_seconds_bucket{verb=\"GET\",code=\"200\",le=\"+Inf\"} 4\n"
      "demo_latency_seconds_sum{verb=\"GET\",code=\"200\"} 105.15\n"
      "demo_latency_seconds_count{verb=\"GET\",code=\"200\"} 4\n"
      "# HELP demo_requests_total Requests.\\nSecond \\\\ line.\n"
      "# TYPE demo_requests_total counter\n"
      "demo_requests_total{result=\"a \\\"q\\\" \\\\ b\\nc\"} 1\n"
      "demo_requests_total{result=\"ok\"} 3\n"
      "# HELP demo_unused_total Never used.\n"
      "# TYPE demo_unused_total counter\n";
  ck_assert_str_eq(out, want);
  free(out);
  double v;
  ck_assert_int_eq(gb_metric_value(c, (const char *[]){"ok"}, &v), 0);
  ck_assert(v == 3);
  ck_assert_int_eq(gb_metric_value(c, (const char *[]){"nope"}, &v), GC_ENOTFOUND);
  ck_assert_int_eq(gb_metric_value(h, (const char *[]){"GET", "200"}, &v), 0);
  ck_assert(v == 4);
  gb_metrics_free(reg);
}
END_TEST

START_TEST(test_number_format) {
  /* What Go's strconv.FormatFloat(v, 'g', -1, 64) writes. */
  const struct {
    double v;
    const char *s;
  } cases[] = {
      {0, "0"},           {1, "1"},
      {-1, "-1"},         {0.005, "0.005"},
      {0.1, "0.1"},       {2.5, "2.5"},
      {105.15, "105.15"}, {100000, "100000"},
      {123456, "123456"}, {1e6, "1e+06"},
      {1234567, "1.234567e+06"}, {1234567.8, "1.2345678e+06"},
      {0.0001, "0.0001"}, {0.00001, "1e-05"},
      {0.000123, "0.000123"}, {1.5e-7, "1.5e-07"},
      {0.1 + 0.2, "0.30000000000000004"}, {1e21, "1e+21"},
      {9007199254740993.0, "9.007199254740992e+15"}, {INFINITY, "+Inf"},
      {-INFINITY, "-Inf"}, {NAN, "NaN"},
      {-0.0, "-0"},       {1e-300, "1e-300"},
  };
  char buf[40];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    gb_metrics_format_double(cases[i].v, buf, sizeof(buf));
    ck_assert_msg(!strcmp(buf, cases[i].s), "case %zu: got %s, want %s", i, buf, cases[i].s);
  }
}
END_TEST

START_TEST(test_validation) {
  struct gb_metrics *reg = gb_metrics_new();
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_metric *m = NULL;
  const char *bad_names[] = {"", "1abc", "a-b", "a b", "é"};
  for (size_t i = 0; i < sizeof(bad_names) / sizeof(*bad_names); i++)
    ck_assert_int_eq(gb_metrics_counter(reg, bad_names[i], "x", NULL, 0, &m, &d), GC_EINVAL);
  ck_assert_int_eq(gb_metrics_counter(reg, NULL, "x", NULL, 0, &m, &d), GC_EINVAL);
  const char *bad_label[][1] = {{"__reserved"}, {"a:b"}, {"9x"}, {""}};
  for (size_t i = 0; i < 4; i++)
    ck_assert_int_eq(gb_metrics_gauge(reg, "ok_name", "x", bad_label[i], 1, &m, &d), GC_EINVAL);
  const char *dup[] = {"a", "a"};
  ck_assert_int_eq(gb_metrics_gauge(reg, "ok_name", "x", dup, 2, &m, &d), GC_EINVAL);
  const char *le[] = {"le"};
  ck_assert_int_eq(gb_metrics_histogram(reg, "h", "x", le, 1, NULL, 0, &m, &d), GC_EINVAL);
  double unsorted[] = {1, 0.5};
  ck_assert_int_eq(gb_metrics_histogram(reg, "h", "x", NULL, 0, unsorted, 2, &m, &d), GC_EINVAL);
  double inf[] = {1, INFINITY};
  ck_assert_int_eq(gb_metrics_histogram(reg, "h", "x", NULL, 0, inf, 2, &m, &d), GC_EINVAL);
  ck_assert_uint_ge(d.errors, 10);
  ck_assert_int_eq(gb_metrics_counter(reg, "ns:sub_total", "x", le, 1, &m, &d), 0);
  struct gb_metric *m2;
  ck_assert_int_eq(gb_metrics_gauge(reg, "ns:sub_total", "x", NULL, 0, &m2, &d), GC_EUSAGE);

  /* Updates with the wrong shape or value are refused and change nothing. */
  ck_assert_int_eq(gb_metric_counter_add(m, (const char *[]){"x"}, -1), GC_EINVAL);
  ck_assert_int_eq(gb_metric_counter_add(m, (const char *[]){"x"}, NAN), GC_EINVAL);
  ck_assert_int_eq(gb_metric_counter_add(m, (const char *[]){"x"}, INFINITY), GC_EINVAL);
  ck_assert_int_eq(gb_metric_counter_inc(m, NULL), GC_EINVAL);
  ck_assert_int_eq(gb_metric_counter_inc(m, (const char *[]){NULL}), GC_EINVAL);
  ck_assert_int_eq(gb_metric_gauge_set(m, (const char *[]){"x"}, 1), GC_EINVAL); /* not a gauge */
  ck_assert_int_eq(gb_metric_histogram_observe(m, (const char *[]){"x"}, 1), GC_EINVAL);
  char *longv = malloc(GB_METRICS_LABEL_VALUE_MAX + 2);
  memset(longv, 'v', GB_METRICS_LABEL_VALUE_MAX + 1);
  longv[GB_METRICS_LABEL_VALUE_MAX + 1] = '\0';
  ck_assert_int_eq(gb_metric_counter_inc(m, (const char *[]){longv}), GC_EINVAL);
  free(longv);
  double v;
  ck_assert_int_eq(gb_metric_value(m, (const char *[]){"x"}, &v), GC_ENOTFOUND);
  /* A NULL family is a no-op, so code can run without a registry. */
  ck_assert_int_eq(gb_metric_counter_inc(NULL, NULL), 0);
  ck_assert_int_eq(gb_metric_gauge_set(NULL, NULL, 1), 0);
  ck_assert_int_eq(gb_metric_histogram_observe(NULL, NULL, 1), 0);
  gc_diags_destroy(&d);
  gb_metrics_free(reg);
}
END_TEST

START_TEST(test_series_limit_and_clear) {
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_metric *g;
  const char *l[] = {"phase"};
  ck_assert_int_eq(gb_metrics_gauge(reg, "pg", "x", l, 1, &g, NULL), 0);
  gb_metric_set_max_series(g, 3);
  char name[16];
  for (int i = 0; i < 5; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    int rc = gb_metric_gauge_set(g, (const char *[]){name}, i);
    ck_assert_int_eq(rc, i < 3 ? 0 : GC_ELIMIT);
  }
  ck_assert_uint_eq(gb_metric_dropped(g), 2);
  /* Existing series still update past the limit. */
  ck_assert_int_eq(gb_metric_gauge_set(g, (const char *[]){"p0"}, 9), 0);
  char *out = render(reg);
  ck_assert_str_eq(out, "# HELP pg x\n# TYPE pg gauge\npg{phase=\"p0\"} 9\npg{phase=\"p1\"} 1\n"
                        "pg{phase=\"p2\"} 2\n");
  free(out);
  gb_metric_clear(g);
  out = render(reg);
  ck_assert_str_eq(out, "# HELP pg x\n# TYPE pg gauge\n");
  free(out);
  /* Many series: the table grows and every series is kept. */
  gb_metric_set_max_series(g, 0);
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof(name), "s%05d", i);
    ck_assert_int_eq(gb_metric_gauge_set(g, (const char *[]){name}, i), 0);
  }
  for (int i = 0; i < 5000; i += 499) {
    double v;
    snprintf(name, sizeof(name), "s%05d", i);
    ck_assert_int_eq(gb_metric_value(g, (const char *[]){name}, &v), 0);
    ck_assert(v == i);
  }
  gb_metrics_free(reg);
}
END_TEST

struct collect_ctx {
  struct gb_metric *g;
  int calls;
};

static void collect(void *ctx, struct gb_metrics *reg) {
  struct collect_ctx *c = ctx;
  c->calls++;
  gb_metric_clear(c->g);
  gb_metric_gauge_set(c->g, (const char *[]){"volcano", "Running"}, 10 + c->calls);
}

START_TEST(test_collector) {
  struct gb_metrics *reg = gb_metrics_new();
  struct collect_ctx cc = {NULL, 0};
  const char *l[] = {"backend", "phase"};
  ck_assert_int_eq(gb_metrics_gauge(reg, "pgs", "x", l, 2, &cc.g, NULL), 0);
  ck_assert_int_eq(gb_metrics_add_collector(reg, collect, &cc), 0);
  char *out = render(reg);
  ck_assert_ptr_nonnull(strstr(out, "pgs{backend=\"volcano\",phase=\"Running\"} 11\n"));
  free(out);
  out = render(reg);
  ck_assert_ptr_nonnull(strstr(out, "pgs{backend=\"volcano\",phase=\"Running\"} 12\n"));
  free(out);
  ck_assert_int_eq(cc.calls, 2);
  for (int i = 1; i < GB_METRICS_MAX_COLLECTORS; i++)
    ck_assert_int_eq(gb_metrics_add_collector(reg, collect, &cc), 0);
  ck_assert_int_eq(gb_metrics_add_collector(reg, collect, &cc), GC_ELIMIT);
  gb_metrics_free(reg);
}
END_TEST

START_TEST(test_service_set) {
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_service_metrics sm;
  ck_assert_int_eq(gb_service_metrics_register(reg, "0.1.0", &sm, NULL), 0);
  struct gb_metric **all[] = {&sm.reconciles, &sm.reconcile_seconds, &sm.errors, &sm.queue_depth,
                              &sm.queue_retries, &sm.api_latency, &sm.watch_restarts,
                              &sm.podgroups, &sm.time_to_schedule, &sm.webhook,
                              &sm.http_requests, &sm.leader, &sm.build_info};
  for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
    ck_assert_ptr_nonnull(*all[i]);
  gb_metric_counter_inc(sm.reconciles, (const char *[]){GB_M_RESULT_SUCCESS});
  gb_metric_histogram_observe(sm.api_latency, (const char *[]){"PATCH", "podgroups", "200"}, 0.003);
  gb_metric_counter_inc(sm.watch_restarts, (const char *[]){"trainjobs", GB_M_WATCH_GONE});
  gb_metric_gauge_set(sm.podgroups, (const char *[]){"volcano", "Pending"}, 3);
  gb_metric_histogram_observe(sm.time_to_schedule, (const char *[]){"coscheduling", "none", "2-7"},
                              42);
  gb_metric_gauge_set(sm.queue_depth, NULL, 17);
  char *out = render(reg);
  const char *lines[] = {
      "# TYPE gangbridge_reconciles_total counter\n",
      "gangbridge_reconciles_total{result=\"success\"} 1\n",
      "# TYPE gangbridge_errors_total counter\n",
      "# TYPE gangbridge_workqueue_depth gauge\ngangbridge_workqueue_depth 17\n",
      "gangbridge_workqueue_retries_total 0\n",
      "gangbridge_api_request_duration_seconds_bucket{verb=\"PATCH\",resource=\"podgroups\","
      "code=\"200\",le=\"0.0025\"} 0\n",
      "gangbridge_api_request_duration_seconds_bucket{verb=\"PATCH\",resource=\"podgroups\","
      "code=\"200\",le=\"0.005\"} 1\n",
      "gangbridge_watch_restarts_total{resource=\"trainjobs\",reason=\"gone\"} 1\n",
      "gangbridge_podgroups{backend=\"volcano\",phase=\"Pending\"} 3\n",
      "gangbridge_gang_time_to_schedule_seconds_bucket{backend=\"coscheduling\",queue=\"none\","
      "size=\"2-7\",le=\"60\"} 1\n",
      "gangbridge_gang_time_to_schedule_seconds_sum{backend=\"coscheduling\",queue=\"none\","
      "size=\"2-7\"} 42\n",
      "# TYPE gangbridge_webhook_admissions_total counter\n",
      "# TYPE gangbridge_http_requests_total counter\n",
      "gangbridge_leader 0\n",
      "gangbridge_build_info{version=\"0.1.0\"} 1\n",
      "# TYPE gangbridge_reconcile_duration_seconds histogram\n",
  };
  for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++)
    ck_assert_msg(strstr(out, lines[i]) != NULL, "missing: %s\nin:\n%s", lines[i], out);
  /* Every line is a comment or "name{labels} value". */
  for (char *line = out; *line;) {
    char *nl = strchr(line, '\n');
    ck_assert_ptr_nonnull(nl);
    ck_assert(line[0] == '#' || !strncmp(line, "gangbridge_", 11));
    line = nl + 1;
  }
  free(out);
  /* Registering twice is refused. */
  struct gb_service_metrics again;
  ck_assert_int_eq(gb_service_metrics_register(reg, "0.1.0", &again, NULL), GC_EUSAGE);
  gb_metrics_free(reg);
}
END_TEST

/* Several threads update the same and different series while another
 * renders; every increment must be counted exactly. */
#define THREADS 6
#define ITERS 20000

struct worker {
  struct gb_metric *c, *h, *g;
  int id;
};

static void *work(void *arg) {
  struct worker *w = arg;
  char mine[16];
  snprintf(mine, sizeof(mine), "t%d", w->id);
  for (int i = 0; i < ITERS; i++) {
    gb_metric_counter_inc(w->c, (const char *[]){"shared"});
    gb_metric_counter_add(w->c, (const char *[]){mine}, 0.5);
    gb_metric_histogram_observe(w->h, (const char *[]){i % 2 ? "odd" : "even"}, (i % 10) * 0.1);
    gb_metric_gauge_add(w->g, NULL, 1);
  }
  return NULL;
}

struct scraper {
  struct gb_metrics *reg;
  atomic_int stop;
  int renders;
};

static void *scrape(void *arg) {
  struct scraper *s = arg;
  while (!atomic_load(&s->stop)) {
    char *out = NULL;
    size_t len;
    if (gb_metrics_render(s->reg, &out, &len) == 0)
      s->renders++;
    free(out);
  }
  return NULL;
}

START_TEST(test_threads) {
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_metric *c, *h, *g;
  const char *l[] = {"who"};
  ck_assert_int_eq(gb_metrics_counter(reg, "hits_total", "x", l, 1, &c, NULL), 0);
  ck_assert_int_eq(gb_metrics_histogram(reg, "obs", "x", l, 1, NULL, 0, &h, NULL), 0);
  ck_assert_int_eq(gb_metrics_gauge(reg, "level", "x", NULL, 0, &g, NULL), 0);
  pthread_t t[THREADS], st;
  struct worker w[THREADS];
  struct scraper sc = {.reg = reg, .renders = 0};
  atomic_init(&sc.stop, 0);
  ck_assert_int_eq(pthread_create(&st, NULL, scrape, &sc), 0);
  for (int i = 0; i < THREADS; i++) {
    w[i] = (struct worker){c, h, g, i};
    ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  atomic_store(&sc.stop, 1);
  pthread_join(st, NULL);
  ck_assert_int_gt(sc.renders, 0);
  double v;
  ck_assert_int_eq(gb_metric_value(c, (const char *[]){"shared"}, &v), 0);
  ck_assert(v == THREADS * ITERS);
  for (int i = 0; i < THREADS; i++) {
    char mine[16];
    snprintf(mine, sizeof(mine), "t%d", i);
    ck_assert_int_eq(gb_metric_value(c, (const char *[]){mine}, &v), 0);
    ck_assert(v == ITERS * 0.5);
  }
  ck_assert_int_eq(gb_metric_value(h, (const char *[]){"odd"}, &v), 0);
  ck_assert(v == THREADS * ITERS / 2);
  ck_assert_int_eq(gb_metric_value(g, NULL, &v), 0);
  ck_assert(v == THREADS * ITERS);
  char *out = render(reg);
  char want[128];
  snprintf(want, sizeof(want), "hits_total{who=\"shared\"} %d\n", THREADS * ITERS);
  ck_assert_ptr_nonnull(strstr(out, want));
  snprintf(want, sizeof(want), "obs_count{who=\"even\"} %d\n", THREADS * ITERS / 2);
  ck_assert_ptr_nonnull(strstr(out, want));
  free(out);
  gb_metrics_free(reg);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_exact_exposition);
  tcase_add_test(tc, test_number_format);
  tcase_add_test(tc, test_validation);
  tcase_add_test(tc, test_series_limit_and_clear);
  tcase_add_test(tc, test_collector);
  tcase_add_test(tc, test_service_set);
  tcase_add_test(tc, test_threads);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
