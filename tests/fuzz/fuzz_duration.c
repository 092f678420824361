/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for gc_duration and the timeout policy parser.  The
 * input is one duration text.  Properties checked:
 *   - parsing never crashes and its reason is always a terminated string;
 *   - a value that is a whole, non-negative number of seconds formats as
 *     Go's Duration.String() does, and that text parses back to the same
 *     nanoseconds;
 *   - gc_policy_timeout_parse accepts exactly the parsed values in
 *     (0, GC_TIMEOUT_MAX_SECONDS] seconds (rounded up), and otherwise
 *     leaves a terminated message.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; run fuzz/fuzz_duration.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc_diag.h"
#include "gc_duration.h"
#include "gc_policy.h"

#define NS 1000000000LL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  char why[128], msg[512];
  int64_t ns = 0, secs = 0;
  memset(why, 'x', sizeof(why));
  int rc = gc_duration_parse(s, size, &ns, why, sizeof(why));
  if (!memchr(why, '\0', sizeof(why)))
    abort();
  int prc = gc_policy_timeout_parse(s, size, &secs, msg, sizeof(msg));
  if (rc == 0) {
    int64_t want = ns > 0 ? ns / NS + (ns % NS != 0) : 0;
    if ((ns > 0 && want <= GC_TIMEOUT_MAX_SECONDS) != (prc == 0))
      abort();
    if (prc == 0 && secs != want)
      abort();
    if (ns >= 0 && ns % NS == 0) {
      char buf[GC_DURATION_BUFSZ];
      int64_t back = -1;
      if (gc_duration_format_seconds(ns / NS, buf, sizeof(buf)) ||
          gc_duration_parse(buf, strlen(buf), &back, NULL, 0) || back != ns)
        abort();
    }
  } else if (prc == 0) {
    abort();
  }
  if (prc && !memchr(msg, '\0', sizeof(msg)))
    abort();
  return 0;
}
