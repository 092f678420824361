/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_sched: cost of the scheduler endpoints (bridge/sched/).  Prints
 *   1. predicate with a realistic body (a TaskInfo with its Pod and a
 *      NodeInfo carrying 30 pods, about the size Volcano sends): handler CPU
 *      per call in process (the server's work beyond reading the body), and
 *      over HTTP on 127.0.0.1 with 16 concurrent keep-alive callers (as
 *      Volcano's 16-way predicate pool): calls/s, p50 and p99 latency;
 *   2. prioritize over 1,000 nodes (NodeInfos with 2 pods each): time per
 *      call in process;
 *   3. jobEnqueueable for a JobInfo of 1,024 tasks (each with its Pod, in
 *      Tasks and again in TaskStatusIndex as Volcano sends them): time per
 *      call in process;
 *   4. onSessionOpen at 6,000 nodes / 60,000 pods (short: 600 / 6,000)
 *      streamed over HTTP: MB/s accepted and the time from the last body
 *      byte to the answer;
 *   5. jobEnqueueable on the real plan and a fed model of 6,144 nodes in
 *      racks of 32 (short: 512): the first call (decode and decision) and
 *      the following ones (decode; the generation's decision is kept);
 *   6. for comparison, json-c parsing the predicate body whole.
 * Every answer is checked; a wrong one exits 1.  No figure is asserted.
 *
 * Usage: bench_sched [--short]
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bridge/sched/sched_fixture.h"
#include "gb_bench.h"
#include "gb_http.h"
#include "gb_log.h"
#include "gb_model.h"
#include "gb_model_test.h"
#include "gb_plan.h"
#include "gb_sched.h"
#include "gb_sched_test.h"
#include "gb_sched_plan.h"

static double now_us(void) { return gb_bench_mono_s() * 1e6; }

static double thread_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
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

static void die(const char *what, const char *got) {
  fprintf(stderr, "bench_sched: %s: unexpected answer: %.200s\n", what, got ? got : "(none)");
  exit(1);
}

/* Calls path in process `reps` times; returns microseconds per call (CPU of
 * this thread) and checks the answer starts with want. */
static double in_process(struct gb_sched *s, const char *path, const char *body, int reps,
                         const char *want) {
  size_t len = strlen(body);
  double t0 = thread_cpu_us();
  for (int i = 0; i < reps; i++) {
    struct gb_http_response r = {200, NULL, 0, NULL};
    if (gb_sched_handle(s, path, body, len, &r) < 0 || r.status != 200 ||
        strncmp(r.body, want, strlen(want)))
      die(path, r.body);
    free(r.body);
  }
  return (thread_cpu_us() - t0) / reps;
}

struct caller {
  const char *url, *body;
  int reps;
  double *lat;
};

static size_t sink(char *p, size_t sz, size_t n, void *ud) {
  struct gb_buf *b = ud;
  gb_buf_add(b, p, sz * n);
  return sz * n;
}

static void *caller_main(void *arg) {
  struct caller *c = arg;
  CURL *h = curl_easy_init();
  struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, c->url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  for (int i = 0; i < c->reps; i++) {
    struct gb_buf b;
    gb_buf_init(&b, 1u << 20);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    double t0 = now_us();
    long code = 0;
    if (curl_easy_perform(h) != CURLE_OK ||
        (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code), code != 200) ||
        !strstr(gb_buf_ptr(&b) ? gb_buf_ptr(&b) : "", "\"code\":2"))
      die("predicate over HTTP", gb_buf_ptr(&b));
    c->lat[i] = now_us() - t0;
    gb_buf_free(&b);
  }
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  return NULL;
}

static void bench_predicate(struct gb_sched *s, int short_mode) {
  char *body = fx_predicate("tj-llama-node-0-0", "u0", "tj-llama", "gpu-node-3", 30);
  const char *want = "{\"status\":\"gangbridge: node gpu-node-3";
  double cpu = in_process(s, "/volcano/predicate", body, short_mode ? 200 : 5000, want);
  printf("predicate body: %zu bytes (a node carrying 30 pods)\n", strlen(body));
  printf("predicate in process: %.1f us CPU per call (%.0f MB/s scanned)\n", cpu,
         (double)strlen(body) / cpu);
  enum { CALLERS = 16 };
  int reps = short_mode ? 25 : 400;
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/volcano/predicate", gb_sched_port(s));
  struct caller c[CALLERS];
  pthread_t t[CALLERS];
  double *lat = calloc((size_t)CALLERS * (size_t)reps, sizeof(*lat));
  double t0 = gb_bench_mono_s(), cpu0 = gb_bench_cpu_s();
  for (int i = 0; i < CALLERS; i++) {
    c[i] = (struct caller){url, body, reps, lat + (size_t)i * (size_t)reps};
    pthread_create(&t[i], NULL, caller_main, &c[i]);
  }
  for (int i = 0; i < CALLERS; i++)
    pthread_join(t[i], NULL);
  double wall = gb_bench_mono_s() - t0, cpu_all = gb_bench_cpu_s() - cpu0;
  size_t n = (size_t)CALLERS * (size_t)reps;
  printf("predicate over HTTP, %d callers: %.0f calls/s, p50 %.0f us, p99 %.0f us "
         "(process CPU incl. clients %.0f us/call)\n",
         CALLERS, (double)n / wall, pct(lat, n, 0.50), pct(lat, n, 0.99),
         cpu_all * 1e6 / (double)n);
  free(lat);
  /* For comparison: what a whole-tree parse of the same body costs. */
  int jreps = short_mode ? 50 : 1000;
  double j0 = thread_cpu_us();
  for (int i = 0; i < jreps; i++)
    json_object_put(json_tokener_parse(body));
  printf("json-c whole parse of the predicate body: %.1f us per call\n",
         (thread_cpu_us() - j0) / jreps);
  free(body);
}

static void bench_prioritize(struct gb_sched *s, int short_mode) {
  struct gb_buf b;
  gb_buf_init(&b, 1u << 30);
  gb_buf_addstr(&b, "{\"task\":");
  fx_task(&b, "team-a", "t-0", "u0", "team-a/tj-llama", "tj-llama", NULL);
  gb_buf_addstr(&b, ",\"nodes\":[");
  for (int i = 0; i < 1000; i++) {
    char name[32];
    snprintf(name, sizeof(name), i == 0 ? "gpu-node-17" : "node-%d", i);
    gb_buf_addstr(&b, i ? "," : "");
    fx_node(&b, name, 2);
  }
  gb_buf_addstr(&b, "]}");
  double us = in_process(s, "/volcano/prioritize", gb_buf_ptr(&b), short_mode ? 5 : 50,
                         "{\"nodeScore\":{\"gpu-node-17\":100,");
  printf("prioritize over 1000 nodes (%zu bytes): %.0f us per call\n", gb_buf_len(&b), us);
  gb_buf_free(&b);
}

static void bench_enqueueable(struct gb_sched *s, int short_mode) {
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
  gb_buf_printf(&b,
                "{\"job\":{\"UID\":\"team-a/tj-big\",\"Name\":\"tj-big\",\"Namespace\":\"team-a\","
                "\"Queue\":\"default\",\"MinAvailable\":1024,\"TaskStatusIndex\":{\"1\":{%s}},"
                "\"Tasks\":{%s},\"PodGroup\":{\"metadata\":{\"name\":\"tj-big\",\"namespace\":"
                "\"team-a\",\"labels\":{\"app.kubernetes.io/managed-by\":\"gangbridge\"}}}}}",
                gb_buf_ptr(&tasks), gb_buf_ptr(&tasks));
  double us = in_process(s, "/volcano/jobEnqueueable", gb_buf_ptr(&b), short_mode ? 3 : 20,
                         "{\"status\":-1}");
  printf("jobEnqueueable, 1024-task JobInfo (%zu bytes): %.0f us per call\n", gb_buf_len(&b), us);
  gb_buf_free(&tasks);
  gb_buf_free(&b);
}

static char *big_job(void) {
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
  gb_buf_printf(&b,
                "{\"job\":{\"UID\":\"team-a/tj-big\",\"Name\":\"tj-big\",\"Namespace\":\"team-a\","
                "\"Queue\":\"default\",\"MinAvailable\":1024,\"NetworkTopology\":{\"mode\":"
                "\"soft\"},\"TaskStatusIndex\":{\"1\":{%s}},\"Tasks\":{%s},\"PodGroup\":{"
                "\"metadata\":{\"name\":\"tj-big\",\"namespace\":\"team-a\",\"labels\":{"
                "\"app.kubernetes.io/managed-by\":\"gangbridge\"}}}}}",
                gb_buf_ptr(&tasks), gb_buf_ptr(&tasks));
  char *out = NULL;
  size_t n;
  gb_buf_take(&b, &out, &n);
  gb_buf_free(&tasks);
  return out;
}

static void bench_enqueue_plan(int short_mode) {
  static const char *const levels[] = {"rack"};
  struct gb_plan *plan = NULL;
  struct gb_plan_opts po = {0};
  struct gb_model *m = NULL;
  struct gb_model_opts mo = {.levels = levels, .n_levels = 1};
  if (gb_plan_new(&po, &plan) < 0 || (mo.plan = plan, gb_model_new(&mo, &m, NULL)) < 0)
    die("plan/model", NULL);
  int nodes = short_mode ? 512 : 6144;
  for (int i = 0; i < nodes; i++) {
    char json[512];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"node-%d\",\"labels\":{\"rack\":\"rack-%d\"}},"
             "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"192\",\"memory\":\"2015Gi\","
             "\"nvidia.com/gpu\":\"8\",\"pods\":\"110\"}}}",
             i, i / 32);
    if (gb_model_feed(m, "Node", 0, json, NULL) < 0)
      die("feed", json);
  }
  gb_model_feed_done(m);
  struct gb_sched_plan sp = {m, plan, NULL, NULL};
  struct gb_sched_source be;
  gb_sched_plan_source(&sp, &be);
  struct gb_sched_config cfg = {0};
  struct gb_sched *s = NULL;
  if (gb_sched_new(&cfg, &be, &s, NULL) < 0)
    die("sched", NULL);
  char *body = big_job();
  const char *want = nodes >= 1024 ? "{\"status\":1}" : "{\"status\":-1}";
  double first = in_process(s, "/volcano/jobEnqueueable", body, 1, want);
  double next = in_process(s, "/volcano/jobEnqueueable", body, short_mode ? 3 : 20, want);
  printf("jobEnqueueable on the plan, 1024 tasks, %d nodes: first call %.0f us (%s), then %.0f "
         "us per call\n",
         nodes, first, nodes >= 1024 ? "Permit" : "Reject", next);
  free(body);
  gb_sched_free(s);
  gb_model_free(m);
  gb_plan_free(plan);
}

/* Streams one session body made of repeated chunks. */
struct stream {
  const char *head, *chunk, *tail;
  size_t head_len, chunk_len, tail_len;
  size_t chunks_left, off;
  int part; /* 0 head, 1 chunks, 2 tail, 3 done */
  double done_us;
};

static size_t stream_read(char *buf, size_t sz, size_t n, void *ud) {
  struct stream *st = ud;
  size_t room = sz * n, out = 0;
  while (room && st->part < 3) {
    const char *src = st->part == 0 ? st->head : st->part == 1 ? st->chunk : st->tail;
    size_t len = st->part == 0 ? st->head_len : st->part == 1 ? st->chunk_len : st->tail_len;
    size_t k = len - st->off < room ? len - st->off : room;
    memcpy(buf + out, src + st->off, k);
    out += k;
    room -= k;
    st->off += k;
    if (st->off == len) {
      st->off = 0;
      if (st->part != 1 || --st->chunks_left == 0)
        st->part++;
    }
  }
  if (st->part == 3 && !st->done_us)
    st->done_us = now_us();
  return out;
}

static void bench_session_open(struct gb_sched *s, int short_mode) {
  /* One chunk = 10 nodes with 10 pods each (a leading comma joins chunks). */
  struct gb_buf chunk;
  gb_buf_init(&chunk, 1u << 30);
  for (int i = 0; i < 10; i++) {
    gb_buf_printf(&chunk, ",\"node-x%d\":", i);
    fx_node(&chunk, "node-x", 10);
  }
  size_t chunks = short_mode ? 60 : 600;
  const char *head = "{\"Jobs\":{},\"Nodes\":{\"node-0\":{\"Name\":\"node-0\"}";
  const char *tail =
      "},\"Queues\":{},\"NamespaceInfo\":{},\"RevocableNodes\":{},\"NodeList\":null}";
  struct stream st = {
      head, gb_buf_ptr(&chunk), tail, strlen(head), gb_buf_len(&chunk), strlen(tail), chunks, 0, 0,
      0};
  double total = (double)st.head_len + (double)st.chunk_len * (double)chunks + (double)st.tail_len;
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/volcano/onSessionOpen", gb_sched_port(s));
  CURL *h = curl_easy_init();
  struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_READFUNCTION, stream_read);
  curl_easy_setopt(h, CURLOPT_READDATA, &st);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)total);
  struct gb_buf resp;
  gb_buf_init(&resp, 1u << 20);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
  double t0 = now_us();
  long code = 0;
  if (curl_easy_perform(h) != CURLE_OK ||
      (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code), code != 200))
    die("onSessionOpen", gb_buf_ptr(&resp));
  double t1 = now_us();
  printf("onSessionOpen, %zu nodes / %zu pods (%.0f MB): %.0f MB/s accepted, answered %.2f ms "
         "after the last byte (%.0f ms in all)\n",
         chunks * 10, chunks * 100, total / 1e6, total / (t1 - t0), (t1 - st.done_us) / 1e3,
         (t1 - t0) / 1e3);
  gb_buf_free(&resp);
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  gb_buf_free(&chunk);
}

int main(int argc, char **argv) {
  int short_mode = argc > 1 && !strcmp(argv[1], "--short");
  gb_log_set_level(GB_LOG_ERROR);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  struct fx_source fb = {0};
  struct gb_sched_source be = fx_source_of(&fb);
  struct gb_sched_config cfg = {0};
  struct gb_sched *s = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http_config h;
  gb_http_config_init(&h);
  h.address = "127.0.0.1";
  h.threads = 4;
  if (gb_sched_new(&cfg, &be, &s, &d) < 0 || gb_sched_start(s, &h, &d) < 0) {
    fprintf(stderr, "bench_sched: cannot start the endpoint\n");
    return 1;
  }
  bench_predicate(s, short_mode);
  bench_prioritize(s, short_mode);
  bench_enqueueable(s, short_mode);
  bench_session_open(s, short_mode);
  bench_enqueue_plan(short_mode);
  gb_sched_free(s);
  gc_diags_destroy(&d);
  curl_global_cleanup();
  return 0;
}
