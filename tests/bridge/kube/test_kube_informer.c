/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for the informer cache without a server (gb_informer_feed):
 * add/update/delete semantics, same-resourceVersion de-duplication,
 * managedFields stripping, cluster-scoped keys, bookmarks, the object bound,
 * the readers, the record kept for several handlers (the union of their
 * keep paths), each handler's own selection on a shared list (adds and
 * deletes as objects enter and leave it), reset and hold.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gb_informer.h"
#include "gb_informer_test.h"
#include "gb_kobj.h"
#include "gb_jscan.h"
#include "gb_kube_watch.h"
#include "gb_kube_config_test.h"

static struct gb_kube_config *cfg;
static struct gb_kube_client *cli;
static char events[4096], events2[4096];

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
  events2[0] = 0;
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

/* The paths two consumers of pods read (a controller-like one: the gang
 * label; a tracker-like one: creation time, gates, two conditions). */
static const struct gb_keep GANG_KEEP[] = {
    {{"metadata", "labels", "jobset.sigs.k8s.io/jobset-name"}},
    {{"metadata", "labels", "scheduling.x-k8s.io/pod-group"}},
    {{"metadata", "annotations", "scheduling.k8s.io/group-name"}}};
static const struct gb_keep TRACK_KEEP[] = {{{"metadata", "creationTimestamp"}},
                                            {{"spec", "schedulingGates"}},
                                            {{"status", "conditions", "[type=Ready]", "type"}},
                                            {{"status", "conditions", "[type=Ready]", "status"}},
                                            {{"status", "conditions", "[type=PodScheduled]"}}};

static void on_change2(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  size_t n = strlen(events2);
  const char *op = ch->op == GB_INFORMER_ADD ? "add" : ch->op == GB_INFORMER_UPDATE ? "upd" : "del";
  snprintf(events2 + n, sizeof(events2) - n, "%s %s%s;", op, ch->key,
           ch->initial ? " (initial)" : "");
}

START_TEST(keep_union_of_handlers) {
  struct gb_informer_opts o = {0};
  o.version = "v1";
  o.resource = "pods";
  o.keep = GANG_KEEP;
  o.n_keep = sizeof(GANG_KEEP) / sizeof(GANG_KEEP[0]);
  o.on_change = on_change;
  struct gb_informer *inf = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  struct gb_informer_handler h = {.keep = TRACK_KEEP,
                                  .n_keep = sizeof(TRACK_KEEP) / sizeof(TRACK_KEEP[0]),
                                  .on_change = on_change2};
  ck_assert_int_eq(gb_informer_add_handler(inf, &h, &d), 0);
  json_object *pod = json_tokener_parse(
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\",\"namespace\":"
      "\"n\",\"uid\":\"v\",\"resourceVersion\":\"8\",\"generateName\":\"p-\","
      "\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
      "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"job\",\"team\":\"a\"},"
      "\"annotations\":{\"scheduling.k8s.io/group-name\":\"job\",\"big\":\"xxxxxxxx\"},"
      "\"ownerReferences\":[{\"uid\":\"o\"}]},"
      "\"spec\":{\"containers\":[{\"name\":\"c\"}],\"schedulingGates\":[{\"name\":\"g\"}]},"
      "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\","
      "\"status\":\"False\",\"lastProbeTime\":null},{\"type\":\"Initialized\",\"status\":"
      "\"True\"},{\"type\":\"PodScheduled\",\"status\":\"False\","
      "\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes\","
      "\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"}]}}");
  feed(inf, GB_WATCH_ADDED, pod, 0);
  char buf[1024];
  /* One record: the union of both handlers' paths and the metadata the
   * informer reads; nothing else (no spec.containers, no Initialized, no
   * lastProbeTime of Ready). */
  ck_assert_str_eq(cached_text(inf, "n", "q", buf, sizeof(buf)),
                   "{\"metadata\":{\"name\":\"q\",\"namespace\":\"n\",\"uid\":\"v\","
                   "\"resourceVersion\":\"8\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
                   "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"job\"},\"annotations\":{"
                   "\"scheduling.k8s.io/group-name\":\"job\"}},"
                   "\"spec\":{\"schedulingGates\":[{\"name\":\"g\"}]},\"status\":{"
                   "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
                   "{\"type\":\"PodScheduled\",\"status\":\"False\","
                   "\"reason\":\"Unschedulable\",\"message\":\"0/3 nodes\","
                   "\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"}]}}");
  /* Both handlers see the one trimmed object. */
  ck_assert_ptr_nonnull(strstr(events, "add n/q [n|q] rv=8;"));
  ck_assert_str_eq(events2, "add n/q (initial);");
  /* Sealed: no more handlers. */
  ck_assert_int_eq(gb_informer_add_handler(inf, &h, &d), GC_EUSAGE);
  gb_informer_free(inf);
  /* A handler that reads everything: nothing is pruned but managedFields. */
  o.keep = NULL;
  o.n_keep = 0;
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  ck_assert_int_eq(gb_informer_add_handler(inf, &h, &d), 0);
  feed(inf, GB_WATCH_ADDED,
       json_tokener_parse("{\"metadata\":{\"name\":\"r\",\"namespace\":\"n\",\"resourceVersion\":"
                          "\"9\",\"managedFields\":[]},\"spec\":{\"x\":1}}"),
       0);
  ck_assert_str_eq(cached_text(inf, "n", "r", buf, sizeof(buf)),
                   "{\"metadata\":{\"name\":\"r\",\"namespace\":\"n\",\"resourceVersion\":\"9\"},"
                   "\"spec\":{\"x\":1}}");
  gc_diags_destroy(&d);
  gb_informer_free(inf);
}
END_TEST

/* Handlers with different selections on one informer: the list is the
 * union (no server-side selector in common), and each handler sees exactly
 * its own selection, objects entering it as adds and leaving it as
 * deletes; an object nobody selects is not cached. */
START_TEST(handlers_see_their_own_selection) {
  struct gb_informer_opts o = {0};
  o.version = "v1";
  o.resource = "pods";
  o.label_selector = "jobset.sigs.k8s.io/jobset-name";
  o.namespace = "a";
  o.on_change = on_change;
  struct gb_informer *inf = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  struct gb_informer_handler h = {.field_selector = "status.phase!=Succeeded,status.phase!=Failed",
                                  .on_change = on_change2};
  ck_assert_int_eq(gb_informer_add_handler(inf, &h, &d), 0);
#define POD(ns, name, rv, labels, phase)                                                           \
  json_tokener_parse("{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns                    \
                     "\",\"resourceVersion\":\"" rv "\",\"labels\":{" labels                       \
                     "}},\"status\":{\"phase\":\"" phase "\"}}")
#define JS "\"jobset.sigs.k8s.io/jobset-name\":\"j\""
  feed(inf, GB_WATCH_ADDED, POD("a", "p1", "1", JS, "Pending"), 0); /* both */
  feed(inf, GB_WATCH_ADDED, POD("b", "p2", "2", JS, "Running"), 0); /* second only: ns b */
  feed(inf, GB_WATCH_ADDED, POD("a", "p3", "3", "", "Failed"), 0);  /* nobody */
  ck_assert_uint_eq(gb_informer_count(inf), 2);
  feed(inf, GB_WATCH_MODIFIED, POD("a", "p1", "4", JS, "Succeeded"), 0); /* leaves the second */
  feed(inf, GB_WATCH_MODIFIED, POD("a", "p3", "5", JS, "Running"), 0);   /* enters both */
  feed(inf, GB_WATCH_MODIFIED, POD("b", "p2", "6", JS, "Failed"), 0);    /* leaves every one */
  ck_assert_uint_eq(gb_informer_count(inf), 2);
  ck_assert_int_eq(gb_informer_get_meta(inf, "b", "p2", NULL, 0, NULL, 0), GC_ENOTFOUND);
  feed(inf, GB_WATCH_DELETED, POD("a", "p1", "7", JS, "Succeeded"), 0);
  ck_assert_str_eq(events, "add a/p1 [a|p1] rv=1;upd a/p1 [a|p1] rv=4 old;"
                           "add a/p3 [a|p3] rv=5;del a/p1 [a|p1] rv=7;");
  ck_assert_str_eq(events2, "add a/p1 (initial);add b/p2;del a/p1;add a/p3;del b/p2;");
  gc_diags_destroy(&d);
  gb_informer_free(inf);
#undef POD
#undef JS
}
END_TEST

/* What the watch decodes (the keeps, the selections' fields and labels,
 * the members "[key=value]" steps select by) and then the informer's own
 * pruning give the record and the changes json-c's whole object gives:
 * two informers with the same handlers, one fed json-c's tree, one fed
 * the watch's decode of the same texts. */
/* on_change's log, into events2. */
static void on_change_b(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  size_t n = strlen(events2);
  const char *op = ch->op == GB_INFORMER_ADD ? "add" : ch->op == GB_INFORMER_UPDATE ? "upd" : "del";
  snprintf(events2 + n, sizeof(events2) - n, "%s %s rv=%s %s%s;", op, ch->key,
           gb_kobj_meta(ch->obj, "resourceVersion"),
           json_object_to_json_string_ext(ch->obj, JSON_C_TO_STRING_PLAIN),
           ch->old_json ? " old" : "");
}

/* The same log for the first informer, into events. */
static void on_change_a(void *arg, const struct gb_informer_change *ch) {
  char save[sizeof(events2)];
  memcpy(save, events2, sizeof(save));
  events2[0] = 0;
  on_change_b(arg, ch);
  size_t n = strlen(events);
  snprintf(events + n, sizeof(events) - n, "%s", events2);
  memcpy(events2, save, sizeof(save));
}

START_TEST(watch_decode_gives_the_same_records) {
  static const char *const texts[] = {
      "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"a\",\"resourceVersion\":\"1\",\"uid\":"
      "\"u\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"j\",\"x\":\"y\"},\"annotations\":"
      "{\"scheduling.k8s.io/group-name\":\"g\",\"z\":\"1\"},\"managedFields\":[{}],"
      "\"creationTimestamp\":\"2026-01-01T00:00:00Z\"},\"spec\":{\"schedulingGates\":[{\"name\":"
      "\"g\"}],\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Pending\","
      "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"r\"},{\"type\":"
      "\"PodScheduled\",\"status\":\"True\"},{\"type\":\"Initialized\"}]}}",
      "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"a\",\"resourceVersion\":\"2\",\"labels\":"
      "{\"jobset.sigs.k8s.io/jobset-name\":\"j\"}},\"status\":{\"phase\":\"Failed\",\"conditions\":"
      "[{\"status\":\"True\",\"type\":\"Ready\"}]}}",
      "{\"metadata\":{\"name\":\"p2\",\"namespace\":\"a\",\"resourceVersion\":\"3\"},\"status\":"
      "{\"phase\":\"Running\"}}",
      "{\"metadata\":{\"name\":\"p3\",\"namespace\":\"a\",\"resourceVersion\":\"4\",\"labels\":"
      "{\"jobset.sigs.k8s.io/jobset-name\":\"k\"}},\"status\":{\"phase\":\"Succeeded\"}}",
  };
  /* The phase is read only by the selection; the Ready condition is
   * selected by a "type" no path keeps. */
  static const struct gb_keep keep2[] = {{{"metadata", "creationTimestamp"}},
                                         {{"spec", "schedulingGates"}},
                                         {{"status", "conditions", "[type=Ready]", "reason"}}};
  struct gb_informer *inf[2];
  struct gc_diags d;
  gc_diags_init(&d);
  for (int k = 0; k < 2; k++) {
    struct gb_informer_opts o = {0};
    o.version = "v1";
    o.resource = "pods";
    o.keep = GANG_KEEP;
    o.n_keep = sizeof(GANG_KEEP) / sizeof(GANG_KEEP[0]);
    o.label_selector = "jobset.sigs.k8s.io/jobset-name";
    o.on_change = k ? on_change_b : on_change_a;
    ck_assert_int_eq(gb_informer_new(cli, &o, &inf[k], &d), 0);
    struct gb_informer_handler h = {.keep = keep2,
                                    .n_keep = sizeof(keep2) / sizeof(keep2[0]),
                                    .field_selector = "status.phase!=Failed",
                                    .on_change = k ? on_change_b : on_change_a};
    ck_assert_int_eq(gb_informer_add_handler(inf[k], &h, &d), 0);
    feed(inf[k], GB_WATCH_BOOKMARK, json_tokener_parse("{\"metadata\":{}}"), 0); /* seals */
  }
  const struct gb_keep *const *wk;
  size_t nw;
  gb_informer_watch_keeps(inf[1], &wk, &nw);
  ck_assert_uint_gt(nw, 10);
  json_tokener *tok = json_tokener_new_ex(64);
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
    feed(inf[0], GB_WATCH_ADDED, json_tokener_parse(texts[i]), 0);
    struct gb_sj s;
    gb_sj_init(&s, texts[i], strlen(texts[i]));
    json_object *o = NULL;
    ck_assert_int_eq(gb_keep_decode(&s, wk, nw, tok, &o), 0);
    feed(inf[1], GB_WATCH_ADDED, o, 0);
  }
  json_tokener_free(tok);
  /* The same changes with the same objects (the first informer logs into
   * events, the second into events2). */
  ck_assert_uint_eq(gb_informer_count(inf[0]), gb_informer_count(inf[1]));
  char a[1024], b[1024];
  static const char *const names[] = {"p1", "p2", "p3"};
  for (size_t i = 0; i < 3; i++) {
    int has = gb_informer_get_meta(inf[0], "a", names[i], NULL, 0, NULL, 0) == 0;
    ck_assert_int_eq(has, gb_informer_get_meta(inf[1], "a", names[i], NULL, 0, NULL, 0) == 0);
    if (has)
      ck_assert_str_eq(cached_text(inf[0], "a", names[i], a, sizeof(a)),
                       cached_text(inf[1], "a", names[i], b, sizeof(b)));
  }
  ck_assert_str_eq(events, events2);
  ck_assert_ptr_nonnull(strstr(events, "upd a/p1 rv=2"));
  ck_assert_ptr_nonnull(strstr(events, "del a/p1 rv=2"));
  ck_assert_ptr_nonnull(strstr(events, "\"conditions\":[{\"reason\":\"r\"}]"));
  gc_diags_destroy(&d);
  gb_informer_free(inf[0]);
  gb_informer_free(inf[1]);
}
END_TEST

/* hold excludes every handler: a handler in progress finishes first, and
 * the held function sees every consumer at the same change. */
static atomic_int in_handler, release_handler, held_saw = -1;

static void slow_handler(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  (void)ch;
  atomic_store(&in_handler, 1);
  while (!atomic_load(&release_handler))
    usleep(1000);
  atomic_store(&in_handler, 0);
}

static void *feed_main(void *arg) {
  struct gb_informer *inf = arg;
  json_object *j = json_tokener_parse("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"1\"}}");
  gb_informer_feed(inf, GB_WATCH_ADDED, j);
  json_object_put(j);
  return NULL;
}

static int see_handler(void *arg) {
  (void)arg;
  atomic_store(&held_saw, atomic_load(&in_handler));
  return 0;
}

static void *hold_main(void *arg) {
  gb_informer_hold(arg, see_handler, NULL);
  return NULL;
}

START_TEST(hold_waits_for_a_handler) {
  struct gb_informer_opts o = {0};
  o.version = "v1";
  o.resource = "namespaces";
  o.on_change = slow_handler;
  struct gb_informer *inf = NULL;
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, NULL), 0);
  pthread_t feeder, holder;
  ck_assert_int_eq(pthread_create(&feeder, NULL, feed_main, inf), 0);
  while (!atomic_load(&in_handler))
    usleep(1000);
  ck_assert_int_eq(pthread_create(&holder, NULL, hold_main, inf), 0);
  usleep(100000); /* time for a hold that did not wait to run */
  ck_assert_int_eq(atomic_load(&held_saw), -1);
  atomic_store(&release_handler, 1);
  pthread_join(feeder, NULL);
  pthread_join(holder, NULL);
  ck_assert_int_eq(atomic_load(&held_saw), 0);
  gb_informer_free(inf);
}
END_TEST

static int held;

static int hold_fn(void *arg) {
  held = *(int *)arg;
  return 7;
}

/* reset empties the cache and tells every handler; hold runs its function. */
START_TEST(reset_and_hold) {
  struct gb_informer *inf = new_informer(0);
  feed(inf, GB_WATCH_ADDED, obj(NULL, "x", "1", "0"), 0);
  feed(inf, GB_WATCH_ADDED, obj(NULL, "y", "2", "0"), 0);
  events[0] = 0;
  ck_assert_int_eq(gb_informer_reset(inf), 0);
  ck_assert_uint_eq(gb_informer_count(inf), 0);
  ck_assert_int_eq(gb_informer_has_synced(inf), 0);
  ck_assert_ptr_nonnull(strstr(events, "del x [|x]"));
  ck_assert_ptr_nonnull(strstr(events, "del y [|y]"));
  char rv[16];
  gb_informer_last_rv(inf, rv, sizeof(rv));
  ck_assert_str_eq(rv, "");
  int v = 3;
  ck_assert_int_eq(gb_informer_hold(inf, hold_fn, &v), 7);
  ck_assert_int_eq(held, 3);
  ck_assert_int_eq(gb_informer_running(inf), 0);
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
  tcase_add_test(tc, keep_union_of_handlers);
  tcase_add_test(tc, watch_decode_gives_the_same_records);
  tcase_add_test(tc, handlers_see_their_own_selection);
  tcase_add_test(tc, reset_and_hold);
  tcase_add_test(tc, hold_waits_for_a_handler);
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
