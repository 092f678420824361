/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_addr: HOST:PORT listen addresses (see the header).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gb_addr.h"

int gb_addr_split(const char *addr, char *host, size_t cap, unsigned *port) {
  if (!addr || !*addr)
    return GC_EINVAL;
  const char *colon = strrchr(addr, ':');
  if (!colon)
    return GC_EINVAL;
  const char *h = addr;
  size_t hl = (size_t)(colon - addr);
  if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  } else if (memchr(h, ':', hl)) {
    return GC_EINVAL; /* a bare IPv6 address needs brackets */
  }
  if (hl == 0 || hl >= cap)
    return GC_EINVAL;
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (errno || end == colon + 1 || *end || p < 0 || p > 65535)
    return GC_EINVAL;
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = (unsigned)p;
  return 0;
}

int gb_addr_check(const char *key, const char *addr, struct gc_diags *d) {
  char host[128];
  unsigned port;
  if (!addr || !*addr)
    return 0;
  if (gb_addr_split(addr, host, sizeof(host), &port)) {
    gc_diags_addf(d, "%s: \"%.128s\" is not HOST:PORT (numeric host; [V6]:PORT for IPv6)", key,
                  addr);
    return GC_EINVAL;
  }
  return 0;
}
