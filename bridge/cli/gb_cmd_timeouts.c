/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_timeouts: `gangbridge timeouts report`.  Reads the group objects
 * of every backend (gc_backend.h) and their pods from `kubectl get -o yaml`
 * or `-o json` dumps of any size, one object at a time (gb_tr_dump), or
 * from the cluster page by page, and keeps only what the report needs: one
 * compact record per PodGroup and one per scheduled pod, their strings
 * interned.  It measures each gang's time to schedule (PodGroup creation to
 * the minMember-th member pod's PodScheduled=True; a gang with fewer is
 * never scheduled, its wait censored at --now) and prints per backend x
 * queue x size class the statistics (gb_timeout_report owns the
 * arithmetic) as a table, JSON or one self-contained HTML page
 * (gb_tr_write).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_cli.h"
#include "gb_diagprint.h"
#include "gb_hash.h"
#include "gb_kobj.h"
#include "gb_kube_client.h"
#include "gb_kube_config.h"
#include "gb_timeout_report.h"
#include "gb_tr_dump.h"
#include "gb_tr_write.h"
#include "gc_arena.h"
#include "gc_backend.h"
#include "gc_duration.h"
#include "gc_policy.h"

enum tr_format { FMT_TABLE, FMT_JSON, FMT_HTML };

/* What the report keeps is bounded: PodGroups and scheduled pods. */
#define TR_MAX_PODGROUPS 10000000
#define TR_MAX_POD_TIMES 100000000

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

/* One PodGroup as read; strings are interned (equal strings, equal pointers). */
struct tr_pg {
  const char *ns, *name, *queue;
  const struct gc_backend *backend;
  int64_t size, created_s, timeout_s;
  int status_scheduled;  /* the PodGroup's status says it was scheduled */
  int64_t condition_s;   /* its backend's scheduled condition's lastTransitionTime, or -1 */
  size_t first, n_times; /* its PodScheduled times in run.times, after sorting */
  /* Sub-groups that need none of their pods (KAI's initializers, minMember
   * 0; interned): their pods are members but not the gang's quorum. */
  const char *uncounted[GC_BACKEND_MAX_KEYS];
};

/* A member pod's PodScheduled=True time: first by its group (interned
 * namespace and name), then, once matched, by its PodGroup's index. */
struct tr_time {
  const char *ns, *group;
  const char *sub; /* the pod's sub-group (interned), or NULL */
  size_t pg;
  int64_t t;
  const struct gc_backend *backend;
};

/* An interned string. */
struct tr_str {
  struct gb_hnode node;
  size_t len;
  char s[];
};

struct tr_run {
  struct gc_arena *strings; /* every interned string */
  struct gb_htab pool;
  struct gc_diags diags;
  struct tr_pg *pgs;
  size_t n_pgs, cap_pgs;
  size_t *table; /* open addressing: index + 1 into pgs, 0 empty */
  size_t table_cap;
  struct tr_time *times;
  size_t n_times, cap_times;
  int64_t newest_s;
  size_t left_out; /* scheduled per their status, but no pod times to measure */
  int stop;        /* a bound was reached: read no further */
  struct gb_tr_gang *gangs;
  size_t n_gangs;
  struct gb_tr_report *report;
};

/* "(coscheduling is capped at 15m anyway)" for the backends whose scheduler
 * caps a wait, into buf. */
static const char *caps_note(char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < gc_backend_count() && used < cap; i++) {
    const struct gc_backend *b = gc_backend_at(i);
    int64_t m = b->timeout.max_seconds;
    if (m <= 0)
      continue;
    int n = m % 60 ? snprintf(buf + used, cap - used, " (%s is capped at %llds anyway)", b->name,
                              (long long)m)
                   : snprintf(buf + used, cap - used, " (%s is capped at %lldm anyway)", b->name,
                              (long long)(m / 60));
    if (n < 0)
      break;
    used += (size_t)n;
  }
  return buf;
}

static void usage(FILE *f) {
  const struct gc_backend *d = gc_backend_default();
  char note[256];
  fprintf(f,
          "usage: gangbridge timeouts report -f PATH [-f PATH...] [options]\n"
          "       gangbridge timeouts report --live [--kubeconfig PATH] [--context NAME]\n"
          "                                  [options]\n"
          "\n"
          "Reports how long gangs waited to be scheduled, per backend x queue x size class\n"
          "(1, 2-7, 8-31, 32-127, 128+): how many were scheduled and how many never were,\n"
          "p50/p90/p99 of the scheduled (nearest rank) and a Kaplan-Meier p99 counting the\n"
          "never-scheduled as still waiting, the effective timeout, and a suggested timeout\n"
          "with its reasoning and how many gangs it would have cut.  Inputs are kubectl\n"
          "dumps of PodGroups and their pods (read streaming: any size), e.g.\n"
          "  kubectl get %s.%s,pods -A -o json\n"
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
          "      --max DUR         never suggest more%s\n"
          "  -o, --output FORMAT   table (default), json or html (one self-contained page)\n"
          "  -h, --help            show this help\n",
          d->resource, d->group, caps_note(note, sizeof(note)));
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
    if (gb_timeout_report_parse_time(arg, &o->now_s))
      return bad_value("--now", "an RFC 3339 time (2026-01-02T03:04:05Z)", arg);
    o->has_now = 1;
    return GC_OK;
  case 'w':
    if (gc_duration_parse_seconds(arg, &v, NULL, 0) || v < 0)
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
    if (gc_duration_parse_seconds(arg, &v, NULL, 0) || v <= 0)
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
/* Interned strings, growing arrays                                         */

static const char *intern(struct tr_run *r, const char *s) {
  size_t len = strlen(s);
  uint64_t h = gb_hash_fnv1a(GB_HASH_FNV_OFFSET, s, len);
  for (struct gb_hnode *n = gb_htab_chain(&r->pool, h); n; n = n->next) {
    struct tr_str *e = (struct tr_str *)n;
    if (n->hash == h && e->len == len && !memcmp(e->s, s, len))
      return e->s;
  }
  struct tr_str *e = gc_arena_alloc(r->strings, sizeof(*e) + len + 1);
  if (!e)
    return NULL;
  e->node.hash = h;
  e->len = len;
  memcpy(e->s, s, len + 1);
  gb_htab_insert(&r->pool, &e->node);
  return e->s;
}

/* Makes room for one more element of size sz in *v (n used, *cap slots, at
 * most max).  Returns 0, GC_ELIMIT or GC_ENOMEM. */
static int grow(void **v, size_t n, size_t *cap, size_t sz, size_t max) {
  if (n < *cap)
    return GC_OK;
  if (n >= max)
    return GC_ELIMIT;
  size_t ncap = *cap ? *cap * 2 : 1024;
  if (ncap > max)
    ncap = max;
  void *p = realloc(*v, ncap * sz);
  if (!p)
    return GC_ENOMEM;
  *v = p;
  *cap = ncap;
  return GC_OK;
}

/* ------------------------------------------------------------------------ */
/* Finding PodGroups by backend, namespace and name                         */

static size_t hash_key(const struct gc_backend *b, const char *ns, const char *name) {
  /* ns and name are interned: their addresses identify them. */
  uint64_t h = GB_HASH_FNV_OFFSET ^ (uint64_t)gc_backend_index(b);
  h = gb_hash_fnv1a(h, &ns, sizeof(ns));
  h = gb_hash_fnv1a(h, &name, sizeof(name));
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
static size_t table_find(const struct tr_run *r, const struct gc_backend *b, const char *ns,
                         const char *name) {
  size_t h = hash_key(b, ns, name) & (r->table_cap - 1);
  for (; r->table[h]; h = (h + 1) & (r->table_cap - 1)) {
    const struct tr_pg *p = &r->pgs[r->table[h] - 1];
    if (p->backend == b && p->name == name && p->ns == ns)
      return r->table[h] - 1;
  }
  return (size_t)-1;
}

/* ------------------------------------------------------------------------ */
/* Reading PodGroups and pods                                               */

#define STEPS(...)                                                                                 \
  (const struct gb_tr_dump_step[]) { __VA_ARGS__ }

/* Reports a problem at the value steps lead to in the object (at the
 * object from a cluster: the object names the place). */
static void obj_err(struct tr_run *r, const struct gb_tr_dump_item *it,
                    const struct gb_tr_dump_step *steps, size_t n, const char *ns, const char *name,
                    const char *path, const char *msg, int warning) {
  char where[600] = "";
  if (it->file) {
    uint32_t line, col;
    gb_tr_dump_locate(it, steps, n, &line, &col);
    snprintf(where, sizeof(where), "%s:%u:%u: ", it->file, line, col);
  }
  if (warning)
    gc_diags_warnf(&r->diags, "%s%s/%s: %s: %s", where, ns, name, path, msg);
  else
    gc_diags_addf(&r->diags, "%s%s/%s: %s: %s", where, ns, name, path, msg);
}

static void note_time(struct tr_run *r, int64_t t) {
  if (t > r->newest_s)
    r->newest_s = t;
}

/* A timestamp: 0 ok, GC_ENOTFOUND absent, GC_EINVAL (reported). */
static int read_time(struct tr_run *r, const struct gb_tr_dump_item *it, json_object *v,
                     const struct gb_tr_dump_step *steps, size_t n, const char *ns,
                     const char *name, const char *path, int64_t *out) {
  if (!v)
    return GC_ENOTFOUND;
  const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
  if (!s || gb_timeout_report_parse_time(s, out)) {
    obj_err(r, it, steps, n, ns, name, path, "not an RFC 3339 timestamp (2026-01-02T03:04:05Z)", 0);
    return GC_EINVAL;
  }
  note_time(r, *out);
  return GC_OK;
}

/* The timeout the PodGroup carries, as the service reads it: gangbridge's
 * own annotation (the policy's effective timeout, unclamped), else the
 * annotations the backend's scheduler reads (a value that is no positive Go
 * duration is ignored with a warning, as the scheduler ignores it), else the
 * backend's spec field of seconds (0: the scheduler's default, unknown here;
 * capped at the scheduler's maximum). */
static int pg_timeout(struct tr_run *r, const struct gb_tr_dump_item *it, struct tr_pg *p) {
  const struct gc_backend_timeout *bt = &p->backend->timeout;
  const char *keys[GC_BACKEND_MAX_KEYS + 1] = {GC_ANN_SCHEDULE_TIMEOUT};
  size_t nkeys = 1;
  for (size_t k = 0; k < GC_BACKEND_MAX_KEYS && bt->annotations[k]; k++)
    keys[nkeys++] = bt->annotations[k];
  json_object *ann = gb_kobj_dig(it->obj, "metadata", "annotations", NULL);
  for (size_t k = 0; k < nkeys; k++) {
    json_object *v = gb_kobj_get(ann, keys[k]);
    if (!v)
      continue;
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    int64_t t = 0;
    if (s && gc_duration_parse_seconds(s, &t, NULL, 0) == GC_OK && t > 0) {
      p->timeout_s = t;
      return GC_OK;
    }
    char path[80], msg[160];
    snprintf(path, sizeof(path), "metadata.annotations.%s", keys[k]);
    snprintf(msg, sizeof(msg), "\"%.60s\" is not a Go duration above 0; %s ignores it",
             s ? s : "(not a string)", k ? p->backend->display : "gangbridge");
    obj_err(r, it, STEPS({"metadata", 0}, {"annotations", 0}, {keys[k], 0}), 3, p->ns, p->name,
            path, msg, 1);
  }
  if (!bt->spec_seconds)
    return GC_OK;
  json_object *v = gb_kobj_dig(it->obj, "spec", bt->spec_seconds, NULL);
  if (!v || p->timeout_s != GB_TR_NO_TIMEOUT)
    return GC_OK;
  if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
    char path[80];
    snprintf(path, sizeof(path), "spec.%s", bt->spec_seconds);
    obj_err(r, it, STEPS({"spec", 0}, {bt->spec_seconds, 0}), 2, p->ns, p->name, path,
            "not an integer >= 0", 0);
    return GC_EINVAL;
  }
  int64_t t = json_object_get_int64(v);
  if (t > 0)
    p->timeout_s = bt->max_seconds > 0 && t > bt->max_seconds ? bt->max_seconds : t;
  return GC_OK;
}

/* Whether the status says the gang was scheduled (a started phase, or the
 * failed one: it got its pods before it failed), and the time of the
 * backend's scheduled condition (a fallback when the pods are gone). */
static void pg_status(struct tr_run *r, const struct gb_tr_dump_item *it, struct tr_pg *p,
                      const struct gc_backend_version *ver) {
  const struct gc_backend_status *bs = &p->backend->status;
  /* A backend with versions names the condition per version (the Workload
   * API renamed it for 1.37). */
  const char *sc = ver ? ver->scheduled_condition : bs->scheduled_condition;
  json_object *st = gb_kobj_get(it->obj, "status");
  const char *phase = gb_kobj_str(st, "phase");
  p->status_scheduled = phase && (gc_backend_phase_started(p->backend, phase) ||
                                  (bs->failed_phase && !strcmp(phase, bs->failed_phase)));
  json_object *conds = gb_kobj_get(st, "conditions");
  size_t n = conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds)
                                                                  : 0;
  for (size_t i = 0; i < n && sc; i++) {
    json_object *c = json_object_array_get_idx(conds, i);
    const char *type = gb_kobj_str(c, "type"), *s = gb_kobj_str(c, "status");
    char path[96];
    snprintf(path, sizeof(path), "status.conditions[%s].lastTransitionTime", sc);
    int64_t t = 0;
    if (type && s && !strcmp(type, sc) && !strcmp(s, "True") &&
        read_time(r, it, gb_kobj_get(c, "lastTransitionTime"),
                  STEPS({"status", 0}, {"conditions", 0}, {NULL, i}, {"lastTransitionTime", 0}), 4,
                  p->ns, p->name, path, &t) == GC_OK) {
      p->condition_s = t;
      p->status_scheduled = 1;
    }
  }
}

/* The sub-groups of p (a backend that binds every pod of the TrainJob,
 * GC_BCAP_ELASTIC_MEMBERS) whose minMember is 0, at most
 * GC_BACKEND_MAX_KEYS (further ones are counted).  Returns 0 or
 * GC_ENOMEM. */
static int pg_uncounted(struct tr_run *r, const struct gc_backend *b, json_object *spec,
                        struct tr_pg *p) {
  json_object *subs = (b->caps & GC_BCAP_ELASTIC_MEMBERS) && b->subgroups_field
                          ? gb_kobj_get(spec, b->subgroups_field)
                          : NULL;
  size_t n = subs && json_object_is_type(subs, json_type_array) ? json_object_array_length(subs)
                                                                : 0,
         k = 0;
  for (size_t i = 0; i < n && k < GC_BACKEND_MAX_KEYS; i++) {
    json_object *sg = json_object_array_get_idx(subs, i);
    json_object *mm = gb_kobj_get(sg, b->min_member_field);
    const char *name = gb_kobj_str(sg, "name");
    if (!name || !mm || !json_object_is_type(mm, json_type_int) || json_object_get_int64(mm))
      continue;
    if (!(p->uncounted[k++] = intern(r, name)))
      return GC_ENOMEM;
  }
  return GC_OK;
}

static int read_podgroup(struct tr_run *r, const struct gb_tr_dump_item *it,
                         const struct gc_backend *b, const struct gc_backend_version *ver) {
  int rc = grow((void **)&r->pgs, r->n_pgs, &r->cap_pgs, sizeof(*r->pgs), TR_MAX_PODGROUPS);
  if (rc)
    return rc;
  struct tr_pg *p = &r->pgs[r->n_pgs];
  memset(p, 0, sizeof(*p));
  p->backend = b;
  p->timeout_s = GB_TR_NO_TIMEOUT;
  p->condition_s = -1;
  json_object *meta = gb_kobj_get(it->obj, "metadata");
  const char *ns = gb_kobj_str(meta, "namespace"), *name = gb_kobj_str(meta, "name");
  if (!name) {
    obj_err(r, it, NULL, 0, ns ? ns : "default", "?", "metadata.name", "missing", 0);
    return GC_OK;
  }
  p->ns = intern(r, ns ? ns : "default");
  p->name = intern(r, name);
  if (!p->ns || !p->name)
    return GC_ENOMEM;
  rc = read_time(r, it, gb_kobj_get(meta, "creationTimestamp"),
                 STEPS({"metadata", 0}, {"creationTimestamp", 0}), 2, p->ns, p->name,
                 "metadata.creationTimestamp", &p->created_s);
  if (rc == GC_ENOTFOUND)
    obj_err(r, it, NULL, 0, p->ns, p->name, "metadata.creationTimestamp", "missing", 0);
  if (rc)
    return GC_OK;
  json_object *spec = gb_kobj_get(it->obj, "spec"), *mm = gb_kobj_path(spec, b->min_member_field);
  if (mm && (!json_object_is_type(mm, json_type_int) || json_object_get_int64(mm) < 0)) {
    char path[80];
    snprintf(path, sizeof(path), "spec.%s", b->min_member_field);
    obj_err(r, it, STEPS({"spec", 0}, {b->min_member_field, 0}), 2, p->ns, p->name, path,
            "not an integer >= 0", 0);
    return GC_OK;
  }
  p->size = mm && json_object_get_int64(mm) > 0 ? json_object_get_int64(mm) : 1;
  /* A spec that splits the count over sub-groups (KAI): gangbridge's own
   * PodGroups carry it as an annotation. */
  const char *split = mm ? NULL : gb_kobj_str(gb_kobj_get(meta, "annotations"), GC_ANN_MIN_MEMBER);
  char *end = NULL;
  long long n = split ? strtoll(split, &end, 10) : 0;
  if (split && end != split && !*end && n > 0 && n <= INT32_MAX)
    p->size = n;
  /* A backend with queues puts a PodGroup that names none into its default
   * queue; other backends have no queues. */
  int queues = (b->caps & GC_BCAP_QUEUE) && b->queue.field;
  const char *q = queues ? gb_kobj_str(spec, b->queue.field) : NULL;
  p->queue = intern(r, queues ? (q && *q ? q : b->queue.default_name) : "");
  if (!p->queue)
    return GC_ENOMEM;
  if (pg_timeout(r, it, p))
    return GC_OK;
  pg_status(r, it, p, ver);
  if (pg_uncounted(r, b, spec, p))
    return GC_ENOMEM;
  r->n_pgs++;
  return GC_OK;
}

/* The group a pod joins by a pod spec field of a backend version (the
 * Workload API: the PodGroup, or at v1alpha1 the Workload, that object's
 * name as the report reads it), or NULL. */
static const char *pod_spec_group(json_object *spec, const struct gc_backend **backend) {
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    for (size_t k = 0; k < b->n_versions; k++)
      for (size_t j = 0; j < b->versions[k].n_joins; j++) {
        const struct gc_backend_join *jn = &b->versions[k].joins[j];
        if (jn->at != GC_JOIN_SPEC_FIELD ||
            jn->value != (b->versions[k].status_kind ? GC_JOIN_GROUP : GC_JOIN_PARENT))
          continue;
        json_object *v = gb_kobj_path(spec, jn->key);
        if (v && json_object_is_type(v, json_type_string)) {
          *backend = b;
          return json_object_get_string(v);
        }
      }
  }
  return NULL;
}

/* The group a pod joins and its backend: the first backend join naming the
 * group object (labels first, then annotations; older spellings too; then
 * pod spec fields), or NULL. */
static const char *pod_group(json_object *pod, json_object *meta,
                             const struct gc_backend **backend) {
  static const enum gc_join_at order[] = {GC_JOIN_LABEL, GC_JOIN_ANNOTATION};
  for (size_t o = 0; o < 2; o++) {
    json_object *map = gb_kobj_get(meta, order[o] == GC_JOIN_LABEL ? "labels" : "annotations");
    for (size_t i = 0; map && i < gc_backend_count(); i++) {
      const struct gc_backend *b = gc_backend_at(i);
      for (size_t j = 0; j < b->n_joins; j++) {
        const struct gc_backend_join *jn = &b->joins[j];
        const char *group = jn->at == order[o] && jn->value == GC_JOIN_GROUP
                                ? gb_kobj_str(map, jn->key)
                                : NULL;
        if (group) {
          *backend = b;
          return group;
        }
      }
    }
  }
  return pod_spec_group(gb_kobj_get(pod, "spec"), backend);
}

/* The sub-group a pod names, where its backend binds pods to one (KAI's
 * label), or NULL. */
static const char *pod_sub(json_object *meta, const struct gc_backend *b) {
  const struct gc_backend_join *j = b ? gc_backend_join_of(b, GC_JOIN_SUBGROUP) : NULL;
  if (!j || (j->at != GC_JOIN_LABEL && j->at != GC_JOIN_ANNOTATION))
    return NULL;
  return gb_kobj_str(gb_kobj_get(meta, j->at == GC_JOIN_LABEL ? "labels" : "annotations"), j->key);
}

/* Records a member pod's PodScheduled=True time under its group (matched
 * to a PodGroup of its namespace and backend later). */
static int read_pod(struct tr_run *r, const struct gb_tr_dump_item *it) {
  json_object *meta = gb_kobj_get(it->obj, "metadata");
  const char *ns = gb_kobj_str(meta, "namespace"), *name = gb_kobj_str(meta, "name");
  const struct gc_backend *b = NULL;
  const char *group = pod_group(it->obj, meta, &b);
  json_object *conds = gb_kobj_dig(it->obj, "status", "conditions", NULL);
  size_t n = conds && json_object_is_type(conds, json_type_array) ? json_object_array_length(conds)
                                                                  : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *c = json_object_array_get_idx(conds, i);
    const char *type = gb_kobj_str(c, "type"), *st = gb_kobj_str(c, "status");
    if (!type || !st || strcmp(type, "PodScheduled") || strcmp(st, "True"))
      continue;
    int64_t t = 0;
    int rc = read_time(
        r, it, gb_kobj_get(c, "lastTransitionTime"),
        STEPS({"status", 0}, {"conditions", 0}, {NULL, i}, {"lastTransitionTime", 0}), 4,
        ns ? ns : "default", name ? name : "?",
        "status.conditions[PodScheduled].lastTransitionTime", &t);
    if (rc || !group)
      return GC_OK;
    if ((rc = grow((void **)&r->times, r->n_times, &r->cap_times, sizeof(*r->times),
                   TR_MAX_POD_TIMES)))
      return rc;
    struct tr_time *tt = &r->times[r->n_times];
    tt->ns = intern(r, ns ? ns : "default");
    tt->group = intern(r, group);
    if (!tt->ns || !tt->group)
      return GC_ENOMEM;
    tt->t = t;
    tt->backend = b;
    const char *sub = pod_sub(meta, b);
    tt->sub = sub ? intern(r, sub) : NULL;
    if (sub && !tt->sub)
      return GC_ENOMEM;
    r->n_times++;
    return GC_OK;
  }
  return GC_OK;
}

static void bound_reached(struct tr_run *r, int rc) {
  if (rc == GC_ELIMIT)
    gc_diags_addf(&r->diags,
                  "more than %d PodGroups or %d scheduled pods: the rest is not "
                  "read (split the dump by namespace)",
                  TR_MAX_PODGROUPS, TR_MAX_POD_TIMES);
  else
    gc_diags_addf(&r->diags, "out of memory after %zu PodGroups and %zu pods", r->n_pgs,
                  r->n_times);
  r->stop = 1;
}

/* The backend whose gang object obj is (its version's status object for a
 * backend with versions: the Workload API's PodGroup, not its Workload),
 * or NULL. */
static const struct gc_backend *gang_object(const char *api, const char *kind,
                                            const struct gc_backend_version **ver) {
  *ver = NULL;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    if (b->n_versions && (*ver = gc_backend_version_tracked(b, api, kind)))
      return b;
  }
  const struct gc_backend *b = gc_backend_by_object(api, kind);
  return b && !b->n_versions ? b : NULL;
}

/* gb_tr_dump_fn: every object of the inputs (and, live, of the lists). */
static int on_object(void *ctx, const struct gb_tr_dump_item *it) {
  struct tr_run *r = ctx;
  if (r->stop)
    return GC_ELIMIT;
  const char *kind = gb_kobj_str(it->obj, "kind"), *api = gb_kobj_str(it->obj, "apiVersion");
  const struct gc_backend *b;
  const struct gc_backend_version *ver;
  int rc = GC_OK;
  if (!kind || !api)
    return GC_OK;
  if ((b = gang_object(api, kind, &ver)))
    rc = read_podgroup(r, it, b, ver);
  else if (!strcmp(kind, "Pod"))
    rc = read_pod(r, it);
  if (rc)
    bound_reached(r, rc);
  return rc;
}

static int cmp_time(const void *pa, const void *pb) {
  const struct tr_time *a = pa, *b = pb;
  if (a->pg != b->pg)
    return a->pg < b->pg ? -1 : 1;
  return (a->t > b->t) - (a->t < b->t);
}

/* 1 when sub (interned) is one of p's sub-groups that need no pods. */
static int uncounted(const struct tr_pg *p, const char *sub) {
  for (size_t k = 0; sub && k < GC_BACKEND_MAX_KEYS && p->uncounted[k]; k++)
    if (p->uncounted[k] == sub)
      return 1;
  return 0;
}

/* Matches every pod time to its PodGroup (same backend, namespace and
 * name: pointers, the strings are interned), drops the unmatched, and
 * sorts them by PodGroup and time. */
static int match_times(struct tr_run *r) {
  int rc = table_build(r);
  if (rc)
    return rc;
  size_t kept = 0;
  for (size_t i = 0; i < r->n_times; i++) {
    size_t pg = table_find(r, r->times[i].backend, r->times[i].ns, r->times[i].group);
    if (pg == (size_t)-1 || uncounted(&r->pgs[pg], r->times[i].sub))
      continue;
    r->times[kept] = r->times[i];
    r->times[kept++].pg = pg;
  }
  r->n_times = kept;
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
 * else censored at now (its age); a group whose status says scheduled but
 * whose pods are gone uses its backend's scheduled condition, or is left
 * out. */
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
/* The command                                                              */

static void run_free(struct tr_run *r) {
  gb_tr_report_free(r->report);
  free(r->gangs);
  free(r->times);
  free(r->table);
  free(r->pgs);
  gb_htab_free(&r->pool);
  gc_arena_free(r->strings);
  gc_diags_destroy(&r->diags);
}

/* One listed object, read as a dump's would be (no position: the object
 * names the place). */
static int live_item(void *arg, json_object *obj) {
  struct gb_tr_dump_item it = {obj, NULL, 0, 0, NULL, 0};
  return on_object(arg, &it);
}

/* Lists every backend's PodGroups (of a backend with versions, each
 * version's status object: the Workload API's PodGroups) and every pod,
 * page by page (limit and continue), keeping only what the report needs.
 * A PodGroup API the cluster does not serve (404) is skipped: most
 * clusters run one backend and one version.  A backend may bind pods by
 * annotation, which no selector can match, so all pods are listed. */
static int load_cluster(const struct tr_opts *o, struct tr_run *r) {
  char paths[GC_BACKEND_MAX * GC_BACKEND_MAX_KEYS + 1][300];
  size_t n = 0;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    for (size_t k = 0; k < b->n_versions && k < GC_BACKEND_MAX_KEYS; k++) {
      const struct gc_backend_version *v = &b->versions[k];
      snprintf(paths[n++], sizeof(paths[0]), "/apis/%s/%s/%s", b->group, v->version,
               v->status_resource ? v->status_resource : b->resource);
    }
    if (!b->n_versions)
      snprintf(paths[n++], sizeof(paths[0]), "/apis/%s/%s/%s", b->group, b->version, b->resource);
  }
  snprintf(paths[n++], sizeof(paths[0]), "/api/v1/pods");
  struct gb_kube_config *cfg = NULL;
  struct gb_kube_client *c = NULL;
  int rc = gb_kube_config_load(o->kubeconfig, o->context, &cfg, &r->diags);
  if (rc == GC_OK)
    rc = gb_kube_client_new(cfg, NULL, &c, &r->diags);
  for (size_t i = 0; rc == GC_OK && i < n; i++) {
    struct gb_kube_error e;
    struct gb_kube_list_opts lo = {NULL, NULL, 500};
    char rv[128], msg[1200];
    int lrc = gb_kube_client_list(c, paths[i], &lo, live_item, r, rv, sizeof(rv), &e);
    if (lrc == GC_EIO || (lrc == GC_ENOTFOUND && i + 1 == n))
      gc_diags_addf(&r->diags, "listing %s: %s", paths[i], gb_kube_error_str(&e, msg, sizeof(msg)));
    else if (lrc != GC_ENOTFOUND)
      rc = lrc;
  }
  gb_kube_client_free(c);
  gb_kube_config_free(cfg);
  return rc;
}

/* The backends' API groups, "a, b or c", into buf. */
static const char *backend_groups(char *buf, size_t cap) {
  size_t used = 0, n = gc_backend_count();
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < cap; i++) {
    int k = snprintf(buf + used, cap - used, "%s%s",
                     i == 0       ? ""
                     : i + 1 == n ? " or "
                                  : ", ",
                     gc_backend_at(i)->group);
    if (k < 0)
      break;
    used += (size_t)k;
  }
  return buf;
}

static int load_files(const struct tr_opts *o, struct tr_run *r) {
  for (size_t i = 0; i < o->n_paths && !r->stop; i++) {
    int rc = gb_tr_dump_read(o->paths[i], NULL, on_object, r, &r->diags);
    if (rc == GC_ENOMEM)
      return rc;
  }
  return GC_OK;
}

static int run_report(const struct tr_opts *o, struct tr_run *r) {
  int rc = o->live ? load_cluster(o, r) : load_files(o, r);
  if (rc == GC_OK && r->stop)
    rc = GC_OK; /* reported; the report of what was read still follows */
  if (rc == GC_OK)
    rc = match_times(r);
  if (rc)
    return rc;
  if (r->n_pgs == 0) {
    if (r->diags.errors == 0) {
      char groups[512];
      gc_diags_addf(&r->diags, "no %s (%s) found in the inputs", gc_backend_default()->kind,
                    backend_groups(groups, sizeof(groups)));
    }
    return GC_OK;
  }
  int64_t now = o->has_now ? o->now_s : r->newest_s;
  if ((rc = measure(r, now)) ||
      (rc = gb_tr_report_build(r->gangs, r->n_gangs, &o->report, &r->report)))
    return rc;
  if (o->format == FMT_JSON)
    return gb_tr_write_json(stdout, r->report, now);
  if (o->format == FMT_HTML)
    return gb_tr_write_html(stdout, r->report, now);
  return gb_tr_write_table(stdout, r->report, now);
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
  r.strings = gc_arena_new((size_t)4 << 30);
  rc = r.strings ? gb_htab_init(&r.pool, 4096) : GC_ENOMEM;
  if (!rc)
    rc = run_report(&o, &r);
  if (rc)
    gc_diags_addf(&r.diags, "gangbridge timeouts report: %s", gc_diag_strerror(rc));
  gb_diagprint_write(stderr, NULL, &r.diags);
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
