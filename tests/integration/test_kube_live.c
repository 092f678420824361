/* SPDX-License-Identifier: Apache-2.0
 *
 * Integration tests of the Kubernetes client and informer against a live
 * HTTP API server (tests/integration/kube_fixture.py, started per test).
 * They check that list+watch sees create/update/delete; that bookmarks
 * advance the resourceVersion; that in-stream and HTTP 410 relist with no
 * missed or duplicated final state; that dropped watches resume without a
 * relist; that 5xx and latency faults are retried with backoff; server-side
 * apply (create, update, 409 conflict without force, force); paging with
 * more objects than the page limit; and discovery.
 *
 * The handler keeps a mirror (key -> resourceVersion) built only from
 * add/update/delete callbacks and flags any add of a known key, update or
 * delete of an unknown key: at the end the mirror must equal the server.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gb_informer.h"
#include "gb_kube_client.h"
#include "gb_kube_discovery.h"

#ifndef GB_SRC_DIR
#define GB_SRC_DIR "."
#endif

#define GROUP "trainer.kubeflow.org"
#define VERSION "v1alpha1"
#define RESOURCE "trainjobs"

static pid_t server_pid;
static char server_url[128];
static struct gb_kube_config *cfg;
static struct gb_kube_client *cli;  /* for the test's own requests */
static struct gb_kube_client *ctl;  /* control-plane calls, no retries */

/* ---- server process -------------------------------------------------------- */

static void start_server(void) {
  const char *src = getenv("GB_SRC") ? getenv("GB_SRC") : GB_SRC_DIR;
  char script[512];
  snprintf(script, sizeof(script), "%s/tests/integration/kube_fixture.py", src);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  server_pid = fork();
  ck_assert_int_ge(server_pid, 0);
  if (server_pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl("/usr/bin/python3", "python3", script, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  ck_assert_ptr_nonnull(fgets(server_url, sizeof(server_url), f));
  fclose(f);
  server_url[strcspn(server_url, "\r\n")] = 0;
  ck_assert_msg(!strncmp(server_url, "http://", 7), "server printed \"%s\"", server_url);
}

static struct gb_kube_client *new_client(int retries) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_client_opts o = {0};
  o.qps = -1;
  o.max_retries = retries;
  o.retry_base_s = 0.02;
  o.retry_max_s = 0.5;
  struct gb_kube_client *c = NULL;
  ck_assert_int_eq(gb_kube_client_new(cfg, &o, &c, &d), 0);
  gc_diags_destroy(&d);
  return c;
}

static void setup(void) {
  start_server();
  char kc[512];
  snprintf(kc, sizeof(kc),
           "current-context: t\ncontexts: [{name: t, context: {cluster: c, user: u}}]\n"
           "clusters: [{name: c, cluster: {server: '%s'}}]\n"
           "users: [{name: u, user: {token: test-token}}]\n",
           server_url);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_kube_config_load_buffer("test-kubeconfig", kc, strlen(kc), NULL, &cfg, &d),
                   0);
  gc_diags_destroy(&d);
  cli = new_client(5);
  ctl = new_client(-1);
}

static void teardown(void) {
  gb_kube_client_free(cli);
  gb_kube_client_free(ctl);
  gb_kube_config_free(cfg);
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
  }
}

/* POSTs a control request; returns the server's reply (caller puts). */
static json_object *control(const char *what, const char *json) {
  char path[128];
  snprintf(path, sizeof(path), "/_control/%s", what);
  json_object *out = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_request(ctl, GB_KUBE_CREATE, "POST", path, "application/json", json,
                           strlen(json), &out, &e);
  ck_assert_msg(rc == 0, "control %s: %s", what, e.message);
  return out;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits until the server has n watches open (so a drop hits one). */
static void wait_watching(int n) {
  for (int i = 0; i < 200; i++) {
    json_object *st = control("faults", "{}"), *v;
    int open = json_object_object_get_ex(st, "open_watches", &v) ? json_object_get_int(v) : -1;
    json_object_put(st);
    if (open >= n)
      return;
    sleep_ms(50);
  }
  ck_abort_msg("no watch opened within 10 s");
}

/* ---- object helpers ------------------------------------------------------ */

static json_object *trainjob(const char *ns, const char *name, int nodes) {
  char text[512];
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
           "\"spec\":{\"runtimeRef\":{\"name\":\"torch-distributed\"},"
           "\"trainer\":{\"numNodes\":%d}}}",
           name, ns, nodes);
  return json_tokener_parse(text);
}

static void create(const char *ns, const char *name, int nodes) {
  char path[256];
  ck_assert_int_eq(gb_kube_path(path, sizeof(path), GROUP, VERSION, RESOURCE, ns, NULL), 0);
  json_object *o = trainjob(ns, name, nodes), *out = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_create(cli, path, o, &out, &e);
  ck_assert_msg(rc == 0, "create %s/%s: %s", ns, name, e.message);
  json_object_put(o);
  json_object_put(out);
}

static void patch_nodes(const char *ns, const char *name, int nodes) {
  char path[256], text[128];
  ck_assert_int_eq(gb_kube_path(path, sizeof(path), GROUP, VERSION, RESOURCE, ns, name), 0);
  snprintf(text, sizeof(text), "{\"spec\":{\"trainer\":{\"numNodes\":%d}}}", nodes);
  json_object *p = json_tokener_parse(text), *out = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_merge_patch(cli, path, p, &out, &e);
  ck_assert_msg(rc == 0, "patch %s/%s: %s", ns, name, e.message);
  json_object_put(p);
  json_object_put(out);
}

static void delete_obj(const char *ns, const char *name) {
  char path[256];
  ck_assert_int_eq(gb_kube_path(path, sizeof(path), GROUP, VERSION, RESOURCE, ns, name), 0);
  struct gb_kube_error e;
  int rc = gb_kube_delete(cli, path, "Background", NULL, &e);
  ck_assert_msg(rc == 0, "delete %s/%s: %s", ns, name, e.message);
}

/* ---- the mirror built from handler callbacks --------------------------------- */

#define MIRROR_MAX 2048
struct mirror {
  pthread_mutex_t lock;
  char keys[MIRROR_MAX][96];
  char rvs[MIRROR_MAX][32];
  int n;
  int adds, updates, deletes;
  int anomalies; /* add of a known key, update/delete of an unknown key */
  char last_anomaly[200];
};

static struct mirror M;

static int mfind(const char *key) {
  for (int i = 0; i < M.n; i++)
    if (!strcmp(M.keys[i], key))
      return i;
  return -1;
}

static void on_change(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  pthread_mutex_lock(&M.lock);
  int i = mfind(ch->key);
  const char *rv = gb_kube_meta_str(ch->obj, "resourceVersion");
  if (ch->op == GB_INFORMER_ADD) {
    M.adds++;
    if (i >= 0) {
      M.anomalies++;
      snprintf(M.last_anomaly, sizeof(M.last_anomaly), "add of known %s", ch->key);
    } else if (M.n < MIRROR_MAX) {
      i = M.n++;
      snprintf(M.keys[i], sizeof(M.keys[i]), "%s", ch->key);
    }
  } else if (ch->op == GB_INFORMER_UPDATE) {
    M.updates++;
    if (i < 0 || !ch->old_json) {
      M.anomalies++;
      snprintf(M.last_anomaly, sizeof(M.last_anomaly), "update of unknown %s", ch->key);
    }
  } else {
    M.deletes++;
    if (i < 0) {
      M.anomalies++;
      snprintf(M.last_anomaly, sizeof(M.last_anomaly), "delete of unknown %s", ch->key);
    } else {
      M.n--;
      if (i != M.n) {
        memcpy(M.keys[i], M.keys[M.n], sizeof(M.keys[i]));
        memcpy(M.rvs[i], M.rvs[M.n], sizeof(M.rvs[i]));
      }
      i = -1;
    }
  }
  if (i >= 0)
    snprintf(M.rvs[i], sizeof(M.rvs[i]), "%s", rv ? rv : "");
  pthread_mutex_unlock(&M.lock);
}

struct collect {
  char keys[MIRROR_MAX][96];
  char rvs[MIRROR_MAX][32];
  int n;
};

static int collect_item(void *arg, json_object *obj) {
  struct collect *c = arg;
  if (c->n >= MIRROR_MAX)
    return GC_ELIMIT;
  snprintf(c->keys[c->n], sizeof(c->keys[0]), "%s/%s", gb_kube_meta_str(obj, "namespace"),
           gb_kube_meta_str(obj, "name"));
  snprintf(c->rvs[c->n], sizeof(c->rvs[0]), "%s", gb_kube_meta_str(obj, "resourceVersion"));
  c->n++;
  return 0;
}

/* 1 when the mirror equals the server's list (keys and resourceVersions). */
static int mirror_matches_server(char *why, size_t cap) {
  static struct collect srv;
  memset(&srv, 0, sizeof(srv));
  char path[256];
  gb_kube_path(path, sizeof(path), GROUP, VERSION, RESOURCE, NULL, NULL);
  struct gb_kube_error e;
  if (gb_kube_list(ctl, path, NULL, collect_item, &srv, NULL, 0, &e)) {
    snprintf(why, cap, "list: %.200s", e.message);
    return 0;
  }
  pthread_mutex_lock(&M.lock);
  int ok = srv.n == M.n;
  snprintf(why, cap, "server has %d objects, mirror %d", srv.n, M.n);
  for (int i = 0; ok && i < srv.n; i++) {
    int j = mfind(srv.keys[i]);
    if (j < 0 || strcmp(M.rvs[j], srv.rvs[i])) {
      snprintf(why, cap, "%s: server rv %s, mirror %s", srv.keys[i], srv.rvs[i],
               j < 0 ? "(missing)" : M.rvs[j]);
      ok = 0;
    }
  }
  pthread_mutex_unlock(&M.lock);
  return ok;
}

static int wait_mirror(long timeout_ms, char *why, size_t cap) {
  for (long t = 0; t < timeout_ms; t += 100) {
    if (mirror_matches_server(why, cap))
      return 1;
    sleep_ms(100);
  }
  return mirror_matches_server(why, cap);
}

static char log_buf[8192];
static void on_log(void *arg, int is_error, const char *msg) {
  (void)arg;
  size_t n = strlen(log_buf), m = strlen(msg);
  if (n + m + 4 < sizeof(log_buf)) {
    memcpy(log_buf + n, is_error ? "E " : "I ", 2);
    memcpy(log_buf + n + 2, msg, m);
    memcpy(log_buf + n + 2 + m, "\n", 2);
  }
}

static struct gb_informer *start_informer(const char *ns, long page_limit, long min_timeout) {
  memset(&M, 0, sizeof(M));
  pthread_mutex_init(&M.lock, NULL);
  log_buf[0] = 0;
  struct gb_informer_opts o = {0};
  o.group = GROUP;
  o.version = VERSION;
  o.resource = RESOURCE;
  o.namespace = ns;
  o.page_limit = page_limit;
  o.min_watch_timeout_s = min_timeout;
  o.backoff_base_s = 0.05;
  o.backoff_max_s = 0.5;
  o.on_change = on_change;
  o.on_log = on_log;
  struct gb_informer *inf = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  gc_diags_destroy(&d);
  ck_assert_int_eq(gb_informer_start(inf), 0);
  return inf;
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(list_watch_create_update_delete) {
  create("team-a", "job-1", 1);
  create("team-a", "job-2", 2);
  create("team-b", "job-3", 3);
  struct gb_informer *inf = start_informer(NULL, 0, 60);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  ck_assert_uint_eq(gb_informer_count(inf), 3);
  ck_assert_int_eq(M.adds, 3);

  create("team-a", "job-4", 4);
  patch_nodes("team-a", "job-1", 8);
  delete_obj("team-b", "job-3");
  char why[256];
  ck_assert_msg(wait_mirror(10000, why, sizeof(why)), "%s", why);
  ck_assert_int_eq(M.adds, 4);
  ck_assert_int_eq(M.updates, 1);
  ck_assert_int_eq(M.deletes, 1);
  ck_assert_int_eq(M.anomalies, 0);

  /* The cache serves the new state as json-c and as a gc_value tree. */
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *v = NULL;
  ck_assert_int_eq(gb_informer_get_value(inf, "team-a", "job-1", a, &v), 0);
  ck_assert_int_eq(gc_value_path(v, "spec.trainer.numNodes")->u.i, 8);
  ck_assert_ptr_null(gc_value_path(v, "metadata.managedFields"));
  ck_assert_int_eq(gb_informer_get_value(inf, "team-b", "job-3", a, &v), GC_ENOTFOUND);
  gc_arena_free(a);
  char rv[64], uid[64];
  ck_assert_int_eq(gb_informer_get_meta(inf, "team-a", "job-4", rv, sizeof(rv), uid,
                                        sizeof(uid)),
                   0);
  ck_assert_str_ne(uid, "");

  struct gb_informer_stats st;
  gb_informer_stats(inf, &st);
  ck_assert_uint_eq(st.lists, 1);
  ck_assert_uint_eq(st.relists_gone, 0);
  ck_assert_uint_eq(st.objects, 3);
  gb_informer_free(inf);
}
END_TEST

START_TEST(namespace_scoped_informer_and_bookmarks) {
  create("team-a", "job-1", 1);
  struct gb_informer *inf = start_informer("team-a", 0, 60);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  char rv0[64];
  gb_informer_last_rv(inf, rv0, sizeof(rv0));
  /* Changes elsewhere move the server's resourceVersion; only bookmarks can
   * tell this informer about it. */
  create("team-b", "other-1", 1);
  create("team-b", "other-2", 1);
  json_object *st = control("faults", "{}");
  json_object *srv_rv;
  ck_assert(json_object_object_get_ex(st, "rv", &srv_rv));
  char want[64];
  snprintf(want, sizeof(want), "%s", json_object_get_string(srv_rv));
  json_object_put(st);
  ck_assert_str_ne(rv0, want);
  char rv[64] = "";
  for (int i = 0; i < 100; i++) {
    gb_informer_last_rv(inf, rv, sizeof(rv));
    if (!strcmp(rv, want))
      break;
    sleep_ms(100);
  }
  ck_assert_str_eq(rv, want);
  struct gb_informer_stats s;
  gb_informer_stats(inf, &s);
  ck_assert_uint_ge(s.bookmarks, 1);
  ck_assert_uint_eq(s.events, 0); /* the other namespace sent no objects */
  ck_assert_uint_eq(gb_informer_count(inf), 1);
  ck_assert_int_eq(M.adds, 1);
  ck_assert_int_eq(M.updates + M.deletes, 0);
  gb_informer_free(inf);
}
END_TEST

/* Changes happen while the watch delivers nothing; then history is compacted
 * and the watch is told 410 (in band or as an HTTP status).  The relist must
 * produce exactly the final state: one add, one update, one delete. */
static void gone_case(int inband) {
  for (int i = 0; i < 5; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%d", i);
    create("team-a", name, i + 1);
  }
  struct gb_informer *inf = start_informer(NULL, 2, 60);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  ck_assert_int_eq(M.adds, 5);
  wait_watching(1);
  json_object_put(control("faults", "{\"hold\":1}"));
  create("team-a", "job-new", 9);
  patch_nodes("team-a", "job-1", 42);
  delete_obj("team-a", "job-2");
  if (inband) {
    json_object_put(control("compact", "{\"inband\":true}"));
  } else {
    /* Compact without telling the watch, then drop it: the rewatch from the
     * old resourceVersion gets HTTP 410. */
    json_object_put(control("compact", "{}"));
  }
  json_object_put(control("faults", "{\"hold\":0}"));
  char why[256];
  ck_assert_msg(wait_mirror(10000, why, sizeof(why)), "%s\n%s", why, log_buf);
  ck_assert_msg(M.anomalies == 0, "%s", M.last_anomaly);
  ck_assert_int_eq(M.adds, 6);
  ck_assert_int_eq(M.updates, 1);
  ck_assert_int_eq(M.deletes, 1);
  struct gb_informer_stats s;
  gb_informer_stats(inf, &s);
  ck_assert_uint_ge(s.relists_gone, 1);
  ck_assert_uint_ge(s.lists, 2);
  ck_assert_uint_eq(s.objects, 5);
  /* Later events still flow after the relist. */
  patch_nodes("team-a", "job-3", 7);
  ck_assert_msg(wait_mirror(10000, why, sizeof(why)), "%s", why);
  ck_assert_int_eq(M.updates, 2);
  gb_informer_free(inf);
}

START_TEST(inband_410_relists_exactly) { gone_case(1); }
END_TEST

START_TEST(http_410_relists_exactly) { gone_case(0); }
END_TEST

START_TEST(dropped_watches_resume_without_relist) {
  create("team-a", "job-0", 1);
  struct gb_informer *inf = start_informer(NULL, 0, 60);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  char why[256];
  for (int round = 1; round <= 4; round++) {
    wait_watching(1);
    json_object_put(control("drop", "{}"));
    char name[32];
    snprintf(name, sizeof(name), "job-%d", round);
    create("team-a", name, round);
    patch_nodes("team-a", "job-0", round + 10);
    ck_assert_msg(wait_mirror(10000, why, sizeof(why)), "round %d: %s", round, why);
  }
  struct gb_informer_stats s;
  gb_informer_stats(inf, &s);
  ck_assert_uint_eq(s.lists, 1);
  ck_assert_uint_eq(s.relists_gone, 0);
  ck_assert_uint_ge(s.watches, 5);
  ck_assert_int_eq(M.anomalies, 0);
  ck_assert_int_eq(M.adds, 5);
  ck_assert_int_eq(M.updates, 4);
  gb_informer_free(inf);
}
END_TEST

START_TEST(faults_5xx_and_latency_are_retried) {
  for (int i = 0; i < 12; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%d", i);
    create("team-a", name, 1);
  }
  /* Two certain failures first (so retries are exercised every run), then
   * random ones. */
  json_object_put(control("faults", "{\"fail_next\":2,\"error_rate\":0.3,\"latency_ms\":50}"));
  struct gb_informer *inf = start_informer(NULL, 3, 60);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 30000), 1);
  /* Writes under faults also succeed thanks to retries (merge patch and
   * delete are retried; create is not, so it goes through the retry loop of
   * this test instead). */
  patch_nodes("team-a", "job-1", 5);
  delete_obj("team-a", "job-2");
  json_object_put(control("drop", "{}"));
  json_object_put(control("faults", "{\"error_rate\":0,\"latency_ms\":0}"));
  char why[256];
  ck_assert_msg(wait_mirror(10000, why, sizeof(why)), "%s\n%s", why, log_buf);
  ck_assert_int_eq(M.anomalies, 0);
  struct gb_kube_stats cs;
  gb_kube_client_stats(cli, &cs);
  ck_assert_uint_ge(cs.verb[GB_KUBE_LIST].retries, 2);
  ck_assert_uint_ge(cs.verb[GB_KUBE_LIST].errors, 2);
  gb_informer_free(inf);
}
END_TEST

START_TEST(server_side_apply) {
  char path[256];
  ck_assert_int_eq(gb_kube_path(path, sizeof(path), GROUP, VERSION, RESOURCE, "team-a", "ssa"),
                   0);
  json_object *o = trainjob("team-a", "ssa", 2), *out = NULL;
  struct gb_kube_error e;
  /* Creates. */
  ck_assert_int_eq(gb_kube_apply(cli, path, o, "gangbridge", 1, &out, &e), 0);
  ck_assert_str_ne(gb_kube_meta_str(out, "uid"), "");
  json_object_put(out);
  json_object_put(o);
  /* Updates with the same manager. */
  o = trainjob("team-a", "ssa", 3);
  ck_assert_int_eq(gb_kube_apply(cli, path, o, "gangbridge", 0, &out, &e), 0);
  json_object *spec, *tr, *nn;
  ck_assert(json_object_object_get_ex(out, "spec", &spec));
  ck_assert(json_object_object_get_ex(spec, "trainer", &tr));
  ck_assert(json_object_object_get_ex(tr, "numNodes", &nn));
  ck_assert_int_eq(json_object_get_int(nn), 3);
  json_object_put(out);
  json_object_put(o);
  /* Another manager changing a field gangbridge owns: 409 without force. */
  o = trainjob("team-a", "ssa", 5);
  ck_assert_int_eq(gb_kube_apply(cli, path, o, "someone-else", 0, &out, &e), GC_EIO);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(e.http, 409);
  ck_assert_str_eq(e.reason, "Conflict");
  ck_assert_ptr_nonnull(strstr(e.message, "conflict with \"gangbridge\""));
  ck_assert_ptr_nonnull(strstr(e.message, "numNodes"));
  /* With force it takes the field over. */
  ck_assert_int_eq(gb_kube_apply(cli, path, o, "someone-else", 1, &out, &e), 0);
  json_object_put(out);
  json_object_put(o);
  /* Get and 404s. */
  ck_assert_int_eq(gb_kube_get(cli, path, &out, &e), 0);
  json_object_put(out);
  char missing[256];
  gb_kube_path(missing, sizeof(missing), GROUP, VERSION, RESOURCE, "team-a", "nope");
  ck_assert_int_eq(gb_kube_get(cli, missing, &out, &e), GC_ENOTFOUND);
  ck_assert_int_eq(e.http, 404);
  ck_assert_str_eq(e.reason, "NotFound");
  ck_assert_int_eq(gb_kube_delete(cli, missing, NULL, NULL, &e), GC_ENOTFOUND);
}
END_TEST

START_TEST(paging_more_than_limit) {
  for (int i = 0; i < 23; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%02d", i);
    create(i % 2 ? "team-a" : "team-b", name, 1);
  }
  char path[256];
  gb_kube_path(path, sizeof(path), GROUP, VERSION, RESOURCE, NULL, NULL);
  static struct collect c;
  memset(&c, 0, sizeof(c));
  struct gb_kube_list_opts lo = {NULL, NULL, 5};
  char rv[64];
  struct gb_kube_error e;
  struct gb_kube_stats before, after;
  gb_kube_client_stats(cli, &before);
  ck_assert_int_eq(gb_kube_list(cli, path, &lo, collect_item, &c, rv, sizeof(rv), &e), 0);
  gb_kube_client_stats(cli, &after);
  ck_assert_int_eq(c.n, 23);
  ck_assert_uint_eq(after.verb[GB_KUBE_LIST].requests - before.verb[GB_KUBE_LIST].requests, 5);
  ck_assert_str_ne(rv, "");
  for (int i = 0; i < c.n; i++)
    for (int j = i + 1; j < c.n; j++)
      ck_assert_str_ne(c.keys[i], c.keys[j]);
  struct gb_informer *inf = start_informer(NULL, 4, 60);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  ck_assert_uint_eq(gb_informer_count(inf), 23);
  char why[256];
  ck_assert_msg(mirror_matches_server(why, sizeof(why)), "%s", why);
  gb_informer_free(inf);
}
END_TEST

START_TEST(discovery_served_and_not) {
  create("team-a", "job-0", 1);
  int served = -1;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_discovery_check(cli, GROUP, VERSION, RESOURCE, &served, &e), 0);
  ck_assert_int_eq(served, 1);
  ck_assert_int_eq(
      gb_kube_discovery_check(cli, "scheduling.volcano.sh", "v1beta1", "podgroups", &served, &e),
      0);
  ck_assert_int_eq(served, 0);
  struct gb_kube_discovery *d = gb_kube_discovery_new(cli, 60);
  ck_assert_int_eq(gb_kube_discovery_served(d, GROUP, VERSION, "other", &served, &e), 0);
  ck_assert_int_eq(served, 0);
  /* Served later: the cached answer stays until invalidated. */
  char path[256];
  gb_kube_path(path, sizeof(path), GROUP, VERSION, "other", "team-a", NULL);
  json_object *o = trainjob("team-a", "x", 1), *out = NULL;
  ck_assert_int_eq(gb_kube_create(cli, path, o, &out, &e), 0);
  json_object_put(o);
  json_object_put(out);
  ck_assert_int_eq(gb_kube_discovery_served(d, GROUP, VERSION, "other", &served, &e), 0);
  ck_assert_int_eq(served, 0);
  gb_kube_discovery_invalidate(d);
  ck_assert_int_eq(gb_kube_discovery_served(d, GROUP, VERSION, "other", &served, &e), 0);
  ck_assert_int_eq(served, 1);
  gb_kube_discovery_free(d);
}
END_TEST

START_TEST(stop_is_prompt_and_clean) {
  struct gb_informer *inf = start_informer(NULL, 0, 600);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  sleep_ms(300); /* inside a long watch */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  gb_informer_stop(inf);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  ck_assert_msg(secs < 5, "stop took %.1f s", secs);
  gb_informer_stop(inf); /* idempotent */
  gb_informer_free(inf);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kube_live");
  TCase *tc = tcase_create("fixture");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, list_watch_create_update_delete);
  tcase_add_test(tc, namespace_scoped_informer_and_bookmarks);
  tcase_add_test(tc, inband_410_relists_exactly);
  tcase_add_test(tc, http_410_relists_exactly);
  tcase_add_test(tc, dropped_watches_resume_without_relist);
  tcase_add_test(tc, faults_5xx_and_latency_are_retried);
  tcase_add_test(tc, server_side_apply);
  tcase_add_test(tc, paging_more_than_limit);
  tcase_add_test(tc, discovery_served_and_not);
  tcase_add_test(tc, stop_is_prompt_and_clean);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
