/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_selflabel against the stand-in API server: a stale leader label left
 * on the pod by an earlier term is removed at start; wanting the label on
 * puts it on (other labels and the spec untouched), off takes it off; a
 * label removed by hand while leading is put back at the next re-read; when
 * the removal keeps failing (injected 503 on pod patches) the readiness
 * check fails once stale_s has passed, naming the label, and passes again
 * when the fault clears and the label is gone; a process that cannot read
 * its pod yet (a label its predecessor left may be on it) is not ready at
 * once; a missing pod counts as
 * unlabelled and is never written; free removes a label that is on; bad
 * options are refused.  Waits poll with a bound; nothing asserts a duration.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gb_clock.h"
#include "gb_kube_client.h"
#include "gb_kube_client_test.h"
#include "gb_selflabel.h"
#include "gb_selflabel_test.h"
#include "gb_standin.h"

#define LABEL "gangbridge.io/leader"
#define POD_PATH "/api/v1/namespaces/default/pods/"

static struct gb_standin standin;

static void start_server(void) { ck_assert_int_eq(gb_standin_start(&standin), 0); }
static void stop_server(void) { gb_standin_stop(&standin); }

static void request(const char *method, enum gb_kube_verb verb, const char *path,
                    const char *body) {
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = gb_kube_client_request(standin.cli, verb, method, path, body ? "application/json" : NULL,
                                  body, body ? strlen(body) : 0, NULL, &e);
  ck_assert_msg(rc == 0, "%s %s: %s (%ld %s)", method, path, gc_diag_strerror(rc), e.http,
                e.message);
}

static void create_pod(const char *name, const char *labels) {
  char b[1024];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
           "\"default\",\"labels\":%s},\"spec\":{\"containers\":[{\"name\":\"gangbridge\","
           "\"image\":\"gangbridge:1\"}]}}",
           name, labels);
  request("POST", GB_KUBE_CREATE, "/api/v1/namespaces/default/pods", b);
}

/* The pod's labels as compact JSON, or "" when the pod is missing. */
static void labels_of(const char *pod, char *out, size_t size) {
  char path[256];
  snprintf(path, sizeof(path), POD_PATH "%s", pod);
  json_object *o = NULL, *md = NULL, *l = NULL;
  struct gb_kube_error e;
  out[0] = '\0';
  if (gb_kube_client_get(standin.cli, path, &o, &e))
    return;
  json_object_object_get_ex(o, "metadata", &md);
  json_object_object_get_ex(md, "labels", &l);
  snprintf(
      out, size, "%s",
      l ? json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
        : "{}");
  json_object_put(o);
}

static int wait_labels(const char *pod, const char *want) {
  char got[512];
  for (int i = 0; i < 1000; i++) {
    labels_of(pod, got, sizeof(got));
    if (!strcmp(got, want))
      return 1;
    usleep(10000);
  }
  fprintf(stderr, "labels of %s: %s, want %s\n", pod, got, want);
  return 0;
}

static struct gb_selflabel *make(const char *pod, double resync_s, double stale_s) {
  struct gb_selflabel_opts o = {standin.cli, "default", pod,     LABEL, "true",
                                0.05,        resync_s,  stale_s, 2000,  NULL};
  struct gb_selflabel *s = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_selflabel_new(&o, &s, &d), 0);
  gc_diags_destroy(&d);
  ck_assert_int_eq(gb_selflabel_start(s), 0);
  return s;
}

START_TEST(stale_label_removed_then_on_off) {
  create_pod("gb-a", "{\"app\":\"gangbridge\",\"" LABEL "\":\"true\"}");
  struct gb_selflabel *s = make("gb-a", 30, 5);
  ck_assert(wait_labels("gb-a", "{\"app\":\"gangbridge\"}"));
  gb_selflabel_set(s, 1);
  ck_assert(wait_labels("gb-a", "{\"app\":\"gangbridge\",\"" LABEL "\":\"true\"}"));
  char reason[256];
  ck_assert_int_eq(gb_selflabel_check(s, reason, sizeof(reason)), 0);
  gb_selflabel_set(s, 0);
  ck_assert(wait_labels("gb-a", "{\"app\":\"gangbridge\"}"));
  gb_selflabel_set(s, 1);
  ck_assert(wait_labels("gb-a", "{\"app\":\"gangbridge\",\"" LABEL "\":\"true\"}"));
  /* Stopping while on takes the label off. */
  gb_selflabel_free(s);
  char got[512];
  labels_of("gb-a", got, sizeof(got));
  ck_assert_str_eq(got, "{\"app\":\"gangbridge\"}");
}
END_TEST

START_TEST(removed_by_hand_put_back) {
  create_pod("gb-b", "{\"app\":\"gangbridge\"}");
  struct gb_selflabel *s = make("gb-b", 0.2, 5);
  gb_selflabel_set(s, 1);
  ck_assert(wait_labels("gb-b", "{\"app\":\"gangbridge\",\"" LABEL "\":\"true\"}"));
  struct gb_kube_error e;
  json_object *p = json_tokener_parse("{\"metadata\":{\"labels\":{\"" LABEL "\":null}}}");
  ck_assert_int_eq(gb_kube_client_merge_patch(standin.cli, POD_PATH "gb-b", p, NULL, &e), 0);
  json_object_put(p);
  ck_assert(wait_labels("gb-b", "{\"app\":\"gangbridge\",\"" LABEL "\":\"true\"}"));
  gb_selflabel_free(s);
}
END_TEST

START_TEST(failing_removal_fails_readiness) {
  create_pod("gb-c", "{\"app\":\"gangbridge\"}");
  struct gb_selflabel *s = make("gb-c", 30, 0.3);
  gb_selflabel_set(s, 1);
  ck_assert(wait_labels("gb-c", "{\"app\":\"gangbridge\",\"" LABEL "\":\"true\"}"));
  request("POST", GB_KUBE_CREATE, "/_control/faults",
          "{\"error_rate\":1.0,\"error_codes\":[503],\"error_verbs\":[\"patch\"],"
          "\"error_resources\":[\"pods\"]}");
  gb_selflabel_set(s, 0);
  char reason[512] = "";
  int stale = 0;
  /* Stale first while the removal is under way, then with its error. */
  for (int i = 0; i < 1000 && !(stale && strstr(reason, "503")); i++) {
    usleep(10000);
    stale = gb_selflabel_check(s, reason, sizeof(reason));
  }
  ck_assert_msg(stale, "the readiness check never failed");
  ck_assert_msg(strstr(reason, LABEL "=true") && strstr(reason, "503"), "reason: %s", reason);
  char got[512];
  labels_of("gb-c", got, sizeof(got));
  ck_assert_str_eq(got, "{\"app\":\"gangbridge\",\"" LABEL "\":\"true\"}");
  struct gb_selflabel_status st;
  gb_selflabel_status(s, &st);
  ck_assert_int_eq(st.want, 0);
  ck_assert_uint_gt(st.failures, 0);
  request("DELETE", GB_KUBE_DELETE, "/_control/faults", NULL);
  ck_assert(wait_labels("gb-c", "{\"app\":\"gangbridge\"}"));
  for (int i = 0; i < 500 && gb_selflabel_check(s, reason, sizeof(reason)); i++)
    usleep(10000);
  ck_assert_int_eq(gb_selflabel_check(s, reason, sizeof(reason)), 0);
  gb_selflabel_free(s);
}
END_TEST

START_TEST(unread_pod_not_ready) {
  /* A restarted process may find a label its predecessor left: until it has
   * read its pod it is not ready, whatever stale_s says. */
  create_pod("gb-d", "{\"" LABEL "\":\"true\"}");
  request("POST", GB_KUBE_CREATE, "/_control/faults",
          "{\"error_rate\":1.0,\"error_codes\":[503],\"error_verbs\":[\"get\"],"
          "\"error_resources\":[\"pods\"]}");
  struct gb_selflabel *s = make("gb-d", 30, 30);
  char reason[512];
  ck_assert_int_eq(gb_selflabel_check(s, reason, sizeof(reason)), 1);
  ck_assert_ptr_nonnull(strstr(reason, LABEL "=true"));
  request("DELETE", GB_KUBE_DELETE, "/_control/faults", NULL);
  ck_assert(wait_labels("gb-d", "{}"));
  for (int i = 0; i < 500 && gb_selflabel_check(s, reason, sizeof(reason)); i++)
    usleep(10000);
  ck_assert_int_eq(gb_selflabel_check(s, reason, sizeof(reason)), 0);
  gb_selflabel_free(s);
}
END_TEST

START_TEST(missing_pod_never_written) {
  struct gb_selflabel *s = make("gb-none", 30, 0.05);
  gb_selflabel_set(s, 1);
  struct gb_selflabel_status st;
  for (int i = 0; i < 500; i++) {
    gb_selflabel_status(s, &st);
    if (st.pod_missing)
      break;
    usleep(10000);
  }
  ck_assert_int_eq(st.pod_missing, 1);
  ck_assert_int_eq(st.have, 0);
  gb_selflabel_set(s, 0);
  usleep(200000);
  char reason[256];
  ck_assert_int_eq(gb_selflabel_check(s, reason, sizeof(reason)), 0);
  gb_selflabel_status(s, &st);
  ck_assert_uint_eq(st.writes, 0);
  gb_selflabel_free(s);
  char got[64];
  labels_of("gb-none", got, sizeof(got));
  ck_assert_str_eq(got, "");
}
END_TEST

/* The leader's kick after the pod is known missing reads it again and
 * writes nothing (it sent a PATCH to the missing pod when the first read
 * finished before gb_selflabel_set; seen under load). */
START_TEST(missing_pod_kick_reads_first) {
  struct gb_selflabel *s = make("gb-none-2", 30, 0.05);
  struct gb_selflabel_status st;
  for (int i = 0; i < 500; i++) {
    gb_selflabel_status(s, &st);
    if (st.pod_missing)
      break;
    usleep(10000);
  }
  ck_assert_int_eq(st.pod_missing, 1);
  uint64_t reads = st.reads;
  gb_selflabel_set(s, 1);
  for (int i = 0; i < 500 && st.reads == reads; i++) {
    usleep(10000);
    gb_selflabel_status(s, &st);
  }
  usleep(100000);
  gb_selflabel_status(s, &st);
  ck_assert_uint_gt(st.reads, reads);
  ck_assert_uint_eq(st.writes, 0);
  ck_assert_int_eq(st.pod_missing, 1);
  gb_selflabel_free(s);
}
END_TEST

START_TEST(bad_options) {
  struct gb_selflabel *s = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_selflabel_opts o = {standin.cli, "default", "p", "not a key", "true", 0, 0, 0, 0, NULL};
  ck_assert_int_eq(gb_selflabel_new(&o, &s, &d), GC_EINVAL);
  ck_assert_ptr_null(s);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "not a key=true"));
  o.key = LABEL;
  o.pod = "";
  ck_assert_int_eq(gb_selflabel_new(&o, &s, &d), GC_EINVAL);
  gc_diags_destroy(&d);
  gb_selflabel_free(NULL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("selflabel");
  TCase *tc = tcase_create("live");
  tcase_add_unchecked_fixture(tc, start_server, stop_server);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, stale_label_removed_then_on_off);
  tcase_add_test(tc, removed_by_hand_put_back);
  tcase_add_test(tc, failing_removal_fails_readiness);
  tcase_add_test(tc, unread_pod_not_ready);
  tcase_add_test(tc, missing_pod_never_written);
  tcase_add_test(tc, missing_pod_kick_reads_first);
  tcase_add_test(tc, bad_options);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
