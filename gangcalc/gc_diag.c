/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_diag: status strings and the bounded diagnostics list.
 */
#include "gc_diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gc_strerror(int code) {
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

int gc_has_controls(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
      return 1;
  return 0;
}

size_t gc_escape_controls(char *out, size_t cap, const char *in, size_t len) {
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
  if (gc_has_controls(msg, (size_t)len)) {
    char *esc = malloc((size_t)len * 4 + 1);
    if (!esc) {
      free(msg);
      d->dropped++;
      return GC_ENOMEM;
    }
    gc_escape_controls(esc, (size_t)len * 4 + 1, msg, (size_t)len);
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
