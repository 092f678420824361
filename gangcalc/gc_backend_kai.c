/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend_kai: NVIDIA's KAI Scheduler and its scheduling.run.ai/v2alpha2
 * PodGroup (KAI v0.17 fields).  Pods join by the annotation pod-group-name
 * and, within the group, by the label kai.scheduler/subgroup-name.  The
 * PodGroup gangbridge renders has one leaf sub-group per replicated job of
 * the TrainJob, named after it: a job of the gang needs all its pods
 * (minMember = its pod count), every other job (initializers, later
 * dependsOn phases, later waves) needs none (minMember 0), because KAI runs
 * no pod outside a PodGroup and its own grouper is told to keep out.  The
 * root requires every sub-group (minSubGroup = their number): KAI counts a
 * leaf of minMember 0 as satisfied (subgroup_info.PodSet.IsGangSatisfied),
 * so only the gang's jobs hold the group back.  The PodGroup carries the
 * queue (label kai.scheduler/queue, as KAI's grouper reads it; KAI's
 * default is "default-queue"), the priority class and, when the topology
 * policy names a level and the TrainJob or runtime names KAI's Topology
 * (annotation kai.scheduler/topology), a topologyConstraint.  KAI has no
 * scheduling timeout: stalenessGracePeriod (how long a started gang may run
 * below its minimum) and preemptionDelay (how long a pending gang waits
 * before it may preempt) mean other things, so gangbridge's timeout is
 * enforced by its own tracker and neither field is written.  The status has
 * no phase.
 */
#include "gc_backend.h"
#include "gc_gang.h"
#include "gc_render_int.h"

/* One leaf sub-group: {minMember, name}. */
static struct gc_value *subgroup(struct gc_arena *a, const struct gc_podset *ps) {
  struct gc_value *sg = gc_rv_map(a, 2);
  int32_t need = ps->binding == GC_BIND_COUNTED ? ps->count : 0;
  if (GC_RV_PUT(sg, "minMember", gc_rv_int(a, need)) ||
      GC_RV_PUT(sg, "name", gc_rv_str(a, ps->name)))
    return NULL;
  return sg;
}

/* The policy as KAI's topologyConstraint: hard is required, soft preferred;
 * a tier number has no KAI level (gc_gang warns), and without a Topology
 * object KAI ignores the constraint (warned too), so neither is written. */
static int topology_constraint(const struct gc_gang *g, struct gc_arena *a, struct gc_value *spec) {
  const struct gc_topology_policy *tp = &g->topology;
  if (!tp->set || !tp->highest_tier_name || !g->topology_object)
    return GC_OK;
  struct gc_value *tc = gc_rv_map(a, 2);
  struct gc_value *level = gc_rv_str(a, tp->highest_tier_name);
  int soft = tp->mode && !strcmp(tp->mode, "soft");
  if (!tc || (soft ? GC_RV_PUT(tc, "preferredTopologyLevel", level)
                   : GC_RV_PUT(tc, "requiredTopologyLevel", level)) ||
      GC_RV_PUT(tc, "topology", gc_rv_str(a, g->topology_object)) ||
      GC_RV_PUT(spec, "topologyConstraint", tc))
    return GC_ENOMEM;
  return GC_OK;
}

static int render_spec(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out) {
  struct gc_value *spec = gc_rv_map(a, 5), *sgs = gc_rv_node(a, GC_SEQ);
  if (!spec || !sgs)
    return GC_ENOMEM;
  for (size_t i = 0; i < g->n_podsets; i++)
    if (gc_seq_push(a, sgs, subgroup(a, &g->podsets[i])))
      return GC_ENOMEM;
  if (GC_RV_PUT(spec, "minSubGroup", gc_rv_int(a, (int64_t)g->n_podsets)))
    return GC_ENOMEM;
  if (g->priority_class && GC_RV_PUT(spec, "priorityClassName", gc_rv_str(a, g->priority_class)))
    return GC_ENOMEM;
  if (g->queue && GC_RV_PUT(spec, "queue", gc_rv_str(a, g->queue)))
    return GC_ENOMEM;
  if (GC_RV_PUT(spec, "subGroups", sgs) || topology_constraint(g, a, spec))
    return GC_ENOMEM;
  *out = spec;
  return GC_OK;
}

const struct gc_backend gc_backend_kai = {
    .name = "kai",
    .short_name = "kai",
    .display = "KAI",
    .install = "KAI Scheduler (v0.17 or later)",
    .proto = 3, /* BACKEND_KAI */
    .group = "scheduling.run.ai",
    .version = "v2alpha2",
    .kind = "PodGroup",
    .resource = "podgroups",
    .api_version = "scheduling.run.ai/v2alpha2",
    .legacy_groups = {NULL},
    .is_crd = 1,
    .in_auto = 1,
    .scheduler_name = "kai-scheduler",
    .extender = NULL,
    .joins = {{GC_JOIN_ANNOTATION, "pod-group-name", GC_JOIN_GROUP, 0},
              {GC_JOIN_LABEL, "kai.scheduler/subgroup-name", GC_JOIN_SUBGROUP, 0}},
    .n_joins = 2,
    .caps = GC_BCAP_QUEUE | GC_BCAP_PRIORITY_CLASS | GC_BCAP_SUBGROUPS | GC_BCAP_ELASTIC_MEMBERS |
            GC_BCAP_TOPOLOGY_LEVEL,
    .min_member_field = "minMember",
    .timeout =
        {
            .annotations = {NULL},
            .spec_seconds = NULL,
            .default_seconds = 0,
            .max_seconds = 0,
            .needs = NULL,
        },
    .status =
        {
            .started_phases = {NULL},
            .failed_phase = NULL,
            .scheduled_condition = NULL,
            .unschedulable_condition = NULL,
            .waiting_phase = NULL,
            .waiting_note = NULL,
        },
    .queue =
        {
            .key = "kai.scheduler/queue",
            .key_at = GC_JOIN_LABEL,
            .field = "queue",
            .default_name = "default-queue",
            .kind = NULL,
        },
    .runtime_policy = NULL,
    .runtime_timeout = NULL,
    .runtime_topology = NULL,
    .grouper_skip_key = "kai.scheduler/skip-podgrouper",
    .grouper_skip_value = "true",
    .topology_name_key = "kai.scheduler/topology",
    .subgroups_field = "subGroups",
    .render_spec = render_spec,
};
