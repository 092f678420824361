/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_value: the neutral document tree every gangbridge library works on.  It
 * is JSON's data model (null, bool, int, float, string, sequence, map) plus
 * the source position of each node and, for scalars, the exact spelling in
 * the source, so a Quantity written as the number 0.5 is parsed from "0.5"
 * and never through a double.  Values are allocated from a gc_arena and are
 * freed with it; nothing here frees individual nodes.  The bridge converts
 * YAML (libyaml) and JSON (json-c) into this tree, so no third-party type
 * reaches gangcalc/ or topology/.  Map members keep their insertion order;
 * the loaders reject duplicate keys, as Kubernetes does.
 */
#ifndef GC_VALUE_H
#define GC_VALUE_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"

enum gc_type { GC_NULL, GC_BOOL, GC_INT, GC_FLOAT, GC_STR, GC_SEQ, GC_MAP };

struct gc_value;

struct gc_member {
  const char *key; /* NUL-terminated, arena-owned */
  size_t key_len;
  struct gc_value *value;
};

struct gc_value {
  enum gc_type type;
  uint32_t line, col; /* 1-based source position; 0 when built in memory */
  size_t len;         /* GC_STR: bytes; GC_SEQ: items; GC_MAP: members */
  size_t cap;         /* GC_SEQ/GC_MAP: allocated slots */
  union {
    int b;
    int64_t i;
    double f;
    const char *s; /* NUL-terminated; may contain NUL bytes before len */
    struct gc_value **items;
    struct gc_member *members;
  } u;
  const char *text; /* scalars: spelling in the source; NULL when built */
};

/* Constructors.  All return an arena-owned node, or NULL when the arena is
 * exhausted. */
struct gc_value *gc_value_null(struct gc_arena *a);
struct gc_value *gc_value_bool(struct gc_arena *a, int b);
struct gc_value *gc_value_int(struct gc_arena *a, int64_t i);
struct gc_value *gc_value_float(struct gc_arena *a, double f);
struct gc_value *gc_value_str(struct gc_arena *a, const char *s, size_t len);
struct gc_value *gc_value_strz(struct gc_arena *a, const char *s);
struct gc_value *gc_value_seq(struct gc_arena *a);
struct gc_value *gc_value_map(struct gc_arena *a);

/* Appends item to seq.  Returns 0, GC_EINVAL if seq is not a sequence, or
 * GC_ENOMEM.  The item is borrowed into the tree (same arena expected). */
int gc_seq_push(struct gc_arena *a, struct gc_value *seq, struct gc_value *item);

/* Sets key to value in map, replacing an existing member of that key.  The
 * key is copied.  Returns 0, GC_EINVAL (not a map) or GC_ENOMEM. */
int gc_map_set(struct gc_arena *a, struct gc_value *map, const char *key,
               struct gc_value *value);

/* Appends a member without looking for an existing key (loaders, which check
 * duplicates themselves).  The key (key_len bytes) is copied. */
int gc_map_append(struct gc_arena *a, struct gc_value *map, const char *key,
                  size_t key_len, struct gc_value *value);

/* Looks a key up.  Returns NULL if v is NULL, not a map, or lacks the key. */
struct gc_value *gc_map_get(const struct gc_value *map, const char *key);
struct gc_value *gc_map_getn(const struct gc_value *map, const char *key, size_t len);

/* Follows a dotted path of map keys ("spec.trainer.numNodes"); NULL when any
 * step is missing or not a map. */
struct gc_value *gc_value_path(const struct gc_value *v, const char *path);

/* Returns the string of a GC_STR node, NULL otherwise. */
const char *gc_value_as_str(const struct gc_value *v);

/* Deep copy into arena a.  NULL in gives NULL out (and on exhaustion). */
struct gc_value *gc_value_clone(struct gc_arena *a, const struct gc_value *v);

/* Deep structural equality (map order ignored; ints and floats compare by
 * value; positions and spellings ignored).  Returns 1 or 0. */
int gc_value_equal(const struct gc_value *x, const struct gc_value *y);

/* "null", "bool", "integer", "number", "string", "array" or "object". */
const char *gc_type_name(enum gc_type t);

#endif
