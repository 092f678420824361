/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_file: the one bounded whole-file reader of the bridge, for the small
 * files it reads at start or on refresh (TLS certificates and keys, the
 * kubeconfig, the service-account token and namespace).  It owns the limit
 * check and the messages and codes for every way reading can fail, so that
 * a missing, unreadable, oversized, empty or binary file is reported the
 * same way whichever feature reads it.  It depends only on libc/POSIX and
 * gangcalc's gc_diag.
 */
#ifndef GB_FILE_H
#define GB_FILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "gc_diag.h"

/* The largest limit a caller may pass (1 GiB): a guard against passing a
 * length that is not a limit at all. */
#define GB_FILE_MAX_LIMIT ((size_t)1 << 30)

/* Flags for gb_file_read. */
#define GB_FILE_NONEMPTY 1u /* an empty file is an error */
#define GB_FILE_TEXT 2u     /* a NUL byte is an error (PEM, tokens) */

/* Reads the whole file at path (borrowed) into a malloc'd buffer *out
 * (caller frees; NUL-terminated beyond *out_len).  out_len and st_out (the
 * file's fstat) may be NULL.  At most max bytes are accepted (1 ..
 * GB_FILE_MAX_LIMIT).  Returns 0 or, with a message "path: ..." added to d:
 *   GC_ENOTFOUND  the file does not exist ("cannot open: <reason>");
 *   GC_EIO        it cannot be opened, examined or read;
 *   GC_ELIMIT     it is larger than max ("larger than the limit of N bytes");
 *   GC_EINVAL     it breaks a flag ("empty file", "not a text file");
 *   GC_ENOMEM     out of memory (no message);
 *   GC_EUSAGE     max is 0 or above GB_FILE_MAX_LIMIT (no message).
 * On failure *out is NULL and *out_len 0. */
int gb_file_read(const char *path, size_t max, unsigned flags, char **out, size_t *out_len,
                 struct stat *st_out, struct gc_diags *d);

#endif
