/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_kube_client pieces that need no server: Status error
 * parsing, resource paths, json-c <-> gc_value
 * conversion, and a client pointed at a closed port (transport errors are
 * reported, retried a bounded number of times and counted).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_kube_client.h"
#include "gb_kube_client_test.h"
#include "gb_kube_discovery.h"
#include "gb_kube_discovery_test.h"
#include "gb_kube_config_test.h"

START_TEST(status_conflict) {
  const char *body =
      "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Apply "
      "failed with 1 conflict: conflict with \\\"kubectl\\\": .spec.minMember\",\"reason\":"
      "\"Conflict\",\"details\":{\"causes\":[{\"reason\":\"FieldManagerConflict\"}]},\"code\":409}";
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  gb_kube_client_status_parse(body, strlen(body), 500, &e);
  ck_assert_int_eq(e.http, 409); /* the Status code wins over the transport's */
  ck_assert_str_eq(e.reason, "Conflict");
  ck_assert_str_eq(e.message,
                   "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.minMember");
  ck_assert_int_eq(gb_kube_error_is_gone(&e), 0);
  char buf[256];
  ck_assert_str_eq(gb_kube_error_str(&e, buf, sizeof(buf)),
                   "HTTP 409 Conflict: Apply failed with 1 conflict: conflict with \"kubectl\": "
                   ".spec.minMember");
}
END_TEST

START_TEST(status_gone_and_retry_after) {
  const char *body = "{\"kind\":\"Status\",\"reason\":\"Expired\",\"message\":\"too old\","
                     "\"code\":410}";
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  gb_kube_client_status_parse(body, strlen(body), 200, &e);
  ck_assert_int_eq(gb_kube_error_is_gone(&e), 1);
  gb_kube_error_clear(&e);
  body = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"code\":429,"
         "\"details\":{\"retryAfterSeconds\":7}}";
  gb_kube_client_status_parse(body, strlen(body), 429, &e);
  ck_assert_int_eq(e.retry_after_s, 7);
  ck_assert_str_eq(e.reason, "TooManyRequests");
  ck_assert_str_eq(e.message, "HTTP 429 with no Status message");
}
END_TEST

START_TEST(status_not_json) {
  const char *body = "<html>\n<b>502 Bad Gateway</b></html>";
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  gb_kube_client_status_parse(body, strlen(body), 502, &e);
  ck_assert_int_eq(e.http, 502);
  ck_assert_str_eq(e.reason, "");
  ck_assert_str_eq(e.message, "HTTP 502: <html> <b>502 Bad Gateway</b></html>");
  gb_kube_error_clear(&e);
  gb_kube_client_status_parse(NULL, 0, 503, &e);
  ck_assert_str_eq(e.message, "HTTP 503: (empty body)");
  /* Wrongly typed fields are ignored, not trusted. */
  gb_kube_error_clear(&e);
  body = "{\"code\":\"409\",\"reason\":5,\"message\":[1]}";
  gb_kube_client_status_parse(body, strlen(body), 400, &e);
  ck_assert_int_eq(e.http, 400);
  ck_assert_str_eq(e.reason, "");
}
END_TEST

START_TEST(paths) {
  char p[128];
  ck_assert_int_eq(gb_kube_client_path(p, sizeof(p), "", "v1", "namespaces", NULL, "team-a"), 0);
  ck_assert_str_eq(p, "/api/v1/namespaces/team-a");
  ck_assert_int_eq(gb_kube_client_path(p, sizeof(p), "trainer.kubeflow.org", "v1alpha1",
                                       "trainjobs", "ns", "job"),
                   0);
  ck_assert_str_eq(p, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/job");
  ck_assert_int_eq(
      gb_kube_client_path(p, sizeof(p), "scheduling.volcano.sh", "v1beta1", "queues", NULL, NULL),
      0);
  ck_assert_str_eq(p, "/apis/scheduling.volcano.sh/v1beta1/queues");
  ck_assert_int_eq(gb_kube_client_path(p, sizeof(p), NULL, "v1", "pods", "a/b", NULL), GC_EINVAL);
  ck_assert_int_eq(gb_kube_client_path(p, sizeof(p), NULL, "v1", "pods", "ns", "x?y"), GC_EINVAL);
  ck_assert_int_eq(gb_kube_client_path(p, sizeof(p), NULL, "v1", "pods", "", NULL), GC_EINVAL);
  ck_assert_int_eq(gb_kube_client_path(p, 10, NULL, "v1", "pods", "namespace", NULL), GC_ELIMIT);
}
END_TEST

START_TEST(json_value_round_trip) {
  const char *text = "{\"a\":1,\"b\":[true,null,\"s\\u0000t\"],\"c\":{\"q\":0.50,\"big\":"
                     "9007199254740993}}";
  json_object *j = json_tokener_parse(text);
  ck_assert_ptr_nonnull(j);
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *v = NULL;
  ck_assert_int_eq(gb_kube_client_json_to_value(a, j, 0, &v), 0);
  ck_assert_int_eq(v->type, GC_MAP);
  ck_assert_int_eq(gc_value_path(v, "a")->u.i, 1);
  struct gc_value *q = gc_value_path(v, "c.q");
  ck_assert_int_eq(q->type, GC_FLOAT);
  ck_assert_str_eq(q->text, "0.50"); /* the spelling survives for quantities */
  ck_assert_int_eq(gc_value_path(v, "c.big")->u.i, 9007199254740993LL);
  struct gc_value *b = gc_map_get(v, "b");
  ck_assert_int_eq(b->len, 3);
  ck_assert_int_eq(b->u.items[1]->type, GC_NULL);
  ck_assert_int_eq(b->u.items[2]->len, 3); /* embedded NUL kept */
  json_object *back = gb_kube_client_value_to_json(v);
  ck_assert_ptr_nonnull(back);
  struct gc_value *v2 = NULL;
  ck_assert_int_eq(gb_kube_client_json_to_value(a, back, 0, &v2), 0);
  ck_assert_int_eq(gc_value_equal(v, v2), 1);
  /* Depth limit. */
  ck_assert_int_eq(gb_kube_client_json_to_value(a, j, 1, &v2), GC_ELIMIT);
  json_object_put(back);
  json_object_put(j);
  gc_arena_free(a);
  /* An exhausted arena is reported, not crashed on. */
  a = gc_arena_new(64);
  j = json_tokener_parse(text);
  ck_assert_int_eq(gb_kube_client_json_to_value(a, j, 0, &v), GC_ENOMEM);
  json_object_put(j);
  gc_arena_free(a);
}
END_TEST

static int n_lat;
static void on_lat(void *arg, enum gb_kube_verb verb, long http, double s) {
  (void)arg;
  ck_assert_int_eq(verb, GB_KUBE_GET);
  ck_assert_int_eq(http, 0);
  n_lat++;
}

START_TEST(closed_port_transport_error) {
  struct gb_kube_config *cfg = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  const char *kc = "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                   "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n";
  ck_assert_int_eq(gb_kube_config_load_buffer("mem", kc, strlen(kc), NULL, &cfg, &d), 0);
  struct gb_kube_client_opts o = {0};
  o.max_retries = 2;
  o.retry_base_s = 0.01;
  o.on_latency = on_lat;
  struct gb_kube_client *c = NULL;
  ck_assert_int_eq(gb_kube_client_new(cfg, &o, &c, &d), 0);
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(c, "/api/v1/namespaces", &out, &e), GC_EIO);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(e.http, 0);
  ck_assert_int_ne(e.curl_code, 0);
  ck_assert_int_eq(e.failed_attempts, 3); /* each retried failure is reported to the caller */
  ck_assert_ptr_nonnull(strstr(e.message, "GET /api/v1/namespaces:"));
  struct gb_kube_stats st;
  gb_kube_client_stats(c, &st);
  ck_assert_uint_eq(st.verb[GB_KUBE_GET].requests, 3);
  ck_assert_uint_eq(st.verb[GB_KUBE_GET].errors, 3);
  ck_assert_uint_eq(st.verb[GB_KUBE_GET].retries, 2);
  ck_assert_int_eq(n_lat, 3);
  /* Discovery cannot answer: an error, not a false "not served". */
  int served = -1;
  ck_assert_int_eq(gb_kube_discovery_check(c, "scheduling.volcano.sh", "v1beta1", "podgroups",
                                           &served, &e),
                   GC_EIO);
  gb_kube_client_free(c);
  gb_kube_config_free(cfg);
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kube_client");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, status_conflict);
  tcase_add_test(tc, status_gone_and_retry_after);
  tcase_add_test(tc, status_not_json);
  tcase_add_test(tc, paths);
  tcase_add_test(tc, json_value_round_trip);
  tcase_add_test(tc, closed_port_transport_error);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
