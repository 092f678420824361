/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_reconcile: plan and carry out the reconcile of one TrainJob (see the
 * header and docs/operating.md).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_log.h"
#include "gb_reconcile.h"
#include "gc_catalog.h"

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

const char *gb_backend_group(enum gc_backend b) {
  return b == GC_BACKEND_COSCHEDULING ? "scheduling.x-k8s.io" : "scheduling.volcano.sh";
}

const char *gb_backend_version(enum gc_backend b) {
  return b == GC_BACKEND_COSCHEDULING ? "v1alpha1" : "v1beta1";
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

int gb_value_subset(const struct gc_value *want, const struct gc_value *have) {
  if (!want)
    return 1;
  if (!have)
    return 0;
  if (want->type == GC_MAP) {
    if (have->type != GC_MAP)
      return 0;
    for (size_t i = 0; i < want->len; i++) {
      const struct gc_member *m = &want->u.members[i];
      if (!gb_value_subset(m->value, gc_map_getn(have, m->key, m->key_len)))
        return 0;
    }
    return 1;
  }
  if (want->type == GC_SEQ) {
    if (have->type != GC_SEQ || have->len != want->len)
      return 0;
    for (size_t i = 0; i < want->len; i++)
      if (!gb_value_subset(want->u.items[i], have->u.items[i]))
        return 0;
    return 1;
  }
  return gc_value_equal(want, have);
}

int gb_trainjob_finished(const struct gc_value *tj) {
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
    p->events[p->n_events++] = (struct gb_rc_event){type, reason, msg};
}

static void decide(struct planner *pl, enum gb_rc_action act, const char *why) {
  pl->p->action = act;
  pl->p->why = why;
}

static enum gc_backend other(enum gc_backend b) {
  return b == GC_BACKEND_VOLCANO ? GC_BACKEND_COSCHEDULING : GC_BACKEND_VOLCANO;
}

static void add_delete(struct planner *pl, enum gc_backend b) {
  const struct gc_value *pg = pl->in->pg[b];
  struct gb_rc_plan *p = pl->p;
  if (!pg || p->n_del >= 2)
    return;
  /* Only PodGroups gangbridge made are ever deleted. */
  const char *mb = label(pg, GC_MANAGED_BY_LABEL);
  if (!mb || strcmp(mb, GC_MANAGER_NAME) != 0)
    return;
  p->del[p->n_del] = b;
  p->del_uid[p->n_del] = str_at(pg, "metadata.uid");
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

static int runtime_has_policy(const struct gc_value *rt) {
  const struct gc_value *pgp = gc_value_path(rt, "spec.podGroupPolicy");
  if (!pgp || pgp->type != GC_MAP)
    return 0;
  const struct gc_value *c = gc_map_get(pgp, "coscheduling"), *v = gc_map_get(pgp, "volcano");
  return (c && c->type != GC_NULL) || (v && v->type != GC_NULL);
}

/* The backend when the runtime names none: Namespace annotation, config,
 * auto by discovery.  Returns UNSET (plan decided WAIT) when none fits. */
static enum gc_backend default_backend(struct planner *pl) {
  const struct gb_rc_input *in = pl->in;
  enum gb_backend_choice choice = in->cfg->backend;
  const char *nsb = annotation(in->ns, GB_ANN_BACKEND);
  if (nsb) {
    if (!strcmp(nsb, "volcano"))
      choice = GB_CHOICE_VOLCANO;
    else if (!strcmp(nsb, "coscheduling"))
      choice = GB_CHOICE_COSCHEDULING;
    else if (!strcmp(nsb, "auto"))
      choice = GB_CHOICE_AUTO;
    else
      event(pl, GB_EVENT_WARNING, "InvalidNamespacePolicy",
            fmt(pl, "namespace annotation %s=\"%.100s\" is not volcano, coscheduling or auto; "
                    "using the configured backend (%s)",
                GB_ANN_BACKEND, nsb, gb_backend_choice_name(in->cfg->backend)));
  }
  if (choice == GB_CHOICE_VOLCANO)
    return GC_BACKEND_VOLCANO;
  if (choice == GB_CHOICE_COSCHEDULING)
    return GC_BACKEND_COSCHEDULING;
  if (in->served[GC_BACKEND_VOLCANO] == 1)
    return GC_BACKEND_VOLCANO;
  if (in->served[GC_BACKEND_VOLCANO] < 0 || in->served[GC_BACKEND_COSCHEDULING] < 0) {
    decide(pl, GB_RC_WAIT, "API discovery has not answered yet");
    return GC_BACKEND_UNSET;
  }
  if (in->served[GC_BACKEND_COSCHEDULING] == 1)
    return GC_BACKEND_COSCHEDULING;
  decide(pl, GB_RC_WAIT, "no PodGroup API is served");
  event(pl, GB_EVENT_WARNING, "PodGroupAPIMissing",
        "neither podgroups.scheduling.volcano.sh/v1beta1 nor "
        "podgroups.scheduling.x-k8s.io/v1alpha1 is served; install Volcano or the "
        "scheduler-plugins coscheduling CRD");
  return GC_BACKEND_UNSET;
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

/* A Volcano queue name must be an RFC 1123 subdomain (Volcano validates it). */
static int dns1123_subdomain(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 253)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    int alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (!alnum && ch != '-' && ch != '.')
      return 0;
    if (!alnum && (i == 0 || i == n - 1 || s[i - 1] == '.' || (ch == '.' && s[i - 1] == '-')))
      return 0;
  }
  return 1;
}

/* Phases in which no gang pod exists yet (so re-rendering is safe). */
static int phase_before_pods(const struct gc_value *pg) {
  const char *ph = str_at(pg, "status.phase");
  return !ph || !*ph || !strcmp(ph, "Pending") || !strcmp(ph, "Inqueue");
}

static void queue_events(struct planner *pl, const struct gc_gang *g) {
  const struct gb_rc_input *in = pl->in;
  if (g->backend != GC_BACKEND_VOLCANO || !in->queue_state)
    return;
  const char *q = g->queue ? g->queue : "default";
  const char *state = NULL;
  int r = in->queue_state(in->queue_ctx, q, &state, pl->a);
  if (r == 0)
    event(pl, GB_EVENT_WARNING, "QueueNotFound",
          fmt(pl, "Volcano queue \"%.253s\" does not exist; the PodGroup stays Pending until it "
                  "is created",
              q));
  else if (r == 1 && state && (!strcmp(state, "Closed") || !strcmp(state, "Closing")))
    event(pl, GB_EVENT_WARNING, "QueueClosed",
          fmt(pl, "Volcano queue \"%.253s\" is %s; it admits no new PodGroups", q, state));
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

  /* A finished TrainJob's PodGroup holds queue quota for nothing (Trainer
   * #4033): delete it, whatever the runtime says now. */
  if (gb_trainjob_finished(tj)) {
    out->managed = 1;
    if (!in->cfg->delete_on_finish) {
      decide(&pl, GB_RC_KEEP, "finished; podGroups.deleteOnFinish is false");
      goto out;
    }
    add_delete(&pl, GC_BACKEND_VOLCANO);
    add_delete(&pl, GC_BACKEND_COSCHEDULING);
    decide(&pl, out->n_del ? GB_RC_DELETE : GB_RC_KEEP,
           out->n_del ? "finished: deleting its PodGroup" : "finished; no PodGroup left");
    goto out;
  }

  int cluster = 1;
  const char *rtname = NULL;
  if (gb_reconcile_runtime_ref(tj, &cluster, &rtname)) {
    decide(&pl, GB_RC_INVALID, "spec.runtimeRef is missing or names an unsupported kind");
    event(&pl, GB_EVENT_WARNING, "InvalidTrainJob",
          fmt(&pl, "%s/%s: spec.runtimeRef is missing or names an unsupported kind", ns, name));
    goto out;
  }
  if (!in->runtime) {
    out->managed = 1;
    const char *what = cluster ? fmt(&pl, "ClusterTrainingRuntime \"%.253s\"", rtname)
                               : fmt(&pl, "TrainingRuntime \"%.253s/%.253s\"", ns, rtname);
    decide(&pl, GB_RC_WAIT, fmt(&pl, "%s not found", what));
    event(&pl, GB_EVENT_WARNING, "RuntimeNotFound",
          fmt(&pl, "%s not found; the PodGroup is created once it exists", what));
    goto out;
  }
  if (runtime_has_policy(in->runtime) && !in->cfg->take_over_trainer_policies) {
    decide(&pl, GB_RC_SKIP,
           "the runtime's podGroupPolicy is served by Trainer (selection.takeOverTrainerPolicies "
           "is false)");
    goto out;
  }
  out->managed = 1;

  struct gc_options opts;
  memset(&opts, 0, sizeof(opts));
  opts.scope = gang_scope(&pl);
  if (!runtime_has_policy(in->runtime)) {
    opts.default_backend = default_backend(&pl);
    if (opts.default_backend == GC_BACKEND_UNSET)
      goto out;
  }
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
  out->backend = g->backend;
  if (in->served[g->backend] == 0) {
    decide(&pl, GB_RC_WAIT,
           fmt(&pl, "the %s PodGroup API is not served", gc_backend_name(g->backend)));
    event(&pl, GB_EVENT_WARNING, "PodGroupAPIMissing",
          fmt(&pl, "podgroups.%s/%s is not served; install its CRD", gb_backend_group(g->backend),
              gb_backend_version(g->backend)));
    goto out;
  }

  /* The Namespace's Volcano queue when the runtime and TrainJob name none. */
  const char *nsq = annotation(in->ns, GC_VOLCANO_QUEUE_ANNOTATION);
  if (g->backend == GC_BACKEND_VOLCANO && !g->queue && nsq && *nsq &&
      dns1123_subdomain(nsq)) {
    g->queue = gc_arena_strdup(g->arena, nsq);
    if (!g->queue) {
      pl.oom = 1;
      goto out;
    }
  }

  const struct gc_value *have = in->pg[g->backend];
  int rerender = !have || g->suspended || phase_before_pods(have) || in->cfg->update_while_running;
  if (!rerender) {
    decide(&pl, GB_RC_KEEP, "gang pods exist: the PodGroup is left as it is");
    out->bound_jobs = annotation(have, GB_ANN_BOUND_JOBS);
    goto out;
  }
  if ((rc = gc_render_podgroup(g, a, &out->desired))) {
    pl.oom = rc == GC_ENOMEM;
    decide(&pl, GB_RC_INVALID, "cannot render the PodGroup");
    goto out;
  }
  out->bound_jobs = annotation(out->desired, GB_ANN_BOUND_JOBS);
  for (size_t i = 0; i < g->n_warnings; i++) {
    const struct gc_warning *w = &g->warnings[i];
    if (w->code == GC_WARN_TIMEOUT_CLAMPED)
      event(&pl, GB_EVENT_WARNING, "TimeoutClamped", fmt(&pl, "%s", w->message));
    else if (w->code == GC_WARN_GANG_SCOPE_NARROWED)
      event(&pl, GB_EVENT_NORMAL, "GangScopeNarrowed", fmt(&pl, "%s", w->message));
  }
  queue_events(&pl, g);
  if (have && gb_value_subset(out->desired, have)) {
    decide(&pl, GB_RC_KEEP, "the PodGroup is up to date");
  } else {
    decide(&pl, GB_RC_APPLY, have ? "re-rendering the PodGroup" : "creating the PodGroup");
  }
  /* A PodGroup of the other backend (the choice changed) is removed while
   * it still can be, so one gang never has two groups. */
  if (in->pg[other(g->backend)] && phase_before_pods(in->pg[other(g->backend)]))
    add_delete(&pl, other(g->backend));
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

static int queue_lookup(void *ctx, const char *name, const char **state, struct gc_arena *a) {
  struct gb_informer *inf = ctx;
  struct gc_value *q = NULL;
  int rc = gb_informer_get_value(inf, NULL, name, a, &q);
  if (rc == GC_ENOTFOUND)
    return 0;
  if (rc)
    return -1;
  *state = str_at(q, "status.state");
  return 1;
}

static void emit(struct gb_rc_env *env, const struct gc_value *tj, const char *type,
                 const char *reason, const char *msg) {
  if (!env->events || !leader(env))
    return;
  struct gb_event_ref ref = {GC_TRAINER_API, "TrainJob", str_at(tj, "metadata.namespace"),
                             str_at(tj, "metadata.name"), str_at(tj, "metadata.uid")};
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  if (gb_events_emit(env->events, &ref, type, reason, msg, &e)) {
    char buf[1200];
    gb_log(GB_LOG_WARN, "cannot record event", "namespace", ref.ns, "name", ref.name, "reason",
           reason, "error", gb_kube_error_str(&e, buf, sizeof(buf)), NULL);
  }
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

static int podgroup_path(char *buf, size_t cap, enum gc_backend b, const char *ns,
                         const char *name) {
  return gb_kube_path(buf, cap, gb_backend_group(b), gb_backend_version(b), "podgroups", ns, name);
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
  for (int b = GC_BACKEND_VOLCANO; b <= GC_BACKEND_COSCHEDULING; b++) {
    struct gc_value *pg = NULL;
    if (env->pg[b] && !gb_informer_get_value(env->pg[b], ns, name, a, &pg))
      in->pg[b] = pg;
    in->served[b] = env->served[b];
  }
  if (env->queues) {
    in->queue_state = queue_lookup;
    in->queue_ctx = env->queues;
  }
  return 0;
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
           gc_strerror(rc));
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
    result(res, GB_RC_SKIPPED, NULL, "%s", plan.why);
    goto out;
  }
  if (!leader(env)) {
    res->action = GB_RC_SKIP;
    result(res, GB_RC_SKIPPED, NULL, "not the leader: no writes (would %s)",
           gb_rc_action_name(plan.action));
    goto out;
  }
  for (size_t i = 0; i < plan.n_events; i++)
    emit(env, tj, plan.events[i].type, plan.events[i].reason, plan.events[i].message);

  struct gb_kube_error e;
  char path[1024], ebuf[1200];
  for (size_t i = 0; i < plan.n_del; i++) {
    gb_kube_error_clear(&e);
    if (!leader(env)) { /* the lease may be lost at any moment: check before each write */
      res->action = GB_RC_SKIP;
      result(res, GB_RC_SKIPPED, NULL, "lost the leadership: no writes");
      goto out;
    }
    if ((rc = podgroup_path(path, sizeof(path), plan.del[i], ns, name)))
      break;
    rc = gb_kube_delete(env->client, path, NULL, plan.del_uid[i], &e);
    if (rc == GC_ENOTFOUND || (rc && e.http == 409)) /* gone, or replaced by a new uid */
      rc = 0;
    if (rc) {
      result(res, GB_RC_RETRY, error_reason(&e), "cannot delete the %s PodGroup: %s",
             gc_backend_name(plan.del[i]), gb_kube_error_str(&e, ebuf, sizeof(ebuf)));
      if (attempts >= 2)
        emit(env, tj, GB_EVENT_WARNING, "PodGroupDeleteFailed", res->message);
      goto out;
    }
    gb_log(GB_LOG_INFO, "deleted PodGroup", "namespace", ns, "name", name, "backend",
           gc_backend_name(plan.del[i]), "why", plan.why, NULL);
  }
  switch (plan.action) {
  case GB_RC_APPLY: {
    json_object *obj = gb_kube_value_to_json(plan.desired);
    if (!obj) {
      result(res, GB_RC_RETRY, "oom", "out of memory");
      goto out;
    }
    gb_kube_error_clear(&e);
    if (!leader(env)) {
      json_object_put(obj);
      res->action = GB_RC_SKIP;
      result(res, GB_RC_SKIPPED, NULL, "lost the leadership: no writes");
      goto out;
    }
    rc = podgroup_path(path, sizeof(path), plan.backend, ns, name);
    if (!rc)
      rc = gb_kube_apply(env->client, path, obj, GB_FIELD_MANAGER, 0, NULL, &e);
    json_object_put(obj);
    if (rc && e.http == 409) {
      /* Another manager owns a field we would change: say so, never force. */
      result(res, GB_RC_CONFLICT, "conflict", "PodGroup fields owned by another manager: %s",
             e.message);
      emit(env, tj, GB_EVENT_WARNING, "PodGroupConflict",
           *e.message ? e.message : "server-side apply conflict");
      goto out;
    }
    if (rc) {
      result(res, GB_RC_RETRY, error_reason(&e), "cannot apply the %s PodGroup: %s",
             gc_backend_name(plan.backend), gb_kube_error_str(&e, ebuf, sizeof(ebuf)));
      if (attempts >= 2)
        emit(env, tj, GB_EVENT_WARNING, "PodGroupApplyFailed", res->message);
      goto out;
    }
    result(res, GB_RC_DONE, NULL, "%s", plan.why);
    break;
  }
  case GB_RC_WAIT: result(res, GB_RC_RETRY, NULL, "waiting: %s", plan.why); break;
  case GB_RC_INVALID: result(res, GB_RC_BAD, "invalid_spec", "%s", plan.why); break;
  default: result(res, GB_RC_DONE, NULL, "%s", plan.why); break;
  }
out:
  gc_arena_free(a);
}
