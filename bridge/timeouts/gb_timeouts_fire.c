/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts_fire: the tracker's acting side (see gb_timeouts.h): the
 * timer thread, running due deadlines on the leader, counting, the
 * lifecycle and the metrics.  A due deadline is popped under the lock, what
 * the action needs is copied, and the lock is dropped around the API calls;
 * afterwards the gang is looked up again (it may be gone) and re-armed.
 * Counting follows the claim: a timeout is counted by the replica whose
 * claim on gangbridge's PodGroup succeeded (on another PodGroup, by the
 * leader that acted), so two replicas or a restart never count one twice.
 */
#define _GNU_SOURCE /* random */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_log.h"
#include "gb_timeouts_int.h"
#include "gc_diag.h"
#include "gc_gang.h"
#include "gb_timeouts_test.h"

#define RETRY_S 5.0 /* a failed write or action is tried again after this */

static double nmax_fact(double a, double b) { return isnan(a) ? b : isnan(b) ? a : fmax(a, b); }

static int leading(struct gb_timeouts *t) {
  return !t->o.is_leader || t->o.is_leader(t->o.leader_ctx);
}

/* Acting waits until every informer delivered its first list: a gang's
 * PodGroup, pods and TrainJob must all be known before anything is done
 * or counted for it. */
static int may_act(struct gb_timeouts *t) {
  return leading(t) && (!t->o.synced || t->o.synced(t->o.synced_ctx));
}

static void split_key(const char *key, char *ns, size_t ns_cap, char *name, size_t name_cap) {
  const char *slash = strchr(key, '/');
  size_t nl = slash ? (size_t)(slash - key) : 0;
  snprintf(ns, ns_cap, "%.*s", (int)nl, key);
  snprintf(name, name_cap, "%s", slash ? slash + 1 : key);
}

/* What the action needs of g (mu held). */
static void snapshot(const struct gb_timeouts *t, const struct gang *g, struct gb_toa_gang *s) {
  memset(s, 0, sizeof(*s));
  split_key(g->key, s->ns, sizeof(s->ns), s->name, sizeof(s->name));
  s->backend = gb_timeouts_gang_backend(g);
  s->version = gb_timeouts_gang_version(g);
  snprintf(s->pg_uid, sizeof(s->pg_uid), "%s", g->uid);
  snprintf(s->tj_uid, sizeof(s->tj_uid), "%s", strcmp(g->tj_uid, "?") ? g->tj_uid : "");
  s->timeout_s = g->timeout_s;
  s->timeout_source = g->timeout_source ? g->timeout_source : "?";
  s->until_ready = t->o.options->until_ready;
  s->wait_start = gb_timeouts_wait_start(g);
  s->min_member = g->min_member;
  s->pods = g->pods;
  s->gated = g->gated;
  s->scheduled = g->scheduled;
  s->unschedulable = g->unschedulable;
  s->ready = g->ready;
  snprintf(s->phase, sizeof(s->phase), "%s", g->phase);
  snprintf(s->pg_message, sizeof(s->pg_message), "%s", g->pg_msg);
  snprintf(s->pod_message, sizeof(s->pod_message), "%s", g->pod_msg);
}

/* Labels of the counters: the gang's three and the phase that ends a wait. */
struct labels {
  const char *v[4];
  char queue[64];
};

static void labels_of(struct gb_timeouts *t, const struct gang *g, struct labels *l) {
  const char *three[3];
  gb_timeouts_labels(t, g, three);
  /* The queue label may point into g; copy it, g may go while unlocked. */
  snprintf(l->queue, sizeof(l->queue), "%s", three[1]);
  l->v[0] = three[0];
  l->v[1] = l->queue;
  l->v[2] = three[2];
  l->v[3] = t->o.options->until_ready ? "ready" : "scheduled";
}

static void count_timeout(struct gb_timeouts *t, const struct labels *l) {
  t->st.fired++;
  if (t->fired)
    gb_metric_counter_inc(t->fired, l->v);
}

/* Counts a requeue outcome (mu held). */
static void count_outcome(struct gb_timeouts *t, enum gb_toa_outcome out, const struct labels *l) {
  const char *act = NULL;
  switch (out) {
  case GB_TOA_SUSPENDED:
    t->st.suspended++;
    act = "suspend";
    break;
  case GB_TOA_GAVE_UP:
    t->st.gave_up++;
    act = "give_up";
    break;
  case GB_TOA_RESUMED:
    t->st.resumed++;
    act = "resume";
    break;
  case GB_TOA_RETRY: t->st.retries++; break;
  default: break;
  }
  if (act && t->requeues)
    gb_metric_counter_inc(t->requeues, (const char *[]){l->v[0], l->v[1], l->v[2], l->v[3], act});
}

/* The facts and notes of g (mu dropped around the writes). */
static void fire_write(struct gb_timeouts *t, struct gang *g, double now) {
  char key[GB_TOA_KEY_MAX + 1], detail[512], *msg = g->note;
  struct gb_toa_gang s;
  struct gb_gangfacts add;
  unsigned bits = g->pending;
  snprintf(key, sizeof(key), "%s", g->key);
  snapshot(t, g, &s);
  gb_gangfacts_clear(&add);
  if (bits & W_STARTED)
    add.started_at = g->write_started;
  if (bits & W_READY)
    add.ready_at = g->write_ready;
  if (bits & W_RESUMED)
    add.resumed_at = g->write_resumed;
  char rv[32];
  snprintf(rv, sizeof(rv), "%s", g->rv);
  g->note = NULL;
  g->pending = 0;
  pthread_mutex_unlock(&t->mu);
  int rc = 0;
  if (bits & (W_STARTED | W_READY | W_RESUMED))
    rc = gb_toaction_add_facts(&t->env, &s, rv[0] ? rv : NULL, &add, detail, sizeof(detail));
  if (msg)
    gb_toaction_state_ignored(&t->env, &s, msg);
  if (rc && rc != GC_ENOTFOUND)
    gb_log(GB_LOG_WARN, "cannot record the gang's facts", "gang", key, "error", detail, NULL);
  pthread_mutex_lock(&t->mu);
  if (!(g = gb_timeouts_find(t, key))) {
    free(msg);
    return;
  }
  if (msg)
    g->noted = gb_hash_str(msg);
  free(msg);
  if (rc && rc != GC_ENOTFOUND) {
    g->pending |= bits & ~W_NOTE; /* tried again in a moment */
    g->not_before = now + RETRY_S;
    t->st.retries++;
    return;
  }
  if (!rc) {
    g->facts.started_at = nmax_fact(g->facts.started_at, add.started_at);
    g->facts.ready_at = nmax_fact(g->facts.ready_at, add.ready_at);
    g->facts.resumed_at = nmax_fact(g->facts.resumed_at, add.resumed_at);
  }
}

/* A timeout acted on: counted by whoever claimed it; a failed act is
 * finished later (DL_COMPLETE) or, without a claim, tried again. */
static void fire_timeout(struct gb_timeouts *t, struct gang *g, double now) {
  char key[GB_TOA_KEY_MAX + 1], detail[512] = "";
  struct gb_toa_gang s;
  struct labels l;
  struct gb_gangfacts facts;
  snprintf(key, sizeof(key), "%s", g->key);
  snapshot(t, g, &s);
  labels_of(t, g, &l);
  double ws = s.wait_start;
  int ours = g->pg_ours;
  gb_gangfacts_clear(&facts);
  /* Not re-armed for this wait while the lock is dropped; without a claim,
   * this is what keeps it from being acted on twice. */
  g->fired_for = ws;
  pthread_mutex_unlock(&t->mu);
  enum gb_toaction_claim claim = ours ? gb_toaction_claim(&t->env, &s, now, 0, &facts, detail,
                                                          sizeof(detail))
                                      : GB_CLAIM_FOREIGN;
  enum gb_toa_outcome out = GB_TOA_NOTHING;
  if (claim == GB_CLAIM_OK || claim == GB_CLAIM_FOREIGN)
    out = gb_toaction_timeout(&t->env, &s, now, 0, detail, sizeof(detail));
  gb_log(claim == GB_CLAIM_RETRY || out == GB_TOA_RETRY ? GB_LOG_WARN : GB_LOG_INFO, "gang timeout",
         "gang", key, "outcome", detail, NULL);
  pthread_mutex_lock(&t->mu);
  if (claim == GB_CLAIM_OK || claim == GB_CLAIM_FOREIGN) {
    count_timeout(t, &l);
    count_outcome(t, out, &l);
  }
  if (!(g = gb_timeouts_find(t, key)))
    return;
  if (claim != GB_CLAIM_FOREIGN && ours) {
    g->facts.timed_out_at = nmax_fact(g->facts.timed_out_at, facts.timed_out_at);
    g->facts.started_at = nmax_fact(g->facts.started_at, facts.started_at);
    g->facts.ready_at = nmax_fact(g->facts.ready_at, facts.ready_at);
    g->facts.resumed_at = nmax_fact(g->facts.resumed_at, facts.resumed_at);
  }
  if (claim == GB_CLAIM_OK && out != GB_TOA_RETRY)
    g->completed_for = ws;
  if (claim == GB_CLAIM_RETRY || (out == GB_TOA_RETRY && claim != GB_CLAIM_OK)) {
    g->fired_for = NAN; /* tried again from the start */
    g->not_before = now + RETRY_S;
    t->st.retries += claim == GB_CLAIM_RETRY;
  } else if (out == GB_TOA_RETRY) {
    g->not_before = now + RETRY_S; /* claimed: finished by DL_COMPLETE */
  }
}

/* Finishes a claimed requeue that was not done (the claimer crashed, or
 * its write failed): nothing is counted again. */
static void fire_complete(struct gb_timeouts *t, struct gang *g, double now) {
  char key[GB_TOA_KEY_MAX + 1], detail[512] = "";
  struct gb_toa_gang s;
  struct labels l;
  snprintf(key, sizeof(key), "%s", g->key);
  snapshot(t, g, &s);
  labels_of(t, g, &l);
  double ws = s.wait_start;
  pthread_mutex_unlock(&t->mu);
  enum gb_toa_outcome out = gb_toaction_timeout(&t->env, &s, now, 1, detail, sizeof(detail));
  gb_log(out == GB_TOA_RETRY ? GB_LOG_WARN : GB_LOG_INFO, "claimed gang timeout finished", "gang",
         key, "outcome", detail, NULL);
  pthread_mutex_lock(&t->mu);
  count_outcome(t, out, &l);
  if (!(g = gb_timeouts_find(t, key)))
    return;
  if (out == GB_TOA_RETRY)
    g->not_before = now + RETRY_S;
  else
    g->completed_for = ws;
}

/* The end of a requeue backoff: the TrainJob is resumed (the PodGroup
 * records the resume first: the next wait starts there). */
static void fire_resume(struct gb_timeouts *t, struct gang *g, double now) {
  char key[GB_TOA_KEY_MAX + 1], detail[512] = "";
  struct gb_toa_gang s;
  struct labels l;
  snprintf(key, sizeof(key), "%s", g->key);
  snapshot(t, g, &s);
  labels_of(t, g, &l);
  double at = gb_timeouts_resume_time(t, g, now);
  pthread_mutex_unlock(&t->mu);
  enum gb_toa_outcome out = isnan(at)
                                ? GB_TOA_NOTHING
                                : gb_toaction_resume(&t->env, &s, at, now, detail, sizeof(detail));
  gb_log(out == GB_TOA_RETRY ? GB_LOG_WARN : GB_LOG_INFO, "requeue backoff over", "gang", key,
         "outcome", detail, NULL);
  pthread_mutex_lock(&t->mu);
  count_outcome(t, out, &l);
  if (!(g = gb_timeouts_find(t, key)))
    return;
  if (out == GB_TOA_RESUMED)
    g->facts.resumed_at = nmax_fact(g->facts.resumed_at, floor(now));
  if (out == GB_TOA_RETRY)
    g->not_before = now + RETRY_S;
  else if (out == GB_TOA_NOTHING)
    g->resume_idle = at;
}

/* Runs one popped gang's deadline (mu held; dropped around API calls), then
 * re-arms it from its state. */
static void fire(struct gb_timeouts *t, struct gang *g, double now) {
  char key[GB_TOA_KEY_MAX + 1];
  snprintf(key, sizeof(key), "%s", g->key);
  g->not_before = NAN;
  switch (g->dl_kind) {
  case DL_WRITE: fire_write(t, g, now); break;
  case DL_TIMEOUT: fire_timeout(t, g, now); break;
  case DL_COMPLETE: fire_complete(t, g, now); break;
  case DL_RESUME: fire_resume(t, g, now); break;
  }
  if ((g = gb_timeouts_find(t, key)) != NULL)
    gb_timeouts_arm(t, g, gb_timeouts_wall_now());
}

size_t gb_timeouts_run_due(struct gb_timeouts *t, double now) {
  size_t n = 0;
  if (!may_act(t))
    return 0; /* deadlines stay armed: a new leader acts on them at once */
  pthread_mutex_lock(&t->mu);
  struct gb_deadline_item *it;
  while ((it = gb_deadlines_pop_due(&t->heap, now)) != NULL) {
    struct gang *g = (struct gang *)((char *)it - offsetof(struct gang, dl));
    fire(t, g, now);
    n++;
  }
  pthread_mutex_unlock(&t->mu);
  return n;
}

static void *timer_main(void *arg) {
  struct gb_timeouts *t = arg;
  pthread_mutex_lock(&t->mu);
  while (!t->stop) {
    double now = gb_timeouts_wall_now();
    struct gb_deadline_item *top = gb_deadlines_peek(&t->heap);
    int act = may_act(t);
    if (top && top->at <= now && act) {
      pthread_mutex_unlock(&t->mu);
      gb_timeouts_run_due(t, now);
      pthread_mutex_lock(&t->mu);
      continue;
    }
    /* A follower looks again twice a second; a leader sleeps until the
     * earliest deadline or until a change or a kick wakes it. */
    double until = !act ? now + 0.5 : top ? top->at : now + 60;
    struct timespec ts = {(time_t)floor(until), (long)((until - floor(until)) * 1e9)};
    if (!t->kicked)
      pthread_cond_timedwait(&t->cond, &t->mu, &ts); /* any wake-up: look again */
    t->kicked = 0;
  }
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

/* ---- lifecycle and metrics ---------------------------------------------------------- */

static int register_metrics(struct gb_timeouts *t, struct gb_metrics *reg, struct gc_diags *d) {
  static const char *const l_gang[] = {"backend", "queue", "size"};
  static const char *const l_fired[] = {"backend", "queue", "size", "phase"};
  static const char *const l_act[] = {"backend", "queue", "size", "phase", "action"};
  static const double buckets[] = {1, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600};
  size_t nb = sizeof(buckets) / sizeof(buckets[0]);
  int rc = gb_metrics_histogram(reg, "gangbridge_gang_assembly_seconds",
                                "Seconds from a gang's first pod created to its last, for gangs "
                                "that started, by backend, queue and gang size class.",
                                l_gang, 3, buckets, nb, &t->assembly, d);
  if (!rc)
    rc = gb_metrics_histogram(reg, "gangbridge_gang_gated_seconds",
                              "Seconds a gang's pods were held by scheduling gates (first gated "
                              "pod seen to the last gate removed), by backend, queue and size.",
                              l_gang, 3, buckets, nb, &t->gated, d);
  if (!rc)
    rc = gb_metrics_histogram(reg, "gangbridge_gang_time_to_ready_seconds",
                              "Seconds from the start of a gang's wait (PodGroup creation or "
                              "resume) until minMember of its pods were Ready, by backend, "
                              "queue and size.",
                              l_gang, 3, buckets, nb, &t->to_ready, d);
  if (!rc)
    rc = gb_metrics_counter(reg, "gangbridge_gang_timeouts_total",
                            "Gang timeouts acted on, counted by the replica that claimed them, "
                            "by backend, queue, gang size class and phase (what the gang did "
                            "not reach in time: scheduled or ready).",
                            l_fired, 4, &t->fired, d);
  if (!rc)
    rc = gb_metrics_counter(reg, "gangbridge_gang_requeues_total",
                            "Requeue writes (timeouts.action requeue) by backend, queue, size "
                            "class, phase and action (suspend, resume, give_up).",
                            l_act, 5, &t->requeues, d);
  return rc;
}

static void timeouts_env(struct gb_timeouts *t) {
  const struct gb_timeouts_options *c = t->o.options;
  t->env.client = t->o.client;
  t->env.discovery = t->discovery;
  t->env.events = t->events;
  t->env.action = c->action;
  t->env.backoff = (struct gb_backoff){c->requeue_base_delay_s, c->requeue_max_delay_s, 0.1,
                                       c->requeue_max_attempts};
}

int gb_timeouts_new(const struct gb_timeouts_opts *o, struct gb_timeouts **out,
                    struct gc_diags *d) {
  *out = NULL;
  if (!o || !o->cfg || !o->options)
    return GC_EINVAL;
  struct gb_timeouts *t = calloc(1, sizeof(*t));
  if (!t)
    return GC_ENOMEM;
  t->o = *o;
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cond, NULL); /* CLOCK_REALTIME: deadlines are wall-clock times */
  t->max_gangs = o->options->max_gangs > 0 ? (size_t)o->options->max_gangs : 1000000;
  gb_qlabels_init(&t->queues, o->options->max_queues > 0 ? (size_t)o->options->max_queues : 50, 0);
  gb_deadlines_init(&t->heap, t->max_gangs);
  t->tts = gb_tts_new(t->max_gangs);
  if (o->client) {
    struct gb_events_opts eo = {GC_MANAGER_NAME, NULL, o->events ? o->events->min_interval_s : 0,
                                0};
    const char *pod = getenv("POD_NAME");
    if (pod && *pod)
      eo.instance = pod;
    t->events = gb_events_new(o->client, &eo);
    t->discovery = gb_kube_discovery_new(o->client, 30);
  }
  int rc = gb_htab_init(&t->gangs, 4096);
  if (!rc && (!t->tts || (o->client && (!t->events || !t->discovery))))
    rc = GC_ENOMEM;
  if (!rc && o->reg)
    rc = register_metrics(t, o->reg, d);
  if (!rc && o->informers)
    rc = gb_timeouts_register(t, o->informers, d);
  if (rc) {
    gb_timeouts_free(t);
    return rc;
  }
  timeouts_env(t);
  *out = t;
  return 0;
}

int gb_timeouts_start(struct gb_timeouts *t) {
  if (t->started)
    return GC_EUSAGE;
  if (pthread_create(&t->thread, NULL, timer_main, t))
    return GC_ENOMEM;
  t->started = 1;
  return 0;
}

void gb_timeouts_kick(struct gb_timeouts *t) {
  if (!t)
    return;
  pthread_mutex_lock(&t->mu);
  t->kicked = 1;
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->mu);
}

void gb_timeouts_stop(struct gb_timeouts *t) {
  if (!t || !t->started)
    return;
  pthread_mutex_lock(&t->mu);
  t->stop = 1;
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->mu);
  pthread_join(t->thread, NULL);
  t->started = 0;
}

static void free_gang(struct gb_hnode *n, void *ctx) {
  (void)ctx;
  free(((struct gang *)n)->note);
  free(n);
}

void gb_timeouts_free(struct gb_timeouts *t) {
  if (!t)
    return;
  gb_timeouts_stop(t);
  gb_htab_clear(&t->gangs, free_gang, NULL);
  gb_htab_free(&t->gangs);
  gb_deadlines_destroy(&t->heap);
  gb_qlabels_destroy(&t->queues);
  gb_tts_free(t->tts);
  gb_events_free(t->events);
  gb_kube_discovery_free(t->discovery);
  pthread_cond_destroy(&t->cond);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

double gb_timeouts_next(struct gb_timeouts *t) {
  pthread_mutex_lock(&t->mu);
  struct gb_deadline_item *top = gb_deadlines_peek(&t->heap);
  double at = top ? top->at : 0;
  pthread_mutex_unlock(&t->mu);
  return at;
}

void gb_timeouts_get_stats(struct gb_timeouts *t, struct gb_timeouts_stats *out) {
  pthread_mutex_lock(&t->mu);
  *out = t->st;
  out->gangs = t->gangs.n;
  out->armed = t->heap.n;
  pthread_mutex_unlock(&t->mu);
}

void gb_timeouts_collect(void *ctx, struct gb_metrics *reg) {
  (void)reg;
  struct gb_timeouts *t = ctx;
  const struct gb_service_metrics *m = t->o.metrics;
  if (!m)
    return;
  gb_metric_clear(m->podgroups);
  for (size_t b = 0; b < gc_backend_count(); b++) {
    const char *backend = gc_backend_at(b)->name;
    struct gb_tts_phase_count pc[GB_TTS_MAX_PHASES];
    size_t n = gb_tts_phases(t->tts, backend, pc, GB_TTS_MAX_PHASES);
    for (size_t j = 0; j < n; j++)
      gb_metric_gauge_set(m->podgroups, (const char *[]){backend, pc[j].phase}, pc[j].count);
  }
}
