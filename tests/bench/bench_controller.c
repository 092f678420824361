/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark of the controller against the stand-in API server
 * (tests/apiserver/run, started as a child process on a free port).  It
 * installs the Trainer and Volcano CRDs, creates N TrainJobs (10,000;
 * --short: 1,000) and one runtime, then runs the controller in this process
 * (gb_controller with 4 workers, as `serve` does) and prints:
 *   - time to converge: controller start until every TrainJob's PodGroup
 *     exists on the server,
 *   - client CPU per reconcile: this process's CPU time during convergence
 *     (informers, JSON, reconciles, HTTP) divided by the reconciles, and the
 *     CPU of the decision alone (cache reads, gangcalc, render, compare),
 *     measured through the webhook lookup, which runs exactly that,
 *   - RSS growth per cached TrainJob (TrainJob and PodGroup caches together),
 *   - create -> PodGroup latency (p50, p99, max) for M more TrainJobs created
 *     at 100 per second (M = 1,000; --short: 200), seen by a watch.
 * Goals from issue 5: <= 50 us CPU per reconcile, <= 4 KiB per cached
 * TrainJob, p99 <= 50 ms.  Figures only; nothing is asserted except that
 * the controller converges (bounded waits).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gb_bench.h"
#include "gb_serve_config.h"
#include "gb_serve_config_test.h"
#include "gb_controller.h"
#include "gb_informer.h"
#include "gb_informers.h"
#include "gb_kube_client.h"
#include "gb_log.h"
#include "gb_manifest.h"
#include "gb_metrics.h"
#include "gb_metrics_test.h"
#include "gb_kube_config_test.h"

static void die(const char *msg, struct gc_diags *d) {
  fprintf(stderr, "bench_controller: %s\n", msg);
  for (size_t i = 0; d && i < d->n; i++)
    fprintf(stderr, "  %s\n", d->msgs[i]);
  exit(1);
}

/* ---- the stand-in ------------------------------------------------------------ */

static pid_t server_pid;

static void start_server(char *url, size_t cap) {
  const char *src = getenv("GB_SRC");
  char run[4096];
  snprintf(run, sizeof(run), "%s/tests/apiserver/run", src && *src ? src : ".");
  int fds[2];
  if (pipe(fds))
    die("pipe failed", NULL);
  server_pid = fork();
  if (server_pid < 0)
    die("fork failed", NULL);
  if (server_pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl("/usr/bin/python3", "python3", run, "--port", "0", "--history", "100000", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  if (!f || !fgets(url, (int)cap, f))
    die("the stand-in API server did not start (is GB_SRC set?)", NULL);
  url[strcspn(url, "\r\n")] = '\0';
  /* Keep the pipe open (the server may write more) but never read it again. */
}

static void stop_server(void) {
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
}

/* ---- objects --------------------------------------------------------------------- */

static void apply_file(struct gb_kube_client *c, const char *path) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(NULL);
  if (gb_manifest_load_path(ds, path, &d) || ds->n != 1)
    die("cannot read a CRD", &d);
  json_object *obj = gb_kube_client_value_to_json(ds->docs[0].root);
  const char *name = gc_value_as_str(gc_value_path(ds->docs[0].root, "metadata.name"));
  char p[1024];
  struct gb_kube_error e;
  gb_kube_client_path(p, sizeof(p), "apiextensions.k8s.io", "v1", "customresourcedefinitions", NULL,
                      name);
  if (gb_kube_client_apply(c, p, obj, "bench", 1, NULL, &e))
    die(e.message, NULL);
  json_object_put(obj);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}

static void create_json(struct gb_kube_client *c, const char *collection, const char *text) {
  json_object *obj = json_tokener_parse(text);
  struct gb_kube_error e;
  if (!obj)
    die("bad JSON in the benchmark", NULL);
  for (int attempt = 0;; attempt++) {
    gb_kube_error_clear(&e);
    int rc = gb_kube_client_create(c, collection, obj, NULL, &e);
    if (!rc || e.http == 409)
      break;
    if (attempt == 5)
      die(e.message, NULL);
  }
  json_object_put(obj);
}

static void create_trainjob(struct gb_kube_client *c, const char *name) {
  char text[1024];
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\","
           "\"labels\":{\"team\":\"research\"}},"
           "\"spec\":{\"runtimeRef\":{\"name\":\"torch\"},\"trainer\":{\"numNodes\":4,"
           "\"resourcesPerNode\":{\"requests\":{\"cpu\":\"8\",\"memory\":\"32Gi\"},"
           "\"limits\":{\"nvidia.com/gpu\":\"2\"}}}}}",
           name);
  create_json(c, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs", text);
}

/* ---- PodGroup watch (create -> PodGroup latency) ------------------------------------ */

#define LAT_MAX 100000

struct lat {
  pthread_mutex_t mu;
  double created[LAT_MAX]; /* by index; 0 until created */
  double seen[LAT_MAX];
  int base; /* first index measured */
};

static struct lat L = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0};

static void on_pg(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  int i = -1;
  if (ch->op != GB_INFORMER_ADD || sscanf(ch->name, "lat-%d", &i) != 1 || i < 0 || i >= LAT_MAX)
    return;
  double now = gb_bench_mono_s();
  pthread_mutex_lock(&L.mu);
  if (L.seen[i] == 0)
    L.seen[i] = now;
  pthread_mutex_unlock(&L.mu);
}

static int count_item(void *arg, json_object *obj) {
  (void)obj;
  (*(size_t *)arg)++;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int n = 10000, m = 1000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short")) {
      n = 1000;
      m = 200;
    } else {
      fprintf(stderr, "usage: bench_controller [--short]\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  gb_log_set_level(GB_LOG_ERROR);
  char url[512];
  start_server(url, sizeof(url));
  atexit(stop_server);

  struct gc_diags d;
  gc_diags_init(&d);
  char kc[1024];
  snprintf(kc, sizeof(kc),
           "apiVersion: v1\nkind: Config\nclusters: [{name: s, cluster: {server: \"%s\"}}]\n"
           "users: [{name: u, user: {token: bench}}]\n"
           "contexts: [{name: c, context: {cluster: s, user: u}}]\ncurrent-context: c\n",
           url);
  struct gb_kube_config *kcfg = NULL;
  if (gb_kube_config_load_buffer("bench-kubeconfig", kc, strlen(kc), NULL, &kcfg, &d))
    die("kubeconfig", &d);
  struct gb_kube_client_opts ko = {.qps = -1};
  struct gb_kube_client *setup = NULL, *client = NULL;
  if (gb_kube_client_new(kcfg, &ko, &setup, &d))
    die("client", &d);
  ko.qps = 1000;
  ko.burst = 2000;
  if (gb_kube_client_new(kcfg, &ko, &client, &d))
    die("client", &d);

  const char *shared = getenv("GB_SHARED");
  char crds[4096], path[4200];
  if (shared && *shared)
    snprintf(crds, sizeof(crds), "%s/crds", shared);
  else
    snprintf(crds, sizeof(crds), "%s/tests/shared/crds",
             getenv("GB_SRC") ? getenv("GB_SRC") : ".");
  static const char *const files[] = {
      "trainer/trainer.kubeflow.org_trainjobs.yaml",
      "trainer/trainer.kubeflow.org_trainingruntimes.yaml",
      "trainer/trainer.kubeflow.org_clustertrainingruntimes.yaml",
      "volcano/scheduling.volcano.sh_podgroups.yaml", "volcano/scheduling.volcano.sh_queues.yaml"};
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", crds, files[i]);
    apply_file(setup, path);
  }
  create_json(setup, "/apis/scheduling.volcano.sh/v1beta1/queues",
              "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"Queue\","
              "\"metadata\":{\"name\":\"default\"},\"spec\":{\"weight\":1}}");
  create_json(setup, "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
              "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":"
              "\"ClusterTrainingRuntime\",\"metadata\":{\"name\":\"torch\"},\"spec\":{"
              "\"mlPolicy\":{\"numNodes\":1,\"torch\":{}},\"template\":{\"spec\":{"
              "\"replicatedJobs\":[{\"name\":\"node\",\"template\":{\"metadata\":{\"labels\":{"
              "\"trainer.kubeflow.org/trainjob-ancestor-step\":\"trainer\"}},\"spec\":{"
              "\"template\":{\"spec\":{\"containers\":[{\"name\":\"node\",\"image\":\"p\"}]"
              "}}}}}]}}}}");
  double t0 = gb_bench_mono_s();
  char name[64];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof(name), "job-%06d", i);
    create_trainjob(setup, name);
  }
  printf("setup: %d TrainJobs created in %.1f s\n", n, gb_bench_mono_s() - t0);

  /* The controller, as serve runs it. */
  struct gb_serve_config cfg;
  if (gb_serve_config_init(&cfg, &d) ||
      gb_serve_config_set(&cfg, "events.minInterval", "60s", &d) ||
      gb_serve_config_validate(&cfg, &d))
    die("config", &d);
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_service_metrics sm;
  if (gb_service_metrics_register(reg, "bench", &sm, &d))
    die("metrics", &d);
  struct gb_informers *informers = NULL;
  struct gb_informers_opts fo = {(long)cfg.kube.watch_timeout_s, &sm};
  if (gb_informers_new(client, &fo, &informers))
    die("informers", NULL);
  struct gb_controller_opts co = {.cfg = &cfg.controller,
                                  .kube = &cfg.kube,
                                  .events = &cfg.events,
                                  .webhook = &cfg.webhook,
                                  .client = client,
                                  .informers = informers,
                                  .metrics = &sm};
  struct gb_controller *ctrl = NULL;
  long rss0 = gb_bench_rss_kib();
  double cpu0 = gb_bench_cpu_s();
  t0 = gb_bench_mono_s();
  if (gb_controller_new(&co, &ctrl, &d) || gb_informers_start(informers) ||
      gb_controller_start(ctrl))
    die("controller", &d);
  /* CPU is measured until every TrainJob has been reconciled successfully
   * once (nothing else runs in this process meanwhile); convergence ends
   * when every PodGroup exists on the server (listing costs are not counted). */
  const char *succ[] = {GB_M_RESULT_SUCCESS};
  double ok = 0, deadline = t0 + 600;
  while (gb_bench_mono_s() < deadline &&
         !(gb_controller_synced(ctrl) && !gb_metric_value(sm.reconciles, succ, &ok) && ok >= n)) {
    struct timespec ts = {0, 2 * 1000000L};
    nanosleep(&ts, NULL);
  }
  double cpu = gb_bench_cpu_s() - cpu0;
  long rss1 = gb_bench_rss_kib();
  gb_metric_value(sm.reconciles, succ, &ok);
  char rv[128];
  struct gb_kube_error e;
  struct gb_kube_list_opts lo = {NULL, NULL, 500};
  size_t count = 0;
  while (gb_bench_mono_s() < deadline) {
    count = 0;
    if (gb_kube_client_list(setup,
                            "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", &lo,
                            count_item, &count, rv, sizeof(rv), &e))
      die(e.message, NULL);
    if (count >= (size_t)n)
      break;
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  double converge = gb_bench_mono_s() - t0;
  if (count < (size_t)n)
    die("the controller did not converge within 600 s", NULL);
  double all = 0;
  const char *res[] = {GB_M_RESULT_SKIPPED};
  double skipped = 0;
  gb_metric_value(sm.reconciles, res, &skipped);
  all = ok + skipped;
  printf("converge: %d TrainJobs -> %zu PodGroups in %.2f s (%.0f reconciles/s)\n", n, count,
         converge, ok / converge);
  printf("client CPU per reconcile: %.1f us (process CPU %.2f s over %.0f reconciles; "
         "goal <= 50 us; includes informers, HTTP and JSON)\n",
         cpu / all * 1e6, cpu, all);
  printf("RSS per cached TrainJob (with its PodGroup): %.2f KiB (goal <= 4 KiB)\n",
         (double)(rss1 - rss0) / n);

  /* The decision alone (cache reads + gangcalc + render + compare), without
   * HTTP: the webhook lookup runs exactly gb_reconcile_gather + _plan. */
  double c0 = gb_bench_cpu_s();
  int bound = 0;
  for (int i = 0; i < n; i++) {
    struct gb_webhook_decision dec;
    char why[256];
    memset(&dec, 0, sizeof(dec));
    snprintf(name, sizeof(name), "job-%06d", i);
    if (!gb_controller_webhook_lookup(ctrl, "default", name, "node", &dec, why, sizeof(why)))
      bound += dec.bind;
  }
  printf("client CPU per reconcile decision (cache reads, gangcalc, render, compare; no HTTP): "
         "%.1f us (%d of %d bound)\n",
         (gb_bench_cpu_s() - c0) / n * 1e6, bound, n);

  /* create -> PodGroup at 100 TrainJobs per second. */
  struct gb_informer_opts io = {.group = "scheduling.volcano.sh", .version = "v1beta1",
                                .resource = "podgroups", .on_change = on_pg};
  struct gb_informer *w = NULL;
  if (gb_informer_new(setup, &io, &w, &d) || gb_informer_start(w) ||
      !gb_informer_wait_synced(w, 60000))
    die("watch", &d);
  double start = gb_bench_mono_s();
  for (int i = 0; i < m; i++) {
    double due = start + i / 100.0;
    double now = gb_bench_mono_s();
    if (due > now) {
      struct timespec ts = {(time_t)(due - now), (long)(fmod(due - now, 1.0) * 1e9)};
      nanosleep(&ts, NULL);
    }
    snprintf(name, sizeof(name), "lat-%d", i);
    double tc = gb_bench_mono_s();
    create_trainjob(setup, name);
    pthread_mutex_lock(&L.mu);
    L.created[i] = tc;
    pthread_mutex_unlock(&L.mu);
  }
  double end = gb_bench_mono_s() + 60;
  int seen = 0;
  while (gb_bench_mono_s() < end) {
    seen = 0;
    pthread_mutex_lock(&L.mu);
    for (int i = 0; i < m; i++)
      seen += L.seen[i] > 0;
    pthread_mutex_unlock(&L.mu);
    if (seen == m)
      break;
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  gb_informer_free(w);
  if (seen != m)
    die("not every PodGroup of the latency run appeared within 60 s", NULL);
  double *lat = calloc((size_t)m, sizeof(*lat));
  for (int i = 0; i < m; i++)
    lat[i] = (L.seen[i] - L.created[i]) * 1000;
  qsort(lat, (size_t)m, sizeof(*lat), cmp_double);
  printf("create -> PodGroup at 100/s (%d TrainJobs): p50 %.1f ms, p99 %.1f ms, max %.1f ms "
         "(goal p99 <= 50 ms)\n",
         m, lat[m / 2], lat[(int)(m * 0.99)], lat[m - 1]);
  free(lat);

  gb_controller_stop(ctrl);
  gb_informers_stop(informers);
  gb_controller_free(ctrl);
  gb_informers_free(informers);
  gb_metrics_free(reg);
  gb_serve_config_destroy(&cfg);
  gb_kube_client_free(client);
  gb_kube_client_free(setup);
  gb_kube_config_free(kcfg);
  gc_diags_destroy(&d);
  stop_server();
  return 0;
}

