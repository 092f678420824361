/* SPDX-License-Identifier: Apache-2.0
 *
 * Emitter tests: YAML and JSON round trips (load(emit(tree)) == tree),
 * quoting of strings that would resolve to other types, JSON layout.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_emit.h"
#include "gb_manifest.h"

static void dump(const struct gc_diags *d) {
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "  diag: %s\n", d->msgs[i]);
}

/* Loads text (YAML or JSON) and asserts it has exactly want documents. */
static struct gb_docset *load_text(const char *name, const char *text, size_t len, size_t want) {
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_ptr_nonnull(ds);
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_manifest_load_buffer(ds, name, text, len, &d);
  if (rc) {
    dump(&d);
    fprintf(stderr, "  text:\n%s\n", text);
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, want);
  gc_diags_destroy(&d);
  return ds;
}

/* Emits roots as YAML and as JSON, reloads both, and compares. */
static void round_trip(const struct gc_value *const *roots, size_t n) {
  char *out = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_emit_yaml(roots, n, &out, &len), 0);
  ck_assert_uint_eq(strlen(out), len);
  struct gb_docset *back = load_text("rt.yaml", out, len, n);
  for (size_t i = 0; i < n; i++) {
    if (!gc_value_equal(roots[i], back->docs[i].root))
      fprintf(stderr, "YAML round trip differs:\n%s\n", out);
    ck_assert(gc_value_equal(roots[i], back->docs[i].root));
  }
  gb_docset_free(back);
  free(out);
  for (size_t i = 0; i < n; i++) {
    for (int pretty = 0; pretty <= 1; pretty++) {
      ck_assert_int_eq(gb_emit_json(roots[i], pretty, &out, &len), 0);
      back = load_text("rt.json", out, len, 1);
      if (!gc_value_equal(roots[i], back->docs[0].root))
        fprintf(stderr, "JSON round trip differs:\n%s\n", out);
      ck_assert(gc_value_equal(roots[i], back->docs[0].root));
      gb_docset_free(back);
      free(out);
    }
  }
}

static const char *UPSTREAM[] = {
    "examples/01-multi-node.yaml",
    "examples/02-runtime-patches.yaml",
    "examples/03-kueue-integration.yaml",
    "examples/04-volcano-integration.yaml",
    "examples/05-multi-step.yaml",
    "runtimes/data-cache_torch_distributed_with_cache.yaml",
    "runtimes/deepspeed_distributed.yaml",
    "runtimes/jax_distributed.yaml",
    "runtimes/mlx_distributed.yaml",
    "runtimes/torch_distributed.yaml",
    "runtimes/torchtune_llama3_2_llama3_2_1B.yaml",
    "runtimes/torchtune_llama3_2_llama3_2_3B.yaml",
    "runtimes/torchtune_qwen2_5_qwen2_5_1.5B.yaml",
    "runtimes/xgboost_distributed.yaml",
};

START_TEST(test_round_trip_upstream) {
  char path[512];
  snprintf(path, sizeof(path), "%s/tests/golden/inputs/upstream/%s", GB_SRC_DIR, UPSTREAM[_i]);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_manifest_load_path(ds, path, &d), 0);
  ck_assert_uint_gt(ds->n, 0);
  const struct gc_value **roots = malloc(ds->n * sizeof(*roots));
  for (size_t i = 0; i < ds->n; i++)
    roots[i] = ds->docs[i].root;
  round_trip(roots, ds->n);
  free(roots);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* Strings that must survive as strings: ambiguous, special to YAML, or
 * awkward to lay out. */
static const char *STRINGS[] = {
    "true", "True", "yes", "y", "Y", "n", "no", "on", "OFF", "null", "Null", "~", "",
    "0", "42", "-1", "+1", "0x1F", "0o17", "017", "0b101", "1_000", "08", "1.5", "1e3", ".5",
    "1.", ".inf", "-.Inf", ".nan", "1:20", "2024-01-02", "2024-01-02T03:04:05Z", "<<", "- x",
    "-", "a: b", "#c", "x #c", "*y", "&z", "!t", "%p", "@a", "`b", "{a}", "[x]", "x,y", "'q'",
    "\"dq\"", "\\", " lead", "trail ", "\ttab", "a\tb", "line1\nline2", "trailing\n", "\n",
    "  indented\nx", "---", "...", "? x", ": x", "\xC3\xA9\xE2\x82\xAC", "\x01ctl", "500m",
    "1Gi", "tRue", "nan", "Infinity", "a b", "x/y", "<<x",
};

START_TEST(test_round_trip_strings) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *root = gc_value_map(a);
  struct gc_value *seq = gc_value_seq(a);
  size_t n = sizeof(STRINGS) / sizeof(STRINGS[0]);
  for (size_t i = 0; i < n; i++) {
    char key[32];
    snprintf(key, sizeof(key), "k%zu", i);
    ck_assert_int_eq(gc_map_set(a, root, key, gc_value_strz(a, STRINGS[i])), 0);
    ck_assert_int_eq(gc_seq_push(a, seq, gc_value_strz(a, STRINGS[i])), 0);
  }
  ck_assert_int_eq(gc_map_set(a, root, "list", seq), 0);
  /* The same strings as keys. */
  struct gc_value *keys = gc_value_map(a);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(gc_map_append(a, keys, STRINGS[i], strlen(STRINGS[i]), gc_value_int(a, (int64_t)i)), 0);
  ck_assert_int_eq(gc_map_set(a, root, "keys", keys), 0);
  const struct gc_value *roots[] = {root};
  round_trip(roots, 1);
  gc_arena_free(a);
}
END_TEST

START_TEST(test_quoting) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *root = gc_value_map(a);
  gc_map_set(a, root, "a", gc_value_strz(a, "true"));
  gc_map_set(a, root, "b", gc_value_strz(a, "1"));
  gc_map_set(a, root, "c", gc_value_strz(a, ""));
  gc_map_set(a, root, "d", gc_value_strz(a, "null"));
  gc_map_set(a, root, "e", gc_value_strz(a, "plain text"));
  gc_map_set(a, root, "y", gc_value_strz(a, "on"));
  gc_map_set(a, root, "t", gc_value_strz(a, "2024-01-01T00:00:00Z"));
  gc_map_set(a, root, "q", gc_value_strz(a, "500m"));
  gc_map_set(a, root, "m", gc_value_strz(a, "one\ntwo\n"));
  gc_map_set(a, root, "i", gc_value_int(a, 7));
  gc_map_set(a, root, "f", gc_value_float(a, 2.0));
  gc_map_set(a, root, "z", gc_value_null(a));
  gc_map_set(a, root, "bt", gc_value_bool(a, 1));
  const struct gc_value *roots[] = {root};
  char *out;
  size_t len;
  ck_assert_int_eq(gb_emit_yaml(roots, 1, &out, &len), 0);
  ck_assert_str_eq(out, "a: \"true\"\n"
                        "b: \"1\"\n"
                        "c: \"\"\n"
                        "d: \"null\"\n"
                        "e: plain text\n"
                        "\"y\": \"on\"\n"
                        "t: \"2024-01-01T00:00:00Z\"\n"
                        "q: 500m\n"
                        "m: |\n"
                        "  one\n"
                        "  two\n"
                        "i: 7\n"
                        "f: 2.0\n"
                        "z: null\n"
                        "bt: true\n");
  free(out);
  gc_arena_free(a);
}
END_TEST

START_TEST(test_yaml_layout) {
  const char *text = "apiVersion: v1\n"
                     "kind: Pod\n"
                     "spec:\n"
                     "  containers:\n"
                     "  - name: a\n"
                     "    args:\n"
                     "    - x\n"
                     "    resources: {}\n"
                     "  list: []\n"
                     "---\n"
                     "b: 1.50\n";
  struct gb_docset *ds = load_text("l.yaml", text, strlen(text), 2);
  const struct gc_value *roots[] = {ds->docs[0].root, ds->docs[1].root};
  char *out;
  size_t len;
  ck_assert_int_eq(gb_emit_yaml(roots, 2, &out, &len), 0);
  ck_assert_str_eq(out, text);
  free(out);
  /* A leading empty map must not look like JSON to the loader. */
  struct gc_arena *a = gc_arena_new(0);
  const struct gc_value *empties[] = {gc_value_map(a), gc_value_map(a)};
  ck_assert_int_eq(gb_emit_yaml(empties, 2, &out, &len), 0);
  ck_assert_str_eq(out, "--- {}\n--- {}\n");
  free(out);
  round_trip(empties, 2);
  gc_arena_free(a);
  ck_assert_int_eq(gb_emit_yaml(NULL, 0, &out, &len), 0);
  ck_assert_str_eq(out, "");
  ck_assert_uint_eq(len, 0);
  free(out);
  gb_docset_free(ds);
}
END_TEST

/* Go's encoder escapes <, > and & inside strings (and kubectl prints what it
 * encodes); escaped quotes and backslashes must not end the string early, and
 * leading spaces inside strings are not indentation. */
START_TEST(test_json_html_escape) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *m = gc_value_map(a);
  ck_assert_int_eq(gc_map_set(a, m, "k<&>", gc_value_strz(a, "a \"<b>\" & \\\"c\n  d")), 0);
  char *out;
  size_t len;
  ck_assert_int_eq(gb_emit_json(m, 1, &out, &len), 0);
  ck_assert_str_eq(out, "{\n    \"k\\u003c\\u0026\\u003e\": "
                        "\"a \\\"\\u003cb\\u003e\\\" \\u0026 \\\\\\\"c\\n  d\"\n}\n");
  ck_assert_uint_eq(strlen(out), len);
  struct gb_docset *ds = load_text("h.json", out, len, 1);
  ck_assert(gc_value_equal(m, ds->docs[0].root));
  gb_docset_free(ds);
  free(out);
  gc_arena_free(a);
}
END_TEST

START_TEST(test_json_layout) {
  const char *text = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [], "
                     "\"metadata\": {\"resourceVersion\": \"\", \"a/b\": \"c/d\"}, "
                     "\"n\": [1, 2.50, true, null, {}]}";
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  /* A List unpacks to nothing, so build the document by hand from the load of
   * a renamed kind. */
  char *t2 = strdup(text);
  memcpy(strstr(t2, "List"), "Lisx", 4);
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "j.json", t2, strlen(t2), &d), 0);
  ck_assert_uint_eq(ds->n, 1);
  char *out;
  size_t len;
  ck_assert_int_eq(gb_emit_json(ds->docs[0].root, 1, &out, &len), 0);
  /* kubectl's layout: Go's MarshalIndent with four spaces. */
  ck_assert_str_eq(out, "{\n"
                        "    \"apiVersion\": \"v1\",\n"
                        "    \"kind\": \"Lisx\",\n"
                        "    \"items\": [],\n"
                        "    \"metadata\": {\n"
                        "        \"resourceVersion\": \"\",\n"
                        "        \"a/b\": \"c/d\"\n"
                        "    },\n"
                        "    \"n\": [\n"
                        "        1,\n"
                        "        2.50,\n"
                        "        true,\n"
                        "        null,\n"
                        "        {}\n"
                        "    ]\n"
                        "}\n");
  free(out);
  ck_assert_int_eq(gb_emit_json(ds->docs[0].root, 0, &out, &len), 0);
  ck_assert_str_eq(out, "{\"apiVersion\":\"v1\",\"kind\":\"Lisx\",\"items\":[],\"metadata\":{"
                        "\"resourceVersion\":\"\",\"a/b\":\"c/d\"},\"n\":[1,2.50,true,null,{}]}");
  ck_assert_uint_eq(len, strlen(out));
  free(out);
  free(t2);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_numbers) {
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *seq = gc_value_seq(a);
  double fs[] = {2.0, 0.1, 1e21, 1.5e-7, -3.25, 123456789.125, 1e300, 5e-324};
  const char *want_yaml = "- 2.0\n- 0.1\n- 1e+21\n- 1.5e-07\n- -3.25\n- 123456789.125\n"
                          "- 1e+300\n- 5e-324\n- 9223372036854775807\n- -9223372036854775808\n";
  for (size_t i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
    gc_seq_push(a, seq, gc_value_float(a, fs[i]));
  gc_seq_push(a, seq, gc_value_int(a, INT64_MAX));
  gc_seq_push(a, seq, gc_value_int(a, INT64_MIN));
  struct gc_value *root = gc_value_map(a);
  gc_map_set(a, root, "n", seq);
  const struct gc_value *roots[] = {seq};
  char *out;
  size_t len;
  ck_assert_int_eq(gb_emit_yaml(roots, 1, &out, &len), 0);
  ck_assert_str_eq(out, want_yaml);
  free(out);
  const struct gc_value *rroots[] = {root};
  round_trip(rroots, 1);

  /* Reloaded, floats stay floats and ints stay ints. */
  ck_assert_int_eq(gb_emit_json(root, 0, &out, &len), 0);
  struct gb_docset *ds = load_text("n.json", out, len, 1);
  const struct gc_value *n = gc_map_get(ds->docs[0].root, "n");
  ck_assert_int_eq(n->u.items[0]->type, GC_FLOAT);
  ck_assert_int_eq(n->u.items[8]->type, GC_INT);
  ck_assert_int_eq(n->u.items[8]->u.i, INT64_MAX);
  gb_docset_free(ds);
  free(out);

  /* JSON cannot carry Inf or NaN; YAML can. */
  gc_seq_push(a, seq, gc_value_float(a, INFINITY));
  ck_assert_int_eq(gb_emit_json(root, 1, &out, &len), GC_EINVAL);
  ck_assert_int_eq(gb_emit_yaml(rroots, 1, &out, &len), 0);
  ck_assert_ptr_nonnull(strstr(out, "- .inf\n"));
  free(out);
  gc_arena_free(a);
}
END_TEST

START_TEST(test_float_text_kept) {
  const char *text = "a: 1.50\nb: 1e3\nc: 0x10\nd: +.5\ne: 1_0.5\n";
  struct gb_docset *ds = load_text("f.yaml", text, strlen(text), 1);
  const struct gc_value *roots[] = {ds->docs[0].root};
  char *out;
  size_t len;
  ck_assert_int_eq(gb_emit_yaml(roots, 1, &out, &len), 0);
  /* Ints are written canonically; float spellings stay when valid YAML. */
  ck_assert_str_eq(out, "a: 1.50\nb: 1e3\nc: 16\nd: +.5\ne: 1_0.5\n");
  free(out);
  ck_assert_int_eq(gb_emit_json(roots[0], 0, &out, &len), 0);
  /* JSON keeps only spellings that are JSON numbers. */
  ck_assert_str_eq(out, "{\"a\":1.50,\"b\":1e3,\"c\":16,\"d\":0.5,\"e\":10.5}");
  free(out);
  gb_docset_free(ds);
}
END_TEST

START_TEST(test_bad_input) {
  char *out = (char *)1;
  size_t len = 1;
  ck_assert_int_eq(gb_emit_json(NULL, 1, &out, &len), GC_EINVAL);
  ck_assert_int_eq(gb_emit_yaml(NULL, 1, &out, &len), GC_EINVAL);
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *m = gc_value_map(a);
  gc_map_append(a, m, "a\0b", 3, gc_value_null(a));
  ck_assert_int_eq(gb_emit_json(m, 1, &out, &len), GC_EINVAL);
  /* Neither format can carry invalid UTF-8. */
  struct gc_value *bad = gc_value_map(a);
  gc_map_set(a, bad, "k", gc_value_str(a, "caf\xe9", 4));
  const struct gc_value *broots[] = {bad};
  ck_assert_int_eq(gb_emit_json(bad, 1, &out, &len), GC_EINVAL);
  ck_assert_int_eq(gb_emit_yaml(broots, 1, &out, &len), GC_EINVAL);
  struct gc_value *badkey = gc_value_map(a);
  gc_map_append(a, badkey, "\xed\xa0\x80", 3, gc_value_null(a)); /* a surrogate */
  const struct gc_value *kroots[] = {badkey};
  ck_assert_int_eq(gb_emit_json(badkey, 0, &out, &len), GC_EINVAL);
  ck_assert_int_eq(gb_emit_yaml(kroots, 1, &out, &len), GC_EINVAL);
  /* YAML can carry the NUL (escaped). */
  const struct gc_value *roots[] = {m};
  ck_assert_int_eq(gb_emit_yaml(roots, 1, &out, &len), 0);
  ck_assert_str_eq(out, "\"a\\0b\": null\n");
  free(out);
  gc_arena_free(a);
}
END_TEST

static Suite *emit_suite(void) {
  Suite *s = suite_create("emit");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_round_trip_upstream, 0,
                      (int)(sizeof(UPSTREAM) / sizeof(UPSTREAM[0])));
  tcase_add_test(tc, test_round_trip_strings);
  tcase_add_test(tc, test_quoting);
  tcase_add_test(tc, test_yaml_layout);
  tcase_add_test(tc, test_json_layout);
  tcase_add_test(tc, test_json_html_escape);
  tcase_add_test(tc, test_numbers);
  tcase_add_test(tc, test_float_text_kept);
  tcase_add_test(tc, test_bad_input);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(emit_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
