/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_reconcile_plan, the pure half of the controller's
 * reconcile: selection (managedBy, opt-out, optIn, namespaceSelector), the
 * Trainer-served runtime rule and takeover, finished TrainJobs (delete only
 * PodGroups gangbridge made), a missing runtime, the backend choice (runtime,
 * Namespace annotation, config, auto by discovery), re-render rules (absent,
 * suspended, no gang pod, gang pods exist: PodGroupOutdated), a PodGroup of
 * another TrainJob or not made by gangbridge (never changed or deleted), a
 * backend switch (waits for the pods; never two PodGroups), a stale PodGroup
 * of the other backend, the Namespace default queue, queue and gangcalc
 * Events, invalid TrainJobs, the policy context (Namespace, Queue, config)
 * and the subset comparison.
 */
#include <check.h>
#include <string.h>

#include "gb_config.h"
#include "gb_options.h"
#include "gb_manifest.h"
#include "gb_reconcile.h"
#include "gb_reconcile_test.h"
#include "gb_test.h"

/* The two backends of the table, and their slots in the by-backend arrays. */
#define VOLCANO TB_VOLCANO
#define COSCHED TB_COSCHED
#define IDX_VOLCANO gc_backend_index(TB_VOLCANO)
#define IDX_COSCHED gc_backend_index(TB_COSCHED)

static const char RUNTIME[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainingRuntime\n"
    "metadata: {name: torch, namespace: ns1}\n"
    "spec:\n"
    "  mlPolicy: {numNodes: 1, torch: {}}\n"
    "  template:\n"
    "    spec:\n"
    "      replicatedJobs:\n"
    "      - name: dataset-initializer\n"
    "        template:\n"
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: "
    "dataset-initializer}}\n"
    "          spec: {template: {spec: {containers: [{name: dataset-initializer, image: i, "
    "resources: {requests: {cpu: 1}}}]}}}\n"
    "      - name: node\n"
    "        dependsOn: [{name: dataset-initializer, status: Complete}]\n"
    "        template:\n"
    "          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}\n"
    "          spec: {template: {spec: {containers: [{name: node, image: p}]}}}\n";

static const char TRAINJOB[] =
    "apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "kind: TrainJob\n"
    "metadata: {name: job, namespace: ns1, uid: 11111111-2222-4333-8444-555555555555}\n"
    "spec:\n"
    "  runtimeRef: {name: torch, kind: TrainingRuntime}\n"
    "  trainer: {numNodes: 3, resourcesPerNode: {requests: {cpu: 2}}}\n";

struct fx {
  struct gb_config cfg;
  struct gb_options opts; /* the controller's table alone, over cfg */
  struct gb_options_part part;
  struct gc_arena *a;
  struct gb_docset *docs[16];
  size_t n_docs;
  struct gb_rc_input in;
  struct gb_rc_plan plan;
  int queue_answer; /* what the queue lookup says */
  const char *queue_state;
  char queue_asked[256];
  const struct gc_value *queue_doc; /* what the Queue lookup returns */
};

static struct gc_value *doc(struct fx *f, const char *yaml) {
  ck_assert_uint_lt(f->n_docs, 16);
  struct gb_docset *ds = gb_test_load(yaml);
  f->docs[f->n_docs++] = ds;
  return ds->docs[0].root;
}

static int queue_fn(void *ctx, const struct gc_backend *b, const char *name, const char **state,
                    struct gc_arena *a) {
  (void)a;
  struct fx *f = ctx;
  ck_assert_ptr_eq(b, VOLCANO); /* the one backend with Queue objects */
  snprintf(f->queue_asked, sizeof(f->queue_asked), "%s", name);
  *state = f->queue_state;
  return f->queue_answer;
}

static void fx_init(struct fx *f) {
  memset(f, 0, sizeof(*f));
  f->part = (struct gb_options_part){gb_config_table(), &f->cfg};
  ck_assert_int_eq(gb_options_init(&f->opts, &f->part, 1, NULL), 0);
  f->a = gc_arena_new(0);
  f->in.cfg = &f->cfg;
  f->in.trainjob = doc(f, TRAINJOB);
  f->in.runtime = doc(f, RUNTIME);
  f->in.served[IDX_VOLCANO] = 1;
  f->in.served[IDX_COSCHED] = 0;
  f->queue_answer = 1;
  f->in.queue_state = queue_fn;
  f->in.queue_ctx = f;
}

static void fx_free(struct fx *f) {
  for (size_t i = 0; i < f->n_docs; i++)
    gb_docset_free(f->docs[i]);
  gc_arena_free(f->a);
  gb_options_destroy(&f->opts);
}

static void plan(struct fx *f) {
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_options_check(&f->opts, &d), 0);
  gc_diags_destroy(&d);
  ck_assert_int_eq(gb_reconcile_plan(&f->in, f->a, &f->plan), 0);
}

static const struct gb_rc_event *find_event(const struct gb_rc_plan *p, const char *reason) {
  for (size_t i = 0; i < p->n_events; i++)
    if (!strcmp(p->events[i].reason, reason))
      return &p->events[i];
  return NULL;
}

static const char *spec_str(const struct gc_value *pg, const char *path) {
  return gc_value_as_str(gc_value_path(pg, path));
}

START_TEST(test_create) {
  struct fx f;
  fx_init(&f);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_int_eq(f.plan.managed, 1);
  ck_assert_ptr_eq(f.plan.backend, VOLCANO);
  ck_assert_str_eq(spec_str(f.plan.desired, "apiVersion"), "scheduling.volcano.sh/v1beta1");
  ck_assert_int_eq(gc_value_path(f.plan.desired, "spec.minMember")->u.i, 3);
  ck_assert_str_eq(f.plan.bound_jobs, "node");
  ck_assert_uint_eq(f.plan.n_del, 0);
  ck_assert_ptr_null(f.plan.pg_uid); /* created, not updated */
  /* Found by the labels users query for a job's objects. */
  const struct gc_value *labels = gc_value_path(f.plan.desired, "metadata.labels");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(labels, "jobset.sigs.k8s.io/jobset-name")), "job");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(labels, "trainer.kubeflow.org/trainjob-name")),
                   "job");
  /* The initializer wave was left out, and the default queue is asked about. */
  ck_assert_ptr_nonnull(find_event(&f.plan, "GangScopeNarrowed"));
  ck_assert_str_eq(f.queue_asked, "default");
  ck_assert_ptr_null(find_event(&f.plan, "QueueNotFound"));
  fx_free(&f);
}
END_TEST

/* The placement controller asks for the gang the plan computed: it is handed
 * over for KEEP/APPLY (counted pod sets, minMember), never for a TrainJob
 * gangbridge does not manage. */
START_TEST(test_keep_gang) {
  struct fx f;
  fx_init(&f);
  struct gc_gang *g = NULL;
  f.in.keep_gang = &g;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_nonnull(g);
  ck_assert_int_eq(g->min_member, 3);
  ck_assert_uint_eq(g->n_podsets, 2);
  ck_assert_str_eq(g->podsets[1].name, "node");
  ck_assert_int_eq(g->podsets[1].binding, GC_BIND_COUNTED);
  gc_gang_free(g);
  g = NULL;
  gb_options_set(&f.opts, "selection.mode", "optIn", "--set", NULL);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_SKIP);
  ck_assert_ptr_null(g);
  fx_free(&f);
}
END_TEST

START_TEST(test_selection) {
  struct fx f;
  fx_init(&f);
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1}\n"
                          "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}, "
                          "managedBy: kueue.x-k8s.io/multikueue}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_SKIP);
  ck_assert_int_eq(f.plan.managed, 0);
  ck_assert_ptr_nonnull(strstr(f.plan.why, "multikueue"));

  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1, labels: "
                          "{gangbridge.io/enabled: \"false\"}}\n"
                          "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_SKIP);

  /* optIn: the plain TrainJob is skipped, a labelled one is not. */
  gb_options_set(&f.opts, "selection.mode", "optIn", "--set", NULL);
  f.in.trainjob = doc(&f, TRAINJOB);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_SKIP);
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1, labels: "
                          "{gangbridge.io/enabled: \"true\"}}\n"
                          "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}, "
                          "trainer: {numNodes: 2}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);

  /* namespaceSelector: unknown namespace waits, others by their labels. */
  gb_options_set(&f.opts, "selection.mode", "namespaceSelector", "--set", NULL);
  gb_options_set(&f.opts, "selection.namespaceSelector", "gang=yes", "--set", NULL);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_WAIT);
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\n"
                    "metadata: {name: ns1, labels: {gang: \"no\"}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_SKIP);
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\n"
                    "metadata: {name: ns1, labels: {gang: \"yes\"}}\n");
  plan(&f);
  ck_assert_msg(f.plan.action == GB_RC_APPLY, "why: %s", f.plan.why);
  fx_free(&f);
}
END_TEST

START_TEST(test_trainer_policy) {
  struct fx f;
  fx_init(&f);
  f.in.runtime = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
                         "metadata: {name: torch, namespace: ns1}\n"
                         "spec:\n  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 2000}}\n"
                         "  mlPolicy: {numNodes: 1, torch: {}}\n"
                         "  template: {spec: {replicatedJobs: [{name: node, template: {metadata: "
                         "{labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: "
                         "{template: {spec: {containers: [{name: node, image: p}]}}}}}]}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_SKIP);
  ck_assert_int_eq(f.plan.managed, 0);
  /* Skipped with a trace: one Normal Event saying Trainer makes the group. */
  const struct gb_rc_event *tev = find_event(&f.plan, "TrainerManagesPodGroup");
  ck_assert_ptr_nonnull(tev);
  ck_assert_str_eq(tev->type, "Normal");
  ck_assert_int_eq(tev->once, 1);
  ck_assert_ptr_nonnull(strstr(tev->message, "initializer"));
  /* Taken over: the runtime's backend wins, and the timeout clamp is an Event. */
  gb_options_set(&f.opts, "selection.takeOverTrainerPolicies", "true", "--set", NULL);
  f.in.served[IDX_COSCHED] = 1;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_eq(f.plan.backend, COSCHED);
  ck_assert_ptr_nonnull(find_event(&f.plan, "TimeoutClamped"));
  ck_assert_int_eq(gc_value_path(f.plan.desired, "spec.scheduleTimeoutSeconds")->u.i, 900);
  /* Its API not served: wait with an Event. */
  f.in.served[IDX_COSCHED] = 0;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_WAIT);
  ck_assert_ptr_nonnull(find_event(&f.plan, "PodGroupAPIMissing"));
  fx_free(&f);
}
END_TEST

static const char PG_OURS[] =
    "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
    "metadata: {name: job, namespace: ns1, uid: pg-uid-1, labels: "
    "{app.kubernetes.io/managed-by: gangbridge}, annotations: "
    "{gangbridge.io/bound-replicated-jobs: node}, ownerReferences: [{apiVersion: "
    "trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: job, controller: true, uid: "
    "11111111-2222-4333-8444-555555555555}]}\n"
    "spec: {minMember: 7}\n";

/* gangbridge's label, but made for another TrainJob of the same name. */
static const char PG_OTHER_OWNER[] =
    "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
    "metadata: {name: job, namespace: ns1, uid: pg-uid-2, labels: "
    "{app.kubernetes.io/managed-by: gangbridge}, ownerReferences: [{apiVersion: "
    "trainer.kubeflow.org/v1alpha1, kind: TrainJob, name: job, controller: true, uid: "
    "old-trainjob-uid}]}\n"
    "spec: {minMember: 7}\n";

START_TEST(test_finished) {
  struct fx f;
  fx_init(&f);
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1, uid: "
                          "11111111-2222-4333-8444-555555555555}\n"
                          "spec: {runtimeRef: {name: gone, kind: TrainingRuntime}}\n"
                          "status: {conditions: [{type: Suspended, status: \"False\"}, "
                          "{type: Failed, status: \"True\"}]}\n");
  f.in.runtime = NULL; /* the runtime may be gone: cleanup does not need it */
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP); /* nothing to delete */
  f.in.pg[IDX_VOLCANO] = doc(&f, PG_OURS);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_DELETE);
  ck_assert_uint_eq(f.plan.n_del, 1);
  ck_assert_ptr_eq(f.plan.del[0], VOLCANO);
  ck_assert_str_eq(f.plan.del_uid[0], "pg-uid-1");
  /* Someone else's PodGroup of the same name is never deleted. */
  f.in.pg[IDX_VOLCANO] = doc(
      &f, "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\n"
          "metadata: {name: job, namespace: ns1, uid: x}\nspec: {minMember: 1}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_uint_eq(f.plan.n_del, 0);
  /* Nor is gangbridge's PodGroup of another TrainJob of the same name. */
  f.in.pg[IDX_VOLCANO] = doc(&f, PG_OTHER_OWNER);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_uint_eq(f.plan.n_del, 0);
  gb_options_set(&f.opts, "podGroups.deleteOnFinish", "false", "--set", NULL);
  f.in.pg[IDX_VOLCANO] = doc(&f, PG_OURS);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_uint_eq(f.plan.n_del, 0);
  ck_assert_int_eq(gb_reconcile_trainjob_finished(f.in.trainjob), 1);
  ck_assert_int_eq(gb_reconcile_trainjob_finished(doc(&f, TRAINJOB)), 0);
  fx_free(&f);
}
END_TEST

START_TEST(test_runtime_missing_and_invalid) {
  struct fx f;
  fx_init(&f);
  f.in.runtime = NULL;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_WAIT);
  const struct gb_rc_event *e = find_event(&f.plan, "RuntimeNotFound");
  ck_assert_ptr_nonnull(e);
  ck_assert_str_eq(e->type, "Warning");
  ck_assert_ptr_nonnull(strstr(e->message, "TrainingRuntime \"ns1/torch\" not found"));
  ck_assert_ptr_nonnull(strstr(e->message, "created once it exists"));
  /* With a PodGroup already there, the message does not promise a creation. */
  f.in.pg[IDX_VOLCANO] = doc(&f, PG_OURS);
  plan(&f);
  e = find_event(&f.plan, "RuntimeNotFound");
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_null(strstr(e->message, "created once it exists"));
  ck_assert_ptr_nonnull(strstr(e->message, "left as it is"));
  f.in.pg[IDX_VOLCANO] = NULL;

  f.in.runtime = doc(&f, RUNTIME);
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1}\n"
                          "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}, "
                          "trainer: {numNodes: -2}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_INVALID);
  e = find_event(&f.plan, "InvalidTrainJob");
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(strstr(e->message, "spec.trainer.numNodes"));

  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1}\n"
                          "spec: {runtimeRef: {name: torch, kind: Pod}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_INVALID);
  fx_free(&f);
}
END_TEST

START_TEST(test_backend_choice) {
  struct fx f;
  fx_init(&f);
  f.in.served[IDX_VOLCANO] = 0;
  f.in.served[IDX_COSCHED] = 1;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_eq(f.plan.backend, COSCHED);
  ck_assert_str_eq(spec_str(f.plan.desired, "apiVersion"), "scheduling.x-k8s.io/v1alpha1");
  f.in.served[IDX_COSCHED] = 0;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_WAIT);
  ck_assert_ptr_nonnull(find_event(&f.plan, "PodGroupAPIMissing"));
  f.in.served[IDX_VOLCANO] = -1;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_WAIT);
  ck_assert_uint_eq(f.plan.n_events, 0);

  /* The Namespace annotation beats the config; a bad one is reported. */
  f.in.served[IDX_VOLCANO] = 1;
  f.in.served[IDX_COSCHED] = 1;
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{gangbridge.io/backend: coscheduling, gangbridge.io/gang-scope: all}}\n");
  plan(&f);
  ck_assert_ptr_eq(f.plan.backend, COSCHED);
  ck_assert_int_eq(gc_value_path(f.plan.desired, "spec.minMember")->u.i, 4); /* scope all */
  ck_assert_ptr_null(find_event(&f.plan, "GangScopeNarrowed"));
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{gangbridge.io/backend: yunikorn}}\n");
  gb_options_set(&f.opts, "scheduling.backend", "coscheduling", "--set", NULL);
  plan(&f);
  ck_assert_ptr_eq(f.plan.backend, COSCHED);
  ck_assert_ptr_nonnull(find_event(&f.plan, "InvalidNamespacePolicy"));
  /* A Namespace naming the Workload API is obeyed (it waits while the API is not served),
   * and the config accepts it. */
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{gangbridge.io/backend: workload}}\n");
  plan(&f);
  ck_assert_ptr_eq(f.plan.backend, gc_backend_by_name("workload"));
  ck_assert_ptr_null(find_event(&f.plan, "InvalidNamespacePolicy"));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_options_set(&f.opts, "scheduling.backend", "workload", "--set", &d), 0);
  gc_diags_destroy(&d);
  fx_free(&f);
}
END_TEST

START_TEST(test_rerender_rules) {
  struct fx f;
  fx_init(&f);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  /* The same PodGroup as served (plus server fields and a status): up to date. */
  struct gc_value *served = gc_value_clone(f.a, f.plan.desired);
  struct gc_value *meta = gc_map_get(served, "metadata");
  gc_map_set(f.a, meta, "uid", gc_value_strz(f.a, "pg-1"));
  gc_map_set(f.a, meta, "resourceVersion", gc_value_strz(f.a, "42"));
  struct gc_value *st = gc_value_map(f.a);
  gc_map_set(f.a, st, "phase", gc_value_strz(f.a, "Pending"));
  gc_map_set(f.a, served, "status", st);
  f.in.pg[IDX_VOLCANO] = served;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_ptr_nonnull(strstr(f.plan.why, "up to date"));

  /* Different content and no gang pod: re-rendered, with the uid as the
   * precondition of the update. */
  gc_map_set(f.a, gc_map_get(served, "spec"), "minMember", gc_value_int(f.a, 9));
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_str_eq(f.plan.pg_uid, "pg-1");
  /* Pending (the phase says nothing) but a gang pod exists: left as it is
   * (the JobSet has its pods while the group is Pending), the binding plan
   * comes from the PodGroup, and an Event says what differs and how to
   * apply it. */
  f.in.pods = 1;
  gc_map_set(f.a, gc_map_get(meta, "annotations"), GB_ANN_BOUND_JOBS,
             gc_value_strz(f.a, "node,other"));
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_str_eq(f.plan.bound_jobs, "node,other");
  const struct gb_rc_event *ev = find_event(&f.plan, "PodGroupOutdated");
  ck_assert_ptr_nonnull(ev);
  ck_assert_int_eq(ev->once, 1);
  ck_assert_int_eq(ev->on_podgroup, 1);
  ck_assert_ptr_nonnull(strstr(ev->message, "spec.minMember: 9 -> 3"));
  ck_assert_ptr_nonnull(strstr(ev->message, "suspend"));
  /* A difference in labels only (a PodGroup of an earlier version) is
   * applied under pods: neither the gang nor the binding plan changes. */
  struct gc_value *spec_now = gc_value_clone(f.a, gc_map_get(f.plan.desired, "spec"));
  struct gc_value *spec_was = gc_map_get(served, "spec");
  gc_map_set(f.a, served, "spec", spec_now);
  gc_map_set(f.a, gc_map_get(meta, "annotations"), GB_ANN_BOUND_JOBS, gc_value_strz(f.a, "node"));
  gc_map_set(f.a, gc_map_get(meta, "labels"), "trainer.kubeflow.org/trainjob-name",
             gc_value_strz(f.a, "old"));
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_null(find_event(&f.plan, "PodGroupOutdated"));
  gc_map_set(f.a, served, "spec", spec_was);
  /* Pods unknown count as existing; updateWhileRunning is no looser. */
  f.in.pods = -1;
  gb_options_set(&f.opts, "podGroups.updateWhileRunning", "true", "--set", NULL);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  gb_options_set(&f.opts, "podGroups.updateWhileRunning", "false", "--set", NULL);
  /* The pods went away: the change applies. */
  f.in.pods = 0;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_null(find_event(&f.plan, "PodGroupOutdated"));
  /* Suspended: re-rendered even while (terminating) pods exist. */
  f.in.pods = 2;
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1, uid: "
                          "11111111-2222-4333-8444-555555555555}\n"
                          "spec: {suspend: true, runtimeRef: {name: torch, kind: TrainingRuntime}, "
                          "trainer: {numNodes: 3}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  fx_free(&f);
}
END_TEST

/* What the cache shows (gangbridge's label) but not this TrainJob's: never
 * updated, and reported. */
START_TEST(test_other_owner_untouched) {
  struct fx f;
  fx_init(&f);
  f.in.pg[IDX_VOLCANO] = doc(&f, PG_OTHER_OWNER);
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_ptr_nonnull(find_event(&f.plan, "PodGroupExists"));
  ck_assert_ptr_null(f.plan.desired);
  ck_assert_int_eq(
      gb_reconcile_podgroup_ours(doc(&f, PG_OURS), "11111111-2222-4333-8444-555555555555"), 1);
  ck_assert_int_eq(gb_reconcile_podgroup_ours(doc(&f, PG_OURS), "other"), 0);
  ck_assert_int_eq(gb_reconcile_podgroup_ours(doc(&f, PG_OTHER_OWNER), "old-trainjob-uid"), 1);
  ck_assert_int_eq(
      gb_reconcile_podgroup_ours(doc(&f, "metadata: {ownerReferences: [{controller: true, "
                                         "uid: u}]}\n"),
                                 "u"),
      0); /* no label */
  fx_free(&f);
}
END_TEST

/* The backend choice changes while the gang's pods exist: the old PodGroup
 * stays (the pods reference it) and no second one is made; once the pods are
 * gone the old one is deleted first and the new one created. */
START_TEST(test_backend_switch_waits_for_pods) {
  struct fx f;
  fx_init(&f);
  f.in.served[IDX_COSCHED] = 1;
  f.in.pg[IDX_COSCHED] = doc(
      &f, "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
          "metadata: {name: job, namespace: ns1, uid: cos-1, labels: "
          "{app.kubernetes.io/managed-by: gangbridge}, annotations: "
          "{gangbridge.io/bound-replicated-jobs: node}, ownerReferences: [{controller: true, "
          "uid: 11111111-2222-4333-8444-555555555555}]}\nspec: {minMember: 3}\n"
          "status: {phase: Pending}\n");
  f.in.pods = 3;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_ptr_eq(f.plan.backend, COSCHED);
  ck_assert_str_eq(f.plan.bound_jobs, "node");
  ck_assert_uint_eq(f.plan.n_del, 0);
  const struct gb_rc_event *ev = find_event(&f.plan, "PodGroupOutdated");
  ck_assert_ptr_nonnull(ev);
  ck_assert_ptr_nonnull(strstr(ev->message, "backend coscheduling -> volcano"));
  /* Suspended is not enough while pods still reference the old group. */
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1, uid: "
                          "11111111-2222-4333-8444-555555555555}\n"
                          "spec: {suspend: true, runtimeRef: {name: torch, kind: TrainingRuntime}, "
                          "trainer: {numNodes: 3}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_uint_eq(f.plan.n_del, 0);
  f.in.pods = 0;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_eq(f.plan.backend, VOLCANO);
  ck_assert_uint_eq(f.plan.n_del, 1);
  ck_assert_str_eq(f.plan.del_uid[0], "cos-1");
  fx_free(&f);
}
END_TEST

START_TEST(test_stale_other_backend) {
  struct fx f;
  fx_init(&f);
  f.in.served[IDX_COSCHED] = 1;
  f.in.pg[IDX_COSCHED] = doc(
      &f, "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
          "metadata: {name: job, namespace: ns1, uid: cos-1, labels: "
          "{app.kubernetes.io/managed-by: gangbridge}, ownerReferences: [{controller: true, "
          "uid: 11111111-2222-4333-8444-555555555555}]}\nspec: {minMember: 3}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_eq(f.plan.backend, VOLCANO);
  ck_assert_uint_eq(f.plan.n_del, 1);
  ck_assert_ptr_eq(f.plan.del[0], COSCHED);
  ck_assert_str_eq(f.plan.del_uid[0], "cos-1");
  fx_free(&f);
}
END_TEST

START_TEST(test_queues) {
  struct fx f;
  fx_init(&f);
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{scheduling.volcano.sh/queue-name: team-q}}\n");
  f.queue_answer = 0;
  plan(&f);
  ck_assert_str_eq(spec_str(f.plan.desired, "spec.queue"), "team-q");
  ck_assert_str_eq(f.queue_asked, "team-q");
  const struct gb_rc_event *e = find_event(&f.plan, "QueueNotFound");
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(strstr(e->message, "\"team-q\""));
  f.queue_answer = 1;
  f.queue_state = "Closed";
  plan(&f);
  ck_assert_ptr_nonnull(find_event(&f.plan, "QueueClosed"));
  f.queue_state = "Open";
  plan(&f);
  ck_assert_ptr_null(find_event(&f.plan, "QueueClosed"));
  ck_assert_ptr_null(find_event(&f.plan, "QueueNotFound"));
  /* Unknown (no queue cache): no Event either way. */
  f.queue_answer = -1;
  plan(&f);
  ck_assert_ptr_null(find_event(&f.plan, "QueueNotFound"));
  /* The runtime's own queue wins over the Namespace default. */
  f.in.runtime = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
                         "metadata: {name: torch, namespace: ns1}\n"
                         "spec:\n  mlPolicy: {numNodes: 1, torch: {}}\n"
                         "  template:\n    metadata: {annotations: "
                         "{scheduling.volcano.sh/queue-name: rt-q}}\n"
                         "    spec: {replicatedJobs: [{name: node, template: {metadata: "
                         "{labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}, spec: "
                         "{template: {spec: {containers: [{name: node, image: p}]}}}}}]}\n");
  plan(&f);
  ck_assert_str_eq(spec_str(f.plan.desired, "spec.queue"), "rt-q");
  fx_free(&f);
}
END_TEST

/* The Namespace's queue follows the same rule as the runtime's (gc_name,
 * apimachinery's IsDNS1123Subdomain): a 64-byte label is valid, a name
 * with an uppercase letter is not and falls back to Volcano's default. */
START_TEST(test_namespace_queue_name_rule) {
  struct fx f;
  fx_init(&f);
  char ns[512];
  const char *q64 = "q234567890123456789012345678901234567890123456789012345678901234.team";
  snprintf(ns, sizeof(ns), "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                           "{scheduling.volcano.sh/queue-name: %s}}\n", q64);
  f.in.ns = doc(&f, ns);
  f.queue_answer = 1;
  f.queue_state = "Open";
  plan(&f);
  ck_assert_str_eq(spec_str(f.plan.desired, "spec.queue"), q64);
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{scheduling.volcano.sh/queue-name: Team-Q}}\n");
  plan(&f);
  ck_assert_ptr_null(spec_str(f.plan.desired, "spec.queue"));
  fx_free(&f);
}
END_TEST

static const struct gc_value *queue_doc_fn(void *ctx, const struct gc_backend *b, const char *name,
                                           struct gc_arena *a) {
  (void)a;
  struct fx *f = ctx;
  ck_assert_ptr_eq(b, VOLCANO);
  snprintf(f->queue_asked, sizeof(f->queue_asked), "%s", name);
  return f->queue_doc;
}

static const char *sla_of(const struct gb_rc_plan *p) {
  return gc_value_as_str(
      gc_map_get(gc_value_path(p->desired, "metadata.annotations"), "volcano.sh/sla-waiting-time"));
}

/* The policy context the plan gives gangcalc: the Namespace's and the
 * Queue's annotations and the config defaults, in that order. */
START_TEST(test_policy_sources) {
  struct fx f;
  fx_init(&f);
  f.in.queue_doc = queue_doc_fn;
  f.queue_state = "Open";
  plan(&f);
  ck_assert_ptr_null(sla_of(&f.plan));
  f.cfg.timeout_default = "30m";
  plan(&f);
  ck_assert_str_eq(sla_of(&f.plan), "30m0s");
  f.queue_doc = doc(&f, "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n"
                        "metadata: {name: team-q, annotations: "
                        "{gangbridge.io/schedule-timeout: 20m}}\n");
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{scheduling.volcano.sh/queue-name: team-q}}\n");
  plan(&f);
  ck_assert_str_eq(f.queue_asked, "team-q");
  ck_assert_str_eq(sla_of(&f.plan), "20m0s");
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{scheduling.volcano.sh/queue-name: team-q, "
                    "gangbridge.io/schedule-timeout: 10m}}\n");
  plan(&f);
  ck_assert_str_eq(sla_of(&f.plan), "10m0s");
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{gangbridge.io/schedule-timeout: 15x}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_INVALID);
  const struct gb_rc_event *e = find_event(&f.plan, "InvalidTrainJob");
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_nonnull(strstr(e->message, "Namespace ns1: metadata.annotations["
                                           "gangbridge.io/schedule-timeout]: invalid duration "
                                           "\"15x\": unknown unit \"x\""));
  /* A Namespace topology annotation is gangbridge's placement policy: it is
   * not written into the Volcano PodGroup. */
  f.in.ns = doc(&f, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1, annotations: "
                    "{gangbridge.io/topology-required: example.com/rack}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_null(gc_value_path(f.plan.desired, "spec.networkTopology"));
  fx_free(&f);
}
END_TEST

START_TEST(test_subset_and_ref) {
  struct fx f;
  fx_init(&f);
  struct gc_value *want = doc(&f, "a: {b: 1, c: [x, {d: 2}]}\n");
  ck_assert_int_eq(
      gb_reconcile_value_subset(want, doc(&f, "a: {b: 1, c: [x, {d: 2, e: 3}], z: 1}\n")), 1);
  ck_assert_int_eq(gb_reconcile_value_subset(want, doc(&f, "a: {b: 1, c: [x, {d: 3}]}\n")), 0);
  ck_assert_int_eq(gb_reconcile_value_subset(want, doc(&f, "a: {b: 1, c: [x]}\n")), 0);
  ck_assert_int_eq(gb_reconcile_value_subset(want, doc(&f, "a: {c: [x, {d: 2}]}\n")), 0);
  ck_assert_int_eq(gb_reconcile_value_subset(want, NULL), 0);
  ck_assert_int_eq(gb_reconcile_value_subset(NULL, want), 1);
  int cluster = 0;
  const char *name = NULL;
  ck_assert_int_eq(gb_reconcile_runtime_ref(doc(&f, "spec: {runtimeRef: {name: r}}\n"), &cluster,
                                            &name), 0);
  ck_assert_int_eq(cluster, 1);
  ck_assert_str_eq(name, "r");
  ck_assert_int_eq(gb_reconcile_runtime_ref(doc(&f, "spec: {runtimeRef: {name: r, kind: X}}\n"),
                                            &cluster, &name), GC_EINVAL);
  ck_assert_int_eq(gb_reconcile_runtime_ref(doc(&f, "spec: {}\n"), &cluster, &name), GC_EINVAL);
  fx_free(&f);
}
END_TEST

/* The upstream Workload API: the version discovery picked is written, the PodGroup of the
 * gang template is the plan's other object (created when missing, never changed), both are
 * deleted on finish and on suspend (ours only), a TrainJob something else gangs is left
 * alone, and a cluster serving no version waits naming the GenericWorkload gate. */
START_TEST(test_workload_backend) {
  struct fx f;
  fx_init(&f);
  const struct gc_backend *w = gc_backend_by_name("workload");
  int iw = gc_backend_index(w);
  const struct gc_backend_version *v2 = gc_backend_version_find(w, "v1alpha2");
  gb_options_set(&f.opts, "scheduling.backend", "workload", "--set", NULL);
  /* Not served: waits, and says which gate is missing. */
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_WAIT);
  const struct gb_rc_event *ev = find_event(&f.plan, "PodGroupAPIMissing");
  ck_assert_ptr_nonnull(ev);
  ck_assert_msg(strstr(ev->message, "GenericWorkload") &&
                    strstr(ev->message, "v1beta1, v1alpha2 or v1alpha1"),
                "%s", ev->message);
  /* Served at v1alpha2: the Workload and its PodGroup at that version. */
  f.in.served[iw] = 1;
  f.in.version[iw] = v2;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_APPLY);
  ck_assert_ptr_eq(f.plan.version, v2);
  ck_assert_str_eq(spec_str(f.plan.desired, "apiVersion"), "scheduling.k8s.io/v1alpha2");
  ck_assert_str_eq(spec_str(f.plan.desired, "kind"), "Workload");
  ck_assert_ptr_nonnull(f.plan.desired_more);
  ck_assert_str_eq(spec_str(f.plan.desired_more, "kind"), "PodGroup");
  ck_assert_str_eq(spec_str(f.plan.desired_more, "metadata.name"), "job-gang");
  ck_assert_str_eq(spec_str(f.plan.desired_more, "apiVersion"), "scheduling.k8s.io/v1alpha2");
  const char *bound = f.plan.bound_jobs;
  ck_assert_str_eq(bound, "node");
  /* Both exist and are ours: nothing to write. */
  struct gc_value *wl = f.plan.desired, *pg = f.plan.desired_more;
  ck_assert_int_eq(
      gc_map_set(f.a, gc_value_path(wl, "metadata"), "uid", gc_value_strz(f.a, "wl-uid")), 0);
  ck_assert_int_eq(
      gc_map_set(f.a, gc_value_path(pg, "metadata"), "uid", gc_value_strz(f.a, "pg-uid")), 0);
  f.in.pg[iw] = wl;
  f.in.more[iw] = pg;
  f.in.pods = 3;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_ptr_null(f.plan.desired_more);
  /* The PodGroup gone (the 1.36 -> 1.37 upgrade deletes it) while pods exist: made again. */
  f.in.more[iw] = NULL;
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_KEEP);
  ck_assert_ptr_nonnull(f.plan.desired_more);
  /* Suspended: both deleted, PodGroup first, with their uids and the version. */
  f.in.more[iw] = pg;
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1, uid: "
                          "11111111-2222-4333-8444-555555555555}\n"
                          "spec:\n  suspend: true\n"
                          "  runtimeRef: {name: torch, kind: TrainingRuntime}\n"
                          "  trainer: {numNodes: 3, resourcesPerNode: {requests: {cpu: 2}}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_DELETE);
  ck_assert_uint_eq(f.plan.n_del, 1);
  ck_assert_ptr_eq(f.plan.del[0], w);
  ck_assert_str_eq(f.plan.del_uid[0], "wl-uid");
  ck_assert_str_eq(f.plan.del_more_uid[0], "pg-uid");
  ck_assert_ptr_eq(f.plan.del_version[0], v2);
  /* A PodGroup of that name gangbridge did not make is never deleted. */
  f.in.more[iw] = doc(&f, "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\n"
                          "metadata: {name: job-gang, namespace: ns1, uid: theirs}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_DELETE);
  ck_assert_ptr_null(f.plan.del_more_uid[0]);
  ck_assert_str_eq(f.plan.del_uid[0], "wl-uid");
  /* Finished: deleted as well. */
  f.in.more[iw] = pg;
  f.in.trainjob = doc(&f, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                          "metadata: {name: job, namespace: ns1, uid: "
                          "11111111-2222-4333-8444-555555555555}\n"
                          "spec: {runtimeRef: {name: torch, kind: TrainingRuntime}}\n"
                          "status: {conditions: [{type: Complete, status: \"True\"}]}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_DELETE);
  ck_assert_str_eq(f.plan.del_more_uid[0], "pg-uid");
  /* Something else gangs it (a pod template naming a scheduling group): nothing written. */
  f.in.pg[iw] = NULL;
  f.in.more[iw] = NULL;
  f.in.trainjob = doc(&f, TRAINJOB);
  f.in.runtime = doc(&f,
                     "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\n"
                     "metadata: {name: torch, namespace: ns1}\n"
                     "spec:\n  mlPolicy: {numNodes: 1, torch: {}}\n  template:\n    spec:\n"
                     "      replicatedJobs:\n      - name: node\n        template:\n"
                     "          spec: {template: {spec: {schedulingGroup: {podGroupName: x}, "
                     "containers: [{name: node, image: p}]}}}\n");
  plan(&f);
  ck_assert_int_eq(f.plan.action, GB_RC_SKIP);
  ck_assert_int_eq(f.plan.managed, 0);
  ck_assert_ptr_null(f.plan.desired);
  ev = find_event(&f.plan, "GangedElsewhere");
  ck_assert_ptr_nonnull(ev);
  ck_assert_msg(strstr(ev->message, "schedulingGroup") && ev->once, "%s", ev->message);
  fx_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("reconcile");
  TCase *tc = tcase_create("plan");
  tcase_add_test(tc, test_create);
  tcase_add_test(tc, test_selection);
  tcase_add_test(tc, test_keep_gang);
  tcase_add_test(tc, test_trainer_policy);
  tcase_add_test(tc, test_finished);
  tcase_add_test(tc, test_runtime_missing_and_invalid);
  tcase_add_test(tc, test_backend_choice);
  tcase_add_test(tc, test_rerender_rules);
  tcase_add_test(tc, test_other_owner_untouched);
  tcase_add_test(tc, test_backend_switch_waits_for_pods);
  tcase_add_test(tc, test_stale_other_backend);
  tcase_add_test(tc, test_queues);
  tcase_add_test(tc, test_namespace_queue_name_rule);
  tcase_add_test(tc, test_subset_and_ref);
  tcase_add_test(tc, test_policy_sources);
  tcase_add_test(tc, test_workload_backend);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
