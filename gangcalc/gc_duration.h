/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_duration: Go duration text, as Volcano and every Kubernetes component
 * read it.  It owns parsing exactly as Go's time.ParseDuration does (an
 * optional sign, then one or more decimal numbers with an optional fraction,
 * each followed by a unit: ns, us, µs, μs, ms, s, m, h; "0" alone is zero;
 * nanosecond arithmetic with Go's overflow rules) and formatting whole
 * seconds as Go's Duration.String() prints them ("1h30m0s").  Pure: no I/O.
 */
#ifndef GC_DURATION_H
#define GC_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Longest unit quoted in an "unknown unit" reason (escaped, then cut): the
 * text itself may be longer, as in Go (leading zeros cost nothing). */
#define GC_DURATION_TEXT_MAX 64

/* Room for any gc_duration_format_seconds result ("2562047788015215h30m7s"). */
#define GC_DURATION_BUFSZ 32

/* Parses s[0..len) as Go's time.ParseDuration.  Returns 0 with *ns set, or
 * GC_EINVAL with the reason Go gives written into why (at most whycap
 * bytes, always terminated): "unknown unit \"x\"", "missing unit", or ""
 * when Go says only "invalid duration" (no digits, overflow, stray bytes).
 * Like Go it takes text of any length (one pass, nothing allocated; the
 * caller's input is what is bounded: an annotation, a config file).  s and
 * why are borrowed. */
int gc_duration_parse(const char *s, size_t len, int64_t *ns, char *why, size_t whycap);

/* gc_duration_parse of the NUL-terminated s, in whole seconds with the
 * magnitude rounded up ("1.5s" is 2, "-1.5s" is -2, "300ms" is 1): a
 * timeout never fires before the time it was given.  Returns 0 with
 * *seconds set, or GC_EINVAL (why as gc_duration_parse; s NULL is ""). */
int gc_duration_parse_seconds(const char *s, int64_t *seconds, char *why, size_t whycap);

/* Writes seconds (>= 0) as Go's Duration.String() prints a whole number of
 * seconds ("0s", "45s", "1m30s", "1h0m0s") into buf.  Returns 0, or
 * GC_EINVAL when seconds is negative, too large for a Go duration, or buf is
 * smaller than needed. */
int gc_duration_format_seconds(int64_t seconds, char *buf, size_t cap);

#endif
