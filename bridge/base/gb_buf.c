/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_buf: a bounded growable buffer (see gb_buf.h).
 */
#include "gb_buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GB_BUF_FIRST_CAP 256

void gb_buf_init(struct gb_buf *b, size_t toobig) {
  b->p = NULL;
  b->len = b->cap = 0;
  b->toobig = toobig ? toobig : 1;
  b->err = 0;
}

int gb_buf_fail(struct gb_buf *b, int err) {
  /* The first error wins; the contents are dropped at once. */
  if (b->err)
    return b->err;
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  b->err = err;
  return err;
}

int gb_buf_reserve(struct gb_buf *b, size_t n) {
  if (b->err)
    return b->err;
  /* len < toobig always holds, so the subtraction cannot wrap. */
  if (n >= b->toobig - b->len)
    return gb_buf_fail(b, GC_ELIMIT);
  size_t need = b->len + n + 1;
  if (need <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : GB_BUF_FIRST_CAP;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  /* No point holding more than the limit allows. */
  if (cap > b->toobig && b->toobig >= need)
    cap = b->toobig;
  char *p = realloc(b->p, cap);
  if (!p)
    return gb_buf_fail(b, GC_ENOMEM);
  b->p = p;
  b->cap = cap;
  return 0;
}

int gb_buf_add(struct gb_buf *b, const void *data, size_t n) {
  int rc = gb_buf_reserve(b, n);
  if (rc)
    return rc;
  if (n)
    memcpy(b->p + b->len, data, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

int gb_buf_addstr(struct gb_buf *b, const char *s) { return gb_buf_add(b, s, strlen(s)); }

/* As gb_buf_printf with a va_list (consumed). */
static int gb_buf_vprintf(struct gb_buf *b, const char *fmt, va_list ap) {
  if (b->err)
    return b->err;
  va_list again;
  va_copy(again, ap);
  int w = vsnprintf(NULL, 0, fmt, ap);
  int rc = w < 0 ? gb_buf_fail(b, GC_EINVAL) : gb_buf_reserve(b, (size_t)w);
  if (!rc) {
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, again);
    b->len += (size_t)w;
  }
  va_end(again);
  return rc;
}

int gb_buf_printf(struct gb_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = gb_buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

void gb_buf_reset(struct gb_buf *b) {
  b->len = 0;
  b->err = 0;
  if (b->p)
    b->p[0] = '\0';
}

void gb_buf_free(struct gb_buf *b) {
  if (!b)
    return;
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
  b->err = 0;
}

const char *gb_buf_ptr(const struct gb_buf *b) { return b->p ? b->p : ""; }

size_t gb_buf_len(const struct gb_buf *b) { return b->len; }

int gb_buf_take(struct gb_buf *b, char **out, size_t *len) {
  *out = NULL;
  if (len)
    *len = 0;
  if (b->err || (!b->p && gb_buf_add(b, "", 0))) {
    int rc = b->err;
    gb_buf_free(b);
    return rc;
  }
  *out = b->p;
  if (len)
    *len = b->len;
  b->p = NULL;
  b->len = b->cap = 0;
  return 0;
}
