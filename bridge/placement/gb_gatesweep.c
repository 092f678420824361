/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gatesweep: removing gangbridge's gate from pods gangbridge does not hold
 * (see the header).  A sweep collects the candidates (from the live model,
 * or from the API while placement is disabled), decides which lose the gate
 * outside every lock, then releases them one by one.
 */
#include "gb_gatesweep.h"
#include "gb_gatesweep_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_clock.h"
#include "gb_gate.h"
#include "gb_kobj.h"
#include "gb_leader.h"
#include "gb_log.h"
#include "gb_release.h"

#define RELEASE_ATTEMPTS 5
#define NAME_MAX_LEN 253
#define WHY_MAX 1024 /* three names of up to 253 bytes and the sentence */

/* A pod that may lose the gate, copied out of the model or a list page. */
struct cand {
  char ns[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1];
  char jobset[NAME_MAX_LEN + 1], rjob[NAME_MAX_LEN + 1];
  int64_t created_ms;
};

struct gb_gatesweep {
  struct gb_gatesweep_opts o;
  struct gb_metric *m_removed;
  pthread_mutex_t mu; /* guards kick, stopping; with cond */
  pthread_cond_t cond;
  int kick, stopping, started;
  pthread_t th;
};

/* ---- reading gated pods ----------------------------------------------------------- */

static const char *or_empty(const char *s) { return s ? s : ""; }

int gb_gatesweep_pod_of(json_object *pod, struct gb_gated_pod *out) {
  memset(out, 0, sizeof(*out));
  json_object *gates = gb_kobj_arr(gb_kobj_get(pod, "spec"), "schedulingGates");
  if (!gates)
    return 0;
  int ours = 0;
  size_t n = gb_kobj_len(gates);
  for (size_t i = 0; i < n; i++) {
    const char *g = or_empty(gb_kobj_str(gb_kobj_at(gates, i), "name"));
    if (!strcmp(g, GB_PLACEMENT_GATE) && !ours) {
      ours = 1;
      out->index = i;
    }
    if (out->n_gates < GB_GATESWEEP_MAX_GATES)
      out->gates[out->n_gates++] = g;
  }
  if (!ours)
    return 0;
  out->ns = or_empty(gb_kobj_meta(pod, "namespace"));
  out->name = or_empty(gb_kobj_meta(pod, "name"));
  out->uid = or_empty(gb_kobj_meta(pod, "uid"));
  out->jobset = or_empty(gb_kobj_label(pod, "jobset.sigs.k8s.io/jobset-name"));
  out->rjob = or_empty(gb_kobj_label(pod, "jobset.sigs.k8s.io/replicatedjob-name"));
  out->created = or_empty(gb_kobj_meta(pod, "creationTimestamp"));
  double t = 0;
  if (*out->created && gb_leader_parse_time(out->created, &t) == 0 && t > 0)
    out->created_ms = (int64_t)(t * 1000);
  return 1;
}

struct list_ctx {
  gb_gated_pod_fn fn;
  void *arg;
};

static int list_item(void *arg, json_object *obj) {
  struct list_ctx *c = arg;
  struct gb_gated_pod p;
  return gb_gatesweep_pod_of(obj, &p) ? c->fn(c->arg, &p, obj) : 0;
}

int gb_gatesweep_list(struct gb_kube_client *client, const char *ns, gb_gated_pod_fn fn, void *arg,
                      struct gb_kube_error *e) {
  char path[400], rv[128];
  int rc = gb_kube_client_path(path, sizeof(path), "", "v1", "pods", ns && *ns ? ns : NULL, NULL);
  if (rc)
    return rc;
  /* A gated pod is never bound: the unbound pods are all that need reading. */
  struct gb_kube_list_opts lo = {NULL, "spec.nodeName=", 500};
  struct list_ctx c = {fn, arg};
  return gb_kube_client_list(client, path, &lo, list_item, &c, rv, sizeof(rv), e);
}

/* ---- collecting candidates ------------------------------------------------------- */

struct cands {
  struct cand *v;
  size_t n, cap;
  int oom;
};

static int cand_add(struct cands *c, const char *ns, const char *name, const char *jobset,
                    const char *rjob, int64_t created_ms) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    struct cand *v = realloc(c->v, cap * sizeof(*v));
    if (!v) {
      c->oom = 1;
      return 1;
    }
    c->v = v;
    c->cap = cap;
  }
  struct cand *x = &c->v[c->n++];
  snprintf(x->ns, sizeof(x->ns), "%s", ns);
  snprintf(x->name, sizeof(x->name), "%s", name);
  snprintf(x->jobset, sizeof(x->jobset), "%s", jobset ? jobset : "");
  snprintf(x->rjob, sizeof(x->rjob), "%s", rjob ? rjob : "");
  x->created_ms = created_ms;
  return 0;
}

struct collect {
  const struct gb_gatesweep *g;
  struct cands *c;
  size_t max;
};

/* 1 when ns is one of the namespaces the sweeper may write in. */
static int watched(const struct gb_gatesweep *g, const char *ns) {
  for (size_t i = 0; i < g->o.n_namespaces; i++)
    if (!strcmp(g->o.namespaces[i], ns))
      return 1;
  return g->o.n_namespaces == 0;
}

static int from_model(void *arg, const struct gb_pod_view *p) {
  struct collect *k = arg;
  if (!watched(k->g, p->ns))
    return 0;
  if (k->c->n >= k->max)
    return 1;
  return cand_add(k->c, p->ns, p->name, p->jobset, p->rjob, p->created_ms);
}

static int from_api(void *arg, const struct gb_gated_pod *p, json_object *obj) {
  (void)obj;
  struct collect *k = arg;
  if (k->c->n >= k->max)
    return 1;
  return cand_add(k->c, p->ns, p->name, p->jobset, p->rjob, p->created_ms);
}

/* ---- deciding -------------------------------------------------------------------- */

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 when gangbridge holds c (a pod of a gang it places), 0 when it does not
 * (why says so), < 0 when it cannot tell now (left for the next sweep). */
static int held(struct gb_gatesweep *g, const struct cand *c, char *why, size_t size) {
  if (!c->jobset[0]) {
    snprintf(why, size, "it is not a JobSet pod (no jobset.sigs.k8s.io/jobset-name label)");
    return 0;
  }
  struct gc_gang *gg = NULL;
  char reason[256] = "";
  int rc = g->o.gang(g->o.gang_ctx, c->ns, c->jobset, &gg, reason, sizeof(reason));
  if (rc)
    return rc < 0 ? rc : GC_EIO;
  if (!gg) {
    snprintf(why, size, "gangbridge does not manage TrainJob %s/%s", c->ns, c->jobset);
    return 0;
  }
  int bound = 0;
  for (size_t i = 0; i < gg->n_podsets; i++)
    if (!strcmp(gg->podsets[i].name, c->rjob) && gg->podsets[i].binding != GC_BIND_UNBOUND)
      bound = 1;
  int set = gg->topology.set;
  gc_gang_free(gg);
  if (!bound) {
    snprintf(why, size, "replicated job \"%s\" is not part of the gang of TrainJob %s/%s", c->rjob,
             c->ns, c->jobset);
    return 0;
  }
  if (!set) {
    snprintf(why, size, "the gang of TrainJob %s/%s has no topology policy", c->ns, c->jobset);
    return 0;
  }
  return 1;
}

/* ---- removing the gate ----------------------------------------------------------- */

static int leading(const struct gb_gatesweep *g) {
  return !g->o.is_leader || g->o.is_leader(g->o.leader_ctx);
}

/* Removes gangbridge's gate from pod ns/name: the release with no
 * restriction, re-read on 409.  *uid gets the pod's uid (for the Event).
 * Returns 1 when a gate was removed, 0 when there was none (gone, released
 * meanwhile), or a GC_E* code. */
static int remove_gate(struct gb_gatesweep *g, const char *ns, const char *name, char *uid,
                       size_t uid_size, struct gb_kube_error *e) {
  char path[600];
  int rc = gb_kube_client_path(path, sizeof(path), "", "v1", "pods", ns, name);
  struct gb_restriction none;
  memset(&none, 0, sizeof(none));
  for (int attempt = 0; !rc && attempt < RELEASE_ATTEMPTS; attempt++) {
    json_object *pod = NULL, *patch = NULL;
    enum gb_release_state st = GB_RELEASE_DONE;
    if ((rc = gb_kube_client_get(g->o.client, path, &pod, e)))
      return rc == GC_ENOTFOUND ? 0 : rc;
    snprintf(uid, uid_size, "%s", or_empty(gb_kobj_meta(pod, "uid")));
    rc = gb_release_state(pod, &none, &st, NULL);
    if (!rc && st == GB_RELEASE_GATED)
      rc = gb_release_patch(pod, &none, &patch, NULL);
    json_object_put(pod);
    if (rc || !patch)
      return rc;
    rc = gb_kube_client_merge_patch(g->o.client, path, patch, NULL, e);
    json_object_put(patch);
    if (rc == 0)
      return 1;
    if (rc == GC_ENOTFOUND)
      return 0;
    if (rc == GC_EIO && e->http == 409)
      rc = 0; /* changed since read: read it again */
  }
  return rc ? rc : GC_EIO;
}

static void report(struct gb_gatesweep *g, const struct cand *c, const char *uid, int disabled,
                   const char *why) {
  char msg[GB_EVENT_MESSAGE_MAX];
  if (disabled)
    snprintf(msg, sizeof(msg),
             "placement is disabled (placement.enabled: false): removed the scheduling gate "
             "%s; the pod schedules without a topology restriction",
             GB_PLACEMENT_GATE);
  else
    snprintf(msg, sizeof(msg),
             "removed the scheduling gate %s, which held the pod although gangbridge does not "
             "place it: %s",
             GB_PLACEMENT_GATE, why);
  gb_log(GB_LOG_INFO, "removed gangbridge's scheduling gate", "namespace", c->ns, "pod", c->name,
         "reason", disabled ? "placement disabled" : why, NULL);
  if (g->m_removed)
    gb_metric_counter_inc(g->m_removed, (const char *[]){disabled ? "disabled" : "stray"});
  if (!g->o.events)
    return;
  struct gb_event_ref ref = {"v1", "Pod", c->ns, c->name, *uid ? uid : NULL};
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  gb_events_record(g->o.events, &ref, disabled ? GB_EVENT_NORMAL : GB_EVENT_WARNING,
                   "PlacementGateRemoved", msg, 1, &e);
}

/* ---- a sweep --------------------------------------------------------------------- */

static int collect(struct gb_gatesweep *g, struct cands *c) {
  struct collect k = {g, c, g->o.max_per_sweep * 4};
  int rc = 0;
  if (g->o.model) {
    rc = gb_model_foreach_gated_pod(g->o.model, from_model, &k);
  } else {
    /* Each watched namespace, or all of them at once. */
    size_t n = g->o.n_namespaces ? g->o.n_namespaces : 1;
    for (size_t i = 0; i < n && rc >= 0; i++) {
      struct gb_kube_error e;
      gb_kube_error_clear(&e);
      rc = gb_gatesweep_list(g->o.client, g->o.n_namespaces ? g->o.namespaces[i] : NULL, from_api,
                             &k, &e);
      if (rc < 0)
        gb_log(GB_LOG_WARN, "cannot list gated pods", "error", e.message, NULL);
    }
  }
  if (c->oom)
    return GC_ENOMEM;
  return rc < 0 ? rc : 0;
}

/* Handles one candidate.  Returns 1 when its gate was removed, 0 when it
 * stays (held, too young, unknown), or a GC_E* code. */
static int sweep_one(struct gb_gatesweep *g, const struct cand *c, int64_t now) {
  char why[WHY_MAX] = "";
  int disabled = !g->o.model;
  if (!disabled) {
    if (c->created_ms && now - c->created_ms < g->o.grace_ms)
      return 0; /* its TrainJob may not be in the caches yet */
    if (held(g, c, why, sizeof(why)) != 0)
      return 0;
  }
  if (!leading(g))
    return 0;
  char uid[128] = "";
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = remove_gate(g, c->ns, c->name, uid, sizeof(uid), &e);
  if (rc == 1)
    report(g, c, uid, disabled, why);
  else if (rc < 0)
    gb_log(GB_LOG_WARN, "cannot remove gangbridge's scheduling gate", "namespace", c->ns, "pod",
           c->name, "error", e.message[0] ? e.message : gc_diag_strerror(rc), NULL);
  return rc;
}

int gb_gatesweep_run_once(struct gb_gatesweep *g, size_t *removed) {
  if (removed)
    *removed = 0;
  if (!leading(g))
    return 0;
  struct cands c = {NULL, 0, 0, 0};
  int rc = collect(g, &c);
  int64_t now = wall_ms();
  size_t done = 0;
  for (size_t i = 0; !rc && i < c.n && done < g->o.max_per_sweep; i++) {
    int r = sweep_one(g, &c.v[i], now);
    if (r == 1)
      done++;
    else if (r < 0 && !rc)
      rc = r;
  }
  free(c.v);
  if (removed)
    *removed = done;
  return rc;
}

/* ---- the thread ------------------------------------------------------------------ */

static void *sweeper_main(void *arg) {
  struct gb_gatesweep *g = arg;
  pthread_mutex_lock(&g->mu);
  g->kick = 1; /* a sweep at start */
  while (!g->stopping) {
    struct timespec until;
    gb_clock_deadline(&until, g->o.interval_ms * 1000000);
    while (!g->kick && !g->stopping && pthread_cond_timedwait(&g->cond, &g->mu, &until) == 0)
      ;
    if (g->stopping)
      break;
    g->kick = 0;
    pthread_mutex_unlock(&g->mu);
    gb_gatesweep_run_once(g, NULL);
    pthread_mutex_lock(&g->mu);
  }
  pthread_mutex_unlock(&g->mu);
  return NULL;
}

int gb_gatesweep_new(const struct gb_gatesweep_opts *o, struct gb_gatesweep **out,
                     struct gc_diags *d) {
  *out = NULL;
  if (!o || !o->client || (o->model && !o->gang)) {
    gc_diags_addf(d, "gate sweeper: the client (and, with the model, the gang lookup) are "
                     "required");
    return GC_EINVAL;
  }
  struct gb_gatesweep *g = calloc(1, sizeof(*g));
  if (!g)
    return GC_ENOMEM;
  g->o = *o;
  if (g->o.grace_ms <= 0)
    g->o.grace_ms = 30000;
  if (g->o.interval_ms <= 0)
    g->o.interval_ms = 10000;
  if (!g->o.max_per_sweep)
    g->o.max_per_sweep = 1024;
  pthread_mutex_init(&g->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g->cond, &ca);
  pthread_condattr_destroy(&ca);
  static const char *const reason[] = {"reason"};
  int rc = o->reg ? gb_metrics_counter(o->reg, "gangbridge_placement_gates_removed_total",
                                       "Placement gates removed from pods gangbridge does not "
                                       "hold (reason: disabled, stray).",
                                       reason, 1, &g->m_removed, d)
                  : 0;
  if (rc) {
    gb_gatesweep_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

int gb_gatesweep_start(struct gb_gatesweep *g) {
  if (g->started)
    return 0;
  if (pthread_create(&g->th, NULL, sweeper_main, g))
    return GC_ENOMEM;
  g->started = 1;
  return 0;
}

void gb_gatesweep_kick(struct gb_gatesweep *g) {
  if (!g)
    return;
  pthread_mutex_lock(&g->mu);
  g->kick = 1;
  pthread_cond_signal(&g->cond);
  pthread_mutex_unlock(&g->mu);
}

void gb_gatesweep_stop(struct gb_gatesweep *g) {
  if (!g || !g->started)
    return;
  pthread_mutex_lock(&g->mu);
  g->stopping = 1;
  pthread_cond_signal(&g->cond);
  pthread_mutex_unlock(&g->mu);
  pthread_join(g->th, NULL);
  g->started = 0;
}

void gb_gatesweep_free(struct gb_gatesweep *g) {
  if (!g)
    return;
  gb_gatesweep_stop(g);
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->mu);
  free(g);
}
