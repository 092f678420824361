/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_options, the generic table-driven loader, over two test
 * tables of its own (every key type, a section shared by both tables):
 * defaults, values from text and from YAML with their type rules and
 * file:line:col, ranges, Go durations, enums with aliases, lists (items
 * checked, unique, bounded), unknown keys with the nearest key suggested,
 * the checks' messages prefixed with where the key was set, tables that
 * clash, and the output (YAML grouped by section and read back the same,
 * the key list, the help).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_options.h"
#include "gb_options_test.h"

struct alpha {
  int on;
  int count;
  double rate;
  double wait_s;
  const char *name;
  int color;
  struct gb_opt_list tags;
};

struct beta {
  int depth;
  const char *peer;
};

enum { RED, GREEN, BLUE };
static const struct gb_opt_enum colors[] = {{"red", RED, 0},
                                            {"green", GREEN, GB_OPT_ANYCASE},
                                            {"blue", BLUE, 0},
                                            {"azure", BLUE, GB_OPT_ALIAS},
                                            {NULL, 0, 0}};

static int tag_ok(const char *s, size_t n) { return n > 0 && n <= 8 && !strchr(s, ' '); }
static const struct gb_opt_items tags = {3, "tags", tag_ok, "a tag"};

#define S struct alpha
static const struct gb_opt alpha_keys[] = {
    GB_KEY_BOOL(S, "alpha.enabled", on, "true", "on", "switch"),
    GB_KEY_INT(S, "alpha.count", count, 1, 10, "3", "count", "how many"),
    GB_KEY_NUM(S, "alpha.rate", rate, -1, 100, "2.5", NULL, "how fast"),
    GB_KEY_DUR(S, "alpha.wait", wait_s, 0.001, 7200, "1m30s", NULL, "how long"),
    GB_KEY_STR(S, "alpha.name", name, "", NULL, "what"),
    GB_KEY_ENUM(S, "alpha.color", color, colors, "red", NULL, "which"),
    GB_KEY_LIST(S, "shared.tags", tags, &tags, "", NULL, "labels"),
};

/* The rule between alpha's keys: a name needs on. */
static int alpha_check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct alpha *o = opts;
  (void)a;
  if (*o->name && !o->on) {
    gc_diags_addf(d, "alpha.name: needs alpha.enabled");
    return GC_EINVAL;
  }
  return 0;
}
static const struct gb_opt_table alpha_table = GB_OPT_TABLE("alpha", "Alpha", S, alpha_keys,
                                                            alpha_check);
#undef S

#define S struct beta
static const struct gb_opt beta_keys[] = {
    GB_KEY_INT(S, "shared.depth", depth, 0, 5, "2", NULL, "how deep"),
    GB_KEY_STR(S, "beta.peer", peer, "x", NULL, "who"),
};
static int beta_check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct beta *o = opts;
  (void)a;
  if (!strcmp(o->peer, "bad")) {
    gc_diags_addf(d, "beta.peer: \"bad\" is refused");
    gc_diags_warnf(d, "beta.peer: and this is a warning");
    return GC_EINVAL;
  }
  return 0;
}
static const struct gb_opt_table beta_table = GB_OPT_TABLE("beta", "Beta", S, beta_keys,
                                                           beta_check);
#undef S

struct fx {
  struct alpha a;
  struct beta b;
  struct gb_options_part parts[2];
  struct gb_options set;
  struct gc_diags d;
};

static void fx_init(struct fx *f) {
  memset(f, 0, sizeof(*f));
  f->parts[0] = (struct gb_options_part){&alpha_table, &f->a};
  f->parts[1] = (struct gb_options_part){&beta_table, &f->b};
  gc_diags_init(&f->d);
  ck_assert_int_eq(gb_options_init(&f->set, f->parts, 2, &f->d), 0);
}

static void fx_free(struct fx *f) {
  gb_options_destroy(&f->set);
  gc_diags_destroy(&f->d);
}

static int has(const struct gc_diags *d, const char *sub) {
  for (size_t i = 0; i < d->n; i++)
    if (strstr(d->msgs[i], sub))
      return 1;
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "diag: %s\n", d->msgs[i]);
  return 0;
}

static int load(struct fx *f, const char *yaml) {
  size_t before = f->d.n;
  int rc = gb_options_load_buffer(&f->set, "t.yaml", yaml, strlen(yaml), &f->d);
  for (size_t i = before; getenv("GB_TEST_VERBOSE") && i < f->d.n; i++)
    fprintf(stderr, "load: %s\n", f->d.msgs[i]);
  return rc;
}

START_TEST(test_defaults) {
  struct fx f;
  fx_init(&f);
  ck_assert_int_eq(f.a.on, 1);
  ck_assert_int_eq(f.a.count, 3);
  ck_assert_double_eq(f.a.rate, 2.5);
  ck_assert_double_eq(f.a.wait_s, 90);
  ck_assert_str_eq(f.a.name, "");
  ck_assert_int_eq(f.a.color, RED);
  ck_assert_uint_eq(f.a.tags.n, 0);
  ck_assert_int_eq(f.b.depth, 2);
  ck_assert_str_eq(f.b.peer, "x");
  ck_assert_ptr_null(gb_options_where(&f.set, "alpha.count"));
  ck_assert_int_eq(gb_options_check(&f.set, &f.d), 0);
  ck_assert_uint_eq(f.d.n, 0);
  fx_free(&f);
}
END_TEST

START_TEST(test_text) {
  struct fx f;
  fx_init(&f);
  struct gc_diags *d = &f.d;
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.enabled", "no", "--set", d), 0);
  ck_assert_int_eq(f.a.on, 0);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.enabled", "maybe", "--set", d), GC_EINVAL);
  ck_assert(has(d, "--set: alpha.enabled: must be true or false, not \"maybe\""));
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.count", "11", "--count", d), GC_EINVAL);
  ck_assert(has(d, "--count: alpha.count: must be an integer in [1, 10], not \"11\""));
  ck_assert_int_eq(f.a.count, 3); /* unchanged on error */
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.rate", "-1", "--set", d), 0);
  ck_assert_double_eq(f.a.rate, -1);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.rate", "nan", "--set", d), GC_EINVAL);
  /* Durations: plain seconds, or Go's time.ParseDuration. */
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "2h", "--set", d), 0);
  ck_assert_double_eq(f.a.wait_s, 7200);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "1500us", "--set", d), 0);
  ck_assert_double_eq_tol(f.a.wait_s, 0.0015, 1e-12);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "12.5", "--set", d), 0);
  ck_assert_double_eq(f.a.wait_s, 12.5);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "2h1s", "--set", d), GC_EINVAL);
  ck_assert(has(d, "alpha.wait: must be a duration (seconds, or like \"500ms\", \"30s\", \"5m\") "
                   "in [0.001s, 7200s], not \"2h1s\""));
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "5 m", "--set", d), GC_EINVAL);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "-1s", "--set", d), GC_EINVAL);
  /* Go duration text as Go reads it: an exponent or a hex number is not one. */
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "1e1s", "--set", d), GC_EINVAL);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.wait", "0x10s", "--set", d), GC_EINVAL);
  /* Enums: listed names, an alias, one name in any case. */
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.color", "azure", "--set", d), 0);
  ck_assert_int_eq(f.a.color, BLUE);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.color", "GREEN", "--set", d), 0);
  ck_assert_int_eq(f.a.color, GREEN);
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.color", "RED", "--set", d), GC_EINVAL);
  ck_assert(has(d, "--set: alpha.color: must be red, green or blue, not \"RED\""));
  /* Strings are bounded. */
  char big[4200];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  ck_assert_int_eq(gb_options_set(&f.set, "alpha.name", big, "--set", d), GC_EINVAL);
  ck_assert(has(d, "alpha.name: value longer than 4096 bytes"));
  ck_assert_str_eq(gb_options_where(&f.set, "alpha.color"), "--set");
  fx_free(&f);
}
END_TEST

START_TEST(test_lists) {
  struct fx f;
  fx_init(&f);
  struct gc_diags *d = &f.d;
  ck_assert_int_eq(gb_options_set(&f.set, "shared.tags", "a,b", "--set", d), 0);
  ck_assert_uint_eq(f.a.tags.n, 2);
  ck_assert_str_eq(f.a.tags.items[1], "b");
  ck_assert_int_eq(gb_options_set(&f.set, "shared.tags", "a,a", "--set", d), GC_EINVAL);
  ck_assert(has(d, "--set: shared.tags[1]: \"a\" is listed twice"));
  ck_assert_int_eq(gb_options_set(&f.set, "shared.tags", "a,,b", "--set", d), GC_EINVAL);
  ck_assert(has(d, "--set: shared.tags[1]: \"\" is not a tag"));
  ck_assert_int_eq(gb_options_set(&f.set, "shared.tags", "a,b,c,d", "--set", d), GC_EINVAL);
  ck_assert(has(d, "--set: shared.tags: at most 3 tags, not 4"));
  ck_assert_uint_eq(f.a.tags.n, 2); /* unchanged on error */
  ck_assert_int_eq(gb_options_set(&f.set, "shared.tags", "", "--set", d), 0);
  ck_assert_uint_eq(f.a.tags.n, 0);
  ck_assert_int_eq(load(&f, "shared:\n  tags: [p, q]\n"), 0);
  ck_assert_uint_eq(f.a.tags.n, 2);
  ck_assert_int_eq(load(&f, "shared:\n  tags: [x, \"a b\"]\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:2:13: shared.tags[1]: \"a b\" is not a tag"));
  ck_assert_int_eq(load(&f, "shared:\n  tags: [x, 3]\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:2:13: shared.tags: must be a list of strings (without commas)"));
  ck_assert_int_eq(load(&f, "shared:\n  tags: \"p,q\"\n"), 0); /* the --set form */
  ck_assert_str_eq(f.a.tags.items[1], "q");
  fx_free(&f);
}
END_TEST

START_TEST(test_file) {
  struct fx f;
  fx_init(&f);
  struct gc_diags *d = &f.d;
  const char *ok = "apiVersion: x/v1\nkind: Whatever\nalpha:\n  enabled: false\n  count: 7\n"
                   "  wait: 5m\n  name: ~\nshared: {depth: 4}\nbeta:\n";
  ck_assert_int_eq(load(&f, ok), 0);
  ck_assert_int_eq(f.a.on, 0);
  ck_assert_int_eq(f.a.count, 7);
  ck_assert_double_eq(f.a.wait_s, 300);
  ck_assert_str_eq(f.a.name, "");
  ck_assert_int_eq(f.b.depth, 4);
  ck_assert_str_eq(f.set.source, "t.yaml");
  ck_assert_str_eq(gb_options_where(&f.set, "alpha.count"), "t.yaml:5:10");
  /* Typed YAML: a quoted number or boolean is a string. */
  ck_assert_int_eq(load(&f, "alpha:\n  count: \"7\"\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:2:10: alpha.count: must be an integer, not string"));
  ck_assert_int_eq(load(&f, "alpha:\n  enabled: \"yes\"\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:2:12: alpha.enabled: must be a boolean, not string"));
  ck_assert_int_eq(load(&f, "alpha:\n  color: 3\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:2:10: alpha.color: must be a string, not integer"));
  ck_assert_int_eq(load(&f, "alpha:\n  name: \"a\\0b\"\n"), GC_EINVAL); /* the YAML loader's */
  ck_assert(has(d, "t.yaml:2:9: invalid string \"a\\x00b\": contains a NUL byte"));
  ck_assert_int_eq(load(&f, "{\"alpha\": {\"name\": \"a\\u0000b\"}}"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:1:20: invalid string \"a\\x00b\": contains a NUL byte"));
  ck_assert_int_eq(load(&f, "alpha: 3\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:1:8: alpha: must be a map, not integer"));
  ck_assert_int_eq(load(&f, "a: 1\n---\nb: 2\n"), GC_EINVAL);
  ck_assert(has(d, "exactly one YAML document (found 2)"));
  /* Every problem of a file is reported, not only the first. */
  gc_diags_destroy(d);
  gc_diags_init(d);
  ck_assert_int_eq(load(&f, "alpha:\n  count: 0\n  rate: 101\n"), GC_EINVAL);
  ck_assert_uint_eq(d->n, 2);
  fx_free(&f);
}
END_TEST

/* Unknown keys name the nearest key or section: a typo, another case, the
 * right name in the wrong section; nothing when nothing is near. */
START_TEST(test_unknown) {
  struct fx f;
  fx_init(&f);
  struct gc_diags *d = &f.d;
  ck_assert_int_eq(load(&f, "alpha:\n  cuont: 1\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:2:10: unknown configuration key \"alpha.cuont\" (did you mean "
                   "\"alpha.count\"?)"));
  ck_assert_int_eq(gb_options_set(&f.set, "Alpha.Rate", "1", "--set", d), GC_ENOTFOUND);
  ck_assert(has(d, "--set: unknown configuration key \"Alpha.Rate\" (did you mean "
                   "\"alpha.rate\"?)"));
  ck_assert_int_eq(gb_options_set(&f.set, "beta.depth", "1", "--set", d), GC_ENOTFOUND);
  ck_assert(has(d, "unknown configuration key \"beta.depth\" (did you mean \"shared.depth\"?)"));
  ck_assert_int_eq(load(&f, "alphaa:\n  enabled: true\n"), GC_EINVAL);
  ck_assert(has(d, "unknown configuration key \"alphaa\" (did you mean \"alpha\"?)"));
  ck_assert_int_eq(load(&f, "zzz: 1\n"), GC_EINVAL);
  ck_assert(has(d, "t.yaml:1:6: unknown configuration key \"zzz\" (see docs/operating.md)"));
  fx_free(&f);
}
END_TEST

/* A check's messages start with where the key they name was set; its
 * warnings stay warnings. */
START_TEST(test_check_origin) {
  struct fx f;
  fx_init(&f);
  struct gc_diags *d = &f.d;
  ck_assert_int_eq(load(&f, "alpha:\n  name: nm\n  enabled: false\n"), 0);
  ck_assert_int_eq(gb_options_set(&f.set, "beta.peer", "bad", "--peer", d), 0);
  ck_assert_int_eq(gb_options_check(&f.set, d), GC_EINVAL);
  ck_assert_uint_eq(d->n, 3);
  ck_assert_str_eq(d->msgs[0], "t.yaml:2:9: alpha.name: needs alpha.enabled");
  ck_assert_str_eq(d->msgs[1], "--peer: beta.peer: \"bad\" is refused");
  ck_assert_int_eq(d->is_warning[2], 1);
  ck_assert_uint_eq(d->errors, 2);
  /* A key left at its default gets no place. */
  gc_diags_destroy(d);
  gc_diags_init(d);
  fx_free(&f);
  fx_init(&f);
  f.a.on = 0;
  f.a.name = "nm";
  ck_assert_int_eq(gb_options_check(&f.set, &f.d), GC_EINVAL);
  ck_assert_str_eq(f.d.msgs[0], "alpha.name: needs alpha.enabled");
  fx_free(&f);
}
END_TEST

/* Two tables with one key, or a bad default, are the tables' fault. */
START_TEST(test_table_errors) {
  struct alpha a1, a2;
  struct gb_options_part parts[2] = {{&alpha_table, &a1}, {&alpha_table, &a2}};
  struct gb_options set;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_options_init(&set, parts, 2, &d), GC_EUSAGE);
  ck_assert(has(
      &d, "configuration tables: key alpha.enabled (alpha) clashes with alpha.enabled (alpha)"));
  gb_options_destroy(&set);
  static const struct gb_opt bad_keys[] = {
      GB_KEY_INT(struct beta, "bad.depth", depth, 0, 5, "9", NULL, "out of range"),
  };
  static const struct gb_opt_table bad = GB_OPT_TABLE("bad", "Bad", struct beta, bad_keys, NULL);
  struct beta b;
  struct gb_options_part one = {&bad, &b};
  ck_assert_int_eq(gb_options_init(&set, &one, 1, &d), GC_EUSAGE);
  ck_assert(has(&d, "default: bad.depth: must be an integer in [0, 5], not \"9\""));
  gb_options_destroy(&set);
  gb_options_destroy(NULL);
  gc_diags_destroy(&d);
}
END_TEST

static char *written(const struct gb_options *s, void (*fn)(const struct gb_options *, FILE *)) {
  char *t = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&t, &n);
  fn(s, f);
  fclose(f);
  return t;
}

/* The YAML opens each section once, where it first appears (shared holds
 * keys of both tables), and reads back to the same text. */
START_TEST(test_write) {
  struct fx f;
  fx_init(&f);
  ck_assert_int_eq(load(&f, "shared:\n  tags: [p, q]\nalpha:\n  name: \"a\\\"b\"\n"), 0);
  char *t = written(&f.set, gb_options_write);
  ck_assert_str_eq(t, "alpha:\n"
                      "  enabled: true\n"
                      "  count: 3\n"
                      "  rate: 2.5\n"
                      "  wait: 90s\n"
                      "  name: \"a\\\"b\"\n"
                      "  color: red\n"
                      "shared:\n"
                      "  tags: [\"p\", \"q\"]\n"
                      "  depth: 2\n"
                      "beta:\n"
                      "  peer: \"x\"\n");
  struct fx g;
  fx_init(&g);
  ck_assert_int_eq(gb_options_load_buffer(&g.set, "w.yaml", t, strlen(t), &g.d), 0);
  char *t2 = written(&g.set, gb_options_write);
  ck_assert_str_eq(t, t2);
  free(t2);
  free(t);
  t = written(&f.set, gb_options_write_keys);
  ck_assert_ptr_nonnull(strstr(t, "alpha.count\tint\t3\tcount\talpha\n"));
  ck_assert_ptr_nonnull(strstr(t, "shared.depth\tint\t2\t\tbeta\n"));
  ck_assert_ptr_nonnull(strstr(t, "alpha.color\tenum\tred\t\talpha\n"));
  free(t);
  t = written(&f.set, gb_options_write_help);
  ck_assert_ptr_nonnull(strstr(t, "\nAlpha (bridge/alpha/):\n"));
  ck_assert_ptr_nonnull(strstr(t, "  alpha.count  integer in [1, 10], default 3, flag --count\n"
                                  "      how many\n"));
  ck_assert_ptr_nonnull(strstr(t, "  alpha.color  red, green or blue, default red\n"));
  ck_assert_ptr_nonnull(strstr(t, "  alpha.name  string, default \"\"\n"));
  ck_assert_ptr_nonnull(strstr(t, "  shared.tags  list of at most 3 tags, default \"\"\n"));
  free(t);
  fx_free(&g);
  fx_free(&f);
}
END_TEST

START_TEST(test_find) {
  struct fx f;
  fx_init(&f);
  ck_assert_ptr_eq(gb_options_find(&f.set, "beta.peer"), &beta_keys[1]);
  ck_assert_ptr_null(gb_options_find(&f.set, "beta"));
  ck_assert_ptr_eq(gb_options_find_flag(&f.set, "count=3", 5), &alpha_keys[1]);
  ck_assert_ptr_null(gb_options_find_flag(&f.set, "coun", 4));
  ck_assert_int_eq(gb_options_is_bool("yes"), 1);
  ck_assert_int_eq(gb_options_is_bool("on"), 0);
  fx_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("options");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_text);
  tcase_add_test(tc, test_lists);
  tcase_add_test(tc, test_file);
  tcase_add_test(tc, test_unknown);
  tcase_add_test(tc, test_check_origin);
  tcase_add_test(tc, test_table_errors);
  tcase_add_test(tc, test_write);
  tcase_add_test(tc, test_find);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
