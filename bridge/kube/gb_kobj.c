/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kobj: typed, NULL-tolerant reads of Kubernetes objects (see
 * gb_kobj.h).  json-c's own getters assert on the wrong type (an array
 * index on an object aborts), so every read checks the type first.
 */
#include "gb_kobj.h"
#include "gb_kobj_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

json_object *gb_kobj_get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!o || !key || !json_object_is_type(o, json_type_object))
    return NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

json_object *gb_kobj_dig(json_object *o, ...) {
  va_list ap;
  va_start(ap, o);
  for (const char *k = va_arg(ap, const char *); o && k; k = va_arg(ap, const char *))
    o = gb_kobj_get(o, k);
  va_end(ap);
  return o;
}

json_object *gb_kobj_path(json_object *o, const char *dotted) {
  char step[128];
  const char *p = dotted;
  for (int depth = 0; o && p; depth++) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (depth == 8 || n == 0 || n >= sizeof(step))
      return NULL;
    memcpy(step, p, n);
    step[n] = '\0';
    o = gb_kobj_get(o, step);
    p = dot ? dot + 1 : NULL;
  }
  return dotted ? o : NULL;
}

static json_object *typed(json_object *o, const char *key, json_type t) {
  json_object *v = gb_kobj_get(o, key);
  return v && json_object_is_type(v, t) ? v : NULL;
}

const char *gb_kobj_str(json_object *o, const char *key) {
  json_object *v = typed(o, key, json_type_string);
  return v ? json_object_get_string(v) : NULL;
}

json_object *gb_kobj_obj(json_object *o, const char *key) {
  return typed(o, key, json_type_object);
}

json_object *gb_kobj_arr(json_object *o, const char *key) { return typed(o, key, json_type_array); }

int gb_kobj_int(json_object *o, const char *key, int64_t *out) {
  json_object *v = typed(o, key, json_type_int);
  if (!v)
    return -1;
  *out = json_object_get_int64(v);
  return 0;
}

int gb_kobj_bool(json_object *o, const char *key, int dflt) {
  json_object *v = typed(o, key, json_type_boolean);
  return v ? json_object_get_boolean(v) != 0 : dflt;
}

size_t gb_kobj_len(json_object *a) {
  return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

json_object *gb_kobj_at(json_object *a, size_t i) {
  return i < gb_kobj_len(a) ? json_object_array_get_idx(a, i) : NULL;
}

const char *gb_kobj_meta(json_object *o, const char *field) {
  return gb_kobj_str(gb_kobj_get(o, "metadata"), field);
}

const char *gb_kobj_label(json_object *o, const char *key) {
  return gb_kobj_str(gb_kobj_dig(o, "metadata", "labels", NULL), key);
}

const char *gb_kobj_annotation(json_object *o, const char *key) {
  return gb_kobj_str(gb_kobj_dig(o, "metadata", "annotations", NULL), key);
}

static int same(const char *want, const char *have) {
  return !want || (have && !strcmp(want, have));
}

json_object *gb_kobj_owner(json_object *o, const char *kind, const char *uid, int controller) {
  json_object *refs = gb_kobj_dig(o, "metadata", "ownerReferences", NULL);
  for (size_t i = 0; i < gb_kobj_len(refs); i++) {
    json_object *r = gb_kobj_at(refs, i);
    if (same(kind, gb_kobj_str(r, "kind")) && same(uid, gb_kobj_str(r, "uid")) &&
        (!controller || gb_kobj_bool(r, "controller", 0)))
      return r;
  }
  return NULL;
}

json_object *gb_kobj_condition(json_object *o, const char *type) {
  json_object *cs = gb_kobj_dig(o, "status", "conditions", NULL);
  for (size_t i = 0; i < gb_kobj_len(cs); i++) {
    json_object *c = gb_kobj_at(cs, i);
    const char *t = gb_kobj_str(c, "type");
    if (t && type && !strcmp(t, type))
      return c;
  }
  return NULL;
}

const char *gb_kobj_where(json_object *o, char *buf, size_t cap) {
  const char *ns = gb_kobj_meta(o, "namespace"), *name = gb_kobj_meta(o, "name");
  const char *gen = gb_kobj_meta(o, "generateName");
  snprintf(buf, cap, "%.63s/%.253s%s", ns ? ns : "",
           name  ? name
           : gen ? gen
                 : "(unnamed)",
           name || !gen ? "" : "*");
  return buf;
}

json_object *gb_kobj_copy(json_object *o) {
  json_object *dst = NULL;
  if (!o || json_object_deep_copy(o, &dst, NULL) != 0)
    return NULL;
  return dst;
}
