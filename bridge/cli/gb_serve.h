/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve: the wiring of `gangbridge serve`, in the CLI layer because it is
 * the one place that knows every other layer.  gb_cmd_serve.c parses the
 * flags once for both modes (gb_serve_config_parse_args) and then calls
 * gb_serve_controller, or runs the offline gRPC-only server, which builds
 * its gRPC settings with the same gb_rpc_options_apply.  Not thread-safe:
 * called from main's thread only.
 */
#ifndef GB_SERVE_H
#define GB_SERVE_H

#include "gb_serve_config.h"
#include "gc_diag.h"

/* Runs the controller (informers, webhook, probes, metrics, optional gRPC,
 * optional leader election) with a parsed and validated cfg (borrowed) until
 * SIGTERM or SIGINT.  Returns the exit status (GB_EXIT_*). */
int gb_serve_controller(const struct gb_serve_config *cfg);

#endif
