/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_caught_up, which serve's scheduler endpoints wait for after a
 * takeover (issue 17, defect 3): a new placer is not caught up; passes on
 * an unsynced model do not count; once the model is synced a pass on the
 * leader catches up; gb_placer_resync (a new term) un-catches it at once
 * until the next leader pass; a standby's passes never count.  The placer's
 * own thread runs with a short tick; waits poll with a bound.
 */
#include <check.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "gb_model.h"
#include "gb_placer.h"
#include "gb_plan.h"

static atomic_int leading;
static int is_leader(void *ctx) {
  (void)ctx;
  return atomic_load(&leading);
}

static int no_gang(void *ctx, const char *ns, const char *name, struct gc_gang **out, char *reason,
                   size_t size) {
  (void)ctx, (void)ns, (void)name, (void)reason, (void)size;
  *out = NULL;
  return 0;
}

/* Waits up to ~5 s for caught_up to become want. */
static int becomes(struct gb_placer *p, int want) {
  for (int i = 0; i < 500; i++) {
    if (gb_placer_caught_up(p) == want)
      return 1;
    usleep(10000);
  }
  return 0;
}

START_TEST(caught_up_follows_resync_and_leadership) {
  struct gb_plan *plan = NULL;
  struct gb_model *model = NULL;
  struct gb_placer *p = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_plan_new(NULL, &plan), 0);
  struct gb_model_opts mo = {.plan = plan};
  ck_assert_int_eq(gb_model_new(&mo, &model, &d), 0);
  struct gb_placer_opts po = {
      .model = model, .plan = plan, .gang = no_gang, .is_leader = is_leader, .tick_ms = 20};
  atomic_store(&leading, 1);
  ck_assert_int_eq(gb_placer_new(&po, &p, &d), 0);
  ck_assert_int_eq(gb_placer_caught_up(p), 0);
  ck_assert_int_eq(gb_placer_start(p), 0);
  /* Ticks pass, but the model has nothing yet: the plan may lack gangs. */
  usleep(200000);
  ck_assert_int_eq(gb_placer_caught_up(p), 0);
  ck_assert_int_eq(gb_model_feed(model, "Node", 0,
                                 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                                 "\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"8\"}}}",
                                 &d),
                   0);
  ck_assert_int_eq(gb_model_feed_done(model), 0);
  ck_assert(becomes(p, 1));
  /* A new term: not caught up until a pass that began after it ends. */
  gb_placer_resync(p);
  ck_assert_int_eq(gb_placer_caught_up(p), 0);
  ck_assert(becomes(p, 1));
  /* A standby's passes do not count. */
  atomic_store(&leading, 0);
  gb_placer_resync(p);
  usleep(200000);
  ck_assert_int_eq(gb_placer_caught_up(p), 0);
  atomic_store(&leading, 1);
  ck_assert(becomes(p, 1));
  gb_placer_free(p);
  gb_model_free(model);
  gb_plan_free(plan);
  gc_diags_destroy(&d);
}
END_TEST

int main(void) {
  Suite *s = suite_create("placer_caught_up");
  TCase *tc = tcase_create("caught_up");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, caught_up_follows_resync_and_leadership);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
