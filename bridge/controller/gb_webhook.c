/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_webhook: Pod mutating admission for PodGroup binding (see gb_webhook.h).
 *
 * A review runs in three steps: validate the envelope (anything wrong before
 * the uid is known is an HTTP error), decide (every outcome after that is an
 * AdmissionReview answer), and build the JSON Patch.  Binding only uses
 * "add", which RFC 6902 defines as "replace" for an existing object member,
 * so the same operation sets a missing key or corrects a wrong one.
 * Unbinding uses "remove", only for keys the pod has: removing a missing
 * member fails the whole patch.  Every string read from the review goes
 * through get_str_checked first, so a NUL byte is refused, never cut.
 */
#include "gb_webhook.h"
#include "gb_webhook_test.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gb_base64.h"
#include "gb_gate.h"
#include "gb_kobj.h"
#include "gb_log.h"
#include "gb_metrics.h"
#include "gb_reconcile.h"

#define ADMISSION_API "admission.k8s.io/v1"
#define JSON_DEPTH 64
#define MAX_WARNINGS 8

struct gb_webhook {
  struct gb_webhook_config cfg;
};

int gb_webhook_new(const struct gb_webhook_config *cfg, struct gb_webhook **out) {
  if (!cfg || !cfg->lookup || !out)
    return GC_EINVAL;
  struct gb_webhook *wh = calloc(1, sizeof(*wh));
  if (!wh)
    return GC_ENOMEM;
  wh->cfg = *cfg;
  if (!wh->cfg.max_body)
    wh->cfg.max_body = GB_WEBHOOK_DEFAULT_MAX_BODY;
  if (wh->cfg.max_body > GB_WEBHOOK_MAX_BODY_LIMIT)
    wh->cfg.max_body = GB_WEBHOOK_MAX_BODY_LIMIT; /* json-c takes an int length */
  *out = wh;
  return 0;
}

void gb_webhook_free(struct gb_webhook *wh) { free(wh); }

int gb_webhook_json_pointer_escape(const char *key, char *buf, size_t size) {
  size_t n = 0;
  for (const char *p = key; *p; p++) {
    const char *rep = *p == '~' ? "~0" : *p == '/' ? "~1" : NULL;
    size_t add = rep ? 2 : 1;
    if (n + add + 1 > size)
      return GC_ELIMIT;
    if (rep) {
      buf[n++] = rep[0];
      buf[n++] = rep[1];
    } else {
      buf[n++] = *p;
    }
  }
  if (n + 1 > size)
    return GC_ELIMIT;
  buf[n] = '\0';
  return 0;
}

/* ---- which PodGroup a pod may join ------------------------------------ */

static const char *pg_str(const struct gc_value *pg, const char *path) {
  const char *s = gc_value_as_str(gc_value_path(pg, path));
  return s ? s : "";
}

static int controlled_by(const struct gc_value *pg, const char *uid) {
  const struct gc_value *refs = gc_value_path(pg, "metadata.ownerReferences");
  if (!refs || refs->type != GC_SEQ || !uid || !*uid)
    return 0;
  for (size_t i = 0; i < refs->len; i++) {
    const struct gc_value *ref = refs->u.items[i];
    const struct gc_value *ctl = gc_map_get(ref, "controller");
    const char *ruid = gc_value_as_str(gc_map_get(ref, "uid"));
    if (ctl && ctl->type == GC_BOOL && ctl->u.b && ruid && !strcmp(ruid, uid))
      return 1;
  }
  return 0;
}

static const char *num_text(const struct gc_value *v, char *buf, size_t size) {
  if (v && v->type == GC_INT)
    snprintf(buf, size, "%lld", (long long)v->u.i);
  else
    snprintf(buf, size, "%s", v ? gc_type_name(v->type) : "none");
  return buf;
}

int gb_webhook_podgroup_bindable(const struct gc_value *pg, const char *trainjob_uid,
                                 const struct gc_value *desired, char *why, size_t why_size) {
  if (!pg)
    return 1;
  const char *ns = pg_str(pg, "metadata.namespace"), *name = pg_str(pg, "metadata.name");
  const char *mb = gc_value_as_str(gc_map_get(gc_value_path(pg, "metadata.labels"),
                                              GC_MANAGED_BY_LABEL));
  if (!mb || strcmp(mb, GC_MANAGER_NAME)) {
    snprintf(why, why_size, "PodGroup %.100s/%.100s is not managed by gangbridge (label %s=%.60s)",
             ns, name, GC_MANAGED_BY_LABEL, mb ? mb : "(none)");
    return 0;
  }
  if (!controlled_by(pg, trainjob_uid)) {
    snprintf(why, why_size, "PodGroup %.100s/%.100s is not controlled by the TrainJob (uid %.40s)",
             ns, name, trainjob_uid ? trainjob_uid : "(none)");
    return 0;
  }
  const struct gc_value *want = gc_value_path(desired, "spec");
  const struct gc_value *have = gc_value_path(pg, "spec");
  if (want && !gb_reconcile_value_subset(want, have)) {
    char a[32], b[32];
    const struct gc_value *wm = gc_map_get(want, "minMember"), *hm = gc_map_get(have, "minMember");
    if (!gc_value_equal(wm, hm))
      snprintf(why, why_size, "PodGroup %.100s/%.100s waits for minMember %s, the gang has %s",
               ns, name, num_text(hm, a, sizeof(a)), num_text(wm, b, sizeof(b)));
    else
      snprintf(why, why_size, "PodGroup %.100s/%.100s has a spec other than the gang's", ns,
               name);
    return 0;
  }
  return 1;
}

/* ---- strings with a NUL byte ------------------------------------------- */

/* 1 when a JSON string holds a NUL byte: json-c keeps the decoded length, so
 * a "\u0000" shows as a length longer than the C string, which every
 * strcmp/printf here would silently cut. */
static int has_nul(json_object *s) {
  return (size_t)json_object_get_string_len(s) != strlen(json_object_get_string(s));
}

/* Reads the string member `key` of o into *out (NULL when absent or not a
 * string).  Returns 0, or 1 when it holds a NUL byte: then *out is NULL and
 * the caller refuses the review naming `field`. */
static int get_str_checked(json_object *o, const char *key, const char **out) {
  json_object *v = gb_kobj_get(o, key);
  *out = NULL;
  if (!v || !json_object_is_type(v, json_type_string))
    return 0;
  if (has_nul(v))
    return 1;
  *out = json_object_get_string(v);
  return 0;
}

/* ---- answers ---------------------------------------------------------- */

struct answer {
  int status;
  char *body;
  size_t len;
  const char *ctype;
};

static int text_answer(struct answer *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int text_answer(struct answer *a, int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  size_t n = strlen(msg);
  a->body = malloc(n + 2);
  if (!a->body)
    return GC_ENOMEM;
  memcpy(a->body, msg, n);
  a->body[n] = '\n';
  a->body[n + 1] = '\0';
  a->len = n + 1;
  a->status = status;
  a->ctype = "text/plain; charset=utf-8";
  char code[8];
  snprintf(code, sizeof(code), "%d", status);
  gb_log(GB_LOG_WARN, "admission review rejected", "status", code, "reason", msg, NULL);
  return 0;
}

/* What one review decided, before it is written out. */
struct verdict {
  int allowed;
  int deny_code;
  char deny_msg[512];
  const char *warnings[MAX_WARNINGS]; /* each points into warn_buf */
  char warn_buf[MAX_WARNINGS][384];
  size_t n_warnings;
  json_object *patch; /* array of operations, or NULL */
};

static void warn(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct verdict *v, const char *fmt, ...) {
  if (v->n_warnings >= MAX_WARNINGS)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->warn_buf[v->n_warnings], sizeof(v->warn_buf[0]), fmt, ap);
  va_end(ap);
  v->warnings[v->n_warnings] = v->warn_buf[v->n_warnings];
  v->n_warnings++;
}

static int review_answer(struct answer *a, const char *uid, struct verdict *v) {
  int rc = GC_ENOMEM;
  json_object *root = json_object_new_object();
  json_object *resp = json_object_new_object();
  if (!root || !resp)
    goto out;
  json_object_object_add(root, "apiVersion", json_object_new_string(ADMISSION_API));
  json_object_object_add(root, "kind", json_object_new_string("AdmissionReview"));
  json_object_object_add(resp, "uid", json_object_new_string(uid));
  json_object_object_add(resp, "allowed", json_object_new_boolean(v->allowed));
  if (!v->allowed) {
    json_object *st = json_object_new_object();
    if (!st)
      goto out;
    json_object_object_add(st, "code", json_object_new_int(v->deny_code));
    json_object_object_add(st, "message", json_object_new_string(v->deny_msg));
    json_object_object_add(resp, "status", st);
  }
  if (v->allowed && v->patch && json_object_array_length(v->patch) > 0) {
    const char *p = json_object_to_json_string_ext(
        v->patch, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *b64 = NULL;
    if (!p || gb_base64_encode(p, strlen(p), &b64, NULL))
      goto out;
    json_object_object_add(resp, "patchType", json_object_new_string("JSONPatch"));
    json_object_object_add(resp, "patch", json_object_new_string(b64));
    free(b64);
  }
  if (v->n_warnings) {
    json_object *w = json_object_new_array();
    if (!w)
      goto out;
    for (size_t i = 0; i < v->n_warnings; i++)
      json_object_array_add(w, json_object_new_string(v->warnings[i]));
    json_object_object_add(resp, "warnings", w);
  }
  json_object_object_add(root, "response", resp);
  resp = NULL;
  size_t len = 0;
  const char *s = json_object_to_json_string_length(
      root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  if (!s)
    goto out;
  a->body = malloc(len + 1);
  if (!a->body)
    goto out;
  memcpy(a->body, s, len + 1);
  a->len = len;
  a->status = 200;
  a->ctype = "application/json";
  rc = 0;
out:
  json_object_put(resp);
  json_object_put(root);
  return rc;
}

/* ---- patch construction ----------------------------------------------- */

static int patch_op(json_object *patch, const char *kind, const char *path, json_object *value) {
  json_object *op = json_object_new_object();
  if (!op || (value == NULL) != !strcmp(kind, "remove")) {
    json_object_put(op);
    json_object_put(value);
    return GC_ENOMEM;
  }
  json_object_object_add(op, "op", json_object_new_string(kind));
  json_object_object_add(op, "path", json_object_new_string(path));
  if (value)
    json_object_object_add(op, "value", value);
  json_object_array_add(patch, op);
  return 0;
}

static int add_op(json_object *patch, const char *path, json_object *value) {
  return patch_op(patch, "add", path, value);
}

/* Sets metadata.<map>[key] = value: adds the whole map when the pod has none
 * (or a non-object there), else adds or corrects the one key.  Returns 1 when
 * an operation was added, 0 when the pod already had it, <0 on error. */
static int set_map_key(json_object *patch, json_object *meta, const char *map, const char *key,
                       const char *value, struct verdict *v) {
  json_object *m = gb_kobj_get(meta, map);
  char path[600];
  if (!m || !json_object_is_type(m, json_type_object)) {
    json_object *obj = json_object_new_object();
    if (!obj)
      return GC_ENOMEM;
    json_object_object_add(obj, key, json_object_new_string(value));
    snprintf(path, sizeof(path), "/metadata/%s", map);
    int rc = add_op(patch, path, obj);
    return rc < 0 ? rc : 1;
  }
  const char *cur = gb_kobj_str(m, key);
  if (cur && !strcmp(cur, value))
    return 0;
  if (cur)
    warn(v, "gangbridge: replaced %s %s=%s with %s, the TrainJob's gang binding",
         !strcmp(map, "labels") ? "label" : "annotation", key, cur, value);
  char esc[300];
  if (gb_webhook_json_pointer_escape(key, esc, sizeof(esc)) < 0)
    return GC_ELIMIT;
  snprintf(path, sizeof(path), "/metadata/%s/%s", map, esc);
  int rc = add_op(patch, path, json_object_new_string(value));
  return rc < 0 ? rc : 1;
}

static const char *backend_name(const struct gc_backend *b) { return b ? b->name : "none"; }

/* The pod map a join key lives in ("labels", "annotations"), or NULL for a
 * join the webhook does not write there. */
static const char *join_map(const struct gc_backend_join *j) {
  return j->at == GC_JOIN_LABEL ? "labels" : j->at == GC_JOIN_ANNOTATION ? "annotations" : NULL;
}

/* Holds the pod for placement: appends gangbridge.io/placement to
 * spec.schedulingGates (after other controllers' gates: their order is
 * theirs), creating the list when the pod has none or an empty one, and
 * adds nothing when the gate is there already. */
static int add_gate(json_object *patch, json_object *spec, struct verdict *v) {
  json_object *gates = gb_kobj_get(spec, "schedulingGates");
  if (gates && !json_object_is_type(gates, json_type_array)) {
    warn(v, "gangbridge: spec.schedulingGates is not a list; pod not held for placement");
    return 0;
  }
  size_t n = gates ? json_object_array_length(gates) : 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = gb_kobj_str(json_object_array_get_idx(gates, i), "name");
    if (name && !strcmp(name, GB_PLACEMENT_GATE))
      return 0;
  }
  json_object *gate = json_object_new_object();
  if (!gate)
    return GC_ENOMEM;
  json_object_object_add(gate, "name", json_object_new_string(GB_PLACEMENT_GATE));
  if (n)
    return add_op(patch, "/spec/schedulingGates/-", gate);
  json_object *list = json_object_new_array();
  if (!list) {
    json_object_put(gate);
    return GC_ENOMEM;
  }
  json_object_array_add(list, gate);
  return add_op(patch, "/spec/schedulingGates", list);
}

/* A pod that carries gangbridge's gate although gangbridge will not hold it
 * (not a pod of a gang it places: not its TrainJob, a replicated job outside
 * the gang, no topology policy, placement disabled, or the gang released
 * already) loses the gate here: nothing would ever remove it.  Returns 1
 * when a "remove" was added, 0 when the pod has no such gate, <0 on error. */
static int strip_gate(json_object *pod, const char *why, struct verdict *v) {
  json_object *gates = gb_kobj_get(gb_kobj_obj(pod, "spec"), "schedulingGates");
  size_t n = gates && json_object_is_type(gates, json_type_array) ? json_object_array_length(gates)
                                                                  : 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = gb_kobj_str(json_object_array_get_idx(gates, i), "name");
    if (!name || strcmp(name, GB_PLACEMENT_GATE))
      continue;
    if (!v->patch && !(v->patch = json_object_new_array()))
      return GC_ENOMEM;
    char path[64];
    snprintf(path, sizeof(path), "/spec/schedulingGates/%zu", i);
    int rc = patch_op(v->patch, "remove", path, NULL);
    if (rc < 0)
      return rc;
    warn(v, "gangbridge: removed the scheduling gate %s: %s", GB_PLACEMENT_GATE, why);
    return 1;
  }
  return 0;
}

/* Restricts a new pod of a released gang to the gang's domain.  A pod whose
 * affinity cannot take the restriction (a wrong type, which the API server
 * refuses anyway, or one over the size limit) is admitted unrestricted with
 * a warning rather than held: a pod refused here would only be re-created. */
static int add_restriction(json_object *patch, json_object *pod, const struct gb_restriction *r,
                           struct verdict *v) {
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_restriction_affinity_ops(pod, r, patch, &d);
  if (rc == GC_EINVAL || rc == GC_ELIMIT) {
    warn(v, "gangbridge: pod not restricted to its gang's placement: %s",
         d.n ? d.msgs[0] : gc_diag_strerror(rc));
    rc = 0;
  }
  gc_diags_destroy(&d);
  return rc;
}

/* The placement part of a bound pod's patch: the gate while gangbridge
 * places the gang, else the restriction of a gang already released. */
static int add_placement(json_object *pod, const struct gb_webhook_decision *dec,
                         struct verdict *v) {
  json_object *spec = gb_kobj_obj(pod, "spec");
  if (!dec->gate) {
    int rc = strip_gate(pod,
                        dec->restriction.kind != GB_RESTRICT_NONE
                            ? "its gang was released already; the pod gets the gang's placement"
                            : "gangbridge does not place its gang (no topology policy, or "
                              "placement is disabled)",
                        v);
    if (rc < 0 || dec->restriction.kind == GB_RESTRICT_NONE)
      return rc < 0 ? rc : 0;
  }
  if (!spec) {
    warn(v, "gangbridge: pod has no spec; not held for placement");
    return 0;
  }
  if (dec->gate)
    return add_gate(v->patch, spec, v);
  return add_restriction(v->patch, pod, &dec->restriction, v);
}

/* The value a pod-spec-field join of the decision's version holds: the
 * group object's name with the version's suffix, the parent's (the group
 * object, named as the TrainJob) or the gang's template. */
static const char *spec_join_value(const struct gb_webhook_decision *dec,
                                   const struct gc_backend_join *j, char *buf, size_t cap) {
  const struct gc_backend_version *ver = dec->version;
  if (j->value == GC_JOIN_GROUP)
    snprintf(buf, cap, "%s%s", dec->group, ver && ver->group_suffix ? ver->group_suffix : "");
  else if (j->value == GC_JOIN_PARENT)
    snprintf(buf, cap, "%s", dec->group);
  else if (j->value == GC_JOIN_TEMPLATE && ver && ver->gang_template)
    snprintf(buf, cap, "%s", ver->gang_template);
  else
    return NULL;
  return buf;
}

/* The pod-spec-field joins of the decision: the version's, else the
 * backend's own (written, not legacy). */
static const struct gc_backend_join *spec_joins(const struct gb_webhook_decision *dec,
                                                size_t *n) {
  *n = dec->version ? dec->version->n_joins : dec->backend->n_joins;
  return dec->version ? dec->version->joins : dec->backend->joins;
}

/* The first pod spec field a join of any backend lives under that the pod
 * sets already ("schedulingGroup"), or NULL. */
static const char *named_group(json_object *spec, char *buf, size_t cap) {
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend *b = gc_backend_at(i);
    for (size_t k = 0; k < b->n_joins; k++) {
      const char *key = b->joins[k].key, *dot = strchr(key, '.');
      if (b->joins[k].at != GC_JOIN_SPEC_FIELD || !dot || (size_t)(dot - key) >= cap)
        continue;
      snprintf(buf, cap, "%.*s", (int)(dot - key), key);
      json_object *f = gb_kobj_get(spec, buf);
      if (f && !json_object_is_type(f, json_type_null))
        return buf;
    }
  }
  return NULL;
}

/* Sets the decision's pod-spec-field joins ("a.b" keys: one "add" of
 * /spec/a holding every b of the same a).  Returns 1 when the pod already
 * names a scheduling group (then nothing is added), 0 or <0 on error. */
static int set_spec_joins(json_object *patch, json_object *spec,
                          const struct gb_webhook_decision *dec, struct verdict *v) {
  size_t n;
  const struct gc_backend_join *js = spec_joins(dec, &n);
  char field[64], buf[GB_WEBHOOK_NAME_MAX + 64];
  const char *have = named_group(spec, field, sizeof(field));
  if (have) {
    warn(v, "gangbridge: the pod already names a scheduling group (spec.%s); left as it is, "
            "not bound to %s",
         have, dec->group);
    gb_log(GB_LOG_WARN, "pod already names a scheduling group; left as it is", "field", have,
           "group", dec->group, NULL);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    const char *key = js[i].key, *dot = strchr(key, '.');
    if (js[i].at != GC_JOIN_SPEC_FIELD || js[i].legacy || !dot || (size_t)(dot - key) >= 48)
      continue;
    int first = 1; /* one object per leading field, filled by every join under it */
    for (size_t k = 0; k < i && first; k++)
      first = js[k].at != GC_JOIN_SPEC_FIELD || strncmp(js[k].key, key, (size_t)(dot - key) + 1);
    if (!first)
      continue;
    json_object *obj = json_object_new_object();
    if (!obj)
      return GC_ENOMEM;
    for (size_t k = i; k < n; k++) {
      const char *val = spec_join_value(dec, &js[k], buf, sizeof(buf));
      if (js[k].at == GC_JOIN_SPEC_FIELD && val &&
          !strncmp(js[k].key, key, (size_t)(dot - key) + 1))
        json_object_object_add(obj, js[k].key + (dot - key) + 1, json_object_new_string(val));
    }
    char path[80];
    snprintf(path, sizeof(path), "/spec/%.*s", (int)(dot - key), key);
    int rc = add_op(patch, path, obj);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* Builds the patch for a pod the lookup says to bind. */
static int build_patch(json_object *pod, const struct gb_webhook_decision *dec,
                       struct verdict *v) {
  v->patch = json_object_new_array();
  if (!v->patch)
    return GC_ENOMEM;
  json_object *meta = gb_kobj_obj(pod, "metadata");
  int rc = 0;
  size_t n_spec;
  const struct gc_backend_join *sj = spec_joins(dec, &n_spec);
  if (n_spec && sj[0].at == GC_JOIN_SPEC_FIELD) {
    json_object *spec = gb_kobj_obj(pod, "spec");
    if (!spec) {
      warn(v, "gangbridge: pod has no spec; not bound to %s", dec->group);
      return 0;
    }
    if ((rc = set_spec_joins(v->patch, spec, dec, v)) != 0)
      return rc < 0 ? rc : 0; /* names a group already: the pod is left as it is */
  }
  /* Every key the backend joins its pods by that names the group, and the
   * pod's sub-group when the decision names one. */
  for (size_t i = 0; i < dec->backend->n_joins && rc >= 0; i++) {
    const struct gc_backend_join *j = &dec->backend->joins[i];
    if (j->legacy || !join_map(j))
      continue;
    if (j->value == GC_JOIN_GROUP)
      rc = set_map_key(v->patch, meta, join_map(j), j->key, dec->group, v);
    else if (j->value == GC_JOIN_SUBGROUP && dec->subgroup[0])
      rc = set_map_key(v->patch, meta, join_map(j), j->key, dec->subgroup, v);
  }
  if (rc < 0)
    return rc;
  if (dec->scheduler_name[0]) {
    json_object *spec = gb_kobj_obj(pod, "spec");
    const char *cur = gb_kobj_str(spec, "schedulerName");
    if (!spec) {
      warn(v, "gangbridge: pod has no spec; schedulerName %s not set", dec->scheduler_name);
    } else if (!cur || !cur[0] || !strcmp(cur, GB_DEFAULT_SCHEDULER)) {
      rc = add_op(v->patch, "/spec/schedulerName", json_object_new_string(dec->scheduler_name));
      if (rc < 0)
        return rc;
    } else if (strcmp(cur, dec->scheduler_name)) {
      warn(v, "gangbridge: pod asks for scheduler %s; left as is (the PodGroup expects %s)",
           cur, dec->scheduler_name);
    }
  }
  return add_placement(pod, dec, v);
}

/* Removes metadata.<map>[key] when the pod has it ("remove" of a missing
 * member would fail the whole patch).  Returns 1 when an operation was
 * added, 0 when there was nothing to remove, <0 on error. */
static int remove_map_key(json_object *patch, json_object *meta, const char *map,
                          const char *key, const char *why, struct verdict *v) {
  json_object *m = gb_kobj_obj(meta, map);
  if (!m || !json_object_object_get_ex(m, key, NULL))
    return 0;
  char esc[300], path[600];
  if (gb_webhook_json_pointer_escape(key, esc, sizeof(esc)) < 0)
    return GC_ELIMIT;
  snprintf(path, sizeof(path), "/metadata/%s/%s", map, esc);
  int rc = patch_op(patch, "remove", path, NULL);
  if (rc < 0)
    return rc;
  const char *cur = gb_kobj_str(m, key);
  warn(v, "gangbridge: removed %s %s=%s: %s", !strcmp(map, "labels") ? "label" : "annotation",
       key, cur ? cur : "", why);
  return 1;
}

/* Builds the patch for a pod that must not join a gang: any group label or
 * annotation it carries (Kubeflow Trainer puts one on every replicated job's
 * pod template, earlier-phase jobs included) is removed, or the scheduler
 * would wait for a pod that can never come together with the others. */
static int build_unbind_patch(json_object *pod, const char *why, struct verdict *v) {
  v->patch = json_object_new_array();
  if (!v->patch)
    return GC_ENOMEM;
  json_object *meta = gb_kobj_obj(pod, "metadata");
  int rc = 0;
  /* Annotations first, then labels: every backend's group keys. */
  static const enum gc_join_at order[] = {GC_JOIN_ANNOTATION, GC_JOIN_LABEL};
  for (size_t o = 0; o < 2; o++)
    for (size_t i = 0; i < gc_backend_count(); i++) {
      const struct gc_backend *b = gc_backend_at(i);
      for (size_t k = 0; k < b->n_joins && rc >= 0; k++) {
        const struct gc_backend_join *j = &b->joins[k];
        if (!j->legacy && j->at == order[o])
          rc = remove_map_key(v->patch, meta, join_map(j), j->key, why, v);
      }
    }
  return rc < 0 ? rc : 0;
}

/* ---- the review ------------------------------------------------------- */

static int is_json_type(const char *ct) {
  if (!ct)
    return 0;
  while (*ct == ' ')
    ct++;
  size_t n = strlen("application/json");
  if (strncasecmp(ct, "application/json", n))
    return 0;
  return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

static void count(struct gb_webhook *wh, const char *backend, const char *result) {
  const char *labels[2] = {backend, result};
  gb_metric_counter_inc(wh->cfg.admissions, labels);
}

/* The strings a review reads, each checked for NUL bytes once. */
struct pod_facts {
  json_object *pod;
  const char *ns, *jobset, *rjob;
};

static void deny(struct verdict *v, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void deny(struct verdict *v, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->deny_msg, sizeof(v->deny_msg), fmt, ap);
  va_end(ap);
  v->allowed = 0;
  v->deny_code = code;
}

/* get_str_checked that denies the review naming `field` on a NUL byte.
 * Returns 1 when it denied. */
static int read_field(struct verdict *v, json_object *o, const char *key, const char *field,
                      const char **out) {
  if (!get_str_checked(o, key, out))
    return 0;
  deny(v, 400, "gangbridge: %s contains a NUL byte", field);
  return 1;
}

/* read_field over every group key of every backend the webhook may set or
 * remove (labels, then annotations).  Returns 1 when it denied. */
static int read_joins(struct verdict *v, json_object *meta) {
  static const enum gc_join_at order[] = {GC_JOIN_LABEL, GC_JOIN_ANNOTATION};
  const char *ignored;
  char field[400];
  for (size_t o = 0; o < 2; o++)
    for (size_t i = 0; i < gc_backend_count(); i++) {
      const struct gc_backend *b = gc_backend_at(i);
      for (size_t k = 0; k < b->n_joins; k++) {
        const struct gc_backend_join *j = &b->joins[k];
        if (j->legacy || j->at != order[o])
          continue;
        snprintf(field, sizeof(field), "request.object.metadata.%s[\"%s\"]", join_map(j), j->key);
        if (read_field(v, gb_kobj_obj(meta, join_map(j)), j->key, field, &ignored))
          return 1;
      }
    }
  return 0;
}

/* Reads and checks every pod string the webhook uses: the JobSet labels, the
 * namespace, the group label/annotation and spec.schedulerName (the last
 * three are compared with what gangbridge would set).  Returns 1 when it
 * denied the review. */
static int read_pod(struct verdict *v, json_object *req, json_object *pod,
                    struct pod_facts *f) {
  json_object *meta = gb_kobj_obj(pod, "metadata");
  json_object *labels = gb_kobj_obj(meta, "labels");
  const char *ignored, *meta_ns;
  f->pod = pod;
  if (read_field(v, labels, GB_JOBSET_NAME_LABEL,
                 "request.object.metadata.labels[\"" GB_JOBSET_NAME_LABEL "\"]", &f->jobset) ||
      read_field(v, labels, GB_JOBSET_RJOB_LABEL,
                 "request.object.metadata.labels[\"" GB_JOBSET_RJOB_LABEL "\"]", &f->rjob) ||
      read_joins(v, meta) ||
      read_field(v, gb_kobj_obj(pod, "spec"), "schedulerName", "request.object.spec.schedulerName",
                 &ignored) ||
      read_field(v, req, "namespace", "request.namespace", &f->ns) ||
      read_field(v, meta, "namespace", "request.object.metadata.namespace", &meta_ns))
    return 1;
  if (!f->ns || !f->ns[0])
    f->ns = meta_ns;
  return 0;
}

/* Calls the lookup and checks what it says.  Returns 0 with *dec filled, or
 * a negative code with the reason in `reason`. */
static int lookup(struct gb_webhook *wh, const struct pod_facts *f,
                  struct gb_webhook_decision *dec, char *reason, size_t size) {
  memset(dec, 0, sizeof(*dec));
  reason[0] = '\0';
  int rc = wh->cfg.lookup(wh->cfg.ctx, f->ns, f->jobset, f->rjob, dec, reason, size);
  dec->group[sizeof(dec->group) - 1] = '\0';
  dec->scheduler_name[sizeof(dec->scheduler_name) - 1] = '\0';
  dec->why[sizeof(dec->why) - 1] = '\0';
  dec->subgroup[sizeof(dec->subgroup) - 1] = '\0';
  reason[size - 1] = '\0';
  struct gb_restriction *r = &dec->restriction;
  r->key[sizeof(r->key) - 1] = '\0';
  for (size_t i = 0; i < GB_RESTRICTION_MAX_HOSTS; i++)
    r->values[i][sizeof(r->values[i]) - 1] = '\0';
  if (rc == 0 && r->kind != GB_RESTRICT_NONE &&
      (!r->key[0] || !r->n_values || r->n_values > GB_RESTRICTION_MAX_HOSTS)) {
    rc = GC_EINVAL;
    snprintf(reason, size, "lookup returned a malformed placement restriction");
  }
  if (rc == 0 && dec->managed && dec->bind &&
      (gc_backend_index(dec->backend) < 0 || !dec->group[0])) {
    rc = GC_EINVAL;
    snprintf(reason, size, "lookup returned no backend or no group name");
  }
  return rc;
}

static void lookup_failed(struct gb_webhook *wh, const struct pod_facts *f, int rc,
                          const char *reason, struct verdict *v, const char **result) {
  const char *why = reason[0] ? reason : gc_diag_strerror(rc);
  gb_log(GB_LOG_WARN, "webhook lookup failed", "namespace", f->ns, "jobset", f->jobset,
         "replicatedJob", f->rjob, "reason", why, NULL);
  if (wh->cfg.allow_on_error) {
    warn(v, "gangbridge: cannot tell this pod's PodGroup (%s); admitted without gang binding",
         why);
    *result = GB_M_ADMIT_INVALID;
    return;
  }
  deny(v, 500, "gangbridge: cannot tell the PodGroup of %s/%s replicated job %s yet (%s); retry",
       f->ns, f->jobset, f->rjob, why);
  *result = GB_M_ADMIT_DENIED;
}

/* Carries out the lookup's decision for a JobSet pod. */
static int act(struct gb_webhook *wh, const struct pod_facts *f, struct verdict *v,
               const char **backend, const char **result) {
  struct gb_webhook_decision dec;
  char reason[256], why[GB_WEBHOOK_NAME_MAX + 300];
  int rc = lookup(wh, f, &dec, reason, sizeof(reason));
  if (rc < 0) {
    lookup_failed(wh, f, rc, reason, v, result);
    return 0;
  }
  if (!dec.managed) {
    snprintf(why, sizeof(why), "gangbridge does not manage the TrainJob of JobSet %s/%s", f->ns,
             f->jobset);
    rc = strip_gate(f->pod, why, v);
    if (rc > 0)
      *result = GB_M_ADMIT_PATCHED;
    return rc < 0 ? rc : 0;
  }
  if (dec.bind && dec.mismatch && wh->cfg.deny_on_mismatch) {
    deny(v, 409,
         "gangbridge: %s/%s replicated job %s: %s; the pod is refused until the PodGroup "
         "matches (webhook.denyOnPodGroupMismatch)",
         f->ns, f->jobset, f->rjob, dec.why[0] ? dec.why : "the PodGroup does not match");
    *result = GB_M_ADMIT_DENIED;
    return 0;
  }
  if (dec.bind && !dec.mismatch) {
    *backend = backend_name(dec.backend);
    rc = build_patch(f->pod, &dec, v);
  } else {
    if (dec.bind)
      snprintf(why, sizeof(why), "not bound to PodGroup %s: %s", dec.group,
               dec.why[0] ? dec.why : "the PodGroup does not match");
    else
      snprintf(why, sizeof(why), "replicated job %s is not part of its TrainJob's gang",
               f->rjob);
    rc = build_unbind_patch(f->pod, why, v);
    if (rc >= 0 && (rc = strip_gate(f->pod, why, v)) > 0)
      rc = 0;
    if (dec.bind && json_object_array_length(v->patch) == 0)
      warn(v, "gangbridge: %s", why);
  }
  if (rc < 0)
    return rc;
  size_t n = json_object_array_length(v->patch);
  *result = n ? GB_M_ADMIT_PATCHED : dec.bind && !dec.mismatch ? GB_M_ADMIT_UNCHANGED
                                                               : GB_M_ADMIT_SKIPPED;
  gb_log(GB_LOG_DEBUG, "webhook reviewed pod", "namespace", f->ns, "jobset", f->jobset,
         "replicatedJob", f->rjob, "podGroup", dec.group, "backend", *backend, "result", *result,
         NULL);
  return 0;
}

/* Decides for a well-formed envelope.  Sets *result to the metric result. */
static int decide(struct gb_webhook *wh, json_object *req, struct verdict *v, const char **backend,
                  const char **result) {
  v->allowed = 1;
  *backend = "none";
  *result = GB_M_ADMIT_SKIPPED;
  json_object *kind = gb_kobj_obj(req, "kind");
  const char *op, *kkind, *kgroup;
  struct pod_facts f;
  memset(&f, 0, sizeof(f));
  if (read_field(v, kind, "kind", "request.kind.kind", &kkind) ||
      read_field(v, kind, "group", "request.kind.group", &kgroup) ||
      read_field(v, req, "operation", "request.operation", &op)) {
    *result = GB_M_ADMIT_DENIED;
    return 0;
  }
  if (!kind || !kkind || strcmp(kkind, "Pod") || (kgroup && kgroup[0])) {
    warn(v, "gangbridge: this webhook only reviews core/v1 Pods; request left unchanged");
    *result = GB_M_ADMIT_INVALID;
    return 0;
  }
  if (!op || strcmp(op, "CREATE")) {
    /* Pod labels and annotations the webhook sets are fixed at creation;
     * other operations have nothing to do. */
    return 0;
  }
  json_object *pod = gb_kobj_obj(req, "object");
  if (!pod) {
    warn(v, "gangbridge: request.object is missing or not an object; pod left unchanged");
    *result = GB_M_ADMIT_INVALID;
    return 0;
  }
  if (read_pod(v, req, pod, &f)) {
    *result = GB_M_ADMIT_DENIED;
    return 0;
  }
  if (!f.jobset || !f.rjob || !f.jobset[0] || !f.rjob[0]) {
    /* Not a JobSet pod: not ours, so not ours to hold either. */
    int rc = strip_gate(pod,
                        "gangbridge holds only pods of the gangs it places (this is not a "
                        "JobSet pod)",
                        v);
    if (rc > 0)
      *result = GB_M_ADMIT_PATCHED;
    return rc < 0 ? rc : 0;
  }
  if (!f.ns || !f.ns[0]) {
    warn(v, "gangbridge: the review names no namespace; pod left unchanged");
    *result = GB_M_ADMIT_INVALID;
    return 0;
  }
  return act(wh, &f, v, backend, result);
}

int gb_webhook_review(struct gb_webhook *wh, const char *content_type, const char *body,
                      size_t len, int *status, char **out, size_t *out_len,
                      const char **content_type_out) {
  if (!wh || !status || !out || !out_len || !content_type_out || (len && !body))
    return GC_EINVAL;
  struct answer a = {0, NULL, 0, NULL};
  struct verdict v;
  memset(&v, 0, sizeof(v));
  json_object *root = NULL;
  json_tokener *tok = NULL;
  int rc = 0;
  const char *backend = "none", *result = GB_M_ADMIT_INVALID;

  if (len > wh->cfg.max_body) {
    rc = text_answer(&a, 413, "admission review of %zu bytes is over the %zu-byte limit", len,
                     wh->cfg.max_body);
    goto done;
  }
  if (!is_json_type(content_type)) {
    rc = text_answer(&a, 415, "content type must be application/json, not %s",
                     content_type ? content_type : "(none)");
    goto done;
  }
  if (!len) {
    rc = text_answer(&a, 400, "empty body: expected an admission.k8s.io/v1 AdmissionReview");
    goto done;
  }
  tok = json_tokener_new_ex(JSON_DEPTH);
  if (!tok) {
    rc = GC_ENOMEM;
    goto done;
  }
  /* Kubernetes sends UTF-8 (Go's encoder replaces invalid bytes), so bytes
   * that are not are a broken or forged body. */
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  root = json_tokener_parse_ex(tok, body, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  if (!root || jerr != json_tokener_success) {
    if (jerr == json_tokener_continue)
      rc = text_answer(&a, 400, "body is not JSON: unexpected end of input");
    else
      rc = text_answer(&a, 400, "body is not JSON: %s at byte %zu",
                       json_tokener_error_desc(jerr), json_tokener_get_parse_end(tok));
    goto done;
  }
  size_t end = json_tokener_get_parse_end(tok);
  while (end < len && (body[end] == ' ' || body[end] == '\n' || body[end] == '\r' ||
                       body[end] == '\t'))
    end++;
  if (end != len) {
    rc = text_answer(&a, 400, "body is not JSON: extra data at byte %zu", end);
    goto done;
  }
  if (!json_object_is_type(root, json_type_object)) {
    rc = text_answer(&a, 400, "body is not a JSON object");
    goto done;
  }
  const char *api, *kind, *uid;
  if (get_str_checked(root, "apiVersion", &api) || get_str_checked(root, "kind", &kind)) {
    rc = text_answer(&a, 400, "AdmissionReview apiVersion or kind contains a NUL byte");
    goto done;
  }
  if (!api || strcmp(api, ADMISSION_API) || !kind || strcmp(kind, "AdmissionReview")) {
    rc = text_answer(&a, 400,
                     "expected apiVersion %s kind AdmissionReview, got apiVersion %s kind %s",
                     ADMISSION_API, api ? api : "(none)", kind ? kind : "(none)");
    goto done;
  }
  json_object *req = gb_kobj_obj(root, "request");
  if (!req) {
    rc = text_answer(&a, 400, "AdmissionReview has no request object");
    goto done;
  }
  if (get_str_checked(req, "uid", &uid)) {
    /* Echoing a cut uid would answer some other review. */
    rc = text_answer(&a, 400, "AdmissionReview request.uid contains a NUL byte");
    goto done;
  }
  if (!uid || !uid[0]) {
    rc = text_answer(&a, 400, "AdmissionReview request has no uid");
    goto done;
  }
  rc = decide(wh, req, &v, &backend, &result);
  if (rc == 0)
    rc = review_answer(&a, uid, &v);

done:
  json_object_put(v.patch);
  json_object_put(root);
  if (tok)
    json_tokener_free(tok);
  if (rc < 0) {
    free(a.body);
    return rc;
  }
  count(wh, backend, result);
  *status = a.status;
  *out = a.body;
  *out_len = a.len;
  *content_type_out = a.ctype;
  return 0;
}

static int webhook_handler(void *ctx, const struct gb_http_request *req,
                           struct gb_http_response *resp) {
  int status = 0;
  char *out = NULL;
  size_t len = 0;
  const char *ctype = NULL;
  int rc = gb_webhook_review(ctx, req->content_type, req->body, req->body_len, &status, &out,
                             &len, &ctype);
  if (rc < 0)
    return rc;
  gb_http_response_take(resp, status, ctype, out, len);
  return 0;
}

struct gb_http_route gb_webhook_route(struct gb_webhook *wh, const char *path) {
  struct gb_http_route r = {path ? path : "/mutate-pods", 0, GB_HTTP_POST, webhook_handler, wh,
                            wh ? wh->cfg.max_body : 0};
  return r;
}
