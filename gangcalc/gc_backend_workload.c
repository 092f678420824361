/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend_workload: kube-scheduler's own gang scheduling, the upstream
 * scheduling.k8s.io Workload API behind the GenericWorkload feature gate.
 * Three versions, each served by one Kubernetes release and shaped
 * differently: v1alpha1 (1.35) is a Workload with inline `podGroups` that
 * pods join by spec.workloadRef {name, podGroup}; v1alpha2 (1.36) is a
 * Workload of `podGroupTemplates` plus one standalone PodGroup per template
 * (spec.podGroupTemplateRef.workload), which pods join by
 * spec.schedulingGroup.podGroupName, with priorityClassName and a
 * disruptionMode string behind WorkloadAwarePreemption; v1beta1 (1.37, beta
 * but off by default) names the template by spec.workloadRef
 * {workloadName, templateName} and makes disruptionMode a union.
 * gangbridge writes one Workload per TrainJob (spec.controllerRef names the
 * TrainJob, which also owns it): a `gang` template for the gang phase with
 * minCount = minMember and, when other phases exist, a `basic` template
 * `other` for them (their pods are not bound); from v1alpha2 on one PodGroup
 * `<name>-gang` for the gang template.  A pod joins by a pod spec field,
 * which is immutable once the pod exists: gangbridge's webhook writes it at
 * CREATE.  kube-scheduler's gang wait is fixed (300 s in the alpha code, no
 * field sets it); the topology constraint (TopologyAwareWorkloadScheduling,
 * alpha) is a node label key.  The PodGroup's condition says whether the
 * gang was placed and why not: PodGroupScheduled in v1alpha2,
 * PodGroupInitiallyScheduled in v1beta1 (renamed for 1.37); it stays True
 * once the gang was first scheduled.  The timeout tracker follows the
 * PodGroup (named as the TrainJob with "-gang").
 */
#include "gc_backend.h"
#include "gc_gang.h"
#include "gc_render.h"
#include "gc_render_int.h"

#define GANG_TEMPLATE "gang"
#define OTHER_TEMPLATE "other"

/* The versions, newest first; [0] is the descriptor's own version. */
enum { V1BETA1, V1ALPHA2, V1ALPHA1, N_VERSIONS };

static const struct gc_backend_version VERSIONS[N_VERSIONS] = {
    [V1BETA1] = {.version = "v1beta1",
                 .api_version = "scheduling.k8s.io/v1beta1",
                 .release = "Kubernetes 1.37",
                 .maturity = "beta, GenericWorkload off by default",
                 .caps = GC_BCAP_PRIORITY_CLASS | GC_BCAP_NETWORK_TOPOLOGY,
                 .joins = {{GC_JOIN_SPEC_FIELD, "schedulingGroup.podGroupName", GC_JOIN_GROUP, 0}},
                 .n_joins = 1,
                 .group_suffix = "-" GANG_TEMPLATE,
                 .gang_template = GANG_TEMPLATE,
                 .status_kind = "PodGroup",
                 .status_resource = "podgroups",
                 /* Renamed from PodGroupScheduled for 1.37 (kubernetes#139743). */
                 .scheduled_condition = "PodGroupInitiallyScheduled",
                 .unschedulable_condition = "PodGroupInitiallyScheduled"},
    [V1ALPHA2] = {.version = "v1alpha2",
                  .api_version = "scheduling.k8s.io/v1alpha2",
                  .release = "Kubernetes 1.36",
                  .maturity = "alpha, GenericWorkload off by default; priority and "
                              "disruption need WorkloadAwarePreemption",
                  .caps = GC_BCAP_PRIORITY_CLASS | GC_BCAP_NETWORK_TOPOLOGY,
                  .joins = {{GC_JOIN_SPEC_FIELD, "schedulingGroup.podGroupName", GC_JOIN_GROUP, 0}},
                  .n_joins = 1,
                  .group_suffix = "-" GANG_TEMPLATE,
                  .gang_template = GANG_TEMPLATE,
                  .status_kind = "PodGroup",
                  .status_resource = "podgroups",
                  .scheduled_condition = "PodGroupScheduled",
                  .unschedulable_condition = "PodGroupScheduled"},
    [V1ALPHA1] = {.version = "v1alpha1",
                  .api_version = "scheduling.k8s.io/v1alpha1",
                  .release = "Kubernetes 1.35",
                  .maturity = "alpha, GenericWorkload off by default",
                  .caps = 0,
                  .joins = {{GC_JOIN_SPEC_FIELD, "workloadRef.name", GC_JOIN_PARENT, 0},
                            {GC_JOIN_SPEC_FIELD, "workloadRef.podGroup", GC_JOIN_TEMPLATE, 0}},
                  .n_joins = 2,
                  .group_suffix = NULL,
                  .gang_template = GANG_TEMPLATE,
                  /* 1.35's Workload has no status: only the pods tell. */
                  .status_kind = NULL,
                  .status_resource = NULL,
                  .scheduled_condition = NULL,
                  .unschedulable_condition = NULL},
};

/* The version g is written at (the newest when the gang names none). */
static int version_of(const struct gc_gang *g) {
  const struct gc_backend_version *v = g->backend_version;
  return v && v >= VERSIONS && v < VERSIONS + N_VERSIONS ? (int)(v - VERSIONS) : V1BETA1;
}

/* 1 when some replicated job is outside the gang (another phase). */
static int has_other(const struct gc_gang *g) {
  for (size_t i = 0; i < g->n_podsets; i++)
    if (g->podsets[i].binding == GC_BIND_UNBOUND)
      return 1;
  return 0;
}

/* {gang: {minCount: n}} or {basic: {}}. */
static struct gc_value *policy(const struct gc_gang *g, struct gc_arena *a, int gang) {
  struct gc_value *p = gc_rv_map(a, 1), *inner = gc_rv_map(a, gang ? 1 : 0);
  if (!p || !inner)
    return NULL;
  if (gang) {
    if (GC_RV_PUT(inner, "minCount", gc_rv_int(a, g->min_member)) || GC_RV_PUT(p, "gang", inner))
      return NULL;
  } else if (GC_RV_PUT(p, "basic", inner)) {
    return NULL;
  }
  return p;
}

/* *out = {topology: [{key: K}]}, or NULL when the gang has no constraint. */
static int constraints(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out) {
  const char *key = gc_render_topology_key(g);
  *out = NULL;
  if (!key)
    return GC_OK;
  struct gc_value *c = gc_rv_map(a, 1), *seq = gc_rv_node(a, GC_SEQ), *t = gc_rv_map(a, 1);
  if (!c || !seq || !t || GC_RV_PUT(t, "key", gc_rv_str(a, key)) || gc_seq_push(a, seq, t) ||
      GC_RV_PUT(c, "topology", seq))
    return GC_ENOMEM;
  *out = c;
  return GC_OK;
}

/* A training gang is disrupted whole: v1beta1's union {all: {}}, v1alpha2's
 * string "PodGroup" (1.36, honoured with WorkloadAwarePreemption). */
static struct gc_value *disruption_all(struct gc_arena *a, int v) {
  if (v == V1ALPHA2)
    return GC_RV_LIT(a, "PodGroup");
  struct gc_value *d = gc_rv_map(a, 1), *all = gc_rv_map(a, 0);
  return d && all && !GC_RV_PUT(d, "all", all) ? d : NULL;
}

/* The fields the gang template and its PodGroup share, in key order
 * (with the template's name, when given, where kubectl prints it):
 * disruptionMode, name, priorityClassName, schedulingConstraints,
 * schedulingPolicy.  v1alpha1 has only `name` and `policy`. */
static int gang_fields(const struct gc_gang *g, struct gc_arena *a, int v, const char *name,
                       struct gc_value *m) {
  struct gc_value *c = NULL;
  if (v == V1ALPHA1)
    return (name && GC_RV_PUT(m, "name", gc_rv_str(a, name))) ||
                   GC_RV_PUT(m, "policy", policy(g, a, 1))
               ? GC_ENOMEM
               : GC_OK;
  if (constraints(g, a, &c))
    return GC_ENOMEM;
  if (GC_RV_PUT(m, "disruptionMode", disruption_all(a, v)))
    return GC_ENOMEM;
  if (name && GC_RV_PUT(m, "name", gc_rv_str(a, name)))
    return GC_ENOMEM;
  if (g->priority_class && GC_RV_PUT(m, "priorityClassName", gc_rv_str(a, g->priority_class)))
    return GC_ENOMEM;
  if ((c && GC_RV_PUT(m, "schedulingConstraints", c)) ||
      GC_RV_PUT(m, "schedulingPolicy", policy(g, a, 1)))
    return GC_ENOMEM;
  return GC_OK;
}

/* The template list: `gang`, then `other` (basic) when other phases exist. */
static struct gc_value *templates(const struct gc_gang *g, struct gc_arena *a, int v) {
  struct gc_value *seq = gc_rv_node(a, GC_SEQ), *gang = gc_rv_map(a, 5);
  if (!seq || !gang || gang_fields(g, a, v, GANG_TEMPLATE, gang) || gc_seq_push(a, seq, gang))
    return NULL;
  if (has_other(g)) {
    struct gc_value *o = gc_rv_map(a, 2);
    if (!o || GC_RV_PUT(o, "name", GC_RV_LIT(a, OTHER_TEMPLATE)) ||
        (v == V1ALPHA1 ? GC_RV_PUT(o, "policy", policy(g, a, 0))
                       : GC_RV_PUT(o, "schedulingPolicy", policy(g, a, 0))) ||
        gc_seq_push(a, seq, o))
      return NULL;
  }
  return seq;
}

static int render_spec(const struct gc_gang *g, struct gc_arena *a, struct gc_value **out) {
  int v = version_of(g);
  struct gc_value *spec = gc_rv_map(a, 2), *ref = gc_rv_map(a, 3);
  if (!spec || !ref || GC_RV_PUT(ref, "apiGroup", GC_RV_LIT(a, GC_TRAINER_GROUP)) ||
      GC_RV_PUT(ref, "kind", GC_RV_LIT(a, "TrainJob")) ||
      GC_RV_PUT(ref, "name", gc_rv_str(a, g->name)) || GC_RV_PUT(spec, "controllerRef", ref))
    return GC_ENOMEM;
  if (v == V1ALPHA1 ? GC_RV_PUT(spec, "podGroups", templates(g, a, v))
                    : GC_RV_PUT(spec, "podGroupTemplates", templates(g, a, v)))
    return GC_ENOMEM;
  *out = spec;
  return GC_OK;
}

/* The PodGroup of the gang template (v1alpha2 and later). */
static int render_more(const struct gc_gang *g, struct gc_arena *a, struct gc_backend_object *out,
                       size_t cap, size_t *n) {
  int v = version_of(g);
  *n = 0;
  if (v == V1ALPHA1)
    return GC_OK;
  if (cap < 1)
    return GC_ELIMIT;
  struct gc_value *spec = gc_rv_map(a, 5), *ref = gc_rv_map(a, 2);
  if (!spec || !ref)
    return GC_ENOMEM;
  if (v == V1ALPHA2) {
    struct gc_value *w = gc_rv_map(a, 2);
    if (!w || GC_RV_PUT(w, "podGroupTemplateName", GC_RV_LIT(a, GANG_TEMPLATE)) ||
        GC_RV_PUT(w, "workloadName", gc_rv_str(a, g->name)) || GC_RV_PUT(ref, "workload", w) ||
        GC_RV_PUT(spec, "podGroupTemplateRef", ref) || gang_fields(g, a, v, NULL, spec))
      return GC_ENOMEM;
  } else if (gang_fields(g, a, v, NULL, spec) ||
             GC_RV_PUT(ref, "templateName", GC_RV_LIT(a, GANG_TEMPLATE)) ||
             GC_RV_PUT(ref, "workloadName", gc_rv_str(a, g->name)) ||
             GC_RV_PUT(spec, "workloadRef", ref)) {
    return GC_ENOMEM;
  }
  out[0] = (struct gc_backend_object){"PodGroup", VERSIONS[v].group_suffix, spec};
  *n = 1;
  return GC_OK;
}

const struct gc_backend gc_backend_workload = {
    .name = "workload",
    .short_name = "workload",
    .display = "kube-scheduler (Workload API)",
    .install = "Kubernetes 1.35 or later with the GenericWorkload feature gate on the API server "
               "and kube-scheduler",
    .proto = 4, /* BACKEND_WORKLOAD (3 is left to BACKEND_KAI) */
    .group = "scheduling.k8s.io",
    .version = "v1beta1",
    .kind = "Workload",
    .resource = "workloads",
    .api_version = "scheduling.k8s.io/v1beta1",
    .legacy_groups = {NULL},
    .is_crd = 0,
    /* Last in the `auto` order: only where no scheduler plugin's API is
     * served (docs/operating.md). */
    .in_auto = 1,
    .offline_only = 0,
    .scheduler_name = "default-scheduler",
    .extender = "kube",
    /* The newest versions' join; v1alpha1's are read as older spellings.
     * A gang's own version says which it writes (versions[].joins). */
    .joins = {{GC_JOIN_SPEC_FIELD, "schedulingGroup.podGroupName", GC_JOIN_GROUP, 0},
              {GC_JOIN_SPEC_FIELD, "workloadRef.name", GC_JOIN_PARENT, 1},
              {GC_JOIN_SPEC_FIELD, "workloadRef.podGroup", GC_JOIN_TEMPLATE, 1}},
    .n_joins = 3,
    .caps = GC_BCAP_PRIORITY_CLASS | GC_BCAP_NETWORK_TOPOLOGY,
    /* On the PodGroup the tracker follows (v1alpha2 and later); the
     * Workload holds it per template. */
    .min_member_field = "schedulingPolicy.gang.minCount",
    .timeout =
        {
            .annotations = {NULL},
            .spec_seconds = NULL,
            .default_seconds = 0,
            .max_seconds = 0,
            .fixed_seconds = 300,
            .fixed_why = "kube-scheduler's gang wait is fixed (300 s in its GangScheduling "
                         "plugin) and no field sets it",
            .needs = NULL,
            .max_why = NULL,
            .max_limit = NULL,
            .max_rule = NULL,
        },
    .status =
        {
            .started_phases = {NULL},
            .failed_phase = NULL,
            /* The descriptor's own version's (v1beta1); each version says its own
             * (versions[].scheduled_condition). */
            .scheduled_condition = "PodGroupInitiallyScheduled",
            .unschedulable_condition = "PodGroupInitiallyScheduled",
            .waiting_phase = NULL,
            .waiting_note = NULL,
        },
    .queue = {.key = NULL, .key_at = GC_JOIN_NONE},
    .runtime_policy = NULL,
    .runtime_timeout = NULL,
    .runtime_topology = NULL,
    /* Trainer's KEP-3015 draft (TrainingRuntimeSpec.scheduling) and the Job
     * controller's own (Job.spec.scheduling, KEP-5547): either gangs the
     * TrainJob itself, and two Workloads for one TrainJob must not exist. */
    .runtime_stanza = "scheduling",
    .job_stanza = "scheduling",
    .render_spec = render_spec,
    .render_more = render_more,
    .more_kind = {"PodGroup", "podgroups"},
    .versions = VERSIONS,
    .n_versions = N_VERSIONS,
};
