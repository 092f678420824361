/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_options: the sched.* keys (see the header).
 */
#include <string.h>

#include "gb_addr.h"
#include "gb_sched_options.h"

#define S struct gb_sched_options
static const struct gb_opt keys[] = {
    GB_KEY_STR(S, "sched.address", address, "", "sched-addr",
               "the scheduler endpoints' HOST:PORT; empty: off"),
    GB_KEY_STR(S, "sched.tlsCert", tls_cert, "", NULL,
               "serve HTTPS on that port (with sched.tlsKey; read at start)"),
    GB_KEY_STR(S, "sched.tlsKey", tls_key, "", NULL, "its key"),
    GB_KEY_STR(S, "sched.clientCA", client_ca, "", NULL,
               "PEM CA bundle: only clients with a certificate it verifies are served"),
    GB_KEY_STR(S, "sched.volcanoPrefix", volcano_prefix, "/volcano", NULL,
               "URL prefix of Volcano's extender protocol"),
    GB_KEY_STR(S, "sched.kubePrefix", kube_prefix, "/kube", NULL,
               "URL prefix of kube-scheduler's HTTP extender protocol"),
    GB_KEY_INT(S, "sched.maxBodyBytes", max_body, 65536, 1073741824, "16777216", NULL,
               "body cap of predicate, allocateFunc and deallocateFunc"),
    GB_KEY_INT(S, "sched.maxListBodyBytes", max_list_body, 65536, 2147483647, "268435456", NULL,
               "body cap of Volcano's prioritize and jobEnqueueable and kube-scheduler's filter "
               "and prioritize"),
    GB_KEY_INT(S, "sched.maxSessionBodyMiB", max_session_mib, 1, 1048576, "8192", NULL,
               "cap of an onSessionOpen body (read and dropped)"),
    GB_KEY_INT(S, "sched.threads", threads, 1, 64, "4", NULL, "server threads of the sched port"),
    GB_KEY_INT(S, "sched.maxConnections", max_connections, 1, 100000, "256", NULL,
               "connections the sched server holds at once"),
    GB_KEY_INT(S, "sched.maxConnectionsPerIP", max_per_ip, 0, 100000, "64", NULL,
               "connections from one client address; 0: no cap"),
    GB_KEY_DUR(S, "sched.headerTimeout", header_timeout_s, 1, 300, "10s", NULL,
               "TLS handshake, request line and headers, in total"),
};

static int check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_sched_options *o = opts;
  int rc = gb_addr_check("sched.address", o->address, d);
  (void)a;
  if (!*o->tls_cert != !*o->tls_key) {
    gc_diags_addf(d, "sched.tlsCert and sched.tlsKey go together");
    rc = GC_EINVAL;
  }
  if (*o->client_ca && !*o->tls_cert) {
    gc_diags_addf(d, "sched.clientCA needs sched.tlsCert and sched.tlsKey");
    rc = GC_EINVAL;
  }
  if (o->volcano_prefix[0] != '/' || o->kube_prefix[0] != '/' ||
      !strcmp(o->volcano_prefix, o->kube_prefix)) {
    gc_diags_addf(d, "sched.volcanoPrefix and sched.kubePrefix: must start with '/' and differ");
    rc = GC_EINVAL;
  }
  return rc;
}

const struct gb_opt_table gb_sched_options_table = GB_OPT_TABLE("sched", "Scheduler endpoints", S,
                                                                keys, check);
