/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_diagprint: printing a diagnostics list (see gb_diagprint.h).
 */
#include "gb_diagprint.h"

void gb_diagprint_write(FILE *f, const char *prefix, const struct gc_diags *d) {
  if (!f || !d)
    return;
  const char *p = prefix ? prefix : "";
  for (size_t i = 0; i < d->n; i++)
    fprintf(f, "%s%s%s\n", p, d->is_warning[i] ? "warning: " : "", d->msgs[i]);
  /* The list keeps at most d->max messages; saying how many were left out
   * tells the reader that fixing the printed ones may not be enough. */
  if (d->dropped)
    fprintf(f, "%s... and %zu more problems\n", p, d->dropped);
}
