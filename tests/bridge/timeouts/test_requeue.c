/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_requeue: the backoff (doubling, jitter bounds, cap), the
 * attempts limit, the never-touch rules (started, managedBy, a Kueue
 * Workload but not Kueue's queue label alone, suspended by the user), the
 * validation of what a tenant may have written (far-future or missing
 * resume time, attempt counter beyond the limit), the state's round trip through the
 * annotations (a merge patch applied to the TrainJob and read back: what a
 * restarted or new leader sees), the resourceVersion precondition, and
 * malformed annotations named in the error.
 */
#include <check.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gb_requeue.h"
#include "gc_diag.h"

static const struct gb_backoff BO = {60, 3600, 0.1, 3};

static json_object *trainjob(const char *extra_meta, const char *spec) {
  char buf[2048];
  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
           "\"metadata\":{\"namespace\":\"ns\",\"name\":\"tj\",\"resourceVersion\":\"7\"%s},"
           "\"spec\":{%s}}",
           extra_meta, spec);
  json_object *o = json_tokener_parse(buf);
  ck_assert_ptr_nonnull(o);
  return o;
}

/* Applies a JSON merge patch (RFC 7386) to target, as the API server does. */
static void merge(json_object *target, json_object *patch) {
  json_object_object_foreach(patch, k, v) {
    json_object *cur = NULL;
    if (!v) {
      json_object_object_del(target, k);
    } else if (json_object_is_type(v, json_type_object) &&
               json_object_object_get_ex(target, k, &cur) &&
               json_object_is_type(cur, json_type_object)) {
      merge(cur, v);
    } else {
      json_object *copy = NULL;
      json_object_deep_copy(v, &copy, NULL);
      json_object_object_add(target, k, copy);
    }
  }
}

static void read_ok(json_object *tj, struct gb_requeue_state *st) {
  char why[256] = "";
  ck_assert_msg(gb_requeue_state_read(tj, st, why, sizeof(why)) == 0, "%s", why);
}

START_TEST(test_backoff) {
  /* u = 0: exactly base * 2^(n-1). */
  ck_assert(gb_requeue_backoff(&BO, 1, 0) == 60);
  ck_assert(gb_requeue_backoff(&BO, 2, 0) == 120);
  ck_assert(gb_requeue_backoff(&BO, 3, 0) == 240);
  /* Jitter stays within [d, d * 1.1). */
  for (int n = 1; n <= 5; n++) {
    double d = 60 * pow(2, n - 1);
    for (double u = 0; u < 1; u += 0.01) {
      double v = gb_requeue_backoff(&BO, n, u);
      ck_assert(v >= d && v < d * 1.1 + 1e-9);
    }
  }
  /* The cap holds with jitter, and for huge attempt numbers. */
  ck_assert(gb_requeue_backoff(&BO, 7, 0.99) == 3600);
  ck_assert(gb_requeue_backoff(&BO, 100, 0.5) == 3600);
  ck_assert(gb_requeue_backoff(&BO, 0, 0) == 60); /* below 1: as the first */
}
END_TEST

START_TEST(test_max_attempts) {
  struct gb_requeue_state st = {0, NAN, 0, 0};
  ck_assert_int_eq(gb_requeue_on_timeout(&st, &BO), GB_RQ_SUSPEND);
  st.attempt = 2;
  ck_assert_int_eq(gb_requeue_on_timeout(&st, &BO), GB_RQ_SUSPEND);
  st.attempt = 3;
  ck_assert_int_eq(gb_requeue_on_timeout(&st, &BO), GB_RQ_GIVE_UP);
  /* Given up, then resumed by the user (requeued-by stays): the next
   * timeout gives up again, the stale annotation exempts nothing. */
  st.ours = 1;
  ck_assert_int_eq(gb_requeue_on_timeout(&st, &BO), GB_RQ_GIVE_UP);
  st.suspended = 1;
  ck_assert_int_eq(gb_requeue_on_timeout(&st, &BO), GB_RQ_NOTHING);
  st.suspended = 0;
  /* maxAttempts 0: the first timeout gives up. */
  struct gb_backoff none = BO;
  none.max_attempts = 0;
  struct gb_requeue_state fresh = {0, NAN, 0, 0};
  ck_assert_int_eq(gb_requeue_on_timeout(&fresh, &none), GB_RQ_GIVE_UP);
}
END_TEST

START_TEST(test_untouchable) {
  struct gb_requeue_state st;
  json_object *tj = trainjob("", "\"suspend\":false");
  read_ok(tj, &st);
  ck_assert_ptr_null(gb_requeue_untouchable(tj, &st, 0, NULL));
  ck_assert_ptr_nonnull(gb_requeue_untouchable(tj, &st, 1, NULL)); /* started */
  json_object_put(tj);

  tj = trainjob("", "\"managedBy\":\"kueue.x-k8s.io/multikueue\"");
  read_ok(tj, &st);
  ck_assert_ptr_nonnull(strstr(gb_requeue_untouchable(tj, &st, 0, NULL), "managedBy"));
  json_object_put(tj);

  tj = trainjob("", "\"managedBy\":\"trainer.kubeflow.org/trainjob-controller\"");
  read_ok(tj, &st);
  ck_assert_ptr_null(gb_requeue_untouchable(tj, &st, 0, NULL));
  json_object_put(tj);

  /* Kueue's queue label is the tenant's: alone it exempts nothing.  A
   * Workload owned by the TrainJob (Kueue really manages it) does. */
  tj = trainjob(",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"team-a\"}", "");
  read_ok(tj, &st);
  ck_assert_ptr_null(gb_requeue_untouchable(tj, &st, 0, NULL));
  ck_assert_ptr_nonnull(strstr(gb_requeue_untouchable(tj, &st, 0, "trainjob-tj-3f2a"), "Kueue"));
  json_object_put(tj);
  tj = trainjob("", "");
  read_ok(tj, &st);
  ck_assert_ptr_nonnull(strstr(gb_requeue_untouchable(tj, &st, 0, "wl"), "Workload"));
  json_object_put(tj);
  /* gangbridge's own annotations written by the tenant exempt nothing. */
  tj = trainjob(",\"annotations\":{\"gangbridge.io/requeued-by\":\"gangbridge\","
                "\"gangbridge.io/requeue-resume-at\":\"2099-01-01T00:00:00Z\"}",
                "\"suspend\":false");
  read_ok(tj, &st);
  ck_assert_ptr_null(gb_requeue_untouchable(tj, &st, 0, NULL));
  ck_assert_int_eq(gb_requeue_on_timeout(&st, &BO), GB_RQ_SUSPEND);
  json_object_put(tj);

  /* Suspended by the user (no requeued-by): never resumed nor counted. */
  tj = trainjob("", "\"suspend\":true");
  read_ok(tj, &st);
  ck_assert_ptr_nonnull(strstr(gb_requeue_untouchable(tj, &st, 0, NULL), "user"));
  ck_assert_int_eq(gb_requeue_on_tick(&st, 1e10), GB_RQ_NOTHING);
  json_object_put(tj);
}
END_TEST

START_TEST(test_round_trip) {
  struct gb_requeue_state st;
  json_object *tj = trainjob("", "\"suspend\":false");
  read_ok(tj, &st);
  ck_assert_int_eq(st.attempt, 0);
  ck_assert(isnan(st.resume_at));
  double now = 1700000000;
  json_object *p = NULL;
  ck_assert_int_eq(gb_requeue_patch(GB_RQ_SUSPEND, &st, "7", now, 61, &p), 0);
  /* The precondition is the read resourceVersion. */
  json_object *m = NULL, *rv = NULL;
  ck_assert(json_object_object_get_ex(p, "metadata", &m) &&
            json_object_object_get_ex(m, "resourceVersion", &rv));
  ck_assert_str_eq(json_object_get_string(rv), "7");
  merge(tj, p);
  json_object_put(p);
  read_ok(tj, &st);
  ck_assert_int_eq(st.attempt, 1);
  ck_assert_int_eq(st.suspended, 1);
  ck_assert_int_eq(st.ours, 1);
  ck_assert(st.resume_at == now + 61);
  ck_assert_ptr_null(gb_requeue_untouchable(tj, &st, 0, NULL)); /* ours, not the user's */
  ck_assert_int_eq(gb_requeue_on_tick(&st, now + 60), GB_RQ_NOTHING);
  ck_assert_int_eq(gb_requeue_on_tick(&st, now + 61), GB_RQ_RESUME);

  ck_assert_int_eq(gb_requeue_patch(GB_RQ_RESUME, &st, "8", now + 62, 0, &p), 0);
  merge(tj, p);
  json_object_put(p);
  read_ok(tj, &st);
  ck_assert_int_eq(st.attempt, 1);
  ck_assert_int_eq(st.suspended, 0);
  ck_assert_int_eq(st.ours, 0);
  ck_assert(st.resume_at == now + 62); /* the wait restarts here */

  st.attempt = 3;
  ck_assert_int_eq(gb_requeue_patch(GB_RQ_GIVE_UP, &st, "9", now + 100, 0, &p), 0);
  merge(tj, p);
  json_object_put(p);
  read_ok(tj, &st);
  ck_assert_int_eq(st.suspended, 1);
  ck_assert_int_eq(st.ours, 1);
  ck_assert(isnan(st.resume_at)); /* never resumed by gangbridge */
  ck_assert_int_eq(gb_requeue_on_tick(&st, 1e12), GB_RQ_NOTHING);

  ck_assert_int_eq(gb_requeue_patch(GB_RQ_NOTHING, &st, "9", now, 0, &p), GC_EINVAL);
  ck_assert_int_eq(gb_requeue_patch(GB_RQ_RESUME, &st, NULL, now, 0, &p), GC_EINVAL);
  json_object_put(tj);
}
END_TEST

START_TEST(test_malformed) {
  struct gb_requeue_state st;
  char why[256];
  json_object *tj =
      trainjob(",\"annotations\":{\"gangbridge.io/requeue-attempt\":\"two\"}", "");
  ck_assert_int_eq(gb_requeue_state_read(tj, &st, why, sizeof(why)), GC_EINVAL);
  ck_assert_ptr_nonnull(strstr(why, "ns/tj: metadata.annotations[gangbridge.io/requeue-attempt]"));
  json_object_put(tj);
  tj = trainjob(",\"annotations\":{\"gangbridge.io/requeue-resume-at\":\"soon\"}", "");
  ck_assert_int_eq(gb_requeue_state_read(tj, &st, why, sizeof(why)), GC_EINVAL);
  ck_assert_ptr_nonnull(strstr(why, "gangbridge.io/requeue-resume-at"));
  json_object_put(tj);
  tj = trainjob(",\"annotations\":{\"gangbridge.io/requeue-attempt\":\"100000\"}", "");
  ck_assert_int_eq(gb_requeue_state_read(tj, &st, why, sizeof(why)), GC_EINVAL);
  json_object_put(tj);
}
END_TEST

START_TEST(test_validate) {
  const double T = 1700000000; /* when gangbridge acted (its claim) */
  char why[512];
  struct gb_requeue_state use;
  /* What gangbridge wrote is believed: attempt 2 resumes within [T+120, T+132]. */
  struct gb_requeue_state st = {2, T + 125, 1, 1};
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, T, T + 1, &use, why, sizeof(why)), 0);
  ck_assert(use.resume_at == T + 125 && use.attempt == 2);
  /* A far-future resume time is cut to the end of the backoff. */
  st.resume_at = 4070908800; /* 2099 */
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, T, T + 1, &use, why, sizeof(why)), 1);
  ck_assert(use.resume_at <= T + 132 + 60 && use.resume_at >= T + 120);
  ck_assert_ptr_nonnull(strstr(why, "outside the backoff of attempt 2"));
  /* An earlier one is raised to its start. */
  st.resume_at = T - 1000;
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, T, T + 1, &use, why, sizeof(why)), 1);
  ck_assert(use.resume_at >= T + 60 && use.resume_at <= T + 120);
  /* Removed while requeues are left: resumed at the end of its backoff. */
  st.resume_at = NAN;
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, T, T + 1, &use, why, sizeof(why)), 1);
  ck_assert(use.resume_at == T + ceil(gb_requeue_backoff(&BO, 2, 1)));
  ck_assert_ptr_nonnull(strstr(why, "is missing"));
  /* Given up (attempts used, no resume time): nothing to resume, believed. */
  st.attempt = 3;
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, T, T + 1, &use, why, sizeof(why)), 0);
  ck_assert(isnan(use.resume_at));
  /* An attempt counter beyond maxAttempts is taken as maxAttempts. */
  st = (struct gb_requeue_state){99, NAN, 1, 1};
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, T, T + 1, &use, why, sizeof(why)), 1);
  ck_assert_int_eq(use.attempt, 3);
  ck_assert_ptr_nonnull(strstr(why, "99 is more than timeouts.requeue.maxAttempts (3)"));
  /* On a running TrainJob a future resume time means nothing. */
  st = (struct gb_requeue_state){1, 4070908800, 0, 0};
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, NAN, T, &use, why, sizeof(why)), 1);
  ck_assert(isnan(use.resume_at));
  ck_assert_ptr_nonnull(strstr(why, "in the future on a running TrainJob"));
  st.resume_at = T - 5; /* when it was resumed: fine */
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, NAN, T, &use, why, sizeof(why)), 0);
  /* Suspended by the user: nothing of gangbridge's to check. */
  st = (struct gb_requeue_state){0, 4070908800, 0, 1};
  ck_assert_int_eq(gb_requeue_validate(&st, &BO, T, T, &use, why, sizeof(why)), 0);
}
END_TEST

START_TEST(test_format_time) {
  char buf[32];
  gb_requeue_format_time(1700000000, buf, sizeof(buf));
  ck_assert_str_eq(buf, "2023-11-14T22:13:20Z");
}
END_TEST

int main(void) {
  Suite *s = suite_create("requeue");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_backoff);
  tcase_add_test(tc, test_max_attempts);
  tcase_add_test(tc, test_untouchable);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_malformed);
  tcase_add_test(tc, test_validate);
  tcase_add_test(tc, test_format_time);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
