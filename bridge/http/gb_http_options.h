/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http_options: the http.* keys of serve's configuration: the server of
 * the probes (/healthz, /livez, /readyz) and /metrics, its address and its
 * limits, with their table (base/gb_opt.h) and rules.  serve turns them
 * into a gb_http_config; /debug/placement's own server takes the header
 * timeout from here too.  Plain data: strings are owned by the loader
 * (doc/gb_options).
 */
#ifndef GB_HTTP_OPTIONS_H
#define GB_HTTP_OPTIONS_H

#include "gb_opt.h"

struct gb_http_options {
  const char *address; /* HOST:PORT; never empty (the kubelet probes it) */
  int max_connections;
  int max_per_ip;          /* 0: no per-address cap */
  double header_timeout_s; /* TLS handshake + headers, in total (whole seconds, rounded up) */
};
extern const struct gb_opt_table gb_http_options_table;

#endif
