/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placement_options: the placement controller's keys in serve's
 * configuration (placement.enabled, placement.strayGateGrace,
 * placement.maxInflightPatches, placement.releaseQPS, placement.releaseBurst,
 * placement.debugAddress), with their table
 * (base/gb_opt.h) and rules.  The plan's placement.* keys are
 * model/gb_plan_options.  serve turns these into gb_placer_opts and
 * gb_gatesweep_opts and serves /debug/placement on its own address.  Plain
 * data: strings are owned by the loader (doc/gb_options).
 */
#ifndef GB_PLACEMENT_OPTIONS_H
#define GB_PLACEMENT_OPTIONS_H

#include "gb_opt.h"

struct gb_placement_options {
  int enabled;
  double stray_grace_s; /* a gate gangbridge does not hold goes after this */
  int max_inflight;     /* release PATCHes in flight at once */
  /* The release client's token bucket (its own, apart from kube.qps and
   * kube.burst): requests per second (-1: unlimited, never 0) and size. */
  double release_qps;
  int release_burst;
  /* /debug/placement's own HTTP server ("": none); never the probes' port:
   * it lists every tenant's gangs. */
  const char *debug_address;
};
extern const struct gb_opt_table gb_placement_options_table;

#endif
