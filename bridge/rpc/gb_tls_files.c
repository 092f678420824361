/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tls_files: the bounded PEM file reader shared by the gRPC server and
 * client.
 */
#include "gb_tls_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gb_tls_pem_read(const char *path, char **out, struct gc_diags *diags) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    gc_diags_addf(diags, "%s: %s", path, strerror(errno));
    return GC_EIO;
  }
  char *buf = malloc(GB_TLS_PEM_MAX + 1);
  if (!buf) {
    fclose(f);
    return GC_ENOMEM;
  }
  size_t n = fread(buf, 1, GB_TLS_PEM_MAX + 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad || n == 0 || n > GB_TLS_PEM_MAX) {
    gc_diags_addf(diags, "%s: %s", path,
                  bad ? "read error" : n ? "larger than 1 MiB" : "empty file");
    free(buf);
    return GC_EIO;
  }
  buf[n] = '\0';
  *out = buf;
  return 0;
}
