/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_controller: informers -> work queue -> workers (see the header).
 *
 * Threads: one housekeeping thread and N workers; the informers are the
 * factory's (gb_informers, one per resource, shared with the model and the
 * timeout tracker), and the controller's handlers run on their threads.
 * The housekeeping thread runs API discovery (first at start, then every
 * scheduling.discoveryInterval and at once when a scheduling CRD changes;
 * for a backend with several API versions, the newest served one),
 * starts the (deferred) PodGroup and Queue informers of APIs that appear,
 * waits for every cache to sync before it starts the workers (so nothing is
 * reconciled against half-filled caches, as client-go's WaitForCacheSync),
 * and re-queues every TrainJob when the set of served APIs changes or the
 * resync period passes.  Informer handlers only enqueue keys and count a
 * gang's pods.  A worker first compares the fingerprint of what the
 * reconcile would read with the one its last finished reconcile left
 * (gb_rcmemo) and skips the reconcile when they are equal: the watch echo
 * of its own PodGroup write, a periodic resync of an unchanged TrainJob.
 */
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_clock.h"
#include "gb_controller.h"
#include "gb_events.h"
#include "gb_hash.h"
#include "gb_informer.h"
#include "gb_kobj.h"
#include "gb_kube_discovery.h"
#include "gb_log.h"
#include "gb_rcmemo.h"
#include "gb_reconcile.h"
#include "gb_workqueue.h"

/* Short names of enum gb_ctl_res for the tables below. */
#define INF_TJ GB_CTL_TRAINJOBS
#define INF_RT GB_CTL_RUNTIMES
#define INF_CRT GB_CTL_CLUSTER_RUNTIMES
#define INF_NS GB_CTL_NAMESPACES
#define INF_POD GB_CTL_PODS
#define INF_CRD GB_CTL_CRDS
#define INF_PG0 GB_CTL_PG0
#define INF_Q0 GB_CTL_Q0
#define INF_N GB_CTL_N

struct inf_def {
  const char *group, *version, *resource;
  const char *label_selector;
  int namespaced; /* watched in kube.watchNamespaces only, when set */
  int deferred;   /* started once discovery finds the API */
};

static const struct inf_def CORE_DEFS[INF_PG0] = {
    {GC_TRAINER_GROUP, "v1alpha1", "trainjobs", NULL, 1, 0},
    {GC_TRAINER_GROUP, "v1alpha1", "trainingruntimes", NULL, 1, 0},
    {GC_TRAINER_GROUP, "v1alpha1", "clustertrainingruntimes", NULL, 0, 0},
    {"", "v1", "namespaces", NULL, 0, 0},
    /* Only JobSet pods ("exists" selector); a gang's pods carry its name. */
    {"", "v1", "pods", GC_JOBSET_NAME_LABEL, 1, 0},
    {"apiextensions.k8s.io", "v1", "customresourcedefinitions", NULL, 0, 0},
};

/* The backend of a PodGroup or Queue slot, NULL for the others. */
static const struct gc_backend *gb_controller_res_backend(enum gb_ctl_res r) {
  if (r >= INF_Q0)
    return gc_backend_at((size_t)(r - INF_Q0));
  return r >= INF_PG0 ? gc_backend_at((size_t)(r - INF_PG0)) : NULL;
}

/* The definition of resource r from the tables and the backend's
 * descriptor: gangbridge's own PodGroups of a backend (deferred until
 * discovery finds the API), its Queues (cluster-scoped, deferred).  Returns
 * 0 for an empty slot. */
static int inf_def(int r, struct inf_def *out) {
  const struct gc_backend *b = gb_controller_res_backend((enum gb_ctl_res)r);
  if (r < INF_PG0) {
    *out = CORE_DEFS[r];
    return 1;
  }
  /* A backend serve does not create objects for has nothing to watch; one
   * with several API versions is read from the API at the version
   * discovery picks (an informer's version is fixed). */
  if (!b || b->offline_only || b->n_versions || (r >= INF_Q0 && !b->queue.resource))
    return 0;
  if (r < INF_Q0)
    *out = (struct inf_def){
        b->group, b->version, b->resource, GC_MANAGED_BY_LABEL "=" GC_MANAGER_NAME, 1, 1};
  else
    *out = (struct inf_def){b->group, b->queue.version, b->queue.resource, NULL, 0, 1};
  return 1;
}

/* What the controller reads of pods (the gang they join) and of CRDs (the
 * name only: nothing beyond the metadata every record keeps); the other
 * kinds it reads whole (the reconcile). */
static const struct gb_keep POD_KEEP[] = {{{"metadata", "labels", GC_JOBSET_NAME_LABEL}}};
static const struct gb_keep NAME_ONLY[1];

static const char *const CORE_NAMES[INF_PG0] = {
    "trainjobs", "trainingruntimes",         "clustertrainingruntimes", "namespaces",
    "pods",      "customresourcedefinitions"};

/* The name logs give resource `which` ("podgroups.<group>", "queues"). */
static const char *inf_name(int which, char *buf, size_t cap) {
  const struct gc_backend *b = gb_controller_res_backend((enum gb_ctl_res)which);
  if (which < INF_PG0)
    return CORE_NAMES[which];
  if (!b)
    return "?";
  if (which < INF_Q0)
    snprintf(buf, cap, "%s.%s", b->resource, b->group);
  else
    snprintf(buf, cap, "%s", b->queue.resource ? b->queue.resource : "?");
  return buf;
}

/* How many pods of one JobSet ("ns/jobset-name") exist. */
struct gang_count {
  struct gb_hnode node; /* first member: the gang table's link and hash */
  long pods;
  char key[];
};

struct hctx {
  struct gb_controller *c;
  int which;
};

struct gb_controller {
  struct gb_controller_opts o;
  const struct gb_config *cfg;
  struct gb_workqueue *q;
  struct gb_events *events;
  struct gb_kube_discovery *disc;
  struct gb_informer *inf[INF_N];
  struct hctx hctx[INF_N];

  pthread_mutex_t mu; /* guards inf[] of late informers, served, synced, kick; with cond */
  pthread_cond_t cond;
  int served[GC_BACKEND_MAX];        /* PodGroup APIs by gc_backend_index: 1, 0, -1 unknown */
  /* The served version discovery picked, of a backend with several. */
  const struct gc_backend_version *version[GC_BACKEND_MAX];
  int queues_served[GC_BACKEND_MAX]; /* likewise for their Queues */
  int synced;
  int kick;
  atomic_int stopping;
  int started;
  pthread_t hk;
  int hk_started;
  pthread_t *workers;
  int n_workers;

  pthread_mutex_t gang_mu; /* guards gangs */
  struct gb_htab gangs;    /* of struct gang_count */

  gb_placement_lookup_fn placement_lookup; /* set before the webhook serves */
  void *placement_ctx;

  pthread_mutex_t collect_mu; /* guards last_retries */
  unsigned long long last_retries;

  /* Each key's last reconcile (gb_rcmemo), and the epoch every input read
   * by many TrainJobs bumps when it changes (a runtime, a Namespace, a
   * Queue, the served APIs, leadership): a fingerprint holds the epoch
   * read before its reconcile gathered anything. */
  struct gb_rcmemo *memo;
  atomic_ullong epoch;
};

/* ---- enqueueing ---------------------------------------------------------------- */

static void enqueue(struct gb_controller *c, const char *key) {
  int rc = gb_workqueue_add(c->q, key);
  if (rc && rc != GC_EUSAGE)
    gb_log(GB_LOG_ERROR, "cannot queue TrainJob", "key", key, "error", gc_diag_strerror(rc), NULL);
}

struct ns_match {
  struct gb_controller *c;
  const char *prefix; /* "ns/" or NULL for all */
  size_t len;
};

static int enqueue_key(void *arg, const char *key) {
  struct ns_match *m = arg;
  if (!m->prefix || !strncmp(key, m->prefix, m->len))
    enqueue(m->c, key);
  return 0;
}

/* Queues every cached TrainJob of namespace ns (NULL: all) without
 * bumping the epoch: what they read is unchanged (a periodic resync). */
static void requeue_ns(struct gb_controller *c, const char *ns) {
  char prefix[300];
  struct ns_match m = {c, NULL, 0};
  if (ns) {
    snprintf(prefix, sizeof(prefix), "%s/", ns);
    m.prefix = prefix;
    m.len = strlen(prefix);
  }
  gb_informer_foreach_key(c->inf[INF_TJ], enqueue_key, &m);
}

/* Queues every cached TrainJob of namespace ns (NULL: all) after an input
 * they share changed: the epoch moves first, so none of them is skipped. */
static void enqueue_ns(struct gb_controller *c, const char *ns) {
  atomic_fetch_add(&c->epoch, 1);
  requeue_ns(c, ns);
}

void gb_controller_resync(struct gb_controller *c) { enqueue_ns(c, NULL); }

/* ---- gang pods ---------------------------------------------------------------------- */

/* Adds delta to the pod count of "ns/jobset"; an entry at 0 is removed. */
static struct gang_count *gang_find(struct gb_controller *c, const char *key, uint64_t h) {
  for (struct gb_hnode *n = gb_htab_chain(&c->gangs, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct gang_count *)n)->key, key))
      return (struct gang_count *)n;
  return NULL;
}

static void gang_add(struct gb_controller *c, const char *key, long delta) {
  uint64_t h = gb_hash_str(key);
  pthread_mutex_lock(&c->gang_mu);
  struct gang_count *g = gang_find(c, key, h);
  if (!g && delta > 0) {
    size_t kl = strlen(key);
    g = calloc(1, sizeof(*g) + kl + 1);
    if (!g) { /* the gang then looks pod-less: log it, the next relist repairs it */
      pthread_mutex_unlock(&c->gang_mu);
      gb_log(GB_LOG_ERROR, "out of memory counting gang pods", "gang", key, NULL);
      return;
    }
    memcpy(g->key, key, kl + 1);
    g->node.hash = h;
    gb_htab_insert(&c->gangs, &g->node);
  }
  if (g) {
    g->pods += delta;
    if (g->pods <= 0) {
      gb_htab_remove(&c->gangs, &g->node);
      free(g);
    }
  }
  pthread_mutex_unlock(&c->gang_mu);
}

static long gang_pods(void *ctx, const char *ns, const char *name) {
  struct gb_controller *c = ctx;
  if (!c->inf[INF_POD] || !gb_informer_has_synced(c->inf[INF_POD]))
    return -1;
  char key[600];
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  long n = 0;
  pthread_mutex_lock(&c->gang_mu);
  struct gang_count *g = gang_find(c, key, gb_hash_str(key));
  if (g)
    n = g->pods;
  pthread_mutex_unlock(&c->gang_mu);
  return n;
}

/* "ns/jobset-name" of a pod into buf; 0 when it has none. */
static int pod_gang(json_object *pod, char *buf, size_t cap) {
  const char *ns = gb_kobj_meta(pod, "namespace");
  const char *js = gb_kobj_label(pod, GC_JOBSET_NAME_LABEL);
  if (!ns || !js)
    return 0;
  int n = snprintf(buf, cap, "%s/%s", ns, js);
  return n > 0 && (size_t)n < cap;
}

/* A pod came, changed or went: recount its gang and requeue its TrainJob
 * (the JobSet, and so the label, is named after the TrainJob). */
static void on_pod(struct gb_controller *c, const struct gb_informer_change *ch) {
  char now[600], before[600];
  int has_now = pod_gang(ch->obj, now, sizeof(now)), has_before = 0;
  if (ch->op == GB_INFORMER_UPDATE && ch->old_json) {
    json_object *old = json_tokener_parse(ch->old_json);
    has_before = old && pod_gang(old, before, sizeof(before));
    json_object_put(old);
  }
  if (ch->op == GB_INFORMER_UPDATE && has_before && has_now && !strcmp(before, now))
    return; /* the same gang: nothing the controller reads changed */
  if (has_before) {
    gang_add(c, before, -1);
    enqueue(c, before);
  }
  if (has_now) {
    gang_add(c, now, ch->op == GB_INFORMER_DELETE ? -1 : 1);
    enqueue(c, now);
  }
}

/* ---- informer handlers ------------------------------------------------------------ */

/* The Queue's state (its status field `field`), or "". */
static const char *queue_state_of(json_object *obj, const char *field) {
  const char *s = field ? gb_kobj_str(gb_kobj_get(obj, "status"), field) : NULL;
  return s ? s : "";
}

/* The Queue's gang timeout annotation (a gc_policy source), or "". */
static const char *queue_timeout_of(json_object *obj) {
  const char *s = gb_kobj_annotation(obj, GC_ANN_SCHEDULE_TIMEOUT);
  return s ? s : "";
}

/* 1 when CRD `name` is in a backend's API group (its PodGroups or Queues
 * may have appeared or gone). */
static int is_scheduling_crd(const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    size_t m = strlen(b->group);
    if (b->is_crd && n > m + 1 && name[n - m - 1] == '.' && !strcmp(name + n - m, b->group))
      return 1;
  }
  return 0;
}

/* A Queue of backend b changed: its state or its timeout annotation
 * changes every TrainJob that may use it. */
static void on_queue(struct gb_controller *c, const struct gc_backend *b,
                     const struct gb_informer_change *ch) {
  const char *field = b->queue.state_field;
  int changed = ch->op != GB_INFORMER_UPDATE;
  if (!changed) {
    json_object *old = ch->old_json ? json_tokener_parse(ch->old_json) : NULL;
    changed = strcmp(queue_state_of(old, field), queue_state_of(ch->obj, field)) != 0 ||
              strcmp(queue_timeout_of(old), queue_timeout_of(ch->obj)) != 0;
    json_object_put(old);
  }
  if (changed)
    enqueue_ns(c, NULL);
}

static void kick(struct gb_controller *c) {
  pthread_mutex_lock(&c->mu);
  c->kick = 1;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mu);
}

static void on_change(void *arg, const struct gb_informer_change *ch) {
  struct hctx *h = arg;
  struct gb_controller *c = h->c;
  switch (h->which) {
  case INF_TJ: enqueue(c, ch->key); break;
  case INF_RT: enqueue_ns(c, ch->ns); break;
  case INF_CRT: enqueue_ns(c, NULL); break;
  case INF_NS:
    /* Namespace labels and policy annotations change its TrainJobs. */
    if (ch->op != GB_INFORMER_DELETE)
      enqueue_ns(c, ch->name);
    break;
  case INF_POD: on_pod(c, ch); break;
  case INF_CRD:
    if (is_scheduling_crd(ch->name))
      kick(c);
    break;
  default:
    if (h->which < INF_Q0)
      enqueue(c, ch->key); /* the PodGroup is named after its TrainJob */
    else
      on_queue(c, gb_controller_res_backend((enum gb_ctl_res)h->which), ch);
    break;
  }
}

int gb_controller_watch_spec(const struct gb_kube_options *kube, enum gb_ctl_res r,
                             struct gb_informer_spec *spec, struct gb_informer_handler *h) {
  struct inf_def dd;
  const struct inf_def *def = &dd;
  memset(spec, 0, sizeof(*spec));
  memset(h, 0, sizeof(*h));
  if (!inf_def(r, &dd))
    return 0;
  spec->group = def->group;
  spec->version = def->version;
  spec->resource = def->resource;
  spec->deferred = def->deferred;
  h->label_selector = def->label_selector;
  /* kube.watchNamespaces: the namespaced kinds are watched in those
   * namespaces only (a Role each); the cluster-scoped ones stay
   * cluster-wide reads. */
  if (def->namespaced && kube) {
    h->namespaces = kube->watch_namespaces.items;
    h->n_namespaces = kube->watch_namespaces.n;
  }
  return 1;
}

/* Registers the controller's handler of resource `which` on the factory.
 * Pods and CRDs are cached as the few fields read, not in full: a
 * CRD-heavy cluster has tens of megabytes of schemas. */
static int register_informer(struct gb_controller *c, int which, struct gc_diags *d) {
  struct gb_informer_spec spec;
  struct gb_informer_handler h;
  if (!gb_controller_watch_spec(c->o.kube, (enum gb_ctl_res)which, &spec, &h))
    return 0; /* an empty slot */
  if (which == INF_POD) {
    h.keep = POD_KEEP;
    h.n_keep = sizeof(POD_KEEP) / sizeof(POD_KEEP[0]);
  } else if (which == INF_CRD) {
    h.keep = NAME_ONLY;
  }
  h.on_change = on_change;
  h.arg = &c->hctx[which];
  return gb_informers_add(c->o.informers, &spec, &h, &c->inf[which], d);
}

/* ---- housekeeping ---------------------------------------------------------------- */

static int stopping(struct gb_controller *c) { return atomic_load(&c->stopping); }

/* Waits up to s seconds or until kicked or stopping. */
static void hk_sleep(struct gb_controller *c, double s) {
  struct timespec ts;
  gb_clock_deadline_s(&ts, s);
  pthread_mutex_lock(&c->mu);
  while (!c->kick && !stopping(c)) {
    if (pthread_cond_timedwait(&c->cond, &c->mu, &ts))
      break;
  }
  pthread_mutex_unlock(&c->mu);
}

/* Starts the deferred informer `which` (registered at new, started once
 * its API is served) and waits for its first sync.  Returns 1 when synced.
 * Workers use it only once `served` says so, after the first sync. */
static int start_late(struct gb_controller *c, int which) {
  struct gb_informer *inf = c->inf[which];
  char name[300];
  if (!gb_informer_running(inf) && !gb_informer_has_synced(inf)) {
    int rc = gb_informer_start(inf);
    if (rc) {
      gb_log(GB_LOG_ERROR, "cannot start informer", "resource", inf_name(which, name, sizeof(name)),
             "error", gc_diag_strerror(rc), NULL);
      return 0;
    }
    gb_log(GB_LOG_INFO, "watching", "resource", inf_name(which, name, sizeof(name)), NULL);
  }
  while (!stopping(c))
    if (gb_informer_wait_synced(inf, 200))
      return 1;
  return 0;
}

/* The served flag of slot `which` (mu held). */
static int *served_slot(struct gb_controller *c, int which) {
  return which < INF_Q0 ? &c->served[which - INF_PG0] : &c->queues_served[which - INF_Q0];
}

/* Discovery of one PodGroup or Queue API.  Returns 1 when its state changed. */
static int discover_one(struct gb_controller *c, int which) {
  struct inf_def def;
  char name[300];
  int served = 0;
  if (!inf_def(which, &def) || !c->inf[which])
    return 0;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  if (gb_kube_discovery_served(c->disc, def.group, def.version, def.resource, &served, &e)) {
    char buf[1200];
    gb_log(GB_LOG_WARN, "discovery failed", "resource", inf_name(which, name, sizeof(name)),
           "error", gb_kube_error_str(&e, buf, sizeof(buf)), NULL);
    if (c->o.metrics)
      gb_metric_counter_inc(c->o.metrics->errors, (const char *[]){"kube", "discovery"});
    return 0;
  }
  /* A newly served API is announced only once its cache has synced. */
  if (served && !start_late(c, which))
    return 0;
  int changed = 0;
  pthread_mutex_lock(&c->mu);
  int *slot = served_slot(c, which);
  if (*slot != served) {
    if (*slot >= 0 || served)
      changed = 1;
    gb_log(GB_LOG_INFO, served ? "API served" : "API not served", "resource",
           inf_name(which, name, sizeof(name)), NULL);
    *slot = served;
  }
  pthread_mutex_unlock(&c->mu);
  return changed;
}

/* Discovery of a backend with several API versions (the Workload API):
 * the newest version served (gc_backend_version_pick).  Returns 1 when the
 * served state or the version changed (every TrainJob is then reconciled
 * again: objects of a version no longer served are made at the new one). */
static int discover_versions(struct gb_controller *c, size_t bix) {
  const struct gc_backend *b = gc_backend_at(bix);
  const char *served[GC_BACKEND_MAX_KEYS];
  size_t n = 0;
  char buf[1200];
  for (size_t i = 0; i < b->n_versions && n < GC_BACKEND_MAX_KEYS; i++) {
    struct gb_kube_error e;
    int s = 0;
    gb_kube_error_clear(&e);
    if (gb_kube_discovery_served(c->disc, b->group, b->versions[i].version, b->resource, &s,
                                 &e)) {
      gb_log(GB_LOG_WARN, "discovery failed", "resource", b->resource, "group", b->group,
             "version", b->versions[i].version, "error", gb_kube_error_str(&e, buf, sizeof(buf)),
             NULL);
      if (c->o.metrics)
        gb_metric_counter_inc(c->o.metrics->errors, (const char *[]){"kube", "discovery"});
      return 0;
    }
    if (s)
      served[n++] = b->versions[i].version;
  }
  const struct gc_backend_version *v = gc_backend_version_pick(b, served, n);
  int changed = 0;
  pthread_mutex_lock(&c->mu);
  if (c->served[bix] != (v != NULL) || c->version[bix] != v) {
    changed = c->served[bix] >= 0 || v;
    snprintf(buf, sizeof(buf), "%s.%s", b->resource, b->group);
    gb_log(GB_LOG_INFO, v ? "API served" : "API not served", "resource", buf, "version",
           v ? v->version : "none", NULL);
    c->served[bix] = v != NULL;
    c->version[bix] = v;
  }
  pthread_mutex_unlock(&c->mu);
  return changed;
}

/* One round of discovery: every backend's PodGroups, then their Queues.
 * Returns 1 when the set of served APIs changed. */
static int discover(struct gb_controller *c) {
  int changed = 0;
  size_t n = gc_backend_count();
  for (size_t i = 0; i < n && !stopping(c); i++)
    changed |= gc_backend_at(i)->n_versions ? discover_versions(c, i)
                                            : discover_one(c, INF_PG0 + (int)i);
  for (size_t i = 0; i < n && !stopping(c); i++)
    changed |= discover_one(c, INF_Q0 + (int)i);
  return changed;
}

static void *worker_main(void *arg);

static int core_synced(struct gb_controller *c) {
  for (int i = INF_TJ; i <= INF_CRD; i++)
    if (c->inf[i] && !gb_informer_has_synced(c->inf[i]))
      return 0;
  int known = 1;
  pthread_mutex_lock(&c->mu);
  for (size_t i = 0; i < gc_backend_count(); i++)
    known &= c->served[i] >= 0;
  pthread_mutex_unlock(&c->mu);
  return known;
}

static void *hk_main(void *arg) {
  struct gb_controller *c = arg;
  while (!stopping(c)) {
    discover(c);
    if (core_synced(c))
      break;
    hk_sleep(c, 0.2);
  }
  if (stopping(c))
    return NULL;
  int n = 0;
  for (; n < c->n_workers; n++)
    if (pthread_create(&c->workers[n], NULL, worker_main, c))
      break;
  pthread_mutex_lock(&c->mu);
  c->n_workers = n;
  c->synced = 1;
  pthread_mutex_unlock(&c->mu);
  gb_log(GB_LOG_INFO, "caches synced; workers started", NULL);
  double next_disc = gb_clock_s() + c->cfg->discovery_interval_s;
  double next_resync = c->cfg->resync_s > 0 ? gb_clock_s() + c->cfg->resync_s : INFINITY;
  while (!stopping(c)) {
    double now = gb_clock_s();
    double wait = fmin(next_disc, next_resync) - now;
    if (wait > 0)
      hk_sleep(c, wait);
    if (stopping(c))
      break;
    pthread_mutex_lock(&c->mu);
    int kicked = c->kick;
    c->kick = 0;
    pthread_mutex_unlock(&c->mu);
    now = gb_clock_s();
    if (kicked || now >= next_disc) {
      if (kicked)
        gb_kube_discovery_invalidate(c->disc);
      if (discover(c)) {
        gb_log(GB_LOG_INFO, "served PodGroup APIs changed: re-queueing every TrainJob", NULL);
        gb_controller_resync(c);
      }
      next_disc = gb_clock_s() + c->cfg->discovery_interval_s;
    }
    if (now >= next_resync) {
      requeue_ns(c, NULL);
      next_resync = now + c->cfg->resync_s;
    }
  }
  return NULL;
}

/* ---- workers -------------------------------------------------------------------- */

static void env_snapshot(struct gb_controller *c, struct gb_rc_env *env) {
  memset(env, 0, sizeof(*env));
  env->cfg = c->cfg;
  env->client = c->o.client;
  env->events = c->events;
  env->trainjobs = c->inf[INF_TJ];
  env->runtimes = c->inf[INF_RT];
  env->cluster_runtimes = c->inf[INF_CRT];
  env->namespaces = c->inf[INF_NS];
  env->is_leader = c->o.is_leader;
  env->leader_ctx = c->o.leader_ctx;
  env->gang_pods = gang_pods;
  env->pods_ctx = c;
  pthread_mutex_lock(&c->mu);
  for (size_t b = 0; b < gc_backend_count(); b++) {
    env->served[b] = c->served[b];
    env->version[b] = c->version[b];
    env->pg[b] = c->served[b] == 1 ? c->inf[INF_PG0 + b] : NULL;
    env->queues[b] = c->queues_served[b] == 1 ? c->inf[INF_Q0 + b] : NULL;
  }
  pthread_mutex_unlock(&c->mu);
}

static const char *outcome_metric(const struct gb_rc_result *r) {
  switch (r->outcome) {
  case GB_RC_DONE: return GB_M_RESULT_SUCCESS;
  case GB_RC_SKIPPED: return GB_M_RESULT_SKIPPED;
  case GB_RC_RETRY: return r->error_reason ? GB_M_RESULT_ERROR : GB_M_RESULT_REQUEUE;
  default: return GB_M_RESULT_ERROR;
  }
}

static uint64_t fp_str(uint64_t h, const char *s) {
  return gb_hash_fnv1a(h, s, strlen(s) + 1); /* the NUL separates the fields */
}

/* What a reconcile of one TrainJob reads that changes without an epoch:
 * the TrainJob's and each backend's PodGroup's uid and resourceVersion,
 * the served state and the gang's pod count. */
struct inputs {
  unsigned long long epoch;
  char tj_uid[128], tj_rv[64];
  int served[GC_BACKEND_MAX][2];
  int has_pg[GC_BACKEND_MAX];
  char pg_uid[GC_BACKEND_MAX][128], pg_rv[GC_BACKEND_MAX][64];
  long pods;
};

/* Reads the inputs of ns/name from the caches; 0 when the TrainJob is not
 * cached. */
static int read_inputs(struct gb_controller *c, const struct gb_rc_env *env, const char *ns,
                       const char *name, struct inputs *in) {
  memset(in, 0, sizeof(*in));
  in->epoch = atomic_load(&c->epoch);
  if (gb_informer_get_meta(env->trainjobs, ns, name, in->tj_rv, sizeof(in->tj_rv), in->tj_uid,
                           sizeof(in->tj_uid)))
    return 0;
  for (size_t b = 0; b < gc_backend_count() && b < GC_BACKEND_MAX; b++) {
    in->served[b][0] = env->served[b];
    in->served[b][1] = env->queues[b] != NULL;
    in->has_pg[b] = env->pg[b] && !gb_informer_get_meta(env->pg[b], ns, name, in->pg_rv[b],
                                                        sizeof(in->pg_rv[b]), in->pg_uid[b],
                                                        sizeof(in->pg_uid[b]));
  }
  in->pods = gang_pods(c, ns, name);
  return 1;
}

/* The fingerprint of in (never 0). */
static uint64_t input_fp(const struct inputs *in) {
  uint64_t h = gb_hash_fnv1a(GB_HASH_FNV_OFFSET, &in->epoch, sizeof(in->epoch));
  h = fp_str(fp_str(h, in->tj_uid), in->tj_rv);
  for (size_t b = 0; b < gc_backend_count() && b < GC_BACKEND_MAX; b++) {
    h = gb_hash_fnv1a(h, in->served[b], sizeof(in->served[b]));
    h = in->has_pg[b] ? fp_str(fp_str(h, in->pg_uid[b]), in->pg_rv[b]) : fp_str(h, "-");
  }
  h = gb_hash_fnv1a(h, &in->pods, sizeof(in->pods));
  return h ? h : 1;
}

/* Splits key "ns/name" into ns and name (each 256 bytes); 0 when it is not
 * such a key. */
static int split_key(const char *key, char *ns, char *name) {
  const char *slash = strchr(key, '/');
  if (!slash || (size_t)(slash - key) >= 256 || strlen(slash + 1) >= 256)
    return 0;
  memcpy(ns, key, (size_t)(slash - key));
  ns[slash - key] = '\0';
  snprintf(name, 256, "%s", slash + 1);
  return 1;
}

static int leading(const struct gb_rc_env *env) {
  return !env->is_leader || env->is_leader(env->leader_ctx);
}

/* Reconciles key unless what it reads is what its last finished reconcile
 * read (then returns 1, *res says GB_RC_SKIPPED), and
 * remembers what this one read, or forgets it when the outcome may change
 * without its inputs changing (a retry, an error, not leading). */
static int reconcile_key(struct gb_controller *c, const struct gb_rc_env *env, const char *key,
                         int attempts, struct gb_rc_result *res) {
  char ns[256], name[256];
  struct inputs in;
  /* Read before the reconcile gathers anything: a change after this point
   * makes the next fingerprint differ, so it is never skipped. */
  uint64_t fp = split_key(key, ns, name) && leading(env) && read_inputs(c, env, ns, name, &in)
                    ? input_fp(&in)
                    : 0;
  if (fp && attempts == 0 && gb_rcmemo_same(c->memo, key, fp)) {
    memset(res, 0, sizeof(*res));
    res->outcome = GB_RC_SKIPPED;
    res->action = GB_RC_SKIP;
    snprintf(res->message, sizeof(res->message), "unchanged since the last reconcile");
    return 1;
  }
  gb_reconcile_run((struct gb_rc_env *)env, key, attempts, res);
  int keep = fp && leading(env) &&
             (res->outcome == GB_RC_DONE ||
              (res->outcome == GB_RC_SKIPPED && res->action == GB_RC_SKIP &&
               strcmp(res->message, "TrainJob gone")));
  int w = res->pg_backend ? gc_backend_index(res->pg_backend) : -1;
  if (keep && w >= 0 && w < GC_BACKEND_MAX) {
    /* Its own write: the watch event of it carries this version. */
    in.has_pg[w] = 1;
    snprintf(in.pg_uid[w], sizeof(in.pg_uid[w]), "%s", res->pg_uid);
    snprintf(in.pg_rv[w], sizeof(in.pg_rv[w]), "%s", res->pg_rv);
    fp = input_fp(&in);
  }
  gb_rcmemo_put(c->memo, key, keep ? fp : 0);
  return 0;
}

static void *worker_main(void *arg) {
  struct gb_controller *c = arg;
  char key[GB_WORKQUEUE_KEY_MAX + 1];
  while (!stopping(c)) {
    int got = gb_workqueue_get(c->q, key, sizeof(key), 500);
    if (got < 0)
      break;
    if (got == 0)
      continue;
    int attempts = gb_workqueue_num_requeues(c->q, key);
    struct gb_rc_env env;
    env_snapshot(c, &env);
    struct gb_rc_result res;
    double t0 = gb_clock_s();
    int unchanged = reconcile_key(c, &env, key, attempts, &res);
    double dt = gb_clock_s() - t0;
    const struct gb_service_metrics *m = c->o.metrics;
    if (m) {
      gb_metric_counter_inc(m->reconciles,
                     (const char *[]){unchanged ? GB_M_RESULT_UNCHANGED : outcome_metric(&res)});
      gb_metric_histogram_observe(m->reconcile_seconds, NULL, dt);
      if (res.error_reason)
        gb_metric_counter_inc(m->errors, (const char *[]){"reconcile", res.error_reason});
    }
    const char *act = gb_rc_action_name(res.action);
    switch (res.outcome) {
    case GB_RC_RETRY:
      gb_log(res.error_reason ? GB_LOG_WARN : GB_LOG_INFO,
             res.error_reason ? "reconcile failed; retrying" : "waiting; retrying", "key", key,
             "action", act, "attempt", res.error_reason ? "error" : "wait", "message",
             res.message, NULL);
      gb_workqueue_add_rate_limited(c->q, key);
      break;
    case GB_RC_CONFLICT:
    case GB_RC_BAD:
      gb_log(GB_LOG_WARN, "reconcile gave up until the TrainJob changes", "key", key, "action",
             act, "message", res.message, NULL);
      gb_workqueue_forget(c->q, key);
      break;
    default:
      gb_log(res.action == GB_RC_APPLY || res.action == GB_RC_DELETE ? GB_LOG_INFO
                                                                     : GB_LOG_DEBUG,
             "reconciled", "key", key, "action", act, "message", res.message, NULL);
      gb_workqueue_forget(c->q, key);
      break;
    }
    gb_workqueue_done(c->q, key);
  }
  return NULL;
}

/* ---- lifecycle --------------------------------------------------------------------- */

int gb_controller_new(const struct gb_controller_opts *o, struct gb_controller **out,
                      struct gc_diags *d) {
  *out = NULL;
  if (!o || !o->cfg || !o->client || !o->informers)
    return GC_EINVAL;
  struct gb_controller *c = calloc(1, sizeof(*c));
  if (!c)
    return GC_ENOMEM;
  c->o = *o;
  c->cfg = o->cfg;
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->gang_mu, NULL);
  pthread_mutex_init(&c->collect_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&c->cond, &ca);
  pthread_condattr_destroy(&ca);
  for (size_t b = 0; b < GC_BACKEND_MAX; b++)
    c->served[b] = c->queues_served[b] = -1;
  /* A backend serve creates no objects for is never discovered: "not served". */
  for (size_t b = 0; b < gc_backend_count(); b++)
    if (gc_backend_at(b)->offline_only)
      c->served[b] = c->queues_served[b] = 0;
  for (int i = 0; i < INF_N; i++)
    c->hctx[i] = (struct hctx){c, i};
  struct gb_workqueue_opts qo = {o->cfg->queue_base_delay_s, o->cfg->queue_max_delay_s,
                                 o->cfg->queue_qps, o->cfg->queue_burst, 0};
  struct gb_events_opts eo = {GC_MANAGER_NAME, NULL, o->events ? o->events->min_interval_s : 0, 0};
  const char *pod = getenv("POD_NAME");
  if (pod && *pod)
    eo.instance = pod;
  c->q = gb_workqueue_new(&qo);
  c->memo = gb_rcmemo_new();
  c->events = gb_events_new(o->client, &eo);
  c->disc = gb_kube_discovery_new(o->client, o->cfg->discovery_interval_s);
  c->n_workers = o->cfg->workers;
  c->workers = calloc((size_t)c->n_workers, sizeof(*c->workers));
  int gangs_rc = gb_htab_init(&c->gangs, 4096);
  int rc = 0;
  if (!c->q || !c->memo || !c->events || !c->disc || !c->workers || gangs_rc)
    rc = GC_ENOMEM;
  for (int i = INF_TJ; !rc && i < INF_N; i++) {
    if (i == INF_CRD && !o->cfg->watch_crds)
      continue;
    rc = register_informer(c, i, d);
  }
  if (rc) {
    gb_controller_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int gb_controller_start(struct gb_controller *c) {
  if (c->started)
    return GC_EUSAGE;
  c->started = 1;
  if (pthread_create(&c->hk, NULL, hk_main, c))
    return GC_ENOMEM;
  c->hk_started = 1;
  return 0;
}

void gb_controller_set_placement(struct gb_controller *c, gb_placement_lookup_fn fn, void *ctx) {
  c->placement_lookup = fn;
  c->placement_ctx = ctx;
}

int gb_controller_synced(struct gb_controller *c) {
  pthread_mutex_lock(&c->mu);
  int s = c->synced;
  pthread_mutex_unlock(&c->mu);
  return s;
}

void gb_controller_stop(struct gb_controller *c) {
  if (!c)
    return;
  atomic_store(&c->stopping, 1);
  kick(c);
  if (c->hk_started) {
    pthread_join(c->hk, NULL);
    c->hk_started = 0;
  }
  gb_workqueue_shutdown(c->q);
  pthread_mutex_lock(&c->mu);
  int n = c->synced ? c->n_workers : 0;
  c->n_workers = 0;
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < n; i++)
    pthread_join(c->workers[i], NULL);
}

static void free_gang(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  free(n);
}

void gb_controller_free(struct gb_controller *c) {
  if (!c)
    return;
  gb_controller_stop(c);
  gb_htab_clear(&c->gangs, free_gang, NULL);
  gb_htab_free(&c->gangs);
  gb_kube_discovery_free(c->disc);
  gb_events_free(c->events);
  gb_workqueue_free(c->q);
  gb_rcmemo_free(c->memo);
  free(c->workers);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->gang_mu);
  pthread_mutex_destroy(&c->collect_mu);
  free(c);
}

/* ---- webhook, readiness, metrics ---------------------------------------------------- */

static int in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && !strncmp(p, name, n))
      return 1;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

static const char *str_of(const struct gc_value *v, const char *path) {
  return gc_value_as_str(gc_value_path(v, path));
}

/* 1 when the group object `pg` of backend b lists a sub-group named `name`
 * (gangbridge names one after each replicated job). */
static int has_subgroup(const struct gc_backend *b, const struct gc_value *pg, const char *name) {
  const struct gc_value *sgs =
      b->subgroups_field ? gc_map_get(gc_map_get(pg, "spec"), b->subgroups_field) : NULL;
  for (size_t i = 0; sgs && sgs->type == GC_SEQ && i < sgs->len; i++) {
    const char *n = str_of(sgs->u.items[i], "name");
    if (n && !strcmp(n, name))
      return 1;
  }
  return 0;
}

/* The PodGroup informers only hold PodGroups labelled as gangbridge's, so a
 * foreign PodGroup of the TrainJob's name is not in the cache: ask the API
 * (only when the cache has none, i.e. before gangbridge has made one).
 * Returns 0 with *pg set (NULL when there is none), or GC_EIO with `reason`. */
static int uncached_podgroup(struct gb_controller *c, const struct gc_backend *b, const char *ns,
                             const char *name, struct gc_arena *a, const struct gc_value **pg,
                             char *reason, size_t reason_size) {
  char path[1024];
  json_object *obj = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  *pg = NULL;
  int rc = gb_kube_client_path(path, sizeof(path), b->group, b->version, b->resource, ns, name);
  if (!rc)
    rc = gb_kube_client_get(c->o.client, path, &obj, &e);
  if (rc == GC_ENOTFOUND)
    return 0;
  struct gc_value *v = NULL;
  if (!rc)
    rc = gb_kube_client_json_to_value(a, obj, 64, &v);
  json_object_put(obj);
  if (rc) {
    snprintf(reason, reason_size, "cannot read PodGroup %s/%s: %s", ns, name,
             e.message[0] ? e.message : gc_diag_strerror(rc));
    return GC_EIO;
  }
  *pg = v;
  return 0;
}

/* A Warning Event on the TrainJob whose pods the webhook will not bind. */
static void mismatch_event(struct gb_controller *c, const struct gc_value *tj, int deny,
                           const char *why) {
  char msg[512];
  snprintf(msg, sizeof(msg), "%s: its pods are %s", why,
           deny ? "denied until it matches (webhook.denyOnPodGroupMismatch)"
                : "admitted without gang binding");
  struct gb_event_ref ref = {GC_TRAINER_API, "TrainJob", str_of(tj, "metadata.namespace"),
                             str_of(tj, "metadata.name"), str_of(tj, "metadata.uid")};
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  if (c->events && gb_events_emit(c->events, &ref, GB_EVENT_WARNING, "PodGroupMismatch", msg, &e))
    gb_log(GB_LOG_WARN, "cannot record event", "reason", "PodGroupMismatch", "error", e.message,
           NULL);
}

int gb_controller_webhook_lookup(void *ctx, const char *ns, const char *jobset_name,
                                 const char *rjob_name, struct gb_webhook_decision *out,
                                 char *reason, size_t reason_size) {
  struct gb_controller *c = ctx;
  if (!gb_controller_synced(c)) {
    snprintf(reason, reason_size, "gangbridge caches are not synced yet");
    return GC_EIO;
  }
  struct gc_arena *a = gc_arena_new(64u << 20);
  if (!a)
    return GC_ENOMEM;
  struct gb_rc_env env;
  env_snapshot(c, &env);
  struct gb_rc_input in;
  struct gb_rc_plan plan;
  int rc = gb_reconcile_gather(&env, ns, jobset_name, a, &in);
  if (rc == GC_ENOTFOUND) { /* a JobSet that no TrainJob owns */
    rc = 0;
    goto out;
  }
  if (rc) {
    snprintf(reason, reason_size, "cannot read TrainJob %s/%s from the cache: %s", ns, jobset_name,
             gc_diag_strerror(rc));
    goto out;
  }
  if ((rc = gb_reconcile_plan(&in, a, &plan)))
    goto out;
  const struct gc_backend *b = plan.backend;
  const char *bound = plan.bound_jobs;
  if (plan.action == GB_RC_WAIT && plan.managed) {
    /* Cannot compute now: bind by the existing PodGroup when there is one. */
    for (size_t i = 0; i < gc_backend_count() && !bound; i++)
      if (in.pg[i]) {
        b = gc_backend_at(i);
        bound = gc_value_as_str(
            gc_map_get(gc_value_path(in.pg[i], "metadata.annotations"), GB_ANN_BOUND_JOBS));
      }
    if (!bound) {
      snprintf(reason, reason_size, "TrainJob %s/%s: %s", ns, jobset_name, plan.why);
      rc = GC_EIO;
      goto out;
    }
  } else if ((plan.action != GB_RC_KEEP && plan.action != GB_RC_APPLY) || !bound ||
             !b) {
    goto out; /* not ours, finished or invalid: leave the pod alone */
  }
  out->managed = 1;
  out->backend = b;
  out->version = in.version[gc_backend_index(b)];
  const struct gc_value *pg = in.pg[gc_backend_index(b)];
  /* The gang's jobs bind and are placed; with elastic members every other
   * job of the group object binds too, to its sub-group that needs none of
   * its pods, and is never held for the gang's placement. */
  int gang_job = in_list(bound, rjob_name);
  const struct gc_value *listed = pg ? pg : plan.desired;
  int sub = (b->caps & GC_BCAP_SUBGROUPS) && has_subgroup(b, listed, rjob_name);
  out->bind = gang_job || (sub && (b->caps & GC_BCAP_ELASTIC_MEMBERS));
  if (sub)
    snprintf(out->subgroup, sizeof(out->subgroup), "%s", rjob_name);
  /* A backend with several versions was read from the API by the gather. */
  if (out->bind && !pg && !b->n_versions &&
      (rc = uncached_podgroup(c, b, ns, jobset_name, a, &pg, reason, reason_size)))
    goto out;
  if (out->bind && !gb_webhook_podgroup_bindable(pg, str_of(in.trainjob, "metadata.uid"),
                                                 plan.desired, out->why, sizeof(out->why))) {
    out->mismatch = 1;
    mismatch_event(c, in.trainjob, c->o.webhook && c->o.webhook->deny_on_mismatch, out->why);
  }
  /* gangbridge's own placement records its decisions on informer-cached
   * group objects; the Workload API's gangs are placed by kube-scheduler
   * (its topology constraint) only. */
  if (gang_job && !out->mismatch && c->placement_lookup && !b->n_versions &&
      (rc = c->placement_lookup(c->placement_ctx, ns, jobset_name, rjob_name, &out->gate,
                                &out->restriction, reason, reason_size)))
    goto out;
  snprintf(out->group, sizeof(out->group), "%s", jobset_name);
  snprintf(out->scheduler_name, sizeof(out->scheduler_name), "%s",
           c->cfg->scheduler_names[gc_backend_index(b)] ? c->cfg->scheduler_names[gc_backend_index(b)]
                                                       : "");
out:
  gc_arena_free(a);
  return rc;
}

int gb_controller_gang(void *ctx, const char *ns, const char *jobset_name, struct gc_gang **out,
                       char *reason, size_t reason_size) {
  struct gb_controller *c = ctx;
  *out = NULL;
  if (!gb_controller_synced(c)) {
    snprintf(reason, reason_size, "gangbridge caches are not synced yet");
    return GC_EIO;
  }
  struct gc_arena *a = gc_arena_new(64u << 20);
  if (!a)
    return GC_ENOMEM;
  struct gb_rc_env env;
  env_snapshot(c, &env);
  struct gb_rc_input in;
  struct gb_rc_plan plan;
  int rc = gb_reconcile_gather(&env, ns, jobset_name, a, &in);
  if (rc == GC_ENOTFOUND) { /* a JobSet that no TrainJob owns */
    rc = 0;
    goto out;
  }
  if (rc) {
    snprintf(reason, reason_size, "cannot read TrainJob %s/%s from the cache: %s", ns, jobset_name,
             gc_diag_strerror(rc));
    goto out;
  }
  in.keep_gang = out;
  rc = gb_reconcile_plan(&in, a, &plan);
out:
  gc_arena_free(a);
  return rc;
}

int gb_controller_podgroup_annotation(void *ctx, const struct gc_backend *b, const char *ns,
                                      const char *name, const char *key, char **out) {
  struct gb_controller *c = ctx;
  *out = NULL;
  int i = gc_backend_index(b);
  if (i < 0)
    return GC_ENOTFOUND;
  pthread_mutex_lock(&c->mu);
  struct gb_informer *inf = c->served[i] == 1 ? c->inf[INF_PG0 + i] : NULL;
  pthread_mutex_unlock(&c->mu);
  json_object *pg = NULL;
  if (!inf || gb_informer_get_json(inf, ns, name, &pg) != 0 || !pg)
    return GC_ENOTFOUND;
  const char *v = gb_kobj_annotation(pg, key);
  int rc = v && !(*out = strdup(v)) ? GC_ENOMEM : 0;
  json_object_put(pg);
  return rc;
}

#define PG_KEYS_MAX 1000000 /* PodGroups scanned at once */

struct key_list {
  char **keys;
  size_t n, cap;
  int oom;
};

static int collect_key(void *arg, const char *key) {
  struct key_list *l = arg;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    char **k = cap <= PG_KEYS_MAX ? realloc(l->keys, cap * sizeof(*k)) : NULL;
    if (!k)
      return l->oom = 1;
    l->keys = k;
    l->cap = cap;
  }
  if (!(l->keys[l->n] = strdup(key)))
    return l->oom = 1;
  l->n++;
  return 0;
}

/* The annotated PodGroups among the keys of one backend's cache. */
static int annotated(struct gb_controller *c, const struct gc_backend *b, struct key_list *l,
                     const char *key, gb_controller_pg_fn fn, void *arg) {
  int rc = 0;
  for (size_t i = 0; i < l->n && !rc; i++) {
    char *slash = strchr(l->keys[i], '/'), *text = NULL;
    if (!slash)
      continue;
    *slash = '\0';
    rc = gb_controller_podgroup_annotation(c, b, l->keys[i], slash + 1, key, &text);
    if (rc == GC_ENOTFOUND) /* gone since the keys were taken */
      rc = 0;
    if (!rc && text)
      rc = fn(arg, l->keys[i], slash + 1);
    free(text);
  }
  return rc;
}

int gb_controller_foreach_podgroup_annotation(void *ctx, const char *key, gb_controller_pg_fn fn,
                                              void *arg) {
  struct gb_controller *c = ctx;
  if (!gb_controller_synced(c))
    return GC_EIO;
  int rc = 0;
  for (size_t b = 0; b < gc_backend_count() && !rc; b++) {
    pthread_mutex_lock(&c->mu);
    struct gb_informer *inf = c->served[b] == 1 ? c->inf[INF_PG0 + b] : NULL;
    pthread_mutex_unlock(&c->mu);
    struct key_list l = {NULL, 0, 0, 0};
    if (inf)
      gb_informer_foreach_key(inf, collect_key, &l);
    rc = l.oom ? GC_ENOMEM : annotated(c, gc_backend_at(b), &l, key, fn, arg);
    for (size_t i = 0; i < l.n; i++)
      free(l.keys[i]);
    free(l.keys);
  }
  return rc;
}

int gb_controller_ready_check(void *ctx, char *reason, size_t size) {
  struct gb_controller *c = ctx;
  if (gb_controller_synced(c))
    return 0;
  snprintf(reason, size, "informer caches not synced yet");
  return 1;
}

void gb_controller_collect(void *ctx, struct gb_metrics *reg) {
  (void)reg;
  struct gb_controller *c = ctx;
  const struct gb_service_metrics *m = c->o.metrics;
  if (!m)
    return;
  pthread_mutex_lock(&c->collect_mu);
  gb_metric_gauge_set(m->queue_depth, NULL, (double)gb_workqueue_len(c->q));
  unsigned long long r = gb_workqueue_retries(c->q);
  if (r > c->last_retries)
    gb_metric_counter_add(m->queue_retries, NULL, (double)(r - c->last_retries));
  c->last_retries = r;
  pthread_mutex_unlock(&c->collect_mu);
}
