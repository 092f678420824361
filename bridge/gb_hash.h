/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_hash: the one string hash of the bridge, 64-bit FNV-1a, used by every
 * in-memory table (controller state, events, informer cache, manifest key
 * sets, metric series, work queue, timeout report).  It can be fed in pieces
 * so that composite keys hash without being joined first.  It is not a
 * defence against chosen collisions: tables keep their chains bounded by
 * their own size limits.  It depends only on libc.
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

#endif
