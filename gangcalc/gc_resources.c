/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_resources: a sorted, arena-backed ResourceList.  Names are ordered by
 * strcmp (byte order), which is also the order encoding/json gives a Go map,
 * so rendered lists match what Kubernetes prints.  Operations that can fail
 * part-way (add, scale) check every key before changing any, so an overflow
 * leaves the destination list as it was.
 */
#include "gc_resources.h"
#include "gc_resources_test.h"

#include <stdio.h>
#include <string.h>

#include "gc_diag.h"

/* Longest quantity text quoted in an error message. */
#define QUOTE_MAX 64

/* Index of name in l, or the insertion point with *found = 0. */
static size_t find(const struct gc_reslist *l, const char *name, int *found) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(l->items[mid].name, name);
    if (c == 0) {
      *found = 1;
      return mid;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = 0;
  return lo;
}

const struct gc_quantity *gc_reslist_get(const struct gc_reslist *l, const char *name) {
  int found;
  if (!l || !name || l->n == 0)
    return NULL;
  size_t i = find(l, name, &found);
  return found ? &l->items[i].q : NULL;
}

/* Makes room for one more item; the old block stays in the arena. */
static int reserve(struct gc_arena *a, struct gc_reslist *l) {
  if (l->n < l->cap)
    return GC_OK;
  size_t ncap = l->cap ? l->cap * 2 : 8;
  if (ncap > SIZE_MAX / sizeof(struct gc_resource))
    return GC_ENOMEM;
  struct gc_resource *items = gc_arena_alloc(a, ncap * sizeof(*items));
  if (!items)
    return GC_ENOMEM;
  if (l->n)
    memcpy(items, l->items, l->n * sizeof(*items));
  l->items = items;
  l->cap = ncap;
  return GC_OK;
}

int gc_reslist_set(struct gc_arena *a, struct gc_reslist *l, const char *name,
                   const struct gc_quantity *q) {
  int found;
  if (!a || !l || !name || !q)
    return GC_EUSAGE;
  size_t i = l->n ? find(l, name, &found) : (found = 0, 0);
  if (found) {
    l->items[i].q = *q;
    return GC_OK;
  }
  char *copy = gc_arena_strdup(a, name);
  if (!copy || reserve(a, l))
    return GC_ENOMEM;
  memmove(l->items + i + 1, l->items + i, (l->n - i) * sizeof(*l->items));
  l->items[i].name = copy;
  l->items[i].q = *q;
  l->n++;
  return GC_OK;
}

int gc_reslist_add(struct gc_arena *a, struct gc_reslist *dst, const struct gc_reslist *src) {
  if (!a || !dst || !src)
    return GC_EUSAGE;
  /* First pass: every sum over an existing key must fit. */
  for (size_t i = 0; i < src->n; i++) {
    const struct gc_quantity *cur = gc_reslist_get(dst, src->items[i].name);
    if (cur) {
      struct gc_quantity t = *cur;
      int rc = gc_quantity_add(&t, &src->items[i].q);
      if (rc)
        return rc;
    }
  }
  /* src may alias dst: take each source value before writing. */
  for (size_t i = 0; i < src->n; i++) {
    struct gc_quantity sq = src->items[i].q;
    int found;
    size_t j = dst->n ? find(dst, src->items[i].name, &found) : (found = 0, 0);
    if (found) {
      int rc = gc_quantity_add(&dst->items[j].q, &sq);
      if (rc)
        return rc;
    } else {
      int rc = gc_reslist_set(a, dst, src->items[i].name, &sq);
      if (rc)
        return rc;
    }
  }
  return GC_OK;
}

int gc_reslist_max(struct gc_arena *a, struct gc_reslist *dst, const struct gc_reslist *src) {
  if (!a || !dst || !src)
    return GC_EUSAGE;
  for (size_t i = 0; i < src->n; i++) {
    struct gc_quantity sq = src->items[i].q;
    const struct gc_quantity *cur = gc_reslist_get(dst, src->items[i].name);
    /* Only a strictly greater value replaces (component-helpers'
     * maxResourceList), so on a tie dst keeps its own spelling. */
    if (cur && gc_quantity_cmp(&sq, cur) <= 0)
      continue;
    int rc = gc_reslist_set(a, dst, src->items[i].name, &sq);
    if (rc)
      return rc;
  }
  return GC_OK;
}

int gc_reslist_scale(struct gc_reslist *l, int64_t n) {
  if (!l)
    return GC_EUSAGE;
  for (size_t i = 0; i < l->n; i++) {
    struct gc_quantity t = l->items[i].q;
    int rc = gc_quantity_mul_int(&t, n);
    if (rc)
      return rc;
  }
  for (size_t i = 0; i < l->n; i++) {
    int rc = gc_quantity_mul_int(&l->items[i].q, n);
    if (rc)
      return rc;
  }
  return GC_OK;
}

int gc_reslist_copy(struct gc_arena *a, struct gc_reslist *dst, const struct gc_reslist *src) {
  if (!a || !dst || !src)
    return GC_EUSAGE;
  struct gc_reslist out = GC_RESLIST_INIT;
  if (src->n) {
    if (src->n > SIZE_MAX / sizeof(struct gc_resource))
      return GC_ENOMEM;
    out.items = gc_arena_alloc(a, src->n * sizeof(*out.items));
    if (!out.items)
      return GC_ENOMEM;
    for (size_t i = 0; i < src->n; i++) {
      out.items[i].name = gc_arena_strdup(a, src->items[i].name);
      if (!out.items[i].name)
        return GC_ENOMEM;
      out.items[i].q = src->items[i].q;
    }
    out.n = out.cap = src->n;
  }
  *dst = out;
  return GC_OK;
}

/* Quotes s[0..n) for a message: printable ASCII as is, '"' and '\\'
 * escaped, other bytes as \xNN, cut at QUOTE_MAX bytes with "...". */
static void quote(const char *s, size_t n, char *buf, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 8 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    if (i >= QUOTE_MAX) {
      memcpy(buf + o, "...", 3);
      o += 3;
      break;
    }
    if (c == '"' || c == '\\') {
      buf[o++] = '\\';
      buf[o++] = (char)c;
    } else if (c >= 0x20 && c < 0x7f) {
      buf[o++] = (char)c;
    } else {
      o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
  }
  buf[o] = '\0';
}

/* Go's TrimSpace for the ASCII spaces; enough to find the text that the
 * regular-expression check below applies to. */
static void trim_ascii(const char **s, size_t *n) {
  while (*n && (**s == ' ' || (**s >= '\t' && **s <= '\r'))) {
    (*s)++;
    (*n)--;
  }
  while (*n && ((*s)[*n - 1] == ' ' || ((*s)[*n - 1] >= '\t' && (*s)[*n - 1] <= '\r')))
    (*n)--;
}

/* Runs ParseQuantity's scanner (parseQuantityString) over s: sign, digits,
 * optional '.' and digits, then [eEinumkKMGTP]* [+-]? [0-9]*.  Returns 1 and
 * the length of the numeric part when the whole text scans, else 0. */
static int scan_numeric(const char *s, size_t n, size_t *num_len) {
  size_t i = 0;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    i++;
  while (i < n && s[i] >= '0' && s[i] <= '9')
    i++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
  }
  *num_len = i;
  while (i < n && s[i] != '\0' && strchr("eEinumkKMGTP", s[i]))
    i++;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    i++;
  while (i < n && s[i] >= '0' && s[i] <= '9')
    i++;
  return i == n;
}

/* apimachinery's messages for the three ways ParseQuantity fails, plus ours
 * for a value we cannot hold exactly. */
static const char *parse_reason(const char *s, size_t n, int rc) {
  if (rc == GC_ERANGE)
    return "out of range: the value needs more than 19 significant digits or an exponent "
           "outside 32 bits";
  trim_ascii(&s, &n);
  size_t num;
  /* The scanner's failure is upstream's ErrFormatWrong, whose text quotes
   * the regular expression (even for text the expression would match). */
  if (n == 0 || !scan_numeric(s, n, &num))
    return "quantities must match the regular expression "
           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  /* The shape is right: the suffix alone decides between the other two. */
  char probe[80];
  size_t sl = n - num;
  if (sl + 2 > sizeof(probe))
    return "unable to parse quantity's suffix";
  probe[0] = '1';
  memcpy(probe + 1, s + num, sl);
  struct gc_quantity q;
  if (gc_quantity_parse(probe, sl + 1, &q) == GC_EINVAL)
    return "unable to parse quantity's suffix";
  return "unable to parse numeric part of quantity";
}

/* The text a scalar was written as, for messages. */
static void value_text(const struct gc_value *mv, char *nbuf, size_t cap, const char **text,
                       size_t *tn) {
  if (mv->type == GC_STR) {
    *text = mv->u.s;
    *tn = mv->len;
    return;
  }
  if (mv->type == GC_BOOL) {
    *text = mv->u.b ? "true" : "false";
  } else if (mv->text) {
    *text = mv->text;
  } else {
    if (mv->type == GC_FLOAT)
      snprintf(nbuf, cap, "%.17g", mv->u.f);
    else
      snprintf(nbuf, cap, "%lld", (long long)mv->u.i);
    *text = nbuf;
  }
  *tn = strlen(*text);
}

int gc_reslist_from_value(struct gc_arena *a, const struct gc_value *v, const char *where,
                          struct gc_reslist *out, struct gc_diags *diags) {
  if (!a || !out)
    return GC_EUSAGE;
  if (!where)
    where = "";
  struct gc_reslist l = GC_RESLIST_INIT;
  /* An absent or null list is an empty one (a nil ResourceList). */
  if (!v || v->type == GC_NULL) {
    *out = l;
    return GC_OK;
  }
  if (v->type != GC_MAP) {
    gc_diags_addf(diags, "%s: must be an object", where);
    return GC_EINVAL;
  }
  int rc = GC_OK;
  for (size_t i = 0; i < v->len; i++) {
    const struct gc_member *m = &v->u.members[i];
    const struct gc_value *mv = m->value;
    char qbuf[QUOTE_MAX * 4 + 16];
    if (strlen(m->key) != m->key_len) {
      quote(m->key, m->key_len, qbuf, sizeof(qbuf));
      gc_diags_addf(diags, "%s: invalid resource name \"%s\": contains a NUL byte", where, qbuf);
      rc = GC_EINVAL;
      continue;
    }
    struct gc_quantity q;
    int e = mv ? gc_quantity_from_value_capped(mv, &q) : GC_EINVAL;
    if (e) {
      if (!mv || mv->type == GC_MAP || mv->type == GC_SEQ) {
        gc_diags_addf(diags, "%s.%s: invalid quantity: must be a string or number, not %s", where,
                      m->key, mv ? gc_type_name(mv->type) : "null");
        rc = GC_EINVAL;
        continue;
      }
      const char *text;
      size_t tn;
      char nbuf[64];
      value_text(mv, nbuf, sizeof(nbuf), &text, &tn);
      quote(text, tn, qbuf, sizeof(qbuf));
      gc_diags_addf(diags, "%s.%s: invalid quantity \"%s\": %s", where, m->key, qbuf,
                    parse_reason(text, tn, e));
      rc = GC_EINVAL;
      continue;
    }
    /* The API server refuses negative requests, limits and overhead; a
     * negative one would also cancel another job's resources in a sum. */
    if (q.mant < 0) {
      const char *text;
      size_t tn;
      char nbuf[64];
      value_text(mv, nbuf, sizeof(nbuf), &text, &tn);
      quote(text, tn, qbuf, sizeof(qbuf));
      gc_diags_addf(diags, "%s.%s: Invalid value: \"%s\": must be greater than or equal to 0",
                    where, m->key, qbuf);
      rc = GC_EINVAL;
      continue;
    }
    e = gc_reslist_set(a, &l, m->key, &q);
    if (e)
      return e;
  }
  *out = l;
  return rc;
}

struct gc_value *gc_reslist_to_value(struct gc_arena *a, const struct gc_reslist *l) {
  if (!a || !l)
    return NULL;
  struct gc_value *map = gc_value_map(a);
  if (!map)
    return NULL;
  for (size_t i = 0; i < l->n; i++) {
    char buf[GC_QUANTITY_BUFSZ];
    if (gc_quantity_format(&l->items[i].q, buf, sizeof(buf)))
      return NULL;
    struct gc_value *s = gc_value_strz(a, buf);
    if (!s || gc_map_append(a, map, l->items[i].name, strlen(l->items[i].name), s))
      return NULL;
  }
  return map;
}
