/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_record: a gang's decision record on gangbridge's own PodGroup
 * (the annotation gangbridge.io/placement-decision, format gb_decision):
 * read from the controller's cache or the API, written and cleared with a
 * JSON merge patch under a resourceVersion precondition (field manager
 * gangbridge-placement), never on a PodGroup gangbridge did not make for
 * the gang's TrainJob.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_kobj.h"
#include "gb_log.h"
#include "gb_placer_int.h"
#include "gb_reconcile.h"

#define WRITE_ATTEMPTS 5

/* 1 when pg (a PodGroup object) is gangbridge's for the TrainJob uid: the
 * managed-by label and a controller ownerReference to it. */
static int ours(json_object *pg, const char *uid) {
  const char *mb = gb_kobj_label(pg, GC_MANAGED_BY_LABEL);
  return mb && !strcmp(mb, GC_MANAGER_NAME) && uid && gb_kobj_owner(pg, NULL, uid, 1);
}

static int pg_path(const struct gb_placer_pg *pg, char *buf, size_t cap) {
  const struct gc_backend *b = pg->backend;
  return gb_kube_client_path(buf, cap, b->group, b->version, b->resource, pg->ns, pg->name);
}

/* Decodes a record text; a bad one is logged and read as none. */
static int decode_text(const struct gb_placer_pg *pg, const char *text, struct gb_decision **out) {
  *out = NULL;
  if (!text)
    return 0;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_decision_decode(text, strlen(text), out, &d);
  if (rc && rc != GC_ENOMEM) {
    char where[600];
    snprintf(where, sizeof(where), "%s/%s", pg->ns, pg->name);
    gb_log(GB_LOG_WARN, "placement: ignoring a decision record that does not decode", "podgroup",
           where, "error", d.n ? d.msgs[0] : gc_diag_strerror(rc), NULL);
    rc = 0;
  }
  gc_diags_destroy(&d);
  return rc;
}

/* GETs the PodGroup: *obj (caller puts), after checking it is ours. */
static int get_pg(struct gb_placer *p, const struct gb_placer_pg *pg, json_object **obj, char *why,
                  size_t cap) {
  char path[700];
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = pg_path(pg, path, sizeof(path));
  if (!rc)
    rc = gb_kube_client_get(p->o.client, path, obj, &e);
  if (rc == GC_ENOTFOUND)
    snprintf(why, cap, "PodGroup %s/%s does not exist", pg->ns, pg->name);
  else if (rc)
    snprintf(why, cap, "cannot read PodGroup %s/%s: %s", pg->ns, pg->name,
             e.message[0] ? e.message : gc_diag_strerror(rc));
  if (!rc && !ours(*obj, pg->tj_uid)) {
    snprintf(why, cap,
             "PodGroup %s/%s is not gangbridge's for this TrainJob: the decision is not "
             "recorded on it",
             pg->ns, pg->name);
    json_object_put(*obj);
    *obj = NULL;
    rc = GC_EINVAL;
  }
  return rc;
}

int gb_placer_record_read(struct gb_placer *p, const struct gb_placer_pg *pg, int fresh,
                          struct gb_decision **out, char *why, size_t why_size) {
  *out = NULL;
  if (!fresh && p->o.record_lookup) {
    char *text = NULL;
    int rc = p->o.record_lookup(p->o.record_ctx, pg->backend, pg->ns, pg->name,
                                GB_DECISION_ANNOTATION, &text);
    if (rc != GC_ENOTFOUND) {
      if (!rc)
        rc = decode_text(pg, text, out);
      free(text);
      return rc;
    }
  }
  if (!p->o.client)
    return 0;
  json_object *obj = NULL;
  int rc = get_pg(p, pg, &obj, why, why_size);
  if (rc == GC_ENOTFOUND || rc == GC_EINVAL)
    return 0; /* nothing recorded where gangbridge may record */
  if (!rc)
    rc = decode_text(pg, gb_kobj_annotation(obj, GB_DECISION_ANNOTATION), out);
  json_object_put(obj);
  return rc;
}

/* One merge patch of the annotation (text NULL: removed) under the
 * resourceVersion rv.  Returns 0, GC_EIO (e->http 409: changed since). */
static int patch_annotation(struct gb_placer *p, const struct gb_placer_pg *pg, const char *rv,
                            const char *text, struct gb_kube_error *e) {
  char path[800];
  int rc = pg_path(pg, path, sizeof(path) - 64);
  if (rc)
    return rc;
  size_t len = strlen(path); /* 64 bytes were kept for the query */
  snprintf(path + len, sizeof(path) - len, "?fieldManager=%s", GB_DECISION_FIELD_MANAGER);
  json_object *patch = json_object_new_object(), *md = json_object_new_object(),
              *ann = json_object_new_object();
  if (!patch || !md || !ann) {
    json_object_put(patch);
    json_object_put(md);
    json_object_put(ann);
    return GC_ENOMEM;
  }
  json_object_object_add(ann, GB_DECISION_ANNOTATION, text ? json_object_new_string(text) : NULL);
  json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
  json_object_object_add(md, "annotations", ann);
  json_object_object_add(patch, "metadata", md);
  rc = gb_kube_client_merge_patch(p->o.client, path, patch, NULL, e);
  json_object_put(patch);
  return rc;
}

/* One attempt of a write: GET, compare, PATCH.  *again 1 after a 409. */
static int write_once(struct gb_placer *p, const struct gb_placer_pg *pg, const char *text,
                      uint64_t want_id, uint64_t expect, struct gb_decision **found, int *again,
                      char *why, size_t cap) {
  json_object *obj = NULL;
  struct gb_decision *cur = NULL;
  int rc = get_pg(p, pg, &obj, why, cap);
  const char *rv = gb_kobj_meta(obj, "resourceVersion");
  if (!rc)
    rc = decode_text(pg, gb_kobj_annotation(obj, GB_DECISION_ANNOTATION), &cur);
  if (!rc && cur && cur->rec.id == want_id)
    goto out; /* written already (an earlier attempt, or another writer of the same decision) */
  if (!rc && cur && cur->rec.id != expect) {
    *found = cur; /* another decision is recorded: it wins */
    cur = NULL;
    goto out;
  }
  if (!rc && !rv) {
    snprintf(why, cap, "PodGroup %s/%s has no resourceVersion", pg->ns, pg->name);
    rc = GC_EIO;
  }
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  if (!rc && (rc = patch_annotation(p, pg, rv, text, &e)) == GC_EIO && e.http == 409)
    *again = 1;
  else if (rc == GC_EIO)
    snprintf(why, cap, "cannot write the decision on PodGroup %s/%s: %s", pg->ns, pg->name,
             e.message[0] ? e.message : "error");
out:
  gb_decision_free(cur);
  json_object_put(obj);
  return rc;
}

int gb_placer_record_write(struct gb_placer *p, const struct gb_placer_pg *pg,
                           const struct gb_decision *want, uint64_t expect,
                           struct gb_decision **found, char *why, size_t why_size) {
  *found = NULL;
  if (!p->o.client)
    return GC_EIO;
  struct gb_buf b;
  gb_buf_init(&b, GB_DECISION_MAX_TEXT);
  int rc = gb_decision_encode(want, &b);
  for (int attempt = 0; !rc && attempt < WRITE_ATTEMPTS; attempt++) {
    int again = 0;
    rc = write_once(p, pg, gb_buf_ptr(&b), want->rec.id, expect, found, &again, why, why_size);
    if (!again || *found)
      break;
    rc = attempt + 1 < WRITE_ATTEMPTS ? 0 : GC_EIO;
    if (rc)
      snprintf(why, why_size, "PodGroup %s/%s kept changing while the decision was written", pg->ns,
               pg->name);
  }
  gb_buf_free(&b);
  if (rc && p->m_record_err)
    gb_metric_counter_inc(p->m_record_err, NULL);
  return rc;
}

int gb_placer_record_clear(struct gb_placer *p, const struct gb_placer_pg *pg, uint64_t expect) {
  if (!p->o.client)
    return 0;
  int rc = 0;
  for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
    json_object *obj = NULL;
    struct gb_decision *cur = NULL;
    char why[300];
    rc = get_pg(p, pg, &obj, why, sizeof(why));
    const char *text = gb_kobj_annotation(obj, GB_DECISION_ANNOTATION);
    const char *rv = gb_kobj_meta(obj, "resourceVersion");
    int clear = !rc && text &&
                (!expect || (!decode_text(pg, text, &cur) && cur && cur->rec.id == expect));
    struct gb_kube_error e;
    gb_kube_error_clear(&e);
    if (clear && rv)
      rc = patch_annotation(p, pg, rv, NULL, &e);
    gb_decision_free(cur);
    json_object_put(obj);
    if (rc == GC_ENOTFOUND || rc == GC_EINVAL)
      return 0; /* no PodGroup of ours: nothing recorded */
    if (!clear || rc != GC_EIO || e.http != 409)
      break;
  }
  return rc;
}

/* ---- the scheduler endpoint's recorder --------------------------------------------- */

struct pin {
  struct gb_placer *p;
  const char *key;
  const struct gc_gang *gg;
  struct gb_decision *want;
};

/* Inside the model's lock: the restriction of the plan's decision and its
 * record. */
static int pin_fn(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  struct pin *c = arg;
  struct gb_plan_view v;
  int rc = gb_plan_get(c->p->o.plan, c->key, &v);
  if (rc)
    return rc;
  if (v.outcome != GB_PLAN_PLACED && v.outcome != GB_PLAN_RELEASED)
    return GC_ENOTFOUND;
  if ((rc = gb_decision_new(&c->want)))
    return rc;
  rc = gb_placer_restrict(c->p, s, c->key, &v, &c->want->restr, &c->want->per_pod);
  if (!rc)
    rc = gb_plan_record_of(c->p->o.plan, c->key, c->want->a, &c->want->rec);
  const char *mode = c->gg->topology.mode;
  snprintf(c->want->mode, sizeof(c->want->mode), "%s",
           mode && (!strcmp(mode, "hard") || !strcmp(mode, "soft")) ? mode : "");
  return rc;
}

/* Keeps d (owned) as the table's record of key; dirty: the next pass looks
 * at the gang (and takes d back when the plan does not hold it). */
static void table_record(struct gb_placer *p, const char *key, struct gb_decision *d, int dirty) {
  pthread_mutex_lock(&p->mu);
  struct gang *g = gb_placer_find(p, key, 1);
  if (g) {
    gb_decision_free(g->rec);
    g->rec = d;
    d = NULL;
    if (dirty) {
      g->dirty = p->kick = 1;
      pthread_cond_signal(&p->cond);
    }
  }
  pthread_mutex_unlock(&p->mu);
  gb_decision_free(d);
}

/* The Event of a pinned decision decided again by the scheduler endpoint. */
static void redecided_event(struct gb_placer *p, const struct gc_gang *gg, const char *ns,
                            const char *name, const struct gb_decision *d) {
  if (!p->o.events)
    return;
  char line[600];
  snprintf(line, sizeof(line),
           "the domain pinned for the gang no longer fits and no pod used it: decided again, "
           "now %.300s",
           d->rec.whole_cluster ? "the whole cluster" : d->rec.domain);
  struct gb_event_ref tj = {"trainer.kubeflow.org/v1alpha1", "TrainJob", ns, name, gg->uid};
  struct gb_event_ref pg = {gg->backend->api_version, gg->backend->kind, ns, name, NULL};
  struct gb_kube_error e;
  gb_events_record(p->o.events, &tj, GB_EVENT_WARNING, "PlacementRedecided", line, 1, &e);
  gb_events_record(p->o.events, &pg, GB_EVENT_WARNING, "PlacementRedecided", line, 1, &e);
}

int gb_placer_record_decision(void *ctx, const char *ns, const char *name, const char *key,
                              uint64_t prev_id, char *reason, size_t reason_size) {
  struct gb_placer *p = ctx;
  if (p->o.is_leader && !p->o.is_leader(p->o.leader_ctx)) {
    snprintf(reason, reason_size, "this replica is not the leader: it records no decision");
    return GC_EIO;
  }
  struct gc_gang *gg = NULL;
  int rc = p->o.gang(p->o.gang_ctx, ns, name, &gg, reason, reason_size);
  if (!rc && !gg) {
    snprintf(reason, reason_size, "gangbridge does not manage TrainJob %s/%s now", ns, name);
    rc = GC_ENOTFOUND;
  } else if (!rc && gg->suspended) {
    snprintf(reason, reason_size, "TrainJob %s/%s is suspended", ns, name);
    rc = GC_EINVAL;
  }
  struct pin c = {p, key, gg, NULL};
  if (!rc && (rc = gb_model_with_snapshot(p->o.model, pin_fn, &c)))
    snprintf(reason, reason_size, "the decision is gone: %s", gc_diag_strerror(rc));
  struct gb_decision *found = NULL;
  if (!rc) {
    struct gb_placer_pg pg = {gg->backend, ns, name, gg->uid};
    rc = gb_placer_record_write(p, &pg, c.want, prev_id, &found, reason, reason_size);
  }
  if (!rc && found) {
    snprintf(reason, reason_size,
             "another placement decision of %s is recorded; it is taken "
             "back",
             key);
    table_record(p, key, found, 1);
    rc = GC_EIO;
  } else if (!rc) {
    if (prev_id)
      redecided_event(p, gg, ns, name, c.want);
    table_record(p, key, c.want, 0);
    c.want = NULL;
  }
  gb_decision_free(c.want);
  gc_gang_free(gg);
  return rc;
}
