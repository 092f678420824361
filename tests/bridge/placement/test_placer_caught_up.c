/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_caught_up, which serve's scheduler endpoints wait for after a
 * takeover (issue 17, defect 3): a new placer is not caught up; passes on
 * an unsynced model do not count; once the model is synced a pass on the
 * leader catches up; gb_placer_resync (a new term) un-catches it at once
 * until the next leader pass; a standby's passes never count.  The placer's
 * own thread runs with a short tick; waits poll with a bound.  And
 * gb_placer_resync finds a gang the placer forgot: its pods reached the
 * model while its TrainJob was not in the caches (examined as unmanaged,
 * then dropped from the table), and no pod event follows.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gb_buf.h"
#include "gb_model.h"
#include "gb_model_test.h"
#include "gb_placer.h"
#include "gb_placer_test.h"
#include "gb_plan.h"
#include "gb_test.h"

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

static const char LATE_YAML[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainingRuntime\n"
    "metadata: {name: torch, namespace: ns1}\n"
    "spec:\n"
    "  mlPolicy: {numNodes: 1, torch: {}}\n"
    "  podGroupPolicy: {volcano: {networkTopology: {mode: hard, highestTierAllowed: 1}}}\n"
    "  template:\n"
    "    spec:\n"
    "      replicatedJobs:\n"
    "      - name: node\n"
    "        template:\n"
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
    "          spec: {template: {spec: {containers: [{name: node, image: p}]}}}\n"
    "---\n"
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainJob\n"
    "metadata: {name: late, namespace: ns1, uid: 11111111-2222-4333-8444-555555555555}\n"
    "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}}\n";

static int cached; /* the TrainJob has reached the caches */

static int late_gang(void *ctx, const char *ns, const char *name, struct gc_gang **out,
                     char *reason, size_t size) {
  (void)ctx, (void)ns, (void)name, (void)reason, (void)size;
  *out = NULL;
  if (!cached)
    return 0;
  struct gb_test_run r;
  gb_test_run(&r, LATE_YAML, NULL, NULL);
  ck_assert_ptr_nonnull(r.g);
  *out = r.g;
  r.g = NULL;
  gb_test_run_free(&r);
  return 0;
}

static int listed(struct gb_placer *p, const char *gang) {
  struct gb_buf b;
  gb_buf_init(&b, 1 << 20);
  ck_assert_int_eq(gb_placer_status_json(p, &b), 0);
  json_object *doc = json_tokener_parse(gb_buf_ptr(&b)), *gangs = NULL;
  int found = 0;
  if (json_object_object_get_ex(doc, "gangs", &gangs))
    for (size_t i = 0; i < json_object_array_length(gangs); i++) {
      json_object *k = NULL;
      json_object_object_get_ex(json_object_array_get_idx(gangs, i), "gang", &k);
      found |= !strcmp(json_object_get_string(k), gang);
    }
  json_object_put(doc);
  gb_buf_free(&b);
  return found;
}

START_TEST(resync_finds_forgotten_gang) {
  struct gb_plan *plan = NULL;
  struct gb_model *model = NULL;
  struct gb_placer *p = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_plan_new(NULL, &plan), 0);
  struct gb_model_opts mo = {.plan = plan};
  ck_assert_int_eq(gb_model_new(&mo, &model, &d), 0);
  struct gb_placer_opts po = {.model = model, .plan = plan, .gang = late_gang};
  ck_assert_int_eq(gb_placer_new(&po, &p, &d), 0);
  ck_assert_int_eq(gb_model_feed(model, "Node", 0,
                                 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                                 "\"n1\"},\"status\":{\"allocatable\":{\"cpu\":\"8\"}}}",
                                 &d),
                   0);
  ck_assert_int_eq(
      gb_model_feed(
          model, "Pod", 0,
          "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"late-node-0-0\","
          "\"namespace\":\"ns1\",\"uid\":\"u1\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
          "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"late\","
          "\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\"}},\"spec\":{\"containers\":"
          "[{\"name\":\"c\",\"image\":\"i\"}],\"schedulingGates\":[{\"name\":"
          "\"gangbridge.io/placement\"}]},\"status\":{\"phase\":\"Pending\"}}",
          &d),
      0);
  ck_assert_int_eq(gb_model_feed_done(model), 0);
  /* The pod's event reached the placer while the TrainJob was unknown. */
  gb_placer_on_gang(p, "ns1", "late");
  ck_assert_int_eq(gb_placer_run_once(p), 0);
  ck_assert(!listed(p, "ns1/late"));
  cached = 1; /* the TrainJob arrives; no pod changes */
  ck_assert_int_eq(gb_placer_run_once(p), 0);
  ck_assert(!listed(p, "ns1/late"));
  gb_placer_resync(p); /* becoming leader */
  ck_assert_int_eq(gb_placer_run_once(p), 0);
  ck_assert_msg(listed(p, "ns1/late"), "the forgotten gang is still not examined");
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
  tcase_add_test(tc, resync_finds_forgotten_gang);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
