/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_arena: chunked bump allocator with a byte limit.
 */
#include "gc_arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Chunks start small, so the many short-lived arenas of small results (one
 * per gang) stay cheap, and double up to ARENA_CHUNK_MAX for large trees. */
#define ARENA_CHUNK_MIN (2 * 1024)
#define ARENA_CHUNK_MAX (64 * 1024)
#define ARENA_ALIGN 16

struct chunk {
  struct chunk *next;
  size_t cap;
  size_t used;
  _Alignas(ARENA_ALIGN) unsigned char data[];
};

struct gc_arena {
  struct chunk *head;
  size_t limit;
  size_t handed_out;
  int limit_hit; /* an allocation was refused by the limit, not by malloc */
};

struct gc_arena *gc_arena_new(size_t limit) {
  struct gc_arena *a = calloc(1, sizeof(*a));
  if (!a)
    return NULL;
  a->limit = limit ? limit : ((size_t)1 << 30);
  return a;
}

void gc_arena_free(struct gc_arena *a) {
  if (!a)
    return;
  struct chunk *c = a->head;
  while (c) {
    struct chunk *next = c->next;
    free(c);
    c = next;
  }
  free(a);
}

void gc_arena_reset(struct gc_arena *a) {
  if (!a || !a->head)
    return;
  struct chunk *keep = a->head;
  while (keep->next) {
    struct chunk *c = keep;
    keep = keep->next;
    free(c);
  }
  keep->used = 0;
  a->head = keep;
  a->handed_out = 0;
  a->limit_hit = 0;
}

/* The slow path of arena_take: a new chunk (or a large block of its own). */
static void *arena_grow(struct gc_arena *a, size_t rounded) {
  struct chunk *c = a->head;
  size_t next = c ? c->cap * 2 : ARENA_CHUNK_MIN;
  if (next > ARENA_CHUNK_MAX)
    next = ARENA_CHUNK_MAX;
  size_t cap = rounded > next ? rounded : next;
  struct chunk *n = malloc(sizeof(*n) + cap);
  if (!n)
    return NULL;
  n->cap = cap;
  n->used = 0;
  /* A large one-off block goes behind the current chunk so the current
   * chunk's free space is not abandoned. */
  if (c && rounded > next) {
    n->next = c->next;
    c->next = n;
  } else {
    n->next = c;
    a->head = n;
  }
  n->used = rounded;
  a->handed_out += rounded;
  return n->data;
}

/* size bytes, aligned, not zeroed (for callers that write all of them). */
static void *arena_take(struct gc_arena *a, size_t size) {
  size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (rounded < size || rounded > a->limit - a->handed_out) {
    a->limit_hit = 1;
    return NULL;
  }
  struct chunk *c = a->head;
  if (!c || c->cap - c->used < rounded)
    return arena_grow(a, rounded);
  void *p = c->data + c->used;
  c->used += rounded;
  a->handed_out += rounded;
  return p;
}

void *gc_arena_alloc(struct gc_arena *a, size_t size) {
  void *p = arena_take(a, size);
  if (p)
    memset(p, 0, size);
  return p;
}

char *gc_arena_strndup(struct gc_arena *a, const char *s, size_t len) {
  if (len == SIZE_MAX)
    return NULL;
  char *p = arena_take(a, len + 1);
  if (!p)
    return NULL;
  if (len)
    memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *gc_arena_strdup(struct gc_arena *a, const char *s) {
  return s ? gc_arena_strndup(a, s, strlen(s)) : NULL;
}

char *gc_arena_printf(struct gc_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (len < 0)
    return NULL;
  char *p = gc_arena_alloc(a, (size_t)len + 1);
  if (!p)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)len + 1, fmt, ap);
  va_end(ap);
  return p;
}

size_t gc_arena_used(const struct gc_arena *a) { return a ? a->handed_out : 0; }

int gc_arena_limit_hit(const struct gc_arena *a) { return a && a->limit_hit; }

size_t gc_arena_limit(const struct gc_arena *a) { return a ? a->limit : 0; }
