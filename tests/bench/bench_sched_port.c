/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_sched_port: the scheduler port as a scheduler meets it (issue 22,
 * rows 1-4), each figure beside a baseline measured in the same run.  The
 * server under test runs in a child process (the sched endpoints with the
 * test fixture's plan and the serve defaults of the port), and so does the
 * baseline: a trivial C HTTP server (one epoll loop per core) that reads the
 * same body and answers 22 bytes.  Clients (libcurl, keep-alive) run in this
 * process, so a server's CPU is its own: the sum of its threads' run time
 * from /proc/<pid>/task/<tid>/schedstat.  Rows:
 *   1. Volcano predicate, 16 concurrent keep-alive callers, a ~40 KB body
 *      (a TaskInfo and a NodeInfo carrying 16 pods): p50, p99 and server
 *      CPU per call.  Goal: p99 <= 2x the baseline's, <= 50 us CPU per call.
 *   2. Volcano prioritize, 1,000 nodes (a pod each), one caller: server CPU
 *      per call and p50.  Goal: <= 2 ms CPU.
 *   3. Volcano jobEnqueueable, a JobInfo of 1,024 tasks: the same.  Goal:
 *      <= 2 ms CPU.
 *   4. kube-scheduler filter, 5,000 NodeNames, for a pod of a placed gang
 *      (all but three nodes fail, each with its reason): the same.  Goal:
 *      <= 1 ms CPU.
 * Server and baseline alternate (A B A B ...) and the medians of the rounds
 * are printed with their ratio.  Every answer is checked; a wrong one exits
 * 1.  No figure is asserted.
 *
 * Usage: bench_sched_port [--short] [--rows LIST] [--threads N]
 *                         [--inproc ROW REPS]
 *   --rows 1,3     only those rows
 *   --threads N    the sched server's threads (default 4, sched.threads' default)
 *   --inproc R N   no server: calls row R's handler N times in this process
 *                  (for valgrind --tool=callgrind or perf)
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../bridge/sched/sched_fixture.h"
#include "gb_bench.h"
#include "gb_http.h"
#include "gb_log.h"
#include "gb_sched.h"
#include "gb_sched_test.h"

#define ROWS 4
#define TRIVIAL_ANSWER "{\"status\":\"\",\"code\":0}" /* 22 bytes */

static void die(const char *what, const char *got) {
  fprintf(stderr, "bench_sched_port: %s: %.300s\n", what, got ? got : "(none)");
  exit(1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p) {
  qsort(v, n, sizeof(*v), cmp_double);
  size_t i = (size_t)(p * (double)n);
  return v[i < n ? i : n - 1];
}

static double median(double *v, size_t n) { return pct(v, n, 0.5); }

/* ---- Bodies ---------------------------------------------------------- */

struct row {
  const char *name, *path, *want; /* want: the start of the sched answer */
  char *body;
  size_t len;
  int callers, reps, reps_short;
};

static char *take(struct gb_buf *b, size_t *len) {
  char *out = NULL;
  if (gb_buf_take(b, &out, len) < 0)
    die("building a body", NULL);
  return out;
}

static char *body_prioritize(size_t *len) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", "t-0", "u0", "team-a/tj-llama", "tj-llama", NULL);
  gb_buf_addstr(&b, ",\"nodes\":[");
  for (int i = 0; i < 1000; i++) {
    char name[32];
    snprintf(name, sizeof(name), i == 0 ? "gpu-node-17" : "node-%d", i);
    gb_buf_addstr(&b, i ? "," : "");
    fx_node(&b, name, 1);
  }
  gb_buf_addstr(&b, "]}");
  return take(&b, len);
}

static char *body_enqueueable(size_t *len) {
  struct gb_buf b, tasks;
  gb_buf_init(&b, 1u << 30);
  gb_buf_init(&tasks, 1u << 30);
  for (int i = 0; i < 1024; i++) {
    char uid[64], pname[96];
    snprintf(uid, sizeof(uid), "tj-big-uid-%d", i);
    snprintf(pname, sizeof(pname), "tj-big-node-0-%d", i);
    gb_buf_printf(&tasks, "%s\"%s\":", i ? "," : "", uid);
    fx_task(&tasks, "team-a", pname, uid, "team-a/tj-big", "tj-big", NULL);
  }
  /* Volcano's JobInfo: the tasks in Tasks, and their UIDs by status. */
  gb_buf_addstr(&b,
                "{\"job\":{\"UID\":\"team-a/tj-big\",\"Name\":\"tj-big\",\"Namespace\":\"team-a\","
                "\"Queue\":\"default\",\"MinAvailable\":1024,\"TaskStatusIndex\":{\"1\":{");
  for (int i = 0; i < 1024; i++)
    gb_buf_printf(&b, "%s\"tj-big-uid-%d\":null", i ? "," : "", i);
  gb_buf_printf(&b,
                "}},\"Tasks\":{%s},\"PodGroup\":{\"metadata\":{\"name\":\"tj-big\",\"namespace\":"
                "\"team-a\",\"labels\":{\"app.kubernetes.io/managed-by\":\"gangbridge\"}}}}}",
                gb_buf_ptr(&tasks));
  gb_buf_free(&tasks);
  return take(&b, len);
}

static char *body_filter(size_t *len) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  gb_buf_addstr(&b, "{\"Pod\":");
  fx_pod(&b, "team-a", "tj-llama-node-0-1", "u1", "tj-llama", NULL);
  gb_buf_addstr(&b, ",\"Nodes\":null,\"NodeNames\":[");
  for (int i = 0; i < 5000; i++)
    gb_buf_printf(&b, "%s\"%s-%d\"", i ? "," : "", i >= 17 && i <= 19 ? "gpu-node" : "node", i);
  gb_buf_addstr(&b, "]}");
  return take(&b, len);
}

static void rows_init(struct row *r) {
  r[0] = (struct row){"predicate, 16 callers", "/volcano/predicate",
                      "{\"status\":\"gangbridge: node gpu-node-3", NULL, 0, 16, 400, 25};
  r[0].body = fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", 16);
  r[0].len = strlen(r[0].body);
  r[1] = (struct row){"prioritize, 1000 nodes", "/volcano/prioritize",
                      "{\"nodeScore\":{\"gpu-node-17\":100,", NULL, 0, 1, 40, 4};
  r[1].body = body_prioritize(&r[1].len);
  r[2] = (struct row){"jobEnqueueable, 1024 tasks", "/volcano/jobEnqueueable",
                      "{\"status\":-1}", NULL, 0, 1, 60, 5};
  r[2].body = body_enqueueable(&r[2].len);
  r[3] = (struct row){"kube filter, 5000 NodeNames", "/kube/filter",
                      "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-17\",\"gpu-node-18\",\"gpu-node-19\"]",
                      NULL, 0, 1, 200, 10};
  r[3].body = body_filter(&r[3].len);
}

/* ---- The trivial server --------------------------------------------- */

struct tconn {
  int fd;
  char *buf;
  size_t len, cap, need; /* need: header + body bytes, 0 while the headers are incomplete */
};

static int tconn_header(struct tconn *c) {
  char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
  if (!end)
    return 0;
  size_t hdr = (size_t)(end - c->buf) + 4;
  size_t body = 0;
  for (char *p = c->buf; p < end; p++)
    if ((*p == '\n') && !strncasecmp(p + 1, "content-length:", 15))
      body = strtoul(p + 16, NULL, 10);
  c->need = hdr + body;
  return 1;
}

static void *trivial_loop(void *arg) {
  int lfd = *(int *)arg;
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = NULL};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                               "Content-Length: 22\r\n\r\n" TRIVIAL_ANSWER;
  for (;;) {
    struct epoll_event evs[32];
    int n = epoll_wait(ep, evs, 32, -1);
    for (int i = 0; i < n; i++) {
      struct tconn *c = evs[i].data.ptr;
      if (!c) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0)
          continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c = calloc(1, sizeof(*c));
        c->fd = fd;
        struct epoll_event cev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
        continue;
      }
      for (;;) {
        if (c->cap - c->len < 65536) {
          c->cap = c->cap ? 2 * c->cap : 131072;
          c->buf = realloc(c->buf, c->cap);
        }
        ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (r == 0 || (r < 0 && errno != EAGAIN)) {
          epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
          close(c->fd);
          free(c->buf);
          free(c);
          break;
        }
        if (r < 0)
          break;
        c->len += (size_t)r;
        while ((c->need || tconn_header(c)) && c->len >= c->need) {
          if (write(c->fd, answer, sizeof(answer) - 1) < 0)
            break;
          memmove(c->buf, c->buf + c->need, c->len - c->need);
          c->len -= c->need;
          c->need = 0;
        }
      }
    }
  }
  return NULL;
}

static unsigned trivial_serve(void) {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1024) ||
      getsockname(lfd, (struct sockaddr *)&a, &al))
    die("trivial server", strerror(errno));
  static int fd;
  fd = lfd;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < (cores > 0 ? cores : 1); i++) {
    pthread_t t;
    pthread_create(&t, NULL, trivial_loop, &fd);
    pthread_detach(t);
  }
  return ntohs(a.sin_port);
}

/* ---- The sched server ------------------------------------------------ */

static struct fx_source fb;

static struct gb_sched *sched_new(void) {
  struct gb_sched_source be = fx_source_of(&fb);
  struct gb_sched_config cfg = {0};
  struct gb_sched *s = NULL;
  if (gb_sched_new(&cfg, &be, &s, NULL) < 0)
    die("sched", "cannot create the endpoint");
  return s;
}

static unsigned sched_serve(unsigned threads) {
  struct gb_sched *s = sched_new();
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http_config h;
  gb_http_config_init(&h);
  /* The sched port as serve configures it (sched.* defaults). */
  h.address = "127.0.0.1";
  h.threads = threads;
  h.max_connections = 256;
  h.max_per_ip = 64;
  if (gb_sched_start(s, &h, &d) < 0)
    die("sched", d.n ? d.msgs[0] : "cannot start");
  gc_diags_destroy(&d);
  return gb_sched_port(s);
}

/* Starts a server in a child; returns its pid and port. */
static pid_t spawn(int trivial, unsigned threads, unsigned *port) {
  int p[2];
  if (pipe(p))
    die("pipe", strerror(errno));
  pid_t pid = fork();
  if (pid < 0)
    die("fork", strerror(errno));
  if (pid == 0) {
    close(p[0]);
    unsigned got = trivial ? trivial_serve() : sched_serve(threads);
    if (write(p[1], &got, sizeof(got)) != sizeof(got))
      _exit(1);
    for (;;)
      pause();
  }
  close(p[1]);
  if (read(p[0], port, sizeof(*port)) != sizeof(*port))
    die("server child", "did not start");
  close(p[0]);
  return pid;
}

static void reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* The CPU time of every thread of pid, in microseconds. */
static double proc_cpu_us(pid_t pid) {
  char dir[64];
  snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  double sum = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[400];
    snprintf(path, sizeof(path), "%s/%s/schedstat", dir, e->d_name);
    FILE *f = fopen(path, "r");
    unsigned long long ns = 0;
    if (f && fscanf(f, "%llu", &ns) == 1)
      sum += (double)ns / 1e3;
    if (f)
      fclose(f);
  }
  closedir(d);
  return sum;
}

/* ---- Callers --------------------------------------------------------- */

struct caller {
  char url[320];
  const struct row *row;
  int trivial, reps;
  double *lat;
};

static size_t sink(char *p, size_t sz, size_t n, void *ud) {
  gb_buf_add(ud, p, sz * n);
  return sz * n;
}

static void *caller_main(void *arg) {
  struct caller *c = arg;
  CURL *h = curl_easy_init();
  struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
  /* Go's clients (Volcano, kube-scheduler) send no "Expect: 100-continue". */
  hd = curl_slist_append(hd, "Expect:");
  curl_easy_setopt(h, CURLOPT_URL, c->url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->row->body);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->row->len);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  const char *want = c->trivial ? TRIVIAL_ANSWER : c->row->want;
  for (int i = 0; i < c->reps; i++) {
    struct gb_buf b;
    gb_buf_init(&b, 64u << 20);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    double t0 = gb_bench_mono_s();
    long code = 0;
    if (curl_easy_perform(h) != CURLE_OK ||
        (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code), code != 200) ||
        strncmp(gb_buf_ptr(&b) ? gb_buf_ptr(&b) : "", want, strlen(want)))
      die(c->row->name, gb_buf_ptr(&b));
    c->lat[i] = (gb_bench_mono_s() - t0) * 1e6;
    gb_buf_free(&b);
  }
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  return NULL;
}

struct figures {
  double p50, p99, cpu; /* microseconds; cpu: server CPU per call */
};

/* One round of a row against one server. */
static struct figures run_round(const struct row *r, int trivial, unsigned threads, int reps) {
  unsigned port = 0;
  pid_t pid = spawn(trivial, threads, &port);
  int n = r->callers;
  struct caller *c = calloc((size_t)n, sizeof(*c));
  pthread_t *t = calloc((size_t)n, sizeof(*t));
  double *lat = calloc((size_t)n * (size_t)reps, sizeof(*lat));
  /* One warm-up call per caller opens the keep-alive connections. */
  for (int pass = 0; pass < 2; pass++) {
    double cpu0 = proc_cpu_us(pid);
    for (int i = 0; i < n; i++) {
      c[i] = (struct caller){"", r, trivial, pass ? reps : 1, lat + (size_t)i * (size_t)reps};
      snprintf(c[i].url, sizeof(c[i].url), "http://127.0.0.1:%u%s", port, r->path);
      pthread_create(&t[i], NULL, caller_main, &c[i]);
    }
    for (int i = 0; i < n; i++)
      pthread_join(t[i], NULL);
    if (!pass)
      continue;
    double cpu = proc_cpu_us(pid) - cpu0;
    size_t calls = (size_t)n * (size_t)reps;
    struct figures f = {pct(lat, calls, 0.5), pct(lat, calls, 0.99), cpu / (double)calls};
    free(lat);
    free(t);
    free(c);
    reap(pid);
    return f;
  }
  return (struct figures){0};
}

static void run_row(const struct row *r, int short_mode, unsigned threads) {
  int rounds = short_mode ? 1 : 5;
  int reps = short_mode ? r->reps_short : r->reps;
  double p50[2][8], p99[2][8], cpu[2][8], ratio_p99[8], ratio_cpu[8];
  for (int k = 0; k < rounds; k++) {
    for (int trivial = 0; trivial < 2; trivial++) {
      struct figures f = run_round(r, trivial, threads, reps);
      p50[trivial][k] = f.p50;
      p99[trivial][k] = f.p99;
      cpu[trivial][k] = f.cpu;
    }
    ratio_p99[k] = p99[0][k] / p99[1][k];
    ratio_cpu[k] = cpu[0][k] / cpu[1][k];
  }
  printf("%s (%zu bytes, %d x %d calls, median of %d rounds):\n", r->name, r->len, r->callers,
         reps, rounds);
  printf("  sched:    p50 %8.0f us  p99 %8.0f us  server CPU %8.1f us/call\n",
         median(p50[0], (size_t)rounds), median(p99[0], (size_t)rounds),
         median(cpu[0], (size_t)rounds));
  printf("  baseline: p50 %8.0f us  p99 %8.0f us  server CPU %8.1f us/call (trivial server)\n",
         median(p50[1], (size_t)rounds), median(p99[1], (size_t)rounds),
         median(cpu[1], (size_t)rounds));
  printf("  ratio:    p99 %.2fx  CPU %.2fx (medians of the rounds' ratios)\n",
         median(ratio_p99, (size_t)rounds), median(ratio_cpu, (size_t)rounds));
  fflush(stdout);
}

/* ---- In process (for profilers) ------------------------------------- */

static int inproc(const struct row *r, int reps) {
  struct gb_sched *s = sched_new();
  double t0 = gb_bench_cpu_s();
  for (int i = 0; i < reps; i++) {
    struct gb_http_response resp = {200, NULL, 0, NULL};
    if (gb_sched_handle(s, r->path, r->body, r->len, &resp) < 0 || resp.status != 200 ||
        strncmp(resp.body, r->want, strlen(r->want)))
      die(r->name, resp.body);
    free(resp.body);
  }
  printf("%s in process: %.1f us CPU per call (handler only, %zu bytes)\n", r->name,
         (gb_bench_cpu_s() - t0) * 1e6 / reps, r->len);
  gb_sched_free(s);
  return 0;
}

int main(int argc, char **argv) {
  int short_mode = 0, only[ROWS + 1] = {0}, any = 0, in_row = 0, in_reps = 0;
  unsigned threads = 4; /* sched.threads' default */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--short")) {
      short_mode = 1;
    } else if (!strcmp(argv[i], "--rows") && i + 1 < argc) {
      for (char *p = argv[++i]; *p; p++)
        if (*p >= '1' && *p <= '0' + ROWS)
          only[*p - '0'] = any = 1;
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      threads = (unsigned)strtoul(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--inproc") && i + 2 < argc) {
      in_row = (int)strtol(argv[++i], NULL, 10);
      in_reps = (int)strtol(argv[++i], NULL, 10);
    } else {
      fprintf(stderr, "usage: bench_sched_port [--short] [--rows LIST] [--threads N] "
                      "[--inproc ROW REPS]\n");
      return 2;
    }
  }
  gb_log_set_level(GB_LOG_ERROR);
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct row rows[ROWS];
  rows_init(rows);
  if (in_row >= 1 && in_row <= ROWS)
    return inproc(&rows[in_row - 1], in_reps > 0 ? in_reps : 1);
  for (int i = 0; i < ROWS; i++)
    if (!any || only[i + 1])
      run_row(&rows[i], short_mode, threads);
  for (int i = 0; i < ROWS; i++)
    free(rows[i].body);
  curl_global_cleanup();
  return 0;
}
