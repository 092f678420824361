/* SPDX-License-Identifier: Apache-2.0
 *
 * Integration tests of the Kubernetes client and informer against a live
 * HTTP API server: the stand-in (tests/apiserver/run, started per test
 * with a bearer token file, the Trainer CRDs installed and two namespaces).
 * They check that list+watch sees create/update/delete; that bookmarks
 * advance the resourceVersion; that in-stream and HTTP 410 relist with no
 * missed or duplicated final state; that dropped watches resume without a
 * relist; that 5xx and latency faults are retried with backoff; server-side
 * apply (create, update, 409 conflict without force, force); paging with
 * more objects than the page limit; discovery; token-file rotation; and
 * HTTPS with an inline CA and client certificate (curl *_BLOB options).
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
#include "gb_informer_test.h"
#include "gb_informers.h"
#include "gb_kobj.h"
#include "gb_kube_client.h"
#include "gb_kube_client_test.h"
#include "gb_kube_discovery.h"
#include "gb_kube_discovery_test.h"
#include "gb_manifest.h"
#include "gb_kube_config_test.h"

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

static char workdir[256];
static char token_path[300];

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

/* Starts tests/apiserver/run with extra arguments (NULL-terminated). */
static void start_server_args(const char *const *extra) {
  const char *src = getenv("GB_SRC") ? getenv("GB_SRC") : GB_SRC_DIR;
  char run[512];
  snprintf(run, sizeof(run), "%s/tests/apiserver/run", src);
  const char *argv[24] = {"/usr/bin/python3", run, "--port", "0", "--bookmark-interval", "0.3",
                          "--token"};
  char tok_arg[320];
  snprintf(tok_arg, sizeof(tok_arg), "@%s", token_path);
  size_t n = 7;
  argv[n++] = tok_arg;
  for (size_t i = 0; extra && extra[i] && n < 23; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  server_pid = fork();
  ck_assert_int_ge(server_pid, 0);
  if (server_pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  ck_assert_ptr_nonnull(fgets(server_url, sizeof(server_url), f));
  fclose(f);
  server_url[strcspn(server_url, "\r\n")] = 0;
  ck_assert_msg(!strncmp(server_url, "http", 4), "server printed \"%s\"", server_url);
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

/* POSTs (or GETs when json is NULL) a control request; returns the reply. */
static json_object *control(const char *what, const char *json) {
  char path[128];
  snprintf(path, sizeof(path), "/_control/%s", what);
  json_object *out = NULL;
  struct gb_kube_error e;
  int rc = json ? gb_kube_client_request(ctl, GB_KUBE_CREATE, "POST", path, "application/json",
                                         json, strlen(json), &out, &e)
                : gb_kube_client_get(ctl, path, &out, &e);
  ck_assert_msg(rc == 0, "control %s: %s", what, e.message);
  return out;
}

static void control_void(const char *what, const char *json) { json_object_put(control(what, json)); }

/* Creates an object from a JSON text at collection path; 409 is fine. */
static void post_text(const char *path, const char *text) {
  json_object *o = json_tokener_parse(text), *out = NULL;
  ck_assert_ptr_nonnull(o);
  struct gb_kube_error e;
  int rc = gb_kube_client_create(ctl, path, o, &out, &e);
  ck_assert_msg(rc == 0 || e.http == 409, "POST %s: %s", path, e.message);
  json_object_put(o);
  json_object_put(out);
}

/* Installs the CRDs of a YAML file as a cluster admin would (kubectl create). */
static void install_crd(const char *rel) {
  const char *shared = getenv("GB_SHARED");
  char path[512];
  if (shared)
    snprintf(path, sizeof(path), "%s/crds/%s", shared, rel);
  else
    snprintf(path, sizeof(path), "%s/../shared/crds/%s", GB_SRC_DIR, rel);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_msg(gb_manifest_load_path(ds, path, &d) == 0, "%s: %s", path, d.n ? d.msgs[0] : "");
  for (size_t i = 0; i < ds->n; i++) {
    json_object *o = gb_kube_client_value_to_json(ds->docs[i].root), *out = NULL;
    ck_assert_ptr_nonnull(o);
    struct gb_kube_error e;
    int rc = gb_kube_client_create(ctl, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                   o, &out, &e);
    ck_assert_msg(rc == 0, "install %s: %s", rel, e.message);
    json_object_put(o);
    json_object_put(out);
  }
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}

static void make_namespace(const char *ns) {
  char text[256];
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
  post_text("/api/v1/namespaces", text);
}

static void load_kubeconfig(const char *user_yaml, const char *cluster_extra) {
  char kc[16384];
  snprintf(kc, sizeof(kc),
           "current-context: t\ncontexts: [{name: t, context: {cluster: c, user: u}}]\n"
           "clusters:\n- name: c\n  cluster:\n    server: '%s'\n%s"
           "users:\n- name: u\n  user:\n%s",
           server_url, cluster_extra, user_yaml);
  struct gc_diags d;
  gc_diags_init(&d);
  char name[300];
  snprintf(name, sizeof(name), "%s/kubeconfig", workdir);
  int rc = gb_kube_config_load_buffer(name, kc, strlen(kc), NULL, &cfg, &d);
  ck_assert_msg(rc == 0, "%s", d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
}

static void make_workdir(void) {
  snprintf(workdir, sizeof(workdir), "/tmp/gbkl.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(workdir));
}

static void setup_common(const char *const *extra, const char *user_yaml, const char *cluster) {
  snprintf(token_path, sizeof(token_path), "%s/token", workdir);
  write_text(token_path, "token-one\n");
  start_server_args(extra);
  char user[512];
  snprintf(user, sizeof(user), "    tokenFile: %s\n", token_path);
  load_kubeconfig(user_yaml ? user_yaml : user, cluster ? cluster : "");
  cli = new_client(5);
  ctl = new_client(-1);
}

static void setup(void) {
  make_workdir();
  setup_common(NULL, NULL, NULL);
  install_crd("trainer/trainer.kubeflow.org_trainjobs.yaml");
  make_namespace("team-a");
  make_namespace("team-b");
}

static void rm_rf(const char *dir) {
  pid_t p = fork();
  if (p == 0) {
    execl("/bin/rm", "rm", "-rf", dir, (char *)NULL);
    _exit(127);
  }
  if (p > 0)
    waitpid(p, NULL, 0);
}

static void teardown(void) {
  gb_kube_client_free(cli);
  gb_kube_client_free(ctl);
  gb_kube_config_free(cfg);
  cli = ctl = NULL;
  cfg = NULL;
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
  rm_rf(workdir);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Drops every open watch, waiting until there is at least one to drop. */
static void drop_watches(void) {
  for (int i = 0; i < 200; i++) {
    json_object *r = control("drop-watches", "{}"), *v;
    int n = json_object_object_get_ex(r, "dropped", &v) ? json_object_get_int(v) : 0;
    json_object_put(r);
    if (n > 0)
      return;
    sleep_ms(50);
  }
  ck_abort_msg("no watch to drop within 10 s");
}

static void server_rv(char *buf, size_t cap) {
  json_object *st = control("stats", NULL), *v;
  ck_assert(json_object_object_get_ex(st, "resourceVersion", &v));
  snprintf(buf, cap, "%s", json_object_get_string(v));
  json_object_put(st);
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
  ck_assert_int_eq(gb_kube_client_path(path, sizeof(path), GROUP, VERSION, RESOURCE, ns, NULL), 0);
  json_object *o = trainjob(ns, name, nodes), *out = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_client_create(cli, path, o, &out, &e);
  ck_assert_msg(rc == 0, "create %s/%s: %s", ns, name, e.message);
  json_object_put(o);
  json_object_put(out);
}

static void patch_nodes(const char *ns, const char *name, int nodes) {
  char path[256], text[128];
  ck_assert_int_eq(gb_kube_client_path(path, sizeof(path), GROUP, VERSION, RESOURCE, ns, name), 0);
  snprintf(text, sizeof(text), "{\"spec\":{\"trainer\":{\"numNodes\":%d}}}", nodes);
  json_object *p = json_tokener_parse(text), *out = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_client_merge_patch(cli, path, p, &out, &e);
  ck_assert_msg(rc == 0, "patch %s/%s: %s", ns, name, e.message);
  json_object_put(p);
  json_object_put(out);
}

static void delete_obj(const char *ns, const char *name) {
  char path[256];
  ck_assert_int_eq(gb_kube_client_path(path, sizeof(path), GROUP, VERSION, RESOURCE, ns, name), 0);
  struct gb_kube_error e;
  int rc = gb_kube_client_delete(cli, path, "Background", NULL, &e);
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
  const char *rv = gb_kobj_meta(ch->obj, "resourceVersion");
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
  snprintf(c->keys[c->n], sizeof(c->keys[0]), "%s/%s", gb_kobj_meta(obj, "namespace"),
           gb_kobj_meta(obj, "name"));
  snprintf(c->rvs[c->n], sizeof(c->rvs[0]), "%s", gb_kobj_meta(obj, "resourceVersion"));
  c->n++;
  return 0;
}

/* 1 when the mirror equals the server's list (keys and resourceVersions). */
static int mirror_matches_server(char *why, size_t cap) {
  static struct collect srv;
  memset(&srv, 0, sizeof(srv));
  char path[256];
  gb_kube_client_path(path, sizeof(path), GROUP, VERSION, RESOURCE, NULL, NULL);
  struct gb_kube_error e;
  if (gb_kube_client_list(ctl, path, NULL, collect_item, &srv, NULL, 0, &e)) {
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

static int relist_after = 0; /* informer option for the next start_informer */

static const char *const *start_namespaces; /* a namespace set for the next start_informer */
static size_t start_n_namespaces;

static struct gb_informer *start_informer(const char *ns, long page_limit, long min_timeout) {
  memset(&M, 0, sizeof(M));
  pthread_mutex_init(&M.lock, NULL);
  log_buf[0] = 0;
  struct gb_informer_opts o = {0};
  o.group = GROUP;
  o.version = VERSION;
  o.resource = RESOURCE;
  o.namespace = ns;
  o.namespaces = start_namespaces;
  o.n_namespaces = start_n_namespaces;
  o.page_limit = page_limit;
  o.min_watch_timeout_s = min_timeout;
  o.backoff_base_s = 0.05;
  o.backoff_max_s = 0.5;
  o.on_change = on_change;
  o.on_log = on_log;
  o.relist_after_failures = relist_after;
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
  /* Listed (never watched) objects carry apiVersion and kind too. */
  ck_assert_int_eq(gb_informer_get_value(inf, "team-a", "job-2", a, &v), 0);
  ck_assert_str_eq(gc_value_as_str(gc_map_get(v, "kind")), "TrainJob");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(v, "apiVersion")), "trainer.kubeflow.org/v1alpha1");
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
  char want[64];
  server_rv(want, sizeof(want));
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

/* Changes happen while the informer cannot watch (watch requests fail);
 * then history is compacted past its resourceVersion, so the rewatch is
 * answered 410 (in band as an ERROR event, or as an HTTP status).  The relist
 * must produce exactly the final state: one add, one update, one delete. */
static void gone_case(int inband) {
  for (int i = 0; i < 5; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%d", i);
    create("team-a", name, i + 1);
  }
  control_void("settings", inband ? "{\"expired_watch\":\"event\"}" : "{\"expired_watch\":\"http\"}");
  relist_after = 1000; /* only a 410 may cause the relist here */
  struct gb_informer *inf = start_informer(NULL, 2, 60);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  ck_assert_int_eq(M.adds, 5);
  control_void("faults", "{\"error_rate\":1.0,\"error_verbs\":[\"watch\"],\"error_codes\":[500]}");
  /* Drop whatever watch is open until none is and the informer has seen
   * its rewatches fail. */
  struct gb_informer_stats s;
  int watchers = -1;
  for (int i = 0; i < 200; i++) {
    control_void("drop-watches", "{}");
    json_object *st = control("stats", NULL), *v;
    watchers = json_object_object_get_ex(st, "watchers", &v) ? json_object_get_int(v) : -1;
    json_object_put(st);
    gb_informer_stats(inf, &s);
    if (s.watch_failures >= 1 && watchers == 0)
      break;
    sleep_ms(50);
  }
  ck_assert_uint_ge(s.watch_failures, 1);
  ck_assert_int_eq(watchers, 0);
  create("team-a", "job-new", 9);
  patch_nodes("team-a", "job-1", 42);
  delete_obj("team-a", "job-2");
  control_void("compact", "{}");
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_request(ctl, GB_KUBE_DELETE, "DELETE", "/_control/faults", NULL,
                                          NULL, 0, &out, &e),
                   0);
  json_object_put(out);
  char why[256];
  ck_assert_msg(wait_mirror(15000, why, sizeof(why)), "%s\n%s", why, log_buf);
  ck_assert_msg(M.anomalies == 0, "%s", M.last_anomaly);
  ck_assert_int_eq(M.adds, 6);
  ck_assert_int_eq(M.updates, 1);
  ck_assert_int_eq(M.deletes, 1);
  gb_informer_stats(inf, &s);
  ck_assert_uint_ge(s.relists_gone, 1);
  ck_assert_uint_ge(s.lists, 2);
  ck_assert_uint_eq(s.objects, 5);
  ck_assert_ptr_nonnull(strstr(log_buf, inband ? "expired (HTTP 410 Expired" : "expired (HTTP 410"));
  /* Later events still flow after the relist. */
  patch_nodes("team-a", "job-3", 7);
  ck_assert_msg(wait_mirror(10000, why, sizeof(why)), "%s", why);
  ck_assert_int_eq(M.updates, 2);
  gb_informer_free(inf);
  relist_after = 0;
}

/* watchNamespaces: one informer over a set of namespaces (one list/watch per
 * namespace, what Roles per namespace allow) presents one cache: objects of
 * the set only, every change in them, and a relist of one namespace (410)
 * never deletes the other's objects. */
START_TEST(namespace_set_informer) {
  make_namespace("team-c");
  create("team-a", "a-1", 1);
  create("team-a", "a-2", 1);
  create("team-b", "b-1", 1);
  create("team-c", "c-1", 1);
  static const char *const set[] = {"team-a", "team-c"};
  start_namespaces = set;
  start_n_namespaces = 2;
  relist_after = 1000;
  control_void("settings", "{\"expired_watch\":\"http\"}");
  struct gb_informer *inf = start_informer(NULL, 0, 60);
  start_namespaces = NULL;
  start_n_namespaces = 0;
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  ck_assert_uint_eq(gb_informer_count(inf), 3);
  json_object *j = NULL;
  ck_assert_int_eq(gb_informer_get_json(inf, "team-b", "b-1", &j), GC_ENOTFOUND);
  ck_assert_int_eq(gb_informer_get_json(inf, "team-c", "c-1", &j), 0);
  json_object_put(j);
  create("team-b", "b-2", 1); /* not in the set */
  create("team-c", "c-2", 1);
  delete_obj("team-a", "a-2");
  for (int i = 0; i < 100 && (M.adds < 4 || M.deletes < 1); i++)
    sleep_ms(100);
  ck_assert_int_eq(M.adds, 4);
  ck_assert_int_eq(M.deletes, 1);
  /* Both watches expire (410): each namespace relists on its own. */
  control_void("faults", "{\"error_rate\":1.0,\"error_verbs\":[\"watch\"],\"error_codes\":[500]}");
  for (int i = 0; i < 40; i++) {
    control_void("drop-watches", "{}");
    sleep_ms(50);
  }
  patch_nodes("team-c", "c-1", 5);
  control_void("compact", "{}");
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_request(ctl, GB_KUBE_DELETE, "DELETE", "/_control/faults", NULL,
                                          NULL, 0, &out, &e),
                   0);
  json_object_put(out);
  struct gb_informer_stats s;
  for (int i = 0; i < 150; i++) {
    gb_informer_stats(inf, &s);
    if (s.relists_gone >= 2 && M.updates >= 1)
      break;
    sleep_ms(100);
  }
  ck_assert_msg(s.relists_gone >= 2, "relists after 410: %llu\n%s",
                (unsigned long long)s.relists_gone, log_buf);
  ck_assert_int_eq(M.updates, 1);
  ck_assert_msg(M.anomalies == 0, "%s", M.last_anomaly);
  ck_assert_int_eq(M.deletes, 1); /* no namespace's relist swept the other's objects */
  ck_assert_uint_eq(gb_informer_count(inf), 3);
  ck_assert_uint_ge(s.lists, 4);
  gb_informer_free(inf);
  relist_after = 0;
}
END_TEST

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
    drop_watches();
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
  /* Every list fails for a while (with latency): the client retries each
   * page, then the informer backs off and lists again. */
  control_void("faults", "{\"error_rate\":1.0,\"error_verbs\":[\"list\"],\"latency_ms\":100,"
                         "\"error_codes\":[500,503]}");
  struct gb_informer *inf = start_informer(NULL, 3, 60);
  struct gb_informer_stats s;
  for (int i = 0; i < 900; i++) {
    gb_informer_stats(inf, &s);
    if (s.list_failures >= 2)
      break;
    sleep_ms(50);
  }
  ck_assert_uint_ge(s.list_failures, 2);
  ck_assert_int_eq(gb_informer_has_synced(inf), 0);
  /* Then random 5xx/429 on every verb, with latency: it still syncs, and
   * writes succeed through the client's retries. */
  control_void("faults", "{\"error_rate\":0.3,\"error_verbs\":null,\"latency_ms\":50,"
                         "\"error_codes\":[500,503,429]}");
  ck_assert_int_eq(gb_informer_wait_synced(inf, 30000), 1);
  patch_nodes("team-a", "job-1", 5);
  delete_obj("team-a", "job-2");
  drop_watches();
  control_void("faults", "{\"error_rate\":0,\"latency_ms\":0}");
  char why[256];
  ck_assert_msg(wait_mirror(10000, why, sizeof(why)), "%s\n%s", why, log_buf);
  ck_assert_int_eq(M.anomalies, 0);
  struct gb_kube_stats cs;
  gb_kube_client_stats(cli, &cs);
  ck_assert_uint_ge(cs.verb[GB_KUBE_LIST].retries, 10); /* 2 failed lists x 5 retries */
  ck_assert_uint_ge(cs.verb[GB_KUBE_LIST].errors, 12);
  ck_assert_double_ge(cs.verb[GB_KUBE_LIST].seconds_sum, 1.2); /* latency was felt */
  gb_informer_free(inf);
}
END_TEST

START_TEST(server_side_apply) {
  char path[256];
  ck_assert_int_eq(
      gb_kube_client_path(path, sizeof(path), GROUP, VERSION, RESOURCE, "team-a", "ssa"), 0);
  json_object *o = trainjob("team-a", "ssa", 2), *out = NULL;
  struct gb_kube_error e;
  /* Creates. */
  ck_assert_int_eq(gb_kube_client_apply(cli, path, o, "gangbridge", 1, &out, &e), 0);
  ck_assert_str_ne(gb_kobj_meta(out, "uid"), "");
  json_object_put(out);
  json_object_put(o);
  /* Updates with the same manager. */
  o = trainjob("team-a", "ssa", 3);
  ck_assert_int_eq(gb_kube_client_apply(cli, path, o, "gangbridge", 0, &out, &e), 0);
  json_object *spec, *tr, *nn;
  ck_assert(json_object_object_get_ex(out, "spec", &spec));
  ck_assert(json_object_object_get_ex(spec, "trainer", &tr));
  ck_assert(json_object_object_get_ex(tr, "numNodes", &nn));
  ck_assert_int_eq(json_object_get_int(nn), 3);
  json_object_put(out);
  json_object_put(o);
  /* Another manager changing a field gangbridge owns: 409 without force. */
  o = trainjob("team-a", "ssa", 5);
  ck_assert_int_eq(gb_kube_client_apply(cli, path, o, "someone-else", 0, &out, &e), GC_EIO);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(e.http, 409);
  ck_assert_str_eq(e.reason, "Conflict");
  ck_assert_ptr_nonnull(strstr(e.message, "conflict with \"gangbridge\""));
  ck_assert_ptr_nonnull(strstr(e.message, "numNodes"));
  /* With force it takes the field over. */
  ck_assert_int_eq(gb_kube_client_apply(cli, path, o, "someone-else", 1, &out, &e), 0);
  json_object_put(out);
  json_object_put(o);
  /* Get and 404s. */
  ck_assert_int_eq(gb_kube_client_get(cli, path, &out, &e), 0);
  json_object_put(out);
  char missing[256];
  gb_kube_client_path(missing, sizeof(missing), GROUP, VERSION, RESOURCE, "team-a", "nope");
  ck_assert_int_eq(gb_kube_client_get(cli, missing, &out, &e), GC_ENOTFOUND);
  ck_assert_int_eq(e.http, 404);
  ck_assert_str_eq(e.reason, "NotFound");
  ck_assert_int_eq(gb_kube_client_delete(cli, missing, NULL, NULL, &e), GC_ENOTFOUND);
}
END_TEST

START_TEST(update_with_resource_version_conflicts) {
  /* A Lease as leader election uses it: create, renew with the current
   * resourceVersion, and a stale renewal is a 409 Conflict. */
  char coll[256], path[256];
  gb_kube_client_path(coll, sizeof(coll), "coordination.k8s.io", "v1", "leases", "team-a", NULL);
  gb_kube_client_path(path, sizeof(path), "coordination.k8s.io", "v1", "leases", "team-a",
                      "gangbridge");
  json_object *lease = json_tokener_parse(
      "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":"
      "\"gangbridge\",\"namespace\":\"team-a\"},\"spec\":{\"holderIdentity\":\"a\","
      "\"leaseDurationSeconds\":15}}");
  json_object *created = NULL, *renewed = NULL, *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_create(cli, coll, lease, &created, &e), 0);
  json_object_put(lease);
  /* Renew from what we read. */
  json_object *spec;
  ck_assert(json_object_object_get_ex(created, "spec", &spec));
  json_object_object_add(spec, "holderIdentity", json_object_new_string("b"));
  ck_assert_int_eq(gb_kube_client_update(cli, path, created, &renewed, &e), 0);
  ck_assert_str_ne(gb_kobj_meta(renewed, "resourceVersion"),
                   gb_kobj_meta(created, "resourceVersion"));
  /* The same stale copy again: conflict, not retried. */
  struct gb_kube_stats before, after;
  gb_kube_client_stats(cli, &before);
  ck_assert_int_eq(gb_kube_client_update(cli, path, created, &out, &e), GC_EIO);
  gb_kube_client_stats(cli, &after);
  ck_assert_ptr_null(out);
  ck_assert_int_eq(e.http, 409);
  ck_assert_str_eq(e.reason, "Conflict");
  ck_assert_uint_eq(after.verb[GB_KUBE_UPDATE].requests - before.verb[GB_KUBE_UPDATE].requests,
                    1);
  json_object_put(created);
  json_object_put(renewed);
}
END_TEST

static void *get_many(void *arg) {
  struct gb_kube_client *c = arg;
  long ok = 0;
  for (int i = 0; i < 25; i++) {
    json_object *out = NULL;
    struct gb_kube_error e;
    if (gb_kube_client_get(c, "/api/v1/namespaces/team-a", &out, &e) == 0 &&
        !strcmp(gb_kobj_meta(out, "name"), "team-a"))
      ok++;
    json_object_put(out);
  }
  return (void *)ok;
}

START_TEST(one_client_many_threads) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, get_many, cli), 0);
  long total = 0;
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    total += (long)r;
  }
  ck_assert_int_eq(total, 100);
  struct gb_kube_stats st;
  gb_kube_client_stats(cli, &st);
  ck_assert_uint_ge(st.verb[GB_KUBE_GET].requests, 100);
  ck_assert_uint_le(st.connections, 4 + 4); /* at most one per concurrent handle, plus setup */
}
END_TEST

static void label(const char *ns, const char *name, const char *value) {
  char path[256], text[200];
  gb_kube_client_path(path, sizeof(path), GROUP, VERSION, RESOURCE, ns, name);
  if (value)
    snprintf(text, sizeof(text), "{\"metadata\":{\"labels\":{\"gang\":\"%s\"}}}", value);
  else
    snprintf(text, sizeof(text), "{\"metadata\":{\"labels\":{\"gang\":null}}}");
  json_object *p = json_tokener_parse(text), *out = NULL;
  struct gb_kube_error e;
  ck_assert_msg(gb_kube_client_merge_patch(cli, path, p, &out, &e) == 0, "%s", e.message);
  json_object_put(p);
  json_object_put(out);
}

START_TEST(label_selector_informer) {
  create("team-a", "in-1", 1);
  create("team-a", "in-2", 1);
  create("team-a", "out-1", 1);
  label("team-a", "in-1", "yes");
  label("team-a", "in-2", "yes");
  struct gb_informer_opts o = {0};
  o.group = GROUP;
  o.version = VERSION;
  o.resource = RESOURCE;
  o.label_selector = "gang=yes";
  o.page_limit = 1;
  o.backoff_base_s = 0.05;
  o.on_change = on_change;
  memset(&M, 0, sizeof(M));
  pthread_mutex_init(&M.lock, NULL);
  struct gb_informer *inf = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informer_new(cli, &o, &inf, &d), 0);
  gc_diags_destroy(&d);
  ck_assert_int_eq(gb_informer_start(inf), 0);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  ck_assert_uint_eq(gb_informer_count(inf), 2);
  /* Leaving the selection is a delete, entering it an add. */
  label("team-a", "in-2", NULL);
  label("team-a", "out-1", "yes");
  for (int i = 0; i < 100; i++) {
    if (M.deletes == 1 && M.adds == 3)
      break;
    sleep_ms(100);
  }
  ck_assert_int_eq(M.deletes, 1);
  ck_assert_int_eq(M.adds, 3);
  json_object *got = NULL;
  ck_assert_int_eq(gb_informer_get_json(inf, "team-a", "in-2", &got), GC_ENOTFOUND);
  ck_assert_int_eq(gb_informer_get_json(inf, "team-a", "out-1", &got), 0);
  json_object_put(got);
  ck_assert_int_eq(M.anomalies, 0);
  gb_informer_free(inf);
}
END_TEST

/* What one handler of the shared informer saw: key -> present. */
struct view {
  pthread_mutex_t mu;
  int adds, updates, deletes, anomalies, initial;
  char keys[16][64];
  int n;
};

static int view_find(struct view *v, const char *key) {
  for (int i = 0; i < v->n; i++)
    if (!strcmp(v->keys[i], key))
      return i;
  return -1;
}

static void on_view(void *arg, const struct gb_informer_change *ch) {
  struct view *v = arg;
  pthread_mutex_lock(&v->mu);
  int i = view_find(v, ch->key);
  v->initial += ch->initial;
  if (ch->op == GB_INFORMER_ADD) {
    v->adds++;
    if (i >= 0 || v->n == 16)
      v->anomalies++;
    else
      snprintf(v->keys[v->n++], sizeof(v->keys[0]), "%s", ch->key);
  } else if (ch->op == GB_INFORMER_UPDATE) {
    v->updates++;
    v->anomalies += i < 0;
  } else {
    v->deletes++;
    if (i < 0)
      v->anomalies++;
    else
      memcpy(v->keys[i], v->keys[--v->n], sizeof(v->keys[0]));
  }
  pthread_mutex_unlock(&v->mu);
}

static int view_has(struct view *v, const char *key) {
  pthread_mutex_lock(&v->mu);
  int has = view_find(v, key) >= 0;
  pthread_mutex_unlock(&v->mu);
  return has;
}

/* The stand-in's count of a verb on trainjobs. */
static int trainjob_requests(const char *verb) {
  json_object *st = control("stats", NULL), *res, *tj, *n;
  int count = json_object_object_get_ex(st, "resources", &res) &&
                      json_object_object_get_ex(res, RESOURCE, &tj) &&
                      json_object_object_get_ex(tj, verb, &n)
                  ? json_object_get_int(n)
                  : 0;
  json_object_put(st);
  return count;
}

static int open_watches(void) {
  json_object *st = control("stats", NULL), *v;
  int n = json_object_object_get_ex(st, "watchers", &v) ? json_object_get_int(v) : -1;
  json_object_put(st);
  return n;
}

/* The shared informer factory: two consumers of trainjobs with different
 * selections (one namespace and a label; everything) are served by one
 * list and one watch of the union, each sees its own selection (entering
 * it an add, leaving it a delete), and a 410 relists once for both. */
START_TEST(shared_informer_one_list_for_every_handler) {
  create("team-a", "in-1", 1);
  create("team-a", "out-1", 1);
  create("team-b", "in-b", 1);
  label("team-a", "in-1", "yes");
  label("team-b", "in-b", "yes");
  struct view narrow = {.mu = PTHREAD_MUTEX_INITIALIZER}, wide = {.mu = PTHREAD_MUTEX_INITIALIZER};
  struct gb_informers *f = NULL;
  ck_assert_int_eq(gb_informers_new(cli, NULL, &f), 0);
  struct gb_informer_spec spec = {GROUP, VERSION, RESOURCE, 0};
  const char *const team_a[] = {"team-a"};
  struct gb_informer_handler h1 = {team_a, 1, "gang=yes", NULL, NULL, 0, 0, on_view, &narrow};
  struct gb_informer_handler h2 = {NULL, 0, NULL, NULL, NULL, 0, 0, on_view, &wide};
  struct gb_informer *inf = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_informers_add(f, &spec, &h1, &inf, &d), 0);
  ck_assert_int_eq(gb_informers_add(f, &spec, &h2, NULL, &d), 0);
  gc_diags_destroy(&d);
  int lists0 = trainjob_requests("list");
  ck_assert_int_eq(gb_informers_start(f), 0);
  ck_assert_int_eq(gb_informer_wait_synced(inf, 10000), 1);
  ck_assert_int_eq(trainjob_requests("list") - lists0, 1);
  for (int i = 0; i < 100 && open_watches() != 1; i++)
    sleep_ms(50);
  ck_assert_int_eq(open_watches(), 1);
  ck_assert(view_has(&narrow, "team-a/in-1") && narrow.n == 1);
  ck_assert_int_eq(wide.n, 3);
  ck_assert_int_eq(narrow.initial + wide.initial, 4);
  /* out-1 enters the narrow selection, in-1 leaves it: both stay wide. */
  label("team-a", "out-1", "yes");
  label("team-a", "in-1", NULL);
  for (int i = 0; i < 100 && !(view_has(&narrow, "team-a/out-1") && narrow.n == 1); i++)
    sleep_ms(50);
  ck_assert(view_has(&narrow, "team-a/out-1") && narrow.n == 1);
  ck_assert_int_eq(narrow.adds, 2);
  ck_assert_int_eq(narrow.deletes, 1);
  ck_assert_int_eq(wide.deletes, 0);
  for (int i = 0; i < 100 && wide.updates < 2; i++)
    sleep_ms(50);
  ck_assert_int_eq(wide.updates, 2);
  /* A 410: one relist for every handler, nothing delivered twice. */
  control_void("settings", "{\"expired_watch\":\"event\"}");
  control_void("expire-watches", "{}");
  for (int i = 0; i < 100 && trainjob_requests("list") - lists0 < 2; i++)
    sleep_ms(50);
  sleep_ms(300);
  ck_assert_int_eq(trainjob_requests("list") - lists0, 2);
  delete_obj("team-a", "out-1");
  for (int i = 0; i < 100 && !(narrow.n == 0 && wide.n == 2); i++)
    sleep_ms(50);
  ck_assert_int_eq(narrow.n, 0);
  ck_assert_int_eq(wide.n, 2);
  ck_assert_int_eq(narrow.anomalies + wide.anomalies, 0);
  ck_assert_uint_eq(gb_informer_count(inf), 2);
  gb_informers_stop(f);
  gb_informers_free(f);
}
END_TEST

static int check_namespace_kind(void *arg, json_object *obj) {
  json_object *k, *av;
  (*(int *)arg)++;
  ck_assert(json_object_object_get_ex(obj, "kind", &k));
  ck_assert_str_eq(json_object_get_string(k), "Namespace");
  ck_assert(json_object_object_get_ex(obj, "apiVersion", &av));
  ck_assert_str_eq(json_object_get_string(av), "v1");
  return 0;
}

START_TEST(paging_more_than_limit) {
  int n_ns = 0;
  struct gb_kube_list_opts two = {NULL, NULL, 2};
  ck_assert_int_eq(gb_kube_client_list(cli, "/api/v1/namespaces", &two, check_namespace_kind, &n_ns,
                                       NULL, 0, NULL),
                   0);
  ck_assert_int_ge(n_ns, 6); /* four built-in namespaces and team-a, team-b */
  for (int i = 0; i < 23; i++) {
    char name[32];
    snprintf(name, sizeof(name), "job-%02d", i);
    create(i % 2 ? "team-a" : "team-b", name, 1);
  }
  char path[256];
  gb_kube_client_path(path, sizeof(path), GROUP, VERSION, RESOURCE, NULL, NULL);
  static struct collect c;
  memset(&c, 0, sizeof(c));
  struct gb_kube_list_opts lo = {NULL, NULL, 5};
  char rv[64];
  struct gb_kube_error e;
  struct gb_kube_stats before, after;
  gb_kube_client_stats(cli, &before);
  ck_assert_int_eq(gb_kube_client_list(cli, path, &lo, collect_item, &c, rv, sizeof(rv), &e), 0);
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
  int served = -1;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_discovery_check(cli, GROUP, VERSION, RESOURCE, &served, &e), 0);
  ck_assert_int_eq(served, 1);
  ck_assert_int_eq(gb_kube_discovery_check(cli, GROUP, VERSION, "nonsense", &served, &e), 0);
  ck_assert_int_eq(served, 0);
  ck_assert_int_eq(gb_kube_discovery_check(cli, "", "v1", "namespaces", &served, &e), 0);
  ck_assert_int_eq(served, 1);
  struct gb_kube_discovery *d = gb_kube_discovery_new(cli, 60);
  ck_assert_int_eq(
      gb_kube_discovery_served(d, "scheduling.volcano.sh", "v1beta1", "podgroups", &served, &e), 0);
  ck_assert_int_eq(served, 0);
  /* The Volcano CRD is installed later: the cached answer stays until it is
   * invalidated (as the service does on CRD events), then it is served. */
  install_crd("volcano/scheduling.volcano.sh_podgroups.yaml");
  ck_assert_int_eq(
      gb_kube_discovery_served(d, "scheduling.volcano.sh", "v1beta1", "podgroups", &served, &e), 0);
  ck_assert_int_eq(served, 0);
  gb_kube_discovery_invalidate(d);
  ck_assert_int_eq(
      gb_kube_discovery_served(d, "scheduling.volcano.sh", "v1beta1", "podgroups", &served, &e), 0);
  ck_assert_int_eq(served, 1);
  /* Unknown (server failing) is an error, never "not served". */
  control_void("faults", "{\"error_rate\":1.0,\"error_codes\":[503]}");
  gb_kube_discovery_invalidate(d);
  ck_assert_int_eq(
      gb_kube_discovery_served(d, "scheduling.volcano.sh", "v1beta1", "podgroups", &served, &e),
      GC_EIO);
  ck_assert_int_eq(e.http, 503);
  gb_kube_discovery_free(d);
}
END_TEST

START_TEST(connection_reuse_and_rate_limit) {
  char path[256];
  gb_kube_client_path(path, sizeof(path), "", "v1", "namespaces", NULL, "team-a");
  /* Sequential requests on one client share one connection. */
  struct gb_kube_client *c = new_client(-1);
  for (int i = 0; i < 20; i++) {
    json_object *out = NULL;
    struct gb_kube_error e;
    ck_assert_int_eq(gb_kube_client_get(c, path, &out, &e), 0);
    json_object_put(out);
  }
  struct gb_kube_stats st;
  gb_kube_client_stats(c, &st);
  ck_assert_uint_eq(st.verb[GB_KUBE_GET].requests, 20);
  ck_assert_uint_eq(st.connections, 1);
  ck_assert_uint_eq(st.throttled, 0); /* qps < 0: unlimited */
  uint64_t in_buckets = 0;
  for (int b = 0; b <= GB_KUBE_LAT_BUCKETS; b++)
    in_buckets += st.verb[GB_KUBE_GET].buckets[b];
  ck_assert_uint_eq(in_buckets, 20);
  gb_kube_client_free(c);
  /* qps 2, burst 1: of 4 requests the last 3 wait their turn (unless a
   * request took more than half a second, which refills a token). */
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_client_opts o = {0};
  o.qps = 2;
  o.burst = 1;
  o.max_retries = -1;
  ck_assert_int_eq(gb_kube_client_new(cfg, &o, &c, &d), 0);
  for (int i = 0; i < 4; i++) {
    json_object *out = NULL;
    struct gb_kube_error e;
    ck_assert_int_eq(gb_kube_client_get(c, path, &out, &e), 0);
    json_object_put(out);
  }
  gb_kube_client_stats(c, &st);
  ck_assert_uint_ge(st.throttled, 2);
  ck_assert_double_ge(st.throttled_seconds, 0.5);
  gb_kube_client_free(c);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(token_file_rotation_and_auth_errors) {
  /* Server and client read the same token file: after a rotation the client
   * must send the new token or get 401. */
  char path[256];
  gb_kube_client_path(path, sizeof(path), "", "v1", "namespaces", NULL, "team-a");
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(cli, path, &out, &e), 0);
  json_object_put(out);
  char tmp[320];
  snprintf(tmp, sizeof(tmp), "%s/token.new", workdir);
  write_text(tmp, "token-two-rotated\n");
  ck_assert_int_eq(rename(tmp, token_path), 0);
  ck_assert_int_eq(gb_kube_client_get(cli, path, &out, &e), 0);
  json_object_put(out);
  /* A client with a wrong static token: 401 Unauthorized, not retried. */
  struct gb_kube_config *saved = cfg;
  cfg = NULL;
  load_kubeconfig("    token: wrong\n", "");
  struct gb_kube_client *bad = new_client(3);
  ck_assert_int_eq(gb_kube_client_get(bad, path, &out, &e), GC_EIO);
  ck_assert_int_eq(e.http, 401);
  ck_assert_str_eq(e.reason, "Unauthorized");
  struct gb_kube_stats st;
  gb_kube_client_stats(bad, &st);
  ck_assert_uint_eq(st.verb[GB_KUBE_GET].requests, 1);
  gb_kube_client_free(bad);
  gb_kube_config_free(cfg);
  cfg = saved;
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

/* ---- TLS: CA and client certificate as inline data (curl *_BLOB) ---------- */

static void run_sh(const char *script) {
  pid_t p = fork();
  ck_assert_int_ge(p, 0);
  if (p == 0) {
    execl("/bin/sh", "sh", "-c", script, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  waitpid(p, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "script failed: %s", script);
}

/* Base64 of a file's bytes into buf. */
static void b64_file(const char *path, char *buf, size_t cap) {
  static const char tb[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  unsigned char in[8192];
  size_t n = fread(in, 1, sizeof(in), f), o = 0;
  fclose(f);
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                 (i + 2 < n ? in[i + 2] : 0);
    ck_assert_uint_lt(o + 5, cap);
    buf[o++] = tb[v >> 18 & 63];
    buf[o++] = tb[v >> 12 & 63];
    buf[o++] = i + 1 < n ? tb[v >> 6 & 63] : '=';
    buf[o++] = i + 2 < n ? tb[v & 63] : '=';
  }
  buf[o] = 0;
}

static char ca_b64[8192], cert_b64[8192], key_b64[8192];

static void make_certs(void) {
  char script[2048];
  const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  snprintf(script, sizeof(script),
           "cd %s && exec 2>/dev/null && "
           "openssl req -x509 %s -keyout ca.key -out ca.crt -days 2 -subj /CN=gb-test-ca && "
           "openssl req %s -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && "
           "printf 'subjectAltName=IP:127.0.0.1,IP:::1\\n' > srv.ext && "
           "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out srv.crt "
           "-days 2 -extfile srv.ext && "
           "openssl req %s -keyout cli.key -out cli.csr -subj /CN=gangbridge && "
           "openssl x509 -req -in cli.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out cli.crt "
           "-days 2",
           workdir, ec, ec, ec);
  run_sh(script);
  char p[3][320];
  snprintf(p[0], sizeof(p[0]), "%s/ca.crt", workdir);
  snprintf(p[1], sizeof(p[1]), "%s/cli.crt", workdir);
  snprintf(p[2], sizeof(p[2]), "%s/cli.key", workdir);
  b64_file(p[0], ca_b64, sizeof(ca_b64));
  b64_file(p[1], cert_b64, sizeof(cert_b64));
  b64_file(p[2], key_b64, sizeof(key_b64));
}

static void setup_tls(void) {
  make_workdir();
  make_certs();
  static char a_cert[320], a_key[320], a_ca[320];
  snprintf(a_cert, sizeof(a_cert), "%s/srv.crt", workdir);
  snprintf(a_key, sizeof(a_key), "%s/srv.key", workdir);
  snprintf(a_ca, sizeof(a_ca), "%s/ca.crt", workdir);
  const char *extra[] = {"--tls-cert", a_cert, "--tls-key", a_key, "--client-ca", a_ca, NULL};
  static char user[20000], cluster[10000];
  snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
           cert_b64, key_b64);
  snprintf(cluster, sizeof(cluster), "    certificate-authority-data: %s\n", ca_b64);
  setup_common(extra, user, cluster);
}

START_TEST(tls_inline_ca_and_client_certificate) {
  ck_assert_msg(!strncmp(server_url, "https://", 8), "%s", server_url);
  json_object *out = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_client_get(cli, "/api/v1/namespaces/default", &out, &e);
  ck_assert_msg(rc == 0, "%s", e.message);
  ck_assert_str_eq(gb_kobj_meta(out, "name"), "default");
  json_object_put(out);
  /* Without the CA the server certificate is refused: a transport error. */
  struct gb_kube_config *saved = cfg;
  cfg = NULL;
  char user[20000];
  snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
           cert_b64, key_b64);
  load_kubeconfig(user, "");
  struct gb_kube_client *c2 = new_client(-1);
  ck_assert_int_eq(gb_kube_client_get(c2, "/api/v1/namespaces/default", &out, &e), GC_EIO);
  ck_assert_int_eq(e.http, 0);
  ck_assert_int_ne(e.curl_code, 0);
  gb_kube_client_free(c2);
  gb_kube_config_free(cfg);
  /* insecure-skip-tls-verify accepts it (the client certificate still
   * authenticates). */
  cfg = NULL;
  load_kubeconfig(user, "    insecure-skip-tls-verify: true\n");
  c2 = new_client(-1);
  rc = gb_kube_client_get(c2, "/api/v1/namespaces/default", &out, &e);
  ck_assert_msg(rc == 0, "%s", e.message);
  json_object_put(out);
  /* No client certificate and no token: 401. */
  gb_kube_client_free(c2);
  gb_kube_config_free(cfg);
  cfg = NULL;
  char cl[10000];
  snprintf(cl, sizeof(cl), "    certificate-authority-data: %s\n", ca_b64);
  load_kubeconfig("    {}\n", cl);
  c2 = new_client(-1);
  ck_assert_int_eq(gb_kube_client_get(c2, "/api/v1/namespaces/default", &out, &e), GC_EIO);
  ck_assert_int_eq(e.http, 401);
  gb_kube_client_free(c2);
  gb_kube_config_free(cfg);
  cfg = saved;
}
END_TEST

/* In cluster: the service-account directory is the work directory (token,
 * ca.crt, namespace); the server serves TLS and checks the token file.  (The
 * stand-in listens on IPv4 only; IPv6 bracketing is covered by the unit
 * tests.) */
static void setup_in_cluster(void) {
  make_workdir();
  make_certs();
  static char a_cert[320], a_key[320];
  snprintf(a_cert, sizeof(a_cert), "%s/srv.crt", workdir);
  snprintf(a_key, sizeof(a_key), "%s/srv.key", workdir);
  const char *extra[] = {"--tls-cert", a_cert, "--tls-key", a_key, NULL};
  setup_common(extra, NULL, NULL);
}

START_TEST(in_cluster_tls_token_rotation) {
  ck_assert_msg(!strncmp(server_url, "https://127.0.0.1:", 18), "%s", server_url);
  const char *port = strrchr(server_url, ':') + 1;
  setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", port, 1);
  char nsf[320];
  snprintf(nsf, sizeof(nsf), "%s/namespace", workdir);
  write_text(nsf, "kube-system\n");
  struct gb_kube_config *ic = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_kube_config_in_cluster(workdir, &ic, &d);
  ck_assert_msg(rc == 0, "%s", d.n ? d.msgs[0] : "");
  ck_assert_str_eq(ic->server, server_url);
  ck_assert_str_eq(ic->namespace, "kube-system");
  struct gb_kube_client *c = NULL;
  ck_assert_int_eq(gb_kube_client_new(ic, NULL, &c, &d), 0);
  json_object *out = NULL;
  struct gb_kube_error e;
  rc = gb_kube_client_get(c, "/api/v1/namespaces/kube-system", &out, &e);
  ck_assert_msg(rc == 0, "%s", e.message);
  json_object_put(out);
  /* The kubelet rotates the token: the next request uses the new one. */
  char tmp[320];
  snprintf(tmp, sizeof(tmp), "%s/token.new", workdir);
  write_text(tmp, "rotated-in-cluster\n");
  ck_assert_int_eq(rename(tmp, token_path), 0);
  rc = gb_kube_client_get(c, "/api/v1/namespaces/kube-system", &out, &e);
  ck_assert_msg(rc == 0, "%s", e.message);
  json_object_put(out);
  gb_kube_client_free(c);
  gb_kube_config_free(ic);
  gc_diags_destroy(&d);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kube_live");
  TCase *tc = tcase_create("standin");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, list_watch_create_update_delete);
  tcase_add_test(tc, namespace_scoped_informer_and_bookmarks);
  tcase_add_test(tc, namespace_set_informer);
  tcase_add_test(tc, inband_410_relists_exactly);
  tcase_add_test(tc, http_410_relists_exactly);
  tcase_add_test(tc, dropped_watches_resume_without_relist);
  tcase_add_test(tc, faults_5xx_and_latency_are_retried);
  tcase_add_test(tc, server_side_apply);
  tcase_add_test(tc, paging_more_than_limit);
  tcase_add_test(tc, discovery_served_and_not);
  tcase_add_test(tc, stop_is_prompt_and_clean);
  tcase_add_test(tc, token_file_rotation_and_auth_errors);
  tcase_add_test(tc, connection_reuse_and_rate_limit);
  tcase_add_test(tc, update_with_resource_version_conflicts);
  tcase_add_test(tc, one_client_many_threads);
  tcase_add_test(tc, label_selector_informer);
  tcase_add_test(tc, shared_informer_one_list_for_every_handler);
  suite_add_tcase(s, tc);
  TCase *tls = tcase_create("tls");
  tcase_add_checked_fixture(tls, setup_tls, teardown);
  tcase_set_timeout(tls, 60);
  tcase_add_test(tls, tls_inline_ca_and_client_certificate);
  suite_add_tcase(s, tls);
  TCase *ic = tcase_create("in_cluster");
  tcase_add_checked_fixture(ic, setup_in_cluster, teardown);
  tcase_set_timeout(ic, 60);
  tcase_add_test(ic, in_cluster_tls_token_rotation);
  suite_add_tcase(s, ic);
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
