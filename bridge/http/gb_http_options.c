/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http_options: the http.* keys (see the header).
 */
#include "gb_http_options.h"
#include "gb_addr.h"

#define S struct gb_http_options
static const struct gb_opt keys[] = {
    GB_KEY_STR(S, "http.address", address, "0.0.0.0:8080", "http-addr",
               "probes and metrics HOST:PORT (numeric host; [v6]:port for IPv6)"),
    GB_KEY_INT(S, "http.maxConnections", max_connections, 1, 100000, "64", NULL,
               "connections the probes and metrics server holds at once"),
    GB_KEY_INT(S, "http.maxConnectionsPerIP", max_per_ip, 0, 100000, "16", NULL,
               "connections from one client address; 0: no cap"),
    GB_KEY_DUR(S, "http.headerTimeout", header_timeout_s, 1, 300, "5s", NULL,
               "time to the whole request line and headers"),
};

static int check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_http_options *o = opts;
  (void)a;
  if (!*o->address) {
    gc_diags_addf(d, "http.address: must be set (probes and metrics)");
    return GC_EINVAL;
  }
  return gb_addr_check("http.address", o->address, d);
}

const struct gb_opt_table gb_http_options_table = GB_OPT_TABLE("http", "Probes and metrics server",
                                                               S, keys, check);
