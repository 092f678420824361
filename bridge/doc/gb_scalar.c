/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_scalar: goyaml.v2 plain-scalar resolution and float formatting.
 */
#include "gb_scalar.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int digit_val(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z')
    return c - 'A' + 10;
  return 99;
}

/* strconv.ParseInt(s, 0, 64) / ParseUint(s, 0, 64) on a string without
 * underscores.  Returns 1 and sets *out when it fits int64; 2 and *uout when
 * it only fits uint64 (unsigned form, no sign); 0 otherwise. */
int gb_scalar_parse_int(const char *s, size_t len, int64_t *out, uint64_t *uout) {
  size_t i = 0;
  int neg = 0, sign = 0;
  if (i < len && (s[i] == '+' || s[i] == '-')) {
    neg = s[i] == '-';
    sign = 1;
    i++;
  }
  unsigned base = 10;
  if (len - i >= 2 && s[i] == '0') {
    char p = s[i + 1];
    if (p == 'x' || p == 'X') {
      base = 16;
      i += 2;
    } else if (p == 'o' || p == 'O') {
      base = 8;
      i += 2;
    } else if (p == 'b' || p == 'B') {
      base = 2;
      i += 2;
    } else {
      base = 8;
      i += 1;
    }
  }
  if (i >= len)
    return 0;
  uint64_t v = 0;
  int overflow = 0;
  for (; i < len; i++) {
    int d = digit_val(s[i]);
    if (d >= (int)base)
      return 0;
    if (v > (UINT64_MAX - (uint64_t)d) / base)
      overflow = 1;
    else
      v = v * base + (uint64_t)d;
  }
  if (overflow)
    return 0;
  if (neg) {
    if (v > (uint64_t)INT64_MAX + 1)
      return 0;
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    return 1;
  }
  if (v <= (uint64_t)INT64_MAX) {
    *out = (int64_t)v;
    return 1;
  }
  if (sign)
    return 0; /* ParseUint takes no sign */
  *uout = v;
  return 2;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int yaml_style_float(const char *s, size_t len) {
  size_t i = 0;
  if (i < len && (s[i] == '+' || s[i] == '-'))
    i++;
  if (i < len && s[i] == '.') {
    i++;
    size_t d = i;
    while (i < len && is_digit(s[i]))
      i++;
    if (i == d)
      return 0;
  } else {
    size_t d = i;
    while (i < len && is_digit(s[i]))
      i++;
    if (i == d)
      return 0;
    if (i < len && s[i] == '.') {
      i++;
      while (i < len && is_digit(s[i]))
        i++;
    }
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-'))
      i++;
    size_t d = i;
    while (i < len && is_digit(s[i]))
      i++;
    if (i == d)
      return 0;
  }
  return i == len;
}

/* strtod on a bounded copy; fails (returns 0) on overflow, as Go's
 * ParseFloat returns ErrRange there. */
static int parse_double(const char *s, size_t len, double *out) {
  char tmp[128];
  char *heap = NULL;
  char *p = tmp;
  if (len >= sizeof(tmp)) {
    heap = malloc(len + 1);
    if (!heap)
      return 0;
    p = heap;
  }
  memcpy(p, s, len);
  p[len] = '\0';
  char *end = NULL;
  double d = strtod(p, &end);
  int ok = end == p + len && !isinf(d) && !isnan(d);
  free(heap);
  if (ok)
    *out = d;
  return ok;
}

/* Go's underscoreOK: underscores only between digits (or after a base
 * prefix). */
static int underscore_ok(const char *s, size_t len) {
  char saw = '^';
  size_t i = 0;
  if (len >= 1 && (s[0] == '-' || s[0] == '+'))
    i = 1;
  int hex = 0;
  if (len - i >= 2 && s[i] == '0' &&
      (s[i + 1] == 'b' || s[i + 1] == 'B' || s[i + 1] == 'o' || s[i + 1] == 'O' ||
       s[i + 1] == 'x' || s[i + 1] == 'X')) {
    hex = s[i + 1] == 'x' || s[i + 1] == 'X';
    i += 2;
    saw = '0';
  }
  for (; i < len; i++) {
    char c = s[i];
    if (is_digit(c) || (hex && digit_val(c) < 16)) {
      saw = '0';
      continue;
    }
    if (c == '_') {
      if (saw != '0')
        return 0;
      saw = '_';
      continue;
    }
    if (saw == '_')
      return 0;
    saw = '!';
  }
  return saw != '_';
}

/* Copies s without '_' into dst (cap >= len+1); returns the new length. */
static size_t strip_underscores(const char *s, size_t len, char *dst) {
  size_t o = 0;
  for (size_t i = 0; i < len; i++)
    if (s[i] != '_')
      dst[o++] = s[i];
  dst[o] = '\0';
  return o;
}

/* The words of goyaml.v2's resolve table (every one at most 6 bytes),
 * grouped by how they start, so a scalar is compared only with the words
 * that can match its first byte. */
struct word {
  const char *s;
  size_t len;
  enum gc_type type;
  int b;    /* GC_BOOL */
  double f; /* GC_FLOAT */
};

#define WB(w, v) {w, sizeof(w) - 1, GC_BOOL, v, 0}
#define WN(w) {w, sizeof(w) - 1, GC_NULL, 0, 0}
#define WF(w, v) {w, sizeof(w) - 1, GC_FLOAT, 0, v}

/* Starting with a letter or '~' (the 'M' hint) or empty. */
static const struct word LETTER_WORDS[] = {
    WB("y", 1),     WB("Y", 1),     WB("yes", 1),   WB("Yes", 1), WB("YES", 1), WB("true", 1),
    WB("True", 1),  WB("TRUE", 1),  WB("on", 1),    WB("On", 1),  WB("ON", 1),  WB("n", 0),
    WB("N", 0),     WB("no", 0),    WB("No", 0),    WB("NO", 0),  WB("false", 0),
    WB("False", 0), WB("FALSE", 0), WB("off", 0),   WB("Off", 0), WB("OFF", 0), WN(""),
    WN("~"),        WN("null"),     WN("Null"),     WN("NULL"),
};
/* Starting with '.'. */
static const struct word DOT_WORDS[] = {
    WF(".nan", NAN),      WF(".NaN", NAN),      WF(".NAN", NAN),
    WF(".inf", INFINITY), WF(".Inf", INFINITY), WF(".INF", INFINITY),
};
/* Starting with a sign. */
static const struct word SIGN_WORDS[] = {
    WF("+.inf", INFINITY),  WF("+.Inf", INFINITY),  WF("+.INF", INFINITY),
    WF("-.inf", -INFINITY), WF("-.Inf", -INFINITY), WF("-.INF", -INFINITY),
};

/* Sets r from the word s[0..len) is, if it is one of words[0..n). */
static int word_find(const char *s, size_t len, const struct word *words, size_t n,
                     struct gb_scalar *r) {
  for (size_t i = 0; i < n; i++) {
    if (words[i].len != len || memcmp(words[i].s, s, len) != 0)
      continue;
    r->type = words[i].type;
    r->b = words[i].b;
    r->f = words[i].f;
    return 1;
  }
  return 0;
}

#define NWORDS(a) (sizeof(a) / sizeof(*(a)))

/* Resolves an untagged plain scalar.  Never fails: unknown text is a string.
 * Returns GC_STR for "<<" too; the caller handles merge keys. */
void gb_scalar_resolve(const char *s, size_t len, struct gb_scalar *r) {
  memset(r, 0, sizeof(*r));
  r->type = GC_STR;
  char hint;
  if (len == 0) {
    hint = 'N';
  } else {
    char c = s[0];
    if (c == '+' || c == '-')
      hint = 'S';
    else if (is_digit(c))
      hint = 'D';
    else if (c != '\0' && strchr("yYnNtTfFoO~", c))
      hint = 'M';
    else if (c == '.')
      hint = '.';
    else
      return;
  }
  /* No word starts with a digit. */
  if (len <= 6 && hint != 'D') {
    int found = hint == 'S'   ? word_find(s, len, SIGN_WORDS, NWORDS(SIGN_WORDS), r)
                : hint == '.' ? word_find(s, len, DOT_WORDS, NWORDS(DOT_WORDS), r)
                              : word_find(s, len, LETTER_WORDS, NWORDS(LETTER_WORDS), r);
    if (found)
      return;
  }
  if (hint == 'M' || hint == 'N')
    return;
  /* Numbers are short; anything long is a string (Go would also reject it
   * as an int and as a float only for absurd lengths we do not care for). */
  if (len > 4096)
    return;
  char plain[4100];
  if (hint == '.') {
    if (memchr(s, '_', len) && !underscore_ok(s, len))
      return;
    size_t pl = strip_underscores(s, len, plain);
    double d;
    if (yaml_style_float(plain, pl) && parse_double(plain, pl, &d)) {
      r->type = GC_FLOAT;
      r->f = d;
    }
    return;
  }
  /* 'D' or 'S'.  Timestamps would be tried first, but goyaml.v2 hands them
   * to untyped targets as strings, and no timestamp parses as a number. */
  size_t pl = strip_underscores(s, len, plain);
  int64_t iv;
  uint64_t uv;
  int k = gb_scalar_parse_int(plain, pl, &iv, &uv);
  if (k == 1) {
    r->type = GC_INT;
    r->i = iv;
    return;
  }
  if (k == 2) {
    /* A uint64 becomes a JSON number beyond int64: a float, text kept. */
    r->type = GC_FLOAT;
    r->f = (double)uv;
    return;
  }
  double d;
  if (yaml_style_float(plain, pl) && parse_double(plain, pl, &d)) {
    r->type = GC_FLOAT;
    r->f = d;
    return;
  }
}

static int digits_run(const char *s, size_t len, size_t *i, size_t min, size_t max) {
  size_t start = *i;
  while (*i < len && is_digit(s[*i]) && *i - start < max)
    (*i)++;
  return *i - start >= min;
}

/* goyaml.v2's isBase60Float: ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
static int is_base60(const char *s, size_t len) {
  size_t i = 0;
  if (i < len && (s[i] == '+' || s[i] == '-'))
    i++;
  if (i >= len || !is_digit(s[i]))
    return 0;
  while (i < len && (is_digit(s[i]) || s[i] == '_'))
    i++;
  int groups = 0;
  while (i < len && s[i] == ':') {
    i++;
    size_t start = i;
    if (i < len && s[i] >= '0' && s[i] <= '5' && i + 1 < len && is_digit(s[i + 1]))
      i += 2;
    else if (i < len && is_digit(s[i]))
      i += 1;
    if (i == start)
      return 0;
    groups++;
  }
  if (!groups)
    return 0;
  if (i < len && s[i] == '.') {
    i++;
    while (i < len && (is_digit(s[i]) || s[i] == '_'))
      i++;
  }
  return i == len;
}

/* A loose match of the timestamps goyaml.v2 recognises (YYYY-M-D with an
 * optional time): such strings are quoted on output, as kubectl prints
 * creationTimestamp: "2024-01-01T00:00:00Z". */
static int is_timestamp(const char *s, size_t len) {
  size_t i = 0;
  if (!digits_run(s, len, &i, 4, 4) || i >= len || s[i] != '-')
    return 0;
  i++;
  if (!digits_run(s, len, &i, 1, 2) || i >= len || s[i] != '-')
    return 0;
  i++;
  if (!digits_run(s, len, &i, 1, 2))
    return 0;
  if (i == len)
    return 1;
  if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
    return 0;
  i++;
  if (!digits_run(s, len, &i, 1, 2) || i >= len || s[i] != ':')
    return 0;
  i++;
  if (!digits_run(s, len, &i, 1, 2) || i >= len || s[i] != ':')
    return 0;
  i++;
  if (!digits_run(s, len, &i, 1, 2))
    return 0;
  if (i < len && s[i] == '.') {
    i++;
    if (!digits_run(s, len, &i, 1, 9))
      return 0;
  }
  if (i == len)
    return 1;
  if (s[i] == 'Z' && i + 1 == len)
    return 1;
  if (s[i] == '+' || s[i] == '-') {
    i++;
    if (!digits_run(s, len, &i, 2, 2) || i >= len || s[i] != ':')
      return 0;
    i++;
    return digits_run(s, len, &i, 2, 2) && i == len;
  }
  return 0;
}

int gb_scalar_needs_quotes(const char *s, size_t len) {
  if (len == 0)
    return 1;
  if (len == 2 && s[0] == '<' && s[1] == '<')
    return 1;
  struct gb_scalar r;
  gb_scalar_resolve(s, len, &r);
  if (r.type != GC_STR)
    return 1;
  return is_base60(s, len) || is_timestamp(s, len);
}

/* The shortest decimal digits that read back as d (as a float32 when
 * is_float32), as strconv's shortest formatting finds them: the sign, the
 * digits without trailing zeros (at least one) and the decimal exponent of
 * the first digit.  d is finite and not zero. */
struct digits {
  int neg;
  char d[24];
  size_t n;
  int exp;
};

static void shortest_digits(double d, int is_float32, struct digits *g) {
  char e[48];
  if (is_float32) {
    float x = (float)d;
    for (int p = 0; p <= 8; p++) {
      snprintf(e, sizeof(e), "%.*e", p, (double)x);
      if ((float)strtod(e, NULL) == x)
        break;
    }
  } else {
    for (int p = 0; p <= 16; p++) {
      snprintf(e, sizeof(e), "%.*e", p, d);
      if (strtod(e, NULL) == d)
        break;
    }
  }
  /* e = [-]d[.ddd]e[+-]XX */
  const char *q = e;
  g->neg = *q == '-';
  if (g->neg)
    q++;
  g->n = 0;
  for (; *q && *q != 'e'; q++)
    if (is_digit(*q) && g->n < sizeof(g->d) - 1)
      g->d[g->n++] = *q;
  while (g->n > 1 && g->d[g->n - 1] == '0')
    g->n--;
  g->exp = *q == 'e' ? (int)strtol(q + 1, NULL, 10) : 0;
}

/* Go's layout of shortest digits: scientific ("1.5e+07") when the exponent
 * is below -4 or at least exp_hi, plain otherwise; keep_point makes a plain
 * integer end in ".0" so it stays a float.  Returns the length written to
 * out (cap >= 64, enough for any float64). */
static size_t layout_digits(const struct digits *g, int exp_hi, int keep_point, char *out,
                            size_t cap) {
  size_t o = 0;
  int exp = g->exp;
  if (g->neg)
    out[o++] = '-';
  if (exp < -4 || exp >= exp_hi) {
    out[o++] = g->d[0];
    if (g->n > 1) {
      out[o++] = '.';
      for (size_t i = 1; i < g->n; i++)
        out[o++] = g->d[i];
    }
    int n = snprintf(out + o, cap - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return n < 0 ? o : o + (size_t)n;
  }
  if (exp < 0) {
    out[o++] = '0';
    out[o++] = '.';
    for (int i = 0; i < -exp - 1; i++)
      out[o++] = '0';
    for (size_t i = 0; i < g->n; i++)
      out[o++] = g->d[i];
  } else {
    for (int i = 0; i <= exp; i++)
      out[o++] = (size_t)i < g->n ? g->d[i] : '0';
    if (g->n > (size_t)exp + 1) {
      out[o++] = '.';
      for (size_t i = (size_t)exp + 1; i < g->n; i++)
        out[o++] = g->d[i];
    } else if (keep_point) {
      out[o++] = '.';
      out[o++] = '0';
    }
  }
  out[o] = '\0';
  return o;
}

/* Shortest text of d as a YAML float value (float64, plain notation up to
 * exponent 20, always a '.' or an exponent) or, with is_float32, as Go's
 * FormatFloat(f, 'g', -1, 32) for map keys (exponent from 6, no ".0"). */
static size_t format_shortest(double d, int is_float32, char *buf, size_t cap) {
  if (cap < 32)
    return 0;
  if (is_float32)
    d = (float)d;
  if (isnan(d))
    return (size_t)snprintf(buf, cap, ".nan");
  if (isinf(d))
    return (size_t)snprintf(buf, cap, d > 0 ? ".inf" : "-.inf");
  if (d == 0)
    return (size_t)snprintf(buf, cap, "%s%s", signbit(d) ? "-" : "", is_float32 ? "0" : "0.0");
  struct digits g;
  shortest_digits(d, is_float32, &g);
  char out[64];
  layout_digits(&g, is_float32 ? 6 : 21, !is_float32, out, sizeof(out));
  int n = snprintf(buf, cap, "%s", out);
  return n < 0 ? 0 : (size_t)n;
}

size_t gb_scalar_format_double(double d, char *buf, size_t cap) {
  return format_shortest(d, 0, buf, cap);
}

size_t gb_scalar_format_float32_key(double f, char *buf, size_t cap) {
  return format_shortest(f, 1, buf, cap);
}

size_t gb_scalar_utf8_check(const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < len) {
    unsigned char c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (len - i <= n)
      return i;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xC0) != 0x80)
        return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += n + 1;
  }
  return len;
}
