/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_trainjob: the checks of a TrainJob's own fields (spec.runtimeRef,
 * spec.trainer, suspend and managedBy, the v2.0/v2.1 fields and runtime
 * patches), as the API server and Trainer's webhook apply them, and the
 * API generation they mark.  Internal to the gang computation.
 */
#ifndef GC_TRAINJOB_H
#define GC_TRAINJOB_H

#include "gc_gang_int.h"


/* Checks tj (borrowed) and fills t with what the computation reads; every
 * problem is reported through c. */
void gc_trainjob_check(struct ctx *c, const struct gc_value *tj, struct tj_info *t);

/* numProcPerNode as int >= 1 or "auto"/"cpu"/"gpu" (v2.0/v2.1 IntOrString);
 * returns 1 when a string form was used (a v2.1-or-older marker). */
int gc_trainjob_check_num_proc(struct ctx *c, const char *prefix, const struct gc_value *v,
                               const char *path);

#endif
