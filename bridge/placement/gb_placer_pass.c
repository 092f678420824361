/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_pass: one pass of the placement controller.  It takes the dirty
 * gangs, examines each (the gang from the controller, its pods copied out
 * of the model, the decision record known for it), and, inside the model's
 * lock, first takes back the recorded decisions the plan does not hold (a
 * restart or a takeover), then decides every gang with gated pods in one
 * gb_plan_decide (a pinned decision is checked there), and works out each
 * gang's restriction and the record to write.  Outside the lock the
 * records are written, and only then are pods released
 * (gb_placer_release.c); reservations of decisions that could not be
 * recorded are given back.
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_clock.h"
#include "gb_kobj.h"
#include "gb_log.h"
#include "gb_placer.h"
#include "gb_placer_int.h"
#include "gb_restriction.h"

#define PASS_ARENA_LIMIT (512u << 20)

/* ---- examining a gang ------------------------------------------------------ */

struct copy_ctx {
  struct gc_arena *a;
  struct gb_placer_item *it;
  int oom;
};

static int is_counted(const struct gc_gang *g, const char *rjob) {
  for (size_t i = 0; i < g->n_podsets; i++)
    if (g->podsets[i].binding == GC_BIND_COUNTED && !strcmp(g->podsets[i].name, rjob))
      return 1;
  return 0;
}

static int grow(struct copy_ctx *c) {
  struct gb_placer_item *it = c->it;
  size_t cap = it->cap ? it->cap * 2 : 64;
  struct gb_placer_pod *np = gc_arena_alloc(c->a, cap * sizeof(*np));
  if (!np)
    return GC_ENOMEM;
  if (it->n)
    memcpy(np, it->pods, it->n * sizeof(*np));
  it->pods = np;
  it->cap = cap;
  return 0;
}

static int copy_pod(void *arg, const struct gb_pod_view *v) {
  struct copy_ctx *c = arg;
  struct gb_placer_item *it = c->it;
  if (v->phase == 2 || v->phase == 3)
    return 0; /* finished pods are not the gang's now */
  if (it->n == it->cap && grow(c))
    goto oom;
  struct gb_placer_pod *p = &it->pods[it->n];
  memset(p, 0, sizeof(*p));
  p->name = gc_arena_strdup(c->a, v->name);
  p->uid = gc_arena_strdup(c->a, v->uid);
  p->rjob = gc_arena_strdup(c->a, v->rjob);
  p->node = gc_arena_strdup(c->a, v->node);
  p->res = gc_arena_alloc(c->a, (v->n_req + 1) * sizeof(*p->res));
  p->val = gc_arena_alloc(c->a, (v->n_req + 1) * sizeof(*p->val));
  if (!p->name || !p->uid || !p->rjob || !p->node || !p->res || !p->val)
    goto oom;
  for (size_t r = 0; r < v->n_req; r++)
    if (!(p->res[r] = gc_arena_strdup(c->a, v->res[r])))
      goto oom;
  memcpy(p->val, v->val, v->n_req * sizeof(*p->val));
  p->n_req = v->n_req;
  p->gated = v->placement_gated;
  p->counted = is_counted(it->gg, v->rjob);
  p->phase = v->phase;
  p->unschedulable = v->unschedulable;
  p->unschedulable_since_ms = v->unschedulable_since_ms;
  p->created_ms = v->created_ms;
  p->priority = v->priority;
  it->n++;
  return 0;
oom:
  c->oom = 1;
  return 1;
}

struct read_ctx {
  struct gb_placer_pass *ps;
  struct gb_placer_item *it;
  char why[256];
  int oom;
};

/* The gang (the controller's caches, its pod count included) and its pods
 * (the model's records), under the pod informer's delivery lock: both come
 * from the same pod changes. */
static int read_gang(void *arg) {
  struct read_ctx *r = arg;
  struct gb_placer *p = r->ps->p;
  struct gb_placer_item *it = r->it;
  int rc = p->o.gang(p->o.gang_ctx, it->ns, it->name, &it->gg, r->why, sizeof(r->why));
  if (rc || !it->gg)
    return rc;
  struct copy_ctx c = {r->ps->a, it, 0};
  rc = gb_model_foreach_gang_pod(p->o.model, it->ns, it->name, copy_pod, &c);
  r->oom = c.oom;
  return rc;
}

/* Reads the gang and its pods; sets state, the counts and the record the
 * table knows. */
static int examine(struct gb_placer_pass *ps, struct gb_placer_item *it) {
  struct gb_placer *p = ps->p;
  struct read_ctx r = {ps, it, "", 0};
  int rc = gb_model_hold_pods(p->o.model, read_gang, &r);
  if (r.oom)
    return GC_ENOMEM;
  if (rc && !it->gg) {
    gb_log(GB_LOG_WARN, "placement: cannot compute the gang", "gang", it->key, "reason", r.why,
           NULL);
    return rc;
  }
  if (!it->gg)
    return 0; /* UNMANAGED */
  if (rc < 0)
    return rc;
  it->state = it->gg->suspended ? GB_GANG_SUSPENDED
                                : gb_gangview_classify(it->pods, it->n, it->gg->min_member);
  for (size_t i = 0; i < it->n; i++) {
    const struct gb_placer_pod *pod = &it->pods[i];
    if (!it->first_ms || pod->created_ms < it->first_ms)
      it->first_ms = pod->created_ms;
    if (pod->priority > it->priority)
      it->priority = pod->priority;
    it->gated += pod->gated != 0;
    it->used |= pod->counted && (!pod->gated || pod->node[0]);
  }
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, it->key, 0);
  it->had_pods = g && g->had_pods;
  rc = g && g->rec ? gb_decision_copy(g->rec, &it->rec) : 0;
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* The restriction a released pod carries: the last `In` requirement of its
 * first required term, which is where the release appended it. */
static int read_restriction(struct gb_placer *p, const char *ns, const char *pod,
                            struct gb_restriction *out) {
  char path[600];
  json_object *o = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_client_path(path, sizeof(path), "", "v1", "pods", ns, pod);
  if (rc || (rc = gb_kube_client_get(p->o.client, path, &o, &e)))
    return rc;
  rc = GC_ENOTFOUND;
  json_object *terms = gb_kobj_dig(o, "spec", "affinity", "nodeAffinity",
                                   "requiredDuringSchedulingIgnoredDuringExecution",
                                   "nodeSelectorTerms", NULL);
  json_object *exprs = gb_kobj_get(gb_kobj_at(terms, 0), "matchExpressions");
  for (size_t i = gb_kobj_len(exprs); i-- > 0 && rc;) {
    json_object *x = gb_kobj_at(exprs, i), *vals = gb_kobj_arr(x, "values");
    const char *key = gb_kobj_str(x, "key"), *op = gb_kobj_str(x, "operator");
    if (!key || !op || strcmp(op, "In") || !vals)
      continue;
    memset(out, 0, sizeof(*out));
    size_t nv = gb_kobj_len(vals);
    rc = 0;
    for (size_t v = 0; v < nv && !rc; v++) {
      const char *val = json_object_get_string(gb_kobj_at(vals, v));
      rc = strcmp(key, GB_HOSTNAME_LABEL) ? gb_restriction_label(out, key, val, NULL)
                                          : gb_restriction_add_host(out, val, NULL);
    }
  }
  json_object_put(o);
  return rc;
}

static struct gb_placer_pg pg_of(const struct gb_placer_item *it) {
  struct gb_placer_pg pg = {it->gg->backend, it->ns, it->name, it->gg->uid};
  return pg;
}

/* The plan holds no decision of a gang that has one somewhere: the record
 * (the table's, the cache's, or, when pods are released already, the API's:
 * a cache may lag the previous leader's write), else for pods released by
 * a version without records the restriction on one of them. */
static int find_decision(struct gb_placer_pass *ps, struct gb_placer_item *it) {
  struct gb_placer *p = ps->p;
  struct gb_placer_pg pg = pg_of(it);
  char why[512] = "";
  int rc = it->rec ? 0 : gb_placer_record_read(p, &pg, 0, &it->rec, why, sizeof(why));
  if (!rc && !it->rec && it->used)
    rc = gb_placer_record_read(p, &pg, 1, &it->rec, why, sizeof(why));
  if (rc)
    return rc;
  if (it->rec) {
    it->restore = 1;
    return 0;
  }
  if (!it->used || !p->o.client)
    return 0;
  /* One released pod not bound yet tells (all got the same restriction);
   * one read per pass, whatever the gang's size. */
  for (size_t i = 0; i < it->n; i++) {
    const struct gb_placer_pod *pod = &it->pods[i];
    if (pod->counted && !pod->gated && !pod->node[0]) {
      it->legacy = read_restriction(p, it->ns, pod->name, &it->legacy_restr) == 0;
      break;
    }
  }
  return 0;
}

/* Builds the gang to decide from the counted pods not bound yet (bound
 * pods hold their capacity in the model already). */
static int build_gang(struct gb_placer_pass *ps, struct gb_placer_item *it) {
  struct gb_placer_pod *copy = gc_arena_alloc(ps->a, (it->n + 1) * sizeof(*copy));
  if (!copy)
    return GC_ENOMEM;
  for (size_t i = 0; i < it->n; i++) {
    copy[i] = it->pods[i];
    copy[i].counted = copy[i].counted && !copy[i].node[0];
  }
  int rc = gb_gangview_build_gang(ps->a, it->key, copy, it->n, &it->gg->topology, &it->tg);
  if (rc == GC_ELIMIT) {
    it->view.outcome = GB_PLAN_NOFIT;
    snprintf(it->view.reason, sizeof(it->view.reason),
             "the gang's pods have more than %d different requests", TP_MAX_PODSETS);
  }
  return rc;
}

/* What the pass does with an examined gang. */
static int plan_item(struct gb_placer_pass *ps, struct gb_placer_item *it) {
  if (!it->gg) {
    /* Not managed now (its TrainJob deleted or finished): whatever the plan
     * held for it goes. */
    it->forget = 1;
    return 0;
  }
  if (it->gg->suspended || (it->n == 0 && it->had_pods)) {
    /* Suspended, or over: nothing is reserved for it, nothing released,
     * and its decision goes (a resumed gang is decided afresh). */
    it->forget = it->clear = 1;
    return 0;
  }
  if (!it->gg->topology.set) {
    /* Gated, but the gang has no policy (any more): release unrestricted,
     * so that no pod stays stuck behind the gate. */
    it->release = it->unrestricted = it->gated > 0;
    it->view.outcome = GB_PLAN_PLACED;
    return 0;
  }
  struct gb_plan_view v;
  int pinned = gb_plan_get(ps->p->o.plan, it->key, &v) == 0 &&
               (v.outcome == GB_PLAN_PLACED || v.outcome == GB_PLAN_RELEASED);
  int rc = pinned ? 0 : find_decision(ps, it);
  if (rc || it->n == 0)
    return rc; /* no pods yet (pinned by jobEnqueueable): only its record is taken back */
  int want_decide = it->state == GB_GANG_READY || it->state == GB_GANG_PARTLY || it->legacy;
  if (!want_decide && !it->restore)
    return 0;
  rc = build_gang(ps, it);
  if (rc == GC_EINVAL) /* every counted pod is bound: nothing to place or hold */
    return it->restore = it->legacy = 0;
  if (rc)
    return rc == GC_ELIMIT ? 0 : rc;
  it->decide = want_decide;
  return 0;
}

/* ---- deciding, inside the model's lock --------------------------------------- */

/* 1 when node slot is allowed by restriction r. */
static int allowed(const struct tp_snapshot *s, uint32_t slot, const struct gb_restriction *r) {
  if (r->kind == GB_RESTRICT_NONE)
    return 1;
  if (r->kind == GB_RESTRICT_HOSTS) {
    const char *name = tp_snapshot_node_name(s, slot);
    for (size_t i = 0; name && i < r->n_values; i++)
      if (!strcmp(r->values[i], name))
        return 1;
    return 0;
  }
  /* A label level: the node is below a domain of that level with that value. */
  for (int64_t d = tp_snapshot_node_leaf(s, slot); d > 0;
       d = tp_snapshot_domain_parent(s, (uint32_t)d)) {
    const char *tn = tp_snapshot_domain_tier_name(s, (uint32_t)d);
    const char *id = tp_snapshot_domain_name(s, (uint32_t)d), *slash = strrchr(id, '/');
    if (tn && !strcmp(tn, r->key) && !strcmp(slash ? slash + 1 : id, r->values[0]))
      return 1;
  }
  return 0;
}

/* Adds to *mask (allocating it when NULL) every node outside restriction r. */
static int block_outside(const struct tp_snapshot *s, const struct gb_restriction *r,
                         uint8_t **mask) {
  size_t n = tp_snapshot_slot_count(s);
  if (!*mask && !(*mask = calloc(n ? n : 1, 1)))
    return GC_ENOMEM;
  for (size_t i = 0; i < tp_snapshot_node_count(s); i++) {
    uint32_t slot = tp_snapshot_node_sorted(s, i);
    if (!allowed(s, slot, r))
      (*mask)[slot] = 1;
  }
  return 0;
}

static int add_name(void *arg, const char *node, int64_t pods) {
  (void)pods;
  struct gb_placer_names *l = arg;
  if (l->n == l->cap)
    return GC_ELIMIT;
  l->names[l->n++] = node;
  return 0;
}

/* Sets the plan's allowed nodes of key to what restriction r lets the
 * scheduler use (per_pod: the assignment's nodes; NONE: left alone). */
static int narrow(struct gb_placer *p, struct tp_snapshot *s, const char *key,
                  const struct gb_restriction *r, int per_pod) {
  if (!per_pod && r->kind == GB_RESTRICT_NONE)
    return 0;
  struct gb_placer_names l = {NULL, 0, tp_snapshot_node_count(s) + 1};
  if (!(l.names = malloc(l.cap * sizeof(*l.names))))
    return GC_ENOMEM;
  int rc = 0;
  if (per_pod) {
    rc = gb_plan_foreach_node(p->o.plan, key, add_name, &l);
    /* Names are borrowed from the plan: copied by set_members below while
     * nothing else runs on the plan (the model's lock is held). */
  } else {
    for (size_t i = 0; i < tp_snapshot_node_count(s); i++) {
      uint32_t slot = tp_snapshot_node_sorted(s, i);
      if (allowed(s, slot, r))
        l.names[l.n++] = tp_snapshot_node_name(s, slot);
    }
  }
  if (!rc)
    rc = gb_plan_set_members(p->o.plan, key, l.names, l.n);
  free(l.names);
  return rc == GC_ENOTFOUND ? 0 : rc;
}

int gb_placer_restrict(struct gb_placer *p, struct tp_snapshot *s, const char *key,
                       const struct gb_plan_view *v, struct gb_restriction *out, int *per_pod) {
  int rc;
  *per_pod = 0;
  if (gb_plan_shared(p->o.plan, key) && !v->whole_cluster)
    rc = gb_gangview_exact_restriction(p->o.plan, key, out);
  else
    rc = gb_gangview_restriction_of(s, p->o.plan, key, v, p->o.label_levels, out);
  if (rc == GC_ELIMIT) {
    memset(out, 0, sizeof(*out));
    *per_pod = 1;
    rc = 0;
  }
  return rc ? rc : narrow(p, s, key, out, *per_pod);
}

/* One node per counted pod of it, from the plan's assignment. */
static int map_per_pod(struct gb_placer_pass *ps, struct gb_placer_item *it) {
  it->per_pod = 1;
  it->pod_nodes = gc_arena_alloc(ps->a, (it->n + 1) * sizeof(*it->pod_nodes));
  if (!it->pod_nodes)
    return GC_ENOMEM;
  return gb_gangview_map_pod_nodes(ps->p->o.plan, it->key, ps->a, it->pods, it->n, it->pod_nodes);
}

/* The restriction of a new decision (gb_placer_restrict), or for a gang
 * released without a record the restriction its pods carry. */
static int restrict_new(struct gb_placer_pass *ps, struct tp_snapshot *s,
                        struct gb_placer_item *it) {
  struct gb_placer *p = ps->p;
  int rc;
  it->per_pod = 0;
  if (it->legacy) {
    it->restr = it->legacy_restr;
    return narrow(p, s, it->key, &it->restr, 0);
  }
  rc = gb_placer_restrict(p, s, it->key, &it->view, &it->restr, &it->per_pod);
  if (!rc && it->per_pod)
    rc = map_per_pod(ps, it);
  if (!rc && gb_plan_overlap(p->o.plan, it->key, it->overlap, sizeof(it->overlap)) == 0)
    it->overlap[0] = '\0';
  return rc;
}

/* The record of the decision the plan now holds for it, with restriction
 * restr (per_pod: one node per pod). */
static int build_want(struct gb_placer_pass *ps, struct gb_placer_item *it) {
  struct gb_decision *w = NULL;
  int rc = gb_decision_new(&w);
  if (!rc)
    rc = gb_plan_record_of(ps->p->o.plan, it->key, w->a, &w->rec);
  if (rc) {
    gb_decision_free(w);
    return rc;
  }
  w->restr = it->restr;
  w->per_pod = it->per_pod;
  enum tp_mode m = it->tg.policy.mode;
  snprintf(w->mode, sizeof(w->mode), "%s",
           m == TP_MODE_HARD   ? "hard"
           : m == TP_MODE_SOFT ? "soft"
                               : "");
  gb_decision_free(it->want);
  it->want = w;
  it->write = 1;
  return 0;
}

/* A pinned decision kept as it is: the restriction of its record (a record
 * that does not match the plan's decision is written again). */
static int keep_pinned(struct gb_placer_pass *ps, struct tp_snapshot *s,
                       struct gb_placer_item *it) {
  int rc = 0;
  if (it->rec && it->rec->rec.id == it->view.id && !it->view.replanned) {
    it->restr = it->rec->restr;
    it->per_pod = it->rec->per_pod;
    if (it->per_pod)
      rc = map_per_pod(ps, it);
  } else if (it->rec && (it->view.replanned || it->view.used)) {
    /* Replanned inside the same domain (now, or in a pass whose record
     * could not be written): the restriction its released pods carry, the
     * new assignment. */
    it->restr = it->rec->restr;
    it->per_pod = it->rec->per_pod;
    rc = it->per_pod ? map_per_pod(ps, it) : 0;
    if (!rc)
      rc = build_want(ps, it);
  } else {
    /* Pinned without a record of this decision (the scheduler endpoint
     * without a recorder, or a record of another decision in between). */
    rc = restrict_new(ps, s, it);
    if (!rc)
      rc = build_want(ps, it);
  }
  return rc;
}

/* Acts on the view gb_plan_decide gave it. */
static int after_decide(struct gb_placer_pass *ps, struct tp_snapshot *s,
                        struct gb_placer_item *it) {
  const struct gb_plan_view *v = &it->view;
  int rc = 0;
  if (v->outcome == GB_PLAN_PLACED && !v->fresh) {
    it->busy = 1; /* the scheduler endpoint is recording it */
  } else if (v->outcome == GB_PLAN_PLACED) {
    rc = restrict_new(ps, s, it);
    if (!rc)
      rc = build_want(ps, it);
    it->release = !rc;
  } else if (v->outcome == GB_PLAN_RELEASED && !v->waiting) {
    rc = keep_pinned(ps, s, it);
    it->release = !rc;
  } else if (v->redecided && (v->outcome == GB_PLAN_NOFIT || v->outcome == GB_PLAN_HELD)) {
    it->clear = it->rec != NULL; /* withdrawn: no pod used it */
  }
  return rc == GC_ENOMEM ? rc : 0;
}

/* Takes back the recorded decisions the plan does not hold (before any
 * new decision of the pass can take their capacity). */
static int restore_all(struct gb_placer_pass *ps, struct tp_snapshot *s) {
  for (size_t i = 0; i < ps->n; i++) {
    struct gb_placer_item *it = &ps->items[i];
    if (!it->restore)
      continue;
    size_t nb = 0;
    struct gb_plan_bound *b = gc_arena_alloc(ps->a, (it->n + 1) * sizeof(*b));
    if (!b)
      return GC_ENOMEM;
    for (size_t j = 0; j < it->n; j++)
      if (it->pods[j].counted && it->pods[j].node[0])
        b[nb++] = (struct gb_plan_bound){it->pods[j].node, it->pods[j].n_req,
                                         (const char *const *)it->pods[j].res, it->pods[j].val};
    int rc = gb_plan_restore(ps->p->o.plan, s, it->key, &it->rec->rec, b, nb, it->used, ps->now_ms);
    if (rc == GC_ENOMEM)
      return rc;
    if (rc) {
      gb_log(GB_LOG_WARN, "placement: cannot take a recorded decision back", "gang", it->key,
             "error", gc_diag_strerror(rc), NULL);
      it->restore = 0;
    }
  }
  return 0;
}

static int decide_fn(void *arg, struct tp_snapshot *s, uint64_t gen) {
  struct gb_placer_pass *ps = arg;
  struct gb_placer *p = ps->p;
  size_t n = 0;
  for (size_t i = 0; i < ps->n; i++)
    n += ps->items[i].decide;
  struct gb_plan_gang *gangs = gc_arena_alloc(ps->a, (n + 1) * sizeof(*gangs));
  struct gb_plan_view *views = gc_arena_alloc(ps->a, (n + 1) * sizeof(*views));
  uint8_t **masks = calloc(n + 1, sizeof(*masks));
  int rc = GC_ENOMEM;
  if (!gangs || !views || !masks || (rc = restore_all(ps, s)))
    goto out;
  size_t k = 0;
  for (size_t i = 0; i < ps->n; i++) {
    struct gb_placer_item *it = &ps->items[i];
    if (!it->decide)
      continue;
    const char *first = NULL;
    for (size_t j = 0; j < it->n && !first; j++)
      if (it->pods[j].counted)
        first = it->pods[j].name;
    /* Pods of one gang share their tolerations (one template per job). */
    if (first && (rc = gb_model_blocked_mask(p->o.model, s, it->ns, first, &masks[k])) < 0)
      goto out;
    if (it->legacy && (rc = block_outside(s, &it->legacy_restr, &masks[k])))
      goto out;
    gangs[k] = (struct gb_plan_gang){it->key, &it->tg, it->priority, it->first_ms, masks[k]};
    k++;
  }
  if (n && (rc = gb_plan_decide(p->o.plan, s, gen, gangs, n, ps->now_ms, views, &ps->d)))
    goto out;
  k = 0;
  for (size_t i = 0; i < ps->n && !rc; i++)
    if (ps->items[i].decide) {
      ps->items[i].view = views[k++];
      rc = after_decide(ps, s, &ps->items[i]);
    }
  gb_plan_expire(p->o.plan, s, ps->now_ms, NULL, NULL);
out:
  for (size_t i = 0; masks && i < n; i++)
    free(masks[i]);
  free(masks);
  return rc;
}

/* After the records and releases: a gang that is over or suspended is
 * forgotten; a new decision that was not recorded gives its reservation
 * back; one recorded elsewhere in the meantime is dropped (the next pass
 * takes that one back). */
static int settle_fn(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  struct gb_placer_pass *ps = arg;
  struct gb_plan *plan = ps->p->o.plan;
  for (size_t i = 0; i < ps->n; i++) {
    struct gb_placer_item *it = &ps->items[i];
    if (it->forget)
      gb_plan_forget(plan, s, it->key);
    if (!it->write || it->written)
      continue;
    if (it->adopted && it->view.outcome == GB_PLAN_RELEASED)
      gb_plan_forget(plan, s, it->key); /* another decision is recorded: next pass */
    else
      gb_plan_unreserve(plan, s, it->key); /* a new decision, not recorded: given back */
  }
  return 0;
}

/* ---- the pass ----------------------------------------------------------------------- */

/* 1 when a gang needs looking at in this pass. */
static int wanted(const struct gb_placer *p, const struct gang *g) {
  if (g->dirty)
    return 1;
  int waiting = g->state == GB_GANG_READY || g->state == GB_GANG_PARTLY;
  if (p->capacity && waiting)
    return 1;
  /* A suspended gang is looked at again on the tick: nothing kicks the
   * placer when its TrainJob is resumed. */
  return p->tick && (waiting || g->state == GB_GANG_SUSPENDED ||
                     (g->state == GB_GANG_RELEASED && g->watching && !g->raced));
}

static int mark_recorded(void *arg, const char *ns, const char *name) {
  struct gb_placer *p = arg;
  char key[GB_PLAN_KEY_MAX + 1];
  if (snprintf(key, sizeof(key), "%s/%s", ns, name) >= (int)sizeof(key))
    return 0;
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, key, 1);
  if (g)
    g->dirty = 1;
  pthread_mutex_unlock(&p->mu);
  return 0;
}

/* On start and takeover: every gang with a decision record is looked at
 * (those without pods are known to nobody else), once the caches know. */
static void scan_records(struct gb_placer *p) {
  pthread_mutex_lock(&p->mu);
  int due = !p->records_scanned && p->o.record_gangs;
  pthread_mutex_unlock(&p->mu);
  if (!due || p->o.record_gangs(p->o.record_ctx, GB_DECISION_ANNOTATION, mark_recorded, p))
    return;
  pthread_mutex_lock(&p->mu);
  p->records_scanned = 1;
  pthread_mutex_unlock(&p->mu);
}

/* Takes the gangs to look at (mu held), clearing their dirty flags. */
static int take_work(struct gb_placer_pass *ps) {
  struct gb_placer *p = ps->p;
  size_t n = 0, bucket = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->gangs, &bucket, NULL); h;
       h = gb_htab_next(&p->gangs, &bucket, h))
    n += wanted(p, (struct gang *)h);
  ps->items = gc_arena_alloc(ps->a, (n + 1) * sizeof(*ps->items));
  if (!ps->items)
    return GC_ENOMEM;
  memset(ps->items, 0, (n + 1) * sizeof(*ps->items));
  bucket = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->gangs, &bucket, NULL); h;
       h = gb_htab_next(&p->gangs, &bucket, h)) {
    struct gang *g = (struct gang *)h;
    if (!wanted(p, g))
      continue;
    g->dirty = 0;
    struct gb_placer_item *it = &ps->items[ps->n++];
    snprintf(it->key, sizeof(it->key), "%s", g->key);
    const char *slash = strchr(g->key, '/');
    snprintf(it->ns, sizeof(it->ns), "%.*s", (int)(slash - g->key), g->key);
    snprintf(it->name, sizeof(it->name), "%s", slash + 1);
  }
  p->kick = p->capacity = p->tick = 0;
  p->passes++;
  return 0;
}

/* Puts an item back for the next pass. */
static void retry_later(struct gb_placer *p, const struct gb_placer_item *it) {
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, it->key, 0);
  if (g)
    g->dirty = 1;
  pthread_mutex_unlock(&p->mu);
}

/* Keeps the reservations of the pinned gangs whose pods are still being
 * released (a failing release never loses them). */
static void hold_pinned(struct gb_placer_pass *ps) {
  for (size_t i = 0; i < ps->n; i++) {
    struct gb_placer_item *it = &ps->items[i];
    int pinned = it->view.outcome == GB_PLAN_RELEASED || it->written;
    if (!it->decide || !pinned || it->busy)
      continue;
    int used = it->used || it->legacy || atomic_load(&it->done) > 0;
    gb_plan_hold(ps->p->o.plan, it->key, gb_placer_now_ms(), used);
  }
}

static int decide_and_release(struct gb_placer_pass *ps) {
  struct gb_placer *p = ps->p;
  size_t decide = 0, restore = 0, other = 0;
  for (size_t i = 0; i < ps->n; i++) {
    decide += ps->items[i].decide;
    restore += ps->items[i].restore;
    other += ps->items[i].forget || ps->items[i].release;
  }
  int rc = 0;
  int64_t t0 = gb_clock_ns(), t1 = t0;
  if (decide || restore) {
    rc = gb_model_with_snapshot(p->o.model, decide_fn, ps);
    t1 = gb_clock_ns();
    if (rc == GC_ENOTFOUND) { /* no snapshot yet: try again when the model has one */
      for (size_t i = 0; i < ps->n; i++)
        if (ps->items[i].decide || ps->items[i].restore) {
          ps->items[i].decide = ps->items[i].restore = ps->items[i].release = 0;
          retry_later(p, &ps->items[i]);
        }
      return 0;
    }
    if (rc)
      return rc;
  }
  gb_placer_write_records(ps);
  for (size_t i = 0; i < ps->n; i++)
    if (ps->items[i].busy || ps->items[i].adopted)
      retry_later(p, &ps->items[i]);
  if (p->o.client && (rc = gb_placer_release_all(ps)))
    return rc;
  hold_pinned(ps);
  if (decide) {
    size_t pods = 0;
    for (size_t i = 0; i < ps->n; i++)
      pods += (size_t)atomic_load(&ps->items[i].done);
    pthread_mutex_lock(&p->mu);
    p->last_decide_ns = t1 - t0;
    p->last_release_ns = gb_clock_ns() - t1;
    p->last_decided = decide;
    p->last_released_pods = pods;
    pthread_mutex_unlock(&p->mu);
  }
  rc = decide || other ? gb_model_with_snapshot(p->o.model, settle_fn, ps) : 0;
  gb_placer_clear_records(ps);
  return rc == GC_ENOTFOUND ? 0 : rc;
}

int gb_placer_run_once(struct gb_placer *p) {
  int64_t t0 = gb_clock_ns();
  pthread_mutex_lock(&p->pass_mu);
  struct gb_placer_pass ps = {p,  gc_arena_new(PASS_ARENA_LIMIT), NULL, 0, gb_placer_now_ms(), 1,
                              {0}};
  gc_diags_init(&ps.d);
  int rc = GC_ENOMEM;
  if (!ps.a)
    goto out;
  /* Only the leader decides, records and releases: a standby would reserve
   * capacity it never releases into.  It still examines, for the status. */
  ps.leader = !p->o.is_leader || p->o.is_leader(p->o.leader_ctx);
  if (ps.leader)
    scan_records(p);
  pthread_mutex_lock(&p->mu);
  rc = take_work(&ps);
  pthread_mutex_unlock(&p->mu);
  if (rc)
    goto out;
  for (size_t i = 0; i < ps.n; i++) {
    struct gb_placer_item *it = &ps.items[i];
    if (!(rc = examine(&ps, it)) && ps.leader)
      rc = plan_item(&ps, it);
    if (rc) {
      if (rc == GC_ENOMEM)
        goto out;
      retry_later(p, it);
      it->decide = it->release = it->restore = it->forget = it->clear = 0;
      rc = 0;
    }
  }
  rc = decide_and_release(&ps);
  gb_placer_report(&ps, t0);
out:
  for (size_t i = 0; i < ps.n; i++) {
    gc_gang_free(ps.items[i].gg);
    gb_decision_free(ps.items[i].rec);
    gb_decision_free(ps.items[i].want);
  }
  gc_arena_free(ps.a);
  gc_diags_destroy(&ps.d);
  pthread_mutex_unlock(&p->pass_mu);
  return rc;
}
