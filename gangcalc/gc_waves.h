/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_waves: orders replicated jobs into start waves by JobSet dependsOn.  A
 * job without dependencies is in wave 0; a job that depends on others starts
 * only after them, so its wave is 1 + the largest wave it depends on.  It
 * also groups jobs into phases, JobSet's own model: a job that depends on
 * another with status Ready runs beside it (same phase), with status Complete
 * after it (next phase).  The gang is one phase: the one holding the trainer
 * step, else the one with the most pods.
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
  const char *const *dep_status; /* "Ready" or "Complete" per dep; NULL: all Complete */
};

/* Computes waves[i] for every job.  Unknown dependency names and cycles are
 * reported as "<prefix>: spec.template.spec.replicatedJobs[i].dependsOn[j].
 * name: ..." and make the call return GC_EINVAL (every problem is reported;
 * waves of jobs in a cycle are then meaningless).  GC_ELIMIT when n is above
 * GC_WAVES_MAX_JOBS, GC_ENOMEM on allocation failure. */
int gc_waves_compute(const struct gc_wave_job *jobs, size_t n, const char *prefix, int *waves,
                     struct gc_diags *diags);

/* Computes, for jobs whose waves gc_waves_compute accepted (no unknown
 * names, no cycles), phases[i] (0 without dependsOn; else the largest over
 * its dependencies of the dependency's phase, + 1 when the status is not
 * Ready) and first[i] (1 when the job waits for no job of its own phase, so
 * JobSet creates it when the phase starts).  Returns 0, GC_EINVAL when a
 * dependency name is unknown, GC_ENOMEM. */
int gc_waves_phases(const struct gc_wave_job *jobs, size_t n, const int *waves, int *phases,
                    int *first);

/* Picks the gang phase: among the phases holding a job with is_trainer[i]
 * set (or among all phases when none does), the one whose jobs hold the most
 * pods (sum of counts), ties going to the earliest.  Returns the phase, or -1
 * when n is 0. */
int gc_waves_pick_phase(const int *phases, const int32_t *counts, const int *is_trainer,
                        size_t n);

#endif
