/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeout_report_test: for tests only.  Functions of gb_timeout_report that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_timeout_report's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_TIMEOUT_REPORT_TEST_H
#define GB_TIMEOUT_REPORT_TEST_H

#include "gb_timeout_report.h"

/* Nearest-rank quantile: the value at 1-based rank ceil(pct/100 * n) of the
 * n ascending values (rank 1 when that is 0).  pct in 1..100; n >= 1. */
int64_t gb_timeout_report_quantile(const int64_t *sorted, size_t n, int pct);

/* The suggestion rule, over the n ascending waits of the scheduled gangs:
 * ceil(p99 * margin), rounded up to a step (10 s below 2 min, 1 min below
 * 1 h, 5 min above), then raised to floor_s and lowered to the backend's
 * cap (its timeout.max_seconds) and to max_s if set.  censored (gangs never
 * scheduled) only goes into the reasoning: their ages are lower bounds and
 * take no part in the quantile.  Writes the value to *out_s, whether it was
 * capped to *capped, and the one-line reasoning to reason (cap bytes).
 * Returns 0 or GC_EINVAL (n 0: nothing to start from). */
int gb_timeout_report_suggest(const int64_t *sorted, size_t n, size_t censored,
                              const struct gc_backend *backend, const struct gb_tr_rule *rule,
                              int64_t *out_s, int *capped, char *reason, size_t cap);

/* The Kaplan-Meier estimate of the pct-quantile (1..100) from n_w
 * ascending waits (events) and n_c ascending ages (right-censored): the
 * smallest observed wait t at which the estimated share of gangs scheduled
 * by t reaches pct %.  A censored age equal to a wait counts as still at
 * risk there.  Returns GB_TR_NO_TIMEOUT when the estimate never gets there. */
int64_t gb_timeout_report_km_quantile(const int64_t *waits, size_t n_w, const int64_t *ages,
                                      size_t n_c, int pct);

/* The share (0..1) of the row's gangs scheduled within t seconds: the
 * empirical distribution over all its gangs, so it levels off at
 * scheduled / gangs (the never-scheduled never arrive). */
double gb_timeout_report_cdf(const struct gb_tr_row *row, int64_t t);

#endif
