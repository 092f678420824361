/* SPDX-License-Identifier: Apache-2.0
 *
 * PodGroup rendering for both backends and the explanation text.  Every
 * rendered object is checked against the CRD schemas in tests/shared/crds/
 * (types, required fields, enums, minimum, maxLength, patterns, unknown
 * fields) and for kubectl's sorted key order.
 */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_test.h"

#define CTR "ClusterTrainingRuntime"

/* ---- a small structural-schema check ----------------------------------- */

static int schema_errors;

static void bad(const char *path, const char *what) {
  fprintf(stderr, "schema: %s: %s\n", path, what);
  schema_errors++;
}

static void check_node(const struct gc_value *v, const struct gc_value *s, const char *path) {
  char sub[512];
  const char *type = gc_value_as_str(gc_map_get(s, "type"));
  const struct gc_value *ios = gc_map_get(s, "x-kubernetes-int-or-string");
  if (ios && ios->type == GC_BOOL && ios->u.b) {
    if (v->type != GC_INT && v->type != GC_STR)
      bad(path, "must be an integer or a string");
  } else if (type && !strcmp(type, "object")) {
    if (v->type != GC_MAP) {
      bad(path, "must be an object");
      return;
    }
    const struct gc_value *props = gc_map_get(s, "properties");
    const struct gc_value *addl = gc_map_get(s, "additionalProperties");
    for (size_t i = 0; i < v->len; i++) {
      const char *k = v->u.members[i].key;
      snprintf(sub, sizeof(sub), "%s.%s", path, k);
      const struct gc_value *ps = gc_map_get(props, k);
      if (ps)
        check_node(v->u.members[i].value, ps, sub);
      else if (addl && addl->type == GC_MAP)
        check_node(v->u.members[i].value, addl, sub);
      else if (props)
        bad(sub, "unknown field (a structural schema would prune it)");
    }
    const struct gc_value *req = gc_map_get(s, "required");
    for (size_t i = 0; req && i < req->len; i++)
      if (!gc_map_get(v, req->u.items[i]->u.s))
        bad(path, "required field missing");
  } else if (type && !strcmp(type, "array")) {
    if (v->type != GC_SEQ) {
      bad(path, "must be an array");
      return;
    }
    for (size_t i = 0; i < v->len; i++) {
      snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
      check_node(v->u.items[i], gc_map_get(s, "items"), sub);
    }
  } else if (type && !strcmp(type, "integer")) {
    if (v->type != GC_INT) {
      bad(path, "must be an integer");
      return;
    }
    const struct gc_value *min = gc_map_get(s, "minimum"), *max = gc_map_get(s, "maximum");
    if (min && v->u.i < min->u.i)
      bad(path, "below minimum");
    if (max && v->u.i > max->u.i)
      bad(path, "above maximum");
    const char *f = gc_value_as_str(gc_map_get(s, "format"));
    if (f && !strcmp(f, "int32") && (v->u.i < INT32_MIN || v->u.i > INT32_MAX))
      bad(path, "not an int32");
  } else if (type && !strcmp(type, "boolean")) {
    if (v->type != GC_BOOL)
      bad(path, "must be a boolean");
  }
  if ((type && !strcmp(type, "string")) || v->type == GC_STR) {
    if (type && !strcmp(type, "string") && v->type != GC_STR) {
      bad(path, "must be a string");
      return;
    }
    if (v->type != GC_STR)
      return;
    const struct gc_value *en = gc_map_get(s, "enum");
    if (en) {
      int ok = 0;
      for (size_t i = 0; i < en->len; i++)
        ok |= en->u.items[i]->type == GC_STR && !strcmp(en->u.items[i]->u.s, v->u.s);
      if (!ok)
        bad(path, "not in enum");
    }
    const struct gc_value *ml = gc_map_get(s, "maxLength");
    if (ml && (int64_t)v->len > ml->u.i)
      bad(path, "longer than maxLength");
    const char *pat = gc_value_as_str(gc_map_get(s, "pattern"));
    if (pat) {
      regex_t re;
      ck_assert_int_eq(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
      if (regexec(&re, v->u.s, 0, NULL, 0) != 0)
        bad(path, "does not match pattern");
      regfree(&re);
    }
  }
}

/* Keys of every map are in ascending byte order, as kubectl prints them. */
static void check_sorted(const struct gc_value *v, const char *path) {
  if (v->type == GC_MAP) {
    for (size_t i = 0; i < v->len; i++) {
      if (i && strcmp(v->u.members[i - 1].key, v->u.members[i].key) >= 0)
        bad(path, "keys not sorted");
      check_sorted(v->u.members[i].value, v->u.members[i].key);
    }
  } else if (v->type == GC_SEQ) {
    for (size_t i = 0; i < v->len; i++)
      check_sorted(v->u.items[i], path);
  }
}

/* Returns the number of schema problems found in pg. */
static int crd_problems(const struct gc_value *pg) {
  const char *api = gc_value_as_str(gc_map_get(pg, "apiVersion"));
  ck_assert_ptr_nonnull(api);
  static const struct {
    const char *api, *group, *file;
  } crds[] = {
      {"scheduling.volcano.sh/v1beta1", "scheduling.volcano.sh",
       "tests/shared/crds/volcano/scheduling.volcano.sh_podgroups.yaml"},
      {"scheduling.x-k8s.io/v1alpha1", "scheduling.x-k8s.io",
       "tests/shared/crds/coscheduling/scheduling.x-k8s.io_podgroups.yaml"},
      {"scheduling.run.ai/v2alpha2", "scheduling.run.ai",
       "tests/shared/crds/kai/scheduling.run.ai_podgroups.yaml"},
  };
  size_t which = 0;
  while (which < sizeof(crds) / sizeof(crds[0]) && strcmp(api, crds[which].api))
    which++;
  ck_assert_msg(which < sizeof(crds) / sizeof(crds[0]), "no CRD for %s", api);
  char *text = gb_test_read_src(crds[which].file);
  struct gb_docset *ds = gb_test_load(text);
  free(text);
  const struct gc_value *crd = NULL;
  for (size_t i = 0; i < ds->n && !crd; i++)
    if (!strcmp(gc_value_as_str(gc_map_get(ds->docs[i].root, "kind")), "CustomResourceDefinition"))
      crd = ds->docs[i].root;
  ck_assert_ptr_nonnull(crd);
  ck_assert_str_eq(gc_value_as_str(gc_value_path(crd, "spec.names.kind")), "PodGroup");
  const struct gc_value *vers = gc_value_path(crd, "spec.versions");
  const struct gc_value *schema = NULL;
  const char *want_version = strchr(api, '/') + 1;
  ck_assert_str_eq(gc_value_as_str(gc_value_path(crd, "spec.group")), crds[which].group);
  for (size_t i = 0; i < vers->len; i++)
    if (!strcmp(gc_value_as_str(gc_map_get(vers->u.items[i], "name")), want_version))
      schema = gc_value_path(vers->u.items[i], "schema.openAPIV3Schema");
  ck_assert_ptr_nonnull(schema);
  schema_errors = 0;
  check_node(pg, schema, "PodGroup");
  check_sorted(pg, "PodGroup");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(pg, "kind")), "PodGroup");
  const struct gc_value *meta = gc_map_get(pg, "metadata");
  ck_assert_ptr_nonnull(gc_value_as_str(gc_map_get(meta, "name")));
  ck_assert_ptr_nonnull(gc_value_as_str(gc_map_get(meta, "namespace")));
  gb_docset_free(ds);
  return schema_errors;
}

static void validate_against_crd(const struct gc_value *pg) {
  ck_assert_int_eq(crd_problems(pg), 0);
}

/* ---- rendering ---------------------------------------------------------- */

static const char *str_at(const struct gc_value *v, const char *path) {
  const char *s = gc_value_as_str(gc_value_path(v, path));
  ck_assert_msg(s != NULL, "%s missing", path);
  return s;
}

static int64_t int_at(const struct gc_value *v, const char *path) {
  const struct gc_value *n = gc_value_path(v, path);
  ck_assert_msg(n && n->type == GC_INT, "%s missing or not an integer", path);
  return n->u.i;
}

static const char *full_runtime(const char *policy, const char *meta_ann) {
  return gb_test_fmt(
      "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
      "metadata: {name: rt}\nspec:\n  mlPolicy: {numNodes: 2, torch: {}}\n%s"
      "  template:\n    metadata: {annotations: {%s}}\n    spec:\n      replicatedJobs:\n"
      "      - name: dataset-initializer\n"
      "        template:\n          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step:"
      " dataset-initializer}}\n"
      "          spec: {template: {spec: {containers: [{name: dataset-initializer, "
      "resources: {requests: {cpu: 250m, memory: 512Mi}}}]}}}\n"
      "      - name: node\n        dependsOn: [{name: dataset-initializer, status: Complete}]\n"
      "        template:\n          metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step:"
      " trainer}}\n"
      "          spec: {template: {spec: {priorityClassName: high, containers: [{name: node, "
      "resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {nvidia.com/gpu: 1}}}]}}}\n",
      policy, meta_ann);
}

static struct gc_value *render(struct gb_test_run *r, struct gc_arena *a) {
  if (r->rc)
    gb_test_dump(&r->diags);
  ck_assert_int_eq(r->rc, 0);
  struct gc_value *pg = NULL;
  ck_assert_int_eq(gc_render_podgroup(r->g, a, &pg), 0);
  ck_assert_ptr_nonnull(pg);
  validate_against_crd(pg);
  return pg;
}

START_TEST(render_volcano_full) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  gb_test_run_with(
      &r,
      gb_test_fmt("%s%s",
                  full_runtime("  podGroupPolicy: {volcano: {networkTopology: {mode: soft, "
                               "highestTierAllowed: 2}}}\n",
                               "scheduling.volcano.sh/queue-name: research"),
                  gb_test_trainjob("train", "rt", "  trainer: {numNodes: 4}\n")),
      TB_UNSET, GC_SCOPE_WAVE);
  struct gc_value *pg = render(&r, a);
  ck_assert_str_eq(str_at(pg, "apiVersion"), "scheduling.volcano.sh/v1beta1");
  ck_assert_str_eq(str_at(pg, "metadata.name"), "train");
  ck_assert_str_eq(str_at(pg, "metadata.namespace"), "default");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(gc_value_path(pg, "metadata.labels"),
                                              "app.kubernetes.io/managed-by")), "gangbridge");
  const struct gc_value *ann = gc_value_path(pg, "metadata.annotations");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(ann, "gangbridge.io/gang-replicated-jobs")), "node");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(ann, "gangbridge.io/bound-replicated-jobs")),
                   "node");
  const struct gc_value *refs = gc_value_path(pg, "metadata.ownerReferences");
  ck_assert(refs && refs->type == GC_SEQ && refs->len == 1);
  const struct gc_value *ref = refs->u.items[0];
  ck_assert_str_eq(str_at(ref, "apiVersion"), "trainer.kubeflow.org/v1alpha1");
  ck_assert_str_eq(str_at(ref, "kind"), "TrainJob");
  ck_assert_str_eq(str_at(ref, "name"), "train");
  ck_assert_str_eq(str_at(ref, "uid"), "uid-train");
  ck_assert(gc_map_get(ref, "controller")->u.b && gc_map_get(ref, "blockOwnerDeletion")->u.b);
  ck_assert_int_eq(int_at(pg, "spec.minMember"), 4);
  ck_assert_str_eq(str_at(pg, "spec.minResources.cpu"), "2");
  ck_assert_str_eq(str_at(pg, "spec.minResources.memory"), "4Gi");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(gc_value_path(pg, "spec.minResources"),
                                              "nvidia.com/gpu")), "4");
  ck_assert_str_eq(str_at(pg, "spec.queue"), "research");
  ck_assert_str_eq(str_at(pg, "spec.priorityClassName"), "high");
  ck_assert_str_eq(str_at(pg, "spec.networkTopology.mode"), "soft");
  ck_assert_int_eq(int_at(pg, "spec.networkTopology.highestTierAllowed"), 2);
  ck_assert_ptr_null(gc_value_path(pg, "spec.scheduleTimeoutSeconds"));
  gb_test_run_free(&r);

  /* Scope all: both jobs counted and bound. */
  gb_test_run_with(
      &r,
      gb_test_fmt(
          "%s%s",
          full_runtime("  podGroupPolicy: {volcano: {networkTopology: {highestTierName: spine}}}\n",
                       "a: b"),
          gb_test_trainjob("train", "rt", "  trainer: {numNodes: 4}\n")),
      TB_UNSET, GC_SCOPE_ALL);
  pg = render(&r, a);
  ann = gc_value_path(pg, "metadata.annotations");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(ann, "gangbridge.io/gang-replicated-jobs")),
                   "dataset-initializer,node");
  ck_assert_int_eq(int_at(pg, "spec.minMember"), 5);
  ck_assert_str_eq(str_at(pg, "spec.minResources.cpu"), "2250m");
  ck_assert_str_eq(str_at(pg, "spec.minResources.memory"), "4608Mi");
  ck_assert_str_eq(str_at(pg, "spec.networkTopology.highestTierName"), "spine");
  ck_assert_str_eq(str_at(pg, "spec.networkTopology.mode"), "hard");
  ck_assert_ptr_null(gc_value_path(pg, "spec.queue"));
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

START_TEST(render_coscheduling) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  gb_test_run_with(
      &r,
      gb_test_fmt("%s%s",
                  full_runtime("  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 1200}}\n",
                               "a: b"),
                  gb_test_trainjob("train", "rt", "  trainer: {numNodes: 3}\n")),
      TB_UNSET, GC_SCOPE_WAVE);
  struct gc_value *pg = render(&r, a);
  ck_assert_str_eq(str_at(pg, "apiVersion"), "scheduling.x-k8s.io/v1alpha1");
  ck_assert_int_eq(int_at(pg, "spec.minMember"), 3);
  ck_assert_int_eq(int_at(pg, "spec.scheduleTimeoutSeconds"), 900);
  ck_assert_ptr_null(gc_value_path(pg, "spec.queue"));
  ck_assert_ptr_null(gc_value_path(pg, "spec.priorityClassName"));
  ck_assert(gb_test_has_warning(r.g, GC_WARN_TIMEOUT_CLAMPED, NULL));
  gb_test_run_free(&r);

  /* Coscheduling forced for a volcano runtime: the default timeout. */
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s", full_runtime("  podGroupPolicy: {volcano: {}}\n", "a: b"),
                               gb_test_trainjob("train", "rt", NULL)),
                   TB_COSCHED, GC_SCOPE_ALL);
  pg = render(&r, a);
  ck_assert_int_eq(int_at(pg, "spec.scheduleTimeoutSeconds"), 60);
  ck_assert_int_eq(int_at(pg, "spec.minMember"), 3);
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

START_TEST(render_without_uid_or_requests) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  const char *rt = gb_test_runtime(CTR, "rt", "",
                                   gb_test_job("node", NULL, 2, "[{name: node}]", NULL, NULL, NULL),
                                   NULL);
  const char *tj = "---\napiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                   "metadata: {name: j, namespace: team}\nspec: {runtimeRef: {name: rt}}\n";
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, tj), TB_UNSET, GC_SCOPE_WAVE);
  struct gc_value *pg = render(&r, a);
  ck_assert_ptr_null(gc_value_path(pg, "metadata.ownerReferences"));
  ck_assert_str_eq(str_at(pg, "metadata.namespace"), "team");
  const struct gc_value *mr = gc_value_path(pg, "spec.minResources");
  ck_assert(mr && mr->type == GC_MAP && mr->len == 0);
  ck_assert_int_eq(int_at(pg, "spec.minMember"), 2);
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

START_TEST(render_refuses_empty_gang) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_gang g;
  memset(&g, 0, sizeof(g));
  g.arena = a;
  g.name = "x";
  g.namespace_ = "default";
  g.backend = TB_VOLCANO;
  struct gc_value *pg = NULL;
  ck_assert_int_eq(gc_render_podgroup(&g, a, &pg), GC_EINVAL);
  ck_assert_ptr_null(pg);
  g.min_member = 1;
  g.backend = TB_UNSET;
  ck_assert_int_eq(gc_render_podgroup(&g, a, &pg), GC_EINVAL);
  g.backend = TB_COSCHED;
  ck_assert_int_eq(gc_render_podgroup(&g, a, &pg), 0);
  validate_against_crd(pg);
  /* The checker itself catches what the CRD forbids. */
  struct gc_value *spec = gc_map_get(pg, "spec");
  ck_assert_int_eq(gc_map_set(a, spec, "minMember", gc_value_int(a, 0)), 0);
  ck_assert_int_eq(crd_problems(pg), 1);
  ck_assert_int_eq(gc_map_set(a, spec, "minMember", gc_value_int(a, 1)), 0);
  ck_assert_int_eq(gc_map_set(a, spec, "minTaskMember", gc_value_map(a)), 0);
  ck_assert_int_eq(crd_problems(pg), 2); /* unknown field, and keys out of order */
  g.backend = TB_VOLCANO;
  ck_assert_int_eq(gc_render_podgroup(&g, a, &pg), 0);
  spec = gc_map_get(pg, "spec");
  ck_assert_int_eq(gc_map_set(a, spec, "queue", gc_value_strz(a, "Bad_Queue")), 0);
  ck_assert_int_eq(crd_problems(pg), 1);
  gc_arena_free(a);
}
END_TEST

START_TEST(explain_text) {
  struct gb_test_run r;
  gb_test_run_with(&r,
                   gb_test_fmt("%s%s",
                               full_runtime("  podGroupPolicy: {volcano: {}}\n",
                                            "scheduling.volcano.sh/queue-name: q1"),
                               gb_test_trainjob("train", "rt", "  trainer: {numNodes: 4}\n")),
                   TB_UNSET, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  char *text = NULL;
  ck_assert_int_eq(gc_explain(r.g, &text), 0);
  ck_assert_ptr_nonnull(text);
  ck_assert_ptr_nonnull(strstr(text, "TrainJob default/train\n"));
  ck_assert_ptr_nonnull(strstr(text, "runtime:         ClusterTrainingRuntime rt\n"));
  ck_assert_ptr_nonnull(strstr(text, "backend:         volcano (from the runtime's "
                                     "podGroupPolicy)\n"));
  ck_assert_ptr_nonnull(strstr(text, "gang scope:      wave (gang = first wave of dependsOn "
                                     "phase 1, the phase holding the trainer step)\n"));
  ck_assert_ptr_nonnull(strstr(text, "REPLICATED JOB       ANCESTOR             PHASE  WAVE  "));
  ck_assert_ptr_nonnull(strstr(text, "minMember:         4\n"));
  ck_assert_ptr_nonnull(strstr(text, "queue:             q1\n"));
  ck_assert_ptr_nonnull(strstr(text, "minResources:      cpu=2, memory=4Gi, nvidia.com/gpu=4\n"));
  /* Aligned table: every row starts its BINDING column at the same offset. */
  const char *head = strstr(text, "REPLICATED JOB");
  ck_assert_ptr_nonnull(head);
  const char *eol = strchr(head, '\n');
  size_t col = (size_t)(strstr(head, "BINDING") - head);
  const char *row1 = eol + 1;
  const char *row2 = strchr(row1, '\n') + 1;
  ck_assert(strncmp(row1, "dataset-initializer", 19) == 0);
  ck_assert(strncmp(row1 + col, "unbound", 7) == 0);
  ck_assert(strncmp(row2, "node ", 5) == 0);
  ck_assert(strncmp(row2 + col, "gang", 4) == 0);
  ck_assert_ptr_nonnull(strstr(row1, "cpu=250m, memory=512Mi"));
  ck_assert_ptr_nonnull(strstr(row2, "dataset-initializer(Complete)"));
  ck_assert_ptr_nonnull(strstr(text, "warnings:\n  - "));
  ck_assert_ptr_nonnull(strstr(text, "nvidia.com/gpu is set only in limits"));
  free(text);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(explain_coscheduling_all) {
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      CTR, "rt", "  podGroupPolicy: {coscheduling: {scheduleTimeoutSeconds: 0}}\n",
      gb_test_job("node", NULL, 2, "[{name: node, resources: {requests: {cpu: 1}}}]", NULL,
                  "          replicas: 2\n", NULL),
      NULL);
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)), TB_UNSET,
                   GC_SCOPE_ALL);
  ck_assert_int_eq(r.rc, 0);
  char *text = NULL;
  ck_assert_int_eq(gc_explain(r.g, &text), 0);
  ck_assert_ptr_nonnull(strstr(text, "backend:         coscheduling (from the runtime's "
                                     "podGroupPolicy)\n"));
  ck_assert_ptr_nonnull(strstr(text, "gang scope:      all (every replicated job counted"));
  ck_assert_ptr_nonnull(strstr(text, "2 (replicas 2)"));
  ck_assert_ptr_nonnull(
      strstr(text, "schedule timeout:  60 s (no policy source: the coscheduling default)\n"));
  ck_assert_ptr_nonnull(strstr(text, "pod binding:       label scheduling.x-k8s.io/pod-group=job"));
  ck_assert_ptr_nonnull(strstr(text, "scheduleTimeoutSeconds is 0"));
  ck_assert_ptr_null(strstr(text, "queue:"));
  free(text);
  ck_assert_int_eq(gc_explain(NULL, &text), GC_EUSAGE);
  gb_test_run_free(&r);
}
END_TEST

START_TEST(explain_escapes_controls) {
  /* A container or priority class name from a manifest must not drive the
   * terminal ("\e[2J" clears the screen): control characters are escaped in
   * explain, in warnings and in diagnostics. */
  struct gb_test_run r;
  const char *rt = gb_test_runtime(
      "ClusterTrainingRuntime", "rt", "",
      gb_test_job("node", "trainer", -1,
                  "[{name: \"n\\e[2J\", image: x, resources: {limits: {cpu: 1}}}]", NULL, NULL,
                  "priorityClassName: \"hi\\tgh\\n\""),
      NULL);
  gb_test_run_with(&r, gb_test_fmt("%s%s", rt, gb_test_trainjob("job", "rt", NULL)), TB_UNSET,
                   GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  char *text = NULL;
  ck_assert_int_eq(gc_explain(r.g, &text), 0);
  for (const char *p = text; *p; p++)
    ck_assert_msg(*p == '\n' || ((unsigned char)*p >= 0x20 && *p != 0x7f),
                  "control byte 0x%02x in explain output", (unsigned char)*p);
  ck_assert_ptr_nonnull(strstr(text, "container \"n\\x1b[2J\": cpu is set only in limits"));
  ck_assert_ptr_nonnull(strstr(text, "priority class:    hi\\x09gh\\x0a\n"));
  free(text);
  gb_test_run_free(&r);

  struct gc_diags d;
  gc_diags_init(&d);
  gc_diags_addf(&d, "x: %s", "a\x1b[2Jb\r");
  ck_assert_str_eq(d.msgs[0], "x: a\\x1b[2Jb\\x0d");
  gc_diags_destroy(&d);
}
END_TEST

/* ---- KAI ------------------------------------------------------------------ */

#define TB_KAI (gc_backend_by_name("kai"))
#define SKIP "kai.scheduler/skip-podgrouper: \"true\""
#define TOPO "kai.scheduler/topology: cluster-topology"

static const char *kai_job(const char *meta) {
  return gb_test_fmt("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
                     "metadata: {name: job, namespace: ns, uid: u-1%s%s}\n"
                     "spec: {runtimeRef: {name: rt}, trainer: {numNodes: 3}}\n",
                     meta ? ", " : "", meta ? meta : "");
}

static void kai_run(struct gb_test_run *r, const char *rt_ann, const char *tj_meta,
                    enum gc_scope scope) {
  gb_test_run_with(r, gb_test_fmt("%s---\n%s", full_runtime("", rt_ann), kai_job(tj_meta)),
                   TB_KAI, scope);
  if (r->rc)
    gb_test_dump(&r->diags);
  ck_assert_int_eq(r->rc, 0);
}

/* One sub-group per replicated job: the gang's with its count, the
 * initializer's with 0; the root requires all; queue from the TrainJob's
 * label; the topology level within the named Topology; the count annotation. */
START_TEST(render_kai) {
  struct gb_test_run r;
  struct gc_arena *a = gc_arena_new(0);
  kai_run(&r, SKIP ", " TOPO,
          "labels: {kai.scheduler/queue: team-q}, annotations: "
          "{gangbridge.io/topology-preferred: topology.kubernetes.io/zone}",
          GC_SCOPE_WAVE);
  struct gc_value *pg = render(&r, a);
  ck_assert_str_eq(str_at(pg, "apiVersion"), "scheduling.run.ai/v2alpha2");
  ck_assert_int_eq(int_at(pg, "spec.minSubGroup"), 2);
  ck_assert_ptr_null(gc_value_path(pg, "spec.minMember"));
  ck_assert_ptr_null(gc_value_path(pg, "spec.minResources"));
  const struct gc_value *sgs = gc_value_path(pg, "spec.subGroups");
  ck_assert(sgs && sgs->type == GC_SEQ && sgs->len == 2);
  ck_assert_str_eq(str_at(sgs->u.items[0], "name"), "dataset-initializer");
  ck_assert_int_eq(int_at(sgs->u.items[0], "minMember"), 0);
  ck_assert_str_eq(str_at(sgs->u.items[1], "name"), "node");
  ck_assert_int_eq(int_at(sgs->u.items[1], "minMember"), 3);
  ck_assert_str_eq(str_at(pg, "spec.queue"), "team-q");
  ck_assert_str_eq(str_at(pg, "spec.priorityClassName"), "high");
  ck_assert_str_eq(str_at(pg, "spec.topologyConstraint.preferredTopologyLevel"),
                   "topology.kubernetes.io/zone");
  ck_assert_str_eq(str_at(pg, "spec.topologyConstraint.topology"), "cluster-topology");
  ck_assert_ptr_null(gc_value_path(pg, "spec.topologyConstraint.requiredTopologyLevel"));
  const struct gc_value *ann = gc_value_path(pg, "metadata.annotations");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(ann, GC_ANN_MIN_MEMBER)), "3");
  ck_assert(r.g->grouper_skipped);
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_GROUPER_NOT_SKIPPED, NULL));
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_TOPOLOGY_DROPPED, NULL));
  ck_assert(gb_test_has_warning(r.g, GC_WARN_GANG_SCOPE_NARROWED, "join the PodGroup in sub-groups"));
  gb_test_run_free(&r);
  gc_arena_free(a);

  /* Scope all: every job is the gang. */
  a = gc_arena_new(0);
  kai_run(&r, SKIP, NULL, GC_SCOPE_ALL);
  pg = render(&r, a);
  sgs = gc_value_path(pg, "spec.subGroups");
  ck_assert_int_eq(int_at(sgs->u.items[0], "minMember"), 1);
  ck_assert_int_eq(int_at(sgs->u.items[1], "minMember"), 3);
  ck_assert_ptr_null(gc_value_path(pg, "spec.topologyConstraint"));
  gb_test_run_free(&r);
  gc_arena_free(a);
}
END_TEST

/* Where KAI's grouper-skip annotation counts, and the topology that cannot
 * be said. */
START_TEST(kai_warnings) {
  struct gb_test_run r;
  kai_run(&r, TOPO, NULL, GC_SCOPE_WAVE);
  ck_assert(!r.g->grouper_skipped);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_GROUPER_NOT_SKIPPED, "spec.template.metadata"));
  gb_test_run_free(&r);
  /* On the TrainJob: KAI's grouper reads the owner chain. */
  kai_run(&r, TOPO, "annotations: {" SKIP "}", GC_SCOPE_WAVE);
  ck_assert(r.g->grouper_skipped);
  gb_test_run_free(&r);
  /* Another value does not skip. */
  kai_run(&r, "kai.scheduler/skip-podgrouper: \"yes\"", NULL, GC_SCOPE_WAVE);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_GROUPER_NOT_SKIPPED, NULL));
  gb_test_run_free(&r);
  /* A tier number has no KAI level. */
  kai_run(&r, SKIP ", " TOPO, "annotations: {gangbridge.io/topology-required: \"2\"}",
          GC_SCOPE_WAVE);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_TOPOLOGY_DROPPED, "tier 2"));
  gb_test_run_free(&r);
  /* A level without a named Topology. */
  kai_run(&r, SKIP, "annotations: {gangbridge.io/topology-required: rack}", GC_SCOPE_WAVE);
  ck_assert(gb_test_has_warning(r.g, GC_WARN_TOPOLOGY_DROPPED, "kai.scheduler/topology"));
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *pg = render(&r, a);
  ck_assert_ptr_null(gc_value_path(pg, "spec.topologyConstraint"));
  gc_arena_free(a);
  gb_test_run_free(&r);
  /* Other backends never say either. */
  gb_test_run_with(&r, gb_test_fmt("%s---\n%s", full_runtime("", TOPO), kai_job(NULL)),
                   TB_VOLCANO, GC_SCOPE_WAVE);
  ck_assert_int_eq(r.rc, 0);
  ck_assert(!gb_test_has_warning(r.g, GC_WARN_GROUPER_NOT_SKIPPED, NULL));
  ck_assert_ptr_null(r.g->topology_object);
  gb_test_run_free(&r);
}
END_TEST

/* explain names every sub-group and whether KAI's grouper keeps out. */
START_TEST(explain_kai) {
  struct gb_test_run r;
  kai_run(&r, TOPO, NULL, GC_SCOPE_WAVE);
  char *text = NULL;
  ck_assert_int_eq(gc_explain(r.g, &text), 0);
  ck_assert_ptr_nonnull(strstr(text, "sub-groups:        2, all required (minSubGroup 2)\n"));
  ck_assert_ptr_nonnull(strstr(text, "dataset-initializer: minMember 0 (not in the gang"));
  ck_assert_ptr_nonnull(strstr(text, "node: minMember 3 (the gang)\n"));
  ck_assert_ptr_nonnull(strstr(text, "is NOT told to keep out"));
  ck_assert_ptr_nonnull(strstr(text, "(not part of a kai PodGroup)"));
  ck_assert_ptr_nonnull(strstr(text, "label kai.scheduler/subgroup-name=<its replicated job>"));
  free(text);
  gb_test_run_free(&r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("render");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, NULL, gb_test_strings_free);
  tcase_add_test(tc, render_volcano_full);
  tcase_add_test(tc, render_coscheduling);
  tcase_add_test(tc, render_without_uid_or_requests);
  tcase_add_test(tc, render_refuses_empty_gang);
  tcase_add_test(tc, explain_text);
  tcase_add_test(tc, explain_coscheduling_all);
  tcase_add_test(tc, explain_escapes_controls);
  tcase_add_test(tc, render_kai);
  tcase_add_test(tc, kai_warnings);
  tcase_add_test(tc, explain_kai);
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
