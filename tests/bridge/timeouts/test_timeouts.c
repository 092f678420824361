/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_timeouts, the service's tracker, fed informer changes
 * directly and run with gb_timeouts_run_due (no API client: the action is
 * computed and counted, nothing is written): the deadline is the PodGroup's
 * creation plus the timeout it carries (Volcano annotation, coscheduling
 * spec), it fires once, never for a started gang, none while the TrainJob is
 * suspended by the user, the resume deadline of a TrainJob gangbridge
 * suspended, a PodGroup created again, the labelled metrics with queues
 * folded into "other" deterministically; the durable facts on gangbridge's
 * PodGroup (a gang that started once is never acted on again, even with its
 * pods replaced and the process restarted; a claimed timeout is not acted on
 * twice; the wait restarts at the recorded resume), what a tenant writes on
 * its TrainJob moving nothing, timeouts.until ready, timeouts.max, and no
 * action before the informers have synced.
 */
#include <check.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_config.h"
#include "gb_options.h"
#include "gb_log.h"
#include "gb_metrics.h"
#include "gb_timeouts.h"
#include "gb_timeouts_test.h"

#define T0 1767225600.0 /* 2026-01-01T00:00:00Z */
#define OURS_META                                                                                  \
  ",\"labels\":{\"app.kubernetes.io/managed-by\":\"gangbridge\"},\"ownerReferences\":[{"           \
  "\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\",\"name\":\"x\","         \
  "\"uid\":\"tj-x\",\"controller\":true}]"

static struct gb_config cfg;           /* the controller's: timeouts.max */
static struct gb_timeouts_options tmo; /* the tracker's timeouts.* */
static struct gb_options opts;         /* the two tables over cfg and tmo */
static struct gb_options_part parts[2];
static struct gb_metrics *reg;
static struct gb_service_metrics sm;

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum gb_timeout_action test_action = GB_TIMEOUT_EVENT;
static int synced_flag;
static int synced_fn(void *ctx) {
  (void)ctx;
  return synced_flag;
}

/* Both tables with their defaults. */
static void config_init(void) {
  parts[0] = (struct gb_options_part){gb_config_table(), &cfg};
  parts[1] = (struct gb_options_part){&gb_timeouts_options_table, &tmo};
  ck_assert_int_eq(gb_options_init(&opts, parts, 2, NULL), 0);
}

static struct gb_timeouts *make_cfg(int max_queues, int until_ready, const char *max) {
  config_init();
  tmo.max_queues = max_queues;
  tmo.until_ready = until_ready;
  cfg.timeout_max = max;
  tmo.action = test_action;
  reg = gb_metrics_new();
  ck_assert_ptr_nonnull(reg);
  ck_assert_int_eq(gb_service_metrics_register(reg, "t", &sm, NULL), 0);
  struct gb_timeouts_opts o = {.cfg = &cfg, .options = &tmo, .metrics = &sm, .reg = reg};
  struct gb_timeouts *t = NULL;
  ck_assert_int_eq(gb_timeouts_new(&o, &t, NULL), 0);
  return t;
}

static struct gb_timeouts *make(int max_queues) { return make_cfg(max_queues, 0, ""); }

static void done(struct gb_timeouts *t) {
  gb_timeouts_free(t);
  gb_metrics_free(reg);
  gb_options_destroy(&opts);
}

/* The observer kinds the tests feed: the controller's, with a PodGroup's
 * backend named by its kind. */
enum { PG_VOLCANO = 100, PG_COSCHED, PG_KAI, PG_WORKLOAD };

static void feed(struct gb_timeouts *t, int kind, enum gb_informer_op op, const char *key,
                 const char *json, const char *old_json) {
  json_object *o = json_tokener_parse(json);
  ck_assert_msg(o != NULL, "bad JSON: %s", json);
  struct gb_informer_change ch = {op, key, "ns", key, o, old_json, 0};
  const struct gc_backend *b = kind == PG_VOLCANO   ? gc_backend_by_name("volcano")
                               : kind == PG_COSCHED ? gc_backend_by_name("coscheduling")
                               : kind == PG_KAI     ? gc_backend_by_name("kai")
                               : kind == PG_WORKLOAD ? gc_backend_by_name("workload")
                                                     : NULL;
  gb_timeouts_observe(t, b ? GB_OBSERVE_PODGROUP : (enum gb_observe_kind)kind, b, &ch);
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
  feed(t, PG_VOLCANO, GB_INFORMER_ADD, key, json, NULL);
}

/* A Volcano PodGroup of gangbridge's (managed-by label, controller owner)
 * created at T0, with extra annotations (members of a JSON object). */
static void own_pg(struct gb_timeouts *t, const char *name, const char *uid, const char *ann,
                   int min_member) {
  char json[2048], key[128];
  snprintf(key, sizeof(key), "ns/%s", name);
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"%s\","
           "\"resourceVersion\":\"5\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"" OURS_META
           ",\"annotations\":{\"gangbridge.io/schedule-timeout\":\"60s\"%s%s}},"
           "\"spec\":{\"minMember\":%d,\"queue\":\"q1\"},\"status\":{\"phase\":\"Inqueue\"}}",
           name, uid, ann[0] ? "," : "", ann, min_member);
  feed(t, PG_VOLCANO, GB_INFORMER_ADD, key, json, NULL);
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
                       "size=\"2-7\",phase=\"scheduled\"} 2\n"));
  done(t);
}
END_TEST

/* A KAI PodGroup splits its count over sub-groups and has no phase: the
 * tracker's quorum is gangbridge's gangbridge.io/min-member annotation, so
 * one scheduled pod of three does not start the gang. */
START_TEST(test_kai_quorum_from_annotation) {
  struct gb_timeouts *t = make(50);
  char pg[1024], pod[1024];
  snprintf(pg, sizeof(pg),
           "{\"metadata\":{\"name\":\"k\",\"namespace\":\"ns\",\"uid\":\"u1\","
           "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{"
           "\"gangbridge.io/schedule-timeout\":\"30s\",\"gangbridge.io/min-member\":\"3\"}},"
           "\"spec\":{\"minSubGroup\":1,\"subGroups\":[{\"name\":\"node\",\"minMember\":3}]}}");
  feed(t, PG_KAI, GB_INFORMER_ADD, "ns/k", pg, NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 30);
  for (int i = 0; i < 3; i++) {
    char name[16], key[32];
    snprintf(name, sizeof(name), "k-%d", i);
    snprintf(key, sizeof(key), "ns/%s", name);
    snprintf(pod, sizeof(pod),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"creationTimestamp\":"
             "\"2026-01-01T00:00:01Z\",\"annotations\":{\"pod-group-name\":\"k\"}},"
             "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
             "\"lastTransitionTime\":\"2026-01-01T00:00:07Z\"}]}}",
             name);
    feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, key, pod, NULL);
    /* Before the third pod the gang still waits: the quorum is 3, not 1. */
    ck_assert(gb_timeouts_next(t) == (i < 2 ? T0 + 30 : 0));
  }
  done(t);
}
END_TEST

/* A KAI PodGroup lists every replicated job as a sub-group; the
 * initializers' (minMember 0) pods are bound to it too but are not the
 * gang: two scheduled initializer pods do not start a gang of two trainer
 * nodes, whether the pods or the PodGroup are seen first. */
static const char *kai_pod(char *buf, size_t cap, const char *name, const char *sub) {
  snprintf(buf, cap,
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"creationTimestamp\":"
           "\"2026-01-01T00:00:01Z\",\"annotations\":{\"pod-group-name\":\"k\"},\"labels\":{"
           "\"kai.scheduler/subgroup-name\":\"%s\"}},\"status\":{\"conditions\":[{\"type\":"
           "\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":"
           "\"2026-01-01T00:00:07Z\"}]}}",
           name, sub);
  return buf;
}

START_TEST(test_kai_initializers_not_counted) {
  struct gb_timeouts *t = make(50);
  char pg[1024], pod[1024];
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/k-d",
       kai_pod(pod, sizeof(pod), "k-d", "dataset-initializer"), NULL);
  snprintf(pg, sizeof(pg),
           "{\"metadata\":{\"name\":\"k\",\"namespace\":\"ns\",\"uid\":\"u1\","
           "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{"
           "\"gangbridge.io/schedule-timeout\":\"30s\",\"gangbridge.io/min-member\":\"2\"}},"
           "\"spec\":{\"minSubGroup\":3,\"subGroups\":[{\"name\":\"dataset-initializer\","
           "\"minMember\":0},{\"name\":\"model-initializer\",\"minMember\":0},"
           "{\"name\":\"node\",\"minMember\":2}]}}");
  feed(t, PG_KAI, GB_INFORMER_ADD, "ns/k", pg, NULL);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/k-m",
       kai_pod(pod, sizeof(pod), "k-m", "model-initializer"), NULL);
  /* Two scheduled pods, both initializers: the gang of two still waits. */
  ck_assert(gb_timeouts_next(t) == T0 + 30);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/k-n0", kai_pod(pod, sizeof(pod), "k-n0", "node"),
       NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 30);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/k-n1", kai_pod(pod, sizeof(pod), "k-n1", "node"),
       NULL);
  ck_assert(gb_timeouts_next(t) == 0); /* both trainer nodes: started */
  done(t);
}
END_TEST

/* The upstream Workload API (v1beta1): the tracker follows the PodGroup
 * <trainjob>-gang, its quorum is spec.schedulingPolicy.gang.minCount, pods
 * join by spec.schedulingGroup.podGroupName, and the scheduled condition
 * is the version's own (PodGroupInitiallyScheduled in 1.37,
 * PodGroupScheduled in 1.36). */
static void workload_pg(struct gb_timeouts *t, const char *version, const char *kind,
                        const char *name, int min_count, const char *status) {
  char json[2048], key[128];
  snprintf(key, sizeof(key), "ns/%s", name);
  snprintf(json, sizeof(json),
           "{\"apiVersion\":\"scheduling.k8s.io/%s\",\"kind\":\"%s\",\"metadata\":{"
           "\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"u-%s\",\"resourceVersion\":\"3\","
           "\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
           "\"annotations\":{\"gangbridge.io/schedule-timeout\":\"30s\"}},\"spec\":{"
           "\"schedulingPolicy\":{\"gang\":{\"minCount\":%d}}}%s%s}",
           version, kind, name, name, min_count, status[0] ? "," : "", status);
  feed(t, PG_WORKLOAD, GB_INFORMER_ADD, key, json, NULL);
}

static const char *workload_pod(char *buf, size_t cap, const char *name, const char *group,
                                int scheduled) {
  snprintf(buf, cap,
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"creationTimestamp\":"
           "\"2026-01-01T00:00:01Z\"},\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"%s\"}},"
           "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"%s\","
           "\"reason\":\"Unschedulable\",\"lastTransitionTime\":\"2026-01-01T00:00:07Z\"}]}}",
           name, group, scheduled ? "True" : "False");
  return buf;
}

START_TEST(test_workload_gang_starts) {
  struct gb_timeouts *t = make(50);
  char pod[1024];
  workload_pg(t, "v1beta1", "PodGroup", "w-gang", 2, "");
  ck_assert(gb_timeouts_next(t) == T0 + 30);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/w-0",
       workload_pod(pod, sizeof(pod), "w-0", "w-gang", 1), NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 30); /* 1 of minCount 2 */
  /* A pod of a group gangbridge did not name (no "-gang") is no member. */
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/f-0",
       workload_pod(pod, sizeof(pod), "f-0", "w", 1), NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 30);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/w-1",
       workload_pod(pod, sizeof(pod), "w-1", "w-gang", 1), NULL);
  ck_assert(gb_timeouts_next(t) == 0);
  ck_assert(has_metric("gangbridge_gang_time_to_schedule_seconds_count{backend=\"workload\","
                       "queue=\"none\",size=\"2-7\"} 1\n"));
  done(t);

  /* The condition alone (pods replaced since) says it started, by each
   * version's own name; the other version's name does not. */
  static const char *const beta = "\"status\":{\"conditions\":[{\"type\":"
                                  "\"PodGroupInitiallyScheduled\",\"status\":\"True\","
                                  "\"lastTransitionTime\":\"2026-01-01T00:00:05Z\"}]}";
  static const char *const alpha = "\"status\":{\"conditions\":[{\"type\":"
                                   "\"PodGroupScheduled\",\"status\":\"True\","
                                   "\"lastTransitionTime\":\"2026-01-01T00:00:05Z\"}]}";
  t = make(50);
  workload_pg(t, "v1beta1", "PodGroup", "b-gang", 4, beta);
  ck_assert(gb_timeouts_next(t) == 0);
  workload_pg(t, "v1alpha2", "PodGroup", "a-gang", 4, alpha);
  ck_assert(gb_timeouts_next(t) == 0);
  workload_pg(t, "v1alpha2", "PodGroup", "c-gang", 4, beta);
  ck_assert(gb_timeouts_next(t) == T0 + 30);
  done(t);
}
END_TEST

START_TEST(test_workload_gang_times_out) {
  struct gb_timeouts *t = make(50);
  char pod[1024];
  /* The Workload itself (v1alpha2 and later) carries no status: not followed. */
  workload_pg(t, "v1beta1", "Workload", "x", 2, "");
  ck_assert(gb_timeouts_next(t) == 0);
  workload_pg(t, "v1beta1", "PodGroup", "x-gang", 2,
              "\"status\":{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\","
              "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":"
              "\"not enough capacity for the gang\"}]}");
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/x-0",
       workload_pod(pod, sizeof(pod), "x-0", "x-gang", 1), NULL);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/x-1",
       workload_pod(pod, sizeof(pod), "x-1", "x-gang", 0), NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 30);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 29), 0);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 30), 1);
  ck_assert(has_metric("gangbridge_gang_timeouts_total{backend=\"workload\",queue=\"none\","
                       "size=\"2-7\",phase=\"scheduled\"} 1\n"));
  ck_assert(gb_timeouts_next(t) == 0);
  /* The gang's TrainJob is the PodGroup's name without "-gang": its user
   * suspending it holds the deadline. */
  trainjob(t, "y", "", 1);
  workload_pg(t, "v1beta1", "PodGroup", "y-gang", 2, "");
  ck_assert(gb_timeouts_next(t) == 0);
  workload_pg(t, "v1beta1", "PodGroup", "z-gang", 2, "");
  ck_assert(gb_timeouts_next(t) == T0 + 30);
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
  test_action = GB_TIMEOUT_REQUEUE;
  struct gb_timeouts *t = make(50);
  test_action = GB_TIMEOUT_EVENT;
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
  /* A far-future resume time on it is not believed: it is resumed at the
   * end of attempt 1's backoff at the latest. */
  trainjob(t, "c",
           "\"gangbridge.io/requeued-by\":\"gangbridge\",\"gangbridge.io/requeue-attempt\":"
           "\"1\",\"gangbridge.io/requeue-resume-at\":\"2099-01-01T00:00:00Z\"",
           1);
  double next = gb_timeouts_next(t);
  ck_assert_msg(next > 0 && next < 4070908800.0, "resume at %f", next);
  /* Resumed (seen here): the wait restarts at the resume, whatever the
   * TrainJob's annotation says, so the timeout is 10 s after it. */
  double before = wall();
  trainjob(t, "c",
           "\"gangbridge.io/requeue-attempt\":\"1\",\"gangbridge.io/requeue-resume-at\":"
           "\"2099-01-01T00:00:00Z\"",
           0);
  double after = wall();
  /* First the note that the future resume time is not believed. */
  ck_assert_uint_eq(gb_timeouts_run_due(t, after), 1);
  next = gb_timeouts_next(t);
  ck_assert_msg(next >= floor(before) + 10 && next <= after + 10, "next %f before %f after %f",
                next, before, after);
  done(t);
}
END_TEST

/* Which queues get their own label does not depend on the order the
 * PodGroups arrive in: the maxQueues queues in use that sort first. */
START_TEST(test_queues_fold) {
  static const char *const orders[2][3] = {{"qa", "qb", "qc"}, {"qc", "qa", "qb"}};
  for (int o = 0; o < 2; o++) {
    struct gb_timeouts *t = make(2);
    for (int i = 0; i < 3; i++) {
      char name[8];
      snprintf(name, sizeof(name), "d%d", i);
      volcano_pg(t, name, name, "1s", orders[o][i], 1);
    }
    ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 5), 3);
    ck_assert(has_metric("{backend=\"volcano\",queue=\"qa\",size=\"1\",phase=\"scheduled\"} 1\n"));
    ck_assert(has_metric("{backend=\"volcano\",queue=\"qb\",size=\"1\",phase=\"scheduled\"} 1\n"));
    ck_assert(
        has_metric("{backend=\"volcano\",queue=\"other\",size=\"1\",phase=\"scheduled\"} 1\n"));
    done(t);
  }
}
END_TEST

START_TEST(test_coscheduling_timeout) {
  struct gb_timeouts *t = make(50);
  feed(t, PG_COSCHED, GB_INFORMER_ADD, "ns/e",
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
  feed(t, PG_COSCHED, GB_INFORMER_ADD, "ns/h",
       "{\"metadata\":{\"name\":\"h\",\"namespace\":\"ns\",\"uid\":\"u\","
       "\"annotations\":{\"gangbridge.io/schedule-timeout\":\"1h0m0s\"},"
       "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"minMember\":4,"
       "\"scheduleTimeoutSeconds\":900}}",
       NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 3600);
  done(t);
}
END_TEST

/* Defect 1 of issue 18: a gang that started, whose pods were then
 * replaced, seen by a restarted process.  The started fact on its own
 * PodGroup keeps it from ever being acted on; before, the deadline
 * (creation + timeout) was long past and the new process acted at once. */
START_TEST(test_started_fact_survives_restart) {
  /* The first process: the gang reaches its quorum; the fact is queued for
   * the leader and recorded (no client here: in memory). */
  struct gb_timeouts *t = make(50);
  char p0[1024], p1[1024];
  own_pg(t, "r", "u1", "", 2);
  ck_assert(gb_timeouts_next(t) == T0 + 60);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/r-0", pod_json(p0, sizeof(p0), "r-0", "r", 1), NULL);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/r-1", pod_json(p1, sizeof(p1), "r-1", "r", 1), NULL);
  double w = gb_timeouts_next(t);
  ck_assert_msg(w > 0 && w <= wall(), "the fact is written at once: %f", w);
  ck_assert_uint_eq(gb_timeouts_run_due(t, wall()), 1);
  ck_assert(gb_timeouts_next(t) == 0);
  done(t);
  /* The restarted process sees the PodGroup with the fact and new, unscheduled pods. */
  t = make(50);
  own_pg(t, "r", "u1", "\"gangbridge.io/started-at\":\"2026-01-01T00:00:07Z\"", 2);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/r-0", pod_json(p0, sizeof(p0), "r-0", "r", 0), NULL);
  ck_assert(gb_timeouts_next(t) == 0);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 100000), 0);
  done(t);
  /* Without the fact (what happened before the fix), the same gang is acted on. */
  t = make(50);
  own_pg(t, "r", "u1", "", 2);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/r-0", pod_json(p0, sizeof(p0), "r-0", "r", 0), NULL);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 100000), 1);
  done(t);
  /* Volcano's Scheduled=True condition survives a pod replacement too. */
  t = make(50);
  feed(t, PG_VOLCANO, GB_INFORMER_ADD, "ns/v",
       "{\"metadata\":{\"name\":\"v\",\"namespace\":\"ns\",\"uid\":\"u\","
       "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{"
       "\"volcano.sh/sla-waiting-time\":\"10s\"}},\"spec\":{\"minMember\":2},\"status\":{"
       "\"phase\":\"Inqueue\",\"conditions\":[{\"type\":\"Scheduled\",\"status\":\"True\","
       "\"lastTransitionTime\":\"2026-01-01T00:00:05Z\"}]}}",
       NULL);
  ck_assert(gb_timeouts_next(t) == 0);
  done(t);
}
END_TEST

/* A claimed timeout (timed-out-at at or after the wait's start) is not
 * acted on again by another replica or after a restart; a resume recorded
 * on the PodGroup starts a new wait. */
START_TEST(test_claim_and_resume_facts) {
  struct gb_timeouts *t = make(50);
  own_pg(t, "c", "u1", "\"gangbridge.io/timed-out-at\":\"2026-01-01T00:01:00Z\"", 2);
  ck_assert(gb_timeouts_next(t) == 0);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 100000), 0);
  struct gb_timeouts_stats st;
  gb_timeouts_get_stats(t, &st);
  ck_assert_uint_eq(st.fired, 0); /* counted once, by whoever claimed it */
  own_pg(t, "c", "u1",
         "\"gangbridge.io/timed-out-at\":\"2026-01-01T00:01:00Z\","
         "\"gangbridge.io/resumed-at\":\"2026-01-01T00:05:00Z\"",
         2);
  ck_assert(gb_timeouts_next(t) == T0 + 300 + 60);
  done(t);
}
END_TEST

/* Nothing a tenant writes on its TrainJob moves the gang's deadline. */
START_TEST(test_tenant_annotations_move_nothing) {
  struct gb_timeouts *t = make(50);
  own_pg(t, "x", "u1", "", 2);
  trainjob(t, "x",
           "\"gangbridge.io/requeue-resume-at\":\"2099-01-01T00:00:00Z\","
           "\"gangbridge.io/requeued-by\":\"gangbridge\",\"gangbridge.io/requeue-attempt\":\"0\"",
           0);
  ck_assert(gb_timeouts_next(t) <= wall()); /* the note to report, at once */
  /* The note, and the timeout at creation + 60 s (long past): it fires. */
  ck_assert_uint_eq(gb_timeouts_run_due(t, wall()), 2);
  ck_assert(gb_timeouts_next(t) == 0);
  ck_assert(has_metric("gangbridge_gang_timeouts_total{backend=\"volcano\",queue=\"q1\","
                       "size=\"2-7\",phase=\"scheduled\"} 1\n"));
  done(t);
}
END_TEST

/* timeouts.until ready: scheduled pods do not end the wait, Ready ones do. */
START_TEST(test_until_ready) {
  struct gb_timeouts *t = make_cfg(50, 1, "");
  char p0[1024], p1[1024];
  volcano_pg(t, "y", "u1", "30s", "q1", 1);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/y-0", pod_json(p0, sizeof(p0), "y-0", "y", 1), NULL);
  ck_assert(gb_timeouts_next(t) == T0 + 30); /* scheduled, not ready */
  snprintf(p1, sizeof(p1),
           "{\"metadata\":{\"name\":\"y-0\",\"namespace\":\"ns\",\"creationTimestamp\":"
           "\"2026-01-01T00:00:01Z\",\"annotations\":{\"scheduling.k8s.io/group-name\":\"y\"}},"
           "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
           "\"lastTransitionTime\":\"2026-01-01T00:00:07Z\"},{\"type\":\"Ready\",\"status\":"
           "\"True\",\"lastTransitionTime\":\"2026-01-01T00:00:20Z\"}]}}");
  feed(t, GB_OBSERVE_POD, GB_INFORMER_UPDATE, "ns/y-0", p1, p0);
  ck_assert(gb_timeouts_next(t) == 0);
  ck_assert(has_metric("gangbridge_gang_time_to_ready_seconds_sum{backend=\"volcano\","
                       "queue=\"q1\",size=\"1\"} 20\n"));
  /* A gang that is scheduled but not ready in time is acted on, named by phase. */
  volcano_pg(t, "z", "u2", "30s", "q1", 1);
  feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, "ns/z-0", pod_json(p0, sizeof(p0), "z-0", "z", 1), NULL);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 30), 1);
  ck_assert(has_metric("gangbridge_gang_timeouts_total{backend=\"volcano\",queue=\"q1\","
                       "size=\"1\",phase=\"ready\"} 1\n"));
  done(t);
}
END_TEST

/* config timeouts.max bounds what a PodGroup gangbridge did not render carries. */
START_TEST(test_max_bounds_foreign_podgroups) {
  struct gb_timeouts *t = make_cfg(50, 0, "2m");
  volcano_pg(t, "m", "u1", "720h", "q1", 2);
  ck_assert(gb_timeouts_next(t) == T0 + 120);
  done(t);
}
END_TEST

/* Nothing is acted on or counted before every informer has synced. */
START_TEST(test_waits_for_sync) {
  config_init();
  cfg.timeout_max = "";
  reg = gb_metrics_new();
  ck_assert_int_eq(gb_service_metrics_register(reg, "t", &sm, NULL), 0);
  struct gb_timeouts_opts o = {
      .cfg = &cfg, .options = &tmo, .metrics = &sm, .reg = reg, .synced = synced_fn};
  struct gb_timeouts *t = NULL;
  ck_assert_int_eq(gb_timeouts_new(&o, &t, NULL), 0);
  synced_flag = 0;
  volcano_pg(t, "s", "u1", "10s", "q1", 2);
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 100), 0);
  synced_flag = 1;
  ck_assert_uint_eq(gb_timeouts_run_due(t, T0 + 100), 1);
  done(t);
}
END_TEST

int main(void) {
  gb_log_set_level(GB_LOG_WARN);
  Suite *s = suite_create("timeouts");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_fires_once_at_deadline);
  tcase_add_test(tc, test_started_never_fires);
  tcase_add_test(tc, test_kai_quorum_from_annotation);
  tcase_add_test(tc, test_kai_initializers_not_counted);
  tcase_add_test(tc, test_workload_gang_starts);
  tcase_add_test(tc, test_workload_gang_times_out);
  tcase_add_test(tc, test_suspended);
  tcase_add_test(tc, test_queues_fold);
  tcase_add_test(tc, test_coscheduling_timeout);
  tcase_add_test(tc, test_own_annotation_wins);
  tcase_add_test(tc, test_started_fact_survives_restart);
  tcase_add_test(tc, test_claim_and_resume_facts);
  tcase_add_test(tc, test_tenant_annotations_move_nothing);
  tcase_add_test(tc, test_until_ready);
  tcase_add_test(tc, test_max_bounds_foreign_podgroups);
  tcase_add_test(tc, test_waits_for_sync);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
