/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_gang_int: small helpers shared by gc_gang.c, gc_render.c and
 * gc_explain.c: name checks and the per-gang warning list.  Not part of the
 * public gangcalc API.
 */
#ifndef GC_GANG_INT_H
#define GC_GANG_INT_H

#include <stddef.h>

#include "gc_gang.h"
#include "gc_name.h"

/* Appends a formatted warning to g (arena-owned).  Returns 0 or GC_ENOMEM. */
int gc_gang_warnf(struct gc_gang *g, enum gc_warning_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
