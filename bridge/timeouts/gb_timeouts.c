/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_timeouts: the gang timeout tracker, its informer side (see
 * gb_timeouts.h; gb_timeouts_fire.c runs the deadlines).
 *
 * One record per gang, keyed by "namespace/name" (the PodGroup, its
 * TrainJob and the pods' group binding share the name).  Every change
 * re-arms the gang's one deadline: facts to write (the leader records them
 * at once), the resume time while gangbridge holds the TrainJob suspended,
 * the end of a claimed requeue that was not finished, or the timeout (wait
 * start + timeout) while the gang has not reached what ends its wait and
 * its TrainJob is not suspended.  The wait's start and whether the gang
 * started come from facts that survive a restart and that a tenant cannot
 * write: the PodGroup (its creation, its status, gangbridge's annotations on
 * it) and the TrainJob's status, never the TrainJob's annotations.
 */
#define _GNU_SOURCE /* random */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_kobj.h"
#include "gb_log.h"
#include "gb_requeue.h"
#include "gb_timeout_report.h"
#include "gb_timeouts_int.h"
#include "gc_backend.h"
#include "gc_diag.h"
#include "gc_duration.h"
#include "gc_policy.h"
#include "gb_timeouts_test.h"

double gb_timeouts_wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double parse_ts(const char *s) {
  int64_t t;
  return s && !gb_timeout_report_parse_time(s, &t) ? (double)t : NAN;
}

/* The lastTransitionTime of condition `type` with status `status`, or NAN. */
static double condition_time(json_object *obj, const char *type, const char *status) {
  json_object *c = gb_kobj_condition(obj, type);
  const char *st = gb_kobj_str(c, "status");
  if (!st || strcmp(st, status))
    return NAN;
  double t = parse_ts(gb_kobj_str(c, "lastTransitionTime"));
  return isnan(t) ? 0 : t; /* present without a time: known, at the epoch */
}

static double nmax(double a, double b) { return isnan(a) ? b : isnan(b) ? a : fmax(a, b); }

/* ---- the gang table (mu held) ------------------------------------------------------ */

static struct gang *find_hashed(struct gb_timeouts *t, const char *key, uint64_t h) {
  for (struct gb_hnode *n = gb_htab_chain(&t->gangs, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct gang *)n)->key, key))
      return (struct gang *)n;
  return NULL;
}

struct gang *gb_timeouts_find(struct gb_timeouts *t, const char *key) {
  return find_hashed(t, key, gb_hash_str(key));
}

/* The gang of key, created when missing (NULL when full or out of memory). */
static struct gang *gang_get(struct gb_timeouts *t, const char *key) {
  uint64_t h = gb_hash_str(key);
  struct gang *g = find_hashed(t, key, h);
  if (g || t->gangs.n >= t->max_gangs)
    return g;
  size_t kl = strlen(key);
  g = calloc(1, sizeof(*g) + kl + 1);
  if (!g)
    return NULL;
  memcpy(g->key, key, kl + 1);
  g->node.hash = h;
  gb_deadline_item_init(&g->dl);
  gb_gangfacts_clear(&g->facts);
  g->timeout_s = g->tj_resume_at = g->fired_for = g->completed_for = g->not_before = NAN;
  g->resume_idle = NAN;
  g->tj_resumed_cond = g->suspended_seen = g->resumed_seen = NAN;
  g->created = g->first_pod = g->last_pod = g->last_sched = g->last_ready = NAN;
  g->gated_since = g->ungated_at = NAN;
  g->be = g->ver = -1;
  gb_htab_insert(&t->gangs, &g->node);
  return g;
}

/* Drops a gang that nothing refers to any more. */
static void gang_gc(struct gb_timeouts *t, struct gang *g) {
  if (g->has_pg || g->pods > 0 || g->tj_uid[0])
    return;
  gb_deadlines_remove(&t->heap, &g->dl);
  gb_htab_remove(&t->gangs, &g->node);
  free(g->note);
  free(g);
}

/* ---- labels ------------------------------------------------------------------------- */

void gb_timeouts_labels(struct gb_timeouts *t, const struct gang *g, const char *out[3]) {
  if (!g->labels_known) {
    out[0] = out[1] = out[2] = "unknown";
    return;
  }
  const struct gc_backend *be = gb_timeouts_gang_backend(g);
  out[0] = gc_backend_name(be);
  out[1] = !be || !(be->caps & GC_BCAP_QUEUE)
               ? "none"
               : gb_qlabels_label(&t->queues, g->queue[0] ? g->queue : be->queue.default_name);
  out[2] = gb_timeout_report_size_class_name(gb_timeout_report_size_class(g->min_member));
}

/* Counts g's queue as in use (or not): the deterministic label set. */
static void queue_count(struct gb_timeouts *t, struct gang *g, int in_use) {
  if (g->queue_counted == in_use)
    return;
  const struct gc_backend *be = gb_timeouts_gang_backend(g);
  const char *dflt = be && be->queue.default_name ? be->queue.default_name : "default";
  if (gb_qlabels_count(&t->queues, g->queue[0] ? g->queue : dflt, in_use ? 1 : -1))
    return; /* too many names: labelled as if not in use */
  g->queue_counted = in_use;
}

/* ---- deadlines (mu held) ------------------------------------------------------------ */

double gb_timeouts_wait_start(const struct gang *g) {
  /* A resume, by gangbridge (its fact on the PodGroup) or by anyone (the
   * TrainJob's Suspended=False condition, or the transition seen here),
   * starts a new wait.  The TrainJob's annotations do not count. */
  double s = nmax(g->created, g->facts.resumed_at);
  s = nmax(s, g->tj_resumed_cond);
  return nmax(s, g->resumed_seen);
}

/* g reached what ends its wait (timeouts.until), now or once before. */
static int gb_timeouts_done(const struct gb_timeouts *t, const struct gang *g) {
  if (t->o.options->until_ready)
    return g->ready_reached || !isnan(g->facts.ready_at);
  return g->started || !isnan(g->facts.started_at) || !isnan(g->facts.ready_at);
}

/* Queues a RequeueStateIgnored note (once per distinct text). */
static void note(struct gang *g, const char *why) {
  uint64_t h = gb_hash_str(why);
  if (h == g->noted || (g->note && !strcmp(g->note, why)))
    return;
  free(g->note);
  g->note = strdup(why);
  if (g->note)
    g->pending |= W_NOTE;
}

double gb_timeouts_resume_time(struct gb_timeouts *t, struct gang *g, double now) {
  if (!g->tj_suspended || !g->tj_ours)
    return NAN;
  struct gb_requeue_state st = {g->tj_attempt, g->tj_resume_at, 1, 1}, use;
  /* When gangbridge acted: its claim on the PodGroup.  Without one (not
   * gangbridge's PodGroup), only an upper bound from when this process
   * first saw the TrainJob suspended by gangbridge applies. */
  double since = g->pg_ours ? g->facts.timed_out_at : NAN;
  double ref = isnan(since) && !isnan(g->suspended_seen) ? g->suspended_seen : now;
  char why[512];
  if (gb_requeue_validate(&st, &t->env.backoff, since, ref, &use, why, sizeof(why)))
    note(g, why);
  return use.resume_at;
}

/* The due time and kind of g's one deadline, or NAN. */
static double next_due(struct gb_timeouts *t, struct gang *g, double now, enum dl_kind *kind) {
  *kind = DL_TIMEOUT;
  /* First, as it may queue a note to report. */
  double resume = g->tj_suspended && t->env.action == GB_TIMEOUT_REQUEUE
                      ? gb_timeouts_resume_time(t, g, now)
                      : NAN;
  if (g->pending) {
    *kind = DL_WRITE;
    return now;
  }
  if (g->tj_suspended) {
    *kind = DL_RESUME;
    return resume == g->resume_idle ? NAN : resume; /* nothing to do there until it changes */
  }
  if (!g->has_pg || gb_timeouts_done(t, g) || isnan(g->timeout_s) || isnan(g->created))
    return NAN;
  double ws = gb_timeouts_wait_start(g);
  if (!isnan(g->facts.timed_out_at) && g->facts.timed_out_at >= floor(ws)) {
    /* Claimed: a requeue that was not finished (the claimer crashed or its
     * write failed) is finished; nothing else is acted on twice. */
    *kind = DL_COMPLETE;
    return t->env.action == GB_TIMEOUT_REQUEUE && !(g->completed_for == ws) ? now : NAN;
  }
  return g->fired_for == ws ? NAN : ws + g->timeout_s;
}

void gb_timeouts_arm(struct gb_timeouts *t, struct gang *g, double now) {
  enum dl_kind kind;
  double at = next_due(t, g, now, &kind);
  if (!isnan(at) && !isnan(g->not_before) && at < g->not_before)
    at = g->not_before;
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

/* ---- reaching the quorum (mu held) -------------------------------------------------- */

/* Records the measurements of a gang that has just started. */
static void on_started(struct gb_timeouts *t, struct gang *g, int initial, double now) {
  g->started = 1;
  if (initial || g->observed)
    return; /* started before we watched: when is unknown */
  g->observed = 1;
  const char *l[3];
  gb_timeouts_labels(t, g, l);
  double end = !isnan(g->last_sched) ? g->last_sched : now;
  if (t->o.metrics && !isnan(g->created))
    gb_metric_histogram_observe(t->o.metrics->time_to_schedule, l, fmax(0, end - g->created));
  if (t->assembly && !isnan(g->first_pod) && !isnan(g->last_pod))
    gb_metric_histogram_observe(t->assembly, l, fmax(0, g->last_pod - g->first_pod));
  if (t->gated && !isnan(g->gated_since) && !isnan(g->ungated_at))
    gb_metric_histogram_observe(t->gated, l, fmax(0, g->ungated_at - g->gated_since));
}

static void on_ready(struct gb_timeouts *t, struct gang *g, int initial, double now) {
  g->ready_reached = 1;
  if (initial || g->observed_ready)
    return;
  g->observed_ready = 1;
  const char *l[3];
  gb_timeouts_labels(t, g, l);
  double end = !isnan(g->last_ready) ? g->last_ready : now;
  if (t->to_ready && !isnan(g->created))
    gb_metric_histogram_observe(t->to_ready, l, fmax(0, end - gb_timeouts_wait_start(g)));
}

/* g's scheduled (ready 0) or Ready (ready 1) pods that count toward its
 * quorum: those of sub-groups the group object marks as needing none
 * (KAI's initializers, minMember 0) do not. */
static int counted(const struct gang *g, int ready) {
  int n = ready ? g->ready : g->scheduled;
  for (unsigned i = 0; i < g->n_sub; i++)
    if (g->uncounted & (1u << i))
      n -= ready ? g->sub[i].ready : g->sub[i].scheduled;
  return n;
}

/* Notices the quorums and queues their facts for the leader to record:
 * the moment the gang first reaches them, once, on its own PodGroup. */
static void check_started(struct gb_timeouts *t, struct gang *g, int initial, double now) {
  if (!g->has_pg)
    return;
  int quorum = g->min_member > 0 && counted(g, 0) >= g->min_member;
  if (!g->started && (quorum || gc_backend_phase_started(gb_timeouts_gang_backend(g), g->phase) ||
                      g->pg_sched_cond))
    on_started(t, g, initial, now);
  if (!g->ready_reached && g->min_member > 0 && counted(g, 1) >= g->min_member)
    on_ready(t, g, initial, now);
  if (!g->pg_ours)
    return;
  if (g->started && isnan(g->facts.started_at) && !(g->pending & W_STARTED)) {
    g->write_started = !isnan(g->last_sched) && quorum ? g->last_sched : now;
    g->pending |= W_STARTED;
  }
  if (g->ready_reached && isnan(g->facts.ready_at) && !(g->pending & W_READY)) {
    g->write_ready = !isnan(g->last_ready) ? g->last_ready : now;
    g->pending |= W_READY;
  }
}

/* ---- PodGroups ---------------------------------------------------------------------- */

/* The effective timeout the PodGroup carries, as its scheduler reads it,
 * within config timeouts.max (for PodGroups gangbridge did not render). */
static void pg_timeout(struct gb_timeouts *t, struct gang *g, json_object *pg) {
  g->timeout_s = NAN;
  g->timeout_source = NULL;
  json_object *ann = gb_kobj_dig(pg, "metadata", "annotations", NULL);
  /* gangbridge's own PodGroups carry the policy's effective timeout,
   * unclamped: a coscheduling gang with a 1h policy times out after an
   * hour, although each Permit wait is capped at 15 minutes. */
  const char *own = gb_kobj_str(ann, GC_ANN_SCHEDULE_TIMEOUT);
  const struct gc_backend_timeout *bt = &gb_timeouts_gang_backend(g)->timeout;
  int64_t secs = 0;
  if (own && !gc_duration_parse_seconds(own, &secs, NULL, 0) && secs > 0) {
    g->timeout_s = (double)secs;
    g->timeout_source = GC_ANN_SCHEDULE_TIMEOUT;
  } else if (bt->spec_seconds) {
    json_object *v = gb_kobj_dig(pg, "spec", bt->spec_seconds, NULL);
    if (v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0) {
      /* The scheduler caps every wait at its maximum. */
      double s = (double)json_object_get_int64(v);
      g->timeout_s = bt->max_seconds > 0 ? fmin((double)bt->max_seconds, s) : s;
      g->timeout_source = bt->spec_seconds;
    }
  } else {
    for (int i = 0; i < GC_BACKEND_MAX_KEYS && bt->annotations[i] && isnan(g->timeout_s); i++) {
      const char *s = gb_kobj_str(ann, bt->annotations[i]);
      /* As the scheduler: the first annotation that is a duration above 0 wins. */
      if (s && !gc_duration_parse_seconds(s, &secs, NULL, 0) && secs > 0) {
        g->timeout_s = (double)secs;
        g->timeout_source = bt->annotations[i];
      }
    }
  }
  int64_t max_s = 0;
  const char *max = t->o.cfg->timeout_max;
  if (!isnan(g->timeout_s) && max && *max && !gc_duration_parse_seconds(max, &max_s, NULL, 0) && max_s > 0 &&
      g->timeout_s > (double)max_s) {
    g->timeout_s = (double)max_s;
    g->timeout_source = "config timeouts.max";
  }
}

/* The backend's (or its version's) scheduled condition. */
static const char *sched_condition(const struct gang *g) {
  const struct gc_backend_version *v = gb_timeouts_gang_version(g);
  return v ? v->scheduled_condition : gb_timeouts_gang_backend(g)->status.scheduled_condition;
}

/* The backend's unschedulable condition's message when True (Volcano's gang
 * plugin: "n/m tasks in gang unschedulable: ..."), or, when that is the
 * scheduled condition itself (the Workload API's PodGroup), its message
 * while False; or "". */
static void pg_message(struct gang *g, json_object *pg) {
  g->pg_msg[0] = '\0';
  const struct gc_backend_version *v = gb_timeouts_gang_version(g);
  const char *cond = v ? v->unschedulable_condition
                       : gb_timeouts_gang_backend(g)->status.unschedulable_condition;
  const char *sc = sched_condition(g);
  const char *want = cond && sc && !strcmp(cond, sc) ? "False" : "True";
  json_object *cs = gb_kobj_dig(pg, "status", "conditions", NULL);
  if (!cond || !cs || !json_object_is_type(cs, json_type_array))
    return;
  for (size_t i = 0; i < json_object_array_length(cs); i++) {
    json_object *c = json_object_array_get_idx(cs, i);
    const char *type = gb_kobj_str(c, "type"), *status = gb_kobj_str(c, "status");
    const char *msg = gb_kobj_str(c, "message");
    if (type && status && msg && !strcmp(type, cond) && !strcmp(status, want))
      snprintf(g->pg_msg, sizeof(g->pg_msg), "%s", msg);
  }
}

/* The hash of a sub-group name (0 is kept for "none"). */
static uint32_t sub_hash(const char *name) {
  uint32_t h = (uint32_t)gb_hash_str(name);
  return h ? h : 1;
}

/* The slot of sub-group hash h in g, added when missing and there is room;
 * -1: none (past GB_TIMEOUTS_SUBGROUPS, counted with the rest). */
static int sub_slot(struct gang *g, uint32_t h) {
  for (unsigned i = 0; i < g->n_sub; i++)
    if (g->sub[i].hash == h)
      return (int)i;
  if (g->n_sub >= GB_TIMEOUTS_SUBGROUPS)
    return -1;
  g->sub[g->n_sub] = (struct gang_subgroup){h, 0, 0};
  return g->n_sub++;
}

/* Which sub-groups need no pods: the group object's sub-groups (the
 * backend's subgroups_field) whose minMember is 0. */
static void pg_subgroups(struct gang *g, const struct gc_backend *be, json_object *spec) {
  g->uncounted = 0;
  json_object *subs = be->subgroups_field ? gb_kobj_arr(spec, be->subgroups_field) : NULL;
  for (size_t i = 0; i < gb_kobj_len(subs); i++) {
    json_object *sg = gb_kobj_at(subs, i), *mm = gb_kobj_get(sg, be->min_member_field);
    const char *name = gb_kobj_str(sg, "name");
    if (!name || !mm || !json_object_is_type(mm, json_type_int) || json_object_get_int64(mm) != 0)
      continue;
    int slot = sub_slot(g, sub_hash(name));
    if (slot >= 0)
      g->uncounted |= (uint8_t)(1u << slot);
  }
}

/* The durable facts, merged with what this process wrote and has not
 * seen come back yet (a fact is never forgotten by a stale update). */
static void pg_facts(struct gang *g, json_object *pg) {
  struct gb_gangfacts f;
  char why[256];
  if (gb_gangfacts_read(pg, &f, why, sizeof(why)))
    gb_log(GB_LOG_WARN, "PodGroup fact ignored", "error", why, NULL);
  g->facts.started_at = nmax(f.started_at, g->facts.started_at);
  g->facts.ready_at = nmax(f.ready_at, g->facts.ready_at);
  g->facts.timed_out_at = nmax(f.timed_out_at, g->facts.timed_out_at);
  g->facts.resumed_at = nmax(f.resumed_at, g->facts.resumed_at);
  /* What another replica recorded meanwhile need not be written here. */
  if (!isnan(g->facts.started_at))
    g->pending &= ~W_STARTED;
  if (!isnan(g->facts.ready_at))
    g->pending &= ~W_READY;
  if (!isnan(g->facts.resumed_at) && g->facts.resumed_at >= floor(g->write_resumed))
    g->pending &= ~W_RESUMED;
}

static void pg_update(struct gb_timeouts *t, struct gang *g, json_object *pg,
                      const struct gc_backend *be, const struct gc_backend_version *ver,
                      int initial, double now) {
  const char *uid = gb_kobj_meta(pg, "uid");
  if (uid && strncmp(g->uid, uid, sizeof(g->uid) - 1) != 0) {
    /* A PodGroup created again under the same name: a new gang. */
    snprintf(g->uid, sizeof(g->uid), "%s", uid);
    g->started = g->observed = g->ready_reached = g->observed_ready = 0;
    g->fired_for = g->completed_for = NAN;
    g->pending &= ~(W_STARTED | W_READY | W_RESUMED);
    gb_gangfacts_clear(&g->facts);
  }
  queue_count(t, g, 0);
  g->has_pg = g->labels_known = 1;
  g->be = gc_backend_index(be);
  g->ver = ver ? (int)(ver - be->versions) : -1;
  g->pg_ours = gb_gangfacts_ours(pg, NULL);
  const char *rv = gb_kobj_meta(pg, "resourceVersion");
  snprintf(g->rv, sizeof(g->rv), "%s", rv ? rv : "");
  g->created = parse_ts(gb_kobj_meta(pg, "creationTimestamp"));
  json_object *spec = gb_kobj_get(pg, "spec"), *mm = gb_kobj_path(spec, be->min_member_field);
  g->min_member = mm && json_object_is_type(mm, json_type_int) ? json_object_get_int(mm) : 1;
  /* A spec that splits the count over sub-groups: gangbridge's annotation. */
  const char *split = mm ? NULL : gb_kobj_str(gb_kobj_dig(pg, "metadata", "annotations", NULL),
                                               GC_ANN_MIN_MEMBER);
  char *end = NULL;
  long long n = split ? strtoll(split, &end, 10) : 0;
  if (split && end && end != split && !*end && n > 0 && n <= INT32_MAX)
    g->min_member = (int)n;
  int queues = (be->caps & GC_BCAP_QUEUE) && be->queue.field;
  const char *q = queues ? gb_kobj_str(spec, be->queue.field) : NULL;
  snprintf(g->queue, sizeof(g->queue), "%s", q ? q : "");
  if (queues)
    queue_count(t, g, 1);
  if (be->caps & GC_BCAP_ELASTIC_MEMBERS)
    pg_subgroups(g, be, spec);
  const char *ph = gb_kobj_str(gb_kobj_get(pg, "status"), "phase");
  snprintf(g->phase, sizeof(g->phase), "%s", ph ? ph : "");
  /* A scheduled condition (Volcano's Scheduled=True) stays after the pods
   * are replaced. */
  const char *sc = sched_condition(g);
  g->pg_sched_cond = sc && !isnan(condition_time(pg, sc, "True"));
  pg_timeout(t, g, pg);
  pg_message(g, pg);
  pg_facts(g, pg);
  check_started(t, g, initial, now);
  gb_timeouts_arm(t, g, now);
}

/* The gang key of a backend's status object: a version's object named as
 * the TrainJob with its group_suffix ("ns/name-gang" is gang "ns/name").
 * Returns 0, or -1 when the object is not one the tracker follows. */
static int tracked_key(const struct gb_informer_change *ch, const struct gc_backend *be,
                       const struct gc_backend_version **ver, char *key, size_t cap) {
  *ver = NULL;
  if (snprintf(key, cap, "%s", ch->key) >= (int)cap)
    return -1;
  if (!be->n_versions)
    return 0;
  *ver = gc_backend_version_tracked(be, gb_kobj_str(ch->obj, "apiVersion"),
                                    gb_kobj_str(ch->obj, "kind"));
  if (!*ver)
    return -1;
  const char *suffix = (*ver)->status_kind ? (*ver)->group_suffix : NULL;
  size_t kl = strlen(key), sl = suffix ? strlen(suffix) : 0;
  if (!sl)
    return 0;
  if (kl <= sl || strcmp(key + kl - sl, suffix) || key[kl - sl - 1] == '/')
    return -1; /* not named as gangbridge names it */
  key[kl - sl] = '\0';
  return 0;
}

static void observe_podgroup(struct gb_timeouts *t, const struct gb_informer_change *ch,
                             const struct gc_backend *be, int initial) {
  const char *backend = be->name;
  double now = gb_timeouts_wall_now(), unused;
  const struct gc_backend_version *ver;
  char key[GB_TOA_KEY_MAX + 1];
  if (tracked_key(ch, be, &ver, key, sizeof(key)))
    return;
  if (ch->op == GB_INFORMER_DELETE) {
    gb_tts_forget(t->tts, backend, key);
  } else {
    struct gb_tts_event ev = {backend,
                              key,
                              gb_kobj_meta(ch->obj, "uid"),
                              gb_kobj_str(gb_kobj_get(ch->obj, "status"), "phase"),
                              initial,
                              parse_ts(gb_kobj_meta(ch->obj, "creationTimestamp")),
                              now};
    if (gb_tts_update(t->tts, &ev, &unused) < 0)
      gb_log(GB_LOG_WARN, "PodGroup phase not tracked", "podgroup", key, NULL);
  }
  pthread_mutex_lock(&t->mu);
  struct gang *g = gang_get(t, key);
  if (!g) {
    t->st.refused++;
  } else if (ch->op == GB_INFORMER_DELETE) {
    queue_count(t, g, 0);
    g->has_pg = g->pg_ours = 0;
    g->uid[0] = '\0';
    g->pending &= ~(W_STARTED | W_READY | W_RESUMED);
    gb_timeouts_arm(t, g, now);
    gang_gc(t, g);
  } else {
    pg_update(t, g, ch->obj, be, ver, initial, now);
  }
  pthread_mutex_unlock(&t->mu);
}

/* ---- pods --------------------------------------------------------------------------- */

/* What one pod contributes to its gang. */
struct pod_view {
  char key[GB_TOA_KEY_MAX + 1]; /* "ns/group" of the PodGroup it is bound to */
  uint32_t sub;                 /* its sub-group's sub_hash, 0: none */
  int scheduled, gated, unschedulable, ready;
  double created, scheduled_at, ready_at;
  const char *message; /* PodScheduled=False message; borrowed from the object */
};

static void pod_conditions(json_object *pod, struct pod_view *v) {
  json_object *cs = gb_kobj_dig(pod, "status", "conditions", NULL);
  for (size_t i = 0;
       cs && json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++) {
    json_object *c = json_object_array_get_idx(cs, i);
    const char *type = gb_kobj_str(c, "type"), *status = gb_kobj_str(c, "status");
    if (!type || !status)
      continue;
    if (!strcmp(type, "Ready")) {
      v->ready = !strcmp(status, "True");
      v->ready_at = v->ready ? parse_ts(gb_kobj_str(c, "lastTransitionTime")) : NAN;
    } else if (!strcmp(type, "PodScheduled") && !strcmp(status, "True")) {
      v->scheduled = 1;
      v->scheduled_at = parse_ts(gb_kobj_str(c, "lastTransitionTime"));
    } else if (!strcmp(type, "PodScheduled")) {
      const char *reason = gb_kobj_str(c, "reason");
      v->unschedulable = reason && !strcmp(reason, "Unschedulable");
      v->message = gb_kobj_str(c, "message");
    }
  }
}

/* The value of join j on a pod (its metadata and spec), or NULL. */
static const char *join_value(json_object *meta, json_object *spec,
                              const struct gc_backend_join *j) {
  switch (j ? j->at : GC_JOIN_NONE) {
  case GC_JOIN_LABEL: return gb_kobj_str(gb_kobj_get(meta, "labels"), j->key);
  case GC_JOIN_ANNOTATION: return gb_kobj_str(gb_kobj_get(meta, "annotations"), j->key);
  case GC_JOIN_SPEC_FIELD: {
    json_object *v = gb_kobj_path(spec, j->key);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
  }
  default: return NULL;
  }
}

/* The gang a pod joins by a pod spec field of a backend version (the
 * upstream Workload API): the named PodGroup without the version's
 * group_suffix, or the named Workload (whose template must be the gang's)
 * into out; 0 when it joins none. */
static int pod_spec_gang(json_object *meta, json_object *spec, char *out, size_t cap) {
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    for (size_t k = 0; k < b->n_versions; k++) {
      const struct gc_backend_version *v = &b->versions[k];
      const struct gc_backend_join *grp = NULL, *par = NULL, *tpl = NULL;
      for (size_t m = 0; m < v->n_joins; m++) {
        const struct gc_backend_join *j = &v->joins[m];
        if (j->at != GC_JOIN_SPEC_FIELD)
          continue;
        grp = j->value == GC_JOIN_GROUP ? j : grp;
        par = j->value == GC_JOIN_PARENT ? j : par;
        tpl = j->value == GC_JOIN_TEMPLATE ? j : tpl;
      }
      const char *name = join_value(meta, spec, grp), *suffix = v->group_suffix;
      if (name && suffix) {
        size_t nl = strlen(name), sl = strlen(suffix);
        if (nl > sl && !strcmp(name + nl - sl, suffix))
          return snprintf(out, cap, "%.*s", (int)(nl - sl), name) < (int)cap;
      } else if (name) {
        return snprintf(out, cap, "%s", name) < (int)cap;
      }
      const char *parent = join_value(meta, spec, par), *template = join_value(meta, spec, tpl);
      if (parent && (!tpl || (template && v->gang_template && !strcmp(template, v->gang_template))))
        return snprintf(out, cap, "%s", parent) < (int)cap;
    }
  }
  return 0;
}

/* The group a pod joins by any backend's written label or annotation
 * (annotations first), or NULL; *sub: the hash of its sub-group when that
 * backend binds pods to sub-groups, else 0. */
static const char *pod_group(json_object *meta, uint32_t *sub) {
  static const enum gc_join_at order[] = {GC_JOIN_ANNOTATION, GC_JOIN_LABEL};
  *sub = 0;
  for (size_t o = 0; o < 2; o++) {
    json_object *map = gb_kobj_get(meta, order[o] == GC_JOIN_LABEL ? "labels" : "annotations");
    for (size_t i = 0; map && i < gc_backend_count(); i++) {
      const struct gc_backend *b = gc_backend_at(i);
      const struct gc_backend_join *j = gc_backend_join_of(b, GC_JOIN_GROUP);
      const char *group = j && j->at == order[o] ? gb_kobj_str(map, j->key) : NULL;
      if (!group)
        continue;
      const char *sg = join_value(meta, NULL, gc_backend_join_of(b, GC_JOIN_SUBGROUP));
      *sub = sg && sg[0] ? sub_hash(sg) : 0;
      return group;
    }
  }
  return NULL;
}

/* Reads pod into v; 0 when the pod is bound to no PodGroup. */
static int pod_view(json_object *pod, struct pod_view *v) {
  memset(v, 0, sizeof(*v));
  json_object *meta = gb_kobj_get(pod, "metadata");
  const char *ns = gb_kobj_str(meta, "namespace");
  const char *group = pod_group(meta, &v->sub);
  char spec_gang[GB_TOA_KEY_MAX + 1];
  if (!group && pod_spec_gang(meta, gb_kobj_get(pod, "spec"), spec_gang, sizeof(spec_gang)))
    group = spec_gang;
  if (!ns || !group || !group[0])
    return 0;
  int n = snprintf(v->key, sizeof(v->key), "%s/%s", ns, group);
  if (n < 0 || (size_t)n >= sizeof(v->key))
    return 0;
  v->created = parse_ts(gb_kobj_str(meta, "creationTimestamp"));
  v->scheduled_at = v->ready_at = NAN;
  json_object *gates = gb_kobj_dig(pod, "spec", "schedulingGates", NULL);
  v->gated = gates && json_object_is_type(gates, json_type_array) &&
             json_object_array_length(gates) > 0;
  pod_conditions(pod, v);
  return 1;
}

static void pod_times(struct gang *g, const struct pod_view *v) {
  if (!isnan(v->created)) {
    g->first_pod = isnan(g->first_pod) ? v->created : fmin(g->first_pod, v->created);
    g->last_pod = isnan(g->last_pod) ? v->created : fmax(g->last_pod, v->created);
  }
  if (v->scheduled && !isnan(v->scheduled_at))
    g->last_sched = nmax(g->last_sched, v->scheduled_at);
  if (v->ready && !isnan(v->ready_at))
    g->last_ready = nmax(g->last_ready, v->ready_at);
  if (v->message)
    snprintf(g->pod_msg, sizeof(g->pod_msg), "%s", v->message);
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
  g->ready += sign * v->ready;
  int slot = v->sub ? sub_slot(g, v->sub) : -1;
  if (slot >= 0) {
    g->sub[slot].scheduled += sign * v->scheduled;
    g->sub[slot].ready += sign * v->ready;
  }
  int gated_before = g->gated;
  g->gated += sign * v->gated;
  if (sign > 0)
    pod_times(g, v);
  /* The gated part: from the first gated pod seen to the last gate gone. */
  if (!gated_before && g->gated > 0 && isnan(g->gated_since) && !initial)
    g->gated_since = now;
  if (gated_before > 0 && g->gated <= 0 && !isnan(g->gated_since))
    g->ungated_at = now;
  check_started(t, g, initial, now);
  gb_timeouts_arm(t, g, now);
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
  double now = gb_timeouts_wall_now();
  pthread_mutex_lock(&t->mu);
  if (has_old)
    pod_apply(t, &old_v, -1, initial, now);
  if (has_now)
    pod_apply(t, &now_v, 1, initial, now);
  pthread_mutex_unlock(&t->mu);
  json_object_put(old);
}

/* ---- TrainJobs ---------------------------------------------------------------------- */

/* A TrainJob update: its suspension, requeue state and Trainer's record of
 * its last resume.  A resume seen here (by gangbridge or by anyone) starts
 * a new wait, which the leader records on the PodGroup. */
static void tj_update(struct gb_timeouts *t, struct gang *g, json_object *tj,
                      const struct gb_requeue_state *st, int initial, double now) {
  const char *uid = gb_kobj_meta(tj, "uid");
  int known = g->tj_uid[0] != '\0';
  snprintf(g->tj_uid, sizeof(g->tj_uid), "%s", uid && uid[0] ? uid : "?");
  if (st->suspended && (!g->tj_suspended || isnan(g->suspended_seen)))
    g->suspended_seen = now;
  if (known && !initial && g->tj_suspended && !st->suspended &&
      (isnan(g->facts.resumed_at) || g->facts.resumed_at < floor(g->suspended_seen))) {
    g->resumed_seen = now;
    /* Recorded only where a deadline depends on it. */
    if (g->pg_ours && g->has_pg && !isnan(g->timeout_s) && !gb_timeouts_done(t, g)) {
      g->write_resumed = now;
      g->pending |= W_RESUMED;
    }
  }
  g->tj_suspended = st->suspended;
  g->tj_ours = st->ours;
  g->resume_idle = NAN;
  g->tj_attempt = st->attempt;
  g->tj_resume_at = st->resume_at;
  g->tj_resumed_cond = condition_time(tj, "Suspended", "False");
  /* What a tenant wrote that gangbridge does not believe is said once. */
  struct gb_requeue_state use;
  char why[512];
  if (!st->suspended && gb_requeue_validate(st, &t->env.backoff, NAN, now, &use, why, sizeof(why)))
    note(g, why);
}

static void observe_trainjob(struct gb_timeouts *t, const struct gb_informer_change *ch,
                             int initial) {
  struct gb_requeue_state st = {0, NAN, 0, 0};
  char why[512];
  int bad = ch->op != GB_INFORMER_DELETE && gb_requeue_state_read(ch->obj, &st, why, sizeof(why));
  if (bad) {
    gb_log(GB_LOG_WARN, "requeue state ignored", "trainjob", ch->key, "error", why, NULL);
    st.ours = 0; /* malformed: never resumed, as if the user owned it */
  }
  double now = gb_timeouts_wall_now();
  pthread_mutex_lock(&t->mu);
  struct gang *g = gang_get(t, ch->key);
  if (!g) {
    t->st.refused++;
  } else if (ch->op == GB_INFORMER_DELETE) {
    g->tj_uid[0] = '\0';
    g->tj_suspended = g->tj_ours = 0;
    g->tj_resume_at = g->tj_resumed_cond = g->suspended_seen = NAN;
    gb_timeouts_arm(t, g, now);
    gang_gc(t, g);
  } else {
    tj_update(t, g, ch->obj, &st, initial, now);
    if (bad)
      note(g, why);
    gb_timeouts_arm(t, g, now);
  }
  pthread_mutex_unlock(&t->mu);
}

void gb_timeouts_observe(struct gb_timeouts *t, enum gb_observe_kind kind,
                         const struct gc_backend *backend, const struct gb_informer_change *ch) {
  int initial = ch->initial;
  switch (kind) {
  case GB_OBSERVE_TRAINJOB: observe_trainjob(t, ch, initial); break;
  case GB_OBSERVE_POD: observe_pod(t, ch, initial); break;
  case GB_OBSERVE_PODGROUP:
    if (gc_backend_index(backend) >= 0)
      observe_podgroup(t, ch, backend, initial);
    break;
  }
}

/* ---- the tracker's informer handlers ------------------------------------------------ */

/* Adds {"spec", first step of the dotted key} to t's pod keep paths, once. */
static void keep_spec_field(struct gb_timeouts *t, size_t *n, size_t *n_steps, const char *key) {
  size_t len = strcspn(key, ".");
  for (size_t i = 0; i < *n_steps; i++)
    if (strlen(t->keep_step[i]) == len && !strncmp(t->keep_step[i], key, len))
      return;
  if (*n_steps >= sizeof(t->keep_step) / sizeof(t->keep_step[0]) ||
      len >= sizeof(t->keep_step[0]) || *n >= sizeof(t->pod_keep) / sizeof(t->pod_keep[0]))
    return;
  char *step = t->keep_step[(*n_steps)++];
  memcpy(step, key, len);
  step[len] = '\0';
  t->pod_keep[(*n)++] = (struct gb_keep){{"spec", step}};
}

/* What the tracker reads of a pod (pod_view): the fixed paths, then every
 * backend's group and sub-group label or annotation (the ones gangbridge
 * writes) and the pod spec fields its versions join by; TrainJobs and
 * PodGroups it reads too widely to list (the controller reads them whole
 * anyway). */
static void pod_keep(struct gb_timeouts *t) {
  static const struct gb_keep fixed[] = {
      {{"metadata", "creationTimestamp"}},
      {{"spec", "schedulingGates"}},
      {{"status", "conditions", "[type=Ready]"}},
      {{"status", "conditions", "[type=PodScheduled]"}},
  };
  size_t n = 0;
  for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
    t->pod_keep[n++] = fixed[i];
  size_t n_steps = 0;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    static const enum gc_join_value kept[] = {GC_JOIN_GROUP, GC_JOIN_SUBGROUP};
    for (size_t k = 0; k < 2; k++) {
      const struct gc_backend_join *j = gc_backend_join_of(b, kept[k]);
      if (j && (j->at == GC_JOIN_LABEL || j->at == GC_JOIN_ANNOTATION))
        t->pod_keep[n++] = (struct gb_keep){
            {"metadata", j->at == GC_JOIN_LABEL ? "labels" : "annotations", j->key}};
    }
    for (size_t k = 0; k < b->n_versions; k++)
      for (size_t m = 0; m < b->versions[k].n_joins; m++)
        if (b->versions[k].joins[m].at == GC_JOIN_SPEC_FIELD)
          keep_spec_field(t, &n, &n_steps, b->versions[k].joins[m].key);
  }
  t->n_pod_keep = n;
}

static void on_trainjob(void *arg, const struct gb_informer_change *ch) {
  gb_timeouts_observe(arg, GB_OBSERVE_TRAINJOB, NULL, ch);
}

static void on_pod(void *arg, const struct gb_informer_change *ch) {
  gb_timeouts_observe(arg, GB_OBSERVE_POD, NULL, ch);
}

static void on_podgroup(void *arg, const struct gb_informer_change *ch) {
  const struct gb_timeouts_pg_arg *pa = arg;
  gb_timeouts_observe(pa->t, GB_OBSERVE_PODGROUP, pa->backend, ch);
}

/* Registers one handler: TrainJobs, pods, or backend i's PodGroups. */
static int register_one(struct gb_timeouts *t, struct gb_informers *f, enum gb_ctl_res res,
                        gb_informer_handler_fn fn, void *arg, struct gc_diags *d) {
  struct gb_informer_spec spec;
  struct gb_informer_handler h;
  if (!gb_controller_watch_spec(t->o.kube, res, &spec, &h))
    return 0;
  if (res == GB_CTL_PODS) {
    h.keep = t->pod_keep;
    h.n_keep = t->n_pod_keep;
  }
  h.on_change = fn;
  h.arg = arg;
  return gb_informers_add(f, &spec, &h, NULL, d);
}

int gb_timeouts_register(struct gb_timeouts *t, struct gb_informers *f, struct gc_diags *d) {
  pod_keep(t);
  int rc = register_one(t, f, GB_CTL_TRAINJOBS, on_trainjob, t, d);
  if (!rc)
    rc = register_one(t, f, GB_CTL_PODS, on_pod, t, d);
  for (size_t i = 0; !rc && i < gc_backend_count(); i++) {
    t->pg_arg[i] = (struct gb_timeouts_pg_arg){t, gc_backend_at(i)};
    rc = register_one(t, f, GB_CTL_PG(i), on_podgroup, &t->pg_arg[i], d);
  }
  return rc;
}
