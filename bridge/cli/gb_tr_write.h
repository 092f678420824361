/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tr_write: writes a `gangbridge timeouts report` (gb_timeout_report's
 * rows) as a table, as JSON, or as one self-contained HTML page: on top the
 * table (backend x queue x size class: gangs, scheduled, never scheduled,
 * p50/p90/p99 of the scheduled, the Kaplan-Meier p99, the current and the
 * suggested timeout, how many gangs the suggestion would have cut), the
 * quantile definition and the suggestion rule with a worked example; then
 * per queue the wait distributions as cumulative curves on a logarithmic
 * time axis, one line per size class, the gangs never scheduled drawn as
 * such (the curve stops short of 100 %, their ages as open circles), the
 * current timeout as a filled mark above the plot and the suggested one as
 * a hollow mark below it, so both stay visible when they are equal.  Inline
 * CSS and SVG only: no scripts, no external references.  Command helper of
 * gb_cmd_timeouts.c; writes to the FILE given, never exits.
 */
#ifndef GB_TR_WRITE_H
#define GB_TR_WRITE_H

#include <stdint.h>
#include <stdio.h>

#include "gb_timeout_report.h"

/* Returns 0, or GC_EIO (a write failed) / GC_ENOMEM. */
int gb_tr_write_table(FILE *f, const struct gb_tr_report *rep, int64_t now);
int gb_tr_write_json(FILE *f, const struct gb_tr_report *rep, int64_t now);
int gb_tr_write_html(FILE *f, const struct gb_tr_report *rep, int64_t now);

#endif
