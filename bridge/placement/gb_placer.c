/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer: the placement controller (see the header).  One thread runs
 * passes: it gathers the gangs whose pods changed (a burst is gathered for
 * batch_delay_ms), examines each (the gang from the controller, its pods
 * from the model), decides every ready gang in one gb_plan_decide on the
 * model's snapshot, then releases the placed ones on the leader.
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_clock.h"
#include "gb_hash.h"
#include "gb_log.h"
#include "gb_placer.h"
#include "gb_placer_test.h"
#include "gb_placer_int.h"

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the table of gangs -------------------------------------------------- */

struct gang *gb_placer_find(struct gb_placer *p, const char *key, int create) {
  uint64_t h = gb_hash_str(key);
  for (struct gb_hnode *n = gb_htab_chain(&p->gangs, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct gang *)n)->key, key))
      return (struct gang *)n;
  if (!create || p->gangs.n >= GB_PLACER_MAX_GANGS)
    return NULL;
  struct gang *g = calloc(1, sizeof(*g));
  if (!g)
    return NULL;
  snprintf(g->key, sizeof(g->key), "%s", key);
  g->h.hash = h;
  gb_htab_insert(&p->gangs, &g->h);
  return g;
}

static void free_gang(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  struct gang *g = (struct gang *)n;
  free(g->restr);
  gb_decision_free(g->rec);
  free(g);
}

/* ---- metrics --------------------------------------------------------------- */

static int register_metrics(struct gb_placer *p, struct gc_diags *d) {
  struct gb_metrics *reg = p->o.reg;
  static const double secs[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600};
  static const double fast[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  static const char *const outcome[] = {"outcome"};
  int rc;
  if (!reg)
    return 0;
  if ((rc = gb_metrics_gauge(reg, "gangbridge_placement_gangs_gated",
                             "Gangs whose pods wait behind the placement gate now.", NULL, 0,
                             &p->m_gated, d)) ||
      (rc = gb_metrics_histogram(reg, "gangbridge_placement_gated_seconds",
                                 "Time from a gang's first pod to its release.", NULL, 0, secs,
                                 sizeof(secs) / sizeof(secs[0]), &p->m_gated_s, d)) ||
      (rc = gb_metrics_counter(reg, "gangbridge_placement_decisions_total",
                               "Placement decisions by outcome (placed, nofit, held).", outcome, 1,
                               &p->m_decisions, d)) ||
      (rc = gb_metrics_histogram(reg, "gangbridge_placement_release_seconds",
                                 "Time from a gang ready to every pod of it released.", NULL, 0,
                                 fast, sizeof(fast) / sizeof(fast[0]), &p->m_release_s, d)) ||
      (rc = gb_metrics_counter(reg, "gangbridge_placement_raced_total",
                               "Released gangs whose pods stayed unschedulable past "
                               "placement.releaseTimeout.",
                               NULL, 0, &p->m_raced, d)) ||
      (rc = gb_metrics_counter(reg, "gangbridge_placement_release_errors_total",
                               "Pod releases that failed, each attempt (the pod stays gated and "
                               "is retried; the gang keeps its reservation).",
                               NULL, 0, &p->m_release_err, d)) ||
      (rc = gb_metrics_counter(reg, "gangbridge_placement_record_errors_total",
                               "Decision records that could not be written (nothing of that "
                               "decision is released).",
                               NULL, 0, &p->m_record_err, d)) ||
      (rc = gb_metrics_gauge(reg, "gangbridge_placement_snapshot_generation",
                             "Generation of the live cluster model's snapshot.", NULL, 0, &p->m_gen,
                             d)))
    return rc;
  static const char *const what[] = {"what"};
  return gb_metrics_gauge(reg, "gangbridge_placement_snapshot_size",
                          "Size of the live cluster model (nodes, domains, pods).", what, 1,
                          &p->m_size, d);
}

void gb_placer_collect(void *ctx, struct gb_metrics *reg) {
  (void)reg;
  struct gb_placer *p = ctx;
  if (!p->m_gated)
    return;
  size_t gated = 0, bucket = 0;
  pthread_mutex_lock(&p->mu);
  for (struct gb_hnode *n = gb_htab_next(&p->gangs, &bucket, NULL); n;
       n = gb_htab_next(&p->gangs, &bucket, n)) {
    const struct gang *g = (const struct gang *)n;
    gated += g->state == GB_GANG_READY || g->state == GB_GANG_WAITING_PODS ||
             g->state == GB_GANG_PARTLY;
  }
  pthread_mutex_unlock(&p->mu);
  gb_metric_gauge_set(p->m_gated, NULL, (double)gated);
  struct gb_model_stats st;
  gb_model_stats(p->o.model, &st);
  gb_metric_gauge_set(p->m_gen, NULL, (double)st.generation);
  gb_metric_gauge_set(p->m_size, (const char *[]){"nodes"}, (double)st.nodes);
  gb_metric_gauge_set(p->m_size, (const char *[]){"domains"}, (double)st.domains);
  gb_metric_gauge_set(p->m_size, (const char *[]){"hypernodes"}, (double)st.hypernodes);
  gb_metric_gauge_set(p->m_size, (const char *[]){"pods"}, (double)st.pods);
}

/* ---- life cycle -------------------------------------------------------------- */

int gb_placer_new(const struct gb_placer_opts *o, struct gb_placer **out, struct gc_diags *d) {
  *out = NULL;
  if (!o || !o->model || !o->plan || !o->gang) {
    gc_diags_addf(d, "placement: the model, the plan and the gang lookup are required");
    return GC_EINVAL;
  }
  struct gb_placer *p = calloc(1, sizeof(*p));
  if (!p)
    return GC_ENOMEM;
  p->o = *o;
  if (p->o.release_timeout_ms <= 0)
    p->o.release_timeout_ms = 120000;
  if (p->o.max_inflight <= 0)
    p->o.max_inflight = 32;
  if (p->o.batch_delay_ms <= 0)
    p->o.batch_delay_ms = 10;
  if (p->o.tick_ms <= 0)
    p->o.tick_ms = 1000;
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->pass_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cond, &ca);
  pthread_condattr_destroy(&ca);
  p->resync_gen = 1; /* a new process has read nothing back yet */
  int rc = gb_htab_init(&p->gangs, 64);
  if (!rc)
    rc = register_metrics(p, d);
  if (rc) {
    gb_placer_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

static void *placer_main(void *arg);

int gb_placer_start(struct gb_placer *p) {
  if (p->started)
    return 0;
  if (pthread_create(&p->th, NULL, placer_main, p))
    return GC_ENOMEM;
  p->started = 1;
  return 0;
}

void gb_placer_stop(struct gb_placer *p) {
  if (!p || !p->started)
    return;
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->th, NULL);
  p->started = 0;
}

void gb_placer_free(struct gb_placer *p) {
  if (!p)
    return;
  gb_placer_stop(p);
  gb_htab_clear(&p->gangs, free_gang, NULL);
  gb_htab_free(&p->gangs);
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->pass_mu);
  free(p);
}

/* ---- kicks --------------------------------------------------------------------- */

void gb_placer_on_gang(void *arg, const char *ns, const char *jobset) {
  struct gb_placer *p = arg;
  char key[GB_PLAN_KEY_MAX + 1];
  if (!*ns || !*jobset || snprintf(key, sizeof(key), "%s/%s", ns, jobset) >= (int)sizeof(key))
    return;
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, key, 1);
  if (g) {
    g->dirty = 1;
    p->kick = 1;
    pthread_cond_signal(&p->cond);
  } else {
    p->dropped++;
  }
  pthread_mutex_unlock(&p->mu);
}

void gb_placer_on_capacity(void *arg) {
  struct gb_placer *p = arg;
  pthread_mutex_lock(&p->mu);
  p->capacity = 1;
  p->kick = 1;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->mu);
}

struct keys {
  char **v;
  size_t n, cap;
};

static int add_key(void *arg, const char *key) {
  struct keys *k = arg;
  if (k->n == k->cap) {
    size_t cap = k->cap ? k->cap * 2 : 64;
    char **v = realloc(k->v, cap * sizeof(*v));
    if (!v)
      return 1;
    k->v = v;
    k->cap = cap;
  }
  if (!(k->v[k->n] = strdup(key)))
    return 1;
  k->n++;
  return k->n >= GB_PLACER_MAX_GANGS;
}

void gb_placer_resync(struct gb_placer *p) {
  /* Every gang the pods show, not only those in the table: a gang whose
   * pods arrived before its TrainJob reached the caches was examined as
   * unmanaged and forgotten, and no pod event may come again. */
  struct keys k = {NULL, 0, 0};
  gb_model_foreach_gang(p->o.model, add_key, &k);
  size_t bucket = 0;
  pthread_mutex_lock(&p->mu);
  p->records_scanned = 0;
  for (size_t i = 0; i < k.n; i++) {
    struct gang *g = gb_placer_find(p, k.v[i], 1);
    if (g)
      g->dirty = 1;
  }
  for (struct gb_hnode *n = gb_htab_next(&p->gangs, &bucket, NULL); n;
       n = gb_htab_next(&p->gangs, &bucket, n))
    ((struct gang *)n)->dirty = 1;
  p->resync_gen++;
  p->kick = 1;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->mu);
  for (size_t i = 0; i < k.n; i++)
    free(k.v[i]);
  free(k.v);
}

int gb_placer_caught_up(struct gb_placer *p) {
  pthread_mutex_lock(&p->mu);
  int up = p->caught_up_gen >= p->resync_gen;
  pthread_mutex_unlock(&p->mu);
  return up;
}

/* Waits for a kick or the tick, then gathers a burst: the first change
 * starts batch_delay_ms of gathering, so a gang whose pods arrive together
 * is examined once. */
static void *placer_main(void *arg) {
  struct gb_placer *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->stopping) {
    struct timespec until;
    gb_clock_deadline(&until, p->o.tick_ms * 1000000);
    while (!p->kick && !p->stopping && pthread_cond_timedwait(&p->cond, &p->mu, &until) == 0)
      ;
    if (p->stopping)
      break;
    if (p->kick) {
      gb_clock_deadline(&until, p->o.batch_delay_ms * 1000000);
      while (!p->stopping && pthread_cond_timedwait(&p->cond, &p->mu, &until) == 0)
        ;
    }
    p->tick = 1;
    /* A pass that takes its work after this resync sees every gang marked. */
    uint64_t gen = p->resync_gen;
    pthread_mutex_unlock(&p->mu);
    int lead = (!p->o.is_leader || p->o.is_leader(p->o.leader_ctx)) && gb_model_synced(p->o.model);
    int rc = gb_placer_run_once(p);
    if (rc)
      gb_log(GB_LOG_WARN, "placement pass failed", "error", gc_diag_strerror(rc), NULL);
    pthread_mutex_lock(&p->mu);
    /* Caught up: that pass led, on a synced model, and found every gang
     * with a decision record (the scan is reset by each resync). */
    if (!rc && lead && (p->records_scanned || !p->o.record_gangs) && gen > p->caught_up_gen)
      p->caught_up_gen = gen;
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* ---- the webhook's lookup ------------------------------------------------------- */

int gb_placer_webhook_lookup(void *ctx, const char *ns, const char *jobset, const char *rjob,
                             int *gate, struct gb_restriction *r, char *reason,
                             size_t reason_size) {
  (void)rjob;
  struct gb_placer *p = ctx;
  char key[GB_PLAN_KEY_MAX + 1];
  *gate = 0;
  if (snprintf(key, sizeof(key), "%s/%s", ns, jobset) >= (int)sizeof(key))
    return 0;
  int released = 0;
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, key, 0);
  if (g && g->released_ms) {
    released = 1;
    if (g->restr)
      *r = *g->restr;
  }
  pthread_mutex_unlock(&p->mu);
  if (released)
    return 0;
  /* Not released (or not seen yet: this may be the gang's first pod): gate
   * it when the gang has a policy, as the placer will place it. */
  struct gc_gang *gg = NULL;
  int rc = p->o.gang(p->o.gang_ctx, ns, jobset, &gg, reason, reason_size);
  if (rc)
    return rc;
  *gate = gg && gg->topology.set;
  gc_gang_free(gg);
  return 0;
}

/* ---- status ---------------------------------------------------------------------- */

#define STATUS_MAX_NODES 1024 /* reserved nodes listed per gang */

struct reserved_json {
  json_object *nodes;
  int64_t pods;
  size_t listed;
};

static int add_reserved(void *arg, const char *node, int64_t pods) {
  struct reserved_json *r = arg;
  r->pods += pods;
  if (r->listed++ < STATUS_MAX_NODES)
    json_object_object_add(r->nodes, node, json_object_new_int64(pods));
  return 0;
}

/* The decision record and what the plan still reserves for g (the plan's
 * lock is taken inside the placer's: placer, then plan). */
static void decision_json(struct gb_placer *p, const struct gang *g, json_object *o) {
  char id[17] = "";
  if (g->rec)
    gb_decision_id_text(g->rec->rec.id, id);
  json_object_object_add(o, "decision", json_object_new_string(id));
  struct reserved_json r = {json_object_new_object(), 0, 0};
  if (r.nodes)
    gb_plan_foreach_reserved(p->o.plan, g->key, add_reserved, &r);
  json_object_object_add(o, "reservedPods", json_object_new_int64(r.pods));
  json_object_object_add(o, "reserved", r.nodes);
}

static json_object *gang_json(struct gb_placer *p, const struct gang *g, int64_t now) {
  json_object *o = json_object_new_object();
  if (!o)
    return NULL;
  json_object_object_add(o, "gang", json_object_new_string(g->key));
  json_object_object_add(o, "state", json_object_new_string(gb_gang_state_name(g->state)));
  json_object_object_add(o, "outcome", json_object_new_string(gb_placer_outcome_name(g->outcome)));
  json_object_object_add(o, "reason", json_object_new_string(g->reason));
  json_object_object_add(o, "domain", json_object_new_string(g->domain));
  json_object_object_add(o, "pods", json_object_new_int64(g->pods));
  json_object_object_add(o, "gated", json_object_new_int64(g->gated));
  json_object_object_add(o, "released", json_object_new_int64(g->released_pods));
  json_object_object_add(o, "minMember", json_object_new_int64(g->min_member));
  double age = g->first_ms ? (double)(now - g->first_ms) / 1000.0 : 0;
  json_object_object_add(o, "ageSeconds", json_object_new_double(age < 0 ? 0 : age));
  json_object_object_add(o, "raced", json_object_new_boolean(g->raced));
  decision_json(p, g, o);
  return o;
}

int gb_placer_status_json(struct gb_placer *p, struct gb_buf *b) {
  json_object *root = json_object_new_object(), *arr = json_object_new_array();
  int rc = GC_ENOMEM;
  if (!root || !arr)
    goto out;
  int64_t now = wall_ms();
  size_t bucket = 0;
  pthread_mutex_lock(&p->mu);
  for (struct gb_hnode *n = gb_htab_next(&p->gangs, &bucket, NULL); n;
       n = gb_htab_next(&p->gangs, &bucket, n)) {
    const struct gang *g = (const struct gang *)n;
    if (g->state == GB_GANG_UNMANAGED)
      continue;
    json_object *o = gang_json(p, g, now);
    if (o)
      json_object_array_add(arr, o);
  }
  unsigned long long passes = p->passes;
  double decide_ms = (double)p->last_decide_ns / 1e6, release_ms = (double)p->last_release_ns / 1e6;
  size_t decided = p->last_decided, released = p->last_released_pods;
  pthread_mutex_unlock(&p->mu);
  json_object *last = json_object_new_object();
  if (last) {
    /* The last pass that decided: how long the decision (under the model's
     * lock) and the releases took, for operators and the benchmark. */
    json_object_object_add(last, "gangsDecided", json_object_new_uint64(decided));
    json_object_object_add(last, "decideMs", json_object_new_double(decide_ms));
    json_object_object_add(last, "podsReleased", json_object_new_uint64(released));
    json_object_object_add(last, "releaseMs", json_object_new_double(release_ms));
    json_object_object_add(root, "lastPass", last);
  }
  struct gb_model_stats st;
  gb_model_stats(p->o.model, &st);
  json_object *model = json_object_new_object();
  if (model) {
    json_object_object_add(model, "synced", json_object_new_boolean(gb_model_synced(p->o.model)));
    json_object_object_add(model, "generation", json_object_new_uint64(st.generation));
    json_object_object_add(model, "nodes", json_object_new_uint64(st.nodes));
    json_object_object_add(model, "domains", json_object_new_uint64(st.domains));
    json_object_object_add(model, "hypernodes", json_object_new_uint64(st.hypernodes));
    json_object_object_add(model, "pods", json_object_new_uint64(st.pods));
    json_object_object_add(root, "model", model);
  }
  json_object_object_add(root, "passes", json_object_new_uint64(passes));
  json_object_object_add(root, "gangs", arr);
  arr = NULL;
  rc = gb_buf_addstr(b, json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
out:
  json_object_put(arr);
  json_object_put(root);
  return rc;
}

static int status_handler(void *ctx, const struct gb_http_request *req,
                          struct gb_http_response *resp) {
  (void)req;
  struct gb_buf b;
  gb_buf_init(&b, 64u << 20);
  int rc = gb_placer_status_json(ctx, &b);
  if (!rc)
    rc = gb_buf_take(&b, &resp->body, &resp->body_len);
  gb_buf_free(&b);
  resp->content_type = "application/json";
  return rc;
}

struct gb_http_route gb_placer_route(struct gb_placer *p, const char *path) {
  struct gb_http_route r = {path, 0, GB_HTTP_GET, status_handler, p, 0};
  return r;
}

const char *gb_placer_outcome_name(enum gb_plan_outcome o) {
  switch (o) {
  case GB_PLAN_PLACED: return "placed";
  case GB_PLAN_NOFIT: return "nofit";
  case GB_PLAN_HELD: return "held";
  case GB_PLAN_RELEASED: return "released";
  default: return "none";
  }
}

int64_t gb_placer_now_ms(void) { return wall_ms(); }
