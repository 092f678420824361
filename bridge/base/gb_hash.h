/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_hash: the one string hash of the bridge, 64-bit FNV-1a, used by every
 * in-memory table (controller state, events, informer cache, manifest key
 * sets, metric series, work queue, timeout report), and the one chained hash
 * table (struct gb_htab) for tables that grow with their contents.  The hash
 * can be fed in pieces so that composite keys hash without being joined
 * first.  It is not a defence against chosen collisions: tables keep their
 * chains bounded by their own entry limits.  The table is intrusive: an
 * entry embeds a struct gb_hnode as its FIRST member and stays owned by the
 * caller; the table owns only its bucket array.  Not thread-safe: callers
 * hold their own lock.  It depends only on libc and gc_diag's codes.
 */
#ifndef GB_HASH_H
#define GB_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The FNV-1a 64-bit offset basis: the state to start a hash from. */
#define GB_HASH_FNV_OFFSET 14695981039346656037ULL

/* Continues the FNV-1a hash state h over data[0..len) and returns the new
 * state.  data is borrowed; NULL is accepted when len is 0. */
uint64_t gb_hash_fnv1a(uint64_t h, const void *data, size_t len);

/* The FNV-1a hash of data[0..len) (borrowed). */
uint64_t gb_hash_bytes(const void *data, size_t len);

/* The FNV-1a hash of the NUL-terminated string s (borrowed, not NULL). */
uint64_t gb_hash_str(const char *s);

/* A table entry's link; embed as the first member of the entry struct so
 * that a struct gb_hnode * can be cast back to the entry. */
struct gb_hnode {
  struct gb_hnode *next;
  uint64_t hash;
};

struct gb_htab {
  struct gb_hnode **buckets; /* owned; n_buckets long, a power of two */
  size_t n_buckets;
  size_t n; /* entries linked in */
};

/* Sets up an empty table with n_buckets buckets (rounded up to a power of
 * two, at least 16; at most 2^30).  Returns 0, GC_EINVAL (too many) or
 * GC_ENOMEM.  Free with gb_htab_free. */
int gb_htab_init(struct gb_htab *t, size_t n_buckets);

/* Frees the bucket array (not the entries: gb_htab_clear them first if
 * they must be freed).  Accepts NULL; the table is then
 * empty and must be set up again before use. */
void gb_htab_free(struct gb_htab *t);

/* The first entry of the chain where hash would be (borrowed), or NULL.
 * Walk on with ->next and compare ->hash and the key yourself. */
struct gb_hnode *gb_htab_chain(const struct gb_htab *t, uint64_t hash);

/* Links node (caller-owned, node->hash set by the caller) into the table.
 * The bucket array doubles when the entries outnumber the buckets; when
 * that allocation fails the chains only get longer.  Can't fail. */
void gb_htab_insert(struct gb_htab *t, struct gb_hnode *node);

/* Unlinks node (which must be in the table); it stays caller-owned. */
void gb_htab_remove(struct gb_htab *t, struct gb_hnode *node);

/* Iteration: the entry after prev (NULL to start) in bucket order, or NULL
 * at the end.  *bucket is the cursor (any value when starting).  The table
 * must not change during a walk. */
struct gb_hnode *gb_htab_next(const struct gb_htab *t, size_t *bucket, struct gb_hnode *prev);

/* Unlinks every entry, calling fn(node, ctx) on each after it is unlinked
 * (fn may free it; fn may be NULL).  The buckets are kept. */
void gb_htab_clear(struct gb_htab *t, void (*fn)(struct gb_hnode *node, void *ctx), void *ctx);

#endif
