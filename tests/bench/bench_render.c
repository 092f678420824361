/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_render: how fast the offline main job is.  It generates N TrainJobs
 * (mixed shapes: plain, resourcesPerNode, runtime patches with a queue,
 * v2.1 annotations) against three runtimes, then times on one core:
 *   parse  - loading the bytes into document trees (the floor);
 *   render - loading, computing every gang, rendering every PodGroup and
 *            writing it as YAML (what `gangbridge render` does).
 * It prints per-job time, jobs/s and the render/parse ratio.  Goals (issue
 * 2): ratio <= 1.5 and >= 20,000 jobs/s.  --short runs a small N for CI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_emit.h"
#include "gb_manifest.h"
#include "gc_gang.h"

static const char RUNTIMES[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: ClusterTrainingRuntime\n"
    "metadata:\n  name: torch-distributed\n"
    "spec:\n  mlPolicy:\n    numNodes: 1\n    torch: {}\n"
    "  podGroupPolicy:\n    volcano:\n      networkTopology:\n        mode: soft\n"
    "  template:\n    metadata:\n      annotations:\n"
    "        scheduling.volcano.sh/queue-name: default-queue\n"
    "    spec:\n      replicatedJobs:\n"
    "        - name: node\n          template:\n            metadata:\n              labels:\n"
    "                trainer.kubeflow.org/trainjob-ancestor-step: trainer\n"
    "            spec:\n              template:\n                spec:\n"
    "                  containers:\n                    - name: node\n"
    "                      image: pytorch/pytorch\n"
    "                      resources:\n                        requests: {cpu: '2', memory: 8Gi}\n"
    "                        limits: {nvidia.com/gpu: 1}\n"
    "---\n"
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: ClusterTrainingRuntime\n"
    "metadata:\n  name: torchtune\n"
    "spec:\n  mlPolicy:\n    numNodes: 1\n    torch: {}\n"
    "  podGroupPolicy:\n    coscheduling:\n      scheduleTimeoutSeconds: 120\n"
    "  template:\n    spec:\n      replicatedJobs:\n"
    "        - name: dataset-initializer\n          template:\n            metadata:\n"
    "              labels: {trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer}\n"
    "            spec:\n              template:\n                spec:\n"
    "                  containers:\n                    - name: dataset-initializer\n"
    "                      image: init\n"
    "                      resources: {requests: {cpu: 500m, memory: 1Gi}}\n"
    "        - name: node\n          dependsOn:\n            - {name: dataset-initializer, status: Complete}\n"
    "          template:\n            metadata:\n"
    "              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"
    "            spec:\n              template:\n                spec:\n"
    "                  initContainers:\n                    - name: warmup\n"
    "                      resources: {requests: {cpu: '4', memory: 2Gi}}\n"
    "                  containers:\n                    - name: node\n                      image: tune\n"
    "                      resources: {limits: {nvidia.com/gpu: 2}}\n"
    "---\n"
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: ClusterTrainingRuntime\n"
    "metadata:\n  name: deepspeed\n"
    "spec:\n  mlPolicy:\n    numNodes: 1\n    mpi:\n      numProcPerNode: 1\n      runLauncherAsNode: true\n"
    "  template:\n    spec:\n      replicatedJobs:\n"
    "        - name: node\n          template:\n            spec:\n              template:\n"
    "                spec:\n                  containers:\n                    - name: node\n"
    "                      image: ds\n"
    "        - name: launcher\n          dependsOn:\n            - {name: node, status: Ready}\n"
    "          template:\n            metadata:\n"
    "              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n"
    "            spec:\n              template:\n                spec:\n"
    "                  containers:\n                    - name: node\n                      image: ds\n";

/* Appends one generated TrainJob to buf (grown as needed). */
static int append_job(char **buf, size_t *len, size_t *cap, size_t i) {
  static const char *runtimes[] = {"torch-distributed", "torchtune", "deepspeed"};
  char job[1536];
  int n;
  switch (i % 4) {
  case 0:
    n = snprintf(job, sizeof(job),
                 "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                 "metadata:\n  name: job-%zu\n  namespace: team-%zu\n  uid: uid-%zu\n"
                 "spec:\n  runtimeRef:\n    name: %s\n  trainer:\n    numNodes: %zu\n",
                 i, i % 7, i, runtimes[i % 3], 1 + i % 16);
    break;
  case 1:
    n = snprintf(job, sizeof(job),
                 "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                 "metadata:\n  name: job-%zu\n  namespace: team-%zu\n"
                 "spec:\n  runtimeRef:\n    name: %s\n  trainer:\n    numNodes: %zu\n"
                 "    resourcesPerNode:\n      requests: {cpu: '%zu', memory: %zuGi}\n"
                 "      limits: {nvidia.com/gpu: %zu}\n",
                 i, i % 7, runtimes[i % 3], 2 + i % 8, 1 + i % 8, 4 + i % 32, 1 + i % 8);
    break;
  case 2:
    n = snprintf(job, sizeof(job),
                 "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                 "metadata:\n  name: job-%zu\n  namespace: team-%zu\n"
                 "spec:\n  runtimeRef:\n    name: %s\n  suspend: true\n"
                 "  trainer:\n    numNodes: %zu\n"
                 "  runtimePatches:\n    - manager: example.io/platform\n"
                 "      trainingRuntimeSpec:\n        template:\n          metadata:\n"
                 "            annotations:\n              scheduling.volcano.sh/queue-name: q-%zu\n"
                 "          spec:\n            replicatedJobs:\n              - name: node\n"
                 "                template:\n                  spec:\n                    template:\n"
                 "                      spec:\n                        nodeSelector: {pool: gpu}\n",
                 i, i % 7, runtimes[i % 3], 1 + i % 32, i % 5);
    break;
  default:
    n = snprintf(job, sizeof(job),
                 "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                 "metadata:\n  name: job-%zu\n  namespace: team-%zu\n"
                 "spec:\n  runtimeRef:\n    name: %s\n"
                 "  annotations:\n    scheduling.volcano.sh/queue-name: legacy-%zu\n"
                 "  trainer:\n    numNodes: %zu\n    numProcPerNode: auto\n",
                 i, i % 7, runtimes[i % 3], i % 3, 1 + i % 4);
    break;
  }
  if (n < 0 || (size_t)n >= sizeof(job))
    return -1;
  if (*len + (size_t)n + 1 > *cap) {
    size_t ncap = (*cap + (size_t)n + 1) * 2;
    char *nb = realloc(*buf, ncap);
    if (!nb)
      return -1;
    *buf = nb;
    *cap = ncap;
  }
  memcpy(*buf + *len, job, (size_t)n + 1);
  *len += (size_t)n;
  return 0;
}

/* The generated stream is one large source; lift the per-source cap. */
static const struct gb_limits bench_limits = {.max_source_bytes = 512u << 20,
                                              .max_total_bytes = 512u << 20};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Loads the bytes; returns the number of documents or -1. */
static long parse_pass(const char *buf, size_t len) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(&bench_limits);
  long docs = -1;
  if (ds && gb_load_buffer(ds, "bench.yaml", buf, len, &d) == 0)
    docs = (long)ds->n;
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  return docs;
}

/* Does what `gangbridge render` does: loads, indexes runtimes, computes every
 * gang, renders every PodGroup and writes them as one YAML stream.  Returns
 * the PodGroups written or -1. */
static long render_pass(const char *buf, size_t len, size_t *out_bytes) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(&bench_limits);
  struct gc_catalog *cat = gc_catalog_new();
  struct gc_arena *a = gc_arena_new(0);
  struct gc_gang **gangs = NULL;
  const struct gc_value **pgs = NULL;
  struct gc_options opts;
  memset(&opts, 0, sizeof(opts));
  long rendered = -1;
  size_t n = 0;
  char *text = NULL;
  *out_bytes = 0;
  if (!ds || !cat || !a || gb_load_buffer(ds, "bench.yaml", buf, len, &d))
    goto out;
  gangs = calloc(ds->n, sizeof(*gangs));
  pgs = calloc(ds->n, sizeof(*pgs));
  if (!gangs || !pgs)
    goto out;
  for (size_t i = 0; i < ds->n; i++) {
    const char *kind;
    if (gc_doc_trainer_kind(ds->docs[i].root, &kind) && strcmp(kind, "TrainJob"))
      gc_catalog_add(cat, ds->docs[i].root, "bench.yaml", &d);
  }
  for (size_t i = 0; i < ds->n; i++) {
    const char *kind;
    if (!gc_doc_trainer_kind(ds->docs[i].root, &kind) || strcmp(kind, "TrainJob"))
      continue;
    struct gc_value *pg = NULL;
    if (gc_gang_compute(ds->docs[i].root, cat, &opts, &gangs[n], &d) ||
        gc_render_podgroup(gangs[n], a, &pg))
      goto out;
    pgs[n++] = pg;
  }
  size_t tlen = 0;
  if (gb_emit_yaml(pgs, n, &text, &tlen))
    goto out;
  *out_bytes = tlen;
  rendered = (long)n;
out:
  if (d.n)
    fprintf(stderr, "bench_render: first problem: %s\n", d.msgs[0]);
  for (size_t i = 0; gangs && i < n + 1 && i < ds->n; i++)
    gc_gang_free(gangs[i]);
  free(text);
  free(pgs);
  free(gangs);
  gc_arena_free(a);
  gc_catalog_free(cat);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  return rendered;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

int main(int argc, char **argv) {
  int short_mode = argc > 1 && !strcmp(argv[1], "--short");
  size_t n_jobs = short_mode ? 2000 : 50000;
  enum { ROUNDS = 5 };
  char *buf = NULL;
  size_t len = 0, cap = 0;
  cap = sizeof(RUNTIMES) * 2;
  buf = malloc(cap);
  if (!buf)
    return 1;
  memcpy(buf, RUNTIMES, sizeof(RUNTIMES));
  len = sizeof(RUNTIMES) - 1;
  for (size_t i = 0; i < n_jobs; i++)
    if (append_job(&buf, &len, &cap, i)) {
      free(buf);
      return 1;
    }

  double t_parse[ROUNDS], t_render[ROUNDS];
  size_t out_bytes = 0;
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = now_s();
    long docs = parse_pass(buf, len);
    double t1 = now_s();
    long pgs = render_pass(buf, len, &out_bytes);
    double t2 = now_s();
    if (docs != (long)(n_jobs + 3) || pgs != (long)n_jobs) {
      fprintf(stderr, "bench_render: expected %zu jobs, parsed %ld docs, rendered %ld\n", n_jobs,
              docs, pgs);
      free(buf);
      return 1;
    }
    t_parse[r] = t1 - t0;
    t_render[r] = t2 - t1;
  }
  qsort(t_parse, ROUNDS, sizeof(double), cmp_double);
  qsort(t_render, ROUNDS, sizeof(double), cmp_double);
  double parse = t_parse[ROUNDS / 2], render = t_render[ROUNDS / 2];
  printf("bench_render: %zu TrainJobs, %zu input bytes, %zu output bytes, median of %d rounds\n",
         n_jobs, len, out_bytes, ROUNDS);
  printf("  parse only : %8.3f ms total  %7.2f us/job\n", parse * 1e3, parse * 1e6 / (double)n_jobs);
  printf("  render     : %8.3f ms total  %7.2f us/job  %9.0f jobs/s\n", render * 1e3,
         render * 1e6 / (double)n_jobs, (double)n_jobs / render);
  printf("  ratio render/parse: %.2fx (goal <= 1.5x); throughput goal >= 20000 jobs/s\n",
         render / parse);
  free(buf);
  return 0;
}
