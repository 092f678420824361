/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeout_report: size classes, exact quantiles, the suggested-timeout
 * rule, histograms and time parsing for `gangbridge timeouts report`.  Pure:
 * no I/O, no printing (see the header for the definitions).
 */
#include "gb_timeout_report.h"
#include "gb_timeout_report_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[GB_TR_CLASSES] = {"1", "2-7", "8-31", "32-127", "128+"};

int gb_timeout_report_size_class(int64_t size) {
  if (size <= 1)
    return 0;
  if (size < 8)
    return 1;
  if (size < 32)
    return 2;
  if (size < 128)
    return 3;
  return 4;
}

const char *gb_timeout_report_size_class_name(int size_class) {
  if (size_class < 0 || size_class >= GB_TR_CLASSES)
    return "?";
  return class_names[size_class];
}

void gb_tr_options_defaults(struct gb_tr_options *o) {
  if (o->rule.margin_permille <= 0)
    o->rule.margin_permille = 1500;
  if (o->rule.floor_s <= 0)
    o->rule.floor_s = 60;
}

int64_t gb_timeout_report_quantile(const int64_t *sorted, size_t n, int pct) {
  /* Nearest rank: the smallest value such that at least pct% of the values
   * are <= it.  Integer arithmetic keeps it exact for any n. */
  size_t rank = (size_t)(((unsigned long long)n * (unsigned)pct + 99) / 100);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return sorted[rank - 1];
}

size_t gb_timeout_report_format_duration(int64_t s, char *buf, size_t cap) {
  const char *sign = s < 0 ? "-" : "";
  uint64_t v = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
  uint64_t h = v / 3600, m = v / 60 % 60, sec = v % 60;
  int n;
  if (h)
    n = snprintf(buf, cap, "%s%lluh%llum%llus", sign, (unsigned long long)h,
                 (unsigned long long)m, (unsigned long long)sec);
  else if (m)
    n = snprintf(buf, cap, "%s%llum%llus", sign, (unsigned long long)m, (unsigned long long)sec);
  else
    n = snprintf(buf, cap, "%s%llus", sign, (unsigned long long)sec);
  if (n < 0)
    return 0;
  return (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}

/* The rounding step for a raw suggestion: coarse enough to read, fine
 * enough that short timeouts are not doubled by it. */
static int64_t round_up_step(int64_t raw) {
  int64_t step = raw < 120 ? 10 : raw < 3600 ? 60 : 300;
  return (raw + step - 1) / step * step;
}

static size_t count_above(const int64_t *sorted, size_t n, int64_t limit) {
  /* First index whose value exceeds limit, by binary search. */
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] > limit)
      hi = mid;
    else
      lo = mid + 1;
  }
  return n - lo;
}

int gb_timeout_report_suggest(const int64_t *sorted, size_t n, size_t censored,
                              const struct gc_backend *backend, const struct gb_tr_rule *rule,
                              int64_t *out_s, int *capped, char *reason, size_t cap) {
  if (n == 0 || !rule || rule->margin_permille <= 0)
    return GC_EINVAL;
  int64_t p99 = gb_timeout_report_quantile(sorted, n, 99);
  /* p99 and the margin are bounded (waits are seconds since 1970), so the
   * product cannot overflow int64. */
  int64_t raw = (p99 * rule->margin_permille + 999) / 1000;
  int64_t stepped = round_up_step(raw), v = stepped, limit = 0;
  const char *why = "";
  char capbuf[160];
  if (v < rule->floor_s) {
    v = rule->floor_s;
    why = ", raised to the floor";
  }
  int64_t cap_s = backend ? backend->timeout.max_seconds : 0;
  limit = cap_s;
  if (rule->max_s > 0 && (limit == 0 || rule->max_s < limit))
    limit = rule->max_s;
  *capped = 0;
  if (limit > 0 && v > limit) {
    v = limit;
    *capped = 1;
    why = ", capped at --max";
    if (cap_s > 0 && limit == cap_s) {
      snprintf(capbuf, sizeof(capbuf), ", capped at %s",
               backend->timeout.max_limit ? backend->timeout.max_limit : "the backend's limit");
      why = capbuf;
    }
  }
  *out_s = v;
  char p99s[24], raws[24], steps[24], vs[24];
  gb_timeout_report_format_duration(p99, p99s, sizeof(p99s));
  gb_timeout_report_format_duration(raw, raws, sizeof(raws));
  gb_timeout_report_format_duration(stepped, steps, sizeof(steps));
  gb_timeout_report_format_duration(v, vs, sizeof(vs));
  size_t over = count_above(sorted, n, v);
  int len = snprintf(reason, cap,
                     "p99 %s x %lld.%03lld = %s, rounded up to %s%s: %s; %zu of %zu scheduled "
                     "gangs waited longer",
                     p99s, (long long)(rule->margin_permille / 1000),
                     (long long)(rule->margin_permille % 1000), raws, steps, why, vs, over, n);
  if (censored && len > 0 && (size_t)len < cap)
    snprintf(reason + len, cap - (size_t)len,
             "; %zu never scheduled (not in the quantiles: their waits are unknown)", censored);
  return GC_OK;
}

/* Sort order of gangs into rows: backend, queue, size class, then wait. */
static int cmp_gang(const void *pa, const void *pb) {
  const struct gb_tr_gang *a = *(const struct gb_tr_gang *const *)pa;
  const struct gb_tr_gang *b = *(const struct gb_tr_gang *const *)pb;
  int ia = gc_backend_index(a->backend), ib = gc_backend_index(b->backend);
  if (ia != ib)
    return ia < ib ? -1 : 1;
  int c = strcmp(a->queue ? a->queue : "", b->queue ? b->queue : "");
  if (c)
    return c;
  int ca = gb_timeout_report_size_class(a->size), cb = gb_timeout_report_size_class(b->size);
  if (ca != cb)
    return ca < cb ? -1 : 1;
  return (a->wait_s > b->wait_s) - (a->wait_s < b->wait_s);
}

static int same_row(const struct gb_tr_gang *a, const struct gb_tr_gang *b) {
  return a->backend == b->backend && !strcmp(a->queue ? a->queue : "", b->queue ? b->queue : "") &&
         gb_timeout_report_size_class(a->size) == gb_timeout_report_size_class(b->size);
}

static int cmp_i64(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  return (a > b) - (a < b);
}

/* The most frequent effective timeout among the row's gangs (ties: the
 * smaller value, GB_TR_NO_TIMEOUT counting as the smallest), by sorting the
 * values and counting runs.  scratch has n slots. */
static void row_timeout(struct gb_tr_gang *const *g, size_t n, int64_t *scratch,
                        struct gb_tr_row *row) {
  for (size_t i = 0; i < n; i++)
    scratch[i] = g[i]->timeout_s;
  qsort(scratch, n, sizeof(*scratch), cmp_i64);
  int64_t best = GB_TR_NO_TIMEOUT;
  size_t best_n = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && scratch[j] == scratch[i])
      j++;
    if (j - i > best_n) {
      best = scratch[i];
      best_n = j - i;
    }
    i = j;
  }
  row->timeout_s = best;
  row->timeout_gangs = best_n;
}

int64_t gb_timeout_report_km_quantile(const int64_t *waits, size_t n_w, const int64_t *ages,
                                      size_t n_c, int pct) {
  /* Product-limit: at each distinct wait t, S *= 1 - d/n_at_risk, where the
   * gangs at risk are those whose wait or age is >= t.  Merging the two
   * sorted lists keeps it O(n). */
  double surv = 1.0, target = 1.0 - (double)pct / 100.0 + 1e-12;
  size_t i = 0, j = 0, at_risk = n_w + n_c;
  while (i < n_w) {
    int64_t t = waits[i];
    while (j < n_c && ages[j] < t) { /* censored before t: no longer at risk */
      j++;
      at_risk--;
    }
    size_t d = 0;
    while (i + d < n_w && waits[i + d] == t)
      d++;
    surv *= 1.0 - (double)d / (double)at_risk;
    if (surv <= target)
      return t;
    at_risk -= d;
    i += d;
  }
  return GB_TR_NO_TIMEOUT;
}

double gb_timeout_report_cdf(const struct gb_tr_row *row, int64_t t) {
  if (row->gangs == 0)
    return 0;
  return (double)(row->scheduled - count_above(row->waits, row->scheduled, t)) / (double)row->gangs;
}

/* The waits and ages of the row's gangs (sorted by wait already), the
 * quantiles, the Kaplan-Meier column and the never-scheduled figures. */
static int row_waits(struct gb_tr_gang *const *g, size_t n, struct gb_tr_row *row) {
  row->waits = malloc((n ? n : 1) * sizeof(*row->waits));
  row->ages = malloc((n ? n : 1) * sizeof(*row->ages));
  if (!row->waits || !row->ages)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (!g[i]->censored) {
      row->waits[row->scheduled++] = g[i]->wait_s;
      continue;
    }
    row->ages[row->censored++] = g[i]->wait_s;
    if (!row->oldest_name || g[i]->wait_s >= row->age_max_s) {
      row->age_max_s = g[i]->wait_s;
      row->oldest_ns = g[i]->namespace_;
      row->oldest_name = g[i]->name;
    }
  }
  int64_t none = GB_TR_NO_TIMEOUT;
  size_t m = row->scheduled;
  row->p50_s = m ? gb_timeout_report_quantile(row->waits, m, 50) : none;
  row->p90_s = m ? gb_timeout_report_quantile(row->waits, m, 90) : none;
  row->p99_s = m ? gb_timeout_report_quantile(row->waits, m, 99) : none;
  row->max_s = m ? row->waits[m - 1] : none;
  row->km_p50_s = gb_timeout_report_km_quantile(row->waits, m, row->ages, row->censored, 50);
  row->km_p90_s = gb_timeout_report_km_quantile(row->waits, m, row->ages, row->censored, 90);
  row->km_p99_s = gb_timeout_report_km_quantile(row->waits, m, row->ages, row->censored, 99);
  row->age_p50_s = row->censored ? gb_timeout_report_quantile(row->ages, row->censored, 50) : none;
  if (!row->censored)
    row->age_max_s = none;
  return GC_OK;
}

static int fill_row(struct gb_tr_gang *const *g, size_t n, const struct gb_tr_options *o,
                    struct gb_tr_row *row) {
  row->queue = g[0]->queue ? g[0]->queue : "";
  row->backend = g[0]->backend;
  row->size_class = gb_timeout_report_size_class(g[0]->size);
  row->gangs = n;
  int rc = row_waits(g, n, row);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++)
    if (g[i]->timeout_s != GB_TR_NO_TIMEOUT && g[i]->wait_s > g[i]->timeout_s)
      row->exceeded++;
  if (o->has_whatif)
    row->whatif_cut = count_above(row->waits, row->scheduled, o->whatif_s) +
                      count_above(row->ages, row->censored, o->whatif_s);
  /* Counting timeouts needs them sorted; the row is sorted by wait. */
  int64_t *scratch = malloc(n * sizeof(*scratch));
  if (!scratch)
    return GC_ENOMEM;
  row_timeout(g, n, scratch, row);
  free(scratch);
  row->suggested_s = GB_TR_NO_TIMEOUT;
  if (!row->scheduled) {
    char age[24];
    gb_timeout_report_format_duration(row->age_max_s, age, sizeof(age));
    snprintf(row->reason, sizeof(row->reason),
             "no suggestion: none of its %zu gangs was scheduled (the oldest, %s/%s, has waited "
             "%s)",
             row->censored, row->oldest_ns ? row->oldest_ns : "", row->oldest_name, age);
    return GC_OK;
  }
  row->has_suggestion = 1;
  rc = gb_timeout_report_suggest(row->waits, row->scheduled, row->censored, row->backend, &o->rule,
                                 &row->suggested_s, &row->suggested_capped, row->reason,
                                 sizeof(row->reason));
  row->would_cut = count_above(row->waits, row->scheduled, row->suggested_s) +
                   count_above(row->ages, row->censored, row->suggested_s);
  return rc;
}

void gb_tr_report_free(struct gb_tr_report *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n_rows; i++) {
    free(r->rows[i].waits);
    free(r->rows[i].ages);
  }
  free(r->rows);
  free(r);
}

int gb_tr_report_build(const struct gb_tr_gang *gangs, size_t n, const struct gb_tr_options *opts,
                       struct gb_tr_report **out) {
  *out = NULL;
  struct gb_tr_report *r = calloc(1, sizeof(*r));
  struct gb_tr_gang **idx = malloc((n ? n : 1) * sizeof(*idx));
  int rc = GC_ENOMEM;
  if (!r || !idx)
    goto out;
  r->opts = *opts;
  gb_tr_options_defaults(&r->opts);
  for (size_t i = 0; i < n; i++)
    idx[i] = (struct gb_tr_gang *)&gangs[i];
  qsort(idx, n, sizeof(*idx), cmp_gang);
  r->rows = calloc(n ? n : 1, sizeof(*r->rows));
  if (!r->rows)
    goto out;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && same_row(idx[i], idx[j]))
      j++;
    struct gb_tr_row *row = &r->rows[r->n_rows++];
    rc = fill_row(idx + i, j - i, &r->opts, row);
    if (rc)
      goto out;
    r->gangs += row->gangs;
    r->scheduled += row->scheduled;
    r->censored += row->censored;
    r->exceeded += row->exceeded;
    r->whatif_cut += row->whatif_cut;
    r->would_cut += row->would_cut;
    i = j;
  }
  rc = GC_OK;
  *out = r;
  r = NULL;
out:
  free(idx);
  gb_tr_report_free(r);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Time notations                                                           */

/* Reads exactly n decimal digits. */
static int digits(const char *s, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return GC_EINVAL;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return GC_OK;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), so no time zone or locale is involved. */
static int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

size_t gb_timeout_report_format_time(int64_t t, char *buf, size_t cap) {
  /* Howard Hinnant's civil_from_days, the inverse of days_from_civil. */
  int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400), sec = t - days * 86400;
  int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
  int64_t y = yoe + era * 400 + (m <= 2);
  int n = snprintf(buf, cap, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ", (long long)y,
                   (long long)m, (long long)d, (long long)(sec / 3600),
                   (long long)(sec / 60 % 60), (long long)(sec % 60));
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : (cap ? cap - 1 : 0);
}

static int days_in_month(int y, int m) {
  static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : dm[m - 1];
}

int gb_timeout_report_parse_time(const char *s, int64_t *out_s) {
  int y, mo, d, h, mi, se;
  if (!s || strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
      s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
      digits(s + 17, 2, &se))
    return GC_EINVAL;
  if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 60)
    return GC_EINVAL;
  const char *p = s + 19;
  if (*p == '.') {
    p++;
    if (*p < '0' || *p > '9')
      return GC_EINVAL;
    while (*p >= '0' && *p <= '9')
      p++;
  }
  int64_t off = 0;
  if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
    off = 0;
  } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
    int oh, om;
    if (digits(p + 1, 2, &oh) || digits(p + 4, 2, &om) || oh > 23 || om > 59)
      return GC_EINVAL;
    off = (*p == '-' ? -1 : 1) * (int64_t)(oh * 3600 + om * 60);
  } else {
    return GC_EINVAL;
  }
  *out_s = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
  return GC_OK;
}
