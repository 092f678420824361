/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeout_report: size classes, nearest-rank quantiles, the suggestion
 * rule (margin, rounding steps, floor, coscheduling's 900 s cap), what-if
 * counts, row grouping, histograms, the RFC 3339 parser and the Go duration
 * formatter (the parser is gc_duration_parse_seconds: tests/gangcalc/test_duration.c).
 * Expected values are worked out by hand in the comments.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_timeout_report.h"
#include "gb_timeout_report_test.h"

START_TEST(test_size_classes) {
  static const struct {
    int64_t size;
    int cls;
  } cases[] = {{0, 0}, {1, 0}, {2, 1}, {7, 1}, {8, 2}, {31, 2}, {32, 3}, {127, 3}, {128, 4},
               {100000, 4}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_int_eq(gb_timeout_report_size_class(cases[i].size), cases[i].cls);
  ck_assert_str_eq(gb_timeout_report_size_class_name(1), "2-7");
  ck_assert_str_eq(gb_timeout_report_size_class_name(4), "128+");
}
END_TEST

START_TEST(test_quantile_nearest_rank) {
  int64_t v[100];
  for (int i = 0; i < 100; i++)
    v[i] = (i + 1) * 10;
  /* n = 100: rank ceil(p) exactly. */
  ck_assert_int_eq(gb_timeout_report_quantile(v, 100, 50), 500);
  ck_assert_int_eq(gb_timeout_report_quantile(v, 100, 90), 900);
  ck_assert_int_eq(gb_timeout_report_quantile(v, 100, 99), 990);
  ck_assert_int_eq(gb_timeout_report_quantile(v, 100, 100), 1000);
  /* n = 10: p99 -> rank ceil(9.9) = 10; p50 -> rank 5; p90 -> rank 9. */
  ck_assert_int_eq(gb_timeout_report_quantile(v, 10, 99), 100);
  ck_assert_int_eq(gb_timeout_report_quantile(v, 10, 50), 50);
  ck_assert_int_eq(gb_timeout_report_quantile(v, 10, 90), 90);
  /* n = 1: every quantile is the only value.  n = 3: p50 -> rank 2. */
  ck_assert_int_eq(gb_timeout_report_quantile(v, 1, 1), 10);
  ck_assert_int_eq(gb_timeout_report_quantile(v, 3, 50), 20);
  /* n = 101: p99 -> rank ceil(99.99) = 100, not the maximum. */
  int64_t w[101];
  for (int i = 0; i < 101; i++)
    w[i] = i;
  ck_assert_int_eq(gb_timeout_report_quantile(w, 101, 99), 99);
}
END_TEST

static int64_t suggest(const int64_t *v, size_t n, const struct gc_backend *b, int64_t margin,
                       char *reason, int *capped) {
  struct gb_tr_rule rule = {margin, 60, 0};
  int64_t out = -5;
  ck_assert_int_eq(
      gb_timeout_report_suggest(v, n, 0, b, &rule, &out, capped, reason, GB_TR_REASON_MAX), 0);
  return out;
}

START_TEST(test_suggest_rule) {
  char reason[GB_TR_REASON_MAX];
  int capped = -1;
  /* p99 250 s x 1.5 = 375 s -> next minute 420 s. */
  int64_t a[] = {250};
  ck_assert_int_eq(suggest(a, 1, gc_backend_by_name("volcano"), 1500, reason, &capped), 420);
  ck_assert_int_eq(capped, 0);
  ck_assert_str_eq(reason, "p99 4m10s x 1.500 = 6m15s, rounded up to 7m0s: 7m0s; 0 of 1 "
                           "scheduled gangs waited longer");
  /* p99 61 s x 1.5 = 91.5 -> 92 -> next 10 s step 100 s. */
  int64_t b[] = {61};
  ck_assert_int_eq(suggest(b, 1, gc_backend_by_name("volcano"), 1500, reason, &capped), 100);
  /* p99 10 s x 1.5 = 15 -> 20 s, below the 60 s floor. */
  int64_t c[] = {10};
  ck_assert_int_eq(suggest(c, 1, gc_backend_by_name("volcano"), 1500, reason, &capped), 60);
  ck_assert_ptr_nonnull(strstr(reason, "raised to the floor"));
  /* p99 3000 s x 1.5 = 4500 s -> 5 min steps: 4500.  Volcano has no cap... */
  int64_t d[] = {3000};
  ck_assert_int_eq(suggest(d, 1, gc_backend_by_name("volcano"), 1500, reason, &capped), 4500);
  ck_assert_int_eq(capped, 0);
  /* ... coscheduling is capped at 900 s. */
  ck_assert_int_eq(suggest(d, 1, gc_backend_by_name("coscheduling"), 1500, reason, &capped), 900);
  ck_assert_int_eq(capped, 1);
  ck_assert_ptr_nonnull(strstr(reason, "15m Permit limit"));
  ck_assert_ptr_nonnull(strstr(reason, "1 of 1 scheduled gangs waited longer"));
  /* p99 3000 s x 1.25 = 3750 -> next 300 s: 3900. */
  ck_assert_int_eq(suggest(d, 1, gc_backend_by_name("volcano"), 1250, reason, &capped), 3900);
  int64_t z[] = {0};
  ck_assert_int_eq(gb_timeout_report_suggest(z, 0, 0, gc_backend_by_name("volcano"),
                                             &(struct gb_tr_rule){1500, 60, 0}, &d[0], &capped,
                                             reason, sizeof(reason)),
                   GC_EINVAL);
}
END_TEST

START_TEST(test_report_rows) {
  /* Queue "a" size 4 (class 2-7): waits 10..100 with a 60 s timeout on all
   * but one; queue "a" size 1: one censored gang; coscheduling queue "". */
  struct gb_tr_gang g[13];
  memset(g, 0, sizeof(g));
  for (int i = 0; i < 10; i++)
    g[i] = (struct gb_tr_gang){"ns", "g",          "a", gc_backend_by_name("volcano"),
                               4,    (i + 1) * 10, 0,   60};
  g[9].timeout_s = GB_TR_NO_TIMEOUT;
  g[10] = (struct gb_tr_gang){"ns", "s", "a", gc_backend_by_name("volcano"),
                              1,    500, 1,   GB_TR_NO_TIMEOUT};
  g[11] = (struct gb_tr_gang){"ns", "c1", "", gc_backend_by_name("coscheduling"), 200, 30, 0, 900};
  g[12] = (struct gb_tr_gang){"ns", "c2", "", gc_backend_by_name("coscheduling"), 128, 40, 0, 900};
  struct gb_tr_options o = {.has_whatif = 1, .whatif_s = 45};
  struct gb_tr_report *r = NULL;
  ck_assert_int_eq(gb_tr_report_build(g, 13, &o, &r), 0);
  ck_assert_uint_eq(r->n_rows, 3);
  const struct gb_tr_row *a1 = &r->rows[0], *a4 = &r->rows[1], *c = &r->rows[2];
  ck_assert_str_eq(a1->queue, "a");
  ck_assert_int_eq(a1->size_class, 0);
  ck_assert_uint_eq(a1->censored, 1);
  ck_assert_int_eq(a1->timeout_s, GB_TR_NO_TIMEOUT);
  ck_assert_int_eq(a4->size_class, 1);
  ck_assert_uint_eq(a4->gangs, 10);
  ck_assert_int_eq(a4->p50_s, 50);
  ck_assert_int_eq(a4->p90_s, 90);
  ck_assert_int_eq(a4->p99_s, 100);
  ck_assert_int_eq(a4->max_s, 100);
  ck_assert_int_eq(a4->timeout_s, 60);
  ck_assert_uint_eq(a4->timeout_gangs, 9);
  /* 70, 80, 90 exceed 60; 100 has no timeout. */
  ck_assert_uint_eq(a4->exceeded, 3);
  /* 50..100 are above 45. */
  ck_assert_uint_eq(a4->whatif_cut, 6);
  /* p99 100 x 1.5 = 150 -> 180 s (minute steps from 120 s). */
  ck_assert_int_eq(a4->suggested_s, 180);
  ck_assert_ptr_eq(c->backend, gc_backend_by_name("coscheduling"));
  ck_assert_int_eq(c->size_class, 4);
  ck_assert_uint_eq(c->gangs, 2);
  ck_assert_uint_eq(r->gangs, 13);
  ck_assert_uint_eq(r->whatif_cut, 1 + 6 + 0);
  /* The row with only a never-scheduled gang has no quantiles and no
   * suggestion; it names its oldest gang. */
  ck_assert_uint_eq(a1->scheduled, 0);
  ck_assert_int_eq(a1->p99_s, GB_TR_NO_TIMEOUT);
  ck_assert_int_eq(a1->has_suggestion, 0);
  ck_assert_int_eq(a1->age_max_s, 500);
  ck_assert_str_eq(a1->oldest_name, "s");
  ck_assert_ptr_nonnull(strstr(a1->reason, "no suggestion"));
  /* The empirical CDF over all of a row's gangs. */
  ck_assert(gb_timeout_report_cdf(a4, 9) == 0.0);
  ck_assert(gb_timeout_report_cdf(a4, 50) == 0.5);
  ck_assert(gb_timeout_report_cdf(a4, 1000) == 1.0);
  ck_assert(gb_timeout_report_cdf(a1, 1000) == 0.0);
  gb_tr_report_free(r);
  gb_tr_report_free(NULL);
}
END_TEST

/* Issue 18 defect 2: gangs that never scheduled are censored observations.
 * Before, they entered the quantiles at their age and dominated p99 and the
 * suggestion. */
START_TEST(test_censored_not_in_quantiles) {
  struct gb_tr_gang g[103];
  memset(g, 0, sizeof(g));
  for (int i = 0; i < 100; i++) /* scheduled after 1..100 s */
    g[i] = (struct gb_tr_gang){"ns", "g", "q", gc_backend_by_name("volcano"), 1, i + 1, 0, 600};
  for (int i = 100; i < 103; i++) /* never scheduled, 3 weeks old */
    g[i] = (struct gb_tr_gang){
        "ns", i == 102 ? "oldest" : "w", "q", gc_backend_by_name("volcano"), 1, 1800000 + i, 1,
        600};
  struct gb_tr_options o = {0};
  struct gb_tr_report *r = NULL;
  ck_assert_int_eq(gb_tr_report_build(g, 103, &o, &r), 0);
  const struct gb_tr_row *row = &r->rows[0];
  ck_assert_uint_eq(row->gangs, 103);
  ck_assert_uint_eq(row->scheduled, 100);
  ck_assert_uint_eq(row->censored, 3);
  ck_assert_int_eq(row->p50_s, 50);
  ck_assert_int_eq(row->p90_s, 90);
  ck_assert_int_eq(row->p99_s, 99);
  ck_assert_int_eq(row->max_s, 100);
  /* p99 99 s x 1.5 = 148.5 -> 149 -> 180 s. */
  ck_assert_int_eq(row->suggested_s, 180);
  ck_assert_str_eq(row->oldest_name, "oldest");
  ck_assert_int_eq(row->age_max_s, 1800102);
  ck_assert_int_eq(row->age_p50_s, 1800101);
  /* The suggestion would cut the three that never started, and no other. */
  ck_assert_uint_eq(row->would_cut, 3);
  ck_assert_uint_eq(row->exceeded, 3);
  /* Kaplan-Meier counts the three as still waiting: F(t) = k / 103 after
   * the k-th wait, so its median is 52 s and its p99 is never reached (the
   * estimate tops out at 100 / 103). */
  ck_assert_int_eq(row->km_p50_s, 52);
  ck_assert_int_eq(row->km_p99_s, GB_TR_NO_TIMEOUT);
  gb_tr_report_free(r);
}
END_TEST

/* Kaplan-Meier with censoring in the middle: the survivors at risk shrink. */
START_TEST(test_kaplan_meier) {
  /* Waits 10, 20, 30, 40; censored at 15 and 25.  S(10) = 5/6,
   * S(20) = 5/6 * 3/4 = 0.625, S(30) = 0.625 * 1/2 = 0.3125, S(40) = 0. */
  int64_t w[] = {10, 20, 30, 40}, c[] = {15, 25};
  ck_assert_int_eq(gb_timeout_report_km_quantile(w, 4, c, 2, 10), 10); /* F(10) = 0.167 */
  ck_assert_int_eq(gb_timeout_report_km_quantile(w, 4, c, 2, 20), 20); /* F(20) = 0.375 */
  ck_assert_int_eq(gb_timeout_report_km_quantile(w, 4, c, 2, 50), 30); /* F(30) = 0.6875 */
  ck_assert_int_eq(gb_timeout_report_km_quantile(w, 4, c, 2, 99), 40);
  /* Censored later than every wait: the estimate stops short of 100 %. */
  int64_t c2[] = {100, 100};
  ck_assert_int_eq(gb_timeout_report_km_quantile(w, 4, c2, 2, 50), 30); /* F(30) = 3 / 6 */
  ck_assert_int_eq(gb_timeout_report_km_quantile(w, 4, c2, 2, 90), GB_TR_NO_TIMEOUT);
  /* A censored age equal to a wait is still at risk at that wait. */
  int64_t w3[] = {10}, c3[] = {10};
  ck_assert_int_eq(gb_timeout_report_km_quantile(w3, 1, c3, 1, 50), 10);
  ck_assert_int_eq(gb_timeout_report_km_quantile(w3, 1, c3, 1, 60), GB_TR_NO_TIMEOUT);
  ck_assert_int_eq(gb_timeout_report_km_quantile(NULL, 0, c3, 1, 50), GB_TR_NO_TIMEOUT);
}
END_TEST

START_TEST(test_row_timeout_ties) {
  /* No majority: 60 and 120 twice each, none once: the tie goes to 60. */
  struct gb_tr_gang g[5];
  int64_t t[5] = {120, 60, GB_TR_NO_TIMEOUT, 120, 60};
  for (int i = 0; i < 5; i++)
    g[i] = (struct gb_tr_gang){"ns", "g", "q", gc_backend_by_name("volcano"), 1, 10 * i, 0, t[i]};
  struct gb_tr_options o = {0};
  struct gb_tr_report *r = NULL;
  ck_assert_int_eq(gb_tr_report_build(g, 5, &o, &r), 0);
  ck_assert_uint_eq(r->n_rows, 1);
  ck_assert_int_eq(r->rows[0].timeout_s, 60);
  ck_assert_uint_eq(r->rows[0].timeout_gangs, 2);
  gb_tr_report_free(r);
  /* Mostly without a timeout: the row's timeout is none. */
  t[0] = t[3] = GB_TR_NO_TIMEOUT;
  for (int i = 0; i < 5; i++)
    g[i].timeout_s = t[i];
  ck_assert_int_eq(gb_tr_report_build(g, 5, &o, &r), 0);
  ck_assert_int_eq(r->rows[0].timeout_s, GB_TR_NO_TIMEOUT);
  ck_assert_uint_eq(r->rows[0].timeout_gangs, 3);
  gb_tr_report_free(r);
}
END_TEST

START_TEST(test_parse_time) {
  int64_t t = 0;
  ck_assert_int_eq(gb_timeout_report_parse_time("1970-01-01T00:00:00Z", &t), 0);
  ck_assert_int_eq(t, 0);
  ck_assert_int_eq(gb_timeout_report_parse_time("2026-11-24T08:08:38Z", &t), 0);
  ck_assert_int_eq(t, 1795507718);
  ck_assert_int_eq(gb_timeout_report_parse_time("2024-02-29T12:00:00.123456Z", &t), 0);
  ck_assert_int_eq(t, 1709208000);
  ck_assert_int_eq(gb_timeout_report_parse_time("2024-02-29T13:30:00+01:30", &t), 0);
  ck_assert_int_eq(t, 1709208000);
  char buf[32];
  gb_timeout_report_format_time(1709208000, buf, sizeof(buf));
  ck_assert_str_eq(buf, "2024-02-29T12:00:00Z");
  gb_timeout_report_format_time(1795507718, buf, sizeof(buf));
  ck_assert_str_eq(buf, "2026-11-24T08:08:38Z");
  gb_timeout_report_format_time(0, buf, sizeof(buf));
  ck_assert_str_eq(buf, "1970-01-01T00:00:00Z");
  const char *bad[] = {"2023-02-29T00:00:00Z", "2026-11-24 08:08:38Z", "2026-11-24T08:08:38",
                       "2026-13-01T00:00:00Z", "2026-11-24T08:08:38Zx", "2026-11-24T08:08:38.Z",
                       "", "yesterday"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(gb_timeout_report_parse_time(bad[i], &t) == GC_EINVAL, "accepted %s", bad[i]);
}
END_TEST

START_TEST(test_format_duration) {
  char buf[24];
  gb_timeout_report_format_duration(3723, buf, sizeof(buf));
  ck_assert_str_eq(buf, "1h2m3s");
  gb_timeout_report_format_duration(3605, buf, sizeof(buf));
  ck_assert_str_eq(buf, "1h0m5s");
  gb_timeout_report_format_duration(0, buf, sizeof(buf));
  ck_assert_str_eq(buf, "0s");
}
END_TEST

int main(void) {
  Suite *s = suite_create("timeout_report");
  TCase *tc = tcase_create("report");
  tcase_add_test(tc, test_size_classes);
  tcase_add_test(tc, test_quantile_nearest_rank);
  tcase_add_test(tc, test_suggest_rule);
  tcase_add_test(tc, test_report_rows);
  tcase_add_test(tc, test_row_timeout_ties);
  tcase_add_test(tc, test_censored_not_in_quantiles);
  tcase_add_test(tc, test_kaplan_meier);
  tcase_add_test(tc, test_parse_time);
  tcase_add_test(tc, test_format_duration);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
