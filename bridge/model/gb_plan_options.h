/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan_options: the placement plan's keys in serve's configuration
 * (placement.releaseTimeout, placement.starvationGuard,
 * placement.starvationGuardMax, placement.profile), with their table
 * (base/gb_opt.h) and rules.  The placement controller's own placement.*
 * keys are placement/gb_placement_options; the loader puts both under one
 * "placement:" section.  serve turns these into gb_plan_opts (and the
 * placer's release timeout).  Plain data: strings are owned by the loader
 * (doc/gb_options).
 */
#ifndef GB_PLAN_OPTIONS_H
#define GB_PLAN_OPTIONS_H

#include "gb_opt.h"

struct gb_plan_options {
  double release_timeout_s;      /* released pods unscheduled past it: PlacementRaced */
  double starvation_guard_s;     /* a gang waiting longer holds back younger ones */
  double starvation_guard_max_s; /* ... for at most this long */
  const char *profile;           /* "bestfit" or "spread" (checked) */
};
extern const struct gb_opt_table gb_plan_options_table;

#endif
