/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_quantity: Kubernetes resource.Quantity (k8s.io/apimachinery/pkg/api/
 * resource) as an exact int64 mantissa and int32 decimal scale.  Parsing
 * follows ParseQuantity's scanner step by step (including the odd corners
 * it accepts, such as "1." and ".5"), rounds values finer than 10^-9 away
 * from zero to the next nano, and caps binary-SI values at 2^63-1 as
 * upstream does.  Where apimachinery would fall back to an arbitrary
 * precision inf.Dec, we keep the value if it still fits mant * 10^scale
 * exactly and return GC_ERANGE otherwise.  docs/internals/quantity.md has
 * the full list of rules and the few places where we differ.
 */
#include "gc_quantity.h"
#include "gc_quantity_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_diag.h"

/* 128-bit integers are a GCC/Clang extension; every intermediate result of
 * the arithmetic below provably fits in them (see each use). */
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/* Most significant digits a parse keeps before deciding the value cannot be
 * exact; far beyond the 19 digits an int64 mantissa holds, so that inputs
 * like "1.9999999999999999999999999999" still round correctly. */
#define QDIGITS_MAX 512

#define NANO_SCALE (-9)

/* 10^n for 0 <= n <= 38 as an unsigned 128-bit value. */
static u128 pow10_u128(int n) {
  u128 p = 1;
  for (int i = 0; i < n; i++)
    p *= 10;
  return p;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Stores m * 10^s into *out if it can be written exactly as an int64
 * mantissa and an int32 scale, moving factors of ten between the two as
 * needed.  Returns 0 or GC_ERANGE (out untouched). */
static int store_exact(i128 m, int64_t s, enum gc_qformat f, struct gc_quantity *out) {
  if (m == 0) {
    out->mant = 0;
    out->scale = 0;
    out->format = f;
    return GC_OK;
  }
  while ((m > INT64_MAX || m < INT64_MIN) && m % 10 == 0) {
    m /= 10;
    s++;
  }
  if (m > INT64_MAX || m < INT64_MIN)
    return GC_ERANGE;
  /* A scale above int32 can be pulled back into the mantissa if it has room. */
  while (s > INT32_MAX) {
    if (m > INT64_MAX / 10 || m < INT64_MIN / 10)
      return GC_ERANGE;
    m *= 10;
    s--;
  }
  if (s < INT32_MIN)
    return GC_ERANGE;
  out->mant = (int64_t)m;
  out->scale = (int32_t)s;
  out->format = f;
  return GC_OK;
}

/* Removes trailing decimal zeros from a non-zero m, adding them to *s. */
static void strip_tens(i128 *m, int64_t *s) {
  if (*m == 0)
    return;
  while (*m % 10 == 0) {
    *m /= 10;
    (*s)++;
  }
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */

struct suffix_info {
  int base;     /* 10 or 2 */
  int64_t exp;  /* power of ten, or power of two for base 2 */
  enum gc_qformat format;
};

/* quantitySuffixer.interpret: the fixed tables, then "e"/"E" followed by a
 * Go ParseInt-style signed integer.  Returns 0, GC_EINVAL for an unknown
 * suffix, or GC_ERANGE for a decimal exponent outside int32 (apimachinery
 * silently truncates it to int32; we refuse instead). */
static int suffix_interpret(const char *s, size_t n, struct suffix_info *si) {
  static const struct {
    const char *text;
    int base;
    int exp;
    enum gc_qformat format;
  } table[] = {
      {"", 10, 0, GC_QF_DECIMAL_SI},    {"n", 10, -9, GC_QF_DECIMAL_SI},
      {"u", 10, -6, GC_QF_DECIMAL_SI},  {"m", 10, -3, GC_QF_DECIMAL_SI},
      {"k", 10, 3, GC_QF_DECIMAL_SI},   {"M", 10, 6, GC_QF_DECIMAL_SI},
      {"G", 10, 9, GC_QF_DECIMAL_SI},   {"T", 10, 12, GC_QF_DECIMAL_SI},
      {"P", 10, 15, GC_QF_DECIMAL_SI},  {"E", 10, 18, GC_QF_DECIMAL_SI},
      {"Ki", 2, 10, GC_QF_BINARY_SI},   {"Mi", 2, 20, GC_QF_BINARY_SI},
      {"Gi", 2, 30, GC_QF_BINARY_SI},   {"Ti", 2, 40, GC_QF_BINARY_SI},
      {"Pi", 2, 50, GC_QF_BINARY_SI},   {"Ei", 2, 60, GC_QF_BINARY_SI},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    if (strlen(table[i].text) == n && memcmp(table[i].text, s, n) == 0) {
      si->base = table[i].base;
      si->exp = table[i].exp;
      si->format = table[i].format;
      return GC_OK;
    }
  }
  if (n > 1 && (s[0] == 'e' || s[0] == 'E')) {
    size_t i = 1;
    int neg = 0;
    if (s[i] == '+' || s[i] == '-') {
      neg = s[i] == '-';
      i++;
    }
    if (i >= n)
      return GC_EINVAL;
    int64_t v = 0;
    int big = 0;
    for (; i < n; i++) {
      if (!is_digit(s[i]))
        return GC_EINVAL;
      if (!big) {
        v = v * 10 + (s[i] - '0');
        if (v > (int64_t)INT32_MAX + 1)
          big = 1;
      }
    }
    if (big || (!neg && v > INT32_MAX))
      return GC_ERANGE;
    si->base = 10;
    si->exp = neg ? -v : v;
    si->format = GC_QF_DECIMAL_EXPONENT;
    return GC_OK;
  }
  return GC_EINVAL;
}

static int in_suffix_set(char c) { return c != '\0' && strchr("eEinumkKMGTP", c) != NULL; }

/* A decimal digit string with the power of ten of its last digit. */
struct digits {
  char d[QDIGITS_MAX + 24]; /* values 0..9, most significant first */
  size_t n;
  int64_t last_pos; /* power of ten of d[n-1] */
};

/* d *= mul (mul < 2^11), growing at the front. */
static int digits_mul_small(struct digits *x, unsigned mul) {
  unsigned carry = 0;
  for (size_t i = x->n; i-- > 0;) {
    unsigned v = (unsigned)x->d[i] * mul + carry;
    x->d[i] = (char)(v % 10);
    carry = v / 10;
  }
  while (carry) {
    if (x->n >= sizeof(x->d))
      return GC_ERANGE;
    memmove(x->d + 1, x->d, x->n);
    x->d[0] = (char)(carry % 10);
    carry /= 10;
    x->n++;
  }
  return GC_OK;
}

/* Rounds x away from zero to a multiple of 10^-9, as ParseQuantity does with
 * inf.RoundUp at nano scale.  Digits below nano are dropped; if any of them
 * was non-zero the kept part is incremented by one nano. */
static int digits_round_nano(struct digits *x) {
  if (x->n == 0 || x->last_pos >= NANO_SCALE)
    return GC_OK;
  int64_t drop = NANO_SCALE - x->last_pos; /* digits to drop from the end */
  int sticky = 0;
  size_t keep;
  if ((uint64_t)drop >= x->n) {
    for (size_t i = 0; i < x->n; i++)
      sticky |= x->d[i] != 0;
    keep = 0;
  } else {
    keep = x->n - (size_t)drop;
    for (size_t i = keep; i < x->n; i++)
      sticky |= x->d[i] != 0;
  }
  x->n = keep;
  x->last_pos = NANO_SCALE;
  if (!sticky)
    return GC_OK;
  if (x->n == 0) {
    x->d[0] = 1;
    x->n = 1;
    return GC_OK;
  }
  size_t i = x->n;
  while (i > 0) {
    i--;
    if (x->d[i] < 9) {
      x->d[i]++;
      return GC_OK;
    }
    x->d[i] = 0;
  }
  if (x->n >= sizeof(x->d))
    return GC_ERANGE;
  memmove(x->d + 1, x->d, x->n);
  x->d[0] = 1;
  x->n++;
  return GC_OK;
}

/* Drops leading zeros and moves trailing zeros into last_pos. */
static void digits_trim(struct digits *x) {
  size_t lead = 0;
  while (lead < x->n && x->d[lead] == 0)
    lead++;
  if (lead) {
    memmove(x->d, x->d + lead, x->n - lead);
    x->n -= lead;
  }
  while (x->n > 0 && x->d[x->n - 1] == 0) {
    x->n--;
    x->last_pos++;
  }
}

/* Fixed-point view of the scanned number: the digits of the integer and
 * fraction parts (leading zeros of the integer part already skipped). */
struct scanned {
  int negative;
  const char *num;   /* integer digits */
  size_t num_len;
  const char *denom; /* fraction digits */
  size_t denom_len;
  int has_digit;     /* the numeric part contains at least one digit */
  const char *suffix;
  size_t suffix_len;
};

/* parseQuantityString: sign, leading zeros, integer digits, optional '.'
 * and fraction digits, then a suffix of [eEinumkKMGTP]* [+-]? [0-9]*.
 * Returns GC_EINVAL if anything else follows. */
static int scan(const char *s, size_t len, struct scanned *sc) {
  size_t pos = 0;
  memset(sc, 0, sizeof(*sc));
  sc->num = s;
  sc->denom = s;
  sc->suffix = s + len;
  if (pos < len && (s[pos] == '-' || s[pos] == '+')) {
    sc->negative = s[pos] == '-';
    pos++;
  }
  while (pos < len && s[pos] == '0') {
    pos++;
    sc->has_digit = 1;
  }
  if (pos >= len) {
    /* Only a sign and zeros ("-", "000"): upstream returns the number "0". */
    sc->has_digit = 1;
    return GC_OK;
  }
  size_t start = pos;
  while (pos < len && is_digit(s[pos]))
    pos++;
  sc->num = s + start;
  sc->num_len = pos - start;
  if (sc->num_len)
    sc->has_digit = 1;
  if (pos < len && s[pos] == '.') {
    pos++;
    start = pos;
    while (pos < len && is_digit(s[pos]))
      pos++;
    sc->denom = s + start;
    sc->denom_len = pos - start;
    if (sc->denom_len)
      sc->has_digit = 1;
  }
  size_t suffix_start = pos;
  while (pos < len && in_suffix_set(s[pos]))
    pos++;
  if (pos < len && (s[pos] == '-' || s[pos] == '+'))
    pos++;
  while (pos < len && is_digit(s[pos]))
    pos++;
  if (pos < len)
    return GC_EINVAL;
  sc->suffix = s + suffix_start;
  sc->suffix_len = len - suffix_start;
  return GC_OK;
}

/* 1 when the digits' value is above 2^63-1 in magnitude.  The integer part
 * has n + last_pos digits. */
static int above_int64(const struct digits *x) {
  int64_t int_digits = (int64_t)x->n + x->last_pos;
  if (int_digits != 19)
    return int_digits > 19;
  u128 ip = 0;
  for (int64_t i = 0; i < int_digits; i++)
    ip = ip * 10 + (u128)((size_t)i < x->n ? x->d[i] : 0);
  return ip > (u128)INT64_MAX || (ip == (u128)INT64_MAX && x->last_pos < 0);
}

/* The digit at index i of the number's digits (integer part, then the
 * fraction). */
static char digit_at(const struct scanned *sc, size_t i) {
  return i < sc->num_len ? sc->num[i] : sc->denom[i - sc->num_len];
}

/* Collects the significant digits of a decimal-suffixed number into x.
 * Only digits at or above nano can survive rounding; the rest are kept as
 * a single non-zero marker digit so the round-up still happens.  Sets
 * *capped when (with cap) the value is far above 2^63-1.  Returns GC_OK or
 * GC_ERANGE. */
static int digits_decimal(const struct scanned *sc, size_t total, int64_t last_pos, int cap,
                          struct digits *x, int *capped) {
  int marker = 0;
  for (size_t i = 0; i < total; i++) {
    char c = digit_at(sc, i);
    int64_t pos = last_pos + (int64_t)(total - 1 - i);
    if (pos < NANO_SCALE) {
      if (c != '0')
        marker = 1;
      continue;
    }
    if (x->n == 0 && c == '0')
      continue;
    /* So many digits at or above nano put the first one far above 10^19. */
    if (x->n >= QDIGITS_MAX && cap) {
      *capped = 1;
      return GC_OK;
    }
    if (x->n >= QDIGITS_MAX)
      return GC_ERANGE;
    x->d[x->n++] = (char)(c - '0');
  }
  x->last_pos = last_pos < NANO_SCALE ? NANO_SCALE : last_pos;
  if (marker) {
    /* The kept digits end exactly at nano (digits are contiguous), so the
     * dropped tail becomes one digit just below it. */
    x->d[x->n++] = 1;
    x->last_pos = NANO_SCALE - 1;
  }
  return GC_OK;
}

/* Collects the digits of a binary-suffixed number into x and multiplies
 * by 2^exp: value = digits * 2^exp * 10^-denom_len, computed exactly.
 * Sets *capped when the value is above 2^63-1 anyway.  Returns GC_OK or a
 * negative GC_E* code. */
static int digits_binary(const struct scanned *sc, size_t total, int64_t last_pos, int64_t exp,
                         struct digits *x, int *capped) {
  for (size_t i = 0; i < total; i++) {
    char c = digit_at(sc, i);
    if (x->n == 0 && c == '0')
      continue;
    if (x->n >= QDIGITS_MAX) {
      /* More than QDIGITS_MAX significant digits: if the integer part
       * alone is that long the value is capped below anyway. */
      if (sc->num_len > 40) {
        *capped = 1;
        return GC_OK;
      }
      return GC_ERANGE;
    }
    x->d[x->n++] = (char)(c - '0');
  }
  x->last_pos = last_pos;
  for (int64_t k = 0; k < exp / 10 && x->n > 0; k++) {
    int rc = digits_mul_small(x, 1024);
    if (rc)
      return rc;
  }
  return GC_OK;
}

/* The parser; with cap set, any value above 2^63-1 in magnitude becomes
 * 2^63-1 (binary values always are, as upstream caps them). */
static int parse_q(const char *s, size_t len, int cap, struct gc_quantity *out) {
  struct scanned sc;
  struct suffix_info si;
  if (!s || !out || len == 0)
    return GC_EINVAL;
  int rc = scan(s, len, &sc);
  if (rc)
    return rc;
  rc = suffix_interpret(sc.suffix, sc.suffix_len, &si);
  if (rc)
    return rc;

  if (!sc.has_digit) {
    /* Upstream's fast path turns a digit-less number ("", ".", "-.") into 0,
     * but only when the suffix keeps it on that path; otherwise inf.Dec
     * rejects the text.  The fast path is taken for decimal scales >= -9
     * and for binary suffixes up to Ti (its precision estimate goes negative
     * from Pi on). */
    if ((si.base == 10 && si.exp >= NANO_SCALE) || (si.base == 2 && si.exp <= 40)) {
      out->mant = 0;
      out->scale = 0;
      out->format = si.format;
      return GC_OK;
    }
    return GC_EINVAL;
  }

  /* Trailing zeros of the fraction carry no value; dropping them keeps the
   * digit buffer small for inputs like "1.000000000000". */
  size_t denom_len = sc.denom_len;
  while (denom_len > 0 && sc.denom[denom_len - 1] == '0')
    denom_len--;

  struct digits x;
  x.n = 0;
  /* Power of ten of the last fraction digit (or of the last integer digit). */
  int64_t last_pos = -(int64_t)denom_len;
  if (si.base == 10)
    last_pos += si.exp;
  size_t total = sc.num_len + denom_len;
  /* With no fraction left, trailing zeros of the integer part also move
   * into the exponent ("1" followed by a thousand zeros is 1e1000). */
  if (denom_len == 0) {
    while (total > 0 && sc.num[total - 1] == '0') {
      total--;
      last_pos++;
    }
  }

  int capped = 0;
  if (si.base == 10)
    rc = digits_decimal(&sc, total, last_pos, cap, &x, &capped);
  else
    rc = digits_binary(&sc, total, last_pos, si.exp, &x, &capped);
  if (rc)
    return rc;
  if (capped)
    goto capped;

  rc = digits_round_nano(&x);
  if (rc)
    return rc;
  digits_trim(&x);

  if (x.n == 0) {
    out->mant = 0;
    out->scale = 0;
    out->format = si.format;
    return GC_OK;
  }

  enum gc_qformat format = si.format;
  /* Cap at 2^63-1 (upstream's maxAllowed for binary), on the exact value. */
  if ((si.base == 2 || cap) && above_int64(&x))
    goto capped;
  if (si.base == 2 && (int64_t)x.n + x.last_pos <= 0)
    format = GC_QF_DECIMAL_SI; /* 0 < |v| < 1: upstream switches format */

  if (x.n > 19)
    return GC_ERANGE;
  u128 m = 0;
  for (size_t i = 0; i < x.n; i++)
    m = m * 10 + (u128)x.d[i];
  i128 sm = sc.negative ? -(i128)m : (i128)m;
  return store_exact(sm, x.last_pos, format, out);

capped:
  out->mant = sc.negative ? -INT64_MAX : INT64_MAX;
  out->scale = 0;
  out->format = si.format;
  return GC_OK;
}

int gc_quantity_parse(const char *s, size_t len, struct gc_quantity *out) {
  return parse_q(s, len, 0, out);
}

/* Go's strings.TrimSpace: ASCII white space plus the Unicode White_Space
 * code points, as UTF-8.  Returns the length of a space at s (0 if none). */
static size_t space_at(const unsigned char *s, size_t n) {
  if (n >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r')))
    return 1;
  if (n >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0))
    return 2;
  if (n >= 3 && s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80)
    return 3; /* U+1680 */
  if (n >= 3 && s[0] == 0xE2 && s[1] == 0x80 &&
      (s[2] <= 0x8A || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF) && s[2] >= 0x80)
    return 3; /* U+2000..U+200A, U+2028, U+2029, U+202F */
  if (n >= 3 && s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F)
    return 3; /* U+205F */
  if (n >= 3 && s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80)
    return 3; /* U+3000 */
  return 0;
}

static size_t space_before(const unsigned char *s, size_t n) {
  for (size_t k = 1; k <= 3 && k <= n; k++)
    if (space_at(s + n - k, k) == k)
      return k;
  return 0;
}

/* Formats a finite double as Go's encoding/json does (shortest round-trip
 * digits; plain notation for 1e-6 <= |f| < 1e21, exponent otherwise), which
 * is the text Quantity.UnmarshalJSON would see for a float64. */
static int format_go_float(double f, char *buf, size_t cap) {
  char tmp[40];
  int prec;
  if (!isfinite(f))
    return GC_EINVAL;
  if (f == 0) {
    snprintf(buf, cap, "%s", signbit(f) ? "-0" : "0");
    return GC_OK;
  }
  for (prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, f);
    if (strtod(tmp, NULL) == f)
      break;
  }
  /* tmp is "-d.ddde[+-]XX": collect digits and the exponent. */
  char dig[24];
  size_t nd = 0;
  const char *p = tmp;
  int neg = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  for (; *p && *p != 'e'; p++)
    if (is_digit(*p) && nd < sizeof(dig))
      dig[nd++] = *p;
  long ex = *p == 'e' ? strtol(p + 1, NULL, 10) : 0;
  while (nd > 1 && dig[nd - 1] == '0')
    nd--;
  double a = fabs(f);
  size_t o = 0;
  char outb[64];
  if (neg)
    outb[o++] = '-';
  if (a < 1e-6 || a >= 1e21) {
    outb[o++] = dig[0];
    if (nd > 1) {
      outb[o++] = '.';
      for (size_t i = 1; i < nd; i++)
        outb[o++] = dig[i];
    }
    o += (size_t)snprintf(outb + o, sizeof(outb) - o, "e%c%02ld", ex < 0 ? '-' : '+',
                          ex < 0 ? -ex : ex);
    /* Go cleans "e-09" up to "e-9". */
    if (o >= 4 && outb[o - 4] == 'e' && outb[o - 3] == '-' && outb[o - 2] == '0') {
      outb[o - 2] = outb[o - 1];
      o--;
    }
  } else if (ex >= 0) {
    for (long i = 0; i <= ex; i++)
      outb[o++] = (size_t)i < nd ? dig[i] : '0';
    if ((long)nd > ex + 1) {
      outb[o++] = '.';
      for (size_t i = (size_t)ex + 1; i < nd; i++)
        outb[o++] = dig[i];
    }
  } else {
    outb[o++] = '0';
    outb[o++] = '.';
    for (long i = 0; i < -ex - 1; i++)
      outb[o++] = '0';
    for (size_t i = 0; i < nd; i++)
      outb[o++] = dig[i];
  }
  outb[o] = '\0';
  if (o + 1 > cap)
    return GC_ERANGE;
  memcpy(buf, outb, o + 1);
  return GC_OK;
}

static int from_value(const struct gc_value *v, int cap, struct gc_quantity *out);

int gc_quantity_from_value(const struct gc_value *v, struct gc_quantity *out) {
  return from_value(v, 0, out);
}

int gc_quantity_from_value_capped(const struct gc_value *v, struct gc_quantity *out) {
  return from_value(v, 1, out);
}

static int from_value(const struct gc_value *v, int cap, struct gc_quantity *out) {
  char buf[64];
  if (!v || !out)
    return GC_EINVAL;
  switch (v->type) {
  case GC_NULL:
    /* Quantity.UnmarshalJSON("null") leaves a zero quantity. */
    *out = gc_quantity_zero(GC_QF_DECIMAL_SI);
    return GC_OK;
  case GC_STR: {
    /* UnmarshalJSON trims surrounding white space before parsing. */
    const unsigned char *s = (const unsigned char *)v->u.s;
    size_t n = v->len;
    size_t k;
    if (!s)
      return GC_EINVAL;
    while (n > 0 && (k = space_at(s, n)) > 0) {
      s += k;
      n -= k;
    }
    while (n > 0 && (k = space_before(s, n)) > 0)
      n -= k;
    return parse_q((const char *)s, n, cap, out);
  }
  case GC_INT:
    /* An integer reaches UnmarshalJSON as its decimal digits, whatever
     * spelling the YAML source used (0x1F, 1_000, +5): sigs.k8s.io/yaml
     * converts it to a JSON number first. */
    snprintf(buf, sizeof(buf), "%lld", (long long)v->u.i);
    return parse_q(buf, strlen(buf), cap, out);
  case GC_FLOAT: {
    if (v->text) {
      int rc = parse_q(v->text, strlen(v->text), cap, out);
      if (rc != GC_EINVAL)
        return rc;
      /* YAML-only spellings (1_000.5) fall through to the number's value. */
    }
    int rc = format_go_float(v->u.f, buf, sizeof(buf));
    if (rc)
      return rc;
    return parse_q(buf, strlen(buf), cap, out);
  }
  default:
    return GC_EINVAL;
  }
}

struct gc_quantity gc_quantity_zero(enum gc_qformat format) {
  struct gc_quantity q;
  q.mant = 0;
  q.scale = 0;
  q.format = format;
  return q;
}

/* ------------------------------------------------------------------ */
/* Arithmetic                                                          */

/* r = a + sign*b exactly, or GC_ERANGE. */
static int add_signed(const struct gc_quantity *a, const struct gc_quantity *b, int sign,
                      enum gc_qformat format, struct gc_quantity *r) {
  i128 am = a->mant, bm = (i128)b->mant * sign;
  int64_t as = a->scale, bs = b->scale;
  if (bm == 0)
    return store_exact(am, as, format, r);
  if (am == 0)
    return store_exact(bm, bs, format, r);
  strip_tens(&am, &as);
  strip_tens(&bm, &bs);
  /* Make a the operand with the larger scale. */
  if (as < bs) {
    i128 tm = am;
    int64_t ts = as;
    am = bm;
    as = bs;
    bm = tm;
    bs = ts;
  }
  int64_t d = as - bs;
  /* After stripping, bm is not a multiple of ten, so neither is the sum at
   * scale bs; with d >= 20 its magnitude exceeds 10^20 - 2^63 > 2^63, which
   * no int64 mantissa can hold.  For d <= 19, |am| * 10^d < 2^63 * 10^19 <
   * 2^127 fits. */
  if (d > 19)
    return GC_ERANGE;
  i128 sum = am * (i128)pow10_u128((int)d) + bm;
  return store_exact(sum, bs, format, r);
}

int gc_quantity_add(struct gc_quantity *acc, const struct gc_quantity *q) {
  struct gc_quantity r;
  if (!acc || !q)
    return GC_EINVAL;
  enum gc_qformat f = acc->mant == 0 ? q->format : acc->format;
  int rc = add_signed(acc, q, 1, f, &r);
  if (rc)
    return rc;
  *acc = r;
  return GC_OK;
}

int gc_quantity_sub(struct gc_quantity *acc, const struct gc_quantity *q) {
  struct gc_quantity r;
  if (!acc || !q)
    return GC_EINVAL;
  enum gc_qformat f = acc->mant == 0 ? q->format : acc->format;
  int rc = add_signed(acc, q, -1, f, &r);
  if (rc)
    return rc;
  *acc = r;
  return GC_OK;
}

int gc_quantity_mul_int(struct gc_quantity *q, int64_t n) {
  struct gc_quantity r;
  if (!q)
    return GC_EINVAL;
  /* |mant * n| <= 2^126 fits in 128 bits. */
  i128 p = (i128)q->mant * (i128)n;
  int rc = store_exact(p, q->scale, q->format, &r);
  if (rc)
    return rc;
  *q = r;
  return GC_OK;
}

static int num_digits_u128(u128 v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    n++;
  }
  return n;
}

int gc_quantity_cmp(const struct gc_quantity *a, const struct gc_quantity *b) {
  int sa = (a->mant > 0) - (a->mant < 0);
  int sb = (b->mant > 0) - (b->mant < 0);
  if (sa != sb)
    return sa < sb ? -1 : 1;
  if (sa == 0)
    return 0;
  u128 ma = (u128)(sa < 0 ? -(i128)a->mant : (i128)a->mant);
  u128 mb = (u128)(sb < 0 ? -(i128)b->mant : (i128)b->mant);
  /* Compare magnitudes by order first, then by aligned mantissas: equal
   * orders imply |scale difference| <= 18, so the shift fits in 128 bits. */
  int64_t oa = num_digits_u128(ma) + (int64_t)a->scale;
  int64_t ob = num_digits_u128(mb) + (int64_t)b->scale;
  int mag;
  if (oa != ob) {
    mag = oa < ob ? -1 : 1;
  } else {
    int64_t d = (int64_t)a->scale - b->scale;
    if (d > 0)
      ma *= pow10_u128((int)d);
    else if (d < 0)
      mb *= pow10_u128((int)-d);
    mag = ma < mb ? -1 : (ma > mb ? 1 : 0);
  }
  return sa > 0 ? mag : -mag;
}

int gc_quantity_is_zero(const struct gc_quantity *q) { return q && q->mant == 0; }

/* ceil-away-from-zero of q / 10^target as int64. */
static int scaled_value(const struct gc_quantity *q, int target, int64_t *out) {
  if (!q || !out)
    return GC_EINVAL;
  if (q->mant == 0) {
    *out = 0;
    return GC_OK;
  }
  int64_t d = (int64_t)q->scale - target;
  i128 m = q->mant;
  if (d >= 0) {
    if (d > 19)
      return GC_ERANGE;
    i128 v = m * (i128)pow10_u128((int)d);
    if (v > INT64_MAX || v < INT64_MIN)
      return GC_ERANGE;
    *out = (int64_t)v;
    return GC_OK;
  }
  if (-d > 19) {
    /* |mant| < 10^19 <= 10^-d: the magnitude is below one unit. */
    *out = m > 0 ? 1 : -1;
    return GC_OK;
  }
  i128 p = (i128)pow10_u128((int)-d);
  i128 qu = m / p, rem = m % p;
  if (rem != 0)
    qu += m > 0 ? 1 : -1;
  if (qu > INT64_MAX || qu < INT64_MIN)
    return GC_ERANGE;
  *out = (int64_t)qu;
  return GC_OK;
}

int gc_quantity_milli(const struct gc_quantity *q, int64_t *out) {
  return scaled_value(q, -3, out);
}

int gc_quantity_units(const struct gc_quantity *q, int64_t *out) {
  return scaled_value(q, 0, out);
}

int gc_quantity_div_floor(const struct gc_quantity *num, const struct gc_quantity *den,
                          int64_t *out) {
  if (!num || !den || !out)
    return GC_EINVAL;
  if (den->mant <= 0)
    return GC_EINVAL;
  if (num->mant == 0) {
    *out = 0;
    return GC_OK;
  }
  int neg = num->mant < 0;
  u128 a = (u128)(neg ? -(i128)num->mant : (i128)num->mant);
  u128 b = (u128)den->mant;
  int64_t d = (int64_t)num->scale - den->scale;
  u128 qu, rem;
  if (d <= 0) {
    /* a / (b * 10^-d): for -d >= 19 the divisor exceeds 10^19 > a. */
    if (-d >= 19) {
      qu = 0;
      rem = a;
    } else {
      u128 dv = b * pow10_u128((int)-d);
      qu = a / dv;
      rem = a % dv;
    }
  } else {
    /* (a * 10^d) / b by long division, one decimal digit at a time; the
     * quotient outgrows int64 within 40 steps, which bounds the loop. */
    qu = a / b;
    rem = a % b;
    for (int64_t i = 0; i < d; i++) {
      if (qu > (u128)INT64_MAX + 1)
        return GC_ERANGE;
      rem *= 10; /* rem < b < 2^63, so rem * 10 < 2^67 */
      qu = qu * 10 + rem / b;
      rem %= b;
    }
  }
  if (neg) {
    if (rem != 0)
      qu += 1;
    if (qu > (u128)INT64_MAX + 1)
      return GC_ERANGE;
    *out = (int64_t)(-(i128)qu);
  } else {
    if (qu > (u128)INT64_MAX)
      return GC_ERANGE;
    *out = (int64_t)qu;
  }
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Formatting                                                          */

/* Writes the decimal digits of v (most significant first) into buf;
 * returns the count.  buf needs 40 bytes. */
static size_t u128_digits(u128 v, char *buf) {
  char tmp[40];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + (int)(v % 10));
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++)
    buf[i] = tmp[n - 1 - i];
  return n;
}

static const char *decimal_si_suffix(int64_t e) {
  switch (e) {
  case -9: return "n";
  case -6: return "u";
  case -3: return "m";
  case 0: return "";
  case 3: return "k";
  case 6: return "M";
  case 9: return "G";
  case 12: return "T";
  case 15: return "P";
  case 18: return "E";
  default: return NULL;
  }
}

/* AsCanonicalBytes + the decimal suffix: all factors of ten move into the
 * exponent, which is then lowered to a multiple of three. */
static int format_decimal(int neg, u128 mag, int64_t e, enum gc_qformat f, char *buf,
                          size_t cap) {
  char digits[48];
  char suffix[24];
  while (mag % 10 == 0) {
    mag /= 10;
    e++;
  }
  int64_t r = ((e % 3) + 3) % 3;
  size_t n = u128_digits(mag, digits);
  for (int64_t i = 0; i < r; i++)
    digits[n++] = '0';
  e -= r;
  const char *sfx = f == GC_QF_DECIMAL_SI ? decimal_si_suffix(e) : NULL;
  if (sfx) {
    snprintf(suffix, sizeof(suffix), "%s", sfx);
  } else if (e == 0) {
    suffix[0] = '\0';
  } else {
    /* DecimalExponent, or a DecimalSI exponent without an SI suffix
     * (beyond E or below n), which upstream also prints as "e<exp>". */
    snprintf(suffix, sizeof(suffix), "e%lld", (long long)e);
  }
  size_t need = (size_t)neg + n + strlen(suffix) + 1;
  if (need > cap)
    return GC_ERANGE;
  size_t o = 0;
  if (neg)
    buf[o++] = '-';
  memcpy(buf + o, digits, n);
  o += n;
  memcpy(buf + o, suffix, strlen(suffix) + 1);
  return GC_OK;
}

int gc_quantity_format(const struct gc_quantity *q, char *buf, size_t cap) {
  if (!q || !buf || cap == 0)
    return GC_EINVAL;
  if (q->mant == 0) {
    if (cap < 2)
      return GC_ERANGE;
    buf[0] = '0';
    buf[1] = '\0';
    return GC_OK;
  }
  int neg = q->mant < 0;
  u128 mag = (u128)(neg ? -(i128)q->mant : (i128)q->mant);
  int64_t e = q->scale;
  enum gc_qformat f = q->format;
  if (f != GC_QF_DECIMAL_SI && f != GC_QF_BINARY_SI)
    f = GC_QF_DECIMAL_EXPONENT;
  if (f == GC_QF_BINARY_SI) {
    /* Binary only for integers of magnitude >= 1024 (CanonicalizeBytes);
     * anything else is shown as DecimalSI so no precision is lost. */
    struct gc_quantity lim = {1024, 0, GC_QF_DECIMAL_SI};
    struct gc_quantity nlim = {-1024, 0, GC_QF_DECIMAL_SI};
    int small = gc_quantity_cmp(q, &nlim) > 0 && gc_quantity_cmp(q, &lim) < 0;
    u128 m = mag;
    int64_t s = e;
    while (s < 0 && m % 10 == 0) {
      m /= 10;
      s++;
    }
    /* Integers up to |mant| * 10^19 < 2^127 are printed exactly; larger
     * ones (reachable only through arithmetic) fall back to DecimalSI. */
    if (small || s < 0 || s > 19) {
      f = GC_QF_DECIMAL_SI;
    } else {
      u128 v = m * pow10_u128((int)s);
      int k = 0;
      while (k < 6 && v % 1024 == 0) {
        v /= 1024;
        k++;
      }
      static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
      char digits[48];
      size_t n = u128_digits(v, digits);
      size_t need = (size_t)neg + n + strlen(bin[k]) + 1;
      if (need > cap)
        return GC_ERANGE;
      size_t o = 0;
      if (neg)
        buf[o++] = '-';
      memcpy(buf + o, digits, n);
      o += n;
      memcpy(buf + o, bin[k], strlen(bin[k]) + 1);
      return GC_OK;
    }
  }
  return format_decimal(neg, mag, e, f, buf, cap);
}
