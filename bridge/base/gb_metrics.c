/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_metrics: Prometheus registry and text exposition (see gb_metrics.h).
 *
 * Each family keeps its series in a chained hash table keyed by the label
 * values and guarded by the family's mutex.  A series is one allocation: the
 * struct, the histogram bucket counts, the value pointers and the strings.
 * Rendering copies nothing but pointers: it sorts the series of one family
 * under that family's lock and formats them straight into the output buffer.
 */
#include "gb_hash.h"
#include "gb_buf.h"
#include "gb_metrics.h"
#include "gb_metrics_test.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double default_buckets[] = {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};

struct series {
  struct gb_hnode node; /* first member: the family table's link and hash */
  double value; /* counter/gauge value, histogram sum */
  uint64_t count;
  uint64_t *buckets; /* histogram: per-bound counts (not cumulative) */
  char **values;
};

struct gb_metric {
  char *name;
  char *help;
  enum gb_metric_type type;
  char **label_names;
  size_t n_labels;
  double *bounds;
  size_t n_bounds;
  pthread_mutex_t mu;
  struct gb_htab table; /* of struct series; set up with the first series */
  size_t n_series;
  size_t max_series;
  unsigned long long dropped;
};

struct collector {
  void (*fn)(void *ctx, struct gb_metrics *reg);
  void *ctx;
};

struct gb_metrics {
  pthread_mutex_t mu;
  struct gb_metric **families;
  size_t n, cap;
  struct collector collectors[GB_METRICS_MAX_COLLECTORS];
  size_t n_collectors;
};

struct gb_metrics *gb_metrics_new(void) {
  struct gb_metrics *reg = calloc(1, sizeof(*reg));
  if (reg)
    pthread_mutex_init(&reg->mu, NULL);
  return reg;
}

static void free_series(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  free(n);
}

static void free_family(struct gb_metric *m) {
  if (!m)
    return;
  gb_htab_clear(&m->table, free_series, NULL);
  gb_htab_free(&m->table);
  for (size_t i = 0; i < m->n_labels; i++)
    free(m->label_names[i]);
  free(m->label_names);
  free(m->bounds);
  free(m->name);
  free(m->help);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

void gb_metrics_free(struct gb_metrics *reg) {
  if (!reg)
    return;
  for (size_t i = 0; i < reg->n; i++)
    free_family(reg->families[i]);
  free(reg->families);
  pthread_mutex_destroy(&reg->mu);
  free(reg);
}

static int valid_metric_name(const char *s) {
  if (!s || !*s)
    return 0;
  for (const char *p = s; *p; p++) {
    char c = *p;
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(p != s && c >= '0' && c <= '9'))
      return 0;
  }
  return 1;
}

static int valid_label_name(const char *s) {
  if (!s || !*s || !strncmp(s, "__", 2))
    return 0;
  for (const char *p = s; *p; p++) {
    char c = *p;
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(p != s && c >= '0' && c <= '9'))
      return 0;
  }
  return 1;
}

static uint64_t hash_values(const char *const *values, size_t n) {
  uint64_t h = GB_HASH_FNV_OFFSET;
  for (size_t i = 0; i < n; i++) {
    h = gb_hash_fnv1a(h, values[i], strlen(values[i]));
    h = gb_hash_fnv1a(h, "\xff", 1); /* separator: ("ab","c") and ("a","bc") differ */
  }
  return h;
}

static struct series *new_series(const struct gb_metric *m, const char *const *values,
                                 uint64_t hash) {
  size_t strings = 0;
  for (size_t i = 0; i < m->n_labels; i++)
    strings += strlen(values[i]) + 1;
  size_t nb = m->type == GB_METRIC_HISTOGRAM ? m->n_bounds : 0;
  size_t size = sizeof(struct series) + nb * sizeof(uint64_t) + m->n_labels * sizeof(char *) +
                strings;
  struct series *s = calloc(1, size);
  if (!s)
    return NULL;
  char *p = (char *)(s + 1);
  s->buckets = (uint64_t *)p;
  p += nb * sizeof(uint64_t);
  s->values = (char **)p;
  p += m->n_labels * sizeof(char *);
  for (size_t i = 0; i < m->n_labels; i++) {
    size_t len = strlen(values[i]);
    memcpy(p, values[i], len + 1);
    s->values[i] = p;
    p += len + 1;
  }
  s->node.hash = hash;
  return s;
}

static int check_values(const struct gb_metric *m, const char *const *values) {
  if (m->n_labels && !values)
    return GC_EINVAL;
  for (size_t i = 0; i < m->n_labels; i++)
    if (!values[i] || strlen(values[i]) > GB_METRICS_LABEL_VALUE_MAX)
      return GC_EINVAL;
  return 0;
}

/* Finds or creates a series; the family lock must be held. */
static int get_series(struct gb_metric *m, const char *const *values, int create,
                      struct series **out) {
  uint64_t h = hash_values(values, m->n_labels);
  for (struct gb_hnode *n = gb_htab_chain(&m->table, h); n; n = n->next) {
    struct series *s = (struct series *)n;
    if (n->hash != h)
      continue;
    size_t i = 0;
    while (i < m->n_labels && !strcmp(s->values[i], values[i]))
      i++;
    if (i == m->n_labels) {
      *out = s;
      return 0;
    }
  }
  if (!create)
    return GC_ENOTFOUND;
  if (m->n_series >= m->max_series) {
    m->dropped++;
    return GC_ELIMIT;
  }
  if (!m->table.buckets && gb_htab_init(&m->table, 16) < 0)
    return GC_ENOMEM;
  struct series *s = new_series(m, values, h);
  if (!s)
    return GC_ENOMEM;
  gb_htab_insert(&m->table, &s->node);
  m->n_series++;
  *out = s;
  return 0;
}

static int add_family(struct gb_metrics *reg, enum gb_metric_type type, const char *name,
                      const char *help, const char *const *label_names, size_t n_labels,
                      const double *buckets, size_t n_buckets, struct gb_metric **out,
                      struct gc_diags *d) {
  if (!reg || !out)
    return GC_EUSAGE;
  *out = NULL;
  if (!valid_metric_name(name)) {
    gc_diags_addf(d, "metrics: '%s' is not a valid metric name", name ? name : "(null)");
    return GC_EINVAL;
  }
  if (n_labels > GB_METRICS_MAX_LABELS || (n_labels && !label_names)) {
    gc_diags_addf(d, "metrics: %s: at most %d label names", name, GB_METRICS_MAX_LABELS);
    return GC_EINVAL;
  }
  for (size_t i = 0; i < n_labels; i++) {
    if (!valid_label_name(label_names[i]) ||
        (type == GB_METRIC_HISTOGRAM && !strcmp(label_names[i], "le"))) {
      gc_diags_addf(d, "metrics: %s: '%s' is not a valid label name", name,
                    label_names[i] ? label_names[i] : "(null)");
      return GC_EINVAL;
    }
    for (size_t j = 0; j < i; j++)
      if (!strcmp(label_names[i], label_names[j])) {
        gc_diags_addf(d, "metrics: %s: label '%s' given twice", name, label_names[i]);
        return GC_EINVAL;
      }
  }
  if (type == GB_METRIC_HISTOGRAM) {
    if (!buckets || !n_buckets) {
      buckets = default_buckets;
      n_buckets = sizeof(default_buckets) / sizeof(default_buckets[0]);
    }
    if (n_buckets > GB_METRICS_MAX_BUCKETS) {
      gc_diags_addf(d, "metrics: %s: at most %d buckets", name, GB_METRICS_MAX_BUCKETS);
      return GC_EINVAL;
    }
    for (size_t i = 0; i < n_buckets; i++)
      if (!isfinite(buckets[i]) || (i && buckets[i] <= buckets[i - 1])) {
        gc_diags_addf(d, "metrics: %s: bucket bounds must be finite and strictly increasing",
                      name);
        return GC_EINVAL;
      }
  } else {
    n_buckets = 0;
  }

  struct gb_metric *m = calloc(1, sizeof(*m));
  if (!m)
    return GC_ENOMEM;
  pthread_mutex_init(&m->mu, NULL);
  m->type = type;
  m->max_series = GB_METRICS_MAX_SERIES;
  m->name = strdup(name);
  m->help = strdup(help ? help : "");
  m->label_names = n_labels ? calloc(n_labels, sizeof(char *)) : NULL;
  m->bounds = n_buckets ? malloc(n_buckets * sizeof(double)) : NULL;
  int ok = m->name && m->help && (!n_labels || m->label_names) && (!n_buckets || m->bounds);
  for (size_t i = 0; ok && i < n_labels; i++) {
    m->label_names[i] = strdup(label_names[i]);
    if (!m->label_names[i])
      ok = 0;
    else
      m->n_labels = i + 1;
  }
  if (!ok) {
    free_family(m);
    return GC_ENOMEM;
  }
  if (n_buckets)
    memcpy(m->bounds, buckets, n_buckets * sizeof(double));
  m->n_bounds = n_buckets;
  /* A family without labels has exactly one series: show it from the start
   * (as client_golang does), so a scrape sees 0 rather than nothing. */
  if (!n_labels) {
    struct series *s;
    if (get_series(m, NULL, 1, &s) < 0) {
      free_family(m);
      return GC_ENOMEM;
    }
  }

  int rc = 0;
  pthread_mutex_lock(&reg->mu);
  for (size_t i = 0; i < reg->n; i++)
    if (!strcmp(reg->families[i]->name, name)) {
      gc_diags_addf(d, "metrics: %s is registered twice", name);
      rc = GC_EUSAGE;
      goto out;
    }
  if (reg->n == reg->cap) {
    size_t cap = reg->cap ? reg->cap * 2 : 16;
    struct gb_metric **f = realloc(reg->families, cap * sizeof(*f));
    if (!f) {
      rc = GC_ENOMEM;
      goto out;
    }
    reg->families = f;
    reg->cap = cap;
  }
  reg->families[reg->n++] = m;
out:
  pthread_mutex_unlock(&reg->mu);
  if (rc < 0)
    free_family(m);
  else
    *out = m;
  return rc;
}

int gb_metrics_counter(struct gb_metrics *reg, const char *name, const char *help,
                       const char *const *label_names, size_t n_labels, struct gb_metric **out,
                       struct gc_diags *d) {
  return add_family(reg, GB_METRIC_COUNTER, name, help, label_names, n_labels, NULL, 0, out, d);
}

int gb_metrics_gauge(struct gb_metrics *reg, const char *name, const char *help,
                     const char *const *label_names, size_t n_labels, struct gb_metric **out,
                     struct gc_diags *d) {
  return add_family(reg, GB_METRIC_GAUGE, name, help, label_names, n_labels, NULL, 0, out, d);
}

int gb_metrics_histogram(struct gb_metrics *reg, const char *name, const char *help,
                         const char *const *label_names, size_t n_labels, const double *buckets,
                         size_t n_buckets, struct gb_metric **out, struct gc_diags *d) {
  return add_family(reg, GB_METRIC_HISTOGRAM, name, help, label_names, n_labels, buckets,
                    n_buckets, out, d);
}

void gb_metric_set_max_series(struct gb_metric *m, size_t max_series) {
  if (!m)
    return;
  pthread_mutex_lock(&m->mu);
  m->max_series = max_series ? max_series : GB_METRICS_MAX_SERIES;
  pthread_mutex_unlock(&m->mu);
}

unsigned long long gb_metric_dropped(struct gb_metric *m) {
  if (!m)
    return 0;
  pthread_mutex_lock(&m->mu);
  unsigned long long n = m->dropped;
  pthread_mutex_unlock(&m->mu);
  return n;
}

enum op { OP_ADD, OP_SET, OP_OBSERVE };

static int update(struct gb_metric *m, const char *const *values, double v, enum op op) {
  if (!m)
    return 0;
  int rc = check_values(m, values);
  if (rc < 0)
    return rc;
  if (isnan(v))
    return GC_EINVAL;
  pthread_mutex_lock(&m->mu);
  struct series *s = NULL;
  rc = get_series(m, values, 1, &s);
  if (rc == 0) {
    switch (op) {
    case OP_ADD: s->value += v; break;
    case OP_SET: s->value = v; break;
    case OP_OBSERVE: {
      size_t i = 0;
      while (i < m->n_bounds && v > m->bounds[i])
        i++;
      if (i < m->n_bounds)
        s->buckets[i]++;
      s->count++;
      s->value += v;
      break;
    }
    }
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int gb_metric_counter_add(struct gb_metric *m, const char *const *values, double v) {
  if (!m)
    return 0;
  if (m->type != GB_METRIC_COUNTER || !isfinite(v) || v < 0)
    return GC_EINVAL;
  return update(m, values, v, OP_ADD);
}

int gb_metric_counter_inc(struct gb_metric *m, const char *const *values) {
  return gb_metric_counter_add(m, values, 1);
}

int gb_metric_gauge_set(struct gb_metric *m, const char *const *values, double v) {
  if (!m)
    return 0;
  if (m->type != GB_METRIC_GAUGE)
    return GC_EINVAL;
  return update(m, values, v, OP_SET);
}

int gb_metric_gauge_add(struct gb_metric *m, const char *const *values, double v) {
  if (!m)
    return 0;
  if (m->type != GB_METRIC_GAUGE || !isfinite(v))
    return GC_EINVAL;
  return update(m, values, v, OP_ADD);
}

int gb_metric_histogram_observe(struct gb_metric *m, const char *const *values, double v) {
  if (!m)
    return 0;
  if (m->type != GB_METRIC_HISTOGRAM)
    return GC_EINVAL;
  return update(m, values, v, OP_OBSERVE);
}

int gb_metric_value(struct gb_metric *m, const char *const *values, double *out) {
  if (!m || !out)
    return GC_EINVAL;
  int rc = check_values(m, values);
  if (rc < 0)
    return rc;
  pthread_mutex_lock(&m->mu);
  struct series *s = NULL;
  rc = get_series(m, values, 0, &s);
  if (rc == 0)
    *out = m->type == GB_METRIC_HISTOGRAM ? (double)s->count : s->value;
  pthread_mutex_unlock(&m->mu);
  return rc;
}

void gb_metric_clear(struct gb_metric *m) {
  if (!m)
    return;
  pthread_mutex_lock(&m->mu);
  gb_htab_clear(&m->table, free_series, NULL);
  m->n_series = 0;
  if (!m->n_labels) {
    struct series *s;
    get_series(m, NULL, 1, &s); /* the table exists, so only calloc can fail */
  }
  pthread_mutex_unlock(&m->mu);
}

int gb_metrics_add_collector(struct gb_metrics *reg, void (*fn)(void *ctx, struct gb_metrics *reg),
                             void *ctx) {
  if (!reg || !fn)
    return GC_EINVAL;
  int rc = 0;
  pthread_mutex_lock(&reg->mu);
  if (reg->n_collectors >= GB_METRICS_MAX_COLLECTORS) {
    rc = GC_ELIMIT;
  } else {
    reg->collectors[reg->n_collectors].fn = fn;
    reg->collectors[reg->n_collectors].ctx = ctx;
    reg->n_collectors++;
  }
  pthread_mutex_unlock(&reg->mu);
  return rc;
}

/* ---- text exposition -------------------------------------------------- */

/* The largest exposition rendered (64 MiB): series counts are bounded per
 * metric, so only a misuse of the registry comes near. */
#define EXPOSITION_MAX_BYTES ((size_t)64 << 20)

static void buf_double(struct gb_buf *b, double v) {
  char tmp[40];
  gb_metrics_format_double(v, tmp, sizeof(tmp));
  gb_buf_addstr(b, tmp);
}

static void buf_u64(struct gb_buf *b, uint64_t v) {
  char tmp[32];
  /* Counts are written as floats too, as client_golang does; exact below 2^53. */
  gb_metrics_format_double((double)v, tmp, sizeof(tmp));
  gb_buf_addstr(b, tmp);
}

/* HELP text escapes backslash and newline; label values also the quote. */
static void buf_escaped(struct gb_buf *b, const char *s, int quote) {
  const char *run = s;
  for (; *s; s++) {
    const char *rep = NULL;
    if (*s == '\\')
      rep = "\\\\";
    else if (*s == '\n')
      rep = "\\n";
    else if (quote && *s == '"')
      rep = "\\\"";
    if (!rep)
      continue;
    gb_buf_add(b, run, (size_t)(s - run));
    gb_buf_addstr(b, rep);
    run = s + 1;
  }
  gb_buf_add(b, run, (size_t)(s - run));
}

void gb_metrics_format_double(double v, char *buf, size_t size) {
  if (!buf || !size)
    return;
  if (isnan(v)) {
    snprintf(buf, size, "NaN");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
    return;
  }
  if (v == 0) {
    snprintf(buf, size, signbit(v) ? "-0" : "0");
    return;
  }
  /* The shortest number of significant digits that reads back exactly. */
  char tmp[40];
  int p = 1;
  for (; p <= 17; p++) {
    snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
    if (strtod(tmp, NULL) == v)
      break;
  }
  if (p > 17)
    p = 17;
  const char *e = strchr(tmp, 'e');
  long x = e ? strtol(e + 1, NULL, 10) : 0;
  /* strconv's 'g' with the shortest precision switches to the exponent form
   * when the decimal exponent is below -4 or at least 6 (1234567 is written
   * "1.234567e+06"), and otherwise writes plain digits without trailing
   * zeros. */
  if (x < -4 || x >= 6) {
    snprintf(buf, size, "%s", tmp);
  } else {
    int decimals = p - 1 - (int)x;
    if (decimals < 0)
      decimals = 0;
    snprintf(buf, size, "%.*f", decimals, v);
  }
}

static void write_labels(struct gb_buf *b, const struct gb_metric *m, const struct series *s,
                         const char *le) {
  if (!m->n_labels && !le)
    return;
  gb_buf_addstr(b, "{");
  for (size_t i = 0; i < m->n_labels; i++) {
    if (i)
      gb_buf_addstr(b, ",");
    gb_buf_addstr(b, m->label_names[i]);
    gb_buf_addstr(b, "=\"");
    buf_escaped(b, s->values[i], 1);
    gb_buf_addstr(b, "\"");
  }
  if (le) {
    gb_buf_addstr(b, m->n_labels ? ",le=\"" : "le=\"");
    gb_buf_addstr(b, le);
    gb_buf_addstr(b, "\"");
  }
  gb_buf_addstr(b, "}");
}

static size_t g_sort_n_labels; /* only read inside qsort, under the family lock */
static pthread_mutex_t g_sort_mu = PTHREAD_MUTEX_INITIALIZER;

static int cmp_series(const void *a, const void *b) {
  const struct series *x = *(const struct series *const *)a;
  const struct series *y = *(const struct series *const *)b;
  for (size_t i = 0; i < g_sort_n_labels; i++) {
    int c = strcmp(x->values[i], y->values[i]);
    if (c)
      return c;
  }
  return 0;
}

static int cmp_family(const void *a, const void *b) {
  const struct gb_metric *x = *(const struct gb_metric *const *)a;
  const struct gb_metric *y = *(const struct gb_metric *const *)b;
  return strcmp(x->name, y->name);
}

static void render_family(struct gb_buf *b, struct gb_metric *m) {
  static const char *const type_names[] = {"counter", "gauge", "histogram"};
  gb_buf_addstr(b, "# HELP ");
  gb_buf_addstr(b, m->name);
  gb_buf_addstr(b, " ");
  buf_escaped(b, m->help, 0);
  gb_buf_addstr(b, "\n# TYPE ");
  gb_buf_addstr(b, m->name);
  gb_buf_addstr(b, " ");
  gb_buf_addstr(b, type_names[m->type]);
  gb_buf_addstr(b, "\n");

  pthread_mutex_lock(&m->mu);
  struct series **all = m->n_series ? malloc(m->n_series * sizeof(*all)) : NULL;
  if (m->n_series && !all) {
    gb_buf_fail(b, GC_ENOMEM);
    pthread_mutex_unlock(&m->mu);
    return;
  }
  size_t n = 0;
  size_t cursor = 0;
  for (struct gb_hnode *e = gb_htab_next(&m->table, &cursor, NULL); e;
       e = gb_htab_next(&m->table, &cursor, e))
    all[n++] = (struct series *)e;
  if (n > 1) {
    pthread_mutex_lock(&g_sort_mu);
    g_sort_n_labels = m->n_labels;
    qsort(all, n, sizeof(*all), cmp_series);
    pthread_mutex_unlock(&g_sort_mu);
  }
  for (size_t k = 0; k < n; k++) {
    const struct series *s = all[k];
    if (m->type != GB_METRIC_HISTOGRAM) {
      gb_buf_addstr(b, m->name);
      write_labels(b, m, s, NULL);
      gb_buf_addstr(b, " ");
      buf_double(b, s->value);
      gb_buf_addstr(b, "\n");
      continue;
    }
    uint64_t cum = 0;
    char le[40];
    for (size_t i = 0; i <= m->n_bounds; i++) {
      if (i < m->n_bounds) {
        cum += s->buckets[i];
        gb_metrics_format_double(m->bounds[i], le, sizeof(le));
      } else {
        cum = s->count;
        snprintf(le, sizeof(le), "+Inf");
      }
      gb_buf_addstr(b, m->name);
      gb_buf_addstr(b, "_bucket");
      write_labels(b, m, s, le);
      gb_buf_addstr(b, " ");
      buf_u64(b, cum);
      gb_buf_addstr(b, "\n");
    }
    gb_buf_addstr(b, m->name);
    gb_buf_addstr(b, "_sum");
    write_labels(b, m, s, NULL);
    gb_buf_addstr(b, " ");
    buf_double(b, s->value);
    gb_buf_addstr(b, "\n");
    gb_buf_addstr(b, m->name);
    gb_buf_addstr(b, "_count");
    write_labels(b, m, s, NULL);
    gb_buf_addstr(b, " ");
    buf_u64(b, s->count);
    gb_buf_addstr(b, "\n");
  }
  pthread_mutex_unlock(&m->mu);
  free(all);
}

int gb_metrics_render(struct gb_metrics *reg, char **out, size_t *len) {
  if (!reg || !out)
    return GC_EINVAL;
  *out = NULL;
  if (len)
    *len = 0;
  struct collector cols[GB_METRICS_MAX_COLLECTORS];
  pthread_mutex_lock(&reg->mu);
  size_t n_cols = reg->n_collectors;
  memcpy(cols, reg->collectors, n_cols * sizeof(cols[0]));
  pthread_mutex_unlock(&reg->mu);
  for (size_t i = 0; i < n_cols; i++)
    cols[i].fn(cols[i].ctx, reg);

  struct gb_buf b;
  gb_buf_init(&b, EXPOSITION_MAX_BYTES);
  pthread_mutex_lock(&reg->mu);
  struct gb_metric **fams = reg->n ? malloc(reg->n * sizeof(*fams)) : NULL;
  size_t n = reg->n;
  if (fams) {
    memcpy(fams, reg->families, n * sizeof(*fams));
    qsort(fams, n, sizeof(*fams), cmp_family);
    for (size_t i = 0; i < n; i++)
      render_family(&b, fams[i]);
  } else if (n) {
    gb_buf_fail(&b, GC_ENOMEM);
  }
  pthread_mutex_unlock(&reg->mu);
  free(fams);
  return gb_buf_take(&b, out, len);
}

/* ---- the gangbridge metric set ---------------------------------------- */

/* Kubernetes API calls: 1 ms to 30 s (client timeouts are at most 30 s). */
static const double api_buckets[] = {.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5,
                                     10, 30};
/* One reconcile: compute plus at most a few API calls. */
static const double reconcile_buckets[] = {.0005, .001, .0025, .005, .01, .025, .05, .1, .25,
                                           .5, 1, 2.5, 5, 10};
/* Gang time-to-schedule: from PodGroup creation to Running; seconds to an hour. */
static const double tts_buckets[] = {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};

int gb_service_metrics_register(struct gb_metrics *reg, const char *version,
                                struct gb_service_metrics *m, struct gc_diags *d) {
  if (!reg || !m)
    return GC_EUSAGE;
  memset(m, 0, sizeof(*m));
  static const char *const l_result[] = {"result"};
  static const char *const l_errors[] = {"component", "reason"};
  static const char *const l_api[] = {"verb", "resource", "code"};
  static const char *const l_watch[] = {"resource", "reason"};
  static const char *const l_pg[] = {"backend", "phase"};
  static const char *const l_gang[] = {"backend", "queue", "size"};
  static const char *const l_webhook[] = {"backend", "result"};
  static const char *const l_http[] = {"server", "route", "code"};
  static const char *const l_version[] = {"version"};
  int rc;
#define TRY(x)                                                                                    \
  do {                                                                                            \
    rc = (x);                                                                                     \
    if (rc < 0)                                                                                   \
      return rc;                                                                                  \
  } while (0)
  TRY(gb_metrics_counter(reg, "gangbridge_reconciles_total",
                         "TrainJob reconciles finished, by result (success, error, requeue, "
                         "skipped).",
                         l_result, 1, &m->reconciles, d));
  TRY(gb_metrics_histogram(reg, "gangbridge_reconcile_duration_seconds",
                           "Time spent in one TrainJob reconcile, API calls included.", NULL, 0,
                           reconcile_buckets,
                           sizeof(reconcile_buckets) / sizeof(reconcile_buckets[0]),
                           &m->reconcile_seconds, d));
  TRY(gb_metrics_counter(reg, "gangbridge_errors_total",
                         "Errors by component (kube, informer, reconcile, webhook, http, "
                         "leader) and reason.",
                         l_errors, 2, &m->errors, d));
  TRY(gb_metrics_gauge(reg, "gangbridge_workqueue_depth",
                       "TrainJob keys waiting in the work queue (not counting ones in "
                       "progress).",
                       NULL, 0, &m->queue_depth, d));
  TRY(gb_metrics_counter(reg, "gangbridge_workqueue_retries_total",
                         "Keys put back in the work queue with a rate-limited delay.", NULL, 0,
                         &m->queue_retries, d));
  TRY(gb_metrics_histogram(reg, "gangbridge_api_request_duration_seconds",
                           "Kubernetes API request latency by verb, resource and HTTP status "
                           "code (\"error\" when no response).",
                           l_api, 3, api_buckets, sizeof(api_buckets) / sizeof(api_buckets[0]),
                           &m->api_latency, d));
  TRY(gb_metrics_counter(reg, "gangbridge_watch_restarts_total",
                         "Watch streams restarted, by resource and reason (gone, timeout, "
                         "error).",
                         l_watch, 2, &m->watch_restarts, d));
  TRY(gb_metrics_gauge(reg, "gangbridge_podgroups",
                       "PodGroups written by gangbridge, by backend and status phase.", l_pg, 2,
                       &m->podgroups, d));
  TRY(gb_metrics_histogram(reg, "gangbridge_gang_time_to_schedule_seconds",
                           "Seconds from a PodGroup's creation until its gang was scheduled, "
                           "by backend, queue and gang size class.",
                           l_gang, 3, tts_buckets, sizeof(tts_buckets) / sizeof(tts_buckets[0]),
                           &m->time_to_schedule, d));
  TRY(gb_metrics_counter(reg, "gangbridge_webhook_admissions_total",
                         "Pod admission reviews answered, by backend and result (patched, "
                         "unchanged, skipped, denied, invalid).",
                         l_webhook, 2, &m->webhook, d));
  TRY(gb_metrics_counter(reg, "gangbridge_http_requests_total",
                         "HTTP requests served, by server, route and status code.", l_http, 3,
                         &m->http_requests, d));
  TRY(gb_metrics_gauge(reg, "gangbridge_leader",
                       "1 while this replica holds the leader lease, else 0.", NULL, 0,
                       &m->leader, d));
  TRY(gb_metrics_gauge(reg, "gangbridge_build_info", "Always 1; the version label says which.",
                       l_version, 1, &m->build_info, d));
#undef TRY
  const char *v[] = {version ? version : "unknown"};
  return gb_metric_gauge_set(m->build_info, v, 1);
}
