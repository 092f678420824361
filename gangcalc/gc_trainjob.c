/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_trainjob: the checks of a TrainJob's own fields (see gc_trainjob.h).
 */
#include "gc_trainjob.h"

#include <string.h>

static const char *const MULTIKUEUE = "kueue.x-k8s.io/multikueue";

/* numProcPerNode as int >= 1 or "auto"/"cpu"/"gpu" (v2.0/v2.1 IntOrString);
 * returns 1 when a string form was used (a v2.1-or-older marker). */
int gc_trainjob_check_num_proc(struct ctx *c, const char *prefix, const struct gc_value *v,
                               const char *path) {
  if (gc_is_null(v))
    return 0;
  int64_t n;
  if (gc_gang_int_value(v, &n)) {
    if (n < 1)
      gc_gang_fail(c, prefix, "%s: numProcPerNode must be greater than or equal to 1", path);
    else if (n > INT32_MAXV)
      gc_gang_fail(c, prefix, "%s: must be <= %lld", path, (long long)INT32_MAXV);
    return 0;
  }
  if (v->type == GC_STR) {
    if (strcmp(v->u.s, "auto") && strcmp(v->u.s, "cpu") && strcmp(v->u.s, "gpu"))
      gc_gang_fail(c, prefix, "%s: must be an integer >= 1 or one of \"auto\", \"cpu\", \"gpu\"",
                   path);
    return 1;
  }
  gc_gang_fail(c, prefix, "%s: must be an integer or a string", path);
  return 0;
}

static void check_resources_per_node(struct ctx *c, struct tj_info *t, const struct gc_value *v) {
  const char *base = "spec.trainer.resourcesPerNode";
  if (!gc_gang_get_map(c, c->tj, v, base, NULL))
    return;
  size_t before = c->errors;
  static const char *const LISTS[] = {"requests", "limits"};
  static const char *const PATHS[] = {"spec.trainer.resourcesPerNode.requests",
                                      "spec.trainer.resourcesPerNode.limits"};
  for (size_t k = 0; k < 2; k++) {
    const struct gc_value *l = gc_map_get(v, LISTS[k]);
    const char *path = PATHS[k];
    if (!gc_gang_get_map(c, c->tj, l, path, NULL))
      continue;
    struct gc_reslist tmp = GC_RESLIST_INIT;
    size_t e0 = c->d ? c->d->errors : 0;
    /* Quietly first; the path is formatted only to report a problem. */
    int rc = gc_reslist_from_value(c->a, l, "", &tmp, NULL);
    if (rc && rc != GC_ENOMEM)
      rc = gc_reslist_from_value(c->a, l, gc_gang_fmt(c, "%s: %s", c->tj, path), &tmp, c->d);
    if (rc == GC_ENOMEM)
      c->oom = 1;
    else if (rc)
      c->errors += (c->d && c->d->errors > e0) ? c->d->errors - e0 : 1;
  }
  const struct gc_value *claims = gc_gang_get_seq(c, c->tj, GET(v, "claims"),
                                                  "spec.trainer.resourcesPerNode.claims", NULL);
  for (size_t i = 0; claims && i < claims->len; i++) {
    const struct gc_value *cl = claims->u.items[i];
    const char *n = NULL;
    if (cl->type != GC_MAP || gc_gang_get_str(c, c->tj, GET(cl, "name"), "", &n) != 1 || !*n)
      gc_gang_fail(c, c->tj, "%s.claims[%zu].name: required", base, i);
  }
  if (c->errors == before)
    t->rpn = v;
}

static int opt_map(const struct gc_value *v) { return gc_is_null(v) || v->type == GC_MAP; }

static int opt_string_map(const struct gc_value *v) {
  if (!opt_map(v))
    return 0;
  for (size_t i = 0; v && v->type == GC_MAP && i < v->len; i++)
    if (v->u.members[i].value->type != GC_STR)
      return 0;
  return 1;
}

/* 1 when runtime patch i passes every check of check_patch (the
 * usual case), so no path needs to be built; 0 sends it to check_patch,
 * which reports it. */
static int patch_quiet_ok(const struct gc_value *patches, size_t i) {
  const struct gc_value *p = patches->u.items[i];
  if (gc_is_null(p))
    return 1;
  if (p->type != GC_MAP)
    return 0;
  const char *mgr = gc_value_as_str(GET(p, "manager"));
  if (!mgr || !*mgr)
    return 0;
  for (size_t k = 0; k < i; k++) {
    const char *om = gc_value_as_str(GET(patches->u.items[k], "manager"));
    if (om && !strcmp(om, mgr))
      return 0;
  }
  const struct gc_value *trs = GET(p, "trainingRuntimeSpec");
  const struct gc_value *tpl = GET(trs, "template");
  const struct gc_value *meta = GET(tpl, "metadata");
  const struct gc_value *ps = GET(tpl, "spec");
  const struct gc_value *rjs = GET(ps, "replicatedJobs");
  if (!opt_map(trs) || !opt_map(tpl) || !opt_map(meta) || !opt_map(ps) ||
      !opt_string_map(GET(meta, "labels")) || !opt_string_map(GET(meta, "annotations")) ||
      !(gc_is_null(rjs) || rjs->type == GC_SEQ))
    return 0;
  for (size_t j = 0; rjs && rjs->type == GC_SEQ && j < rjs->len; j++) {
    const struct gc_value *rj = rjs->u.items[j];
    if (gc_is_null(rj))
      continue;
    const char *jn = gc_value_as_str(GET(rj, "name"));
    if (rj->type != GC_MAP || !jn || !*jn)
      return 0;
  }
  return 1;
}

/* spec.runtimeRef: sets t->ref_* when it names a runtime kind this
 * Trainer supports. */
static void check_runtime_ref(struct ctx *c, const struct gc_value *spec, struct tj_info *t) {
  const struct gc_value *ref = GET(spec, "runtimeRef");
  if (gc_is_null(ref)) {
    gc_gang_fail(c, c->tj, "spec.runtimeRef: required");
  } else if (ref->type != GC_MAP) {
    gc_gang_fail(c, c->tj, "spec.runtimeRef: must be an object");
  } else {
    const char *name = NULL, *group = GC_TRAINER_GROUP, *kind = "ClusterTrainingRuntime";
    int ok = 1;
    int r = gc_gang_get_str(c, c->tj, GET(ref, "name"), "spec.runtimeRef.name", &name);
    if (r == 0 || (r == 1 && !*name)) {
      gc_gang_fail(c, c->tj, "spec.runtimeRef.name: required");
      ok = 0;
    } else if (r < 0) {
      ok = 0;
    } else if (strlen(name) > 253) {
      gc_gang_fail(c, c->tj, "spec.runtimeRef.name: must be no more than 253 characters");
      ok = 0;
    }
    if (gc_gang_get_str(c, c->tj, GET(ref, "apiGroup"), "spec.runtimeRef.apiGroup", &group) < 0 ||
        gc_gang_get_str(c, c->tj, GET(ref, "kind"), "spec.runtimeRef.kind", &kind) < 0)
      ok = 0;
    if (ok) {
      int known_kind = !strcmp(kind, "ClusterTrainingRuntime") || !strcmp(kind, "TrainingRuntime");
      if (!known_kind) {
        gc_gang_fail(c, c->tj,
                     "spec.runtimeRef.kind: Unsupported value: \"%.*s\": supported values: "
                     "\"ClusterTrainingRuntime\", \"TrainingRuntime\"",
                     NAME_SHOW_MAX, kind);
        ok = 0;
      } else if (strcmp(group, GC_TRAINER_GROUP) != 0) {
        gc_gang_fail(c, c->tj, "spec.runtimeRef: unsupported runtime: %.*s.%.*s", NAME_SHOW_MAX,
                     kind, NAME_SHOW_MAX, group);
        ok = 0;
      }
    }
    if (ok) {
      t->ref_name = name;
      t->ref_cluster = strcmp(kind, "ClusterTrainingRuntime") == 0;
      t->ref_ok = 1;
    }
  }
}

/* spec.trainer: numNodes, resourcesPerNode and numProcPerNode. */
static void check_trainer(struct ctx *c, const struct gc_value *spec, struct tj_info *t) {
  const struct gc_value *tr = gc_gang_get_map(c, c->tj, GET(spec, "trainer"), "spec.trainer", NULL);
  t->trainer = tr;
  if (tr) {
    int64_t n;
    int r = gc_gang_get_int(c, c->tj, GET(tr, "numNodes"), "spec.trainer.numNodes", 0, INT32_MAXV,
                            &n);
    if (r == 1) {
      t->has_numnodes = 1;
      t->numnodes = n;
    }
    check_resources_per_node(c, t, GET(tr, "resourcesPerNode"));
    if (gc_trainjob_check_num_proc(c, c->tj, GET(tr, "numProcPerNode"),
                                   "spec.trainer.numProcPerNode"))
      t->v21 = 1;
  }
}

/* spec.suspend and spec.managedBy. */
static void check_suspend_managed(struct ctx *c, const struct gc_value *spec) {
  int susp = 0;
  if (gc_gang_get_bool(c, c->tj, GET(spec, "suspend"), "spec.suspend", &susp) == 1)
    c->g->suspended = susp;
  const char *managed = NULL;
  if (gc_gang_get_str(c, c->tj, GET(spec, "managedBy"), "spec.managedBy", &managed) == 1) {
    if (!strcmp(managed, MULTIKUEUE))
      WARN(c, GC_WARN_OTHER,
           "spec.managedBy is %s: Trainer leaves this TrainJob to MultiKueue and creates no "
           "PodGroup in this cluster",
           MULTIKUEUE);
    else if (strcmp(managed, GC_TRAINER_CONTROLLER) != 0)
      gc_gang_fail(c, c->tj, "spec.managedBy: must be one of \"%s\", \"%s\"", GC_TRAINER_CONTROLLER,
                   MULTIKUEUE);
  }
}

/* Reports every problem of runtime patch i, one that patch_quiet_ok
 * refused, with its path. */
static void check_patch(struct ctx *c, const struct gc_value *patches, size_t i) {
  const struct gc_value *p = patches->u.items[i];
  char *path = gc_gang_fmt(c, "spec.runtimePatches[%zu]", i);
  if (!gc_gang_get_map(c, c->tj, p, path, NULL))
    return;
  const char *mgr = NULL;
  int r = gc_gang_get_str(c, c->tj, GET(p, "manager"), gc_gang_fmt(c, "%s.manager", path), &mgr);
  if (r == 0 || (r == 1 && !*mgr))
    gc_gang_fail(c, c->tj, "%s.manager: required", path);
  for (size_t k = 0; r == 1 && *mgr && k < i; k++) {
    const char *om = gc_value_as_str(GET(patches->u.items[k], "manager"));
    if (om && !strcmp(om, mgr))
      gc_gang_fail(c, c->tj, "%s.manager: duplicate value \"%.*s\"", path, NAME_SHOW_MAX, mgr);
  }
  const struct gc_value *trs = gc_gang_get_map(c, c->tj, GET(p, "trainingRuntimeSpec"),
                                               gc_gang_fmt(c, "%s.trainingRuntimeSpec", path),
                                               NULL);
  const char *tpath = gc_gang_fmt(c, "%s.trainingRuntimeSpec.template", path);
  const struct gc_value *tpl = gc_gang_get_map(c, c->tj, GET(trs, "template"), tpath, NULL);
  const struct gc_value *meta = gc_gang_get_map(c, c->tj, GET(tpl, "metadata"),
                                                gc_gang_fmt(c, "%s.metadata", tpath), NULL);
  gc_gang_check_string_map(c, c->tj, GET(meta, "labels"),
                           gc_gang_fmt(c, "%s.metadata.labels", tpath));
  gc_gang_check_string_map(c, c->tj, GET(meta, "annotations"),
                           gc_gang_fmt(c, "%s.metadata.annotations", tpath));
  const struct gc_value *ps = gc_gang_get_map(c, c->tj, GET(tpl, "spec"),
                                              gc_gang_fmt(c, "%s.spec", tpath), NULL);
  const struct gc_value *rjs = gc_gang_get_seq(
      c, c->tj, GET(ps, "replicatedJobs"), gc_gang_fmt(c, "%s.spec.replicatedJobs", tpath), NULL);
  for (size_t j = 0; rjs && j < rjs->len; j++) {
    const struct gc_value *rj = rjs->u.items[j];
    char *jp = gc_gang_fmt(c, "%s.spec.replicatedJobs[%zu]", tpath, j);
    const char *jn = NULL;
    if (!gc_gang_get_map(c, c->tj, rj, jp, NULL))
      continue;
    int jr = gc_gang_get_str(c, c->tj, GET(rj, "name"), gc_gang_fmt(c, "%s.name", jp), &jn);
    if (jr == 0 || (jr == 1 && !*jn))
      gc_gang_fail(c, c->tj, "%s.name: required", jp);
  }
}

void gc_trainjob_check(struct ctx *c, const struct gc_value *tj, struct tj_info *t) {
  const struct gc_value *spec = GET(tj, "spec");
  if (gc_is_null(spec) || spec->type != GC_MAP) {
    gc_gang_fail(c, c->tj, "spec: %s", gc_is_null(spec) ? "required" : "must be an object");
    return;
  }
  t->spec = spec;
  check_runtime_ref(c, spec, t);
  check_trainer(c, spec, t);
  check_suspend_managed(c, spec);

  /* v2.0 / v2.1 fields */
  if (!gc_is_null(GET(spec, "podSpecOverrides")))
    t->v20 = 1;
  if (!gc_is_null(GET(spec, "podTemplateOverrides")))
    t->v21 = 1;
  if (!gc_is_null(GET(spec, "labels")) || !gc_is_null(GET(spec, "annotations")))
    t->v21 = 1;
  gc_gang_check_string_map(c, c->tj, GET(spec, "labels"), "spec.labels");
  gc_gang_check_string_map(c, c->tj, GET(spec, "annotations"), "spec.annotations");

  const struct gc_value *patches = gc_gang_get_seq(c, c->tj, GET(spec, "runtimePatches"),
                                                   "spec.runtimePatches", NULL);
  if (patches) {
    t->v22 = 1;
    if (patches->len > RUNTIME_PATCHES_MAX)
      gc_gang_fail(c, c->tj, "spec.runtimePatches: must have at most %d items",
                   RUNTIME_PATCHES_MAX);
    for (size_t i = 0; i < patches->len && i < 1000; i++)
      if (!patch_quiet_ok(patches, i))
        check_patch(c, patches, i);
  }
  const char *gen = t->v22 ? "v2.2+" : t->v20 ? "v2.0" : t->v21 ? "v2.1" : "v2.2+";
  c->g->api_generation = gen;
  if ((t->v20 && !gc_is_null(GET(spec, "podTemplateOverrides"))) || (t->v22 && (t->v20 || t->v21)))
    WARN(c, GC_WARN_OTHER,
         "the TrainJob mixes fields of several Trainer API generations (podSpecOverrides: v2.0; "
         "podTemplateOverrides, spec.labels/annotations, string numProcPerNode: v2.1; "
         "runtimePatches: v2.2+); a real cluster accepts only one of them; all are applied here");
}
