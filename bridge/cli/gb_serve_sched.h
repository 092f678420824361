/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve_sched: serve's wiring of the scheduler endpoints (bridge/sched):
 * the endpoint on its own port from the sched.* keys, its backend on the
 * shared plan and live model, and the PodGroup Events of jobEnqueueable.
 * Events are written by one worker thread from a bounded queue, so an
 * answer to Volcano never waits on the API server; an Event is queued only
 * when a gang's verdict changes (Warning GangNotEnqueueable on a Reject,
 * Normal GangEnqueueable on the Permit that follows), at most
 * GB_SERVE_SCHED_QUEUE waiting (more are dropped and counted in the log).
 * Without a model and plan (placement off) the endpoints still answer, with
 * no opinion: every predicate passes and jobEnqueueable abstains.  With
 * leader election only the leader answers; a standby answers 503.
 */
#ifndef GB_SERVE_SCHED_H
#define GB_SERVE_SCHED_H

#include "gb_kube_client.h"
#include "gb_metrics.h"
#include "gb_model.h"
#include "gb_plan.h"
#include "gb_sched_plan.h"
#include "gb_serve_config.h"
#include "gc_diag.h"

#define GB_SERVE_SCHED_QUEUE 256

struct gb_serve_sched;

/* Starts the endpoints when cfg->sched.address is set (else *out = NULL and
 * 0).  model, plan, record_ctx, client, reg, http_requests and leader_ctx
 * are borrowed until gb_serve_sched_free; model/plan may be NULL (no
 * opinion), record NULL (jobEnqueueable's decisions are not recorded),
 * client NULL (no Events), is_leader NULL (always answers) or as
 * gb_sched_config.is_leader (only the leader answers, once caught up; else
 * 503).  Returns 0 or a GC_E* code with messages in d. */
int gb_serve_sched_start(const struct gb_serve_config *cfg, struct gb_model *model,
                         struct gb_plan *plan, gb_sched_record_fn record, void *record_ctx,
                         struct gb_kube_client *client, struct gb_metrics *reg,
                         struct gb_metric *http_requests, int (*is_leader)(void *),
                         void *leader_ctx, struct gb_serve_sched **out, struct gc_diags *d);
/* Stops the server and the event worker and frees everything.  Accepts
 * NULL. */
void gb_serve_sched_free(struct gb_serve_sched *s);

#endif
