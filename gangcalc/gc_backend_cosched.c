/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend_cosched: the scheduler-plugins coscheduling plugin of
 * kube-scheduler and its scheduling.x-k8s.io/v1alpha1 PodGroup (older
 * releases: scheduling.sigs.k8s.io, read in dumps only).  Pods join by the
 * label scheduling.x-k8s.io/pod-group (older: pod-group.scheduling.sigs.
 * k8s.io); the PodGroup carries the gang's summed requests and the timeout
 * as spec.scheduleTimeoutSeconds (the plugin's default 60 s; kube-scheduler
 * caps every Permit wait at 15 minutes), but no queue, priority class or
 * network topology.  It is Running or Finished once scheduled, or Failed.
 * kube-scheduler calls gangbridge through its HTTP extender
 * (bridge/sched/gb_sched_kube).
 */
#include "gc_backend.h"
#include "gc_gang.h"
#include "gc_render_int.h"

static int render_spec(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out) {
  struct gc_value *spec = gc_rv_map(a, 3);
  struct gc_value *minres = gc_reslist_to_value(a, &g->min_resources);
  if (!spec || !minres)
    return GC_ENOMEM;
  int64_t t = g->has_timeout ? g->schedule_timeout_seconds : g->backend->timeout.default_seconds;
  if (GC_RV_PUT(spec, "minMember", gc_rv_int(a, g->min_member)) ||
      GC_RV_PUT(spec, "minResources", minres) ||
      GC_RV_PUT(spec, "scheduleTimeoutSeconds", gc_rv_int(a, t)))
    return GC_ENOMEM;
  *out = spec;
  return GC_OK;
}

const struct gc_backend gc_backend_cosched = {
    .name = "coscheduling",
    .short_name = "cosched.",
    .display = "coscheduling",
    .install = "the scheduler-plugins coscheduling CRD",
    .proto = 2, /* BACKEND_COSCHEDULING */
    .group = "scheduling.x-k8s.io",
    .version = "v1alpha1",
    .kind = "PodGroup",
    .resource = "podgroups",
    .api_version = "scheduling.x-k8s.io/v1alpha1",
    .legacy_groups = {"scheduling.sigs.k8s.io", NULL},
    .is_crd = 1,
    .in_auto = 1,
    .scheduler_name = "scheduler-plugins-scheduler",
    .extender = "kube",
    .joins = {{GC_JOIN_LABEL, "scheduling.x-k8s.io/pod-group", GC_JOIN_GROUP, 0},
              {GC_JOIN_LABEL, "pod-group.scheduling.sigs.k8s.io", GC_JOIN_GROUP, 1}},
    .n_joins = 2,
    .caps = GC_BCAP_MIN_RESOURCES,
    .min_member_field = "minMember",
    .timeout =
        {
            .annotations = {NULL},
            .spec_seconds = "scheduleTimeoutSeconds",
            .default_seconds = 60,
            .max_seconds = 900,
            .needs = NULL,
            .max_why = "kube-scheduler caps Permit waits at 15 minutes",
            .max_limit = "kube-scheduler's 15m Permit limit",
            .max_rule = "kube-scheduler's Permit limit",
        },
    .status =
        {
            .started_phases = {"Running", "Finished", NULL},
            .failed_phase = "Failed",
            .scheduled_condition = NULL,
            .unschedulable_condition = NULL,
            .waiting_phase = NULL,
            .waiting_note = NULL,
        },
    .queue = {.key = NULL, .key_at = GC_JOIN_NONE},
    .runtime_policy = "coscheduling",
    .runtime_timeout = "scheduleTimeoutSeconds",
    .runtime_topology = NULL,
    .render_spec = render_spec,
};
