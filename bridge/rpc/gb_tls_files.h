/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tls_files: reading the PEM files (certificate, key, CA bundle) that the
 * gRPC server and client hand to gRPC's TLS credentials.  One bounded reader
 * so both sides give the same errors for a missing, empty or oversized file.
 */
#ifndef GB_TLS_FILES_H
#define GB_TLS_FILES_H

#include "gc_diag.h"

/* The largest PEM file accepted, in bytes. */
#define GB_TLS_PEM_MAX (1 << 20)

/* Reads the whole file at path (at most GB_TLS_PEM_MAX bytes, not empty, no
 * NUL byte) into a NUL-terminated string; caller frees *out with free().
 * Returns 0 or gb_file_read's codes (GC_ENOTFOUND, GC_EIO, GC_ELIMIT,
 * GC_EINVAL, GC_ENOMEM), the message naming the path.  *out is NULL on
 * failure. */
int gb_tls_files_pem_read(const char *path, char **out, struct gc_diags *diags);

#endif
