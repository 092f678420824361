/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts_options: the timeout tracker's keys in serve's configuration
 * (timeouts.action, timeouts.requeue.*, timeouts.maxQueues,
 * timeouts.maxGangs, timeouts.until), with their table (base/gb_opt.h) and
 * rules.  The policy keys of the same section (timeouts.default,
 * timeouts.max) are the controller's (controller/gb_config); the loader
 * puts both under one "timeouts:" section.  Plain data: strings are owned
 * by the loader (doc/gb_options).
 */
#ifndef GB_TIMEOUTS_OPTIONS_H
#define GB_TIMEOUTS_OPTIONS_H

#include "gb_opt.h"

/* timeouts.action: what happens when a gang's timeout passes. */
enum gb_timeout_action { GB_TIMEOUT_EVENT = 0, GB_TIMEOUT_NONE, GB_TIMEOUT_REQUEUE };

struct gb_timeouts_options {
  enum gb_timeout_action action;
  double requeue_base_delay_s;
  double requeue_max_delay_s;
  int requeue_max_attempts;
  int max_queues;    /* queues labelled by name; the rest fold into "other" */
  int max_gangs;     /* gangs tracked at most */
  const char *until; /* "scheduled" or "ready": what ends a gang's wait */
  int until_ready;   /* until is "ready" (set by the table's check) */
};
extern const struct gb_opt_table gb_timeouts_options_table;

#endif
