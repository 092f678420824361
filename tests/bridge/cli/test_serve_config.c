/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for serve's configuration (gb_serve_config over every layer's
 * key table, read by doc/gb_options): defaults, the YAML file (every
 * section, unknown keys and wrong types reported with file:line:col),
 * durations, flags overriding the file wherever --config appears, --set,
 * validation rules, the printed configuration reading back to the same
 * values, and label selectors (parse errors and matching).  Moved from
 * tests/bridge/controller/test_config.c when the keys moved to their
 * layers; every assertion of it holds unchanged.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gb_addr.h"
#include "gb_manifest.h"
#include "gb_serve_config.h"
#include "gb_serve_config_test.h"

static int has_diag(const struct gc_diags *d, const char *sub) {
  for (size_t i = 0; i < d->n; i++)
    if (strstr(d->msgs[i], sub))
      return 1;
  return 0;
}

static void dump(const struct gc_diags *d) {
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "diag: %s\n", d->msgs[i]);
}

/* The placement keys: defaults, durations, and the profile's two values. */
START_TEST(test_placement_keys) {
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  ck_assert_int_eq(c.placement.enabled, 1);
  ck_assert_double_eq(c.plan.release_timeout_s, 120);
  ck_assert_double_eq(c.plan.starvation_guard_s, 300);
  ck_assert_str_eq(c.plan.profile, "bestfit");
  ck_assert_int_eq(c.placement.max_inflight, 32);
  /* The release's own budget (issue 22): a 1,024-pod gang in one burst. */
  ck_assert_double_eq(c.placement.release_qps, 1000);
  ck_assert_int_eq(c.placement.release_burst, 1024);
  ck_assert_int_eq(gb_serve_config_set(&c, "placement.enabled", "false", &d), 0);
  ck_assert_int_eq(gb_serve_config_set(&c, "placement.releaseTimeout", "90s", &d), 0);
  ck_assert_int_eq(gb_serve_config_set(&c, "placement.maxInflightPatches", "0", &d), GC_EINVAL);
  ck_assert_int_eq(gb_serve_config_set(&c, "placement.profile", "spread", &d), 0);
  ck_assert_int_eq(c.placement.enabled, 0);
  ck_assert_double_eq(c.plan.release_timeout_s, 90);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_int_eq(gb_serve_config_set(&c, "placement.profile", "tightest", &d), 0);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "placement.profile: \"tightest\" is not bestfit or spread"));
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}
END_TEST

START_TEST(test_defaults) {
  struct gb_serve_config c;
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  ck_assert_str_eq(c.kube.kubeconfig, "");
  ck_assert_double_eq(c.kube.qps, 50);
  ck_assert_int_eq(c.kube.burst, 100);
  ck_assert_double_eq(c.kube.connect_timeout_s, 5);
  ck_assert_double_eq(c.kube.request_timeout_s, 30);
  ck_assert_double_eq(c.kube.watch_timeout_s, 300);
  ck_assert_int_eq(c.log.level, GB_LOG_INFO);
  ck_assert_int_eq(c.log.format, GB_LOG_TEXT);
  ck_assert_str_eq(c.grpc.address, "");
  ck_assert_str_eq(c.http.address, "0.0.0.0:8080");
  ck_assert_str_eq(c.webhook.address, "0.0.0.0:9443");
  ck_assert_str_eq(c.webhook.path, "/mutate-pods");
  ck_assert_ptr_null(gb_config_backend(&c.controller));
  ck_assert_int_eq(c.controller.gang_scope, GC_SCOPE_WAVE);
  ck_assert_str_eq(c.controller.scheduler_names[gc_backend_index(gc_backend_by_name("volcano"))],
                   "volcano");
  ck_assert_str_eq(
      c.controller.scheduler_names[gc_backend_index(gc_backend_by_name("coscheduling"))],
      "scheduler-plugins-scheduler");
  ck_assert_int_eq(c.controller.select_mode, GB_SELECT_UNMANAGED);
  ck_assert_str_eq(c.controller.opt_in_label, "gangbridge.io/enabled=true");
  ck_assert_int_eq(c.controller.take_over_trainer_policies, 0);
  ck_assert_int_eq(c.controller.delete_on_finish, 1);
  ck_assert_int_eq(c.controller.update_while_running, 0);
  ck_assert_int_eq(c.controller.workers, 4);
  ck_assert_double_eq_tol(c.controller.queue_base_delay_s, 0.005, 1e-12);
  ck_assert_double_eq(c.controller.queue_max_delay_s, 1000);
  ck_assert_int_eq(c.leader.enabled, 0);
  ck_assert_double_eq(c.leader.lease_duration_s, 15);
  ck_assert_double_eq(c.leader.renew_deadline_s, 10);
  ck_assert_double_eq(c.leader.retry_period_s, 2);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}
END_TEST

static const char FULL[] = "apiVersion: gangbridge.io/v1alpha1\n"
                           "kind: ServiceConfig\n"
                           "kube:\n"
                           "  kubeconfig: /etc/kube/config\n"
                           "  qps: 20.5\n"
                           "  burst: 40\n"
                           "  requestTimeout: 1m30s\n"
                           "  connectTimeout: 500ms\n"
                           "log: {level: debug, format: json}\n"
                           "grpc:\n"
                           "  address: 127.0.0.1:9090\n"
                           "http:\n"
                           "  address: \"[::1]:8081\"\n"
                           "webhook:\n"
                           "  address: \"\"\n"
                           "scheduling:\n"
                           "  backend: coscheduling\n"
                           "  gangScope: all\n"
                           "  schedulerNames:\n"
                           "    coscheduling: my-sched\n"
                           "  discoveryInterval: 10\n"
                           "selection:\n"
                           "  mode: namespaceSelector\n"
                           "  namespaceSelector: \"team in (ml, research), !legacy\"\n"
                           "  takeOverTrainerPolicies: true\n"
                           "podGroups:\n"
                           "  deleteOnFinish: false\n"
                           "controller:\n"
                           "  workers: 8\n"
                           "leaderElection:\n"
                           "  enabled: true\n"
                           "  namespace: kube-system\n";

START_TEST(test_full_file) {
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  int rc = gb_serve_config_load_buffer(&c, "cfg.yaml", FULL, sizeof(FULL) - 1, &d);
  dump(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_str_eq(c.kube.kubeconfig, "/etc/kube/config");
  ck_assert_double_eq(c.kube.qps, 20.5);
  ck_assert_int_eq(c.kube.burst, 40);
  ck_assert_double_eq(c.kube.request_timeout_s, 90);
  ck_assert_double_eq_tol(c.kube.connect_timeout_s, 0.5, 1e-12);
  ck_assert_int_eq(c.log.level, GB_LOG_DEBUG);
  ck_assert_int_eq(c.log.format, GB_LOG_JSON);
  ck_assert_str_eq(c.grpc.address, "127.0.0.1:9090");
  ck_assert_str_eq(c.http.address, "[::1]:8081");
  ck_assert_str_eq(c.webhook.address, "");
  ck_assert_ptr_eq(gb_config_backend(&c.controller), gc_backend_by_name("coscheduling"));
  ck_assert_int_eq(c.controller.gang_scope, GC_SCOPE_ALL);
  ck_assert_str_eq(
      c.controller.scheduler_names[gc_backend_index(gc_backend_by_name("coscheduling"))],
      "my-sched");
  ck_assert_str_eq(c.controller.scheduler_names[gc_backend_index(gc_backend_by_name("volcano"))],
                   "volcano");
  ck_assert_double_eq(c.controller.discovery_interval_s, 10);
  ck_assert_int_eq(c.controller.select_mode, GB_SELECT_NAMESPACE);
  ck_assert_int_eq(c.controller.take_over_trainer_policies, 1);
  ck_assert_int_eq(c.controller.delete_on_finish, 0);
  ck_assert_int_eq(c.controller.workers, 8);
  ck_assert_int_eq(c.leader.enabled, 1);
  ck_assert_str_eq(c.leader.lease_namespace, "kube-system");
  ck_assert_str_eq(c.opts.source, "cfg.yaml");
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_uint_eq(c.controller.ns_sel.n, 2);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}
END_TEST

static void expect_load_error(const char *yaml, const char *msg) {
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  int rc = gb_serve_config_load_buffer(&c, "cfg.yaml", yaml, strlen(yaml), &d);
  if (!has_diag(&d, msg)) {
    dump(&d);
    ck_abort_msg("expected a message containing \"%s\" for:\n%s", msg, yaml);
  }
  ck_assert_int_ne(rc, 0);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}

START_TEST(test_file_errors) {
  expect_load_error("kube:\n  qpps: 3\n", "cfg.yaml:2:9: unknown configuration key \"kube.qpps\"");
  expect_load_error("nope: 1\n", "cfg.yaml:1:7: unknown configuration key \"nope\"");
  expect_load_error("kube:\n  burst: \"40\"\n",
                    "cfg.yaml:2:10: kube.burst: must be an integer, not string");
  expect_load_error("kube:\n  burst: 0\n", "kube.burst: must be an integer in [1, 100000]");
  expect_load_error("kube: 3\n", "cfg.yaml:1:7: kube: must be a map, not integer");
  expect_load_error("log:\n  level: loud\n", "log.level: must be debug, info, warn, error or off");
  expect_load_error("scheduling:\n  backend: yunikorn\n", "must be auto, volcano, coscheduling, kai or workload");
  expect_load_error("scheduling:\n  gangScope: some\n", "must be wave or all");
  expect_load_error("selection:\n  mode: everything\n",
                    "must be unmanaged, namespaceSelector or optIn");
  expect_load_error("podGroups:\n  deleteOnFinish: \"yes\"\n", "must be a boolean, not string");
  expect_load_error("kube:\n  requestTimeout: 10parsecs\n",
                    "kube.requestTimeout: must be a duration");
  expect_load_error("kube:\n  requestTimeout: -1\n", "kube.requestTimeout: must be a duration");
  expect_load_error("a: 1\n---\nb: 2\n", "exactly one YAML document (found 2)");
  expect_load_error("kube: [\n", "cfg.yaml:");
  expect_load_error("- 1\n", "cfg.yaml:1:1");
}
END_TEST

START_TEST(test_flags) {
  char path[] = "/tmp/gbcfgXXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  const char *y = "controller:\n  workers: 7\nscheduling:\n  backend: volcano\n";
  ck_assert_int_eq(write(fd, y, strlen(y)), (ssize_t)strlen(y));
  close(fd);
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  /* The flag before --config still wins over the file. */
  char *argv[] = {"serve",
                  "--workers",
                  "3",
                  "--config",
                  path,
                  "--set",
                  "podGroups.deleteOnFinish=false",
                  "--leader-elect",
                  "--backend=coscheduling",
                  "--log-level",
                  "warn",
                  NULL};
  int rc = gb_serve_config_parse_args(&c, 11, argv, stdout, &d);
  dump(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(c.controller.workers, 3);
  ck_assert_ptr_eq(gb_config_backend(&c.controller), gc_backend_by_name("coscheduling"));
  ck_assert_int_eq(c.controller.delete_on_finish, 0);
  ck_assert_int_eq(c.leader.enabled, 1);
  ck_assert_int_eq(c.log.level, GB_LOG_WARN);
  gb_serve_config_destroy(&c);

  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  char *a2[] = {"serve", "--config", path, NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 3, a2, stdout, &d), 0);
  ck_assert_int_eq(c.controller.workers, 7);
  ck_assert_ptr_eq(gb_config_backend(&c.controller), gc_backend_by_name("volcano"));
  gb_serve_config_destroy(&c);
  unlink(path);

  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  char *a3[] = {"serve", "--bogus", NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 2, a3, stdout, &d), GC_EUSAGE);
  ck_assert(has_diag(&d, "unknown option '--bogus'"));
  char *a4[] = {"serve", "--set", "kube.nothing=1", NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 3, a4, stdout, &d), GC_EUSAGE);
  ck_assert(has_diag(&d, "unknown configuration key \"kube.nothing\""));
  char *a5[] = {"serve", "--workers", NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 2, a5, stdout, &d), GC_EUSAGE);
  ck_assert(has_diag(&d, "option '--workers' needs a value"));
  char *a6[] = {"serve", "--workers", "0", NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 3, a6, stdout, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "--workers: controller.workers: must be an integer in [1, 64]"));
  char *a7[] = {"serve", "--config", "/nonexistent/gb.yaml", NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 3, a7, stdout, &d), GC_EINVAL);
  char *a8[] = {"serve", "--print-config", NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 2, a8, stdout, &d), 2);
  FILE *devnull = fopen("/dev/null", "w");
  char *a9[] = {"serve", "-h", NULL};
  ck_assert_int_eq(gb_serve_config_parse_args(&c, 2, a9, devnull, &d), 1);
  fclose(devnull);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}
END_TEST

START_TEST(test_validate) {
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  gb_serve_config_set(&c, "selection.mode", "namespaceSelector", &d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "selection.namespaceSelector: required"));
  gb_serve_config_set(&c, "selection.namespaceSelector", "team in (a", &d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), GC_EINVAL);
  gb_serve_config_set(&c, "selection.namespaceSelector", "team=a", &d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  gb_serve_config_set(&c, "webhook.tlsCert", "/x.crt", &d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "webhook.tlsCert and webhook.tlsKey go together"));
  gb_serve_config_set(&c, "webhook.tlsKey", "/x.key", &d);
  gb_serve_config_set(&c, "http.address", "localhost", &d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "http.address: \"localhost\" is not HOST:PORT"));
  gb_serve_config_set(&c, "http.address", "127.0.0.1:0", &d);
  gb_serve_config_set(&c, "leaderElection.enabled", "true", &d);
  gb_serve_config_set(&c, "leaderElection.renewDeadline", "20s", &d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "leaseDuration > renewDeadline > retryPeriod"));
  gb_serve_config_set(&c, "leaderElection.renewDeadline", "10s", &d);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);

  char host[64];
  unsigned port = 0;
  ck_assert_int_eq(gb_addr_split("[::]:443", host, sizeof(host), &port), 0);
  ck_assert_str_eq(host, "::");
  ck_assert_uint_eq(port, 443);
  ck_assert_int_eq(gb_addr_split("::1:443", host, sizeof(host), &port), GC_EINVAL);
  ck_assert_int_eq(gb_addr_split("1.2.3.4:70000", host, sizeof(host), &port), GC_EINVAL);
  ck_assert_int_eq(gb_addr_split(":80", host, sizeof(host), &port), GC_EINVAL);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}
END_TEST

/* The policy keys: timeouts.default (a Go duration), topology.levels (a
 * list, or comma-separated text) and topology.default, checked by
 * gb_config_validate with the messages gangcalc's policy gives. */
static void expect_invalid(const char *yaml, const char *msg) {
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  int rc = gb_serve_config_load_buffer(&c, "cfg.yaml", yaml, strlen(yaml), &d);
  if (!rc)
    rc = gb_serve_config_validate(&c, &d);
  if (!has_diag(&d, msg)) {
    dump(&d);
    ck_abort_msg("expected a message containing \"%s\" for:\n%s", msg, yaml);
  }
  ck_assert_int_ne(rc, 0);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}

START_TEST(test_policy_keys) {
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  ck_assert_str_eq(c.controller.timeout_default, "");
  ck_assert_str_eq(c.controller.topology_default, "");
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_uint_eq(c.controller.topology_levels.n, 0);
  const char *yaml = "timeouts:\n  default: 15m\ntopology:\n"
                     "  levels: [example.com/zone, example.com/rack]\n"
                     "  default: \"required:example.com/rack\"\n";
  ck_assert_int_eq(gb_serve_config_load_buffer(&c, "cfg.yaml", yaml, strlen(yaml), &d), 0);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_str_eq(c.controller.timeout_default, "15m");
  ck_assert_str_eq(c.controller.topology_default, "required:example.com/rack");
  ck_assert_uint_eq(c.controller.topology_levels.n, 2);
  ck_assert_str_eq(c.controller.topology_levels.items[0], "example.com/zone");
  ck_assert_str_eq(c.controller.topology_levels.items[1], "example.com/rack");
  char *t = NULL;
  size_t l = 0;
  FILE *f = open_memstream(&t, &l);
  gb_serve_config_write(&c, f);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(t, "timeouts:\n  default: \"15m\"\n"));
  ck_assert_ptr_nonnull(
      strstr(t, "topology:\n  levels: [\"example.com/zone\", \"example.com/rack\"]\n"));
  free(t);
  ck_assert_int_eq(gb_serve_config_set(&c, "topology.levels", "a.io/x,a.io/y,a.io/z", &d), 0);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_uint_eq(c.controller.topology_levels.n, 3);
  ck_assert_str_eq(c.controller.topology_levels.items[2], "a.io/z");
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);

  expect_invalid("timeouts:\n  default: 15x\n",
                 "timeouts.default: invalid duration \"15x\": unknown unit \"x\"");
  expect_invalid("timeouts:\n  default: 0s\n",
                 "timeouts.default: invalid duration \"0s\": must be greater than 0");
  expect_invalid("topology:\n  default: sideways:2\n",
                 "topology.default: \"sideways:2\" must be \"required:VALUE\" or "
                 "\"preferred:VALUE\"");
  expect_invalid("topology:\n  levels: [a.io/x, \"a b\"]\n",
                 "topology.levels[1]: \"a b\" is not a node label key");
  expect_invalid("topology:\n  levels: [a.io/x, a.io/x]\n",
                 "topology.levels[1]: \"a.io/x\" is listed twice");
  expect_invalid("topology:\n  levels: [a.io/x, 3]\n",
                 "cfg.yaml:2:20: topology.levels: must be a list of strings");
  expect_invalid("topology:\n  levels: [a1,b1,c1,d1,e1,f1,g1,h1,i1,j1,k1,l1,m1,n1,o1,p1,q1]\n",
                 "topology.levels: at most 16 levels");
  expect_invalid("timeouts:\n  max: 31d\n",
                 "timeouts.max: invalid duration \"31d\": unknown unit \"d\"");
  expect_invalid("timeouts:\n  until: running\n",
                 "timeouts.until: must be scheduled or ready, not \"running\"");
  /* kube.watchNamespaces: namespace names (DNS-1123 labels), each once. */
  expect_invalid("kube:\n  watchNamespaces: [team-a, Team_B]\n",
                 "kube.watchNamespaces[1]: \"Team_B\" is not a namespace name");
  expect_invalid("kube:\n  watchNamespaces: [team-a, team-a]\n",
                 "kube.watchNamespaces[1]: \"team-a\" is listed twice");
  struct gb_serve_config wc;
  struct gc_diags wd;
  gc_diags_init(&wd);
  ck_assert_int_eq(gb_serve_config_init(&wc, NULL), 0);
  const char *ok = "kube:\n  watchNamespaces: [team-a, team-b]\n";
  ck_assert_int_eq(gb_serve_config_load_buffer(&wc, "cfg.yaml", ok, strlen(ok), &wd), 0);
  ck_assert_int_eq(gb_serve_config_validate(&wc, &wd), 0);
  ck_assert_uint_eq(wc.kube.watch_namespaces.n, 2);
  ck_assert_str_eq(wc.kube.watch_namespaces.items[1], "team-b");
  gc_diags_destroy(&wd);
  gb_serve_config_destroy(&wc);
}
END_TEST

/* A value written is honoured or refused where it was written: 0s for the
 * starvation guard was taken by gb_plan as unset (5 minutes), and a rate of
 * 0 by the Kubernetes client (50) and the work queue (10) as theirs. */
START_TEST(test_zero_refused) {
  expect_load_error("placement:\n  starvationGuard: 0s\n",
                    "cfg.yaml:2:20: placement.starvationGuard: must be a duration");
  expect_invalid("kube:\n  qps: 0\n", "cfg.yaml:2:8: kube.qps: must not be 0");
  expect_invalid("controller:\n  queueQPS: 0\n",
                 "cfg.yaml:2:13: controller.queueQPS: must not be 0");
  expect_invalid("placement:\n  releaseQPS: 0\n",
                 "cfg.yaml:2:15: placement.releaseQPS: must not be 0");
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  const char *ok = "kube:\n  qps: -1\ncontroller:\n  queueQPS: -1\nplacement:\n"
                   "  starvationGuard: 1s\n";
  ck_assert_int_eq(gb_serve_config_load_buffer(&c, "cfg.yaml", ok, strlen(ok), &d), 0);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_double_eq(c.plan.starvation_guard_s, 1);
  ck_assert_int_eq(gb_serve_config_set(&c, "kube.qps", "0", &d), 0);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "--set: kube.qps: must not be 0"));
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}
END_TEST

START_TEST(test_timeout_max_until) {
  struct gb_serve_config c;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_str_eq(c.controller.timeout_max, "");
  ck_assert_str_eq(c.timeouts.until, "scheduled");
  ck_assert_int_eq(c.timeouts.until_ready, 0);
  const char *yaml = "timeouts:\n  max: 24h\n  until: ready\n";
  ck_assert_int_eq(gb_serve_config_load_buffer(&c, "cfg.yaml", yaml, strlen(yaml), &d), 0);
  ck_assert_int_eq(gb_serve_config_validate(&c, &d), 0);
  ck_assert_str_eq(c.controller.timeout_max, "24h");
  ck_assert_int_eq(c.timeouts.until_ready, 1);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
}
END_TEST

START_TEST(test_write_roundtrip) {
  struct gb_serve_config c, c2;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_serve_config_init(&c, NULL), 0);
  ck_assert_int_eq(gb_serve_config_load_buffer(&c, "cfg.yaml", FULL, sizeof(FULL) - 1, &d), 0);
  char *t1 = NULL, *t2 = NULL;
  size_t l1 = 0, l2 = 0;
  FILE *f = open_memstream(&t1, &l1);
  gb_serve_config_write(&c, f);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(t1, "scheduling:\n  backend: coscheduling\n  gangScope: all\n"));
  ck_assert_ptr_nonnull(strstr(t1, "  schedulerNames:\n    volcano: \"volcano\"\n"));
  ck_assert_int_eq(gb_serve_config_init(&c2, NULL), 0);
  int rc = gb_serve_config_load_buffer(&c2, "printed.yaml", t1, l1, &d);
  dump(&d);
  ck_assert_int_eq(rc, 0);
  f = open_memstream(&t2, &l2);
  gb_serve_config_write(&c2, f);
  fclose(f);
  ck_assert_str_eq(t1, t2);
  free(t1);
  free(t2);
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&c);
  gb_serve_config_destroy(&c2);
}
END_TEST

static struct gc_value *labels(struct gc_arena *a, const char *yaml, struct gb_docset **ds) {
  struct gc_diags d;
  gc_diags_init(&d);
  *ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(*ds, "l.yaml", yaml, strlen(yaml), &d), 0);
  gc_diags_destroy(&d);
  (void)a;
  return (*ds)->docs[0].root;
}

START_TEST(test_selectors) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds;
  struct gc_value *l = labels(a, "team: ml\ntier: gold\nenv: prod\n", &ds);
  struct {
    const char *sel;
    int match;
  } cases[] = {
      {"", 1},
      {"team=ml", 1},
      {"team==ml", 1},
      {"team=research", 0},
      {"team!=research", 1},
      {"missing!=x", 1},
      {"team in (ml, research)", 1},
      {"team in (research)", 0},
      {"team notin (research,x)", 1},
      {"missing notin (a)", 1},
      {"tier", 1},
      {"!tier", 0},
      {"!missing", 1},
      {"team=ml,tier=gold , env in (prod)", 1},
      {"team=ml,tier=silver", 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gb_selector s;
    int rc = gb_selector_parse(a, cases[i].sel, &s, &d);
    if (rc)
      dump(&d);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(gb_selector_match(&s, l) == cases[i].match, "selector \"%s\"", cases[i].sel);
  }
  struct gb_selector s;
  ck_assert_int_eq(gb_selector_parse(a, "team", &s, &d), 0);
  ck_assert_int_eq(gb_selector_match(&s, NULL), 0);
  ck_assert_int_eq(gb_selector_parse(a, "!team", &s, &d), 0);
  ck_assert_int_eq(gb_selector_match(&s, NULL), 1);
  const char *bad[] = {"team in ml", "team in ()", "=x", "team=ml,", "a b", "!a=b", "team in (a"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(gb_selector_parse(a, bad[i], &s, &d) == GC_EINVAL, "\"%s\"", bad[i]);
  ck_assert(has_diag(&d, "label selector: cannot parse requirement at \"team in ml\""));
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  gc_arena_free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_full_file);
  tcase_add_test(tc, test_file_errors);
  tcase_add_test(tc, test_flags);
  tcase_add_test(tc, test_validate);
  tcase_add_test(tc, test_placement_keys);
  tcase_add_test(tc, test_write_roundtrip);
  tcase_add_test(tc, test_policy_keys);
  tcase_add_test(tc, test_timeout_max_until);
  tcase_add_test(tc, test_zero_refused);
  tcase_add_test(tc, test_selectors);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
