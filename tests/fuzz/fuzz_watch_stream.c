/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the watch-stream parser and the Status parser.  The
 * first byte picks a chunk size (1..16); the rest is fed to a parser with a
 * small event cap (4 KiB) and depth (16) in chunks of that size, then fed
 * again whole to a second parser.  Properties checked:
 *   - feeding never crashes, leaks or hangs;
 *   - the chunking does not matter: both runs deliver the same sequence of
 *     event types and resourceVersions and end with the same status class
 *     (ok / error);
 *   - every delivered event has an object that is a JSON object;
 *   - gb_kube_client_status_parse on the raw bytes always leaves a NUL-terminated
 *     message.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; run fuzz/fuzz_watch_stream
 * with tests/fuzz/corpus/watch_stream as the seed corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_kube_watch.h"
#include "gb_kube_watch_test.h"
#include "gb_kube_client_test.h"

struct trace {
  char log[8192];
  size_t len;
};

static int on_ev(void *arg, const struct gb_watch_event *ev) {
  struct trace *t = arg;
  if (!json_object_is_type(ev->object, json_type_object))
    abort();
  int n = snprintf(t->log + t->len, sizeof(t->log) - t->len, "%d:%.40s;", (int)ev->type,
                   ev->rv ? ev->rv : "-");
  if (n > 0 && (size_t)n < sizeof(t->log) - t->len)
    t->len += (size_t)n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536)
    return 0;
  size_t chunk = (size_t)(data[0] % 16) + 1;
  const char *p = (const char *)data + 1;
  size_t len = size - 1;

  struct gb_watch_parser *a = gb_watch_parser_new(4096, 16);
  struct gb_watch_parser *b = gb_watch_parser_new(4096, 16);
  if (!a || !b)
    abort();
  struct trace ta = {{0}, 0}, tb = {{0}, 0};
  struct gc_diags d;
  gc_diags_init(&d);
  int ra = 0;
  for (size_t off = 0; off < len && ra == 0; off += chunk)
    ra = gb_watch_parser_feed(a, p + off, len - off < chunk ? len - off : chunk, on_ev, &ta, &d);
  int rb = gb_watch_parser_feed(b, p, len, on_ev, &tb, &d);
  if ((ra == 0) != (rb == 0))
    abort();
  if (ra == 0 && strcmp(ta.log, tb.log) != 0)
    abort();
  if (ra == 0 && gb_watch_parser_pending(a) != gb_watch_parser_pending(b))
    abort();
  gb_watch_parser_free(a);
  gb_watch_parser_free(b);
  gc_diags_destroy(&d);

  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  gb_kube_client_status_parse(p, len, 500, &e);
  if (strnlen(e.message, sizeof(e.message)) >= sizeof(e.message))
    abort();
  return 0;
}
