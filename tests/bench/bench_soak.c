/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_soak: the service under a mixed hostile flood, on loopback only.
 *
 * Part 1 (in process): gb_http with its default limits and a /healthz route;
 * 200 slowloris clients from 127.0.0.2 each send a partial request and then
 * one byte a second (reconnecting when cut off), while a prober on
 * 127.0.0.1 (the kubelet's stand-in) opens a new connection for each
 * GET /healthz.  Prints the probes' p50/p99/max latency and how many went
 * unanswered within 1 s (the kubelet's default probe timeout).
 *
 * Part 2 (the real binary): runs `gangbridge serve --offline` with gRPC and
 * --http-addr, and floods it at once with slowloris clients on the HTTP
 * port, idle sockets on both ports, big Evaluates (a cluster of thousands
 * of Nodes inline), malformed HTTP requests and malformed gRPC messages.
 * Meanwhile it samples GET /healthz and grpc.health.v1.Health/Check latency
 * (new HTTP connection per probe, one gRPC channel) and the server's RSS.
 * Prints p50/p99/max per probe kind, the peak RSS and the flood's counts.
 *
 * Fails (exit 1) only on behaviour: a probe not answered within 1 s, the
 * server dying or not stopping cleanly on SIGTERM, or a peak RSS above the
 * documented bound (SOAK_RSS_BOUND_MIB, docs/operating.md; four times that
 * under AddressSanitizer).  Latency figures are printed, never asserted.
 *
 * Usage: bench_soak [--short] [--seconds S]
 *   --short    4 s per part, smaller flood (CI); default 30 s per part
 * The binary comes from $GANGBRIDGE, else ./gangbridge next to bench/.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <grpc/grpc.h>

#include "gangbridge/v1/placement.pb-c.h"
#include "gb_bench.h"
#include "gb_http.h"
#include "gb_log.h"
#include "gb_rpc_client.h"
#include "gb_rpc_client_test.h"
#include "grpc/health/v1/health.pb-c.h"

/* The documented bound of `serve --offline` under this flood (MiB). */
#define SOAK_RSS_BOUND_MIB 512
#define PROBE_TIMEOUT_MS 1000
#define MAX_SAMPLES 100000
#define MAX_FLOOD 512

extern char **environ;

struct samples {
  pthread_mutex_t mu;
  double v[MAX_SAMPLES];
  size_t n;
  size_t missed; /* not answered (rightly) within PROBE_TIMEOUT_MS */
};

struct soak {
  atomic_int stop;
  double seconds;
  int slow_clients, idle_sockets, big_nodes;
  unsigned http_port;
  int grpc_port;
  pid_t pid;
  struct samples healthz, grpc_check;
  atomic_long slow_reconnects, idle_opened, evaluates, evaluate_errors, junk_http, junk_grpc;
  long peak_rss_kib;
};

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void record(struct samples *s, double seconds, int ok) {
  pthread_mutex_lock(&s->mu);
  if (!ok || seconds * 1000 > PROBE_TIMEOUT_MS)
    s->missed++;
  else if (s->n < MAX_SAMPLES)
    s->v[s->n++] = seconds;
  pthread_mutex_unlock(&s->mu);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *label, struct samples *s) {
  qsort(s->v, s->n, sizeof(double), cmp_double);
  if (!s->n) {
    printf("%-28s answered 0, missed %zu\n", label, s->missed);
    return;
  }
  printf("%-28s answered %5zu  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  missed(>1s) %zu\n",
         label, s->n, s->v[s->n / 2] * 1e3, s->v[(s->n * 99) / 100] * 1e3, s->v[s->n - 1] * 1e3,
         s->missed);
}

/* A non-blocking TCP socket from `from` to 127.0.0.1:port, connecting; -1
 * when the socket cannot be made. */
static int dial(const char *from, unsigned port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  inet_pton(AF_INET, from, &a.sin_addr);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  return fd;
}

/* 1 when the peer has closed fd (or it failed), 0 while it is open. */
static int gone(int fd) {
  char c[256];
  ssize_t n = recv(fd, c, sizeof(c), MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN &&
                    errno != EINPROGRESS);
}

/* One GET /healthz on a new connection from 127.0.0.1, as the kubelet does. */
static void probe_http(unsigned port, struct samples *out) {
  double t0 = gb_bench_mono_s();
  int fd = dial("127.0.0.1", port);
  int ok = 0;
  if (fd >= 0) {
    struct pollfd p = {fd, POLLOUT, 0};
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n";
    if (poll(&p, 1, PROBE_TIMEOUT_MS) == 1 &&
        send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(req) - 1)) {
      char buf[512];
      size_t n = 0;
      while (n < sizeof(buf) - 1) {
        int left = PROBE_TIMEOUT_MS - (int)((gb_bench_mono_s() - t0) * 1000);
        struct pollfd r = {fd, POLLIN, 0};
        if (left <= 0 || poll(&r, 1, left) != 1)
          break;
        ssize_t got = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
        if (got <= 0)
          break;
        n += (size_t)got;
        buf[n] = '\0';
        if (strstr(buf, "\r\n\r\nok")) {
          ok = !strncmp(buf, "HTTP/1.1 200", 12);
          break;
        }
      }
    }
    close(fd);
  }
  record(out, gb_bench_mono_s() - t0, ok);
}

/* Slowloris: each client sends a partial request, then one byte a second;
 * a client cut off by the server reconnects at once. */
struct slow_args {
  struct soak *s;
  unsigned port;
  int n;
};

static void *slowloris_main(void *arg) {
  struct slow_args *a = arg;
  int fds[MAX_FLOOD];
  int n = a->n > MAX_FLOOD ? MAX_FLOOD : a->n;
  for (int i = 0; i < n; i++)
    fds[i] = -1;
  while (!atomic_load(&a->s->stop)) {
    for (int i = 0; i < n; i++) {
      if (fds[i] >= 0 && gone(fds[i])) {
        close(fds[i]);
        fds[i] = -1;
        atomic_fetch_add(&a->s->slow_reconnects, 1);
      }
      if (fds[i] < 0) {
        fds[i] = dial("127.0.0.2", a->port);
        if (fds[i] >= 0)
          send(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32, MSG_NOSIGNAL);
      } else {
        send(fds[i], "a", 1, MSG_NOSIGNAL);
      }
    }
    for (int t = 0; t < 10 && !atomic_load(&a->s->stop); t++)
      sleep_ms(100);
  }
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return NULL;
}

static void *http_prober_main(void *arg) {
  struct soak *s = arg;
  while (!atomic_load(&s->stop)) {
    probe_http(s->http_port, &s->healthz);
    sleep_ms(50);
  }
  return NULL;
}

static int hello(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  (void)ctx;
  (void)req;
  return gb_http_response_printf(resp, 200, NULL, "ok");
}

/* Part 1: the in-process slowloris against gb_http's defaults. */
static int part_slowloris(struct soak *s, int clients) {
  static const struct gb_http_route routes[] = {{"/healthz", 0, GB_HTTP_GET, hello, NULL, 0}};
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.name = "soak";
  cfg.address = "127.0.0.1";
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  if (gb_http_start(&cfg, routes, 1, &srv, &d)) {
    fprintf(stderr, "bench_soak: cannot start gb_http: %s\n", d.n ? d.msgs[0] : "?");
    gc_diags_destroy(&d);
    return 1;
  }
  gc_diags_destroy(&d);
  s->http_port = gb_http_port(srv);
  struct slow_args sa = {s, s->http_port, clients};
  pthread_t slow, prober;
  pthread_create(&slow, NULL, slowloris_main, &sa);
  sleep_ms(500); /* let the flood take its connections first */
  pthread_create(&prober, NULL, http_prober_main, s);
  sleep_ms((int)(s->seconds * 1000));
  atomic_store(&s->stop, 1);
  pthread_join(prober, NULL);
  pthread_join(slow, NULL);
  gb_http_stop(srv);
  printf("part 1: gb_http defaults, %d slowloris clients from 127.0.0.2, %.0f s "
         "(reconnects after a cut: %ld)\n",
         clients, s->seconds, atomic_load(&s->slow_reconnects));
  report("  GET /healthz (127.0.0.1)", &s->healthz);
  if (s->healthz.missed || !s->healthz.n) {
    fprintf(stderr, "bench_soak: FAIL: %zu probes unanswered within 1 s during the slowloris\n",
            s->healthz.missed);
    return 1;
  }
  return 0;
}

/* Idle sockets: connect and never send a byte; reopen when closed. */
struct idle_args {
  struct soak *s;
  unsigned ports[2];
  int n;
};

static void *idle_main(void *arg) {
  struct idle_args *a = arg;
  int fds[MAX_FLOOD];
  int n = a->n > MAX_FLOOD ? MAX_FLOOD : a->n;
  for (int i = 0; i < n; i++)
    fds[i] = -1;
  while (!atomic_load(&a->s->stop)) {
    for (int i = 0; i < n; i++) {
      if (fds[i] >= 0 && gone(fds[i])) {
        close(fds[i]);
        fds[i] = -1;
      }
      if (fds[i] < 0 && (fds[i] = dial("127.0.0.2", a->ports[i % 2])) >= 0)
        atomic_fetch_add(&a->s->idle_opened, 1);
    }
    sleep_ms(500);
  }
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return NULL;
}

/* Malformed HTTP: a new connection per request, from 127.0.0.2. */
static void *junk_http_main(void *arg) {
  struct soak *s = arg;
  static const char *junk[] = {
      "GARBAGE\r\n\r\n",
      "GET / HTTP/9.9\r\n\r\n",
      "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
      "GET /readyz/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
  };
  size_t i = 0;
  while (!atomic_load(&s->stop)) {
    int fd = dial("127.0.0.2", s->http_port);
    if (fd >= 0) {
      struct pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, 200) == 1) {
        const char *j = junk[i++ % (sizeof(junk) / sizeof(junk[0]))];
        send(fd, j, strlen(j), MSG_NOSIGNAL);
        struct pollfd r = {fd, POLLIN, 0};
        poll(&r, 1, 200);
        atomic_fetch_add(&s->junk_http, 1);
      }
      close(fd);
    }
    sleep_ms(5);
  }
  return NULL;
}

static struct gb_rpc_client *rpc_client(struct soak *s) {
  char addr[64];
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", s->grpc_port);
  struct gb_rpc_client_config cc = {.addr = addr, .max_message_bytes = 64u << 20};
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_rpc_client *c = NULL;
  if (gb_rpc_client_new(&cc, &c, &d))
    c = NULL;
  gc_diags_destroy(&d);
  return c;
}

/* A cluster of `nodes` Nodes in racks of 16, as one multi-document YAML. */
static char *big_cluster(int nodes, size_t *len) {
  size_t cap = (size_t)nodes * 192 + 1;
  char *b = malloc(cap);
  size_t n = 0;
  for (int i = 0; b && i < nodes; i++) {
    int w = snprintf(b + n, cap - n,
                     "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n%06d\n  labels: "
                     "{rack: r%04d}\nstatus:\n  allocatable: {cpu: '64', memory: 256Gi, "
                     "nvidia.com/gpu: '8', pods: '110'}\n",
                     i, i / 16);
    if (w < 0 || (size_t)w >= cap - n)
      break;
    n += (size_t)w;
  }
  *len = n;
  return b;
}

struct evaluate_args {
  struct soak *s;
  ProtobufCBinaryData cluster;
};

static void *evaluate_main(void *arg) {
  struct evaluate_args *a = arg;
  struct gb_rpc_client *c = rpc_client(a->s);
  if (!c)
    return NULL;
  Gangbridge__V1__GangPodSet__RequestEntry gpu;
  gangbridge__v1__gang_pod_set__request_entry__init(&gpu);
  gpu.key = "nvidia.com/gpu";
  gpu.value = "8";
  Gangbridge__V1__GangPodSet__RequestEntry *reqs[1] = {&gpu};
  Gangbridge__V1__GangPodSet ps;
  gangbridge__v1__gang_pod_set__init(&ps);
  ps.name = "worker";
  ps.pods = 64;
  ps.request = reqs;
  ps.n_request = 1;
  Gangbridge__V1__GangPodSet *sets[1] = {&ps};
  Gangbridge__V1__GangSpec spec;
  gangbridge__v1__gang_spec__init(&spec);
  spec.pod_sets = sets;
  spec.n_pod_sets = 1;
  char *levels[1] = {"rack"};
  Gangbridge__V1__EvaluateRequest req;
  gangbridge__v1__evaluate_request__init(&req);
  req.gang_source_case = GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_GANG;
  req.gang = &spec;
  req.cluster = &a->cluster;
  req.n_cluster = 1;
  req.levels = levels;
  req.n_levels = 1;
  while (!atomic_load(&a->s->stop)) {
    ProtobufCMessage *reply = NULL;
    struct gb_rpc_status st = {0, NULL};
    int rc = gb_rpc_client_call(c, "/gangbridge.v1.PlacementEvaluator/Evaluate", &req.base,
                                &gangbridge__v1__evaluate_response__descriptor, 60000, &reply,
                                &st);
    atomic_fetch_add(rc || st.code ? &a->s->evaluate_errors : &a->s->evaluates, 1);
    if (reply)
      protobuf_c_message_free_unpacked(reply, NULL);
    gb_rpc_status_clear(&st);
  }
  gb_rpc_client_free(c);
  return NULL;
}

/* Malformed gRPC messages to every method. */
static void *junk_grpc_main(void *arg) {
  struct soak *s = arg;
  struct gb_rpc_client *c = rpc_client(s);
  if (!c)
    return NULL;
  static const char *methods[] = {"/gangbridge.v1.PlacementEvaluator/Evaluate",
                                  "/gangbridge.v1.GangCalculator/Calculate",
                                  "/gangbridge.v1.PlacementEvaluator/UpdateNodes",
                                  "/grpc.health.v1.Health/Check", "/no.such.Service/Method"};
  unsigned char junk[512];
  unsigned seed = 7;
  size_t i = 0;
  while (!atomic_load(&s->stop)) {
    for (size_t k = 0; k < sizeof(junk); k++)
      junk[k] = (unsigned char)(rand_r(&seed) & 0xff);
    void *out = NULL;
    size_t out_len = 0;
    struct gb_rpc_status st = {0, NULL};
    gb_rpc_client_call_raw(c, methods[i++ % 5], junk, 1 + (size_t)(rand_r(&seed) % 511), 2000,
                           &out, &out_len, &st);
    free(out);
    gb_rpc_status_clear(&st);
    atomic_fetch_add(&s->junk_grpc, 1);
    sleep_ms(2);
  }
  gb_rpc_client_free(c);
  return NULL;
}

static void *grpc_prober_main(void *arg) {
  struct soak *s = arg;
  struct gb_rpc_client *c = rpc_client(s);
  if (!c)
    return NULL;
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  while (!atomic_load(&s->stop)) {
    double t0 = gb_bench_mono_s();
    ProtobufCMessage *reply = NULL;
    struct gb_rpc_status st = {0, NULL};
    int rc = gb_rpc_client_call(c, "/grpc.health.v1.Health/Check", &req.base,
                                &grpc__health__v1__health_check_response__descriptor,
                                PROBE_TIMEOUT_MS, &reply, &st);
    int ok = !rc && st.code == 0 && reply &&
             ((Grpc__Health__V1__HealthCheckResponse *)reply)->status ==
                 GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    record(&s->grpc_check, gb_bench_mono_s() - t0, ok);
    if (reply)
      protobuf_c_message_free_unpacked(reply, NULL);
    gb_rpc_status_clear(&st);
    sleep_ms(50);
  }
  gb_rpc_client_free(c);
  return NULL;
}

static long child_rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  long v = -1;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "VmRSS:", 6))
      v = strtol(line + 6, NULL, 10);
  fclose(f);
  return v;
}

/* Looks for `what` followed by a port in the server's log. */
static long port_after(const char *log, const char *what) {
  const char *p = strstr(log, what);
  return p ? strtol(p + strlen(what), NULL, 10) : 0;
}

/* Starts the server with its stderr in log_path and reads its ports from
 * there (at most 20 s).  Returns 0 or -1. */
static int spawn_server(struct soak *s, const char *bin, const char *log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log_path, O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  char *argv[] = {(char *)bin, "serve", "--offline", "--grpc-addr", "127.0.0.1:0",
                  "--http-addr", "127.0.0.1:0", "--grace-period", "1", NULL};
  int rc = posix_spawn(&s->pid, bin, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    fprintf(stderr, "bench_soak: cannot run %s: %s\n", bin, strerror(rc));
    return -1;
  }
  char log[8192];
  for (int i = 0; i < 200 && (!s->grpc_port || !s->http_port); i++) {
    sleep_ms(100);
    FILE *f = fopen(log_path, "r");
    if (!f)
      continue;
    size_t n = fread(log, 1, sizeof(log) - 1, f);
    fclose(f);
    log[n] = '\0';
    s->grpc_port = (int)port_after(log, "grpc listening on 127.0.0.1:");
    s->http_port = (unsigned)port_after(log, "http probes listening on 127.0.0.1:");
  }
  return s->grpc_port && s->http_port ? 0 : -1;
}

static void *rss_main(void *arg) {
  struct soak *s = arg;
  while (!atomic_load(&s->stop)) {
    long v = child_rss_kib(s->pid);
    if (v > s->peak_rss_kib)
      s->peak_rss_kib = v;
    sleep_ms(100);
  }
  return NULL;
}

/* Part 2: the real service under the mixed flood.  Returns the number of
 * behaviour failures. */
static int part_service(struct soak *s, const char *bin) {
  char log_path[] = "/tmp/gbsoak.XXXXXX";
  int lfd = mkstemp(log_path);
  if (lfd < 0)
    return 1;
  close(lfd);
  int failures = 0;
  if (spawn_server(s, bin, log_path)) {
    fprintf(stderr, "bench_soak: the server did not start (log in %s)\n", log_path);
    return 1;
  }
  size_t clen = 0;
  char *cluster = big_cluster(s->big_nodes, &clen);
  struct slow_args sa = {s, s->http_port, s->slow_clients};
  struct idle_args ia = {s, {s->http_port, (unsigned)s->grpc_port}, s->idle_sockets};
  struct evaluate_args ea = {s, {clen, (uint8_t *)cluster}};
  pthread_t t[9];
  int nt = 0;
  pthread_create(&t[nt++], NULL, rss_main, s);
  pthread_create(&t[nt++], NULL, slowloris_main, &sa);
  pthread_create(&t[nt++], NULL, idle_main, &ia);
  pthread_create(&t[nt++], NULL, evaluate_main, &ea);
  pthread_create(&t[nt++], NULL, evaluate_main, &ea);
  pthread_create(&t[nt++], NULL, junk_http_main, s);
  pthread_create(&t[nt++], NULL, junk_grpc_main, s);
  sleep_ms(500);
  pthread_create(&t[nt++], NULL, http_prober_main, s);
  pthread_create(&t[nt++], NULL, grpc_prober_main, s);
  double end = gb_bench_mono_s() + s->seconds;
  int died = 0;
  while (gb_bench_mono_s() < end && !died) {
    sleep_ms(100);
    died = waitpid(s->pid, NULL, WNOHANG) == s->pid;
  }
  atomic_store(&s->stop, 1);
  for (int i = 0; i < nt; i++)
    pthread_join(t[i], NULL);
  free(cluster);
  int status = -1;
  if (!died) {
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 100 && waitpid(s->pid, &status, WNOHANG) != s->pid; i++)
      sleep_ms(100);
    if (!WIFEXITED(status)) {
      kill(s->pid, SIGKILL);
      waitpid(s->pid, &status, 0);
    }
  }
  printf("part 2: gangbridge serve --offline --http-addr, %.0f s: %d slowloris clients, %d idle "
         "sockets, 2 x Evaluate on %d inline Nodes (%.1f MiB each), malformed HTTP and gRPC\n",
         s->seconds, s->slow_clients, s->idle_sockets, s->big_nodes, (double)clen / 1048576.0);
  report("  GET /healthz (127.0.0.1)", &s->healthz);
  report("  grpc Health/Check", &s->grpc_check);
  printf("  flood: slowloris reconnects %ld, idle sockets opened %ld, evaluates ok %ld / failed "
         "%ld, malformed http %ld, malformed grpc %ld\n",
         atomic_load(&s->slow_reconnects), atomic_load(&s->idle_opened),
         atomic_load(&s->evaluates), atomic_load(&s->evaluate_errors),
         atomic_load(&s->junk_http), atomic_load(&s->junk_grpc));
  long bound = SOAK_RSS_BOUND_MIB;
#if defined(__SANITIZE_ADDRESS__)
  bound *= 4;
#endif
  printf("  server peak RSS %.1f MiB (bound %ld MiB)\n", (double)s->peak_rss_kib / 1024.0, bound);
  if (died || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench_soak: FAIL: the server %s (log in %s)\n",
            died ? "died during the flood" : "did not stop cleanly on SIGTERM", log_path);
    return failures + 1;
  }
  if (s->healthz.missed || s->grpc_check.missed || !s->healthz.n || !s->grpc_check.n) {
    fprintf(stderr, "bench_soak: FAIL: probes unanswered within 1 s: healthz %zu, Health/Check "
                    "%zu\n", s->healthz.missed, s->grpc_check.missed);
    failures++;
  }
  if (s->peak_rss_kib > bound * 1024) {
    fprintf(stderr, "bench_soak: FAIL: peak RSS above the documented bound\n");
    failures++;
  }
  if (!failures)
    unlink(log_path);
  return failures;
}

static void samples_reset(struct samples *x) {
  pthread_mutex_lock(&x->mu);
  x->n = x->missed = 0;
  pthread_mutex_unlock(&x->mu);
}

int main(int argc, char **argv) {
  int shortrun = 0;
  double seconds = 30;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short"))
      shortrun = 1;
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = strtod(argv[++i], NULL);
    else {
      fprintf(stderr, "usage: bench_soak [--short] [--seconds S]\n");
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  gb_log_set_level(GB_LOG_OFF);
  static struct soak s; /* large sample arrays: not on the stack */
  pthread_mutex_init(&s.healthz.mu, NULL);
  pthread_mutex_init(&s.grpc_check.mu, NULL);
  s.seconds = shortrun ? 4 : seconds;
  s.slow_clients = 200;
  s.idle_sockets = shortrun ? 100 : 300;
  s.big_nodes = shortrun ? 4000 : 20000;
  const char *bin = getenv("GANGBRIDGE");
  if (!bin || !*bin)
    bin = "./gangbridge";
  int failures = part_slowloris(&s, 200);
  atomic_store(&s.stop, 0);
  samples_reset(&s.healthz);
  s.slow_reconnects = 0;
  s.http_port = 0;
  failures += part_service(&s, bin);
  printf("bench_soak: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
