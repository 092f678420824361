/* SPDX-License-Identifier: Apache-2.0
 *
 * Integration tests of gb_release against the stand-in API server, which
 * enforces Kubernetes' rules for gated pods (tests/apiserver/podrules.py):
 * each release body built from a pod as read is sent as one merge patch and
 * the stored pod is checked.  A pod with other controllers' gates keeps
 * them, in order; the requirement is AND-ed into both of two required terms
 * and the preferred terms stay; a pod with no affinity gets a single term
 * and can then be bound by a scheduler (which the stand-in refuses while
 * it is gated); a body built from a stale read is refused with 409 and a
 * re-read succeeds; a released pod is DONE (a retry does nothing), and a
 * pod ungated by someone else is UNRESTRICTED, because the API server
 * refuses node affinity on a pod without gates.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gb_kube_client.h"
#include "gb_release.h"
#include "gb_kube_config_test.h"

#ifndef GB_SRC_DIR
#define GB_SRC_DIR "."
#endif

#define TOKEN "release-test-token"
#define REQ_TERMS "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

static pid_t server_pid;
static char server_url[128];
static struct gb_kube_config *cfg;
static struct gb_kube_client *cli;

static void start_server(void) {
  const char *src = getenv("GB_SRC") ? getenv("GB_SRC") : GB_SRC_DIR;
  char run[512];
  snprintf(run, sizeof(run), "%s/tests/apiserver/run", src);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  server_pid = fork();
  ck_assert_int_ge(server_pid, 0);
  if (server_pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl("/usr/bin/python3", "python3", run, "--port", "0", "--token", TOKEN, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  ck_assert_ptr_nonnull(fgets(server_url, sizeof(server_url), f));
  fclose(f);
  server_url[strcspn(server_url, "\r\n")] = 0;
  ck_assert_msg(!strncmp(server_url, "http", 4), "server printed \"%s\"", server_url);
}

static void setup(void) {
  start_server();
  char kc[1024];
  snprintf(kc, sizeof(kc),
           "current-context: t\ncontexts: [{name: t, context: {cluster: c, user: u}}]\n"
           "clusters: [{name: c, cluster: {server: '%s'}}]\n"
           "users: [{name: u, user: {token: %s}}]\n",
           server_url, TOKEN);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_kube_config_load_buffer("kubeconfig", kc, strlen(kc), NULL, &cfg, &d), 0);
  gc_diags_destroy(&d);
  struct gb_kube_client_opts o = {0};
  o.qps = -1;
  o.max_retries = 0;
  ck_assert_int_eq(gb_kube_client_new(cfg, &o, &cli, NULL), 0);
}

static void teardown(void) {
  gb_kube_client_free(cli);
  gb_kube_config_free(cfg);
  cli = NULL;
  cfg = NULL;
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
}

/* ---- helpers ---------------------------------------------------------------- */

static const char *pod_path(const char *name, const char *sub) {
  static char path[512];
  ck_assert_int_eq(gb_kube_client_path(path, sizeof(path), "", "v1", "pods", "default", name), 0);
  if (sub) {
    size_t n = strlen(path);
    snprintf(path + n, sizeof(path) - n, "/%s", sub);
  }
  return path;
}

static void create_pod(const char *name, const char *spec) {
  char text[4096];
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
           "\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
           "\"pytorch:1\"}],%s}}",
           name, spec);
  json_object *obj = json_tokener_parse(text), *out = NULL;
  ck_assert_ptr_nonnull(obj);
  char coll[256];
  ck_assert_int_eq(gb_kube_client_path(coll, sizeof(coll), "", "v1", "pods", "default", NULL), 0);
  struct gb_kube_error e;
  ck_assert_msg(gb_kube_client_create(cli, coll, obj, &out, &e) == 0, "create %s: %s", name,
                e.message);
  json_object_put(obj);
  json_object_put(out);
}

static json_object *get_pod(const char *name) {
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_msg(gb_kube_client_get(cli, pod_path(name, NULL), &out, &e) == 0, "get %s: %s", name,
                e.message);
  return out;
}

/* Sends the release body built from `pod` (as read); returns the HTTP code. */
static long send_release(json_object *pod, const struct gb_restriction *r) {
  json_object *body = NULL, *out = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_release_patch(pod, r, &body, &d);
  ck_assert_msg(rc == 0, "release body: %s", d.n ? d.msgs[0] : gc_diag_strerror(rc));
  gc_diags_destroy(&d);
  const char *name = json_object_get_string(
      json_object_object_get(json_object_object_get(pod, "metadata"), "name"));
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  rc = gb_kube_client_merge_patch(cli, pod_path(name, NULL), body, &out, &e);
  json_object_put(body);
  json_object_put(out);
  return rc == 0 ? 200 : e.http;
}

/* Reads and releases pod `name`; fails the test unless the server took it. */
static void release(const char *name, const struct gb_restriction *r) {
  json_object *pod = get_pod(name);
  ck_assert_int_eq(send_release(pod, r), 200);
  json_object_put(pod);
}

/* The compact JSON of a dotted path in pod `name` ("null" when absent). */
static char *field(const char *name, const char *dotted) {
  json_object *pod = get_pod(name), *cur = pod;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", dotted);
  for (char *tok = buf, *dot; cur && tok; tok = dot ? dot + 1 : NULL) {
    dot = strchr(tok, '.');
    if (dot)
      *dot = '\0';
    if (!json_object_object_get_ex(cur, tok, &cur))
      cur = NULL;
  }
  char *s = strdup(cur ? json_object_to_json_string_ext(cur, JSON_C_TO_STRING_PLAIN |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE)
                       : "null");
  json_object_put(pod);
  return s;
}

static void expect_field(const char *name, const char *dotted, const char *want) {
  char *got = field(name, dotted);
  ck_assert_msg(!strcmp(got, want), "%s %s:\n  %s\nwanted\n  %s", name, dotted, got, want);
  free(got);
}

static enum gb_release_state state(const char *name, const struct gb_restriction *r) {
  json_object *pod = get_pod(name);
  enum gb_release_state st;
  ck_assert_int_eq(gb_release_state(pod, r, &st, NULL), 0);
  json_object_put(pod);
  return st;
}

static void block(struct gb_restriction *r) {
  memset(r, 0, sizeof(*r));
  ck_assert_int_eq(gb_restriction_label(r, "topology.example.com/block", "b1", NULL), 0);
}

#define REQ "{\"key\":\"topology.example.com/block\",\"operator\":\"In\",\"values\":[\"b1\"]}"
#define OUR_GATE "{\"name\":\"gangbridge.io/placement\"}"

/* ---- tests ------------------------------------------------------------------- */

START_TEST(test_other_gates_stay_terms_anded) {
  create_pod("p1", "\"schedulingGates\":[{\"name\":\"kueue.x-k8s.io/admission\"}," OUR_GATE
                   ",{\"name\":\"example.com/quota\"}],\"affinity\":{\"nodeAffinity\":{"
                   "\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":5,"
                   "\"preference\":{\"matchExpressions\":[{\"key\":\"fast\",\"operator\":"
                   "\"Exists\"}]}}],\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                   "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":"
                   "\"Exists\"}]},{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
                   "\"In\",\"values\":[\"n7\"]}]}]}}}");
  struct gb_restriction r;
  block(&r);
  ck_assert_int_eq(state("p1", &r), GB_RELEASE_GATED);
  release("p1", &r);
  expect_field("p1", "spec.schedulingGates",
               "[{\"name\":\"kueue.x-k8s.io/admission\"},{\"name\":\"example.com/quota\"}]");
  expect_field("p1", REQ_TERMS ".nodeSelectorTerms",
               "[{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}," REQ "]},"
               "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":"
               "[\"n7\"]}],\"matchExpressions\":[" REQ "]}]");
  expect_field("p1", "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
               "[{\"weight\":5,\"preference\":{\"matchExpressions\":[{\"key\":\"fast\","
               "\"operator\":\"Exists\"}]}}]");
  /* Released as far as gangbridge goes; the other gates are not ours. */
  ck_assert_int_eq(state("p1", &r), GB_RELEASE_DONE);
}
END_TEST

START_TEST(test_hosts_then_bindable) {
  create_pod("p2", "\"schedulingGates\":[" OUR_GATE "]");
  json_object *binding = json_tokener_parse(
      "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p2\"},"
      "\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}");
  json_object *out = NULL;
  struct gb_kube_error e;
  /* A scheduler cannot bind a gated pod. */
  ck_assert_int_ne(gb_kube_client_create(cli, pod_path("p2", "binding"), binding, &out, &e), 0);
  ck_assert_int_eq(e.http, 409);
  struct gb_restriction r;
  memset(&r, 0, sizeof(r));
  ck_assert_int_eq(gb_restriction_add_host(&r, "n1", NULL), 0);
  ck_assert_int_eq(gb_restriction_add_host(&r, "n2", NULL), 0);
  release("p2", &r);
  expect_field("p2", "spec.schedulingGates", "null");
  expect_field("p2", REQ_TERMS,
               "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"kubernetes.io/"
               "hostname\",\"operator\":\"In\",\"values\":[\"n1\",\"n2\"]}]}]}");
  ck_assert_msg(gb_kube_client_create(cli, pod_path("p2", "binding"), binding, &out, &e) == 0,
                "bind: %s", e.message);
  json_object_put(out);
  json_object_put(binding);
  expect_field("p2", "spec.nodeName", "\"n1\"");
}
END_TEST

START_TEST(test_stale_read_conflicts) {
  create_pod("p3", "\"schedulingGates\":[" OUR_GATE "]");
  struct gb_restriction r;
  block(&r);
  json_object *stale = get_pod("p3");
  /* Someone labels the pod after gangbridge read it. */
  json_object *label = json_tokener_parse("{\"metadata\":{\"labels\":{\"touched\":\"yes\"}}}");
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_merge_patch(cli, pod_path("p3", NULL), label, &out, &e), 0);
  json_object_put(label);
  json_object_put(out);
  ck_assert_int_eq(send_release(stale, &r), 409);
  json_object_put(stale);
  expect_field("p3", "spec.schedulingGates", "[" OUR_GATE "]"); /* nothing applied */
  release("p3", &r);                                            /* re-read, rebuilt */
  expect_field("p3", "spec.schedulingGates", "null");
  expect_field("p3", "metadata.labels", "{\"touched\":\"yes\"}");
  ck_assert_int_eq(state("p3", &r), GB_RELEASE_DONE);
}
END_TEST

START_TEST(test_retry_and_foreign_ungating) {
  create_pod("p4", "\"schedulingGates\":[" OUR_GATE "]");
  create_pod("p5", "\"schedulingGates\":[" OUR_GATE "]");
  struct gb_restriction r;
  block(&r);
  release("p4", &r);
  /* A retry after a crash reads a released pod: nothing is left to do, and
   * a body cannot even be built (the gate is gone). */
  ck_assert_int_eq(state("p4", &r), GB_RELEASE_DONE);
  json_object *pod = get_pod("p4"), *body = NULL;
  ck_assert_int_eq(gb_release_patch(pod, &r, &body, NULL), GC_ENOTFOUND);
  json_object_put(pod);

  /* Someone else removes gangbridge's gate: the pod can no longer be
   * restricted, as the API server refuses affinity on an ungated pod. */
  json_object *ungate = json_tokener_parse("{\"spec\":{\"schedulingGates\":null}}");
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_merge_patch(cli, pod_path("p5", NULL), ungate, &out, &e), 0);
  json_object_put(ungate);
  json_object_put(out);
  ck_assert_int_eq(state("p5", &r), GB_RELEASE_UNRESTRICTED);
  json_object *late = json_tokener_parse(
      "{\"spec\":{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
      "Execution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[" REQ "]}]}}}}}");
  ck_assert_int_ne(gb_kube_client_merge_patch(cli, pod_path("p5", NULL), late, &out, &e), 0);
  ck_assert_int_eq(e.http, 422);
  ck_assert_ptr_nonnull(strstr(e.message, "pod updates may not change fields"));
  json_object_put(late);
}
END_TEST

START_TEST(test_unrestricted_release_keeps_affinity) {
  create_pod("p6", "\"schedulingGates\":[" OUR_GATE ",{\"name\":\"x.io/y\"}],\"affinity\":{"
                   "\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                   "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":"
                   "\"Exists\"}]}]}}}");
  struct gb_restriction none;
  memset(&none, 0, sizeof(none));
  release("p6", &none);
  expect_field("p6", "spec.schedulingGates", "[{\"name\":\"x.io/y\"}]");
  expect_field("p6", REQ_TERMS ".nodeSelectorTerms",
               "[{\"matchExpressions\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]}]");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("release_live");
  TCase *tc = tcase_create("standin");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_other_gates_stay_terms_anded);
  tcase_add_test(tc, test_hosts_then_bindable);
  tcase_add_test(tc, test_stale_read_conflicts);
  tcase_add_test(tc, test_retry_and_foreign_ungating);
  tcase_add_test(tc, test_unrestricted_release_keeps_affinity);
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
