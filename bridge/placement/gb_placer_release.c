/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_release: the acting half of a pass, outside the model's lock:
 * the decision records written (before any pod of the decision is
 * released) and cleared, the pods released (one merge PATCH per pod,
 * built from the pod informer's cached copy, on the release client; a
 * bounded number in flight, only while this process leads), and
 * the report: the table the status reads, Events and metrics.
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

#define RELEASE_ATTEMPTS 5

/* ---- records ------------------------------------------------------------------ */

static struct gb_placer_pg pg_of(const struct gb_placer_item *it) {
  struct gb_placer_pg pg = {it->gg->backend, it->ns, it->name, it->gg->uid};
  return pg;
}

void gb_placer_write_records(struct gb_placer_pass *ps) {
  struct gb_placer *p = ps->p;
  for (size_t i = 0; i < ps->n; i++) {
    struct gb_placer_item *it = &ps->items[i];
    if (!it->write || !it->want)
      continue;
    struct gb_placer_pg pg = pg_of(it);
    struct gb_decision *found = NULL;
    uint64_t expect = it->rec ? it->rec->rec.id : 0;
    int rc = gb_placer_record_write(p, &pg, it->want, expect, &found, it->why, sizeof(it->why));
    if (!rc && !found) {
      it->written = 1;
      gb_plan_mark_released(p->o.plan, it->key, gb_placer_now_ms());
      gb_decision_free(it->rec);
      it->rec = it->want;
      it->want = NULL;
      continue;
    }
    it->release = 0;
    if (found) {
      char id[17];
      gb_decision_id_text(found->rec.id, id);
      gb_log(GB_LOG_INFO, "placement: another decision is recorded for the gang: taking it", "gang",
             it->key, "id", id, NULL);
      it->adopted = 1;
      gb_decision_free(it->rec);
      it->rec = found;
    } else {
      gb_log(GB_LOG_WARN, "placement: cannot record the decision: nothing is released", "gang",
             it->key, "error", it->why[0] ? it->why : gc_diag_strerror(rc), NULL);
    }
  }
}

void gb_placer_clear_records(struct gb_placer_pass *ps) {
  for (size_t i = 0; i < ps->n; i++) {
    struct gb_placer_item *it = &ps->items[i];
    if (!it->clear || !it->gg)
      continue;
    struct gb_placer_pg pg = pg_of(it);
    /* A withdrawn decision: only the record it was; a gang that is over or
     * suspended: whatever is there. */
    uint64_t expect = it->forget ? 0 : it->rec ? it->rec->rec.id : 0;
    int rc = gb_placer_record_clear(ps->p, &pg, expect);
    if (rc) {
      gb_log(GB_LOG_WARN, "placement: cannot remove the decision record", "gang", it->key, "error",
             gc_diag_strerror(rc), NULL);
      it->clear = 0;
    } else {
      gb_decision_free(it->rec);
      it->rec = NULL;
    }
  }
}

/* ---- releasing ------------------------------------------------------------------ */

struct job {
  struct gb_placer_item *it;
  size_t pod;
};

struct releaser {
  struct gb_placer_pass *ps;
  struct job *jobs;
  size_t n;
  atomic_size_t next;
  atomic_int lost; /* leadership was lost: stop */
};

/* The failed requests of one call that are errors: a 404 (the pod is gone)
 * and a 409 (it changed: read it again) are not. */
static int errors_of(const struct gb_kube_error *e, int rc) {
  int n = e->failed_attempts;
  if (rc && (e->http == 404 || e->http == 409) && n > 0)
    n--;
  return n;
}

/* The pod to build the release from into *pod (caller puts): the pod
 * informer's cached copy on the first attempt, so a release costs one
 * request, not two (the cache holds everything the patch is built from,
 * and the patch's resourceVersion precondition turns a stale copy into a
 * 409); a GET when the pod is not cached, and after a 409.  Returns 0,
 * GC_ENOTFOUND (gone) or the GET's error. */
static int read_pod(struct gb_placer *p, const char *ns, const char *name, const char *path,
                    int attempt, json_object **pod, int *cached, struct gb_kube_error *e,
                    int *errors) {
  *cached = attempt == 0 && !gb_model_pod_json(p->o.model, ns, name, pod);
  if (*cached)
    return 0;
  int rc = gb_kube_client_get(p->o.client, path, pod, e);
  *errors += errors_of(e, rc);
  return rc;
}

/* Releases one pod: read it (read_pod), build the release merge patch
 * (gb_release), send it on the release client; a 409 (the pod changed
 * since it was read) reads it again from the API.  A pod that is gone, or
 * released already, is done.  Every failed request counts in the
 * release-error metric, whether or not a retry (the client's, or a later
 * pass's) succeeds. */
static int release_pod(struct gb_placer *p, const char *ns, const char *name,
                       const struct gb_restriction *r) {
  char path[600];
  int rc = gb_kube_client_path(path, sizeof(path), "", "v1", "pods", ns, name), errors = 0;
  struct gb_kube_client *writer = p->o.release_client ? p->o.release_client : p->o.client;
  struct gb_kube_error e;
  struct gc_diags d;
  gb_kube_error_clear(&e);
  gc_diags_init(&d);
  for (int attempt = 0; !rc && attempt < RELEASE_ATTEMPTS; attempt++) {
    json_object *pod = NULL, *patch = NULL;
    enum gb_release_state st = GB_RELEASE_GATED;
    int cached = 0;
    rc = read_pod(p, ns, name, path, attempt, &pod, &cached, &e, &errors);
    if (rc) {
      rc = rc == GC_ENOTFOUND ? 0 : rc;
      break;
    }
    rc = gb_release_state(pod, r, &st, &d);
    if (!rc && st == GB_RELEASE_GATED)
      rc = gb_release_patch(pod, r, &patch, &d);
    json_object_put(pod);
    if (!rc && patch) {
      rc = gb_kube_client_merge_patch(writer, path, patch, NULL, &e);
      errors += errors_of(&e, rc);
    }
    json_object_put(patch);
    /* A 409, or a patch built from the cache that the API refused (which
     * the cache should never cause), is built again from the API's pod. */
    if (!patch || rc != GC_EIO || (e.http != 409 && !(cached && e.http == 422)))
      break;
    rc = 0;
    if (attempt + 1 == RELEASE_ATTEMPTS) {
      rc = GC_EIO;
      errors++;
    }
  }
  if (rc == GC_ENOTFOUND)
    rc = 0;
  if (rc && !errors)
    errors = 1; /* a patch that could not be built */
  if (errors && p->m_release_err)
    gb_metric_counter_add(p->m_release_err, NULL, (double)errors);
  if (rc)
    gb_log(GB_LOG_WARN, "placement: cannot release pod (retried in a later pass)", "pod", name,
           "namespace", ns, "error", d.n ? d.msgs[0] : e.message, NULL);
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
    if (i >= rl->n || atomic_load(&rl->lost))
      break;
    /* A lost lease stops the release between two PATCHes: the next leader
     * finishes it from the record. */
    if (p->o.is_leader && !p->o.is_leader(p->o.leader_ctx)) {
      atomic_store(&rl->lost, 1);
      break;
    }
    struct gb_placer_item *it = rl->jobs[i].it;
    const struct gb_placer_pod *pod = &it->pods[rl->jobs[i].pod];
    struct gb_restriction own;
    const struct gb_restriction *r = &it->restr;
    if (it->per_pod) {
      memset(&own, 0, sizeof(own));
      if (it->pod_nodes && it->pod_nodes[rl->jobs[i].pod])
        one_node(&own, it->pod_nodes[rl->jobs[i].pod]);
      r = &own;
    }
    if (release_pod(p, it->ns, pod->name, r))
      atomic_fetch_add(&it->failed, 1);
    else
      atomic_fetch_add(&it->done, 1);
  }
  return NULL;
}

static int releasing(const struct gb_placer_item *it) {
  return it->release && (!it->write || it->written);
}

int gb_placer_release_all(struct gb_placer_pass *ps) {
  struct gb_placer *p = ps->p;
  size_t n = 0;
  for (size_t i = 0; i < ps->n; i++)
    for (size_t j = 0; releasing(&ps->items[i]) && j < ps->items[i].n; j++)
      n += ps->items[i].pods[j].gated != 0;
  if (!n)
    goto done;
  struct releaser rl = {ps, gc_arena_alloc(ps->a, n * sizeof(struct job)), 0, 0, 0};
  if (!rl.jobs)
    return GC_ENOMEM;
  for (size_t i = 0; i < ps->n; i++)
    for (size_t j = 0; releasing(&ps->items[i]) && j < ps->items[i].n; j++)
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
  for (size_t i = 0; i < ps->n; i++) {
    struct gb_placer_item *it = &ps->items[i];
    it->released = releasing(it) && atomic_load(&it->done) == (int)it->gated;
  }
  return 0;
}

/* ---- reporting ------------------------------------------------------------------ */

/* A released gang whose counted pods are not all bound past the release
 * timeout, one of them reported unschedulable: the cluster changed between
 * the decision and the scheduling (recovering it is the gang timeout's). */
static int raced(const struct gb_placer *p, const struct gb_placer_item *it, int64_t released_ms,
                 int64_t now) {
  if (!released_ms || now - released_ms < p->o.release_timeout_ms)
    return 0;
  for (size_t i = 0; i < it->n; i++)
    if (it->pods[i].counted && !it->pods[i].node[0] && it->pods[i].unschedulable)
      return 1;
  return 0;
}

static int all_bound(const struct gb_placer_item *it) {
  for (size_t i = 0; i < it->n; i++)
    if (it->pods[i].counted && !it->pods[i].node[0])
      return 0;
  return 1;
}

static void post(struct gb_placer *p, const struct gb_placer_item *it, const char *type,
                 const char *reason, const char *msg) {
  if (!p->o.events || !it->gg)
    return;
  struct gb_event_ref tj = {"trainer.kubeflow.org/v1alpha1", "TrainJob", it->ns, it->name,
                            it->gg->uid};
  struct gb_event_ref pg = {it->gg->backend->api_version, it->gg->backend->kind, it->ns, it->name,
                            NULL};
  struct gb_kube_error e;
  gb_events_record(p->o.events, &tj, type, reason, msg, 1, &e);
  gb_events_record(p->o.events, &pg, type, reason, msg, 1, &e);
}

/* The reason a gang waits after this pass, or NULL. */
static const char *waiting_reason(const struct gb_placer_item *it, char *buf, size_t cap) {
  if (it->write && !it->written && !it->adopted && it->why[0]) {
    snprintf(buf, cap, "the placement decision cannot be recorded, so nothing is released: %.400s",
             it->why);
    return buf;
  }
  int waiting = it->decide && (it->view.outcome == GB_PLAN_NOFIT ||
                               it->view.outcome == GB_PLAN_HELD || it->view.waiting);
  return waiting && it->view.reason[0] ? it->view.reason : NULL;
}

/* The decision the table keeps: what the pass recorded, read or cleared. */
static void keep_record(struct gb_placer_item *it, struct gang *g) {
  if (it->clear) {
    gb_decision_free(g->rec);
    g->rec = NULL;
  } else if (it->rec && (!g->rec || g->rec->rec.id != it->rec->rec.id)) {
    gb_decision_free(g->rec);
    g->rec = it->rec;
    it->rec = NULL;
  }
  if (g->rec && !g->rec->per_pod) {
    if (!g->restr)
      g->restr = malloc(sizeof(*g->restr));
    if (g->restr)
      *g->restr = g->rec->restr;
  }
}

static void reset_gang(struct gang *g) {
  free(g->restr);
  g->restr = NULL;
  g->released_ms = 0;
  g->watching = g->raced = 0;
  g->outcome = GB_PLAN_NONE;
  g->reason[0] = g->domain[0] = g->evented[0] = '\0';
}

/* Updates the table entry of it (mu held); *msg is set to the
 * PlacementWaiting message to post when it changed, *race to 1 for a new
 * raced placement. */
static void update_gang(struct gb_placer_pass *ps, struct gb_placer_item *it, struct gang *g,
                        const char **msg, char *buf, size_t cap, int *race, int *fresh) {
  struct gb_placer *p = ps->p;
  int done = atomic_load(&it->done);
  g->state = it->gg ? it->state : GB_GANG_UNMANAGED;
  g->min_member = it->gg ? it->gg->min_member : 0;
  g->pods = (int64_t)it->n;
  g->gated = it->gated - done;
  g->released_pods = g->pods - g->gated;
  g->first_ms = it->first_ms;
  g->had_pods |= it->n > 0;
  g->suspended = it->gg && it->gg->suspended;
  if (it->n == 0 || g->suspended)
    reset_gang(g); /* a new TrainJob of the same name, or a resumed one, starts afresh */
  if (it->decide) {
    /* The plan keeps a decision for its snapshot generation: a pass that
     * finds the same one again is not a new decision. */
    *fresh = it->view.decided_ms != g->decided_ms || it->view.outcome != g->outcome;
    g->decided_ms = it->view.decided_ms;
    g->outcome = it->view.outcome;
    snprintf(g->reason, sizeof(g->reason), "%s", it->view.reason);
    snprintf(g->domain, sizeof(g->domain), "%s", it->view.domain);
  }
  keep_record(it, g);
  if (it->restore && g->rec && !it->decide) {
    g->outcome = GB_PLAN_RELEASED;
    snprintf(g->domain, sizeof(g->domain), "%s", g->rec->rec.domain);
  }
  if (done > 0 || (it->restore && it->used)) {
    if (!g->released_ms)
      g->released_ms = ps->now_ms;
    g->outcome = GB_PLAN_RELEASED;
    g->watching = 1;
  }
  if (it->released) {
    g->state = GB_GANG_RELEASED;
    g->raced = 0;
    g->evented[0] = '\0';
  } else if (g->state == GB_GANG_RELEASED && g->watching && !g->raced) {
    if (raced(p, it, g->released_ms, ps->now_ms))
      *race = g->raced = 1;
    if (all_bound(it))
      g->watching = 0;
  }
  const char *why = waiting_reason(it, buf, cap);
  if (why && strcmp(g->evented, why)) {
    snprintf(g->evented, sizeof(g->evented), "%.511s", why);
    snprintf(g->reason, sizeof(g->reason), "%.511s", why);
    *msg = why;
  }
}

/* The Events about the decision itself: decided again, or overlapping
 * another gang's restriction (once per decision). */
static void decision_events(struct gb_placer *p, struct gb_placer_item *it, int post_it) {
  char line[1100];
  if (it->view.redecided) {
    if (it->view.outcome == GB_PLAN_PLACED)
      snprintf(line, sizeof(line),
               "%.250s no longer fits (%.250s) and no pod used it: decided "
               "again, now %.250s",
               it->view.prev_domain, it->view.why,
               it->view.whole_cluster ? "the whole cluster" : it->view.domain);
    else
      snprintf(line, sizeof(line),
               "%.250s no longer fits (%.250s) and no pod used it: decided "
               "again, the gang waits: %.400s",
               it->view.prev_domain, it->view.why, it->view.reason);
    post(p, it, GB_EVENT_WARNING, "PlacementRedecided", line);
  }
  if (post_it && it->overlap[0]) {
    /* The Event reaches this gang's tenant: another tenant's gang is not named. */
    size_t nl = strlen(it->ns);
    int same_ns = !strncmp(it->overlap, it->ns, nl) && it->overlap[nl] == '/';
    snprintf(line, sizeof(line),
             "nodes planned for this gang lie inside the restriction of %.320s, whose pods were "
             "released before and cannot be narrowed: the scheduler may give them to it",
             same_ns ? it->overlap : "a gang of another namespace");
    post(p, it, GB_EVENT_WARNING, "PlacementOverlap", line);
  }
}

static void report_one(struct gb_placer_pass *ps, struct gb_placer_item *it, double release_s) {
  struct gb_placer *p = ps->p;
  const char *msg = NULL;
  char buf[512];
  int race = 0, fresh = 0, new_decision = 0;
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, it->key, 0);
  if (g) {
    update_gang(ps, it, g, &msg, buf, sizeof(buf), &race, &fresh);
    new_decision = it->written && g->rec && g->evented_id != g->rec->rec.id;
    if (new_decision)
      g->evented_id = g->rec->rec.id;
  }
  /* Every pod gone and nothing changed since: forget the gang, so the
   * table holds only gangs that have pods. */
  if (g && it->n == 0 && !g->dirty && (g->had_pods || !g->rec)) {
    gb_htab_remove(&p->gangs, &g->h);
    free(g->restr);
    gb_decision_free(g->rec);
    free(g);
  }
  pthread_mutex_unlock(&p->mu);
  if (fresh && p->m_decisions)
    gb_metric_counter_inc(p->m_decisions,
                          (const char *[]){gb_placer_outcome_name(it->view.outcome)});
  if (it->released && p->m_release_s) {
    gb_metric_histogram_observe(p->m_release_s, NULL, release_s);
    if (it->first_ms)
      gb_metric_histogram_observe(p->m_gated_s, NULL, (double)(ps->now_ms - it->first_ms) / 1000.0);
  }
  if (msg)
    post(p, it, GB_EVENT_WARNING, "PlacementWaiting", msg);
  decision_events(p, it, new_decision);
  if (it->released && !it->unrestricted && (it->view.domain[0] || it->view.whole_cluster)) {
    char line[600];
    snprintf(line, sizeof(line), "released %d pod(s) to %s", atomic_load(&it->done),
             it->view.whole_cluster ? "the whole cluster" : it->view.domain);
    post(p, it, GB_EVENT_NORMAL, "PlacementReleased", line);
  }
  if (race) {
    if (p->m_raced)
      gb_metric_counter_inc(p->m_raced, NULL);
    char line[300];
    snprintf(line, sizeof(line),
             "released pods are still unschedulable after %llds: the cluster changed after the "
             "placement",
             (long long)(p->o.release_timeout_ms / 1000));
    post(p, it, GB_EVENT_WARNING, "PlacementRaced", line);
  }
}

void gb_placer_report(struct gb_placer_pass *ps, int64_t t0_ns) {
  double release_s = (double)(gb_clock_ns() - t0_ns) / 1e9;
  for (size_t i = 0; i < ps->n; i++)
    report_one(ps, &ps->items[i], release_s);
}
