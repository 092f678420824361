/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_webhook: cost of pod admission.  Prints
 *   1. in-process gb_webhook_review of a real JobSet pod CREATE review
 *      (tests/bridge/data/admission/cosched-create.json): microseconds per
 *      review and reviews per second on one thread;
 *   2. the same review over HTTP on 127.0.0.1 through gb_http with
 *      keep-alive libcurl clients at concurrency 1, 4 and 16: requests per
 *      second, p50 and p99 latency in microseconds;
 *   3. /metrics scrape time with 1,000 series registered.
 * Every request must answer 200 with a patch; otherwise the program exits 1.
 * No figure is asserted: goals live in docs, this program only measures.
 *
 * Usage: bench_webhook [--short]   (--short: a few hundred requests per point)
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_http.h"
#include "gb_log.h"
#include "gb_metrics.h"
#include "gb_webhook.h"
#include "gb_webhook_test.h"

#ifndef GB_SRC_DIR
#define GB_SRC_DIR "."
#endif

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int lookup(void *ctx, const char *ns, const char *jobset, const char *rjob,
                  struct gb_webhook_decision *out, char *reason, size_t size) {
  out->managed = 1;
  out->bind = 1;
  out->backend = gc_backend_by_name("coscheduling");
  snprintf(out->group, sizeof(out->group), "%s", jobset);
  snprintf(out->scheduler_name, sizeof(out->scheduler_name), "scheduler-plugins-scheduler");
  return 0;
}

static char *load_review(size_t *len) {
  const char *src = getenv("GB_SRC") ? getenv("GB_SRC") : GB_SRC_DIR;
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/bridge/data/admission/cosched-create.json", src);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "bench_webhook: cannot open %s (set GB_SRC)\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
    exit(1);
  b[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return b;
}

static size_t sink(char *p, size_t sz, size_t n, void *ud) {
  size_t *got = ud;
  if (*got < 64 && strstr(p, "\"patch\"")) /* cheap check on the first chunk */
    *got = 64;
  return sz * n;
}

struct client {
  const char *url;
  const char *body;
  size_t len;
  int requests;
  double *lat; /* per-request latency, us */
  int failed;
};

static void *client_main(void *arg) {
  struct client *c = arg;
  CURL *h = curl_easy_init();
  struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
  hdrs = curl_slist_append(hdrs, "Expect:");
  curl_easy_setopt(h, CURLOPT_URL, c->url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->len);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
  for (int i = 0; i < c->requests; i++) {
    size_t got = 0;
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
    double t0 = now_us();
    CURLcode cc = curl_easy_perform(h);
    c->lat[i] = now_us() - t0;
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK || status != 200 || !got)
      c->failed++;
  }
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(h);
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int short_run = argc > 1 && !strcmp(argv[1], "--short");
  gb_log_set_level(GB_LOG_ERROR);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  size_t len;
  char *body = load_review(&len);
  struct gb_webhook_config wc = {lookup, NULL, 0, 0, NULL, 0};
  struct gb_webhook *wh;
  if (gb_webhook_new(&wc, &wh) != 0)
    return 1;

  /* 1. In process. */
  int n = short_run ? 2000 : 50000;
  double t0 = now_us();
  for (int i = 0; i < n; i++) {
    int status;
    char *out;
    size_t olen;
    const char *ct;
    if (gb_webhook_review(wh, "application/json", body, len, &status, &out, &olen, &ct) != 0 ||
        status != 200 || !strstr(out, "\"patch\"")) {
      fprintf(stderr, "bench_webhook: review failed\n");
      return 1;
    }
    free(out);
  }
  double us = (now_us() - t0) / n;
  printf("review in process: %zu-byte pod review, %.1f us/review, %.0f reviews/s (1 thread)\n", len,
         us, 1e6 / us);

  /* 2. Over HTTP. */
  struct gb_http_route routes[] = {gb_webhook_route(wh, "/mutate-pods")};
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.threads = 2;
  struct gb_http *srv;
  struct gc_diags d;
  gc_diags_init(&d);
  if (gb_http_start(&cfg, routes, 1, &srv, &d) != 0) {
    fprintf(stderr, "bench_webhook: %s\n", d.n ? d.msgs[0] : "cannot start");
    return 1;
  }
  gc_diags_destroy(&d);
  char url[128];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/mutate-pods", gb_http_port(srv));
  int conc[] = {1, 4, 16};
  int failed = 0;
  for (size_t k = 0; k < sizeof(conc) / sizeof(*conc); k++) {
    int per = (short_run ? 400 : 8000) / conc[k];
    pthread_t th[16];
    struct client cl[16];
    double *all = malloc(sizeof(double) * (size_t)per * (size_t)conc[k]);
    double start = now_us();
    for (int i = 0; i < conc[k]; i++) {
      cl[i] = (struct client){url, body, len, per, all + (size_t)i * (size_t)per, 0};
      pthread_create(&th[i], NULL, client_main, &cl[i]);
    }
    for (int i = 0; i < conc[k]; i++) {
      pthread_join(th[i], NULL);
      failed += cl[i].failed;
    }
    double secs = (now_us() - start) / 1e6;
    size_t total = (size_t)per * (size_t)conc[k];
    qsort(all, total, sizeof(double), cmp_double);
    printf("review over HTTP: concurrency %2d: %6.0f req/s, p50 %6.0f us, p99 %6.0f us\n",
           conc[k], (double)total / secs, all[total / 2], all[total * 99 / 100]);
    free(all);
  }
  gb_http_stop(srv);

  /* 3. Scrape cost. */
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_service_metrics sm;
  gb_service_metrics_register(reg, "bench", &sm, NULL);
  char code[8], res[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(code, sizeof(code), "%d", 200 + i % 5);
    snprintf(res, sizeof(res), "resource%d", i / 5);
    gb_metric_histogram_observe(sm.api_latency, (const char *[]){"GET", res, code},
                                0.001 * (i % 50));
  }
  int scrapes = short_run ? 20 : 200;
  size_t bytes = 0;
  t0 = now_us();
  for (int i = 0; i < scrapes; i++) {
    char *out;
    size_t olen;
    gb_metrics_render(reg, &out, &olen);
    bytes = olen;
    free(out);
  }
  printf("metrics scrape: 1000 histogram series, %zu bytes, %.0f us/scrape\n", bytes,
         (now_us() - t0) / scrapes);
  gb_metrics_free(reg);
  gb_webhook_free(wh);
  free(body);
  curl_global_cleanup();
  if (failed) {
    fprintf(stderr, "bench_webhook: %d requests failed\n", failed);
    return 1;
  }
  return 0;
}
