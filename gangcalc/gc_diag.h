/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_diag: status codes and the diagnostics list shared by every gangbridge
 * library.  Library functions never print: they return 0 or a negative GC_E*
 * code and append human-readable messages to a caller-owned struct gc_diags.
 * Messages name where the problem is, either "file:line:col: message" for
 * syntax problems or "namespace/name: spec.path: message" for semantic ones.
 * The list is bounded so hostile input cannot make it grow without limit.
 */
#ifndef GC_DIAG_H
#define GC_DIAG_H

#include <stdarg.h>
#include <stddef.h>

#define GC_OK 0
#define GC_EINVAL (-1)    /* malformed or semantically invalid input */
#define GC_ERANGE (-2)    /* a number does not fit (overflow) */
#define GC_ENOMEM (-3)    /* allocation failed */
#define GC_ENOTFOUND (-4) /* a referenced object does not exist */
#define GC_ELIMIT (-5)    /* an input bound (size, depth, count) was exceeded */
#define GC_EIO (-6)       /* reading or writing failed (bridge only) */
#define GC_EUSAGE (-7)    /* the caller used the API or CLI wrongly */

/* Default cap on stored messages; later ones are counted in `dropped`. */
#define GC_DIAGS_MAX 1000

struct gc_diags {
  char **msgs;    /* each owned by the list */
  int *is_warning;
  size_t n;
  size_t cap;
  size_t max;     /* 0 means GC_DIAGS_MAX */
  size_t dropped; /* messages not stored because the list was full */
  size_t errors;  /* number of error (not warning) messages added, stored or not */
};

/* Returns a static, lowercase description of a GC_E* code. */
const char *gc_diag_strerror(int code);

/* Initialises an empty list.  This function can't fail. */
void gc_diags_init(struct gc_diags *d);

/* Frees every message; the list is empty and reusable afterwards.  Accepts NULL. */
void gc_diags_destroy(struct gc_diags *d);

/* Appends a formatted error message.  Returns 0, or GC_ENOMEM (the message is
 * then counted as dropped).  A NULL list is accepted and ignored. */
/* Messages are stored with control bytes escaped (gc_diag_escape_controls). */
int gc_diags_addf(struct gc_diags *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* As gc_diags_addf, but records a warning (not counted in `errors`). */
int gc_diags_warnf(struct gc_diags *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Moves every message of src to the end of dst (src is left empty). */
int gc_diags_move(struct gc_diags *dst, struct gc_diags *src);

/* 1 when s[0..len) holds a control byte (below 0x20, or 0x7f). */
int gc_diag_has_controls(const char *s, size_t len);

/* Copies in[0..len) to out (cap >= 1 bytes, always terminated, cut to fit)
 * with every control byte written as \xNN, so that text taken from a
 * manifest cannot drive a terminal or split a line.  Needs at most 4 * len + 1
 * bytes.  Returns the length written. */
size_t gc_diag_escape_controls(char *out, size_t cap, const char *in, size_t len);

/* Formats into buf (cap >= 1 bytes, always terminated; output is cut to
 * fit) and returns the length written.  %s, %.*s, %zu, %d and %lld are
 * copied directly, since vsnprintf costs far more than the rest of a
 * TrainJob's checks; any other format goes to vsnprintf. */
size_t gc_diag_vformat(char *buf, size_t cap, const char *f, va_list ap);

#endif
