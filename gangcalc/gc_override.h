/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_override: the TrainJob's v2.0 podSpecOverrides, v2.1
 * podTemplateOverrides and v2.2+ runtimePatches, filtered to the fields
 * Trainer accepts and merged strategically, copy-on-write, into the
 * effective job list.  Internal to the gang computation.
 */
#ifndef GC_OVERRIDE_H
#define GC_OVERRIDE_H

#include "gc_gang_int.h"


/* Shallow copies into c's arena (the members or items are shared), so one
 * of them can be replaced.  Never NULL: on OOM c->oom is set and a shared
 * empty node is returned. */
struct gc_value *gc_override_cow_map(struct ctx *c, const struct gc_value *m);
struct gc_value *gc_override_cow_seq(struct ctx *c, const struct gc_value *s);

/* Applies spec's podSpecOverrides (v20 set) or podTemplateOverrides to
 * jsjobs (a private copy of the runtime's list rjobs); problems are
 * reported through c. */
void gc_override_apply(struct ctx *c, const struct gc_value *spec, struct gc_value *jsjobs,
                       const struct gc_value *rjobs, int v20);

/* Applies spec's runtimePatches to jsjobs, as gc_override_apply. */
void gc_override_patches(struct ctx *c, const struct gc_value *spec, struct gc_value *jsjobs,
                         const struct gc_value *rjobs);

#endif
