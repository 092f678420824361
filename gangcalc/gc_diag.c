/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_diag: status strings and the bounded diagnostics list.
 */
#include "gc_diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gc_diag_strerror(int code) {
  switch (code) {
  case GC_OK: return "ok";
  case GC_EINVAL: return "invalid input";
  case GC_ERANGE: return "value out of range";
  case GC_ENOMEM: return "out of memory";
  case GC_ENOTFOUND: return "not found";
  case GC_ELIMIT: return "input limit exceeded";
  case GC_EIO: return "i/o error";
  case GC_EUSAGE: return "usage error";
  default: return "unknown error";
  }
}

void gc_diags_init(struct gc_diags *d) { memset(d, 0, sizeof(*d)); }

void gc_diags_destroy(struct gc_diags *d) {
  if (!d)
    return;
  for (size_t i = 0; i < d->n; i++)
    free(d->msgs[i]);
  free(d->msgs);
  free(d->is_warning);
  size_t max = d->max;
  gc_diags_init(d);
  d->max = max;
}

static int diags_push(struct gc_diags *d, char *msg, int warning) {
  size_t max = d->max ? d->max : GC_DIAGS_MAX;
  if (d->n >= max) {
    free(msg);
    d->dropped++;
    return GC_OK;
  }
  if (d->n == d->cap) {
    size_t ncap = d->cap ? d->cap * 2 : 8;
    char **nm = realloc(d->msgs, ncap * sizeof(*nm));
    if (!nm)
      goto oom;
    d->msgs = nm;
    int *nw = realloc(d->is_warning, ncap * sizeof(*nw));
    if (!nw)
      goto oom;
    d->is_warning = nw;
    d->cap = ncap;
  }
  d->msgs[d->n] = msg;
  d->is_warning[d->n] = warning;
  d->n++;
  return GC_OK;
oom:
  free(msg);
  d->dropped++;
  return GC_ENOMEM;
}

int gc_diag_has_controls(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return 1;
  return 0;
}

size_t gc_diag_escape_controls(char *out, size_t cap, const char *in, size_t len) {
  static const char HEX[] = "0123456789abcdef";
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)in[i];
    int ctl = c < 0x20 || c == 0x7f;
    if (o + (ctl ? 4 : 1) >= cap)
      break;
    if (!ctl) {
      out[o++] = (char)c;
      continue;
    }
    out[o++] = '\\';
    out[o++] = 'x';
    out[o++] = HEX[c >> 4];
    out[o++] = HEX[c & 15];
  }
  out[o] = '\0';
  return o;
}

static int diags_vadd(struct gc_diags *d, int warning, const char *fmt, va_list ap) {
  if (!d)
    return GC_OK;
  if (!warning)
    d->errors++;
  va_list ap2;
  va_copy(ap2, ap);
  int len = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (len < 0) {
    d->dropped++;
    return GC_EINVAL;
  }
  char *msg = malloc((size_t)len + 1);
  if (!msg) {
    d->dropped++;
    return GC_ENOMEM;
  }
  vsnprintf(msg, (size_t)len + 1, fmt, ap);
  if (gc_diag_has_controls(msg, (size_t)len)) {
    char *esc = malloc((size_t)len * 4 + 1);
    if (!esc) {
      free(msg);
      d->dropped++;
      return GC_ENOMEM;
    }
    gc_diag_escape_controls(esc, (size_t)len * 4 + 1, msg, (size_t)len);
    free(msg);
    msg = esc;
  }
  return diags_push(d, msg, warning);
}

int gc_diags_addf(struct gc_diags *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = diags_vadd(d, 0, fmt, ap);
  va_end(ap);
  return rc;
}

int gc_diags_warnf(struct gc_diags *d, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = diags_vadd(d, 1, fmt, ap);
  va_end(ap);
  return rc;
}

int gc_diags_move(struct gc_diags *dst, struct gc_diags *src) {
  int rc = GC_OK;
  dst->errors += src->errors;
  for (size_t i = 0; i < src->n; i++) {
    int r = diags_push(dst, src->msgs[i], src->is_warning[i]);
    if (r && !rc)
      rc = r;
  }
  dst->dropped += src->dropped;
  free(src->msgs);
  free(src->is_warning);
  size_t max = src->max;
  gc_diags_init(src);
  src->max = max;
  return rc;
}

/* Formats into buf (cap bytes, always terminated; output is cut to fit) and
 * returns the length.  Paths and messages use only %s, %.*s, %zu, %d and
 * %lld, which are copied here directly (vsnprintf costs far more than the
 * rest of a TrainJob's checks); any other format goes to vsnprintf. */
size_t gc_diag_vformat(char *buf, size_t cap, const char *f, va_list ap) {
  int simple = 1;
  for (const char *p = strchr(f, '%'); p && simple; p = strchr(p + 1, '%')) {
    if (p[1] == 's' || p[1] == 'd')
      p++;
    else if ((p[1] == 'z' && p[2] == 'u') || (p[1] == '.' && p[2] == '*' && p[3] == 's'))
      p += p[1] == 'z' ? 2 : 3;
    else if (p[1] == 'l' && p[2] == 'l' && p[3] == 'd')
      p += 3;
    else
      simple = 0;
  }
  if (!simple) {
    int n = vsnprintf(buf, cap, f, ap);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
  }
  size_t n = 0;
  for (const char *p = f; *p && n < cap - 1; p++) {
    if (*p != '%') {
      /* A literal run, copied at once. */
      const char *pct = strchr(p, '%');
      size_t run = pct ? (size_t)(pct - p) : strlen(p);
      if (run > cap - 1 - n)
        run = cap - 1 - n;
      memcpy(buf + n, p, run);
      n += run;
      p += run - 1;
      continue;
    }
    char num[24];
    const char *src;
    size_t len;
    int neg = 0;
    unsigned long long u;
    if (p[1] == 's') {
      src = va_arg(ap, const char *);
      src = src ? src : "(null)"; /* as glibc prints it */
      len = strlen(src);
      p++;
    } else if (p[1] == '.') {
      int prec = va_arg(ap, int);
      src = va_arg(ap, const char *);
      src = src ? src : "(null)";
      len = prec < 0 ? strlen(src) : strnlen(src, (size_t)prec);
      p += 3;
    } else {
      if (p[1] == 'z') {
        u = va_arg(ap, size_t);
        p += 2;
      } else {
        long long v = p[1] == 'd' ? va_arg(ap, int) : va_arg(ap, long long);
        p += p[1] == 'd' ? 1 : 3;
        neg = v < 0;
        u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
      }
      size_t k = sizeof(num);
      do {
        num[--k] = (char)('0' + u % 10);
        u /= 10;
      } while (u);
      if (neg)
        num[--k] = '-';
      src = num + k;
      len = sizeof(num) - k;
    }
    if (len > cap - 1 - n)
      len = cap - 1 - n;
    memcpy(buf + n, src, len);
    n += len;
  }
  buf[n] = '\0';
  return n;
}
