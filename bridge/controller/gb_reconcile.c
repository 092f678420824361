/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_reconcile: plan and carry out the reconcile of one TrainJob (see the
 * header and docs/operating.md).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_kobj.h"
#include "gb_log.h"
#include "gb_reconcile.h"
#include "gb_reconcile_test.h"
#include "gc_catalog.h"
#include "gc_name.h"
#include "gc_render.h"

#define RC_ARENA_LIMIT (64u << 20)

const char *gb_rc_action_name(enum gb_rc_action a) {
  switch (a) {
  case GB_RC_SKIP: return "skip";
  case GB_RC_KEEP: return "keep";
  case GB_RC_APPLY: return "apply";
  case GB_RC_DELETE: return "delete";
  case GB_RC_WAIT: return "wait";
  case GB_RC_INVALID: return "invalid";
  }
  return "unknown";
}

/* The slot of backend b in the by-backend arrays (0 for NULL: callers
 * check b first). */
static int bi(const struct gc_backend *b) {
  int i = gc_backend_index(b);
  return i < 0 ? 0 : i;
}

static const char *str_at(const struct gc_value *v, const char *path) {
  return gc_value_as_str(gc_value_path(v, path));
}

static const char *annotation(const struct gc_value *obj, const char *key) {
  return gc_value_as_str(gc_map_get(gc_value_path(obj, "metadata.annotations"), key));
}

static const char *label(const struct gc_value *obj, const char *key) {
  return gc_value_as_str(gc_map_get(gc_value_path(obj, "metadata.labels"), key));
}

int gb_reconcile_value_subset(const struct gc_value *want, const struct gc_value *have) {
  if (!want)
    return 1;
  if (!have)
    return 0;
  if (want->type == GC_MAP) {
    if (have->type != GC_MAP)
      return 0;
    for (size_t i = 0; i < want->len; i++) {
      const struct gc_member *m = &want->u.members[i];
      if (!gb_reconcile_value_subset(m->value, gc_map_getn(have, m->key, m->key_len)))
        return 0;
    }
    return 1;
  }
  if (want->type == GC_SEQ) {
    if (have->type != GC_SEQ || have->len != want->len)
      return 0;
    for (size_t i = 0; i < want->len; i++)
      if (!gb_reconcile_value_subset(want->u.items[i], have->u.items[i]))
        return 0;
    return 1;
  }
  return gc_value_equal(want, have);
}

int gb_reconcile_podgroup_ours(const struct gc_value *pg, const char *tj_uid) {
  const char *mb = label(pg, GC_MANAGED_BY_LABEL);
  if (!mb || strcmp(mb, GC_MANAGER_NAME) != 0 || !tj_uid)
    return 0;
  const struct gc_value *refs = gc_value_path(pg, "metadata.ownerReferences");
  for (size_t i = 0; refs && refs->type == GC_SEQ && i < refs->len; i++) {
    const struct gc_value *ctl = gc_map_get(refs->u.items[i], "controller");
    const char *uid = str_at(refs->u.items[i], "uid");
    if (ctl && ctl->type == GC_BOOL && ctl->u.b && uid && !strcmp(uid, tj_uid))
      return 1;
  }
  return 0;
}

int gb_reconcile_trainjob_finished(const struct gc_value *tj) {
  const struct gc_value *conds = gc_value_path(tj, "status.conditions");
  if (!conds || conds->type != GC_SEQ)
    return 0;
  for (size_t i = 0; i < conds->len; i++) {
    const char *type = str_at(conds->u.items[i], "type");
    const char *status = str_at(conds->u.items[i], "status");
    if (type && status && !strcmp(status, "True") &&
        (!strcmp(type, "Complete") || !strcmp(type, "Failed")))
      return 1;
  }
  return 0;
}

int gb_reconcile_runtime_ref(const struct gc_value *tj, int *cluster, const char **name) {
  const struct gc_value *ref = gc_value_path(tj, "spec.runtimeRef");
  const char *n = gc_value_as_str(gc_map_get(ref, "name"));
  if (!n || !*n)
    return GC_EINVAL;
  const struct gc_value *kv = gc_map_get(ref, "kind");
  const char *kind = gc_value_as_str(kv);
  if (kv && kv->type != GC_NULL && !kind)
    return GC_EINVAL;
  *cluster = !kind || !strcmp(kind, "ClusterTrainingRuntime");
  if (kind && !*cluster && strcmp(kind, "TrainingRuntime") != 0)
    return GC_EINVAL;
  *name = n;
  return 0;
}

/* ---- plan ------------------------------------------------------------------ */

struct planner {
  const struct gb_rc_input *in;
  struct gc_arena *a;
  struct gb_rc_plan *p;
  int oom;
};

static const char *fmt(struct planner *pl, const char *f, ...)
    __attribute__((format(printf, 2, 3)));
static const char *fmt(struct planner *pl, const char *f, ...) {
  char buf[1200];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof(buf), f, ap);
  va_end(ap);
  const char *s = gc_arena_strdup(pl->a, buf);
  if (!s)
    pl->oom = 1;
  return s ? s : "";
}

static void event(struct planner *pl, const char *type, const char *reason, const char *msg) {
  struct gb_rc_plan *p = pl->p;
  if (p->n_events < GB_RC_MAX_EVENTS)
    p->events[p->n_events++] = (struct gb_rc_event){type, reason, msg, 0, 0};
}

/* An Event describing a state that holds on every reconcile until it
 * changes: recorded once, also on the PodGroup when on_pg. */
static void state_event(struct planner *pl, const char *type, const char *reason,
                        const char *msg, int on_pg) {
  struct gb_rc_plan *p = pl->p;
  if (p->n_events < GB_RC_MAX_EVENTS)
    p->events[p->n_events++] = (struct gb_rc_event){type, reason, msg, 1, on_pg};
}

static void decide(struct planner *pl, enum gb_rc_action act, const char *why) {
  pl->p->action = act;
  pl->p->why = why;
}

static void add_delete(struct planner *pl, const struct gc_backend *b) {
  const struct gc_value *pg = pl->in->pg[bi(b)], *more = pl->in->more[bi(b)];
  const char *tj_uid = str_at(pl->in->trainjob, "metadata.uid");
  struct gb_rc_plan *p = pl->p;
  /* Only objects gangbridge made for this TrainJob are ever deleted. */
  int pg_ours = pg && gb_reconcile_podgroup_ours(pg, tj_uid);
  int more_ours = more && gb_reconcile_podgroup_ours(more, tj_uid);
  if ((!pg_ours && !more_ours) || p->n_del >= GC_BACKEND_MAX)
    return;
  p->del[p->n_del] = b;
  p->del_uid[p->n_del] = pg_ours ? str_at(pg, "metadata.uid") : NULL;
  p->del_version[p->n_del] = pl->in->version[bi(b)];
  p->del_more_uid[p->n_del] = more_ours ? str_at(more, "metadata.uid") : NULL;
  p->n_del++;
}

/* The selection rules; returns 1 when the TrainJob is selected (else the
 * plan says why not). */
static int selected(struct planner *pl) {
  const struct gb_rc_input *in = pl->in;
  const struct gc_value *tj = in->trainjob;
  const char *mb = str_at(tj, "spec.managedBy");
  if (mb && strcmp(mb, GC_TRAINER_CONTROLLER) != 0) {
    decide(pl, GB_RC_SKIP, fmt(pl, "spec.managedBy is %.200s", mb));
    return 0;
  }
  const char *en = label(tj, GB_LABEL_ENABLED);
  if (en && !strcmp(en, "false")) {
    decide(pl, GB_RC_SKIP, fmt(pl, "opted out with label %s=false", GB_LABEL_ENABLED));
    return 0;
  }
  switch (in->cfg->select_mode) {
  case GB_SELECT_NAMESPACE:
    if (!in->ns) {
      decide(pl, GB_RC_WAIT, "namespace not in the cache yet");
      return 0;
    }
    if (!gb_selector_match(&in->cfg->ns_sel, gc_value_path(in->ns, "metadata.labels"))) {
      decide(pl, GB_RC_SKIP, "namespace does not match selection.namespaceSelector");
      return 0;
    }
    break;
  case GB_SELECT_OPTIN:
    if (!gb_selector_match(&in->cfg->optin_sel, gc_value_path(tj, "metadata.labels"))) {
      decide(pl, GB_RC_SKIP, "TrainJob does not carry selection.optInLabel");
      return 0;
    }
    break;
  case GB_SELECT_UNMANAGED: break;
  }
  return 1;
}

/* 1 when the runtime's podGroupPolicy names a backend Trainer knows. */
static int runtime_has_policy(const struct gc_value *rt) {
  const struct gc_value *pgp = gc_value_path(rt, "spec.podGroupPolicy");
  if (!pgp || pgp->type != GC_MAP)
    return 0;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const char *key = gc_backend_at(i)->runtime_policy;
    const struct gc_value *v = key ? gc_map_get(pgp, key) : NULL;
    if (v && v->type != GC_NULL)
      return 1;
  }
  return 0;
}

/* The PodGroup APIs `auto` waits for, as "neither A nor B is served;
 * install X or Y" (one: "A is not served; install X"). */
static const char *apis_missing(struct planner *pl) {
  const char *apis = "", *install = "";
  size_t n = 0, k = 0;
  for (size_t i = 0; i < gc_backend_count(); i++)
    n += gc_backend_at(i)->in_auto != 0;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    if (!b->in_auto)
      continue;
    const char *sep = k == 0 ? "" : k + 1 == n ? (n == 2 ? " nor " : " or ") : ", ";
    char vers[128];
    if (b->n_versions)
      apis = fmt(pl, "%s%s%s.%s (%s)", apis, sep, b->resource, b->group,
                 gc_backend_version_names(b, vers, sizeof(vers)));
    else
      apis = fmt(pl, "%s%s%s.%s/%s", apis, sep, b->resource, b->group, b->version);
    install = fmt(pl, "%s%s%s", install, k == 0 ? "" : k + 1 == n ? " or " : ", ", b->install);
    k++;
  }
  return fmt(pl, "%s%s %s served; install %s",
             n == 2  ? "neither "
             : n > 2 ? "none of "
                     : "",
             apis, n == 1 ? "is not" : "is", install);
}

/* The backend when the runtime names none: Namespace annotation, config,
 * auto by discovery (the first backend of the table whose API is served,
 * waiting while an earlier one is unknown).  Returns NULL (plan decided
 * WAIT) when none fits. */
static const struct gc_backend *default_backend(struct planner *pl) {
  const struct gb_rc_input *in = pl->in;
  const struct gc_backend *choice = gb_config_backend(in->cfg);
  const char *nsb = annotation(in->ns, GB_ANN_BACKEND);
  if (nsb) {
    char names[256];
    if (!strcmp(nsb, "auto"))
      choice = NULL;
    else if (gc_backend_by_name(nsb) && !gc_backend_by_name(nsb)->offline_only)
      choice = gc_backend_by_name(nsb);
    else
      event(pl, GB_EVENT_WARNING, "InvalidNamespacePolicy",
            fmt(pl,
                "namespace annotation %s=\"%.100s\" is not %s or auto; "
                "using the configured backend (%s)",
                GB_ANN_BACKEND, nsb, gc_backend_serve_names(names, sizeof(names), ", "),
                gb_config_backend_choice_name(gb_config_backend(in->cfg))));
  }
  if (choice)
    return choice;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    if (!gc_backend_at(i)->in_auto)
      continue;
    if (in->served[i] == 1)
      return gc_backend_at(i);
    if (in->served[i] < 0) {
      decide(pl, GB_RC_WAIT, "API discovery has not answered yet");
      return NULL;
    }
  }
  decide(pl, GB_RC_WAIT, "no PodGroup API is served");
  event(pl, GB_EVENT_WARNING, "PodGroupAPIMissing", apis_missing(pl));
  return NULL;
}

static enum gc_scope gang_scope(struct planner *pl) {
  const char *s = annotation(pl->in->ns, GB_ANN_GANG_SCOPE);
  if (s && !strcmp(s, "wave"))
    return GC_SCOPE_WAVE;
  if (s && !strcmp(s, "all"))
    return GC_SCOPE_ALL;
  if (s)
    event(pl, GB_EVENT_WARNING, "InvalidNamespacePolicy",
          fmt(pl, "namespace annotation %s=\"%.100s\" is not wave or all; using %s",
              GB_ANN_GANG_SCOPE, s, pl->in->cfg->gang_scope == GC_SCOPE_ALL ? "all" : "wave"));
  return pl->in->cfg->gang_scope;
}

/* Writes a short text of scalar v into buf ("(absent)", "(changed)"). */
static void scalar_text(const struct gc_value *v, char *buf, size_t cap) {
  if (!v)
    snprintf(buf, cap, "(absent)");
  else if (v->type == GC_INT)
    snprintf(buf, cap, "%lld", (long long)v->u.i);
  else if (v->type == GC_STR)
    snprintf(buf, cap, "%.60s", v->u.s);
  else if (v->type == GC_BOOL)
    snprintf(buf, cap, "%s", v->u.b ? "true" : "false");
  else if (v->type == GC_FLOAT)
    snprintf(buf, cap, "%g", v->u.f);
  else
    snprintf(buf, cap, "(changed)");
}

struct diff {
  char text[600];
  size_t used;
  int n;
};

/* Appends "path: have -> want" for the first members of want that differ
 * from have (at most three, then "..."). */
static void diff_walk(struct diff *df, const struct gc_value *want, const struct gc_value *have,
                      const char *path) {
  if (gb_reconcile_value_subset(want, have))
    return;
  if (want->type == GC_MAP && have && have->type == GC_MAP) {
    for (size_t i = 0; i < want->len; i++) {
      const struct gc_member *m = &want->u.members[i];
      char sub[256];
      snprintf(sub, sizeof(sub), "%s.%.*s", path, (int)m->key_len, m->key);
      diff_walk(df, m->value, gc_map_getn(have, m->key, m->key_len), sub);
    }
    return;
  }
  char a[80], b[80];
  scalar_text(have, a, sizeof(a));
  scalar_text(want, b, sizeof(b));
  const char *item = df->n == 3 ? ", ..." : df->n > 3 ? "" : NULL;
  char line[300];
  if (item)
    snprintf(line, sizeof(line), "%s", item);
  else
    snprintf(line, sizeof(line), "%s%s: %s -> %s", df->n ? ", " : "", path, a, b);
  df->n++;
  int w = snprintf(df->text + df->used, sizeof(df->text) - df->used, "%s", line);
  if (w > 0 && (size_t)w < sizeof(df->text) - df->used)
    df->used += (size_t)w;
}

/* The PodGroup is left as it is while the gang's pods exist: say what
 * differs and how to apply it. */
static void outdated(struct planner *pl, const struct gc_value *have, const char *what) {
  struct diff df = {{0}, 0, 0};
  if (!what) {
    diff_walk(&df, gc_map_get(pl->p->desired, "spec"), gc_map_get(have, "spec"), "spec");
    diff_walk(&df, gc_value_path(pl->p->desired, "metadata.annotations"),
              gc_value_path(have, "metadata.annotations"), "metadata.annotations");
    what = df.n ? df.text : "metadata";
  }
  /* No pod count in the message: the Event is the same while pods come and go. */
  const char *pods = pl->in->pods < 0 ? "the gang's pods are not known yet"
                                      : "the gang's pods exist";
  state_event(pl, GB_EVENT_WARNING, "PodGroupOutdated",
              fmt(pl, "PodGroup %s/%s is outdated (%s) and is left unchanged because %s; to "
                      "apply the change, suspend the TrainJob (spec.suspend: true) and resume it "
                      "once its pods are gone",
                  str_at(pl->in->trainjob, "metadata.namespace"),
                  str_at(pl->in->trainjob, "metadata.name"), what, pods),
              1);
}

/* 1 when state is one in which b's queues admit no new gang. */
static int queue_closed(const struct gc_backend *b, const char *state) {
  for (size_t i = 0; state && i < GC_BACKEND_MAX_KEYS && b->queue.closed_states[i]; i++)
    if (!strcmp(state, b->queue.closed_states[i]))
      return 1;
  return 0;
}

static void queue_events(struct planner *pl, const struct gc_gang *g) {
  const struct gb_rc_input *in = pl->in;
  const struct gc_backend *b = g->backend;
  if (!(b->caps & GC_BCAP_QUEUE) || !b->queue.kind || !in->queue_state)
    return;
  const char *q = g->queue ? g->queue : b->queue.default_name;
  const char *state = NULL;
  int r = in->queue_state(in->queue_ctx, b, q, &state, pl->a);
  if (r == 0)
    event(pl, GB_EVENT_WARNING, "QueueNotFound",
          fmt(pl,
              "%s queue \"%.253s\" does not exist; the PodGroup stays Pending until it "
              "is created",
              b->display, q));
  else if (r == 1 && queue_closed(b, state))
    event(pl, GB_EVENT_WARNING, "QueueClosed",
          fmt(pl, "%s queue \"%.253s\" is %s; it admits no new PodGroups", b->display, q, state));
}

static const char *first_errors(struct planner *pl, const struct gc_diags *d) {
  char buf[1100];
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0, shown = 0; i < d->n && shown < 3; i++) {
    if (d->is_warning[i])
      continue;
    int n = snprintf(buf + used, sizeof(buf) - used, "%s%s", shown ? "; " : "", d->msgs[i]);
    if (n < 0 || (size_t)n >= sizeof(buf) - used) {
      used = sizeof(buf) - 1;
      break;
    }
    used += (size_t)n;
    shown++;
  }
  if (d->errors > 3 && used + 32 < sizeof(buf))
    snprintf(buf + used, sizeof(buf) - used, " (and %zu more)", d->errors - 3);
  return fmt(pl, "%s", buf);
}

/* 1 when desired differs from have in metadata.labels only (a PodGroup of
 * an earlier version without the name labels): safe while pods exist, since
 * neither the gang nor the binding plan changes. */
static int labels_only(const struct gc_value *desired, const struct gc_value *have) {
  static const char *const same[] = {"spec", "metadata.annotations",
                                     "metadata.ownerReferences"};
  for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
    if (!gb_reconcile_value_subset(gc_value_path(desired, same[i]), gc_value_path(have, same[i])))
      return 0;
  return 1;
}

/* The gang keeps its PodGroup of another backend (the backend choice
 * changed while its pods exist).  Returns 1 when that is the decision. */
static int keep_other_backend(struct planner *pl, const struct gc_gang *g) {
  const struct gb_rc_input *in = pl->in;
  if (in->pg[bi(g->backend)] || in->pods == 0)
    return 0;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    const struct gc_value *old = in->pg[i];
    if (b == g->backend || !old ||
        !gb_reconcile_podgroup_ours(old, str_at(in->trainjob, "metadata.uid")))
      continue;
    pl->p->backend = b;
    pl->p->bound_jobs = annotation(old, GB_ANN_BOUND_JOBS);
    decide(pl, GB_RC_KEEP, "backend changed while gang pods exist: the PodGroup is kept");
    outdated(pl, old, fmt(pl, "backend %s -> %s", gc_backend_name(b), gc_backend_name(g->backend)));
    return 1;
  }
  return 0;
}

/* The object the gang's backend needs besides its group object (the
 * Workload API's PodGroup), when it does not exist yet: created, never
 * changed (its size is the gang's, fixed while the pods exist).  One that
 * exists and is not gangbridge's for this TrainJob is reported and left
 * alone.  Returns 0 or GC_ENOMEM. */
static int plan_more(struct planner *pl, const struct gc_gang *g) {
  const struct gc_value *have = pl->in->more[bi(g->backend)];
  if (!g->backend->more_kind.kind)
    return 0;
  if (have) {
    if (!gb_reconcile_podgroup_ours(have, str_at(pl->in->trainjob, "metadata.uid")))
      state_event(pl, GB_EVENT_WARNING, "PodGroupExists",
                  fmt(pl, "%s %s/%s is not gangbridge's for this TrainJob; it is left as it is",
                      g->backend->more_kind.kind, str_at(have, "metadata.namespace"),
                      str_at(have, "metadata.name")),
                  0);
    return 0;
  }
  struct gc_value *objs[GC_RENDER_MAX_OBJECTS];
  size_t n = 0;
  int rc = gc_render_objects(g, pl->a, objs, GC_RENDER_MAX_OBJECTS, &n);
  if (rc)
    return rc == GC_ENOMEM ? rc : 0;
  pl->p->desired_more = n > 1 ? objs[1] : NULL;
  return 0;
}

/* Renders the gang's PodGroup and decides between create, update, keep
 * and outdated.  A PodGroup's size, resources or backend never change while
 * the gang's pods exist and the TrainJob is not suspended (Trainer changes it
 * only while suspended), and the old backend's group is deleted only once no
 * pod can reference it.  Returns 0 or GC_ENOMEM. */
static int decide_podgroup(struct planner *pl, struct gc_gang *g) {
  const struct gb_rc_input *in = pl->in;
  struct gb_rc_plan *out = pl->p;
  const char *tj_uid = str_at(in->trainjob, "metadata.uid");
  const struct gc_value *have = in->pg[bi(g->backend)];
  if (have && !gb_reconcile_podgroup_ours(have, tj_uid)) {
    /* Labelled by gangbridge but owned by another TrainJob (a deleted one
     * of the same name, not yet garbage-collected): not ours to change. */
    decide(pl, GB_RC_KEEP, "the PodGroup belongs to another TrainJob of the same name");
    state_event(pl, GB_EVENT_WARNING, "PodGroupExists",
                fmt(pl, "PodGroup %s/%s is not owned by this TrainJob (uid %s); it is left as it "
                        "is",
                    str_at(have, "metadata.namespace"), str_at(have, "metadata.name"),
                    tj_uid ? tj_uid : "unknown"),
                1);
    return 0;
  }
  if (keep_other_backend(pl, g))
    return 0;
  int rc = gc_render_podgroup(g, pl->a, &out->desired);
  if (rc) {
    decide(pl, GB_RC_INVALID, "cannot render the PodGroup");
    return rc == GC_ENOMEM ? rc : 0;
  }
  out->bound_jobs = annotation(out->desired, GB_ANN_BOUND_JOBS);
  int busy = in->pods != 0 && !g->suspended;
  if (have && gb_reconcile_value_subset(out->desired, have)) {
    decide(pl, GB_RC_KEEP, "the PodGroup is up to date");
  } else if (have && busy && !labels_only(out->desired, have)) {
    decide(pl, GB_RC_KEEP, "gang pods exist: the PodGroup is left as it is");
    out->bound_jobs = annotation(have, GB_ANN_BOUND_JOBS);
    outdated(pl, have, NULL);
    return plan_more(pl, g);
  } else {
    out->pg_uid = have ? str_at(have, "metadata.uid") : NULL;
    out->pg_rv = have ? str_at(have, "metadata.resourceVersion") : NULL;
    decide(pl, GB_RC_APPLY, have ? "re-rendering the PodGroup" : "creating the PodGroup");
  }
  for (size_t i = 0; i < g->n_warnings; i++) {
    const struct gc_warning *w = &g->warnings[i];
    if (w->code == GC_WARN_TIMEOUT_CLAMPED)
      event(pl, GB_EVENT_WARNING, "TimeoutClamped", fmt(pl, "%s", w->message));
    else if (w->code == GC_WARN_GANG_SCOPE_NARROWED)
      event(pl, GB_EVENT_NORMAL, "GangScopeNarrowed", fmt(pl, "%s", w->message));
    /* States that hold until the runtime's author changes the runtime:
     * recorded once, not on every reconcile. */
    else if (w->code == GC_WARN_GROUPER_NOT_SKIPPED)
      state_event(pl, GB_EVENT_WARNING, "SchedulerGrouperNotSkipped", fmt(pl, "%s", w->message),
                  0);
    else if (w->code == GC_WARN_TOPOLOGY_DROPPED)
      state_event(pl, GB_EVENT_WARNING, "TopologyNotExpressed", fmt(pl, "%s", w->message), 0);
  }
  queue_events(pl, g);
  if (plan_more(pl, g) == GC_ENOMEM)
    return GC_ENOMEM;
  /* Another backend's PodGroup (the choice changed) goes first, once no
   * pod exists that could reference it, so one gang never has two groups. */
  for (size_t i = 0; i < gc_backend_count() && in->pods == 0; i++)
    if (gc_backend_at(i) != g->backend && (in->pg[i] || in->more[i]))
      add_delete(pl, gc_backend_at(i));
  return 0;
}

/* A finished TrainJob's PodGroup holds queue quota for nothing (Trainer
 * #4033): it is deleted, whatever the runtime says now.  Returns 1 when the
 * TrainJob is finished (the plan is made). */
static int finished(struct planner *pl) {
  struct gb_rc_plan *out = pl->p;
  if (!gb_reconcile_trainjob_finished(pl->in->trainjob))
    return 0;
  out->managed = 1;
  if (!pl->in->cfg->delete_on_finish) {
    decide(pl, GB_RC_KEEP, "finished; podGroups.deleteOnFinish is false");
    return 1;
  }
  for (size_t i = 0; i < gc_backend_count(); i++)
    add_delete(pl, gc_backend_at(i));
  decide(pl, out->n_del ? GB_RC_DELETE : GB_RC_KEEP,
         out->n_del ? "the TrainJob finished" : "finished; no PodGroup left");
  return 1;
}

/* A backend whose objects cannot change while they exist (the Workload
 * API: kube-scheduler reads its gang once) gets them deleted on suspend
 * and made anew on resume.  Returns 1 when that is the plan. */
static int suspended_delete(struct planner *pl, const struct gc_gang *g) {
  if (!g->suspended || !g->backend->n_versions)
    return 0;
  add_delete(pl, g->backend);
  decide(pl, pl->p->n_del ? GB_RC_DELETE : GB_RC_KEEP,
         pl->p->n_del ? "the TrainJob is suspended" : "suspended; nothing to delete");
  return 1;
}

/* Something else gangs this TrainJob (gangcalc's ganged_by): gangbridge
 * writes nothing for it and says why once. */
static void stepped_aside(struct planner *pl, const struct gc_gang *g) {
  pl->p->managed = 0;
  pl->p->backend = NULL;
  decide(pl, GB_RC_SKIP, fmt(pl, "ganged elsewhere: %s", g->ganged_by));
  state_event(pl, GB_EVENT_NORMAL, "GangedElsewhere",
              fmt(pl, "%s; gangbridge leaves this TrainJob alone and writes no %s", g->ganged_by,
                  g->backend->kind),
              0);
}

/* The runtime reference, the runtime's presence and its podGroupPolicy.
 * Returns 1 when gangbridge computes the PodGroup from it (else the plan
 * says why not). */
static int runtime_usable(struct planner *pl, const char *ns, const char *name) {
  const struct gb_rc_input *in = pl->in;
  int cluster = 1;
  const char *rtname = NULL;
  if (gb_reconcile_runtime_ref(in->trainjob, &cluster, &rtname)) {
    decide(pl, GB_RC_INVALID, "spec.runtimeRef is missing or names an unsupported kind");
    event(pl, GB_EVENT_WARNING, "InvalidTrainJob",
          fmt(pl, "%s/%s: spec.runtimeRef is missing or names an unsupported kind", ns, name));
    return 0;
  }
  if (!in->runtime) {
    pl->p->managed = 1;
    const char *what = cluster ? fmt(pl, "ClusterTrainingRuntime \"%.253s\"", rtname)
                               : fmt(pl, "TrainingRuntime \"%.253s/%.253s\"", ns, rtname);
    decide(pl, GB_RC_WAIT, fmt(pl, "%s not found", what));
    int has_pg = 0;
    for (size_t i = 0; i < gc_backend_count(); i++)
      has_pg |= in->pg[i] != NULL;
    event(pl, GB_EVENT_WARNING, "RuntimeNotFound",
          fmt(pl, "%s not found; %s", what,
              has_pg ? "the existing PodGroup is left as it is until the runtime exists again"
                     : "the PodGroup is created once it exists"));
    return 0;
  }
  if (runtime_has_policy(in->runtime) && !in->cfg->take_over_trainer_policies) {
    decide(pl, GB_RC_SKIP,
           "the runtime's podGroupPolicy is served by Trainer (selection.takeOverTrainerPolicies "
           "is false)");
    state_event(pl, GB_EVENT_NORMAL, "TrainerManagesPodGroup",
                fmt(pl, "runtime \"%.253s\" sets spec.podGroupPolicy: Trainer creates this "
                        "TrainJob's PodGroup (counting initializer pods too) and gangbridge "
                        "leaves it alone (selection.takeOverTrainerPolicies is false)",
                    rtname),
                0);
    return 0;
  }
  return 1;
}

/* gc_policy_context's Queue lookup over the input's (the tree lives in the
 * plan's arena, which outlives the gang computation). */
static const struct gc_value *plan_queue_annotations(void *arg, const struct gc_backend *b,
                                                     const char *queue) {
  struct planner *pl = arg;
  const struct gc_value *q = pl->in->queue_doc(pl->in->queue_ctx, b, queue, pl->a);
  return gc_value_path(q, "metadata.annotations");
}

/* What gangcalc's policy needs beyond the TrainJob and its runtime. */
static void policy_context(struct planner *pl, struct gc_policy_context *pc) {
  const struct gb_rc_input *in = pl->in;
  memset(pc, 0, sizeof(*pc));
  pc->ns_annotations = gc_value_path(in->ns, "metadata.annotations");
  if (in->queue_doc) {
    pc->queue_annotations = plan_queue_annotations;
    pc->queue_arg = pl;
  }
  pc->timeout_default = in->cfg->timeout_default;
  pc->timeout_max = in->cfg->timeout_max;
  pc->topology_default = in->cfg->topology_default;
  pc->topology_levels = in->cfg->topology_levels.items;
  pc->n_topology_levels = in->cfg->topology_levels.n;
}

int gb_reconcile_plan(const struct gb_rc_input *in, struct gc_arena *a, struct gb_rc_plan *out) {
  memset(out, 0, sizeof(*out));
  struct planner pl = {in, a, out, 0};
  struct gc_catalog *cat = NULL;
  struct gc_gang *g = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  const struct gc_value *tj = in->trainjob;
  const char *name = str_at(tj, "metadata.name");
  const char *ns = str_at(tj, "metadata.namespace");
  if (!name || !ns) {
    decide(&pl, GB_RC_INVALID, "TrainJob without metadata.name or metadata.namespace");
    goto out;
  }
  if (!selected(&pl))
    goto out;

  if (finished(&pl) || !runtime_usable(&pl, ns, name))
    goto out;
  out->managed = 1;

  struct gc_options opts;
  struct gc_policy_context pctx;
  memset(&opts, 0, sizeof(opts));
  opts.scope = gang_scope(&pl);
  policy_context(&pl, &pctx);
  opts.policy = &pctx;
  if (!runtime_has_policy(in->runtime)) {
    opts.default_backend = default_backend(&pl);
    if (!opts.default_backend)
      goto out;
  }
  /* A backend with several API versions writes the one discovery picked
   * (gangcalc applies it only to the backend that has it). */
  for (size_t i = 0; i < gc_backend_count() && !opts.backend_version; i++)
    opts.backend_version = in->version[i];
  opts.backend_version_why = "the newest version the API server serves";
  cat = gc_catalog_new();
  if (!cat) {
    pl.oom = 1;
    goto out;
  }
  int rc = gc_catalog_add(cat, in->runtime, "cache", &d);
  if (rc == GC_ENOMEM) {
    pl.oom = 1;
    goto out;
  }
  rc = rc ? rc : gc_gang_compute(tj, cat, &opts, &g, &d);
  if (rc == GC_ENOMEM) {
    pl.oom = 1;
    goto out;
  }
  if (rc) {
    const char *msg = first_errors(&pl, &d);
    decide(&pl, GB_RC_INVALID, msg);
    event(&pl, GB_EVENT_WARNING, "InvalidTrainJob", msg);
    goto out;
  }
  if (g->ganged_by) {
    stepped_aside(&pl, g);
    goto out;
  }
  out->backend = g->backend;
  out->version = g->backend_version;
  if (in->served[bi(g->backend)] == 0) {
    char vers[128];
    decide(&pl, GB_RC_WAIT,
           fmt(&pl, "the %s PodGroup API is not served", gc_backend_name(g->backend)));
    event(&pl, GB_EVENT_WARNING, "PodGroupAPIMissing",
          g->backend->is_crd
              ? fmt(&pl, "%s.%s/%s is not served; install its CRD", g->backend->resource,
                    g->backend->group, g->backend->version)
              : fmt(&pl, "%s.%s (%s) is not served; it needs %s", g->backend->resource,
                    g->backend->group,
                    g->backend->n_versions
                        ? gc_backend_version_names(g->backend, vers, sizeof(vers))
                        : g->backend->version,
                    g->backend->install));
    goto out;
  }
  if (suspended_delete(&pl, g))
    goto out;

  /* The Namespace's queue when the runtime and TrainJob name none; queue
   * names are RFC 1123 subdomains. */
  const char *nsq = g->backend->queue.key ? annotation(in->ns, g->backend->queue.key) : NULL;
  if ((g->backend->caps & GC_BCAP_QUEUE) && !g->queue && nsq && *nsq &&
      gc_name_is_dns1123_subdomain(nsq, strlen(nsq))) {
    g->queue = gc_arena_strdup(g->arena, nsq);
    if (!g->queue) {
      pl.oom = 1;
      goto out;
    }
  }

  if (decide_podgroup(&pl, g) == GC_ENOMEM)
    pl.oom = 1;
  if (in->keep_gang && !pl.oom && (out->action == GB_RC_KEEP || out->action == GB_RC_APPLY)) {
    *in->keep_gang = g;
    g = NULL;
  }
out:
  gc_gang_free(g);
  gc_catalog_free(cat);
  gc_diags_destroy(&d);
  if (!out->why)
    out->why = "";
  return pl.oom ? GC_ENOMEM : 0;
}

/* ---- execution --------------------------------------------------------------- */

static int leader(const struct gb_rc_env *env) {
  return !env->is_leader || env->is_leader(env->leader_ctx);
}

/* ctx is the env's queues[] (by gc_backend_index). */
static int queue_lookup(void *ctx, const struct gc_backend *b, const char *name, const char **state,
                        struct gc_arena *a) {
  struct gb_informer *const *queues = ctx;
  struct gb_informer *inf = gc_backend_index(b) < 0 ? NULL : queues[bi(b)];
  struct gc_value *q = NULL;
  if (!inf)
    return -1;
  int rc = gb_informer_get_value(inf, NULL, name, a, &q);
  if (rc == GC_ENOTFOUND)
    return 0;
  if (rc)
    return -1;
  *state = b->queue.state_field
               ? gc_value_as_str(gc_map_get(gc_value_path(q, "status"), b->queue.state_field))
               : NULL;
  return 1;
}

static const struct gc_value *queue_doc_lookup(void *ctx, const struct gc_backend *b,
                                               const char *name, struct gc_arena *a) {
  struct gb_informer *const *queues = ctx;
  struct gb_informer *inf = gc_backend_index(b) < 0 ? NULL : queues[bi(b)];
  struct gc_value *q = NULL;
  return !inf || gb_informer_get_value(inf, NULL, name, a, &q) ? NULL : q;
}

static void record(struct gb_rc_env *env, const struct gb_event_ref *ref, const char *type,
                   const char *reason, const char *msg, int once) {
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  if (gb_events_record(env->events, ref, type, reason, msg, once, &e)) {
    char buf[1200];
    gb_log(GB_LOG_WARN, "cannot record event", "namespace", ref->ns, "name", ref->name, "kind",
           ref->kind, "reason", reason, "error", gb_kube_error_str(&e, buf, sizeof(buf)), NULL);
  }
}

/* The PodGroup an Event is also posted on (uid NULL: none). */
struct pg_ref {
  const struct gc_backend *backend;
  const struct gc_backend_version *version; /* its API version (NULL: the backend's) */
  const char *uid;
};

/* Posts an Event on the TrainJob and, when pg->uid, on its PodGroup too
 * (where `kubectl describe podgroup` shows it). */
static void emit_on(struct gb_rc_env *env, const struct gc_value *tj, const struct pg_ref *pg,
                    const char *type, const char *reason, const char *msg, int once) {
  if (!env->events || !leader(env))
    return;
  struct gb_event_ref ref = {GC_TRAINER_API, "TrainJob", str_at(tj, "metadata.namespace"),
                             str_at(tj, "metadata.name"), str_at(tj, "metadata.uid")};
  record(env, &ref, type, reason, msg, once);
  if (!pg || !pg->uid || !pg->backend)
    return;
  struct gb_event_ref pref = {pg->version ? pg->version->api_version : pg->backend->api_version,
                              pg->backend->kind, ref.ns, ref.name, pg->uid};
  record(env, &pref, type, reason, msg, once);
}

static void emit(struct gb_rc_env *env, const struct gc_value *tj, const char *type,
                 const char *reason, const char *msg) {
  emit_on(env, tj, NULL, type, reason, msg, 0);
}

static void result(struct gb_rc_result *r, enum gb_rc_outcome o, const char *reason,
                   const char *f, ...) __attribute__((format(printf, 4, 5)));
static void result(struct gb_rc_result *r, enum gb_rc_outcome o, const char *reason,
                   const char *f, ...) {
  r->outcome = o;
  r->error_reason = reason;
  va_list ap;
  va_start(ap, f);
  vsnprintf(r->message, sizeof(r->message), f, ap);
  va_end(ap);
}

static const char *error_reason(const struct gb_kube_error *e) {
  if (e->http == 0)
    return "transport";
  if (e->http == 409)
    return "conflict";
  if (e->http == 422)
    return "invalid";
  if (e->http == 429)
    return "throttled";
  if (e->http >= 500)
    return "status_5xx";
  return "status_4xx";
}

/* The path of b's group object ns/name at version v (NULL: b->version);
 * with `more`, of its other object (more_kind) of that name instead. */
static int object_path(char *buf, size_t cap, const struct gc_backend *b,
                       const struct gc_backend_version *v, int more, const char *ns,
                       const char *name) {
  return gb_kube_client_path(buf, cap, b->group, v ? v->version : b->version,
                             more ? b->more_kind.resource : b->resource, ns, name);
}

static int podgroup_path(char *buf, size_t cap, const struct gc_backend *b,
                         const struct gc_backend_version *v, const char *ns, const char *name) {
  return object_path(buf, cap, b, v, 0, ns, name);
}

/* The name of b's other object for TrainJob `name` at version v (arena). */
static const char *more_name(struct gc_arena *a, const struct gc_backend_version *v,
                             const char *name) {
  size_t n = strlen(name), k = v && v->group_suffix ? strlen(v->group_suffix) : 0;
  char *s = gc_arena_alloc(a, n + k + 1);
  if (!s)
    return NULL;
  memcpy(s, name, n);
  if (k)
    memcpy(s + n, v->group_suffix, k);
  s[n + k] = '\0';
  return s;
}

/* GETs ns/name of backend b at version v (its other object with `more`)
 * into *out as a tree in a; NULL when there is none.  Returns 0 or GC_EIO. */
static int read_object(struct gb_rc_env *env, const struct gc_backend *b,
                       const struct gc_backend_version *v, int more, const char *ns,
                       const char *name, struct gc_arena *a, const struct gc_value **out) {
  char path[1024];
  json_object *obj = NULL;
  struct gb_kube_error e;
  struct gc_value *val = NULL;
  gb_kube_error_clear(&e);
  *out = NULL;
  int rc = object_path(path, sizeof(path), b, v, more, ns, name);
  if (!rc)
    rc = gb_kube_client_get(env->client, path, &obj, &e);
  if (rc == GC_ENOTFOUND)
    return 0;
  if (!rc)
    rc = gb_kube_client_json_to_value(a, obj, 64, &val);
  json_object_put(obj);
  if (rc)
    return GC_EIO;
  *out = val;
  return 0;
}

/* The objects of a backend with several API versions, read from the API at
 * the version discovery picked (no informer follows a version that can
 * change under it): its group object and its other object. */
static int gather_versioned(struct gb_rc_env *env, size_t b, const char *ns, const char *name,
                            struct gc_arena *a, struct gb_rc_input *in) {
  const struct gc_backend *be = gc_backend_at(b);
  const struct gc_backend_version *v = env->version[b];
  in->version[b] = v;
  if (!v || env->served[b] != 1 || !env->client)
    return 0;
  int rc = read_object(env, be, v, 0, ns, name, a, &in->pg[b]);
  if (rc || !be->more_kind.kind || !v->group_suffix)
    return rc;
  const char *mn = more_name(a, v, name);
  return mn ? read_object(env, be, v, 1, ns, mn, a, &in->more[b]) : GC_ENOMEM;
}

int gb_reconcile_gather(struct gb_rc_env *env, const char *ns, const char *name,
                        struct gc_arena *a, struct gb_rc_input *in) {
  memset(in, 0, sizeof(*in));
  in->cfg = env->cfg;
  struct gc_value *tj = NULL;
  int rc = gb_informer_get_value(env->trainjobs, ns, name, a, &tj);
  if (rc)
    return rc;
  in->trainjob = tj;
  int cluster = 1;
  const char *rtname = NULL;
  if (!gb_reconcile_runtime_ref(tj, &cluster, &rtname)) {
    struct gc_value *rt = NULL;
    if (cluster)
      rc = gb_informer_get_value(env->cluster_runtimes, NULL, rtname, a, &rt);
    else
      rc = gb_informer_get_value(env->runtimes, ns, rtname, a, &rt);
    in->runtime = rc ? NULL : rt;
  }
  if (env->namespaces) {
    struct gc_value *nsv = NULL;
    if (!gb_informer_get_value(env->namespaces, NULL, ns, a, &nsv))
      in->ns = nsv;
  }
  int queues = 0;
  for (size_t b = 0; b < gc_backend_count(); b++) {
    struct gc_value *pg = NULL;
    if (env->pg[b] && !gb_informer_get_value(env->pg[b], ns, name, a, &pg))
      in->pg[b] = pg;
    in->served[b] = env->served[b];
    queues |= env->queues[b] != NULL;
    if (gc_backend_at(b)->n_versions && (rc = gather_versioned(env, b, ns, name, a, in)))
      return rc;
  }
  if (queues) {
    in->queue_state = queue_lookup;
    in->queue_doc = queue_doc_lookup;
    in->queue_ctx = env->queues;
  }
  /* The JobSet (and so its pods' label) is named after the TrainJob. */
  in->pods = env->gang_pods ? env->gang_pods(env->pods_ctx, ns, name) : -1;
  return 0;
}

/* ---- writing the PodGroup ------------------------------------------------------ */

enum create_outcome { CREATED, EXISTS_OURS, EXISTS_FOREIGN, CREATE_FAILED };

/* POST with a few retries on throttling, 5xx and transport errors.  The
 * client retries only idempotent verbs, since a repeated create can make a
 * second object; a PodGroup's create names the object, so a repeat after a
 * lost success answers 409, which the caller resolves (the object is ours).
 * Without this, every injected 5xx would cost a rate-limited requeue. */
static int create_retried(struct gb_rc_env *env, const char *coll, json_object *body,
                          json_object **got, struct gb_kube_error *e) {
  double delay = 0.1;
  for (int attempt = 0;; attempt++) {
    gb_kube_error_clear(e);
    int rc = gb_kube_client_create(env->client, coll, body, got, e);
    int retryable = rc == GC_EIO && (e->http == 0 || e->http == 429 ||
                                     (e->http >= 500 && e->http != 501));
    if (!retryable || attempt == 3 || !leader(env))
      return rc;
    double d = e->retry_after_s > delay ? (e->retry_after_s < 5 ? e->retry_after_s : 5) : delay;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
    delay *= 2;
  }
}

/* The PodGroup written or found: its uid and resourceVersion (arena). */
struct pg_meta {
  const char *uid, *rv;
  int current; /* the existing object already carries everything desired */
};

/* Creates the whole PodGroup only if none of that name exists (POST: the
 * server answers 409 AlreadyExists otherwise, so another object is never
 * taken over, and the group is never seen half-made).  On 409 the existing
 * object is read: ours (a cache that lags behind) or foreign.  *m receives
 * the uid and resourceVersion of the created or existing object. */
static enum create_outcome create_podgroup(struct gb_rc_env *env, const struct gb_rc_plan *plan,
                                           const struct gc_value *tj, struct gc_arena *a,
                                           struct pg_meta *m, struct gb_kube_error *e) {
  const char *ns = str_at(tj, "metadata.namespace"), *name = str_at(tj, "metadata.name");
  char coll[1024], path[1024];
  json_object *body = gb_kube_client_value_to_json(plan->desired), *got = NULL;
  if (!body || podgroup_path(coll, sizeof(coll), plan->backend, plan->version, ns, NULL) ||
      podgroup_path(path, sizeof(path), plan->backend, plan->version, ns, name)) {
    json_object_put(body);
    return CREATE_FAILED;
  }
  strncat(coll, "?fieldManager=" GB_FIELD_MANAGER, sizeof(coll) - strlen(coll) - 1);
  int rc = create_retried(env, coll, body, &got, e);
  json_object_put(body);
  enum create_outcome res = CREATED;
  if (rc && e->http == 409) {
    json_object_put(got);
    got = NULL;
    gb_kube_error_clear(e);
    rc = gb_kube_client_get(env->client, path, &got, e);
    struct gc_value *v = NULL;
    if (!rc)
      rc = gb_kube_client_json_to_value(a, got, 64, &v);
    res = gb_reconcile_podgroup_ours(v, str_at(tj, "metadata.uid")) ? EXISTS_OURS : EXISTS_FOREIGN;
    m->current = res == EXISTS_OURS && gb_reconcile_value_subset(plan->desired, v);
  }
  if (rc) {
    json_object_put(got);
    return CREATE_FAILED;
  }
  const char *u = gb_kobj_meta(got, "uid"), *rv = gb_kobj_meta(got, "resourceVersion");
  m->uid = u ? gc_arena_strdup(a, u) : NULL;
  m->rv = rv ? gc_arena_strdup(a, rv) : NULL;
  json_object_put(got);
  return res;
}

/* 1 when every manager an apply conflict names is gangbridge's own create
 * (the POST is an Update-type write, printed "gangbridge" using VERSION):
 * the fields are ours, only recorded under another operation.  A message
 * cut short may hide other managers, so it never qualifies. */
static int conflicts_only_own_create(const struct gb_kube_error *e) {
  if (strlen(e->message) + 1 >= sizeof(e->message))
    return 0;
  int n = 0;
  for (const char *p = e->message; (p = strstr(p, "conflict")) != NULL; p++) {
    const char *who = !strncmp(p, "conflict with ", 14)    ? p + 14
                      : !strncmp(p, "conflicts with ", 15) ? p + 15
                                                           : NULL;
    if (!who)
      continue;
    if (strncmp(who, "\"" GB_FIELD_MANAGER "\" using ", strlen(GB_FIELD_MANAGER) + 9) != 0)
      return 0;
    n++;
  }
  return n > 0;
}

/* The uid of the PodGroup a KEEP plan is about (for Events on it). */
static const char *keep_uid(const struct gb_rc_input *in, const struct gb_rc_plan *plan) {
  if (!plan->backend || !in->pg[bi(plan->backend)])
    return NULL;
  return str_at(in->pg[bi(plan->backend)], "metadata.uid");
}

static void emit_plan(struct gb_rc_env *env, const struct gc_value *tj,
                      const struct gb_rc_plan *plan, const char *pg_uid) {
  struct pg_ref pg = {plan->backend, plan->version, pg_uid};
  for (size_t i = 0; i < plan->n_events; i++) {
    const struct gb_rc_event *ev = &plan->events[i];
    emit_on(env, tj, ev->on_podgroup ? &pg : NULL, ev->type, ev->reason, ev->message, ev->once);
  }
}

/* Server-side apply of plan->desired over a PodGroup known to be ours: its
 * uid is sent as a precondition, so a PodGroup replaced meanwhile (by anyone)
 * is never written.  With rv (only with force) the resourceVersion is one
 * too: nothing may have changed since the conflicts were seen. */
static int apply_ours(struct gb_rc_env *env, const struct gb_rc_plan *plan, const char *ns,
                      const char *name, const struct pg_meta *m, int force, json_object **out,
                      struct gb_kube_error *e) {
  char path[1024];
  json_object *obj = gb_kube_client_value_to_json(plan->desired), *meta = NULL;
  if (!obj || !json_object_object_get_ex(obj, "metadata", &meta)) {
    json_object_put(obj);
    return GC_ENOMEM;
  }
  if (m->uid)
    json_object_object_add(meta, "uid", json_object_new_string(m->uid));
  if (force)
    json_object_object_add(meta, "resourceVersion", json_object_new_string(m->rv));
  int rc = podgroup_path(path, sizeof(path), plan->backend, plan->version, ns, name);
  if (!rc)
    rc = gb_kube_client_apply(env->client, path, obj, GB_FIELD_MANAGER, force, out, e);
  json_object_put(obj);
  return rc;
}

/* Updates our PodGroup.  The apply is never forced over another manager;
 * when the only conflicts are with gangbridge's own create (same values,
 * recorded as an Update), the fields are taken over by a forced apply that
 * is conditional on the resourceVersion at which that was seen. */
static int update_ours(struct gb_rc_env *env, const struct gb_rc_plan *plan, const char *ns,
                       const char *name, struct pg_meta *m, struct gc_arena *a,
                       struct gb_kube_error *e) {
  json_object *got = NULL;
  int rc = apply_ours(env, plan, ns, name, m, 0, &got, e);
  if (rc && e->http == 409 && m->rv && conflicts_only_own_create(e)) {
    gb_kube_error_clear(e);
    json_object_put(got);
    got = NULL;
    rc = apply_ours(env, plan, ns, name, m, 1, &got, e);
  }
  /* The version written, for the memo of this reconcile (the uid is the
   * precondition's). */
  const char *rv = rc ? NULL : gb_kobj_meta(got, "resourceVersion");
  m->rv = rv ? gc_arena_strdup(a, rv) : NULL;
  json_object_put(got);
  return rc;
}

/* Tells the controller which PodGroup version this reconcile left (see
 * gb_rc_result); nothing when either is unknown. */
static void written(struct gb_rc_result *res, const struct gc_backend *b, const struct pg_meta *m) {
  if (!m->uid || !m->rv || strlen(m->uid) >= sizeof(res->pg_uid) ||
      strlen(m->rv) >= sizeof(res->pg_rv))
    return;
  res->pg_backend = b;
  snprintf(res->pg_uid, sizeof(res->pg_uid), "%s", m->uid);
  snprintf(res->pg_rv, sizeof(res->pg_rv), "%s", m->rv);
}

/* Carries out an APPLY plan: create when no PodGroup is known, else update
 * ours; a foreign PodGroup of that name is reported and left alone. */
static void apply_podgroup(struct gb_rc_env *env, const struct gb_rc_plan *plan,
                           const struct gc_value *tj, struct gc_arena *a, int attempts,
                           struct gb_rc_result *res) {
  const char *ns = str_at(tj, "metadata.namespace"), *name = str_at(tj, "metadata.name");
  struct pg_meta m = {plan->pg_uid, plan->pg_rv, 0};
  struct gb_kube_error e;
  char ebuf[1200];
  gb_kube_error_clear(&e);
  enum create_outcome co = EXISTS_OURS;
  if (!m.uid)
    co = create_podgroup(env, plan, tj, a, &m, &e);
  const char *uid = m.uid;
  if (co == EXISTS_FOREIGN) {
    struct pg_ref pg = {plan->backend, plan->version, uid};
    char msg[700];
    snprintf(msg, sizeof(msg),
             "PodGroup %s/%s (%s) exists and was not created by gangbridge "
             "for this TrainJob; it is left exactly as it is",
             ns, name, plan->backend->group);
    emit_on(env, tj, &pg, GB_EVENT_WARNING, "PodGroupExists", msg, 1);
    result(res, GB_RC_CONFLICT, NULL, "%s", msg);
    return;
  }
  if (co == CREATE_FAILED) {
    result(res, GB_RC_RETRY, error_reason(&e), "cannot create the %s PodGroup: %s",
           gc_backend_name(plan->backend), gb_kube_error_str(&e, ebuf, sizeof(ebuf)));
    if (attempts >= 2)
      emit(env, tj, GB_EVENT_WARNING, "PodGroupApplyFailed", res->message);
    return;
  }
  if (!leader(env)) {
    res->action = GB_RC_SKIP;
    result(res, GB_RC_SKIPPED, NULL, "lost the leadership: no writes");
    return;
  }
  if (m.current) { /* made by an earlier reconcile the cache has not seen yet */
    written(res, plan->backend, &m);
    result(res, GB_RC_DONE, NULL, "the PodGroup is up to date");
    return;
  }
  int rc = co == CREATED ? 0 : update_ours(env, plan, ns, name, &m, a, &e);
  if (rc && e.http == 409 && !strstr(e.message, "Apply failed")) {
    /* A precondition failed: replaced or changed meanwhile; the cache catches up. */
    result(res, GB_RC_RETRY, "conflict", "the PodGroup changed meanwhile: %s", e.message);
    return;
  }
  if (rc && e.http == 409) {
    /* Another manager owns a field we would change: say so, never force. */
    result(res, GB_RC_CONFLICT, "conflict", "PodGroup fields owned by another manager: %s",
           e.message);
    struct pg_ref pg = {plan->backend, plan->version, uid};
    emit_on(env, tj, &pg, GB_EVENT_WARNING, "PodGroupConflict",
            *e.message ? e.message : "server-side apply conflict", 0);
    return;
  }
  if (rc) {
    result(res, GB_RC_RETRY, error_reason(&e), "cannot apply the %s PodGroup: %s",
           gc_backend_name(plan->backend), gb_kube_error_str(&e, ebuf, sizeof(ebuf)));
    if (attempts >= 2)
      emit(env, tj, GB_EVENT_WARNING, "PodGroupApplyFailed", res->message);
    return;
  }
  written(res, plan->backend, &m);
  emit_plan(env, tj, plan, uid);
  /* On the TrainJob only: one more write per PodGroup write already slows
   * convergence after an API storm (tests/integration/test_faults_storm.py). */
  char msg[600];
  snprintf(msg, sizeof(msg), "%s %s %s/%s (%s)", co == CREATED ? "created" : "updated",
           plan->backend->kind, ns, name,
           plan->version ? plan->version->api_version : plan->backend->group);
  emit(env, tj, GB_EVENT_NORMAL, co == CREATED ? "PodGroupCreated" : "PodGroupUpdated", msg);
  result(res, GB_RC_DONE, NULL, "%s", plan->why);
}

/* Deletes the other object of the plan's i-th delete (the Workload API's
 * PodGroup), ours, with a uid precondition.  Returns 1 when it is gone. */
static int delete_more(struct gb_rc_env *env, const struct gb_rc_plan *plan, size_t i,
                       const struct gc_value *tj, int attempts, struct gb_rc_result *res) {
  const char *ns = str_at(tj, "metadata.namespace"), *name = str_at(tj, "metadata.name");
  const struct gc_backend *b = plan->del[i];
  const struct gc_backend_version *v = plan->del_version[i];
  char path[1024], mn[600], ebuf[1200];
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  snprintf(mn, sizeof(mn), "%s%s", name, v && v->group_suffix ? v->group_suffix : "");
  int rc = object_path(path, sizeof(path), b, v, 1, ns, mn);
  if (!rc)
    rc = gb_kube_client_delete(env->client, path, NULL, plan->del_more_uid[i], &e);
  if (rc == GC_ENOTFOUND || (rc && e.http == 409))
    return 1;
  if (rc) {
    result(res, GB_RC_RETRY, error_reason(&e), "cannot delete the %s %s: %s",
           gc_backend_name(b), b->more_kind.kind, gb_kube_error_str(&e, ebuf, sizeof(ebuf)));
    if (attempts >= 2)
      emit(env, tj, GB_EVENT_WARNING, "PodGroupDeleteFailed", res->message);
    return 0;
  }
  char msg[700];
  snprintf(msg, sizeof(msg), "deleted %s %s/%s (%s): %s", b->more_kind.kind, ns, mn,
           v ? v->api_version : b->api_version,
           plan->action == GB_RC_DELETE ? plan->why : "the backend changed");
  emit(env, tj, GB_EVENT_NORMAL, "PodGroupDeleted", msg);
  return 1;
}

/* Creates the plan's other object (desired_more) when it is missing, by
 * POST: an object of that name that exists (409) is never taken over; one
 * that is not gangbridge's for this TrainJob is reported.  Returns 1 when
 * it exists, 0 when *res says why not. */
static int ensure_more(struct gb_rc_env *env, const struct gb_rc_plan *plan,
                       const struct gc_value *tj, struct gc_arena *a, int attempts,
                       struct gb_rc_result *res) {
  const struct gc_backend *b = plan->backend;
  if (!plan->desired_more || !b)
    return 1;
  const char *ns = str_at(tj, "metadata.namespace");
  const char *mn = str_at(plan->desired_more, "metadata.name");
  char coll[1024], ebuf[1200], msg[700];
  json_object *body = gb_kube_client_value_to_json(plan->desired_more), *got = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = !body || !mn || object_path(coll, sizeof(coll), b, plan->version, 1, ns, NULL)
               ? GC_ENOMEM
               : 0;
  if (!rc) {
    strncat(coll, "?fieldManager=" GB_FIELD_MANAGER, sizeof(coll) - strlen(coll) - 1);
    rc = create_retried(env, coll, body, &got, &e);
  }
  json_object_put(body);
  json_object_put(got);
  const char *api = plan->version ? plan->version->api_version : b->api_version;
  if (rc && e.http == 409) {
    const struct gc_value *have = NULL;
    if (read_object(env, b, plan->version, 1, ns, mn, a, &have) == 0 && have &&
        !gb_reconcile_podgroup_ours(have, str_at(tj, "metadata.uid"))) {
      snprintf(msg, sizeof(msg),
               "%s %s/%s (%s) exists and was not created by gangbridge for this TrainJob; it "
               "is left exactly as it is",
               b->more_kind.kind, ns, mn, api);
      emit_on(env, tj, NULL, GB_EVENT_WARNING, "PodGroupExists", msg, 1);
    }
    return 1;
  }
  if (rc) {
    result(res, GB_RC_RETRY, error_reason(&e), "cannot create the %s %s: %s", gc_backend_name(b),
           b->more_kind.kind, gb_kube_error_str(&e, ebuf, sizeof(ebuf)));
    if (attempts >= 2)
      emit(env, tj, GB_EVENT_WARNING, "PodGroupApplyFailed", res->message);
    return 0;
  }
  snprintf(msg, sizeof(msg), "created %s %s/%s (%s)", b->more_kind.kind, ns, mn, api);
  emit(env, tj, GB_EVENT_NORMAL, "PodGroupCreated", msg);
  return 1;
}

/* Deletes the PodGroups the plan lists, each with a uid precondition (one
 * replaced meanwhile is not ours to delete).  Returns 1 when all are gone,
 * 0 when *res says why not. */
static int delete_podgroups(struct gb_rc_env *env, const struct gb_rc_plan *plan,
                            const struct gc_value *tj, int attempts, struct gb_rc_result *res) {
  const char *ns = str_at(tj, "metadata.namespace"), *name = str_at(tj, "metadata.name");
  struct gb_kube_error e;
  char path[1024], ebuf[1200], msg[600];
  for (size_t i = 0; i < plan->n_del; i++) {
    gb_kube_error_clear(&e);
    if (!leader(env)) { /* the lease may be lost at any moment: check before each write */
      res->action = GB_RC_SKIP;
      result(res, GB_RC_SKIPPED, NULL, "lost the leadership: no writes");
      return 0;
    }
    if (plan->del_more_uid[i] && !delete_more(env, plan, i, tj, attempts, res))
      return 0;
    if (!plan->del_uid[i])
      continue;
    int rc = podgroup_path(path, sizeof(path), plan->del[i], plan->del_version[i], ns, name);
    if (!rc)
      rc = gb_kube_client_delete(env->client, path, NULL, plan->del_uid[i], &e);
    if (rc == GC_ENOTFOUND || (rc && e.http == 409)) /* gone, or replaced by a new uid */
      continue;
    if (rc) {
      result(res, GB_RC_RETRY, error_reason(&e), "cannot delete the %s PodGroup: %s",
             gc_backend_name(plan->del[i]), gb_kube_error_str(&e, ebuf, sizeof(ebuf)));
      if (attempts >= 2)
        emit(env, tj, GB_EVENT_WARNING, "PodGroupDeleteFailed", res->message);
      return 0;
    }
    gb_log(GB_LOG_INFO, "deleted PodGroup", "namespace", ns, "name", name, "backend",
           gc_backend_name(plan->del[i]), "why", plan->why, NULL);
    snprintf(msg, sizeof(msg), "deleted %s %s/%s (%s): %s", plan->del[i]->kind, ns, name,
             plan->del[i]->group,
             plan->action == GB_RC_DELETE ? plan->why : "the backend changed");
    emit(env, tj, GB_EVENT_NORMAL, "PodGroupDeleted", msg); /* its PodGroup is gone */
  }
  return 1;
}

void gb_reconcile_run(struct gb_rc_env *env, const char *key, int attempts,
                      struct gb_rc_result *res) {
  memset(res, 0, sizeof(*res));
  char ns[256], name[256];
  const char *slash = strchr(key, '/');
  if (!slash || (size_t)(slash - key) >= sizeof(ns) || strlen(slash + 1) >= sizeof(name)) {
    result(res, GB_RC_SKIPPED, "invalid_key", "malformed key");
    return;
  }
  memcpy(ns, key, (size_t)(slash - key));
  ns[slash - key] = '\0';
  snprintf(name, sizeof(name), "%s", slash + 1);

  struct gc_arena *a = gc_arena_new(RC_ARENA_LIMIT);
  if (!a) {
    result(res, GB_RC_RETRY, "oom", "out of memory");
    return;
  }
  struct gb_rc_input in;
  int rc = gb_reconcile_gather(env, ns, name, a, &in);
  if (rc == GC_ENOTFOUND) {
    /* Deleted: the PodGroup goes with it by its ownerReference. */
    result(res, GB_RC_SKIPPED, NULL, "TrainJob gone");
    goto out;
  }
  if (rc) {
    result(res, GB_RC_RETRY, "cache", "cannot read the TrainJob from the cache: %s",
           gc_diag_strerror(rc));
    goto out;
  }
  const struct gc_value *tj = in.trainjob;
  struct gb_rc_plan plan;
  if (gb_reconcile_plan(&in, a, &plan)) {
    result(res, GB_RC_RETRY, "oom", "out of memory while planning");
    goto out;
  }
  res->action = plan.action;
  if (plan.action == GB_RC_SKIP) {
    if (leader(env))
      emit_plan(env, tj, &plan, NULL);
    result(res, GB_RC_SKIPPED, NULL, "%s", plan.why);
    goto out;
  }
  if (!leader(env)) {
    res->action = GB_RC_SKIP;
    result(res, GB_RC_SKIPPED, NULL, "not the leader: no writes (would %s)",
           gb_rc_action_name(plan.action));
    goto out;
  }
  /* An APPLY reports its Events after the write (none when the name turns
   * out to be taken by a foreign PodGroup). */
  if (plan.action != GB_RC_APPLY)
    emit_plan(env, tj, &plan, keep_uid(&in, &plan));

  if (!delete_podgroups(env, &plan, tj, attempts, res))
    goto out;
  switch (plan.action) {
  case GB_RC_APPLY:
    apply_podgroup(env, &plan, tj, a, attempts, res);
    if (res->outcome == GB_RC_DONE && leader(env))
      ensure_more(env, &plan, tj, a, attempts, res);
    goto out;
  case GB_RC_KEEP:
    if (ensure_more(env, &plan, tj, a, attempts, res))
      result(res, GB_RC_DONE, NULL, "%s", plan.why);
    break;
  case GB_RC_WAIT: result(res, GB_RC_RETRY, NULL, "waiting: %s", plan.why); break;
  case GB_RC_INVALID: result(res, GB_RC_BAD, "invalid_spec", "%s", plan.why); break;
  default: result(res, GB_RC_DONE, NULL, "%s", plan.why); break;
  }
out:
  gc_arena_free(a);
}
