/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placement_options: the placer's placement.* keys (see the header).
 */
#include "gb_addr.h"
#include "gb_placement_options.h"

#define S struct gb_placement_options
static const struct gb_opt keys[] = {
    GB_KEY_BOOL(S, "placement.enabled", enabled, "true", NULL,
                "hold gangs with a topology policy behind the gangbridge.io/placement gate and "
                "release them into the domain chosen"),
    GB_KEY_DUR(S, "placement.strayGateGrace", stray_grace_s, 1, 86400, "30s", NULL,
               "a pod with gangbridge's gate that gangbridge does not place loses it at this age"),
    GB_KEY_INT(S, "placement.maxInflightPatches", max_inflight, 1, 1024, "32", NULL,
               "release PATCHes in flight at once"),
    GB_KEY_NUM(S, "placement.releaseQPS", release_qps, -1, 100000, "1000", NULL,
               "the release PATCHes' own request rate (token bucket; -1: unlimited), apart "
               "from kube.qps"),
    GB_KEY_INT(S, "placement.releaseBurst", release_burst, 1, 100000, "1024", NULL,
               "the release PATCHes' token bucket size: a gang of this many pods is released "
               "without waiting for tokens"),
    GB_KEY_STR(S, "placement.debugAddress", debug_address, "", NULL,
               "HOST:PORT of /debug/placement (keep it on loopback); empty: not served"),
};

static int check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_placement_options *o = opts;
  (void)a;
  if (o->release_qps == 0) {
    gc_diags_addf(d, "placement.releaseQPS: must not be 0 (-1 is unlimited)");
    return GC_EINVAL;
  }
  return gb_addr_check("placement.debugAddress", o->debug_address, d);
}

const struct gb_opt_table gb_placement_options_table = GB_OPT_TABLE(
    "placement", "Placement controller", S, keys, check);
