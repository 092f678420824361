/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informers, the shared informer factory, without a server: consumers of
 * one resource share one informer (whatever their selections), resources
 * differ by group and version too, deferred informers are left to their
 * owner by gb_informers_start, and registrations that come too late or
 * disagree on deferral are refused.  (The one list and watch per resource
 * on the stand-in: tests/integration/test_kube_live.c, shared_informer.)
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_informers.h"
#include "gb_informers_test.h"
#include "gb_kube_config.h"
#include "gb_kube_config_test.h"

static struct gb_kube_config *cfg;
static struct gb_kube_client *cli;

static void setup(void) {
  const char *kc = "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                   "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n";
  ck_assert_int_eq(gb_kube_config_load_buffer("t", kc, strlen(kc), NULL, &cfg, NULL), 0);
  ck_assert_int_eq(gb_kube_client_new(cfg, NULL, &cli, NULL), 0);
}

static void teardown(void) {
  gb_kube_client_free(cli);
  gb_kube_config_free(cfg);
}

static void nop(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  (void)ch;
}

START_TEST(one_informer_per_resource) {
  struct gb_informers *f = NULL;
  ck_assert_int_eq(gb_informers_new(cli, NULL, &f), 0);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_informer_spec pods = {"", "v1", "pods", 0};
  const char *const nss[] = {"a"};
  struct gb_informer_handler ctl = {nss, 1,   "jobset.sigs.k8s.io/jobset-name", NULL, NULL, 0, 0,
                                    nop, NULL};
  struct gb_informer_handler model = {NULL, 0,   NULL, "status.phase!=Succeeded", NULL, 0,
                                      0,    nop, NULL};
  struct gb_informer *i1 = NULL, *i2 = NULL, *i3 = NULL;
  ck_assert_int_eq(gb_informers_add(f, &pods, &ctl, &i1, &d), 0);
  ck_assert_int_eq(gb_informers_add(f, &pods, &model, &i2, &d), 0);
  ck_assert_ptr_eq(i1, i2);
  ck_assert_ptr_eq(gb_informers_lookup(f, NULL, "v1", "pods"), i1);
  /* Another group (or version) is another resource. */
  struct gb_informer_spec pg_v = {"scheduling.volcano.sh", "v1beta1", "podgroups", 1};
  struct gb_informer_spec pg_c = {"scheduling.x-k8s.io", "v1alpha1", "podgroups", 1};
  ck_assert_int_eq(gb_informers_add(f, &pg_v, &ctl, &i3, &d), 0);
  ck_assert_ptr_ne(i3, i1);
  ck_assert_int_eq(gb_informers_add(f, &pg_c, &ctl, NULL, &d), 0);
  ck_assert_uint_eq(gb_informers_count(f), 3);
  /* Deferral is the resource's: every consumer says the same. */
  struct gb_informer_spec pg_v_now = pg_v;
  pg_v_now.deferred = 0;
  ck_assert_int_eq(gb_informers_add(f, &pg_v_now, &ctl, NULL, &d), GC_EUSAGE);
  /* A bad handler is refused and names the problem. */
  struct gb_informer_handler bad = {NULL, 0, "a in b", NULL, NULL, 0, 0, nop, NULL};
  ck_assert_int_eq(gb_informers_add(f, &pods, &bad, NULL, &d), GC_EINVAL);
  ck_assert_int_eq(gb_informers_start(f), 0);
  /* Started: pods runs, the deferred PodGroup informers wait for their owner. */
  ck_assert_int_eq(gb_informer_running(i1), 1);
  ck_assert_int_eq(gb_informer_running(i3), 0);
  ck_assert_int_eq(gb_informers_add(f, &pods, &model, NULL, &d), GC_EUSAGE);
  ck_assert_int_eq(gb_informer_start(i3), 0);
  ck_assert_int_eq(gb_informer_running(i3), 1);
  gb_informers_stop(f);
  ck_assert_int_eq(gb_informer_running(i1), 0);
  ck_assert_int_eq(gb_informer_running(i3), 0);
  ck_assert_uint_eq(d.errors, 3);
  gc_diags_destroy(&d);
  gb_informers_free(f);
  gb_informers_free(NULL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("informers");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, one_informer_per_resource);
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
