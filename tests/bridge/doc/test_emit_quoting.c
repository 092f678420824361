/* SPDX-License-Identifier: Apache-2.0
 *
 * The YAML emitter skips the quoting analysis for strings whose first byte
 * rules out any other type.  These tests check that shortcut against the
 * full rule (gb_scalar_needs_quotes) over every string of up to three bytes
 * from an alphabet of the bytes that matter, the resolve words, and longer
 * strings starting with those letters: a string is double-quoted exactly
 * when the full rule says so, and reads back as the same string.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_emit.h"
#include "gb_manifest.h"
#include "gb_scalar.h"

static const char ALPHA[] = "yYnNtTfFoOeEsSlLuU0159+-._~<:aZ/ x";

static const char *const WORDS[] = {
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE",
    "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
    "~", ".inf", ".Inf", "+.inf", "-.inf", ".nan", ".NaN", "<<", "0x1F", "0o17", "1e3",
    "1_000", "1:30", "2024-01-01", "2024-1-1T10:00:00", "nvidia.com/gpu", "no-such",
    "offset", "trueish", "falsehood", "nullable", "yesterday", "n0", "on-call", "Off-by",
    "tolerations", "node", "team-3", "job-12", "8Gi", "250m", "-", "--", ".", "..", "+",
    "NaN", "nan", "Infinity", "onion", "noon", "yy", "OO"};

/* Emits {k: s} and checks the quoting of s and that it reads back. */
static void check_one(const char *s, size_t len) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *m = gc_value_map(a);
  ck_assert_int_eq(gc_map_set(a, m, "k", gc_value_str(a, s, len)), 0);
  char *out = NULL;
  size_t olen = 0;
  const struct gc_value *docs[] = {m};
  ck_assert_int_eq(gb_emit_yaml(docs, 1, &out, &olen), 0);
  int quoted = strncmp(out, "k: \"", 4) == 0;
  ck_assert_msg(quoted == gb_scalar_needs_quotes(s, len), "\"%.*s\" emitted as %s", (int)len, s,
                out);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "q.yaml", out, olen, &d), 0);
  const struct gc_value *back = gc_map_get(ds->docs[0].root, "k");
  ck_assert_msg(back && back->type == GC_STR && back->len == len && !memcmp(back->u.s, s, len),
                "\"%.*s\" did not read back as itself from %s", (int)len, s, out);
  gc_diags_destroy(&d);
  gb_docset_free(ds);
  free(out);
  gc_arena_free(a);
}

START_TEST(short_strings_match_full_rule) {
  size_t n = strlen(ALPHA);
  char buf[4];
  check_one("", 0);
  for (size_t i = 0; i < n; i++) {
    buf[0] = ALPHA[i];
    check_one(buf, 1);
    for (size_t j = 0; j < n; j++) {
      buf[1] = ALPHA[j];
      check_one(buf, 2);
      for (size_t k = 0; k < n; k += 3) {
        buf[2] = ALPHA[k];
        check_one(buf, 3);
      }
    }
  }
}
END_TEST

START_TEST(words_match_full_rule) {
  for (size_t i = 0; i < sizeof(WORDS) / sizeof(WORDS[0]); i++)
    check_one(WORDS[i], strlen(WORDS[i]));
}
END_TEST

int main(void) {
  Suite *s = suite_create("emit_quoting");
  TCase *tc = tcase_create("quoting");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, short_strings_match_full_rule);
  tcase_add_test(tc, words_match_full_rule);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
