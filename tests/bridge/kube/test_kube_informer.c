/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for the informer cache without a server (gb_informer_feed):
 * add/update/delete semantics, same-resourceVersion de-duplication,
 * managedFields stripping, cluster-scoped keys, bookmarks, the object bound,
 * the readers, and the pod and CRD transforms (what a trimmed cache keeps).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_informer.h"
#include "gb_kobj.h"
#include "gb_kube_watch.h"

static struct gb_kube_config *cfg;
static struct gb_kube_client *cli;
static char events[1024];

static void on_change(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  size_t n = strlen(events);
  const char *op = ch->op == GB_INFORMER_ADD ? "add" : ch->op == GB_INFORMER_UPDATE ? "upd" : "del";
  snprintf(events + n, sizeof(events) - n, "%s %s [%s|%s] rv=%s%s;", op, ch->key, ch->ns, ch->name,
           gb_kobj_meta(ch->obj, "resourceVersion"), ch->old_json ? " old" : "");
}

static void setup(void) {
  const char *kc = "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                   "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n";
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_kube_config_load_buffer("t", kc, strlen(kc), NULL, &cfg, &d), 0);
  ck_assert_int_eq(gb_kube_client_new(cfg, NULL, &cli, &d), 0);
  gc_diags_destroy(&d);
  events[0] = 0;
}

static void teardown(void) {
  gb_kube_client_free(cli);
  gb_kube_config_free(cfg);
}

static struct gb_informer *new_informer(size_t max_objects) {
  struct gb_informer_opts o = {0};
  o.version = "v1";
  o.resource = "namespaces";
  o.max_objects = max_objects;
  o.on_change = on_change;
  struct gb_informer *inf = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  gc_diags_destroy(&d);
  return inf;
}

static json_object *obj(const char *ns, const char *name, const char *rv, const char *extra) {
  char t[512];
  if (ns)
    snprintf(t, sizeof(t),
             "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"resourceVersion\":\"%s\","
             "\"uid\":\"u-%s\",\"managedFields\":[{\"manager\":\"m\"}]},\"x\":%s}",
             ns, name, rv, name, extra);
  else
    snprintf(t, sizeof(t),
             "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%s\"},\"x\":%s}", name, rv,
             extra);
  json_object *j = json_tokener_parse(t);
  ck_assert_ptr_nonnull(j);
  return j;
}

static void feed(struct gb_informer *inf, int type, json_object *j, int want) {
  ck_assert_int_eq(gb_informer_feed(inf, type, j), want);
  json_object_put(j);
}

START_TEST(add_update_delete_and_dedupe) {
  struct gb_informer *inf = new_informer(0);
  ck_assert_int_eq(gb_informer_has_synced(inf), 0);
  feed(inf, GB_WATCH_ADDED, obj("a", "j1", "10", "1"), 0);
  ck_assert_int_eq(gb_informer_has_synced(inf), 1);
  feed(inf, GB_WATCH_ADDED, obj("a", "j1", "10", "1"), 0);   /* same rv: nothing */
  feed(inf, GB_WATCH_MODIFIED, obj("a", "j1", "11", "2"), 0);
  feed(inf, GB_WATCH_MODIFIED, obj("b", "j1", "12", "3"), 0); /* unknown: an add */
  feed(inf, GB_WATCH_DELETED, obj("a", "zz", "13", "0"), 0);  /* unknown: nothing */
  feed(inf, GB_WATCH_ADDED, obj(NULL, "cluster-wide", "14", "4"), 0);
  ck_assert_str_eq(events, "add a/j1 [a|j1] rv=10;upd a/j1 [a|j1] rv=11 old;"
                           "add b/j1 [b|j1] rv=12;add cluster-wide [|cluster-wide] rv=14;");
  ck_assert_uint_eq(gb_informer_count(inf), 3);
  char rv[32], uid[32];
  gb_informer_last_rv(inf, rv, sizeof(rv));
  ck_assert_str_eq(rv, "14");
  ck_assert_int_eq(gb_informer_get_meta(inf, "a", "j1", rv, sizeof(rv), uid, sizeof(uid)), 0);
  ck_assert_str_eq(rv, "11");
  ck_assert_str_eq(uid, "u-j1");

  json_object *got = NULL;
  ck_assert_int_eq(gb_informer_get_json(inf, "a", "j1", &got), 0);
  json_object *m, *x;
  ck_assert(json_object_object_get_ex(got, "metadata", &m));
  ck_assert(!json_object_object_get_ex(m, "managedFields", NULL));
  ck_assert(json_object_object_get_ex(got, "x", &x));
  ck_assert_int_eq(json_object_get_int(x), 2);
  json_object_put(got);
  ck_assert_int_eq(gb_informer_get_json(inf, "", "cluster-wide", &got), 0);
  json_object_put(got);
  ck_assert_int_eq(gb_informer_get_json(inf, "a", "nope", &got), GC_ENOTFOUND);
  ck_assert_ptr_null(got);

  events[0] = 0;
  feed(inf, GB_WATCH_DELETED, obj("a", "j1", "15", "2"), 0);
  feed(inf, GB_WATCH_BOOKMARK, json_tokener_parse("{\"metadata\":{\"resourceVersion\":\"99\"}}"),
       0);
  ck_assert_str_eq(events, "del a/j1 [a|j1] rv=15;");
  gb_informer_last_rv(inf, rv, sizeof(rv));
  ck_assert_str_eq(rv, "99");
  ck_assert_uint_eq(gb_informer_count(inf), 2);
  struct gb_informer_stats st;
  gb_informer_stats(inf, &st);
  ck_assert_uint_eq(st.adds, 3);
  ck_assert_uint_eq(st.updates, 1);
  ck_assert_uint_eq(st.deletes, 1);
  ck_assert_uint_gt(st.cache_bytes, 0);
  gb_informer_free(inf);
}
END_TEST

static int count_key(void *arg, const char *key) {
  (void)key;
  (*(int *)arg)++;
  return 0;
}

START_TEST(many_objects_growth_and_bound) {
  struct gb_informer *inf = new_informer(500);
  for (int i = 0; i < 600; i++) {
    char name[32], rv[16];
    snprintf(name, sizeof(name), "j%d", i);
    snprintf(rv, sizeof(rv), "%d", i + 1);
    feed(inf, GB_WATCH_ADDED, obj("n", name, rv, "0"), i < 500 ? 0 : GC_ELIMIT);
  }
  ck_assert_uint_eq(gb_informer_count(inf), 500);
  int n = 0;
  gb_informer_foreach_key(inf, count_key, &n);
  ck_assert_int_eq(n, 500);
  for (int i = 0; i < 500; i += 37) {
    char name[32];
    snprintf(name, sizeof(name), "j%d", i);
    struct gc_arena *a = gc_arena_new(0);
    struct gc_value *v = NULL;
    ck_assert_int_eq(gb_informer_get_value(inf, "n", name, a, &v), 0);
    ck_assert_str_eq(gc_value_as_str(gc_value_path(v, "metadata.name")), name);
    gc_arena_free(a);
  }
  /* Bad input: no name. */
  feed(inf, GB_WATCH_ADDED, json_tokener_parse("{\"metadata\":{}}"), GC_EINVAL);
  gb_informer_free(inf);
}
END_TEST

static const char *cached_text(struct gb_informer *inf, const char *ns, const char *name,
                               char *buf, size_t cap) {
  json_object *j = NULL;
  ck_assert_int_eq(gb_informer_get_json(inf, ns, name, &j), 0);
  snprintf(buf, cap, "%s", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(j);
  return buf;
}

START_TEST(transforms_keep_only_what_is_read) {
  struct gb_informer_opts o = {0};
  o.version = "v1";
  o.resource = "pods";
  o.transform = gb_informer_trim_pod;
  o.on_change = on_change;
  struct gb_informer *inf = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  json_object *pod = json_tokener_parse(
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
      "\"n\",\"uid\":\"u\",\"resourceVersion\":\"7\",\"generateName\":\"p-\","
      "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"job\",\"team\":\"a\","
      "\"scheduling.x-k8s.io/pod-group\":\"job\"},\"annotations\":{"
      "\"scheduling.k8s.io/group-name\":\"job\",\"big\":\"xxxxxxxx\"},"
      "\"ownerReferences\":[{\"uid\":\"o\"}]},\"spec\":{\"containers\":[{\"name\":\"c\"}]},"
      "\"status\":{\"phase\":\"Pending\"}}");
  feed(inf, GB_WATCH_ADDED, pod, 0);
  char buf[1024];
  ck_assert_str_eq(cached_text(inf, "n", "p", buf, sizeof(buf)),
                   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                   "\"namespace\":\"n\",\"uid\":\"u\",\"resourceVersion\":\"7\",\"labels\":{"
                   "\"jobset.sigs.k8s.io/jobset-name\":\"job\",\"scheduling.x-k8s.io/pod-group\":"
                   "\"job\"},\"annotations\":{\"scheduling.k8s.io/group-name\":\"job\"}}}");
  /* The handler sees the trimmed object too. */
  ck_assert_ptr_nonnull(strstr(events, "add n/p [n|p] rv=7;"));
  /* What the timeout tracker reads stays: the creation time, the scheduling
   * gates and the PodScheduled and Ready conditions (without other
   * conditions, or other fields of theirs). */
  pod = json_tokener_parse(
      "{\"metadata\":{\"name\":\"q\",\"namespace\":\"n\",\"uid\":\"v\","
      "\"resourceVersion\":\"8\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
      "\"spec\":{\"containers\":[],\"schedulingGates\":[{\"name\":\"g\"}]},"
      "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\","
      "\"status\":\"False\",\"lastProbeTime\":null},{\"type\":\"Initialized\",\"status\":"
      "\"True\"},{\"type\":\"PodScheduled\",\"status\":\"False\","
      "\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes\",\"lastProbeTime\":null,"
      "\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"}]}}");
  feed(inf, GB_WATCH_ADDED, pod, 0);
  ck_assert_str_eq(cached_text(inf, "n", "q", buf, sizeof(buf)),
                   "{\"metadata\":{\"name\":\"q\",\"namespace\":\"n\",\"uid\":\"v\","
                   "\"resourceVersion\":\"8\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},"
                   "\"spec\":{\"schedulingGates\":[{\"name\":\"g\"}]},\"status\":{"
                   "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
                   "{\"type\":\"PodScheduled\",\"status\":\"False\","
                   "\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes\","
                   "\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"}]}}");
  gb_informer_free(inf);

  o.group = "apiextensions.k8s.io";
  o.resource = "customresourcedefinitions";
  o.transform = gb_informer_trim_crd;
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  json_object *crd = json_tokener_parse(
      "{\"metadata\":{\"name\":\"a.b.io\",\"uid\":\"u\",\"resourceVersion\":\"3\","
      "\"annotations\":{\"x\":\"y\"}},\"spec\":{\"group\":\"b.io\",\"scope\":\"Cluster\","
      "\"names\":{\"plural\":\"as\"},\"conversion\":{\"strategy\":\"None\"},"
      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{"
      "\"openAPIV3Schema\":{\"type\":\"object\"}}}]},\"status\":{\"storedVersions\":[\"v1\"]}}");
  feed(inf, GB_WATCH_ADDED, crd, 0);
  ck_assert_str_eq(cached_text(inf, NULL, "a.b.io", buf, sizeof(buf)),
                   "{\"metadata\":{\"name\":\"a.b.io\",\"uid\":\"u\",\"resourceVersion\":"
                   "\"3\"},\"spec\":{\"group\":\"b.io\",\"scope\":\"Cluster\",\"names\":{"
                   "\"plural\":\"as\"},\"versions\":[{\"name\":\"v1\",\"served\":true,"
                   "\"storage\":true}]}}");
  gc_diags_destroy(&d);
  gb_informer_free(inf);
}
END_TEST

START_TEST(bad_options) {
  struct gb_informer_opts o = {0};
  struct gb_informer *inf = (void *)1;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), GC_EINVAL);
  ck_assert_ptr_null(inf);
  o.version = "v1";
  o.resource = "pods";
  o.namespace = "bad/ns";
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), GC_EINVAL);
  ck_assert_uint_eq(d.errors, 2);
  gc_diags_destroy(&d);
  gb_informer_free(NULL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kube_informer");
  TCase *tc = tcase_create("cache");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, add_update_delete_and_dedupe);
  tcase_add_test(tc, many_objects_growth_and_bound);
  tcase_add_test(tc, transforms_keep_only_what_is_read);
  tcase_add_test(tc, bad_options);
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
