/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_restriction: placement restrictions and how they are AND-ed into a
 * pod's required node affinity: the webhook's operations and the terms the
 * release patch carries (see gb_restriction.h).
 *
 * Every builder first reads the pod's affinity into a struct aff, checking
 * each level's type and naming the field of the first wrong one, then
 * classifies each required term: an empty term and a term that already
 * holds the requirement are kept; any other gains the requirement after its
 * own expressions (the order Kubernetes demands of a gated pod).  The
 * growth check runs on that classification, before anything is written.
 */
#include "gb_restriction.h"
#include "gb_restriction_test.h"

#include <stdio.h>
#include <string.h>

#include "gb_kobj.h"
#include "gc_name.h"

#define REQUIRED "requiredDuringSchedulingIgnoredDuringExecution"
#define REQ_FIELD "spec.affinity.nodeAffinity." REQUIRED
#define REQ_PATH "/spec/affinity/nodeAffinity/" REQUIRED
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* ---- the restriction ---------------------------------------------------- */

json_object *gb_restriction_requirement(const struct gb_restriction *r) {
  if (!r || r->kind == GB_RESTRICT_NONE)
    return NULL;
  json_object *req = json_object_new_object(), *vals = json_object_new_array();
  if (!req || !vals) {
    json_object_put(req);
    json_object_put(vals);
    return NULL;
  }
  json_object_object_add(req, "key", json_object_new_string(r->key));
  json_object_object_add(req, "operator", json_object_new_string("In"));
  for (size_t i = 0; i < r->n_values && i < GB_RESTRICTION_MAX_HOSTS; i++)
    json_object_array_add(vals, json_object_new_string(r->values[i]));
  json_object_object_add(req, "values", vals);
  return req;
}

/* Bytes of the requirement's JSON, 0 when it cannot be built. */
static size_t requirement_bytes(const struct gb_restriction *r) {
  json_object *req = gb_restriction_requirement(r);
  const char *s = req ? json_object_to_json_string_ext(req, JSON_FLAGS) : NULL;
  size_t n = s ? strlen(s) : 0;
  json_object_put(req);
  return n;
}

static int is_label_value(const char *v) {
  size_t n = strlen(v);
  return n > 0 && n <= GB_RESTRICTION_VALUE_MAX && gc_name_is_label_value(v, n);
}

int gb_restriction_label(struct gb_restriction *r, const char *key, const char *value,
                         struct gc_diags *d) {
  if (!r || !key || !value)
    return GC_EINVAL;
  size_t klen = strlen(key);
  if (klen > GB_RESTRICTION_KEY_MAX || !gc_name_is_qualified(key, klen)) {
    gc_diags_addf(d, "placement restriction: label key \"%.320s\": not a qualified name", key);
    return GC_EINVAL;
  }
  if (!is_label_value(value)) {
    gc_diags_addf(d, "placement restriction: %s value \"%.80s\": not a non-empty label value", key,
                  value);
    return GC_EINVAL;
  }
  memset(r, 0, sizeof(*r));
  r->kind = GB_RESTRICT_LABEL;
  memcpy(r->key, key, klen + 1);
  snprintf(r->values[0], sizeof(r->values[0]), "%s", value);
  r->n_values = 1;
  return 0;
}

int gb_restriction_add_host(struct gb_restriction *r, const char *host, struct gc_diags *d) {
  if (!r || !host)
    return GC_EINVAL;
  if (r->kind == GB_RESTRICT_LABEL) {
    gc_diags_addf(d, "placement restriction: %s is a label level; it takes no host names", r->key);
    return GC_EINVAL;
  }
  if (!is_label_value(host)) {
    gc_diags_addf(d, "placement restriction: host \"%.80s\": not a %s label value", host,
                  GB_HOSTNAME_LABEL);
    return GC_EINVAL;
  }
  for (size_t i = 0; i < r->n_values; i++)
    if (!strcmp(r->values[i], host))
      return 0;
  if (r->n_values >= GB_RESTRICTION_MAX_HOSTS) {
    gc_diags_addf(d, "placement restriction: more than %d hosts; restrict by a label level",
                  GB_RESTRICTION_MAX_HOSTS);
    return GC_ELIMIT;
  }
  struct gb_restriction t = *r;
  t.kind = GB_RESTRICT_HOSTS;
  snprintf(t.key, sizeof(t.key), "%s", GB_HOSTNAME_LABEL);
  snprintf(t.values[t.n_values++], sizeof(t.values[0]), "%s", host);
  size_t bytes = requirement_bytes(&t);
  if (!bytes)
    return GC_ENOMEM;
  if (bytes > GB_RESTRICTION_MAX_GROWTH) {
    gc_diags_addf(d,
                  "placement restriction: %zu hosts make a %zu-byte requirement, over the "
                  "%d-byte limit; restrict by a label level",
                  t.n_values, bytes, GB_RESTRICTION_MAX_GROWTH);
    return GC_ELIMIT;
  }
  *r = t;
  return 0;
}

/* ---- reading a pod's affinity ------------------------------------------- */

/* The levels of a pod's node affinity, each NULL when absent or null. */
struct aff {
  char where[330];
  json_object *spec, *affinity, *node_aff, *required, *terms;
};

/* *out = parent[key] when it is an object; GC_EINVAL naming `field` when it
 * is something else. */
static int obj_level(json_object *parent, const char *key, json_object **out, const char *where,
                     const char *field, struct gc_diags *d) {
  json_object *v = gb_kobj_get(parent, key);
  *out = NULL;
  if (!v)
    return 0;
  if (!json_object_is_type(v, json_type_object)) {
    gc_diags_addf(d, "%s: %s: not an object", where, field);
    return GC_EINVAL;
  }
  *out = v;
  return 0;
}

static int list_member(json_object *o, const char *key, const char *where, size_t i,
                       struct gc_diags *d) {
  json_object *v = gb_kobj_get(o, key);
  if (v && !json_object_is_type(v, json_type_array)) {
    gc_diags_addf(d, "%s: %s.nodeSelectorTerms[%zu].%s: not a list", where, REQ_FIELD, i, key);
    return GC_EINVAL;
  }
  return 0;
}

static int read_terms(struct aff *a, struct gc_diags *d) {
  json_object *t = gb_kobj_get(a->required, "nodeSelectorTerms");
  if (!t)
    return 0;
  if (!json_object_is_type(t, json_type_array)) {
    gc_diags_addf(d, "%s: %s.nodeSelectorTerms: not a list", a->where, REQ_FIELD);
    return GC_EINVAL;
  }
  for (size_t i = 0; i < json_object_array_length(t); i++) {
    json_object *term = json_object_array_get_idx(t, i);
    if (!term || !json_object_is_type(term, json_type_object)) {
      gc_diags_addf(d, "%s: %s.nodeSelectorTerms[%zu]: not an object", a->where, REQ_FIELD, i);
      return GC_EINVAL;
    }
    int rc = list_member(term, "matchExpressions", a->where, i, d);
    if (!rc)
      rc = list_member(term, "matchFields", a->where, i, d);
    if (rc)
      return rc;
  }
  a->terms = json_object_array_length(t) ? t : NULL;
  return 0;
}

static int read_aff(json_object *pod, struct aff *a, struct gc_diags *d) {
  memset(a, 0, sizeof(*a));
  gb_kobj_where(pod, a->where, sizeof(a->where));
  int rc = obj_level(pod, "spec", &a->spec, a->where, "spec", d);
  if (!rc && !a->spec) {
    gc_diags_addf(d, "%s: spec: missing", a->where);
    rc = GC_EINVAL;
  }
  if (!rc)
    rc = obj_level(a->spec, "affinity", &a->affinity, a->where, "spec.affinity", d);
  if (!rc)
    rc = obj_level(a->affinity, "nodeAffinity", &a->node_aff, a->where,
                   "spec.affinity.nodeAffinity", d);
  if (!rc)
    rc = obj_level(a->node_aff, REQUIRED, &a->required, a->where, REQ_FIELD, d);
  return rc ? rc : read_terms(a, d);
}

enum term_act { T_KEEP, T_APPEND, T_CREATE };

/* What a term needs: nothing when it is empty (it matches no node, and
 * Kubernetes lets an empty term gain nothing) or holds the requirement
 * already; else an append to its matchExpressions, or a new list. */
static enum term_act term_act(json_object *term, json_object *req) {
  json_object *me = gb_kobj_get(term, "matchExpressions");
  size_t n = gb_kobj_len(me);
  if (!n && !gb_kobj_len(gb_kobj_get(term, "matchFields")))
    return T_KEEP;
  for (size_t i = 0; i < n; i++)
    if (json_object_equal(json_object_array_get_idx(me, i), req))
      return T_KEEP;
  return me ? T_APPEND : T_CREATE;
}

/* Refuses a write that would AND `req` into `n_terms` terms when that adds
 * more than GB_RESTRICTION_MAX_GROWTH bytes to the pod spec. */
static int check_growth(const struct aff *a, json_object *req, size_t n_terms, struct gc_diags *d) {
  size_t bytes = strlen(json_object_to_json_string_ext(req, JSON_FLAGS));
  if (bytes * n_terms <= GB_RESTRICTION_MAX_GROWTH)
    return 0;
  gc_diags_addf(d,
                "%s: %s.nodeSelectorTerms: the %zu-byte placement requirement AND-ed into %zu "
                "terms would add %zu bytes to the pod spec, over the %d-byte limit",
                a->where, REQ_FIELD, bytes, n_terms, bytes * n_terms, GB_RESTRICTION_MAX_GROWTH);
  return GC_ELIMIT;
}

static size_t terms_to_change(const struct aff *a, json_object *req) {
  size_t n = 0;
  for (size_t i = 0; i < gb_kobj_len(a->terms); i++)
    n += term_act(json_object_array_get_idx(a->terms, i), req) != T_KEEP;
  return n;
}

/* {"nodeSelectorTerms":[{"matchExpressions":[req]}]} (takes req). */
static json_object *single_term(json_object *req) {
  json_object *exprs = json_object_new_array(), *term = json_object_new_object();
  json_object *terms = json_object_new_array(), *sel = json_object_new_object();
  if (!exprs || !term || !terms || !sel) {
    json_object_put(req);
    json_object_put(exprs);
    json_object_put(term);
    json_object_put(terms);
    json_object_put(sel);
    return NULL;
  }
  json_object_array_add(exprs, req);
  json_object_object_add(term, "matchExpressions", exprs);
  json_object_array_add(terms, term);
  json_object_object_add(sel, "nodeSelectorTerms", terms);
  return sel;
}

/* {key: value} (takes value), NULL on allocation failure. */
static json_object *wrap(const char *key, json_object *value) {
  json_object *o = value ? json_object_new_object() : NULL;
  if (!o) {
    json_object_put(value);
    return NULL;
  }
  json_object_object_add(o, key, value);
  return o;
}

/* ---- the webhook's operations ------------------------------------------- */

static int add_op(json_object *ops, const char *path, json_object *value) {
  json_object *op = value ? json_object_new_object() : NULL;
  if (!op) {
    json_object_put(value);
    return GC_ENOMEM;
  }
  json_object_object_add(op, "op", json_object_new_string("add"));
  json_object_object_add(op, "path", json_object_new_string(path));
  json_object_object_add(op, "value", value);
  json_object_array_add(ops, op);
  return 0;
}

/* The one "add" of the first missing level, for a pod without terms. */
static int add_missing_level(const struct aff *a, json_object *req, json_object *ops) {
  json_object *sel = single_term(json_object_get(req));
  if (!a->affinity)
    return add_op(ops, "/spec/affinity", wrap("nodeAffinity", wrap(REQUIRED, sel)));
  if (!a->node_aff)
    return add_op(ops, "/spec/affinity/nodeAffinity", wrap(REQUIRED, sel));
  if (!a->required)
    return add_op(ops, REQ_PATH, sel);
  json_object *terms = sel ? json_object_get(gb_kobj_get(sel, "nodeSelectorTerms")) : NULL;
  json_object_put(sel);
  return add_op(ops, REQ_PATH "/nodeSelectorTerms", terms);
}

static int add_term_ops(const struct aff *a, json_object *req, json_object *ops) {
  char path[160];
  for (size_t i = 0; i < gb_kobj_len(a->terms); i++) {
    enum term_act act = term_act(json_object_array_get_idx(a->terms, i), req);
    int rc = 0;
    if (act == T_APPEND) {
      snprintf(path, sizeof(path), REQ_PATH "/nodeSelectorTerms/%zu/matchExpressions/-", i);
      rc = add_op(ops, path, gb_kobj_copy(req));
    } else if (act == T_CREATE) {
      json_object *list = json_object_new_array();
      if (list)
        json_object_array_add(list, gb_kobj_copy(req));
      snprintf(path, sizeof(path), REQ_PATH "/nodeSelectorTerms/%zu/matchExpressions", i);
      rc = add_op(ops, path, list);
    }
    if (rc)
      return rc;
  }
  return 0;
}

int gb_restriction_affinity_ops(json_object *pod, const struct gb_restriction *r, json_object *ops,
                                struct gc_diags *d) {
  if (!pod || !r || !ops || !json_object_is_type(ops, json_type_array))
    return GC_EINVAL;
  if (r->kind == GB_RESTRICT_NONE)
    return 0;
  struct aff a;
  int rc = read_aff(pod, &a, d);
  if (rc)
    return rc;
  json_object *req = gb_restriction_requirement(r), *mine = json_object_new_array();
  if (!req || !mine) {
    rc = GC_ENOMEM;
    goto out;
  }
  size_t n = a.terms ? terms_to_change(&a, req) : 1;
  if ((rc = check_growth(&a, req, n, d)))
    goto out;
  rc = a.terms ? add_term_ops(&a, req, mine) : add_missing_level(&a, req, mine);
  for (size_t i = 0; !rc && i < json_object_array_length(mine); i++)
    json_object_array_add(ops, json_object_get(json_object_array_get_idx(mine, i)));
out:
  if (rc == GC_ENOMEM)
    gc_diags_addf(d, "%s: out of memory building the placement restriction", a.where);
  json_object_put(mine);
  json_object_put(req);
  return rc;
}

/* ---- the terms of the release ------------------------------------------- */

/* The pod's terms with req AND-ed into each that needs it (a fresh array),
 * or a single term when it has none; NULL in *out when no term changes. */
static int anded_terms(const struct aff *a, json_object *req, json_object **out,
                       struct gc_diags *d) {
  *out = NULL;
  size_t n = a->terms ? terms_to_change(a, req) : 1;
  int rc = n ? check_growth(a, req, n, d) : 0;
  if (rc || !n)
    return rc;
  if (!a->terms) {
    json_object *sel = single_term(json_object_get(req));
    *out = sel ? json_object_get(gb_kobj_get(sel, "nodeSelectorTerms")) : NULL;
    json_object_put(sel);
    return *out ? 0 : GC_ENOMEM;
  }
  json_object *terms = json_object_new_array();
  for (size_t i = 0; terms && i < json_object_array_length(a->terms); i++) {
    json_object *term = json_object_array_get_idx(a->terms, i), *c = gb_kobj_copy(term);
    enum term_act act = term_act(term, req);
    if (c && act == T_CREATE)
      json_object_object_add(c, "matchExpressions", json_object_new_array());
    if (c && act != T_KEEP)
      json_object_array_add(gb_kobj_get(c, "matchExpressions"), gb_kobj_copy(req));
    json_object_array_add(terms, c);
  }
  *out = terms;
  return terms ? 0 : GC_ENOMEM;
}

int gb_restriction_anded_terms(json_object *pod, const struct gb_restriction *r, json_object **out,
                               struct gc_diags *d) {
  *out = NULL;
  if (!pod || !r)
    return GC_EINVAL;
  struct aff a;
  int rc = read_aff(pod, &a, d);
  if (rc || r->kind == GB_RESTRICT_NONE)
    return rc;
  json_object *req = gb_restriction_requirement(r);
  rc = req ? anded_terms(&a, req, out, d) : GC_ENOMEM;
  json_object_put(req);
  return rc;
}

int gb_restriction_in_place(json_object *pod, const struct gb_restriction *r, int *in_place,
                            struct gc_diags *d) {
  *in_place = 1;
  if (!pod || !r)
    return GC_EINVAL;
  if (r->kind == GB_RESTRICT_NONE)
    return 0;
  struct aff a;
  int rc = read_aff(pod, &a, d);
  if (rc)
    return rc;
  json_object *req = gb_restriction_requirement(r);
  if (!req)
    return GC_ENOMEM;
  *in_place = a.terms && !terms_to_change(&a, req);
  json_object_put(req);
  return 0;
}
