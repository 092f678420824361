/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve_config: the configuration of `gangbridge serve`, stitched from
 * the layers' own options.  Every layer owns its options struct, defaults
 * and key table (log.*: base/gb_log; kube.*, leaderElection.*, events.*:
 * kube/gb_kube_options; grpc.*: rpc/gb_rpc_options; http.*:
 * http/gb_http_options; webhook.*, scheduling.*, selection.*, podGroups.*,
 * controller.*, timeouts.default/max, topology.*: controller/gb_config;
 * sched.*: sched/gb_sched_options; placement.*: placement/
 * gb_placement_options and model/gb_plan_options; the tracker's timeouts.*:
 * timeouts/gb_timeouts_options); this module lists them once, in the order
 * the configuration is printed, and hands them to the generic loader
 * (doc/gb_options), which applies the defaults and reads the file.  It also
 * parses serve's flags: --config FILE is read first wherever it appears,
 * then every other flag in order (--set KEY=VALUE sets any key, the common
 * keys have their own flags).  Not thread-safe: filled by main's thread,
 * then only read.
 */
#ifndef GB_SERVE_CONFIG_H
#define GB_SERVE_CONFIG_H

#include <stdio.h>

#include "gb_config.h"
#include "gb_http_options.h"
#include "gb_kube_options.h"
#include "gb_log.h"
#include "gb_options.h"
#include "gb_placement_options.h"
#include "gb_plan_options.h"
#include "gb_rpc_options.h"
#include "gb_sched_options.h"
#include "gb_timeouts_options.h"

#define GB_SERVE_CONFIG_PARTS 12

struct gb_serve_config {
  struct gb_options opts; /* the loader over parts; owns every string below */
  struct gb_options_part parts[GB_SERVE_CONFIG_PARTS];
  struct gb_kube_options kube;
  struct gb_log_options log;
  struct gb_rpc_options grpc;
  struct gb_http_options http;
  struct gb_webhook_options webhook;
  struct gb_sched_options sched;
  struct gb_config controller;
  struct gb_events_options events;
  struct gb_leader_options leader;
  struct gb_placement_options placement;
  struct gb_plan_options plan;
  struct gb_timeouts_options timeouts;
};

/* Initialises c (which must not move until gb_serve_config_destroy) with
 * every default.  Returns 0, GC_ENOMEM or GC_EUSAGE (a table is wrong: the
 * message in d).  Free with gb_serve_config_destroy, also after a failure. */
int gb_serve_config_init(struct gb_serve_config *c, struct gc_diags *d);
void gb_serve_config_destroy(struct gb_serve_config *c);

/* Runs every layer's check (messages carry where the key was set).
 * Returns 0, GC_EINVAL or GC_ENOMEM. */
int gb_serve_config_validate(struct gb_serve_config *c, struct gc_diags *d);

/* Parses serve's flags (argv[0] is "serve").  Returns 0, 1 for --help (the
 * flags printed to out; the caller adds its own and the keys), 2 for
 * --print-config (requested: the caller prints after validation), 3 for
 * --print-keys (printed to out), or GC_EUSAGE / GC_EINVAL / GC_ENOMEM
 * (messages in d). */
int gb_serve_config_parse_args(struct gb_serve_config *c, int argc, char **argv, FILE *out,
                               struct gc_diags *d);

/* Writes the effective configuration as YAML (every key). */
void gb_serve_config_write(const struct gb_serve_config *c, FILE *f);

/* Writes every key with its type, default, flag and help, layer by layer. */
void gb_serve_config_write_help(const struct gb_serve_config *c, FILE *f);

#endif
