/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_render_int: the pieces gc_render builds a group object from, shared
 * with the backends' render_spec functions (gc_backend_<name>.c); nothing
 * else includes it.  Maps get member arrays of the exact size, keys and
 * constant values point at string literals (they outlive every arena), and
 * only the gang's own strings are copied, so the object stays valid after
 * the gang is freed.  Every builder returns NULL on OOM, and put refuses a
 * NULL value, so a chain of puts fails once at its end.
 */
#ifndef GC_RENDER_INT_H
#define GC_RENDER_INT_H

#include <stdint.h>
#include <string.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_value.h"

static inline struct gc_value *gc_rv_node(struct gc_arena *a, enum gc_type t) {
  struct gc_value *v = gc_arena_alloc(a, sizeof(*v));
  if (v)
    v->type = t;
  return v;
}

/* A map with room for cap members. */
static inline struct gc_value *gc_rv_map(struct gc_arena *a, size_t cap) {
  struct gc_value *m = gc_rv_node(a, GC_MAP);
  if (!m || !(m->u.members = gc_arena_alloc(a, cap * sizeof(struct gc_member))))
    return NULL;
  m->cap = cap;
  return m;
}

/* A string node borrowing s (a literal, or a descriptor's string). */
static inline struct gc_value *gc_rv_lit(struct gc_arena *a, const char *s, size_t len) {
  struct gc_value *v = gc_rv_node(a, GC_STR);
  if (v) {
    v->u.s = s;
    v->len = len;
  }
  return v;
}
#define GC_RV_LIT(a, s) gc_rv_lit((a), (s), sizeof(s) - 1)

/* A string node with its own copy of s (NULL for a NULL s). */
static inline struct gc_value *gc_rv_str(struct gc_arena *a, const char *s) {
  return s ? gc_value_str(a, s, strlen(s)) : NULL;
}

static inline struct gc_value *gc_rv_int(struct gc_arena *a, int64_t i) {
  struct gc_value *v = gc_rv_node(a, GC_INT);
  if (v)
    v->u.i = i;
  return v;
}

/* Appends key (borrowed: a literal or a descriptor's string) = v to m,
 * which has room; GC_ENOMEM on a NULL m or v. */
static inline int gc_rv_put(struct gc_value *m, const char *key, size_t klen, struct gc_value *v) {
  if (!m || !v || m->len >= m->cap)
    return GC_ENOMEM;
  m->u.members[m->len++] = (struct gc_member){key, klen, v};
  return GC_OK;
}
#define GC_RV_PUT(m, k, v) gc_rv_put((m), (k), sizeof(k) - 1, (v))

#endif
