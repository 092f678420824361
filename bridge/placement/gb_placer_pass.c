/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_pass: one pass of the placement controller.  It takes the dirty
 * gangs, examines each (the gang from the controller, its pods copied out
 * of the model), decides every ready gang in one gb_plan_decide on the
 * model's snapshot, releases the placed ones (leader only; a bounded number
 * of PATCHes in flight), confirms or gives back their reservations, and
 * reports: Events, metrics, the table the status reads.
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_clock.h"
#include "gb_log.h"
#include "gb_placer.h"
#include "gb_placer_int.h"
#include "gb_release.h"

#define PASS_ARENA_LIMIT (512u << 20)
#define RELEASE_ATTEMPTS 5

struct item {
  char key[GB_PLAN_KEY_MAX + 1];
  char ns[64], name[254];
  struct gc_gang *gg;
  struct gb_placer_pod *pods;
  size_t n, cap;
  enum gb_gang_state state;
  int decide;  /* goes to gb_plan_decide */
  int release; /* release its gated pods (restriction known) */
  int readopt; /* released by an earlier process, pods not all bound: reserve again */
  struct tp_gang tg;
  int64_t priority, first_ms;
  struct gb_plan_view view;
  struct gb_restriction restr;
  const char **pod_nodes; /* per-pod fallback (parallel to pods), or NULL */
  atomic_int failed;
  int released; /* every gated pod released */
  int raced;
};

struct pass {
  struct gb_placer *p;
  struct gc_arena *a;
  struct item *items;
  size_t n;
  int64_t now_ms;
  int leader;
  struct gc_diags d;
};

/* ---- examining a gang ------------------------------------------------------ */

struct copy_ctx {
  struct gc_arena *a;
  struct item *it;
  int oom;
};

static int is_counted(const struct gc_gang *g, const char *rjob) {
  for (size_t i = 0; i < g->n_podsets; i++)
    if (g->podsets[i].binding == GC_BIND_COUNTED && !strcmp(g->podsets[i].name, rjob))
      return 1;
  return 0;
}

static int copy_pod(void *arg, const struct gb_pod_view *v) {
  struct copy_ctx *c = arg;
  struct item *it = c->it;
  if (v->phase == 2 || v->phase == 3)
    return 0; /* finished pods are not the gang's now */
  if (it->n == it->cap) {
    size_t cap = it->cap ? it->cap * 2 : 64;
    struct gb_placer_pod *np = gc_arena_alloc(c->a, cap * sizeof(*np));
    if (!np)
      goto oom;
    if (it->n)
      memcpy(np, it->pods, it->n * sizeof(*np));
    it->pods = np;
    it->cap = cap;
  }
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

/* Reads the gang and its pods; sets state, and what the pass does with it. */
static int examine(struct pass *ps, struct item *it) {
  struct gb_placer *p = ps->p;
  char why[256] = "";
  int rc = p->o.gang(p->o.gang_ctx, it->ns, it->name, &it->gg, why, sizeof(why));
  if (rc) {
    gb_log(GB_LOG_WARN, "placement: cannot compute the gang", "gang", it->key, "reason", why, NULL);
    return rc;
  }
  if (!it->gg)
    return 0; /* UNMANAGED */
  struct copy_ctx c = {ps->a, it, 0};
  rc = gb_model_foreach_gang_pod(p->o.model, it->ns, it->name, copy_pod, &c);
  if (c.oom)
    return GC_ENOMEM;
  if (rc < 0)
    return rc;
  it->state = gb_placer_classify(it->pods, it->n, it->gg->min_member);
  it->first_ms = 0;
  for (size_t i = 0; i < it->n; i++) {
    if (!it->first_ms || it->pods[i].created_ms < it->first_ms)
      it->first_ms = it->pods[i].created_ms;
    if (it->pods[i].priority > it->priority)
      it->priority = it->pods[i].priority;
  }
  return 0;
}

/* What to do with an examined gang: decide it (ready, or a release cut short
 * whose decision this process does not know), release it with the known
 * restriction, or nothing. */
/* The restriction a released pod carries: the last `In` requirement of its
 * first required term, which is where the release appended it. */
static int read_restriction(struct gb_placer *p, const char *ns, const char *pod,
                            struct gb_restriction *out) {
  char path[600];
  json_object *o = NULL, *terms = NULL, *exprs = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_path(path, sizeof(path), "", "v1", "pods", ns, pod);
  if (rc || (rc = gb_kube_get(p->o.client, path, &o, &e)))
    return rc;
  rc = GC_ENOTFOUND;
  json_object_object_get_ex(o, "spec", &terms);
  const char *keys[] = {"affinity", "nodeAffinity",
                        "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"};
  for (size_t i = 0; i < 4 && terms; i++)
    if (!json_object_object_get_ex(terms, keys[i], &terms))
      terms = NULL;
  if (json_object_is_type(terms, json_type_array) && json_object_array_length(terms) > 0)
    json_object_object_get_ex(json_object_array_get_idx(terms, 0), "matchExpressions", &exprs);
  size_t n = json_object_is_type(exprs, json_type_array) ? json_object_array_length(exprs) : 0;
  for (size_t i = n; i-- > 0 && rc;) {
    json_object *x = json_object_array_get_idx(exprs, i), *k = NULL, *op = NULL, *vals = NULL;
    if (!json_object_object_get_ex(x, "key", &k) ||
        !json_object_object_get_ex(x, "operator", &op) ||
        strcmp(json_object_get_string(op), "In") || !json_object_object_get_ex(x, "values", &vals))
      continue;
    memset(out, 0, sizeof(*out));
    const char *key = json_object_get_string(k);
    size_t nv = json_object_array_length(vals);
    rc = 0;
    for (size_t v = 0; v < nv && !rc; v++) {
      const char *val = json_object_get_string(json_object_array_get_idx(vals, v));
      rc = strcmp(key, GB_HOSTNAME_LABEL) ? gb_restriction_label(out, key, val, NULL)
                                          : gb_restriction_add_host(out, val, NULL);
    }
  }
  json_object_put(o);
  return rc;
}

/* A gang released by an earlier process (a restart, another leader) whose
 * pods are not all bound holds capacity this process has not reserved:
 * reserve it again, inside the domain its pods are restricted to, before
 * anything else is decided on that capacity. */
static int plan_readopt(struct pass *ps, struct item *it) {
  struct gb_placer *p = ps->p;
  struct gb_plan_view v;
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, it->key, 0);
  int known = g && g->released_ms;
  pthread_mutex_unlock(&p->mu);
  if (known || !p->o.client || !it->gg->topology.set || gb_plan_get(p->o.plan, it->key, &v) == 0)
    return 0;
  const char *unbound = NULL;
  for (size_t i = 0; i < it->n; i++) {
    it->pods[i].counted = it->pods[i].counted && !it->pods[i].node[0];
    if (it->pods[i].counted && !unbound)
      unbound = it->pods[i].name;
  }
  if (!unbound || read_restriction(p, it->ns, unbound, &it->restr))
    return 0; /* every pod bound, or not restricted by us: nothing held */
  int rc = gb_placer_build_gang(ps->a, it->key, it->pods, it->n, &it->gg->topology, &it->tg);
  if (rc == GC_ENOMEM)
    return rc;
  it->readopt = it->decide = !rc;
  return 0;
}

static int plan_item(struct pass *ps, struct item *it) {
  struct gb_placer *p = ps->p;
  if (it->state == GB_GANG_RELEASED && it->gg)
    return plan_readopt(ps, it);
  if (it->state == GB_GANG_PARTLY) {
    pthread_mutex_lock(&p->mu);
    struct gang *g = gb_placer_find(p, it->key, 0);
    if (g && g->restr) {
      it->restr = *g->restr;
      it->release = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (it->release)
      return 0;
    /* Only the gated pods are left to place: they form the gang now. */
    for (size_t i = 0; i < it->n; i++)
      it->pods[i].counted = it->pods[i].counted && it->pods[i].gated;
  } else if (it->state != GB_GANG_READY) {
    return 0;
  }
  if (!it->gg->topology.set) {
    /* Gated, but the gang has no policy (any more): release unrestricted,
     * so that no pod stays stuck behind the gate. */
    it->release = 1;
    it->view.outcome = GB_PLAN_PLACED;
    return 0;
  }
  int rc = gb_placer_build_gang(ps->a, it->key, it->pods, it->n, &it->gg->topology, &it->tg);
  if (rc == GC_ENOMEM)
    return rc;
  if (rc) {
    it->view.outcome = GB_PLAN_NOFIT;
    snprintf(it->view.reason, sizeof(it->view.reason),
             "the gang's pods have more than %d different requests", TP_MAX_PODSETS);
    return 0;
  }
  it->decide = 1;
  return 0;
}

/* ---- deciding, inside the model's lock --------------------------------------- */

/* The restriction of a placed item: the domain's labels or nodes, or one
 * node per pod when even the assignment is too long to list. */
static int restrict_item(struct pass *ps, struct tp_snapshot *s, struct item *it) {
  struct gb_placer *p = ps->p;
  int rc = gb_placer_restriction_of(s, p->o.plan, it->key, &it->view, p->o.label_levels,
                                    &it->restr);
  if (rc != GC_ELIMIT)
    return rc;
  memset(&it->restr, 0, sizeof(it->restr));
  it->pod_nodes = gc_arena_alloc(ps->a, (it->n + 1) * sizeof(*it->pod_nodes));
  if (!it->pod_nodes)
    return GC_ENOMEM;
  /* Counted gated pods take the planned nodes in order; the others (a
   * later wave) are left unrestricted beyond the gate's removal. */
  size_t k = 0;
  const char **planned = gc_arena_alloc(ps->a, (it->n + 1) * sizeof(*planned));
  if (!planned)
    return GC_ENOMEM;
  if ((rc = gb_placer_pod_nodes(p->o.plan, it->key, ps->a, it->n, planned)))
    return rc;
  for (size_t i = 0; i < it->n; i++)
    if (it->pods[i].counted && it->pods[i].gated)
      it->pod_nodes[i] = planned[k++];
  return 0;
}

/* 1 when node slot is allowed by restriction r. */
static int allowed(const struct tp_snapshot *s, uint32_t slot, const struct gb_restriction *r) {
  if (r->kind == GB_RESTRICT_HOSTS) {
    const char *name = tp_snapshot_node_name(s, slot);
    for (size_t i = 0; i < r->n_values; i++)
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

static int decide_fn(void *arg, struct tp_snapshot *s, uint64_t gen) {
  struct pass *ps = arg;
  struct gb_placer *p = ps->p;
  size_t n = 0;
  for (size_t i = 0; i < ps->n; i++)
    n += ps->items[i].decide;
  struct gb_plan_gang *gangs = gc_arena_alloc(ps->a, (n + 1) * sizeof(*gangs));
  struct gb_plan_view *views = gc_arena_alloc(ps->a, (n + 1) * sizeof(*views));
  uint8_t **masks = calloc(n + 1, sizeof(*masks));
  int rc = GC_ENOMEM;
  if (!gangs || !views || !masks)
    goto out;
  size_t k = 0;
  for (size_t i = 0; i < ps->n; i++) {
    struct item *it = &ps->items[i];
    if (!it->decide)
      continue;
    const char *first = NULL;
    for (size_t j = 0; j < it->n && !first; j++)
      if (it->pods[j].counted)
        first = it->pods[j].name;
    /* Pods of one gang share their tolerations (one template per job). */
    if (first && (rc = gb_model_blocked_mask(p->o.model, s, it->ns, first, &masks[k])) < 0)
      goto out;
    if (it->readopt && (rc = block_outside(s, &it->restr, &masks[k])))
      goto out;
    gangs[k] = (struct gb_plan_gang){it->key, &it->tg, it->priority, it->first_ms, masks[k]};
    k++;
  }
  if (n && (rc = gb_plan_decide(p->o.plan, s, gen, gangs, n, ps->now_ms, views, &ps->d)))
    goto out;
  k = 0;
  for (size_t i = 0; i < ps->n; i++) {
    struct item *it = &ps->items[i];
    if (!it->decide)
      continue;
    it->view = views[k++];
    if (it->readopt) {
      /* Its pods carry their restriction already: nothing to send. */
      it->released = it->view.outcome == GB_PLAN_PLACED;
      continue;
    }
    /* RELEASED with pods still gated: the domain was pinned elsewhere (the
     * Volcano extender's jobEnqueueable permitted the gang before its pods
     * existed, or a release stopped half-way); the gated pods go there too,
     * or they would wait behind the gate for ever. */
    int go = it->view.outcome == GB_PLAN_PLACED || it->view.outcome == GB_PLAN_RELEASED;
    if (go && (rc = restrict_item(ps, s, it)) == GC_ENOMEM)
      goto out;
    it->release = go && !rc;
  }
  gb_plan_expire(p->o.plan, s, ps->now_ms, NULL, NULL);
  rc = 0;
out:
  for (size_t i = 0; masks && i < n; i++)
    free(masks[i]);
  free(masks);
  return rc;
}

/* After the releases: a released gang's reservation now lasts until its
 * pods bind; a gang not (fully) released gives its reservation back. */
static int settle_fn(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  struct pass *ps = arg;
  for (size_t i = 0; i < ps->n; i++) {
    struct item *it = &ps->items[i];
    if (it->n == 0) /* every pod gone: the gang is over (or not begun) */
      gb_plan_forget(ps->p->o.plan, s, it->key);
    if (!it->decide || it->view.outcome != GB_PLAN_PLACED)
      continue;
    if (it->released)
      gb_plan_mark_released(ps->p->o.plan, it->key, gb_placer_now_ms());
    else
      gb_plan_unreserve(ps->p->o.plan, s, it->key);
  }
  return 0;
}

/* ---- releasing ------------------------------------------------------------------ */

struct job {
  struct item *it;
  size_t pod;
};

struct releaser {
  struct pass *ps;
  struct job *jobs;
  size_t n;
  atomic_size_t next;
};

/* Releases one pod: read it, build the release merge patch
 * (controller/gb_release), send it; a 409 (the pod changed since it was
 * read) reads it again.  A pod that is gone, or released already, is done. */
static int release_pod(struct gb_placer *p, const char *ns, const char *name,
                       const struct gb_restriction *r) {
  char path[600];
  int rc = gb_kube_path(path, sizeof(path), "", "v1", "pods", ns, name);
  struct gb_kube_error e;
  struct gc_diags d;
  gb_kube_error_clear(&e);
  gc_diags_init(&d);
  for (int attempt = 0; !rc && attempt < RELEASE_ATTEMPTS; attempt++) {
    json_object *pod = NULL, *patch = NULL;
    enum gb_release_state st = GB_RELEASE_GATED;
    if ((rc = gb_kube_get(p->o.client, path, &pod, &e))) {
      rc = rc == GC_ENOTFOUND ? 0 : rc;
      break;
    }
    rc = gb_release_state(pod, r, &st, &d);
    if (!rc && st == GB_RELEASE_GATED)
      rc = gb_release_patch(pod, r, &patch, &d);
    json_object_put(pod);
    if (!rc && patch)
      rc = gb_kube_merge_patch(p->o.client, path, patch, NULL, &e);
    json_object_put(patch);
    if (!patch || rc != GC_EIO || e.http != 409)
      break;
    rc = 0; /* 409: read it again */
    if (attempt + 1 == RELEASE_ATTEMPTS)
      rc = GC_EIO;
  }
  if (rc == GC_ENOTFOUND)
    rc = 0;
  if (rc)
    gb_log(GB_LOG_WARN, "placement: cannot release pod", "pod", name, "namespace", ns, "error",
           d.n ? d.msgs[0] : e.message, NULL);
  gc_diags_destroy(&d);
  return rc;
}

static void one_node(struct gb_restriction *r, const char *node) {
  memset(r, 0, sizeof(*r));
  gb_restriction_add_host(r, node, NULL);
}

static void *release_worker(void *arg) {
  struct releaser *rl = arg;
  struct gb_placer *p = rl->ps->p;
  for (;;) {
    size_t i = atomic_fetch_add(&rl->next, 1);
    if (i >= rl->n)
      break;
    struct item *it = rl->jobs[i].it;
    const struct gb_placer_pod *pod = &it->pods[rl->jobs[i].pod];
    struct gb_restriction own;
    const struct gb_restriction *r = &it->restr;
    if (it->pod_nodes && it->pod_nodes[rl->jobs[i].pod]) {
      one_node(&own, it->pod_nodes[rl->jobs[i].pod]);
      r = &own;
    }
    if (release_pod(p, it->ns, pod->name, r)) {
      atomic_fetch_add(&it->failed, 1);
      if (p->m_release_err)
        gb_counter_inc(p->m_release_err, NULL);
    }
  }
  return NULL;
}

/* Releases every gated pod of every item to release, max_inflight at once. */
static int release_all(struct pass *ps) {
  struct gb_placer *p = ps->p;
  size_t n = 0;
  for (size_t i = 0; i < ps->n; i++)
    for (size_t j = 0; ps->items[i].release && j < ps->items[i].n; j++)
      n += ps->items[i].pods[j].gated != 0;
  if (!n)
    goto done;
  struct releaser rl = {ps, gc_arena_alloc(ps->a, n * sizeof(struct job)), 0, 0};
  if (!rl.jobs)
    return GC_ENOMEM;
  for (size_t i = 0; i < ps->n; i++)
    for (size_t j = 0; ps->items[i].release && j < ps->items[i].n; j++)
      if (ps->items[i].pods[j].gated)
        rl.jobs[rl.n++] = (struct job){&ps->items[i], j};
  size_t nt = (size_t)p->o.max_inflight < n ? (size_t)p->o.max_inflight : n;
  pthread_t th[1024];
  size_t started = 0;
  for (; started < nt && started < 1024; started++)
    if (pthread_create(&th[started], NULL, release_worker, &rl))
      break;
  if (!started)
    release_worker(&rl); /* no thread to spare: release them one by one here */
  for (size_t t = 0; t < started; t++)
    pthread_join(th[t], NULL);
done:
  for (size_t i = 0; i < ps->n; i++)
    if (!ps->items[i].readopt)
      ps->items[i].released = ps->items[i].release && !atomic_load(&ps->items[i].failed);
  return 0;
}

/* ---- reporting ------------------------------------------------------------------ */

/* A released gang whose counted pods are not all bound past the release
 * timeout, one of them reported unschedulable: the cluster changed between
 * the decision and the scheduling (recovering it is the gang timeout's). */
static int raced(const struct gb_placer *p, const struct item *it, int64_t released_ms,
                 int64_t now) {
  if (!released_ms || now - released_ms < p->o.release_timeout_ms)
    return 0;
  for (size_t i = 0; i < it->n; i++)
    if (it->pods[i].counted && !it->pods[i].node[0] && it->pods[i].unschedulable)
      return 1;
  return 0;
}

static int all_bound(const struct item *it) {
  for (size_t i = 0; i < it->n; i++)
    if (it->pods[i].counted && !it->pods[i].node[0])
      return 0;
  return 1;
}

static void post(struct gb_placer *p, const struct item *it, const char *type, const char *reason,
                 const char *msg) {
  if (!p->o.events || !it->gg)
    return;
  struct gb_event_ref tj = {"trainer.kubeflow.org/v1alpha1", "TrainJob", it->ns, it->name,
                            it->gg->uid};
  struct gb_event_ref pg = {it->gg->backend == GC_BACKEND_COSCHEDULING
                                ? "scheduling.x-k8s.io/v1alpha1"
                                : "scheduling.volcano.sh/v1beta1",
                            "PodGroup", it->ns, it->name, NULL};
  struct gb_kube_error e;
  gb_events_record(p->o.events, &tj, type, reason, msg, 1, &e);
  gb_events_record(p->o.events, &pg, type, reason, msg, 1, &e);
}

/* Updates the table entry of it (mu held); *msg is set to the
 * PlacementWaiting message to post when it changed, *race to 1 for a new
 * raced placement. */
static void update_gang(struct pass *ps, struct item *it, struct gang *g, const char **msg,
                        int *race, int *fresh) {
  struct gb_placer *p = ps->p;
  g->state = it->gg ? it->state : GB_GANG_UNMANAGED;
  g->min_member = it->gg ? it->gg->min_member : 0;
  g->pods = (int64_t)it->n;
  g->gated = 0;
  for (size_t i = 0; i < it->n; i++)
    g->gated += it->pods[i].gated != 0;
  g->first_ms = it->first_ms;
  if (it->n == 0) {
    /* Every pod is gone: a new TrainJob of the same name starts afresh. */
    free(g->restr);
    g->restr = NULL;
    g->released_ms = 0;
    g->watching = g->raced = 0;
    g->outcome = GB_PLAN_NONE;
    g->reason[0] = g->domain[0] = g->evented[0] = '\0';
  }
  if (it->decide) {
    /* The plan keeps a decision for its snapshot generation: a pass that
     * finds the same one again is not a new decision. */
    *fresh = it->view.decided_ms != g->decided_ms || it->view.outcome != g->outcome;
    g->decided_ms = it->view.decided_ms;
    g->outcome = it->view.outcome;
    snprintf(g->reason, sizeof(g->reason), "%s", it->view.reason);
    snprintf(g->domain, sizeof(g->domain), "%s", it->view.domain);
  }
  if (it->released) {
    free(g->restr);
    g->restr = malloc(sizeof(*g->restr));
    if (g->restr)
      *g->restr = it->restr;
    if (it->state != GB_GANG_PARTLY || !g->released_ms)
      g->released_ms = ps->now_ms;
    g->outcome = GB_PLAN_RELEASED;
    g->state = GB_GANG_RELEASED;
    g->gated = 0;
    g->raced = 0;
    g->watching = 1;
    g->evented[0] = '\0';
  } else if (g->state == GB_GANG_RELEASED && g->watching && !g->raced) {
    if (raced(p, it, g->released_ms, ps->now_ms))
      *race = g->raced = 1;
    if (all_bound(it))
      g->watching = 0;
  }
  int waiting = it->decide &&
                (it->view.outcome == GB_PLAN_NOFIT || it->view.outcome == GB_PLAN_HELD);
  if (waiting && it->view.reason[0] && strcmp(g->evented, it->view.reason)) {
    snprintf(g->evented, sizeof(g->evented), "%s", it->view.reason);
    *msg = it->view.reason;
  }
}

static void report(struct pass *ps, int64_t t0_ns) {
  struct gb_placer *p = ps->p;
  double release_s = (double)(gb_clock_ns() - t0_ns) / 1e9;
  for (size_t i = 0; i < ps->n; i++) {
    struct item *it = &ps->items[i];
    const char *msg = NULL;
    int race = 0, fresh = 0;
    pthread_mutex_lock(&p->mu);
    struct gang *g = gb_placer_find(p, it->key, 0);
    if (g)
      update_gang(ps, it, g, &msg, &race, &fresh);
    /* Every pod gone and nothing changed since: forget the gang, so the
     * table holds only gangs that have pods. */
    if (g && it->n == 0 && !g->dirty) {
      gb_htab_remove(&p->gangs, &g->h);
      free(g->restr);
      free(g);
    }
    pthread_mutex_unlock(&p->mu);
    if (fresh && p->m_decisions)
      gb_counter_inc(p->m_decisions, (const char *[]){gb_placer_outcome_name(it->view.outcome)});
    if (it->released && !it->readopt && p->m_release_s) {
      gb_histogram_observe(p->m_release_s, NULL, release_s);
      if (it->first_ms)
        gb_histogram_observe(p->m_gated_s, NULL, (double)(ps->now_ms - it->first_ms) / 1000.0);
    }
    if (msg)
      post(p, it, GB_EVENT_WARNING, "PlacementWaiting", msg);
    if (it->released && !it->readopt && it->view.domain[0]) {
      char line[600];
      snprintf(line, sizeof(line), "released %zu pod(s) to %s", it->n, it->view.domain);
      post(p, it, GB_EVENT_NORMAL, "PlacementReleased", line);
    }
    if (race) {
      if (p->m_raced)
        gb_counter_inc(p->m_raced, NULL);
      char line[300];
      snprintf(line, sizeof(line),
               "released pods are still unschedulable after %llds: the cluster changed "
               "after the placement",
               (long long)(p->o.release_timeout_ms / 1000));
      post(p, it, GB_EVENT_WARNING, "PlacementRaced", line);
    }
  }
}

/* ---- the pass ----------------------------------------------------------------------- */

/* 1 when a gang needs looking at in this pass. */
static int wanted(const struct gb_placer *p, const struct gang *g) {
  if (g->dirty)
    return 1;
  int waiting = g->state == GB_GANG_READY || g->state == GB_GANG_PARTLY;
  if (p->capacity && waiting)
    return 1;
  return p->tick && (waiting || (g->state == GB_GANG_RELEASED && g->watching && !g->raced));
}

/* Takes the gangs to look at (mu held), clearing their dirty flags. */
static int take_work(struct pass *ps) {
  struct gb_placer *p = ps->p;
  size_t n = 0, bucket = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->gangs, &bucket, NULL); h;
       h = gb_htab_next(&p->gangs, &bucket, h))
    n += wanted(p, (struct gang *)h);
  ps->items = gc_arena_alloc(ps->a, (n + 1) * sizeof(*ps->items));
  if (!ps->items)
    return GC_ENOMEM;
  bucket = 0;
  for (struct gb_hnode *h = gb_htab_next(&p->gangs, &bucket, NULL); h;
       h = gb_htab_next(&p->gangs, &bucket, h)) {
    struct gang *g = (struct gang *)h;
    if (!wanted(p, g))
      continue;
    g->dirty = 0;
    struct item *it = &ps->items[ps->n++];
    snprintf(it->key, sizeof(it->key), "%s", g->key);
    const char *slash = strchr(g->key, '/');
    snprintf(it->ns, sizeof(it->ns), "%.*s", (int)(slash - g->key), g->key);
    snprintf(it->name, sizeof(it->name), "%s", slash + 1);
  }
  p->kick = p->capacity = p->tick = 0;
  p->passes++;
  return 0;
}

/* Puts an item back for the next pass (its examination failed). */
static void retry_later(struct gb_placer *p, const struct item *it) {
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, it->key, 0);
  if (g)
    g->dirty = 1;
  pthread_mutex_unlock(&p->mu);
}

static int decide_and_release(struct pass *ps) {
  struct gb_placer *p = ps->p;
  size_t decide = 0, release = 0;
  for (size_t i = 0; i < ps->n; i++)
    decide += ps->items[i].decide;
  int rc = 0;
  int64_t t0 = gb_clock_ns(), t1 = t0;
  if (decide) {
    rc = gb_model_with_snapshot(p->o.model, decide_fn, ps);
    t1 = gb_clock_ns();
    if (rc == GC_ENOTFOUND) { /* no snapshot yet: try again when the model has one */
      for (size_t i = 0; i < ps->n; i++)
        if (ps->items[i].decide) {
          ps->items[i].decide = 0;
          retry_later(p, &ps->items[i]);
        }
      return 0;
    }
    if (rc)
      return rc;
  }
  for (size_t i = 0; i < ps->n; i++)
    release += ps->items[i].release;
  if (release && p->o.client && (rc = release_all(ps)))
    return rc;
  if (decide) {
    size_t pods = 0;
    for (size_t i = 0; i < ps->n; i++)
      for (size_t j = 0; ps->items[i].released && !ps->items[i].readopt && j < ps->items[i].n; j++)
        pods += ps->items[i].pods[j].gated != 0;
    pthread_mutex_lock(&p->mu);
    p->last_decide_ns = t1 - t0;
    p->last_release_ns = gb_clock_ns() - t1;
    p->last_decided = decide;
    p->last_released_pods = pods;
    pthread_mutex_unlock(&p->mu);
  }
  size_t gone = 0;
  for (size_t i = 0; i < ps->n; i++)
    gone += ps->items[i].n == 0;
  rc = decide || gone ? gb_model_with_snapshot(p->o.model, settle_fn, ps) : 0;
  return rc == GC_ENOTFOUND ? 0 : rc;
}

int gb_placer_run_once(struct gb_placer *p) {
  int64_t t0 = gb_clock_ns();
  pthread_mutex_lock(&p->pass_mu);
  struct pass ps = {p, gc_arena_new(PASS_ARENA_LIMIT), NULL, 0, gb_placer_now_ms(), 1, {0}};
  gc_diags_init(&ps.d);
  int rc = GC_ENOMEM;
  if (!ps.a)
    goto out;
  /* Only the leader decides and releases: a standby would reserve capacity
   * it never releases into.  It still examines, for the status. */
  ps.leader = !p->o.is_leader || p->o.is_leader(p->o.leader_ctx);
  pthread_mutex_lock(&p->mu);
  rc = take_work(&ps);
  pthread_mutex_unlock(&p->mu);
  if (rc)
    goto out;
  for (size_t i = 0; i < ps.n; i++) {
    struct item *it = &ps.items[i];
    if ((rc = examine(&ps, it)) || (rc = plan_item(&ps, it))) {
      if (rc == GC_ENOMEM)
        goto out;
      retry_later(p, it);
      it->decide = it->release = 0;
      rc = 0;
    }
    if (!ps.leader)
      it->decide = it->release = 0;
  }
  rc = decide_and_release(&ps);
  report(&ps, t0);
out:
  for (size_t i = 0; i < ps.n; i++)
    gc_gang_free(ps.items[i].gg);
  gc_arena_free(ps.a);
  gc_diags_destroy(&ps.d);
  pthread_mutex_unlock(&p->pass_mu);
  return rc;
}
