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
 *
 * Then the service's tracker (gb_timeouts) with 50,000 gangs (--short:
 * 5,000): PodGroup adds, two pod adds per gang and a pod update (scheduled)
 * for half of them, then firing every deadline (action event, no API
 * client): CPU per operation and the resident memory it added.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "gb_bench.h"
#include "gb_cli.h"
#include "gb_config.h"
#include "gb_log.h"
#include "gb_manifest.h"
#include "gb_timeouts.h"

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

/* ---- the tracker ---------------------------------------------------------------- */

static json_object *tracker_podgroup(size_t i, char *key, size_t cap) {
  char name[64], ts[32];
  snprintf(name, sizeof(name), "job-%zu", i);
  snprintf(key, cap, "ns-%zu/%s", i % 100, name);
  stamp((long)(i % 3600), ts, sizeof(ts));
  json_object *pg = json_object_new_object(), *md = json_object_new_object();
  json_object *ann = json_object_new_object(), *spec = json_object_new_object();
  char ns[32];
  snprintf(ns, sizeof(ns), "ns-%zu", i % 100);
  json_object_object_add(md, "name", json_object_new_string(name));
  json_object_object_add(md, "namespace", json_object_new_string(ns));
  json_object_object_add(md, "uid", json_object_new_string(key));
  json_object_object_add(md, "creationTimestamp", json_object_new_string(ts));
  json_object_object_add(ann, "volcano.sh/sla-waiting-time", json_object_new_string("10m"));
  json_object_object_add(md, "annotations", ann);
  json_object_object_add(pg, "metadata", md);
  json_object_object_add(spec, "minMember", json_object_new_int((int)gang_size()));
  json_object_object_add(spec, "queue", json_object_new_string(i % 3 ? "team-a" : "team-b"));
  json_object_object_add(pg, "spec", spec);
  return pg;
}

static json_object *tracker_pod(size_t i, int j, int scheduled, char *key, size_t cap) {
  char text[1024], name[64];
  snprintf(name, sizeof(name), "job-%zu-node-%d", i, j);
  snprintf(key, cap, "ns-%zu/%s", i % 100, name);
  snprintf(text, sizeof(text),
           "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns-%zu\","
           "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"annotations\":{"
           "\"scheduling.k8s.io/group-name\":\"job-%zu\"}},\"status\":{\"conditions\":[{"
           "\"type\":\"PodScheduled\",\"status\":\"%s\",\"lastTransitionTime\":"
           "\"2026-01-01T00:00:05Z\"}]}}",
           name, i % 100, i, scheduled ? "True" : "False");
  return json_tokener_parse(text);
}

static void feed(struct gb_timeouts *t, enum gb_observe_kind kind, enum gb_informer_op op,
                 const char *key, json_object *obj, const char *old_json) {
  struct gb_informer_change ch = {op, key, "", key, obj, old_json};
  gb_timeouts_observe(t, kind, &ch, 0);
}

static int bench_tracker(size_t n) {
  struct gb_config cfg;
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_timeouts *t = NULL;
  if (gb_config_init(&cfg) || !reg)
    return 1;
  cfg.timeout_max_queues = 50;
  gb_log_set_level(GB_LOG_WARN); /* one info line per timeout would time the logger */
  struct gb_timeouts_opts o = {.cfg = &cfg, .reg = reg};
  long rss0 = gb_bench_rss_kib();
  if (gb_timeouts_new(&o, &t, &d))
    return 1;
  char key[128];
  double c0 = gb_bench_cpu_s();
  for (size_t i = 0; i < n; i++) {
    json_object *pg = tracker_podgroup(i, key, sizeof(key));
    feed(t, GB_OBSERVE_PODGROUP_VOLCANO, GB_INFORMER_ADD, key, pg, NULL);
    json_object_put(pg);
  }
  double c1 = gb_bench_cpu_s();
  size_t updates = 0;
  for (size_t i = 0; i < n; i++)
    for (int j = 0; j < 2; j++, updates++) {
      json_object *pod = tracker_pod(i, j, 0, key, sizeof(key));
      feed(t, GB_OBSERVE_POD, GB_INFORMER_ADD, key, pod, NULL);
      if (i % 2 == 0) {
        json_object *now = tracker_pod(i, j, 1, key, sizeof(key));
        feed(t, GB_OBSERVE_POD, GB_INFORMER_UPDATE, key, now, json_object_to_json_string(pod));
        json_object_put(now);
        updates++;
      }
      json_object_put(pod);
    }
  double c2 = gb_bench_cpu_s();
  long rss1 = gb_bench_rss_kib();
  struct gb_timeouts_stats st;
  gb_timeouts_get_stats(t, &st);
  size_t armed = st.armed, fired = gb_timeouts_run_due(t, 1767225600.0 + 86400);
  double c3 = gb_bench_cpu_s();
  printf("bench_timeouts tracker: %zu gangs tracked, %zu deadlines armed\n", st.gangs, armed);
  printf("  insert (PodGroup add) : %8.2f us each\n", (c1 - c0) / (double)n * 1e6);
  printf("  pod add/update        : %8.2f us each (%zu, JSON building included)\n",
         (c2 - c1) / (double)updates * 1e6, updates);
  printf("  fire (event, no API)  : %8.2f us each (%zu fired)\n",
         fired ? (c3 - c2) / (double)fired * 1e6 : 0.0, fired);
  printf("  memory added          : %ld KiB (%.0f bytes per gang, pods included)\n",
         rss1 - rss0, (double)(rss1 - rss0) * 1024.0 / (double)n);
  gb_timeouts_free(t);
  gb_metrics_free(reg);
  gb_config_destroy(&cfg);
  gc_diags_destroy(&d);
  return fired == armed && armed > 0 ? 0 : 1;
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
  return bench_tracker(is_short ? 5000 : 50000);
}
