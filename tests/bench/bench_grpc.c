/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_grpc: closed-loop load on the gangbridge gRPC server, in process.
 * For each method (grpc.health.v1.Health/Check as the empty method,
 * GangCalculator/Calculate on a TrainJob + runtime, PlacementEvaluator/
 * Evaluate on the live snapshot) and each concurrency 1..64, one client
 * thread keeps exactly `concurrency` calls in flight on one channel (a new
 * call starts as soon as one finishes) for a fixed time, and prints
 * requests per second, p50 and p99 latency.  "calculate" repeats one
 * request (a scheduler asking again about the same TrainJob: the server's
 * reply cache answers); "calc-unique" cycles through more distinct
 * TrainJobs than the cache holds, so every call is computed.  Then it
 * prints the
 * Calculate/empty cost ratio (empty RPS over Calculate RPS) per
 * concurrency.  Every call must succeed: a failed call makes the program
 * exit 1.
 *
 * Usage: bench_grpc [--short] [--threads N] [--seconds S] [--method NAME]
 *   --short     0.25 s per point (CI)
 *   --threads   server worker threads (default: the server's default)
 *   --method    run only empty, calculate, evaluate or calc-unique (profiling)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "gangbridge/v1/calculator.pb-c.h"
#include "gangbridge/v1/placement.pb-c.h"
#include "gb_manifest.h"
#include "gb_rpc_server.h"
#include "gb_rpc_service.h"
#include "grpc/health/v1/health.pb-c.h"

#define MAX_CONC 64
#define MAX_SAMPLES (4u << 20)

static const char runtime_yaml[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: ClusterTrainingRuntime\n"
    "metadata:\n"
    "  name: torch-distributed\n"
    "spec:\n"
    "  mlPolicy:\n"
    "    numNodes: 1\n"
    "    torch: {}\n"
    "  template:\n"
    "    metadata:\n"
    "      annotations:\n"
    "        scheduling.volcano.sh/queue-name: research\n"
    "    spec:\n"
    "      replicatedJobs:\n"
    "        - name: dataset-initializer\n"
    "          template:\n"
    "            metadata:\n"
    "              labels:\n"
    "                trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer\n"
    "            spec:\n"
    "              template:\n"
    "                spec:\n"
    "                  containers:\n"
    "                    - name: dataset-initializer\n"
    "                      image: ghcr.io/kubeflow/trainer/dataset-initializer\n"
    "                      resources: {requests: {cpu: '2', memory: 4Gi}}\n"
    "        - name: node\n"
    "          dependsOn:\n"
    "            - name: dataset-initializer\n"
    "              status: Complete\n"
    "          template:\n"
    "            metadata:\n"
    "              labels:\n"
    "                trainer.kubeflow.org/trainjob-ancestor-step: trainer\n"
    "            spec:\n"
    "              template:\n"
    "                spec:\n"
    "                  containers:\n"
    "                    - name: node\n"
    "                      image: pytorch/pytorch:2.5.0-cuda12.4-cudnn9-runtime\n"
    "                      command: [torchrun, train.py]\n"
    "                      resources:\n"
    "                        requests: {cpu: '8', memory: 64Gi}\n"
    "                        limits: {nvidia.com/gpu: '8'}\n";

static const char trainjob_yaml[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainJob\n"
    "metadata:\n"
    "  name: llama-finetune\n"
    "  namespace: team-a\n"
    "  uid: 5b1d3c2e-8f0a-4c7e-9d21-3a6f0e7b9c11\n"
    "spec:\n"
    "  runtimeRef:\n"
    "    name: torch-distributed\n"
    "  trainer:\n"
    "    numNodes: 4\n"
    "    resourcesPerNode:\n"
    "      requests: {cpu: '16', memory: 128Gi, nvidia.com/gpu: '8'}\n";

struct slot {
  grpc_call *call;
  grpc_byte_buffer *send;
  grpc_byte_buffer *recv;
  grpc_metadata_array init_md, trail_md;
  grpc_status_code status;
  grpc_slice details;
  int64_t t0;
};

struct point {
  double rps, p50_us, p99_us;
  double cpu_us; /* process CPU (server + client, user + system) per call */
  long errors;
};

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int start_call(grpc_channel *ch, grpc_completion_queue *cq, grpc_slice method,
                      grpc_slice payload, struct slot *s) {
  memset(s, 0, sizeof(*s));
  s->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
                                     gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                                  gpr_time_from_seconds(10, GPR_TIMESPAN)),
                                     NULL);
  s->send = grpc_raw_byte_buffer_create(&payload, 1);
  grpc_metadata_array_init(&s->init_md);
  grpc_metadata_array_init(&s->trail_md);
  s->details = grpc_empty_slice();
  grpc_op ops[6];
  memset(ops, 0, sizeof(ops));
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[1].op = GRPC_OP_SEND_MESSAGE;
  ops[1].data.send_message.send_message = s->send;
  ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
  ops[4].op = GRPC_OP_RECV_MESSAGE;
  ops[4].data.recv_message.recv_message = &s->recv;
  ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  ops[5].data.recv_status_on_client.trailing_metadata = &s->trail_md;
  ops[5].data.recv_status_on_client.status = &s->status;
  ops[5].data.recv_status_on_client.status_details = &s->details;
  s->t0 = now_ns();
  return grpc_call_start_batch(s->call, ops, 6, s, NULL) == GRPC_CALL_OK ? 0 : -1;
}

static void end_call(struct slot *s) {
  grpc_byte_buffer_destroy(s->send);
  if (s->recv)
    grpc_byte_buffer_destroy(s->recv);
  grpc_metadata_array_destroy(&s->init_md);
  grpc_metadata_array_destroy(&s->trail_md);
  grpc_slice_unref(s->details);
  grpc_call_unref(s->call);
}

/* Runs one closed-loop point; samples is scratch of MAX_SAMPLES entries. */
static struct point run_point(grpc_channel *ch, const char *method, const grpc_slice *payloads,
                              size_t n_payloads, int conc, double seconds, int64_t *samples) {
  size_t next = 0;
  struct point p = {0, 0, 0, 0, 0};
  double cpu0 = cpu_seconds();
  grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
  grpc_slice m = grpc_slice_from_copied_string(method);
  struct slot slots[MAX_CONC];
  size_t n = 0;
  int inflight = 0;
  int64_t t_start = now_ns(), t_end = t_start + (int64_t)(seconds * 1e9);
  for (int i = 0; i < conc; i++)
    if (start_call(ch, cq, m, payloads[next++ % n_payloads], &slots[i]) == 0)
      inflight++;
  while (inflight > 0) {
    grpc_event ev = grpc_completion_queue_next(
        cq, gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(500, GPR_TIMESPAN)),
        NULL);
    if (ev.type != GRPC_OP_COMPLETE)
      continue;
    struct slot *s = ev.tag;
    int64_t t = now_ns();
    if (s->status != GRPC_STATUS_OK || !s->recv) {
      if (p.errors++ == 0) {
        char *d = grpc_slice_to_c_string(s->details);
        fprintf(stderr, "bench_grpc: %s failed: status %d: %s\n", method, (int)s->status, d);
        gpr_free(d);
      }
    } else if (n < MAX_SAMPLES) {
      samples[n++] = t - s->t0;
    }
    end_call(s);
    inflight--;
    if (t < t_end && start_call(ch, cq, m, payloads[next++ % n_payloads], s) == 0)
      inflight++;
  }
  int64_t elapsed = now_ns() - t_start;
  double cpu = cpu_seconds() - cpu0;
  grpc_slice_unref(m);
  grpc_completion_queue_shutdown(cq);
  while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
         GRPC_QUEUE_SHUTDOWN)
    ;
  grpc_completion_queue_destroy(cq);
  if (n) {
    qsort(samples, n, sizeof(*samples), cmp_i64);
    p.p50_us = samples[n / 2] / 1e3;
    p.p99_us = samples[(size_t)((double)n * 0.99) < n ? (size_t)((double)n * 0.99) : n - 1] / 1e3;
    p.rps = (double)n / ((double)elapsed / 1e9);
    p.cpu_us = cpu * 1e6 / (double)n;
  }
  return p;
}

static grpc_slice pack(const ProtobufCMessage *msg) {
  size_t len = protobuf_c_message_get_packed_size(msg);
  grpc_slice s = grpc_slice_malloc(len);
  protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(s));
  return s;
}

/* A cluster of 32 racks x 8 nodes (8 gpu, 64 cpu each) as the live snapshot. */
static int load_cluster(struct gb_rpc_service *svc) {
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  if (!buf)
    return -1;
  for (int r = 0; r < 32; r++)
    for (int k = 0; k < 8; k++)
      len += (size_t)snprintf(buf + len, cap - len,
                              "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%02d-%d\n"
                              "  labels: {rack: rack-%02d, block: block-%d}\n"
                              "status:\n  allocatable: {cpu: '64', memory: 512Gi, "
                              "nvidia.com/gpu: '8', pods: '110'}\n",
                              r, k, r, r / 8);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = ds ? gb_manifest_load_buffer(ds, "cluster", buf, len, &d) : -1;
  const struct gc_value **docs = ds ? calloc(ds->n, sizeof(*docs)) : NULL;
  if (!rc && docs) {
    for (size_t i = 0; i < ds->n; i++)
      docs[i] = ds->docs[i].root;
    const char *levels[] = {"block", "rack"};
    rc = gb_rpc_service_snapshot_replace(svc, docs, NULL, ds->n, levels, 2, &d);
  }
  for (size_t i = 0; i < d.n; i++)
    fprintf(stderr, "bench_grpc: %s\n", d.msgs[i]);
  free(docs);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  free(buf);
  return rc || !docs ? -1 : 0;
}

int main(int argc, char **argv) {
  double seconds = 1.5;
  int threads = 0;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short"))
      seconds = 0.25;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = (int)strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = strtod(argv[++i], NULL);
    else if (!strcmp(argv[i], "--method") && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr,
              "usage: bench_grpc [--short] [--threads N] [--seconds S] [--method NAME]\n");
      return 2;
    }
  }
  int64_t *samples = malloc(MAX_SAMPLES * sizeof(*samples));
  struct gb_rpc_service *svc = gb_rpc_service_new();
  struct gb_rpc_server *srv = NULL;
  struct gb_rpc_config cfg;
  struct gc_diags d;
  gc_diags_init(&d);
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.threads = threads;
  if (!samples || !svc || gb_rpc_server_new(&cfg, &srv, &d) || gb_rpc_service_register(svc, srv) ||
      load_cluster(svc) || gb_rpc_server_start(srv, &d)) {
    for (size_t i = 0; i < d.n; i++)
      fprintf(stderr, "bench_grpc: %s\n", d.msgs[i]);
    fprintf(stderr, "bench_grpc: cannot start the server\n");
    return 1;
  }
  char target[64];
  snprintf(target, sizeof(target), "127.0.0.1:%d", gb_rpc_server_port(srv));
  grpc_init();
  grpc_channel_credentials *creds = grpc_insecure_credentials_create();
  grpc_channel *ch = grpc_channel_create(target, creds, NULL);
  grpc_channel_credentials_release(creds);

  /* Requests. */
  Grpc__Health__V1__HealthCheckRequest hreq;
  grpc__health__v1__health_check_request__init(&hreq);
  ProtobufCBinaryData docs[2] = {{sizeof(runtime_yaml) - 1, (uint8_t *)runtime_yaml},
                                 {sizeof(trainjob_yaml) - 1, (uint8_t *)trainjob_yaml}};
  Gangbridge__V1__CalculateRequest creq;
  gangbridge__v1__calculate_request__init(&creq);
  creq.manifests = docs;
  creq.n_manifests = 2;
  Gangbridge__V1__GangPodSet__RequestEntry gpu, cpu;
  gangbridge__v1__gang_pod_set__request_entry__init(&gpu);
  gangbridge__v1__gang_pod_set__request_entry__init(&cpu);
  gpu.key = "nvidia.com/gpu";
  gpu.value = "8";
  cpu.key = "cpu";
  cpu.value = "32";
  Gangbridge__V1__GangPodSet__RequestEntry *reqs[2] = {&cpu, &gpu};
  Gangbridge__V1__GangPodSet ps;
  gangbridge__v1__gang_pod_set__init(&ps);
  ps.name = "worker";
  ps.pods = 16;
  ps.request = reqs;
  ps.n_request = 2;
  Gangbridge__V1__GangPodSet *sets[1] = {&ps};
  Gangbridge__V1__GangSpec spec;
  gangbridge__v1__gang_spec__init(&spec);
  spec.pod_sets = sets;
  spec.n_pod_sets = 1;
  Gangbridge__V1__TopologyPolicy pol;
  gangbridge__v1__topology_policy__init(&pol);
  pol.mode = "hard";
  pol.highest_tier_opt_case = GANGBRIDGE__V1__TOPOLOGY_POLICY__HIGHEST_TIER_OPT_HIGHEST_TIER;
  pol.highest_tier = 2;
  Gangbridge__V1__EvaluateRequest ereq;
  gangbridge__v1__evaluate_request__init(&ereq);
  ereq.gang_source_case = GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_GANG;
  ereq.gang = &spec;
  ereq.policy = &pol;

  /* Distinct TrainJobs (by name), more than the reply cache holds. */
  enum { N_UNIQUE = 8192 };
  grpc_slice *unique = calloc(N_UNIQUE, sizeof(*unique));
  char *job = malloc(sizeof(trainjob_yaml) + 32);
  if (!unique || !job)
    return 1;
  int name_end = (int)(strstr(trainjob_yaml, "llama-finetune") - trainjob_yaml) + 14;
  for (int i = 0; i < N_UNIQUE; i++) {
    int n = snprintf(job, sizeof(trainjob_yaml) + 32, "%.*s-%05d%s", name_end, trainjob_yaml, i,
                     trainjob_yaml + name_end);
    ProtobufCBinaryData udocs[2] = {docs[0], {(size_t)n, (uint8_t *)job}};
    creq.manifests = udocs;
    unique[i] = pack(&creq.base);
  }
  creq.manifests = docs;
  grpc_slice one[3] = {pack(&hreq.base), pack(&creq.base), pack(&ereq.base)};
  struct {
    const char *label, *method;
    const grpc_slice *payloads;
    size_t n;
  } methods[4] = {
      {"empty", "/grpc.health.v1.Health/Check", &one[0], 1},
      {"calculate", "/gangbridge.v1.GangCalculator/Calculate", &one[1], 1},
      {"evaluate", "/gangbridge.v1.PlacementEvaluator/Evaluate", &one[2], 1},
      {"calc-unique", "/gangbridge.v1.GangCalculator/Calculate", unique, N_UNIQUE},
  };
  static const int concs[] = {1, 2, 4, 8, 16, 32, 64};
  enum { NC = sizeof(concs) / sizeof(concs[0]) };
  struct point res[4][NC];
  memset(res, 0, sizeof(res));
  long errors = 0;
  printf("bench_grpc: in-process server, %d worker threads, %.2f s per point, 256-node snapshot\n",
         threads ? threads : 0, seconds);
  printf("%-11s %5s %10s %10s %10s %10s\n", "method", "conc", "rps", "p50_us", "p99_us",
         "cpu_us");
  /* Warm up connections and caches. */
  for (int k = 0; k < 4; k++)
    run_point(ch, methods[k].method, methods[k].payloads, methods[k].n, 4, 0.1, samples);
  for (int k = 0; k < 4; k++) {
    if (only && strcmp(only, methods[k].label))
      continue;
    for (int c = 0; c < NC; c++) {
      res[k][c] = run_point(ch, methods[k].method, methods[k].payloads, methods[k].n, concs[c],
                            seconds, samples);
      errors += res[k][c].errors;
      printf("%-11s %5d %10.0f %10.1f %10.1f %10.1f%s\n", methods[k].label, concs[c],
             res[k][c].rps, res[k][c].p50_us, res[k][c].p99_us, res[k][c].cpu_us,
             res[k][c].errors ? "  ERRORS" : "");
      fflush(stdout);
    }
  }
  printf("\n%5s %22s %22s %22s\n", "conc", "calculate/empty cost", "evaluate/empty cost",
         "calc-unique/empty cost");
  for (int c = 0; c < NC; c++)
    printf("%5d %22.2f %22.2f %22.2f\n", concs[c],
           res[1][c].rps > 0 ? res[0][c].rps / res[1][c].rps : 0.0,
           res[2][c].rps > 0 ? res[0][c].rps / res[2][c].rps : 0.0,
           res[3][c].rps > 0 ? res[0][c].rps / res[3][c].rps : 0.0);
  /* CPU per call is what a busy (shared) machine distorts least. */
  double cpu_call[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; k++) {
    for (int c = 0; c < NC; c++)
      cpu_call[k] += res[k][c].cpu_us;
    cpu_call[k] /= NC;
  }
  printf("\nCPU per call (mean over concurrencies): empty %.1f us, calculate %.1f us (ratio %.2f),"
         " evaluate %.1f us (ratio %.2f), calc-unique %.1f us (ratio %.2f)\n",
         cpu_call[0], cpu_call[1], cpu_call[0] > 0 ? cpu_call[1] / cpu_call[0] : 0.0, cpu_call[2],
         cpu_call[0] > 0 ? cpu_call[2] / cpu_call[0] : 0.0, cpu_call[3],
         cpu_call[0] > 0 ? cpu_call[3] / cpu_call[0] : 0.0);
  double best[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4; k++)
    for (int c = 0; c < NC; c++)
      if (res[k][c].rps > best[k])
        best[k] = res[k][c].rps;
  printf("\npeak rps: empty %.0f, calculate %.0f, evaluate %.0f, calc-unique %.0f; calculate p99"
         " at conc 8: %.1f us; goals: ratio <= 1.3, p99 <= 1000 us at conc 8, >= 15000 rps\n",
         best[0], best[1], best[2], best[3], res[1][3].p99_us);

  for (int k = 0; k < 3; k++)
    grpc_slice_unref(one[k]);
  for (int i = 0; i < N_UNIQUE; i++)
    grpc_slice_unref(unique[i]);
  free(unique);
  free(job);
  grpc_channel_destroy(ch);
  grpc_shutdown();
  gb_rpc_server_free(srv);
  gb_rpc_service_free(svc);
  gc_diags_destroy(&d);
  free(samples);
  return errors ? 1 : 0;
}
