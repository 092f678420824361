/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_jobs: the replicated jobs of the effective JobSet spec (see gc_jobs.h).
 */
#include "gc_jobs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_merge.h"
#include "gc_override.h"
#include "gc_waves.h"

/* An optional int in [0, INT32_MAX]: 1 if absent or valid (stored). */
static int quiet_int(const struct gc_value *v, int64_t *out, int *has) {
  int64_t n;
  if (gc_is_null(v))
    return 1;
  if (!gc_gang_int_value(v, &n) || n < 0 || n > INT32_MAXV)
    return 0;
  *out = n;
  if (has)
    *has = 1;
  return 1;
}

static int quiet_opt_map(const struct gc_value *v) { return gc_is_null(v) || v->type == GC_MAP; }

static int quiet_opt_str(const struct gc_value *v, const char **out) {
  if (gc_is_null(v))
    return 1;
  if (v->type != GC_STR)
    return 0;
  *out = v->u.s;
  return 1;
}

/* Reads one replicated job without building any path: returns 1 when every
 * field has the right shape (the usual case), 0 when gc_jobs_read must look
 * again and report.  Validation rules are those of gc_jobs_read. */
static int read_job_quiet(struct ctx *c, struct gc_value *node, struct job *j) {
  memset(j, 0, sizeof(*j));
  j->node = node;
  j->name = gc_value_as_str(GET(node, "name"));
  j->replicas = 1;
  const struct gc_value *tpl = GET(node, "template");
  if (!quiet_int(GET(node, "replicas"), &j->replicas, NULL) || !tpl || tpl->type != GC_MAP)
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
  const struct gc_value *plabel = gc_map_get(GET(GET(pt, "metadata"), "labels"), GC_ANCESTOR_LABEL);
  if (!j->ancestor && plabel && plabel->type == GC_STR)
    return 0; /* gc_jobs_read words the warning */
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
  if (gc_is_null(deps) || (deps->type == GC_SEQ && deps->len == 0))
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

int gc_jobs_read(struct ctx *c, const struct gc_value *jsjobs, struct job *jobs) {
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
    char *p = gc_gang_fmt(c, "spec.template.spec.replicatedJobs[%zu]", i);
    size_t before = c->errors;
    j->node = node;
    j->name = gc_value_as_str(GET(node, "name"));
    j->replicas = 1;
    gc_gang_get_int(c, c->rt, GET(node, "replicas"), gc_gang_fmt(c, "%s.replicas", p), 0,
                    INT32_MAXV, &j->replicas);
    const struct gc_value *tpl = GET(node, "template");
    if (gc_is_null(tpl)) {
      gc_gang_fail(c, c->rt, "%s.template: required", p);
      ok = 0;
      continue;
    }
    if (!gc_gang_get_map(c, c->rt, tpl, gc_gang_fmt(c, "%s.template", p), NULL)) {
      ok = 0;
      continue;
    }
    const struct gc_value *meta = gc_gang_get_map(c, c->rt, GET(tpl, "metadata"),
                                                  gc_gang_fmt(c, "%s.template.metadata", p), NULL);
    const struct gc_value *labels = GET(meta, "labels");
    gc_gang_check_string_map(c, c->rt, labels, gc_gang_fmt(c, "%s.template.metadata.labels", p));
    j->ancestor = gc_value_as_str(GET(labels, GC_ANCESTOR_LABEL));
    const struct gc_value *jspec = gc_gang_get_map(c, c->rt, GET(tpl, "spec"),
                                                   gc_gang_fmt(c, "%s.template.spec", p), NULL);
    if (gc_gang_get_int(c, c->rt, GET(jspec, "parallelism"),
                        gc_gang_fmt(c, "%s.template.spec.parallelism", p), 0, INT32_MAXV,
                        &j->parallelism) == 1)
      j->has_parallelism = 1;
    const struct gc_value *pt = gc_gang_get_map(
        c, c->rt, GET(jspec, "template"), gc_gang_fmt(c, "%s.template.spec.template", p), NULL);
    const struct gc_value *pmeta = GET(pt, "metadata");
    const struct gc_value *plabel = GET(GET(pmeta, "labels"), GC_ANCESTOR_LABEL);
    if (!j->ancestor && plabel && plabel->type == GC_STR)
      WARN(c, GC_WARN_OTHER,
           "%s: replicated job \"%s\" has the %s label on its pod template "
           "(template.spec.template.metadata.labels), where Trainer does not look; it must be "
           "on the Job template (template.metadata.labels), so Trainer and gangbridge treat "
           "this job as a plain job and spec.trainer.numNodes does not apply to it",
           c->rt, j->name, GC_ANCESTOR_LABEL);
    const char *pspath = gc_gang_fmt(c, "%s.template.spec.template.spec", p);
    const struct gc_value *ps = GET(pt, "spec");
    if (gc_is_null(ps)) {
      gc_gang_fail(c, c->rt, "%s: required", pspath);
    } else if (gc_gang_get_map(c, c->rt, ps, pspath, NULL)) {
      j->podspec = (struct gc_value *)ps;
      const struct gc_value *cs = GET(ps, "containers");
      if (gc_is_null(cs) || (cs->type == GC_SEQ && cs->len == 0))
        gc_gang_fail(c, c->rt, "%s.containers: required (at least one container)", pspath);
      gc_gang_get_str(c, c->rt, GET(ps, "priorityClassName"),
                      gc_gang_fmt(c, "%s.priorityClassName", pspath), &j->priority_class);
      gc_gang_get_str(c, c->rt, GET(ps, "schedulerName"),
                      gc_gang_fmt(c, "%s.schedulerName", pspath), &j->scheduler_name);
      if (j->priority_class && !*j->priority_class)
        j->priority_class = NULL;
      if (j->scheduler_name && !*j->scheduler_name)
        j->scheduler_name = NULL;
    }
    const struct gc_value *deps = gc_gang_get_seq(c, c->rt, GET(node, "dependsOn"),
                                                  gc_gang_fmt(c, "%s.dependsOn", p), NULL);
    if (deps && deps->len > GC_WAVES_MAX_JOBS) {
      gc_gang_fail(c, c->rt, "%s.dependsOn: must have at most %d items", p, GC_WAVES_MAX_JOBS);
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
        char *dp = gc_gang_fmt(c, "%s.dependsOn[%zu]", p, k);
        const char *dn = NULL, *st = NULL;
        if (!gc_gang_get_map(c, c->rt, d, dp, NULL))
          continue;
        int rn = gc_gang_get_str(c, c->rt, GET(d, "name"), gc_gang_fmt(c, "%s.name", dp), &dn);
        if (rn == 0 || (rn == 1 && !*dn))
          gc_gang_fail(c, c->rt, "%s.name: required", dp);
        int rs = gc_gang_get_str(c, c->rt, GET(d, "status"), gc_gang_fmt(c, "%s.status", dp), &st);
        if (rs == 0)
          gc_gang_fail(c, c->rt, "%s.status: required", dp);
        else if (rs == 1 && strcmp(st, "Ready") && strcmp(st, "Complete"))
          gc_gang_fail(c, c->rt,
                       "%s.status: Unsupported value: \"%.*s\": supported values: \"Ready\", "
                       "\"Complete\"",
                       dp, NAME_SHOW_MAX, st);
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
void gc_jobs_merge_rpn(struct ctx *c, struct job *j, const struct gc_value *rpn) {
  struct gc_value *ps = NULL;
  /* With no patch this copies nothing; it checks the nesting limit. */
  int crc = gc_merge_strategic(c->a, j->podspec, NULL, NULL, &ps);
  if (crc == GC_ELIMIT) {
    gc_gang_fail(c, c->rt, "replicated job \"%s\": pod spec nested too deeply", j->name);
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
    WARN(c, GC_WARN_OTHER,
         "spec.trainer.resourcesPerNode is not applied to replicated job "
         "\"%s\": it has no container named \"node\"",
         j->name);
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
    if (!gc_is_null(v) && gc_map_set(c->a, patch, KEYS[k], v))
      c->oom = 1;
  }
  struct gc_value *merged = NULL;
  int rc = gc_merge_strategic(c->a, GET(target, "resources"), patch, "resources", &merged);
  if (rc == GC_ELIMIT) {
    gc_gang_fail(c, c->tj, "spec.trainer.resourcesPerNode: too large to merge");
    return;
  }
  struct gc_value *nt = rc || !merged ? NULL : gc_override_cow_map(c, target);
  struct gc_value *ncs = nt ? gc_override_cow_seq(c, cs) : NULL;
  struct gc_value *nps = ncs ? gc_override_cow_map(c, ps) : NULL;
  if (!nps || gc_map_set(c->a, nt, "resources", merged) ||
      gc_map_set(c->a, nps, "containers", ncs)) {
    c->oom = 1;
    return;
  }
  ncs->u.items[ti] = nt;
  j->podspec = nps;
}
