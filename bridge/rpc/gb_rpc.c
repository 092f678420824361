/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc: status names and the GC -> gRPC status map (see the header).
 */
#include "gb_rpc.h"

const char *gb_rpc_code_name(int code) {
  static const char *const names[] = {
      "OK",        "CANCELLED",         "UNKNOWN",        "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
      "UNIMPLEMENTED", "INTERNAL",     "UNAVAILABLE",    "DATA_LOSS",
      "UNAUTHENTICATED"};
  if (code < 0 || code >= (int)(sizeof(names) / sizeof(names[0])))
    return "UNKNOWN_CODE";
  return names[code];
}

enum gb_rpc_code gb_rpc_code_of(int rc, enum gb_rpc_code other) {
  switch (rc) {
  case GC_ENOMEM: return GB_RPC_RESOURCE_EXHAUSTED;
  case GC_ENOTFOUND: return GB_RPC_NOT_FOUND;
  default: return other;
  }
}
