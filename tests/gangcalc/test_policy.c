/* SPDX-License-Identifier: Apache-2.0
 *
 * The timeout and topology policy precedence (gc_policy): a table over every
 * source, most specific first, for both backends; the effective value, its
 * source and how each backend renders it; and the exact error for a bad
 * value from each source.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_manifest.h"
#include "gb_test.h"

#define NODE "[{name: node, image: x, resources: {requests: {cpu: 1}}}]"
#define ANN_T GC_ANN_SCHEDULE_TIMEOUT
#define ANN_REQ GC_ANN_TOPOLOGY_REQUIRED
#define ANN_PREF GC_ANN_TOPOLOGY_PREFERRED

/* Every source of one run; NULL members are absent.  Annotation members are
 * the inside of a YAML flow map ("a: b, c: d"). */
struct srcs {
  const char *tj_ann;
  const char *rt_ann;
  const char *rt_policy; /* spec.podGroupPolicy as a flow map */
  const char *ns_ann;
  const char *queue_ann; /* the annotations of every Volcano Queue */
  const char *timeout_default;
  const char *topology_default;
  const char *timeout_max; /* config timeouts.max */
};

static const char *const LEVELS[] = {"example.com/zone", "example.com/block", "example.com/rack"};

struct run {
  struct gb_test_run r;
  struct gb_docset *extra; /* the Namespace and Queue annotation maps */
  const char *queue_asked; /* the queue the computation asked about */
};

static const struct gc_value *queue_ann(void *arg, const struct gc_backend *b, const char *queue) {
  ck_assert_ptr_eq(b, TB_VOLCANO); /* only a backend with Queue objects asks */
  struct run *run = arg;
  run->queue_asked = gb_test_fmt("%s", queue);
  return run->extra->docs[1].root;
}

static void run_with(struct run *run, const struct srcs *s, const struct gc_backend *b) {
  memset(run, 0, sizeof(*run));
  const char *rt = gb_test_fmt(
      "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
      "metadata:\n  name: rt\n%s%s%sspec:\n%s%s%s  template:\n    spec:\n      replicatedJobs:\n%s",
      s->rt_ann ? "  annotations: {" : "", s->rt_ann ? s->rt_ann : "", s->rt_ann ? "}\n" : "",
      s->rt_policy ? "  podGroupPolicy: " : "", s->rt_policy ? s->rt_policy : "",
      s->rt_policy ? "\n" : "", gb_test_job("node", "trainer", -1, NODE, NULL, NULL, NULL));
  const char *tj = gb_test_fmt(
      "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: job\n"
      "  namespace: default\n  uid: uid-job\n%s%s%sspec:\n  runtimeRef: {name: rt}\n",
      s->tj_ann ? "  annotations: {" : "", s->tj_ann ? s->tj_ann : "", s->tj_ann ? "}\n" : "");
  run->extra = gb_test_load(gb_test_fmt("--- {%s}\n--- {%s}\n", s->ns_ann ? s->ns_ann : "",
                                        s->queue_ann ? s->queue_ann : ""));
  struct gc_policy_context ctx = {s->ns_ann ? run->extra->docs[0].root : NULL,
                                  queue_ann,
                                  run,
                                  s->timeout_default,
                                  s->topology_default,
                                  LEVELS,
                                  3,
                                  s->timeout_max};
  struct gc_options o = {b, TB_UNSET, GC_SCOPE_WAVE, NULL, &ctx, NULL, NULL};
  gb_test_run(&run->r, gb_test_fmt("%s%s", rt, tj), NULL, &o);
}

static void run_free(struct run *run) {
  gb_test_run_free(&run->r);
  gb_docset_free(run->extra);
}

static void ok(struct run *run) {
  if (run->r.rc)
    gb_test_dump(&run->r.diags);
  ck_assert_int_eq(run->r.rc, 0);
}

/* The rendered PodGroup's value at path, or NULL. */
static const struct gc_value *rendered(const struct gc_gang *g, struct gc_arena *a,
                                       const char *path) {
  struct gc_value *pg = NULL;
  ck_assert_int_eq(gc_render_podgroup(g, a, &pg), 0);
  return gc_value_path(pg, path);
}

static const struct gc_value *sla_of(const struct gc_gang *g, struct gc_arena *a) {
  struct gc_value *pg = NULL;
  ck_assert_int_eq(gc_render_podgroup(g, a, &pg), 0);
  return gc_map_get(gc_value_path(pg, "metadata.annotations"), "volcano.sh/sla-waiting-time");
}

/* ---- timeout ------------------------------------------------------------------- */

#define SRC_TJ "TrainJob default/job: metadata.annotations[" ANN_T "]"
#define SRC_RT_ANN "ClusterTrainingRuntime/rt: metadata.annotations[" ANN_T "]"
#define SRC_RT_FIELD "ClusterTrainingRuntime/rt: spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds"
#define SRC_NS "Namespace default: metadata.annotations[" ANN_T "]"
#define SRC_QUEUE "Queue q1: metadata.annotations[" ANN_T "]"
#define SRC_CONFIG "config timeouts.default"

/* Sources from `first` on are present, each with its own value; the first
 * one present must win.  Order: TrainJob, runtime annotation, runtime
 * field, Namespace, Queue, config. */
static void timeout_sources_from(int first, const struct gc_backend *b, int64_t *secs,
                                 const char **source, struct run *run) {
  struct srcs s = {0};
  s.ns_ann = "scheduling.volcano.sh/queue-name: q1";
  if (first <= 0)
    s.tj_ann = ANN_T ": 1m";
  if (first <= 1)
    s.rt_ann = ANN_T ": 2m";
  if (first <= 2)
    s.rt_policy = "{coscheduling: {scheduleTimeoutSeconds: 180}}";
  if (first <= 3)
    s.ns_ann = "scheduling.volcano.sh/queue-name: q1, " ANN_T ": 4m";
  if (first <= 4)
    s.queue_ann = ANN_T ": 5m";
  if (first <= 5)
    s.timeout_default = "6m";
  run_with(run, &s, b);
  ok(run);
  *secs = run->r.g->timeout.seconds;
  *source = run->r.g->timeout.source;
}

START_TEST(timeout_precedence_table) {
  const struct {
    int first;
    const struct gc_backend *backend;
    int64_t want;
    const char *source;
  } cases[] = {
      {0, TB_VOLCANO, 60, SRC_TJ},
      {1, TB_VOLCANO, 120, SRC_RT_ANN},
      {2, TB_VOLCANO, 180, SRC_RT_FIELD},
      {3, TB_VOLCANO, 240, SRC_NS},
      {4, TB_VOLCANO, 300, SRC_QUEUE},
      {5, TB_VOLCANO, 360, SRC_CONFIG},
      {0, TB_COSCHED, 60, SRC_TJ},
      {1, TB_COSCHED, 120, SRC_RT_ANN},
      {2, TB_COSCHED, 180, SRC_RT_FIELD},
      {3, TB_COSCHED, 240, SRC_NS},
      /* A coscheduling gang has no Volcano queue: the config default. */
      {4, TB_COSCHED, 360, SRC_CONFIG},
      {5, TB_COSCHED, 360, SRC_CONFIG},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct run run;
    int64_t secs = 0;
    const char *source = NULL;
    timeout_sources_from(cases[i].first, cases[i].backend, &secs, &source, &run);
    const struct gc_gang *g = run.r.g;
    ck_assert_msg(g->timeout.set, "case %zu", i);
    ck_assert_msg(secs == cases[i].want, "case %zu: %lld s", i, (long long)secs);
    ck_assert_str_eq(source, cases[i].source);
    struct gc_arena *a = gc_arena_new(0);
    if (cases[i].backend == TB_VOLCANO) {
      /* The Queue is always asked, for its ceiling (its timeout annotation
       * is read only when no more specific source answers). */
      ck_assert_str_eq(run.queue_asked ? run.queue_asked : "(none)", "q1");
      char want[32];
      snprintf(want, sizeof(want), "%lldm0s", (long long)cases[i].want / 60);
      ck_assert_str_eq(gc_value_as_str(sla_of(g, a)), want);
      ck_assert(!g->has_timeout);
    } else {
      ck_assert(g->has_timeout);
      ck_assert_int_eq(g->schedule_timeout_seconds, cases[i].want);
      const struct gc_value *t = rendered(g, a, "spec.scheduleTimeoutSeconds");
      ck_assert_ptr_nonnull(t);
      ck_assert_int_eq(t->u.i, cases[i].want);
      ck_assert_ptr_null(sla_of(g, a));
    }
    /* explain shows the effective timeout and where it came from. */
    char *text = NULL;
    ck_assert_int_eq(gc_explain(g, &text), 0);
    ck_assert_msg(strstr(text, gb_test_fmt("schedule timeout:  %lldm0s (%lld s) from %s",
                                           (long long)cases[i].want / 60,
                                           (long long)cases[i].want, cases[i].source)),
                  "case %zu:\n%s", i, text);
    free(text);
    gc_arena_free(a);
    run_free(&run);
  }
}
END_TEST

START_TEST(timeout_none_and_backend_limits) {
  struct run run;
  struct srcs s = {0};
  /* No source: Volcano waits forever, coscheduling keeps its 60 s. */
  run_with(&run, &s, TB_VOLCANO);
  ok(&run);
  ck_assert(!run.r.g->timeout.set);
  ck_assert_ptr_null(run.r.g->timeout.source);
  struct gc_arena *a = gc_arena_new(0);
  ck_assert_ptr_null(sla_of(run.r.g, a));
  run_free(&run);
  run_with(&run, &s, TB_COSCHED);
  ok(&run);
  ck_assert(!run.r.g->timeout.set);
  ck_assert_int_eq(run.r.g->schedule_timeout_seconds, 60);
  run_free(&run);

  /* Over 15 minutes: the gang keeps the effective value, coscheduling
   * clamps with a warning naming the source; Volcano takes it as it is. */
  s.ns_ann = ANN_T ": 1.5h";
  run_with(&run, &s, TB_COSCHED);
  ok(&run);
  ck_assert_int_eq(run.r.g->timeout.seconds, 5400);
  ck_assert_int_eq(run.r.g->schedule_timeout_seconds, 900);
  ck_assert(gb_test_has_warning(run.r.g, GC_WARN_TIMEOUT_CLAMPED,
                                SRC_NS " is 5400 s; clamped to 900 s because kube-scheduler "
                                       "caps Permit waits at 15 minutes"));
  run_free(&run);
  run_with(&run, &s, TB_VOLCANO);
  ok(&run);
  ck_assert_str_eq(gc_value_as_str(sla_of(run.r.g, a)), "1h30m0s");
  ck_assert(!gb_test_has_warning(run.r.g, GC_WARN_TIMEOUT_CLAMPED, NULL));
  run_free(&run);

  /* Sub-second values round up to whole seconds. */
  s.ns_ann = ANN_T ": 1500ms";
  run_with(&run, &s, TB_VOLCANO);
  ok(&run);
  ck_assert_int_eq(run.r.g->timeout.seconds, 2);
  run_free(&run);

  /* The runtime's annotation and field both set: the annotation wins. */
  s = (struct srcs){0};
  s.rt_ann = ANN_T ": 2m";
  s.rt_policy = "{coscheduling: {scheduleTimeoutSeconds: 180}}";
  run_with(&run, &s, TB_UNSET);
  ok(&run);
  ck_assert_int_eq(run.r.g->schedule_timeout_seconds, 120);
  ck_assert(gb_test_has_warning(run.r.g, GC_WARN_OTHER, "scheduleTimeoutSeconds is ignored"));
  run_free(&run);

  /* scheduleTimeoutSeconds 0 means "the default": the next source applies. */
  s = (struct srcs){0};
  s.rt_policy = "{coscheduling: {scheduleTimeoutSeconds: 0}}";
  s.ns_ann = ANN_T ": 4m";
  run_with(&run, &s, TB_UNSET);
  ok(&run);
  ck_assert_int_eq(run.r.g->schedule_timeout_seconds, 240);
  ck_assert_str_eq(run.r.g->timeout.source, SRC_NS);
  run_free(&run);
  gc_arena_free(a);
}
END_TEST

/* One bad value at one source, everything else valid and less specific. */
static void timeout_bad(int where, const char *value, const char *want) {
  struct srcs s = {0};
  s.ns_ann = "scheduling.volcano.sh/queue-name: q1";
  s.timeout_default = "6m";
  const char *ann = gb_test_fmt(ANN_T ": \"%s\"", value);
  switch (where) {
  case 0: s.tj_ann = ann; break;
  case 1: s.rt_ann = ann; break;
  case 3: s.ns_ann = gb_test_fmt("scheduling.volcano.sh/queue-name: q1, %s", ann); break;
  case 4: s.queue_ann = ann; break;
  default: s.timeout_default = value; break;
  }
  struct run run;
  run_with(&run, &s, TB_VOLCANO);
  ck_assert_int_eq(run.r.rc, GC_EINVAL);
  if (!gb_test_has_diag(&run.r.diags, want)) {
    gb_test_dump(&run.r.diags);
    ck_abort_msg("missing: %s", want);
  }
  run_free(&run);
}

START_TEST(timeout_bad_from_each_source) {
  /* A source other than the TrainJob names the TrainJob it stopped too. */
  static const char *const prefix[] = {
      "default/job: metadata.annotations[" ANN_T "]",
      "default/job: ClusterTrainingRuntime/rt: metadata.annotations[" ANN_T "]",
      NULL,
      "default/job: Namespace default: metadata.annotations[" ANN_T "]",
      "default/job: Queue q1: metadata.annotations[" ANN_T "]",
      "default/job: config timeouts.default"};
  for (int w = 0; w < 6; w++) {
    if (!prefix[w])
      continue;
    timeout_bad(w, "15x", gb_test_fmt("%s: invalid duration \"15x\": unknown unit \"x\"",
                                      prefix[w]));
    timeout_bad(w, "15", gb_test_fmt("%s: invalid duration \"15\": missing unit", prefix[w]));
    timeout_bad(w, "1d", gb_test_fmt("%s: invalid duration \"1d\": unknown unit \"d\"",
                                     prefix[w]));
    if (w != 5) /* an empty timeouts.default means "none" */
      timeout_bad(w, "", gb_test_fmt("%s: invalid duration \"\"", prefix[w]));
    timeout_bad(w, "0s", gb_test_fmt("%s: invalid duration \"0s\": must be greater than 0",
                                     prefix[w]));
    timeout_bad(w, "-5m", gb_test_fmt("%s: invalid duration \"-5m\": must be greater than 0",
                                      prefix[w]));
    timeout_bad(w, "721h", gb_test_fmt("%s: invalid duration \"721h\": must be at most "
                                       "720h0m0s",
                                       prefix[w]));
  }
  /* The runtime's field is an integer of seconds, bounded the same way. */
  struct srcs s = {0};
  s.rt_policy = "{coscheduling: {scheduleTimeoutSeconds: 2592001}}";
  struct run run;
  run_with(&run, &s, TB_UNSET);
  ck_assert_int_eq(run.r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&run.r.diags, "ClusterTrainingRuntime/rt: spec.podGroupPolicy."
                                           "coscheduling.scheduleTimeoutSeconds: must be <= "
                                           "2592000"));
  run_free(&run);
  /* An annotation that is not a string. */
  s = (struct srcs){0};
  s.tj_ann = ANN_T ": 5";
  run_with(&run, &s, TB_VOLCANO);
  ck_assert_int_eq(run.r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&run.r.diags,
                             "default/job: metadata.annotations[" ANN_T "]: must be a string"));
  run_free(&run);
  /* A bad value at a less specific source is not read when a more
   * specific one answers. */
  s = (struct srcs){0};
  s.tj_ann = ANN_T ": 1m";
  s.ns_ann = ANN_T ": 15x";
  run_with(&run, &s, TB_VOLCANO);
  ok(&run);
  run_free(&run);
}
END_TEST

/* ---- topology ------------------------------------------------------------------ */

#define TSRC_TJ "TrainJob default/job: metadata.annotations[" ANN_PREF "]"
#define TSRC_RT_ANN "ClusterTrainingRuntime/rt: metadata.annotations[" ANN_REQ "]"
#define TSRC_RT_FIELD "ClusterTrainingRuntime/rt: spec.podGroupPolicy.volcano.networkTopology"
#define TSRC_NS "Namespace default: metadata.annotations[" ANN_PREF "]"
#define TSRC_CONFIG "config topology.default"

START_TEST(topology_precedence_table) {
  const struct {
    int first;
    const struct gc_backend *backend;
    const char *mode;
    int64_t tier;     /* 0: by name */
    const char *name; /* NULL: by tier */
    int level;
    const char *source;
  } cases[] = {
      {0, TB_VOLCANO, "soft", 2, NULL, 0, TSRC_TJ},
      {1, TB_VOLCANO, "hard", 0, "example.com/rack", 3, TSRC_RT_ANN},
      {2, TB_VOLCANO, "soft", 3, NULL, 0, TSRC_RT_FIELD},
      {3, TB_VOLCANO, "soft", 0, "spine", 0, TSRC_NS},
      {4, TB_VOLCANO, "hard", 0, "example.com/block", 2, TSRC_CONFIG},
      {0, TB_COSCHED, "soft", 2, NULL, 0, TSRC_TJ},
      {1, TB_COSCHED, "hard", 0, "example.com/rack", 3, TSRC_RT_ANN},
      /* networkTopology belongs to the volcano policy: not for coscheduling. */
      {2, TB_COSCHED, "soft", 0, "spine", 0, TSRC_NS},
      {3, TB_COSCHED, "soft", 0, "spine", 0, TSRC_NS},
      {4, TB_COSCHED, "hard", 0, "example.com/block", 2, TSRC_CONFIG},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int first = cases[i].first;
    struct srcs s = {0};
    if (first <= 0)
      s.tj_ann = ANN_PREF ": \"2\"";
    if (first <= 1)
      s.rt_ann = ANN_REQ ": example.com/rack";
    if (first <= 2)
      s.rt_policy = cases[i].backend == TB_VOLCANO
                        ? "{volcano: {networkTopology: {mode: soft, highestTierAllowed: 3}}}"
                        : NULL;
    if (first <= 3)
      s.ns_ann = ANN_PREF ": spine";
    s.topology_default = "required:example.com/block";
    struct run run;
    run_with(&run, &s, cases[i].backend);
    ok(&run);
    const struct gc_topology_policy *tp = &run.r.g->topology;
    ck_assert_msg(tp->set, "case %zu", i);
    ck_assert_str_eq(tp->mode, cases[i].mode);
    ck_assert_str_eq(tp->source, cases[i].source);
    ck_assert_int_eq(tp->level, cases[i].level);
    if (cases[i].name) {
      ck_assert_str_eq(tp->highest_tier_name, cases[i].name);
      ck_assert(!tp->has_highest_tier);
    } else {
      ck_assert_ptr_null(tp->highest_tier_name);
      ck_assert(tp->has_highest_tier);
      ck_assert_int_eq(tp->highest_tier, cases[i].tier);
    }
    /* Only the runtime's own networkTopology goes into a Volcano PodGroup;
     * every other source is gangbridge's placement policy. */
    ck_assert_int_eq(tp->in_podgroup, first == 2 && cases[i].backend == TB_VOLCANO);
    struct gc_arena *a = gc_arena_new(0);
    ck_assert_int_eq(rendered(run.r.g, a, "spec.networkTopology") != NULL, tp->in_podgroup);
    char *text = NULL;
    ck_assert_int_eq(gc_explain(run.r.g, &text), 0);
    ck_assert_msg(strstr(text, gb_test_fmt("from %s", cases[i].source)), "case %zu:\n%s", i,
                  text);
    free(text);
    gc_arena_free(a);
    run_free(&run);
  }
  /* No source: no policy. */
  struct srcs none = {0};
  struct run run;
  run_with(&run, &none, TB_VOLCANO);
  ok(&run);
  ck_assert(!run.r.g->topology.set);
  run_free(&run);
}
END_TEST

static void topology_bad(int where, const char *ann, const char *want) {
  struct srcs s = {0};
  if (where == 0)
    s.tj_ann = ann;
  else if (where == 1)
    s.rt_ann = ann;
  else if (where == 3)
    s.ns_ann = ann;
  else
    s.topology_default = ann;
  struct run run;
  run_with(&run, &s, TB_VOLCANO);
  ck_assert_int_eq(run.r.rc, GC_EINVAL);
  if (!gb_test_has_diag(&run.r.diags, want)) {
    gb_test_dump(&run.r.diags);
    ck_abort_msg("missing: %s", want);
  }
  run_free(&run);
}

START_TEST(topology_bad_from_each_source) {
  static const char *const prefix[] = {
      "default/job: metadata.annotations",
      "default/job: ClusterTrainingRuntime/rt: metadata.annotations", NULL,
      "default/job: Namespace default: metadata.annotations"};
  for (int w = 0; w < 4; w++) {
    if (!prefix[w])
      continue;
    topology_bad(w, ANN_REQ ": a, " ANN_PREF ": b",
                 gb_test_fmt("%s: " ANN_REQ " and " ANN_PREF " are both set; set one of them",
                             prefix[w]));
    topology_bad(w, ANN_REQ ": \"\"",
                 gb_test_fmt("%s[" ANN_REQ "]: must not be empty: give a tier number, a tier "
                             "name or a node label key",
                             prefix[w]));
    topology_bad(w, ANN_PREF ": \"0\"",
                 gb_test_fmt("%s[" ANN_PREF "]: tier 0 is out of range: tiers are 1 to 64",
                             prefix[w]));
    topology_bad(w, ANN_REQ ": \"65\"",
                 gb_test_fmt("%s[" ANN_REQ "]: tier 65 is out of range: tiers are 1 to 64",
                             prefix[w]));
    topology_bad(w, ANN_REQ ": \"a b\"",
                 gb_test_fmt("%s[" ANN_REQ "]: \"a b\" is neither a tier number nor a tier name "
                             "or node label key",
                             prefix[w]));
    topology_bad(w, ANN_REQ ": 2",
                 gb_test_fmt("%s[" ANN_REQ "]: must be a string", prefix[w]));
  }
  topology_bad(4, "sideways:2",
               "default/job: config topology.default: \"sideways:2\" must be \"required:VALUE\" or "
               "\"preferred:VALUE\"");
  topology_bad(4, "required:0",
               "default/job: config topology.default: tier 0 is out of range: tiers are 1 to 64");
  char msg[200];
  ck_assert_int_eq(gc_policy_topology_default_check("preferred:example.com/rack", msg,
                                                    sizeof(msg)), 0);
  ck_assert_int_eq(gc_policy_topology_default_check("", msg, sizeof(msg)), 0);
  ck_assert_int_eq(gc_policy_topology_default_check("required:", msg, sizeof(msg)), GC_EINVAL);
  ck_assert_str_eq(msg, "must not be empty: give a tier number, a tier name or a node label key");
  int64_t secs = 0;
  ck_assert_int_eq(gc_policy_timeout_parse("15m", 3, &secs, msg, sizeof(msg)), 0);
  ck_assert_int_eq(secs, 900);
}
END_TEST

/* ---- the platform's maximum ------------------------------------------------------- */

#define ANN_MAX GC_ANN_SCHEDULE_TIMEOUT_MAX

/* Runs s and returns the effective timeout (seconds) with its source. */
static int64_t max_run(struct srcs *s, const struct gc_backend *b, const char **source,
                       int *clamped) {
  struct run run;
  run_with(&run, s, b);
  ok(&run);
  int64_t secs = run.r.g->timeout.set ? run.r.g->timeout.seconds : -1;
  *source = gb_test_fmt("%s", run.r.g->timeout.source ? run.r.g->timeout.source : "");
  *clamped = gb_test_has_warning(run.r.g, GC_WARN_TIMEOUT_CLAMPED, "the maximum set by");
  run_free(&run);
  return secs;
}

START_TEST(timeout_max_clamps_every_source) {
  const char *src;
  int clamped;
  /* A tenant's TrainJob annotation beyond config timeouts.max is clamped,
   * with a warning naming the tenant's source and the ceiling's. */
  struct srcs s = {0};
  s.tj_ann = ANN_T ": 720h";
  s.timeout_max = "24h";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 86400);
  ck_assert(clamped);
  ck_assert_ptr_nonnull(strstr(src, "config timeouts.max"));
  ck_assert_ptr_nonnull(strstr(src, SRC_TJ " asked for 720h0m0s"));
  /* Shorter values are untouched. */
  s.tj_ann = ANN_T ": 10m";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 600);
  ck_assert(!clamped);
  ck_assert_str_eq(src, SRC_TJ);
  /* The Namespace's and the Queue's ceilings only lower it: the smallest
   * of the three present wins, whichever it is. */
  s.tj_ann = ANN_T ": 30h";
  s.ns_ann = "scheduling.volcano.sh/queue-name: q1, " ANN_MAX ": 48h";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 86400);
  ck_assert_ptr_nonnull(strstr(src, "config timeouts.max"));
  s.ns_ann = "scheduling.volcano.sh/queue-name: q1, " ANN_MAX ": 2h";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 7200);
  ck_assert_ptr_nonnull(strstr(src, "Namespace default: metadata.annotations[" ANN_MAX "]"));
  s.queue_ann = ANN_MAX ": 90m";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 5400);
  ck_assert_ptr_nonnull(strstr(src, "Queue q1: metadata.annotations[" ANN_MAX "]"));
  ck_assert(clamped);
  /* Coscheduling has no Queue: the Queue's ceiling does not apply. */
  ck_assert_int_eq(max_run(&s, TB_COSCHED, &src, &clamped), 7200);
  /* The runtime and the platform's own sources are clamped too. */
  s = (struct srcs){0};
  s.rt_policy = "{coscheduling: {scheduleTimeoutSeconds: 800}}";
  s.ns_ann = ANN_MAX ": 5m";
  ck_assert_int_eq(max_run(&s, TB_UNSET, &src, &clamped), 300);
  s = (struct srcs){0};
  s.timeout_default = "2h";
  s.timeout_max = "1h";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 3600);
  ck_assert_ptr_nonnull(strstr(src, "config timeouts.default asked for 2h0m0s"));
}
END_TEST

START_TEST(timeout_max_without_timeout) {
  const char *src;
  int clamped;
  /* A Volcano gang without any timeout would wait without limit: with a
   * maximum it gets the maximum. */
  struct srcs s = {0};
  s.timeout_max = "6h";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 21600);
  ck_assert(!clamped);
  ck_assert_str_eq(src, "config timeouts.max (the maximum; no source gave a timeout)");
  /* Coscheduling keeps the API's 60 s, unless the maximum is lower. */
  ck_assert_int_eq(max_run(&s, TB_COSCHED, &src, &clamped), -1);
  s.timeout_max = "30s";
  ck_assert_int_eq(max_run(&s, TB_COSCHED, &src, &clamped), 30);
  /* No maximum anywhere: unchanged (no timeout). */
  s.timeout_max = NULL;
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), -1);
}
END_TEST

START_TEST(timeout_max_bad_values) {
  /* A ceiling the platform meant to set never vanishes silently: a bad one
   * is an error naming it and the TrainJob it stopped. */
  struct srcs s = {0};
  s.ns_ann = ANN_MAX ": \"1d\"";
  struct run run;
  run_with(&run, &s, TB_VOLCANO);
  ck_assert_int_eq(run.r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&run.r.diags,
                             "default/job: Namespace default: metadata.annotations[" ANN_MAX
                             "]: invalid duration \"1d\": unknown unit \"d\""));
  run_free(&run);
  s = (struct srcs){0};
  s.ns_ann = "scheduling.volcano.sh/queue-name: q1";
  s.queue_ann = ANN_MAX ": \"0s\"";
  run_with(&run, &s, TB_VOLCANO);
  ck_assert_int_eq(run.r.rc, GC_EINVAL);
  ck_assert(gb_test_has_diag(&run.r.diags, "default/job: Queue q1: metadata.annotations[" ANN_MAX
                                           "]: invalid duration \"0s\": must be greater than 0"));
  run_free(&run);
  /* The TrainJob cannot raise its own ceiling: the annotation means nothing there. */
  s = (struct srcs){0};
  s.tj_ann = ANN_MAX ": 720h, " ANN_T ": 100h";
  s.timeout_max = "1h";
  const char *src;
  int clamped;
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 3600);
  /* Reading the Queue's ceiling does not read its timeout: a bad one there
   * still blocks no gang whose own source answers. */
  s = (struct srcs){0};
  s.tj_ann = ANN_T ": 10m";
  s.ns_ann = "scheduling.volcano.sh/queue-name: q1";
  s.queue_ann = ANN_T ": 15x, " ANN_MAX ": 1h";
  ck_assert_int_eq(max_run(&s, TB_VOLCANO, &src, &clamped), 600);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("policy");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, timeout_precedence_table);
  tcase_add_test(tc, timeout_none_and_backend_limits);
  tcase_add_test(tc, timeout_bad_from_each_source);
  tcase_add_test(tc, topology_precedence_table);
  tcase_add_test(tc, topology_bad_from_each_source);
  tcase_add_test(tc, timeout_max_clamps_every_source);
  tcase_add_test(tc, timeout_max_without_timeout);
  tcase_add_test(tc, timeout_max_bad_values);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
