/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_timeouts: how long `gangbridge timeouts report` takes over a dump of
 * N PodGroups (10,000; --short: 1,000) and their pods.  It writes the dump
 * as kubectl JSON Lists into a temporary directory (deterministic: a fixed
 * LCG seed; Volcano and coscheduling, three queues, the five size classes
 * weighted 40/30/20/8/2 %, about 11 pods per gang), then runs the command
 * itself (gb_cmd_timeouts, output to /dev/null) for -o json and -o html and
 * prints the best of three wall times, CPU time and resident memory.
 * Goal (issue): the report over 10,000 PodGroups in <= 2 s.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gb_bench.h"
#include "gb_cli.h"
#include "gb_manifest.h"

static uint64_t lcg = 20261124;

static uint32_t rnd(uint32_t n) {
  lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(lcg >> 33) % n;
}

static void stamp(long t, char *buf, size_t cap) {
  /* 2026-01-01T00:00:00Z plus t seconds (t < 28 days keeps it in January). */
  snprintf(buf, cap, "2026-01-%02ldT%02ld:%02ld:%02ldZ", 1 + t / 86400, t / 3600 % 24,
           t / 60 % 60, t % 60);
}

static int64_t gang_size(void) {
  uint32_t r = rnd(100);
  if (r < 40)
    return 1;
  if (r < 70)
    return 2 + rnd(6);
  if (r < 90)
    return 8 + rnd(24);
  if (r < 98)
    return 32 + rnd(9);
  return 128 + rnd(7);
}

/* Writes one PodGroup to pg and its pods to pods (JSON List items). */
static void write_gang(FILE *pg, FILE *pods, size_t i, int first) {
  int cos = i % 3 == 2;
  long created = (long)i * 30;
  int64_t size = gang_size();
  long wait = (long)rnd(600);
  char c[32], t[32];
  stamp(created, c, sizeof(c));
  fprintf(pg,
          "%s{\"apiVersion\":\"%s\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"pg-%zu\","
          "\"namespace\":\"team-%zu\",\"creationTimestamp\":\"%s\"%s},\"spec\":{\"minMember\":%lld"
          "%s%s}}\n",
          first ? "" : ",", cos ? "scheduling.x-k8s.io/v1alpha1" : "scheduling.volcano.sh/v1beta1",
          i, i % 7, c, cos ? "" : ",\"annotations\":{\"volcano.sh/sla-waiting-time\":\"10m\"}",
          (long long)size, cos ? ",\"scheduleTimeoutSeconds\":300" : "",
          cos ? "" : i % 3 ? ",\"queue\":\"prod\"" : ",\"queue\":\"research\"");
  for (int64_t k = 0; k < size; k++) {
    stamp(created + (k == size - 1 ? wait : (long)rnd((uint32_t)wait + 1)), t, sizeof(t));
    fprintf(pods,
            ",{\"metadata\":{\"name\":\"pg-%zu-%lld\",\"namespace\":\"team-%zu\",\"%s\":{\"%s\":"
            "\"pg-%zu\"}},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
            "\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"}]}}\n",
            i, (long long)k, i % 7, cos ? "labels" : "annotations",
            cos ? "scheduling.x-k8s.io/pod-group" : "scheduling.k8s.io/group-name", i, t);
  }
}

/* Writes n gangs as files of 2,000 PodGroups with their pods. */
static int write_dump(const char *dir, size_t n, size_t *bytes) {
  for (size_t f = 0; f * 2000 < n; f++) {
    char p1[512], p2[512];
    snprintf(p1, sizeof(p1), "%s/pg-%zu.json", dir, f);
    snprintf(p2, sizeof(p2), "%s/pods-%zu.json", dir, f);
    FILE *pg = fopen(p1, "w"), *pods = fopen(p2, "w");
    if (!pg || !pods)
      return -1;
    fprintf(pg, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n");
    fprintf(pods, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[{\"metadata\":"
                  "{\"name\":\"unrelated\",\"namespace\":\"x\"}}\n");
    for (size_t i = f * 2000; i < n && i < (f + 1) * 2000; i++)
      write_gang(pg, pods, i, i == f * 2000);
    fprintf(pg, "]}\n");
    fprintf(pods, "]}\n");
    *bytes += (size_t)ftell(pg) + (size_t)ftell(pods);
    fclose(pg);
    fclose(pods);
  }
  return 0;
}

/* Runs the command with stdout on /dev/null; returns wall seconds. */
static double run_once(const char *dir, const char *format, int *status) {
  char *argv[] = {"timeouts", "report", "-f", (char *)dir, "--what-if", "10m", "-o",
                  (char *)format, NULL};
  fflush(stdout);
  int saved = dup(1), null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  double t0 = gb_bench_mono_s();
  *status = gb_cmd_timeouts(8, argv);
  double t = gb_bench_mono_s() - t0;
  fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(null);
  return t;
}

/* CPU seconds of loading the dump alone (the floor the report stands on). */
static double load_cpu(const char *dir) {
  struct gb_limits lim = {0};
  lim.max_docs = 4000000;
  struct gb_docset *ds = gb_docset_new(&lim);
  struct gc_diags d;
  gc_diags_init(&d);
  double t0 = gb_bench_cpu_s();
  if (ds)
    gb_load_path(ds, dir, &d);
  double t = gb_bench_cpu_s() - t0;
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  return t;
}

int main(int argc, char **argv) {
  int is_short = argc > 1 && !strcmp(argv[1], "--short");
  size_t n = is_short ? 1000 : 10000, bytes = 0;
  char dir[] = "/tmp/bench_timeouts.XXXXXX";
  if (!mkdtemp(dir) || write_dump(dir, n, &bytes)) {
    perror("bench_timeouts: writing the dump");
    return 1;
  }
  const char *formats[] = {"json", "html"};
  double best[2] = {1e9, 1e9}, cpu0 = gb_bench_cpu_s();
  int status = 0, runs = 0;
  for (int rep = 0; rep < 3; rep++)
    for (int f = 0; f < 2; f++, runs++) {
      double t = run_once(dir, formats[f], &status);
      if (status != 0) {
        fprintf(stderr, "bench_timeouts: the report exited %d\n", status);
        return 1;
      }
      best[f] = t < best[f] ? t : best[f];
    }
  double cpu = (gb_bench_cpu_s() - cpu0) / runs, load = load_cpu(dir);
  printf("bench_timeouts: %zu PodGroups, %.1f MB of kubectl JSON\n", n, (double)bytes / 1e6);
  printf("  report -o json : %8.3f s (best of 3)\n", best[0]);
  printf("  report -o html : %8.3f s (best of 3)\n", best[1]);
  printf("  cpu per run    : %8.3f s (loading the dump alone: %.3f s), rss %ld KiB\n", cpu, load,
         gb_bench_rss_kib());
  printf("  (wall times include waiting for a core on a shared machine; cpu is the figure)\n");
  printf("  goal (issue): <= 2 s for 10,000 PodGroups\n");
  for (size_t f = 0; f * 2000 < n; f++) {
    char p[600];
    snprintf(p, sizeof(p), "%s/pg-%zu.json", dir, f);
    unlink(p);
    snprintf(p, sizeof(p), "%s/pods-%zu.json", dir, f);
    unlink(p);
  }
  rmdir(dir);
  return 0;
}
