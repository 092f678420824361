/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_buf: the bridge's one growable text buffer, after curl's dynbuf.  A
 * buffer is set up with a limit (`toobig`): its length always stays below
 * it, so that output built from outside input (YAML and JSON documents,
 * health answers, metric expositions) cannot grow without bound.  The
 * contents are always NUL-terminated.  The first failure (GC_ELIMIT or
 * GC_ENOMEM) frees the contents and sticks: later appends do nothing and
 * return the same code, so a writer may append freely and check once at
 * the end.  It depends only on libc and gangcalc's gc_diag codes.
 */
#ifndef GB_BUF_H
#define GB_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "gc_diag.h"

struct gb_buf {
  char *p;       /* the contents, NUL-terminated; NULL until something is added */
  size_t len;    /* bytes used, below toobig */
  size_t cap;    /* bytes allocated */
  size_t toobig; /* the length that is refused */
  int err;       /* 0, or the sticky GC_ELIMIT / GC_ENOMEM */
};

/* Sets up an empty buffer (caller-owned struct) whose length must stay
 * below toobig (at least 1).  Nothing is allocated.  Can't fail. */
void gb_buf_init(struct gb_buf *b, size_t toobig);

/* Appends data[0..n) (borrowed; NULL allowed when n is 0).  Returns 0,
 * GC_ELIMIT (the length would reach toobig) or GC_ENOMEM; on failure the
 * contents are freed and the error sticks. */
int gb_buf_add(struct gb_buf *b, const void *data, size_t n);

/* Appends the NUL-terminated string s (borrowed).  As gb_buf_add. */
int gb_buf_addstr(struct gb_buf *b, const char *s);

/* Appends printf-formatted text.  As gb_buf_add; GC_EINVAL (sticky too)
 * when the format cannot be rendered. */
int gb_buf_printf(struct gb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Makes room for n more bytes without adding any, so that a writer that
 * knows its size allocates once.  As gb_buf_add. */
int gb_buf_reserve(struct gb_buf *b, size_t n);

/* Records err (a negative GC_E* code) as the buffer's sticky error, as if
 * an append had failed, for a writer whose own step (an allocation beside
 * the buffer) failed.  Returns err. */
int gb_buf_fail(struct gb_buf *b, int err);

/* Empties the buffer and clears the error; keeps the allocation. */
void gb_buf_reset(struct gb_buf *b);

/* Frees the contents; the buffer is empty and reusable with the same limit.
 * Accepts NULL. */
void gb_buf_free(struct gb_buf *b);

/* The contents ("" when empty; borrowed until the next change) and length. */
const char *gb_buf_ptr(const struct gb_buf *b);
size_t gb_buf_len(const struct gb_buf *b);

/* Hands the contents to the caller: *out (caller frees with free(); an
 * empty buffer gives a malloc'd "") and *len (may be NULL).  The buffer is
 * left empty.  Returns 0, or the sticky error / GC_ENOMEM with *out NULL
 * (the buffer is then freed). */
int gb_buf_take(struct gb_buf *b, char **out, size_t *len);

#endif
