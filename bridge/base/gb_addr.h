/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_addr: listen addresses as serve's configuration writes them,
 * "HOST:PORT" with a numeric host, or "[V6]:PORT" for IPv6 (a bare IPv6
 * address needs brackets).  It owns splitting one into host and port, and
 * the check every *.address key runs ("" means the server is off).  Pure
 * and thread-safe.  Moved here from controller/gb_config so that every
 * layer with a listener (rpc, http, controller, sched, placement) checks its
 * own address the same way.
 */
#ifndef GB_ADDR_H
#define GB_ADDR_H

#include <stddef.h>

#include "gc_diag.h"

/* Splits addr into host (copied into host, cap bytes) and port (0 to
 * 65535).  Returns 0 or GC_EINVAL. */
int gb_addr_split(const char *addr, char *host, size_t cap, unsigned *port);

/* The check of key's value addr: "" passes (off); else it must split.
 * Returns 0, or GC_EINVAL with "KEY: \"ADDR\" is not HOST:PORT ..." in d. */
int gb_addr_check(const char *key, const char *addr, struct gc_diags *d);

#endif
