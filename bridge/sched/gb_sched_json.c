/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_json: the pull scanner (see gb_sched_json.h).
 */
#include "gb_sched_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gb_sj_init(struct gb_sj *s, const char *buf, size_t len) {
  s->base = s->p = buf;
  s->end = buf + len;
  s->depth = 0;
  s->msg[0] = '\0';
}

int gb_sj_fail(struct gb_sj *s, const char *fmt, ...) {
  if (s->msg[0])
    return GC_EINVAL;
  size_t line = 1, col = 1;
  for (const char *q = s->base; q < s->p && q < s->end; q++) {
    if (*q == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  int n = snprintf(s->msg, sizeof(s->msg), "body:%zu:%zu: ", line, col);
  if (n < 0 || (size_t)n >= sizeof(s->msg))
    return GC_EINVAL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->msg + n, sizeof(s->msg) - (size_t)n, fmt, ap);
  va_end(ap);
  return GC_EINVAL;
}

static inline void skip_ws(struct gb_sj *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
    s->p++;
}

static inline int peek(struct gb_sj *s) {
  skip_ws(s);
  return s->p < s->end ? (unsigned char)*s->p : 0;
}

int gb_sj_peek(struct gb_sj *s) { return peek(s); }

static int is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Non-zero when one of the 8 bytes of v is a quote, a backslash or below
 * 0x20 (the bytes a string scan must stop at); may flag later bytes too. */
static inline uint64_t special8(uint64_t v) {
  uint64_t q = v ^ (ONES * '"'), b = v ^ (ONES * '\\');
  return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((v - ONES * 0x20) & ~v)) & HIGHS;
}

/* Skips a string whose opening quote is at the cursor; *escaped tells
 * whether it held a backslash.  Most of a Kubernetes object is plain string
 * bytes, so they are passed over 8 at a time. */
static int skip_string(struct gb_sj *s, int *escaped) {
  const char *p = s->p + 1, *end = s->end;
  *escaped = 0;
  for (;;) {
    while (end - p >= 8) {
      uint64_t v;
      memcpy(&v, p, 8);
      uint64_t m = special8(v);
      if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* The lowest flagged byte is exact (only bytes after it can be
         * flagged falsely): go straight to it. */
        p += __builtin_ctzll(m) >> 3;
#endif
        break;
      }
      p += 8;
    }
    if (p >= end) {
      s->p = end;
      return gb_sj_fail(s, "unterminated string");
    }
    unsigned char ch = (unsigned char)*p;
    if (ch == '"') {
      s->p = p + 1;
      return 0;
    }
    if (ch < 0x20) {
      s->p = p;
      return gb_sj_fail(s, "control character in string");
    }
    if (ch != '\\') {
      p++;
      continue;
    }
    *escaped = 1;
    if (end - p < 2) {
      s->p = p;
      return gb_sj_fail(s, "unterminated string");
    }
    char e = p[1];
    if (e == 'u') {
      if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5])) {
        s->p = p;
        return gb_sj_fail(s, "invalid \\u escape in string");
      }
      p += 6;
    } else if (e && strchr("\"\\/bfnrt", e)) {
      p += 2;
    } else {
      s->p = p;
      return gb_sj_fail(s, "invalid escape in string");
    }
  }
}

static int skip_number(struct gb_sj *s) {
  const char *p = s->p;
  if (p < s->end && *p == '-')
    p++;
  if (p >= s->end || *p < '0' || *p > '9')
    return gb_sj_fail(s, "invalid number");
  if (*p == '0')
    p++;
  else
    while (p < s->end && *p >= '0' && *p <= '9')
      p++;
  if (p < s->end && *p == '.') {
    p++;
    if (p >= s->end || *p < '0' || *p > '9')
      return gb_sj_fail(s, "invalid number");
    while (p < s->end && *p >= '0' && *p <= '9')
      p++;
  }
  if (p < s->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < s->end && (*p == '+' || *p == '-'))
      p++;
    if (p >= s->end || *p < '0' || *p > '9')
      return gb_sj_fail(s, "invalid number");
    while (p < s->end && *p >= '0' && *p <= '9')
      p++;
  }
  s->p = p;
  return 0;
}

static int skip_literal(struct gb_sj *s, const char *lit) {
  size_t n = strlen(lit);
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n))
    return gb_sj_fail(s, "invalid literal");
  s->p += n;
  return 0;
}

static const char *type_name(int c) {
  switch (c) {
  case '{': return "an object";
  case '[': return "an array";
  case '"': return "a string";
  case 't':
  case 'f': return "a boolean";
  case 'n': return "null";
  case 0: return "the end of the body";
  default: return "a number";
  }
}

static int enter(struct gb_sj *s, char open, const char *what) {
  int c = peek(s);
  if (c != open)
    return gb_sj_fail(s, "%s: expected %s, found %s", what, open == '{' ? "an object" : "an array",
                      type_name(c));
  if (s->depth >= GB_SJ_MAX_DEPTH) {
    gb_sj_fail(s, "nesting deeper than %d", GB_SJ_MAX_DEPTH);
    return GC_ELIMIT;
  }
  s->p++;
  s->first[s->depth++] = 1;
  return 0;
}

int gb_sj_object_begin(struct gb_sj *s, const char *what) { return enter(s, '{', what); }
int gb_sj_array_begin(struct gb_sj *s, const char *what) { return enter(s, '[', what); }

/* Before the next member or element: the closing byte (returns 0), or a
 * comma unless this is the first (returns 1). */
static int next_item(struct gb_sj *s, char close) {
  int c = peek(s);
  int first = s->first[s->depth - 1];
  if (c == close) {
    s->p++;
    s->depth--;
    return 0;
  }
  if (!first) {
    if (c != ',')
      return gb_sj_fail(s, c ? "expected ',' or '%c'" : "unexpected end of body", close);
    s->p++;
    if (peek(s) == close)
      return gb_sj_fail(s, "trailing comma");
  }
  s->first[s->depth - 1] = 0;
  return 1;
}

static inline int object_next(struct gb_sj *s, struct gb_sj_span *key) {
  int rc = next_item(s, '}');
  if (rc <= 0)
    return rc;
  if (peek(s) != '"')
    return gb_sj_fail(s, "expected a member name");
  int esc;
  const char *start = s->p + 1;
  if ((rc = skip_string(s, &esc)) < 0)
    return rc;
  key->p = esc ? "" : start; /* a key with escapes matches nothing */
  key->len = esc ? 0 : (size_t)(s->p - 1 - start);
  if (peek(s) != ':')
    return gb_sj_fail(s, "expected ':' after a member name");
  s->p++;
  return 1;
}

int gb_sj_object_next(struct gb_sj *s, struct gb_sj_span *key) { return object_next(s, key); }

int gb_sj_array_next(struct gb_sj *s) { return next_item(s, ']'); }

static int skip_any(struct gb_sj *s);

static int skip_container(struct gb_sj *s, int obj) {
  int rc = enter(s, obj ? '{' : '[', "value");
  if (rc < 0)
    return rc;
  for (;;) {
    struct gb_sj_span key;
    rc = obj ? object_next(s, &key) : next_item(s, ']');
    if (rc <= 0)
      return rc;
    rc = skip_any(s);
    if (rc < 0)
      return rc;
  }
}

static int skip_any(struct gb_sj *s) {
  int c = peek(s);
  int esc;
  switch (c) {
  case '{': return skip_container(s, 1);
  case '[': return skip_container(s, 0);
  case '"': return skip_string(s, &esc);
  case 't': return skip_literal(s, "true");
  case 'f': return skip_literal(s, "false");
  case 'n': return skip_literal(s, "null");
  case 0: return gb_sj_fail(s, "unexpected end of body");
  default:
    if (c == '-' || (c >= '0' && c <= '9'))
      return skip_number(s);
    return gb_sj_fail(s, "unexpected character '%c'", c >= 0x20 && c < 0x7f ? c : '?');
  }
}

int gb_sj_skip(struct gb_sj *s, struct gb_sj_span *span) {
  peek(s);
  const char *start = s->p;
  int rc = skip_any(s);
  if (rc == 0 && span) {
    span->p = start;
    span->len = (size_t)(s->p - start);
  }
  return rc;
}

int gb_sj_null(struct gb_sj *s) {
  if (peek(s) == 'n' && skip_literal(s, "null") == 0)
    return 1;
  return 0;
}

int gb_sj_string(struct gb_sj *s, const char *what, char *out, size_t size) {
  if (gb_sj_null(s)) {
    out[0] = '\0';
    return 0;
  }
  int c = peek(s);
  if (c != '"')
    return gb_sj_fail(s, "%s: expected a string, found %s", what, type_name(c));
  const char *at = s->p;
  int esc;
  int rc = skip_string(s, &esc);
  if (rc < 0)
    return rc;
  size_t n = (size_t)(s->p - at) - 2;
  if (!esc) {
    if (n >= size) {
      s->p = at;
      gb_sj_fail(s, "%s: longer than %zu bytes", what, size - 1);
      return GC_ELIMIT;
    }
    memcpy(out, at + 1, n);
    out[n] = '\0';
    return 0;
  }
  /* json-c decodes the escapes (\uXXXX surrogate pairs included). */
  struct json_tokener *tok = json_tokener_new();
  if (!tok)
    return GC_ENOMEM;
  struct json_object *o = json_tokener_parse_ex(tok, at, (int)(s->p - at));
  json_tokener_free(tok);
  rc = 0;
  if (!o || !json_object_is_type(o, json_type_string)) {
    s->p = at;
    rc = gb_sj_fail(s, "%s: invalid string", what);
  } else if ((size_t)json_object_get_string_len(o) >= size ||
             memchr(json_object_get_string(o), '\0', (size_t)json_object_get_string_len(o))) {
    s->p = at;
    gb_sj_fail(s, "%s: longer than %zu bytes or holds NUL", what, size - 1);
    rc = GC_ELIMIT;
  } else {
    memcpy(out, json_object_get_string(o), (size_t)json_object_get_string_len(o) + 1);
  }
  json_object_put(o);
  return rc;
}

int gb_sj_double(struct gb_sj *s, const char *what, double *out) {
  if (gb_sj_null(s)) {
    *out = 0;
    return 0;
  }
  int c = peek(s);
  if (c != '-' && (c < '0' || c > '9'))
    return gb_sj_fail(s, "%s: expected a number, found %s", what, type_name(c));
  const char *at = s->p;
  int rc = skip_number(s);
  if (rc < 0)
    return rc;
  char buf[64];
  size_t n = (size_t)(s->p - at);
  if (n >= sizeof(buf)) {
    s->p = at;
    return gb_sj_fail(s, "%s: number too long", what);
  }
  memcpy(buf, at, n);
  buf[n] = '\0';
  errno = 0;
  *out = strtod(buf, NULL);
  if (errno == ERANGE) {
    s->p = at;
    return gb_sj_fail(s, "%s: number out of range", what);
  }
  return 0;
}

int gb_sj_int(struct gb_sj *s, const char *what, int64_t *out) {
  const char *at = (peek(s), s->p);
  double d;
  int rc = gb_sj_double(s, what, &d);
  if (rc < 0)
    return rc;
  if (d != (double)(int64_t)d || d < -9.2e18 || d > 9.2e18) {
    s->p = at;
    return gb_sj_fail(s, "%s: expected an integer", what);
  }
  *out = (int64_t)d;
  return 0;
}

int gb_sj_finish(struct gb_sj *s) {
  if (peek(s))
    return gb_sj_fail(s, "unexpected data after the JSON value");
  return 0;
}

int gb_sj_key_is(const struct gb_sj_span *key, const char *name) {
  size_t n = strlen(name);
  if (key->len != n)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char a = key->p[i], b = name[i];
    if (a >= 'A' && a <= 'Z')
      a = (char)(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z')
      b = (char)(b - 'A' + 'a');
    if (a != b)
      return 0;
  }
  return 1;
}
