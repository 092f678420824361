/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_rpc: what both ends of gangbridge's gRPC share, so that the client and
 * the CLI need not include the server's header: the status codes and their
 * names, the service names, the default message cap, and the ONE map from a
 * GC_E* code to a gRPC status that every service handler uses.  No gRPC type
 * crosses this header.
 */
#ifndef GB_RPC_H
#define GB_RPC_H

#include <stddef.h>

#include "gc_diag.h"

/* gRPC status codes (same numbers as grpc/status.h). */
enum gb_rpc_code {
  GB_RPC_OK = 0,
  GB_RPC_CANCELLED = 1,
  GB_RPC_UNKNOWN = 2,
  GB_RPC_INVALID_ARGUMENT = 3,
  GB_RPC_DEADLINE_EXCEEDED = 4,
  GB_RPC_NOT_FOUND = 5,
  GB_RPC_ALREADY_EXISTS = 6,
  GB_RPC_PERMISSION_DENIED = 7,
  GB_RPC_RESOURCE_EXHAUSTED = 8,
  GB_RPC_FAILED_PRECONDITION = 9,
  GB_RPC_ABORTED = 10,
  GB_RPC_OUT_OF_RANGE = 11,
  GB_RPC_UNIMPLEMENTED = 12,
  GB_RPC_INTERNAL = 13,
  GB_RPC_UNAVAILABLE = 14,
  GB_RPC_DATA_LOSS = 15,
  GB_RPC_UNAUTHENTICATED = 16
};

/* "OK", "INVALID_ARGUMENT", ...; "CODE_<n>" spelled statically is not
 * possible, so unknown numbers give "UNKNOWN_CODE". */
const char *gb_rpc_code_name(int code);

/* Receive and send cap per message on both ends unless configured. */
#define GB_RPC_DEFAULT_MAX_MESSAGE ((size_t)32 << 20) /* 32 MiB */

/* Fully-qualified gRPC service names. */
#define GB_RPC_SERVICE_CALCULATOR "gangbridge.v1.GangCalculator"
#define GB_RPC_SERVICE_PLACEMENT "gangbridge.v1.PlacementEvaluator"
#define GB_RPC_SERVICE_HEALTH "grpc.health.v1.Health"

/* The status for a call that failed with `rc` (a GC_E* code, or 0 when only
 * diagnostics failed): GC_ENOMEM is RESOURCE_EXHAUSTED and GC_ENOTFOUND is
 * NOT_FOUND wherever they arise; every other code, and 0, is `other`, which
 * says whose fault the rest is: INVALID_ARGUMENT where the request is being
 * read or checked, INTERNAL where gangbridge builds its own reply. */
enum gb_rpc_code gb_rpc_code_of(int rc, enum gb_rpc_code other);

#endif
