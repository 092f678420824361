/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tls_files: the bounded PEM file reader shared by the gRPC server and
 * client.
 */
#include "gb_tls_files.h"

#include "gb_file.h"

int gb_tls_files_pem_read(const char *path, char **out, struct gc_diags *diags) {
  return gb_file_read(path, GB_TLS_PEM_MAX, GB_FILE_NONEMPTY | GB_FILE_TEXT, out, NULL, NULL,
                      diags);
}
