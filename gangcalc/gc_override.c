/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_override: overrides and runtime patches merged into the effective job
 * list (see gc_override.h).
 */
#include "gc_override.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_merge.h"

static const char *const PATCH_POD_FIELDS[] = {"serviceAccountName",
                                               "volumes",
                                               "initContainers",
                                               "containers",
                                               "imagePullSecrets",
                                               "securityContext",
                                               "terminationGracePeriodSeconds",
                                               "nodeSelector",
                                               "affinity",
                                               "tolerations",
                                               "schedulingGates",
                                               NULL};
static const char *const V21_POD_FIELDS[] = {
    "serviceAccountName", "nodeSelector", "affinity",        "tolerations",      "volumes",
    "initContainers",     "containers",   "schedulingGates", "imagePullSecrets", NULL};
static const char *const V20_POD_FIELDS[] = {
    "serviceAccountName", "nodeSelector", "tolerations",     "volumes",
    "initContainers",     "containers",   "schedulingGates", NULL};
static const char *const PATCH_CONTAINER_FIELDS[] = {"name", "env", "volumeMounts",
                                                     "securityContext", NULL};
static const char *const OVERRIDE_CONTAINER_FIELDS[] = {
    "name", "env", "volumeMounts", "command", "args", "envFrom", NULL};

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
struct gc_value *gc_override_cow_map(struct ctx *c, const struct gc_value *m) {
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
struct gc_value *gc_override_cow_seq(struct ctx *c, const struct gc_value *s) {
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
  struct gc_value *root = gc_override_cow_map(c, jsjobs->u.items[idx]);
  struct gc_value *cur = root;
  for (size_t k = 0; cur && k + 1 < n; k++) {
    struct gc_value *next = gc_override_cow_map(c, gc_map_get(cur, keys[k]));
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

/* Builds the filtered copy of a pod spec patch/override: only `allowed` pod
 * fields and, inside containers, only `cfields`.  Dropped fields are warned
 * about (a cluster's API server prunes them).  Containers the runtime pod
 * spec `rps` lacks are an error when strict (runtime patches, webhook rule)
 * and ignored with a warning otherwise (v2.0/v2.1 overrides). */
static struct gc_value *filter_podspec(struct ctx *c, const struct gc_value *spec,
                                       const struct gc_value *rps, const char *const *allowed,
                                       const char *const *cfields, int strict, struct lpath *path,
                                       const char *job) {
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
      WARN(c, GC_WARN_OTHER,
           "%s.%.*s is not a field this override can set; it is ignored (a "
           "cluster drops it)",
           gc_gang_lpath(c, path), NAME_SHOW_MAX, m->key);
      continue;
    }
    int is_c = !strcmp(m->key, "containers") || !strcmp(m->key, "initContainers");
    if (is_c && m->value->type != GC_SEQ) {
      if (m->value->type != GC_NULL)
        gc_gang_fail(c, c->tj, "%s.%s: must be an array", gc_gang_lpath(c, path), m->key);
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
#define CP gc_gang_fmt(c, "%s.%s[%zu]", gc_gang_lpath(c, path), m->key, k)
      if (!ct || ct->type != GC_MAP || !cn || !*cn) {
        gc_gang_fail(c, c->tj, "%s.name: required", CP);
        continue;
      }
      if (!has_container(rps, m->key, cn)) {
        if (strict)
          gc_gang_fail(c, c->tj,
                       "%s.name: container \"%.*s\" not found in replicated job \"%s\" of the "
                       "runtime",
                       CP, NAME_SHOW_MAX, cn, job);
        else
          WARN(c, GC_WARN_OTHER,
               "%s: container \"%.*s\" not found in replicated job \"%s\" of "
               "the runtime; the override is ignored",
               CP, NAME_SHOW_MAX, cn, job);
        continue;
      }
      if (strict && !gc_is_null(GET(ct, "env")) &&
          (!strcmp(cn, "node") || !strcmp(cn, "dataset-initializer") ||
           !strcmp(cn, "model-initializer")))
        gc_gang_fail(c, c->tj,
                     "%s.env: must not be set for the \"%s\" container (use spec.trainer.env "
                     "or spec.initializer)",
                     CP, cn);
      struct gc_value *fc = gc_value_map(c->a);
      if (!fc) {
        c->oom = 1;
        return NULL;
      }
      for (size_t f = 0; f < ct->len; f++) {
        const struct gc_member *cm = &ct->u.members[f];
        if (!in_list(cfields, cm->key)) {
          WARN(c, GC_WARN_OTHER,
               "%s.%.*s is not a field this override can set; it is ignored "
               "(a cluster drops it%s)",
               CP, NAME_SHOW_MAX, cm->key,
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
  gc_gang_fail(c, c->tj,
               "%s: the merged pod spec is too large or nested too deeply (at most %d items in "
               "a merged list and %d levels)",
               path, GC_MERGE_MAX_LIST, GC_MERGE_MAX_DEPTH);
}

/* v2.0 podSpecOverrides and v2.1 podTemplateOverrides. */
void gc_override_apply(struct ctx *c, const struct gc_value *spec, struct gc_value *jsjobs,
                       const struct gc_value *rjobs, int v20) {
  const char *field = v20 ? "podSpecOverrides" : "podTemplateOverrides";
  const struct gc_value *list = gc_gang_get_seq(
      c, c->tj, gc_map_get(spec, field),
      v20 ? "spec.podSpecOverrides" : "spec.podTemplateOverrides", NULL);
  for (size_t i = 0; list && i < list->len; i++) {
    const struct gc_value *o = list->u.items[i];
    char *path = gc_gang_fmt(c, "spec.%s[%zu]", field, i);
    if (!gc_gang_get_map(c, c->tj, o, path, NULL))
      continue;
    const struct gc_value *targets = gc_gang_get_seq(c, c->tj, GET(o, "targetJobs"),
                                                     gc_gang_fmt(c, "%s.targetJobs", path), NULL);
    if (!targets || targets->len == 0) {
      if (!targets)
        gc_gang_fail(c, c->tj, "%s.targetJobs: required", path);
      continue;
    }
    const struct gc_value *ospec = o;
    struct lpath spath = {v20 ? "spec.%s[%zu]" : "spec.%s[%zu].spec", field, i, 0, NULL};
    if (!v20) {
      gc_gang_get_map(c, c->tj, GET(o, "metadata"), gc_gang_fmt(c, "%s.metadata", path), NULL);
      ospec = gc_gang_get_map(c, c->tj, GET(o, "spec"), gc_gang_fmt(c, "%s.spec", path), NULL);
      if (!ospec)
        continue;
    }
    for (size_t k = 0; k < targets->len; k++) {
      const char *jn = gc_value_as_str(GET(targets->u.items[k], "name"));
      if (!jn || !*jn) {
        gc_gang_fail(c, c->tj, "%s.targetJobs[%zu].name: required", path, k);
        continue;
      }
      const struct gc_value *rj = job_by_name(rjobs, jn, NULL);
      if (!rj) {
        WARN(c, GC_WARN_OTHER,
             "%s.targetJobs[%zu]: replicated job \"%.*s\" not found in the "
             "runtime; the override is ignored",
             path, k, NAME_SHOW_MAX, jn);
        continue;
      }
      const struct gc_value *rps = gc_value_path(rj, "template.spec.template.spec");
      struct gc_value *f = filter_podspec(c, ospec, rps, v20 ? V20_POD_FIELDS : V21_POD_FIELDS,
                                          OVERRIDE_CONTAINER_FIELDS, 0, &spath, jn);
      if (f && merge_into_job(c, jsjobs, jn, f) == GC_ELIMIT) {
        /* Every other target would hit the same bound: one message. */
        merge_too_large(c, v20 ? path : gc_gang_fmt(c, "%s.spec", path));
        break;
      }
    }
  }
}

/* v2.2+ runtimePatches: template.spec strategically merged in list order,
 * restricted to the fields a ReplicatedJobPatch/PodSpecPatch has. */
void gc_override_patches(struct ctx *c, const struct gc_value *spec, struct gc_value *jsjobs,
                         const struct gc_value *rjobs) {
  const struct gc_value *list = GET(spec, "runtimePatches");
  if (!list || list->type != GC_SEQ)
    return;
  for (size_t i = 0; i < list->len && i < 1000; i++) {
    const struct gc_value *rjs = gc_value_path(list->u.items[i],
                                               "trainingRuntimeSpec.template.spec.replicatedJobs");
    if (!rjs || rjs->type != GC_SEQ)
      continue;
    for (size_t j = 0; j < rjs->len; j++) {
      const struct gc_value *pj = rjs->u.items[j];
      const char *jn = gc_value_as_str(GET(pj, "name"));
      /* Paths are formatted only for a message. */
      struct lpath jp = {"spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec."
                         "replicatedJobs[%zu]",
                         NULL, i, j, NULL};
      if (!jn || !*jn || pj->type != GC_MAP)
        continue; /* reported by gc_trainjob_check */
      const struct gc_value *rj = job_by_name(rjobs, jn, NULL);
      if (!rj) {
        gc_gang_fail(c, c->tj, "%s.name: replicated job \"%.*s\" not found in the runtime",
                     gc_gang_lpath(c, &jp), NAME_SHOW_MAX, jn);
        continue;
      }
      for (size_t f = 0; f < pj->len; f++)
        if (strcmp(pj->u.members[f].key, "name") && strcmp(pj->u.members[f].key, "template"))
          WARN(c, GC_WARN_OTHER,
               "%s.%.*s is not a field a runtime patch can set; it is "
               "ignored (a cluster drops it)",
               gc_gang_lpath(c, &jp), NAME_SHOW_MAX, pj->u.members[f].key);
      const struct gc_value *tmeta = gc_value_path(pj, "template.metadata");
      size_t jidx = 0;
      if (tmeta && tmeta->type == GC_MAP && job_by_name(jsjobs, jn, &jidx)) {
        static const char *const TPATH[] = {"template", "metadata"};
        struct gc_value *merged = NULL;
        int mrc = gc_merge_strategic(c->a,
                                     gc_value_path(jsjobs->u.items[jidx], "template.metadata"),
                                     tmeta, "metadata", &merged);
        if (mrc == GC_ELIMIT)
          gc_gang_fail(c, c->tj, "%s.template.metadata: too large or nested too deeply",
                       gc_gang_lpath(c, &jp));
        else if (mrc || !merged)
          c->oom = 1;
        else
          job_set(c, jsjobs, jidx, TPATH, 2, merged);
      }
      const struct gc_value *pmeta = gc_value_path(pj, "template.spec.template.metadata");
      if (pmeta && pmeta->type == GC_MAP && job_by_name(jsjobs, jn, &jidx)) {
        static const char *const PPATH[] = {"template", "spec", "template", "metadata"};
        struct gc_value *merged = NULL;
        int mrc = gc_merge_strategic(
            c->a, gc_value_path(jsjobs->u.items[jidx], "template.spec.template.metadata"), pmeta,
            "metadata", &merged);
        if (mrc == GC_ELIMIT)
          gc_gang_fail(c, c->tj,
                       "%s.template.spec.template.metadata: too large or nested too deeply",
                       gc_gang_lpath(c, &jp));
        else if (mrc || !merged)
          c->oom = 1;
        else
          job_set(c, jsjobs, jidx, PPATH, 4, merged);
      }
      const struct gc_value *pspec = gc_value_path(pj, "template.spec.template.spec");
      if (gc_is_null(pspec))
        continue;
      struct lpath sp = {"spec.runtimePatches[%zu].trainingRuntimeSpec.template.spec."
                         "replicatedJobs[%zu].template.spec.template.spec",
                         NULL, i, j, NULL};
      if (pspec->type != GC_MAP) {
        gc_gang_fail(c, c->tj, "%s: must be an object", gc_gang_lpath(c, &sp));
        continue;
      }
      const struct gc_value *rps = gc_value_path(rj, "template.spec.template.spec");
      struct gc_value *f = filter_podspec(c, pspec, rps, PATCH_POD_FIELDS, PATCH_CONTAINER_FIELDS,
                                          1, &sp, jn);
      if (f && merge_into_job(c, jsjobs, jn, f) == GC_ELIMIT)
        merge_too_large(c, gc_gang_lpath(c, &sp));
    }
  }
}
