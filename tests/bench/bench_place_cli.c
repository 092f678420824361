/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_place_cli: `gangbridge place` as a whole process against the floor
 * of reading its input (issue 22 row 9).  It writes a cluster of N Nodes
 * (racks of 16 under blocks of 8, by node labels; 5,000, --short 500), two
 * running Pods per Node and one Gang document to a temporary directory,
 * then alternates (A B A B ...) two child processes:
 *   A  gangbridge place -c cluster.yaml -f gang.yaml --levels block,rack -o json
 *   B  this program in its floor mode: libyaml's event parse of the same two
 *      files, nothing kept;
 * and prints each one's CPU (user + system, from wait4) and wall time, the
 * medians over the rounds and the median of the rounds' ratios A/B.  Goal
 * (issue 22): <= 2x.  The answer of A is checked (exit 0, JSON with
 * "feasible"); no figure is asserted.  GANGBRIDGE names the binary.
 *
 * Usage: bench_place_cli [--short]
 *        bench_place_cli --floor FILE...   (the B side)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>

#include "gb_bench.h"

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_place_cli: %s: %s\n", what, why);
  exit(1);
}

static int floor_parse(int n, char **files) {
  for (int i = 0; i < n; i++) {
    FILE *f = fopen(files[i], "rb");
    if (!f)
      return 1;
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, f);
    for (;;) {
      yaml_event_t ev;
      if (!yaml_parser_parse(&p, &ev))
        return 1;
      int end = ev.type == YAML_STREAM_END_EVENT;
      yaml_event_delete(&ev);
      if (end)
        break;
    }
    yaml_parser_delete(&p);
    fclose(f);
  }
  return 0;
}

static void write_inputs(const char *dir, int nodes, char *cluster, char *gang, size_t size) {
  snprintf(cluster, size, "%s/cluster.yaml", dir);
  snprintf(gang, size, "%s/gang.yaml", dir);
  FILE *f = fopen(cluster, "w");
  if (!f)
    die(cluster, strerror(errno));
  for (int i = 0; i < nodes; i++) {
    fprintf(f,
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: node-%d\n  labels:\n"
            "    kubernetes.io/hostname: node-%d\n    block: block-%d\n    rack: rack-%d\n"
            "status:\n  allocatable:\n    cpu: '192'\n    memory: 2015Gi\n"
            "    nvidia.com/gpu: '8'\n    pods: '110'\n  conditions:\n"
            "    - type: Ready\n      status: 'True'\n",
            i, i, i / 128, i / 16);
    for (int k = 0; k < 2; k++)
      fprintf(f,
              "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: run-%d-%d\n"
              "  namespace: team-b\nspec:\n  nodeName: node-%d\n  containers:\n"
              "    - name: main\n      image: busybox\n      resources:\n"
              "        requests: {cpu: '8', memory: 64Gi, nvidia.com/gpu: '%d'}\n"
              "status:\n  phase: Running\n",
              i, k, i, (i + k) % 3);
  }
  fclose(f);
  f = fopen(gang, "w");
  if (!f)
    die(gang, strerror(errno));
  fputs("apiVersion: gangbridge.io/v1alpha1\nkind: Gang\nmetadata: {name: g}\n"
        "spec:\n  podSets: [{name: w, count: 64, requests: {cpu: '8', nvidia.com/gpu: '4'}}]\n",
        f);
  fclose(f);
}

struct usage {
  double cpu, wall;
};

/* Runs argv with stdout to out_path (NULL: /dev/null); CPU from wait4. */
static struct usage run(char *const argv[], const char *out_path, int *status) {
  double t0 = gb_bench_mono_s();
  pid_t pid = fork();
  if (pid < 0)
    die("fork", strerror(errno));
  if (pid == 0) {
    int fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 1) < 0)
      _exit(127);
    execv(argv[0], argv);
    _exit(127);
  }
  struct rusage ru;
  if (wait4(pid, status, 0, &ru) < 0)
    die("wait4", strerror(errno));
  struct usage u;
  u.wall = gb_bench_mono_s() - t0;
  u.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
          (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  return u;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return v[n / 2];
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--floor"))
    return floor_parse(argc - 2, argv + 2);
  int short_mode = argc > 1 && !strcmp(argv[1], "--short");
  const char *bin = getenv("GANGBRIDGE");
  if (!bin || access(bin, X_OK))
    die("GANGBRIDGE", "must name the gangbridge binary");
  int nodes = short_mode ? 500 : 5000, rounds = short_mode ? 3 : 7;
  char dir[] = "/tmp/bench_place_cli.XXXXXX";
  if (!mkdtemp(dir))
    die("mkdtemp", strerror(errno));
  char cluster[256], gang[256], out[300], self[4096];
  write_inputs(dir, nodes, cluster, gang, sizeof(cluster));
  snprintf(out, sizeof(out), "%s/out.json", dir);
  ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (sl <= 0)
    die("readlink", strerror(errno));
  self[sl] = '\0';
  char *place[] = {(char *)bin, "place", "-c", cluster, "-f", gang, "--levels", "block,rack",
                   "-o", "json", NULL};
  char *floor_argv[] = {self, "--floor", cluster, gang, NULL};
  double a_cpu[16], b_cpu[16], a_wall[16], b_wall[16], ratio[16];
  for (int r = 0; r < rounds; r++) {
    int st = 0;
    struct usage a = run(place, out, &st);
    char buf[256] = "";
    FILE *f = fopen(out, "r");
    size_t got = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
      fclose(f);
    buf[got] = '\0';
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(buf, "\"feasible\""))
      die("gangbridge place", buf[0] ? buf : "no output (exit status not 0)");
    struct usage b = run(floor_argv, NULL, &st);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      die("floor", "libyaml could not parse the inputs");
    a_cpu[r] = a.cpu, b_cpu[r] = b.cpu, a_wall[r] = a.wall, b_wall[r] = b.wall;
    ratio[r] = a.cpu / (b.cpu > 0 ? b.cpu : 1e-6);
  }
  FILE *f = fopen(cluster, "r");
  long bytes = 0;
  if (f) {
    fseek(f, 0, SEEK_END);
    bytes = ftell(f);
    fclose(f);
  }
  printf("bench_place_cli: %d Nodes, %d Pods (%ld bytes of YAML), a gang of 64; median of %d "
         "rounds\n",
         nodes, 2 * nodes, bytes, rounds);
  printf("  gangbridge place (whole process): CPU %.1f ms, wall %.1f ms\n",
         median(a_cpu, rounds) * 1e3, median(a_wall, rounds) * 1e3);
  printf("  libyaml event parse (whole process): CPU %.1f ms, wall %.1f ms\n",
         median(b_cpu, rounds) * 1e3, median(b_wall, rounds) * 1e3);
  printf("  ratio (CPU): %.2fx (issue 22 row 9, goal <= 2x)\n", median(ratio, rounds));
  unlink(cluster);
  unlink(gang);
  unlink(out);
  rmdir(dir);
  return 0;
}
