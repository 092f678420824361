/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_model: the records (pods, nodes, gangs, interned toleration sets,
 * HyperNode texts), the snapshot kept current from them, the feed and the
 * read side (see gb_model.h).  The informers live in gb_model_watch.c.
 *
 * Accounting invariant: a pod is "counted" when it is bound (a node) and
 * not terminal; a counted pod sits in its node record's list, and its
 * requests are taken from the snapshot's free exactly when the snapshot
 * exists and the node is in it (slot >= 0).  Every path that changes a
 * record goes through pod_unlink/pod_link or node_detach/node_attach, which
 * keep that invariant, so a rebuild from the records always equals the
 * deltas applied so far.
 */
#include <stdlib.h>
#include <string.h>

#include "gb_clock.h"
#include "gb_gate.h"
#include "gb_jscan.h"
#include "gb_kobj.h"
#include "gb_kube_watch.h"
#include "gb_kube_client.h"
#include "gb_leader.h"
#include "gb_log.h"
#include "gb_model_int.h"
#include "gc_podreq.h"
#include "gb_model_test.h"

#define JS_LABEL "jobset.sigs.k8s.io/jobset-name"
#define RJ_LABEL "jobset.sigs.k8s.io/replicatedjob-name"
#define SCRATCH_LIMIT (64u << 20)
#define MAX_JSON_BYTES (8u << 20)

/* ---- Records ------------------------------------------------------------- */

enum { EFF_ANY = 0, EFF_NOSCHEDULE, EFF_PREFER, EFF_NOEXECUTE, EFF_OTHER };

struct tol {
  char *key, *value; /* "" when absent */
  uint8_t exists;    /* operator Exists (else Equal) */
  uint8_t effect;    /* EFF_* (EFF_ANY: empty) */
};

/* An interned toleration set: the pods of one gang share one. */
struct tolset {
  struct gb_hnode h;
  char *canon; /* the tolerations' JSON text, the intern key */
  size_t refs, n;
  struct tol t[];
};

struct taint {
  char *key, *value;
  uint8_t effect; /* EFF_NOSCHEDULE or EFF_NOEXECUTE (others are not kept) */
};

struct pod_rec;

struct node_rec {
  struct gb_hnode h;
  char *name;
  char *labels; /* "k\0v\0k\0v\0...", labels_len bytes */
  size_t labels_len;
  size_t n_alloc;
  uint16_t *alloc_rid;
  int64_t *alloc_val;
  struct taint *taints;
  size_t n_taints;
  uint8_t present, ready, unsched;
  int64_t slot;         /* in m->s, -1 when not in it */
  struct pod_rec *pods; /* counted pods bound here */
  size_t refs;          /* pod records naming this node (counted or not) */
  size_t bytes;
};

struct gang_rec {
  struct gb_hnode h;
  char *key; /* "ns/jobset"; jobset starts at key + ns_len + 1 */
  size_t ns_len;
  struct pod_rec *pods;
  size_t n;
};

struct pod_rec {
  struct gb_hnode h;
  struct pod_rec *nprev, *nnext; /* the node's counted list */
  struct pod_rec *gprev, *gnext; /* the gang's list */
  struct node_rec *node;
  struct gang_rec *gang;
  struct tolset *tol;
  int64_t created_ms, priority, since_ms;
  uint32_t bytes;
  uint16_t n_gates;
  uint8_t phase, gated, unsched, n_req, counted;
  uint16_t o_name, o_uid, o_rv, o_rjob, o_msg; /* offsets in str() (ns at 0) */
  int64_t val[];                               /* n_req, then rid[n_req], then the strings */
};

static uint16_t *pod_rid(const struct pod_rec *p) { return (uint16_t *)(p->val + p->n_req); }
static char *pod_str(const struct pod_rec *p) { return (char *)(pod_rid(p) + p->n_req); }

static uint64_t key2_hash(const char *a, const char *b) {
  uint64_t h = gb_hash_fnv1a(GB_HASH_FNV_OFFSET, a, strlen(a));
  h = gb_hash_fnv1a(h, "/", 1);
  return gb_hash_fnv1a(h, b, strlen(b));
}

/* ---- Resources ------------------------------------------------------------ */

/* The model's id of resource name, interned on first sight.  -1 when the
 * table is full (the resource is then ignored, as the snapshot would). */
static int res_id(struct gb_model *m, const char *name) {
  for (size_t i = 0; i < m->n_res; i++)
    if (!strcmp(m->res_name[i], name))
      return (int)i;
  if (m->n_res == TP_MAX_RESOURCES)
    return -1;
  char *copy = strdup(name);
  if (!copy)
    return -1;
  m->res_name[m->n_res] = copy;
  m->snap_r[m->n_res] = -1;
  return (int)m->n_res++;
}

/* The snapshot's index of model resource rid, adding it to the snapshot's
 * table (zero everywhere) through node `via` when it is new there. */
static int snap_res(struct gb_model *m, int rid, const char *via) {
  if (m->snap_r[rid] >= 0)
    return m->snap_r[rid];
  int r = tp_snapshot_resource(m->s, m->res_name[rid]);
  if (r < 0 && tp_snapshot_set_free(m->s, via, m->res_name[rid], 0) == 0)
    r = tp_snapshot_resource(m->s, m->res_name[rid]);
  m->snap_r[rid] = r;
  return r;
}

/* Takes (sign > 0) or gives back (sign < 0) a counted pod's requests. */
static void pod_charge(struct gb_model *m, struct pod_rec *p, int sign) {
  struct node_rec *n = p->node;
  if (!m->s || !n || n->slot < 0)
    return;
  uint16_t *rid = pod_rid(p);
  for (size_t i = 0; i < p->n_req; i++) {
    int r = snap_res(m, rid[i], n->name);
    if (r >= 0)
      tp_snapshot_adjust_free(m->s, (uint32_t)n->slot, r, sign > 0 ? -p->val[i] : p->val[i]);
  }
}

/* ---- Toleration sets ------------------------------------------------------- */

static int effect_of(const char *s) {
  if (!s || !*s)
    return EFF_ANY;
  if (!strcmp(s, "NoSchedule"))
    return EFF_NOSCHEDULE;
  if (!strcmp(s, "PreferNoSchedule"))
    return EFF_PREFER;
  if (!strcmp(s, "NoExecute"))
    return EFF_NOEXECUTE;
  return EFF_OTHER;
}

static void tolset_free(struct tolset *t) {
  if (!t)
    return;
  for (size_t i = 0; i < t->n; i++) {
    free(t->t[i].key);
    free(t->t[i].value);
  }
  free(t->canon);
  free(t);
}

static void tolset_put(struct gb_model *m, struct tolset *t) {
  if (t && --t->refs == 0) {
    gb_htab_remove(&m->tols, &t->h);
    tolset_free(t);
  }
}

static struct tolset *tolset_parse(json_object *arr, const char *canon) {
  size_t n = json_object_array_length(arr);
  struct tolset *t = calloc(1, sizeof(*t) + n * sizeof(struct tol));
  if (!t || !(t->canon = strdup(canon))) {
    free(t);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    json_object *e = json_object_array_get_idx(arr, i);
    const char *key = gb_kobj_str(e, "key"), *val = gb_kobj_str(e, "value"),
               *op = gb_kobj_str(e, "operator");
    struct tol *x = &t->t[t->n++];
    x->key = strdup(key ? key : "");
    x->value = strdup(val ? val : "");
    x->exists = op && !strcmp(op, "Exists");
    x->effect = (uint8_t)effect_of(gb_kobj_str(e, "effect"));
    if (!x->key || !x->value) {
      tolset_free(t);
      return NULL;
    }
  }
  return t;
}

/* The interned set for a pod's spec.tolerations (NULL when it has none);
 * the caller holds one reference.  GC_ELIMIT past GB_MODEL_MAX_TOLS. */
static int tolset_get(struct gb_model *m, json_object *arr, struct tolset **out) {
  *out = NULL;
  if (!arr || !json_object_is_type(arr, json_type_array) || json_object_array_length(arr) == 0)
    return 0;
  if (json_object_array_length(arr) > GB_MODEL_MAX_TOLS)
    return GC_ELIMIT;
  const char *canon = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN);
  uint64_t h = gb_hash_str(canon);
  for (struct gb_hnode *e = gb_htab_chain(&m->tols, h); e; e = e->next) {
    struct tolset *t = (struct tolset *)e;
    if (e->hash == h && !strcmp(t->canon, canon)) {
      t->refs++;
      *out = t;
      return 0;
    }
  }
  struct tolset *t = tolset_parse(arr, canon);
  if (!t)
    return GC_ENOMEM;
  t->h.hash = h;
  t->refs = 1;
  gb_htab_insert(&m->tols, &t->h);
  *out = t;
  return 0;
}

/* Kubernetes' Toleration.ToleratesTaint. */
static int tolerates(const struct tol *t, const struct taint *x) {
  if (t->effect != EFF_ANY && t->effect != x->effect)
    return 0;
  if (*t->key && strcmp(t->key, x->key))
    return 0;
  if (t->exists)
    return 1;
  return !strcmp(t->value, x->value);
}

static int node_blocks(const struct node_rec *n, const struct tolset *ts) {
  for (size_t i = 0; i < n->n_taints; i++) {
    int ok = 0;
    for (size_t j = 0; ts && j < ts->n && !ok; j++)
      ok = tolerates(&ts->t[j], &n->taints[i]);
    if (!ok)
      return 1;
  }
  return 0;
}

/* ---- Nodes ------------------------------------------------------------------ */

static void node_free_parts(struct node_rec *n) {
  for (size_t i = 0; i < n->n_taints; i++) {
    free(n->taints[i].key);
    free(n->taints[i].value);
  }
  free(n->taints);
  free(n->labels);
  free(n->alloc_rid);
  free(n->alloc_val);
  n->taints = NULL;
  n->labels = NULL;
  n->alloc_rid = NULL;
  n->alloc_val = NULL;
  n->n_taints = n->n_alloc = n->labels_len = 0;
}

static struct node_rec *node_find(struct gb_model *m, const char *name) {
  uint64_t h = gb_hash_str(name);
  for (struct gb_hnode *e = gb_htab_chain(&m->nodes, h); e; e = e->next)
    if (e->hash == h && !strcmp(((struct node_rec *)e)->name, name))
      return (struct node_rec *)e;
  return NULL;
}

/* The record of node `name`, created absent (a placeholder that pods can
 * point at before the Node itself is seen). */
static struct node_rec *node_get(struct gb_model *m, const char *name) {
  struct node_rec *n = node_find(m, name);
  if (n)
    return n;
  n = calloc(1, sizeof(*n));
  if (!n || !(n->name = strdup(name))) {
    free(n);
    return NULL;
  }
  n->slot = -1;
  n->h.hash = gb_hash_str(name);
  n->bytes = sizeof(*n) + strlen(name) + 1;
  m->record_bytes += n->bytes;
  gb_htab_insert(&m->nodes, &n->h);
  return n;
}

/* Frees a node record nothing needs any more. */
static void node_maybe_free(struct gb_model *m, struct node_rec *n) {
  if (!n || n->present || n->refs)
    return;
  gb_htab_remove(&m->nodes, &n->h);
  m->record_bytes -= n->bytes;
  node_free_parts(n);
  free(n->name);
  free(n);
}

static const char *node_excl_reason(const struct node_rec *n) {
  if (n->unsched)
    return "unschedulable (cordoned)";
  if (!n->ready)
    return "not Ready";
  return NULL;
}

/* 1 when label k matters: with label levels only those labels do; with
 * HyperNodes any label may (labelMatch member selectors). */
static int label_kept(const struct gb_model *m, const char *k) {
  for (size_t i = 0; i < m->o.n_levels; i++)
    if (!strcmp(m->levels[i], k))
      return 1;
  return m->o.n_levels == 0;
}

/* Packs the labels that matter (label_kept) as "k\0v\0..." */
static int pack_labels(const struct gb_model *m, json_object *labels, char **out, size_t *len) {
  size_t total = 0;
  *out = NULL;
  *len = 0;
  if (!labels || !json_object_is_type(labels, json_type_object))
    return 0;
  json_object_object_foreach(labels, k, v) {
    if (label_kept(m, k))
      total += strlen(k) + 1 +
               strlen(json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "") +
               1;
  }
  if (!total)
    return 0;
  char *buf = malloc(total), *w = buf;
  if (!buf)
    return GC_ENOMEM;
  json_object_object_foreach(labels, k2, v2) {
    if (!label_kept(m, k2))
      continue;
    size_t kl = strlen(k2) + 1;
    memcpy(w, k2, kl);
    w += kl;
    const char *s = json_object_is_type(v2, json_type_string) ? json_object_get_string(v2) : "";
    size_t vl = strlen(s) + 1;
    memcpy(w, s, vl);
    w += vl;
  }
  *out = buf;
  *len = (size_t)(w - buf);
  return 0;
}

/* Reads status.allocatable into the model's units. */
static int parse_alloc(struct gb_model *m, json_object *alloc, struct node_rec *n,
                       struct gc_diags *diags) {
  if (!alloc || !json_object_is_type(alloc, json_type_object))
    return 0;
  size_t cnt = (size_t)json_object_object_length(alloc);
  n->alloc_rid = calloc(cnt ? cnt : 1, sizeof(uint16_t));
  n->alloc_val = calloc(cnt ? cnt : 1, sizeof(int64_t));
  if (!n->alloc_rid || !n->alloc_val)
    return GC_ENOMEM;
  json_object_object_foreach(alloc, k, v) {
    struct gc_quantity q;
    const char *s = json_object_get_string(v);
    int64_t units;
    if (!s || gc_quantity_parse(s, strlen(s), &q) || q.mant < 0 ||
        tp_snapshot_quantity_to_units(k, &q, &units)) {
      gc_diags_addf(diags, "Node/%s: status.allocatable.%s: not a valid quantity", n->name, k);
      continue;
    }
    int rid = res_id(m, k);
    if (rid < 0)
      continue;
    n->alloc_rid[n->n_alloc] = (uint16_t)rid;
    n->alloc_val[n->n_alloc++] = units;
  }
  return 0;
}

static int parse_taints(json_object *taints, struct node_rec *n) {
  size_t cnt = taints && json_object_is_type(taints, json_type_array)
                   ? json_object_array_length(taints)
                   : 0;
  if (!cnt)
    return 0;
  n->taints = calloc(cnt, sizeof(*n->taints));
  if (!n->taints)
    return GC_ENOMEM;
  for (size_t i = 0; i < cnt; i++) {
    json_object *t = json_object_array_get_idx(taints, i);
    int eff = effect_of(gb_kobj_str(t, "effect"));
    if (eff != EFF_NOSCHEDULE && eff != EFF_NOEXECUTE)
      continue; /* PreferNoSchedule never keeps a pod off a node */
    const char *k = gb_kobj_str(t, "key"), *v = gb_kobj_str(t, "value");
    struct taint *x = &n->taints[n->n_taints++];
    x->key = strdup(k ? k : "");
    x->value = strdup(v ? v : "");
    x->effect = (uint8_t)eff;
    if (!x->key || !x->value)
      return GC_ENOMEM;
  }
  return 0;
}

/* The Ready condition: a node without conditions counts as ready (a
 * synthetic or test node; the kubelet always reports one). */
static int parse_ready(json_object *conds) {
  size_t cnt = conds && json_object_is_type(conds, json_type_array)
                   ? json_object_array_length(conds)
                   : 0;
  for (size_t i = 0; i < cnt; i++) {
    json_object *c = json_object_array_get_idx(conds, i);
    const char *type = gb_kobj_str(c, "type"), *st = gb_kobj_str(c, "status");
    if (type && !strcmp(type, "Ready"))
      return st && !strcmp(st, "True");
  }
  return 1;
}

/* A gc_value Node document for the snapshot: name, labels, allocatable
 * (taints and cordon are the model's business, not the snapshot's). */
static int node_doc(struct gb_model *m, struct gc_arena *a, const struct node_rec *n,
                    struct gc_value **out) {
  struct gc_value *doc = gc_value_map(a), *md = gc_value_map(a), *lab = gc_value_map(a),
                  *st = gc_value_map(a), *al = gc_value_map(a);
  if (!doc || !md || !lab || !st || !al)
    return GC_ENOMEM;
  int rc = gc_map_set(a, doc, "apiVersion", gc_value_strz(a, "v1"));
  rc = rc ? rc : gc_map_set(a, doc, "kind", gc_value_strz(a, "Node"));
  rc = rc ? rc : gc_map_set(a, md, "name", gc_value_strz(a, n->name));
  for (const char *p = n->labels; !rc && p && p < n->labels + n->labels_len;) {
    const char *v = p + strlen(p) + 1;
    rc = gc_map_set(a, lab, p, gc_value_strz(a, v));
    p = v + strlen(v) + 1;
  }
  for (size_t i = 0; !rc && i < n->n_alloc; i++) {
    char q[GC_QUANTITY_BUFSZ];
    const char *res = m->res_name[n->alloc_rid[i]];
    tp_snapshot_units_format(res, n->alloc_val[i], q, sizeof(q));
    rc = gc_map_set(a, al, res, gc_value_strz(a, q));
  }
  rc = rc ? rc : gc_map_set(a, md, "labels", lab);
  rc = rc ? rc : gc_map_set(a, doc, "metadata", md);
  rc = rc ? rc : gc_map_set(a, st, "allocatable", al);
  rc = rc ? rc : gc_map_set(a, doc, "status", st);
  *out = doc;
  return rc;
}

/* Takes node n out of the snapshot (its pods' requests go with it). */
static void node_detach(struct gb_model *m, struct node_rec *n) {
  if (!m->s || n->slot < 0)
    return;
  tp_snapshot_remove_node(m->s, n->name);
  n->slot = -1;
  if (tp_snapshot_slot_count(m->s) > 2 * tp_snapshot_node_count(m->s) + 1024)
    m->dirty = 1; /* many dead slots: compact by a rebuild */
}

/* Puts a present node into the snapshot and charges its counted pods. */
static int node_attach(struct gb_model *m, struct node_rec *n, struct gc_diags *diags) {
  if (!m->s || !n->present || n->slot >= 0)
    return 0;
  gc_arena_reset(m->scratch);
  struct gc_value *doc;
  int rc = node_doc(m, m->scratch, n, &doc);
  if (!rc)
    rc = tp_snapshot_add_node(m->s, doc, NULL, diags);
  if (rc)
    return rc;
  n->slot = tp_snapshot_node(m->s, n->name);
  const char *why = node_excl_reason(n);
  if (why)
    tp_snapshot_set_excluded(m->s, n->name, why);
  for (struct pod_rec *p = n->pods; p; p = p->nnext)
    pod_charge(m, p, 1);
  /* The new slot starts at allocatable: what the plan reserved here must
   * be taken again, or two gangs could be promised the same capacity. */
  if (m->o.plan)
    gb_plan_reapply_node(m->o.plan, m->s, n->name);
  return 0;
}

static int same_alloc(const struct node_rec *a, const struct node_rec *b) {
  if (a->n_alloc != b->n_alloc)
    return 0;
  for (size_t i = 0; i < a->n_alloc; i++)
    if (a->alloc_rid[i] != b->alloc_rid[i] || a->alloc_val[i] != b->alloc_val[i])
      return 0;
  return 1;
}

static int same_taints(const struct node_rec *a, const struct node_rec *b) {
  if (a->n_taints != b->n_taints)
    return 0;
  for (size_t i = 0; i < a->n_taints; i++)
    if (a->taints[i].effect != b->taints[i].effect || strcmp(a->taints[i].key, b->taints[i].key) ||
        strcmp(a->taints[i].value, b->taints[i].value))
      return 0;
  return 1;
}

static int alloc_grew(const struct node_rec *old, const struct node_rec *nu) {
  for (size_t i = 0; i < nu->n_alloc; i++) {
    int64_t before = 0;
    for (size_t j = 0; j < old->n_alloc; j++)
      if (old->alloc_rid[j] == nu->alloc_rid[i])
        before = old->alloc_val[j];
    if (nu->alloc_val[i] > before)
      return 1;
  }
  return 0;
}

/* Applies a Node upsert: labels or allocatable changed -> the node goes
 * out of the snapshot and back in (its leaf or its ceiling moved);
 * readiness or cordon -> exclusion; taints -> the record only. */
static int node_upsert(struct gb_model *m, json_object *obj, struct gc_diags *diags) {
  const char *name = gb_kobj_str(gb_kobj_get(obj, "metadata"), "name");
  if (!name || !*name || strlen(name) > TP_MAX_NAME) {
    gc_diags_addf(diags, "Node: metadata.name: required, at most %d bytes", TP_MAX_NAME);
    return GC_EINVAL;
  }
  struct node_rec nu = {0};
  nu.name = (char *)name;
  json_object *unsched = gb_kobj_dig(obj, "spec", "unschedulable", NULL);
  nu.unsched = unsched && json_object_get_boolean(unsched);
  nu.ready = (uint8_t)parse_ready(gb_kobj_dig(obj, "status", "conditions", NULL));
  int rc = pack_labels(m, gb_kobj_dig(obj, "metadata", "labels", NULL), &nu.labels, &nu.labels_len);
  rc = rc ? rc : parse_alloc(m, gb_kobj_dig(obj, "status", "allocatable", NULL), &nu, diags);
  rc = rc ? rc : parse_taints(gb_kobj_dig(obj, "spec", "taints", NULL), &nu);
  struct node_rec *n = rc ? NULL : node_get(m, name);
  if (!n) {
    node_free_parts(&nu);
    return rc ? rc : GC_ENOMEM;
  }
  /* A node not in the snapshot (an earlier add failed) is retried too. */
  int was = n->present, moved = !was || (m->s && n->slot < 0) || n->labels_len != nu.labels_len ||
                                (nu.labels_len && memcmp(n->labels, nu.labels, nu.labels_len)) ||
                                !same_alloc(n, &nu);
  const char *old_why = was ? node_excl_reason(n) : "absent", *why = node_excl_reason(&nu);
  if (!was || alloc_grew(n, &nu) || (old_why && !why))
    m->capacity_due = 1;
  m->changed = moved || old_why != why || !same_taints(n, &nu);
  if (moved)
    node_detach(m, n);
  m->record_bytes -= n->bytes;
  node_free_parts(n);
  n->labels = nu.labels;
  n->labels_len = nu.labels_len;
  n->alloc_rid = nu.alloc_rid;
  n->alloc_val = nu.alloc_val;
  n->n_alloc = nu.n_alloc;
  n->taints = nu.taints;
  n->n_taints = nu.n_taints;
  n->present = 1;
  n->ready = nu.ready;
  n->unsched = nu.unsched;
  n->bytes = sizeof(*n) + strlen(n->name) + 1 + n->labels_len +
             n->n_alloc * (sizeof(uint16_t) + sizeof(int64_t)) + n->n_taints * sizeof(struct taint);
  m->record_bytes += n->bytes;
  m->n_nodes += !was;
  if (moved)
    return node_attach(m, n, diags);
  if (m->s && n->slot >= 0 && old_why != why) /* each call copies the reason into the arena */
    return tp_snapshot_set_excluded(m->s, n->name, why);
  return 0;
}

static int node_delete(struct gb_model *m, json_object *obj) {
  const char *name = gb_kobj_str(gb_kobj_get(obj, "metadata"), "name");
  struct node_rec *n = name ? node_find(m, name) : NULL;
  if (!n || !n->present)
    return 0;
  node_detach(m, n);
  n->present = 0;
  m->changed = 1;
  m->n_nodes--;
  m->record_bytes -= n->bytes;
  node_free_parts(n);
  n->bytes = sizeof(*n) + strlen(n->name) + 1;
  m->record_bytes += n->bytes;
  node_maybe_free(m, n);
  return 0;
}

/* ---- Pods -------------------------------------------------------------------- */

/* A pod as read from JSON or a view, before it becomes a record. */
struct pod_in {
  const char *ns, *name, *uid, *rv, *node, *jobset, *rjob, *msg;
  int phase, gated, unsched;
  unsigned n_gates;
  int64_t created_ms, priority, since_ms;
  size_t n_req;
  uint16_t rid[GB_MODEL_MAX_POD_RES];
  int64_t val[GB_MODEL_MAX_POD_RES];
  json_object *tols;
};

static struct pod_rec *pod_find(struct gb_model *m, const char *ns, const char *name) {
  uint64_t h = key2_hash(ns, name);
  for (struct gb_hnode *e = gb_htab_chain(&m->pods, h); e; e = e->next) {
    struct pod_rec *p = (struct pod_rec *)e;
    if (e->hash == h && !strcmp(pod_str(p) + p->o_name, name) && !strcmp(pod_str(p), ns))
      return p;
  }
  return NULL;
}

static struct gang_rec *gang_get(struct gb_model *m, const char *ns, const char *js, int create) {
  uint64_t h = key2_hash(ns, js);
  size_t nl = strlen(ns);
  for (struct gb_hnode *e = gb_htab_chain(&m->gangs, h); e; e = e->next) {
    struct gang_rec *g = (struct gang_rec *)e;
    if (e->hash == h && g->ns_len == nl && !strncmp(g->key, ns, nl) && !strcmp(g->key + nl + 1, js))
      return g;
  }
  if (!create)
    return NULL;
  struct gang_rec *g = calloc(1, sizeof(*g));
  size_t len = nl + 1 + strlen(js) + 1;
  if (!g || !(g->key = malloc(len))) {
    free(g);
    return NULL;
  }
  snprintf(g->key, len, "%s/%s", ns, js);
  g->ns_len = nl;
  g->h.hash = h;
  gb_htab_insert(&m->gangs, &g->h);
  m->record_bytes += sizeof(*g) + len;
  return g;
}

static int pod_is_terminal(int phase) { return phase == 2 || phase == 3; }

/* Links a new record into the node, gang and pod tables and charges it. */
static int pod_link(struct gb_model *m, struct pod_rec *p, const char *node, const char *jobset) {
  gb_htab_insert(&m->pods, &p->h);
  m->n_pods++;
  m->record_bytes += p->bytes;
  if (*node) {
    if (!(p->node = node_get(m, node)))
      return GC_ENOMEM;
    p->node->refs++;
    if (!pod_is_terminal(p->phase)) {
      p->counted = 1;
      p->nnext = p->node->pods;
      if (p->nnext)
        p->nnext->nprev = p;
      p->node->pods = p;
      pod_charge(m, p, 1);
    }
  }
  if (*jobset) {
    if (!(p->gang = gang_get(m, pod_str(p), jobset, 1)))
      return GC_ENOMEM;
    p->gnext = p->gang->pods;
    if (p->gnext)
      p->gnext->gprev = p;
    p->gang->pods = p;
    p->gang->n++;
  }
  return 0;
}

/* Undoes pod_link (gives the requests back) and frees the record. */
static void pod_unlink(struct gb_model *m, struct pod_rec *p) {
  if (p->counted) {
    pod_charge(m, p, -1);
    if (p->nprev)
      p->nprev->nnext = p->nnext;
    else
      p->node->pods = p->nnext;
    if (p->nnext)
      p->nnext->nprev = p->nprev;
  }
  if (p->node) {
    p->node->refs--;
    node_maybe_free(m, p->node);
  }
  struct gang_rec *g = p->gang;
  if (g) {
    if (p->gprev)
      p->gprev->gnext = p->gnext;
    else
      g->pods = p->gnext;
    if (p->gnext)
      p->gnext->gprev = p->gprev;
    if (--g->n == 0) {
      gb_htab_remove(&m->gangs, &g->h);
      m->record_bytes -= sizeof(*g) + strlen(g->key) + 1;
      free(g->key);
      free(g);
    }
  }
  tolset_put(m, p->tol);
  gb_htab_remove(&m->pods, &p->h);
  m->n_pods--;
  m->record_bytes -= p->bytes;
  free(p);
}

static struct pod_rec *pod_new(const struct pod_in *in) {
  const char *strs[6] = {in->ns, in->name, in->uid, in->rv, in->rjob, in->msg};
  size_t lens[6], total = 0;
  for (int i = 0; i < 6; i++)
    total += (lens[i] = strlen(strs[i] ? strs[i] : "")) + 1;
  if (lens[5] > GB_MODEL_MSG_MAX) {
    total -= lens[5] - GB_MODEL_MSG_MAX;
    lens[5] = GB_MODEL_MSG_MAX;
  }
  if (total > UINT16_MAX)
    return NULL;
  size_t size = sizeof(struct pod_rec) + in->n_req * (sizeof(int64_t) + sizeof(uint16_t)) + total;
  struct pod_rec *p = calloc(1, size);
  if (!p)
    return NULL;
  p->bytes = (uint32_t)size;
  p->n_req = (uint8_t)in->n_req;
  memcpy(p->val, in->val, in->n_req * sizeof(int64_t));
  memcpy(pod_rid(p), in->rid, in->n_req * sizeof(uint16_t));
  char *w = pod_str(p);
  uint16_t *offs[6] = {NULL, &p->o_name, &p->o_uid, &p->o_rv, &p->o_rjob, &p->o_msg};
  for (int i = 0; i < 6; i++) {
    if (offs[i])
      *offs[i] = (uint16_t)(w - pod_str(p));
    memcpy(w, strs[i] ? strs[i] : "", lens[i]);
    w[lens[i]] = '\0';
    w += lens[i] + 1;
  }
  p->h.hash = key2_hash(in->ns, in->name);
  p->phase = (uint8_t)in->phase;
  p->gated = (uint8_t)in->gated;
  p->n_gates = (uint16_t)(in->n_gates > UINT16_MAX ? UINT16_MAX : in->n_gates);
  p->unsched = (uint8_t)in->unsched;
  p->created_ms = in->created_ms;
  p->priority = in->priority;
  p->since_ms = in->since_ms;
  return p;
}

static void view_of(const struct gb_model *m, const struct pod_rec *p, const char **res,
                    struct gb_pod_view *v) {
  const char *str = pod_str(p);
  uint16_t *rid = pod_rid(p);
  for (size_t i = 0; i < p->n_req; i++)
    res[i] = m->res_name[rid[i]];
  *v = (struct gb_pod_view){.ns = str,
                            .name = str + p->o_name,
                            .uid = str + p->o_uid,
                            .resource_version = str + p->o_rv,
                            .node = p->node ? p->node->name : "",
                            .jobset = p->gang ? p->gang->key + p->gang->ns_len + 1 : "",
                            .rjob = str + p->o_rjob,
                            .phase = p->phase,
                            .placement_gated = p->gated,
                            .n_gates = p->n_gates,
                            .created_ms = p->created_ms,
                            .priority = p->priority,
                            .unschedulable = p->unsched,
                            .unschedulable_since_ms = p->since_ms,
                            .unschedulable_msg = str + p->o_msg,
                            .n_req = p->n_req,
                            .res = res,
                            .val = p->val};
}

/* Tells the plan that a gang pod just bound (one pod's reservation goes
 * back). */
static void tell_plan_bound(struct gb_model *m, const struct pod_rec *p) {
  if (!m->o.plan || !m->s || !p->gang || !p->node || p->node->slot < 0)
    return;
  const char *res[GB_MODEL_MAX_POD_RES];
  uint16_t *rid = pod_rid(p);
  for (size_t i = 0; i < p->n_req; i++)
    res[i] = m->res_name[rid[i]];
  gb_plan_pod_bound(m->o.plan, m->s, p->gang->key, (uint32_t)p->node->slot, p->n_req, res, p->val);
}

static void copy_gang(const struct pod_rec *p, char *gang_ns, char *gang_js) {
  if (!p || !p->gang || !gang_ns)
    return;
  snprintf(gang_ns, GB_PLAN_KEY_MAX + 1, "%.*s", (int)p->gang->ns_len, p->gang->key);
  snprintf(gang_js, GB_PLAN_KEY_MAX + 1, "%s", p->gang->key + p->gang->ns_len + 1);
}

/* 1 when the new record p (not linked yet; in for its node and jobset)
 * differs from old in anything but the resourceVersion: a status update
 * that changes nothing the model keeps must not bump the generation. */
static int pod_differs(const struct pod_rec *old, const struct pod_rec *p,
                       const struct pod_in *in) {
  const char *on = old->node ? old->node->name : "", *nn = in->node ? in->node : "";
  const char *oj = old->gang ? old->gang->key + old->gang->ns_len + 1 : "";
  const char *nj = in->jobset ? in->jobset : "";
  const char *os = pod_str(old), *ps = pod_str(p);
  if (strcmp(on, nn) || strcmp(oj, nj) || old->tol != p->tol || old->phase != p->phase ||
      old->gated != p->gated || old->n_gates != p->n_gates || old->unsched != p->unsched ||
      old->since_ms != p->since_ms || old->priority != p->priority ||
      old->created_ms != p->created_ms || old->n_req != p->n_req)
    return 1;
  if (memcmp(old->val, p->val, p->n_req * sizeof(int64_t)) ||
      memcmp(pod_rid(old), pod_rid(p), p->n_req * sizeof(uint16_t)))
    return 1;
  return strcmp(os + old->o_uid, ps + p->o_uid) || strcmp(os + old->o_rjob, ps + p->o_rjob) ||
         strcmp(os + old->o_msg, ps + p->o_msg);
}

/* Replaces (or adds) the record of pod `in`. */
static int pod_upsert(struct gb_model *m, const struct pod_in *in, char *gang_ns, char *gang_js) {
  struct pod_rec *old = pod_find(m, in->ns, in->name);
  struct pod_rec *p = pod_new(in);
  if (!p)
    return GC_ENOMEM;
  if (in->tols && tolset_get(m, in->tols, &p->tol)) {
    free(p);
    return GC_ELIMIT;
  }
  int was_bound = old && old->node;
  m->changed = !old || pod_differs(old, p, in);
  if (old) {
    copy_gang(old, gang_ns, gang_js);
    if (old->counted &&
        (pod_is_terminal(in->phase) || !in->node || strcmp(in->node, old->node->name)))
      m->capacity_due = 1;
    pod_unlink(m, old);
  }
  int rc = pod_link(m, p, in->node ? in->node : "", in->jobset ? in->jobset : "");
  if (rc) {
    pod_unlink(m, p);
    return rc;
  }
  copy_gang(p, gang_ns, gang_js);
  if (!was_bound && p->counted)
    tell_plan_bound(m, p);
  return 0;
}

static int pod_delete(struct gb_model *m, const char *ns, const char *name, char *gang_ns,
                      char *gang_js) {
  struct pod_rec *p = pod_find(m, ns, name);
  if (!p)
    return 0;
  copy_gang(p, gang_ns, gang_js);
  if (p->counted)
    m->capacity_due = 1;
  pod_unlink(m, p);
  m->changed = 1;
  return 0;
}

static int phase_of(const char *s) {
  static const char *const names[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
  for (int i = 0; s && i < 5; i++)
    if (!strcmp(s, names[i]))
      return i;
  return 0;
}

static int64_t time_ms(const char *s) {
  double t;
  return s && gb_leader_parse_time(s, &t) == 0 ? (int64_t)(t * 1000.0) : 0;
}

/* Every pod takes one "pods" from its node, as kube-scheduler counts
 * (the evaluator adds the same one to each gang pod). */
static int add_one_pod(struct gb_model *m, struct pod_in *in) {
  int rid = res_id(m, "pods");
  for (size_t i = 0; i < in->n_req; i++)
    if (in->rid[i] == rid)
      return 0;
  if (rid < 0 || in->n_req == GB_MODEL_MAX_POD_RES)
    return 0;
  in->rid[in->n_req] = (uint16_t)rid;
  in->val[in->n_req++] = 1;
  return 0;
}

/* The pod's requests by the pod-request rule, in the snapshot's units. */
static int pod_requests(struct gb_model *m, json_object *spec, struct pod_in *in,
                        struct gc_diags *diags) {
  struct gc_value *v = NULL;
  struct gc_podreq pr;
  char where[2 * TP_MAX_NAME + 16];
  snprintf(where, sizeof(where), "Pod %s/%s: spec", in->ns, in->name);
  int rc = spec ? gb_kube_client_json_to_value(m->scratch, spec, 0, &v) : 0;
  if (!rc && (rc = gc_podreq_compute(m->scratch, v, NULL, &pr, NULL)) == GC_EINVAL)
    gc_podreq_compute(m->scratch, v, where, &pr, diags);
  if (rc)
    return rc;
  if (pr.request.n > GB_MODEL_MAX_POD_RES) {
    gc_diags_addf(diags, "%s: requests %zu resources, at most %d are kept", where, pr.request.n,
                  GB_MODEL_MAX_POD_RES);
    return GC_ELIMIT;
  }
  for (size_t i = 0; i < pr.request.n; i++) {
    const struct gc_resource *r = &pr.request.items[i];
    int64_t units;
    int rid;
    if (tp_snapshot_quantity_to_units(r->name, &r->q, &units)) {
      gc_diags_addf(diags, "%s: requests of %s do not fit an int64", where, r->name);
      return GC_ERANGE;
    }
    if (units == 0 || (rid = res_id(m, r->name)) < 0)
      continue;
    in->rid[in->n_req] = (uint16_t)rid;
    in->val[in->n_req++] = units;
  }
  return add_one_pod(m, in);
}

static void pod_conditions(json_object *conds, struct pod_in *in) {
  size_t cnt = conds && json_object_is_type(conds, json_type_array)
                   ? json_object_array_length(conds)
                   : 0;
  for (size_t i = 0; i < cnt; i++) {
    json_object *c = json_object_array_get_idx(conds, i);
    const char *type = gb_kobj_str(c, "type"), *st = gb_kobj_str(c, "status");
    if (!type || strcmp(type, "PodScheduled") || !st || strcmp(st, "False"))
      continue;
    in->unsched = 1;
    in->since_ms = time_ms(gb_kobj_str(c, "lastTransitionTime"));
    in->msg = gb_kobj_str(c, "message");
  }
}

static void pod_gates(json_object *gates, struct pod_in *in) {
  size_t cnt = gates && json_object_is_type(gates, json_type_array)
                   ? json_object_array_length(gates)
                   : 0;
  in->n_gates = (unsigned)cnt;
  for (size_t i = 0; i < cnt; i++) {
    const char *g = gb_kobj_str(json_object_array_get_idx(gates, i), "name");
    if (g && !strcmp(g, GB_PLACEMENT_GATE))
      in->gated = 1;
  }
}

/* Reads a (trimmed) Pod object into in; strings stay borrowed from obj. */
static int pod_parse(struct gb_model *m, json_object *obj, struct pod_in *in,
                     struct gc_diags *diags) {
  json_object *md = gb_kobj_get(obj, "metadata"), *spec = gb_kobj_get(obj, "spec");
  memset(in, 0, sizeof(*in));
  in->ns = gb_kobj_str(md, "namespace");
  in->name = gb_kobj_str(md, "name");
  if (!in->name || !*in->name || strlen(in->name) > TP_MAX_NAME ||
      (in->ns && strlen(in->ns) > TP_MAX_NAME)) {
    gc_diags_addf(diags, "Pod: metadata.name: required, at most %d bytes", TP_MAX_NAME);
    return GC_EINVAL;
  }
  in->ns = in->ns ? in->ns : "";
  in->uid = gb_kobj_str(md, "uid");
  in->rv = gb_kobj_str(md, "resourceVersion");
  in->created_ms = time_ms(gb_kobj_str(md, "creationTimestamp"));
  in->jobset = gb_kobj_label(obj, JS_LABEL);
  in->rjob = gb_kobj_label(obj, RJ_LABEL);
  in->node = gb_kobj_str(spec, "nodeName");
  json_object *prio = gb_kobj_get(spec, "priority");
  in->priority = prio ? json_object_get_int64(prio) : 0;
  in->tols = gb_kobj_get(spec, "tolerations");
  in->phase = phase_of(gb_kobj_str(gb_kobj_get(obj, "status"), "phase"));
  pod_gates(gb_kobj_get(spec, "schedulingGates"), in);
  pod_conditions(gb_kobj_dig(obj, "status", "conditions", NULL), in);
  if (in->jobset && strlen(in->jobset) > TP_MAX_NAME)
    in->jobset = NULL;
  return pod_requests(m, spec, in, diags);
}

/* ---- HyperNodes ------------------------------------------------------------ */

struct hn_rec {
  struct gb_hnode h;
  char *name;
  char *json; /* the object's compact text */
};

static struct hn_rec *hn_find(struct gb_model *m, const char *name) {
  uint64_t h = gb_hash_str(name);
  for (struct gb_hnode *e = gb_htab_chain(&m->hns, h); e; e = e->next)
    if (e->hash == h && !strcmp(((struct hn_rec *)e)->name, name))
      return (struct hn_rec *)e;
  return NULL;
}

static void hn_free(struct gb_hnode *e, void *ctx) {
  struct hn_rec *r = (struct hn_rec *)e;
  struct gb_model *m = ctx;
  m->record_bytes -= sizeof(*r) + strlen(r->name) + strlen(r->json) + 2;
  free(r->name);
  free(r->json);
  free(r);
}

/* A HyperNode changed: kept as text (they are few), the snapshot is marked
 * for one rebuild however many change in a burst. */
static int hn_apply(struct gb_model *m, int op, json_object *obj, struct gc_diags *diags) {
  const char *name = gb_kobj_str(gb_kobj_get(obj, "metadata"), "name");
  if (!name || !*name || strlen(name) > TP_MAX_NAME) {
    gc_diags_addf(diags, "HyperNode: metadata.name: required, at most %d bytes", TP_MAX_NAME);
    return GC_EINVAL;
  }
  struct hn_rec *r = hn_find(m, name);
  if (op == 1) {
    if (r) {
      gb_htab_remove(&m->hns, &r->h);
      hn_free(&r->h, m);
      m->dirty = m->changed = 1;
    }
    return 0;
  }
  /* The text compared and kept is the spec alone: metadata changes on
   * every update, and the builder only needs the name besides. */
  const char *text = json_object_to_json_string_ext(gb_kobj_get(obj, "spec"),
                                                    JSON_C_TO_STRING_PLAIN);
  if (strlen(text) > GB_MODEL_MAX_HN_BYTES) {
    gc_diags_addf(diags, "HyperNode/%s: larger than %u bytes", name, GB_MODEL_MAX_HN_BYTES);
    return GC_ELIMIT;
  }
  if (r && !strcmp(r->json, text))
    return 0;
  char *copy = strdup(text);
  if (!copy)
    return GC_ENOMEM;
  if (!r) {
    if (!(r = calloc(1, sizeof(*r))) || !(r->name = strdup(name))) {
      free(r);
      free(copy);
      return GC_ENOMEM;
    }
    r->h.hash = gb_hash_str(name);
    gb_htab_insert(&m->hns, &r->h);
    m->record_bytes += sizeof(*r) + strlen(name) + 1;
  } else {
    m->record_bytes -= strlen(r->json) + 1;
    free(r->json);
  }
  r->json = copy;
  m->record_bytes += strlen(copy) + 1;
  m->dirty = m->changed = 1;
  return 0;
}

void gb_model_drop_hypernodes(struct gb_model *m) {
  if (m->hns.n)
    m->dirty = 1;
  gb_htab_clear(&m->hns, hn_free, m);
}

/* ---- The snapshot ----------------------------------------------------------- */

/* The HyperNode document the builder reads, from the kept spec text. */
static int hn_doc(struct gc_arena *a, const struct hn_rec *r, struct gc_value **out) {
  json_object *j = json_tokener_parse(r->json);
  if (!j)
    return GC_EINVAL;
  struct gc_value *spec = NULL, *doc = gc_value_map(a), *md = gc_value_map(a);
  int rc = gb_kube_client_json_to_value(a, j, 0, &spec);
  json_object_put(j);
  if (!rc && (!doc || !md))
    rc = GC_ENOMEM;
  rc = rc ? rc : gc_map_set(a, doc, "apiVersion", gc_value_strz(a, "topology.volcano.sh/v1alpha1"));
  rc = rc ? rc : gc_map_set(a, doc, "kind", gc_value_strz(a, "HyperNode"));
  rc = rc ? rc : gc_map_set(a, md, "name", gc_value_strz(a, r->name));
  rc = rc ? rc : gc_map_set(a, doc, "metadata", md);
  rc = rc ? rc : gc_map_set(a, doc, "spec", spec);
  *out = doc;
  return rc;
}

/* Builds a snapshot from every present node (and the HyperNodes unless
 * with_hn is 0) into *out. */
static int build_from_records(struct gb_model *m, int with_hn, struct tp_snapshot **out,
                              struct gc_diags *diags) {
  size_t cap = m->n_nodes + (with_hn ? m->hns.n : 0), n = 0, b = 0;
  const struct gc_value **docs = calloc(cap ? cap : 1, sizeof(*docs));
  struct gc_arena *a = gc_arena_new((size_t)16 << 30);
  int rc = docs && a ? 0 : GC_ENOMEM;
  for (struct gb_hnode *e = NULL; !rc && (e = gb_htab_next(&m->nodes, &b, e));) {
    struct node_rec *nr = (struct node_rec *)e;
    struct gc_value *d;
    if (nr->present && n < cap && !(rc = node_doc(m, a, nr, &d)))
      docs[n++] = d;
  }
  b = 0;
  for (struct gb_hnode *e = NULL; !rc && with_hn && (e = gb_htab_next(&m->hns, &b, e));) {
    struct gc_value *d;
    if (n < cap && !(rc = hn_doc(a, (struct hn_rec *)e, &d)))
      docs[n++] = d;
  }
  struct tp_build_opts bo = {.levels = (const char *const *)m->levels,
                             .n_levels = m->o.n_levels,
                             .missing_members_ok = 1,
                             .drop_invalid_hypernodes = 1};
  if (!rc)
    rc = tp_snapshot_build(docs, NULL, n, &bo, out, diags);
  free(docs);
  gc_arena_free(a);
  return rc;
}

/* Installs a new snapshot: every node's slot, exclusion and counted pods. */
static void install(struct gb_model *m, struct tp_snapshot *s) {
  tp_snapshot_free(m->s);
  m->s = s;
  memset(m->snap_r, -1, sizeof(m->snap_r));
  size_t b = 0;
  for (struct gb_hnode *e = NULL; (e = gb_htab_next(&m->nodes, &b, e));) {
    struct node_rec *n = (struct node_rec *)e;
    n->slot = n->present ? tp_snapshot_node(s, n->name) : -1;
    if (n->slot < 0)
      continue;
    const char *why = node_excl_reason(n);
    if (why)
      tp_snapshot_set_excluded(s, n->name, why);
    for (struct pod_rec *p = n->pods; p; p = p->nnext)
      pod_charge(m, p, 1);
  }
  if (m->o.plan)
    gb_plan_reapply(m->o.plan, s);
  m->arena_at_build = gc_arena_used(s->arena);
  m->generation++;
  m->rebuilds++;
  m->dirty = 0;
  m->capacity_due = 1;
  gb_model_note_drops(m);
}

int gb_model_rebuild_if_due(struct gb_model *m) {
  if (!m->fed_done || (m->s && !m->dirty))
    return 0;
  struct gc_diags d;
  gc_diags_init(&d);
  struct tp_snapshot *s = NULL;
  int rc = build_from_records(m, 1, &s, &d);
  if (rc && m->hns.n) {
    const char *why = gc_diag_strerror(rc);
    for (size_t i = d.n; i-- > 0;)
      if (!d.is_warning[i])
        why = d.msgs[i];
    snprintf(m->last_error, sizeof(m->last_error), "%s", why);
    gb_log(GB_LOG_ERROR, "cannot build the topology from HyperNodes", "error", m->last_error, NULL);
    if (m->s) { /* keep the last good tree until the HyperNodes change again */
      m->dirty = 0;
      gc_diags_destroy(&d);
      return rc;
    }
    rc = build_from_records(m, 0, &s, NULL);
  }
  gc_diags_destroy(&d);
  if (rc)
    return rc;
  install(m, s);
  return 0;
}

/* ---- Applying changes ------------------------------------------------------- */

static int pod_apply(struct gb_model *m, int op, json_object *obj, char *gang_ns, char *gang_js,
                     struct gc_diags *diags) {
  m->pod_events++;
  if (op == 1) {
    json_object *md = gb_kobj_get(obj, "metadata");
    const char *ns = gb_kobj_str(md, "namespace"), *name = gb_kobj_str(md, "name");
    return name ? pod_delete(m, ns ? ns : "", name, gang_ns, gang_js) : GC_EINVAL;
  }
  struct pod_in in;
  gc_arena_reset(m->scratch);
  int rc = pod_parse(m, obj, &in, diags);
  return rc ? rc : pod_upsert(m, &in, gang_ns, gang_js);
}

int gb_model_apply(struct gb_model *m, int kind, int op, json_object *obj, char *gang_ns,
                   char *gang_js, struct gc_diags *diags) {
  int rc;
  m->changed = 0;
  if (kind == GB_INF_NODE) {
    m->node_events++;
    rc = op == 1 ? node_delete(m, obj) : node_upsert(m, obj, diags);
  } else if (kind == GB_INF_POD) {
    rc = pod_apply(m, op, obj, gang_ns, gang_js, diags);
  } else if (kind == GB_INF_HN) {
    rc = hn_apply(m, op, obj, diags);
  } else {
    return GC_EINVAL;
  }
  if (rc || !m->changed)
    return rc;
  m->generation++;
  /* Names and exclusion reasons accumulate in the snapshot's arena as
   * nodes come and go: compact by a rebuild once it has doubled. */
  if (m->s && gc_arena_used(m->s->arena) > 2 * m->arena_at_build + ((size_t)16 << 20))
    m->dirty = 1;
  return 0;
}

void gb_model_flush_capacity(struct gb_model *m) {
  pthread_mutex_lock(&m->mu);
  int due = m->capacity_due && m->s;
  if (due)
    m->capacity_due = 0;
  pthread_mutex_unlock(&m->mu);
  if (due && m->o.on_capacity)
    m->o.on_capacity(m->o.arg);
}

/* ---- What the records read (the informers keep nothing else for the model) -- */

static const struct gb_keep POD_KEEP[] = {
    {{"metadata", "name"}},
    {{"metadata", "namespace"}},
    {{"metadata", "uid"}},
    {{"metadata", "resourceVersion"}},
    {{"metadata", "creationTimestamp"}},
    {{"metadata", "labels", JS_LABEL}},
    {{"metadata", "labels", RJ_LABEL}},
    {{"spec", "nodeName"}},
    {{"spec", "priority"}},
    {{"spec", "schedulingGates"}},
    /* Not read by the records: the placer's release builds its merge patch
     * from the cached pod (gb_model_pod_json), and the patch replaces the
     * gates and these terms whole. */
    {{"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"}},
    {{"spec", "tolerations"}},
    {{"spec", "containers", "[]", "name"}},
    {{"spec", "containers", "[]", "resources"}},
    {{"spec", "containers", "[]", "restartPolicy"}},
    {{"spec", "initContainers", "[]", "name"}},
    {{"spec", "initContainers", "[]", "resources"}},
    {{"spec", "initContainers", "[]", "restartPolicy"}},
    {{"spec", "overhead"}},
    {{"spec", "resources"}},
    {{"status", "phase"}},
    {{"status", "conditions", "[type=PodScheduled]", "type"}},
    {{"status", "conditions", "[type=PodScheduled]", "status"}},
    {{"status", "conditions", "[type=PodScheduled]", "lastTransitionTime"}},
    {{"status", "conditions", "[type=PodScheduled]", "message"}},
};

static const struct gb_keep NODE_KEEP[] = {
    {{"metadata", "name"}},
    {{"metadata", "uid"}},
    {{"metadata", "resourceVersion"}},
    {{"metadata", "labels"}},
    {{"spec", "unschedulable"}},
    {{"spec", "taints"}},
    {{"status", "allocatable"}},
    {{"status", "conditions", "[type=Ready]"}},
};

/* The record compares texts to see a topology change: only what the
 * builder reads (a status update also bumps resourceVersion). */
static const struct gb_keep HN_KEEP[] = {
    {{"metadata", "name"}}, {{"metadata", "resourceVersion"}}, {{"spec"}}};

/* The HyperNode CRD: only that it changed (its name). */
static const struct gb_keep CRD_KEEP[] = {{{"metadata", "name"}}};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

void gb_model_keep(int kind, const struct gb_keep **keep, size_t *n) {
  static const struct {
    const struct gb_keep *k;
    size_t n;
  } of[GB_INF_N] = {{NODE_KEEP, N_OF(NODE_KEEP)},
                    {POD_KEEP, N_OF(POD_KEEP)},
                    {HN_KEEP, N_OF(HN_KEEP)},
                    {CRD_KEEP, N_OF(CRD_KEEP)}};
  *keep = of[kind].k;
  *n = of[kind].n;
}

/* What an informer whose only consumer is the model caches of the object
 * text json, so the feed sees what the watch would: decoded straight to the
 * model's keep paths (managedFields is on none of them), as the watch
 * decodes an event.  Returns 0 or a GC_E* code with the message in diags. */
static int decode_as_informer(int kind, const char *name, const char *json, size_t len,
                              json_object **out, struct gc_diags *diags) {
  const struct gb_keep *keep, *ptrs[GB_KEEP_MAX];
  size_t n;
  gb_model_keep(kind, &keep, &n);
  for (size_t i = 0; i < n; i++)
    ptrs[i] = &keep[i];
  json_tokener *tok = json_tokener_new_ex(GB_WATCH_DEFAULT_DEPTH);
  if (!tok)
    return GC_ENOMEM;
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  struct gb_sj s;
  gb_sj_init(&s, json, len);
  s.max_depth = GB_WATCH_DEFAULT_DEPTH - 1; /* json-c's depth counts one more */
  int rc = gb_sj_peek(&s) == '{' ? gb_keep_decode(&s, ptrs, n, tok, out) : GC_EINVAL;
  if (!rc)
    rc = gb_sj_finish(&s);
  json_tokener_free(tok);
  if (rc) {
    gc_diags_addf(diags, "model feed: %s: not a JSON object%s%s", name, s.msg[0] ? ": " : "",
                  s.msg);
    json_object_put(*out);
    *out = NULL;
  }
  return rc;
}

/* ---- Lifecycle ---------------------------------------------------------------- */

int gb_model_new(const struct gb_model_opts *o, struct gb_model **out, struct gc_diags *diags) {
  *out = NULL;
  if (!o || o->n_levels > TP_MAX_LEVELS || (o->n_levels && !o->levels)) {
    gc_diags_addf(diags, "model: at most %d label levels", TP_MAX_LEVELS);
    return GC_EINVAL;
  }
  struct gb_model *m = calloc(1, sizeof(*m));
  if (!m)
    return GC_ENOMEM;
  m->o = *o;
  int rc = 0;
  if (o->n_levels && !(m->levels = calloc(o->n_levels, sizeof(char *))))
    rc = GC_ENOMEM;
  for (size_t i = 0; !rc && i < o->n_levels; i++) {
    if (!o->levels[i] || !*o->levels[i]) {
      gc_diags_addf(diags, "model: levels[%zu]: empty label key", i);
      rc = GC_EINVAL;
    } else if (!(m->levels[i] = strdup(o->levels[i]))) {
      rc = GC_ENOMEM;
    }
  }
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE); /* blocked_mask inside with_snapshot */
  pthread_mutex_init(&m->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  /* The tick's deadline is a CLOCK_MONOTONIC time (gb_clock_deadline): a
   * condition on the default realtime clock would see it as long past and
   * the housekeeping thread would spin. */
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&m->cond, &ca);
  pthread_condattr_destroy(&ca);
  m->o.levels = NULL; /* m->levels holds the copies */
  if (!rc && (gb_htab_init(&m->pods, 1024) || gb_htab_init(&m->nodes, 256) ||
              gb_htab_init(&m->gangs, 64) || gb_htab_init(&m->tols, 16) ||
              gb_htab_init(&m->hns, 16) || !(m->scratch = gc_arena_new(SCRATCH_LIMIT))))
    rc = GC_ENOMEM;
  memset(m->snap_r, -1, sizeof(m->snap_r));
  if (!rc && o->informers)
    rc = gb_model_register(m, diags);
  if (rc) {
    gb_model_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

void gb_model_listen(struct gb_model *m, gb_model_gang_fn on_gang, gb_model_capacity_fn on_capacity,
                     void *arg) {
  m->o.on_gang = on_gang;
  m->o.on_capacity = on_capacity;
  m->o.arg = arg;
}

static void free_pod(struct gb_hnode *e, void *ctx) {
  (void)ctx;
  free(e);
}

static void free_node(struct gb_hnode *e, void *ctx) {
  (void)ctx;
  struct node_rec *n = (struct node_rec *)e;
  node_free_parts(n);
  free(n->name);
  free(n);
}

static void free_gang(struct gb_hnode *e, void *ctx) {
  (void)ctx;
  free(((struct gang_rec *)e)->key);
  free(e);
}

static void free_tol(struct gb_hnode *e, void *ctx) {
  (void)ctx;
  tolset_free((struct tolset *)e);
}

void gb_model_free(struct gb_model *m) {
  if (!m)
    return;
  gb_model_stop(m);
  gb_model_watch_free(m);
  gb_model_drops_free(m);
  gb_htab_clear(&m->pods, free_pod, NULL);
  gb_htab_clear(&m->nodes, free_node, NULL);
  gb_htab_clear(&m->gangs, free_gang, NULL);
  gb_htab_clear(&m->tols, free_tol, NULL);
  gb_htab_clear(&m->hns, hn_free, m);
  gb_htab_free(&m->pods);
  gb_htab_free(&m->nodes);
  gb_htab_free(&m->gangs);
  gb_htab_free(&m->tols);
  gb_htab_free(&m->hns);
  tp_snapshot_free(m->s);
  for (size_t i = 0; i < m->n_res; i++)
    free((char *)m->res_name[i]);
  for (size_t i = 0; m->levels && i < m->o.n_levels; i++)
    free(m->levels[i]);
  free(m->levels);
  gc_arena_free(m->scratch);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cond);
  free(m);
}

/* ---- Reading ----------------------------------------------------------------- */

int gb_model_with_snapshot(struct gb_model *m, gb_model_snapshot_fn fn, void *arg) {
  pthread_mutex_lock(&m->mu);
  if (m->depth == 0)
    gb_model_rebuild_if_due(m);
  int rc = GC_ENOTFOUND;
  if (m->s) {
    m->depth++;
    rc = fn(arg, m->s, m->generation);
    m->depth--;
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

static int cmp_pod_age(const void *a, const void *b) {
  const struct pod_rec *x = *(const struct pod_rec *const *)a,
                       *y = *(const struct pod_rec *const *)b;
  if (x->created_ms != y->created_ms)
    return x->created_ms < y->created_ms ? -1 : 1;
  return strcmp(pod_str(x) + x->o_name, pod_str(y) + y->o_name);
}

int gb_model_foreach_gang(struct gb_model *m, gb_model_gang_key_fn fn, void *arg) {
  int rc = 0;
  size_t b = 0;
  pthread_mutex_lock(&m->mu);
  for (struct gb_hnode *e = NULL; !rc && (e = gb_htab_next(&m->gangs, &b, e));) {
    const struct gang_rec *g = (const struct gang_rec *)e;
    if (g->n)
      rc = fn(arg, g->key);
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int gb_model_foreach_gated_pod(struct gb_model *m, gb_pod_view_fn fn, void *arg) {
  int rc = 0;
  size_t b = 0;
  pthread_mutex_lock(&m->mu);
  for (struct gb_hnode *e = NULL; !rc && (e = gb_htab_next(&m->pods, &b, e));) {
    const struct pod_rec *p = (const struct pod_rec *)e;
    if (!p->gated)
      continue;
    const char *res[GB_MODEL_MAX_POD_RES];
    struct gb_pod_view view;
    view_of(m, p, res, &view);
    rc = fn(arg, &view);
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int gb_model_foreach_gang_pod(struct gb_model *m, const char *ns, const char *jobset,
                              gb_pod_view_fn fn, void *arg) {
  int rc = 0;
  pthread_mutex_lock(&m->mu);
  struct gang_rec *g = gang_get(m, ns, jobset, 0);
  /* A gang record may outlive its last pod (n == 0): nothing to visit, and
   * neither malloc(0) nor qsort of a NULL array. */
  struct pod_rec **v = g && g->n ? malloc(g->n * sizeof(*v)) : NULL;
  if (g && g->n && !v)
    rc = GC_ENOMEM;
  size_t n = 0;
  for (struct pod_rec *p = v ? g->pods : NULL; p; p = p->gnext)
    v[n++] = p;
  if (n > 1)
    qsort(v, n, sizeof(*v), cmp_pod_age);
  for (size_t i = 0; i < n && !rc; i++) {
    const char *res[GB_MODEL_MAX_POD_RES];
    struct gb_pod_view view;
    view_of(m, v[i], res, &view);
    rc = fn(arg, &view);
  }
  free(v);
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int gb_model_blocked_mask(struct gb_model *m, const struct tp_snapshot *s, const char *ns,
                          const char *pod, uint8_t **mask) {
  *mask = NULL;
  int rc = 0;
  pthread_mutex_lock(&m->mu);
  struct pod_rec *p = pod_find(m, ns, pod);
  if (!p || s != m->s)
    rc = p ? GC_EUSAGE : GC_ENOTFOUND;
  size_t b = 0, slots = s ? tp_snapshot_slot_count(s) : 0;
  for (struct gb_hnode *e = NULL; !rc && (e = gb_htab_next(&m->nodes, &b, e));) {
    struct node_rec *n = (struct node_rec *)e;
    if (n->slot < 0 || (size_t)n->slot >= slots || !n->n_taints || !node_blocks(n, p->tol))
      continue;
    if (!*mask && !(*mask = calloc(slots, 1)))
      rc = GC_ENOMEM;
    else
      (*mask)[n->slot] = 1;
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

void gb_model_stats(struct gb_model *m, struct gb_model_stats *out) {
  pthread_mutex_lock(&m->mu);
  *out = (struct gb_model_stats){.generation = m->generation,
                                 .nodes = m->n_nodes,
                                 .pods = m->n_pods,
                                 .hypernodes = m->hns.n,
                                 .domains = m->s ? tp_snapshot_domain_count(m->s) : 0,
                                 .rebuilds = m->rebuilds,
                                 .pod_events = m->pod_events,
                                 .node_events = m->node_events,
                                 .ticks = m->ticks,
                                 .record_bytes = m->record_bytes,
                                 .hn_dropped = m->n_dropped};
  pthread_mutex_unlock(&m->mu);
}

/* ---- The feed ------------------------------------------------------------------ */

static void after_change(struct gb_model *m, const char *gang_ns, const char *gang_js) {
  if (*gang_ns && m->o.on_gang)
    m->o.on_gang(m->o.arg, gang_ns, gang_js);
  if (!m->started) { /* fed: each call is its own burst (the watch coalesces on a timer) */
    gb_model_flush_capacity(m);
    gb_model_flush_drops(m);
  }
}

int gb_model_feed(struct gb_model *m, const char *kind, int op, const char *json,
                  struct gc_diags *diags) {
  int k = !kind                        ? -1
          : !strcmp(kind, "Node")      ? GB_INF_NODE
          : !strcmp(kind, "Pod")       ? GB_INF_POD
          : !strcmp(kind, "HyperNode") ? GB_INF_HN
                                       : -1;
  size_t len = json ? strlen(json) : 0;
  if (k < 0 || (op != 0 && op != 1) || len == 0 || len > MAX_JSON_BYTES) {
    gc_diags_addf(diags,
                  "model feed: kind must be Node, Pod or HyperNode, op 0 or 1, and the "
                  "object 1 to %u bytes",
                  MAX_JSON_BYTES);
    return GC_EINVAL;
  }
  json_object *obj = NULL;
  int drc = decode_as_informer(k, kind, json, len, &obj, diags);
  if (drc)
    return drc == GC_ENOMEM ? drc : GC_EINVAL;
  char gang_ns[GB_PLAN_KEY_MAX + 1] = "", gang_js[GB_PLAN_KEY_MAX + 1] = "";
  pthread_mutex_lock(&m->mu);
  int rc = gb_model_apply(m, k, op, obj, gang_ns, gang_js, diags);
  pthread_mutex_unlock(&m->mu);
  json_object_put(obj);
  after_change(m, gang_ns, gang_js);
  return rc;
}

int gb_model_feed_pod(struct gb_model *m, int op, const struct gb_pod_view *v) {
  if (!v || !v->name || !*v->name || v->n_req > GB_MODEL_MAX_POD_RES || (op != 0 && op != 1))
    return GC_EINVAL;
  char gang_ns[GB_PLAN_KEY_MAX + 1] = "", gang_js[GB_PLAN_KEY_MAX + 1] = "";
  int rc = 0;
  pthread_mutex_lock(&m->mu);
  m->pod_events++;
  m->changed = 0;
  if (op == 1) {
    rc = pod_delete(m, v->ns ? v->ns : "", v->name, gang_ns, gang_js);
  } else {
    struct pod_in in = {.ns = v->ns ? v->ns : "",
                        .name = v->name,
                        .uid = v->uid,
                        .rv = v->resource_version,
                        .node = v->node,
                        .jobset = v->jobset,
                        .rjob = v->rjob,
                        .msg = v->unschedulable_msg,
                        .phase = v->phase,
                        .gated = v->placement_gated,
                        .unsched = v->unschedulable,
                        .n_gates = (unsigned)v->n_gates,
                        .created_ms = v->created_ms,
                        .priority = v->priority,
                        .since_ms = v->unschedulable_since_ms};
    for (size_t i = 0; i < v->n_req; i++) {
      int rid = res_id(m, v->res[i]);
      if (rid >= 0 && v->val[i]) {
        in.rid[in.n_req] = (uint16_t)rid;
        in.val[in.n_req++] = v->val[i];
      }
    }
    add_one_pod(m, &in);
    m->changed = 0;
    rc = pod_upsert(m, &in, gang_ns, gang_js);
  }
  if (!rc && m->changed)
    m->generation++;
  pthread_mutex_unlock(&m->mu);
  after_change(m, gang_ns, gang_js);
  return rc;
}

int gb_model_feed_done(struct gb_model *m) {
  pthread_mutex_lock(&m->mu);
  m->fed_done = 1;
  int rc = gb_model_rebuild_if_due(m);
  if (!rc)
    m->synced = 1;
  pthread_mutex_unlock(&m->mu);
  if (!m->started) {
    gb_model_flush_capacity(m);
    gb_model_flush_drops(m);
  }
  return rc;
}
