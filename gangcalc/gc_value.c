/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_value: construction, lookup, copy and comparison of document trees.
 */
#include "gc_value.h"

#include <stdint.h>
#include <string.h>

#include "gc_diag.h"

static struct gc_value *value_new(struct gc_arena *a, enum gc_type t) {
  struct gc_value *v = gc_arena_alloc(a, sizeof(*v));
  if (v)
    v->type = t;
  return v;
}

struct gc_value *gc_value_null(struct gc_arena *a) { return value_new(a, GC_NULL); }

struct gc_value *gc_value_bool(struct gc_arena *a, int b) {
  struct gc_value *v = value_new(a, GC_BOOL);
  if (v)
    v->u.b = b ? 1 : 0;
  return v;
}

struct gc_value *gc_value_int(struct gc_arena *a, int64_t i) {
  struct gc_value *v = value_new(a, GC_INT);
  if (v)
    v->u.i = i;
  return v;
}

struct gc_value *gc_value_float(struct gc_arena *a, double f) {
  struct gc_value *v = value_new(a, GC_FLOAT);
  if (v)
    v->u.f = f;
  return v;
}

struct gc_value *gc_value_str(struct gc_arena *a, const char *s, size_t len) {
  struct gc_value *v = value_new(a, GC_STR);
  if (!v)
    return NULL;
  char *copy = gc_arena_strndup(a, s, len);
  if (!copy)
    return NULL;
  v->u.s = copy;
  v->len = len;
  return v;
}

struct gc_value *gc_value_strz(struct gc_arena *a, const char *s) {
  return gc_value_str(a, s, strlen(s));
}

struct gc_value *gc_value_seq(struct gc_arena *a) { return value_new(a, GC_SEQ); }
struct gc_value *gc_value_map(struct gc_arena *a) { return value_new(a, GC_MAP); }

/* Grows the slot array of a SEQ or MAP node by doubling; the old block stays
 * in the arena, which is acceptable for the small maps of manifests. */
static int grow(struct gc_arena *a, struct gc_value *v, size_t elem) {
  if (v->len < v->cap)
    return GC_OK;
  size_t ncap = v->cap ? v->cap * 2 : 4;
  if (ncap > SIZE_MAX / elem)
    return GC_ENOMEM;
  void *n = gc_arena_alloc(a, ncap * elem);
  if (!n)
    return GC_ENOMEM;
  void *old = v->type == GC_SEQ ? (void *)v->u.items : (void *)v->u.members;
  if (v->len)
    memcpy(n, old, v->len * elem);
  if (v->type == GC_SEQ)
    v->u.items = n;
  else
    v->u.members = n;
  v->cap = ncap;
  return GC_OK;
}

int gc_seq_push(struct gc_arena *a, struct gc_value *seq, struct gc_value *item) {
  if (!seq || seq->type != GC_SEQ || !item)
    return GC_EINVAL;
  int rc = grow(a, seq, sizeof(struct gc_value *));
  if (rc)
    return rc;
  seq->u.items[seq->len++] = item;
  return GC_OK;
}

int gc_map_append(struct gc_arena *a, struct gc_value *map, const char *key,
                  size_t key_len, struct gc_value *value) {
  if (!map || map->type != GC_MAP || !value)
    return GC_EINVAL;
  int rc = grow(a, map, sizeof(struct gc_member));
  if (rc)
    return rc;
  char *k = gc_arena_strndup(a, key, key_len);
  if (!k)
    return GC_ENOMEM;
  struct gc_member *m = &map->u.members[map->len++];
  m->key = k;
  m->key_len = key_len;
  m->value = value;
  return GC_OK;
}

static struct gc_member *member_find(const struct gc_value *map, const char *key, size_t len) {
  if (!map || map->type != GC_MAP)
    return NULL;
  for (size_t i = 0; i < map->len; i++) {
    struct gc_member *m = &map->u.members[i];
    if (m->key_len == len && memcmp(m->key, key, len) == 0)
      return m;
  }
  return NULL;
}

int gc_map_set(struct gc_arena *a, struct gc_value *map, const char *key,
               struct gc_value *value) {
  if (!map || map->type != GC_MAP || !value)
    return GC_EINVAL;
  size_t len = strlen(key);
  struct gc_member *m = member_find(map, key, len);
  if (m) {
    m->value = value;
    return GC_OK;
  }
  return gc_map_append(a, map, key, len, value);
}

struct gc_value *gc_map_getn(const struct gc_value *map, const char *key, size_t len) {
  struct gc_member *m = member_find(map, key, len);
  return m ? m->value : NULL;
}

struct gc_value *gc_map_get(const struct gc_value *map, const char *key) {
  return gc_map_getn(map, key, strlen(key));
}

struct gc_value *gc_value_path(const struct gc_value *v, const char *path) {
  const struct gc_value *cur = v;
  const char *p = path;
  while (cur && *p) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    cur = gc_map_getn(cur, p, len);
    p += len;
    if (*p == '.')
      p++;
  }
  return (struct gc_value *)cur;
}

const char *gc_value_as_str(const struct gc_value *v) {
  return v && v->type == GC_STR ? v->u.s : NULL;
}

struct gc_value *gc_value_clone(struct gc_arena *a, const struct gc_value *v) {
  if (!v)
    return NULL;
  struct gc_value *c = gc_arena_alloc(a, sizeof(*c));
  if (!c)
    return NULL;
  *c = *v;
  c->cap = 0;
  if (v->type == GC_STR) {
    char *s = gc_arena_strndup(a, v->u.s, v->len);
    if (!s)
      return NULL;
    c->u.s = s;
  } else if (v->type == GC_SEQ) {
    c->len = 0;
    c->u.items = NULL;
    for (size_t i = 0; i < v->len; i++) {
      struct gc_value *item = gc_value_clone(a, v->u.items[i]);
      if (!item || gc_seq_push(a, c, item))
        return NULL;
    }
  } else if (v->type == GC_MAP) {
    c->len = 0;
    c->u.members = NULL;
    for (size_t i = 0; i < v->len; i++) {
      const struct gc_member *m = &v->u.members[i];
      struct gc_value *val = gc_value_clone(a, m->value);
      if (!val || gc_map_append(a, c, m->key, m->key_len, val))
        return NULL;
    }
  }
  if (v->text) {
    c->text = gc_arena_strdup(a, v->text);
    if (!c->text)
      return NULL;
  }
  return c;
}

static int number_equal(const struct gc_value *x, const struct gc_value *y) {
  double fx = x->type == GC_INT ? (double)x->u.i : x->u.f;
  double fy = y->type == GC_INT ? (double)y->u.i : y->u.f;
  if (x->type == GC_INT && y->type == GC_INT)
    return x->u.i == y->u.i;
  return fx == fy;
}

int gc_value_equal(const struct gc_value *x, const struct gc_value *y) {
  if (!x || !y)
    return x == y;
  int xnum = x->type == GC_INT || x->type == GC_FLOAT;
  int ynum = y->type == GC_INT || y->type == GC_FLOAT;
  if (xnum && ynum)
    return number_equal(x, y);
  if (x->type != y->type)
    return 0;
  switch (x->type) {
  case GC_NULL: return 1;
  case GC_BOOL: return x->u.b == y->u.b;
  case GC_STR: return x->len == y->len && memcmp(x->u.s, y->u.s, x->len) == 0;
  case GC_SEQ:
    if (x->len != y->len)
      return 0;
    for (size_t i = 0; i < x->len; i++)
      if (!gc_value_equal(x->u.items[i], y->u.items[i]))
        return 0;
    return 1;
  case GC_MAP:
    if (x->len != y->len)
      return 0;
    for (size_t i = 0; i < x->len; i++) {
      const struct gc_member *m = &x->u.members[i];
      if (!gc_value_equal(m->value, gc_map_getn(y, m->key, m->key_len)))
        return 0;
    }
    return 1;
  default: return 0;
  }
}

const char *gc_type_name(enum gc_type t) {
  switch (t) {
  case GC_NULL: return "null";
  case GC_BOOL: return "bool";
  case GC_INT: return "integer";
  case GC_FLOAT: return "number";
  case GC_STR: return "string";
  case GC_SEQ: return "array";
  case GC_MAP: return "object";
  default: return "unknown";
  }
}
