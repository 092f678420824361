/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeout_report: the statistics behind `gangbridge timeouts report`.  It
 * owns the arithmetic only: size classes, exact nearest-rank quantiles, the
 * Kaplan-Meier estimate, the suggested-timeout rule, --what-if counts, and
 * RFC 3339 timestamps (Go durations are gangcalc's gc_duration_parse_seconds,
 * the one Go-duration parser).  It does no I/O and never prints, so it could move into a
 * pure library; the command (gb_cmd_timeouts.c) turns PodGroups and pods
 * into gb_tr_gang observations and writes the report as a table, JSON or
 * HTML.
 *
 * The statistics treat a gang that has not been scheduled as a censored
 * observation: its wait so far is a lower bound, not a wait.  The quantiles
 * (p50, p90, p99, max) and the suggestion come from the gangs that were
 * scheduled only; the never-scheduled are reported beside them (how many,
 * their ages, the oldest); the Kaplan-Meier column estimates the quantiles
 * of all gangs, counting a censored gang as "still waiting at its age".
 *
 * Quantile definition (nearest rank): the p-quantile of n ascending values
 * is the value at 1-based rank ceil(p/100 * n), so p50 is a wait that at
 * least half the scheduled gangs did not exceed, and it is always one of
 * the observed waits.
 *
 * All times are whole seconds.  Kubernetes timestamps have second resolution;
 * durations are rounded up to whole seconds (a timeout of 1.5s counts as 2s).
 */
#ifndef GB_TIMEOUT_REPORT_H
#define GB_TIMEOUT_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "gc_backend.h"
#include "gc_diag.h"

#define GB_TR_CLASSES 5          /* gang sizes 1, 2-7, 8-31, 32-127, 128+ */
#define GB_TR_NO_TIMEOUT (-1)    /* a gang or row has no effective timeout */
#define GB_TR_REASON_MAX 320     /* bytes of a row's one-line reasoning */

/* One observed gang.  Strings are borrowed from the caller and must outlive
 * any report built from it. */
struct gb_tr_gang {
  const char *namespace_, *name;
  const char *queue; /* "" when the PodGroup names none */
  const struct gc_backend *backend; /* the group object's backend (a table entry) */
  int64_t size;                     /* the group object's member count (spec.minMember) */
  int64_t wait_s;    /* creation to schedule, or its age at "now" when censored; >= 0 */
  int censored;      /* never scheduled: wait_s is a lower bound (its age) */
  int64_t timeout_s; /* effective timeout, or GB_TR_NO_TIMEOUT */
};

/* The suggestion rule's knobs (see gb_timeout_report_suggest). */
struct gb_tr_rule {
  int64_t margin_permille; /* p99 is multiplied by this / 1000; default 1500 */
  int64_t floor_s;         /* never suggest less; default 60 */
  int64_t max_s;           /* never suggest more (0: the backend's cap only) */
};

struct gb_tr_options {
  struct gb_tr_rule rule;
  int has_whatif;
  int64_t whatif_s; /* --what-if: count gangs whose wait exceeds it */
};

/* One queue x size class x backend line of the report. */
struct gb_tr_row {
  /* The row is queue x backend x size class (size_class below, where it
   * fills the padding after has_suggestion). */
  const char *queue; /* borrowed from the gangs */
  const struct gc_backend *backend;
  size_t gangs, scheduled, censored; /* gangs = scheduled + censored */
  /* Over the scheduled gangs only (nearest rank); GB_TR_NO_TIMEOUT when
   * none was scheduled. */
  int64_t p50_s, p90_s, p99_s, max_s;
  /* Kaplan-Meier over all gangs (censored ones at their age);
   * GB_TR_NO_TIMEOUT where the estimate never reaches the quantile (too
   * many gangs still waiting to tell). */
  int64_t km_p50_s, km_p90_s, km_p99_s;
  /* The never-scheduled: median and largest age, and the oldest gang
   * (borrowed names; NULL when none). */
  int64_t age_p50_s, age_max_s;
  const char *oldest_ns, *oldest_name;
  int64_t timeout_s;   /* most frequent effective timeout, or GB_TR_NO_TIMEOUT */
  size_t timeout_gangs; /* gangs that have that timeout */
  size_t exceeded;      /* gangs whose wait (or age) exceeded their own effective timeout */
  int has_suggestion;   /* some gang was scheduled: the rule has a p99 to start from */
  int size_class;
  int64_t suggested_s;
  int suggested_capped; /* the suggestion was lowered to the backend's cap or max_s */
  size_t would_cut;     /* gangs whose wait or age exceeds the suggestion */
  size_t whatif_cut;    /* gangs with wait or age > whatif_s (when has_whatif) */
  char reason[GB_TR_REASON_MAX];
  int64_t *waits; /* scheduled waits, ascending, `scheduled` of them; owned by the report */
  int64_t *ages;  /* never-scheduled ages, ascending, `censored` of them; owned */
};

struct gb_tr_report {
  struct gb_tr_row *rows; /* sorted by backend, queue, size class */
  size_t n_rows;
  size_t gangs, scheduled, censored, exceeded, whatif_cut, would_cut;
  struct gb_tr_options opts;
};

/* Index 0..4 of the size class of a gang of `size` members (sizes below 1
 * count as 1), and its name ("1", "2-7", "8-31", "32-127", "128+"). */
int gb_timeout_report_size_class(int64_t size);
const char *gb_timeout_report_size_class_name(int size_class);

/* Fills defaults into zero fields of *o (margin 1500, floor 60 s). */
void gb_tr_options_defaults(struct gb_tr_options *o);

/* Builds the report over n gangs.  *out is new (caller frees with
 * gb_tr_report_free); gangs are borrowed for the report's lifetime (its rows
 * point at their queue strings).  Returns 0 or GC_ENOMEM. */
int gb_tr_report_build(const struct gb_tr_gang *gangs, size_t n, const struct gb_tr_options *opts,
                       struct gb_tr_report **out);
void gb_tr_report_free(struct gb_tr_report *r);

/* Parses an RFC 3339 timestamp ("2026-01-02T03:04:05Z", optional fraction,
 * "Z" or a +hh:mm offset) into seconds since the Unix epoch (the fraction is
 * dropped).  Returns 0 or GC_EINVAL. */
int gb_timeout_report_parse_time(const char *s, int64_t *out_s);

/* Writes t (seconds since the epoch) as "2026-01-02T03:04:05Z" into buf
 * (cap >= 21).  Returns the length. */
size_t gb_timeout_report_format_time(int64_t t, char *buf, size_t cap);

/* Writes s seconds as a Go-style duration ("0s", "45s", "6m15s", "1h0m5s").
 * Returns the length written (cap >= 24 always suffices). */
size_t gb_timeout_report_format_duration(int64_t s, char *buf, size_t cap);

#endif
