/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_jobs: the replicated jobs of the effective JobSet spec: names,
 * parallelism and replicas, dependsOn, pod spec, priority class and
 * scheduler name, read into struct job; and resourcesPerNode merged into
 * the trainer's pod spec.  Internal to the gang computation.
 */
#ifndef GC_JOBS_H
#define GC_JOBS_H

#include "gc_gang_int.h"


/* Reads jsjobs (borrowed) into jobs[0..jsjobs->len).  Returns 1 when every
 * job is valid, 0 when a problem was reported. */
int gc_jobs_read(struct ctx *c, const struct gc_value *jsjobs, struct job *jobs);

/* Merges resourcesPerNode rpn into job j's pod spec (copy-on-write). */
void gc_jobs_merge_rpn(struct ctx *c, struct job *j, const struct gc_value *rpn);

#endif
