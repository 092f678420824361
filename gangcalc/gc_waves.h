/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_waves: orders replicated jobs into start waves by JobSet dependsOn.  A
 * job without dependencies is in wave 0; a job that depends on others starts
 * only after them, so its wave is 1 + the largest wave it depends on.  Also
 * picks the wave that forms the gang: the one with the most pods, ties going
 * to the wave holding the trainer step, then to the earliest.
 */
#ifndef GC_WAVES_H
#define GC_WAVES_H

#include <stddef.h>
#include <stdint.h>

#include "gc_diag.h"

/* Most replicated jobs per JobSet we accept (JobSet itself has no cap; the
 * Trainer patch list stops at 100). */
#define GC_WAVES_MAX_JOBS 1000

struct gc_wave_job {
  const char *name;
  const char *const *deps; /* names of the jobs this one depends on */
  size_t n_deps;
};

/* Computes waves[i] for every job.  Unknown dependency names and cycles are
 * reported as "<prefix>: spec.template.spec.replicatedJobs[i].dependsOn[j].
 * name: ..." and make the call return GC_EINVAL (every problem is reported;
 * waves of jobs in a cycle are then meaningless).  GC_ELIMIT when n is above
 * GC_WAVES_MAX_JOBS, GC_ENOMEM on allocation failure. */
int gc_waves_compute(const struct gc_wave_job *jobs, size_t n, const char *prefix, int *waves,
                     struct gc_diags *diags);

/* Picks the gang wave: the wave whose jobs hold the most pods (sum of
 * counts); on a tie the wave holding a job with is_trainer[i] set; still tied
 * the earliest.  Returns the wave, or -1 when n is 0. */
int gc_waves_pick_gang(const int *waves, const int32_t *counts, const int *is_trainer, size_t n);

#endif
