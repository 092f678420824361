/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_jscan: a bounded, validating pull scanner over one JSON document:
 * the scheduler endpoints' request bodies, and the keep-aware decode of
 * watch events (kube's gb_keep_decode).  It owns nothing but a cursor: the
 * caller walks the document (enter an object, read the keys it wants, skip
 * every other value) and each byte is looked at once.  Skipping validates
 * the full JSON grammar (strings and their escapes, numbers, literals,
 * commas, colons, nesting up to GB_SJ_MAX_DEPTH), so a truncated or
 * malformed body is refused wherever the error is, with "body:LINE:COL:" in
 * the message.  Why not json-c for the whole body: the scheduler's bodies
 * carry every pod of a node (predicate) or every task of a job three or
 * four times over (jobEnqueueable), tens of megabytes of which gangbridge
 * reads a few names; json-c builds a tree of all of it (about 10x the time
 * of a skip, measured in tests/bench/bench_sched.c).  The edges are Go's
 * encoding/json's (Volcano and kube-scheduler are Go): strings and keys are
 * decoded as Go decodes them (escapes, surrogate pairs, every byte that is
 * not UTF-8 read as U+FFFD, so no invalid UTF-8 ever reaches an answer),
 * keys match a field name exactly or under Go's case folding, anything but
 * white space after the value is refused (a NUL byte too), NaN and
 * Infinity are not numbers, integer fields take integer literals only and
 * every range is checked on the text, before any conversion.
 */
#ifndef GB_JSCAN_H
#define GB_JSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "gc_diag.h"

#define GB_SJ_MAX_DEPTH 256
#define GB_SJ_MSG_MAX 200
#define GB_SJ_KEY_MAX 256 /* a decoded key longer than this matches no name */
#define GB_SJ_NUL 0x100   /* gb_sj_peek's answer for a NUL byte inside the body */

struct gb_buf;

/* A cursor.  base..end is borrowed from the caller for the scanner's life. */
struct gb_sj {
  const char *base, *p, *end;
  int depth;
  int max_depth; /* GB_SJ_MAX_DEPTH from gb_sj_init; a caller may lower it */
  unsigned char first[GB_SJ_MAX_DEPTH]; /* 1 while no member/element was read at that depth */
  char msg[GB_SJ_MSG_MAX];              /* the first error, "body:L:C: ..." */
  int bad_utf8;                         /* a string held bytes that are not UTF-8 */
  char key[GB_SJ_KEY_MAX];              /* the last key, when it had to be decoded */
};

/* A raw token: a key or a skipped value, [p, p + len) of the body (borrowed). */
struct gb_sj_span {
  const char *p;
  size_t len;
};

/* Starts a cursor at the beginning of buf[0..len). */
void gb_sj_init(struct gb_sj *s, const char *buf, size_t len);

/* The first byte of the next value after white space ('{', '[', '"', 't',
 * 'f', 'n', '-' or a digit; any other byte for a malformed body), 0 at the
 * end of the body, GB_SJ_NUL for a NUL byte. */
int gb_sj_peek(struct gb_sj *s);

/* Skips one value, validating it; its raw text goes to *span (may be NULL).
 * Returns 0 or GC_EINVAL / GC_ELIMIT (too deep) with s->msg set. */
int gb_sj_skip(struct gb_sj *s, struct gb_sj_span *span);

/* Enters an object.  Returns 0, or GC_EINVAL when the next value is not an
 * object ("what" names it in the message, e.g. "task"). */
int gb_sj_object_begin(struct gb_sj *s, const char *what);
/* Reads the next member's key (decoded when it holds escapes or non-ASCII
 * bytes; valid until the next call) and its colon.
 * Returns 1 (the cursor is at the member's value), 0 at the closing brace
 * (consumed), or a GC_E* code. */
int gb_sj_object_next(struct gb_sj *s, struct gb_sj_span *key);
/* Enters an array; then gb_sj_array_next returns 1 when an element follows
 * (the cursor is at it), 0 at the closing bracket (consumed). */
int gb_sj_array_begin(struct gb_sj *s, const char *what);
int gb_sj_array_next(struct gb_sj *s);

/* 1 when the next value is null (consumed), else 0. */
int gb_sj_null(struct gb_sj *s);
/* Reads a string value into out (NUL-terminated, decoded as Go does:
 * escapes, and U+FFFD for each byte that is not UTF-8); null reads as "".
 * GC_EINVAL when it is another type ("what" in the message), GC_ELIMIT
 * when it does not fit in size bytes or holds a NUL. */
int gb_sj_string(struct gb_sj *s, const char *what, char *out, size_t size);
/* Reads an integer literal (no fraction, no exponent, as Go's ParseInt;
 * null reads as 0) within [min, max], checked on the text. */
int gb_sj_int_range(struct gb_sj *s, const char *what, int64_t min, int64_t max, int64_t *out);
/* gb_sj_int_range over the whole int64 range. */
int gb_sj_int(struct gb_sj *s, const char *what, int64_t *out);
/* Reads a number (or null as 0) as a double; beyond float64's range is
 * refused, as Go refuses it. */
int gb_sj_double(struct gb_sj *s, const char *what, double *out);
/* Fails unless only white space remains. */
int gb_sj_finish(struct gb_sj *s);

/* 1 when key (a decoded key from gb_sj_object_next) matches the ASCII
 * field name as Go's decoder would: exactly, or equal under Go's folding
 * of field names (ASCII case, and U+017F, U+212A, U+0130, U+0131 as S, K,
 * I, I). */
int gb_sj_key_is(const struct gb_sj_span *key, const char *name);

/* Appends a span of a body to out; when the body held bytes that are not
 * UTF-8 (bad_utf8: the scanner's flag), each is written as U+FFFD (never
 * echoed).  Returns gb_buf's result. */
int gb_sj_add_span(struct gb_buf *out, int bad_utf8, const struct gb_sj_span *span);

/* Records an error at the cursor ("body:L:C: " + fmt) unless one is set.
 * Returns GC_EINVAL. */
int gb_sj_fail(struct gb_sj *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
