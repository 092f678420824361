/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark of the informer cache: fills a gb_informer (no server; through
 * gb_informer_feed, which runs the same code as watch events) with N
 * realistic TrainJobs as an API server returns them (labels, annotations,
 * managedFields, status conditions), then prints:
 *   - cache bytes per TrainJob (exact payload + entry + bucket share),
 *   - RSS growth per TrainJob (what the process really pays),
 *   - client CPU per reconcile read: gb_informer_get_value into an arena
 *     (parse cached JSON, convert to gc_value) plus the arena reset,
 *   - CPU per watch event applied (parse excluded: feed from a json-c tree).
 * Goals from issue 5: <= 4 KiB per cached TrainJob, <= 50 us client CPU per
 * reconcile.  --short uses 1,000 TrainJobs instead of 10,000.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_bench.h"
#include "gb_informer.h"
#include "gb_informer_test.h"
#include "gb_kube_watch.h"
#include "gb_kube_config_test.h"

static json_object *make_trainjob(int i) {
  char text[4096];
  snprintf(
      text, sizeof(text),
      "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
      "\"metadata\":{\"name\":\"llm-finetune-%06d\",\"namespace\":\"team-%02d\","
      "\"uid\":\"6f1c2a4e-%04x-4b8e-9d3a-%012d\",\"resourceVersion\":\"%d\","
      "\"generation\":1,\"creationTimestamp\":\"2026-11-20T10:00:00Z\","
      "\"labels\":{\"app.kubernetes.io/part-of\":\"research\",\"team\":\"team-%02d\","
      "\"kueue.x-k8s.io/queue-name\":\"gpu-queue\"},"
      "\"annotations\":{\"scheduling.gangbridge.io/backend\":\"volcano\"},"
      "\"managedFields\":[{\"manager\":\"kubectl-client-side-apply\",\"operation\":\"Update\","
      "\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"time\":\"2026-11-20T10:00:00Z\","
      "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},"
      "\"f:team\":{}}},\"f:spec\":{\".\":{},\"f:runtimeRef\":{\".\":{},\"f:name\":{}},"
      "\"f:trainer\":{\".\":{},\"f:numNodes\":{},\"f:resourcesPerNode\":{}}}}}]},"
      "\"spec\":{\"runtimeRef\":{\"apiGroup\":\"trainer.kubeflow.org\",\"kind\":"
      "\"ClusterTrainingRuntime\",\"name\":\"torch-distributed\"},"
      "\"suspend\":false,"
      "\"trainer\":{\"image\":\"ghcr.io/example/llm-trainer:v1.4.2\",\"numNodes\":%d,"
      "\"numProcPerNode\":8,\"command\":[\"torchrun\",\"train.py\"],"
      "\"args\":[\"--epochs\",\"3\",\"--lr\",\"0.0001\"],"
      "\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"}],"
      "\"resourcesPerNode\":{\"limits\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"64\","
      "\"memory\":\"512Gi\"},\"requests\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"48\","
      "\"memory\":\"480Gi\"}}}},"
      "\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"False\","
      "\"reason\":\"Resumed\",\"message\":\"TrainJob is resumed\","
      "\"lastTransitionTime\":\"2026-11-20T10:00:01Z\"}],"
      "\"jobsStatus\":[{\"name\":\"node\",\"ready\":%d,\"succeeded\":0,\"failed\":0,"
      "\"active\":%d,\"suspended\":0}]}}",
      i, i % 50, i & 0xffff, i, 1000 + i, i % 50, 1 + i % 16, 1 + i % 16, 1 + i % 16);
  return json_tokener_parse(text);
}

int main(int argc, char **argv) {
  int n = 10000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short"))
      n = 1000;
    else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
      long v = strtol(argv[++i], NULL, 10);
      if (v > 0 && v <= 10000000)
        n = (int)v;
    }
  }
  /* The informer needs a client only to exist; no request is made. */
  const char *kc = "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                   "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n";
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_config *cfg = NULL;
  struct gb_kube_client *cli = NULL;
  struct gb_informer *inf = NULL;
  if (gb_kube_config_load_buffer("bench", kc, strlen(kc), NULL, &cfg, &d) ||
      gb_kube_client_new(cfg, NULL, &cli, &d)) {
    fprintf(stderr, "bench_kube_cache: setup failed\n");
    return 1;
  }
  struct gb_informer_opts o = {0};
  o.group = "trainer.kubeflow.org";
  o.version = "v1alpha1";
  o.resource = "trainjobs";
  if (gb_informer_new(cli, &o, &inf, &d)) {
    fprintf(stderr, "bench_kube_cache: informer failed\n");
    return 1;
  }
  json_object *sample = make_trainjob(0);
  size_t api_bytes = strlen(json_object_to_json_string_ext(sample, JSON_C_TO_STRING_PLAIN));
  json_object_put(sample);

  /* Objects arrive one at a time, as from a watch stream: built, applied,
   * freed.  RSS growth therefore includes allocator overhead and
   * fragmentation, not just the cache's own count.  The create/free cost is
   * excluded from the per-event figure. */
  long rss0 = gb_bench_rss_kib();
  double feed_s = 0;
  for (int i = 0; i < n; i++) {
    json_object *obj = make_trainjob(i);
    double t0 = gb_bench_cpu_s();
    int rc = gb_informer_feed(inf, GB_WATCH_ADDED, obj);
    feed_s += gb_bench_cpu_s() - t0;
    json_object_put(obj);
    if (rc) {
      fprintf(stderr, "bench_kube_cache: feed failed\n");
      return 1;
    }
  }
  long rss1 = gb_bench_rss_kib();

  struct gb_informer_stats st;
  gb_informer_stats(inf, &st);

  /* A reconcile reads its TrainJob from the cache into an arena. */
  struct gc_arena *a = gc_arena_new(0);
  int rounds = n < 5000 ? 5 : 2;
  double t0 = gb_bench_cpu_s();
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n; i++) {
      char ns[16], name[32];
      snprintf(ns, sizeof(ns), "team-%02d", i % 50);
      snprintf(name, sizeof(name), "llm-finetune-%06d", i);
      struct gc_value *v = NULL;
      if (gb_informer_get_value(inf, ns, name, a, &v) || !gc_value_path(v, "spec.trainer")) {
        fprintf(stderr, "bench_kube_cache: lookup of %s/%s failed\n", ns, name);
        return 1;
      }
      gc_arena_reset(a);
    }
  double read_s = gb_bench_cpu_s() - t0;
  gc_arena_free(a);

  printf("bench_kube_cache: %d TrainJobs (%zu bytes each as served, managedFields included)\n",
         n, api_bytes);
  printf("  cache bytes per TrainJob:   %.0f B (goal <= 4096)\n",
         (double)st.cache_bytes / (double)st.objects);
  printf("  RSS growth per TrainJob:    %.0f B (goal <= 4096)\n",
         (double)(rss1 - rss0) * 1024.0 / (double)n);
  printf("  cache read per reconcile:   %.1f us CPU (get_value into an arena; goal <= 50)\n",
         read_s * 1e6 / ((double)n * rounds));
  printf("  watch event applied:        %.1f us CPU (strip, serialise, insert)\n",
         feed_s * 1e6 / (double)n);
  gb_informer_free(inf);
  gb_kube_client_free(cli);
  gb_kube_config_free(cfg);
  gc_diags_destroy(&d);
  return 0;
}
