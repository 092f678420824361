/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_duration: Go duration text (see gc_duration.h).  The parser follows
 * Go's src/time/format.go ParseDuration step by step, including its
 * unsigned 64-bit accumulation and the float64 product for fractions, so a
 * value Volcano accepts is accepted here with the same nanoseconds.
 */
#include "gc_duration.h"

#include <stdio.h>
#include <string.h>

#include "gc_diag.h"

#define ONE_63 ((uint64_t)1 << 63)

struct unit {
  const char *name;
  uint64_t ns;
};

static const struct unit UNITS[] = {
    {"ns", 1ULL},           {"us", 1000ULL},         {"\xc2\xb5s", 1000ULL},
    {"\xce\xbcs", 1000ULL}, {"ms", 1000000ULL},      {"s", 1000000000ULL},
    {"m", 60000000000ULL},  {"h", 3600000000000ULL},
};

static void set_why(char *why, size_t cap, const char *text) {
  if (why && cap)
    snprintf(why, cap, "%s", text);
}

/* Consumes [0-9]* from *p (up to end) into *x; 1 on overflow past 2^63,
 * as Go's leadingInt. */
static int leading_int(const char **p, const char *end, uint64_t *x) {
  uint64_t v = 0;
  for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
    if (v > ONE_63 / 10)
      return 1;
    v = v * 10 + (uint64_t)(**p - '0');
    if (v > ONE_63)
      return 1;
  }
  *x = v;
  return 0;
}

/* Consumes [0-9]* after a '.', keeping the digits that fit (Go's
 * leadingFraction): *x the value, *scale its power of ten. */
static void leading_fraction(const char **p, const char *end, uint64_t *x, double *scale) {
  uint64_t v = 0;
  double sc = 1;
  int overflow = 0;
  for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
    if (overflow)
      continue;
    if (v > (ONE_63 - 1) / 10) {
      overflow = 1;
      continue;
    }
    uint64_t y = v * 10 + (uint64_t)(**p - '0');
    if (y > ONE_63) {
      overflow = 1;
      continue;
    }
    v = y;
    sc *= 10;
  }
  *x = v;
  *scale = sc;
}

/* Looks a unit up; 0 when unknown. */
static uint64_t unit_ns(const char *u, size_t n) {
  for (size_t i = 0; i < sizeof(UNITS) / sizeof(UNITS[0]); i++)
    if (strlen(UNITS[i].name) == n && !memcmp(UNITS[i].name, u, n))
      return UNITS[i].ns;
  return 0;
}

/* One "<number><unit>" element at *p; adds its nanoseconds to *d.  Returns
 * 0 or GC_EINVAL with why set. */
static int element(const char **p, const char *end, uint64_t *d, char *why, size_t cap) {
  if (!(**p == '.' || (**p >= '0' && **p <= '9')))
    return GC_EINVAL;
  const char *start = *p;
  uint64_t v = 0, f = 0;
  double scale = 1;
  if (leading_int(p, end, &v))
    return GC_EINVAL;
  int pre = *p != start, post = 0;
  if (*p < end && **p == '.') {
    (*p)++;
    const char *fs = *p;
    leading_fraction(p, end, &f, &scale);
    post = *p != fs;
  }
  if (!pre && !post)
    return GC_EINVAL;
  const char *u = *p;
  while (*p < end && !(**p == '.' || (**p >= '0' && **p <= '9')))
    (*p)++;
  size_t ulen = (size_t)(*p - u);
  if (ulen == 0) {
    set_why(why, cap, "missing unit");
    return GC_EINVAL;
  }
  uint64_t unit = unit_ns(u, ulen);
  if (!unit) {
    char esc[4 * GC_DURATION_TEXT_MAX + 1], msg[4 * GC_DURATION_TEXT_MAX + 32];
    size_t shown = ulen > GC_DURATION_TEXT_MAX ? GC_DURATION_TEXT_MAX : ulen;
    gc_diag_escape_controls(esc, sizeof(esc), u, shown);
    snprintf(msg, sizeof(msg), "unknown unit \"%s\"", esc);
    set_why(why, cap, msg);
    return GC_EINVAL;
  }
  if (v > ONE_63 / unit)
    return GC_EINVAL;
  v *= unit;
  if (f > 0) {
    /* float64 keeps a fraction of an hour nanosecond-exact, as in Go. */
    v += (uint64_t)((double)f * ((double)unit / scale));
    if (v > ONE_63)
      return GC_EINVAL;
  }
  *d += v;
  return *d > ONE_63 ? GC_EINVAL : 0;
}

int gc_duration_parse(const char *s, size_t len, int64_t *ns, char *why, size_t whycap) {
  set_why(why, whycap, "");
  *ns = 0;
  const char *p = s, *end = s + len;
  int neg = 0;
  if (p < end && (*p == '-' || *p == '+')) {
    neg = *p == '-';
    p++;
  }
  if (end - p == 1 && *p == '0')
    return 0;
  if (p == end)
    return GC_EINVAL;
  uint64_t d = 0;
  while (p < end) {
    if (element(&p, end, &d, why, whycap))
      return GC_EINVAL;
  }
  if (neg) {
    *ns = d == ONE_63 ? INT64_MIN : -(int64_t)d;
    return 0;
  }
  if (d > ONE_63 - 1)
    return GC_EINVAL;
  *ns = (int64_t)d;
  return 0;
}

int gc_duration_parse_seconds(const char *s, int64_t *seconds, char *why, size_t whycap) {
  int64_t ns = 0;
  *seconds = 0;
  if (gc_duration_parse(s ? s : "", s ? strlen(s) : 0, &ns, why, whycap))
    return GC_EINVAL;
  const int64_t G = 1000000000LL;
  /* Rounded away from zero, without negating INT64_MIN. */
  *seconds = ns >= 0 ? ns / G + (ns % G != 0) : ns / G - (ns % G != 0);
  return 0;
}

int gc_duration_format_seconds(int64_t seconds, char *buf, size_t cap) {
  if (seconds < 0 || seconds > INT64_MAX / 1000000000LL || !buf)
    return GC_EINVAL;
  long long h = (long long)(seconds / 3600), m = (long long)(seconds / 60 % 60),
            sec = (long long)(seconds % 60);
  int n;
  if (h)
    n = snprintf(buf, cap, "%lldh%lldm%llds", h, m, sec);
  else if (m)
    n = snprintf(buf, cap, "%lldm%llds", m, sec);
  else
    n = snprintf(buf, cap, "%llds", sec);
  return n < 0 || (size_t)n >= cap ? GC_EINVAL : 0;
}
