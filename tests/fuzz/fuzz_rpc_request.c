/* SPDX-License-Identifier: Apache-2.0
 *
 * fuzz_rpc_request: arbitrary request bytes through the gRPC service's
 * decode -> handler -> encode path (gb_rpc_server_invoke, no network).  The
 * first input byte picks the method; the rest is the request message.  Any
 * input must end with a status, never a crash, hang or leak.  The service
 * keeps its state (live snapshot, caches) across inputs, as a server does.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gb_rpc_server.h"
#include "gb_rpc_server_test.h"
#include "gb_rpc_service.h"

static const char *const methods[] = {
    "/gangbridge.v1.GangCalculator/Calculate",
    "/gangbridge.v1.PlacementEvaluator/Evaluate",
    "/gangbridge.v1.PlacementEvaluator/ReplaceSnapshot",
    "/gangbridge.v1.PlacementEvaluator/UpdateNodes",
    "/gangbridge.v1.PlacementEvaluator/GetSnapshotStatus",
    "/grpc.health.v1.Health/Check",
    "/grpc.health.v1.Health/Watch",
};

static struct gb_rpc_server *srv;
static struct gb_rpc_service *svc;

static void teardown(void) {
  gb_rpc_server_free(srv);
  gb_rpc_service_free(svc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!srv) {
    struct gb_rpc_config cfg;
    gb_rpc_config_init(&cfg);
    cfg.addr = "127.0.0.1:0"; /* never bound: invoke needs no network */
    cfg.max_message_bytes = 1 << 20;
    struct gc_diags d;
    gc_diags_init(&d);
    svc = gb_rpc_service_new();
    if (!svc || gb_rpc_server_new(&cfg, &srv, &d) || gb_rpc_service_register(svc, srv))
      abort();
    gb_rpc_service_allow_writes(svc, 1);
    gc_diags_destroy(&d);
    atexit(teardown);
  }
  if (size < 1)
    return 0;
  const char *method = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
  void *out = NULL;
  size_t out_len = 0;
  int code = 0;
  char msg[256];
  if (gb_rpc_server_invoke(srv, method, data + 1, size - 1, &out, &out_len, &code, msg,
                           sizeof(msg)) == 0 &&
      code == GB_RPC_OK && !out)
    abort(); /* an OK call always has a reply */
  free(out);
  return 0;
}
