/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tr_write: the report as a table, JSON or one HTML page (see the
 * header).
 */
#include "gb_tr_write.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gb_emit.h"
#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_value.h"

#define NONE GB_TR_NO_TIMEOUT

static const char *backend_name(const struct gc_backend *b) { return gc_backend_name(b); }

/* s as a Go duration into buf (24 bytes), or `none` when it is NONE. */
static const char *dur(int64_t s, char *buf, const char *none) {
  if (s == NONE)
    return none;
  gb_timeout_report_format_duration(s, buf, 24);
  return buf;
}

static void timeout_cell(const struct gb_tr_row *row, char *buf, size_t cap) {
  char d[24];
  if (row->timeout_gangs == row->gangs)
    snprintf(buf, cap, "%s", dur(row->timeout_s, d, "none"));
  else
    snprintf(buf, cap, "%s (%zu/%zu)", dur(row->timeout_s, d, "none"), row->timeout_gangs,
             row->gangs);
}

/* ", at most <cap> for <backend> (<why>)" for every backend whose scheduler
 * caps a wait, appended at buf + n; returns the new length. */
static int backend_caps(char *buf, size_t cap, int n) {
  char mx[24];
  for (size_t i = 0; i < gc_backend_count() && n > 0 && (size_t)n < cap; i++) {
    const struct gc_backend_timeout *t = &gc_backend_at(i)->timeout;
    if (t->max_seconds <= 0)
      continue;
    int m = snprintf(buf + n, cap - (size_t)n, ", at most %s for %s (%s)",
                     dur(t->max_seconds, mx, "-"), gc_backend_at(i)->name,
                     t->max_rule ? t->max_rule : "its scheduler's limit");
    n = m < 0 ? m : n + m;
  }
  return n;
}

static const char *rule_text(const struct gb_tr_options *o, char *buf, size_t cap) {
  char fl[24], mx[24];
  int n = snprintf(buf, cap,
                   "suggested = p99 of the scheduled gangs' waits x %lld.%03lld, rounded up (to "
                   "10 s below 2 minutes, to the minute below 1 hour, to 5 minutes above), at "
                   "least %s",
                   (long long)(o->rule.margin_permille / 1000),
                   (long long)(o->rule.margin_permille % 1000), dur(o->rule.floor_s, fl, "-"));
  n = backend_caps(buf, cap, n);
  if (o->rule.max_s && n > 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, " and at most %s (--max)", dur(o->rule.max_s, mx, "-"));
  return buf;
}

/* ------------------------------------------------------------------------ */
/* Table                                                                    */

int gb_tr_write_table(FILE *f, const struct gb_tr_report *rep, int64_t now) {
  char a[24], b[24], c[24], k[24], e[24], t[64], w[40], nows[32], rule[400];
  gb_timeout_report_format_time(now, nows, sizeof(nows));
  const struct gb_tr_options *o = &rep->opts;
  int qw = 5;
  for (size_t i = 0; i < rep->n_rows; i++)
    if ((int)strlen(rep->rows[i].queue) > qw)
      qw = (int)strlen(rep->rows[i].queue);
  snprintf(w, sizeof(w), "CUT BY %s", dur(o->whatif_s, a, "-"));
  fprintf(f, "%-12s  %-*s  %-6s  %6s  %6s  %5s  %9s  %9s  %9s  %9s  %-16s  %-9s  %6s%s%s\n",
          "BACKEND", qw, "QUEUE", "SIZE", "GANGS", "SCHED", "NEVER", "P50", "P90", "P99", "KM P99",
          "TIMEOUT", "SUGGESTED", "CUT", o->has_whatif ? "  " : "", o->has_whatif ? w : "");
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct gb_tr_row *r = &rep->rows[i];
    timeout_cell(r, t, sizeof(t));
    fprintf(f, "%-12s  %-*s  %-6s  %6zu  %6zu  %5zu  %9s  %9s  %9s  %9s  %-16s  %-9s  %6zu",
            backend_name(r->backend), qw, *r->queue ? r->queue : "-",
            gb_timeout_report_size_class_name(r->size_class), r->gangs, r->scheduled, r->censored,
            dur(r->p50_s, a, "-"), dur(r->p90_s, b, "-"), dur(r->p99_s, c, "-"),
            dur(r->km_p99_s, k, "-"), t, dur(r->suggested_s, e, "-"), r->would_cut);
    if (o->has_whatif)
      fprintf(f, "  %zu", r->whatif_cut);
    fprintf(f, "\n");
  }
  fprintf(f,
          "\nquantiles: nearest rank over the gangs that were scheduled (the value at rank "
          "ceil(p/100 x n)); KM P99: Kaplan-Meier over all gangs, the never-scheduled "
          "counted as still waiting (- where it is not reached)\nrule: %s\n",
          rule_text(o, rule, sizeof(rule)));
  fprintf(f, "\nsuggestions:\n");
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct gb_tr_row *r = &rep->rows[i];
    fprintf(f, "  %s %s %s: %s\n", backend_name(r->backend), *r->queue ? r->queue : "-",
            gb_timeout_report_size_class_name(r->size_class), r->reason);
  }
  if (rep->censored) {
    fprintf(f, "\nnever scheduled (waiting at %s):\n", nows);
    for (size_t i = 0; i < rep->n_rows; i++) {
      const struct gb_tr_row *r = &rep->rows[i];
      if (r->censored)
        fprintf(f, "  %s %s %s: %zu, median age %s, oldest %s/%s (%s)\n", backend_name(r->backend),
                *r->queue ? r->queue : "-", gb_timeout_report_size_class_name(r->size_class),
                r->censored, dur(r->age_p50_s, a, "-"), r->oldest_ns, r->oldest_name,
                dur(r->age_max_s, b, "-"));
    }
  }
  fprintf(f,
          "\n%zu gangs, %zu scheduled, %zu never scheduled (up to %s), %zu exceeded their "
          "timeout, %zu would be cut by the suggestions",
          rep->gangs, rep->scheduled, rep->censored, nows, rep->exceeded, rep->would_cut);
  if (o->has_whatif)
    fprintf(f, "; a %s timeout would have cut %zu", dur(o->whatif_s, a, "-"), rep->whatif_cut);
  fprintf(f, "\n");
  return ferror(f) ? GC_EIO : GC_OK;
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */

/* Builds JSON members; any allocation failure makes the whole build fail. */
struct jb {
  struct gc_arena *a;
  int failed;
};

static void put(struct jb *j, struct gc_value *map, const char *key, struct gc_value *v) {
  if (!map || !v || gc_map_set(j->a, map, key, v))
    j->failed = 1;
}

static void put_int(struct jb *j, struct gc_value *m, const char *key, int64_t i) {
  put(j, m, key, gc_value_int(j->a, i));
}

static void put_secs(struct jb *j, struct gc_value *m, const char *key, int64_t s) {
  put(j, m, key, s == NONE ? gc_value_null(j->a) : gc_value_int(j->a, s));
}

static struct gc_value *json_never(struct jb *j, const struct gb_tr_row *r) {
  struct gc_value *m = gc_value_map(j->a);
  put_int(j, m, "count", (int64_t)r->censored);
  put_secs(j, m, "ageP50Seconds", r->age_p50_s);
  put_secs(j, m, "ageMaxSeconds", r->age_max_s);
  put(j, m, "oldest",
      r->oldest_name
          ? gc_value_strz(j->a, gc_arena_printf(j->a, "%s/%s", r->oldest_ns, r->oldest_name))
          : gc_value_null(j->a));
  return m;
}

static struct gc_value *json_row(struct jb *j, const struct gb_tr_row *r, int whatif) {
  struct gc_value *m = gc_value_map(j->a), *km = gc_value_map(j->a);
  put(j, m, "backend", gc_value_strz(j->a, backend_name(r->backend)));
  put(j, m, "queue", gc_value_strz(j->a, r->queue));
  put(j, m, "sizeClass", gc_value_strz(j->a, gb_timeout_report_size_class_name(r->size_class)));
  put_int(j, m, "gangs", (int64_t)r->gangs);
  put_int(j, m, "scheduled", (int64_t)r->scheduled);
  put_int(j, m, "censored", (int64_t)r->censored);
  put_secs(j, m, "p50Seconds", r->p50_s);
  put_secs(j, m, "p90Seconds", r->p90_s);
  put_secs(j, m, "p99Seconds", r->p99_s);
  put_secs(j, m, "maxSeconds", r->max_s);
  put_secs(j, km, "p50Seconds", r->km_p50_s);
  put_secs(j, km, "p90Seconds", r->km_p90_s);
  put_secs(j, km, "p99Seconds", r->km_p99_s);
  put(j, m, "kaplanMeier", km);
  put(j, m, "neverScheduled", json_never(j, r));
  put_secs(j, m, "timeoutSeconds", r->timeout_s);
  put_int(j, m, "timeoutGangs", (int64_t)r->timeout_gangs);
  put_int(j, m, "exceeded", (int64_t)r->exceeded);
  put_secs(j, m, "suggestedSeconds", r->has_suggestion ? r->suggested_s : NONE);
  put(j, m, "suggestedCapped", gc_value_bool(j->a, r->suggested_capped));
  put_int(j, m, "wouldCut", (int64_t)r->would_cut);
  if (whatif)
    put_int(j, m, "whatIfCut", (int64_t)r->whatif_cut);
  put(j, m, "reason", gc_value_strz(j->a, r->reason));
  return m;
}

static struct gc_value *json_head(struct jb *j, const struct gb_tr_report *rep, int64_t now) {
  const struct gb_tr_options *o = &rep->opts;
  struct gc_value *doc = gc_value_map(j->a), *rule = gc_value_map(j->a), *tot = gc_value_map(j->a);
  char nows[32], text[400];
  gb_timeout_report_format_time(now, nows, sizeof(nows));
  put(j, doc, "now", gc_value_strz(j->a, nows));
  put(j, doc, "quantiles",
      gc_value_strz(j->a, "nearest rank over the scheduled gangs: the value at rank "
                          "ceil(p/100 x n); never-scheduled gangs are censored and reported "
                          "apart (kaplanMeier counts them as still waiting)"));
  put_int(j, rule, "marginPermille", o->rule.margin_permille);
  put_int(j, rule, "floorSeconds", o->rule.floor_s);
  put(j, rule, "maxSeconds",
      o->rule.max_s ? gc_value_int(j->a, o->rule.max_s) : gc_value_null(j->a));
  put(j, rule, "text", gc_value_strz(j->a, rule_text(o, text, sizeof(text))));
  put(j, doc, "rule", rule);
  if (o->has_whatif)
    put_int(j, doc, "whatIfSeconds", o->whatif_s);
  put_int(j, tot, "gangs", (int64_t)rep->gangs);
  put_int(j, tot, "scheduled", (int64_t)rep->scheduled);
  put_int(j, tot, "censored", (int64_t)rep->censored);
  put_int(j, tot, "exceeded", (int64_t)rep->exceeded);
  put_int(j, tot, "wouldCut", (int64_t)rep->would_cut);
  if (o->has_whatif)
    put_int(j, tot, "whatIfCut", (int64_t)rep->whatif_cut);
  put(j, doc, "totals", tot);
  return doc;
}

int gb_tr_write_json(FILE *f, const struct gb_tr_report *rep, int64_t now) {
  struct jb j = {gc_arena_new(0), 0};
  char *text = NULL;
  size_t len = 0;
  int rc = GC_ENOMEM;
  if (!j.a)
    return GC_ENOMEM;
  struct gc_value *doc = json_head(&j, rep, now), *rows = gc_value_seq(j.a);
  for (size_t i = 0; i < rep->n_rows && rows; i++)
    if (gc_seq_push(j.a, rows, json_row(&j, &rep->rows[i], rep->opts.has_whatif)))
      j.failed = 1;
  put(&j, doc, "rows", rows);
  if (!j.failed && (rc = gb_emit_json(doc, 1, &text, &len)) == GC_OK &&
      fwrite(text, 1, len, f) != len)
    rc = GC_EIO;
  free(text);
  gc_arena_free(j.a);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* HTML                                                                     */

/* Okabe-Ito colours, one per size class: told apart with most colour
 * vision deficiencies. */
static const char *const CLASS_COLOR[GB_TR_CLASSES] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                                       "#d55e00"};

/* Writes s with HTML's five special characters escaped. */
static void html_text(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default: fputc(*s, f);
    }
  }
}

/* The chart's geometry: a logarithmic time axis from 1 s to tmax. */
#define CH_W 940
#define CH_X0 70
#define CH_X1 900
#define LANE_ROW 9 /* one row of marks per size class */
struct chart {
  double lmax;     /* log10(tmax) */
  int lane_top;    /* the current timeouts' lane */
  int y0, y1;      /* the plot: y0 top (100 %), y1 bottom (0 %) */
  int lane_bottom; /* the suggested timeouts' lane */
  int height;
};

static double cx(const struct chart *c, int64_t t) {
  double l = t <= 1 ? 0 : log10((double)t);
  return CH_X0 + (CH_X1 - CH_X0) * (l > c->lmax ? 1 : l / c->lmax);
}

static double cy(const struct chart *c, double share) { return c->y1 - (c->y1 - c->y0) * share; }

/* Sets the axis to a little past the largest wait, age or timeout. */
static void chart_init(struct chart *c, const struct gb_tr_row *rows, size_t n) {
  int64_t tmax = 60;
  for (size_t i = 0; i < n; i++) {
    const struct gb_tr_row *r = &rows[i];
    int64_t v[4] = {r->max_s, r->age_max_s, r->timeout_s,
                    r->has_suggestion ? r->suggested_s : NONE};
    for (int k = 0; k < 4; k++)
      if (v[k] != NONE && v[k] > tmax)
        tmax = v[k];
  }
  c->lmax = log10((double)tmax * 1.6);
  c->lane_top = 26;
  c->y0 = c->lane_top + GB_TR_CLASSES * LANE_ROW + 8;
  c->y1 = c->y0 + 220;
  c->lane_bottom = c->y1 + 26;
  c->height = c->lane_bottom + GB_TR_CLASSES * LANE_ROW + 30;
}

static void chart_axes(FILE *f, const struct chart *c) {
  static const struct {
    int64_t s;
    const char *label;
  } ticks[] = {{1, "1s"},     {10, "10s"},   {60, "1m"},     {600, "10m"},    {3600, "1h"},
               {21600, "6h"}, {86400, "1d"}, {604800, "1w"}, {2592000, "30d"}};
  for (size_t i = 0; i < sizeof(ticks) / sizeof(ticks[0]); i++) {
    if (log10((double)ticks[i].s) > c->lmax)
      break;
    double x = cx(c, ticks[i].s);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
            "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
            x, c->y0, x, c->y1, x, c->y1 + 14, ticks[i].label);
  }
  for (int p = 0; p <= 100; p += 25)
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
            "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%d%%</text>\n",
            CH_X0, cy(c, p / 100.0), CH_X1, cy(c, p / 100.0), CH_X0 - 6, cy(c, p / 100.0) + 4, p);
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#444\"/>\n"
          "<text x=\"8\" y=\"%d\" font-size=\"11\">current</text>"
          "<text x=\"8\" y=\"%d\" font-size=\"11\">suggested</text>\n",
          CH_X0, c->y0, CH_X1 - CH_X0, c->y1 - c->y0, c->lane_top + 12, c->lane_bottom + 12);
}

/* A row's cumulative curve: the share of its gangs scheduled within t.  It
 * stops at scheduled / gangs; the never-scheduled are a dashed rise at the
 * right edge and open circles at their ages on that level. */
static void chart_curve(FILE *f, const struct chart *c, const struct gb_tr_row *r) {
  const char *col = CLASS_COLOR[r->size_class];
  double level = (double)r->scheduled / (double)r->gangs;
  fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" d=\"M%d %.1f", col, CH_X0,
          cy(c, 0));
  for (size_t i = 0; i < r->scheduled;) {
    size_t j = i + 1;
    while (j < r->scheduled && r->waits[j] == r->waits[i])
      j++;
    fprintf(f, " H%.1f V%.1f", cx(c, r->waits[i]), cy(c, (double)j / (double)r->gangs));
    i = j;
  }
  fprintf(f, " H%d\"><title>size %s: %zu of %zu gangs scheduled</title></path>\n", CH_X1,
          gb_timeout_report_size_class_name(r->size_class), r->scheduled, r->gangs);
  if (!r->censored)
    return;
  double xe = CH_X1 - 4 - 5 * r->size_class;
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
          "stroke-width=\"2.5\" stroke-dasharray=\"4 3\"><title>%zu never scheduled</title>"
          "</line>\n",
          xe, cy(c, level), xe, cy(c, 1), col, r->censored);
  size_t step = r->censored > 60 ? r->censored / 60 : 1;
  for (size_t i = 0; i < r->censored; i += step)
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#fff\" stroke=\"%s\" "
            "stroke-width=\"1.5\"/>\n",
            cx(c, r->ages[i]), cy(c, level), col);
}

/* The row's current timeout (filled, pointing down, above the plot) and
 * suggested timeout (hollow, pointing up, below it): different lanes, so
 * equal values stay two marks. */
static void chart_marks(FILE *f, const struct chart *c, const struct gb_tr_row *r) {
  const char *col = CLASS_COLOR[r->size_class];
  char d[24];
  if (r->timeout_s != NONE) {
    double x = cx(c, r->timeout_s);
    int y = c->lane_top + LANE_ROW * r->size_class;
    fprintf(
        f,
        "<path d=\"M%.1f %d l-5 -8 h10 z\" fill=\"%s\" stroke=\"#222\" stroke-width=\"0.8\">"
        "<title>size %s: current timeout %s</title></path>\n"
        "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1\"/>\n",
        x, y + 8, col, gb_timeout_report_size_class_name(r->size_class), dur(r->timeout_s, d, "-"),
        x, c->y0, x, c->y1, col);
  }
  if (r->has_suggestion) {
    double x = cx(c, r->suggested_s);
    int y = c->lane_bottom + LANE_ROW * r->size_class;
    fprintf(f,
            "<path d=\"M%.1f %d l-5 8 h10 z\" fill=\"#fff\" stroke=\"%s\" stroke-width=\"2\">"
            "<title>size %s: suggested timeout %s</title></path>\n"
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1\" "
            "stroke-dasharray=\"5 3\"/>\n",
            x, y, col, gb_timeout_report_size_class_name(r->size_class),
            dur(r->suggested_s, d, "-"), x, c->y0, x, c->y1, col);
  }
}

static void chart_legend(FILE *f, const struct chart *c, const struct gb_tr_row *rows, size_t n) {
  int x = CH_X0, y = c->height - 10;
  for (size_t i = 0; i < n; i++) {
    const struct gb_tr_row *r = &rows[i];
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>"
            "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s: %zu",
            x, y - 5, CLASS_COLOR[r->size_class], x + 18, y,
            gb_timeout_report_size_class_name(r->size_class), r->gangs);
    if (r->censored)
      fprintf(f, ", <tspan font-weight=\"bold\">%zu never</tspan>", r->censored);
    fprintf(f, "</text>\n");
    x += 166;
  }
}

/* One chart per backend and queue: rows[0..n) share them. */
static void html_chart(FILE *f, const struct gb_tr_row *rows, size_t n) {
  struct chart c;
  chart_init(&c, rows, n);
  fprintf(f,
          "<svg width=\"%d\" height=\"%d\" role=\"img\" "
          "font-family=\"sans-serif\">\n",
          CH_W, c.height);
  chart_axes(f, &c);
  for (size_t i = 0; i < n; i++)
    chart_curve(f, &c, &rows[i]);
  for (size_t i = 0; i < n; i++)
    chart_marks(f, &c, &rows[i]);
  chart_legend(f, &c, rows, n);
  fprintf(f, "</svg>\n");
}

/* The current timeout, with the share of the row's gangs that have it when
 * not all do. */
static void html_timeout_cell(const struct gb_tr_row *r, char *buf, size_t cap) {
  char d[24];
  if (r->timeout_gangs == r->gangs)
    snprintf(buf, cap, "%s", dur(r->timeout_s, d, "none"));
  else
    snprintf(buf, cap, "%s <small title=\"%zu of %zu gangs\">(%.0f%%)</small>",
             dur(r->timeout_s, d, "none"), r->timeout_gangs, r->gangs,
             100.0 * (double)r->timeout_gangs / (double)r->gangs);
}

static void html_table_row(FILE *f, const struct gb_tr_row *r, int whatif) {
  char a[24], b[24], c[24], k[24], e[24], t[128];
  html_timeout_cell(r, t, sizeof(t));
  fprintf(f, "<tr><td>%s</td><td>", r->backend ? r->backend->short_name : "?");
  html_text(f, *r->queue ? r->queue : "-");
  fprintf(f,
          "</td><td><span class=\"sw\" style=\"background:%s\"></span>%s</td><td>%zu</td>"
          "<td>%zu</td><td%s>%zu</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
          "<td class=\"cur\">%s</td><td class=\"sug\">%s</td><td>%zu</td>",
          CLASS_COLOR[r->size_class], gb_timeout_report_size_class_name(r->size_class), r->gangs,
          r->scheduled, r->censored ? " class=\"never\"" : "", r->censored,
          dur(r->p50_s, a, "&mdash;"), dur(r->p90_s, b, "&mdash;"), dur(r->p99_s, c, "&mdash;"),
          dur(r->km_p90_s, k, "&mdash;"), t,
          r->has_suggestion ? dur(r->suggested_s, e, "&mdash;") : "&mdash;", r->would_cut);
  if (whatif)
    fprintf(f, "<td>%zu</td>", r->whatif_cut);
  fprintf(f, "</tr>\n");
}

static void html_table(FILE *f, const struct gb_tr_report *rep) {
  char w[24];
  fprintf(f, "<table>\n<tr><th>backend</th><th>queue</th><th>size</th><th>gangs</th>"
             "<th>scheduled</th><th>never<br>scheduled</th><th>p50</th><th>p90</th><th>p99</th>"
             "<th>KM p90</th><th>current</th><th>suggested</th><th>would cut</th>");
  if (rep->opts.has_whatif)
    fprintf(f, "<th>cut by %s</th>", dur(rep->opts.whatif_s, w, "-"));
  fprintf(f, "</tr>\n");
  for (size_t i = 0; i < rep->n_rows; i++)
    html_table_row(f, &rep->rows[i], rep->opts.has_whatif);
  fprintf(f, "</table>\n");
}

/* The rule stated, with the first row that has a suggestion worked through. */
static void html_rule(FILE *f, const struct gb_tr_report *rep) {
  char rule[400];
  fprintf(f, "<p class=\"rule\"><b>Quantiles</b>: nearest rank over the gangs that were "
             "scheduled (p50 is the wait at rank &lceil;0.5&nbsp;n&rceil;); gangs never "
             "scheduled are not in them (their waits are unknown): they are counted apart, and "
             "the Kaplan&ndash;Meier column (KM p90) counts them as still waiting at their "
             "age (&mdash; where too many still wait to tell).<br><b>Rule</b>: ");
  html_text(f, rule_text(&rep->opts, rule, sizeof(rule)));
  /* The example: the largest row whose suggestion is neither the floor nor
   * a cap, so each step of the rule shows; else the first with one. */
  const struct gb_tr_row *ex = NULL;
  for (size_t i = 0; i < rep->n_rows; i++) {
    const struct gb_tr_row *r = &rep->rows[i];
    int plain = r->has_suggestion && !r->suggested_capped &&
                r->suggested_s > rep->opts.rule.floor_s;
    if (plain && (!ex || r->gangs > ex->gangs || ex->suggested_capped ||
                  ex->suggested_s <= rep->opts.rule.floor_s))
      ex = r;
    else if (!ex && r->has_suggestion)
      ex = r;
  }
  for (const struct gb_tr_row *r = ex; r; r = NULL) {
    fprintf(f, ".<br><b>Example</b> (%s ", backend_name(r->backend));
    html_text(f, *r->queue ? r->queue : "-");
    fprintf(f, " size %s): ", gb_timeout_report_size_class_name(r->size_class));
    html_text(f, r->reason);
  }
  fprintf(f, ".</p>\n");
}

static void html_head(FILE *f, const struct gb_tr_report *rep, int64_t now) {
  char nows[32];
  gb_timeout_report_format_time(now, nows, sizeof(nows));
  fprintf(f,
          "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>gangbridge timeouts report</title>\n<style>\n"
          "body{font-family:sans-serif;margin:20px;color:#222;background:#fff}\n"
          "h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;border-bottom:1px solid #ccc;"
          "margin-top:26px}\n"
          "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
          "padding:2px 4px;text-align:right;white-space:nowrap}th{background:#f2f2f2}"
          "small{color:#555;font-weight:normal}"
          "td:nth-child(-n+3){text-align:left}\n"
          ".cur{color:#b00020;font-weight:bold}.sug{color:#00703c;font-weight:bold}"
          ".never{background:#fde8e8;font-weight:bold}\n"
          ".sw{display:inline-block;width:10px;height:10px;margin-right:5px}"
          ".rule,.key{font-size:13px;color:#333;max-width:1100px}\n"
          "</style></head><body>\n<h1>Gang scheduling waits and timeouts</h1>\n"
          "<p>%zu gangs up to %s: %zu scheduled, <b>%zu never scheduled</b>, %zu exceeded "
          "their timeout; the suggestions would cut %zu.</p>\n",
          rep->gangs, nows, rep->scheduled, rep->censored, rep->exceeded, rep->would_cut);
}

int gb_tr_write_html(FILE *f, const struct gb_tr_report *rep, int64_t now) {
  html_head(f, rep, now);
  html_table(f, rep);
  html_rule(f, rep);
  fprintf(f,
          "<p class=\"key\">Charts: the share of each size class's gangs scheduled within "
          "a wait (logarithmic time). A curve that stops short of 100&nbsp;%% has gangs that "
          "never scheduled: the dashed rise at the right edge, their ages as open circles "
          "(the legend counts them). Filled marks above a chart: the current timeout; hollow marks "
          "below it: the suggested one; each size class has its own row of marks, in its "
          "colour.</p>\n");
  for (size_t i = 0; i < rep->n_rows;) {
    size_t j = i + 1;
    while (j < rep->n_rows && rep->rows[j].backend == rep->rows[i].backend &&
           !strcmp(rep->rows[j].queue, rep->rows[i].queue))
      j++;
    char none[64]; /* a backend without queues: "(none: <backend>)" */
    snprintf(none, sizeof(none), "(none: %s)", backend_name(rep->rows[i].backend));
    fprintf(f, "<h2>%s queue ", backend_name(rep->rows[i].backend));
    html_text(f, *rep->rows[i].queue ? rep->rows[i].queue : none);
    fprintf(f, "</h2>\n");
    html_chart(f, &rep->rows[i], j - i);
    i = j;
  }
  fprintf(f, "</body></html>\n");
  return ferror(f) ? GC_EIO : GC_OK;
}
