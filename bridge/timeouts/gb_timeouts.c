/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts: the gang timeout tracker (see gb_timeouts.h).
 *
 * One record per gang, keyed by "namespace/name" (the PodGroup, its
 * TrainJob and the pods' group binding share the name).  Every change
 * re-arms the gang's one deadline: the timeout (wait start + timeout) while
 * it has not started and its TrainJob is not suspended, or the resume time
 * while gangbridge holds the TrainJob suspended.  The timer thread pops due
 * deadlines under the lock, copies what the action needs, and runs the
 * action without the lock; the outcome comes back through the informers
 * (the TrainJob's new annotations re-arm the gang), except for retries,
 * which re-arm a few seconds later.
 */
#define _GNU_SOURCE /* random */
#include "gb_timeouts.h"

#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_deadline.h"
#include "gb_hash.h"
#include "gb_log.h"
#include "gb_requeue.h"
#include "gb_timeout_report.h"
#include "gb_toaction.h"
#include "gb_tts.h"
#include "gc_diag.h"
#include "gc_policy.h"

#define RETRY_S 5.0 /* a failed action is tried again after this */
#define VOLCANO_GROUP_ANN "scheduling.k8s.io/group-name"
#define COSCHED_GROUP_LABEL "scheduling.x-k8s.io/pod-group"

enum dl_kind { DL_TIMEOUT = 1, DL_RESUME };

struct gang {
  struct gb_hnode node; /* first member: the table's link and hash */
  struct gb_deadline_item dl;
  enum dl_kind dl_kind;
  /* the PodGroup */
  int has_pg, is_volcano;
  char uid[64], queue[64], phase[24], pg_msg[GB_TOA_MSG_MAX];
  int min_member;
  double created, timeout_s; /* timeout_s NAN: none */
  const char *timeout_source;
  /* the TrainJob */
  char tj_uid[64];
  int tj_suspended, tj_ours;
  double tj_resume_at;
  /* the pods bound to the group */
  int pods, gated, scheduled, unschedulable;
  double first_pod, last_pod, last_sched, gated_since, ungated_at;
  char pod_msg[GB_TOA_MSG_MAX];
  /* progress */
  int started, observed;
  double fired_for; /* the wait start whose timeout was acted on; NAN: none */
  char key[];
};

struct gb_timeouts {
  struct gb_timeouts_opts o;
  struct gb_toa_env env;
  struct gb_events *events;
  struct gb_tts *tts;
  pthread_mutex_t mu; /* guards everything below; with cond */
  pthread_cond_t cond;
  struct gb_htab gangs;
  struct gb_deadlines heap;
  size_t max_gangs;
  char (*queues)[64]; /* queue names labelled by name, at most max_queues */
  size_t n_queues, max_queues;
  struct gb_timeouts_stats st;
  int stop, kicked, started;
  pthread_t thread;
  struct gb_metric *assembly, *gated, *fired, *requeues;
};

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double parse_ts(const char *s) {
  int64_t t;
  return s && !gb_tr_parse_time(s, &t) ? (double)t : NAN;
}

static json_object *member(json_object *o, const char *k) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *str_member(json_object *o, const char *k) {
  json_object *v = member(o, k);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* ---- the gang table (mu held) ------------------------------------------------------ */

static struct gang *gang_find(struct gb_timeouts *t, const char *key, uint64_t h) {
  for (struct gb_hnode *n = gb_htab_chain(&t->gangs, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct gang *)n)->key, key))
      return (struct gang *)n;
  return NULL;
}

/* The gang of key, created when missing (NULL when full or out of memory). */
static struct gang *gang_get(struct gb_timeouts *t, const char *key) {
  uint64_t h = gb_hash_str(key);
  struct gang *g = gang_find(t, key, h);
  if (g || t->gangs.n >= t->max_gangs)
    return g;
  size_t kl = strlen(key);
  g = calloc(1, sizeof(*g) + kl + 1);
  if (!g)
    return NULL;
  memcpy(g->key, key, kl + 1);
  g->node.hash = h;
  gb_deadline_item_init(&g->dl);
  g->timeout_s = g->tj_resume_at = g->fired_for = NAN;
  g->created = g->first_pod = g->last_pod = g->last_sched = NAN;
  g->gated_since = g->ungated_at = NAN;
  gb_htab_insert(&t->gangs, &g->node);
  return g;
}

/* Drops a gang that nothing refers to any more. */
static void gang_gc(struct gb_timeouts *t, struct gang *g) {
  if (g->has_pg || g->pods > 0 || g->tj_uid[0])
    return;
  gb_deadlines_remove(&t->heap, &g->dl);
  gb_htab_remove(&t->gangs, &g->node);
  free(g);
}

/* ---- labels ------------------------------------------------------------------------- */

/* The queue label of g: its Volcano queue, "none" for coscheduling, and
 * "other" once timeouts.maxQueues distinct queues have been labelled. */
static const char *queue_label(struct gb_timeouts *t, const struct gang *g) {
  if (!g->is_volcano)
    return "none";
  const char *q = g->queue[0] ? g->queue : "default";
  for (size_t i = 0; i < t->n_queues; i++)
    if (!strcmp(t->queues[i], q))
      return t->queues[i];
  if (t->n_queues >= t->max_queues)
    return "other";
  snprintf(t->queues[t->n_queues], sizeof(t->queues[0]), "%s", q);
  return t->queues[t->n_queues++];
}

static void gang_labels(struct gb_timeouts *t, const struct gang *g, const char *out[3]) {
  out[0] = g->is_volcano ? "volcano" : "coscheduling";
  out[1] = queue_label(t, g);
  out[2] = gb_tr_size_class_name(gb_tr_size_class(g->min_member));
}

/* ---- deadlines (mu held) ------------------------------------------------------------ */

/* When g's current wait started: the PodGroup's creation, or the resume of
 * its TrainJob after a requeue when that came later. */
static double wait_start(const struct gang *g) {
  if (!isnan(g->tj_resume_at) && !g->tj_suspended && g->tj_resume_at > g->created)
    return g->tj_resume_at;
  return g->created;
}

/* Puts g's one deadline where its state says, or takes it out. */
static void arm(struct gb_timeouts *t, struct gang *g) {
  double at = NAN;
  enum dl_kind kind = DL_TIMEOUT;
  if (g->tj_suspended) {
    if (g->tj_ours && !isnan(g->tj_resume_at)) {
      at = g->tj_resume_at;
      kind = DL_RESUME;
    }
  } else if (g->has_pg && !g->started && !isnan(g->timeout_s) && !isnan(g->created)) {
    double start = wait_start(g);
    if (!(start == g->fired_for))
      at = start + g->timeout_s;
  }
  if (isnan(at)) {
    gb_deadlines_remove(&t->heap, &g->dl);
    return;
  }
  int was_first = gb_deadlines_peek(&t->heap) == &g->dl;
  g->dl_kind = kind;
  if (gb_deadlines_set(&t->heap, &g->dl, at)) {
    t->st.refused++;
    return;
  }
  /* Wake the timer thread when g is now the earliest, or was. */
  if (was_first || gb_deadlines_peek(&t->heap) == &g->dl)
    pthread_cond_signal(&t->cond);
}

/* Records the measurements of a gang that has just started. */
static void on_started(struct gb_timeouts *t, struct gang *g, int initial, double now) {
  g->started = 1;
  if (initial || g->observed)
    return; /* started before we watched: when is unknown */
  g->observed = 1;
  const char *l[3];
  gang_labels(t, g, l);
  double end = !isnan(g->last_sched) ? g->last_sched : now;
  if (t->o.metrics && !isnan(g->created))
    gb_histogram_observe(t->o.metrics->time_to_schedule, l, fmax(0, end - g->created));
  if (t->assembly && !isnan(g->first_pod) && !isnan(g->last_pod))
    gb_histogram_observe(t->assembly, l, fmax(0, g->last_pod - g->first_pod));
  if (t->gated && !isnan(g->gated_since) && !isnan(g->ungated_at))
    gb_histogram_observe(t->gated, l, fmax(0, g->ungated_at - g->gated_since));
}

static int phase_started(const char *phase) {
  return !strcmp(phase, "Running") || !strcmp(phase, "Completed") ||
         !strcmp(phase, "Finished");
}

static void check_started(struct gb_timeouts *t, struct gang *g, int initial, double now) {
  if (g->started || !g->has_pg)
    return;
  if ((g->min_member > 0 && g->scheduled >= g->min_member) || phase_started(g->phase))
    on_started(t, g, initial, now);
}

/* ---- PodGroups ---------------------------------------------------------------------- */

/* The effective timeout the PodGroup carries, as its scheduler reads it. */
static void pg_timeout(struct gang *g, json_object *pg) {
  g->timeout_s = NAN;
  g->timeout_source = NULL;
  /* gangbridge's own PodGroups carry the policy's effective timeout,
   * unclamped: a coscheduling gang with a 1h policy times out after an
   * hour, although each Permit wait is capped at 15 minutes. */
  const char *own = str_member(member(member(pg, "metadata"), "annotations"),
                               GC_ANN_SCHEDULE_TIMEOUT);
  int64_t own_s;
  if (own && !gb_tr_parse_duration(own, &own_s) && own_s > 0) {
    g->timeout_s = (double)own_s;
    g->timeout_source = GC_ANN_SCHEDULE_TIMEOUT;
    return;
  }
  if (!g->is_volcano) {
    json_object *v = member(member(pg, "spec"), "scheduleTimeoutSeconds");
    if (v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0) {
      /* kube-scheduler caps every Permit wait at 15 minutes. */
      g->timeout_s = fmin(900, (double)json_object_get_int64(v));
      g->timeout_source = "spec.scheduleTimeoutSeconds";
    }
    return;
  }
  static const char *const keys[] = {"volcano.sh/sla-waiting-time", "sla-waiting-time"};
  json_object *ann = member(member(pg, "metadata"), "annotations");
  for (int i = 0; i < 2; i++) {
    const char *s = str_member(ann, keys[i]);
    int64_t secs;
    /* As Volcano: the first annotation that is a duration above 0 wins. */
    if (s && !gb_tr_parse_duration(s, &secs) && secs > 0) {
      g->timeout_s = (double)secs;
      g->timeout_source = keys[i];
      return;
    }
  }
}

/* Volcano's Unschedulable=True condition message (the gang plugin's "n/m
 * tasks in gang unschedulable: ..."), or "". */
static void pg_message(struct gang *g, json_object *pg) {
  g->pg_msg[0] = '\0';
  json_object *cs = member(member(pg, "status"), "conditions");
  if (!cs || !json_object_is_type(cs, json_type_array))
    return;
  for (size_t i = 0; i < json_object_array_length(cs); i++) {
    json_object *c = json_object_array_get_idx(cs, i);
    const char *type = str_member(c, "type"), *status = str_member(c, "status");
    const char *msg = str_member(c, "message");
    if (type && status && msg && !strcmp(type, "Unschedulable") && !strcmp(status, "True"))
      snprintf(g->pg_msg, sizeof(g->pg_msg), "%s", msg);
  }
}

static void pg_update(struct gb_timeouts *t, struct gang *g, json_object *pg, int volcano,
                      int initial, double now) {
  const char *uid = gb_kube_meta_str(pg, "uid");
  if (uid && strncmp(g->uid, uid, sizeof(g->uid) - 1) != 0) {
    /* A PodGroup created again under the same name: a new gang. */
    snprintf(g->uid, sizeof(g->uid), "%s", uid);
    g->started = g->observed = 0;
    g->fired_for = NAN;
  }
  g->has_pg = 1;
  g->is_volcano = volcano;
  g->created = parse_ts(gb_kube_meta_str(pg, "creationTimestamp"));
  json_object *spec = member(pg, "spec"), *mm = member(spec, "minMember");
  g->min_member = mm && json_object_is_type(mm, json_type_int) ? json_object_get_int(mm) : 1;
  const char *q = volcano ? str_member(spec, "queue") : NULL;
  snprintf(g->queue, sizeof(g->queue), "%s", q ? q : "");
  const char *ph = str_member(member(pg, "status"), "phase");
  snprintf(g->phase, sizeof(g->phase), "%s", ph ? ph : "");
  pg_timeout(g, pg);
  pg_message(g, pg);
  (void)queue_label(t, g); /* queues get their label slot in the order they are seen */
  check_started(t, g, initial, now);
  arm(t, g);
}

static void observe_podgroup(struct gb_timeouts *t, const struct gb_informer_change *ch,
                             int volcano, int initial) {
  const char *backend = volcano ? "volcano" : "coscheduling";
  double now = wall_now(), unused;
  if (ch->op == GB_INFORMER_DELETE) {
    gb_tts_forget(t->tts, backend, ch->key);
  } else {
    struct gb_tts_event ev = {backend,
                              ch->key,
                              gb_kube_meta_str(ch->obj, "uid"),
                              str_member(member(ch->obj, "status"), "phase"),
                              initial,
                              parse_ts(gb_kube_meta_str(ch->obj, "creationTimestamp")),
                              now};
    if (gb_tts_update(t->tts, &ev, &unused) < 0)
      gb_log(GB_LOG_WARN, "PodGroup phase not tracked", "podgroup", ch->key, NULL);
  }
  pthread_mutex_lock(&t->mu);
  struct gang *g = gang_get(t, ch->key);
  if (!g) {
    t->st.refused++;
  } else if (ch->op == GB_INFORMER_DELETE) {
    g->has_pg = 0;
    g->uid[0] = '\0';
    arm(t, g);
    gang_gc(t, g);
  } else {
    pg_update(t, g, ch->obj, volcano, initial, now);
  }
  pthread_mutex_unlock(&t->mu);
}

/* ---- pods --------------------------------------------------------------------------- */

/* What one pod contributes to its gang. */
struct pod_view {
  char key[GB_TOA_KEY_MAX + 1]; /* "ns/group" of the PodGroup it is bound to */
  int scheduled, gated, unschedulable;
  double created, scheduled_at;
  const char *message; /* PodScheduled=False message; borrowed from the object */
};

/* Reads pod into v; 0 when the pod is bound to no PodGroup. */
static int pod_view(json_object *pod, struct pod_view *v) {
  memset(v, 0, sizeof(*v));
  json_object *meta = member(pod, "metadata");
  const char *ns = str_member(meta, "namespace");
  const char *group = str_member(member(meta, "annotations"), VOLCANO_GROUP_ANN);
  if (!group)
    group = str_member(member(meta, "labels"), COSCHED_GROUP_LABEL);
  if (!ns || !group || !group[0])
    return 0;
  int n = snprintf(v->key, sizeof(v->key), "%s/%s", ns, group);
  if (n < 0 || (size_t)n >= sizeof(v->key))
    return 0;
  v->created = parse_ts(str_member(meta, "creationTimestamp"));
  v->scheduled_at = NAN;
  json_object *gates = member(member(pod, "spec"), "schedulingGates");
  v->gated = gates && json_object_is_type(gates, json_type_array) &&
             json_object_array_length(gates) > 0;
  json_object *cs = member(member(pod, "status"), "conditions");
  for (size_t i = 0; cs && json_object_is_type(cs, json_type_array) &&
                     i < json_object_array_length(cs);
       i++) {
    json_object *c = json_object_array_get_idx(cs, i);
    const char *type = str_member(c, "type"), *status = str_member(c, "status");
    if (!type || !status || strcmp(type, "PodScheduled") != 0)
      continue;
    if (!strcmp(status, "True")) {
      v->scheduled = 1;
      v->scheduled_at = parse_ts(str_member(c, "lastTransitionTime"));
    } else {
      const char *reason = str_member(c, "reason");
      v->unschedulable = reason && !strcmp(reason, "Unschedulable");
      v->message = str_member(c, "message");
    }
  }
  return 1;
}

/* Adds (sign 1) or takes away (sign -1) what v contributes to its gang. */
static void pod_apply(struct gb_timeouts *t, const struct pod_view *v, int sign, int initial,
                      double now) {
  struct gang *g = gang_get(t, v->key);
  if (!g) {
    t->st.refused++;
    return;
  }
  g->pods += sign;
  g->scheduled += sign * v->scheduled;
  g->unschedulable += sign * v->unschedulable;
  int gated_before = g->gated;
  g->gated += sign * v->gated;
  if (sign > 0) {
    if (!isnan(v->created)) {
      g->first_pod = isnan(g->first_pod) ? v->created : fmin(g->first_pod, v->created);
      g->last_pod = isnan(g->last_pod) ? v->created : fmax(g->last_pod, v->created);
    }
    if (v->scheduled && !isnan(v->scheduled_at))
      g->last_sched = isnan(g->last_sched) ? v->scheduled_at : fmax(g->last_sched, v->scheduled_at);
    if (v->message)
      snprintf(g->pod_msg, sizeof(g->pod_msg), "%s", v->message);
  }
  /* The gated part: from the first gated pod seen to the last gate gone. */
  if (!gated_before && g->gated > 0 && isnan(g->gated_since) && !initial)
    g->gated_since = now;
  if (gated_before > 0 && g->gated <= 0 && !isnan(g->gated_since))
    g->ungated_at = now;
  check_started(t, g, initial, now);
  arm(t, g);
  if (sign < 0)
    gang_gc(t, g);
}

static void observe_pod(struct gb_timeouts *t, const struct gb_informer_change *ch, int initial) {
  struct pod_view now_v, old_v;
  int has_now = ch->op != GB_INFORMER_DELETE && pod_view(ch->obj, &now_v);
  int has_old = 0;
  json_object *old = NULL;
  if (ch->op == GB_INFORMER_DELETE) {
    has_old = pod_view(ch->obj, &old_v);
  } else if (ch->op == GB_INFORMER_UPDATE && ch->old_json) {
    old = json_tokener_parse(ch->old_json);
    has_old = old && pod_view(old, &old_v);
  }
  double now = wall_now();
  pthread_mutex_lock(&t->mu);
  if (has_old)
    pod_apply(t, &old_v, -1, initial, now);
  if (has_now)
    pod_apply(t, &now_v, 1, initial, now);
  pthread_mutex_unlock(&t->mu);
  json_object_put(old);
}

/* ---- TrainJobs ---------------------------------------------------------------------- */

static void observe_trainjob(struct gb_timeouts *t, const struct gb_informer_change *ch) {
  struct gb_requeue_state st = {0, NAN, 0, 0};
  char why[512];
  if (ch->op != GB_INFORMER_DELETE && gb_requeue_state_read(ch->obj, &st, why, sizeof(why))) {
    gb_log(GB_LOG_WARN, "requeue state ignored", "trainjob", ch->key, "error", why, NULL);
    st.ours = 0; /* malformed: never acted on, as if the user owned it */
  }
  pthread_mutex_lock(&t->mu);
  struct gang *g = gang_get(t, ch->key);
  if (!g) {
    t->st.refused++;
  } else if (ch->op == GB_INFORMER_DELETE) {
    g->tj_uid[0] = '\0';
    g->tj_suspended = g->tj_ours = 0;
    g->tj_resume_at = NAN;
    arm(t, g);
    gang_gc(t, g);
  } else {
    const char *uid = gb_kube_meta_str(ch->obj, "uid");
    snprintf(g->tj_uid, sizeof(g->tj_uid), "%s", uid && uid[0] ? uid : "?");
    g->tj_suspended = st.suspended;
    g->tj_ours = st.ours;
    g->tj_resume_at = st.resume_at;
    arm(t, g);
  }
  pthread_mutex_unlock(&t->mu);
}

void gb_timeouts_observe(void *ctx, enum gb_observe_kind kind,
                         const struct gb_informer_change *ch, int initial) {
  struct gb_timeouts *t = ctx;
  switch (kind) {
  case GB_OBSERVE_TRAINJOB: observe_trainjob(t, ch); break;
  case GB_OBSERVE_POD: observe_pod(t, ch, initial); break;
  case GB_OBSERVE_PODGROUP_VOLCANO: observe_podgroup(t, ch, 1, initial); break;
  case GB_OBSERVE_PODGROUP_COSCHEDULING: observe_podgroup(t, ch, 0, initial); break;
  }
}

/* ---- firing ------------------------------------------------------------------------- */

static int leading(struct gb_timeouts *t) {
  return !t->o.is_leader || t->o.is_leader(t->o.leader_ctx);
}

static void split_key(const char *key, char *ns, size_t ns_cap, char *name, size_t name_cap) {
  const char *slash = strchr(key, '/');
  size_t nl = slash ? (size_t)(slash - key) : 0;
  snprintf(ns, ns_cap, "%.*s", (int)nl, key);
  snprintf(name, name_cap, "%s", slash ? slash + 1 : key);
}

/* What the action needs of g (mu held). */
static void snapshot(const struct gang *g, struct gb_toa_gang *s) {
  memset(s, 0, sizeof(*s));
  split_key(g->key, s->ns, sizeof(s->ns), s->name, sizeof(s->name));
  snprintf(s->backend, sizeof(s->backend), "%s", g->is_volcano ? "volcano" : "coscheduling");
  snprintf(s->pg_uid, sizeof(s->pg_uid), "%s", g->uid);
  snprintf(s->tj_uid, sizeof(s->tj_uid), "%s", strcmp(g->tj_uid, "?") ? g->tj_uid : "");
  s->timeout_s = g->timeout_s;
  s->timeout_source = g->timeout_source ? g->timeout_source : "?";
  s->min_member = g->min_member;
  s->pods = g->pods;
  s->gated = g->gated;
  s->scheduled = g->scheduled;
  s->unschedulable = g->unschedulable;
  snprintf(s->phase, sizeof(s->phase), "%s", g->phase);
  snprintf(s->pg_message, sizeof(s->pg_message), "%s", g->pg_msg);
  snprintf(s->pod_message, sizeof(s->pod_message), "%s", g->pod_msg);
}

/* Counts the outcome (mu held). */
static void count(struct gb_timeouts *t, enum dl_kind kind, enum gb_toa_outcome out,
                  const char *const l[3]) {
  const char *act = NULL;
  if (kind == DL_TIMEOUT && out != GB_TOA_RETRY) {
    t->st.fired++;
    if (t->fired)
      gb_counter_inc(t->fired, l);
  }
  switch (out) {
  case GB_TOA_SUSPENDED: t->st.suspended++; act = "suspend"; break;
  case GB_TOA_GAVE_UP: t->st.gave_up++; act = "give_up"; break;
  case GB_TOA_RESUMED: t->st.resumed++; act = "resume"; break;
  case GB_TOA_RETRY: t->st.retries++; break;
  default: break;
  }
  if (act && t->requeues)
    gb_counter_inc(t->requeues, (const char *[]){l[0], l[1], l[2], act});
}

/* Runs the action of one popped gang (called with mu held; drops it around
 * the API calls). */
static void fire(struct gb_timeouts *t, struct gang *g, double now) {
  enum dl_kind kind = g->dl_kind;
  char key[GB_TOA_KEY_MAX + 1], detail[512];
  snprintf(key, sizeof(key), "%s", g->key);
  const char *l[3];
  gang_labels(t, g, l);
  struct gb_toa_gang s;
  snapshot(g, &s);
  double start = wait_start(g);
  if (kind == DL_TIMEOUT)
    g->fired_for = start; /* acted on: not re-armed for this wait */
  pthread_mutex_unlock(&t->mu);
  enum gb_toa_outcome out = kind == DL_TIMEOUT
                                ? gb_toa_timeout(&t->env, &s, now, detail, sizeof(detail))
                                : gb_toa_resume(&t->env, s.ns, s.name, now, detail, sizeof(detail));
  gb_log(out == GB_TOA_RETRY ? GB_LOG_WARN : GB_LOG_INFO,
         kind == DL_TIMEOUT ? "gang timeout" : "requeue backoff over", "gang", key, "outcome",
         detail, NULL);
  pthread_mutex_lock(&t->mu);
  count(t, kind, out, l);
  if (out != GB_TOA_RETRY)
    return;
  g = gang_find(t, key, gb_hash_str(key)); /* it may have gone meanwhile */
  if (!g)
    return;
  if (kind == DL_TIMEOUT && g->fired_for == start)
    g->fired_for = NAN;
  g->dl_kind = kind;
  if (gb_deadlines_set(&t->heap, &g->dl, now + RETRY_S))
    t->st.refused++;
}

size_t gb_timeouts_run_due(struct gb_timeouts *t, double now) {
  size_t n = 0;
  if (!leading(t))
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
    double now = wall_now();
    struct gb_deadline_item *top = gb_deadlines_peek(&t->heap);
    int lead = leading(t);
    if (top && top->at <= now && lead) {
      pthread_mutex_unlock(&t->mu);
      gb_timeouts_run_due(t, now);
      pthread_mutex_lock(&t->mu);
      continue;
    }
    /* A follower looks again twice a second; a leader sleeps until the
     * earliest deadline or until a change or a kick wakes it. */
    double until = !lead ? now + 0.5 : top ? top->at : now + 60;
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
  static const char *const l_act[] = {"backend", "queue", "size", "action"};
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
    rc = gb_metrics_counter(reg, "gangbridge_gang_timeouts_total",
                            "Gang timeouts acted on by this replica, by backend, queue and gang "
                            "size class.",
                            l_gang, 3, &t->fired, d);
  if (!rc)
    rc = gb_metrics_counter(reg, "gangbridge_gang_requeues_total",
                            "Requeue writes (timeouts.action requeue) by backend, queue, size "
                            "class and action (suspend, resume, give_up).",
                            l_act, 4, &t->requeues, d);
  return rc;
}

static void timeouts_env(struct gb_timeouts *t) {
  const struct gb_config *c = t->o.cfg;
  t->env.client = t->o.client;
  t->env.events = t->events;
  t->env.action = c->timeout_action;
  t->env.backoff = (struct gb_backoff){c->requeue_base_delay_s, c->requeue_max_delay_s, 0.1,
                                       c->requeue_max_attempts};
}

int gb_timeouts_new(const struct gb_timeouts_opts *o, struct gb_timeouts **out,
                    struct gc_diags *d) {
  *out = NULL;
  if (!o || !o->cfg)
    return GC_EINVAL;
  struct gb_timeouts *t = calloc(1, sizeof(*t));
  if (!t)
    return GC_ENOMEM;
  t->o = *o;
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cond, NULL); /* CLOCK_REALTIME: deadlines are wall-clock times */
  t->max_gangs = o->cfg->timeout_max_gangs > 0 ? (size_t)o->cfg->timeout_max_gangs : 1000000;
  t->max_queues = o->cfg->timeout_max_queues > 0 ? (size_t)o->cfg->timeout_max_queues : 50;
  gb_deadlines_init(&t->heap, t->max_gangs);
  t->queues = calloc(t->max_queues, sizeof(*t->queues));
  t->tts = gb_tts_new(t->max_gangs);
  if (o->client) {
    struct gb_events_opts eo = {GC_MANAGER_NAME, NULL, o->cfg->event_min_interval_s, 0};
    const char *pod = getenv("POD_NAME");
    if (pod && *pod)
      eo.instance = pod;
    t->events = gb_events_new(o->client, &eo);
  }
  int rc = gb_htab_init(&t->gangs, 4096);
  if (!rc && (!t->queues || !t->tts || (o->client && !t->events)))
    rc = GC_ENOMEM;
  if (!rc && o->reg)
    rc = register_metrics(t, o->reg, d);
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
  free(n);
}

void gb_timeouts_free(struct gb_timeouts *t) {
  if (!t)
    return;
  gb_timeouts_stop(t);
  gb_htab_clear(&t->gangs, free_gang, NULL);
  gb_htab_free(&t->gangs);
  gb_deadlines_destroy(&t->heap);
  gb_tts_free(t->tts);
  gb_events_free(t->events);
  free(t->queues);
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
  for (int b = 0; b < 2; b++) {
    const char *backend = b ? "coscheduling" : "volcano";
    struct gb_tts_phase_count pc[GB_TTS_MAX_PHASES];
    size_t n = gb_tts_phases(t->tts, backend, pc, GB_TTS_MAX_PHASES);
    for (size_t j = 0; j < n; j++)
      gb_gauge_set(m->podgroups, (const char *[]){backend, pc[j].phase}, pc[j].count);
  }
}
