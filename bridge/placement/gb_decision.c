/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_decision: the record's format (see the header): encode, decode, copy.
 */
#define _GNU_SOURCE /* strptime, timegm */
#include "gb_decision.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gb_kobj.h"

#define MAX_ASSIGN 200000 /* assignment lines a record may list */

int gb_decision_new(struct gb_decision **out) {
  *out = calloc(1, sizeof(**out));
  if (!*out)
    return GC_ENOMEM;
  if (!((*out)->a = gc_arena_new(GB_DECISION_MAX_TEXT * 8))) {
    free(*out);
    *out = NULL;
    return GC_ENOMEM;
  }
  (*out)->rec.tier = -1;
  (*out)->rec.domain = (*out)->rec.tier_name = "";
  return GC_OK;
}

void gb_decision_free(struct gb_decision *d) {
  if (!d)
    return;
  gc_arena_free(d->a);
  free(d);
}

void gb_decision_id_text(uint64_t id, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)id);
}

/* ---- encoding ------------------------------------------------------------------ */

static json_object *restriction_json(const struct gb_decision *d) {
  json_object *o = json_object_new_object();
  if (!o)
    return NULL;
  if (d->per_pod) {
    json_object_object_add(o, "perPod", json_object_new_boolean(1));
  } else if (d->restr.kind != GB_RESTRICT_NONE) {
    json_object *vals = json_object_new_array();
    for (size_t i = 0; vals && i < d->restr.n_values; i++)
      json_object_array_add(vals, json_object_new_string(d->restr.values[i]));
    json_object_object_add(o, "key", json_object_new_string(d->restr.key));
    json_object_object_add(o, "values", vals);
  }
  return o;
}

static json_object *sets_json(const struct gb_plan_record *r) {
  json_object *arr = json_object_new_array();
  for (size_t k = 0; arr && k < r->n_sets; k++) {
    json_object *set = json_object_new_object(), *req = json_object_new_object();
    for (size_t j = 0; req && j < r->sets[k].n_req; j++)
      json_object_object_add(req, r->sets[k].res[j], json_object_new_int64(r->sets[k].val[j]));
    json_object_object_add(set, "pods", json_object_new_int64(r->sets[k].count));
    json_object_object_add(set, "req", req);
    json_object_array_add(arr, set);
  }
  return arr;
}

static void at_text(int64_t ms, char *buf, size_t cap) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char day[32];
  strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, cap, "%s.%03dZ", day, (int)(ms % 1000 + 1000) % 1000);
}

static json_object *head_json(const struct gb_decision *d) {
  const struct gb_plan_record *r = &d->rec;
  json_object *o = json_object_new_object();
  if (!o)
    return NULL;
  char id[17], at[48];
  gb_decision_id_text(r->id, id);
  at_text(r->decided_ms, at, sizeof(at));
  json_object_object_add(o, "v", json_object_new_int(GB_DECISION_VERSION));
  json_object_object_add(o, "id", json_object_new_string(id));
  json_object_object_add(o, "gen", json_object_new_uint64(r->generation));
  json_object_object_add(o, "at", json_object_new_string(at));
  json_object_object_add(o, "mode", json_object_new_string(d->mode));
  if (r->whole_cluster)
    json_object_object_add(o, "whole", json_object_new_boolean(1));
  json_object_object_add(o, "domain", json_object_new_string(r->domain ? r->domain : ""));
  json_object_object_add(o, "tier", json_object_new_int64(r->tier));
  json_object_object_add(o, "tierName", json_object_new_string(r->tier_name ? r->tier_name : ""));
  json_object_object_add(o, "pods", json_object_new_int64(r->pods));
  json_object_object_add(o, "restriction", restriction_json(d));
  json_object_object_add(o, "sets", sets_json(r));
  return o;
}

static size_t digits(int64_t v) {
  char b[24];
  return (size_t)snprintf(b, sizeof(b), "%lld", (long long)v);
}

int gb_decision_encode(const struct gb_decision *d, struct gb_buf *b) {
  json_object *o = head_json(d), *nodes = json_object_new_array();
  int rc = GC_ENOMEM;
  if (!o || !nodes)
    goto out;
  const char *txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  size_t used = strlen(txt) + 64; /* the "nodes" and "truncated" members' own text */
  int64_t truncated = d->rec.truncated;
  for (size_t j = 0; j < d->rec.n_assign; j++) {
    const struct gb_plan_assign *as = &d->rec.assign[j];
    /* Node names are DNS names: no escapes, so the cost is exact. */
    size_t cost = strlen(as->node) + digits(as->set) + digits(as->pods) + 8;
    if (used + cost > GB_DECISION_MAX_BYTES) {
      truncated += as->pods;
      continue;
    }
    used += cost;
    json_object *line = json_object_new_array();
    json_object_array_add(line, json_object_new_string(as->node));
    json_object_array_add(line, json_object_new_int64(as->set));
    json_object_array_add(line, json_object_new_int64(as->pods));
    json_object_array_add(nodes, line);
  }
  json_object_object_add(o, "nodes", nodes);
  nodes = NULL;
  if (truncated)
    json_object_object_add(o, "truncated", json_object_new_int64(truncated));
  txt = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  rc = strlen(txt) > GB_DECISION_MAX_BYTES ? GC_ELIMIT : gb_buf_addstr(b, txt);
out:
  json_object_put(nodes);
  json_object_put(o);
  return rc;
}

/* ---- decoding ------------------------------------------------------------------ */

struct dec {
  struct gb_decision *d;
  struct gc_diags *diags;
};

static int bad(struct dec *x, const char *field, const char *problem) {
  gc_diags_addf(x->diags, "%s: %s", field, problem);
  return GC_EINVAL;
}

/* An integer member within [lo, hi]; absent: *out = dflt when optional. */
static int int_field(struct dec *x, json_object *o, const char *k, int64_t lo, int64_t hi,
                     int optional, int64_t dflt, int64_t *out) {
  json_object *v = gb_kobj_get(o, k);
  if (!v && optional) {
    *out = dflt;
    return GC_OK;
  }
  if (!json_object_is_type(v, json_type_int))
    return bad(x, k, "must be an integer");
  errno = 0;
  int64_t n = json_object_get_int64(v);
  if (errno || n < lo || n > hi)
    return bad(x, k, "out of range");
  *out = n;
  return GC_OK;
}

/* A string member of at most max bytes, copied into the arena. */
static int str_field(struct dec *x, json_object *o, const char *k, size_t max, int optional,
                     const char **out) {
  json_object *v = gb_kobj_get(o, k);
  if (!v && optional) {
    *out = "";
    return GC_OK;
  }
  if (!json_object_is_type(v, json_type_string))
    return bad(x, k, "must be a string");
  if ((size_t)json_object_get_string_len(v) > max)
    return bad(x, k, "too long");
  *out = gc_arena_strdup(x->d->a, json_object_get_string(v));
  return *out ? GC_OK : GC_ENOMEM;
}

static int parse_id(struct dec *x, json_object *o) {
  const char *id = NULL;
  int rc = str_field(x, o, "id", 16, 0, &id);
  if (rc)
    return rc;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strlen(id) == 16 ? strtoull(id, &end, 16) : 0;
  if (errno || !end || *end || !v)
    return bad(x, "id", "must be 16 hex digits, not all zero");
  x->d->rec.id = v;
  return GC_OK;
}

static int parse_at(struct dec *x, json_object *o) {
  const char *at = NULL;
  int rc = str_field(x, o, "at", 40, 0, &at);
  if (rc)
    return rc;
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  int ms = 0, n = 0;
  const char *rest = strptime(at, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest || sscanf(rest, ".%3dZ%n", &ms, &n) != 1 || rest[n])
    return bad(x, "at", "must be an RFC 3339 time like 2026-05-01T12:00:00.123Z");
  x->d->rec.decided_ms = (int64_t)timegm(&tm) * 1000 + ms;
  return GC_OK;
}

static int parse_restriction(struct dec *x, json_object *o) {
  json_object *r = gb_kobj_get(o, "restriction"), *pp = NULL, *vals = NULL;
  if (!json_object_is_type(r, json_type_object))
    return bad(x, "restriction", "must be an object");
  if ((pp = gb_kobj_get(r, "perPod"))) {
    if (!json_object_is_type(pp, json_type_boolean) || !json_object_get_boolean(pp))
      return bad(x, "restriction.perPod", "must be true");
    x->d->per_pod = 1;
    return GC_OK;
  }
  json_object *key = gb_kobj_get(r, "key");
  if (!key)
    return GC_OK; /* {}: nothing added */
  vals = gb_kobj_get(r, "values");
  size_t n = json_object_is_type(vals, json_type_array) ? json_object_array_length(vals) : 0;
  if (!json_object_is_type(key, json_type_string) || !n || n > GB_RESTRICTION_MAX_HOSTS)
    return bad(x, "restriction", "needs a key and 1 to 64 values");
  const char *k = json_object_get_string(key);
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = GC_OK;
  for (size_t i = 0; i < n && !rc; i++) {
    json_object *v = json_object_array_get_idx(vals, i);
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    rc = strcmp(k, GB_HOSTNAME_LABEL)
             ? (n == 1 ? gb_restriction_label(&x->d->restr, k, s, &d) : GC_EINVAL)
             : gb_restriction_add_host(&x->d->restr, s, &d);
  }
  if (rc)
    bad(x, "restriction", d.n ? d.msgs[0] : "a label level takes one value");
  gc_diags_destroy(&d);
  return rc ? GC_EINVAL : GC_OK;
}

static int parse_set(struct dec *x, json_object *o, struct tp_podset *ps) {
  int64_t pods = 0;
  int rc = int_field(x, o, "pods", 0, TP_MAX_SET_PODS, 0, 0, &pods);
  json_object *req = gb_kobj_get(o, "req");
  if (rc)
    return rc;
  if (!json_object_is_type(req, json_type_object) ||
      json_object_object_length(req) > TP_MAX_RESOURCES)
    return bad(x, "sets[].req", "must be an object of at most 128 resources");
  size_t n = (size_t)json_object_object_length(req);
  ps->count = pods;
  ps->name = "";
  ps->res = gc_arena_alloc(x->d->a, (n ? n : 1) * sizeof(char *));
  ps->val = gc_arena_alloc(x->d->a, (n ? n : 1) * sizeof(int64_t));
  if (!ps->res || !ps->val)
    return GC_ENOMEM;
  json_object_object_foreach(req, name, val) {
    if (!json_object_is_type(val, json_type_int) || json_object_get_int64(val) <= 0 ||
        strlen(name) > GB_RESTRICTION_KEY_MAX)
      return bad(x, "sets[].req", "amounts must be positive integers of named resources");
    if (!(ps->res[ps->n_req] = gc_arena_strdup(x->d->a, name)))
      return GC_ENOMEM;
    ps->val[ps->n_req++] = json_object_get_int64(val);
  }
  return GC_OK;
}

static int parse_sets(struct dec *x, json_object *o) {
  json_object *arr = gb_kobj_get(o, "sets");
  size_t n = json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
  if (!n || n > TP_MAX_PODSETS)
    return bad(x, "sets", "must list 1 to 64 pod sets");
  struct tp_podset *sets = gc_arena_alloc(x->d->a, n * sizeof(*sets));
  if (!sets)
    return GC_ENOMEM;
  memset(sets, 0, n * sizeof(*sets));
  for (size_t k = 0; k < n; k++) {
    json_object *s = json_object_array_get_idx(arr, k);
    int rc = json_object_is_type(s, json_type_object) ? parse_set(x, s, &sets[k])
                                                      : bad(x, "sets[]", "must be an object");
    if (rc)
      return rc;
  }
  x->d->rec.sets = sets;
  x->d->rec.n_sets = n;
  return GC_OK;
}

static int parse_nodes(struct dec *x, json_object *o) {
  json_object *arr = gb_kobj_get(o, "nodes");
  if (!json_object_is_type(arr, json_type_array) || json_object_array_length(arr) > MAX_ASSIGN)
    return bad(x, "nodes", "must be an array of at most 200000 [node, set, pods]");
  size_t n = json_object_array_length(arr);
  struct gb_plan_assign *as = gc_arena_alloc(x->d->a, (n ? n : 1) * sizeof(*as));
  if (!as)
    return GC_ENOMEM;
  for (size_t j = 0; j < n; j++) {
    json_object *l = json_object_array_get_idx(arr, j), *nm = json_object_array_get_idx(l, 0),
                *set = json_object_array_get_idx(l, 1), *pods = json_object_array_get_idx(l, 2);
    if (!json_object_is_type(l, json_type_array) || json_object_array_length(l) != 3 ||
        !json_object_is_type(nm, json_type_string) || json_object_get_string_len(nm) < 1 ||
        json_object_get_string_len(nm) > TP_MAX_NAME || !json_object_is_type(set, json_type_int) ||
        !json_object_is_type(pods, json_type_int) || json_object_get_int64(set) < 0 ||
        (size_t)json_object_get_int64(set) >= x->d->rec.n_sets || json_object_get_int64(pods) < 1 ||
        json_object_get_int64(pods) > TP_MAX_SET_PODS)
      return bad(x, "nodes[]", "must be [node name, pod set index, pods >= 1]");
    as[j].set = (uint32_t)json_object_get_int64(set);
    as[j].pods = json_object_get_int64(pods);
    if (!(as[j].node = gc_arena_strdup(x->d->a, json_object_get_string(nm))))
      return GC_ENOMEM;
  }
  x->d->rec.assign = as;
  x->d->rec.n_assign = n;
  return GC_OK;
}

static int parse_head(struct dec *x, json_object *o) {
  struct gb_plan_record *r = &x->d->rec;
  int64_t v = 0, gen = 0, whole = 0;
  const char *mode = NULL;
  json_object *w = gb_kobj_get(o, "whole");
  int rc = int_field(x, o, "v", 1, 1000, 0, 0, &v);
  if (!rc && v != GB_DECISION_VERSION)
    rc = bad(x, "v", "unknown version (this gangbridge reads version 1)");
  if (!rc)
    rc = parse_id(x, o);
  if (!rc)
    rc = int_field(x, o, "gen", 0, INT64_MAX, 0, 0, &gen);
  if (!rc)
    rc = parse_at(x, o);
  if (!rc && w && !json_object_is_type(w, json_type_boolean))
    rc = bad(x, "whole", "must be a boolean");
  whole = w && json_object_get_boolean(w);
  if (!rc)
    rc = str_field(x, o, "mode", 4, 0, &mode);
  if (!rc && strcmp(mode, "hard") && strcmp(mode, "soft") && *mode)
    rc = bad(x, "mode", "must be hard, soft or empty");
  if (!rc)
    rc = str_field(x, o, "domain", TP_MAX_NAME, 0, &r->domain);
  if (!rc)
    rc = str_field(x, o, "tierName", TP_MAX_NAME, 1, &r->tier_name);
  if (!rc)
    rc = int_field(x, o, "tier", -1, 1000000, 0, 0, &r->tier);
  if (!rc)
    rc = int_field(x, o, "pods", 0, TP_MAX_GANG_PODS, 0, 0, &r->pods);
  if (!rc)
    rc = int_field(x, o, "truncated", 0, TP_MAX_GANG_PODS, 1, 0, &r->truncated);
  if (!rc && !whole && !r->domain[0])
    rc = bad(x, "domain", "must be set unless whole is true");
  r->generation = (uint64_t)gen;
  r->whole_cluster = (int)whole;
  if (!rc)
    snprintf(x->d->mode, sizeof(x->d->mode), "%s", mode);
  return rc;
}

/* The allowed nodes a record implies: the host list, or for one node per
 * pod the assignment's nodes; NULL (the domain's) otherwise. */
static int record_members(struct gb_decision *d) {
  size_t n = d->per_pod                           ? d->rec.n_assign
             : d->restr.kind == GB_RESTRICT_HOSTS ? d->restr.n_values
                                                  : 0;
  if (!n)
    return GC_OK;
  const char **m = gc_arena_alloc(d->a, n * sizeof(char *));
  if (!m)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    m[i] = d->per_pod ? d->rec.assign[i].node : d->restr.values[i];
  d->rec.members = m;
  d->rec.n_members = n;
  return GC_OK;
}

int gb_decision_decode(const char *text, size_t len, struct gb_decision **out,
                       struct gc_diags *diags) {
  *out = NULL;
  if (len > GB_DECISION_MAX_TEXT) {
    gc_diags_addf(diags, "record: %zu bytes, more than %u", len, GB_DECISION_MAX_TEXT);
    return GC_ELIMIT;
  }
  json_tokener *tok = json_tokener_new_ex(32);
  if (!tok)
    return GC_ENOMEM;
  json_object *o = json_tokener_parse_ex(tok, text, (int)len);
  int complete = json_tokener_get_error(tok) == json_tokener_success &&
                 json_tokener_get_parse_end(tok) == len;
  json_tokener_free(tok);
  struct dec x = {NULL, diags};
  int rc = gb_decision_new(&x.d);
  if (!rc && (!complete || !json_object_is_type(o, json_type_object)))
    rc = bad(&x, "record", "not a JSON object");
  if (!rc)
    rc = parse_head(&x, o);
  if (!rc)
    rc = parse_restriction(&x, o);
  if (!rc)
    rc = parse_sets(&x, o);
  if (!rc)
    rc = parse_nodes(&x, o);
  if (!rc)
    rc = record_members(x.d);
  json_object_put(o);
  if (rc) {
    gb_decision_free(x.d);
    return rc;
  }
  *out = x.d;
  return GC_OK;
}

/* ---- copying -------------------------------------------------------------------- */

int gb_decision_copy(const struct gb_decision *src, struct gb_decision **out) {
  struct gb_buf b;
  gb_buf_init(&b, GB_DECISION_MAX_TEXT);
  int rc = gb_decision_encode(src, &b);
  struct gc_diags d;
  gc_diags_init(&d);
  if (!rc)
    rc = gb_decision_decode(gb_buf_ptr(&b), gb_buf_len(&b), out, &d);
  gc_diags_destroy(&d);
  gb_buf_free(&b);
  return rc == GC_EINVAL ? GC_ENOMEM : rc;
}
