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
#include "gc_jobs.h"
#include "gc_override.h"
#include "gc_runtime.h"
#include "gc_trainjob.h"
#include "gc_merge.h"
#include "gc_podreq.h"
#include "gc_waves.h"

static const char *const SUPPORT_LABEL = "trainer.kubeflow.org/support";

/* ---- warnings (gc_gang_int.h) -------------------------------------------- */

int gc_gang_warnf(struct gc_gang *g, enum gc_warning_code code, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  size_t n = gc_diag_vformat(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  struct gc_warning *w = gc_arena_alloc(g->arena, (g->n_warnings + 1) * sizeof(*w));
  char *msg;
  /* Names from manifests may hold control bytes; printed raw they could
   * clear a terminal or forge a line. */
  if (gc_diag_has_controls(buf, n)) {
    msg = gc_arena_alloc(g->arena, n * 4 + 1);
    if (msg)
      gc_diag_escape_controls(msg, n * 4 + 1, buf, n);
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

const char *gc_binding_name(enum gc_binding b) {
  switch (b) {
  case GC_BIND_COUNTED: return "gang";
  case GC_BIND_BOUND: return "bound";
  default: return "unbound";
  }
}

/* ---- queue --------------------------------------------------------------- */

/* Where the queue came from.  Its path is formatted only for a message:
 * "<base>.<map>[<key>]", or under runtime patch `patch` (>= 0). */
struct queue_src {
  const char *value;
  const char *prefix;
  const char *base; /* NULL: spec.runtimePatches[patch] */
  size_t patch;
};

/* The map a backend's queue key lives in. */
static const char *queue_map(const struct gc_backend *b) {
  return b->queue.key_at == GC_JOIN_LABEL ? "labels" : "annotations";
}

static void queue_from(struct queue_src *q, const struct gc_backend *b, const struct gc_value *meta,
                       const char *prefix, const char *base, size_t patch) {
  const struct gc_value *v = gc_map_get(gc_map_get(meta, queue_map(b)), b->queue.key);
  if (!v || v->type != GC_STR)
    return; /* wrong types were reported by gc_gang_check_string_map */
  q->value = v->u.s;
  q->prefix = prefix;
  q->base = base;
  q->patch = patch;
}

static const char *queue_path(struct ctx *c, const struct queue_src *q) {
  const struct gc_backend *b = c->g->backend;
  if (q->base)
    return gc_gang_fmt(c, "%s.%s[%s]", q->base, queue_map(b), b->queue.key);
  return gc_gang_fmt(c, "spec.runtimePatches[%zu].trainingRuntimeSpec.template.metadata.%s[%s]",
                     q->patch, queue_map(b), b->queue.key);
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
    int len = snprintf(buf + used, sizeof(buf) - used, "%s\"%s\"", used ? ", " : "", jobs[i].name);
    if (len < 0 || (size_t)len >= sizeof(buf) - used)
      break;
    used += (size_t)len;
  }
  return gc_gang_fmt(c, "%s", buf);
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
      WARN(c, GC_WARN_OTHER,
           "replicated job \"%s\" has replicas %lld, but Trainer counts the "
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
      gc_gang_fail(c, c->tj,
                   "spec.runtimeRef: runtime %s must contain the replicated jobs \"launcher\" "
                   "and \"node\" when mpi.runLauncherAsNode is true and numNodes >= 2",
                   c->rt);
  } else if (t->has_numnodes) {
    for (size_t i = 0; i < n; i++)
      if (jobs[i].ancestor && !strcmp(jobs[i].ancestor, "trainer"))
        jobs[i].count = (int32_t)t->numnodes;
    if (!have_trainer)
      WARN(c, GC_WARN_OTHER,
           "spec.trainer.numNodes has no effect: no replicated job of %s "
           "carries the label %s: trainer",
           c->rt, GC_ANCESTOR_LABEL);
  }
  /* resourcesPerNode, merged before the pod requests are computed. */
  for (size_t i = 0; t->rpn && i < n; i++) {
    int trainer = jobs[i].ancestor && !strcmp(jobs[i].ancestor, "trainer");
    if (!jobs[i].podspec)
      continue;
    if ((trainer && r->has_ml) || (r->mpi && r->rlan && !strcmp(jobs[i].name, "node")))
      gc_jobs_merge_rpn(c, &jobs[i], t->rpn);
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
      gc_gang_fail(
          c, c->tj,
          "minResources.%s: the total does not fit: replicated job \"%s\" adds %d "
          "pod(s) x %s (%s: spec.template.spec.replicatedJobs[%zu].template.spec.template.spec) "
          "and the sum exceeds 9223372036854775807 (2^63-1), the largest quantity Kubernetes "
          "can use",
          r->name, ps->name, ps->count, each, c->rt, i);
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
    const char *where = gc_gang_fmt(c,
                                    "%s: spec.template.spec.replicatedJobs[%zu].template.spec."
                                    "template.spec",
                                    c->rt, i);
    rc = gc_podreq_compute(c->a, j->podspec, where, &j->req, c->d);
    if (rc == GC_OK)
      rc = GC_EINVAL;
  }
  if (rc == GC_ENOMEM)
    return rc;
  if (rc) {
    size_t added = c->d && c->d->errors > e0 ? c->d->errors - e0 : 0;
    if (!added)
      gc_gang_fail(c, c->rt, "spec.template.spec.replicatedJobs[%zu]: pod request: %s", i,
                   gc_diag_strerror(rc));
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
      WARN(c, GC_WARN_OTHER,
           "replicated jobs use different priorityClassName values (\"%s\", "
           "\"%s\"); the PodGroup takes the last one, as Trainer does",
           g->priority_class, pc);
    g->priority_class = pc;
  }
}

/* With scope wave, the jobs of other dependsOn phases are left out of the
 * gang: says which and why (GC_WARN_GANG_SCOPE_NARROWED). */
static void narrowed_warning(struct ctx *c, const struct job *jobs, size_t n,
                             int64_t trainer_total) {
  const struct gc_gang *g = c->g;
  if (g->scope != GC_SCOPE_WAVE)
    return;
  int64_t early = 0;
  const char *names = job_list(c, jobs, n, g->gang_phase, &early);
  if (early <= 0)
    return;
  const char *gang_names = "";
  for (size_t i = 0; i < n; i++)
    if (g->podsets[i].binding == GC_BIND_COUNTED)
      gang_names = gc_gang_fmt(c, "%s%s\"%s\"", gang_names, *gang_names ? ", " : "", jobs[i].name);
  WARN(c, GC_WARN_GANG_SCOPE_NARROWED,
       "replicated job(s) %s (%lld pod(s)) run in another dependsOn phase than %s: JobSet "
       "creates a job that depends on another with status Complete only after it "
       "completes, so counting them as Trainer does "
       "(minMember %lld) makes a gang whose pods can never all exist at once and never "
       "starts; %s",
       names, (long long)early, gang_names, (long long)trainer_total,
       (g->backend->caps & GC_BCAP_ELASTIC_MEMBERS)
           ? "they join the PodGroup in sub-groups that need none of their pods"
           : "they are left out of the PodGroup and must not carry its label");
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
  g->gang_phase = g->scope == GC_SCOPE_ALL ? -1
                                           : gc_waves_pick_phase(phases, counts, is_trainer, n);
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
      WARN(c, GC_WARN_LIMITS_ONLY,
           "replicated job \"%s\", container \"%s\": %s is set only in "
           "limits; counted as its request, as the API server defaults requests from limits "
           "(Trainer would count 0)",
           j->name, j->req.notes[k].container, j->req.notes[k].resource);
  }
  narrowed_warning(c, jobs, n, trainer_total);

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
    gc_gang_fail(c, c->tj, "minMember: %lld pods do not fit an int32", (long long)members);
    return GC_EINVAL;
  }
  g->min_member = (int32_t)members;
  if (members == 0) {
    if (t->has_numnodes && t->numnodes == 0)
      gc_gang_fail(c, c->tj,
                   "spec.trainer.numNodes: 0 leaves the gang with no pods; a PodGroup needs "
                   "minMember >= 1");
    else
      gc_gang_fail(c, c->tj, "the gang has no pods; a PodGroup needs minMember >= 1");
    return GC_EINVAL;
  }

  pick_priority_class(c, jobs, n);
  return c->oom ? GC_ENOMEM : GC_OK;
}

/* "<kind-or-ns><sep><name>", each part cut at NAME_SHOW_MAX bytes. */
static char *join_name(struct gc_arena *a, const char *first, const char *sep, const char *name) {
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
 * gc_gang_fail(); returns GC_OK or GC_ENOMEM. */
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
  if (!gc_is_null(nsv) && (nsv->type != GC_STR || !gc_name_is_dns1123_label(nsv->u.s, nsv->len)))
    gc_gang_fail(c, c->tj, "metadata.namespace: must be an RFC 1123 label");
  if (!name || !*name) {
    gc_gang_fail(c, c->tj, "metadata.name: %s",
                 gc_is_null(namev) || (name && !*name) ? "required" : "must be a string");
  } else if (namev->len > 63) {
    gc_gang_fail(c, c->tj, "metadata.name: must be no more than 63 characters");
  } else if (!gc_name_is_dns1035(name, namev->len)) {
    gc_gang_fail(c, c->tj,
                 "metadata.name: must match RFC 1035 DNS label format (lowercase letters, "
                 "digits and '-', starting with a letter and ending with a letter or digit)");
  }
  g->namespace_ = gc_arena_strdup(c->a, ns);
  g->name = gc_arena_strdup(c->a, name ? name : "");
  const struct gc_value *uidv = GET(meta, "uid");
  if (!gc_is_null(uidv) && uidv->type != GC_STR)
    gc_gang_fail(c, c->tj, "metadata.uid: must be a string");
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
  const struct gc_value *rt = gc_catalog_find_cached(
      runtimes, t->ref_cluster, ns, c->opts->default_namespace, t->ref_name, NULL, &c->cache);
  if (!rt) {
    if (t->ref_cluster)
      gc_gang_fail(c, c->tj, "spec.runtimeRef: ClusterTrainingRuntime \"%.*s\" not found",
                   NAME_SHOW_MAX, t->ref_name);
    else
      gc_gang_fail(c, c->tj,
                   "spec.runtimeRef: TrainingRuntime \"%.*s\" not found in namespace "
                   "\"%s\"",
                   NAME_SHOW_MAX, t->ref_name, ns);
    return GC_ENOTFOUND;
  }
  g->runtime_kind = t->ref_cluster ? "ClusterTrainingRuntime" : "TrainingRuntime";
  g->runtime_name = gc_arena_strdup(c->a, t->ref_name);
  if (!g->runtime_name)
    return GC_ENOMEM;
  c->rt = t->ref_cluster
              ? join_name(c->a, "ClusterTrainingRuntime", "/", t->ref_name)
              : join_name(c->a, gc_gang_fmt(c, "TrainingRuntime %s", ns), "/", t->ref_name);
  if (!c->rt)
    return GC_ENOMEM;
  const struct gc_value *rlabels = gc_value_path(rt, "metadata.labels");
  const char *support = gc_value_as_str(gc_map_get(rlabels, SUPPORT_LABEL));
  if (support && !strcmp(support, "deprecated"))
    WARN(c, GC_WARN_DEPRECATED_RUNTIME,
         "%s is labelled %s: deprecated; it may be removed in a "
         "future Trainer release",
         c->rt, SUPPORT_LABEL);
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
  if (gc_is_null(GET(t->spec, "podSpecOverrides")) &&
      gc_is_null(GET(t->spec, "podTemplateOverrides")) &&
      gc_is_null(GET(t->spec, "runtimePatches")))
    return GC_OK;
  struct gc_value *js = NULL;
  int rc = gc_merge_strategic(c->a, gc_value_path(rt, "spec.template.spec"), NULL, NULL, &js);
  if (rc == GC_ELIMIT) {
    gc_gang_fail(c, c->rt, "spec.template.spec: nested too deeply");
    return GC_EINVAL;
  }
  if (rc || !js)
    return GC_ENOMEM;
  /* js is the runtime's own tree (the merge shares what it does not
   * change); the job list becomes private so its items can be replaced. */
  struct gc_value *jsjobs = gc_override_cow_seq(c, GET(js, "replicatedJobs"));
  if (!jsjobs)
    return GC_ENOMEM;
  gc_override_apply(c, t->spec, jsjobs, r->jobs, 1);
  gc_override_apply(c, t->spec, jsjobs, r->jobs, 0);
  gc_override_patches(c, t->spec, jsjobs, r->jobs);
  if (c->oom)
    return GC_ENOMEM;
  *out = jsjobs;
  return GC_OK;
}

/* Collects the backend's queue key from the runtime template metadata,
 * v2.1 spec.annotations (or spec.labels), then patches, the last one set
 * winning, into *q (borrowed strings).  A backend without queues has none. */
static void find_queue(struct ctx *c, const struct tj_info *t, const struct gc_value *trainjob,
                       const struct gc_value *rt, struct queue_src *q) {
  const struct gc_backend *b = c->g->backend;
  if (!b->queue.key)
    return;
  queue_from(q, b, gc_value_path(rt, "spec.template.metadata"), c->rt, "spec.template.metadata", 0);
  /* A queue label is read where its scheduler's grouper reads it too: on
   * the workload's own metadata (Kubeflow's KAI guide puts it there). */
  if (b->queue.key_at == GC_JOIN_LABEL)
    queue_from(q, b, GET(trainjob, "metadata"), c->tj, "metadata", 0);
  queue_from(q, b, t->spec, c->tj, "spec", 0);
  const struct gc_value *patches = GET(t->spec, "runtimePatches");
  for (size_t i = 0; patches && patches->type == GC_SEQ && i < patches->len && i < 1000; i++) {
    const struct gc_value *meta = gc_value_path(patches->u.items[i],
                                                "trainingRuntimeSpec.template.metadata");
    if (gc_map_get(gc_map_get(meta, queue_map(b)), b->queue.key))
      queue_from(q, b, meta, c->tj, NULL, i);
  }
}

/* The Namespace's queue annotation when it is a valid queue name (the
 * controller's rule: a bad one is reported there, and ignored), or NULL. */
static const char *ns_queue(struct ctx *c) {
  const struct gc_policy_context *p = c->opts->policy;
  const char *q = p ? gc_value_as_str(gc_map_get(p->ns_annotations, c->g->backend->queue.key))
                    : NULL;
  return q && gc_name_is_dns1123_subdomain(q, strlen(q)) ? q : NULL;
}

/* Checks the queue q found and stores it in the gang; only a gang whose
 * backend has queues reads it.  A bad name is reported.  Returns GC_OK or
 * GC_ENOMEM. */
static int resolve_queue(struct ctx *c, struct queue_src *q) {
  const struct gc_backend *b = c->g->backend;
  if (!(b->caps & GC_BCAP_QUEUE) || !b->queue.key)
    return GC_OK;
  if (q->value && !*q->value) {
    gc_gang_fail(c, q->prefix, "%s: %s queue name must not be empty", queue_path(c, q), b->display);
  } else if (q->value && !gc_name_is_dns1123_subdomain(q->value, strlen(q->value))) {
    gc_gang_fail(c, q->prefix,
                 "%s: \"%.*s\" is not a valid %s queue name (an RFC 1123 "
                 "subdomain)",
                 queue_path(c, q), NAME_SHOW_MAX, q->value, b->display);
  } else if (q->value) {
    if (!(c->g->queue = gc_arena_strdup(c->a, q->value)))
      return GC_ENOMEM;
  } else if (ns_queue(c)) {
    if (!(c->g->queue = gc_arena_strdup(c->a, ns_queue(c))))
      return GC_ENOMEM;
  } else {
    WARN(c, GC_WARN_NO_QUEUE,
         "no %s %s on the runtime template or the TrainJob; "
         "%s puts the %s in the \"%s\" queue",
         b->queue.key, b->queue.key_at == GC_JOIN_LABEL ? "label" : "annotation", b->display,
         b->kind, b->queue.default_name);
  }
  return GC_OK;
}

/* Reads the runtime's spec and policies into r.  Returns GC_OK when the
 * jobs can be read further, GC_EINVAL when an error was reported. */
static int read_runtime(struct ctx *c, struct tj_info *t, const struct gc_value *rt,
                        struct rt_info *r) {
  r->spec = GET(rt, "spec");
  if (gc_is_null(r->spec) || r->spec->type != GC_MAP) {
    gc_gang_fail(c, c->rt, "spec: %s", gc_is_null(r->spec) ? "required" : "must be an object");
    return GC_EINVAL;
  }
  gc_runtime_check_ml(c, r, t);
  gc_runtime_check_policy(c, r);
  gc_runtime_resolve_policy(c, r);
  if (gc_runtime_check_jobs(c, r) || !t->spec)
    return GC_EINVAL;
  if (t->v21 && !t->v22 && !t->v20)
    c->g->api_generation = "v2.1";
  return GC_OK;
}

/* The join key of b (any version's pod-spec-field joins) whose first
 * segment the pod spec ps sets: the pod already names a scheduling group;
 * NULL when none. */
static const char *names_group(const struct gc_backend *b, const struct gc_value *ps) {
  for (size_t v = 0; v <= b->n_versions; v++) {
    const struct gc_backend_join *js = v ? b->versions[v - 1].joins : b->joins;
    size_t n = v ? b->versions[v - 1].n_joins : b->n_joins;
    for (size_t i = 0; i < n; i++) {
      if (js[i].at != GC_JOIN_SPEC_FIELD)
        continue;
      const char *dot = strchr(js[i].key, '.');
      size_t len = dot ? (size_t)(dot - js[i].key) : strlen(js[i].key);
      for (size_t k = 0; ps && ps->type == GC_MAP && k < ps->len; k++)
        if (ps->u.members[k].key_len == len && !memcmp(ps->u.members[k].key, js[i].key, len) &&
            !gc_is_null(ps->u.members[k].value))
          return js[i].key;
    }
  }
  return NULL;
}

/* Whether something else gangs this TrainJob for its backend (see
 * gc_gang.ganged_by); gangbridge then writes nothing, never a second group
 * object for one TrainJob. */
static void find_other_gang(struct ctx *c, const struct gc_value *rt, const struct job *jobs,
                            size_t n) {
  const struct gc_backend *b = c->g->backend;
  const char *why = NULL;
  if (b->runtime_stanza && !gc_is_null(gc_map_get(GET(rt, "spec"), b->runtime_stanza)))
    why = gc_gang_fmt(c, "%s: spec.%s (Kubeflow Trainer gangs it itself)", c->rt,
                      b->runtime_stanza);
  for (size_t i = 0; !why && i < n; i++) {
    const struct gc_value *jspec = GET(GET(jobs[i].node, "template"), "spec");
    const char *key = names_group(b, jobs[i].podspec);
    if (b->job_stanza && !gc_is_null(gc_map_get(jspec, b->job_stanza)))
      why = gc_gang_fmt(c,
                        "%s: replicated job \"%s\" sets its Job's spec.%s (the Job controller "
                        "gangs it itself)",
                        c->rt, jobs[i].name, b->job_stanza);
    else if (key)
      why = gc_gang_fmt(c,
                        "%s: replicated job \"%s\" already names a scheduling group in its pod "
                        "template (spec.%s)",
                        c->rt, jobs[i].name, key);
  }
  if (!why)
    return;
  c->g->ganged_by = why;
  WARN(c, GC_WARN_GANGED_ELSEWHERE, "%s; gangbridge leaves it alone and writes no %s", why,
       b->kind);
}

/* metadata.annotations[key] of the map at `meta`, or NULL. */
static const char *meta_annotation(const struct gc_value *meta, const char *key) {
  return gc_value_as_str(gc_map_get(GET(meta, "annotations"), key));
}

/* 1 when the backend's grouper-skip annotation is on the TrainJob, the
 * runtime's JobSet template, or on every replicated job (its Job template
 * or its pod template): where the scheduler's grouper looks, in the pod's
 * owner chain. */
static int grouper_skipped(const struct gc_backend *b, const struct gc_value *trainjob,
                           const struct gc_value *rt, const struct gc_value *jsjobs) {
  const char *k = b->grouper_skip_key, *want = b->grouper_skip_value;
  const char *v = meta_annotation(GET(trainjob, "metadata"), k);
  if (!v)
    v = meta_annotation(gc_value_path(rt, "spec.template.metadata"), k);
  if (v)
    return !strcmp(v, want);
  size_t n = jsjobs && jsjobs->type == GC_SEQ ? jsjobs->len : 0;
  for (size_t i = 0; i < n; i++) {
    const struct gc_value *tpl = GET(jsjobs->u.items[i], "template");
    v = meta_annotation(GET(tpl, "metadata"), k);
    if (!v)
      v = meta_annotation(gc_value_path(tpl, "spec.template.metadata"), k);
    if (!v || strcmp(v, want))
      return 0;
  }
  return n > 0;
}

/* What only some backends read: the scheduler's topology object named on
 * the TrainJob or runtime, and whether the scheduler's own grouper was told
 * to keep out (gangbridge never writes it on objects it does not own, so it
 * warns and the docs say where the runtime author puts it). */
static int backend_extras(struct ctx *c, const struct gc_value *trainjob, const struct gc_value *rt,
                          const struct gc_value *jsjobs) {
  struct gc_gang *g = c->g;
  const struct gc_backend *b = g->backend;
  if (b->topology_name_key) {
    const char *t = meta_annotation(GET(trainjob, "metadata"), b->topology_name_key);
    if (!t)
      t = meta_annotation(gc_value_path(rt, "spec.template.metadata"), b->topology_name_key);
    if (t && *t && !(g->topology_object = gc_arena_strdup(c->a, t)))
      return GC_ENOMEM;
  }
  if ((b->caps & GC_BCAP_TOPOLOGY_LEVEL) && g->topology.set) {
    if (!g->topology.highest_tier_name)
      WARN(c, GC_WARN_TOPOLOGY_DROPPED,
           "the topology policy names tier %lld, a HyperNode tier that %s has no "
           "level for; the %s carries no topologyConstraint (name a level: a node label key "
           "of %s's Topology)",
           (long long)(g->topology.has_highest_tier ? g->topology.highest_tier : 1), b->display,
           b->kind, b->display);
    else if (!g->topology_object)
      WARN(c, GC_WARN_TOPOLOGY_DROPPED,
           "the topology policy names level \"%s\", but %s acts on a level only within a "
           "Topology object, and neither the TrainJob nor its runtime's template names one "
           "(annotation %s); the %s carries no topologyConstraint",
           g->topology.highest_tier_name, b->display, b->topology_name_key, b->kind);
  }
  if (b->grouper_skip_key) {
    g->grouper_skipped = grouper_skipped(b, trainjob, rt, jsjobs);
    if (!g->grouper_skipped)
      WARN(c, GC_WARN_GROUPER_NOT_SKIPPED,
           "%s's own pod grouper is not told to leave this TrainJob to gangbridge: without "
           "annotation %s: \"%s\" on the runtime's template (spec.template.metadata) it "
           "also groups the pods and rewrites their %s binding; the runtime's author adds it "
           "(gangbridge never edits the runtime or the TrainJob)",
           b->display, b->grouper_skip_key, b->grouper_skip_value, b->kind);
  }
  return c->oom ? GC_ENOMEM : GC_OK;
}

/* Everything after metadata: runtime, effective jobs, queue, counts and
 * the gang.  Returns GC_OK or a GC_E* code; errors are also counted in c. */
static int compute_body(struct ctx *c, const struct gc_value *trainjob,
                        const struct gc_catalog *runtimes, const char *ns) {
  struct tj_info t;
  struct rt_info r;
  memset(&t, 0, sizeof(t));
  memset(&r, 0, sizeof(r));
  gc_trainjob_check(c, trainjob, &t);
  const struct gc_value *rt = NULL;
  int rc = find_runtime(c, &t, runtimes, ns, &rt);
  if (rc || !rt)
    return rc ? rc : GC_EINVAL;
  if ((rc = read_runtime(c, &t, rt, &r)))
    return rc;
  struct gc_value *jsjobs = NULL;
  if ((rc = effective_jobs(c, &t, &r, rt, &jsjobs)))
    return rc;
  struct queue_src q = {NULL, NULL, NULL, 0};
  find_queue(c, &t, trainjob, rt, &q);
  size_t n = jsjobs->len;
  struct job *jobs = gc_arena_alloc(c->a, n * sizeof(*jobs));
  if (!jobs)
    return GC_ENOMEM;
  int jobs_ok = gc_jobs_read(c, jsjobs, jobs);
  if (c->oom)
    return GC_ENOMEM;
  /* The queue is checked after the jobs are read, so that its
   * diagnostics keep their place in the list. */
  if ((rc = resolve_queue(c, &q)))
    return rc;
  gc_policy_resolve(c, trainjob, rt, &r);
  find_other_gang(c, rt, jobs, n);
  if (c->oom)
    return GC_ENOMEM;
  if (!jobs_ok || c->errors)
    return GC_EINVAL;
  compute_jobs(c, &t, &r, jobs, n);
  if (c->oom)
    return GC_ENOMEM;
  if (c->errors)
    return GC_EINVAL;
  if ((rc = build_gang(c, &t, jobs, n)))
    return rc;
  return backend_extras(c, trainjob, rt, jsjobs);
}

int gc_gang_compute(const struct gc_value *trainjob, const struct gc_catalog *runtimes,
                    const struct gc_options *opts, struct gc_gang **out, struct gc_diags *diags) {
  static const struct gc_options defaults = {.scope = GC_SCOPE_WAVE};
  const char *kind = NULL;
  *out = NULL;
  if (!opts)
    opts = &defaults;
  if (!trainjob || !gc_catalog_trainer_kind(trainjob, &kind) || strcmp(kind, "TrainJob")) {
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
    gc_diags_addf(diags, "%s: %s", c.tj ? c.tj : "TrainJob", gc_diag_strerror(GC_ENOMEM));
  } else if (c.errors) {
    if (rc == GC_OK)
      rc = GC_EINVAL;
  } else if (rc != GC_OK) {
    gc_diags_addf(diags, "%s: %s", c.tj ? c.tj : "TrainJob", gc_diag_strerror(rc));
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
