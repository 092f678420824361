/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_hash: 64-bit FNV-1a (see gb_hash.h).
 */
#include "gb_hash.h"

#define FNV_PRIME 1099511628211ULL

uint64_t gb_hash_fnv1a(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= FNV_PRIME;
  }
  return h;
}

uint64_t gb_hash_bytes(const void *data, size_t len) {
  return gb_hash_fnv1a(GB_HASH_FNV_OFFSET, data, len);
}

uint64_t gb_hash_str(const char *s) {
  uint64_t h = GB_HASH_FNV_OFFSET;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= FNV_PRIME;
  }
  return h;
}
