/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_emit_yaml writes the documents whose scalars libyaml would write
 * unchanged itself and hands the rest to libyaml.  These tests hold it to
 * libyaml's bytes: random streams of random trees (every kind of node, empty
 * containers, nested sequences, long keys, and strings made of the bytes
 * that change libyaml's choice: blanks, ':', '#', '-', '.', quotes,
 * backslashes, control bytes, line breaks, UTF-8, bool and number words)
 * are written by gb_emit_yaml and by the all-libyaml reference
 * (gb_emit_yaml_libyaml), and the two outputs and return codes must be the
 * same, byte for byte.  A further test checks the quoting choices on every
 * short string over the alphabet.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_emit.h"
#include "gb_emit_test.h"

/* A small deterministic generator (xorshift64*), so a failure repeats. */
static uint64_t rng_state;

static uint64_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static size_t pick(size_t n) { return (size_t)(rnd() % n); }

/* Pieces strings are made of: ordinary text, then the bytes and words that
 * decide plain, quoted or literal. */
static const char *const PIECES[] = {
    "a", "node", "Gi", "x", "7", "-", ".", "/", "_", " ", ":", ": ", " #", "#", "?", ",", "[",
    "]", "{", "}", "&", "*", "!", "|", ">", "'", "\"", "\\", "%", "@", "`", "~", "\n", "\n\n",
    "\t", "\x01", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xff", "---", "...", "true", "no", "null",
    "1", "0.5", "1e3", "0x1F", "<<", "=", "+", "y", "2024-01-01", "nvidia.com/gpu", "- ", "  "};

static size_t make_string(char *buf, size_t cap) {
  size_t len = 0, parts = pick(5);
  for (size_t i = 0; i < parts; i++) {
    /* Mostly ordinary text, so that many documents take the direct path. */
    const char *p = PIECES[rnd() % 4 ? pick(8) : pick(sizeof(PIECES) / sizeof(*PIECES))];
    size_t n = strlen(p);
    if (len + n >= cap)
      break;
    memcpy(buf + len, p, n);
    len += n;
  }
  buf[len] = '\0';
  return len;
}

static struct gc_value *make_tree(struct gc_arena *a, int depth);

static struct gc_value *make_scalar(struct gc_arena *a) {
  char buf[256];
  switch (pick(10)) {
  case 0: return gc_value_null(a);
  case 1: return gc_value_bool(a, (int)pick(2));
  case 2: return gc_value_int(a, (int64_t)(rnd() % 2000) - 1000);
  case 3: {
    struct gc_value *f = gc_value_float(a, (double)(int64_t)(rnd() % 1000) / 8.0 - 50.0);
    return f;
  }
  default: {
    size_t n = make_string(buf, sizeof(buf));
    return gc_value_str(a, buf, n);
  }
  }
}

static struct gc_value *make_container(struct gc_arena *a, int depth, int map) {
  struct gc_value *v = map ? gc_value_map(a) : gc_value_seq(a);
  size_t n = pick(5);
  for (size_t i = 0; i < n; i++) {
    struct gc_value *item = make_tree(a, depth + 1);
    if (!map) {
      ck_assert_int_eq(gc_seq_push(a, v, item), 0);
      continue;
    }
    char key[300];
    size_t klen;
    if (pick(40) == 0) {
      /* Keys around libyaml's 128-byte limit of a simple key. */
      klen = 126 + pick(5);
      memset(key, 'k', klen);
      key[klen] = '\0';
    } else {
      klen = make_string(key, 64);
    }
    if (gc_map_getn(v, key, klen))
      continue;
    ck_assert_int_eq(gc_map_append(a, v, key, klen, item), 0);
  }
  return v;
}

static struct gc_value *make_tree(struct gc_arena *a, int depth) {
  size_t k = depth > 5 ? 0 : pick(10);
  if (k < 5)
    return make_scalar(a);
  return make_container(a, depth, k < 8);
}

/* Writes docs both ways and requires the same return code and bytes. */
static void same_bytes(const struct gc_value *const *docs, size_t n, unsigned iter) {
  char *got = NULL, *want = NULL;
  size_t glen = 0, wlen = 0;
  int grc = gb_emit_yaml(docs, n, &got, &glen);
  int wrc = gb_emit_yaml_libyaml(docs, n, &want, &wlen);
  ck_assert_msg(grc == wrc, "iteration %u: rc %d, libyaml %d", iter, grc, wrc);
  if (!grc)
    ck_assert_msg(glen == wlen && !memcmp(got, want, glen),
                  "iteration %u: direct writer differs\n--- got:\n%s\n--- libyaml:\n%s", iter,
                  got, want);
  free(got);
  free(want);
}

START_TEST(random_streams_match_libyaml) {
  rng_state = 0x9E3779B97F4A7C15ULL;
  for (unsigned iter = 0; iter < 20000; iter++) {
    struct gc_arena *a = gc_arena_new(0);
    const struct gc_value *docs[4];
    size_t n = pick(5);
    for (size_t i = 0; i < n; i++) {
      /* Roots are mostly non-empty maps (as the loader gives), sometimes
       * sequences, empty containers or scalars. */
      size_t r = pick(10);
      docs[i] = r < 7 ? make_container(a, 1, 1) : r < 9 ? make_container(a, 1, 0) : make_scalar(a);
    }
    same_bytes(docs, n, iter);
    gc_arena_free(a);
  }
}
END_TEST

/* Every string of up to three pieces as a value, a key and a sequence item,
 * alone and between documents libyaml writes. */
START_TEST(short_strings_match_libyaml) {
  size_t np = sizeof(PIECES) / sizeof(*PIECES);
  unsigned iter = 0;
  for (size_t i = 0; i <= np; i++) {
    for (size_t j = 0; j <= np; j++) {
      for (size_t k = 0; k < 3; k++) {
        char s[64];
        size_t len = (size_t)snprintf(s, sizeof(s), "%s%s%s", i < np ? PIECES[i] : "",
                                      j < np ? PIECES[j] : "", k == 1 ? ":" : k == 2 ? " " : "");
        struct gc_arena *a = gc_arena_new(0);
        struct gc_value *m = gc_value_map(a), *seq = gc_value_seq(a), *lit = gc_value_map(a);
        ck_assert_int_eq(gc_map_append(a, m, "k", 1, gc_value_str(a, s, len)), 0);
        ck_assert_int_eq(gc_map_append(a, m, s, len, gc_value_int(a, 1)), 0);
        ck_assert_int_eq(gc_seq_push(a, seq, gc_value_str(a, s, len)), 0);
        ck_assert_int_eq(gc_map_append(a, m, "s", 1, seq), 0);
        /* A kept literal block leaves libyaml's document open. */
        ck_assert_int_eq(gc_map_append(a, lit, "t", 1, gc_value_strz(a, "x\n\n")), 0);
        const struct gc_value *docs[] = {m, lit, m, m};
        same_bytes(docs, 4, iter++);
        same_bytes(docs + 1, 2, iter++);
        gc_arena_free(a);
      }
    }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("emit_direct");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, random_streams_match_libyaml);
  tcase_add_test(tc, short_strings_match_libyaml);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
