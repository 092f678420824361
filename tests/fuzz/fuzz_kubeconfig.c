/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the kubeconfig loader (the manifest loader, gb_docset,
 * under the kubeconfig's reading).  Arbitrary bytes are loaded as a
 * kubeconfig named "/fuzz/kubeconfig", with the current context and with the
 * context "ctx".  Properties checked:
 *   - loading never crashes, leaks or hangs;
 *   - it succeeds exactly when no error message was recorded, and every
 *     error message names the file;
 *   - on success the server starts with http:// or https:// and has no
 *     trailing slash, the namespace is set, inline data has a length, and a
 *     client certificate always comes with a key.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; run fuzz/fuzz_kubeconfig
 * with tests/fuzz/corpus/kubeconfig as the seed corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gb_kube_config.h"
#include "gb_kube_config_test.h"

static void check(const char *buf, size_t len, const char *ctx) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_config *c = NULL;
  int rc = gb_kube_config_load_buffer("/fuzz/kubeconfig", buf, len, ctx, &c, &d);
  if ((rc == 0) != (d.errors == 0) || (rc == 0) != (c != NULL))
    abort();
  for (size_t i = 0; i < d.n; i++)
    if (!strstr(d.msgs[i], "/fuzz/kubeconfig"))
      abort();
  if (c) {
    size_t n = strlen(c->server);
    if ((strncmp(c->server, "http://", 7) && strncmp(c->server, "https://", 8)) ||
        c->server[n - 1] == '/' || !c->namespace || !c->namespace[0])
      abort();
    if ((c->ca_data && !c->ca_len) || (c->cert_data && !c->cert_len) ||
        (c->key_data && !c->key_len))
      abort();
    if (!!(c->cert_file || c->cert_data) != !!(c->key_file || c->key_data))
      abort();
  }
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536)
    return 0;
  check((const char *)data, size, NULL);
  check((const char *)data, size, "ctx");
  return 0;
}
