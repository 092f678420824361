/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_emit: gc_value trees to YAML (libyaml emitter) and JSON (json-c).
 */
#include "gb_emit.h"

#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "gb_buf.h"
#include "gb_emit_test.h"
#include "gb_scalar.h"
#include "gc_diag.h"

/* Trees built by the loader are at most 1000 deep; anything deeper was built
 * in memory and is refused rather than risking the C stack. */
#define EMIT_MAX_DEPTH 1000

/* The largest document text written (1 GiB): far above any manifest set,
 * and a bound on what a runaway tree can make the emitter allocate. */
#define EMIT_MAX_BYTES ((size_t)1 << 30)

static int yaml_write(void *data, unsigned char *buffer, size_t size) {
  return gb_buf_add(data, buffer, size) == GC_OK;
}

/* ------------------------------------------------------------------------ */
/* YAML                                                                     */

struct yemit {
  yaml_emitter_t em;
  int rc;
};

static int yemit(struct yemit *y, yaml_event_t *ev) {
  if (!yaml_emitter_emit(&y->em, ev)) {
    if (!y->rc)
      y->rc = y->em.error == YAML_MEMORY_ERROR ? GC_ENOMEM : GC_EINVAL;
    return y->rc;
  }
  return GC_OK;
}

/* 1 if s[0..len) is all ASCII (checked eight bytes at a time); UTF-8 is
 * validated byte by byte only for strings that are not. */
static int all_ascii(const char *s, size_t len) {
  size_t i = 0;
  uint64_t acc = 0;
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    acc |= w;
  }
  for (; i < len; i++)
    acc |= (unsigned char)s[i];
  return (acc & 0x8080808080808080ULL) == 0;
}

static int yscalar(struct yemit *y, const char *s, size_t len, yaml_scalar_style_t style) {
  if (len > INT32_MAX || (!all_ascii(s, len) && gb_scalar_utf8_check(s, len) != len))
    return y->rc = GC_EINVAL;
  yaml_event_t ev;
  if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, 1, 1, style))
    return y->rc = GC_ENOMEM;
  return yemit(y, &ev);
}

/* Strings that would read back as something else are double-quoted, as
 * goyaml.v2 (kubectl -o yaml) does; multi-line strings use the literal block
 * style; everything else is plain, and libyaml falls back to quotes itself
 * when a plain scalar is not allowed (": ", leading "-", "#", ...). */
/* Whether a string may read back as something else depends on its first
 * byte: only "", "<<" and strings starting with a sign, a digit, '.', '~'
 * or one of yYnNtTfFoO (bool and null words, at most 6 bytes) can, exactly
 * the cases gb_scalar_needs_quotes resolves (a number, a base-60 float or a
 * timestamp starts with a sign or a digit).  Everything else skips that
 * analysis, which would find nothing. */
static int maybe_needs_quotes(const char *s, size_t len) {
  /* 1: may resolve to another type; 2: only when at most 6 bytes long. */
  static const unsigned char FIRST[256] = {
      ['+'] = 1, ['-'] = 1, ['.'] = 1, ['~'] = 1, ['<'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1,
      ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['y'] = 2,
      ['Y'] = 2, ['n'] = 2, ['N'] = 2, ['t'] = 2, ['T'] = 2, ['f'] = 2, ['F'] = 2, ['o'] = 2,
      ['O'] = 2};
  if (len == 0)
    return 1;
  unsigned char k = FIRST[(unsigned char)s[0]];
  return k == 2 ? len <= 6 : k;
}

static int ystring(struct yemit *y, const char *s, size_t len) {
  yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;
  if (maybe_needs_quotes(s, len) && gb_scalar_needs_quotes(s, len))
    style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
  else if (memchr(s, '\n', len))
    style = YAML_LITERAL_SCALAR_STYLE;
  return yscalar(y, s, len, style);
}

/* The text of a float: its source spelling when that still reads back as
 * the same float, else the shortest exact decimal. */
static size_t float_text(const struct gc_value *v, char *buf, size_t cap) {
  if (v->text) {
    size_t n = strlen(v->text);
    struct gb_scalar r;
    gb_scalar_resolve(v->text, n, &r);
    if (n < cap && r.type == GC_FLOAT && (r.f == v->u.f || (isnan(r.f) && isnan(v->u.f)))) {
      memcpy(buf, v->text, n + 1);
      return n;
    }
  }
  return gb_scalar_format_double(v->u.f, buf, cap);
}

/* Writes the decimal digits of i at the end of buf[0..cap) (cap >= 21);
 * returns where they start. */
static size_t int_text(int64_t i, char *buf, size_t cap) {
  uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
  size_t k = cap;
  do {
    buf[--k] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (i < 0)
    buf[--k] = '-';
  return k;
}

static int ynode(struct yemit *y, const struct gc_value *v, int depth) {
  char num[64];
  yaml_event_t ev;
  if (!v || depth > EMIT_MAX_DEPTH)
    return y->rc = GC_EINVAL;
  switch (v->type) {
  case GC_NULL: return yscalar(y, "null", 4, YAML_PLAIN_SCALAR_STYLE);
  case GC_BOOL:
    return v->u.b ? yscalar(y, "true", 4, YAML_PLAIN_SCALAR_STYLE)
                  : yscalar(y, "false", 5, YAML_PLAIN_SCALAR_STYLE);
  case GC_INT: {
    size_t k = int_text(v->u.i, num, sizeof(num));
    return yscalar(y, num + k, sizeof(num) - k, YAML_PLAIN_SCALAR_STYLE);
  }
  case GC_FLOAT: {
    size_t n = float_text(v, num, sizeof(num));
    return yscalar(y, num, n, YAML_PLAIN_SCALAR_STYLE);
  }
  case GC_STR: return ystring(y, v->u.s ? v->u.s : "", v->u.s ? v->len : 0);
  case GC_SEQ:
    if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE))
      return y->rc = GC_ENOMEM;
    if (yemit(y, &ev))
      return y->rc;
    for (size_t i = 0; i < v->len; i++)
      if (ynode(y, v->u.items[i], depth + 1))
        return y->rc;
    if (!yaml_sequence_end_event_initialize(&ev))
      return y->rc = GC_ENOMEM;
    return yemit(y, &ev);
  case GC_MAP:
    if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE))
      return y->rc = GC_ENOMEM;
    if (yemit(y, &ev))
      return y->rc;
    for (size_t i = 0; i < v->len; i++) {
      const struct gc_member *m = &v->u.members[i];
      if (ystring(y, m->key, m->key_len) || ynode(y, m->value, depth + 1))
        return y->rc;
    }
    if (!yaml_mapping_end_event_initialize(&ev))
      return y->rc = GC_ENOMEM;
    return yemit(y, &ev);
  default: return y->rc = GC_EINVAL;
  }
}

/* ------------------------------------------------------------------------ */
/* YAML written directly                                                    */

/* A document whose every scalar libyaml would write unchanged (plain, or in
 * double quotes with nothing to escape) is written here, byte for byte as
 * libyaml's emitter writes it with gb_emit_yaml's settings (block style,
 * indent 2, no width limit, "\n" breaks), without an event, a copy or a
 * malloc per scalar.  Anything else (a literal block, a character libyaml
 * escapes or refuses, a key libyaml writes as "? key", an empty or scalar
 * root) makes the whole document go through libyaml as before.  The layout
 * rules, with I the column of the enclosing key or dash:
 *   key: scalar        key: {}        key: []
 *   key:               key:
 *     sub: v           - item         (a sequence under a key is not indented)
 *   - scalar           - k: v         - - x
 *                        k2: v          - y
 * tests/bridge/doc/test_emit_direct.c compares both writers on random trees. */

/* Bytes the scan must look at: 1 for anything outside printable ASCII,
 * 2 for the characters that matter inside a plain or quoted scalar. */
static const unsigned char DW_CLASS[256] = {
    [0 ... 0x1f] = 1, [0x7f ... 0xff] = 1, [' '] = 2, [':'] = 2, ['#'] = 2, ['"'] = 2,
    ['\\'] = 2,
};

/* The first bytes libyaml treats as an indicator in a plain scalar ('-',
 * '?' and ':' only when a blank follows; '?' and ':' are refused here). */
static const unsigned char DW_FIRST[256] = {
    ['#'] = 1, [','] = 1, ['['] = 1, [']'] = 1, ['{'] = 1, ['}'] = 1, ['&'] = 1, ['*'] = 1,
    ['!'] = 1, ['|'] = 1, ['>'] = 1, ['\''] = 1, ['"'] = 1, ['%'] = 1, ['@'] = 1, ['`'] = 1,
    ['?'] = 1, [':'] = 1, [' '] = 1,
};

enum { DW_NO, DW_PLAIN, DW_QUOTED };

/* How libyaml writes s[0..len) in block context when asked for plain
 * (quote = 0) or double-quoted (quote = 1) style: DW_PLAIN / DW_QUOTED when
 * the bytes go out as they are (in quotes for DW_QUOTED), DW_NO when
 * libyaml would change style, escape, or refuse. */
static int dw_style(const char *s, size_t len, int quote) {
  const unsigned char *u = (const unsigned char *)s;
  int special = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char k = DW_CLASS[u[i]];
    if (!k)
      continue;
    if (k == 1)
      return DW_NO;
    if (u[i] == '"' || u[i] == '\\') {
      if (quote)
        return DW_NO;
      continue;
    }
    /* A blank next to ':' or '#' makes an indicator; a blank at either end
     * is not allowed plain. */
    if (u[i] == ' ' && (i == 0 || i + 1 == len || u[i + 1] == '#'))
      special = 1;
    else if (u[i] == ':' && (i + 1 == len || u[i + 1] == ' '))
      special = 1;
  }
  if (quote)
    return DW_QUOTED;
  if (len == 0 || special || DW_FIRST[u[0]])
    return DW_NO;
  /* "-" before a blank or the end is a sequence entry; "---" and "..."
   * start a document marker. */
  if (u[0] == '-' && (len == 1 || u[1] == ' '))
    return DW_NO;
  if (len >= 3 && (u[0] == '-' || u[0] == '.') && u[1] == u[0] && u[2] == u[0])
    return DW_NO;
  return DW_PLAIN;
}

/* Makes room for n more bytes: the common case inline, else gb_buf_reserve.
 * A buffer with contents has no error (a failure frees them). */
static inline int dw_room(struct gb_buf *b, size_t n) {
  if (b->p && n < b->cap - b->len && n < b->toobig - b->len)
    return 0;
  return gb_buf_reserve(b, n);
}

struct dwrite {
  struct gb_buf *b;
  int ok;        /* 0 once something libyaml must write was met */
  int line_open; /* the current line holds something */
};

/* Appends a scalar: " text" or " \"text\"" after a key's colon or a dash
 * (lead), "text:" or "\"text\":" as a key. */
static void dw_scalar(struct dwrite *w, const char *s, size_t len, int quote, int lead) {
  int st = dw_style(s, len, quote);
  if (st == DW_NO || dw_room(w->b, len + 4)) {
    w->ok = 0;
    return;
  }
  char *p = w->b->p + w->b->len;
  if (lead)
    *p++ = ' ';
  if (st == DW_QUOTED)
    *p++ = '"';
  memcpy(p, s, len);
  p += len;
  if (st == DW_QUOTED)
    *p++ = '"';
  if (!lead)
    *p++ = ':';
  w->b->len = (size_t)(p - w->b->p);
  w->b->p[w->b->len] = '\0';
}

/* 1 when ystring would ask libyaml for double quotes. */
static int string_quoted(const char *s, size_t len) {
  return maybe_needs_quotes(s, len) && gb_scalar_needs_quotes(s, len);
}

/* A string value: ystring's choice of style, written when libyaml would
 * write it unchanged (a multi-line string is a literal block: refused). */
static void dw_string(struct dwrite *w, const char *s, size_t len) {
  int quote = string_quoted(s, len);
  if (!quote && memchr(s, '\n', len)) {
    w->ok = 0;
    return;
  }
  dw_scalar(w, s, len, quote, 1);
}

/* Starts a new line at column indent, or, for the first entry written
 * inline after "-", pads with the one space libyaml puts there; then the
 * dash of a sequence item (dash). */
static void dw_indent(struct dwrite *w, size_t indent, int inline_first, int dash) {
  size_t n = inline_first ? 1 : indent;
  if (dw_room(w->b, n + 2)) {
    w->ok = 0;
    return;
  }
  char *p = w->b->p + w->b->len;
  if (!inline_first && w->line_open)
    *p++ = '\n';
  memset(p, ' ', n);
  p += n;
  if (dash)
    *p++ = '-';
  w->b->len = (size_t)(p - w->b->p);
  w->b->p[w->b->len] = '\0';
  w->line_open = 1;
}

static void dw_node(struct dwrite *w, const struct gc_value *v, size_t indent, int after_dash,
                    int depth);

/* The members of a non-empty map, keys at column indent; the first one
 * continues the line after a dash when inline_first. */
static void dw_map(struct dwrite *w, const struct gc_value *v, size_t indent, int inline_first,
                   int depth) {
  for (size_t i = 0; i < v->len && w->ok; i++) {
    const struct gc_member *m = &v->u.members[i];
    /* libyaml writes a key longer than 128 bytes as "? key". */
    if (m->key_len > 128 || memchr(m->key, '\n', m->key_len)) {
      w->ok = 0;
      return;
    }
    dw_indent(w, indent, inline_first && i == 0, 0);
    if (w->ok)
      dw_scalar(w, m->key, m->key_len, string_quoted(m->key, m->key_len), 0);
    if (w->ok)
      dw_node(w, m->value, indent, 0, depth + 1);
  }
}

/* The items of a non-empty sequence, dashes at column indent. */
static void dw_seq(struct dwrite *w, const struct gc_value *v, size_t indent, int inline_first,
                   int depth) {
  for (size_t i = 0; i < v->len && w->ok; i++) {
    dw_indent(w, indent, inline_first && i == 0, 1);
    if (w->ok)
      dw_node(w, v->u.items[i], indent + 2, 1, depth + 1);
  }
}

/* A value after "key:" (indent: the key's column) or after "-" (indent:
 * the column of the item's content). */
static void dw_node(struct dwrite *w, const struct gc_value *v, size_t indent, int after_dash,
                    int depth) {
  char num[64];
  if (!v || depth > EMIT_MAX_DEPTH) {
    w->ok = 0;
    return;
  }
  switch (v->type) {
  case GC_NULL: dw_scalar(w, "null", 4, 0, 1); return;
  case GC_BOOL: v->u.b ? dw_scalar(w, "true", 4, 0, 1) : dw_scalar(w, "false", 5, 0, 1); return;
  case GC_INT: {
    size_t k = int_text(v->u.i, num, sizeof(num));
    dw_scalar(w, num + k, sizeof(num) - k, 0, 1);
    return;
  }
  case GC_FLOAT: {
    size_t n = float_text(v, num, sizeof(num));
    dw_scalar(w, num, n, 0, 1);
    return;
  }
  case GC_STR: dw_string(w, v->u.s ? v->u.s : "", v->u.s ? v->len : 0); return;
  case GC_SEQ:
  case GC_MAP:
    if (v->len == 0) {
      if (gb_buf_add(w->b, v->type == GC_MAP ? " {}" : " []", 3))
        w->ok = 0;
    } else if (v->type == GC_MAP) {
      dw_map(w, v, after_dash ? indent : indent + 2, after_dash, depth);
    } else {
      /* Under a key a sequence keeps the key's column; after a dash its
       * first dash follows on the same line. */
      dw_seq(w, v, indent, after_dash, depth);
    }
    return;
  default: w->ok = 0; return;
  }
}

/* Writes document root (the i-th of the stream) directly.  Returns 1 when
 * done, 0 when libyaml must write it (the buffer is as it was). */
static int dw_document(struct gb_buf *b, const struct gc_value *root, size_t i) {
  if (!root || (root->type != GC_MAP && root->type != GC_SEQ) || root->len == 0)
    return 0;
  size_t mark = b->len;
  struct dwrite w = {.b = b, .ok = 1, .line_open = i > 0};
  if (i > 0 && gb_buf_add(b, "---", 3))
    return 0;
  if (root->type == GC_MAP)
    dw_map(&w, root, 0, 0, 1);
  else
    dw_seq(&w, root, 0, 0, 1);
  if (w.ok && !gb_buf_add(b, "\n", 1))
    return 1;
  if (!b->err) {
    b->len = mark;
    if (b->p)
      b->p[mark] = '\0';
  }
  return 0;
}

/* Emits docs through libyaml, except the documents dw_document can write
 * (when direct is set).  The documents libyaml writes are flushed to the
 * buffer at each document end, so the two kinds interleave in order. */
static int emit_yaml(const struct gc_value *const *docs, size_t n, int direct, char **out,
                     size_t *len) {
  if (!out || !len || (n && !docs))
    return GC_EINVAL;
  *out = NULL;
  *len = 0;
  struct gb_buf b;
  gb_buf_init(&b, EMIT_MAX_BYTES);
  struct yemit y = {.rc = GC_OK};
  yaml_event_t ev;
  int last_direct = 0;
  if (!yaml_emitter_initialize(&y.em))
    return GC_ENOMEM;
  yaml_emitter_set_output(&y.em, yaml_write, &b);
  yaml_emitter_set_unicode(&y.em, 1);
  yaml_emitter_set_indent(&y.em, 2);
  yaml_emitter_set_width(&y.em, -1);
  yaml_emitter_set_break(&y.em, YAML_LN_BREAK);
  if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || yemit(&y, &ev))
    goto out;
  for (size_t i = 0; i < n; i++) {
    if (direct && dw_document(&b, docs[i], i)) {
      last_direct = 1;
      continue;
    }
    if (b.err)
      goto out;
    last_direct = 0;
    /* libyaml writes "---" before every document but the first.  The first
     * gets one too when it is an empty map or sequence: a stream starting
     * with "{}" or "[]" would be read back as JSON.  A document after ones
     * written directly is not libyaml's first, so it is told so. */
    int implicit = i == 0 && !(docs[i] && (docs[i]->type == GC_MAP || docs[i]->type == GC_SEQ) &&
                               docs[i]->len == 0);
    if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, implicit) ||
        yemit(&y, &ev))
      goto out;
    if (ynode(&y, docs[i], 1))
      goto out;
    if (!yaml_document_end_event_initialize(&ev, 1) || yemit(&y, &ev))
      goto out;
  }
  /* The stream end writes "..." only after a document of libyaml's own
   * that ends open (a kept block scalar); a document after it closes that,
   * so it is not sent when the last document was written directly. */
  if (!last_direct && (!yaml_stream_end_event_initialize(&ev) || yemit(&y, &ev)))
    goto out;
  yaml_emitter_flush(&y.em);
out:
  if (b.err)
    y.rc = b.err;
  yaml_emitter_delete(&y.em);
  if (y.rc) {
    gb_buf_free(&b);
    return y.rc;
  }
  return gb_buf_take(&b, out, len);
}

int gb_emit_yaml(const struct gc_value *const *docs, size_t n, char **out, size_t *len) {
  return emit_yaml(docs, n, 1, out, len);
}

int gb_emit_yaml_libyaml(const struct gc_value *const *docs, size_t n, char **out, size_t *len) {
  return emit_yaml(docs, n, 0, out, len);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */

/* Is s a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_number_text(const char *s) {
  size_t i = 0;
  if (s[i] == '-')
    i++;
  if (s[i] == '0')
    i++;
  else if (s[i] >= '1' && s[i] <= '9')
    while (s[i] >= '0' && s[i] <= '9')
      i++;
  else
    return 0;
  if (s[i] == '.') {
    i++;
    if (!(s[i] >= '0' && s[i] <= '9'))
      return 0;
    while (s[i] >= '0' && s[i] <= '9')
      i++;
  }
  if (s[i] == 'e' || s[i] == 'E') {
    i++;
    if (s[i] == '+' || s[i] == '-')
      i++;
    if (!(s[i] >= '0' && s[i] <= '9'))
      return 0;
    while (s[i] >= '0' && s[i] <= '9')
      i++;
  }
  return s[i] == '\0';
}

static int jnode(const struct gc_value *v, int depth, struct json_object **out) {
  struct json_object *o = NULL;
  if (!v || depth > EMIT_MAX_DEPTH)
    return GC_EINVAL;
  switch (v->type) {
  case GC_NULL: *out = NULL; return GC_OK;
  case GC_BOOL: o = json_object_new_boolean(v->u.b); break;
  case GC_INT: o = json_object_new_int64(v->u.i); break;
  case GC_FLOAT: {
    if (!isfinite(v->u.f))
      return GC_EINVAL; /* JSON has no Inf or NaN */
    char num[64];
    if (v->text && json_number_text(v->text)) {
      o = json_object_new_double_s(v->u.f, v->text);
    } else {
      gb_scalar_format_double(v->u.f, num, sizeof(num));
      o = json_object_new_double_s(v->u.f, num);
    }
    break;
  }
  case GC_STR:
    if (v->len > INT32_MAX || (v->u.s && gb_scalar_utf8_check(v->u.s, v->len) != v->len))
      return GC_EINVAL;
    o = json_object_new_string_len(v->u.s ? v->u.s : "", (int)v->len);
    break;
  case GC_SEQ:
    o = json_object_new_array_ext((int)(v->len < INT32_MAX ? v->len : 0));
    if (!o)
      return GC_ENOMEM;
    for (size_t i = 0; i < v->len; i++) {
      struct json_object *item = NULL;
      int rc = jnode(v->u.items[i], depth + 1, &item);
      if (rc || json_object_array_add(o, item)) {
        json_object_put(item);
        json_object_put(o);
        return rc ? rc : GC_ENOMEM;
      }
    }
    break;
  case GC_MAP:
    o = json_object_new_object();
    if (!o)
      return GC_ENOMEM;
    for (size_t i = 0; i < v->len; i++) {
      const struct gc_member *m = &v->u.members[i];
      /* json-c keys are C strings: a key with a NUL byte cannot be kept. */
      if (memchr(m->key, '\0', m->key_len) || gb_scalar_utf8_check(m->key, m->key_len) != m->key_len) {
        json_object_put(o);
        return GC_EINVAL;
      }
      struct json_object *val = NULL;
      int rc = jnode(m->value, depth + 1, &val);
      if (rc || json_object_object_add(o, m->key, val)) {
        json_object_put(val);
        json_object_put(o);
        return rc ? rc : GC_ENOMEM;
      }
    }
    break;
  default: return GC_EINVAL;
  }
  if (!o)
    return GC_ENOMEM;
  *out = o;
  return GC_OK;
}

/* json-c's pretty printer indents by two spaces, writes empty containers as
 * "{\n  }" and leaves <, > and & alone; kubectl (Go's encoding/json with
 * MarshalIndent and four spaces) writes "{}" and "[]", indents by four and
 * escapes those three characters as \u003c, \u003e and \u0026.  This pass
 * rewrites json-c's output into kubectl's layout, copying the runs between
 * the bytes it acts on at once. */
static int kubectl_layout(const char *s, size_t len, struct gb_buf *b) {
  /* Bytes that end a run inside a string, and outside one. */
  static const unsigned char in_stop[256] = {['<'] = 1, ['>'] = 1, ['&'] = 1, ['\\'] = 1,
                                             ['"'] = 1};
  static const unsigned char out_stop[256] = {['"'] = 1, ['{'] = 1, ['['] = 1, ['\n'] = 1};
  static const char SPACES[] = "                                ";
  int in_str = 0, line_start = 1;
  size_t i = 0;
  while (i < len && !b->err) {
    char c = s[i];
    if (in_str) {
      size_t j = i;
      while (j < len && !in_stop[(unsigned char)s[j]])
        j++;
      gb_buf_add(b, s + i, j - i);
      if (j >= len)
        break;
      c = s[j];
      if (c == '<' || c == '>' || c == '&') {
        gb_buf_add(b, c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : "\\u0026", 6);
        i = j + 1;
      } else if (c == '\\') {
        gb_buf_add(b, s + j, j + 1 < len ? 2 : 1);
        i = j + 2;
      } else {
        gb_buf_add(b, "\"", 1);
        in_str = 0;
        i = j + 1;
      }
      continue;
    }
    if (line_start && c == ' ') {
      size_t j = i;
      while (j < len && s[j] == ' ')
        j++;
      for (size_t n = 2 * (j - i); n > 0;) {
        size_t k = n < sizeof(SPACES) - 1 ? n : sizeof(SPACES) - 1;
        gb_buf_add(b, SPACES, k);
        n -= k;
      }
      i = j;
      continue;
    }
    if (!out_stop[(unsigned char)c]) {
      size_t j = i;
      while (j < len && !out_stop[(unsigned char)s[j]])
        j++;
      gb_buf_add(b, s + i, j - i);
      line_start = 0;
      i = j;
      continue;
    }
    line_start = c == '\n';
    if (c == '"')
      in_str = 1;
    if (c == '{' || c == '[') {
      size_t j = i + 1;
      while (j < len && (s[j] == ' ' || s[j] == '\n'))
        j++;
      if (j < len && s[j] == (c == '{' ? '}' : ']')) {
        char pair[2] = {c, s[j]};
        gb_buf_add(b, pair, 2);
        i = j + 1;
        continue;
      }
    }
    gb_buf_add(b, &c, 1);
    i++;
  }
  return b->err;
}

int gb_emit_json(const struct gc_value *v, int pretty, char **out, size_t *len) {
  if (!v || !out || !len)
    return GC_EINVAL;
  *out = NULL;
  *len = 0;
  struct json_object *o = NULL;
  int rc = jnode(v, 1, &o);
  if (rc)
    return rc;
  int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
              (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);
  size_t n = 0;
  const char *s = o ? json_object_to_json_string_length(o, flags, &n) : "null";
  if (!o)
    n = 4;
  if (!s) {
    json_object_put(o);
    return GC_ENOMEM;
  }
  struct gb_buf b;
  gb_buf_init(&b, EMIT_MAX_BYTES);
  /* The layout grows the text by about a third (indent, escapes). */
  rc = gb_buf_reserve(&b, n < EMIT_MAX_BYTES / 2 ? n + n / 2 + 16 : n);
  if (!rc)
    rc = pretty ? kubectl_layout(s, n, &b) : gb_buf_add(&b, s, n);
  if (!rc && pretty)
    rc = gb_buf_add(&b, "\n", 1);
  json_object_put(o);
  if (!rc)
    rc = gb_buf_take(&b, out, len);
  gb_buf_free(&b);
  return rc;
}
