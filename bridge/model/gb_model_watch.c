/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_model_watch: the model's handlers on the shared informers (Nodes,
 * non-terminal Pods, Volcano HyperNodes when served, and the HyperNode CRD
 * itself so that a CRD installed later is picked up at once; registered at
 * gb_model_new, the HyperNode informer deferred and started here) and its
 * housekeeping thread, which
 * builds the first snapshot once every informer has listed, runs the
 * coalesced rebuilds (at most one per 50 ms tick, however many HyperNodes
 * changed), calls on_capacity at most once per tick, re-runs HyperNode
 * discovery every minute and whenever the CRD changes, and reports the
 * HyperNodes a rebuild left out (a log line each, and on the leader a
 * Warning Event on the HyperNode).
 */
#include <stdlib.h>
#include <string.h>

#include "gb_clock.h"
#include "gb_events.h"
#include "gb_log.h"
#include "gb_model_int.h"

#define HN_GROUP "topology.volcano.sh"
#define HN_VERSION "v1alpha1"
#define HN_RESOURCE "hypernodes"
#define HN_CRD "hypernodes.topology.volcano.sh"
#define TICK_NS (50 * 1000 * 1000)
#define DISCOVERY_EVERY_S 60.0

static const char *const KIND_NAMES[GB_INF_N] = {"nodes", "pods", "hypernodes",
                                                 "customresourcedefinitions"};

static void on_change(void *arg, const struct gb_informer_change *ch) {
  struct gb_model_handler *h = arg;
  struct gb_model *m = h->m;
  if (h->kind == GB_INF_CRD) {
    pthread_mutex_lock(&m->mu);
    m->crd_changed = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->mu);
    return;
  }
  char gang_ns[GB_PLAN_KEY_MAX + 1] = "", gang_js[GB_PLAN_KEY_MAX + 1] = "";
  struct gc_diags d;
  gc_diags_init(&d);
  pthread_mutex_lock(&m->mu);
  int rc = gb_model_apply(m, h->kind, ch->op == GB_INFORMER_DELETE, ch->obj, gang_ns, gang_js, &d);
  pthread_mutex_unlock(&m->mu);
  if (rc)
    gb_log(GB_LOG_WARN, "model: object not applied", "resource", KIND_NAMES[h->kind], "key",
           ch->key, "error", d.n ? d.msgs[0] : gc_diag_strerror(rc), NULL);
  gc_diags_destroy(&d);
  if (*gang_ns && m->o.on_gang)
    m->o.on_gang(m->o.arg, gang_ns, gang_js);
}

/* Registers the model's handler of `kind` on the factory. */
static int register_informer(struct gb_model *m, int kind, struct gc_diags *d) {
  static const char *const groups[GB_INF_N] = {"", "", HN_GROUP, "apiextensions.k8s.io"};
  static const char *const versions[GB_INF_N] = {"v1", "v1", HN_VERSION, "v1"};
  struct gb_informer_spec spec = {groups[kind], versions[kind], KIND_NAMES[kind],
                                  kind == GB_INF_HN};
  struct gb_informer_handler h;
  memset(&h, 0, sizeof(h));
  /* Terminal pods hold nothing: not in the model's selection, so a pod
   * that finishes arrives as a delete. */
  h.field_selector = kind == GB_INF_POD   ? "status.phase!=Succeeded,status.phase!=Failed"
                     : kind == GB_INF_CRD ? "metadata.name=" HN_CRD
                                          : NULL;
  gb_model_keep(kind, &h.keep, &h.n_keep);
  /* The caches' bounds are the snapshot's: a cluster past them is refused
   * there anyway.  Pods: a few per node on average is the common case. */
  h.max_objects = kind == GB_INF_POD    ? GB_MODEL_MAX_PODS
                  : kind == GB_INF_NODE ? TP_MAX_NODES
                  : kind == GB_INF_HN   ? TP_MAX_DOMAINS
                                        : 16;
  m->h[kind] = (struct gb_model_handler){.m = m, .kind = kind};
  h.on_change = on_change;
  h.arg = &m->h[kind];
  return gb_informers_add(m->o.informers, &spec, &h, &m->inf[kind], d);
}

int gb_model_register(struct gb_model *m, struct gc_diags *d) {
  int rc = register_informer(m, GB_INF_NODE, d);
  rc = rc ? rc : register_informer(m, GB_INF_POD, d);
  if (!rc && m->o.n_levels == 0) {
    rc = register_informer(m, GB_INF_HN, d);
    rc = rc ? rc : register_informer(m, GB_INF_CRD, d);
  }
  return rc;
}

/* Starts or stops the HyperNode informer as discovery says. */
static void check_hypernodes(struct gb_model *m) {
  int served = 0;
  struct gb_kube_error e;
  memset(&e, 0, sizeof(e));
  if (gb_kube_discovery_served(m->disc, HN_GROUP, HN_VERSION, HN_RESOURCE, &served, &e)) {
    gb_log(GB_LOG_WARN, "model: HyperNode discovery failed", "error", e.message, NULL);
    return;
  }
  struct gb_informer *hn = m->inf[GB_INF_HN];
  if (served && !gb_informer_running(hn)) {
    int rc = gb_informer_start(hn);
    if (rc)
      gb_log(GB_LOG_ERROR, "model: cannot watch HyperNodes", "error", gc_diag_strerror(rc), NULL);
    else
      gb_log(GB_LOG_INFO, "model: HyperNodes served, watching them", NULL);
  } else if (!served && gb_informer_running(hn)) {
    /* Stopped and emptied (its handler takes mu for every HyperNode it
     * had), so a CRD installed again lists them from scratch. */
    gb_informer_stop(hn);
    gb_informer_reset(hn);
    pthread_mutex_lock(&m->mu);
    gb_model_drop_hypernodes(m);
    pthread_mutex_unlock(&m->mu);
    gb_log(GB_LOG_INFO, "model: HyperNodes no longer served, label levels or one flat domain",
           NULL);
  }
  m->hn_served = gb_informer_running(hn);
}

static int lists_done(struct gb_model *m) {
  for (int k = GB_INF_NODE; k <= GB_INF_POD; k++)
    if (!gb_informer_has_synced(m->inf[k]))
      return 0;
  return !m->hn_served || gb_informer_has_synced(m->inf[GB_INF_HN]);
}

static void *housekeeping(void *arg) {
  struct gb_model *m = arg;
  double next_disc = 0;
  pthread_mutex_lock(&m->mu);
  while (!m->stop) {
    m->ticks++;
    int recheck = m->o.n_levels == 0 && (m->crd_changed || gb_clock_s() >= next_disc);
    m->crd_changed = 0;
    pthread_mutex_unlock(&m->mu);
    if (recheck) {
      gb_kube_discovery_invalidate(m->disc);
      check_hypernodes(m);
      next_disc = gb_clock_s() + DISCOVERY_EVERY_S;
    }
    int listed = lists_done(m);
    pthread_mutex_lock(&m->mu);
    if (listed) {
      m->fed_done = 1;
      if (gb_model_rebuild_if_due(m) == 0 && m->s)
        m->synced = 1;
    }
    pthread_mutex_unlock(&m->mu);
    gb_model_flush_capacity(m);
    gb_model_flush_drops(m);
    pthread_mutex_lock(&m->mu);
    if (!m->stop && !m->crd_changed) {
      struct timespec ts;
      gb_clock_deadline(&ts, TICK_NS);
      pthread_cond_timedwait(&m->cond, &m->mu, &ts);
    }
  }
  pthread_mutex_unlock(&m->mu);
  return NULL;
}

int gb_model_start(struct gb_model *m) {
  if (!m || !m->o.client || !m->o.informers)
    return GC_EUSAGE;
  if (m->started)
    return GC_EUSAGE;
  int rc = (m->disc = gb_kube_discovery_new(m->o.client, 30)) ? 0 : GC_ENOMEM;
  if (!rc) {
    m->stop = 0;
    m->started = 1;
    if (pthread_create(&m->thread, NULL, housekeeping, m)) {
      m->started = 0;
      rc = GC_ENOMEM;
    }
  }
  if (rc)
    gb_model_stop(m);
  return rc;
}

int gb_model_synced(struct gb_model *m) {
  pthread_mutex_lock(&m->mu);
  int s = m->synced;
  pthread_mutex_unlock(&m->mu);
  return s;
}

void gb_model_stop(struct gb_model *m) {
  if (!m)
    return;
  if (m->started) {
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_signal(&m->cond);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    m->started = 0;
  }
}

int gb_model_hold_pods(struct gb_model *m, int (*fn)(void *arg), void *arg) {
  return m->inf[GB_INF_POD] ? gb_informer_hold(m->inf[GB_INF_POD], fn, arg) : fn(arg);
}

int gb_model_pod_json(struct gb_model *m, const char *ns, const char *name, json_object **out) {
  *out = NULL;
  if (!m->inf[GB_INF_POD])
    return GC_ENOTFOUND;
  return gb_informer_get_json(m->inf[GB_INF_POD], ns, name, out);
}

void gb_model_watch_free(struct gb_model *m) {
  gb_kube_discovery_free(m->disc);
  m->disc = NULL;
}

/* ---- HyperNodes left out of the topology -------------------------------------- */

static void drop_free(struct gb_model_drop *d) {
  free(d->name);
  free(d->why);
}

void gb_model_drops_free(struct gb_model *m) {
  for (size_t i = 0; i < m->n_drops; i++)
    drop_free(&m->drops[i]);
  free(m->drops);
  m->drops = NULL;
  m->n_drops = 0;
}

/* The index of name with reason why in m->drops, or -1. */
static int64_t drop_find(const struct gb_model *m, const char *name, const char *why) {
  for (size_t i = 0; i < m->n_drops; i++)
    if (!strcmp(m->drops[i].name, name) && !strcmp(m->drops[i].why, why))
      return (int64_t)i;
  return -1;
}

void gb_model_note_drops(struct gb_model *m) {
  size_t n = tp_snapshot_hn_dropped_count(m->s);
  size_t keep = n < GB_MODEL_MAX_DROPS ? n : GB_MODEL_MAX_DROPS;
  struct gb_model_drop *nd = keep ? calloc(keep, sizeof(*nd)) : NULL;
  size_t k = 0;
  for (size_t i = 0; i < keep && nd; i++) {
    const char *name, *why;
    tp_snapshot_hn_dropped(m->s, i, &name, &why);
    int64_t old = drop_find(m, name, why);
    if (old < 0)
      gb_log(GB_LOG_WARN, "HyperNode left out of the topology (the rest is kept)", "hypernode",
             name, "reason", why, NULL);
    nd[k].name = strdup(name);
    nd[k].why = strdup(why);
    nd[k].evented = old >= 0 && m->drops[old].evented;
    if (!nd[k].name || !nd[k].why) {
      drop_free(&nd[k]);
      continue; /* out of memory: this one goes unreported */
    }
    k++;
  }
  if (n > keep && n != m->n_dropped) {
    char count[32];
    snprintf(count, sizeof(count), "%zu", n);
    gb_log(GB_LOG_WARN, "more HyperNodes left out of the topology than reported one by one",
           "count", count, NULL);
  }
  gb_model_drops_free(m);
  m->drops = nd;
  m->n_drops = nd ? k : 0;
  m->n_dropped = n;
}

void gb_model_flush_drops(struct gb_model *m) {
  if (!m->o.events || (m->o.is_leader && !m->o.is_leader(m->o.leader_ctx)))
    return;
  for (;;) {
    char name[TP_MAX_NAME + 1], why[GB_EVENT_MESSAGE_MAX - 64];
    pthread_mutex_lock(&m->mu);
    size_t i = 0;
    while (i < m->n_drops && m->drops[i].evented)
      i++;
    int found = i < m->n_drops;
    if (found) {
      m->drops[i].evented = 1; /* once, even if the write fails: no retry storm */
      snprintf(name, sizeof(name), "%s", m->drops[i].name);
      snprintf(why, sizeof(why), "%s", m->drops[i].why);
    }
    pthread_mutex_unlock(&m->mu);
    if (!found)
      return;
    struct gb_event_ref ref = {"topology.volcano.sh/v1alpha1", "HyperNode", NULL, name, NULL};
    char msg[GB_EVENT_MESSAGE_MAX];
    snprintf(msg, sizeof(msg), "left out of gangbridge's topology (the rest is kept): %s", why);
    struct gb_kube_error e;
    gb_kube_error_clear(&e);
    if (gb_events_record(m->o.events, &ref, GB_EVENT_WARNING, "HyperNodeInvalid", msg, 1, &e))
      gb_log(GB_LOG_WARN, "cannot write the HyperNode's Event", "hypernode", name, "error",
             e.message, NULL);
  }
}
