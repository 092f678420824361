/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_options: the sched.* keys of serve's configuration: the
 * scheduler endpoints' own server (address, TLS, client CA, threads,
 * connection limits, header timeout), the URL prefixes of the two
 * protocols and the body caps, with their table (base/gb_opt.h) and rules.
 * serve (cli/gb_serve_sched) turns them into a gb_sched_config and a
 * gb_http_config.  Plain data: strings are owned by the loader
 * (doc/gb_options).
 */
#ifndef GB_SCHED_OPTIONS_H
#define GB_SCHED_OPTIONS_H

#include "gb_opt.h"

/* "" address: the endpoints are off (docs/scheduler-integration.md). */
struct gb_sched_options {
  const char *address;
  const char *tls_cert;
  const char *tls_key;
  const char *client_ca; /* PEM CA: only clients with a certificate it verifies are served */
  const char *volcano_prefix;
  const char *kube_prefix;
  int max_body;        /* bytes: predicate, allocate, filter, kube prioritize */
  int max_list_body;   /* bytes: Volcano prioritize and jobEnqueueable */
  int max_session_mib; /* MiB: onSessionOpen, read and dropped */
  int threads;
  int max_connections;
  int max_per_ip; /* 0: no per-address cap */
  double header_timeout_s;
};
extern const struct gb_opt_table gb_sched_options_table;

#endif
