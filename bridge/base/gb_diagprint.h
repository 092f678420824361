/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_diagprint: the one way a command prints a struct gc_diags list for a
 * person: one line a message, warnings marked "warning: ", an optional
 * prefix on every line, and a last "... and N more problems" line when the
 * bounded list dropped messages, so that a reader never mistakes a cut list
 * for the whole one.  It depends only on libc and gangcalc's gc_diag.
 */
#ifndef GB_DIAGPRINT_H
#define GB_DIAGPRINT_H

#include <stdio.h>

#include "gc_diag.h"

/* Writes every message of d to f, each line starting with prefix (NULL or ""
 * for none), then the dropped-count line when d->dropped is not zero.  d and
 * f are borrowed; nothing is freed.  A NULL d or f writes nothing. */
void gb_diagprint_write(FILE *f, const char *prefix, const struct gc_diags *d);

#endif
