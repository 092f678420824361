/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_placement_e2e: the placement controller end to end against the
 * stand-in API server (tests/apiserver/run), client QPS unlimited (or, with
 * --qps 50, the shipped kube.qps 50 / kube.burst 100: issue 22 row 6) and
 * the release client at the shipped placement.releaseQPS/releaseBurst
 * (the defaults of gb_placement_options' table; --release-qps and
 * --release-burst override them): a 6,144-node / 9,625-HyperNode cluster
 * (Volcano's reported shape, fed to the model), one gang of 1,024 one-GPU
 * pods created gated on the stand-in and fed to the pod informer's cache
 * as its watch would, then the time from the last pod's arrival to every
 * pod released (the decision, then one PATCH per pod built from the cached
 * pod), the decision alone (and its record on the gang's PodGroup), and
 * the CPU this process spent per released pod.  Goals
 * (issue 11): all released <= 1 s, the decision <= 5 ms.  Printed, not
 * asserted.  --short: 768 nodes, 128 pods (for CI).  Creating the pods and
 * feeding the cluster are not timed.
 */
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gb_bench_cluster.h"
#include "gb_kube_client.h"
#include "gb_kube_config.h"
#include "gb_kube_config_test.h"
#include "gb_manifest.h"
#include "gb_informer_test.h"
#include "gb_informers.h"
#include "gb_informers_test.h"
#include "gb_kube_watch.h"
#include "gb_model.h"
#include "gb_model_test.h"
#include "gb_placement_options.h"
#include "gb_placer.h"
#include "gb_placer_test.h"
#include "gb_plan.h"

static pid_t server;
static double client_qps = -1; /* --qps: the client's QPS (burst 100, as shipped); -1 unlimited */
static double release_qps;     /* --release-qps; 0: placement.releaseQPS's default */
static int release_burst;      /* --release-burst; 0: placement.releaseBurst's default */

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_placement_e2e: %s: %s\n", what, why);
  if (server > 0)
    kill(server, SIGTERM);
  exit(1);
}

static double clock_of(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct gb_kube_client *start_server(struct gb_kube_config **cfg) {
  const char *src = getenv("GB_SRC");
  char run[1024];
  snprintf(run, sizeof(run), "%s/tests/apiserver/run", src ? src : ".");
  int fds[2];
  if (pipe(fds))
    die("pipe", "failed");
  server = fork();
  if (server == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    execl("/usr/bin/python3", "python3", run, "--port", "0", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  char url[256] = "";
  if (!f || !fgets(url, sizeof(url), f) || strncmp(url, "http://", 7))
    die("stand-in", "printed no URL (set GB_SRC to the source tree)");
  fclose(f);
  url[strcspn(url, "\r\n")] = '\0';
  char kc[512];
  snprintf(kc, sizeof(kc),
           "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
           "clusters: [{name: c, cluster: {server: '%s'}}]\n",
           url);
  struct gc_diags d;
  gc_diags_init(&d);
  /* Unlimited, or the shipped client settings (kube.qps 50, kube.burst 100). */
  struct gb_kube_client_opts o = {.qps = client_qps, .burst = client_qps > 0 ? 100 : 0,
                                  .max_handles = 64};
  struct gb_kube_client *cli = NULL;
  if (gb_kube_config_load_buffer("t", kc, strlen(kc), NULL, cfg, &d) ||
      gb_kube_client_new(*cfg, &o, &cli, &d))
    die("client", d.n ? d.msgs[0] : "failed");
  gc_diags_destroy(&d);
  return cli;
}

/* The default of key `path` of the placement layer's table, as a number:
 * the bench runs what serve ships. */
static double placement_default(const char *path) {
  const struct gb_opt_table *t = &gb_placement_options_table;
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->keys[i].path, path))
      return strtod(t->keys[i].def, NULL);
  die("options", path);
  return 0;
}

/* The release client, as serve makes it: its own bucket, a connection per
 * PATCH in flight. */
static struct gb_kube_client *release_client(struct gb_kube_config *cfg, int inflight) {
  if (!release_qps)
    release_qps = placement_default("placement.releaseQPS");
  if (!release_burst)
    release_burst = (int)placement_default("placement.releaseBurst");
  struct gb_kube_client_opts o = {
      .qps = release_qps, .burst = release_burst, .max_handles = (size_t)inflight};
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_client *cli = NULL;
  if (gb_kube_client_new(cfg, &o, &cli, &d))
    die("release client", d.n ? d.msgs[0] : "failed");
  gc_diags_destroy(&d);
  return cli;
}

static void feed_value(struct gb_model *m, const struct gc_value *v) {
  json_object *j = gb_kube_client_value_to_json(v);
  const char *kind = gc_value_as_str(gc_map_get(v, "kind"));
  struct gc_diags d;
  gc_diags_init(&d);
  if (!j || gb_model_feed(m, kind, 0, json_object_to_json_string(j), &d))
    die("feed", d.n ? d.msgs[0] : "out of memory");
  gc_diags_destroy(&d);
  json_object_put(j);
}

/* Volcano's shape (bench_plan's): nodes over 4,800 leaves, 3,200, 1,600 and
 * 25 above (9,625 HyperNodes for 6,144 nodes); scaled down for --short. */
static void feed_cluster(struct gb_model *m, size_t nodes, int short_run) {
  struct gc_arena *a = gc_arena_new(0);
  struct gb_bench_docs d = {0};
  for (size_t i = 0; i < nodes; i++)
    gb_bench_push(&d, gb_bench_node_doc(a, gc_arena_printf(a, "node-%zu", i)));
  size_t l1 = short_run ? 600 : 4800, l2 = short_run ? 400 : 3200, l3 = short_run ? 200 : 1600;
  gb_bench_group_counts(a, &d, nodes, l1, "leaf-", "node-", "Node", 1);
  gb_bench_group_counts(a, &d, l1, l2, "agg-", "leaf-", "HyperNode", 2);
  gb_bench_group_counts(a, &d, l2, l3, "spine-", "agg-", "HyperNode", 3);
  gb_bench_group_counts(a, &d, l3, 25, "top-", "spine-", "HyperNode", 4);
  for (size_t i = 0; i < d.n; i++)
    feed_value(m, d.v[i]);
  free(d.v);
  gc_arena_free(a);
}

static const char GANG[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainingRuntime\n"
    "metadata: {name: torch, namespace: bench}\n"
    "spec:\n"
    "  mlPolicy: {numNodes: 1, torch: {}}\n"
    "  podGroupPolicy: {volcano: {networkTopology: {mode: hard, highestTierAllowed: 4}}}\n"
    "  template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: "
    "{containers: [{name: node, image: p}]}}}}}]}}\n"
    "---\n"
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainJob\n"
    "metadata: {name: big, namespace: bench}\n"
    "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}, trainer: {numNodes: %d, "
    "resourcesPerNode: {requests: {cpu: 8, memory: 64Gi, nvidia.com/gpu: 1}}}}\n";

static int pods_n;
static char tj_uid[128]; /* the TrainJob made on the stand-in (its PodGroup's owner) */

/* Installs a CRD of tests/shared/crds/<rel>. */
static void install_crd(struct gb_kube_client *cli, const char *rel) {
  const char *src = getenv("GB_SRC");
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/shared/crds/%s", src ? src : ".", rel);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  if (gb_manifest_load_path(ds, path, &d) || !ds->n)
    die("CRD", d.n ? d.msgs[0] : path);
  json_object *o = gb_kube_client_value_to_json(ds->docs[0].root);
  struct gb_kube_error e;
  if (gb_kube_client_create(cli, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", o, NULL,
                            &e))
    die("CRD", e.message);
  json_object_put(o);
  gc_diags_destroy(&d);
  gb_docset_free(ds);
}

static void create_json(struct gb_kube_client *cli, const char *coll, const char *json, char *uid,
                        size_t cap) {
  json_object *o = json_tokener_parse(json), *out = NULL, *md = NULL, *u = NULL;
  struct gb_kube_error e;
  if (!o || gb_kube_client_create(cli, coll, o, &out, &e))
    die(coll, o ? e.message : "bad JSON");
  if (uid && json_object_object_get_ex(out, "metadata", &md) &&
      json_object_object_get_ex(md, "uid", &u))
    snprintf(uid, cap, "%s", json_object_get_string(u));
  json_object_put(o);
  json_object_put(out);
}

/* The TrainJob and gangbridge's PodGroup of it, where the decision is
 * recorded before the release (as serve's controller makes them). */
static void create_podgroup(struct gb_kube_client *cli) {
  install_crd(cli, "trainer/trainer.kubeflow.org_trainjobs.yaml");
  install_crd(cli, "volcano/scheduling.volcano.sh_podgroups.yaml");
  create_json(cli, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/bench/trainjobs",
              "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
              "\"metadata\":{\"name\":\"big\",\"namespace\":\"bench\"},\"spec\":"
              "{\"runtimeRef\":{\"name\":\"torch\"}}}",
              tj_uid, sizeof(tj_uid));
  char b[1024];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
           "\"metadata\":{\"name\":\"big\",\"namespace\":\"bench\",\"labels\":"
           "{\"app.kubernetes.io/managed-by\":\"gangbridge\"},\"ownerReferences\":[{"
           "\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
           "\"name\":\"big\",\"uid\":\"%s\",\"controller\":true}]},"
           "\"spec\":{\"minMember\":1}}",
           tj_uid);
  create_json(cli, "/apis/scheduling.volcano.sh/v1beta1/namespaces/bench/podgroups", b, NULL, 0);
}

static int gang_fn(void *ctx, const char *ns, const char *name, struct gc_gang **out, char *reason,
                   size_t reason_size) {
  (void)ctx, (void)ns, (void)name;
  char yaml[2048];
  snprintf(yaml, sizeof(yaml), GANG, pods_n);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_catalog *cat = gc_catalog_new();
  int rc = gb_manifest_load_buffer(ds, "gang.yaml", yaml, strlen(yaml), &d);
  rc = rc ? rc : gc_catalog_add(cat, ds->docs[0].root, "gang.yaml", &d);
  struct gc_options o = {0};
  rc = rc ? rc : gc_gang_compute(ds->docs[1].root, cat, &o, out, &d);
  if (!rc && *out)
    (*out)->uid = gc_arena_strdup((*out)->arena, tj_uid);
  if (rc)
    snprintf(reason, reason_size, "%s", d.n ? d.msgs[0] : "gang");
  gc_catalog_free(cat);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  return rc;
}

static void create_pods(struct gb_kube_client *cli, struct gb_informer *pods, int n) {
  for (int i = 0; i < n; i++) {
    char b[1024];
    snprintf(
        b, sizeof(b),
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"big-node-0-%d\","
        "\"namespace\":\"bench\",\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"big\","
        "\"jobset.sigs.k8s.io/replicatedjob-name\":\"node\"}},\"spec\":{\"schedulingGates\":"
        "[{\"name\":\"gangbridge.io/placement\"}],\"containers\":[{\"name\":\"node\",\"image\":"
        "\"p\",\"resources\":{\"requests\":{\"cpu\":\"8\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":"
        "\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
        i);
    json_object *o = json_tokener_parse(b), *stored = NULL;
    struct gb_kube_error e;
    if (gb_kube_client_create(cli, "/api/v1/namespaces/bench/pods", o, &stored, &e))
      die("create pod", e.message);
    /* As the pod informer's watch would: cached, then the model's handler. */
    if (gb_informer_feed(pods, GB_WATCH_ADDED, stored))
      die("feed pod", "informer");
    json_object_put(o);
    json_object_put(stored);
  }
}

static int still_gated(struct gb_kube_client *cli, int n) {
  int gated = 0;
  for (int i = 0; i < n; i++) {
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/namespaces/bench/pods/big-node-0-%d", i);
    json_object *pod = NULL, *spec = NULL, *gates = NULL;
    struct gb_kube_error e;
    if (gb_kube_client_get(cli, path, &pod, &e))
      die("get pod", e.message);
    json_object_object_get_ex(pod, "spec", &spec);
    gated += json_object_object_get_ex(spec, "schedulingGates", &gates) &&
             json_object_array_length(gates) > 0;
    json_object_put(pod);
  }
  return gated;
}

int main(int argc, char **argv) {
  int short_run = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short")) {
      short_run = 1;
    } else if (!strcmp(argv[i], "--qps") && i + 1 < argc) {
      client_qps = strtod(argv[++i], NULL);
    } else if (!strcmp(argv[i], "--release-qps") && i + 1 < argc) {
      release_qps = strtod(argv[++i], NULL);
    } else if (!strcmp(argv[i], "--release-burst") && i + 1 < argc) {
      release_burst = (int)strtol(argv[++i], NULL, 10);
    } else {
      fprintf(stderr, "usage: bench_placement_e2e [--short] [--qps Q] [--release-qps Q] "
                      "[--release-burst B]\n");
      return 2;
    }
  }
  size_t nodes = short_run ? 768 : 6144;
  pods_n = short_run ? 128 : 1024;
  struct gb_kube_config *cfg = NULL;
  struct gb_kube_client *cli = start_server(&cfg);
  json_object *ns = json_tokener_parse(
      "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"bench\"}}");
  struct gb_kube_error e;
  if (gb_kube_client_create(cli, "/api/v1/namespaces", ns, NULL, &e))
    die("namespace", e.message);
  json_object_put(ns);
  create_podgroup(cli);

  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_plan *plan = NULL;
  struct gb_model *model = NULL;
  struct gb_placer *placer = NULL;
  struct gb_informers *infs = NULL;
  if (gb_informers_new(cli, NULL, &infs))
    die("informers", "out of memory");
  struct gb_model_opts mo = {.informers = infs};
  if (gb_plan_new(NULL, &plan) || (mo.plan = plan, gb_model_new(&mo, &model, &d)))
    die("model", d.n ? d.msgs[0] : "");
  struct gb_informer *pod_inf = gb_informers_lookup(infs, "", "v1", "pods");
  if (!pod_inf)
    die("informers", "no pod informer");
  const int inflight = (int)placement_default("placement.maxInflightPatches");
  struct gb_kube_client *rcli = release_client(cfg, inflight);
  struct gb_placer_opts po = {.model = model,
                              .plan = plan,
                              .client = cli,
                              .release_client = rcli,
                              .gang = gang_fn,
                              .max_inflight = inflight};
  if (gb_placer_new(&po, &placer, &d))
    die("placer", d.n ? d.msgs[0] : "");
  feed_cluster(model, nodes, short_run);
  gb_model_feed_done(model);
  create_pods(cli, pod_inf, pods_n);
  struct gb_model_stats st;
  gb_model_stats(model, &st);

  /* The last pod arrived (fed above, as its watch event would be): go. */
  double w0 = clock_of(CLOCK_MONOTONIC), c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
  gb_placer_on_gang(placer, "bench", "big");
  int rc = gb_placer_run_once(placer);
  double wall = clock_of(CLOCK_MONOTONIC) - w0, cpu = clock_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (rc)
    die("pass", gc_diag_strerror(rc));

  struct gb_buf b;
  gb_buf_init(&b, 1 << 20);
  gb_placer_status_json(placer, &b);
  json_object *doc = json_tokener_parse(gb_buf_ptr(&b)), *last = NULL, *v = NULL;
  json_object_object_get_ex(doc, "lastPass", &last);
  double decide_ms = json_object_object_get_ex(last, "decideMs", &v) ? json_object_get_double(v)
                                                                     : -1;
  long long released = json_object_object_get_ex(last, "podsReleased", &v)
                           ? json_object_get_int64(v)
                           : 0;
  int gated = still_gated(cli, pods_n);
  printf("bench_placement_e2e%s: %zu nodes, %zu HyperNodes, %zu domains; gang of %d pods; "
         "client QPS %s\n",
         short_run ? " --short" : "", st.nodes, st.hypernodes, st.domains, pods_n,
         client_qps > 0 ? "as given, burst 100" : "unlimited");
  if (client_qps > 0)
    printf("  client qps %.0f\n", client_qps);
  printf("  release client: qps %.0f, burst %d, %d PATCHes in flight\n", release_qps,
         release_burst, inflight);
  printf("  last pod -> all released: %.3f s (goal <= 1 s); decision %.3f ms (goal <= 5 ms)\n",
         wall, decide_ms);
  printf("  released %lld pod(s), %d still gated; CPU %.3f s = %.1f us per released pod "
         "(this process; the stand-in's own CPU not counted)\n",
         released, gated, cpu, released ? cpu * 1e6 / (double)released : 0.0);
  json_object_put(doc);
  gb_buf_free(&b);
  gc_diags_destroy(&d);
  gb_placer_free(placer);
  gb_model_free(model);
  gb_informers_free(infs);
  gb_plan_free(plan);
  gb_kube_client_free(rcli);
  gb_kube_client_free(cli);
  gb_kube_config_free(cfg);
  kill(server, SIGTERM);
  waitpid(server, NULL, 0);
  return gated ? 1 : 0;
}
