/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_base64: standard base64 (RFC 4648 section 4, "+/" alphabet) both ways.
 * Encoding always pads (admission webhook patches); decoding takes what
 * kubeconfig "*-data" fields hold: padding optional but, when present,
 * exactly completing the last quantum, whitespace between characters
 * ignored, and non-zero leftover bits refused so that one text never decodes
 * like another.  It depends only on libc and gangcalc's gc_diag codes.
 */
#ifndef GB_BASE64_H
#define GB_BASE64_H

#include <stddef.h>

#include "gc_diag.h"

/* The longest input either direction accepts (256 MiB): far above any
 * certificate or patch, and it keeps every size computation in range. */
#define GB_BASE64_MAX_INPUT ((size_t)256 << 20)

/* Encodes data[0..len) (borrowed; NULL allowed when len is 0) into a
 * malloc'd NUL-terminated string *out (caller frees); *out_len (optional,
 * may be NULL) gets its length.  Returns 0, GC_ELIMIT when len is above
 * GB_BASE64_MAX_INPUT, or GC_ENOMEM.  *out is NULL on failure. */
int gb_base64_encode(const void *data, size_t len, char **out, size_t *out_len);

/* Decodes text[0..len) (borrowed) into a malloc'd buffer *out (caller frees;
 * NUL-terminated beyond *out_len so text can be used as a string).  Returns
 * 0, GC_EINVAL when the text is not base64 as described above, GC_ELIMIT
 * when len is above GB_BASE64_MAX_INPUT, or GC_ENOMEM.  *out is NULL and
 * *out_len 0 on failure.  Empty input decodes to an empty buffer. */
int gb_base64_decode(const char *text, size_t len, unsigned char **out, size_t *out_len);

#endif
