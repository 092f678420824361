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

/* ---- The batch (nodes_allowed) against node by node ------------------
 * A backend whose refusal is head + node + tail for any head and tail the
 * test sets: one endpoint asks it in a batch, the other (nodes_allowed
 * NULL) node by node; every answer must be the same bytes, whatever the
 * parts hold (another namespace's key to redact, a slash where the parts
 * meet, quotes and control bytes, sentences cut at the endpoint's 512). */
static const char *bh, *bt;
static int batch_calls;

static int bk_allowed(void *arg, const char *key, const char *node, char *why, size_t size) {
  (void)arg;
  if (strcmp(key, "team-a/tj-llama"))
    return -1;
  if (!strncmp(node, "ok", 2))
    return 1;
  snprintf(why, size, "%s%s%s", bh, node, bt);
  return 0;
}

static int bk_nodes_allowed(void *arg, const char *key, const char *const *nodes, size_t n,
                            int8_t *ans, char *head, char *tail, size_t part_size) {
  batch_calls++;
  for (size_t i = 0; i < n; i++)
    ans[i] = (int8_t)bk_allowed(arg, key, nodes[i], NULL, 0);
  if (strlen(bh) >= part_size || strlen(bt) >= part_size)
    return GC_ELIMIT;
  snprintf(head, part_size, "%s", bh);
  snprintf(tail, part_size, "%s", bt);
  return 0;
}

static char *answer_of(struct gb_sched *s, const char *body) {
  struct gb_http_response r = {200, NULL, 0, NULL};
  ck_assert_int_eq(gb_sched_handle(s, "/kube/filter", body, strlen(body), &r), 0);
  ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
  return r.body;
}

START_TEST(filter_batch_matches_per_node) {
  char x300[301], name253[254];
  memset(x300, 'x', 300);
  x300[300] = '\0';
  memset(name253, 'n', 253);
  name253[253] = '\0';
  char t_long[400], t_keys[400];
  snprintf(t_long, sizeof(t_long), " is far: %s team-b/zz", x300);
  snprintf(t_keys, sizeof(t_keys), " %.150s team-b/a team-c/b team-a/c d/e", x300);
  const char *heads[] = {"node ", "", "see team-b/x: ", "node", "\"q\" "};
  const char *tails[] = {" is outside the nodes gangbridge chose for team-a/tj-llama (in r1, tier 1)",
                         " is outside the nodes of team-b/tj-x",
                         "/team-b/x",
                         "team-b/x was here",
                         ".team-b/x",
                         "",
                         " \" \\ \x01 team-c/q\n",
                         t_long,
                         t_keys};
  /* As JSON text: a quote, a backslash and a control byte once decoded. */
  const char *nodes[] = {"ok-1",  "n1",         "team-b/x", "a.b/c",   " ",        "q\\\"uote",
                         "b\\\\sl", "ctl\\u0001", "\xc3\xbc", name253,   "ok-2",    "team-a/y",
                         "node-", "-dash"};
  size_t n_nodes = sizeof(nodes) / sizeof(*nodes);
  struct gb_sched_source be = {bk_allowed, NULL, NULL, NULL, NULL, NULL, bk_nodes_allowed};
  struct gb_sched_source one = be;
  one.nodes_allowed = NULL;
  struct gb_sched_config cfg = {0};
  struct gb_sched *sb, *so;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_sched_new(&cfg, &be, &sb, &d), 0);
  ck_assert_int_eq(gb_sched_new(&cfg, &one, &so, &d), 0);
  gc_diags_destroy(&d);
  struct gb_buf names, items;
  gb_buf_init(&names, 1u << 20);
  gb_buf_init(&items, 1u << 20);
  for (size_t i = 0; i < n_nodes; i++) {
    gb_buf_printf(&names, "%s\"%s\"", i ? "," : "", nodes[i]);
    gb_buf_printf(&items, "%s{\"metadata\":{\"name\":\"%s\"}}", i ? "," : "", nodes[i]);
  }
  char *forms[2];
  struct gb_buf t;
  gb_buf_init(&t, 1u << 20);
  gb_buf_printf(&t, "\"NodeNames\":[%s]", gb_buf_ptr(&names));
  forms[0] = args("tj-llama", gb_buf_ptr(&t));
  gb_buf_reset(&t);
  gb_buf_printf(&t, "\"Nodes\":{\"items\":[%s]},\"NodeNames\":null", gb_buf_ptr(&items));
  forms[1] = args("tj-llama", gb_buf_ptr(&t));
  int cases = 0;
  for (size_t h = 0; h < sizeof(heads) / sizeof(*heads); h++)
    for (size_t k = 0; k < sizeof(tails) / sizeof(*tails); k++)
      for (int f = 0; f < 2; f++) {
        bh = heads[h], bt = tails[k];
        int before = batch_calls;
        char *want = answer_of(so, forms[f]), *got = answer_of(sb, forms[f]);
        ck_assert_int_eq(batch_calls, before + 1);
        ck_assert_msg(!strcmp(want, got), "head \"%s\" tail \"%s\":\n  per node %s\n  batch    %s",
                      bh, bt, want, got);
        ck_assert_ptr_nonnull(strstr(want, "\"FailedNodes\":{\"n1\":"));
        cases++;
        free(want);
        free(got);
      }
  ck_assert_int_eq(cases, 90);
  /* A name followed by another "/...": redacted once, never the
   * replacement's own words again ("another a gang of another namespace"). */
  bh = "node ", bt = "/team-b/x";
  for (int w = 0; w < 2; w++) {
    char *a = answer_of(w ? sb : so, forms[0]);
    ck_assert_msg(strstr(a, "\"n1\":\"node a gang of another namespace/x\""), "%s", a);
    ck_assert_ptr_null(strstr(a, "another a gang"));
    free(a);
  }
  free(forms[0]);
  free(forms[1]);
  gb_buf_free(&t);
  gb_buf_free(&names);
  gb_buf_free(&items);
  gb_sched_free(sb);
  gb_sched_free(so);
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
  tcase_add_test(tc, filter_batch_matches_per_node);
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
