/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_model: the live cluster model's memory and speed through the feed
 * (no server): the initial list and build at 10k nodes / 100k pods and
 * 100k nodes / 1M pods, and the cost of one pod event (a bind, a delete)
 * in steady state.  Each case runs in a child process of its own so that
 * its RSS is its own.  Two paths are measured: "record" feeds pods as
 * compact records (gb_model_feed_pod: no JSON decode, what the model costs
 * by itself) and "json" feeds the Pod JSON text a watch delivers
 * (gb_model_feed: the keep-aware decode, gb_keep_decode, and the
 * pod-request rule), which is the informer path minus the HTTP transfer
 * and the informer's cache.  A bind event through the watch parser (keep
 * mode, as the informer's watch decodes it, and the informer's trim) is
 * printed beside its baseline, the same parser on json-c's whole tree then
 * the trim (the watch's way before issue 22), on the same texts: the
 * benchmark's own small Pod, and a real-looking one (managedFields, env,
 * volumes, statuses) as the API server sends it.
 * Nodes are always fed as JSON.  A last case builds with HyperNodes (racks
 * of 32 nodes, blocks of 32 racks) and times the rebuild one HyperNode
 * change costs.  Goals (issue 11): <= 1.5 GiB RSS and
 * <= 10 us per pod event.  The Pod informer's own cache (the trimmed text
 * of every pod) is not in these figures: its size per pod is printed once,
 * from the same trim.  --short: 1,000 nodes / 10,000 pods, one pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gb_bench.h"
#include "gb_kobj.h"
#include "gb_kube_watch_test.h"
#include "gb_model.h"
#include "gb_model_test.h"
#include "gb_model_int.h" /* gb_model_keep, for the informer-cache estimate */

/* The plan is not linked in a benchmark that has none (weak: the real one
 * wins once gb_plan.c exists). */
__attribute__((weak)) int gb_plan_pod_bound(struct gb_plan *p, struct tp_snapshot *s,
                                            const char *key, uint32_t slot, size_t n_req,
                                            const char *const *res, const int64_t *val) {
  (void)p, (void)s, (void)key, (void)slot, (void)n_req, (void)res, (void)val;
  return 0;
}
__attribute__((weak)) int gb_plan_reapply(struct gb_plan *p, struct tp_snapshot *s) {
  (void)p, (void)s;
  return 0;
}

static const char *const LEVELS[] = {"example.com/block", "example.com/rack"};
static const char *const RES[] = {"cpu", "memory", "nvidia.com/gpu"};
static const int64_t VAL[] = {4000, 32LL << 30, 1};

static int feed_node(struct gb_model *m, size_t i) {
  char json[512];
  snprintf(json, sizeof(json),
           "{\"metadata\":{\"name\":\"node-%zu\",\"labels\":{\"example.com/block\":\"b%zu\","
           "\"example.com/rack\":\"r%zu\",\"kubernetes.io/hostname\":\"node-%zu\"}},"
           "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\","
           "\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"},\"conditions\":[{\"type\":\"Ready\","
           "\"status\":\"True\"}]}}",
           i, i / 1024, i / 32, i);
  return gb_model_feed(m, "Node", 0, json, NULL);
}

/* Pod i of gang i/8, on node `node` (or unbound when node is NULL); with
 * json and m NULL, only formats the text into out. */
static int feed_pod_text(struct gb_model *m, int json, int op, size_t i, const char *node,
                         const char *prefix, char *text, size_t cap) {
  char name[64], js[64];
  snprintf(name, sizeof(name), "%s-%zu", prefix, i);
  snprintf(js, sizeof(js), "%s-js-%zu", prefix, i / 8);
  if (!json) {
    struct gb_pod_view v = {.ns = "team",
                            .name = name,
                            .uid = name,
                            .resource_version = "1",
                            .node = node ? node : "",
                            .jobset = js,
                            .rjob = "workers",
                            .phase = node ? 1 : 0,
                            .created_ms = (int64_t)i,
                            .n_req = 3,
                            .res = RES,
                            .val = VAL};
    return gb_model_feed_pod(m, op, &v);
  }
  snprintf(text, cap,
           "{\"metadata\":{\"namespace\":\"team\",\"name\":\"%s\",\"uid\":\"uid-%s\","
           "\"resourceVersion\":\"%zu\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
           "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"%s\","
           "\"jobset.sigs.k8s.io/replicatedjob-name\":\"workers\",\"app\":\"train\"}},"
           "\"spec\":{%s%s%s\"containers\":[{\"name\":\"trainer\",\"image\":\"registry/t:1\","
           "\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":\"32Gi\","
           "\"nvidia.com/gpu\":\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],"
           "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]},"
           "\"status\":{\"phase\":\"%s\"}}",
           name, name, i, js, node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"," : "",
           node ? "Running" : "Pending");
  return m ? gb_model_feed(m, "Pod", op, text, NULL) : 0;
}

static int feed_pod(struct gb_model *m, int json, int op, size_t i, const char *node,
                    const char *prefix) {
  char text[1536];
  return feed_pod_text(m, json, op, i, node, prefix, text, sizeof(text));
}

/* The Pod informer's pruning of a pod to what the model reads (its keep
 * paths; serve's informer keeps the union with the controller's and the
 * timeout tracker's, a few fields more). */
static void prune_pod(json_object *o) {
  const struct gb_keep *keep, *ptrs[GB_KEEP_MAX];
  size_t n;
  gb_model_keep(GB_INF_POD, &keep, &n);
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &keep[i];
  gb_keep_prune(o, ptrs, n);
}

/* What the Pod informer caches per pod: the trimmed text (plus its entry). */
static void print_cache_estimate(void) {
  char text[1536];
  feed_pod_text(NULL, 1, 0, 123456, "node-1234", "p", text, sizeof(text));
  json_object *o = json_tokener_parse(text);
  size_t before = strlen(text);
  prune_pod(o);
  size_t after = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  printf("pod JSON %zu B, trimmed for the informer cache %zu B (not in the RSS below)\n", before,
         after);
  fflush(stdout); /* before the fork, or every child prints it again */
}

/* A bind event's Pod as the API server sends it (managedFields, env,
 * volumes, statuses: what the watch delivers of a training worker), with
 * node and name i. */
static size_t real_pod_text(size_t i, const char *node, char *text, size_t cap) {
  int n = snprintf(
      text, cap,
      "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"ev-%zu\",\"generateName\":"
      "\"ev-\",\"namespace\":\"team\",\"uid\":\"0b6c5e0e-4f3c-4f1e-9d2b-%012zu\","
      "\"resourceVersion\":\"%zu\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
      "\"batch.kubernetes.io/controller-uid\":\"5d1f7c2e-1b7a-4a8e-9d43-2f0c6b9e8a11\","
      "\"batch.kubernetes.io/job-name\":\"ev-js-workers-0\",\"jobset.sigs.k8s.io/jobset-name\":"
      "\"ev-js-%zu\",\"jobset.sigs.k8s.io/replicatedjob-name\":\"workers\",\"jobset.sigs.k8s.io/"
      "job-index\":\"0\",\"app\":\"train\"},\"annotations\":{\"batch.kubernetes.io/job-completion-"
      "index\":\"%zu\",\"jobset.sigs.k8s.io/global-replicas\":\"8\"},\"ownerReferences\":[{"
      "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"ev-js-workers-0\",\"uid\":"
      "\"5d1f7c2e-1b7a-4a8e-9d43-2f0c6b9e8a11\",\"controller\":true,\"blockOwnerDeletion\":true}],"
      "\"managedFields\":[{\"manager\":\"kube-controller-manager\",\"operation\":\"Update\","
      "\"apiVersion\":\"v1\",\"time\":\"2026-01-01T00:00:00Z\",\"fieldsType\":\"FieldsV1\","
      "\"fieldsV1\":{\"f:metadata\":{\"f:annotations\":{\".\":{},\"f:batch.kubernetes.io/job-"
      "completion-index\":{}},\"f:generateName\":{},\"f:labels\":{\".\":{},\"f:app\":{}},"
      "\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"5d1f7c2e\\\"}\":{}}},\"f:spec\":{"
      "\"f:containers\":{\"k:{\\\"name\\\":\\\"trainer\\\"}\":{\".\":{},\"f:env\":{},\"f:image\""
      ":{},\"f:resources\":{}}}}}},{\"manager\":\"kubelet\",\"operation\":\"Update\",\"apiVersion\""
      ":\"v1\",\"time\":\"2026-01-01T00:01:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
      "\"f:status\":{\"f:conditions\":{\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{},"
      "\"f:lastProbeTime\":{},\"f:status\":{}}},\"f:containerStatuses\":{},\"f:hostIP\":{},"
      "\"f:phase\":{},\"f:podIP\":{},\"f:startTime\":{}}},\"subresource\":\"status\"}]},"
      "\"spec\":{\"volumes\":[{\"name\":\"kube-api-access-x7k2p\",\"projected\":{\"sources\":[{"
      "\"serviceAccountToken\":{\"expirationSeconds\":3607,\"path\":\"token\"}},{\"configMap\":{"
      "\"name\":\"kube-root-ca.crt\",\"items\":[{\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}}],"
      "\"defaultMode\":420}},{\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\"}}],"
      "\"containers\":[{\"name\":\"trainer\",\"image\":\"registry.example.com/train/pytorch:2.4-"
      "cuda12\",\"command\":[\"torchrun\",\"--nnodes=8\",\"--nproc-per-node=8\",\"train.py\"],"
      "\"env\":[{\"name\":\"PET_NNODES\",\"value\":\"8\"},{\"name\":\"PET_NPROC_PER_NODE\","
      "\"value\":\"8\"},{\"name\":\"PET_MASTER_ADDR\",\"value\":\"ev-js-workers-0-0.ev-js\"},"
      "{\"name\":\"PET_MASTER_PORT\",\"value\":\"29400\"},{\"name\":\"JOB_COMPLETION_INDEX\","
      "\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.annotations["
      "'batch.kubernetes.io/job-completion-index']\"}}}],\"resources\":{\"limits\":{"
      "\"nvidia.com/gpu\":\"8\"},\"requests\":{\"cpu\":\"64\",\"memory\":\"512Gi\","
      "\"nvidia.com/gpu\":\"8\"}},\"volumeMounts\":[{\"name\":\"dshm\",\"mountPath\":\"/dev/shm\""
      "},{\"name\":\"kube-api-access-x7k2p\",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/"
      "kubernetes.io/serviceaccount\"}],\"terminationMessagePath\":\"/dev/termination-log\","
      "\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":\"IfNotPresent\"}],"
      "\"restartPolicy\":\"Never\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"
      "\"ClusterFirst\",\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\","
      "\"nodeName\":\"%s\",\"securityContext\":{},\"subdomain\":\"ev-js\",\"schedulerName\":"
      "\"volcano\",\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
      "\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":"
      "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"node.kubernetes"
      ".io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":"
      "300}],\"priority\":0,\"enableServiceLinks\":true,\"preemptionPolicy\":\"PreemptLowerPriority"
      "\"},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
      "\"status\":\"True\",\"lastProbeTime\":null,\"lastTransitionTime\":\"2026-01-01T00:00:01Z\"}"
      "],\"qosClass\":\"Burstable\"}}",
      i, i, i, i / 8, i % 8, node);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

struct trim {
  const struct gb_keep *const *ptrs;
  size_t n;
  int bad;
};

/* The informer's own pruning of each event's object (on json-c's whole
 * tree the trim; on the keep-aware decode's already trimmed object a walk
 * that removes nothing). */
static int on_watch_event(void *arg, const struct gb_watch_event *ev) {
  struct trim *t = arg;
  gb_keep_prune(ev->object, t->ptrs, t->n);
  t->bad |= !gb_kobj_meta(ev->object, "name");
  return 0;
}

/* Microseconds per bind event through the watch parser, the part of the
 * informer's path before the model's handler runs: keep mode, as the
 * informer's watch decodes now (*now), and as the baseline the same
 * parser on json-c's whole tree then the trim (*base), on the same event
 * texts; `real` uses real_pod_text's Pods. */
static void watch_cost_us(size_t events, size_t nodes, int real, double *now, double *base) {
  char text[8192], node[64];
  const struct gb_keep *keep, *ptrs[GB_KEEP_MAX];
  size_t n;
  gb_model_keep(GB_INF_POD, &keep, &n);
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &keep[i];
  struct trim t = {ptrs, n, 0};
  struct gb_watch_parser *pn = gb_watch_parser_new(0, 0), *pb = gb_watch_parser_new(0, 0);
  if (!pn || !pb || gb_watch_parser_set_keep(pn, ptrs, n))
    _exit(1);
  double t_now = 0, t_base = 0;
  for (size_t i = 0; i < events; i++) {
    snprintf(node, sizeof(node), "node-%zu", (i * 104729) % nodes);
    size_t at = (size_t)snprintf(text, sizeof(text), "{\"type\":\"MODIFIED\",\"object\":");
    if (real)
      real_pod_text(i, node, text + at, sizeof(text) - at - 3);
    else
      feed_pod_text(NULL, 1, 0, i, node, "ev", text + at, sizeof(text) - at - 3);
    size_t len = strlen(text);
    memcpy(text + len, "}\n", 3);
    len += 2;
    double t0 = gb_bench_mono_s();
    int rc = gb_watch_parser_feed(pb, text, len, on_watch_event, &t, NULL);
    double t1 = gb_bench_mono_s();
    rc |= gb_watch_parser_feed(pn, text, len, on_watch_event, &t, NULL);
    t_now += gb_bench_mono_s() - t1;
    t_base += t1 - t0;
    if (rc || t.bad)
      _exit(1);
  }
  gb_watch_parser_free(pn);
  gb_watch_parser_free(pb);
  *now = t_now * 1e6 / (double)events;
  *base = t_base * 1e6 / (double)events;
}

static void run_case(size_t nodes, size_t pods, size_t events, int json) {
  long rss0 = gb_bench_rss_kib();
  struct gb_model_opts o = {.levels = LEVELS, .n_levels = 2};
  struct gb_model *m = NULL;
  if (gb_model_new(&o, &m, NULL))
    _exit(1);
  double t0 = gb_bench_mono_s();
  char node[64];
  int bad = 0;
  for (size_t i = 0; i < nodes; i++)
    bad |= feed_node(m, i);
  double t1 = gb_bench_mono_s();
  for (size_t i = 0; i < pods; i++) {
    snprintf(node, sizeof(node), "node-%zu", (i * 7919) % nodes);
    bad |= feed_pod(m, json, 0, i, node, "p");
  }
  double t2 = gb_bench_mono_s();
  bad |= gb_model_feed_done(m);
  double t3 = gb_bench_mono_s();
  long rss1 = gb_bench_rss_kib();
  struct gb_model_stats st;
  gb_model_stats(m, &st);
  for (size_t i = 0; i < events; i++) /* the event pods exist, unbound */
    bad |= feed_pod(m, json, 0, i, NULL, "ev");
  double t4 = gb_bench_mono_s();
  for (size_t i = 0; i < events; i++) {
    snprintf(node, sizeof(node), "node-%zu", (i * 104729) % nodes);
    bad |= feed_pod(m, json, 0, i, node, "ev");
  }
  double t5 = gb_bench_mono_s();
  for (size_t i = 0; i < events; i++)
    bad |= feed_pod(m, json, 1, i, NULL, "ev");
  double t6 = gb_bench_mono_s();
  double dec_now = 0, dec_base = 0, real_now = 0, real_base = 0;
  if (json) {
    watch_cost_us(events, nodes, 0, &dec_now, &dec_base);
    watch_cost_us(events, nodes, 1, &real_now, &real_base);
  }
  printf("%-6s %7zu nodes %8zu pods: nodes %.2f s, pods %.2f s, build %.2f s, total %.2f s; "
         "RSS %.0f MiB (records %.0f MiB, %.0f B/pod); bind %.2f us, delete %.2f us",
         json ? "json" : "record", nodes, pods, t1 - t0, t2 - t1, t3 - t2, t3 - t0,
         (double)(rss1 - rss0) / 1024.0, (double)st.record_bytes / 1048576.0,
         (double)st.record_bytes / (double)(pods ? pods : 1), (t5 - t4) * 1e6 / (double)events,
         (t6 - t5) * 1e6 / (double)events);
  if (json) { /* what the informer pays before the model's handler runs */
    char real[8192];
    printf("; a bind event through the watch parser (parse + trim): now %.2f us, baseline "
           "(json-c parse + trim) %.2f us, ratio %.2f; the same with a real-looking %zu B Pod: "
           "now %.2f us, baseline %.2f us, ratio %.2f",
           dec_now, dec_base, dec_now / dec_base, real_pod_text(0, "node-1", real, sizeof(real)),
           real_now, real_base, real_now / real_base);
  }
  printf("%s\n", bad ? " (FEED ERRORS)" : "");
  fflush(stdout);
  gb_model_free(m);
  _exit(bad || st.pods != pods ? 1 : 0);
}

/* A rack HyperNode (tier 1) of nodes [first, first + 32), or a block (tier
 * 2) of racks; `tn` varies the tierName so that an update is a change. */
static int feed_hn(struct gb_model *m, int tier, size_t k, size_t first, size_t n, int tn) {
  char text[4096];
  size_t len = (size_t)snprintf(text, sizeof(text),
                                "{\"metadata\":{\"name\":\"%s-%zu\"},\"spec\":{\"tier\":%d,"
                                "\"tierName\":\"%s%d\",\"members\":[",
                                tier == 1 ? "rack" : "block", k, tier, tier == 1 ? "rack" : "block",
                                tn);
  for (size_t i = first; i < first + n && len < sizeof(text) - 128; i++)
    len += (size_t)snprintf(
        text + len, sizeof(text) - len,
        "%s{\"type\":\"%s\",\"selector\":{\"exactMatch\":{\"name\":\"%s-%zu\"}}}",
        i > first ? "," : "", tier == 1 ? "Node" : "HyperNode", tier == 1 ? "node" : "rack", i);
  snprintf(text + len, sizeof(text) - len, "]}}");
  return gb_model_feed(m, "HyperNode", 0, text, NULL);
}

static int noop(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)arg, (void)s, (void)gen;
  return 0;
}

/* HyperNodes: the initial build with them, and the rebuild one HyperNode
 * change costs (run on the next read), record path. */
static void run_hn_case(size_t nodes, size_t pods) {
  struct gb_model_opts o = {0};
  struct gb_model *m = NULL;
  if (gb_model_new(&o, &m, NULL))
    _exit(1);
  int bad = 0;
  size_t racks = (nodes + 31) / 32, blocks = (racks + 31) / 32;
  for (size_t i = 0; i < nodes; i++)
    bad |= feed_node(m, i);
  for (size_t k = 0; k < racks; k++)
    bad |= feed_hn(m, 1, k, k * 32, k * 32 + 32 > nodes ? nodes - k * 32 : 32, 0);
  for (size_t k = 0; k < blocks; k++)
    bad |= feed_hn(m, 2, k, k * 32, k * 32 + 32 > racks ? racks - k * 32 : 32, 0);
  char node[64];
  for (size_t i = 0; i < pods; i++) {
    snprintf(node, sizeof(node), "node-%zu", (i * 7919) % nodes);
    bad |= feed_pod(m, 0, 0, i, node, "p");
  }
  double t0 = gb_bench_mono_s();
  bad |= gb_model_feed_done(m);
  double t1 = gb_bench_mono_s();
  int rounds = 5;
  for (int r = 1; r <= rounds; r++) {
    bad |= feed_hn(m, 1, 0, 0, nodes < 32 ? nodes : 32, r);
    bad |= gb_model_with_snapshot(m, noop, NULL);
  }
  double t2 = gb_bench_mono_s();
  struct gb_model_stats st;
  gb_model_stats(m, &st);
  printf("hypernodes %7zu nodes %8zu pods %5zu HyperNodes %7zu domains: build %.2f s, "
         "rebuild after one HyperNode change %.3f s%s\n",
         nodes, pods, racks + blocks, st.domains, t1 - t0, (t2 - t1) / rounds,
         bad || st.rebuilds != (uint64_t)rounds + 1 ? " (ERRORS)" : "");
  fflush(stdout);
  gb_model_free(m);
  _exit(bad || st.rebuilds != (uint64_t)rounds + 1 ? 1 : 0);
}

int main(int argc, char **argv) {
  int short_mode = argc > 1 && !strcmp(argv[1], "--short");
  static const size_t scales[][2] = {{10000, 100000}, {100000, 1000000}};
  size_t n_scales = short_mode ? 1 : 2;
  int failed = 0;
  print_cache_estimate();
  for (size_t s = 0; s < n_scales; s++) {
    for (int json = 0; json <= 1; json++) {
      size_t nodes = short_mode ? 1000 : scales[s][0], pods = short_mode ? 10000 : scales[s][1];
      pid_t pid = fork();
      if (pid == 0)
        run_case(nodes, pods, short_mode ? 2000 : 100000, json);
      int status = 0;
      if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "bench_model: case %zu/%d failed\n", s, json);
        failed = 1;
      }
    }
  }
  pid_t pid = fork();
  if (pid == 0)
    run_hn_case(short_mode ? 1000 : 10000, short_mode ? 10000 : 100000);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
    fprintf(stderr, "bench_model: the HyperNode case failed\n");
    failed = 1;
  }
  return failed;
}
