/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts_options: the tracker's timeouts.* keys (see the header).
 */
#include <string.h>

#include "gb_timeouts_options.h"

static const struct gb_opt_enum actions[] = {{"none", GB_TIMEOUT_NONE, 0},
                                             {"event", GB_TIMEOUT_EVENT, 0},
                                             {"requeue", GB_TIMEOUT_REQUEUE, 0},
                                             {NULL, 0, 0}};

#define S struct gb_timeouts_options
static const struct gb_opt keys[] = {
    GB_KEY_ENUM(S, "timeouts.action", action, actions, "event", "timeout-action",
                "at a gang's timeout: none, event (a GangTimeout Warning) or requeue (suspend "
                "the TrainJob, resume it after a backoff)"),
    GB_KEY_DUR(S, "timeouts.requeue.baseDelay", requeue_base_delay_s, 0.001, 86400, "60s", NULL,
               "first requeue backoff; doubles per attempt"),
    GB_KEY_DUR(S, "timeouts.requeue.maxDelay", requeue_max_delay_s, 0.001, 604800, "3600s", NULL,
               "cap of the backoff"),
    GB_KEY_INT(S, "timeouts.requeue.maxAttempts", requeue_max_attempts, 0, 100, "3", NULL,
               "requeues before gangbridge gives up and leaves the TrainJob suspended"),
    GB_KEY_INT(S, "timeouts.maxQueues", max_queues, 1, 1000, "50", NULL,
               "Volcano queues labelled by name in the timeout metrics; the rest fold into other"),
    GB_KEY_INT(S, "timeouts.maxGangs", max_gangs, 1, 10000000, "1000000", NULL,
               "gangs the timeout tracker follows at most"),
    GB_KEY_STR(S, "timeouts.until", until, "scheduled", NULL,
               "what ends a gang's wait: scheduled (minMember pods scheduled) or ready"),
};

static int check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  struct gb_timeouts_options *o = opts;
  (void)a;
  o->until_ready = !strcmp(o->until, "ready");
  if (!o->until_ready && strcmp(o->until, "scheduled") != 0) {
    gc_diags_addf(d, "timeouts.until: must be scheduled or ready, not \"%.64s\"", o->until);
    return GC_EINVAL;
  }
  return 0;
}

const struct gb_opt_table gb_timeouts_options_table = GB_OPT_TABLE(
    "timeouts", "Gang timeout tracker", S, keys, check);
