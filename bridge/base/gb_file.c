/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_file: bounded whole-file reading (see gb_file.h).
 */
#include "gb_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks the content against the flags; adds the message. */
static int check_content(const char *path, const char *buf, size_t n, unsigned flags,
                         struct gc_diags *d) {
  if ((flags & GB_FILE_NONEMPTY) && n == 0) {
    gc_diags_addf(d, "%s: empty file", path);
    return GC_EINVAL;
  }
  if ((flags & GB_FILE_TEXT) && memchr(buf, '\0', n)) {
    gc_diags_addf(d, "%s: not a text file (it holds a NUL byte)", path);
    return GC_EINVAL;
  }
  return 0;
}

/* Reads at most max + 1 bytes of f into a new buffer, so that a file over
 * the limit is seen as such without reading it all. */
static int read_bounded(FILE *f, const char *path, size_t max, char **buf, size_t *n,
                        struct gc_diags *d) {
  *buf = malloc(max + 1);
  if (!*buf)
    return GC_ENOMEM;
  *n = fread(*buf, 1, max + 1, f);
  if (ferror(f)) {
    gc_diags_addf(d, "%s: read error: %s", path, strerror(errno));
    return GC_EIO;
  }
  if (*n > max) {
    gc_diags_addf(d, "%s: larger than the limit of %zu bytes", path, max);
    return GC_ELIMIT;
  }
  /* Most files are far below the limit: give the rest back. */
  char *shrunk = realloc(*buf, *n + 1);
  if (shrunk)
    *buf = shrunk;
  (*buf)[*n] = '\0';
  return 0;
}

int gb_file_read(const char *path, size_t max, unsigned flags, char **out, size_t *out_len,
                 struct stat *st_out, struct gc_diags *d) {
  *out = NULL;
  if (out_len)
    *out_len = 0;
  if (max == 0 || max > GB_FILE_MAX_LIMIT)
    return GC_EUSAGE;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int err = errno;
    gc_diags_addf(d, "%s: cannot open: %s", path, strerror(err));
    return err == ENOENT ? GC_ENOTFOUND : GC_EIO;
  }
  char *buf = NULL;
  size_t n = 0;
  int rc = 0;
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    gc_diags_addf(d, "%s: cannot stat: %s", path, strerror(errno));
    rc = GC_EIO;
    goto out;
  }
  rc = read_bounded(f, path, max, &buf, &n, d);
  if (!rc)
    rc = check_content(path, buf, n, flags, d);
  if (rc)
    goto out;
  if (st_out)
    *st_out = st;
  *out = buf;
  buf = NULL;
  if (out_len)
    *out_len = n;
out:
  free(buf);
  fclose(f);
  return rc;
}
