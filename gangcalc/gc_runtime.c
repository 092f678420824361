/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_runtime: runtime structure and the backend and policy choice (see
 * gc_runtime.h).
 */
#include "gc_runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_trainjob.h"
#include "gc_waves.h"

void gc_runtime_check_ml(struct ctx *c, struct rt_info *r, struct tj_info *t) {
  const struct gc_value *ml = gc_gang_get_map(c, c->rt, GET(r->spec, "mlPolicy"), "spec.mlPolicy",
                                              NULL);
  if (!ml)
    return;
  r->ml = ml;
  r->has_ml = 1;
  int64_t n;
  if (gc_gang_get_int(c, c->rt, GET(ml, "numNodes"), "spec.mlPolicy.numNodes", 0, INT32_MAXV, &n) ==
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
    if (gc_is_null(k))
      continue;
    kinds++;
    gc_gang_get_map(c, c->rt, k, KPATHS[i], NULL);
  }
  if (kinds > 1)
    gc_gang_fail(c, c->rt, "spec.mlPolicy: Only one of the policy can be configured");

  const struct gc_value *torch = GET(ml, "torch");
  if (torch && torch->type == GC_MAP) {
    const struct gc_value *np = GET(torch, "numProcPerNode");
    if (!gc_is_null(np)) {
      t->v21 = 1;
      gc_trainjob_check_num_proc(c, c->rt, np, "spec.mlPolicy.torch.numProcPerNode");
    }
    const struct gc_value *ep = GET(torch, "elasticPolicy");
    if (!gc_is_null(ep)) {
      t->v21 = 1;
      gc_gang_get_map(c, c->rt, ep, "spec.mlPolicy.torch.elasticPolicy", NULL);
      if (r->has_ml_numnodes || !gc_is_null(GET(ml, "numNodes")))
        gc_gang_fail(c, c->rt,
                     "spec.mlPolicy: numNodes should not be set if torch.elasticPolicy is "
                     "configured");
      else
        WARN(c, GC_WARN_OTHER,
             "%s: spec.mlPolicy.torch.elasticPolicy is ignored: Trainer never implemented elastic "
             "training, so the gang uses the fixed numNodes",
             c->rt);
    }
  }
  const struct gc_value *mpi = GET(ml, "mpi");
  if (mpi && mpi->type == GC_MAP) {
    r->mpi = 1;
    int b = 0;
    if (gc_gang_get_bool(c, c->rt, GET(mpi, "runLauncherAsNode"),
                         "spec.mlPolicy.mpi.runLauncherAsNode", &b) == 1)
      r->rlan = b;
    const struct gc_value *np = GET(mpi, "numProcPerNode");
    if (np && np->type == GC_INT && np->u.i < 1)
      gc_gang_fail(c, c->rt,
                   "spec.mlPolicy.mpi.numProcPerNode: NumProcPerNode in mpiPolicy must be >= 1");
    else
      gc_gang_get_int(c, c->rt, np, "spec.mlPolicy.mpi.numProcPerNode", 1, INT32_MAXV, &n);
    const char *impl = NULL;
    if (gc_gang_get_str(c, c->rt, GET(mpi, "mpiImplementation"),
                        "spec.mlPolicy.mpi.mpiImplementation", &impl) == 1 &&
        *impl && strcmp(impl, "OpenMPI"))
      gc_gang_fail(c, c->rt,
                   "spec.mlPolicy.mpi.mpiImplementation: Unsupported value: \"%.*s\": "
                   "supported values: \"OpenMPI\", \"\"",
                   NAME_SHOW_MAX, impl);
  } else if (mpi && mpi->type == GC_NULL) {
    r->mpi = 0;
  }
  const struct gc_value *flux = GET(ml, "flux");
  if (flux && flux->type == GC_MAP) {
    const struct gc_value *np = GET(flux, "numProcPerNode");
    if (np && np->type == GC_INT && np->u.i < 1)
      gc_gang_fail(c, c->rt,
                   "spec.mlPolicy.flux.numProcPerNode: NumProcPerNode in fluxPolicy must be >= 1");
  }
}

/* Checks the runtime's replicatedJobs list shape: a non-empty array of
 * objects with unique, non-empty string names.  Returns 0 when usable,
 * GC_EINVAL when a problem was reported. */
int gc_runtime_check_jobs(struct ctx *c, struct rt_info *r) {
  size_t before = c->errors;
  const struct gc_value *tpl = GET(r->spec, "template");
  if (gc_is_null(tpl)) {
    gc_gang_fail(c, c->rt, "spec.template: required");
    return GC_EINVAL;
  }
  if (!gc_gang_get_map(c, c->rt, tpl, "spec.template", NULL))
    return GC_EINVAL;
  const struct gc_value *meta = gc_gang_get_map(c, c->rt, GET(tpl, "metadata"),
                                                "spec.template.metadata", NULL);
  gc_gang_check_string_map(c, c->rt, GET(meta, "labels"), "spec.template.metadata.labels");
  gc_gang_check_string_map(c, c->rt, GET(meta, "annotations"),
                           "spec.template.metadata.annotations");
  const struct gc_value *ts = GET(tpl, "spec");
  if (gc_is_null(ts)) {
    gc_gang_fail(c, c->rt, "spec.template.spec: required");
    return GC_EINVAL;
  }
  if (!gc_gang_get_map(c, c->rt, ts, "spec.template.spec", NULL))
    return GC_EINVAL;
  const struct gc_value *jobs = GET(ts, "replicatedJobs");
  if (gc_is_null(jobs) || (jobs->type == GC_SEQ && jobs->len == 0)) {
    gc_gang_fail(c, c->rt,
                 "spec.template.spec.replicatedJobs: required (at least one replicated job)");
    return GC_EINVAL;
  }
  if (!gc_gang_get_seq(c, c->rt, jobs, "spec.template.spec.replicatedJobs", NULL))
    return GC_EINVAL;
  if (jobs->len > GC_WAVES_MAX_JOBS) {
    gc_gang_fail(c, c->rt, "spec.template.spec.replicatedJobs: must have at most %d items",
                 GC_WAVES_MAX_JOBS);
    return GC_EINVAL;
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
    char *path = gc_gang_fmt(c, "spec.template.spec.replicatedJobs[%zu]", i);
    if (!gc_gang_get_map(c, c->rt, j, path, NULL))
      continue;
    const char *name = NULL;
    int rn = gc_gang_get_str(c, c->rt, GET(j, "name"), gc_gang_fmt(c, "%s.name", path), &name);
    if (rn == 0 || (rn == 1 && !*name)) {
      gc_gang_fail(c, c->rt, "%s.name: required", path);
      continue;
    }
    if (rn < 0)
      continue;
    if (!gc_name_is_dns1035(name, strlen(name)))
      gc_gang_fail(c, c->rt,
                   "%s.name: \"%.*s\" must be an RFC 1035 label (lowercase letters, digits "
                   "and '-', starting with a letter, at most 63 characters)",
                   path, NAME_SHOW_MAX, name);
    for (size_t k = 0; k < i; k++) {
      const char *other = gc_value_as_str(GET(jobs->u.items[k], "name"));
      if (other && !strcmp(other, name)) {
        gc_gang_fail(c, c->rt, "%s.name: duplicate replicated job name \"%.*s\"", path,
                     NAME_SHOW_MAX, name);
        break;
      }
    }
  }
  if (c->errors != before)
    return GC_EINVAL;
  r->jobs = jobs;
  return 0;
}

/* The table indices of the backends Trainer has a runtime policy for, in the
 * order of their policy keys (so diagnostics keep one order); returns how
 * many. */
static size_t policy_order(size_t idx[GC_BACKEND_MAX]) {
  size_t n = 0;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const char *k = gc_backend_at(i)->runtime_policy;
    if (!k)
      continue;
    size_t j = n++;
    for (; j > 0 && strcmp(gc_backend_at(idx[j - 1])->runtime_policy, k) > 0; j--)
      idx[j] = idx[j - 1];
    idx[j] = i;
  }
  return n;
}

void gc_runtime_check_policy(struct ctx *c, struct rt_info *r) {
  const struct gc_value *p = gc_gang_get_map(c, c->rt, GET(r->spec, "podGroupPolicy"),
                                             "spec.podGroupPolicy", NULL);
  if (!p)
    return;
  size_t idx[GC_BACKEND_MAX], n = policy_order(idx);
  for (size_t k = 0; k < n; k++) {
    const char *key = gc_backend_at(idx[k])->runtime_policy;
    const struct gc_value *v = gc_map_get(p, key);
    if (v)
      r->policy[idx[k]] = gc_gang_get_map(c, c->rt, v,
                                          gc_gang_fmt(c, "spec.podGroupPolicy.%s", key), NULL);
  }
}

/* "a and b" (with "both" before two) of the policies present, in key order. */
static const char *policy_list(struct ctx *c, const struct rt_info *r, size_t present) {
  size_t idx[GC_BACKEND_MAX], n = policy_order(idx), seen = 0;
  const char *list = present == 2 ? "both" : "";
  for (size_t k = 0; k < n; k++) {
    if (!r->policy[idx[k]])
      continue;
    seen++;
    list = gc_gang_fmt(c, "%s%s%s", list,
                       seen == 1         ? (present == 2 ? " " : "")
                       : seen == present ? " and "
                                         : ", ",
                       gc_backend_at(idx[k])->runtime_policy);
  }
  return list;
}

/* The API version of a backend with several: the caller's when it is one
 * of the chosen backend's, else the newest. */
static void backend_version(struct ctx *c) {
  struct gc_gang *g = c->g;
  const struct gc_backend *b = g->backend;
  const struct gc_backend_version *v = c->opts->backend_version;
  if (!b->n_versions)
    return;
  if (v && v >= b->versions && v < b->versions + b->n_versions) {
    g->backend_version = v;
    g->backend_version_why = c->opts->backend_version_why ? c->opts->backend_version_why
                                                          : "chosen by the caller";
    return;
  }
  g->backend_version = &b->versions[0];
  g->backend_version_why = "the newest version gangbridge writes";
}

/* The backend: the caller's, else the runtime policy's, else the default. */
static void choose_backend(struct ctx *c, const struct rt_info *r) {
  struct gc_gang *g = c->g;
  const struct gc_backend *rt_backend = NULL;
  size_t present = 0;
  for (size_t i = 0; i < gc_backend_count(); i++)
    if (r->policy[i] && present++ == 0)
      rt_backend = gc_backend_at(i);
  if (present > 1)
    WARN(c, GC_WARN_POLICY_BOTH,
         "%s: spec.podGroupPolicy sets %s (the API allows only one; "
         "Trainer would create both PodGroups); using %s",
         c->rt, policy_list(c, r, present),
         gc_backend_name(c->opts->backend ? c->opts->backend : rt_backend));
  g->backend_from_runtime = rt_backend != NULL;
  if (c->opts->backend) {
    g->backend = c->opts->backend;
    if (rt_backend && rt_backend != g->backend && present < 2)
      WARN(c, GC_WARN_OTHER,
           "%s: the runtime's podGroupPolicy names %s, but %s was requested; "
           "rendering a %s %s",
           c->rt, rt_backend->name, g->backend->name, g->backend->name, g->backend->kind);
  } else if (rt_backend) {
    g->backend = rt_backend;
  } else if (c->opts->default_backend) {
    g->backend = c->opts->default_backend;
  } else {
    g->backend = gc_backend_default();
  }
  backend_version(c);
}

/* The runtime's timeout field (whole seconds) of backend b's policy: one
 * timeout source among several (gc_policy); 0 means "the default" in the
 * API, so the next source applies. */
static void policy_timeout(struct ctx *c, struct rt_info *r, const struct gc_backend *b,
                           const struct gc_value *pol) {
  const char *path = gc_gang_fmt(c, "spec.podGroupPolicy.%s.%s", b->runtime_policy,
                                 b->runtime_timeout);
  int64_t t = 0;
  int rc = gc_gang_get_int(c, c->rt, gc_map_get(pol, b->runtime_timeout), path, 0,
                           GC_TIMEOUT_MAX_SECONDS, &t);
  if (rc == 1 && t == 0 && c->g->backend == b)
    WARN(c, GC_WARN_OTHER,
         "%s: %s is 0, which the API documents as \"use the default\"; "
         "the next policy source applies (Trainer would pass 0 through)",
         c->rt, path);
  r->rt_timeout_set = rc == 1 && t > 0;
  r->rt_timeout = t;
  r->rt_timeout_path = path;
}

static void policy_topology(struct ctx *c, struct rt_info *r, const struct gc_backend *b,
                            const struct gc_value *pol);

void gc_runtime_resolve_policy(struct ctx *c, struct rt_info *r) {
  choose_backend(c, r);
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    if (r->policy[i] && b->runtime_timeout)
      policy_timeout(c, r, b, r->policy[i]);
  }
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    if (r->policy[i] && b->runtime_topology)
      policy_topology(c, r, b, r->policy[i]);
  }
}

/* The network topology field of backend b's policy: the gang's topology
 * policy from the runtime, carried in b's group object when b is the
 * gang's backend (and ignored with a warning otherwise). */
static void policy_topology(struct ctx *c, struct rt_info *r, const struct gc_backend *b,
                            const struct gc_value *pol) {
  struct gc_gang *g = c->g;
  const char *np = gc_gang_fmt(c, "spec.podGroupPolicy.%s.%s", b->runtime_policy,
                               b->runtime_topology);
  const struct gc_value *nt = gc_gang_get_map(c, c->rt, gc_map_get(pol, b->runtime_topology), np,
                                              NULL);
  if (nt) {
    struct gc_topology_policy tp;
    memset(&tp, 0, sizeof(tp));
    tp.set = 1;
    tp.mode = "hard";
    const char *mode = NULL;
    if (gc_gang_get_str(c, c->rt, GET(nt, "mode"), gc_gang_fmt(c, "%s.mode", np), &mode) == 1) {
      if (strcmp(mode, "hard") && strcmp(mode, "soft"))
        gc_gang_fail(c, c->rt,
                     "%s.mode: Unsupported value: \"%.*s\": supported values: \"hard\", "
                     "\"soft\"",
                     np, NAME_SHOW_MAX, mode);
      else
        tp.mode = !strcmp(mode, "hard") ? "hard" : "soft"; /* literals outlive the gang */
    }
    int64_t tier = 0;
    int ra = gc_gang_get_int(c, c->rt, GET(nt, "highestTierAllowed"),
                             gc_gang_fmt(c, "%s.highestTierAllowed", np), 0, INT32_MAXV, &tier);
    const char *tname = NULL;
    int rn = gc_gang_get_str(c, c->rt, GET(nt, "highestTierName"),
                             gc_gang_fmt(c, "%s.highestTierName", np), &tname);
    if (rn == 1 && (!*tname || strlen(tname) > 253)) {
      gc_gang_fail(c, c->rt,
                   "%s.highestTierName: must be a non-empty string of at most 253 characters", np);
      rn = -1;
    }
    if (ra == 1 && rn == 1) {
      gc_gang_fail(c, c->rt,
                   "%s: must not specify 'highestTierAllowed' and 'highestTierName' in "
                   "%s simultaneously.",
                   np, b->runtime_topology);
    } else if (rn == 1) {
      if (!(tp.highest_tier_name = gc_arena_strdup(c->a, tname)))
        c->oom = 1;
    } else {
      tp.has_highest_tier = 1;
      tp.highest_tier = ra == 1 ? tier : 1;
    }
    tp.in_podgroup = 1;
    if (g->backend == b) {
      r->nt = tp;
      r->nt_path = np;
    } else {
      WARN(c, GC_WARN_OTHER, "%s: %s is ignored: the %s %s has no network topology", c->rt, np,
           g->backend->name, g->backend->kind);
    }
  }
}
