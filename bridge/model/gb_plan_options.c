/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_plan_options: the plan's placement.* keys (see the header).
 */
#include <string.h>

#include "gb_plan_options.h"

#define S struct gb_plan_options
static const struct gb_opt keys[] = {
    GB_KEY_DUR(S, "placement.releaseTimeout", release_timeout_s, 1, 86400, "2m", NULL,
               "a released gang's reservation lasts until its pods bind or this passes"),
    /* At least 1s: gb_plan reads 0 as its default (5m), so a written 0s
     * would silently become 5m. */
    GB_KEY_DUR(S, "placement.starvationGuard", starvation_guard_s, 1, 86400, "5m", NULL,
               "a gang that has waited this long holds back younger gangs that would take "
               "the capacity it could use"),
    GB_KEY_DUR(S, "placement.starvationGuardMax", starvation_guard_max_s, 1, 604800, "30m", NULL,
               "how long a gang may hold others back"),
    GB_KEY_STR(S, "placement.profile", profile, "bestfit", NULL,
               "bestfit (the tightest domain that fits) or spread (the one with the most free)"),
};

static int check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_plan_options *o = opts;
  (void)a;
  if (strcmp(o->profile, "bestfit") && strcmp(o->profile, "spread")) {
    gc_diags_addf(d, "placement.profile: \"%.64s\" is not bestfit or spread", o->profile);
    return GC_EINVAL;
  }
  return 0;
}

const struct gb_opt_table gb_plan_options_table = GB_OPT_TABLE("model", "Placement plan", S, keys,
                                                               check);
