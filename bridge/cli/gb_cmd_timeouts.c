/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_timeouts: `gangbridge timeouts report`.  Reads PodGroups (Volcano
 * v1beta1, coscheduling v1alpha1) and their pods from `kubectl get -o yaml`
 * or `-o json` dumps, measures each gang's time to schedule (PodGroup
 * creation to the minMember-th member pod's PodScheduled=True), and prints
 * per backend x queue x size class the wait quantiles, the effective timeout,
 * how many gangs exceeded it and a suggested timeout (gb_timeout_report owns
 * the arithmetic), as a table, JSON or one self-contained HTML page.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_cli.h"
#include "gb_diagprint.h"
#include "gb_emit.h"
#include "gb_hash.h"
#include "gb_kube_client.h"
#include "gb_kube_config.h"
#include "gb_manifest.h"
#include "gb_timeout_report.h"

enum tr_format { FMT_TABLE, FMT_JSON, FMT_HTML };

/* Dumps of big clusters hold far more objects than the loader's default
 * document bound (sized for manifests), so the report raises it. */
#define TR_MAX_DOCS 4000000

struct tr_opts {
  const char **paths;
  size_t n_paths;
  enum tr_format format;
  struct gb_tr_options report;
  int has_now;
  int64_t now_s;
  int live;               /* read the cluster instead of files */
  const char *kubeconfig; /* NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
  const char *context;
};

/* One PodGroup as read from the dump. */
struct tr_pg {
  const struct gb_doc *doc;
  const char *ns, *name, *queue;
  enum gb_tr_backend backend;
  int64_t size, created_s, timeout_s;
  int status_scheduled;  /* the PodGroup's status says it was scheduled */
  int64_t condition_s;   /* Volcano Scheduled=True lastTransitionTime, or -1 */
  size_t first, n_times; /* its PodScheduled times in run.times, after sorting */
};

/* A member pod's PodScheduled=True time, keyed by its PodGroup's index. */
struct tr_time {
  size_t pg;
  int64_t t;
};

struct tr_run {
  struct gb_docset *docs;    /* -f inputs */
  struct gc_arena *live;     /* objects read from the cluster */
  struct gb_doc *objs;       /* what is read: docs->docs, or the cluster's objects */
  size_t n_objs, cap_objs;
  struct gc_diags diags;
  struct tr_pg *pgs;
  size_t n_pgs;
  size_t *table; /* open addressing: index + 1 into pgs, 0 empty */
  size_t table_cap;
  struct tr_time *times;
  size_t n_times, cap_times;
  int64_t newest_s;
  size_t left_out; /* scheduled per their status, but no pod times to measure */
  struct gb_tr_gang *gangs;
  size_t n_gangs;
  struct gb_tr_report *report;
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: gangbridge timeouts report -f PATH [-f PATH...] [options]\n"
          "       gangbridge timeouts report --live [--kubeconfig PATH] [--context NAME]\n"
          "                                  [options]\n"
          "\n"
          "Reports how long gangs waited to be scheduled, per backend x queue x size class\n"
          "(1, 2-7, 8-31, 32-127, 128+): p50/p90/p99/max wait, the effective timeout, how\n"
          "many gangs exceeded it, and a suggested timeout with its reasoning.  Inputs are\n"
          "kubectl dumps of PodGroups and their pods, e.g.\n"
          "  kubectl get podgroups.scheduling.volcano.sh,pods -A -o yaml\n"
          "\n"
          "  -f, --filename PATH   dump file, directory (recursive) or - for stdin\n"
          "      --live            read PodGroups and pods from the cluster instead\n"
          "      --kubeconfig PATH kubeconfig (implies --live; default: $KUBECONFIG, then\n"
          "                        in-cluster, then ~/.kube/config)\n"
          "      --context NAME    kubeconfig context (default: the current one)\n"
          "      --now TIME        RFC 3339 time that never-scheduled gangs wait until\n"
          "                        (default: the newest timestamp in the inputs)\n"
          "      --what-if DUR     also count the gangs a timeout of DUR (Go duration,\n"
          "                        e.g. 10m) would have cut\n"
          "      --margin X        suggested = p99 x X, rounded up (default 1.5, >= 1)\n"
          "      --floor DUR       never suggest less (default 1m)\n"
          "      --max DUR         never suggest more (coscheduling is capped at 15m anyway)\n"
          "  -o, --output FORMAT   table (default), json or html (one self-contained page)\n"
          "  -h, --help            show this help\n");
}

/* 'timeouts' has one subcommand so far, so its help is the report's. */
static void usage_top(FILE *f) {
  fprintf(f, "subcommands:\n"
             "  report   wait quantiles and suggested gang timeouts from PodGroup dumps\n\n");
  usage(f);
}

/* Parses "1.5" into permille (1500); at most three decimals. */
static int parse_margin(const char *s, int64_t *out) {
  char *end = NULL;
  long long whole = strtoll(s, &end, 10);
  int64_t frac = 0, scale = 100;
  if (end == s || whole < 0 || whole > 1000)
    return GC_EUSAGE;
  if (*end == '.')
    for (end++; *end >= '0' && *end <= '9' && scale > 0; end++, scale /= 10)
      frac += (*end - '0') * scale;
  if (*end)
    return GC_EUSAGE;
  *out = whole * 1000 + frac;
  return *out >= 1000 ? GC_OK : GC_EUSAGE;
}

static int bad_value(const char *opt, const char *want, const char *got) {
  fprintf(stderr, "gangbridge timeouts report: %s must be %s, not '%s'\n", opt, want, got);
  return GC_EUSAGE;
}

static int parse_option(int c, const char *arg, struct tr_opts *o) {
  int64_t v = 0;
  switch (c) {
  case 'f': o->paths[o->n_paths++] = arg; return GC_OK;
  case 'o':
    if (!strcmp(arg, "table"))
      o->format = FMT_TABLE;
    else if (!strcmp(arg, "json"))
      o->format = FMT_JSON;
    else if (!strcmp(arg, "html"))
      o->format = FMT_HTML;
    else
      return bad_value("-o", "table, json or html", arg);
    return GC_OK;
  case 'n':
    if (gb_tr_parse_time(arg, &o->now_s))
      return bad_value("--now", "an RFC 3339 time (2026-01-02T03:04:05Z)", arg);
    o->has_now = 1;
    return GC_OK;
  case 'w':
    if (gb_tr_parse_duration(arg, &v) || v < 0)
      return bad_value("--what-if", "a Go duration such as 10m or 1h30m", arg);
    o->report.has_whatif = 1;
    o->report.whatif_s = v;
    return GC_OK;
  case 'm':
    if (parse_margin(arg, &o->report.rule.margin_permille))
      return bad_value("--margin", "a number >= 1 with at most 3 decimals", arg);
    return GC_OK;
  case 'l':
  case 'x':
    if (gb_tr_parse_duration(arg, &v) || v <= 0)
      return bad_value(c == 'l' ? "--floor" : "--max", "a positive Go duration", arg);
    *(c == 'l' ? &o->report.rule.floor_s : &o->report.rule.max_s) = v;
    return GC_OK;
  case 'k':
    o->kubeconfig = arg;
    o->live = 1;
    return GC_OK;
  case 'c': o->context = arg; return GC_OK;
  case 'L': o->live = 1; return GC_OK;
  }
  return GC_EUSAGE;
}

/* Parses argv (argv[0] is "report") into o.  Returns 0, 1 for --help
 * (printed) or GC_EUSAGE (message printed). */
static int parse_args(int argc, char **argv, struct tr_opts *o) {
  static const struct option longopts[] = {
      {"filename", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
      {"now", required_argument, NULL, 'n'},      {"what-if", required_argument, NULL, 'w'},
      {"margin", required_argument, NULL, 'm'},   {"floor", required_argument, NULL, 'l'},
      {"max", required_argument, NULL, 'x'},      {"kubeconfig", required_argument, NULL, 'k'},
      {"context", required_argument, NULL, 'c'},  {"live", no_argument, NULL, 'L'},
      {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
  };
  o->paths = calloc((size_t)argc, sizeof(*o->paths));
  if (!o->paths)
    return GC_ENOMEM;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 1;
    }
    if (c == ':' || c == '?') {
      fprintf(stderr, "gangbridge timeouts report: %s '%s'\n",
              c == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
      return GC_EUSAGE;
    }
    if (parse_option(c, optarg, o))
      return GC_EUSAGE;
  }
  if (optind < argc)
    return bad_value("an argument", "given with -f", argv[optind]);
  if (o->n_paths == 0 && !o->live) {
    fprintf(stderr, "gangbridge timeouts report: no input: give at least one -f PATH, or --live\n");
    return GC_EUSAGE;
  }
  if (o->n_paths && o->live) {
    fprintf(stderr, "gangbridge timeouts report: -f and --live/--kubeconfig exclude each other\n");
    return GC_EUSAGE;
  }
  gb_tr_options_defaults(&o->report);
  return GC_OK;
}

/* ------------------------------------------------------------------------ */
/* Finding PodGroups by backend, namespace and name                         */

static size_t hash_key(enum gb_tr_backend b, const char *ns, const char *name) {
  /* FNV-1a over "backend ns / name", in 64 bits even where size_t is
   * narrower, cut to size_t only at the end. */
  uint64_t h = gb_hash_fnv1a(GB_HASH_FNV_OFFSET ^ (uint64_t)b, ns, strlen(ns));
  h = gb_hash_fnv1a(h, "/", 1);
  h = gb_hash_fnv1a(h, name, strlen(name));
  return (size_t)h;
}

static int table_build(struct tr_run *r) {
  size_t cap = 16;
  while (cap < r->n_pgs * 2)
    cap *= 2;
  r->table = calloc(cap, sizeof(*r->table));
  if (!r->table)
    return GC_ENOMEM;
  r->table_cap = cap;
  for (size_t i = 0; i < r->n_pgs; i++) {
    size_t h = hash_key(r->pgs[i].backend, r->pgs[i].ns, r->pgs[i].name) & (cap - 1);
    while (r->table[h])
      h = (h + 1) & (cap - 1);
    r->table[h] = i + 1;
  }
  return GC_OK;
}

/* Index of the PodGroup, or (size_t)-1. */
static size_t table_find(const struct tr_run *r, enum gb_tr_backend b, const char *ns,
                         const char *name) {
  size_t h = hash_key(b, ns, name) & (r->table_cap - 1);
  for (; r->table[h]; h = (h + 1) & (r->table_cap - 1)) {
    const struct tr_pg *p = &r->pgs[r->table[h] - 1];
    if (p->backend == b && !strcmp(p->name, name) && !strcmp(p->ns, ns))
      return r->table[h] - 1;
  }
  return (size_t)-1;
}

/* ------------------------------------------------------------------------ */
/* Reading PodGroups and pods                                               */

static void note_time(struct tr_run *r, int64_t t) {
  if (t > r->newest_s)
    r->newest_s = t;
}

/* Reports a problem at the value's position (or the document's). */
static void doc_err(struct tr_run *r, const struct gb_doc *d, const struct gc_value *v,
                    const char *ns, const char *name, const char *path, const char *msg,
                    int warning) {
  uint32_t line = v && v->line ? v->line : d->line, col = v && v->line ? v->col : d->col;
  if (line == 0) { /* read from the cluster: the object names the place */
    if (warning)
      gc_diags_warnf(&r->diags, "%s/%s: %s: %s", ns, name, path, msg);
    else
      gc_diags_addf(&r->diags, "%s/%s: %s: %s", ns, name, path, msg);
    return;
  }
  if (warning)
    gc_diags_warnf(&r->diags, "%s:%u:%u: %s/%s: %s: %s", d->file, line, col, ns, name, path, msg);
  else
    gc_diags_addf(&r->diags, "%s:%u:%u: %s/%s: %s: %s", d->file, line, col, ns, name, path, msg);
}

/* Reads a timestamp field; 0 ok, GC_ENOTFOUND absent, GC_EINVAL reported. */
static int read_time(struct tr_run *r, const struct gb_doc *d, const struct gc_value *v,
                     const char *ns, const char *name, const char *path, int64_t *out) {
  if (!v)
    return GC_ENOTFOUND;
  const char *s = gc_value_as_str(v);
  if (!s || gb_tr_parse_time(s, out)) {
    doc_err(r, d, v, ns, name, path, "not an RFC 3339 timestamp (2026-01-02T03:04:05Z)", 0);
    return GC_EINVAL;
  }
  note_time(r, *out);
  return GC_OK;
}

static enum gb_tr_backend backend_of(const char *api, int *known) {
  *known = 1;
  if (!strncmp(api, "scheduling.volcano.sh/", 22))
    return GB_TR_VOLCANO;
  if (!strncmp(api, "scheduling.x-k8s.io/", 20) || !strncmp(api, "scheduling.sigs.k8s.io/", 23))
    return GB_TR_COSCHEDULING;
  *known = 0;
  return GB_TR_VOLCANO;
}

/* Volcano's waiting time: the volcano.sh/ annotation, else the plain one,
 * ignored (with a warning) when it is no positive Go duration, as Volcano
 * itself ignores it then. */
static void volcano_timeout(struct tr_run *r, struct tr_pg *p) {
  static const char *const keys[] = {"volcano.sh/sla-waiting-time", "sla-waiting-time"};
  const struct gc_value *ann = gc_value_path(p->doc->root, "metadata.annotations");
  for (size_t k = 0; k < 2; k++) {
    const struct gc_value *v = gc_map_get(ann, keys[k]);
    if (!v)
      continue;
    const char *s = gc_value_as_str(v);
    int64_t t = 0;
    char path[80], msg[160];
    snprintf(path, sizeof(path), "metadata.annotations.%s", keys[k]);
    if (s && gb_tr_parse_duration(s, &t) == GC_OK && t > 0) {
      p->timeout_s = t;
      return;
    }
    snprintf(msg, sizeof(msg), "\"%.60s\" is not a Go duration above 0; Volcano ignores it",
             s ? s : "(not a string)");
    doc_err(r, p->doc, v, p->ns, p->name, path, msg, 1);
  }
}

/* Coscheduling's spec.scheduleTimeoutSeconds; 0 means the plugin default
 * (unknown offline), and Permit waits are capped at 900 s. */
static int cosched_timeout(struct tr_run *r, struct tr_pg *p) {
  const struct gc_value *v = gc_value_path(p->doc->root, "spec.scheduleTimeoutSeconds");
  if (!v)
    return GC_OK;
  if (v->type != GC_INT || v->u.i < 0) {
    doc_err(r, p->doc, v, p->ns, p->name, "spec.scheduleTimeoutSeconds",
            "not an integer >= 0", 0);
    return GC_EINVAL;
  }
  if (v->u.i > 0)
    p->timeout_s = v->u.i > GB_TR_COSCHED_CAP_S ? GB_TR_COSCHED_CAP_S : v->u.i;
  return GC_OK;
}

/* Whether the status says the gang was scheduled, and Volcano's
 * Scheduled=True condition time (a fallback when the pods are gone). */
static void read_status(struct tr_run *r, struct tr_pg *p) {
  const char *phase = gc_value_as_str(gc_value_path(p->doc->root, "status.phase"));
  p->status_scheduled = phase && (!strcmp(phase, "Running") || !strcmp(phase, "Completed") ||
                                  !strcmp(phase, "Finished") || !strcmp(phase, "Failed"));
  const struct gc_value *conds = gc_value_path(p->doc->root, "status.conditions");
  for (size_t i = 0; conds && conds->type == GC_SEQ && i < conds->len; i++) {
    const struct gc_value *c = conds->u.items[i];
    const char *type = gc_value_as_str(gc_map_get(c, "type"));
    const char *st = gc_value_as_str(gc_map_get(c, "status"));
    int64_t t = 0;
    if (type && st && !strcmp(type, "Scheduled") && !strcmp(st, "True") &&
        read_time(r, p->doc, gc_map_get(c, "lastTransitionTime"), p->ns, p->name,
                  "status.conditions[Scheduled].lastTransitionTime", &t) == GC_OK) {
      p->condition_s = t;
      p->status_scheduled = 1;
    }
  }
}

static int read_podgroup(struct tr_run *r, const struct gb_doc *d, enum gb_tr_backend b) {
  struct tr_pg *p = &r->pgs[r->n_pgs];
  memset(p, 0, sizeof(*p));
  p->doc = d;
  p->backend = b;
  p->timeout_s = GB_TR_NO_TIMEOUT;
  p->condition_s = -1;
  p->ns = gc_value_as_str(gc_value_path(d->root, "metadata.namespace"));
  p->name = gc_value_as_str(gc_value_path(d->root, "metadata.name"));
  if (!p->ns)
    p->ns = "default";
  if (!p->name) {
    gc_diags_addf(&r->diags, "%s:%u:%u: PodGroup: metadata.name: missing", d->file, d->line,
                  d->col);
    return GC_EINVAL;
  }
  const struct gc_value *ct = gc_value_path(d->root, "metadata.creationTimestamp");
  int rc = read_time(r, d, ct, p->ns, p->name, "metadata.creationTimestamp", &p->created_s);
  if (rc == GC_ENOTFOUND)
    doc_err(r, d, NULL, p->ns, p->name, "metadata.creationTimestamp", "missing", 0);
  if (rc)
    return GC_EINVAL;
  const struct gc_value *mm = gc_value_path(d->root, "spec.minMember");
  if (mm && (mm->type != GC_INT || mm->u.i < 0)) {
    doc_err(r, d, mm, p->ns, p->name, "spec.minMember", "not an integer >= 0", 0);
    return GC_EINVAL;
  }
  p->size = mm && mm->u.i > 0 ? mm->u.i : 1;
  const char *q = gc_value_as_str(gc_value_path(d->root, "spec.queue"));
  /* Volcano puts a PodGroup that names no queue into "default";
   * coscheduling has no queues. */
  p->queue = b == GB_TR_VOLCANO ? (q && *q ? q : "default") : "";
  if (b == GB_TR_VOLCANO)
    volcano_timeout(r, p);
  else if (cosched_timeout(r, p))
    return GC_EINVAL;
  read_status(r, p);
  r->n_pgs++;
  return GC_OK;
}

static int push_time(struct tr_run *r, size_t pg, int64_t t) {
  if (r->n_times == r->cap_times) {
    size_t ncap = r->cap_times ? r->cap_times * 2 : 1024;
    struct tr_time *n = realloc(r->times, ncap * sizeof(*n));
    if (!n)
      return GC_ENOMEM;
    r->times = n;
    r->cap_times = ncap;
  }
  r->times[r->n_times++] = (struct tr_time){pg, t};
  return GC_OK;
}

/* Matches a pod to its PodGroup (coscheduling label, either API group's
 * spelling, or Volcano's annotation; same namespace) and records its
 * PodScheduled=True time. */
static int read_pod(struct tr_run *r, const struct gb_doc *d) {
  const struct gc_value *meta = gc_map_get(d->root, "metadata");
  const char *ns = gc_value_as_str(gc_map_get(meta, "namespace"));
  const char *name = gc_value_as_str(gc_map_get(meta, "name"));
  const struct gc_value *labels = gc_map_get(meta, "labels");
  const char *group = gc_value_as_str(gc_map_get(labels, "scheduling.x-k8s.io/pod-group"));
  enum gb_tr_backend b = GB_TR_COSCHEDULING;
  if (!group)
    group = gc_value_as_str(gc_map_get(labels, "pod-group.scheduling.sigs.k8s.io"));
  if (!group) {
    b = GB_TR_VOLCANO;
    group = gc_value_as_str(
        gc_map_get(gc_map_get(meta, "annotations"), "scheduling.k8s.io/group-name"));
  }
  const struct gc_value *conds = gc_value_path(d->root, "status.conditions");
  for (size_t i = 0; conds && conds->type == GC_SEQ && i < conds->len; i++) {
    const struct gc_value *c = conds->u.items[i];
    const char *type = gc_value_as_str(gc_map_get(c, "type"));
    const char *st = gc_value_as_str(gc_map_get(c, "status"));
    if (!type || !st || strcmp(type, "PodScheduled") || strcmp(st, "True"))
      continue;
    int64_t t = 0;
    int rc = read_time(r, d, gc_map_get(c, "lastTransitionTime"), ns ? ns : "default",
                       name ? name : "?", "status.conditions[PodScheduled].lastTransitionTime", &t);
    if (rc || !group)
      return rc == GC_ENOTFOUND ? GC_OK : rc;
    size_t pg = table_find(r, b, ns ? ns : "default", group);
    return pg == (size_t)-1 ? GC_OK : push_time(r, pg, t);
  }
  return GC_OK;
}

static int cmp_time(const void *pa, const void *pb) {
  const struct tr_time *a = pa, *b = pb;
  if (a->pg != b->pg)
    return a->pg < b->pg ? -1 : 1;
  return (a->t > b->t) - (a->t < b->t);
}

/* Reads every PodGroup, then every pod (pods may come before their group in
 * the dump), then sorts the pod times by group. */
static int read_all(struct tr_run *r) {
  int known = 0, rc = GC_OK;
  r->pgs = calloc(r->n_objs ? r->n_objs : 1, sizeof(*r->pgs));
  if (!r->pgs)
    return GC_ENOMEM;
  for (size_t i = 0; i < r->n_objs; i++) {
    const struct gb_doc *d = &r->objs[i];
    const char *kind = gc_value_as_str(gc_map_get(d->root, "kind"));
    const char *api = gc_value_as_str(gc_map_get(d->root, "apiVersion"));
    if (!kind || !api || strcmp(kind, "PodGroup"))
      continue;
    enum gb_tr_backend b = backend_of(api, &known);
    if (known)
      read_podgroup(r, d, b);
  }
  if ((rc = table_build(r)))
    return rc;
  for (size_t i = 0; i < r->n_objs; i++) {
    const struct gb_doc *d = &r->objs[i];
    const char *kind = gc_value_as_str(gc_map_get(d->root, "kind"));
    if (kind && !strcmp(kind, "Pod") && (rc = read_pod(r, d)) == GC_ENOMEM)
      return rc;
  }
  if (r->n_times)
    qsort(r->times, r->n_times, sizeof(*r->times), cmp_time);
  for (size_t i = 0; i < r->n_times; i++) {
    struct tr_pg *p = &r->pgs[r->times[i].pg];
    if (p->n_times++ == 0)
      p->first = i;
  }
  return GC_OK;
}

/* Turns each PodGroup into an observation: scheduled when minMember member
 * pods have PodScheduled=True (the wait ends at the minMember-th of them),
 * else censored at now; a group whose status says scheduled but whose pods
 * are gone uses Volcano's Scheduled condition, or is left out. */
static int measure(struct tr_run *r, int64_t now) {
  r->gangs = calloc(r->n_pgs ? r->n_pgs : 1, sizeof(*r->gangs));
  if (!r->gangs)
    return GC_ENOMEM;
  for (size_t i = 0; i < r->n_pgs; i++) {
    const struct tr_pg *p = &r->pgs[i];
    int64_t end = now;
    int censored = 0;
    if (p->n_times >= (size_t)p->size)
      end = r->times[p->first + (size_t)p->size - 1].t;
    else if (p->condition_s >= 0)
      end = p->condition_s;
    else if (p->status_scheduled) {
      r->left_out++;
      continue;
    } else
      censored = 1;
    int64_t wait = end - p->created_s;
    r->gangs[r->n_gangs++] = (struct gb_tr_gang){p->ns, p->name, p->queue, p->backend, p->size,
                                                 wait < 0 ? 0 : wait, censored, p->timeout_s};
  }
  if (r->left_out)
    gc_diags_warnf(&r->diags, "%zu PodGroup(s) left out: their status says scheduled but the "
                              "dump has too few of their pods to tell when", r->left_out);
  return GC_OK;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */

static const char *backend_name(enum gb_tr_backend b) {
  return b == GB_TR_VOLCANO ? "volcano" : "coscheduling";
}

static const char *dur(int64_t s, char *buf) {
  if (s == GB_TR_NO_TIMEOUT)
    return "none";
  gb_tr_format_duration(s, buf, 24);
  return buf;
}

static void timeout_cell(const struct gb_tr_row *row, char *buf, size_t cap) {
  char d[24];
  if (row->timeout_gangs == row->gangs)
    snprintf(buf, cap, "%s", dur(row->timeout_s, d));
  else
    snprintf(buf, cap, "%s (%zu/%zu)", dur(row->timeout_s, d), row->timeout_gangs, row->gangs);
}

static void write_table(const struct gb_tr_report *rep, int64_t now) {
  char a[24], b[24], c[24], d[24], e[24], t[64], w[40], nows[32];
  gb_tr_format_time(now, nows, sizeof(nows));
  const struct gb_tr_options *o = &rep->opts;
  int qw = 5;
  for (size_t i = 0; i < rep->n_rows; i++)
    if ((int)strlen(rep->rows[i].queue) > qw)
      qw = (int)strlen(rep->rows[i].queue);
  snprintf(w, sizeof(w), "CUT BY %s", dur(o->whatif_s, a));
  printf("%-12s  %-*s  %-6s  %6s  %8s  %9s  %9s  %9s  %9s  %-16s  %8s  %-9s%s%s\n", "BACKEND", qw,
         "QUEUE", "SIZE", "GANGS", "CENSORED", "P50", "P90", "P99", "MAX", "TIMEOUT", "EXCEEDED",
         "SUGGESTED", o->has_whatif ? "  " : "", o->has_whatif ? w : "");
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct gb_tr_row *r = &rep->rows[i];
    timeout_cell(r, t, sizeof(t));
    printf("%-12s  %-*s  %-6s  %6zu  %8zu  %9s  %9s  %9s  %9s  %-16s  %8zu  %-9s",
           backend_name(r->backend), qw, *r->queue ? r->queue : "-",
           gb_tr_size_class_name(r->size_class), r->gangs, r->censored, dur(r->p50_s, a),
           dur(r->p90_s, b), dur(r->p99_s, c), dur(r->max_s, d), t, r->exceeded,
           dur(r->suggested_s, e));
    if (o->has_whatif)
      printf("  %zu", r->whatif_cut);
    printf("\n");
  }
  printf("\nsuggestions:\n");
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct gb_tr_row *r = &rep->rows[i];
    printf("  %s %s %s: %s\n", backend_name(r->backend), *r->queue ? r->queue : "-",
           gb_tr_size_class_name(r->size_class), r->reason);
  }
  printf("\n%zu gangs, %zu never scheduled (waits up to %s counted as lower bounds), %zu exceeded "
         "their timeout",
         rep->gangs, rep->censored, nows, rep->exceeded);
  if (o->has_whatif)
    printf("; a %s timeout would have cut %zu", dur(o->whatif_s, a), rep->whatif_cut);
  printf("\n");
}

/* Builds JSON members; any allocation failure makes the whole build fail. */
struct jb {
  struct gc_arena *a;
  int failed;
};

static void put(struct jb *j, struct gc_value *map, const char *key, struct gc_value *v) {
  if (!map || !v || gc_map_set(j->a, map, key, v))
    j->failed = 1;
}

static void put_int(struct jb *j, struct gc_value *m, const char *key, int64_t i) {
  put(j, m, key, gc_value_int(j->a, i));
}

static struct gc_value *json_row(struct jb *j, const struct gb_tr_row *r, int whatif) {
  struct gc_value *m = gc_value_map(j->a);
  put(j, m, "backend", gc_value_strz(j->a, backend_name(r->backend)));
  put(j, m, "queue", gc_value_strz(j->a, r->queue));
  put(j, m, "sizeClass", gc_value_strz(j->a, gb_tr_size_class_name(r->size_class)));
  put_int(j, m, "gangs", (int64_t)r->gangs);
  put_int(j, m, "censored", (int64_t)r->censored);
  put_int(j, m, "p50Seconds", r->p50_s);
  put_int(j, m, "p90Seconds", r->p90_s);
  put_int(j, m, "p99Seconds", r->p99_s);
  put_int(j, m, "maxSeconds", r->max_s);
  put(j, m, "timeoutSeconds",
      r->timeout_s == GB_TR_NO_TIMEOUT ? gc_value_null(j->a) : gc_value_int(j->a, r->timeout_s));
  put_int(j, m, "timeoutGangs", (int64_t)r->timeout_gangs);
  put_int(j, m, "exceeded", (int64_t)r->exceeded);
  put_int(j, m, "suggestedSeconds", r->suggested_s);
  put(j, m, "suggestedCapped", gc_value_bool(j->a, r->suggested_capped));
  if (whatif)
    put_int(j, m, "whatIfCut", (int64_t)r->whatif_cut);
  put(j, m, "reason", gc_value_strz(j->a, r->reason));
  return m;
}

static int write_json(const struct gb_tr_report *rep, int64_t now) {
  struct jb j = {gc_arena_new(0), 0};
  char *text = NULL, nows[32];
  size_t len = 0;
  int rc = GC_ENOMEM;
  if (!j.a)
    return GC_ENOMEM;
  const struct gb_tr_options *o = &rep->opts;
  struct gc_value *doc = gc_value_map(j.a), *rule = gc_value_map(j.a), *rows = gc_value_seq(j.a);
  struct gc_value *tot = gc_value_map(j.a);
  gb_tr_format_time(now, nows, sizeof(nows));
  put(&j, doc, "now", gc_value_strz(j.a, nows));
  put_int(&j, rule, "marginPermille", o->rule.margin_permille);
  put_int(&j, rule, "floorSeconds", o->rule.floor_s);
  put(&j, rule, "maxSeconds",
      o->rule.max_s ? gc_value_int(j.a, o->rule.max_s) : gc_value_null(j.a));
  put(&j, doc, "rule", rule);
  if (o->has_whatif)
    put_int(&j, doc, "whatIfSeconds", o->whatif_s);
  put_int(&j, tot, "gangs", (int64_t)rep->gangs);
  put_int(&j, tot, "censored", (int64_t)rep->censored);
  put_int(&j, tot, "exceeded", (int64_t)rep->exceeded);
  if (o->has_whatif)
    put_int(&j, tot, "whatIfCut", (int64_t)rep->whatif_cut);
  put(&j, doc, "totals", tot);
  for (size_t i = 0; i < rep->n_rows && rows; i++)
    if (gc_seq_push(j.a, rows, json_row(&j, &rep->rows[i], o->has_whatif)))
      j.failed = 1;
  put(&j, doc, "rows", rows);
  if (!j.failed && (rc = gb_emit_json(doc, 1, &text, &len)) == GC_OK &&
      fwrite(text, 1, len, stdout) != len)
    rc = GC_EIO;
  free(text);
  gc_arena_free(j.a);
  return rc;
}

/* Writes s with HTML's five special characters escaped. */
static void html_text(const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", stdout); break;
    case '<': fputs("&lt;", stdout); break;
    case '>': fputs("&gt;", stdout); break;
    case '"': fputs("&quot;", stdout); break;
    case '\'': fputs("&#39;", stdout); break;
    default: putchar(*s);
    }
  }
}

#define HIST_BINS 40
#define HIST_W 720
#define HIST_H 180
#define HIST_PAD 30

/* Draws a vertical mark at seconds s on the histogram's axis, its label on
 * whichever side of the line has room. */
static void html_mark(int64_t s, int64_t upper, const char *color, const char *label, int dy) {
  if (s == GB_TR_NO_TIMEOUT)
    return;
  double x = HIST_PAD + (double)(s > upper ? upper : s) * (HIST_W - 2 * HIST_PAD) / (double)upper;
  int left = x > HIST_W - 160;
  char d[24];
  printf("<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"4\"/>"
         "<text x=\"%.1f\" y=\"%d\" fill=\"%s\" font-size=\"12\" text-anchor=\"%s\">%s %s</text>\n",
         x, x, HIST_H - HIST_PAD, color, left ? x - 4 : x + 4, 12 + dy, color,
         left ? "end" : "start", label, dur(s, d));
}

/* One histogram: bars of the waits, the current timeout in red and the
 * suggested one in green.  The axis ends a little past the largest of p99
 * and the two timeouts, so the body of the distribution stays readable; the
 * last bar also holds every longer wait (the tail up to the maximum). */
static void html_histogram(const struct gb_tr_row *r) {
  int64_t upper = r->p99_s;
  if (r->timeout_s != GB_TR_NO_TIMEOUT && r->timeout_s > upper)
    upper = r->timeout_s;
  if (r->suggested_s > upper)
    upper = r->suggested_s;
  upper = upper + upper / 20 + 1;
  size_t counts[HIST_BINS], most = 1;
  gb_tr_histogram(r, HIST_BINS, upper, counts);
  for (size_t i = 0; i < HIST_BINS; i++)
    most = counts[i] > most ? counts[i] : most;
  double bw = (double)(HIST_W - 2 * HIST_PAD) / HIST_BINS, plot = HIST_H - HIST_PAD - 20;
  printf("<svg width=\"%d\" height=\"%d\" role=\"img\">\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" "
         "y2=\"%d\" stroke=\"#444\"/>\n",
         HIST_W, HIST_H, HIST_PAD, HIST_H - HIST_PAD, HIST_W - HIST_PAD, HIST_H - HIST_PAD);
  for (size_t i = 0; i < HIST_BINS; i++) {
    double h = plot * (double)counts[i] / (double)most;
    if (counts[i])
      printf("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#3b6fd4\">"
             "<title>%zu</title></rect>\n",
             HIST_PAD + bw * (double)i + 1, HIST_H - HIST_PAD - h, bw - 2, h, counts[i]);
  }
  char d[24], m[24];
  printf("<text x=\"%d\" y=\"%d\" font-size=\"12\">0s</text><text x=\"%d\" y=\"%d\" "
         "font-size=\"12\" text-anchor=\"end\">%s%s (max %s)</text>\n",
         HIST_PAD, HIST_H - 10, HIST_W - HIST_PAD, HIST_H - 10,
         r->max_s >= upper ? "last bar: >= " : "", dur(upper, d), dur(r->max_s, m));
  html_mark(r->timeout_s, upper, "#d62728", "current", 0);
  html_mark(r->suggested_s, upper, "#2ca02c", "suggested", 14);
  printf("</svg>\n");
}

static void html_row(const struct gb_tr_row *r, int whatif, int64_t whatif_s) {
  char a[24], b[24], c[24], d[24], e[24], t[64];
  timeout_cell(r, t, sizeof(t));
  printf("<section><h3>size %s: %zu gangs</h3>\n", gb_tr_size_class_name(r->size_class), r->gangs);
  html_histogram(r);
  printf("<p>p50 %s, p90 %s, p99 %s, max %s; %zu never scheduled. Current timeout <b "
         "class=\"cur\">%s</b>, exceeded by %zu; suggested <b class=\"sug\">%s</b>.",
         dur(r->p50_s, a), dur(r->p90_s, b), dur(r->p99_s, c), dur(r->max_s, d), r->censored, t,
         r->exceeded, dur(r->suggested_s, e));
  if (whatif)
    printf(" A %s timeout would have cut %zu.", dur(whatif_s, a), r->whatif_cut);
  printf("<br><small>");
  html_text(r->reason);
  printf("</small></p></section>\n");
}

static void write_html(const struct gb_tr_report *rep, int64_t now) {
  char nows[32];
  gb_tr_format_time(now, nows, sizeof(nows));
  printf("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<title>gangbridge timeouts report</title>\n<style>\n"
         "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}\n"
         "h2{border-bottom:1px solid #ccc;margin-top:32px}h3{margin:16px 0 4px}\n"
         ".cur{color:#d62728}.sug{color:#2ca02c}small{color:#555}\n"
         "</style></head><body>\n<h1>Gang scheduling waits and timeouts</h1>\n"
         "<p>%zu gangs up to %s; %zu never scheduled (their waits are lower bounds); %zu "
         "exceeded their timeout. Bars: gangs per wait; <span class=\"cur\">red</span>: the "
         "current timeout; <span class=\"sug\">green</span>: the suggested one.</p>\n",
         rep->gangs, nows, rep->censored, rep->exceeded);
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct gb_tr_row *r = &rep->rows[i];
    if (i == 0 || r->backend != rep->rows[i - 1].backend ||
        strcmp(r->queue, rep->rows[i - 1].queue)) {
      printf("<h2>%s queue ", backend_name(r->backend));
      html_text(*r->queue ? r->queue : "(none)");
      printf("</h2>\n");
    }
    html_row(r, rep->opts.has_whatif, rep->opts.whatif_s);
  }
  printf("</body></html>\n");
}

/* ------------------------------------------------------------------------ */
/* The command                                                              */

static void run_free(struct tr_run *r) {
  gb_tr_report_free(r->report);
  free(r->gangs);
  free(r->times);
  free(r->table);
  free(r->pgs);
  if (r->live)
    free(r->objs);
  gc_arena_free(r->live);
  gb_docset_free(r->docs);
  gc_diags_destroy(&r->diags);
}

/* One listed object: converted into the live arena and kept. */
struct live_list {
  struct tr_run *r;
  const char *source;
};

static int live_item(void *arg, json_object *obj) {
  struct live_list *l = arg;
  struct tr_run *r = l->r;
  struct gc_value *v = NULL;
  int rc = gb_kube_json_to_value(r->live, obj, 0, &v);
  if (rc)
    return rc;
  if (r->n_objs == r->cap_objs) {
    size_t ncap = r->cap_objs ? r->cap_objs * 2 : 1024;
    struct gb_doc *n = ncap <= TR_MAX_DOCS ? realloc(r->objs, ncap * sizeof(*n)) : NULL;
    if (!n)
      return ncap <= TR_MAX_DOCS ? GC_ENOMEM : GC_ELIMIT;
    r->objs = n;
    r->cap_objs = ncap;
  }
  r->objs[r->n_objs++] = (struct gb_doc){v, l->source, 0, 0};
  return GC_OK;
}

/* Lists both backends' PodGroups and every pod.  A PodGroup API the cluster
 * does not serve (404) is skipped: most clusters run one backend.  Volcano
 * binds pods by annotation, which no selector can match, so all pods are
 * listed (500 per page). */
static int load_cluster(const struct tr_opts *o, struct tr_run *r) {
  static const char *const paths[] = {"/apis/scheduling.volcano.sh/v1beta1/podgroups",
                                      "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
                                      "/api/v1/pods"};
  struct gb_kube_config *cfg = NULL;
  struct gb_kube_client *c = NULL;
  int rc = gb_kube_config_load(o->kubeconfig, o->context, &cfg, &r->diags);
  if (rc == GC_OK)
    rc = gb_kube_client_new(cfg, NULL, &c, &r->diags);
  r->live = rc ? NULL : gc_arena_new(0);
  if (rc == GC_OK && !r->live)
    rc = GC_ENOMEM;
  for (size_t i = 0; rc == GC_OK && i < sizeof(paths) / sizeof(paths[0]); i++) {
    struct live_list l = {r, paths[i]};
    struct gb_kube_error e;
    char rv[128], msg[1200];
    int lrc = gb_kube_list(c, paths[i], NULL, live_item, &l, rv, sizeof(rv), &e);
    if (lrc == GC_EIO || (lrc == GC_ENOTFOUND && i == 2))
      gc_diags_addf(&r->diags, "listing %s: %s", paths[i], gb_kube_error_str(&e, msg, sizeof(msg)));
    else if (lrc != GC_ENOTFOUND)
      rc = lrc;
  }
  gb_kube_client_free(c);
  gb_kube_config_free(cfg);
  return rc;
}

static int load_files(const struct tr_opts *o, struct tr_run *r) {
  struct gb_limits lim = {0};
  lim.max_docs = TR_MAX_DOCS;
  r->docs = gb_docset_new(&lim);
  if (!r->docs)
    return GC_ENOMEM;
  for (size_t i = 0; i < o->n_paths; i++)
    gb_load_path(r->docs, o->paths[i], &r->diags);
  r->objs = r->docs->docs;
  r->n_objs = r->docs->n;
  return GC_OK;
}

static int run_report(const struct tr_opts *o, struct tr_run *r) {
  int rc = o->live ? load_cluster(o, r) : load_files(o, r);
  if (rc == GC_OK)
    rc = read_all(r);
  if (rc)
    return rc;
  if (r->n_pgs == 0) {
    if (r->diags.errors == 0)
      gc_diags_addf(&r->diags, "no PodGroup (scheduling.volcano.sh or scheduling.x-k8s.io) "
                               "found in the inputs");
    return GC_OK;
  }
  int64_t now = o->has_now ? o->now_s : r->newest_s;
  if ((rc = measure(r, now)) || (rc = gb_tr_report_build(r->gangs, r->n_gangs, &o->report,
                                                          &r->report)))
    return rc;
  if (o->format == FMT_JSON)
    return write_json(r->report, now);
  if (o->format == FMT_HTML)
    write_html(r->report, now);
  else
    write_table(r->report, now);
  return ferror(stdout) ? GC_EIO : GC_OK;
}

static int cmd_report(int argc, char **argv) {
  struct tr_opts o;
  struct tr_run r;
  memset(&o, 0, sizeof(o));
  memset(&r, 0, sizeof(r));
  gc_diags_init(&r.diags);
  int status = GB_EXIT_USAGE;
  int rc = parse_args(argc, argv, &o);
  if (rc == 1)
    status = GB_EXIT_OK;
  if (rc)
    goto out;
  rc = run_report(&o, &r);
  if (rc)
    gc_diags_addf(&r.diags, "gangbridge timeouts report: %s", gc_strerror(rc));
  gb_diag_print(stderr, NULL, &r.diags);
  fflush(stdout);
  status = r.diags.errors ? GB_EXIT_INPUT : GB_EXIT_OK;
out:
  run_free(&r);
  free(o.paths);
  return status;
}

int gb_cmd_timeouts(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "report"))
    return cmd_report(argc - 1, argv + 1);
  if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    usage_top(stdout);
    return GB_EXIT_OK;
  }
  if (argc >= 2)
    fprintf(stderr, "gangbridge timeouts: unknown subcommand '%s'\n", argv[1]);
  usage_top(stderr);
  return GB_EXIT_USAGE;
}
