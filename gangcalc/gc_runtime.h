/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_runtime: the structure of a TrainingRuntime or ClusterTrainingRuntime
 * (mlPolicy, podGroupPolicy, the JobSet template's replicated jobs) and the
 * choice of backend and PodGroup policy it leads to.  Internal to the gang
 * computation.
 */
#ifndef GC_RUNTIME_H
#define GC_RUNTIME_H

#include "gc_gang_int.h"


/* Each check reads r->spec (borrowed), fills r and reports problems
 * through c.  gc_runtime_check_ml also reads and marks t. */
void gc_runtime_check_ml(struct ctx *c, struct rt_info *r, struct tj_info *t);
void gc_runtime_check_policy(struct ctx *c, struct rt_info *r);

/* Checks the template's replicated jobs and sets r->jobs.  Returns 0, or
 * GC_EINVAL when a problem was reported. */
int gc_runtime_check_jobs(struct ctx *c, struct rt_info *r);

/* Chooses the gang's backend from r and the options, and reads the
 * runtime's own timeout and network topology fields into r (gc_policy
 * weighs them against the other sources). */
void gc_runtime_resolve_policy(struct ctx *c, struct rt_info *r);

#endif
