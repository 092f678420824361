/* SPDX-License-Identifier: Apache-2.0
 *
 * The kube-scheduler extender verbs through gb_sched_handle with a fake
 * plan: filter in both forms (nodeCacheCapable true: NodeNames; false: the
 * Nodes list, echoed as sent), prioritize's HostPriorityList (0..10), null
 * and absent fields, escapes, wrong types.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_sched.h"
#include "gb_sched_test.h"
#include "sched_fixture.h"

static struct fx_source fb;
static struct gb_sched *S;

static void setup(void) {
  memset(&fb, 0, sizeof(fb));
  struct gb_sched_source be = fx_source_of(&fb);
  struct gb_sched_config cfg = {0};
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_sched_new(&cfg, &be, &S, &d), 0);
  gc_diags_destroy(&d);
}

static void teardown(void) { gb_sched_free(S); }

static void expect(const char *path, const char *body, int status, const char *want) {
  struct gb_http_response r = {200, NULL, 0, NULL};
  ck_assert_int_eq(gb_sched_handle(S, path, body, strlen(body), &r), 0);
  ck_assert_int_eq(r.status, status);
  ck_assert_msg(status == 200 ? !strcmp(r.body, want) : !strncmp(r.body, want, strlen(want)),
                "got %s", r.body);
  free(r.body);
}

/* ExtenderArgs with the fixture's Pod; tail is the rest of the object. */
static char *args(const char *jobset, const char *tail) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 24);
  gb_buf_addstr(&b, "{\"Pod\":");
  fx_pod(&b, "team-a", "tj-llama-node-0-1", "u1", jobset, NULL);
  gb_buf_printf(&b, ",%s}", tail);
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  return out;
}

#define FAIL3                                                                                      \
  "\"gpu-node-3\":\"node gpu-node-3 is not in domain leaf-1 chosen for team-a/tj-llama\""

START_TEST(filter_node_names) {
  char *b = args("tj-llama", "\"Nodes\":null,\"NodeNames\":[\"gpu-node-17\",\"gpu-node-3\","
                             "\"gpu-node-18\"]");
  expect("/kube/filter", b, 200,
         "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-17\",\"gpu-node-18\"],\"FailedNodes\":{" FAIL3
         "},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  free(b);
}
END_TEST

START_TEST(filter_nodes_list_echoed) {
  const char *n17 = "{\"metadata\":{\"name\":\"gpu-node-17\",\"labels\":{\"a\":\"b\"}},"
                    "\"status\":{\"allocatable\":{\"cpu\":\"8\"}}}";
  const char *n3 = "{\"metadata\":{\"name\":\"gpu-node-3\"}}";
  char tail[512];
  snprintf(tail, sizeof(tail),
           "\"Nodes\":{\"kind\":\"NodeList\",\"items\":[%s, %s]},"
           "\"NodeNames\":null",
           n17, n3);
  char *b = args("tj-llama", tail);
  char want[1024];
  snprintf(want, sizeof(want),
           "{\"Nodes\":{\"metadata\":{},\"items\":[%s]},\"NodeNames\":null,\"FailedNodes\":{" FAIL3
           "},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}",
           n17);
  expect("/kube/filter", b, 200, want);
  free(b);
}
END_TEST

START_TEST(filter_other_pod_passes_all) {
  char *b = args(NULL, "\"NodeNames\":[\"gpu-node-3\",\"gpu-node-4\"]");
  expect("/kube/filter", b, 200,
         "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-3\",\"gpu-node-4\"],\"FailedNodes\":{},"
         "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  free(b);
}
END_TEST

START_TEST(filter_coscheduling_label_and_escapes) {
  /* No JobSet label: the coscheduling pod-group label names the gang; the
   * node name arrives with escapes. */
  expect("/kube/filter",
         "{\"pod\":{\"metadata\":{\"namespace\":\"team-a\",\"labels\":{"
         "\"scheduling.x-k8s.io/pod-group\":\"tj-llama\"}}},\"nodenames\":"
         "[\"gpu-node-\\u0031\\u0037\",\"gpu-node-3\"],\"Unknown\":{}}",
         200,
         "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-17\"],\"FailedNodes\":{" FAIL3
         "},\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
}
END_TEST

/* Invalid UTF-8 in a name is never echoed: Go reads each bad byte as
 * U+FFFD, and so do the answers (the names, and the Node objects the
 * Nodes form echoes).  An escaped label key matches, as in Go. */
START_TEST(filter_invalid_utf8_never_echoed) {
  expect("/kube/filter",
         "{\"Pod\":{\"metadata\":{\"namespace\":\"team-a\",\"labels\":{"
         "\"jobset.sigs.k8s.io\\/jobset-name\":\"tj-llama\"}}},"
         "\"NodeNames\":[\"gpu-node-17\",\"bad\xff\"]}",
         200,
         "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-17\"],\"FailedNodes\":{\"bad\xef\xbf\xbd\":"
         "\"node bad\xef\xbf\xbd is not in domain leaf-1 chosen for team-a/tj-llama\"},"
         "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  char *b = args(NULL, "\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"n\xc3\"},"
                       "\"x\":\"\xfe\"}]}");
  expect("/kube/filter", b, 200,
         "{\"Nodes\":{\"metadata\":{},\"items\":[{\"metadata\":{\"name\":\"n\xef\xbf\xbd\"},"
         "\"x\":\"\xef\xbf\xbd\"}]},\"NodeNames\":null,\"FailedNodes\":{},"
         "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  free(b);
}
END_TEST

START_TEST(filter_null_everything) {
  expect("/kube/filter", "{\"Pod\":null,\"Nodes\":null,\"NodeNames\":null}", 200,
         "{\"Nodes\":{\"metadata\":{},\"items\":[]},\"NodeNames\":null,\"FailedNodes\":{},"
         "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
  expect("/kube/filter", "{\"NodeNames\":[]}", 200,
         "{\"Nodes\":null,\"NodeNames\":[],\"FailedNodes\":{},"
         "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
}
END_TEST

START_TEST(prioritize_host_priority_list) {
  char *b = args("tj-llama", "\"NodeNames\":[\"gpu-node-17\",\"gpu-node-3\",\"gpu-node-18\"]");
  expect("/kube/prioritize", b, 200,
         "[{\"Host\":\"gpu-node-17\",\"Score\":10},{\"Host\":\"gpu-node-3\",\"Score\":0},"
         "{\"Host\":\"gpu-node-18\",\"Score\":5}]");
  free(b);
  b = args("other", "\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"gpu-node-17\"}}]}");
  expect("/kube/prioritize", b, 200, "[{\"Host\":\"gpu-node-17\",\"Score\":0}]");
  free(b);
  expect("/kube/prioritize", "{\"Pod\":{},\"NodeNames\":null}", 200, "[]");
}
END_TEST

START_TEST(malformed_400) {
  expect("/kube/filter", "{\"NodeNames\":[1]}", 400,
         "kube filter: body:1:15: NodeNames[]: expected a string, found a number");
  expect("/kube/filter", "{\"Pod\":\"x\"}", 400,
         "kube filter: body:1:8: Pod: expected an object, found a string");
  expect("/kube/filter", "{\"Nodes\":{\"items\":[{\"metadata\":{}}]}}", 400,
         "kube filter: body:1:35: Nodes.items[0]: no metadata.name");
  expect("/kube/prioritize", "{\"NodeNames\":[\"a\"", 400,
         "kube prioritize: body:1:18: unexpected end of body");
  expect("/kube/prioritize", "{\"Pod\":{\"metadata\":{\"name\":\"\\x\"}}}", 400,
         "kube prioritize: body:1:29: invalid escape in string");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_kube");
  TCase *tc = tcase_create("verbs");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, filter_node_names);
  tcase_add_test(tc, filter_nodes_list_echoed);
  tcase_add_test(tc, filter_other_pod_passes_all);
  tcase_add_test(tc, filter_coscheduling_label_and_escapes);
  tcase_add_test(tc, filter_null_everything);
  tcase_add_test(tc, filter_invalid_utf8_never_echoed);
  tcase_add_test(tc, prioritize_host_priority_list);
  tcase_add_test(tc, malformed_400);
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
