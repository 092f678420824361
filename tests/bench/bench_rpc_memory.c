/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_rpc_memory: what big Evaluate requests cost the server in memory.
 * The server runs in a child process (forked before gRPC starts, so the
 * client's copies of the request do not count); the parent sends Evaluate
 * requests that carry an inline cluster of N nodes (100,000: about 18 MB,
 * under the 32 MiB message cap) and reads the child's peak and current
 * resident set (VmHWM and VmRSS, the peak reset before each phase through
 * /proc/PID/clear_refs): at rest, one request, then 4 at once.  It prints
 * the status of every call (RESOURCE_EXHAUSTED is an answer, not a
 * failure) and the figures.  Last, with 32 Evaluates of a 10,000-node
 * inline cluster kept in flight, it sends 21 Health/Checks 100 ms apart
 * with a 2 s deadline each and prints how many missed it (a readiness
 * probe must not flap under load).  It exits 1 only when a call gets no
 * status.
 *
 * Usage: bench_rpc_memory [--short] [--nodes N] [--threads N]
 *   --short     20,000 nodes (CI)
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "gangbridge/v1/placement.pb-c.h"
#include "gb_rpc_client.h"
#include "gb_rpc_server.h"
#include "gb_rpc_service.h"
#include "grpc/health/v1/health.pb-c.h"

#define CONCURRENT 4

/* A cluster of n nodes, 64 per rack, as one YAML stream (malloc'd). */
static char *cluster_yaml(int n, size_t *len) {
  size_t cap = (size_t)n * 220 + 64, used = 0;
  char *buf = malloc(cap);
  if (!buf)
    return NULL;
  for (int i = 0; i < n; i++)
    used += (size_t)snprintf(buf + used, cap - used,
                             "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%06d\n"
                             "  labels: {rack: rack-%04d, zone: zone-%d}\nstatus:\n"
                             "  allocatable: {cpu: '64', memory: 512Gi, pods: '110'}\n",
                             i, i / 64, i / 4096);
  *len = used;
  return buf;
}

/* Reads VmHWM and VmRSS (KiB) of pid. */
static void mem_of(pid_t pid, long *hwm, long *rss) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
  *hwm = *rss = -1;
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  while (fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "VmHWM:", 6))
      *hwm = strtol(line + 6, NULL, 10);
    if (!strncmp(line, "VmRSS:", 6))
      *rss = strtol(line + 6, NULL, 10);
  }
  fclose(f);
}

static void reset_peak(pid_t pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("5", f);
    fclose(f);
  }
}

/* The child: serve until killed, writing the port to fd. */
static void serve_child(int threads, int fd) {
  struct gb_rpc_config cfg;
  gb_rpc_config_init(&cfg);
  cfg.addr = "127.0.0.1:0";
  cfg.threads = threads;
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_rpc_server *srv = NULL;
  struct gb_rpc_service *svc = gb_rpc_service_new();
  if (!svc || gb_rpc_server_new(&cfg, &srv, &d) || gb_rpc_service_register(svc, srv) ||
      gb_rpc_server_start(srv, &d)) {
    for (size_t i = 0; i < d.n; i++)
      fprintf(stderr, "bench_rpc_memory: %s\n", d.msgs[i]);
    _exit(1);
  }
  int port = gb_rpc_server_port(srv);
  if (write(fd, &port, sizeof(port)) != (ssize_t)sizeof(port))
    _exit(1);
  for (;;)
    pause();
}

struct call_arg {
  const char *addr;
  const Gangbridge__V1__EvaluateRequest *req;
  int code;
  double seconds;
};

static void *do_call(void *p) {
  struct call_arg *a = p;
  struct gb_rpc_client_config cc = {0};
  cc.addr = a->addr;
  struct gb_rpc_client *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  a->code = -1;
  if (gb_rpc_client_new(&cc, &c, &d) == 0) {
    struct gb_rpc_status st = {0, NULL};
    ProtobufCMessage *r = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (gb_rpc_client_call(c, "/gangbridge.v1.PlacementEvaluator/Evaluate", &a->req->base,
                           &gangbridge__v1__evaluate_response__descriptor, 600000, &r,
                           &st) == 0)
      a->code = st.code;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    a->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (r)
      protobuf_c_message_free_unpacked(r, NULL);
    gb_rpc_status_clear(&st);
    gb_rpc_client_free(c);
  }
  gc_diags_destroy(&d);
  return NULL;
}

/* Runs k calls at once; returns how many got no status at all. */
static int phase(pid_t pid, const char *addr, const Gangbridge__V1__EvaluateRequest *req, int k,
                 const char *what) {
  pthread_t th[CONCURRENT];
  struct call_arg args[CONCURRENT];
  reset_peak(pid);
  for (int i = 0; i < k; i++) {
    args[i] = (struct call_arg){addr, req, -1, 0};
    pthread_create(&th[i], NULL, do_call, &args[i]);
  }
  int lost = 0;
  printf("%-14s", what);
  for (int i = 0; i < k; i++) {
    pthread_join(th[i], NULL);
    lost += args[i].code < 0;
    printf(" %s (%.1f s)", args[i].code < 0 ? "no status" : gb_rpc_code_name(args[i].code),
           args[i].seconds);
  }
  sleep(1); /* let the server finish freeing */
  long hwm, rss;
  mem_of(pid, &hwm, &rss);
  printf("\n%-14s peak RSS %ld MiB, RSS after %ld MiB\n", "", hwm / 1024, rss / 1024);
  return lost;
}

#define LOAD_CLIENTS 32
#define CHECKS 21

struct load_arg {
  const char *addr;
  const Gangbridge__V1__EvaluateRequest *req;
  atomic_int *stop;
  int calls, busy, other;
};

static void *load_loop(void *p) {
  struct load_arg *a = p;
  struct call_arg one = {a->addr, a->req, -1, 0};
  while (!atomic_load(a->stop)) {
    do_call(&one);
    a->calls++;
    a->busy += one.code == GB_RPC_RESOURCE_EXHAUSTED;
    a->other += one.code != GB_RPC_OK && one.code != GB_RPC_RESOURCE_EXHAUSTED;
  }
  return NULL;
}

/* Health/Check under load: prints the misses and the slowest answer. */
static void health_phase(const char *addr, const Gangbridge__V1__EvaluateRequest *req) {
  static pthread_t th[LOAD_CLIENTS];
  static struct load_arg args[LOAD_CLIENTS];
  atomic_int stop = 0;
  for (int i = 0; i < LOAD_CLIENTS; i++) {
    args[i] = (struct load_arg){addr, req, &stop, 0, 0, 0};
    pthread_create(&th[i], NULL, load_loop, &args[i]);
  }
  sleep(1); /* let the load build up */
  struct gb_rpc_client_config cc = {0};
  cc.addr = addr;
  struct gb_rpc_client *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int missed = 0;
  double worst = 0;
  if (gb_rpc_client_new(&cc, &c, &d) == 0) {
    Grpc__Health__V1__HealthCheckRequest hreq;
    grpc__health__v1__health_check_request__init(&hreq);
    for (int k = 0; k < CHECKS; k++) {
      struct gb_rpc_status st = {0, NULL};
      ProtobufCMessage *r = NULL;
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      if (gb_rpc_client_call(c, "/grpc.health.v1.Health/Check", &hreq.base,
                             &grpc__health__v1__health_check_response__descriptor, 2000, &r,
                             &st) != 0 || st.code != GB_RPC_OK)
        missed++;
      clock_gettime(CLOCK_MONOTONIC, &t1);
      double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
      worst = s > worst ? s : worst;
      if (r)
        protobuf_c_message_free_unpacked(r, NULL);
      gb_rpc_status_clear(&st);
      struct timespec gap = {0, 100 * 1000000L};
      nanosleep(&gap, NULL);
    }
    gb_rpc_client_free(c);
  }
  gc_diags_destroy(&d);
  atomic_store(&stop, 1);
  int calls = 0, busy = 0, other = 0;
  for (int i = 0; i < LOAD_CLIENTS; i++) {
    pthread_join(th[i], NULL);
    calls += args[i].calls;
    busy += args[i].busy;
    other += args[i].other;
  }
  printf("health under %d Evaluates in flight: %d of %d Checks missed a 2 s deadline, slowest "
         "%.2f s (Evaluates: %d, %d of them RESOURCE_EXHAUSTED, %d other errors)\n",
         LOAD_CLIENTS, missed, CHECKS, worst, calls, busy, other);
}

int main(int argc, char **argv) {
  int nodes = 100000, threads = 6;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short"))
      nodes = 20000;
    else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
      nodes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_rpc_memory [--short] [--nodes N] [--threads N]\n");
      return 2;
    }
  }
  int pfd[2];
  if (pipe(pfd))
    return 1;
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    serve_child(threads, pfd[1]);
  }
  close(pfd[1]);
  int port = 0;
  if (read(pfd[0], &port, sizeof(port)) != (ssize_t)sizeof(port)) {
    fprintf(stderr, "bench_rpc_memory: the server did not start\n");
    return 1;
  }
  char addr[64];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
  size_t len = 0;
  char *yaml = cluster_yaml(nodes, &len);
  if (!yaml)
    return 1;
  Gangbridge__V1__GangPodSet__RequestEntry cpu;
  gangbridge__v1__gang_pod_set__request_entry__init(&cpu);
  cpu.key = "cpu";
  cpu.value = "8";
  Gangbridge__V1__GangPodSet__RequestEntry *reqs[1] = {&cpu};
  Gangbridge__V1__GangPodSet ps;
  gangbridge__v1__gang_pod_set__init(&ps);
  ps.name = "worker";
  ps.pods = 16;
  ps.request = reqs;
  ps.n_request = 1;
  Gangbridge__V1__GangPodSet *sets[1] = {&ps};
  Gangbridge__V1__GangSpec spec;
  gangbridge__v1__gang_spec__init(&spec);
  spec.pod_sets = sets;
  spec.n_pod_sets = 1;
  Gangbridge__V1__EvaluateRequest req;
  gangbridge__v1__evaluate_request__init(&req);
  req.gang_source_case = GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_GANG;
  req.gang = &spec;
  ProtobufCBinaryData doc = {len, (uint8_t *)yaml};
  req.cluster = &doc;
  req.n_cluster = 1;
  char *levels[] = {"zone", "rack"};
  req.levels = levels;
  req.n_levels = 2;
  long hwm, rss;
  mem_of(pid, &hwm, &rss);
  printf("bench_rpc_memory: %d nodes, request %.1f MB, server threads %d\n", nodes,
         (double)len / 1e6, threads);
  printf("%-14s RSS %ld MiB\n", "at rest", rss / 1024);
  int lost = phase(pid, addr, &req, 1, "1 Evaluate");
  lost += phase(pid, addr, &req, CONCURRENT, "4 at once");
  size_t small_len = 0;
  char *small = cluster_yaml(10000, &small_len);
  if (small) {
    ProtobufCBinaryData sdoc = {small_len, (uint8_t *)small};
    req.cluster = &sdoc;
    health_phase(addr, &req);
    free(small);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  free(yaml);
  return lost ? 1 : 0;
}
