/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_tts, the PodGroup phase and time-to-schedule tracker
 * that replaced gb_controller.c's pg_track (used, untested) and
 * gb_metrics.c's gb_tts_tracker (tested, never called): the observation
 * rule (once, from creation, clock skew to 0), the initial list, a
 * PodGroup first seen running after it, "Failed", a PodGroup recreated
 * under the same name, the phase counts per backend, the bound and bad
 * input.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gb_tts.h"
#include "gb_tts_test.h"
#include "gc_diag.h"

static int upd(struct gb_tts *t, const char *be, const char *key, const char *uid,
               const char *phase, int initial, double created, double now, double *secs) {
  struct gb_tts_event ev = {be, key, uid, phase, initial, created, now};
  *secs = -1;
  return gb_tts_update(t, &ev, secs);
}

START_TEST(test_observed_once) {
  struct gb_tts *t = gb_tts_new(0);
  ck_assert_ptr_nonnull(t);
  double s;
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "u1", NULL, 0, 1000, 1001, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "u1", "Pending", 0, 1000, 1002, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "u1", "Inqueue", 0, 1000, 1003, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "u1", "Running", 0, 1000, 1042, &s), 1);
  ck_assert(s == 42);
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "u1", "Running", 0, 1000, 1050, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "u1", "Pending", 0, 1000, 1060, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "u1", "Running", 0, 1000, 1070, &s), 0);
  /* Pending then Finished between two updates: observed. */
  ck_assert_int_eq(upd(t, "coscheduling", "ns/b", "u3", "Scheduling", 0, 10, 11, &s), 0);
  ck_assert_int_eq(upd(t, "coscheduling", "ns/b", "u3", "Finished", 0, 10, 13, &s), 1);
  ck_assert(s == 3);
  /* Clock skew: a negative duration is 0; an unknown creation time is not observed. */
  ck_assert_int_eq(upd(t, "volcano", "ns/c", "u5", "Pending", 0, 100, 100, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/c", "u5", "Completed", 0, 100, 99, &s), 1);
  ck_assert(s == 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/d", "u6", "Pending", 0, NAN, 5, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/d", "u6", "Running", 0, NAN, 6, &s), 0);
  gb_tts_free(t);
}
END_TEST

START_TEST(test_initial_list_and_first_sight) {
  struct gb_tts *t = gb_tts_new(0);
  double s;
  /* In the initial list already running: when is unknown, never observed. */
  ck_assert_int_eq(upd(t, "coscheduling", "ns/a", "u2", "Running", 1, 0, 5, &s), 0);
  ck_assert_int_eq(upd(t, "coscheduling", "ns/a", "u2", "Running", 0, 0, 6, &s), 0);
  /* In the initial list pending, running later: observed. */
  ck_assert_int_eq(upd(t, "coscheduling", "ns/b", "u7", "Pending", 1, 0, 5, &s), 0);
  ck_assert_int_eq(upd(t, "coscheduling", "ns/b", "u7", "Running", 0, 0, 9, &s), 1);
  ck_assert(s == 9);
  /* First seen running after the initial list: created while we watched. */
  ck_assert_int_eq(upd(t, "coscheduling", "ns/c", "u8", "Running", 0, 20, 23, &s), 1);
  ck_assert(s == 3);
  gb_tts_free(t);
}
END_TEST

START_TEST(test_failed_and_recreated) {
  struct gb_tts *t = gb_tts_new(0);
  double s;
  /* Failed without running: not observed, and never later. */
  ck_assert_int_eq(upd(t, "coscheduling", "ns/a", "u4", "Pending", 0, 0, 1, &s), 0);
  ck_assert_int_eq(upd(t, "coscheduling", "ns/a", "u4", "Failed", 0, 0, 2, &s), 0);
  ck_assert_int_eq(upd(t, "coscheduling", "ns/a", "u4", "Running", 0, 0, 3, &s), 0);
  /* The same name with a new uid is a new PodGroup. */
  ck_assert_int_eq(upd(t, "coscheduling", "ns/a", "u9", "Pending", 0, 10, 11, &s), 0);
  ck_assert_int_eq(upd(t, "coscheduling", "ns/a", "u9", "Running", 0, 10, 15, &s), 1);
  ck_assert(s == 5);
  ck_assert_uint_eq(gb_tts_size(t), 1);
  /* The same name under the other backend is another PodGroup. */
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "v1", "Pending", 0, 0, 1, &s), 0);
  ck_assert_uint_eq(gb_tts_size(t), 2);
  gb_tts_forget(t, "coscheduling", "ns/a");
  gb_tts_forget(t, "coscheduling", "nope");
  ck_assert_uint_eq(gb_tts_size(t), 1);
  gb_tts_free(t);
  gb_tts_free(NULL);
}
END_TEST

START_TEST(test_phases) {
  struct gb_tts *t = gb_tts_new(0);
  double s;
  upd(t, "volcano", "ns/a", "1", "Running", 0, 0, 1, &s);
  upd(t, "volcano", "ns/b", "2", "Running", 0, 0, 1, &s);
  upd(t, "volcano", "ns/c", "3", NULL, 0, 0, 1, &s);
  upd(t, "coscheduling", "ns/a", "4", "Pending", 0, 0, 1, &s);
  struct gb_tts_phase_count pc[GB_TTS_MAX_PHASES];
  size_t n = gb_tts_phases(t, "volcano", pc, GB_TTS_MAX_PHASES);
  ck_assert_uint_eq(n, 2);
  double running = 0, none = 0;
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(pc[i].phase, "Running"))
      running = pc[i].count;
    if (!strcmp(pc[i].phase, "None"))
      none = pc[i].count;
  }
  ck_assert(running == 2 && none == 1);
  n = gb_tts_phases(t, "coscheduling", pc, GB_TTS_MAX_PHASES);
  ck_assert_uint_eq(n, 1);
  ck_assert_str_eq(pc[0].phase, "Pending");
  /* More distinct phases than the cap: the rest are not counted. */
  char key[32], phase[16];
  for (int i = 0; i < 20; i++) {
    snprintf(key, sizeof(key), "ns/p%d", i);
    snprintf(phase, sizeof(phase), "P%d", i);
    upd(t, "coscheduling", key, key, phase, 0, 0, 1, &s);
  }
  ck_assert_uint_eq(gb_tts_phases(t, "coscheduling", pc, GB_TTS_MAX_PHASES), GB_TTS_MAX_PHASES);
  ck_assert_uint_eq(gb_tts_phases(t, "coscheduling", pc, 3), 3);
  gb_tts_free(t);
}
END_TEST

START_TEST(test_bounds) {
  struct gb_tts *t = gb_tts_new(2);
  double s;
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "1", "Pending", 0, 0, 1, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/b", "2", "Pending", 0, 0, 1, &s), 0);
  ck_assert_int_eq(upd(t, "volcano", "ns/c", "3", "Pending", 0, 0, 1, &s), GC_ELIMIT);
  ck_assert_int_eq(upd(t, "volcano", "ns/a", "1", "Running", 0, 0, 4, &s), 1); /* known: fine */
  gb_tts_forget(t, "volcano", "ns/b");
  ck_assert_int_eq(upd(t, "volcano", "ns/c", "3", "Pending", 0, 0, 1, &s), 0);
  ck_assert_int_eq(upd(t, NULL, "ns/a", "1", "Running", 0, 0, 1, &s), GC_EINVAL);
  ck_assert_int_eq(upd(t, "volcano", NULL, "1", "Running", 0, 0, 1, &s), GC_EINVAL);
  ck_assert_int_eq(upd(t, "volcano", "", "1", "Running", 0, 0, 1, &s), GC_EINVAL);
  ck_assert_int_eq(gb_tts_update(NULL, NULL, &s), GC_EINVAL);
  /* Over-long fields are cut, not overflowed. */
  char uid[200];
  memset(uid, 'u', sizeof(uid) - 1);
  uid[sizeof(uid) - 1] = '\0';
  gb_tts_forget(t, "volcano", "ns/c");
  ck_assert_int_eq(upd(t, "volcano", "ns/long", uid, uid, 0, 0, 1, &s), 0);
  struct gb_tts_phase_count pc[4];
  size_t n = gb_tts_phases(t, "volcano", pc, 4);
  ck_assert_uint_eq(n, 2);
  gb_tts_free(t);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("tts");
  TCase *tc = tcase_create("tts");
  tcase_add_test(tc, test_observed_once);
  tcase_add_test(tc, test_initial_list_and_first_sight);
  tcase_add_test(tc, test_failed_and_recreated);
  tcase_add_test(tc, test_phases);
  tcase_add_test(tc, test_bounds);
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
