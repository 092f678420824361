/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_waves: dependsOn waves and gang choice (see gc_waves.h).
 */
#include "gc_waves.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { UNSEEN = 0, ACTIVE, DONE };

struct walk {
  const struct gc_wave_job *jobs;
  size_t n;
  const char *prefix;
  int *waves;
  int *state;
  size_t *stack; /* jobs on the current DFS path, for cycle messages */
  size_t depth;
  struct gc_diags *diags;
  int bad;
};

static long find_job(const struct walk *w, const char *name) {
  for (size_t i = 0; i < w->n; i++)
    if (w->jobs[i].name && strcmp(w->jobs[i].name, name) == 0)
      return (long)i;
  return -1;
}

/* Reports the cycle that closes when job `from` depends on job `to`. */
static void report_cycle(struct walk *w, size_t from, size_t dep, size_t to) {
  char buf[1024];
  size_t used = 0;
  size_t start = 0;
  for (size_t k = 0; k < w->depth; k++)
    if (w->stack[k] == to)
      start = k;
  buf[0] = '\0';
  for (size_t k = start; k <= w->depth && used < sizeof(buf); k++) {
    const char *name = k < w->depth ? w->jobs[w->stack[k]].name : w->jobs[to].name;
    int len = snprintf(buf + used, sizeof(buf) - used, "%s%s", k > start ? " -> " : "", name);
    if (len < 0)
      break;
    used += (size_t)len;
  }
  if (used >= sizeof(buf))
    memcpy(buf + sizeof(buf) - 4, "...", 4);
  gc_diags_addf(w->diags, "%s: spec.template.spec.replicatedJobs[%zu].dependsOn[%zu].name: "
                "dependency cycle: %s", w->prefix, from, dep, buf);
  w->bad = 1;
}

/* Depth-first walk; depth is bounded by the number of jobs. */
static int visit(struct walk *w, size_t i) {
  if (w->state[i] == DONE)
    return w->waves[i];
  w->state[i] = ACTIVE;
  w->stack[w->depth++] = i;
  int wave = 0;
  for (size_t j = 0; j < w->jobs[i].n_deps; j++) {
    const char *dn = w->jobs[i].deps[j];
    long t = dn ? find_job(w, dn) : -1;
    if (t < 0) {
      gc_diags_addf(w->diags, "%s: spec.template.spec.replicatedJobs[%zu].dependsOn[%zu].name: "
                    "unknown replicated job \"%s\"", w->prefix, i, j, dn ? dn : "");
      w->bad = 1;
      continue;
    }
    if (w->state[t] == ACTIVE) {
      report_cycle(w, i, j, (size_t)t);
      continue;
    }
    int dw = visit(w, (size_t)t);
    if (dw + 1 > wave)
      wave = dw + 1;
  }
  w->depth--;
  w->state[i] = DONE;
  w->waves[i] = wave;
  return wave;
}

int gc_waves_compute(const struct gc_wave_job *jobs, size_t n, const char *prefix, int *waves,
                     struct gc_diags *diags) {
  if (n > GC_WAVES_MAX_JOBS) {
    gc_diags_addf(diags, "%s: spec.template.spec.replicatedJobs: more than %d jobs", prefix,
                  GC_WAVES_MAX_JOBS);
    return GC_ELIMIT;
  }
  if (n == 0)
    return GC_OK;
  struct walk w = {jobs, n, prefix, waves, calloc(n, sizeof(int)), calloc(n, sizeof(size_t)),
                   0, diags, 0};
  int rc = GC_OK;
  if (!w.state || !w.stack) {
    rc = GC_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    visit(&w, i);
  rc = w.bad ? GC_EINVAL : GC_OK;
out:
  free(w.state);
  free(w.stack);
  return rc;
}

struct name_idx {
  const char *name;
  size_t idx;
};

static int cmp_name(const void *a, const void *b) {
  const struct name_idx *x = a, *y = b;
  return strcmp(x->name, y->name);
}

static long lookup(const struct name_idx *ix, size_t n, const char *name) {
  if (!name)
    return -1;
  struct name_idx key = {name, 0};
  const struct name_idx *hit = bsearch(&key, ix, n, sizeof(*ix), cmp_name);
  return hit ? (long)hit->idx : -1;
}

static int dep_ready(const struct gc_wave_job *j, size_t k) {
  return j->dep_status && j->dep_status[k] && strcmp(j->dep_status[k], "Ready") == 0;
}

/* One job's phase and first flag; its dependencies are already done. */
static int phase_of(const struct gc_wave_job *jobs, const struct name_idx *ix, size_t nix,
                    size_t i, int *phases, int *first) {
  const struct gc_wave_job *j = &jobs[i];
  int ph = 0;
  for (size_t k = 0; k < j->n_deps; k++) {
    long t = lookup(ix, nix, j->deps[k]);
    if (t < 0)
      return GC_EINVAL;
    int p = phases[t] + (dep_ready(j, k) ? 0 : 1);
    if (p > ph)
      ph = p;
  }
  /* Only a Ready dependency can share the phase; waiting for it means JobSet
   * creates this job after the phase started. */
  first[i] = 1;
  for (size_t k = 0; k < j->n_deps; k++)
    if (dep_ready(j, k) && phases[lookup(ix, nix, j->deps[k])] == ph)
      first[i] = 0;
  phases[i] = ph;
  return GC_OK;
}

int gc_waves_phases(const struct gc_wave_job *jobs, size_t n, const int *waves, int *phases,
                    int *first) {
  if (n == 0)
    return GC_OK;
  if (n > GC_WAVES_MAX_JOBS)
    return GC_ELIMIT;
  struct name_idx *ix = calloc(n, sizeof(*ix));
  size_t nix = 0;
  int rc = GC_OK;
  if (!ix)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (jobs[i].name)
      ix[nix++] = (struct name_idx){jobs[i].name, i};
  qsort(ix, nix, sizeof(*ix), cmp_name);
  /* Waves are below n and every dependency is in an earlier wave, so going
   * wave by wave sees each dependency before its dependants. */
  for (int wv = 0; wv < (int)n && rc == GC_OK; wv++)
    for (size_t i = 0; i < n && rc == GC_OK; i++)
      if (waves[i] == wv)
        rc = phase_of(jobs, ix, nix, i, phases, first);
  free(ix);
  return rc;
}

int gc_waves_pick_phase(const int *phases, const int32_t *counts, const int *is_trainer,
                        size_t n) {
  int any_trainer = 0, max_phase = -1;
  for (size_t i = 0; i < n; i++) {
    any_trainer |= is_trainer && is_trainer[i];
    if (phases[i] > max_phase)
      max_phase = phases[i];
  }
  int best = -1;
  int64_t best_pods = -1;
  for (int ph = 0; ph <= max_phase; ph++) {
    int64_t pods = 0;
    int trainer = 0, present = 0;
    for (size_t i = 0; i < n; i++) {
      if (phases[i] != ph)
        continue;
      present = 1;
      pods += counts[i];
      trainer |= is_trainer && is_trainer[i];
    }
    if (present && (trainer || !any_trainer) && pods > best_pods) {
      best = ph;
      best_pods = pods;
    }
  }
  return best;
}
