/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend_volcano: Volcano (volcano.sh), its scheduling.volcano.sh/v1beta1
 * PodGroup and Queue.  Pods join by the annotation
 * scheduling.k8s.io/group-name; the PodGroup carries the queue, the priority
 * class, the runtime's own network topology and the gang's summed requests;
 * the sla plugin reads a timeout from volcano.sh/sla-waiting-time (else
 * sla-waiting-time), and without one Volcano waits without limit.  The
 * PodGroup is Running or Completed once scheduled and keeps a Scheduled=True
 * condition after its pods are replaced; its Unschedulable condition says
 * why not.  Volcano's scheduler calls gangbridge through its `extender`
 * plugin (bridge/sched/gb_sched_volcano).
 */
#include "gc_backend.h"
#include "gc_gang.h"
#include "gc_render_int.h"

/* Only the runtime's own networkTopology is Volcano's to act on; a policy
 * from gangbridge's annotations or config is gangbridge's placement, and
 * Volcano searching HyperNodes for it as well would undo the point (and a
 * label level means nothing to Volcano). */
static int network_topology(const struct gc_gang *g, struct gc_arena *a, struct gc_value *spec) {
  if (!g->topology.set || !g->topology.in_podgroup)
    return GC_OK;
  struct gc_value *nt = gc_rv_map(a, 2);
  if (!nt)
    return GC_ENOMEM;
  if (g->topology.highest_tier_name) {
    if (GC_RV_PUT(nt, "highestTierName", gc_rv_str(a, g->topology.highest_tier_name)))
      return GC_ENOMEM;
  } else if (GC_RV_PUT(nt, "highestTierAllowed",
                       gc_rv_int(a, g->topology.has_highest_tier ? g->topology.highest_tier : 1))) {
    return GC_ENOMEM;
  }
  if (GC_RV_PUT(nt, "mode", gc_rv_str(a, g->topology.mode ? g->topology.mode : "hard")) ||
      GC_RV_PUT(spec, "networkTopology", nt))
    return GC_ENOMEM;
  return GC_OK;
}

static int render_spec(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out) {
  struct gc_value *spec = gc_rv_map(a, 5);
  struct gc_value *minres = gc_reslist_to_value(a, &g->min_resources);
  if (!spec || !minres)
    return GC_ENOMEM;
  if (GC_RV_PUT(spec, "minMember", gc_rv_int(a, g->min_member)) ||
      GC_RV_PUT(spec, "minResources", minres) || network_topology(g, a, spec))
    return GC_ENOMEM;
  if (g->priority_class && GC_RV_PUT(spec, "priorityClassName", gc_rv_str(a, g->priority_class)))
    return GC_ENOMEM;
  if (g->queue && GC_RV_PUT(spec, "queue", gc_rv_str(a, g->queue)))
    return GC_ENOMEM;
  *out = spec;
  return GC_OK;
}

const struct gc_backend gc_backend_volcano = {
    .name = "volcano",
    .short_name = "volcano",
    .display = "Volcano",
    .install = "Volcano",
    .proto = 1, /* BACKEND_VOLCANO */
    .group = "scheduling.volcano.sh",
    .version = "v1beta1",
    .kind = "PodGroup",
    .resource = "podgroups",
    .api_version = "scheduling.volcano.sh/v1beta1",
    .legacy_groups = {NULL},
    .is_crd = 1,
    .in_auto = 1,
    .scheduler_name = "volcano",
    .extender = "volcano",
    .joins = {{GC_JOIN_ANNOTATION, "scheduling.k8s.io/group-name", GC_JOIN_GROUP, 0}},
    .n_joins = 1,
    .caps = GC_BCAP_QUEUE | GC_BCAP_PRIORITY_CLASS | GC_BCAP_NETWORK_TOPOLOGY |
            GC_BCAP_MIN_RESOURCES,
    .min_member_field = "minMember",
    .timeout =
        {
            .annotations = {"volcano.sh/sla-waiting-time", "sla-waiting-time", NULL},
            .spec_seconds = NULL,
            .default_seconds = 0,
            .max_seconds = 0,
            .needs = "Volcano's sla plugin",
        },
    .status =
        {
            .started_phases = {"Running", "Completed", NULL},
            .failed_phase = NULL,
            .scheduled_condition = "Scheduled",
            .unschedulable_condition = "Unschedulable",
            .waiting_phase = "Pending",
            .waiting_note = "the queue has not admitted it",
        },
    .queue =
        {
            .key = "scheduling.volcano.sh/queue-name",
            .key_at = GC_JOIN_ANNOTATION,
            .field = "queue",
            .default_name = "default",
            .kind = "Queue",
            .version = "v1beta1",
            .resource = "queues",
            .api_version = "scheduling.volcano.sh/v1beta1",
            .state_field = "state",
            .closed_states = {"Closed", "Closing", NULL},
        },
    .runtime_policy = "volcano",
    .runtime_timeout = NULL,
    .runtime_topology = "networkTopology",
    .render_spec = render_spec,
};
