/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_timeouts, the service's tracker, fed informer changes
 * directly and run with gb_timeouts_run_due (no API client: the action is
 * computed and counted, nothing is written): the deadline is the PodGroup's
 * creation plus the timeout it carries (Volcano annotation, coscheduling
 * spec), it fires once, never for a started gang, none while the TrainJob is
 * suspended by the user, the resume deadline of a TrainJob gangbridge
 * suspended, the wait restarting at the resume, a PodGroup created again,
 * and the labelled metrics with queues folded into "other".
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_config.h"
#include "gb_log.h"
#include "gb_metrics.h"
#include "gb_timeouts.h"

#define T0 1767225600.0 /* 2026-01-01T00:00:00Z */

static struct gb_config cfg;
static struct gb_metrics *reg;
static struct gb_service_metrics sm;

static struct gb_timeouts *make(int max_queues) {
  ck_assert_int_eq(gb_config_init(&cfg), 0);
  cfg.timeout_max_queues = max_queues;
  reg = gb_metrics_new();
  ck_assert_ptr_nonnull(reg);
  ck_assert_int_eq(gb_service_metrics_register(reg, "t", &sm, NULL), 0);
  struct gb_timeouts_opts o = {&cfg, NULL, &sm, reg, NULL, NULL};
  struct gb_timeouts *t = NULL;
  ck_assert_int_eq(gb_timeouts_new(&o, &t, NULL), 0);
  return t;
}

static void done(struct gb_timeouts *t) {
  gb_timeouts_free(t);
  gb_metrics_free(reg);
  gb_config_destroy(&cfg);
}

static void feed(struct gb_timeouts *t, enum gb_observe_kind kind, enum gb_informer_op op,
                 const char *key, const char *json, const char *old_json) {
  json_object *o = json_tokener_parse(json);
  ck_assert_msg(o != NULL, "bad JSON: %s", json);
  struct gb_informer_change ch = {op, key, "ns", key, o, old_json};
  gb_timeouts_observe(t, kind, &ch, 0);
  json_object_put(o);
}

/* A Volcano PodGroup ns/<name> created at T0 + created_off. */
static void volcano_pg(struct gb_timeouts *t, const char *name, const char *uid,
                       const char *sla, const char *queue, int min_member) {
  char json[1024], key[128];
  snprintf(key, sizeof(key), "ns/%s", name);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\","
           "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{"
           "\"volcano.sh/sla-waiting-time\":\"%s\"}},\"spec\":{\"minMember\":%d,"
           "\"queue\":\"%s\"}}",
           name, uid, sla, min_member, queue);
  feed(t, GB_OBSERVE_PODGROUP_VOLCANO, GB_INFORMER_ADD, key, json, NULL);
}

static void trainjob(struct gb_timeouts *t, const char *name, const char *extra_ann,
                     int suspend) {
  char json[1024], key[128];
  snprintf(key, sizeof(key), "ns/%s", name);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"tj-%s\","
           "\"annotations\":{%s}},\"spec\":{\"suspend\":%s}}",
           name, name, extra_ann, suspend ? "true" : "false");
  feed(t, GB_OBSERVE_TRAINJOB, GB_INFORMER_UPDATE, key, json, NULL);
}

static const char *pod_json(char *buf, size_t cap, const char *name, const char *group,
                            int scheduled) {
  snprintf(buf, cap,
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"creationTimestamp\":"
           "\"2026-01-01T00:00:01Z\",\"annotations\":{\"scheduling.k8s.io/group-name\":\"%s\"}},"
           "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"%s\","
           "\"lastTransitionTime\":\"2026-01-01T00:00:07Z\"}]}}",
           name, group, scheduled ? "True" : "False");
  return buf;
}

static int has_metric(const char *line) {
  char *out = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_metrics_render(reg, &out, &len), 0);
  int found = strstr(out, line) != NULL;
  if (!found)
    fprintf(stderr, "not in /metrics: %s", line);
  free(out);
  return found;
}

START_TEST(test_fires_once_at_deadline) {
  struct gb_timeouts *t = make(50);
  volcano_pg(t, "a", "u1", "90s", "q1", 2);
  ck_assert(gb_timeouts_next(t) == T0 + 90);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 89.9), 0);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 90), 1);
  ck_assert(gb_timeouts_next(t) == 0);
  /* An update of the same PodGroup does not re-arm what was acted on. */
  volcano_pg(t, "a", "u1", "90s", "q1", 2);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 1000), 0);
  /* The same name created again is a new gang. */
  volcano_pg(t, "a", "u2", "90s", "q1", 2);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 1000), 1);
  struct gb_timeouts_stats st;
  gb_timeouts_get_stats(t, &st);
  ck_assert_uint_eq(st.fired, 2);
  ck_assert(has_metric("gangbridge_gang_timeouts_total{backend=\"volcano\",queue=\"q1\","
                       "size=\"2-7\"} 2\n"));
  done(t);
}
END_TEST

START_TEST(test_started_never_fires) {
  struct gb_timeouts *t = make(50);
  char p0[1024], p1[1024], p1s[1024];
  volcano_pg(t, "b", "u1", "10s", "q1", 2);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/b-0", pod_json(p0, sizeof(p0), "b-0", "b", 1),
       NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 10); /* 1 of 2 scheduled: still waiting */
  pod_json(p1, sizeof(p1), "b-1", "b", 0);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/b-1", p1, NULL);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_UPDATE, "ns/b-1", pod_json(p1s, sizeof(p1s), "b-1", "b", 1),
       p1);
  ck_assert(gb_timeouts_next(t) == 0); /* started: no deadline */
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 1000), 0);
  /* Time to schedule: creation to the PodScheduled time of the pod that
   * completed the gang (7 s); assembly: first to last pod created (0 s). */
  ck_assert(has_metric("gangbridge_gang_time_to_schedule_seconds_sum{backend=\"volcano\","
                       "queue=\"q1\",size=\"2-7\"} 7\n"));
  ck_assert(has_metric("gangbridge_gang_assembly_seconds_count{backend=\"volcano\","
                       "queue=\"q1\",size=\"2-7\"} 1\n"));
  /* A pod replaced later does not make it a waiting gang again. */
  feed(t, GB_OBSERVE_POD, GB_INFORMER_DELETE, "ns/b-1", p1s, NULL);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/b-1", p1, NULL);
  ck_assert(gb_timeouts_next(t) == 0);
  done(t);
}
END_TEST

START_TEST(test_suspended) {
  struct gb_timeouts *t = make(50);
  /* Suspended by the user: no deadline at all. */
  trainjob(t, "c", "", 1);
  volcano_pg(t, "c", "u1", "10s", "q1", 2);
  ck_assert(gb_timeouts_next(t) == 0);
  /* Suspended by gangbridge: the resume time is the deadline. */
  trainjob(t, "c",
           "\"gangbridge.io/requeued-by\":\"gangbridge\",\"gangbridge.io/requeue-attempt\":"
           "\"1\",\"gangbridge.io/requeue-resume-at\":\"2026-01-01T00:05:00Z\"",
           1);
  ck_assert(gb_timeouts_next(t) == T0 + 300);
  /* Resumed: the wait restarts at the resume, so the timeout is 10 s after it. */
  trainjob(t, "c",
           "\"gangbridge.io/requeue-attempt\":\"1\",\"gangbridge.io/requeue-resume-at\":"
           "\"2026-01-01T00:05:01Z\"",
           0);
  ck_assert(gb_timeouts_next(t) == T0 + 311);
  done(t);
}
END_TEST

START_TEST(test_queues_fold) {
  struct gb_timeouts *t = make(2);
  volcano_pg(t, "d1", "u1", "1s", "q1", 1);
  volcano_pg(t, "d2", "u2", "1s", "q2", 8);
  volcano_pg(t, "d3", "u3", "1s", "q3", 200);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 5), 3);
  ck_assert(has_metric("{backend=\"volcano\",queue=\"q1\",size=\"1\"} 1\n"));
  ck_assert(has_metric("{backend=\"volcano\",queue=\"q2\",size=\"8-31\"} 1\n"));
  ck_assert(has_metric("{backend=\"volcano\",queue=\"other\",size=\"128+\"} 1\n"));
  done(t);
}
END_TEST

START_TEST(test_coscheduling_timeout) {
  struct gb_timeouts *t = make(50);
  feed(t, GB_OBSERVE_PODGROUP_COSCHEDULING, GB_INFORMER_ADD, "ns/e",
       "{\"metadata\":{\"name\":\"e\",\"namespace\":\"ns\",\"uid\":\"u\","
       "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"minMember\":4,"
       "\"scheduleTimeoutSeconds\":3600}}",
       NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 900); /* kube-scheduler's Permit cap */
  /* A Volcano PodGroup without a valid waiting time: measured, never acted on. */
  volcano_pg(t, "f", "u", "0s", "q", 2);
  volcano_pg(t, "g", "u", "soon", "q", 2);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 100000), 1);
  done(t);
}
END_TEST

/* gangbridge's own PodGroup carries the policy's timeout unclamped: a 1h
 * policy on coscheduling times out after an hour, not at the Permit cap. */
START_TEST(test_own_annotation_wins) {
  struct gb_timeouts *t = make(50);
  feed(t, GB_OBSERVE_PODGROUP_COSCHEDULING, GB_INFORMER_ADD, "ns/h",
       "{\"metadata\":{\"name\":\"h\",\"namespace\":\"ns\",\"uid\":\"u\","
       "\"annotations\":{\"gangbridge.io/schedule-timeout\":\"1h0m0s\"},"
       "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"minMember\":4,"
       "\"scheduleTimeoutSeconds\":900}}",
       NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 3600);
  done(t);
}
END_TEST

int main(void) {
  gb_log_set_level(GB_LOG_WARN);
  Suite *s = suite_create("timeouts");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_fires_once_at_deadline);
  tcase_add_test(tc, test_started_never_fires);
  tcase_add_test(tc, test_suspended);
  tcase_add_test(tc, test_queues_fold);
  tcase_add_test(tc, test_coscheduling_timeout);
  tcase_add_test(tc, test_own_annotation_wins);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
