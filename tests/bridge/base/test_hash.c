/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_hash: the published FNV-1a 64-bit test vectors, the
 * string and byte forms agreeing, hashing in pieces equal to hashing the
 * whole, and bytes above 0x7f hashed as unsigned (a signed char copy would
 * differ there); the chained table: find, growth keeping every entry,
 * colliding hashes, removal, iteration and clearing, and its size bound.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gb_hash.h"
#include "gc_diag.h"

START_TEST(test_vectors) {
  /* From the FNV reference (isthe.com/chongo/tech/comp/fnv). */
  ck_assert_uint_eq(gb_hash_str(""), 0xcbf29ce484222325ULL);
  ck_assert_uint_eq(gb_hash_str("a"), 0xaf63dc4c8601ec8cULL);
  ck_assert_uint_eq(gb_hash_str("foobar"), 0x85944171f73967e8ULL);
  ck_assert_uint_eq(gb_hash_bytes("foobar", 6), 0x85944171f73967e8ULL);
  ck_assert_uint_eq(gb_hash_bytes(NULL, 0), 0xcbf29ce484222325ULL);
}
END_TEST

START_TEST(test_pieces) {
  uint64_t h = gb_hash_fnv1a(GB_HASH_FNV_OFFSET, "foo", 3);
  h = gb_hash_fnv1a(h, "bar", 3);
  ck_assert_uint_eq(h, gb_hash_str("foobar"));
  ck_assert_uint_eq(gb_hash_fnv1a(h, NULL, 0), h);
}
END_TEST

START_TEST(test_high_bytes) {
  const char s[] = "\xff\x80x";
  uint64_t want = GB_HASH_FNV_OFFSET;
  for (size_t i = 0; i < 3; i++)
    want = (want ^ (unsigned char)s[i]) * 1099511628211ULL;
  ck_assert_uint_eq(gb_hash_str(s), want);
  ck_assert_uint_eq(gb_hash_bytes(s, 3), want);
  ck_assert_uint_ne(gb_hash_str("ab"), gb_hash_str("ba"));
}
END_TEST

struct item {
  struct gb_hnode node; /* first member */
  int key;
};

static struct item *find(const struct gb_htab *t, int key) {
  uint64_t h = gb_hash_bytes(&key, sizeof(key));
  for (struct gb_hnode *n = gb_htab_chain(t, h); n; n = n->next)
    if (n->hash == h && ((struct item *)n)->key == key)
      return (struct item *)n;
  return NULL;
}

static void count_free(struct gb_hnode *n, void *ctx) {
  (*(int *)ctx)++;
  free(n);
}

START_TEST(test_table) {
  struct gb_htab t;
  ck_assert_int_eq(gb_htab_init(&t, 3), 0);
  ck_assert_uint_eq(t.n_buckets, 16);
  enum { N = 5000 };
  for (int k = 0; k < N; k++) {
    struct item *it = malloc(sizeof(*it));
    ck_assert_ptr_nonnull(it);
    it->key = k;
    it->node.hash = gb_hash_bytes(&k, sizeof(k));
    gb_htab_insert(&t, &it->node);
  }
  ck_assert_uint_eq(t.n, N);
  ck_assert_uint_ge(t.n_buckets, N); /* grew with the entries */
  for (int k = 0; k < N; k++)
    ck_assert_ptr_nonnull(find(&t, k));
  ck_assert_ptr_null(find(&t, N));
  /* Removal of every other key. */
  for (int k = 0; k < N; k += 2) {
    struct item *it = find(&t, k);
    gb_htab_remove(&t, &it->node);
    free(it);
  }
  ck_assert_uint_eq(t.n, N / 2);
  ck_assert_ptr_null(find(&t, 0));
  ck_assert_ptr_nonnull(find(&t, 1));
  /* A walk meets each remaining entry once. */
  size_t seen = 0, cursor = 0;
  long sum = 0;
  for (struct gb_hnode *n = gb_htab_next(&t, &cursor, NULL); n; n = gb_htab_next(&t, &cursor, n)) {
    seen++;
    sum += ((struct item *)n)->key;
  }
  ck_assert_uint_eq(seen, N / 2);
  ck_assert_int_eq(sum, (long)(N / 2) * (N / 2)); /* 1 + 3 + ... + (N - 1) */
  int freed = 0;
  gb_htab_clear(&t, count_free, &freed);
  ck_assert_int_eq(freed, N / 2);
  ck_assert_uint_eq(t.n, 0);
  cursor = 0;
  ck_assert_ptr_null(gb_htab_next(&t, &cursor, NULL));
  gb_htab_free(&t);
  gb_htab_free(NULL);
}
END_TEST

START_TEST(test_table_collisions_and_bounds) {
  struct gb_htab t;
  ck_assert_int_eq(gb_htab_init(&t, 0), 0);
  struct item a = {{NULL, 7}, 1}, b = {{NULL, 7}, 2}, c = {{NULL, 7 + 16}, 3};
  gb_htab_insert(&t, &a.node);
  gb_htab_insert(&t, &b.node);
  gb_htab_insert(&t, &c.node);
  int found = 0;
  for (struct gb_hnode *n = gb_htab_chain(&t, 7); n; n = n->next)
    found += n->hash == 7;
  ck_assert_int_eq(found, 2);
  gb_htab_remove(&t, &b.node);
  /* c shares the bucket but not the hash; only a is left with hash 7. */
  struct gb_hnode *only = NULL;
  found = 0;
  for (struct gb_hnode *n = gb_htab_chain(&t, 7); n; n = n->next)
    if (n->hash == 7) {
      found++;
      only = n;
    }
  ck_assert_int_eq(found, 1);
  ck_assert_ptr_eq(only, &a.node);
  ck_assert_uint_eq(t.n, 2);
  gb_htab_clear(&t, NULL, NULL);
  gb_htab_free(&t);
  ck_assert_int_eq(gb_htab_init(&t, ((size_t)1 << 30) + 1), GC_EINVAL);
  ck_assert_ptr_null(t.buckets);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("hash");
  TCase *tc = tcase_create("hash");
  tcase_add_test(tc, test_vectors);
  tcase_add_test(tc, test_pieces);
  tcase_add_test(tc, test_high_bytes);
  tcase_add_test(tc, test_table);
  tcase_add_test(tc, test_table_collisions_and_bounds);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
