/* SPDX-License-Identifier: Apache-2.0
 *
 * test_model_live: the model against the stand-in API server
 * (tests/apiserver/run): it lists and watches real Nodes and Pods, sees a
 * bind, a finished pod (which leaves the watch through the field
 * selector) and a delete, and picks up the HyperNode CRD installed after it
 * started, then the HyperNodes themselves.  Waits poll with a generous
 * bound and never assert a duration.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gb_kube_client.h"
#include "gb_kube_config.h"
#include "gb_standin.h"
#include "gb_manifest.h"
#include "gb_model.h"

__attribute__((weak)) int gb_plan_pod_bound(struct gb_plan *p, struct tp_snapshot *s,
                                            const char *key, uint32_t slot, size_t n_req,
                                            const char *const *res, const int64_t *val) {
  (void)p, (void)s, (void)key, (void)slot, (void)n_req, (void)res, (void)val;
  return 0;
}
__attribute__((weak)) int gb_plan_reapply_node(struct gb_plan *p, struct tp_snapshot *s,
                                               const char *node) {
  (void)p, (void)s, (void)node;
  return 0;
}
__attribute__((weak)) int gb_plan_reapply(struct gb_plan *p, struct tp_snapshot *s) {
  (void)p, (void)s;
  return 0;
}

static struct gb_standin standin;
static struct gb_kube_client *cli;

static void start_server(void) {
  ck_assert_int_eq(gb_standin_start(&standin), 0);
  cli = standin.cli;
}

static void stop_server(void) { gb_standin_stop(&standin); }

static void call(int rc, const struct gb_kube_error *e, const char *what) {
  ck_assert_msg(rc == 0, "%s: %s (%ld %s)", what, gc_diag_strerror(rc), e->http, e->message);
}

static void create(const char *collection, const char *json) {
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  json_object *o = json_tokener_parse(json);
  ck_assert_ptr_nonnull(o);
  call(gb_kube_client_create(cli, collection, o, NULL, &e), &e, json);
  json_object_put(o);
}

static void patch(const char *path, const char *json) {
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  json_object *o = json_tokener_parse(json);
  ck_assert_ptr_nonnull(o);
  call(gb_kube_client_merge_patch(cli, path, o, NULL, &e), &e, path);
  json_object_put(o);
}

static void add_node(const char *name, const char *cpu) {
  char b[512], path[128];
  snprintf(b, sizeof(b), "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"}}",
           name);
  create("/api/v1/nodes", b);
  snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", name);
  snprintf(b, sizeof(b), "{\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"pods\":\"110\"}}}", cpu);
  patch(path, b);
}

static void add_pod(const char *name, const char *node, const char *cpu) {
  char b[1024];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
           "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"js\"}},\"spec\":{%s%s%s"
           "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"requests\":"
           "{\"cpu\":\"%s\"}}}]}}",
           name, *node ? "\"nodeName\":\"" : "", node, *node ? "\"," : "", cpu);
  create("/api/v1/namespaces/default/pods", b);
}

struct q {
  const char *node, *dom;
  int64_t cpu;
  int found;
};

static int read_q(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  struct q *q = arg;
  int64_t slot = tp_snapshot_node(s, q->node);
  int r = tp_snapshot_resource(s, "cpu");
  q->found = slot >= 0 && (!q->dom || tp_snapshot_domain(s, q->dom) >= 0);
  q->cpu = slot >= 0 && r >= 0 ? tp_snapshot_node_free(s, r, (uint32_t)slot) : -1;
  return 0;
}

/* Polls (up to 30 s) until node's free cpu is want (and dom exists). */
static void wait_free(struct gb_model *m, const char *node, const char *dom, int64_t want) {
  struct q q = {.node = node, .dom = dom};
  for (int i = 0; i < 600; i++) {
    q.found = 0;
    if (gb_model_with_snapshot(m, read_q, &q) == 0 && q.found && q.cpu == want)
      return;
    usleep(50000);
  }
  ck_abort_msg("node %s: free cpu %lld, want %lld (domain %s found: %d)", node, (long long)q.cpu,
               (long long)want, dom ? dom : "-", q.found);
}

static int gangs;
static void on_gang(void *arg, const char *ns, const char *js) {
  (void)arg;
  if (!strcmp(ns, "default") && !strcmp(js, "js"))
    __atomic_add_fetch(&gangs, 1, __ATOMIC_SEQ_CST);
}

static int capacity;
static void on_capacity(void *arg) {
  (void)arg;
  __atomic_add_fetch(&capacity, 1, __ATOMIC_SEQ_CST);
}

/* Polls (up to 30 s) until the capacity callback ran more than `than` times. */
static void wait_capacity(int than) {
  for (int i = 0; i < 600 && __atomic_load_n(&capacity, __ATOMIC_SEQ_CST) <= than; i++)
    usleep(50000);
  ck_assert_int_gt(__atomic_load_n(&capacity, __ATOMIC_SEQ_CST), than);
}

static void install_hypernode_crd(void) {
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(
      gb_manifest_load_path(
          ds, GB_SRC_DIR "/tests/shared/crds/volcano/topology.volcano.sh_hypernodes.yaml", &d),
      0);
  ck_assert_uint_ge(ds->n, 1);
  json_object *o = gb_kube_client_value_to_json(ds->docs[0].root);
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  call(gb_kube_client_create(cli, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", o,
                             NULL, &e),
       &e, "HyperNode CRD");
  json_object_put(o);
  gc_diags_destroy(&d);
  gb_docset_free(ds);
}

START_TEST(test_list_watch_and_late_hypernodes) {
  start_server();
  add_node("a", "8");
  add_node("b", "8");
  add_pod("p1", "a", "2");
  add_pod("p2", "", "1");
  struct gb_informers *f = NULL;
  ck_assert_int_eq(gb_informers_new(cli, NULL, &f), 0);
  struct gb_model_opts o = {
      .client = cli, .informers = f, .on_gang = on_gang, .on_capacity = on_capacity};
  struct gb_model *m = NULL;
  ck_assert_int_eq(gb_model_new(&o, &m, NULL), 0);
  ck_assert_int_eq(gb_informers_start(f), 0);
  ck_assert_int_eq(gb_model_start(m), 0);
  wait_free(m, "a", NULL, 6000);
  ck_assert_int_eq(gb_model_synced(m), 1);
  ck_assert_int_gt(__atomic_load_n(&gangs, __ATOMIC_SEQ_CST), 0);
  /* p2 binds to b through the binding subresource, as a scheduler does (the
   * API server refuses a spec.nodeName update). */
  create("/api/v1/namespaces/default/pods/p2/binding",
         "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"p2\"},"
         "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"b\"}}");
  wait_free(m, "b", NULL, 7000);
  /* p1 finishes: the field selector drops it from the watch, and the
   * capacity it gives back is announced. */
  int cap0 = __atomic_load_n(&capacity, __ATOMIC_SEQ_CST);
  patch("/api/v1/namespaces/default/pods/p1/status", "{\"status\":{\"phase\":\"Succeeded\"}}");
  wait_free(m, "a", NULL, 8000);
  wait_capacity(cap0);
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  call(gb_kube_client_delete(cli, "/api/v1/namespaces/default/pods/p2", NULL, NULL, &e), &e,
       "delete");
  wait_free(m, "b", NULL, 8000);
  /* The HyperNode CRD appears after the start, then a HyperNode. */
  install_hypernode_crd();
  create("/apis/topology.volcano.sh/v1alpha1/hypernodes",
         "{\"apiVersion\":\"topology.volcano.sh/v1alpha1\",\"kind\":\"HyperNode\","
         "\"metadata\":{\"name\":\"rack-1\"},\"spec\":{\"tier\":1,\"members\":[{\"type\":\"Node\","
         "\"selector\":{\"exactMatch\":{\"name\":\"a\"}}}]}}");
  wait_free(m, "a", "rack-1", 8000);
  struct gb_model_stats st;
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.hypernodes, 1);
  ck_assert_uint_eq(st.nodes, 2);
  ck_assert_uint_eq(st.pods, 0);
  /* The housekeeping thread sleeps between ticks: over a second it runs
   * about 20 rounds (50 ms each), never the millions of a thread whose
   * timed wait returns at once (a condition on the wrong clock did). */
  uint64_t t0 = st.ticks;
  usleep(1000000);
  gb_model_stats(m, &st);
  ck_assert_uint_lt(st.ticks - t0, 1000);
  gb_model_stop(m);
  gb_informers_stop(f);
  gb_model_free(m);
  gb_informers_free(f);
  stop_server();
}
END_TEST

int main(void) {
  Suite *s = suite_create("model_live");
  TCase *tc = tcase_create("standin");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_list_watch_and_late_hypernodes);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
