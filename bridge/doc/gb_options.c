/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_options: the table-driven loader (see the header).  Values are parsed
 * from text in one place (set_value), whether the text is a default, a
 * flag, --set or a YAML scalar, so every source takes the same values and
 * gives the same messages; the YAML walk only adds the type rules of a
 * typed document (a quoted number is a string) and the file:line:col.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gb_manifest.h"
#include "gb_options.h"
#include "gb_options_test.h"
#include "gc_duration.h"
#include "gc_value.h"

#define MAX_TEXT 4096 /* a string value, or a list's items joined */
#define MAX_DEPTH 8   /* segments of a key path */

/* ---- keys ---------------------------------------------------------------------- */

/* Calls the body for every key of s: p is the part index, k the key and i
 * its index over the whole set. */
#define FOR_KEYS(s, p, k, i)                                                                       \
  for (size_t p = 0, i = 0; p < (s)->n_parts; p++)                                                 \
    for (const struct gb_opt *k = (s)->parts[p].table->keys;                                       \
         k < (s)->parts[p].table->keys + (s)->parts[p].table->n; k++, i++)

/* The index of k in s (and its options struct), or -1. */
static long locate(const struct gb_options *s, const struct gb_opt *k, void **opts) {
  FOR_KEYS(s, p, it, i) {
    if (it == k) {
      if (opts)
        *opts = s->parts[p].opts;
      return (long)i;
    }
  }
  return -1;
}

const struct gb_opt *gb_options_find(const struct gb_options *s, const char *path) {
  FOR_KEYS(s, p, k, i) {
    if (!strcmp(k->path, path))
      return k;
  }
  return NULL;
}

const struct gb_opt *gb_options_find_flag(const struct gb_options *s, const char *flag,
                                          size_t len) {
  FOR_KEYS(s, p, k, i) {
    if (k->flag && strlen(k->flag) == len && !strncmp(k->flag, flag, len))
      return k;
  }
  return NULL;
}

/* 1 when some key's path starts with prefix[0..len) followed by '.'. */
static int is_section(const struct gb_options *s, const char *prefix, size_t len) {
  FOR_KEYS(s, p, k, i) {
    if (!strncmp(k->path, prefix, len) && k->path[len] == '.')
      return 1;
  }
  return 0;
}

const char *gb_options_where(const struct gb_options *s, const char *path) {
  const struct gb_opt *k = gb_options_find(s, path);
  long i = k ? locate(s, k, NULL) : -1;
  return i >= 0 ? s->where[i] : NULL;
}

/* ---- did you mean ------------------------------------------------------------ */

/* Optimal string alignment distance (Levenshtein plus adjacent swaps),
 * ignoring case; both strings are at most a key path long. */
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 255 || lb > 255)
    return SIZE_MAX;
  size_t r0[256], r1[256], r2[256];
  size_t *pp = r0, *p = r1, *c = r2; /* rows i-2, i-1 and i of the table */
  for (size_t j = 0; j <= lb; j++)
    p[j] = j;
  for (size_t i = 1; i <= la; i++) {
    int ca = tolower((unsigned char)a[i - 1]);
    c[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      int cb = tolower((unsigned char)b[j - 1]);
      size_t best = p[j - 1] + (ca != cb);
      if (p[j] + 1 < best)
        best = p[j] + 1;
      if (c[j - 1] + 1 < best)
        best = c[j - 1] + 1;
      if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == cb && pp[j - 2] + 1 < best)
        best = pp[j - 2] + 1;
      c[j] = best;
    }
    size_t *t = pp;
    pp = p;
    p = c;
    c = t;
  }
  return p[lb];
}

static const char *leaf(const char *path) {
  const char *dot = strrchr(path, '.');
  return dot ? dot + 1 : path;
}

/* The candidate's score for the unknown key: its distance, or 1 when only
 * the section differs (the leaf names the same setting). */
static size_t score(const char *unknown, const char *cand) {
  size_t d = distance(unknown, cand);
  if (d > 1 && strchr(unknown, '.') && !strcasecmp(leaf(unknown), leaf(cand)))
    d = 1;
  return d;
}

/* Writes the nearest key or section to unknown into buf, or "" when none is
 * near enough (a third of the name, at least 2 edits). */
static void suggest(const struct gb_options *s, const char *unknown, char *buf, size_t cap) {
  size_t len = strlen(unknown), limit = len / 3 > 2 ? len / 3 : 2, best = SIZE_MAX;
  buf[0] = '\0';
  FOR_KEYS(s, p, k, i) {
    /* The key itself, then each of its sections ("timeouts.requeue", "timeouts"). */
    char cand[256];
    snprintf(cand, sizeof(cand), "%s", k->path);
    for (;;) {
      size_t d = score(unknown, cand);
      if (d <= limit && d < best) {
        best = d;
        snprintf(buf, cap, "%s", cand);
      }
      char *dot = strrchr(cand, '.');
      if (!dot)
        break;
      *dot = '\0';
    }
  }
}

static void unknown_key(const struct gb_options *s, const char *where, const char *path,
                        struct gc_diags *d) {
  char near[256];
  suggest(s, path, near, sizeof(near));
  if (*near)
    gc_diags_addf(d, "%s: unknown configuration key \"%.128s\" (did you mean \"%s\"?)", where, path,
                  near);
  else
    gc_diags_addf(d, "%s: unknown configuration key \"%.128s\" (see docs/operating.md)", where,
                  path);
}

/* ---- values from text ------------------------------------------------------- */

int gb_options_is_bool(const char *t) {
  return !strcmp(t, "true") || !strcmp(t, "1") || !strcmp(t, "yes") || !strcmp(t, "false") ||
         !strcmp(t, "0") || !strcmp(t, "no");
}

/* A duration: a plain number of seconds, or Go duration text. */
static int parse_duration(const char *t, double *out) {
  char *end;
  errno = 0;
  double v = strtod(t, &end);
  if (end != t && !*end && !errno && isfinite(v)) {
    *out = v;
    return 0;
  }
  int64_t ns = 0;
  char why[64];
  if (gc_duration_parse(t, strlen(t), &ns, why, sizeof(why)))
    return GC_EINVAL;
  *out = (double)ns / 1e9;
  return 0;
}

/* "a, b or c" of an enum's names. */
static void enum_names(const struct gb_opt *k, char *buf, size_t cap) {
  size_t n = 0, used = 0, shown = 0;
  for (size_t i = 0; k->names[i].name; i++)
    n += !(k->names[i].flags & GB_OPT_ALIAS);
  buf[0] = '\0';
  for (size_t i = 0; k->names[i].name && used < cap; i++) {
    if (k->names[i].flags & GB_OPT_ALIAS)
      continue;
    shown++;
    used += (size_t)snprintf(buf + used, cap - used, "%s%s",
                             shown == 1   ? ""
                             : shown == n ? " or "
                                          : ", ",
                             k->names[i].name);
  }
}

static int set_enum(const struct gb_opt *k, int *out, const char *t, const char *where,
                    struct gc_diags *d) {
  for (size_t i = 0; k->names[i].name; i++) {
    const struct gb_opt_enum *e = &k->names[i];
    if (!strcmp(t, e->name) || ((e->flags & GB_OPT_ANYCASE) && !strcasecmp(t, e->name))) {
      *out = e->value;
      return 0;
    }
  }
  char names[512];
  enum_names(k, names, sizeof(names));
  gc_diags_addf(d, "%s: %s: must be %s, not \"%.64s\"", where, k->path, names, t);
  return GC_EINVAL;
}

/* One item of list key k: valid, not listed before (items[0..i)). */
static int list_item_ok(const struct gb_opt *k, const char *const *items, size_t i,
                        const char *where, struct gc_diags *d) {
  const char *it = items[i];
  if (k->items && k->items->ok && !k->items->ok(it, strlen(it))) {
    gc_diags_addf(d, "%s: %s[%zu]: \"%.64s\" is not %s", where, k->path, i, it, k->items->what);
    return GC_EINVAL;
  }
  for (size_t j = 0; j < i; j++)
    if (!strcmp(items[j], it)) {
      gc_diags_addf(d, "%s: %s[%zu]: \"%.64s\" is listed twice", where, k->path, i, it);
      return GC_EINVAL;
    }
  return 0;
}

static int list_count_ok(const struct gb_opt *k, size_t n, const char *where, struct gc_diags *d) {
  if (k->items && n > k->items->max) {
    gc_diags_addf(d, "%s: %s: at most %zu %s, not %zu", where, k->path, k->items->max,
                  k->items->plural, n);
    return GC_EINVAL;
  }
  return 0;
}

/* A list from --set text: comma-separated items ("" is the empty list). */
static int set_list_text(struct gb_options *s, const struct gb_opt *k, struct gb_opt_list *out,
                         const char *t, const char *where, struct gc_diags *d) {
  size_t n = *t ? 1 : 0;
  for (const char *p = t; *p; p++)
    n += *p == ',';
  if (list_count_ok(k, n, where, d))
    return GC_EINVAL;
  const char **items = n ? gc_arena_alloc(s->arena, n * sizeof(*items)) : NULL;
  if (n && !items)
    return GC_ENOMEM;
  const char *p = t;
  for (size_t i = 0; i < n; i++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (!(items[i] = gc_arena_strndup(s->arena, p, len)))
      return GC_ENOMEM;
    if (list_item_ok(k, items, i, where, d))
      return GC_EINVAL;
    p += len + (e != NULL);
  }
  out->items = items;
  out->n = n;
  return 0;
}

static int set_number(const struct gb_opt *k, void *at, const char *t, const char *where,
                      struct gc_diags *d) {
  char *end;
  errno = 0;
  if (k->type == GB_OPT_INT) {
    long v = strtol(t, &end, 10);
    if (errno || end == t || *end || v < k->lo || v > k->hi) {
      gc_diags_addf(d, "%s: %s: must be an integer in [%g, %g], not \"%.64s\"", where, k->path,
                    k->lo, k->hi, t);
      return GC_EINVAL;
    }
    *(int *)at = (int)v;
    return 0;
  }
  double v = 0;
  if (k->type == GB_OPT_NUM) {
    v = strtod(t, &end);
    if (errno || end == t || *end || !isfinite(v) || v < k->lo || v > k->hi) {
      gc_diags_addf(d, "%s: %s: must be a number in [%g, %g], not \"%.64s\"", where, k->path, k->lo,
                    k->hi, t);
      return GC_EINVAL;
    }
  } else if (parse_duration(t, &v) || v < k->lo || v > k->hi) {
    gc_diags_addf(d,
                  "%s: %s: must be a duration (seconds, or like \"500ms\", \"30s\", \"5m\") "
                  "in [%gs, %gs], not \"%.64s\"",
                  where, k->path, k->lo, k->hi, t);
    return GC_EINVAL;
  }
  *(double *)at = v;
  return 0;
}

/* Parses t into key k's field at `at`; messages start with where. */
static int set_value(struct gb_options *s, const struct gb_opt *k, void *at, const char *t,
                     const char *where, struct gc_diags *d) {
  switch (k->type) {
  case GB_OPT_STR: {
    if (strlen(t) > MAX_TEXT) {
      gc_diags_addf(d, "%s: %s: value longer than %d bytes", where, k->path, MAX_TEXT);
      return GC_EINVAL;
    }
    const char *v = gc_arena_strdup(s->arena, t);
    if (!v)
      return GC_ENOMEM;
    *(const char **)at = v;
    return 0;
  }
  case GB_OPT_BOOL:
    if (!gb_options_is_bool(t)) {
      gc_diags_addf(d, "%s: %s: must be true or false, not \"%.64s\"", where, k->path, t);
      return GC_EINVAL;
    }
    *(int *)at = !strcmp(t, "true") || !strcmp(t, "1") || !strcmp(t, "yes");
    return 0;
  case GB_OPT_INT:
  case GB_OPT_NUM:
  case GB_OPT_DUR: return set_number(k, at, t, where, d);
  case GB_OPT_ENUM: return set_enum(k, (int *)at, t, where, d);
  case GB_OPT_LIST:
    if (strlen(t) > MAX_TEXT) {
      gc_diags_addf(d, "%s: %s: value longer than %d bytes", where, k->path, MAX_TEXT);
      return GC_EINVAL;
    }
    return set_list_text(s, k, (struct gb_opt_list *)at, t, where, d);
  }
  return GC_EINVAL;
}

/* Remembers where key index i was set (NULL: its default). */
static int remember(struct gb_options *s, long i, const char *where) {
  const char *w = NULL;
  if (where && !(w = gc_arena_strdup(s->arena, where)))
    return GC_ENOMEM;
  s->where[i] = w;
  return 0;
}

int gb_options_set_key(struct gb_options *s, const struct gb_opt *k, const char *text,
                       const char *where, struct gc_diags *d) {
  void *opts = NULL;
  long i = locate(s, k, &opts);
  if (i < 0 || !text)
    return GC_EUSAGE;
  int rc = set_value(s, k, (char *)opts + k->off, text, where ? where : "default", d);
  return rc ? rc : remember(s, i, where);
}

int gb_options_set(struct gb_options *s, const char *path, const char *text, const char *where,
                   struct gc_diags *d) {
  const struct gb_opt *k = gb_options_find(s, path);
  if (!k) {
    unknown_key(s, where ? where : "default", path, d);
    return GC_ENOTFOUND;
  }
  return gb_options_set_key(s, k, text, where, d);
}

/* ---- the set ------------------------------------------------------------------- */

/* A table mistake: two tables with one key, or a key that is also a section. */
static int check_tables(const struct gb_options *s, struct gc_diags *d) {
  FOR_KEYS(s, p, k, i) {
    size_t n = strlen(k->path);
    FOR_KEYS(s, p2, k2, i2) {
      if (i2 <= i)
        continue;
      if (!strcmp(k->path, k2->path) || (!strncmp(k2->path, k->path, n) && k2->path[n] == '.')) {
        gc_diags_addf(d, "configuration tables: key %s (%s) clashes with %s (%s)", k->path,
                      s->parts[p].table->layer, k2->path, s->parts[p2].table->layer);
        return GC_EUSAGE;
      }
    }
  }
  return 0;
}

int gb_options_init(struct gb_options *s, const struct gb_options_part *parts, size_t n,
                    struct gc_diags *d) {
  memset(s, 0, sizeof(*s));
  s->parts = parts;
  s->n_parts = n;
  for (size_t p = 0; p < n; p++) {
    s->n_keys += parts[p].table->n;
    memset(parts[p].opts, 0, parts[p].table->size);
  }
  s->arena = gc_arena_new(4u << 20);
  if (!s->arena || !(s->where = gc_arena_alloc(s->arena, (s->n_keys + 1) * sizeof(*s->where))))
    return GC_ENOMEM;
  memset(s->where, 0, (s->n_keys + 1) * sizeof(*s->where));
  int rc = check_tables(s, d);
  if (rc)
    return rc;
  FOR_KEYS(s, p, k, i) {
    rc = set_value(s, k, (char *)parts[p].opts + k->off, k->def, "default", d);
    if (rc)
      return rc == GC_ENOMEM ? rc : GC_EUSAGE;
  }
  return 0;
}

void gb_options_destroy(struct gb_options *s) {
  if (!s)
    return;
  gc_arena_free(s->arena);
  memset(s, 0, sizeof(*s));
}

/* ---- the YAML file ---------------------------------------------------------- */

/* A YAML sequence for a list key: strings, each valid and unique. */
static int set_list_seq(struct gb_options *s, const struct gb_opt *k, struct gb_opt_list *out,
                        const struct gc_value *v, const char *file, const char *where,
                        struct gc_diags *d) {
  size_t total = 0;
  for (size_t i = 0; i < v->len; i++) {
    const struct gc_value *it = v->u.items[i];
    if (it->type != GC_STR || strlen(it->u.s) != it->len || strchr(it->u.s, ',')) {
      gc_diags_addf(d, "%s:%u:%u: %s: must be a list of strings (without commas)", file, it->line,
                    it->col, k->path);
      return GC_EINVAL;
    }
    total += it->len + 1;
  }
  if (total > MAX_TEXT) {
    gc_diags_addf(d, "%s: %s: value longer than %d bytes", where, k->path, MAX_TEXT);
    return GC_EINVAL;
  }
  if (list_count_ok(k, v->len, where, d))
    return GC_EINVAL;
  const char **items = v->len ? gc_arena_alloc(s->arena, v->len * sizeof(*items)) : NULL;
  if (v->len && !items)
    return GC_ENOMEM;
  for (size_t i = 0; i < v->len; i++) {
    const struct gc_value *it = v->u.items[i];
    if (!(items[i] = gc_arena_strndup(s->arena, it->u.s, it->len)))
      return GC_ENOMEM;
    char at[1100];
    snprintf(at, sizeof(at), "%s:%u:%u", file, it->line, it->col);
    if (list_item_ok(k, items, i, at, d))
      return GC_EINVAL;
  }
  out->items = items;
  out->n = v->len;
  return 0;
}

/* The text of a typed YAML scalar for key k, or NULL when its type does not
 * fit: a quoted number or boolean is a string, as in Kubernetes. */
static const char *scalar_text(const struct gb_opt *k, const struct gc_value *v, char *num,
                               size_t cap) {
  switch (v->type) {
  case GC_NULL: return k->type == GB_OPT_STR ? "" : NULL;
  case GC_STR:
    return k->type == GB_OPT_INT || k->type == GB_OPT_NUM || k->type == GB_OPT_BOOL ? NULL : v->u.s;
  case GC_BOOL: return k->type == GB_OPT_BOOL ? (v->u.b ? "true" : "false") : NULL;
  case GC_INT:
  case GC_FLOAT:
    if (k->type != GB_OPT_INT && k->type != GB_OPT_NUM && k->type != GB_OPT_DUR)
      return NULL;
    if (v->text)
      return v->text;
    if (v->type == GC_INT)
      snprintf(num, cap, "%lld", (long long)v->u.i);
    else
      snprintf(num, cap, "%.17g", v->u.f);
    return num;
  default: return NULL;
  }
}

static int set_from_value(struct gb_options *s, const struct gb_opt *k, const struct gc_value *v,
                          const char *file, struct gc_diags *d) {
  static const char *const want[] = {"a boolean", "an integer", "a number",         "a duration",
                                     "a string",  "a string",   "a list of strings"};
  char where[1100], num[64];
  snprintf(where, sizeof(where), "%s:%u:%u", file, v->line, v->col);
  void *opts = NULL;
  long i = locate(s, k, &opts);
  if (k->type == GB_OPT_LIST && v->type == GC_SEQ) {
    int rc = set_list_seq(s, k, (struct gb_opt_list *)((char *)opts + k->off), v, file, where, d);
    return rc ? rc : remember(s, i, where);
  }
  const char *text = scalar_text(k, v, num, sizeof(num));
  if (!text) {
    gc_diags_addf(d, "%s: %s: must be %s, not %s", where, k->path, want[k->type],
                  gc_type_name(v->type));
    return GC_EINVAL;
  }
  if (v->type == GC_STR && strlen(text) != v->len) {
    gc_diags_addf(d, "%s: %s: must not contain NUL bytes", where, k->path);
    return GC_EINVAL;
  }
  return gb_options_set_key(s, k, text, where, d);
}

static int walk(struct gb_options *s, const struct gc_value *m, const char *prefix,
                const char *file, int depth, struct gc_diags *d) {
  int rc = 0;
  for (size_t i = 0; i < m->len; i++) {
    const struct gc_member *mem = &m->u.members[i];
    const struct gc_value *v = mem->value;
    char path[256];
    int r = 0;
    if (mem->key_len != strlen(mem->key) ||
        (size_t)snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", mem->key) >=
            sizeof(path)) {
      gc_diags_addf(d, "%s:%u:%u: unknown configuration key", file, v->line, v->col);
      r = GC_EINVAL;
    } else if (depth == 0 && (!strcmp(path, "apiVersion") || !strcmp(path, "kind"))) {
      continue;
    } else if (gb_options_find(s, path)) {
      r = set_from_value(s, gb_options_find(s, path), v, file, d);
    } else if (is_section(s, path, strlen(path))) {
      if (v->type == GC_MAP && depth < MAX_DEPTH) {
        r = walk(s, v, path, file, depth + 1, d);
      } else if (v->type != GC_NULL) {
        gc_diags_addf(d, "%s:%u:%u: %s: must be a map, not %s", file, v->line, v->col, path,
                      gc_type_name(v->type));
        r = GC_EINVAL;
      }
    } else {
      char where[1100];
      snprintf(where, sizeof(where), "%s:%u:%u", file, v->line, v->col);
      unknown_key(s, where, path, d);
      r = GC_EINVAL;
    }
    if (r && !rc)
      rc = r;
  }
  return rc;
}

static int load_docset(struct gb_options *s, struct gb_docset *ds, int lrc, struct gc_diags *d) {
  if (lrc)
    return lrc;
  if (ds->n != 1) {
    gc_diags_addf(d, "%s: a config file holds exactly one YAML document (found %zu)",
                  ds->n ? ds->docs[0].file : "config", ds->n);
    return GC_EINVAL;
  }
  const struct gb_doc *doc = &ds->docs[0];
  int rc = walk(s, doc->root, "", doc->file, 0, d);
  if (!rc && !(s->source = gc_arena_strdup(s->arena, doc->file)))
    return GC_ENOMEM;
  return rc;
}

static const struct gb_limits file_limits = {GB_OPTIONS_MAX_FILE_BYTES, GB_OPTIONS_MAX_FILE_BYTES,
                                             16, 100000, 4};

int gb_options_load_file(struct gb_options *s, const char *path, struct gc_diags *d) {
  struct gb_docset *ds = gb_docset_new(&file_limits);
  if (!ds)
    return GC_ENOMEM;
  int rc = load_docset(s, ds, gb_manifest_load_path(ds, path, d), d);
  gb_docset_free(ds);
  return rc;
}

int gb_options_load_buffer(struct gb_options *s, const char *name, const char *buf, size_t len,
                           struct gc_diags *d) {
  struct gb_docset *ds = gb_docset_new(&file_limits);
  if (!ds)
    return GC_ENOMEM;
  int rc = load_docset(s, ds, gb_manifest_load_buffer(ds, name, buf, len, d), d);
  gb_docset_free(ds);
  return rc;
}

/* ---- checks --------------------------------------------------------------------- */

/* Where the key that msg starts with was set ("http.address: ..."; the
 * longest key wins), or NULL. */
static const char *origin_of(const struct gb_options *s, const char *msg) {
  const char *best = NULL;
  size_t best_len = 0;
  FOR_KEYS(s, p, k, i) {
    size_t n = strlen(k->path);
    if (n > best_len && !strncmp(msg, k->path, n) && strchr(":[ (", msg[n]) && msg[n]) {
      best = s->where[i];
      best_len = n;
    }
  }
  return best;
}

int gb_options_check(struct gb_options *s, struct gc_diags *d) {
  int rc = 0;
  for (size_t p = 0; p < s->n_parts; p++) {
    const struct gb_opt_table *t = s->parts[p].table;
    if (!t->check)
      continue;
    struct gc_diags tmp;
    gc_diags_init(&tmp);
    int r = t->check(s->parts[p].opts, s->arena, &tmp);
    for (size_t i = 0; i < tmp.n; i++) {
      const char *w = origin_of(s, tmp.msgs[i]);
      if (tmp.is_warning[i])
        gc_diags_warnf(d, "%s%s%s", w ? w : "", w ? ": " : "", tmp.msgs[i]);
      else
        gc_diags_addf(d, "%s%s%s", w ? w : "", w ? ": " : "", tmp.msgs[i]);
    }
    gc_diags_destroy(&tmp);
    if (r == GC_ENOMEM)
      return r;
    if (r && !rc)
      rc = r;
  }
  return rc;
}

/* ---- output ------------------------------------------------------------------------ */

static void write_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\x%02x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static const char *enum_name(const struct gb_opt *k, int v) {
  for (size_t i = 0; k->names[i].name; i++)
    if (k->names[i].value == v)
      return k->names[i].name;
  return "?";
}

static void write_value(FILE *f, const struct gb_opt *k, const void *at) {
  switch (k->type) {
  case GB_OPT_BOOL: fputs(*(const int *)at ? "true" : "false", f); break;
  case GB_OPT_INT: fprintf(f, "%d", *(const int *)at); break;
  case GB_OPT_NUM: fprintf(f, "%g", *(const double *)at); break;
  case GB_OPT_DUR: fprintf(f, "%gs", *(const double *)at); break;
  case GB_OPT_STR: write_str(f, *(const char *const *)at); break;
  case GB_OPT_ENUM: fputs(enum_name(k, *(const int *)at), f); break;
  case GB_OPT_LIST: {
    const struct gb_opt_list *l = at;
    fputc('[', f);
    for (size_t i = 0; i < l->n; i++) {
      if (i)
        fputs(", ", f);
      write_str(f, l->items[i]);
    }
    fputc(']', f);
    break;
  }
  }
}

/* One key of a set in output order. */
struct ordered {
  const struct gb_opt *k;
  const void *opts;
  size_t rank[MAX_DEPTH]; /* per segment: the first key index under that prefix */
  size_t depth;           /* segments */
};

/* Length of the first `segs` segments of path (up to the dot after them). */
static size_t prefix_len(const char *path, size_t segs) {
  size_t n = 0;
  for (size_t j = 0; path[j]; j++)
    if (path[j] == '.' && ++n == segs)
      return j;
  return strlen(path);
}

static int cmp_ordered(const void *a, const void *b) {
  const struct ordered *x = a, *y = b;
  for (size_t j = 0; j < MAX_DEPTH; j++) {
    size_t rx = j < x->depth ? x->rank[j] : 0, ry = j < y->depth ? y->rank[j] : 0;
    if (rx != ry)
      return rx < ry ? -1 : 1;
  }
  return 0;
}

/* Every key, sections together in the order they first appear (a section
 * may hold keys of several tables).  Caller frees; NULL on OOM. */
static struct ordered *order_keys(const struct gb_options *s) {
  struct ordered *o = calloc(s->n_keys ? s->n_keys : 1, sizeof(*o));
  if (!o)
    return NULL;
  FOR_KEYS(s, p, k, i) {
    o[i].k = k;
    o[i].opts = s->parts[p].opts;
  }
  for (size_t i = 0; i < s->n_keys; i++) {
    const char *path = o[i].k->path;
    size_t segs = 1;
    for (const char *c = path; *c; c++)
      segs += *c == '.';
    o[i].depth = segs < MAX_DEPTH ? segs : MAX_DEPTH;
    for (size_t j = 0; j < o[i].depth; j++) {
      size_t n = prefix_len(path, j + 1);
      o[i].rank[j] = i;
      for (size_t f = 0; f < i; f++)
        if (!strncmp(o[f].k->path, path, n) && (o[f].k->path[n] == '.' || !o[f].k->path[n])) {
          o[i].rank[j] = o[f].rank[j] < f ? o[f].rank[j] : f;
          break;
        }
    }
  }
  qsort(o, s->n_keys, sizeof(*o), cmp_ordered);
  return o;
}

void gb_options_write(const struct gb_options *s, FILE *f) {
  struct ordered *o = order_keys(s);
  if (!o)
    return;
  const char *prev = "";
  size_t prev_len = 0;
  for (size_t i = 0; i < s->n_keys; i++) {
    const char *p = o[i].k->path;
    /* Open every section that differs from the previous key's. */
    size_t common = 0; /* length of the shared section prefix, ending at a '.' */
    for (size_t j = 0; j < prev_len && p[j] && p[j] == prev[j]; j++)
      if (p[j] == '.')
        common = j + 1;
    int depth = 0;
    for (size_t j = 0; j < common; j++)
      depth += p[j] == '.';
    const char *seg = p + common;
    for (const char *dot; (dot = strchr(seg, '.')); seg = dot + 1, depth++)
      fprintf(f, "%*s%.*s:\n", depth * 2, "", (int)(dot - seg), seg);
    fprintf(f, "%*s%s: ", depth * 2, "", seg);
    write_value(f, o[i].k, (const char *)o[i].opts + o[i].k->off);
    fputc('\n', f);
    prev = p;
    prev_len = strlen(p);
  }
  free(o);
}

/* The key's type as --help and --print-keys show it. */
static void type_text(const struct gb_opt *k, int brief, char *buf, size_t cap) {
  char names[512];
  switch (k->type) {
  case GB_OPT_BOOL: snprintf(buf, cap, "bool"); break;
  case GB_OPT_INT:
    snprintf(buf, cap, brief ? "int" : "integer in [%.0f, %.0f]", k->lo, k->hi);
    break;
  case GB_OPT_NUM: snprintf(buf, cap, brief ? "number" : "number in [%g, %g]", k->lo, k->hi); break;
  case GB_OPT_DUR:
    snprintf(buf, cap, brief ? "duration" : "duration in [%gs, %gs]", k->lo, k->hi);
    break;
  case GB_OPT_STR: snprintf(buf, cap, "string"); break;
  case GB_OPT_ENUM:
    enum_names(k, names, sizeof(names));
    snprintf(buf, cap, brief ? "enum" : "%s", names);
    break;
  case GB_OPT_LIST:
    if (brief || !k->items)
      snprintf(buf, cap, "list");
    else
      snprintf(buf, cap, "list of at most %zu %s", k->items->max, k->items->plural);
    break;
  }
}

void gb_options_write_help(const struct gb_options *s, FILE *f) {
  char type[600];
  for (size_t p = 0; p < s->n_parts; p++) {
    const struct gb_opt_table *t = s->parts[p].table;
    fprintf(f, "\n%s (bridge/%s/):\n", t->title, t->layer);
    for (size_t i = 0; i < t->n; i++) {
      const struct gb_opt *k = &t->keys[i];
      type_text(k, 0, type, sizeof(type));
      fprintf(f, "  %s  %s, default %s%s%s%s\n      %s\n", k->path, type, *k->def ? "" : "\"",
              *k->def ? k->def : "\"", k->flag ? ", flag --" : "", k->flag ? k->flag : "", k->doc);
    }
  }
}

void gb_options_write_keys(const struct gb_options *s, FILE *f) {
  char type[64];
  FOR_KEYS(s, p, k, i) {
    type_text(k, 1, type, sizeof(type));
    fprintf(f, "%s\t%s\t%s\t%s\t%s\n", k->path, type, k->def, k->flag ? k->flag : "",
            s->parts[p].table->layer);
  }
}
