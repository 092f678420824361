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

int gc_waves_pick_gang(const int *waves, const int32_t *counts, const int *is_trainer, size_t n) {
  int max_wave = -1;
  for (size_t i = 0; i < n; i++)
    if (waves[i] > max_wave)
      max_wave = waves[i];
  int best = -1, best_trainer = 0;
  int64_t best_pods = -1;
  for (int wv = 0; wv <= max_wave; wv++) {
    int64_t pods = 0;
    int trainer = 0, present = 0;
    for (size_t i = 0; i < n; i++) {
      if (waves[i] != wv)
        continue;
      present = 1;
      pods += counts[i];
      trainer |= is_trainer && is_trainer[i];
    }
    if (!present)
      continue;
    /* Strictly more pods wins; equal pods win only by holding the trainer
     * step (the earliest wave is kept otherwise). */
    if (pods > best_pods || (pods == best_pods && trainer && !best_trainer)) {
      best = wv;
      best_pods = pods;
      best_trainer = trainer;
    }
  }
  return best;
}
