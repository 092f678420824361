/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_gang: runtime resolution, counts, waves and totals of one TrainJob's
 * gang (see gc_gang.h and docs/gang-rules.md for every rule).
 *
 * The runtime document is only read.  The TrainJob's overrides (v2.0
 * podSpecOverrides, v2.1 podTemplateOverrides) and runtime patches (v2.2+)
 * are strategically merged copy-on-write: the effective job list shares
 * every node with the runtime except the ones a patch changes and the maps
 * on the path to them.  resourcesPerNode is merged the same way into the
 * trainer's `node` container, and only then are counts and per-pod requests
 * read, in the order Trainer's runtime core and ML-policy plugins use.
 */
#include "gc_gang.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_catalog.h"
#include "gc_gang_int.h"
#include "gc_merge.h"
#include "gc_podreq.h"
#include "gc_waves.h"

#define INT32_MAXV 2147483647LL
#define DEFAULT_TIMEOUT 60
#define RUNTIME_PATCHES_MAX 16
#define NAME_SHOW_MAX 253

/* Map lookup of a literal key, its length known at compile time (the ""
 * around k make anything but a string literal a compile error). */
#define GET(m, k) gc_map_getn((m), "" k "", sizeof(k) - 1)

static const char *const SUPPORT_LABEL = "trainer.kubeflow.org/support";
static const char *const MULTIKUEUE = "kueue.x-k8s.io/multikueue";

struct job {
  const char *name;
  struct gc_value *node; /* merged replicatedJob (arena) */
  const char *ancestor;
  int64_t parallelism;
  int has_parallelism;
  int64_t replicas;
  const char **deps;
  const char **dep_status;
  size_t n_deps;
  struct gc_value *podspec;
  const char *priority_class;
  const char *scheduler_name;
  int32_t count;
  struct gc_podreq req;
};

struct ctx {
  struct gc_gang *g;
  struct gc_arena *a;
  struct gc_diags *d;
  const struct gc_options *opts;
  const char *tj; /* "ns/name" */
  const char *rt; /* "ClusterTrainingRuntime/x" or "TrainingRuntime ns/x" */
  size_t errors;
  int oom;
  const struct gc_rt_cache *cache; /* the runtime's derived data, or NULL */
};

/* ---- formatting ------------------------------------------------------------ */

/* Formats into buf (cap bytes, always terminated; output is cut to fit) and
 * returns the length.  Paths and messages use only %s, %.*s, %zu, %d and
 * %lld, which are copied here directly (vsnprintf costs far more than the
 * rest of a TrainJob's checks); any other format goes to vsnprintf. */
static size_t vformat(char *buf, size_t cap, const char *f, va_list ap) {
  int simple = 1;
  for (const char *p = strchr(f, '%'); p && simple; p = strchr(p + 1, '%')) {
    if (p[1] == 's' || p[1] == 'd')
      p++;
    else if ((p[1] == 'z' && p[2] == 'u') || (p[1] == '.' && p[2] == '*' && p[3] == 's'))
      p += p[1] == 'z' ? 2 : 3;
    else if (p[1] == 'l' && p[2] == 'l' && p[3] == 'd')
      p += 3;
    else
      simple = 0;
  }
  if (!simple) {
    int n = vsnprintf(buf, cap, f, ap);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
  }
  size_t n = 0;
  for (const char *p = f; *p && n < cap - 1; p++) {
    if (*p != '%') {
      /* A literal run, copied at once. */
      const char *pct = strchr(p, '%');
      size_t run = pct ? (size_t)(pct - p) : strlen(p);
      if (run > cap - 1 - n)
        run = cap - 1 - n;
      memcpy(buf + n, p, run);
      n += run;
      p += run - 1;
      continue;
    }
    char num[24];
    const char *src;
    size_t len;
    int neg = 0;
    unsigned long long u;
    if (p[1] == 's') {
      src = va_arg(ap, const char *);
      src = src ? src : "(null)"; /* as glibc prints it */
      len = strlen(src);
      p++;
    } else if (p[1] == '.') {
      int prec = va_arg(ap, int);
      src = va_arg(ap, const char *);
      src = src ? src : "(null)";
      len = prec < 0 ? strlen(src) : strnlen(src, (size_t)prec);
      p += 3;
    } else {
      if (p[1] == 'z') {
        u = va_arg(ap, size_t);
        p += 2;
      } else {
        long long v = p[1] == 'd' ? va_arg(ap, int) : va_arg(ap, long long);
        p += p[1] == 'd' ? 1 : 3;
        neg = v < 0;
        u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
      }
      size_t k = sizeof(num);
      do {
        num[--k] = (char)('0' + u % 10);
        u /= 10;
      } while (u);
      if (neg)
        num[--k] = '-';
      src = num + k;
      len = sizeof(num) - k;
    }
    if (len > cap - 1 - n)
      len = cap - 1 - n;
    memcpy(buf + n, src, len);
    n += len;
  }
  buf[n] = '\0';
  return n;
}

/* ---- warnings (gc_gang_int.h) -------------------------------------------- */

int gc_gang_warnf(struct gc_gang *g, enum gc_warning_code code, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  size_t n = vformat(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  struct gc_warning *w = gc_arena_alloc(g->arena, (g->n_warnings + 1) * sizeof(*w));
  char *msg;
  /* Names from manifests may hold control bytes; printed raw they could
   * clear a terminal or forge a line. */
  if (gc_has_controls(buf, n)) {
    msg = gc_arena_alloc(g->arena, n * 4 + 1);
    if (msg)
      gc_escape_controls(msg, n * 4 + 1, buf, n);
  } else {
    msg = gc_arena_strndup(g->arena, buf, n);
  }
  if (!w || !msg)
    return GC_ENOMEM;
  if (g->n_warnings)
    memcpy(w, g->warnings, g->n_warnings * sizeof(*w));
  w[g->n_warnings].code = code;
  w[g->n_warnings].message = msg;
  g->warnings = w;
  g->n_warnings++;
  return GC_OK;
}

const char *gc_backend_name(enum gc_backend b) {
  switch (b) {
  case GC_BACKEND_VOLCANO:
    return "volcano";
  case GC_BACKEND_COSCHEDULING:
    return "coscheduling";
  default:
    return "unset";
  }
}

const char *gc_binding_name(enum gc_binding b) {
  switch (b) {
  case GC_BIND_COUNTED:
    return "gang";
  case GC_BIND_BOUND:
    return "bound";
  default:
    return "unbound";
  }
}

/* ---- diagnostics helpers ------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void fail(struct ctx *c, const char *prefix,
                                                      const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vformat(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  gc_diags_addf(c->d, "%s: %s", prefix, buf);
  c->errors++;
}

#define WARN(c, code, ...)                                                                    \
  do {                                                                                        \
    if (gc_gang_warnf((c)->g, (code), __VA_ARGS__))                                           \
      (c)->oom = 1;                                                                           \
  } while (0)

/* Formats a path into the arena (cut at 2 KiB). */
static char *fmt(struct ctx *c, const char *f, ...) __attribute__((format(printf, 2, 3)));
static char *fmt(struct ctx *c, const char *f, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, f);
  size_t n = vformat(buf, sizeof(buf), f, ap);
  va_end(ap);
  char *s = gc_arena_strndup(c->a, buf, n);
  if (!s)
    c->oom = 1;
  return s ? s : "";
}

static int is_null(const struct gc_value *v) { return !v || v->type == GC_NULL; }

/* The integer a number holds: an integer, or a float with an integral value
 * (the API server takes 1.0 or 2e0 for an integer field, as kube-openapi's
 * validation does).  Values beyond int64 saturate, so range checks still
 * refuse them.  Returns 0 for anything else. */
static int int_value(const struct gc_value *v, int64_t *out) {
  if (v->type == GC_INT) {
    *out = v->u.i;
    return 1;
  }
  if (v->type != GC_FLOAT || v->u.f != v->u.f)
    return 0;
  /* Every double at or beyond 2^63 in magnitude is integral. */
  if (v->u.f >= 9223372036854775807.0 || v->u.f <= -9223372036854775807.0) {
    *out = v->u.f > 0 ? INT64_MAX : INT64_MIN;
    return v->u.f - v->u.f == 0; /* not an infinity */
  }
  int64_t t = (int64_t)v->u.f;
  if ((double)t != v->u.f)
    return 0;
  *out = t;
  return 1;
}

/* Reads an optional integer.  Returns 1 (set), 0 (absent or null) or -1
 * (reported: wrong type or out of [min, max]). */
static int get_int(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                   int64_t min, int64_t max, int64_t *out) {
  int64_t n;
  if (is_null(v))
    return 0;
  if (!int_value(v, &n)) {
    fail(c, prefix, "%s: must be an integer", path);
    return -1;
  }
  if (n < min) {
    fail(c, prefix, "%s: must be >= %lld", path, (long long)min);
    return -1;
  }
  if (n > max) {
    fail(c, prefix, "%s: must be <= %lld", path, (long long)max);
    return -1;
  }
  *out = n;
  return 1;
}

/* Reads an optional string; same return convention as get_int. */
static int get_str(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                   const char **out) {
  if (is_null(v))
    return 0;
  if (v->type != GC_STR) {
    fail(c, prefix, "%s: must be a string", path);
    return -1;
  }
  *out = v->u.s;
  return 1;
}

static int get_bool(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                    int *out) {
  if (is_null(v))
    return 0;
  if (v->type != GC_BOOL) {
    fail(c, prefix, "%s: must be a boolean", path);
    return -1;
  }
  *out = v->u.b;
  return 1;
}

/* Returns v if it is a map, NULL if absent/null; reports any other type. */
static const struct gc_value *get_map(struct ctx *c, const char *prefix, const struct gc_value *v,
                                      const char *path, int *bad) {
  if (is_null(v))
    return NULL;
  if (v->type != GC_MAP) {
    fail(c, prefix, "%s: must be an object", path);
    if (bad)
      *bad = 1;
    return NULL;
  }
  return v;
}

static const struct gc_value *get_seq(struct ctx *c, const char *prefix, const struct gc_value *v,
                                      const char *path, int *bad) {
  if (is_null(v))
    return NULL;
  if (v->type != GC_SEQ) {
    fail(c, prefix, "%s: must be an array", path);
    if (bad)
      *bad = 1;
    return NULL;
  }
  return v;
}

/* Checks a map of string to string (labels, annotations). */
static void check_string_map(struct ctx *c, const char *prefix, const struct gc_value *v,
                             const char *path) {
  if (!get_map(c, prefix, v, path, NULL))
    return;
  for (size_t i = 0; i < v->len; i++)
    if (v->u.members[i].value->type != GC_STR)
      fail(c, prefix, "%s[%.*s]: must be a string", path, NAME_SHOW_MAX, v->u.members[i].key);
}

/* ---- TrainJob checks ----------------------------------------------------- */

struct tj_info {
  const struct gc_value *spec;
  const struct gc_value *trainer;
  const char *ref_name;
  int ref_cluster;
  int ref_ok;
  int has_numnodes;
  int64_t numnodes;
  const struct gc_value *rpn; /* resourcesPerNode, valid, or NULL */
  int v20, v21, v22;
};

/* numProcPerNode as int >= 1 or "auto"/"cpu"/"gpu" (v2.0/v2.1 IntOrString);
 * returns 1 when a string form was used (a v2.1-or-older marker). */
static int check_num_proc(struct ctx *c, const char *prefix, const struct gc_value *v,
                          const char *path) {
  if (is_null(v))
    return 0;
  int64_t n;
  if (int_value(v, &n)) {
    if (n < 1)
      fail(c, prefix, "%s: numProcPerNode must be greater than or equal to 1", path);
    else if (n > INT32_MAXV)
      fail(c, prefix, "%s: must be <= %lld", path, (long long)INT32_MAXV);
    return 0;
  }
  if (v->type == GC_STR) {
    if (strcmp(v->u.s, "auto") && strcmp(v->u.s, "cpu") && strcmp(v->u.s, "gpu"))
      fail(c, prefix, "%s: must be an integer >= 1 or one of \"auto\", \"cpu\", \"gpu\"", path);
    return 1;
  }
  fail(c, prefix, "%s: must be an integer or a string", path);
  return 0;
}

static void check_resources_per_node(struct ctx *c, struct tj_info *t, const struct gc_value *v) {
  const char *base = "spec.trainer.resourcesPerNode";
  if (!get_map(c, c->tj, v, base, NULL))
    return;
  size_t before = c->errors;
  static const char *const LISTS[] = {"requests", "limits"};
  static const char *const PATHS[] = {"spec.trainer.resourcesPerNode.requests",
                                      "spec.trainer.resourcesPerNode.limits"};
  for (size_t k = 0; k < 2; k++) {
    const struct gc_value *l = gc_map_get(v, LISTS[k]);
    const char *path = PATHS[k];
    if (!get_map(c, c->tj, l, path, NULL))
      continue;
    struct gc_reslist tmp = GC_RESLIST_INIT;
    size_t e0 = c->d ? c->d->errors : 0;
    /* Quietly first; the path is formatted only to report a problem. */
    int rc = gc_reslist_from_value(c->a, l, "", &tmp, NULL);
    if (rc && rc != GC_ENOMEM)
      rc = gc_reslist_from_value(c->a, l, fmt(c, "%s: %s", c->tj, path), &tmp, c->d);
    if (rc == GC_ENOMEM)
      c->oom = 1;
    else if (rc)
      c->errors += (c->d && c->d->errors > e0) ? c->d->errors - e0 : 1;
  }
  const struct gc_value *claims = get_seq(c, c->tj, GET(v, "claims"),
                                          "spec.trainer.resourcesPerNode.claims", NULL);
  for (size_t i = 0; claims && i < claims->len; i++) {
    const struct gc_value *cl = claims->u.items[i];
    const char *n = NULL;
    if (cl->type != GC_MAP || get_str(c, c->tj, GET(cl, "name"), "", &n) != 1 || !*n)
      fail(c, c->tj, "%s.claims[%zu].name: required", base, i);
  }
  if (c->errors == before)
    t->rpn = v;
}

static int opt_map(const struct gc_value *v) { return is_null(v) || v->type == GC_MAP; }

static int opt_string_map(const struct gc_value *v) {
  if (!opt_map(v))
    return 0;
  for (size_t i = 0; v && v->type == GC_MAP && i < v->len; i++)
    if (v->u.members[i].value->type != GC_STR)
      return 0;
  return 1;
}

/* 1 when runtime patch i passes every check of check_trainjob's loop (the
 * usual case), so no path needs to be built; 0 sends it through the loop
 * that reports. */
static int patch_quiet_ok(const struct gc_value *patches, size_t i) {
  const struct gc_value *p = patches->u.items[i];
  if (is_null(p))
    return 1;
  if (p->type != GC_MAP)
    return 0;
  const char *mgr = gc_value_as_str(GET(p, "manager"));
  if (!mgr || !*mgr)
    return 0;
  for (size_t k = 0; k < i; k++) {
    const char *om = gc_value_as_str(GET(patches->u.items[k], "manager"));
    if (om && !strcmp(om, mgr))
      return 0;
  }
  const struct gc_value *trs = GET(p, "trainingRuntimeSpec");
  const struct gc_value *tpl = GET(trs, "template");
  const struct gc_value *meta = GET(tpl, "metadata");
  const struct gc_value *ps = GET(tpl, "spec");
  const struct gc_value *rjs = GET(ps, "replicatedJobs");
  if (!opt_map(trs) || !opt_map(tpl) || !opt_map(meta) || !opt_map(ps) ||
      !opt_string_map(GET(meta, "labels")) ||
      !opt_string_map(GET(meta, "annotations")) ||
      !(is_null(rjs) || rjs->type == GC_SEQ))
    return 0;
  for (size_t j = 0; rjs && rjs->type == GC_SEQ && j < rjs->len; j++) {
    const struct gc_value *rj = rjs->u.items[j];
    if (is_null(rj))
      continue;
    const char *jn = gc_value_as_str(GET(rj, "name"));
    if (rj->type != GC_MAP || !jn || !*jn)
      return 0;
  }
  return 1;
}

/* spec.runtimeRef: sets t->ref_* when it names a runtime kind this
 * Trainer supports. */
static void check_runtime_ref(struct ctx *c, const struct gc_value *spec, struct tj_info *t) {
  const struct gc_value *ref = GET(spec, "runtimeRef");
  if (is_null(ref)) {
    fail(c, c->tj, "spec.runtimeRef: required");
  } else if (ref->type != GC_MAP) {
    fail(c, c->tj, "spec.runtimeRef: must be an object");
  } else {
    const char *name = NULL, *group = GC_TRAINER_GROUP, *kind = "ClusterTrainingRuntime";
    int ok = 1;
    int r = get_str(c, c->tj, GET(ref, "name"), "spec.runtimeRef.name", &name);
    if (r == 0 || (r == 1 && !*name)) {
      fail(c, c->tj, "spec.runtimeRef.name: required");
      ok = 0;
    } else if (r < 0) {
      ok = 0;
    } else if (strlen(name) > 253) {
      fail(c, c->tj, "spec.runtimeRef.name: must be no more than 253 characters");
      ok = 0;
    }
    if (get_str(c, c->tj, GET(ref, "apiGroup"), "spec.runtimeRef.apiGroup", &group) < 0 ||
        get_str(c, c->tj, GET(ref, "kind"), "spec.runtimeRef.kind", &kind) < 0)
      ok = 0;
    if (ok) {
      int known_kind = !strcmp(kind, "ClusterTrainingRuntime") || !strcmp(kind, "TrainingRuntime");
      if (!known_kind) {
        fail(c, c->tj, "spec.runtimeRef.kind: Unsupported value: \"%.*s\": supported values: "
             "\"ClusterTrainingRuntime\", \"TrainingRuntime\"", NAME_SHOW_MAX, kind);
        ok = 0;
      } else if (strcmp(group, GC_TRAINER_GROUP) != 0) {
        fail(c, c->tj, "spec.runtimeRef: unsupported runtime: %.*s.%.*s", NAME_SHOW_MAX, kind,
             NAME_SHOW_MAX, group);
        ok = 0;
      }
    }
    if (ok) {
      t->ref_name = name;
      t->ref_cluster = strcmp(kind, "ClusterTrainingRuntime") == 0;
      t->ref_ok = 1;
    }
  }
}

/* spec.trainer: numNodes, resourcesPerNode and numProcPerNode. */
static void check_trainer(struct ctx *c, const struct gc_value *spec, struct tj_info *t) {
  const struct gc_value *tr = get_map(c, c->tj, GET(spec, "trainer"), "spec.trainer", NULL);
  t->trainer = tr;
  if (tr) {
    int64_t n;
    int r = get_int(c, c->tj, GET(tr, "numNodes"), "spec.trainer.numNodes", 0, INT32_MAXV,
                    &n);
    if (r == 1) {
      t->has_numnodes = 1;
      t->numnodes = n;
    }
    check_resources_per_node(c, t, GET(tr, "resourcesPerNode"));
    if (check_num_proc(c, c->tj, GET(tr, "numProcPerNode"), "spec.trainer.numProcPerNode"))
      t->v21 = 1;
  }
}

/* spec.suspend and spec.managedBy. */
static void check_suspend_managed(struct ctx *c, const struct gc_value *spec) {
  int susp = 0;
  if (get_bool(c, c->tj, GET(spec, "suspend"), "spec.suspend", &susp) == 1)
    c->g->suspended = susp;
  const char *managed = NULL;
  if (get_str(c, c->tj, GET(spec, "managedBy"), "spec.managedBy", &managed) == 1) {
    if (!strcmp(managed, MULTIKUEUE))
      WARN(c, GC_WARN_OTHER,
           "spec.managedBy is %s: Trainer leaves this TrainJob to MultiKueue and creates no "
           "PodGroup in this cluster", MULTIKUEUE);
    else if (strcmp(managed, GC_TRAINER_CONTROLLER) != 0)
      fail(c, c->tj, "spec.managedBy: must be one of \"%s\", \"%s\"", GC_TRAINER_CONTROLLER,
           MULTIKUEUE);
  }
}

/* Reports every problem of runtime patch i, one that patch_quiet_ok
 * refused, with its path. */
static void check_patch(struct ctx *c, const struct gc_value *patches, size_t i) {
  const struct gc_value *p = patches->u.items[i];
  char *path = fmt(c, "spec.runtimePatches[%zu]", i);
  if (!get_map(c, c->tj, p, path, NULL))
    return;
  const char *mgr = NULL;
  int r = get_str(c, c->tj, GET(p, "manager"), fmt(c, "%s.manager", path), &mgr);
  if (r == 0 || (r == 1 && !*mgr))
    fail(c, c->tj, "%s.manager: required", path);
  for (size_t k = 0; r == 1 && *mgr && k < i; k++) {
    const char *om = gc_value_as_str(GET(patches->u.items[k], "manager"));
    if (om && !strcmp(om, mgr))
      fail(c, c->tj, "%s.manager: duplicate value \"%.*s\"", path, NAME_SHOW_MAX, mgr);
  }
  const struct gc_value *trs = get_map(c, c->tj, GET(p, "trainingRuntimeSpec"),
                                       fmt(c, "%s.trainingRuntimeSpec", path), NULL);
  const char *tpath = fmt(c, "%s.trainingRuntimeSpec.template", path);
  const struct gc_value *tpl = get_map(c, c->tj, GET(trs, "template"), tpath, NULL);
  const struct gc_value *meta =
      get_map(c, c->tj, GET(tpl, "metadata"), fmt(c, "%s.metadata", tpath), NULL);
  check_string_map(c, c->tj, GET(meta, "labels"), fmt(c, "%s.metadata.labels", tpath));
  check_string_map(c, c->tj, GET(meta, "annotations"),
                   fmt(c, "%s.metadata.annotations", tpath));
  const struct gc_value *ps =
      get_map(c, c->tj, GET(tpl, "spec"), fmt(c, "%s.spec", tpath), NULL);
  const struct gc_value *rjs = get_seq(c, c->tj, GET(ps, "replicatedJobs"),
                                       fmt(c, "%s.spec.replicatedJobs", tpath), NULL);
  for (size_t j = 0; rjs && j < rjs->len; j++) {
    const struct gc_value *rj = rjs->u.items[j];
    char *jp = fmt(c, "%s.spec.replicatedJobs[%zu]", tpath, j);
    const char *jn = NULL;
    if (!get_map(c, c->tj, rj, jp, NULL))
      continue;
    int jr = get_str(c, c->tj, GET(rj, "name"), fmt(c, "%s.name", jp), &jn);
    if (jr == 0 || (jr == 1 && !*jn))
      fail(c, c->tj, "%s.name: required", jp);
  }
}

static void check_trainjob(struct ctx *c, const struct gc_value *tj, struct tj_info *t) {
  const struct gc_value *spec = GET(tj, "spec");
  if (is_null(spec) || spec->type != GC_MAP) {
    fail(c, c->tj, "spec: %s", is_null(spec) ? "required" : "must be an object");
    return;
  }
  t->spec = spec;
  check_runtime_ref(c, spec, t);
  check_trainer(c, spec, t);
  check_suspend_managed(c, spec);

  /* v2.0 / v2.1 fields */
  if (!is_null(GET(spec, "podSpecOverrides")))
    t->v20 = 1;
  if (!is_null(GET(spec, "podTemplateOverrides")))
    t->v21 = 1;
  if (!is_null(GET(spec, "labels")) || !is_null(GET(spec, "annotations")))
    t->v21 = 1;
  check_string_map(c, c->tj, GET(spec, "labels"), "spec.labels");
  check_string_map(c, c->tj, GET(spec, "annotations"), "spec.annotations");

  const struct gc_value *patches =
      get_seq(c, c->tj, GET(spec, "runtimePatches"), "spec.runtimePatches", NULL);
  if (patches) {
    t->v22 = 1;
    if (patches->len > RUNTIME_PATCHES_MAX)
      fail(c, c->tj, "spec.runtimePatches: must have at most %d items", RUNTIME_PATCHES_MAX);
    for (size_t i = 0; i < patches->len && i < 1000; i++)
      if (!patch_quiet_ok(patches, i))
        check_patch(c, patches, i);
  }
  const char *gen = t->v22 ? "v2.2+" : t->v20 ? "v2.0" : t->v21 ? "v2.1" : "v2.2+";
  c->g->api_generation = gen;
  if ((t->v20 && !is_null(GET(spec, "podTemplateOverrides"))) ||
      (t->v22 && (t->v20 || t->v21)))
    WARN(c, GC_WARN_OTHER,
         "the TrainJob mixes fields of several Trainer API generations (podSpecOverrides: v2.0; "
         "podTemplateOverrides, spec.labels/annotations, string numProcPerNode: v2.1; "
         "runtimePatches: v2.2+); a real cluster accepts only one of them; all are applied here");
}

/* ---- runtime structure ---------------------------------------------------- */

struct rt_info {
  const struct gc_value *spec;
  const struct gc_value *jobs; /* runtime template.spec.replicatedJobs (valid) */
  const struct gc_value *ml;
  int has_ml, mpi, rlan, has_ml_numnodes;
  int64_t ml_numnodes;
  const struct gc_value *cos, *vol;
};

static void check_ml_policy(struct ctx *c, struct rt_info *r, struct tj_info *t) {
  const struct gc_value *ml = get_map(c, c->rt, GET(r->spec, "mlPolicy"),
                                      "spec.mlPolicy", NULL);
  if (!ml)
    return;
  r->ml = ml;
  r->has_ml = 1;
  int64_t n;
  if (get_int(c, c->rt, GET(ml, "numNodes"), "spec.mlPolicy.numNodes", 0, INT32_MAXV, &n) ==
      1) {
    r->has_ml_numnodes = 1;
    r->ml_numnodes = n;
  }
  static const char *const KINDS[] = {"torch", "mpi", "jax", "xgboost", "flux"};
  static const char *const KPATHS[] = {"spec.mlPolicy.torch", "spec.mlPolicy.mpi",
                                       "spec.mlPolicy.jax", "spec.mlPolicy.xgboost",
                                       "spec.mlPolicy.flux"};
  int kinds = 0;
  for (size_t i = 0; i < 5; i++) {
    const struct gc_value *k = gc_map_get(ml, KINDS[i]);
    if (is_null(k))
      continue;
    kinds++;
    get_map(c, c->rt, k, KPATHS[i], NULL);
  }
  if (kinds > 1)
    fail(c, c->rt, "spec.mlPolicy: Only one of the policy can be configured");

  const struct gc_value *torch = GET(ml, "torch");
  if (torch && torch->type == GC_MAP) {
    const struct gc_value *np = GET(torch, "numProcPerNode");
    if (!is_null(np)) {
      t->v21 = 1;
      check_num_proc(c, c->rt, np, "spec.mlPolicy.torch.numProcPerNode");
    }
    const struct gc_value *ep = GET(torch, "elasticPolicy");
    if (!is_null(ep)) {
      t->v21 = 1;
      get_map(c, c->rt, ep, "spec.mlPolicy.torch.elasticPolicy", NULL);
      if (r->has_ml_numnodes || !is_null(GET(ml, "numNodes")))
        fail(c, c->rt, "spec.mlPolicy: numNodes should not be set if torch.elasticPolicy is "
             "configured");
      else
        WARN(c, GC_WARN_OTHER,
             "%s: spec.mlPolicy.torch.elasticPolicy is ignored: Trainer never implemented elastic "
             "training, so the gang uses the fixed numNodes", c->rt);
    }
  }
  const struct gc_value *mpi = GET(ml, "mpi");
  if (mpi && mpi->type == GC_MAP) {
    r->mpi = 1;
    int b = 0;
    if (get_bool(c, c->rt, GET(mpi, "runLauncherAsNode"),
                 "spec.mlPolicy.mpi.runLauncherAsNode", &b) == 1)
      r->rlan = b;
    const struct gc_value *np = GET(mpi, "numProcPerNode");
    if (np && np->type == GC_INT && np->u.i < 1)
      fail(c, c->rt, "spec.mlPolicy.mpi.numProcPerNode: NumProcPerNode in mpiPolicy must be >= 1");
    else
      get_int(c, c->rt, np, "spec.mlPolicy.mpi.numProcPerNode", 1, INT32_MAXV, &n);
    const char *impl = NULL;
    if (get_str(c, c->rt, GET(mpi, "mpiImplementation"),
                "spec.mlPolicy.mpi.mpiImplementation", &impl) == 1 &&
        *impl && strcmp(impl, "OpenMPI"))
      fail(c, c->rt, "spec.mlPolicy.mpi.mpiImplementation: Unsupported value: \"%.*s\": "
           "supported values: \"OpenMPI\", \"\"", NAME_SHOW_MAX, impl);
  } else if (mpi && mpi->type == GC_NULL) {
    r->mpi = 0;
  }
  const struct gc_value *flux = GET(ml, "flux");
  if (flux && flux->type == GC_MAP) {
    const struct gc_value *np = GET(flux, "numProcPerNode");
    if (np && np->type == GC_INT && np->u.i < 1)
      fail(c, c->rt, "spec.mlPolicy.flux.numProcPerNode: NumProcPerNode in fluxPolicy must be >= 1");
  }
}

/* Checks the runtime's replicatedJobs list shape: a non-empty array of
 * objects with unique, non-empty string names.  Returns 0 when usable. */
static int check_runtime_jobs(struct ctx *c, struct rt_info *r) {
  size_t before = c->errors;
  const struct gc_value *tpl = GET(r->spec, "template");
  if (is_null(tpl)) {
    fail(c, c->rt, "spec.template: required");
    return -1;
  }
  if (!get_map(c, c->rt, tpl, "spec.template", NULL))
    return -1;
  const struct gc_value *meta = get_map(c, c->rt, GET(tpl, "metadata"),
                                        "spec.template.metadata", NULL);
  check_string_map(c, c->rt, GET(meta, "labels"), "spec.template.metadata.labels");
  check_string_map(c, c->rt, GET(meta, "annotations"),
                   "spec.template.metadata.annotations");
  const struct gc_value *ts = GET(tpl, "spec");
  if (is_null(ts)) {
    fail(c, c->rt, "spec.template.spec: required");
    return -1;
  }
  if (!get_map(c, c->rt, ts, "spec.template.spec", NULL))
    return -1;
  const struct gc_value *jobs = GET(ts, "replicatedJobs");
  if (is_null(jobs) || (jobs->type == GC_SEQ && jobs->len == 0)) {
    fail(c, c->rt, "spec.template.spec.replicatedJobs: required (at least one replicated job)");
    return -1;
  }
  if (!get_seq(c, c->rt, jobs, "spec.template.spec.replicatedJobs", NULL))
    return -1;
  if (jobs->len > GC_WAVES_MAX_JOBS) {
    fail(c, c->rt, "spec.template.spec.replicatedJobs: must have at most %d items",
         GC_WAVES_MAX_JOBS);
    return -1;
  }
  for (size_t i = 0; i < jobs->len; i++) {
    const struct gc_value *j = jobs->u.items[i];
    /* The usual case, checked without building paths: a map whose name is
     * a valid label not used by an earlier job. */
    const char *qn = gc_value_as_str(GET(j, "name"));
    int quiet_ok = j->type == GC_MAP && qn && gc_name_is_dns1035(qn, strlen(qn));
    for (size_t k = 0; quiet_ok && k < i; k++) {
      const char *other = gc_value_as_str(GET(jobs->u.items[k], "name"));
      quiet_ok = !other || strcmp(other, qn) != 0;
    }
    if (quiet_ok)
      continue;
    char *path = fmt(c, "spec.template.spec.replicatedJobs[%zu]", i);
    if (!get_map(c, c->rt, j, path, NULL))
      continue;
    const char *name = NULL;
    int rn = get_str(c, c->rt, GET(j, "name"), fmt(c, "%s.name", path), &name);
    if (rn == 0 || (rn == 1 && !*name)) {
      fail(c, c->rt, "%s.name: required", path);
      continue;
    }
    if (rn < 0)
      continue;
    if (!gc_name_is_dns1035(name, strlen(name)))
      fail(c, c->rt, "%s.name: \"%.*s\" must be an RFC 1035 label (lowercase letters, digits "
           "and '-', starting with a letter, at most 63 characters)", path, NAME_SHOW_MAX, name);
    for (size_t k = 0; k < i; k++) {
      const char *other = gc_value_as_str(GET(jobs->u.items[k], "name"));
      if (other && !strcmp(other, name)) {
        fail(c, c->rt, "%s.name: duplicate replicated job name \"%.*s\"", path, NAME_SHOW_MAX,
             name);
        break;
      }
    }
  }
  if (c->errors != before)
    return -1;
  r->jobs = jobs;
  return 0;
}

static void check_policy(struct ctx *c, struct rt_info *r) {
  const struct gc_value *p = get_map(c, c->rt, GET(r->spec, "podGroupPolicy"),
                                     "spec.podGroupPolicy", NULL);
  if (!p)
    return;
  r->cos = get_map(c, c->rt, GET(p, "coscheduling"), "spec.podGroupPolicy.coscheduling",
                   NULL);
  r->vol = get_map(c, c->rt, GET(p, "volcano"), "spec.podGroupPolicy.volcano", NULL);
}

/* ---- overrides and patches ------------------------------------------------ */

static const char *const PATCH_POD_FIELDS[] = {
    "serviceAccountName", "volumes", "initContainers", "containers", "imagePullSecrets",
    "securityContext", "terminationGracePeriodSeconds", "nodeSelector", "affinity",
    "tolerations", "schedulingGates", NULL};
static const char *const V21_POD_FIELDS[] = {
    "serviceAccountName", "nodeSelector", "affinity", "tolerations", "volumes",
    "initContainers", "containers", "schedulingGates", "imagePullSecrets", NULL};
static const char *const V20_POD_FIELDS[] = {
    "serviceAccountName", "nodeSelector", "tolerations", "volumes", "initContainers",
    "containers", "schedulingGates", NULL};
static const char *const PATCH_CONTAINER_FIELDS[] = {"name", "env", "volumeMounts",
                                                     "securityContext", NULL};
static const char *const OVERRIDE_CONTAINER_FIELDS[] = {"name", "env", "volumeMounts", "command",
                                                        "args", "envFrom", NULL};

static int in_list(const char *const *list, const char *k) {
  for (size_t i = 0; list[i]; i++)
    if (!strcmp(list[i], k))
      return 1;
  return 0;
}

/* Looks a container up by name in the runtime pod spec `ps`, list `field`. */
static int has_container(const struct gc_value *ps, const char *field, const char *name) {
  const struct gc_value *l = gc_map_get(ps, field);
  if (!l || l->type != GC_SEQ)
    return 0;
  for (size_t i = 0; i < l->len; i++) {
    const char *n = gc_value_as_str(GET(l->u.items[i], "name"));
    if (n && !strcmp(n, name))
      return 1;
  }
  return 0;
}

static struct gc_value *job_by_name(const struct gc_value *jobs, const char *name, size_t *idx) {
  for (size_t i = 0; jobs && i < jobs->len; i++) {
    const char *n = gc_value_as_str(GET(jobs->u.items[i], "name"));
    if (n && !strcmp(n, name)) {
      if (idx)
        *idx = i;
      return jobs->u.items[i];
    }
  }
  return NULL;
}

/* The effective JobSet shares every node with the runtime document (and
 * the merge results share with their inputs), so a node is copied before it
 * changes: these make private shallow copies, one level at a time. */

/* A new map with m's members (an empty map when m is not a map). */
static struct gc_value *cow_map(struct ctx *c, const struct gc_value *m) {
  struct gc_value *n = gc_value_map(c->a);
  if (!n) {
    c->oom = 1;
    return NULL;
  }
  if (!m || m->type != GC_MAP)
    return n;
  n->line = m->line;
  n->col = m->col;
  n->u.members = gc_arena_alloc(c->a, (m->len + 1) * sizeof(struct gc_member));
  if (!n->u.members) {
    c->oom = 1;
    return NULL;
  }
  if (m->len)
    memcpy(n->u.members, m->u.members, m->len * sizeof(struct gc_member));
  n->len = m->len;
  n->cap = m->len + 1;
  return n;
}

/* A new sequence with s's items (s is a sequence). */
static struct gc_value *cow_seq(struct ctx *c, const struct gc_value *s) {
  struct gc_value *n = gc_value_seq(c->a);
  if (!n || !(n->u.items = gc_arena_alloc(c->a, (s->len + 1) * sizeof(struct gc_value *)))) {
    c->oom = 1;
    return NULL;
  }
  n->line = s->line;
  n->col = s->col;
  if (s->len)
    memcpy(n->u.items, s->u.items, s->len * sizeof(struct gc_value *));
  n->len = s->len;
  n->cap = s->len + 1;
  return n;
}

/* Sets keys[0].keys[1]...keys[n-1] of job idx in jsjobs (a private
 * sequence) to value: the job and every map on the path are copied, and a
 * missing or non-map step becomes a new map. */
static void job_set(struct ctx *c, struct gc_value *jsjobs, size_t idx, const char *const *keys,
                    size_t n, struct gc_value *value) {
  struct gc_value *root = cow_map(c, jsjobs->u.items[idx]);
  struct gc_value *cur = root;
  for (size_t k = 0; cur && k + 1 < n; k++) {
    struct gc_value *next = cow_map(c, gc_map_get(cur, keys[k]));
    if (!next || gc_map_set(c->a, cur, keys[k], next)) {
      c->oom = 1;
      return;
    }
    cur = next;
  }
  if (!cur || gc_map_set(c->a, cur, keys[n - 1], value)) {
    c->oom = 1;
    return;
  }
  jsjobs->u.items[idx] = root;
}

/* An empty map merges exactly like a pod spec that was absent or not a map
 * (which the merge then replaces); only read. */
static const struct gc_value EMPTY_MAP = {.type = GC_MAP};

/* A path formatted only when a message needs it: f takes (i, j) as two %zu,
 * or with `s` set, (s, i) as %s and %zu. */
struct lpath {
  const char *f;
  const char *s;
  size_t i, j;
  char *done;
};

static const char *lp(struct ctx *c, struct lpath *p) {
  if (!p->done)
    p->done = p->s ? fmt(c, p->f, p->s, p->i) : fmt(c, p->f, p->i, p->j);
  return p->done;
}

/* Builds the filtered copy of a pod spec patch/override: only `allowed` pod
 * fields and, inside containers, only `cfields`.  Dropped fields are warned
 * about (a cluster's API server prunes them).  Containers the runtime pod
 * spec `rps` lacks are an error when strict (runtime patches, webhook rule)
 * and ignored with a warning otherwise (v2.0/v2.1 overrides). */
static struct gc_value *filter_podspec(struct ctx *c, const struct gc_value *spec,
                                       const struct gc_value *rps, const char *const *allowed,
                                       const char *const *cfields, int strict,
                                       struct lpath *path, const char *job) {
  struct gc_value *out = gc_value_map(c->a);
  if (!out) {
    c->oom = 1;
    return NULL;
  }
  for (size_t i = 0; i < spec->len; i++) {
    const struct gc_member *m = &spec->u.members[i];
    if (!in_list(allowed, m->key)) {
      if (in_list((const char *const[]){"targetJobs", "metadata", "spec", NULL}, m->key))
        continue;
      WARN(c, GC_WARN_OTHER, "%s.%.*s is not a field this override can set; it is ignored (a "
           "cluster drops it)", lp(c, path), NAME_SHOW_MAX, m->key);
      continue;
    }
    int is_c = !strcmp(m->key, "containers") || !strcmp(m->key, "initContainers");
    if (is_c && m->value->type != GC_SEQ) {
      if (m->value->type != GC_NULL)
        fail(c, c->tj, "%s.%s: must be an array", lp(c, path), m->key);
      continue;
    }
    if (!is_c) {
      if (gc_map_append(c->a, out, m->key, m->key_len, m->value))
        c->oom = 1;
      continue;
    }
    struct gc_value *seq = gc_value_seq(c->a);
    if (!seq) {
      c->oom = 1;
      return NULL;
    }
    for (size_t k = 0; k < m->value->len; k++) {
      const struct gc_value *ct = m->value->u.items[k];
      const char *cn = gc_value_as_str(GET(ct, "name"));
#define CP fmt(c, "%s.%s[%zu]", lp(c, path), m->key, k)
      if (!ct || ct->type != GC_MAP || !cn || !*cn) {
        fail(c, c->tj, "%s.name: required", CP);
        continue;
      }
      if (!has_container(rps, m->key, cn)) {
        if (strict)
          fail(c, c->tj, "%s.name: container \"%.*s\" not found in replicated job \"%s\" of the "
               "runtime", CP, NAME_SHOW_MAX, cn, job);
        else
          WARN(c, GC_WARN_OTHER, "%s: container \"%.*s\" not found in replicated job \"%s\" of "
               "the runtime; the override is ignored", CP, NAME_SHOW_MAX, cn, job);
        continue;
      }
      if (strict && !is_null(GET(ct, "env")) &&
          (!strcmp(cn, "node") || !strcmp(cn, "dataset-initializer") ||
           !strcmp(cn, "model-initializer")))
        fail(c, c->tj, "%s.env: must not be set for the \"%s\" container (use spec.trainer.env "
             "or spec.initializer)", CP, cn);
      struct gc_value *fc = gc_value_map(c->a);
      if (!fc) {
        c->oom = 1;
        return NULL;
      }
      for (size_t f = 0; f < ct->len; f++) {
        const struct gc_member *cm = &ct->u.members[f];
        if (!in_list(cfields, cm->key)) {
          WARN(c, GC_WARN_OTHER, "%s.%.*s is not a field this override can set; it is ignored "
               "(a cluster drops it%s)", CP, NAME_SHOW_MAX, cm->key,
               !strcmp(cm->key, "resources") ? "; use spec.trainer.resourcesPerNode" : "");
          continue;
        }
        if (gc_map_append(c->a, fc, cm->key, cm->key_len, cm->value))
          c->oom = 1;
      }
      if (gc_seq_push(c->a, seq, fc))
        c->oom = 1;
    }
    if (gc_map_append(c->a, out, m->key, m->key_len, seq))
      c->oom = 1;
  }
  return out;
}

#undef CP

/* Merges a filtered pod spec patch into job `jobname` of js.  Returns 0, or
 * GC_ELIMIT (the caller reports it once, at the patch's path); out of
 * memory is recorded in c. */
static int merge_into_job(struct ctx *c, struct gc_value *jsjobs, const char *jobname,
                          const struct gc_value *patch) {
  static const char *const PATH[] = {"template", "spec", "template", "spec"};
  size_t idx = 0;
  struct gc_value *job = job_by_name(jsjobs, jobname, &idx);
  if (!job)
    return GC_OK;
  const struct gc_value *ps = gc_value_path(job, "template.spec.template.spec");
  if (!ps || ps->type != GC_MAP)
    ps = &EMPTY_MAP;
  struct gc_value *merged = NULL;
  int rc = gc_merge_strategic(c->a, ps, patch, NULL, &merged);
  if (rc == GC_ELIMIT)
    return rc;
  if (rc || !merged) {
    c->oom = 1;
    return GC_OK;
  }
  job_set(c, jsjobs, idx, PATH, 4, merged);
  return GC_OK;
}

static void merge_too_large(struct ctx *c, const char *path) {
  fail(c, c->tj, "%s: the merged pod spec is too large or nested too deeply (at most %d items in "
       "a merged list and %d levels)", path, GC_MERGE_MAX_LIST, GC_MERGE_MAX_DEPTH);
}

/* v2.0 podSpecOverrides and v2.1 podTemplateOverrides. */
static void apply_overrides(struct ctx *c, const struct gc_value *spec, struct gc_value *jsjobs,
                            const struct gc_value *rjobs, int v20) {
  const char *field = v20 ? "podSpecOverrides" : "podTemplateOverrides";
  const struct gc_value *list = get_seq(c, c->tj, gc_map_get(spec, field),
                                        v20 ? "spec.podSpecOverrides"
                                            : "spec.podTemplateOverrides", NULL);
  for (size_t i = 0; list && i < list->len; i++) {
    const struct gc_value *o = list->u.items[i];
    char *path = fmt(c, "spec.%s[%zu]", field, i);
    if (!get_map(c, c->tj, o, path, NULL))
      continue;
    const struct gc_value *targets =
        get_seq(c, c->tj, GET(o, "targetJobs"), fmt(c, "%s.targetJobs", path), NULL);
    if (!targets || targets->len == 0) {
      if (!targets)
        fail(c, c->tj, "%s.targetJobs: required", path);
      continue;
    }
    const struct gc_value *ospec = o;
    struct lpath spath = {v20 ? "spec.%s[%zu]" : "spec.%s[%zu].spec", field, i, 0, NULL};
    if (!v20) {
      get_map(c, c->tj, GET(o, "metadata"), fmt(c, "%s.metadata", path), NULL);
      ospec = get_map(c, c->tj, GET(o, "spec"), fmt(c, "%s.spec", path), NULL);
      if (!ospec)
        continue;
    }
    for (size_t k = 0; k < targets->len; k++) {
      const char *jn = gc_value_as_str(GET(targets->u.items[k], "name"));
      if (!jn || !*jn) {
        fail(c, c->tj, "%s.targetJobs[%zu].name: required", path, k);
        continue;
      }
      const struct gc_value *rj = job_by_name(rjobs, jn, NULL);
      if (!rj) {
        WARN(c, GC_WARN_OTHER, "%s.targetJobs[%zu]: replicated job \"%.*s\" not found in the "
             "runtime; the override is ignored", path, k, NAME_SHOW_MAX, jn);
        continue;
      }
      const struct gc_value *rps = gc_value_path(rj, "template.spec.template.spec");
      struct gc_value *f = filter_podspec(c, ospec, rps, v20 ? V20_POD_FIELDS : V21_POD_FIELDS,
                                          OVERRIDE_CONTAINER_FIELDS, 0, &spath, jn);
      if (f && merge_into_job(c, jsjobs, jn, f) == GC_ELIMIT) {
        /* Every other target would hit the same bound: one message. */
        merge_too_large(c, v20 ? path : fmt(c, "%s.spec", path));
        break;
      }
    }
  }
}

/* v2.2+ runtimePatches: template.spec strategically merged in list order,
 * restricted to the fields a ReplicatedJobPatch/PodSpecPatch has. */
static void apply_patches(struct ctx *c, const struct gc_value *spec, struct gc_value *jsjobs,
                          const struct gc_value *rjobs) {
  const struct gc_value *list = GET(spec, "runtimePatches");
  if (!list || list->type != GC_SEQ)
    return;
  for (size_t i = 0; i < list->len && i < 1000; i++) {
    const struct gc_value *rjs =
        gc_value_path(list->u.items[i], "trainingRuntimeSpec.template.spec.replicatedJobs");
    if (!rjs || rjs->type != GC_SEQ)
      continue;
    for (size_t j = 0; j < rjs->len; j++) {
      const struct gc_value *pj = rjs->u.items[j];
      const char *jn = gc_value_as_str(GET(pj, "name"));
      /* Paths are formatted only for a message. */
      struct lpath jp = {"spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec."
                         "replicatedJobs[%zu]", NULL, i, j, NULL};
      if (!jn || !*jn || pj->type != GC_MAP)
        continue; /* reported by check_trainjob */
      const struct gc_value *rj = job_by_name(rjobs, jn, NULL);
      if (!rj) {
        fail(c, c->tj, "%s.name: replicated job \"%.*s\" not found in the runtime", lp(c, &jp),
             NAME_SHOW_MAX, jn);
        continue;
      }
      for (size_t f = 0; f < pj->len; f++)
        if (strcmp(pj->u.members[f].key, "name") && strcmp(pj->u.members[f].key, "template"))
          WARN(c, GC_WARN_OTHER, "%s.%.*s is not a field a runtime patch can set; it is "
               "ignored (a cluster drops it)", lp(c, &jp), NAME_SHOW_MAX, pj->u.members[f].key);
      const struct gc_value *tmeta = gc_value_path(pj, "template.metadata");
      size_t jidx = 0;
      if (tmeta && tmeta->type == GC_MAP && job_by_name(jsjobs, jn, &jidx)) {
        static const char *const TPATH[] = {"template", "metadata"};
        struct gc_value *merged = NULL;
        int mrc = gc_merge_strategic(c->a, gc_value_path(jsjobs->u.items[jidx],
                                                         "template.metadata"),
                                     tmeta, "metadata", &merged);
        if (mrc == GC_ELIMIT)
          fail(c, c->tj, "%s.template.metadata: too large or nested too deeply", lp(c, &jp));
        else if (mrc || !merged)
          c->oom = 1;
        else
          job_set(c, jsjobs, jidx, TPATH, 2, merged);
      }
      const struct gc_value *pmeta = gc_value_path(pj, "template.spec.template.metadata");
      if (pmeta && pmeta->type == GC_MAP && job_by_name(jsjobs, jn, &jidx)) {
        static const char *const PPATH[] = {"template", "spec", "template", "metadata"};
        struct gc_value *merged = NULL;
        int mrc = gc_merge_strategic(c->a, gc_value_path(jsjobs->u.items[jidx],
                                                         "template.spec.template.metadata"),
                                     pmeta, "metadata", &merged);
        if (mrc == GC_ELIMIT)
          fail(c, c->tj, "%s.template.spec.template.metadata: too large or nested too deeply",
               lp(c, &jp));
        else if (mrc || !merged)
          c->oom = 1;
        else
          job_set(c, jsjobs, jidx, PPATH, 4, merged);
      }
      const struct gc_value *pspec = gc_value_path(pj, "template.spec.template.spec");
      if (is_null(pspec))
        continue;
      struct lpath sp = {"spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec."
                         "replicatedJobs[%zu].template.spec.template.spec", NULL, i, j, NULL};
      if (pspec->type != GC_MAP) {
        fail(c, c->tj, "%s: must be an object", lp(c, &sp));
        continue;
      }
      const struct gc_value *rps = gc_value_path(rj, "template.spec.template.spec");
      struct gc_value *f = filter_podspec(c, pspec, rps, PATCH_POD_FIELDS, PATCH_CONTAINER_FIELDS,
                                          1, &sp, jn);
      if (f && merge_into_job(c, jsjobs, jn, f) == GC_ELIMIT)
        merge_too_large(c, lp(c, &sp));
    }
  }
}

/* ---- queue --------------------------------------------------------------- */

struct queue_src {
  const char *value;
  const char *prefix;
  struct lpath path; /* of the annotations map; formatted only for a message */
};

static void queue_from(struct queue_src *q, const struct gc_value *ann, const char *prefix,
                       struct lpath path) {
  const struct gc_value *v = GET(ann, GC_VOLCANO_QUEUE_ANNOTATION);
  if (!v || v->type != GC_STR)
    return; /* wrong types were reported by check_string_map */
  q->value = v->u.s;
  q->prefix = prefix;
  q->path = path;
}

/* ---- jobs ----------------------------------------------------------------- */

/* An optional int in [0, INT32_MAX]: 1 if absent or valid (stored). */
static int quiet_int(const struct gc_value *v, int64_t *out, int *has) {
  int64_t n;
  if (is_null(v))
    return 1;
  if (!int_value(v, &n) || n < 0 || n > INT32_MAXV)
    return 0;
  *out = n;
  if (has)
    *has = 1;
  return 1;
}

static int quiet_opt_map(const struct gc_value *v) { return is_null(v) || v->type == GC_MAP; }

static int quiet_opt_str(const struct gc_value *v, const char **out) {
  if (is_null(v))
    return 1;
  if (v->type != GC_STR)
    return 0;
  *out = v->u.s;
  return 1;
}

/* Reads one replicated job without building any path: returns 1 when every
 * field has the right shape (the usual case), 0 when read_jobs must look
 * again and report.  Validation rules are those of read_jobs. */
static int read_job_quiet(struct ctx *c, struct gc_value *node, struct job *j) {
  memset(j, 0, sizeof(*j));
  j->node = node;
  j->name = gc_value_as_str(GET(node, "name"));
  j->replicas = 1;
  const struct gc_value *tpl = GET(node, "template");
  if (!quiet_int(GET(node, "replicas"), &j->replicas, NULL) || !tpl ||
      tpl->type != GC_MAP)
    return 0;
  const struct gc_value *meta = GET(tpl, "metadata");
  const struct gc_value *labels = GET(meta, "labels");
  const struct gc_value *jspec = GET(tpl, "spec");
  if (!quiet_opt_map(meta) || !quiet_opt_map(labels) || !quiet_opt_map(jspec))
    return 0;
  for (size_t k = 0; labels && labels->type == GC_MAP && k < labels->len; k++)
    if (labels->u.members[k].value->type != GC_STR)
      return 0;
  j->ancestor = gc_value_as_str(GET(labels, GC_ANCESTOR_LABEL));
  if (!quiet_int(GET(jspec, "parallelism"), &j->parallelism, &j->has_parallelism))
    return 0;
  const struct gc_value *pt = GET(jspec, "template");
  if (!quiet_opt_map(pt))
    return 0;
  const struct gc_value *plabel =
      gc_map_get(GET(GET(pt, "metadata"), "labels"), GC_ANCESTOR_LABEL);
  if (!j->ancestor && plabel && plabel->type == GC_STR)
    return 0; /* read_jobs words the warning */
  const struct gc_value *ps = GET(pt, "spec");
  if (!ps || ps->type != GC_MAP)
    return 0;
  const struct gc_value *cs = GET(ps, "containers");
  if (!cs || cs->type != GC_SEQ || cs->len == 0)
    return 0;
  if (!quiet_opt_str(GET(ps, "priorityClassName"), &j->priority_class) ||
      !quiet_opt_str(GET(ps, "schedulerName"), &j->scheduler_name))
    return 0;
  j->podspec = (struct gc_value *)ps;
  if (j->priority_class && !*j->priority_class)
    j->priority_class = NULL;
  if (j->scheduler_name && !*j->scheduler_name)
    j->scheduler_name = NULL;
  const struct gc_value *deps = GET(node, "dependsOn");
  if (is_null(deps) || (deps->type == GC_SEQ && deps->len == 0))
    return 1;
  if (deps->type != GC_SEQ || deps->len > GC_WAVES_MAX_JOBS)
    return 0;
  j->deps = gc_arena_alloc(c->a, deps->len * sizeof(char *));
  j->dep_status = gc_arena_alloc(c->a, deps->len * sizeof(char *));
  if (!j->deps || !j->dep_status) {
    c->oom = 1;
    return 0;
  }
  for (size_t k = 0; k < deps->len; k++) {
    const struct gc_value *d = deps->u.items[k];
    const char *dn = gc_value_as_str(GET(d, "name"));
    const char *st = gc_value_as_str(GET(d, "status"));
    if (!dn || !*dn || !st || (strcmp(st, "Ready") && strcmp(st, "Complete")))
      return 0;
    j->deps[j->n_deps] = dn;
    j->dep_status[j->n_deps] = st;
    j->n_deps++;
  }
  return 1;
}

/* Copies a job's strings into the gang's arena: the job list may be the
 * runtime document itself (read without cloning), and the gang must not
 * point into its inputs. */
static void own_job_strings(struct ctx *c, struct job *j) {
  const char **fields[] = {&j->name, &j->ancestor, &j->priority_class, &j->scheduler_name};
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
    if (*fields[i] && !(*fields[i] = gc_arena_strdup(c->a, *fields[i])))
      c->oom = 1;
  }
  for (size_t k = 0; k < j->n_deps; k++) {
    if (!(j->deps[k] = gc_arena_strdup(c->a, j->deps[k])) ||
        !(j->dep_status[k] = gc_arena_strdup(c->a, j->dep_status[k])))
      c->oom = 1;
  }
}

static int read_jobs_checked(struct ctx *c, const struct gc_value *jsjobs, struct job *jobs);

static int read_jobs(struct ctx *c, const struct gc_value *jsjobs, struct job *jobs) {
  int ok = read_jobs_checked(c, jsjobs, jobs);
  for (size_t i = 0; i < jsjobs->len && !c->oom; i++)
    own_job_strings(c, &jobs[i]);
  return ok;
}

static int read_jobs_checked(struct ctx *c, const struct gc_value *jsjobs, struct job *jobs) {
  int ok = 1;
  for (size_t i = 0; i < jsjobs->len; i++) {
    struct job *j = &jobs[i];
    struct gc_value *node = jsjobs->u.items[i];
    if (read_job_quiet(c, node, j))
      continue;
    if (c->oom)
      return 0;
    memset(j, 0, sizeof(*j));
    char *p = fmt(c, "spec.template.spec.replicatedJobs[%zu]", i);
    size_t before = c->errors;
    j->node = node;
    j->name = gc_value_as_str(GET(node, "name"));
    j->replicas = 1;
    get_int(c, c->rt, GET(node, "replicas"), fmt(c, "%s.replicas", p), 0, INT32_MAXV,
            &j->replicas);
    const struct gc_value *tpl = GET(node, "template");
    if (is_null(tpl)) {
      fail(c, c->rt, "%s.template: required", p);
      ok = 0;
      continue;
    }
    if (!get_map(c, c->rt, tpl, fmt(c, "%s.template", p), NULL)) {
      ok = 0;
      continue;
    }
    const struct gc_value *meta = get_map(c, c->rt, GET(tpl, "metadata"),
                                          fmt(c, "%s.template.metadata", p), NULL);
    const struct gc_value *labels = GET(meta, "labels");
    check_string_map(c, c->rt, labels, fmt(c, "%s.template.metadata.labels", p));
    j->ancestor = gc_value_as_str(GET(labels, GC_ANCESTOR_LABEL));
    const struct gc_value *jspec = get_map(c, c->rt, GET(tpl, "spec"),
                                           fmt(c, "%s.template.spec", p), NULL);
    if (get_int(c, c->rt, GET(jspec, "parallelism"),
                fmt(c, "%s.template.spec.parallelism", p), 0, INT32_MAXV, &j->parallelism) == 1)
      j->has_parallelism = 1;
    const struct gc_value *pt = get_map(c, c->rt, GET(jspec, "template"),
                                        fmt(c, "%s.template.spec.template", p), NULL);
    const struct gc_value *pmeta = GET(pt, "metadata");
    const struct gc_value *plabel = GET(GET(pmeta, "labels"), GC_ANCESTOR_LABEL);
    if (!j->ancestor && plabel && plabel->type == GC_STR)
      WARN(c, GC_WARN_OTHER,
           "%s: replicated job \"%s\" has the %s label on its pod template "
           "(template.spec.template.metadata.labels), where Trainer does not look; it must be "
           "on the Job template (template.metadata.labels), so Trainer and gangbridge treat "
           "this job as a plain job and spec.trainer.numNodes does not apply to it",
           c->rt, j->name, GC_ANCESTOR_LABEL);
    const char *pspath = fmt(c, "%s.template.spec.template.spec", p);
    const struct gc_value *ps = GET(pt, "spec");
    if (is_null(ps)) {
      fail(c, c->rt, "%s: required", pspath);
    } else if (get_map(c, c->rt, ps, pspath, NULL)) {
      j->podspec = (struct gc_value *)ps;
      const struct gc_value *cs = GET(ps, "containers");
      if (is_null(cs) || (cs->type == GC_SEQ && cs->len == 0))
        fail(c, c->rt, "%s.containers: required (at least one container)", pspath);
      get_str(c, c->rt, GET(ps, "priorityClassName"),
              fmt(c, "%s.priorityClassName", pspath), &j->priority_class);
      get_str(c, c->rt, GET(ps, "schedulerName"), fmt(c, "%s.schedulerName", pspath),
              &j->scheduler_name);
      if (j->priority_class && !*j->priority_class)
        j->priority_class = NULL;
      if (j->scheduler_name && !*j->scheduler_name)
        j->scheduler_name = NULL;
    }
    const struct gc_value *deps = get_seq(c, c->rt, GET(node, "dependsOn"),
                                          fmt(c, "%s.dependsOn", p), NULL);
    if (deps && deps->len > GC_WAVES_MAX_JOBS) {
      fail(c, c->rt, "%s.dependsOn: must have at most %d items", p, GC_WAVES_MAX_JOBS);
      ok = 0;
      continue;
    }
    if (deps && deps->len) {
      j->deps = gc_arena_alloc(c->a, deps->len * sizeof(char *));
      j->dep_status = gc_arena_alloc(c->a, deps->len * sizeof(char *));
      if (!j->deps || !j->dep_status) {
        c->oom = 1;
        return 0;
      }
      for (size_t k = 0; k < deps->len; k++) {
        const struct gc_value *d = deps->u.items[k];
        char *dp = fmt(c, "%s.dependsOn[%zu]", p, k);
        const char *dn = NULL, *st = NULL;
        if (!get_map(c, c->rt, d, dp, NULL))
          continue;
        int rn = get_str(c, c->rt, GET(d, "name"), fmt(c, "%s.name", dp), &dn);
        if (rn == 0 || (rn == 1 && !*dn))
          fail(c, c->rt, "%s.name: required", dp);
        int rs = get_str(c, c->rt, GET(d, "status"), fmt(c, "%s.status", dp), &st);
        if (rs == 0)
          fail(c, c->rt, "%s.status: required", dp);
        else if (rs == 1 && strcmp(st, "Ready") && strcmp(st, "Complete"))
          fail(c, c->rt, "%s.status: Unsupported value: \"%.*s\": supported values: \"Ready\", "
               "\"Complete\"", dp, NAME_SHOW_MAX, st);
        if (rn == 1 && *dn) {
          j->deps[j->n_deps] = dn;
          j->dep_status[j->n_deps] = st && rs == 1 ? st : "";
          j->n_deps++;
        }
      }
    }
    if (c->errors != before)
      ok = 0;
  }
  return ok;
}

/* Merges resourcesPerNode into the container named `node` of a job.  Copy
 * on write: only the pod spec, its containers list and that container are
 * new; the rest stays shared with the runtime. */
static void merge_rpn(struct ctx *c, struct job *j, const struct gc_value *rpn) {
  struct gc_value *ps = NULL;
  /* With no patch this copies nothing; it checks the nesting limit. */
  int crc = gc_merge_strategic(c->a, j->podspec, NULL, NULL, &ps);
  if (crc == GC_ELIMIT) {
    fail(c, c->rt, "replicated job \"%s\": pod spec nested too deeply", j->name);
    return;
  }
  if (crc || !ps) {
    c->oom = 1;
    return;
  }
  const struct gc_value *cs = GET(ps, "containers");
  struct gc_value *target = NULL;
  size_t ti = 0;
  for (size_t i = 0; cs && cs->type == GC_SEQ && i < cs->len; i++) {
    const char *n = gc_value_as_str(GET(cs->u.items[i], "name"));
    if (n && !strcmp(n, "node") && cs->u.items[i]->type == GC_MAP) {
      target = cs->u.items[i];
      ti = i;
    }
  }
  if (!target) {
    WARN(c, GC_WARN_OTHER, "spec.trainer.resourcesPerNode is not applied to replicated job "
         "\"%s\": it has no container named \"node\"", j->name);
    return;
  }
  struct gc_value *patch = gc_value_map(c->a);
  if (!patch) {
    c->oom = 1;
    return;
  }
  static const char *const KEYS[] = {"claims", "limits", "requests"};
  for (size_t k = 0; k < 3; k++) {
    struct gc_value *v = gc_map_get(rpn, KEYS[k]);
    if (!is_null(v) && gc_map_set(c->a, patch, KEYS[k], v))
      c->oom = 1;
  }
  struct gc_value *merged = NULL;
  int rc = gc_merge_strategic(c->a, GET(target, "resources"), patch, "resources", &merged);
  if (rc == GC_ELIMIT) {
    fail(c, c->tj, "spec.trainer.resourcesPerNode: too large to merge");
    return;
  }
  struct gc_value *nt = rc || !merged ? NULL : cow_map(c, target);
  struct gc_value *ncs = nt ? cow_seq(c, cs) : NULL;
  struct gc_value *nps = ncs ? cow_map(c, ps) : NULL;
  if (!nps || gc_map_set(c->a, nt, "resources", merged) ||
      gc_map_set(c->a, nps, "containers", ncs)) {
    c->oom = 1;
    return;
  }
  ncs->u.items[ti] = nt;
  j->podspec = nps;
}

/* ---- policy --------------------------------------------------------------- */

static void resolve_policy(struct ctx *c, const struct rt_info *r) {
  struct gc_gang *g = c->g;
  enum gc_backend rt_backend = GC_BACKEND_UNSET;
  if (r->vol && r->cos) {
    rt_backend = GC_BACKEND_VOLCANO;
    WARN(c, GC_WARN_POLICY_BOTH,
         "%s: spec.podGroupPolicy sets both coscheduling and volcano (the API allows only one; "
         "Trainer would create both PodGroups); using %s", c->rt,
         gc_backend_name(c->opts->backend ? c->opts->backend : GC_BACKEND_VOLCANO));
  } else if (r->vol) {
    rt_backend = GC_BACKEND_VOLCANO;
  } else if (r->cos) {
    rt_backend = GC_BACKEND_COSCHEDULING;
  }
  g->backend_from_runtime = rt_backend != GC_BACKEND_UNSET;
  if (c->opts->backend != GC_BACKEND_UNSET) {
    g->backend = c->opts->backend;
    if (rt_backend != GC_BACKEND_UNSET && rt_backend != g->backend && !(r->vol && r->cos))
      WARN(c, GC_WARN_OTHER, "%s: the runtime's podGroupPolicy names %s, but %s was requested; "
           "rendering a %s PodGroup", c->rt, gc_backend_name(rt_backend),
           gc_backend_name(g->backend), gc_backend_name(g->backend));
  } else if (rt_backend != GC_BACKEND_UNSET) {
    g->backend = rt_backend;
  } else if (c->opts->default_backend != GC_BACKEND_UNSET) {
    g->backend = c->opts->default_backend;
  } else {
    g->backend = GC_BACKEND_VOLCANO;
  }

  /* coscheduling timeout */
  int64_t t = DEFAULT_TIMEOUT;
  if (r->cos) {
    const char *path = "spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds";
    int rc = get_int(c, c->rt, GET(r->cos, "scheduleTimeoutSeconds"), path, 0, INT32_MAXV,
                     &t);
    if (rc == 1 && t == 0) {
      t = DEFAULT_TIMEOUT;
      if (g->backend == GC_BACKEND_COSCHEDULING)
        WARN(c, GC_WARN_OTHER, "%s: %s is 0, which the API documents as \"use the default\"; "
             "using %d s (Trainer would pass 0 through)", c->rt, path, DEFAULT_TIMEOUT);
    } else if (rc == 1 && t > GC_COSCHED_MAX_TIMEOUT) {
      if (g->backend == GC_BACKEND_COSCHEDULING)
        WARN(c, GC_WARN_TIMEOUT_CLAMPED, "%s: %s is %lld s; clamped to %d s because "
             "kube-scheduler caps Permit waits at 15 minutes", c->rt, path, (long long)t,
             GC_COSCHED_MAX_TIMEOUT);
      t = GC_COSCHED_MAX_TIMEOUT;
    } else if (rc != 1) {
      t = DEFAULT_TIMEOUT;
    }
  }
  if (g->backend == GC_BACKEND_COSCHEDULING) {
    g->has_timeout = 1;
    g->schedule_timeout_seconds = (int32_t)t;
  }

  /* volcano network topology */
  const char *np = "spec.podGroupPolicy.volcano.networkTopology";
  const struct gc_value *nt =
      r->vol ? get_map(c, c->rt, GET(r->vol, "networkTopology"), np, NULL) : NULL;
  if (nt) {
    struct gc_topology_policy tp = {1, "hard", 0, 0, NULL};
    const char *mode = NULL;
    if (get_str(c, c->rt, GET(nt, "mode"), "spec.podGroupPolicy.volcano.networkTopology.mode", &mode) == 1) {
      if (strcmp(mode, "hard") && strcmp(mode, "soft"))
        fail(c, c->rt, "%s.mode: Unsupported value: \"%.*s\": supported values: \"hard\", "
             "\"soft\"", np, NAME_SHOW_MAX, mode);
      else
        tp.mode = !strcmp(mode, "hard") ? "hard" : "soft"; /* literals outlive the gang */
    }
    int64_t tier = 0;
    int ra = get_int(c, c->rt, GET(nt, "highestTierAllowed"),
                     "spec.podGroupPolicy.volcano.networkTopology.highestTierAllowed", 0, INT32_MAXV, &tier);
    const char *tname = NULL;
    int rn = get_str(c, c->rt, GET(nt, "highestTierName"),
                     "spec.podGroupPolicy.volcano.networkTopology.highestTierName", &tname);
    if (rn == 1 && (!*tname || strlen(tname) > 253)) {
      fail(c, c->rt, "%s.highestTierName: must be a non-empty string of at most 253 characters",
           np);
      rn = -1;
    }
    if (ra == 1 && rn == 1) {
      fail(c, c->rt, "%s: must not specify 'highestTierAllowed' and 'highestTierName' in "
           "networkTopology simultaneously.", np);
    } else if (rn == 1) {
      if (!(tp.highest_tier_name = gc_arena_strdup(c->a, tname)))
        c->oom = 1;
    } else {
      tp.has_highest_tier = 1;
      tp.highest_tier = ra == 1 ? tier : 1;
    }
    if (g->backend == GC_BACKEND_VOLCANO)
      g->topology = tp;
    else
      WARN(c, GC_WARN_OTHER, "%s: %s is ignored: the coscheduling PodGroup has no network "
           "topology", c->rt, np);
  }
}

/* ---- the computation ------------------------------------------------------ */

static const char *job_list(struct ctx *c, const struct job *jobs, size_t n, int gang_phase,
                            int64_t *pods) {
  char buf[1024];
  size_t used = 0;
  buf[0] = '\0';
  *pods = 0;
  for (size_t i = 0; i < n; i++) {
    if (c->g->podsets[i].phase == gang_phase)
      continue;
    *pods += jobs[i].count;
    int len = snprintf(buf + used, sizeof(buf) - used, "%s\"%s\"", used ? ", " : "",
                       jobs[i].name);
    if (len < 0 || (size_t)len >= sizeof(buf) - used)
      break;
    used += (size_t)len;
  }
  return fmt(c, "%s", buf);
}

static void compute_jobs(struct ctx *c, const struct tj_info *t, const struct rt_info *r,
                         struct job *jobs, size_t n) {
  int have_trainer = 0;
  /* Trainer's runtime core: parallelism, or mlPolicy.numNodes for the
   * trainer step, then max(count, 1) in WithPodSet. */
  for (size_t i = 0; i < n; i++) {
    struct job *j = &jobs[i];
    int64_t count = j->has_parallelism ? j->parallelism : 1;
    int trainer = j->ancestor && !strcmp(j->ancestor, "trainer");
    have_trainer |= trainer;
    if (trainer && r->has_ml)
      count = r->has_ml_numnodes ? r->ml_numnodes : 1;
    if (count < 1)
      count = 1;
    j->count = (int32_t)count;
    if (j->replicas > 1)
      WARN(c, GC_WARN_OTHER, "replicated job \"%s\" has replicas %lld, but Trainer counts the "
           "pods of one child Job only (kubeflow/trainer#2318); the gang counts %d pod(s) for it",
           j->name, (long long)j->replicas, j->count);
  }
  /* ML policy plugins. */
  if (r->mpi) {
    int64_t nn = t->has_numnodes ? t->numnodes : r->has_ml_numnodes ? r->ml_numnodes : 1;
    int found_node = 0, found_launcher = 0;
    for (size_t i = 0; i < n; i++) {
      found_launcher |= !strcmp(jobs[i].name, "launcher");
      if (strcmp(jobs[i].name, "node"))
        continue;
      found_node = 1;
      int64_t cnt = r->rlan ? (nn - 1 > 1 ? nn - 1 : 1) : nn;
      jobs[i].count = (int32_t)cnt;
    }
    if (r->rlan && nn >= 2 && (!found_node || !found_launcher))
      fail(c, c->tj, "spec.runtimeRef: runtime %s must contain the replicated jobs \"launcher\" "
           "and \"node\" when mpi.runLauncherAsNode is true and numNodes >= 2", c->rt);
  } else if (t->has_numnodes) {
    for (size_t i = 0; i < n; i++)
      if (jobs[i].ancestor && !strcmp(jobs[i].ancestor, "trainer"))
        jobs[i].count = (int32_t)t->numnodes;
    if (!have_trainer)
      WARN(c, GC_WARN_OTHER, "spec.trainer.numNodes has no effect: no replicated job of %s "
           "carries the label %s: trainer", c->rt, GC_ANCESTOR_LABEL);
  }
  /* resourcesPerNode, merged before the pod requests are computed. */
  for (size_t i = 0; t->rpn && i < n; i++) {
    int trainer = jobs[i].ancestor && !strcmp(jobs[i].ancestor, "trainer");
    if (!jobs[i].podspec)
      continue;
    if ((trainer && r->has_ml) || (r->mpi && r->rlan && !strcmp(jobs[i].name, "node")))
      merge_rpn(c, &jobs[i], t->rpn);
  }
}

/* Adds count x request of podset i to minResources.  Kubernetes reads a
 * quantity as an int64 (Quantity.Value saturates), so a total above 2^63-1
 * is an error naming the resource and the pod spec it comes from. */
static int add_total(struct ctx *c, size_t i, const struct gc_podset *ps) {
  static const struct gc_quantity max = {INT64_MAX, 0, GC_QF_DECIMAL_SI};
  struct gc_reslist *tot = &c->g->min_resources;
  for (size_t k = 0; k < ps->request.n; k++) {
    const struct gc_resource *r = &ps->request.items[k];
    struct gc_quantity q = r->q;
    const struct gc_quantity *have = gc_reslist_get(tot, r->name);
    int rc = gc_quantity_mul_int(&q, ps->count);
    if (!rc && have) {
      struct gc_quantity sum = *have;
      rc = gc_quantity_add(&sum, &q);
      q = sum;
    }
    if (!rc && gc_quantity_cmp(&q, &max) > 0)
      rc = GC_ERANGE;
    if (rc) {
      char each[GC_QUANTITY_BUFSZ];
      if (gc_quantity_format(&r->q, each, sizeof(each)))
        each[0] = '\0';
      fail(c, c->tj, "minResources.%s: the total does not fit: replicated job \"%s\" adds %d "
           "pod(s) x %s (%s: spec.template.spec.replicatedJobs[%zu].template.spec.template.spec) "
           "and the sum exceeds 9223372036854775807 (2^63-1), the largest quantity Kubernetes "
           "can use", r->name, ps->name, ps->count, each, c->rt, i);
      return GC_EINVAL;
    }
    rc = gc_reslist_set(c->a, tot, r->name, &q);
    if (rc)
      return rc;
  }
  return GC_OK;
}

/* Job i's per-pod request: from the runtime's cache when its pod spec is
 * the runtime's own, else computed.  Returns GC_OK, GC_EINVAL (reported)
 * or GC_ENOMEM. */
static int job_podreq(struct ctx *c, struct job *j, size_t i) {
  /* First without diagnostics (no paths are built); only a pod spec with a
   * problem is walked again to report it at its full path. */
  size_t e0 = c->d ? c->d->errors : 0;
  /* A pod spec whose request fields are still the runtime's own nodes
   * (no patch or resourcesPerNode touched them) has the request the
   * catalog computed once; the gang gets its own copy of the lists. */
  const struct gc_podreq *cached = gc_rt_cache_podreq(c->cache, j->podspec);
  int rc;
  if (cached) {
    j->req = *cached;
    rc = gc_reslist_copy(c->a, &j->req.request, &cached->request);
    if (!rc)
      rc = gc_reslist_copy(c->a, &j->req.limits_only, &cached->limits_only);
  } else {
    rc = gc_podreq_compute(c->a, j->podspec, NULL, &j->req, NULL);
  }
  if (rc && rc != GC_ENOMEM) {
    const char *where = fmt(c, "%s: spec.template.spec.replicatedJobs[%zu].template.spec."
                            "template.spec", c->rt, i);
    rc = gc_podreq_compute(c->a, j->podspec, where, &j->req, c->d);
    if (rc == GC_OK)
      rc = GC_EINVAL;
  }
  if (rc == GC_ENOMEM)
    return rc;
  if (rc) {
    size_t added = c->d && c->d->errors > e0 ? c->d->errors - e0 : 0;
    if (!added)
      fail(c, c->rt, "spec.template.spec.replicatedJobs[%zu]: pod request: %s", i,
           gc_strerror(rc));
    else
      c->errors += added;
    return GC_EINVAL;
  }
  return GC_OK;
}

/* The PodGroup's priority class: Trainer takes the last non-empty one. */
static void pick_priority_class(struct ctx *c, const struct job *jobs, size_t n) {
  struct gc_gang *g = c->g;
  for (size_t i = 0; i < n; i++) {
    const char *pc = jobs[i].priority_class;
    if (!pc)
      continue;
    if (g->priority_class && strcmp(g->priority_class, pc))
      WARN(c, GC_WARN_OTHER, "replicated jobs use different priorityClassName values (\"%s\", "
           "\"%s\"); the PodGroup takes the last one, as Trainer does", g->priority_class, pc);
    g->priority_class = pc;
  }
}

static int build_gang(struct ctx *c, const struct tj_info *t, struct job *jobs, size_t n) {
  struct gc_gang *g = c->g;
  g->podsets = gc_arena_alloc(c->a, n * sizeof(*g->podsets));
  struct gc_wave_job *wj = gc_arena_alloc(c->a, n * sizeof(*wj));
  int *waves = gc_arena_alloc(c->a, n * sizeof(int));
  int *phases = gc_arena_alloc(c->a, n * sizeof(int));
  int *first = gc_arena_alloc(c->a, n * sizeof(int));
  int32_t *counts = gc_arena_alloc(c->a, n * sizeof(int32_t));
  int *is_trainer = gc_arena_alloc(c->a, n * sizeof(int));
  if (!g->podsets || !wj || !waves || !phases || !first || !counts || !is_trainer)
    return GC_ENOMEM;
  g->n_podsets = n;
  int ok = 1;
  for (size_t i = 0; i < n; i++) {
    struct job *j = &jobs[i];
    int rc = job_podreq(c, j, i);
    if (rc == GC_ENOMEM)
      return rc;
    if (rc)
      ok = 0;
    wj[i] = (struct gc_wave_job){j->name, j->deps, j->n_deps, j->dep_status};
    counts[i] = j->count;
    /* The trainer step is the job labelled as Trainer's trainer ancestor, or
     * the MPI workers, which Trainer finds by the job name `node`. */
    is_trainer[i] = (j->ancestor && !strcmp(j->ancestor, "trainer")) || !strcmp(j->name, "node");
  }
  size_t e0 = c->d ? c->d->errors : 0;
  int wrc = gc_waves_compute(wj, n, c->rt, waves, c->d);
  if (wrc == GC_ENOMEM)
    return wrc;
  if (wrc) {
    c->errors += c->d && c->d->errors > e0 ? c->d->errors - e0 : 1;
    ok = 0;
  }
  if (!ok)
    return GC_EINVAL;
  int prc = gc_waves_phases(wj, n, waves, phases, first);
  if (prc)
    return prc;

  g->scope = c->opts->scope;
  g->gang_phase = g->scope == GC_SCOPE_ALL ? -1 : gc_waves_pick_phase(phases, counts, is_trainer,
                                                                       n);
  int64_t trainer_total = 0, members = 0;
  for (size_t i = 0; i < n; i++) {
    struct gc_podset *ps = &g->podsets[i];
    struct job *j = &jobs[i];
    ps->name = j->name;
    ps->ancestor = j->ancestor;
    ps->count = j->count;
    ps->replicas = (int32_t)j->replicas;
    ps->wave = waves[i];
    ps->phase = phases[i];
    ps->request = j->req.request;
    ps->limits_only = j->req.limits_only;
    ps->priority_class = j->priority_class;
    ps->scheduler_name = j->scheduler_name;
    ps->depends_on = j->deps;
    ps->depends_status = j->dep_status;
    ps->n_depends_on = j->n_deps;
    if (g->scope == GC_SCOPE_ALL || (ps->phase == g->gang_phase && first[i]))
      ps->binding = GC_BIND_COUNTED;
    else
      ps->binding = ps->phase == g->gang_phase ? GC_BIND_BOUND : GC_BIND_UNBOUND;
    if (g->scope != GC_SCOPE_ALL && ps->binding == GC_BIND_COUNTED &&
        (g->gang_wave < 0 || ps->wave < g->gang_wave))
      g->gang_wave = ps->wave;
    trainer_total += j->count;
    for (size_t k = 0; k < j->req.n_notes; k++)
      WARN(c, GC_WARN_LIMITS_ONLY, "replicated job \"%s\", container \"%s\": %s is set only in "
           "limits; counted as its request, as the API server defaults requests from limits "
           "(Trainer would count 0)", j->name, j->req.notes[k].container,
           j->req.notes[k].resource);
  }
  if (g->scope == GC_SCOPE_WAVE) {
    int64_t early = 0;
    const char *names = job_list(c, jobs, n, g->gang_phase, &early);
    if (early > 0) {
      const char *gang_names = "";
      for (size_t i = 0; i < n; i++)
        if (g->podsets[i].binding == GC_BIND_COUNTED)
          gang_names = fmt(c, "%s%s\"%s\"", gang_names, *gang_names ? ", " : "", jobs[i].name);
      WARN(c, GC_WARN_GANG_SCOPE_NARROWED,
           "replicated job(s) %s (%lld pod(s)) run in another dependsOn phase than %s: JobSet "
           "creates a job that depends on another with status Complete only after it "
           "completes, so counting them as Trainer does "
           "(minMember %lld) makes a gang whose pods can never all exist at once and never "
           "starts; they are left out of the PodGroup and must not carry its label",
           names, (long long)early, gang_names, (long long)trainer_total);
    }
  }

  for (size_t i = 0; i < n; i++) {
    struct gc_podset *ps = &g->podsets[i];
    if (ps->binding != GC_BIND_COUNTED)
      continue;
    members += ps->count;
    int rc = add_total(c, i, ps);
    if (rc)
      return rc;
  }
  if (members > INT32_MAXV) {
    fail(c, c->tj, "minMember: %lld pods do not fit an int32", (long long)members);
    return GC_EINVAL;
  }
  g->min_member = (int32_t)members;
  if (members == 0) {
    if (t->has_numnodes && t->numnodes == 0)
      fail(c, c->tj, "spec.trainer.numNodes: 0 leaves the gang with no pods; a PodGroup needs "
           "minMember >= 1");
    else
      fail(c, c->tj, "the gang has no pods; a PodGroup needs minMember >= 1");
    return GC_EINVAL;
  }

  pick_priority_class(c, jobs, n);
  return c->oom ? GC_ENOMEM : GC_OK;
}

/* "<kind-or-ns><sep><name>", each part cut at NAME_SHOW_MAX bytes. */
static char *join_name(struct gc_arena *a, const char *first, const char *sep,
                       const char *name) {
  size_t l1 = strnlen(first, NAME_SHOW_MAX), ls = strlen(sep), l2 = strnlen(name, NAME_SHOW_MAX);
  char *s = gc_arena_alloc(a, l1 + ls + l2 + 1);
  if (!s)
    return NULL;
  memcpy(s, first, l1);
  memcpy(s + l1, sep, ls);
  memcpy(s + l1 + ls, name, l2);
  s[l1 + ls + l2] = '\0';
  return s;
}

static char *prefix_name(struct gc_arena *a, const char *ns, const char *name) {
  return join_name(a, ns, "/", name);
}

/* Reads metadata: namespace, name and uid, into g, and sets c->tj.  The
 * namespace is stored in *ns (arena).  Checks failed are reported through
 * fail(); returns GC_OK or GC_ENOMEM. */
static int read_meta(struct ctx *c, const struct gc_value *trainjob, const char **ns_out) {
  struct gc_gang *g = c->g;
  const struct gc_value *meta = GET(trainjob, "metadata");
  const char *ns = c->opts->default_namespace ? c->opts->default_namespace : "default";
  const struct gc_value *nsv = GET(meta, "namespace");
  if (nsv && nsv->type == GC_STR && nsv->len)
    ns = nsv->u.s;
  const struct gc_value *namev = GET(meta, "name");
  const char *name = gc_value_as_str(namev);
  c->tj = prefix_name(c->a, ns, name && *name ? name : "(no name)");
  if (!c->tj)
    return GC_ENOMEM;
  if (!is_null(nsv) && (nsv->type != GC_STR || !gc_name_is_dns1123_label(nsv->u.s, nsv->len)))
    fail(c, c->tj, "metadata.namespace: must be an RFC 1123 label");
  if (!name || !*name) {
    fail(c, c->tj, "metadata.name: %s", is_null(namev) || (name && !*name) ? "required"
                                                                           : "must be a string");
  } else if (namev->len > 63) {
    fail(c, c->tj, "metadata.name: must be no more than 63 characters");
  } else if (!gc_name_is_dns1035(name, namev->len)) {
    fail(c, c->tj, "metadata.name: must match RFC 1035 DNS label format (lowercase letters, "
         "digits and '-', starting with a letter and ending with a letter or digit)");
  }
  g->namespace_ = gc_arena_strdup(c->a, ns);
  g->name = gc_arena_strdup(c->a, name ? name : "");
  const struct gc_value *uidv = GET(meta, "uid");
  if (!is_null(uidv) && uidv->type != GC_STR)
    fail(c, c->tj, "metadata.uid: must be a string");
  const char *uid = gc_value_as_str(uidv);
  g->uid = uid && *uid ? gc_arena_strdup(c->a, uid) : NULL;
  if (!g->namespace_ || !g->name)
    return GC_ENOMEM;
  *ns_out = g->namespace_;
  return GC_OK;
}

/* Finds the runtime t names and sets c->rt and the gang's runtime fields.
 * *rt_out is the catalog's document (borrowed) or NULL when there is none
 * to read further.  Returns GC_OK (also when an error was reported),
 * GC_ENOTFOUND or GC_ENOMEM. */
static int find_runtime(struct ctx *c, const struct tj_info *t, const struct gc_catalog *runtimes,
                        const char *ns, const struct gc_value **rt_out) {
  struct gc_gang *g = c->g;
  *rt_out = NULL;
  if (!t->ref_ok)
    return GC_OK;
  const struct gc_value *rt = gc_catalog_find_cached(runtimes, t->ref_cluster, ns,
                                                     c->opts->default_namespace, t->ref_name,
                                                     NULL, &c->cache);
  if (!rt) {
    if (t->ref_cluster)
      fail(c, c->tj, "spec.runtimeRef: ClusterTrainingRuntime \"%.*s\" not found",
           NAME_SHOW_MAX, t->ref_name);
    else
      fail(c, c->tj, "spec.runtimeRef: TrainingRuntime \"%.*s\" not found in namespace "
           "\"%s\"", NAME_SHOW_MAX, t->ref_name, ns);
    return GC_ENOTFOUND;
  }
  g->runtime_kind = t->ref_cluster ? "ClusterTrainingRuntime" : "TrainingRuntime";
  g->runtime_name = gc_arena_strdup(c->a, t->ref_name);
  if (!g->runtime_name)
    return GC_ENOMEM;
  c->rt = t->ref_cluster ? join_name(c->a, "ClusterTrainingRuntime", "/", t->ref_name)
                         : join_name(c->a, fmt(c, "TrainingRuntime %s", ns), "/", t->ref_name);
  if (!c->rt)
    return GC_ENOMEM;
  const struct gc_value *rlabels = gc_value_path(rt, "metadata.labels");
  const char *support = gc_value_as_str(gc_map_get(rlabels, SUPPORT_LABEL));
  if (support && !strcmp(support, "deprecated"))
    WARN(c, GC_WARN_DEPRECATED_RUNTIME, "%s is labelled %s: deprecated; it may be removed in a "
         "future Trainer release", c->rt, SUPPORT_LABEL);
  *rt_out = rt;
  return GC_OK;
}

/* The effective JobSet job list: the runtime template, then overrides and
 * patches on a copy.  Without any, the runtime's list is read as it is
 * (resourcesPerNode copies the pod specs it changes).  *out is the list
 * (arena or the runtime's own, borrowed).  Returns GC_OK, GC_EINVAL
 * (reported) or GC_ENOMEM. */
static int effective_jobs(struct ctx *c, const struct tj_info *t, const struct rt_info *r,
                          const struct gc_value *rt, struct gc_value **out) {
  *out = (struct gc_value *)r->jobs;
  if (is_null(GET(t->spec, "podSpecOverrides")) && is_null(GET(t->spec, "podTemplateOverrides")) &&
      is_null(GET(t->spec, "runtimePatches")))
    return GC_OK;
  struct gc_value *js = NULL;
  int rc = gc_merge_strategic(c->a, gc_value_path(rt, "spec.template.spec"), NULL, NULL, &js);
  if (rc == GC_ELIMIT) {
    fail(c, c->rt, "spec.template.spec: nested too deeply");
    return GC_EINVAL;
  }
  if (rc || !js)
    return GC_ENOMEM;
  /* js is the runtime's own tree (the merge shares what it does not
   * change); the job list becomes private so its items can be replaced. */
  struct gc_value *jsjobs = cow_seq(c, GET(js, "replicatedJobs"));
  if (!jsjobs)
    return GC_ENOMEM;
  apply_overrides(c, t->spec, jsjobs, r->jobs, 1);
  apply_overrides(c, t->spec, jsjobs, r->jobs, 0);
  apply_patches(c, t->spec, jsjobs, r->jobs);
  if (c->oom)
    return GC_ENOMEM;
  *out = jsjobs;
  return GC_OK;
}

/* Collects the Volcano queue annotation from the runtime template
 * metadata, v2.1 spec.annotations, then patches, the last one set
 * winning, into *q (borrowed strings). */
static void find_queue(struct ctx *c, const struct tj_info *t, const struct gc_value *rt,
                       struct queue_src *q) {
#define QA "[" GC_VOLCANO_QUEUE_ANNOTATION "]"
  queue_from(q, gc_value_path(rt, "spec.template.metadata.annotations"), c->rt,
             (struct lpath){"spec.template.metadata.annotations" QA, NULL, 0, 0, NULL});
  queue_from(q, GET(t->spec, "annotations"), c->tj,
             (struct lpath){"spec.annotations" QA, NULL, 0, 0, NULL});
  const struct gc_value *patches = GET(t->spec, "runtimePatches");
  for (size_t i = 0; patches && patches->type == GC_SEQ && i < patches->len && i < 1000; i++) {
    const struct gc_value *ann =
        gc_value_path(patches->u.items[i], "trainingRuntimeSpec.template.metadata.annotations");
    if (GET(ann, GC_VOLCANO_QUEUE_ANNOTATION))
      queue_from(q, ann, c->tj,
                 (struct lpath){"spec.runtimePatches[%zu].trainingRuntimeSpec.template.metadata."
                                "annotations" QA, NULL, i, 0, NULL});
  }
#undef QA
}

/* Checks the queue q found and stores it in the gang; only a Volcano gang
 * reads it.  A bad name is reported.  Returns GC_OK or GC_ENOMEM. */
static int resolve_queue(struct ctx *c, struct queue_src *q) {
  if (c->g->backend != GC_BACKEND_VOLCANO)
    return GC_OK;
  if (q->value && !*q->value) {
    fail(c, q->prefix, "%s: Volcano queue name must not be empty", lp(c, &q->path));
  } else if (q->value && !gc_name_is_dns1123_subdomain(q->value, strlen(q->value))) {
    fail(c, q->prefix, "%s: \"%.*s\" is not a valid Volcano queue name (an RFC 1123 "
         "subdomain)", lp(c, &q->path), NAME_SHOW_MAX, q->value);
  } else if (q->value) {
    if (!(c->g->queue = gc_arena_strdup(c->a, q->value)))
      return GC_ENOMEM;
  } else {
    WARN(c, GC_WARN_NO_QUEUE, "no %s annotation on the runtime template or the TrainJob; "
         "Volcano puts the PodGroup in the \"default\" queue", GC_VOLCANO_QUEUE_ANNOTATION);
  }
  return GC_OK;
}

/* Reads the runtime's spec and policies into r.  Returns GC_OK when the
 * jobs can be read further, GC_EINVAL when an error was reported. */
static int read_runtime(struct ctx *c, struct tj_info *t, const struct gc_value *rt,
                        struct rt_info *r) {
  r->spec = GET(rt, "spec");
  if (is_null(r->spec) || r->spec->type != GC_MAP) {
    fail(c, c->rt, "spec: %s", is_null(r->spec) ? "required" : "must be an object");
    return GC_EINVAL;
  }
  check_ml_policy(c, r, t);
  check_policy(c, r);
  resolve_policy(c, r);
  if (check_runtime_jobs(c, r) || !t->spec)
    return GC_EINVAL;
  if (t->v21 && !t->v22 && !t->v20)
    c->g->api_generation = "v2.1";
  return GC_OK;
}

/* Everything after metadata: runtime, effective jobs, queue, counts and
 * the gang.  Returns GC_OK or a GC_E* code; errors are also counted in c. */
static int compute_body(struct ctx *c, const struct gc_value *trainjob,
                        const struct gc_catalog *runtimes, const char *ns) {
  struct tj_info t;
  struct rt_info r;
  memset(&t, 0, sizeof(t));
  memset(&r, 0, sizeof(r));
  check_trainjob(c, trainjob, &t);
  const struct gc_value *rt = NULL;
  int rc = find_runtime(c, &t, runtimes, ns, &rt);
  if (rc || !rt)
    return rc ? rc : GC_EINVAL;
  if ((rc = read_runtime(c, &t, rt, &r)))
    return rc;
  struct gc_value *jsjobs = NULL;
  if ((rc = effective_jobs(c, &t, &r, rt, &jsjobs)))
    return rc;
  struct queue_src q = {NULL, NULL, {NULL, NULL, 0, 0, NULL}};
  find_queue(c, &t, rt, &q);
  size_t n = jsjobs->len;
  struct job *jobs = gc_arena_alloc(c->a, n * sizeof(*jobs));
  if (!jobs)
    return GC_ENOMEM;
  int jobs_ok = read_jobs(c, jsjobs, jobs);
  if (c->oom)
    return GC_ENOMEM;
  /* The queue is checked after the jobs are read, so that its
   * diagnostics keep their place in the list. */
  if ((rc = resolve_queue(c, &q)))
    return rc;
  if (!jobs_ok || c->errors)
    return GC_EINVAL;
  compute_jobs(c, &t, &r, jobs, n);
  if (c->oom)
    return GC_ENOMEM;
  if (c->errors)
    return GC_EINVAL;
  return build_gang(c, &t, jobs, n);
}

int gc_gang_compute(const struct gc_value *trainjob, const struct gc_catalog *runtimes,
                    const struct gc_options *opts, struct gc_gang **out,
                    struct gc_diags *diags) {
  static const struct gc_options defaults = {GC_BACKEND_UNSET, GC_BACKEND_UNSET, GC_SCOPE_WAVE,
                                             NULL};
  const char *kind = NULL;
  *out = NULL;
  if (!opts)
    opts = &defaults;
  if (!trainjob || !gc_doc_trainer_kind(trainjob, &kind) || strcmp(kind, "TrainJob")) {
    gc_diags_addf(diags, "not a %s TrainJob", GC_TRAINER_API);
    return GC_EINVAL;
  }
  struct gc_arena *a = gc_arena_new(0);
  struct gc_gang *g = a ? gc_arena_alloc(a, sizeof(*g)) : NULL;
  if (!g) {
    gc_arena_free(a);
    return GC_ENOMEM;
  }
  g->arena = a;
  g->gang_wave = -1;
  g->gang_phase = -1;
  struct ctx c = {g, a, diags, opts, NULL, NULL, 0, 0, NULL};
  const char *ns = NULL;
  int rc = read_meta(&c, trainjob, &ns);
  if (rc == GC_OK)
    rc = compute_body(&c, trainjob, runtimes, ns);
  if (rc == GC_ENOMEM || c.oom) {
    rc = GC_ENOMEM;
    gc_diags_addf(diags, "%s: %s", c.tj ? c.tj : "TrainJob", gc_strerror(GC_ENOMEM));
  } else if (c.errors) {
    if (rc == GC_OK)
      rc = GC_EINVAL;
  } else if (rc != GC_OK) {
    gc_diags_addf(diags, "%s: %s", c.tj ? c.tj : "TrainJob", gc_strerror(rc));
  }
  if (rc != GC_OK) {
    gc_gang_free(g);
    return rc;
  }
  *out = g;
  return GC_OK;
}

void gc_gang_free(struct gc_gang *g) {
  if (g)
    gc_arena_free(g->arena);
}
