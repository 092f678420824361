/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gc_resources: the sorted ResourceList, its per-key sum,
 * max and scale, reading from a document node (with its error messages)
 * and rendering back to a map of canonical strings.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_quantity.h"
#include "gc_resources.h"
#include "gc_resources_test.h"
#include "gc_value.h"

static struct gc_arena *A;

static void setup(void) { A = gc_arena_new(0); }
static void teardown(void) { gc_arena_free(A); }

static struct gc_quantity P(const char *s) {
  struct gc_quantity q;
  ck_assert_msg(gc_quantity_parse(s, strlen(s), &q) == 0, "parse %s", s);
  return q;
}

static void set(struct gc_reslist *l, const char *name, const char *qty) {
  struct gc_quantity q = P(qty);
  ck_assert_int_eq(gc_reslist_set(A, l, name, &q), 0);
}

/* Canonical string of l[name], or "<absent>". */
static const char *get(const struct gc_reslist *l, const char *name) {
  static char buf[GC_QUANTITY_BUFSZ];
  const struct gc_quantity *q = gc_reslist_get(l, name);
  if (!q)
    return "<absent>";
  ck_assert_int_eq(gc_quantity_format(q, buf, sizeof(buf)), 0);
  return buf;
}

static int has_diag(const struct gc_diags *d, const char *msg) {
  for (size_t i = 0; i < d->n; i++)
    if (strcmp(d->msgs[i], msg) == 0)
      return 1;
  return 0;
}

static void assert_sorted_unique(const struct gc_reslist *l) {
  for (size_t i = 1; i < l->n; i++)
    ck_assert_msg(strcmp(l->items[i - 1].name, l->items[i].name) < 0, "%s !< %s",
                  l->items[i - 1].name, l->items[i].name);
}

START_TEST(test_set_get_sorted) {
  struct gc_reslist l = GC_RESLIST_INIT;
  ck_assert_ptr_null(gc_reslist_get(&l, "cpu"));
  const char *names[] = {"memory", "cpu", "nvidia.com/gpu", "ephemeral-storage", "a", "zzz",
                         "hugepages-2Mi", "Cpu", "cpu2", "amd.com/gpu"};
  for (size_t i = 0; i < 10; i++)
    set(&l, names[i], "1");
  ck_assert_uint_eq(l.n, 10);
  assert_sorted_unique(&l);
  ck_assert_str_eq(l.items[0].name, "Cpu"); /* byte order, as Go sorts map keys */
  /* replacing keeps one entry */
  set(&l, "cpu", "250m");
  ck_assert_uint_eq(l.n, 10);
  ck_assert_str_eq(get(&l, "cpu"), "250m");
  ck_assert_str_eq(get(&l, "memory"), "1");
  ck_assert_str_eq(get(&l, "missing"), "<absent>");
  /* the name is copied */
  char name[] = "tmp-name";
  set(&l, name, "2");
  name[0] = 'X';
  ck_assert_str_eq(get(&l, "tmp-name"), "2");
  /* many entries stay sorted (growth past the first block) */
  struct gc_reslist m = GC_RESLIST_INIT;
  char key[16];
  for (int i = 199; i >= 0; i--) {
    snprintf(key, sizeof(key), "r%03d", (i * 37) % 200);
    set(&m, key, "1");
  }
  ck_assert_uint_eq(m.n, 200);
  assert_sorted_unique(&m);
  ck_assert_int_eq(gc_reslist_set(A, &m, NULL, &m.items[0].q), GC_EUSAGE);
}
END_TEST

START_TEST(test_add) {
  struct gc_reslist d = GC_RESLIST_INIT, s = GC_RESLIST_INIT;
  set(&d, "cpu", "1.25");
  set(&d, "memory", "1Gi");
  set(&s, "cpu", "750m");
  set(&s, "memory", "512Mi");
  set(&s, "nvidia.com/gpu", "2");
  ck_assert_int_eq(gc_reslist_add(A, &d, &s), 0);
  ck_assert_str_eq(get(&d, "cpu"), "2");
  ck_assert_str_eq(get(&d, "memory"), "1536Mi");
  ck_assert_str_eq(get(&d, "nvidia.com/gpu"), "2");
  assert_sorted_unique(&d);
  /* a zero entry takes the other's format (Quantity.Add) */
  struct gc_reslist z = GC_RESLIST_INIT, g = GC_RESLIST_INIT;
  set(&z, "memory", "0");
  set(&g, "memory", "2Gi");
  ck_assert_int_eq(gc_reslist_add(A, &z, &g), 0);
  ck_assert_str_eq(get(&z, "memory"), "2Gi");
  /* adding a list to itself doubles it */
  ck_assert_int_eq(gc_reslist_add(A, &d, &d), 0);
  ck_assert_str_eq(get(&d, "cpu"), "4");
  ck_assert_str_eq(get(&d, "memory"), "3Gi");
  /* empty source and empty destination */
  struct gc_reslist e = GC_RESLIST_INIT;
  ck_assert_int_eq(gc_reslist_add(A, &d, &e), 0);
  ck_assert_uint_eq(d.n, 3);
  ck_assert_int_eq(gc_reslist_add(A, &e, &s), 0);
  ck_assert_uint_eq(e.n, 3);
  ck_assert_str_eq(get(&e, "memory"), "512Mi");
}
END_TEST

START_TEST(test_add_overflow_is_atomic) {
  struct gc_reslist d = GC_RESLIST_INIT, s = GC_RESLIST_INIT;
  set(&d, "a", "1");
  set(&d, "z", "9223372036854775807");
  set(&s, "a", "1");
  set(&s, "b", "1");
  set(&s, "z", "1");
  ck_assert_int_eq(gc_reslist_add(A, &d, &s), GC_ERANGE);
  /* nothing changed, nothing inserted */
  ck_assert_uint_eq(d.n, 2);
  ck_assert_str_eq(get(&d, "a"), "1");
  ck_assert_str_eq(get(&d, "z"), "9223372036854775807");
  ck_assert_str_eq(get(&d, "b"), "<absent>");
}
END_TEST

START_TEST(test_max) {
  struct gc_reslist d = GC_RESLIST_INIT, s = GC_RESLIST_INIT;
  set(&d, "cpu", "2");
  set(&d, "memory", "1Gi");
  set(&d, "ephemeral-storage", "1e3");
  set(&s, "cpu", "2500m");
  set(&s, "memory", "1000Mi");
  set(&s, "ephemeral-storage", "1k"); /* equal value: dst keeps its spelling */
  set(&s, "nvidia.com/gpu", "1");
  ck_assert_int_eq(gc_reslist_max(A, &d, &s), 0);
  ck_assert_str_eq(get(&d, "cpu"), "2500m");
  ck_assert_str_eq(get(&d, "memory"), "1Gi");
  ck_assert_str_eq(get(&d, "ephemeral-storage"), "1e3");
  ck_assert_str_eq(get(&d, "nvidia.com/gpu"), "1");
  assert_sorted_unique(&d);
  /* negative values compare correctly */
  struct gc_reslist n = GC_RESLIST_INIT, m = GC_RESLIST_INIT;
  set(&n, "x", "-5");
  set(&m, "x", "-1");
  ck_assert_int_eq(gc_reslist_max(A, &n, &m), 0);
  ck_assert_str_eq(get(&n, "x"), "-1");
}
END_TEST

START_TEST(test_scale) {
  struct gc_reslist l = GC_RESLIST_INIT;
  set(&l, "cpu", "1.25");
  set(&l, "memory", "2.5Gi");
  set(&l, "nvidia.com/gpu", "1");
  ck_assert_int_eq(gc_reslist_scale(&l, 4), 0);
  ck_assert_str_eq(get(&l, "cpu"), "5");
  ck_assert_str_eq(get(&l, "memory"), "10Gi");
  ck_assert_str_eq(get(&l, "nvidia.com/gpu"), "4");
  ck_assert_int_eq(gc_reslist_scale(&l, 0), 0);
  ck_assert_str_eq(get(&l, "cpu"), "0");
  /* overflow in one entry leaves every entry unchanged */
  struct gc_reslist o = GC_RESLIST_INIT;
  set(&o, "a", "3");
  set(&o, "b", "9223372036854775807");
  ck_assert_int_eq(gc_reslist_scale(&o, 3), GC_ERANGE);
  ck_assert_str_eq(get(&o, "a"), "3");
  ck_assert_str_eq(get(&o, "b"), "9223372036854775807");
  struct gc_reslist e = GC_RESLIST_INIT;
  ck_assert_int_eq(gc_reslist_scale(&e, 7), 0);
}
END_TEST

START_TEST(test_copy) {
  struct gc_reslist s = GC_RESLIST_INIT, d = GC_RESLIST_INIT;
  set(&s, "cpu", "1");
  set(&s, "memory", "1Gi");
  set(&d, "old", "5"); /* overwritten */
  ck_assert_int_eq(gc_reslist_copy(A, &d, &s), 0);
  ck_assert_uint_eq(d.n, 2);
  ck_assert_str_eq(get(&d, "old"), "<absent>");
  ck_assert_ptr_ne(d.items[0].name, s.items[0].name);
  /* deep: changing the copy leaves the source */
  set(&d, "cpu", "7");
  set(&d, "aaa", "1");
  ck_assert_str_eq(get(&s, "cpu"), "1");
  ck_assert_uint_eq(s.n, 2);
  struct gc_reslist e = GC_RESLIST_INIT;
  ck_assert_int_eq(gc_reslist_copy(A, &d, &e), 0);
  ck_assert_uint_eq(d.n, 0);
}
END_TEST

static struct gc_value *map_of(const char *const *kv, size_t n) {
  struct gc_value *m = gc_value_map(A);
  for (size_t i = 0; i + 1 < n; i += 2)
    ck_assert_int_eq(gc_map_set(A, m, kv[i], gc_value_strz(A, kv[i + 1])), 0);
  return m;
}

START_TEST(test_from_value_ok) {
  static const char *const kv[] = {"memory", "2.5Gi", "cpu", "1.25", "nvidia.com/gpu", "8"};
  struct gc_value *m = map_of(kv, 6);
  struct gc_value *iv = gc_value_int(A, 3);
  ck_assert_int_eq(gc_map_set(A, m, "example.com/foo", iv), 0);
  struct gc_value *fv = gc_value_float(A, 0.5);
  fv->text = "0.5";
  ck_assert_int_eq(gc_map_set(A, m, "example.com/bar", fv), 0);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gc_reslist l;
  ck_assert_int_eq(gc_reslist_from_value(A, m, "default/job: spec.x", &l, &d), 0);
  ck_assert_uint_eq(d.n, 0);
  ck_assert_uint_eq(l.n, 5);
  assert_sorted_unique(&l);
  ck_assert_str_eq(get(&l, "memory"), "2560Mi");
  ck_assert_str_eq(get(&l, "cpu"), "1250m");
  ck_assert_str_eq(get(&l, "example.com/foo"), "3");
  ck_assert_str_eq(get(&l, "example.com/bar"), "500m");
  /* to_value renders sorted canonical strings */
  struct gc_value *out = gc_reslist_to_value(A, &l);
  ck_assert_ptr_nonnull(out);
  ck_assert_int_eq(out->type, GC_MAP);
  ck_assert_uint_eq(out->len, 5);
  static const char *const want[][2] = {{"cpu", "1250m"},
                                        {"example.com/bar", "500m"},
                                        {"example.com/foo", "3"},
                                        {"memory", "2560Mi"},
                                        {"nvidia.com/gpu", "8"}};
  for (size_t i = 0; i < 5; i++) {
    ck_assert_str_eq(out->u.members[i].key, want[i][0]);
    ck_assert_int_eq(out->u.members[i].value->type, GC_STR);
    ck_assert_str_eq(out->u.members[i].value->u.s, want[i][1]);
  }
  /* empty list renders as an empty map (minResources: {}) */
  struct gc_reslist e = GC_RESLIST_INIT;
  out = gc_reslist_to_value(A, &e);
  ck_assert_ptr_nonnull(out);
  ck_assert_int_eq(out->type, GC_MAP);
  ck_assert_uint_eq(out->len, 0);
  /* null or absent is an empty list */
  ck_assert_int_eq(gc_reslist_from_value(A, gc_value_null(A), "w", &l, &d), 0);
  ck_assert_uint_eq(l.n, 0);
  ck_assert_int_eq(gc_reslist_from_value(A, NULL, "w", &l, &d), 0);
  ck_assert_uint_eq(l.n, 0);
  ck_assert_uint_eq(d.n, 0);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_from_value_errors) {
  struct gc_value *m = gc_value_map(A);
  const char *W = "default/job: spec.trainer.resourcesPerNode.requests";
  ck_assert_int_eq(gc_map_set(A, m, "cpu", gc_value_strz(A, "1.5.5")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "memory", gc_value_strz(A, "1ki")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "nvidia.com/gpu", gc_value_strz(A, "2")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "precise", gc_value_strz(A, "123456789012.12345678")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "flag", gc_value_bool(A, 1)), 0);
  ck_assert_int_eq(gc_map_set(A, m, "obj", gc_value_map(A)), 0);
  ck_assert_int_eq(gc_map_set(A, m, "quote", gc_value_strz(A, "1\"\x01")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "dots", gc_value_strz(A, "-.e-10")), 0);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gc_reslist l;
  ck_assert_int_eq(gc_reslist_from_value(A, m, W, &l, &d), GC_EINVAL);
  ck_assert_uint_eq(d.errors, 7);
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests.cpu: invalid "
                         "quantity \"1.5.5\": quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests.memory: invalid "
                         "quantity \"1ki\": unable to parse quantity's suffix"));
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests.precise: invalid "
                         "quantity \"123456789012.12345678\": out of range: the value needs more "
                         "than 19 significant digits or an exponent outside 32 bits"));
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests.flag: invalid "
                         "quantity \"true\": quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests.obj: invalid "
                         "quantity: must be a string or number, not object"));
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests.quote: invalid "
                         "quantity \"1\\\"\\x01\": quantities must match the regular "
                         "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests.dots: invalid "
                         "quantity \"-.e-10\": unable to parse numeric part of quantity"));
  /* the good entry is still returned */
  ck_assert_uint_eq(l.n, 1);
  ck_assert_str_eq(get(&l, "nvidia.com/gpu"), "2");
  gc_diags_destroy(&d);

  /* non-map input */
  gc_diags_init(&d);
  ck_assert_int_eq(gc_reslist_from_value(A, gc_value_strz(A, "1"), W, &l, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "default/job: spec.trainer.resourcesPerNode.requests: must be an object"));
  ck_assert_int_eq(gc_reslist_from_value(A, gc_value_seq(A), "x", &l, &d), GC_EINVAL);
  ck_assert(has_diag(&d, "x: must be an object"));
  gc_diags_destroy(&d);

  /* long text is cut in the message */
  gc_diags_init(&d);
  char longtext[300];
  memset(longtext, 'x', sizeof(longtext) - 1);
  longtext[sizeof(longtext) - 1] = '\0';
  m = gc_value_map(A);
  ck_assert_int_eq(gc_map_set(A, m, "cpu", gc_value_strz(A, longtext)), 0);
  ck_assert_int_eq(gc_reslist_from_value(A, m, "w", &l, &d), GC_EINVAL);
  ck_assert_uint_eq(d.n, 1);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "xxx...\": "));
  ck_assert_uint_lt(strlen(d.msgs[0]), 250);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_from_value_capped) {
  /* Above 2^63-1 a request is capped there, as Kubernetes caps BinarySI at
   * parse and saturates every other value when the scheduler reads it. */
  struct gc_value *m = gc_value_map(A);
  ck_assert_int_eq(gc_map_set(A, m, "a", gc_value_strz(A, "1e400")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "b", gc_value_strz(A, "18446744073709551616")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "c", gc_value_strz(A, "100E")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "d", gc_value_strz(A, "16Ei")), 0);
  struct gc_value *fv = gc_value_float(A, 1e19);
  fv->text = "1e19";
  ck_assert_int_eq(gc_map_set(A, m, "e", fv), 0);
  ck_assert_int_eq(gc_map_set(A, m, "f", gc_value_strz(A, "9223372036854775807")), 0);
  ck_assert_int_eq(gc_map_set(A, m, "g", gc_value_strz(A, "1" "000000000000000000000000000000"
                                                          "0000000000000000000000000.5")), 0);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gc_reslist l;
  ck_assert_int_eq(gc_reslist_from_value(A, m, "w", &l, &d), 0);
  ck_assert_uint_eq(d.n, 0);
  const char *names[] = {"a", "b", "c", "d", "e", "f", "g"};
  for (size_t i = 0; i < 7; i++)
    ck_assert_str_eq(get(&l, names[i]), "9223372036854775807");
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_arena_exhaustion) {
  struct gc_arena *small = gc_arena_new(256);
  struct gc_reslist l = GC_RESLIST_INIT;
  struct gc_quantity q = P("1");
  int rc = 0;
  char key[32];
  for (int i = 0; i < 100 && rc == 0; i++) {
    snprintf(key, sizeof(key), "resource-%d", i);
    rc = gc_reslist_set(small, &l, key, &q);
  }
  ck_assert_int_eq(rc, GC_ENOMEM);
  assert_sorted_unique(&l);
  gc_arena_free(small);
}
END_TEST

static Suite *resources_suite(void) {
  Suite *s = suite_create("resources");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_set_get_sorted);
  tcase_add_test(tc, test_add);
  tcase_add_test(tc, test_add_overflow_is_atomic);
  tcase_add_test(tc, test_max);
  tcase_add_test(tc, test_scale);
  tcase_add_test(tc, test_copy);
  tcase_add_test(tc, test_from_value_ok);
  tcase_add_test(tc, test_from_value_errors);
  tcase_add_test(tc, test_from_value_capped);
  tcase_add_test(tc, test_arena_exhaustion);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(resources_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
