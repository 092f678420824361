/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_metrics_test: for tests only.  Functions of gb_metrics that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_metrics's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_METRICS_TEST_H
#define GB_METRICS_TEST_H

#include "gb_metrics.h"

/* Limits the number of series of one family (0 restores the default).  A
 * new label combination past the limit is refused with GC_ELIMIT and counted
 * in gb_metric_dropped. */
void gb_metric_set_max_series(struct gb_metric *m, size_t max_series);

unsigned long long gb_metric_dropped(struct gb_metric *m);

int gb_metric_gauge_add(struct gb_metric *m, const char *const *values, double v);

/* Reads one series' value (counter or gauge) or count (histogram) for tests
 * and for the service's own decisions.  Returns 0, or GC_ENOTFOUND when the
 * series does not exist yet. */
int gb_metric_value(struct gb_metric *m, const char *const *values, double *out);

/* Writes `v` as Go's strconv.FormatFloat(v, 'g', -1, 64) does ("+Inf",
 * "-Inf", "NaN", "1e+06", "0.005", "42").  `buf` should hold 32 bytes. */
void gb_metrics_format_double(double v, char *buf, size_t size);

#endif
