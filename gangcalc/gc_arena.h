/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_arena: a bump allocator with a hard byte limit.  Every document tree and
 * every gang result lives in one arena and is freed in one call, which keeps
 * the per-TrainJob work free of malloc/free pairs and makes "bound every
 * input" a single number: an arena refuses to grow past its limit.
 */
#ifndef GC_ARENA_H
#define GC_ARENA_H

#include <stddef.h>

struct gc_arena;

/* Creates an arena that will hand out at most `limit` bytes in total
 * (0 means 1 GiB).  Returns NULL when out of memory.  Free with gc_arena_free. */
struct gc_arena *gc_arena_new(size_t limit);

/* Frees the arena and everything allocated from it.  Accepts NULL. */
void gc_arena_free(struct gc_arena *a);

/* Returns `size` bytes aligned for any type, zeroed, owned by the arena; NULL
 * when the limit would be exceeded or memory is exhausted. */
void *gc_arena_alloc(struct gc_arena *a, size_t size);

/* Copies `len` bytes of `s` and a terminating NUL into the arena. */
char *gc_arena_strndup(struct gc_arena *a, const char *s, size_t len);

/* gc_arena_strndup of a NUL-terminated string; NULL in gives NULL out. */
char *gc_arena_strdup(struct gc_arena *a, const char *s);

/* Formats into a new arena string; NULL on failure. */
char *gc_arena_printf(struct gc_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Bytes handed out so far (for limits and memory benchmarks). */
size_t gc_arena_used(const struct gc_arena *a);

/* 1 when an allocation was refused because of the limit (rather than by
 * malloc), so callers can report the limit instead of "out of memory". */
int gc_arena_limit_hit(const struct gc_arena *a);

/* The arena's byte limit. */
size_t gc_arena_limit(const struct gc_arena *a);

/* Forgets every allocation but keeps the first chunk for reuse. */
void gc_arena_reset(struct gc_arena *a);

#endif
