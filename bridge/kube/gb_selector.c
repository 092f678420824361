/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_selector: label and field selectors (see gb_selector.h).  The label
 * parser is the one serve's configuration always used (moved here from
 * controller/gb_config.c so that every selector is read one way); field
 * selectors and matching whole json-c objects were added for the shared
 * informers.
 */
#include "gb_selector.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "gb_kobj.h"

#define SEL_MAX_TEXT 4096
#define SEL_MAX_REQS 64
#define SEL_MAX_VALUES 64

static int label_char(char ch) {
  return isalnum((unsigned char)ch) || ch == '-' || ch == '_' || ch == '.' || ch == '/';
}

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t')
    p++;
  return p;
}

static const char *read_word(struct gc_arena *a, const char *p, const char **out) {
  const char *s = p;
  while (label_char(*p))
    p++;
  *out = p > s ? gc_arena_strndup(a, s, (size_t)(p - s)) : NULL;
  return p;
}

int gb_selector_parse(struct gc_arena *a, const char *text, struct gb_selector *out,
                      struct gc_diags *d) {
  out->reqs = NULL;
  out->n = 0;
  if (!text)
    return 0;
  if (strlen(text) > SEL_MAX_TEXT) {
    gc_diags_addf(d, "label selector longer than %d bytes", SEL_MAX_TEXT);
    return GC_EINVAL;
  }
  out->reqs = gc_arena_alloc(a, SEL_MAX_REQS * sizeof(*out->reqs));
  if (!out->reqs)
    return GC_ENOMEM;
  const char *p = skip_ws(text);
  if (!*p)
    return 0;
  for (;;) {
    const char *start = p;
    if (out->n == SEL_MAX_REQS) {
      gc_diags_addf(d, "label selector: more than %d requirements", SEL_MAX_REQS);
      return GC_EINVAL;
    }
    struct gb_selector_req *r = &out->reqs[out->n];
    memset(r, 0, sizeof(*r));
    int neg = 0;
    if (*p == '!') {
      neg = 1;
      p = skip_ws(p + 1);
    }
    p = read_word(a, p, &r->key);
    if (!r->key)
      goto bad;
    p = skip_ws(p);
    if (neg) {
      r->op = GB_SEL_NOTEXISTS;
    } else if (*p == ',' || !*p) {
      r->op = GB_SEL_EXISTS;
    } else if (*p == '=' || (*p == '!' && p[1] == '=')) {
      r->op = *p == '!' ? GB_SEL_NE : GB_SEL_EQ;
      p += *p == '!' ? 2 : (p[1] == '=' ? 2 : 1);
      p = skip_ws(p);
      const char *v = NULL;
      p = read_word(a, p, &v);
      r->values = gc_arena_alloc(a, sizeof(*r->values));
      if (!r->values)
        return GC_ENOMEM;
      r->values[0] = v ? v : "";
      r->n_values = 1;
      p = skip_ws(p);
    } else if (!strncmp(p, "in", 2) || !strncmp(p, "notin", 5)) {
      r->op = p[0] == 'i' ? GB_SEL_IN : GB_SEL_NOTIN;
      p = skip_ws(p + (r->op == GB_SEL_IN ? 2 : 5));
      if (*p != '(')
        goto bad;
      p = skip_ws(p + 1);
      r->values = gc_arena_alloc(a, SEL_MAX_VALUES * sizeof(*r->values));
      if (!r->values)
        return GC_ENOMEM;
      for (;;) {
        const char *v = NULL;
        p = skip_ws(read_word(a, p, &v));
        if (v) {
          if (r->n_values == SEL_MAX_VALUES)
            goto bad;
          r->values[r->n_values++] = v;
        }
        if (*p == ',') {
          p = skip_ws(p + 1);
          continue;
        }
        if (*p == ')')
          break;
        goto bad;
      }
      if (!r->n_values)
        goto bad;
      p = skip_ws(p + 1);
    } else {
      goto bad;
    }
    out->n++;
    if (!*p)
      return 0;
    if (*p != ',')
      goto bad;
    p = skip_ws(p + 1);
    continue;
  bad:
    gc_diags_addf(d,
                  "label selector: cannot parse requirement at \"%.64s\" (expected KEY, !KEY, "
                  "KEY=VALUE, KEY!=VALUE, KEY in (V,...) or KEY notin (V,...))",
                  start);
    return GC_EINVAL;
  }
}

/* 1 when requirement r holds for value v (NULL: absent). */
static int holds(const struct gb_selector_req *r, const char *v) {
  int in = 0;
  for (size_t j = 0; v && j < r->n_values; j++)
    if (!strcmp(v, r->values[j]))
      in = 1;
  switch (r->op) {
  case GB_SEL_EQ:
  case GB_SEL_IN: return in;
  case GB_SEL_NE:
  case GB_SEL_NOTIN: return !in;
  case GB_SEL_EXISTS: return v != NULL;
  case GB_SEL_NOTEXISTS: return v == NULL;
  }
  return 0;
}

int gb_selector_match(const struct gb_selector *sel, const struct gc_value *labels) {
  for (size_t i = 0; sel && i < sel->n; i++)
    if (!sel->reqs[i].field &&
        !holds(&sel->reqs[i], gc_value_as_str(gc_map_get(labels, sel->reqs[i].key))))
      return 0;
  return 1;
}

/* One `path=v`, `path==v` or `path!=v` at p (skip_ws'd); returns the end. */
static const char *read_field(struct gc_arena *a, const char *p, struct gb_selector_req *r) {
  const char *s = p;
  while (*p && *p != '=' && *p != '!' && *p != ',' && *p != ' ' && *p != '\t')
    p++;
  if (p == s || !(*p == '=' || (*p == '!' && p[1] == '=')))
    return NULL;
  r->key = gc_arena_strndup(a, s, (size_t)(p - s));
  r->op = *p == '!' ? GB_SEL_NE : GB_SEL_EQ;
  p += *p == '!' || p[1] == '=' ? 2 : 1;
  const char *v = p;
  while (*p && *p != ',')
    p++;
  const char *end = p;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  r->values = gc_arena_alloc(a, sizeof(*r->values));
  if (!r->key || !r->values || !(r->values[0] = gc_arena_strndup(a, v, (size_t)(end - v))))
    return NULL;
  r->n_values = 1;
  r->field = 1;
  return p;
}

int gb_selector_add_fields(struct gc_arena *a, const char *text, struct gb_selector *out,
                           struct gc_diags *d) {
  if (!text || !*skip_ws(text))
    return 0;
  if (strlen(text) > SEL_MAX_TEXT) {
    gc_diags_addf(d, "field selector longer than %d bytes", SEL_MAX_TEXT);
    return GC_EINVAL;
  }
  if (!out->reqs && !(out->reqs = gc_arena_alloc(a, SEL_MAX_REQS * sizeof(*out->reqs))))
    return GC_ENOMEM;
  for (const char *p = skip_ws(text);;) {
    const char *start = p;
    struct gb_selector_req *r = &out->reqs[out->n];
    memset(r, 0, sizeof(*r));
    if (out->n == SEL_MAX_REQS || strchr(start, '\\') || !(p = read_field(a, p, r))) {
      gc_diags_addf(d,
                    "field selector: cannot parse requirement at \"%.64s\" (expected "
                    "PATH=VALUE or PATH!=VALUE, at most %d)",
                    start, SEL_MAX_REQS);
      return GC_EINVAL;
    }
    out->n++;
    if (!*p)
      return 0;
    p = skip_ws(p + 1);
  }
}

/* The text of the field at dotted path in obj into buf ("" when absent or
 * not a scalar). */
static const char *field_text(json_object *obj, const char *path, char *buf, size_t cap) {
  char seg[256];
  json_object *v = obj;
  for (const char *p = path; v && *p;) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= sizeof(seg))
      return "";
    memcpy(seg, p, n);
    seg[n] = '\0';
    v = gb_kobj_get(v, seg);
    p += n + (dot != NULL);
  }
  if (!v || json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array))
    return "";
  snprintf(buf, cap, "%s", json_object_get_string(v));
  return buf;
}

int gb_selector_match_object(const struct gb_selector *sel, json_object *obj) {
  json_object *labels = gb_kobj_dig(obj, "metadata", "labels", NULL);
  char buf[1024];
  for (size_t i = 0; sel && i < sel->n; i++) {
    const struct gb_selector_req *r = &sel->reqs[i];
    const char *v = r->field ? field_text(obj, r->key, buf, sizeof(buf))
                             : gb_kobj_str(labels, r->key);
    if (!holds(r, v))
      return 0;
  }
  return 1;
}
