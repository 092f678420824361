/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_render: how fast the offline main job is.  It generates N TrainJobs
 * (mixed shapes: plain, resourcesPerNode, runtime patches with a queue,
 * v2.1 annotations) against three runtimes, then times on one core:
 *   parse  - loading the bytes into document trees (the floor);
 *   render - loading, computing every gang, rendering every PodGroup and
 *            writing it as YAML (what `gangbridge render` does).
 * and splits render into its phases: load (the same work as parse),
 * compute+render (catalog, gangs, PodGroup trees), emit YAML (gb_emit_yaml,
 * libyaml) and emit JSON (gb_emit_json on a v1 List, json-c).  It also times
 * libyaml's emitter alone on the same trees (every scalar plain, no quoting
 * analysis, no UTF-8 check: not valid output, only the floor any YAML
 * emission through libyaml's event API costs).  It prints per-job time,
 * jobs/s and the render/parse ratio for -o yaml and -o json.  Goals (issue
 * 2): ratio <= 1.5 and >= 20,000 jobs/s.  --short runs a small N for CI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaml.h>

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
static __attribute__((noinline)) long parse_pass(const char *buf, size_t len) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(&bench_limits);
  long docs = -1;
  if (ds && gb_manifest_load_buffer(ds, "bench.yaml", buf, len, &d) == 0)
    docs = (long)ds->n;
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  return docs;
}

/* libyaml's event parse of the same bytes, nothing kept: the floor of any
 * YAML reader on libyaml (issue 22 row 8's baseline).  Returns the number
 * of documents or -1. */
static __attribute__((noinline)) long event_parse_pass(const char *buf, size_t len) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p))
    return -1;
  yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
  long docs = 0;
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) {
      docs = -1;
      break;
    }
    yaml_event_type_t t = ev.type;
    docs += t == YAML_DOCUMENT_START_EVENT;
    yaml_event_delete(&ev);
    if (t == YAML_STREAM_END_EVENT)
      break;
  }
  yaml_parser_delete(&p);
  return docs;
}

/* One render run, split into the phases `gangbridge render` goes through.
 * Each phase is its own function so a profiler attributes it. */
struct run {
  struct gc_diags d;
  struct gb_docset *ds;
  struct gc_catalog *cat;
  struct gc_arena *a;
  struct gc_gang **gangs;
  const struct gc_value **pgs;
  size_t n;
};

static void run_free(struct run *r) {
  if (r->d.n)
    fprintf(stderr, "bench_render: first problem: %s\n", r->d.msgs[0]);
  for (size_t i = 0; r->gangs && i < r->n; i++)
    gc_gang_free(r->gangs[i]);
  free(r->pgs);
  free(r->gangs);
  gc_arena_free(r->a);
  gc_catalog_free(r->cat);
  gb_docset_free(r->ds);
  gc_diags_destroy(&r->d);
}

/* Phase 1: the bytes into document trees (what parse_pass measures). */
static __attribute__((noinline)) int load_phase(struct run *r, const char *buf, size_t len) {
  memset(r, 0, sizeof(*r));
  gc_diags_init(&r->d);
  r->ds = gb_docset_new(&bench_limits);
  r->cat = gc_catalog_new();
  r->a = gc_arena_new(0);
  if (!r->ds || !r->cat || !r->a || gb_manifest_load_buffer(r->ds, "bench.yaml", buf, len, &r->d))
    return -1;
  r->gangs = calloc(r->ds->n, sizeof(*r->gangs));
  r->pgs = calloc(r->ds->n, sizeof(*r->pgs));
  return r->gangs && r->pgs ? 0 : -1;
}

/* Phase 2: index runtimes, compute every gang, render every PodGroup. */
static __attribute__((noinline)) int compute_phase(struct run *r, const struct gc_options *opts) {
  for (size_t i = 0; i < r->ds->n; i++) {
    const char *kind;
    if (gc_catalog_trainer_kind(r->ds->docs[i].root, &kind) && strcmp(kind, "TrainJob"))
      gc_catalog_add(r->cat, r->ds->docs[i].root, "bench.yaml", &r->d);
  }
  for (size_t i = 0; i < r->ds->n; i++) {
    const char *kind;
    if (!gc_catalog_trainer_kind(r->ds->docs[i].root, &kind) || strcmp(kind, "TrainJob"))
      continue;
    struct gc_value *pg = NULL;
    if (gc_gang_compute(r->ds->docs[i].root, r->cat, opts, &r->gangs[r->n], &r->d))
      return -1;
    r->n++;
    if (gc_render_podgroup(r->gangs[r->n - 1], r->a, &pg))
      return -1;
    r->pgs[r->n - 1] = pg;
  }
  return 0;
}

/* Phase 3a: one YAML stream (`-o yaml`, libyaml). */
static __attribute__((noinline)) int emit_yaml_phase(struct run *r, size_t *out_bytes) {
  char *text = NULL;
  size_t tlen = 0;
  int rc = gb_emit_yaml(r->pgs, r->n, &text, &tlen);
  free(text);
  *out_bytes = tlen;
  return rc;
}

/* Phase 3b: one v1 List (`-o json`, json-c), built as gb_cmd_render does. */
static __attribute__((noinline)) int emit_json_phase(struct run *r, size_t *out_bytes) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *list = a ? gc_value_map(a) : NULL, *items = a ? gc_value_seq(a) : NULL;
  struct gc_value *meta = a ? gc_value_map(a) : NULL;
  char *text = NULL;
  size_t tlen = 0;
  int rc = -1;
  if (!list || !items || !meta)
    goto out;
  for (size_t i = 0; i < r->n; i++)
    if (gc_seq_push(a, items, (struct gc_value *)r->pgs[i]))
      goto out;
  if (gc_map_set(a, meta, "resourceVersion", gc_value_strz(a, "")) ||
      gc_map_set(a, list, "apiVersion", gc_value_strz(a, "v1")) ||
      gc_map_set(a, list, "items", items) || gc_map_set(a, list, "kind", gc_value_strz(a, "List")) ||
      gc_map_set(a, list, "metadata", meta))
    goto out;
  rc = gb_emit_json(list, 1, &text, &tlen);
  *out_bytes = tlen;
out:
  free(text);
  gc_arena_free(a);
  return rc;
}

static int floor_write(void *data, unsigned char *buffer, size_t size) {
  (void)buffer;
  *(size_t *)data += size;
  return 1;
}

static int floor_node(yaml_emitter_t *em, const struct gc_value *v) {
  yaml_event_t ev;
  char num[32];
  switch (v->type) {
  case GC_MAP:
  case GC_SEQ: {
    int map = v->type == GC_MAP;
    if (map ? !yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE)
            : !yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE))
      return -1;
    if (!yaml_emitter_emit(em, &ev))
      return -1;
    for (size_t i = 0; i < v->len; i++) {
      if (map && (!yaml_scalar_event_initialize(&ev, NULL, NULL,
                                                (yaml_char_t *)v->u.members[i].key,
                                                (int)v->u.members[i].key_len, 1, 1,
                                                YAML_PLAIN_SCALAR_STYLE) ||
                  !yaml_emitter_emit(em, &ev)))
        return -1;
      if (floor_node(em, map ? v->u.members[i].value : v->u.items[i]))
        return -1;
    }
    if (map ? !yaml_mapping_end_event_initialize(&ev) : !yaml_sequence_end_event_initialize(&ev))
      return -1;
    return yaml_emitter_emit(em, &ev) ? 0 : -1;
  }
  case GC_STR:
    return yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v->u.s, (int)v->len, 1,
                                        1, YAML_PLAIN_SCALAR_STYLE) &&
                   yaml_emitter_emit(em, &ev)
               ? 0
               : -1;
  default: {
    int n = snprintf(num, sizeof(num), "%lld", v->type == GC_INT ? (long long)v->u.i : 0LL);
    return yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)num, n, 1, 1,
                                        YAML_PLAIN_SCALAR_STYLE) &&
                   yaml_emitter_emit(em, &ev)
               ? 0
               : -1;
  }
  }
}

/* Phase 3c (reference only): libyaml's emitter alone on the same trees. */
static __attribute__((noinline)) int emit_floor_phase(struct run *r, size_t *out_bytes) {
  yaml_emitter_t em;
  yaml_event_t ev;
  int rc = -1;
  *out_bytes = 0;
  if (!yaml_emitter_initialize(&em))
    return -1;
  yaml_emitter_set_output(&em, floor_write, out_bytes);
  yaml_emitter_set_unicode(&em, 1);
  yaml_emitter_set_indent(&em, 2);
  yaml_emitter_set_width(&em, -1);
  if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || !yaml_emitter_emit(&em, &ev))
    goto out;
  for (size_t i = 0; i < r->n; i++) {
    if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ||
        !yaml_emitter_emit(&em, &ev) || floor_node(&em, r->pgs[i]) ||
        !yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(&em, &ev))
      goto out;
  }
  if (!yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(&em, &ev))
    goto out;
  rc = yaml_emitter_flush(&em) ? 0 : -1;
out:
  yaml_emitter_delete(&em);
  return rc;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return v[n / 2];
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

  struct gc_options opts;
  memset(&opts, 0, sizeof(opts));
  double t_parse[ROUNDS], t_load[ROUNDS], t_comp[ROUNDS], t_yaml[ROUNDS], t_json[ROUNDS];
  double t_ry[ROUNDS], t_rj[ROUNDS], t_floor[ROUNDS], t_events[ROUNDS];
  size_t yaml_bytes = 0, json_bytes = 0, floor_bytes = 0;
  for (int r = 0; r < ROUNDS; r++) {
    struct run run;
    double te = now_s();
    long events_docs = event_parse_pass(buf, len);
    t_events[r] = now_s() - te;
    double t0 = now_s();
    long docs = parse_pass(buf, len);
    double t1 = now_s();
    int ok = load_phase(&run, buf, len) == 0;
    double t2 = now_s();
    ok = ok && compute_phase(&run, &opts) == 0;
    double t3 = now_s();
    ok = ok && emit_yaml_phase(&run, &yaml_bytes) == 0;
    double t4 = now_s();
    ok = ok && emit_json_phase(&run, &json_bytes) == 0;
    double t5 = now_s();
    ok = ok && emit_floor_phase(&run, &floor_bytes) == 0;
    double t6 = now_s();
    size_t rendered = run.n;
    run_free(&run);
    if (docs != (long)(n_jobs + 3) || events_docs != docs || !ok || rendered != n_jobs) {
      fprintf(stderr, "bench_render: expected %zu jobs, parsed %ld docs, rendered %zu\n", n_jobs,
              docs, rendered);
      free(buf);
      return 1;
    }
    t_parse[r] = t1 - t0;
    t_load[r] = t2 - t1;
    t_comp[r] = t3 - t2;
    t_yaml[r] = t4 - t3;
    t_json[r] = t5 - t4;
    t_floor[r] = t6 - t5;
    t_ry[r] = t_load[r] + t_comp[r] + t_yaml[r];
    t_rj[r] = t_load[r] + t_comp[r] + t_json[r];
  }
  double parse = median(t_parse, ROUNDS), load = median(t_load, ROUNDS);
  double comp = median(t_comp, ROUNDS), yaml = median(t_yaml, ROUNDS);
  double floor_t = median(t_floor, ROUNDS), events = median(t_events, ROUNDS);
  double json = median(t_json, ROUNDS), ry = median(t_ry, ROUNDS), rj = median(t_rj, ROUNDS);
  double nj = (double)n_jobs;
  printf("bench_render: %zu TrainJobs, %zu input bytes, %zu YAML / %zu JSON output bytes, "
         "median of %d rounds\n", n_jobs, len, yaml_bytes, json_bytes, ROUNDS);
  printf("  parse only       : %8.3f ms  %7.2f us/job\n", parse * 1e3, parse * 1e6 / nj);
  printf("  render, by phase : load %.3f ms, compute+render %.3f ms (%.1f%% of parse), "
         "emit YAML %.3f ms (%.2fx parse), emit JSON %.3f ms (%.2fx parse)\n",
         load * 1e3, comp * 1e3, 100.0 * comp / parse, yaml * 1e3, yaml / parse, json * 1e3,
         json / parse);
  printf("  libyaml floor    : %8.3f ms  (%.2fx parse): libyaml's emitter alone on the same "
         "trees, plain scalars, no checks\n", floor_t * 1e3, floor_t / parse);
  printf("  render -o yaml   : %8.3f ms  %7.2f us/job  %9.0f jobs/s  ratio %.2fx\n", ry * 1e3,
         ry * 1e6 / nj, nj / ry, ry / parse);
  printf("  render -o json   : %8.3f ms  %7.2f us/job  %9.0f jobs/s  ratio %.2fx\n", rj * 1e3,
         rj * 1e6 / nj, nj / rj, rj / parse);
  printf("  libyaml events   : %8.3f ms  %7.2f us/job: libyaml's event parse of the same bytes\n",
         events * 1e3, events * 1e6 / nj);
  printf("  render -o yaml vs libyaml event parse: %.2fx (issue 22 row 8, goal <= 1.5x)\n",
         ry / events);
  printf("  goals (issue 2): ratio render/parse <= 1.5x, >= 20000 jobs/s on one core\n");
  free(buf);
  return 0;
}
