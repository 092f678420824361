/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_jscan: the pull scanner (see gb_jscan.h).
 */
#include "gb_jscan.h"
#include "gb_jscan_test.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "gb_buf.h"

void gb_sj_init(struct gb_sj *s, const char *buf, size_t len) {
  s->base = s->p = buf;
  s->end = buf + len;
  s->depth = 0;
  s->max_depth = GB_SJ_MAX_DEPTH;
  s->msg[0] = '\0';
  s->bad_utf8 = 0;
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

/* The next byte after white space, 0 at the end of the body, and
 * GB_SJ_NUL for a NUL byte inside it (which must not read as the end:
 * "{}\0garbage" is trailing data, as Go's decoder says). */
static inline int peek(struct gb_sj *s) {
  skip_ws(s);
  if (s->p >= s->end)
    return 0;
  return *s->p ? (unsigned char)*s->p : GB_SJ_NUL;
}

int gb_sj_peek(struct gb_sj *s) { return peek(s); }

static int is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Non-zero when one of the 8 bytes of v is a quote, a backslash, below
 * 0x20 or above 0x7f (the bytes a string scan must stop at: the last to
 * check that they are UTF-8); may flag later bytes too. */
static inline uint64_t special8(uint64_t v) {
  uint64_t q = v ^ (ONES * '"'), b = v ^ (ONES * '\\');
  return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((v - ONES * 0x20) & ~v) | v) & HIGHS;
}

/* The first byte at or after p (before end) that a string scan must stop
 * at (see special8), or a byte before it; end when there is none.  SSE2
 * (every x86-64) looks at 16 bytes at once: a signed compare with 0x20
 * catches the control bytes and every byte above 0x7f together. */
static inline __attribute__((always_inline)) const char *plain_bytes(const char *p,
                                                                    const char *end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                               _mm_cmplt_epi8(v, space));
    int m = _mm_movemask_epi8(hit);
    if (m)
      return p + __builtin_ctz((unsigned)m);
    p += 16;
  }
#endif
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
      return p;
    }
    p += 8;
  }
  return p;
}

int gb_sj_utf8_len(const unsigned char *p, const unsigned char *end) {
  unsigned c = p[0];
  if (c < 0x80)
    return 1;
  int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!n || end - p < n)
    return 0;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80)
      return 0;
  /* Overlong forms, UTF-16 surrogates and code points above U+10FFFF are
   * not UTF-8 (Go's utf8.DecodeRune refuses them too). */
  if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
      (c == 0xf4 && p[1] > 0x8f))
    return 0;
  return n;
}

/* Skips a string whose opening quote is at the cursor; *escaped tells
 * whether it held a backslash.  Most of a Kubernetes object is plain string
 * bytes, so they are passed over 8 at a time. */
static int skip_string(struct gb_sj *s, int *escaped) {
  const char *p = s->p + 1, *end = s->end;
  *escaped = 0;
  for (;;) {
    p = plain_bytes(p, end);
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
    if (ch >= 0x80) {
      /* Go's decoder takes invalid UTF-8 and reads each bad byte as
       * U+FFFD: accepted here too, and remembered so that nothing is ever
       * echoed with the bad bytes (gb_sj_add_span). */
      int n = gb_sj_utf8_len((const unsigned char *)p, (const unsigned char *)end);
      s->bad_utf8 |= n == 0;
      p += n ? n : 1;
      *escaped |= 2;
      continue;
    }
    if (ch != '\\') {
      p++;
      continue;
    }
    *escaped |= 1;
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

/* The end of the number at p (Go's grammar: no leading zero, a digit after
 * '.' and after the exponent's sign), or NULL when there is none. */
static inline __attribute__((always_inline)) const char *number_end(const char *p,
                                                                    const char *end) {
  p += p < end && *p == '-';
  if (p >= end || (unsigned char)(*p - '0') > 9)
    return NULL;
  if (*p == '0')
    p++;
  else
    while (p < end && (unsigned char)(*p - '0') <= 9)
      p++;
  if (p < end && *p == '.') {
    p++;
    if (p >= end || (unsigned char)(*p - '0') > 9)
      return NULL;
    while (p < end && (unsigned char)(*p - '0') <= 9)
      p++;
  }
  if (p < end && (*p | 0x20) == 'e') {
    p++;
    p += p < end && (*p == '+' || *p == '-');
    if (p >= end || (unsigned char)(*p - '0') > 9)
      return NULL;
    while (p < end && (unsigned char)(*p - '0') <= 9)
      p++;
  }
  return p;
}

static int skip_number(struct gb_sj *s) {
  const char *p = number_end(s->p, s->end);
  if (!p)
    return gb_sj_fail(s, "invalid number");
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
  case GB_SJ_NUL: return "a NUL byte";
  default: return c == '-' || (c >= '0' && c <= '9') ? "a number" : "an invalid character";
  }
}

/* Appends one code point as UTF-8 (U+FFFD for a surrogate or beyond
 * U+10FFFF, as Go writes them). */
static size_t put_rune(unsigned r, char *o) {
  if (r >= 0xd800 && r <= 0xdfff)
    r = 0xfffd;
  if (r < 0x80) {
    o[0] = (char)r;
    return 1;
  }
  if (r < 0x800) {
    o[0] = (char)(0xc0 | r >> 6);
    o[1] = (char)(0x80 | (r & 0x3f));
    return 2;
  }
  if (r < 0x10000) {
    o[0] = (char)(0xe0 | r >> 12);
    o[1] = (char)(0x80 | ((r >> 6) & 0x3f));
    o[2] = (char)(0x80 | (r & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | r >> 18);
  o[1] = (char)(0x80 | ((r >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((r >> 6) & 0x3f));
  o[3] = (char)(0x80 | (r & 0x3f));
  return 4;
}

static unsigned hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

/* Decodes the body of a string already validated by skip_string (from
 * after the opening quote to before the closing one) as Go's encoding/json
 * does: escapes (a \uXXXX surrogate pair is one code point, a lone
 * surrogate U+FFFD), and every byte that does not start a valid UTF-8
 * sequence becomes U+FFFD.  Writes at most size bytes; returns the decoded
 * length (which may exceed size: the caller then refuses it). */
static size_t decode_string(const char *p, const char *end, char *out, size_t size) {
  size_t n = 0;
  char tmp[4];
  while (p < end) {
    size_t k;
    unsigned char ch = (unsigned char)*p;
    if (ch == '\\' && p[1] == 'u') {
      unsigned r = hex4(p + 2);
      p += 6;
      if (r >= 0xd800 && r < 0xdc00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
        unsigned lo = hex4(p + 2);
        if (lo >= 0xdc00 && lo <= 0xdfff) {
          r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
          p += 6;
        }
      }
      k = put_rune(r, tmp);
    } else if (ch == '\\') {
      static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
      tmp[0] = to[strchr(from, p[1]) - from];
      k = 1;
      p += 2;
    } else if (ch < 0x80) {
      tmp[0] = (char)ch;
      k = 1;
      p++;
    } else {
      int len = gb_sj_utf8_len((const unsigned char *)p, (const unsigned char *)end);
      k = len ? (size_t)len : put_rune(0xfffd, tmp);
      if (len)
        memcpy(tmp, p, k);
      p += len ? len : 1;
    }
    if (n + k <= size)
      memcpy(out + n, tmp, k);
    n += k;
  }
  return n;
}

static int enter(struct gb_sj *s, char open, const char *what) {
  int c = peek(s);
  if (c != open)
    return gb_sj_fail(s, "%s: expected %s, found %s", what, open == '{' ? "an object" : "an array",
                      type_name(c));
  if (s->depth >= s->max_depth) {
    gb_sj_fail(s, "nesting deeper than %d", s->max_depth);
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
  /* The common key: plain bytes and the colon right after its quote (as
   * Go writes it); anything else takes the general way below. */
  const char *p = s->p, *end = s->end;
  if (p < end && *p == '"') {
    const char *q = plain_bytes(p + 1, end);
    if (end - q >= 2 && q[0] == '"' && q[1] == ':') {
      key->p = p + 1;
      key->len = (size_t)(q - (p + 1));
      s->p = q + 2;
      return 1;
    }
  }
  if (peek(s) != '"')
    return gb_sj_fail(s, "expected a member name");
  int esc;
  const char *start = s->p + 1;
  if ((rc = skip_string(s, &esc)) < 0)
    return rc;
  key->p = start;
  key->len = (size_t)(s->p - 1 - start);
  if (esc) {
    /* Go matches the decoded key ("t\u0061sk" is "task"); one too long
     * for the buffer is longer than every name read here: it matches none. */
    size_t n = decode_string(start, s->p - 1, s->key, sizeof(s->key));
    key->p = n <= sizeof(s->key) ? s->key : "";
    key->len = n <= sizeof(s->key) ? n : 0;
  }
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

/* The end of the string whose opening quote is at p (the byte after its
 * closing quote), or NULL when it is not a valid string.  Sets *bad when
 * it holds bytes that are not UTF-8 (accepted, as skip_string does). */
static inline __attribute__((always_inline)) const char *string_end(const char *p,
                                                                   const char *end, int *bad) {
  p++;
  for (;;) {
    p = plain_bytes(p, end);
    if (p >= end)
      return NULL;
    unsigned char ch = (unsigned char)*p;
    if (ch == '"')
      return p + 1;
    if (ch < 0x20)
      return NULL;
    if (ch >= 0x80) {
      int n = gb_sj_utf8_len((const unsigned char *)p, (const unsigned char *)end);
      *bad |= n == 0;
      p += n ? n : 1;
    } else if (ch != '\\') {
      p++;
    } else if (end - p >= 6 && p[1] == 'u' && is_hex(p[2]) && is_hex(p[3]) && is_hex(p[4]) &&
               is_hex(p[5])) {
      p += 6;
    } else if (end - p >= 2 && p[1] && strchr("\"\\/bfnrt", p[1])) {
      p += 2;
    } else {
      return NULL;
    }
  }
}

static inline const char *ws_end(const char *p, const char *end) {
  /* Go writes no white space: one compare decides for every other byte. */
  while (p < end && (unsigned char)*p <= ' ' &&
         (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
    p++;
  return p;
}

static inline int literal_at(const char *p, const char *end, const char *lit, size_t n) {
  return (size_t)(end - p) >= n && !memcmp(p, lit, n);
}

/* Skips the value at the cursor in one loop over its bytes: strings at
 * plain_bytes' speed, nesting as a bit per level, no call per token.  It
 * accepts exactly what skip_any accepts (the same grammar, depth bound and
 * UTF-8 flag) but says nothing about a problem: it returns -1 and the
 * caller walks the value again with skip_any, which names the problem and
 * its place.  Valid bodies, the common case, are walked once. */
static int skip_fast(struct gb_sj *s) {
  const char *p = s->p, *end = s->end;
  char close[GB_SJ_MAX_DEPTH]; /* the closing byte of each open level */
  int d = 0, room = s->max_depth - s->depth, bad = 0;
value:
  p = ws_end(p, end);
  if (p >= end)
    return -1;
  switch (*p) {
  case '"':
    if (!(p = string_end(p, end, &bad)))
      return -1;
    goto after;
  case '{':
  case '[':
    if (d >= room)
      return -1;
    close[d++] = *p == '{' ? '}' : ']';
    p = ws_end(p + 1, end);
    if (p < end && *p == close[d - 1]) {
      p++;
      d--;
      goto after;
    }
    if (close[d - 1] == '}')
      goto key;
    goto value;
  case 't':
    if (!literal_at(p, end, "true", 4))
      return -1;
    p += 4;
    goto after;
  case 'f':
    if (!literal_at(p, end, "false", 5))
      return -1;
    p += 5;
    goto after;
  case 'n':
    if (!literal_at(p, end, "null", 4))
      return -1;
    p += 4;
    goto after;
  default:
    if (*p != '-' && (*p < '0' || *p > '9'))
      return -1;
    if (!(p = number_end(p, end)))
      return -1;
    goto after;
  }
key:
  if (p >= end || *p != '"' || !(p = string_end(p, end, &bad)))
    return -1;
  p = ws_end(p, end);
  if (p >= end || *p != ':')
    return -1;
  p++;
  goto value;
after:
  if (d == 0) {
    s->p = p;
    s->bad_utf8 |= bad;
    return 0;
  }
  p = ws_end(p, end);
  if (p >= end)
    return -1;
  if (*p == ',') {
    p = ws_end(p + 1, end);
    if (close[d - 1] == '}')
      goto key;
    goto value;
  }
  if (*p != close[d - 1])
    return -1;
  p++;
  d--;
  goto after;
}

int gb_sj_skip(struct gb_sj *s, struct gb_sj_span *span) {
  peek(s);
  const char *start = s->p;
  int had_msg = s->msg[0] != '\0';
  int rc = skip_fast(s);
  if (rc < 0) {
    /* Again, slowly, for the message and the place of the problem. */
    s->p = start;
    if (!had_msg)
      s->msg[0] = '\0';
    rc = skip_any(s);
  }
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
  size_t n = (size_t)(s->p - 1 - (at + 1));
  if (!esc && n < size && !memchr(at + 1, '\0', n))
    memcpy(out, at + 1, n); /* plain ASCII: decoding is a copy */
  else
    n = decode_string(at + 1, s->p - 1, out, size - 1);
  if (n >= size || memchr(out, '\0', n)) {
    /* A C string holds no NUL; no Kubernetes name has one. */
    s->p = at;
    if (n >= size)
      gb_sj_fail(s, "%s: longer than %zu bytes", what, size - 1);
    else
      gb_sj_fail(s, "%s: holds a NUL character", what);
    return GC_ELIMIT;
  }
  out[n] = '\0';
  return 0;
}

/* Reads the text of a number at the cursor into buf (NUL-terminated).
 * *integral is 1 when it has neither fraction nor exponent. */
static int number_text(struct gb_sj *s, const char *what, char *buf, size_t size, int *integral) {
  int c = peek(s);
  if (c != '-' && (c < '0' || c > '9'))
    return gb_sj_fail(s, "%s: expected a number, found %s", what, type_name(c));
  const char *at = s->p;
  int rc = skip_number(s);
  if (rc < 0)
    return rc;
  size_t n = (size_t)(s->p - at);
  if (n >= size) {
    s->p = at;
    return gb_sj_fail(s, "%s: number too long", what);
  }
  memcpy(buf, at, n);
  buf[n] = '\0';
  *integral = !memchr(buf, '.', n) && !memchr(buf, 'e', n) && !memchr(buf, 'E', n);
  return 0;
}

/* An integer literal of at most 15 digits is below 2^53, so the double
 * holding it is exact: the same value strtod rounds it to (signed zero
 * included), for a fraction of strtod's work (a Volcano Resource is such
 * numbers).  Returns 1 with *out set, 0 when strtod must read it. */
static int number_small_int(const char *text, double *out) {
  const char *p = text + (text[0] == '-');
  uint64_t v = 0;
  size_t n = 0;
  for (; p[n]; n++) {
    if (n == 15)
      return 0;
    v = v * 10 + (uint64_t)(p[n] - '0');
  }
  *out = text[0] == '-' ? -(double)v : (double)v;
  return 1;
}

int gb_sj_double(struct gb_sj *s, const char *what, double *out) {
  if (gb_sj_null(s)) {
    *out = 0;
    return 0;
  }
  char buf[64];
  int integral;
  peek(s);
  const char *at = s->p;
  int rc = number_text(s, what, buf, sizeof(buf), &integral);
  if (rc < 0)
    return rc;
  double d;
  if (integral && number_small_int(buf, &d)) {
    *out = d;
    return 0;
  }
  errno = 0;
  d = strtod(buf, NULL);
  /* Beyond the largest double is an error, as in Go (ParseFloat's
   * ErrRange); a tiny number rounds to 0 or a subnormal, as in Go. */
  if (!isfinite(d) || (errno == ERANGE && fabs(d) > 1.0)) {
    s->p = at;
    return gb_sj_fail(s, "%s: number %s out of range of float64", what, buf);
  }
  *out = d;
  return 0;
}

int gb_sj_int_range(struct gb_sj *s, const char *what, int64_t min, int64_t max, int64_t *out) {
  if (gb_sj_null(s)) {
    *out = 0;
    return 0;
  }
  char buf[64];
  int integral;
  peek(s);
  const char *at = s->p;
  int rc = number_text(s, what, buf, sizeof(buf), &integral);
  if (rc < 0)
    return rc;
  /* Go parses an integer field with strconv.ParseInt: "1.0" and "1e3" are
   * refused, and the range is checked on the text, never after a cast. */
  errno = 0;
  long long v = integral ? strtoll(buf, NULL, 10) : 0;
  if (!integral || errno == ERANGE || v < min || v > max) {
    s->p = at;
    return gb_sj_fail(s, "%s: number %s is not an integer in [%lld, %lld]", what, buf,
                      (long long)min, (long long)max);
  }
  *out = v;
  return 0;
}

int gb_sj_int(struct gb_sj *s, const char *what, int64_t *out) {
  return gb_sj_int_range(s, what, INT64_MIN, INT64_MAX, out);
}

int gb_sj_finish(struct gb_sj *s) {
  if (peek(s))
    return gb_sj_fail(s, "unexpected data after the JSON value");
  return 0;
}

int gb_sj_add_span(struct gb_buf *out, int bad_utf8, const struct gb_sj_span *span) {
  if (!bad_utf8)
    return gb_buf_add(out, span->p, span->len);
  /* Invalid bytes can only be inside strings (the grammar refuses them
   * elsewhere): U+FFFD in their place keeps the JSON valid. */
  const unsigned char *p = (const unsigned char *)span->p, *end = p + span->len;
  while (p < end) {
    const unsigned char *q = p;
    int n;
    while (q < end && (n = gb_sj_utf8_len(q, end)) > 0)
      q += n;
    gb_buf_add(out, (const char *)p, (size_t)(q - p));
    if (q < end) {
      gb_buf_add(out, "\xef\xbf\xbd", 3);
      q++;
    }
    p = q;
  }
  return gb_buf_add(out, "", 0);
}

/* One rune of a key against one ASCII letter of a name, as Go folds field
 * names (unicode.ToUpper(unicode.ToLower(r))): ASCII case, and the four
 * non-ASCII runes that fold to an ASCII letter: U+017F (long s) to S,
 * U+212A (Kelvin sign) to K, U+0130 and U+0131 (dotted and dotless I) to
 * I.  Returns the bytes of the key used, 0 for no match. */
static size_t fold_match(const unsigned char *k, const unsigned char *end, char want) {
  char w = (char)(want >= 'a' && want <= 'z' ? want - 'a' + 'A' : want);
  if (k[0] < 0x80) {
    char a = (char)(k[0] >= 'a' && k[0] <= 'z' ? k[0] - 'a' + 'A' : k[0]);
    return a == w;
  }
  static const struct {
    unsigned char b[3];
    size_t n;
    char folds_to;
  } special[] = {{{0xc5, 0xbf}, 2, 'S'},
                 {{0xe2, 0x84, 0xaa}, 3, 'K'},
                 {{0xc4, 0xb0}, 2, 'I'},
                 {{0xc4, 0xb1}, 2, 'I'}};
  for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
    if (special[i].folds_to == w && (size_t)(end - k) >= special[i].n &&
        !memcmp(k, special[i].b, special[i].n))
      return special[i].n;
  return 0;
}

int gb_sj_key_is(const struct gb_sj_span *key, const char *name) {
  /* Most keys a decoder looks at are another field's, and differ in their
   * first byte: an ASCII byte matches only the name's first letter in
   * either case (only runes beyond ASCII fold to another letter), so the
   * answer is known without the name's length. */
  if (key->len) {
    unsigned char a = (unsigned char)key->p[0], b = (unsigned char)name[0];
    if (a < 0x80 && a != b && ((a | 0x20) != (b | 0x20) || (a | 0x20) < 'a' || (a | 0x20) > 'z'))
      return 0;
  }
  size_t n = strlen(name);
  /* Every letter of the name takes at least one byte of the key, and only
   * the non-ASCII runes below take more: a shorter key never matches, and
   * one of the same length matches only letter for letter, ASCII case
   * aside. */
  if (key->len < n)
    return 0;
  if (key->len == n) {
    for (size_t i = 0; i < n; i++) {
      unsigned char a = (unsigned char)key->p[i], b = (unsigned char)name[i];
      if (a != b && ((a | 0x20) != (b | 0x20) || (a | 0x20) < 'a' || (a | 0x20) > 'z'))
        return 0;
    }
    return 1;
  }
  const unsigned char *k = (const unsigned char *)key->p, *end = k + key->len;
  for (size_t i = 0; i < n; i++) {
    size_t used = k < end ? fold_match(k, end, name[i]) : 0;
    if (!used)
      return 0;
    k += used;
  }
  return k == end;
}
