/* SPDX-License-Identifier: Apache-2.0
 *
 * Loader tests: scalar resolution, positions, multi-document streams, List
 * unpacking, directories, anchors and merge keys, duplicates, every bound,
 * JSON errors and the upstream golden inputs.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gb_manifest.h"

/* Loads text as file `name` with optional limits; the caller frees. */
static struct gb_docset *load_as(const char *name, const char *text, const struct gb_limits *l,
                                 struct gc_diags *d, int *rc) {
  struct gb_docset *ds = gb_docset_new(l);
  ck_assert_ptr_nonnull(ds);
  gc_diags_init(d);
  *rc = gb_manifest_load_buffer(ds, name, text, strlen(text), d);
  return ds;
}

static int has_msg(const struct gc_diags *d, const char *msg) {
  for (size_t i = 0; i < d->n; i++)
    if (!strcmp(d->msgs[i], msg))
      return 1;
  return 0;
}

static void dump(const struct gc_diags *d) {
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "  diag: %s\n", d->msgs[i]);
}

#define ck_assert_msg_present(d, m)                                                              \
  do {                                                                                           \
    if (!has_msg((d), (m)))                                                                      \
      dump(d);                                                                                   \
    ck_assert_msg(has_msg((d), (m)), "missing diagnostic: %s", (m));                             \
  } while (0)

/* ---- scalar resolution ---- */

struct scase {
  const char *src; /* the YAML text after "v: " */
  enum gc_type type;
  int64_t i; /* bool/int */
  double f;
  const char *s; /* expected string (GC_STR) */
};

static const struct scase SCASES[] = {
    {"true", GC_BOOL, 1, 0, NULL},
    {"True", GC_BOOL, 1, 0, NULL},
    {"TRUE", GC_BOOL, 1, 0, NULL},
    {"yes", GC_BOOL, 1, 0, NULL},
    {"Yes", GC_BOOL, 1, 0, NULL},
    {"YES", GC_BOOL, 1, 0, NULL},
    {"y", GC_BOOL, 1, 0, NULL},
    {"Y", GC_BOOL, 1, 0, NULL},
    {"on", GC_BOOL, 1, 0, NULL},
    {"On", GC_BOOL, 1, 0, NULL},
    {"ON", GC_BOOL, 1, 0, NULL},
    {"false", GC_BOOL, 0, 0, NULL},
    {"False", GC_BOOL, 0, 0, NULL},
    {"no", GC_BOOL, 0, 0, NULL},
    {"NO", GC_BOOL, 0, 0, NULL},
    {"n", GC_BOOL, 0, 0, NULL},
    {"N", GC_BOOL, 0, 0, NULL},
    {"off", GC_BOOL, 0, 0, NULL},
    {"Off", GC_BOOL, 0, 0, NULL},
    {"null", GC_NULL, 0, 0, NULL},
    {"Null", GC_NULL, 0, 0, NULL},
    {"NULL", GC_NULL, 0, 0, NULL},
    {"~", GC_NULL, 0, 0, NULL},
    {"", GC_NULL, 0, 0, NULL},
    {"0", GC_INT, 0, 0, NULL},
    {"42", GC_INT, 42, 0, NULL},
    {"-42", GC_INT, -42, 0, NULL},
    {"+42", GC_INT, 42, 0, NULL},
    {"0x1F", GC_INT, 31, 0, NULL},
    {"0X1f", GC_INT, 31, 0, NULL},
    {"-0x10", GC_INT, -16, 0, NULL},
    {"0o17", GC_INT, 15, 0, NULL},
    {"017", GC_INT, 15, 0, NULL},
    {"0b101", GC_INT, 5, 0, NULL},
    {"-0b101", GC_INT, -5, 0, NULL},
    {"1_000", GC_INT, 1000, 0, NULL},
    {"1_", GC_INT, 1, 0, NULL},
    {"9223372036854775807", GC_INT, INT64_MAX, 0, NULL},
    {"-9223372036854775808", GC_INT, INT64_MIN, 0, NULL},
    {"9223372036854775808", GC_FLOAT, 0, 9223372036854775808.0, NULL},
    {"99999999999999999999", GC_FLOAT, 0, 1e20, NULL},
    {"08", GC_FLOAT, 0, 8.0, NULL},
    {"1.5", GC_FLOAT, 0, 1.5, NULL},
    {"1e3", GC_FLOAT, 0, 1000.0, NULL},
    {"-1.5e-3", GC_FLOAT, 0, -0.0015, NULL},
    {".5", GC_FLOAT, 0, 0.5, NULL},
    {"+.5", GC_FLOAT, 0, 0.5, NULL},
    {"1.", GC_FLOAT, 0, 1.0, NULL},
    {"1_0.5", GC_FLOAT, 0, 10.5, NULL},
    {".inf", GC_FLOAT, 0, INFINITY, NULL},
    {"+.INF", GC_FLOAT, 0, INFINITY, NULL},
    {"-.Inf", GC_FLOAT, 0, -INFINITY, NULL},
    {"1e400", GC_STR, 0, 0, "1e400"},
    {"0x", GC_STR, 0, 0, "0x"},
    {"0xG", GC_STR, 0, 0, "0xG"},
    {"tRue", GC_STR, 0, 0, "tRue"},
    {"nan", GC_STR, 0, 0, "nan"},
    {"inf", GC_STR, 0, 0, "inf"},
    {"Infinity", GC_STR, 0, 0, "Infinity"},
    {"_1", GC_STR, 0, 0, "_1"},
    {"1:20", GC_STR, 0, 0, "1:20"},
    {"2024-01-02", GC_STR, 0, 0, "2024-01-02"},
    {"2001-12-14t21:59:43.10-05:00", GC_STR, 0, 0, "2001-12-14t21:59:43.10-05:00"},
    {"500m", GC_STR, 0, 0, "500m"},
    {"1Gi", GC_STR, 0, 0, "1Gi"},
    {"1e3Mi", GC_STR, 0, 0, "1e3Mi"},
    {"-x", GC_STR, 0, 0, "-x"},
    {"+", GC_STR, 0, 0, "+"},
    {"'true'", GC_STR, 0, 0, "true"},
    {"\"1\"", GC_STR, 0, 0, "1"},
    {"\"\"", GC_STR, 0, 0, ""},
    {"'null'", GC_STR, 0, 0, "null"},
    {"|\n  42", GC_STR, 0, 0, "42\n"},
    {">-\n  yes", GC_STR, 0, 0, "yes"},
    {"!!str 5", GC_STR, 0, 0, "5"},
    {"!!str true", GC_STR, 0, 0, "true"},
    {"!!int \"5\"", GC_INT, 5, 0, NULL},
    {"!!float 5", GC_FLOAT, 0, 5.0, NULL},
    {"!!bool yes", GC_BOOL, 1, 0, NULL},
    {"!!null ~", GC_NULL, 0, 0, NULL},
    {"! 5", GC_STR, 0, 0, "5"},
    {"!custom 5", GC_STR, 0, 0, "5"},
    {"a b", GC_STR, 0, 0, "a b"},
    {"<<x", GC_STR, 0, 0, "<<x"},
};

START_TEST(test_scalar_resolution) {
  const struct scase *c = &SCASES[_i];
  char doc[256];
  snprintf(doc, sizeof(doc), "v: %s\n", c->src);
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("s.yaml", doc, NULL, &d, &rc);
  if (rc)
    dump(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 1);
  const struct gc_value *v = gc_map_get(ds->docs[0].root, "v");
  ck_assert_ptr_nonnull(v);
  ck_assert_msg(v->type == c->type, "%s: type %s, want %s", c->src, gc_type_name(v->type),
                gc_type_name(c->type));
  switch (c->type) {
  case GC_BOOL: ck_assert_int_eq(v->u.b, (int)c->i); break;
  case GC_INT: ck_assert_int_eq(v->u.i, c->i); break;
  case GC_FLOAT:
    if (isinf(c->f))
      ck_assert(isinf(v->u.f) && (v->u.f > 0) == (c->f > 0));
    else
      ck_assert_double_eq_tol(v->u.f, c->f, fabs(c->f) * 1e-12);
    break;
  case GC_STR: ck_assert_str_eq(v->u.s, c->s); break;
  default: break;
  }
  ck_assert_ptr_nonnull(v->text);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_scalar_text_and_nan) {
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("t.yaml", "a: 0x1F\nb: 1e3\nc: .NaN\nd: true\ne: ~\nf: 0.50\n",
                                 NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  const struct gc_value *r = ds->docs[0].root;
  ck_assert_str_eq(gc_map_get(r, "a")->text, "0x1F");
  ck_assert_str_eq(gc_map_get(r, "b")->text, "1e3");
  ck_assert(isnan(gc_map_get(r, "c")->u.f));
  ck_assert_str_eq(gc_map_get(r, "d")->text, "true");
  ck_assert_str_eq(gc_map_get(r, "e")->text, "~");
  ck_assert_str_eq(gc_map_get(r, "f")->text, "0.50");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_tag_mismatch) {
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("t.yaml", "a: !!int abc\n---\nb: 1\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "t.yaml:1:4: cannot decode \"abc\" as !!int");
  ck_assert_uint_eq(ds->n, 1); /* the next document still loads */
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_keys) {
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as(
      "k.yaml", "1: a\ntrue: b\n1.5: c\n0x10: d\n1e6: f\n-0.25: g\n\"1\": h\n", NULL, &d, &rc);
  /* "1" (quoted) duplicates the converted key 1. */
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "k.yaml:7:1: duplicate key \"1\"");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("k.yaml", "1: a\ntrue: b\n1.5: c\n0x10: d\n1e6: f\n-0.25: g\n", NULL, &d, &rc);
  if (rc)
    dump(&d);
  ck_assert_int_eq(rc, 0);
  const struct gc_value *r = ds->docs[0].root;
  ck_assert_str_eq(gc_map_get(r, "1")->u.s, "a");
  ck_assert_str_eq(gc_map_get(r, "true")->u.s, "b");
  ck_assert_str_eq(gc_map_get(r, "1.5")->u.s, "c");
  ck_assert_str_eq(gc_map_get(r, "16")->u.s, "d");
  ck_assert_str_eq(gc_map_get(r, "1e+06")->u.s, "f");
  ck_assert_str_eq(gc_map_get(r, "-0.25")->u.s, "g");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("k.yaml", "true: b\nyes: e\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "k.yaml:2:1: duplicate key \"true\"");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("k.yaml", "~: a\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "k.yaml:1:1: map key must be a string, number or bool, not null");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("k.yaml", "? [a]\n: b\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "k.yaml:1:3: map key must be a string, number or bool, not array");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* ---- positions, documents, lists ---- */

START_TEST(test_positions) {
  const char *text = "# c\n"
                     "apiVersion: v1\n"
                     "kind: Pod\n"
                     "spec:\n"
                     "  containers:\n"
                     "  - name: a\n"
                     "    image: \"x\"\n"
                     "    args: [1, two]\n";
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("p.yaml", text, NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 1);
  ck_assert_str_eq(ds->docs[0].file, "p.yaml");
  ck_assert_uint_eq(ds->docs[0].line, 2);
  ck_assert_uint_eq(ds->docs[0].col, 1);
  const struct gc_value *r = ds->docs[0].root;
  const struct gc_value *kind = gc_map_get(r, "kind");
  ck_assert_uint_eq(kind->line, 3);
  ck_assert_uint_eq(kind->col, 7);
  const struct gc_value *spec = gc_map_get(r, "spec");
  ck_assert_uint_eq(spec->line, 5);
  ck_assert_uint_eq(spec->col, 3);
  const struct gc_value *cs = gc_value_path(r, "spec.containers");
  ck_assert_int_eq(cs->type, GC_SEQ);
  ck_assert_uint_eq(cs->line, 6);
  ck_assert_uint_eq(cs->col, 3);
  const struct gc_value *c0 = cs->u.items[0];
  ck_assert_uint_eq(c0->line, 6);
  ck_assert_uint_eq(c0->col, 5);
  const struct gc_value *img = gc_map_get(c0, "image");
  ck_assert_uint_eq(img->line, 7);
  ck_assert_uint_eq(img->col, 12);
  const struct gc_value *args = gc_map_get(c0, "args");
  ck_assert_uint_eq(args->col, 11);
  ck_assert_uint_eq(args->u.items[1]->col, 15);
  ck_assert_int_eq(args->u.items[0]->type, GC_INT);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_multidoc) {
  struct gc_diags d;
  int rc;
  struct gb_docset *ds =
      load_as("m.yaml", "---\na: 1\n---\nb: 2\n---\n---\n# only a comment\n...\n---\nc: 3\n", NULL,
              &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 3);
  ck_assert_ptr_nonnull(gc_map_get(ds->docs[0].root, "a"));
  ck_assert_ptr_nonnull(gc_map_get(ds->docs[1].root, "b"));
  ck_assert_ptr_nonnull(gc_map_get(ds->docs[2].root, "c"));
  ck_assert_uint_eq(ds->docs[2].line, 10);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("e.yaml", "", NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_not_object) {
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("n.yaml", "a: 1\n---\n- x\n---\nhello\n---\nb: 2\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "n.yaml:3:1: document is not an object");
  ck_assert_msg_present(&d, "n.yaml:5:1: document is not an object");
  ck_assert_uint_eq(ds->n, 2);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("n.json", "[1, 2]", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "n.json:1:1: document is not an object");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_list_unpack) {
  const char *text = "apiVersion: v1\n"
                     "kind: List\n"
                     "items:\n"
                     "- apiVersion: v1\n"
                     "  kind: ConfigMap\n"
                     "  metadata: {name: a}\n"
                     "- apiVersion: v1\n"
                     "  kind: ConfigMap\n"
                     "  metadata: {name: b}\n";
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("l.yaml", text, NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 2);
  ck_assert_str_eq(gc_value_as_str(gc_value_path(ds->docs[1].root, "metadata.name")), "b");
  ck_assert_uint_eq(ds->docs[1].line, 7);
  ck_assert_uint_eq(ds->docs[1].col, 3);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* A typed list fills kind and apiVersion in its items. */
  ds = load_as("l.json",
               "{\"apiVersion\": \"v1\", \"kind\": \"PodList\", \"items\": [{\"metadata\": "
               "{\"name\": \"p\"}}]}",
               NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 1);
  ck_assert_str_eq(gc_value_as_str(gc_map_get(ds->docs[0].root, "kind")), "Pod");
  ck_assert_str_eq(gc_value_as_str(gc_map_get(ds->docs[0].root, "apiVersion")), "v1");
  ck_assert_uint_eq(ds->docs[0].col, 51);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("l.yaml", "apiVersion: v1\nkind: List\nitems: []\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("l.yaml", "apiVersion: v1\nkind: List\nitems:\n- 5\n- a: 1\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "l.yaml:4:3: document is not an object");
  ck_assert_uint_eq(ds->n, 1);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* ---- anchors, merges, duplicates ---- */

START_TEST(test_anchors_merge) {
  const char *text = "base: &b {p: 1, q: 2}\n"
                     "m:\n"
                     "  <<: *b\n"
                     "  q: 3\n"
                     "before:\n"
                     "  q: 4\n"
                     "  <<: *b\n"
                     "multi:\n"
                     "  <<: [{a: 1}, {a: 2, b: 2}]\n"
                     "list: [&s foo, *s]\n"
                     "quoted:\n"
                     "  \"<<\": 1\n"
                     "y: 1\n";
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("a.yaml", text, NULL, &d, &rc);
  if (rc)
    dump(&d);
  ck_assert_int_eq(rc, 0);
  const struct gc_value *r = ds->docs[0].root;
  ck_assert_int_eq(gc_value_path(r, "m.p")->u.i, 1);
  ck_assert_int_eq(gc_value_path(r, "m.q")->u.i, 3);
  ck_assert_uint_eq(gc_map_get(r, "m")->len, 2);
  ck_assert_int_eq(gc_value_path(r, "before.q")->u.i, 4);
  ck_assert_int_eq(gc_value_path(r, "before.p")->u.i, 1);
  ck_assert_int_eq(gc_value_path(r, "multi.a")->u.i, 1);
  ck_assert_int_eq(gc_value_path(r, "multi.b")->u.i, 2);
  const struct gc_value *list = gc_map_get(r, "list");
  ck_assert_str_eq(list->u.items[1]->u.s, "foo");
  ck_assert_ptr_ne(list->u.items[0], list->u.items[1]); /* a tree, not a DAG */
  ck_assert_ptr_ne(gc_map_get(r, "base"), gc_value_path(r, "m"));
  ck_assert_int_eq(gc_map_get(gc_map_get(r, "quoted"), "<<")->u.i, 1);
  /* As in goyaml.v2, a plain key y is the bool true, then the string "true". */
  ck_assert_ptr_null(gc_map_get(r, "y"));
  ck_assert_int_eq(gc_map_get(r, "true")->u.i, 1);
  /* The alias is a copy: changing it leaves the anchor alone. */
  gc_map_set(ds->arena, gc_map_get(r, "m"), "p", gc_value_int(ds->arena, 9));
  ck_assert_int_eq(gc_value_path(r, "base.p")->u.i, 1);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("a.yaml", "a: *nope\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "a.yaml:1:4: unknown anchor 'nope' referenced");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("a.yaml", "a:\n  <<: 5\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d,
                        "a.yaml:2:7: map merge requires a map or a sequence of maps as the value");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* A redefined anchor: the latest definition wins. */
  ds = load_as("a.yaml", "a: &x 1\nb: &x [2]\nc: *x\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(gc_value_path(ds->docs[0].root, "c")->type, GC_SEQ);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Many anchors go through the hash index (and its growth). */
  size_t cap = 400000, o = 0;
  char *many = malloc(cap);
  for (int i = 0; i < 5000; i++)
    o += (size_t)snprintf(many + o, cap - o, "a%d: &x%d %d\n", i, i, i);
  for (int i = 0; i < 5000; i++)
    o += (size_t)snprintf(many + o, cap - o, "b%d: *x%d\n", i, 4999 - i);
  ds = load_as("many.yaml", many, NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(gc_map_get(ds->docs[0].root, "b0")->u.i, 4999);
  ck_assert_int_eq(gc_map_get(ds->docs[0].root, "b4999")->u.i, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  free(many);

  /* Anchors do not cross documents. */
  ds = load_as("a.yaml", "a: &x 1\n---\nb: *x\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "a.yaml:3:4: unknown anchor 'x' referenced");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_duplicates) {
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("d.yaml", "a: 1\nb:\n  c: 1\n  c: 2\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "d.yaml:4:3: duplicate key \"c\"");
  ck_assert_uint_eq(ds->n, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* A large map goes through the hash index. */
  char big[8192];
  size_t o = 0;
  for (int i = 0; i < 200; i++)
    o += (size_t)snprintf(big + o, sizeof(big) - o, "k%d: %d\n", i, i);
  snprintf(big + o, sizeof(big) - o, "k17: again\n");
  ds = load_as("big.yaml", big, NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "big.yaml:201:1: duplicate key \"k17\"");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  big[o] = '\0';
  ds = load_as("big.yaml", big, NULL, &d, &rc);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->docs[0].root->len, 200);
  ck_assert_int_eq(gc_map_get(ds->docs[0].root, "k199")->u.i, 199);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("d.json", "{\"a\": 1,\n \"a\": 2}", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "d.json:2:2: duplicate key \"a\"");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("d.json", "{\"a\": 1, \"\\u0061\": 2}", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "d.json:1:10: duplicate key \"a\"");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* ---- JSON ---- */

START_TEST(test_json) {
  const char *text = "\xEF\xBB\xBF{\"apiVersion\": \"v1\", \"n\": 12345678901234567890, \"i\": -3,\n"
                     "  \"f\": 1.50, \"e\": 1E2, \"s\": \"a\\u00e9\\ud83d\\ude00\\n\", \"t\": true,\n"
                     "  \"z\": null, \"o\": {}, \"l\": [1, [2]]}\n"
                     "{\"second\": 2} {\"third\": 3}";
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("j.json", text, NULL, &d, &rc);
  if (rc)
    dump(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(ds->n, 3);
  const struct gc_value *r = ds->docs[0].root;
  const struct gc_value *n = gc_map_get(r, "n");
  ck_assert_int_eq(n->type, GC_FLOAT);
  ck_assert_str_eq(n->text, "12345678901234567890");
  ck_assert_int_eq(gc_map_get(r, "i")->u.i, -3);
  ck_assert_int_eq(gc_map_get(r, "f")->type, GC_FLOAT);
  ck_assert_str_eq(gc_map_get(r, "f")->text, "1.50");
  ck_assert_str_eq(gc_map_get(r, "e")->text, "1E2");
  ck_assert_str_eq(gc_map_get(r, "s")->u.s, "a\xC3\xA9\xF0\x9F\x98\x80\n");
  ck_assert_int_eq(gc_map_get(r, "t")->type, GC_BOOL);
  ck_assert_int_eq(gc_map_get(r, "z")->type, GC_NULL);
  ck_assert_int_eq(gc_map_get(r, "o")->type, GC_MAP);
  ck_assert_uint_eq(gc_map_get(r, "l")->len, 2);
  ck_assert_uint_eq(gc_map_get(r, "f")->line, 2);
  ck_assert_uint_eq(gc_map_get(r, "f")->col, 8);
  ck_assert_uint_eq(ds->docs[0].line, 1);
  ck_assert_uint_eq(ds->docs[0].col, 1);
  ck_assert_uint_eq(ds->docs[2].line, 4);
  ck_assert_uint_eq(ds->docs[2].col, 15);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

struct jerr {
  const char *text;
  const char *msg;
};

static const struct jerr JERRS[] = {
    {"{\"a\": 1,}", "e.json:1:9: unexpected character"},
    {"{\"a\" 1}", "e.json:1:6: object property name separator ':' expected"},
    {"{\"a\": ", "e.json:1:7: unexpected end of JSON input"},
    {"{\"a\": [1, 2}", "e.json:1:12: array value separator ',' expected"},
    {"{\n  \"a\": tru}", "e.json:2:11: boolean expected"},
    {"{\"a\": \"\xff\"}", "e.json:1:8: invalid utf-8 string"},
    {"{\"a\": 1}\n{\"b\": 'x'}", "e.json:2:7: unexpected character"},
    {"{\"a\": 01}", "e.json:1:9: number expected"},
    {"{\"a\": \"x\0\"}", "e.json:1:9: invalid character (NUL byte) in JSON"},
    {"{\"a\": \"\xed\xa0\x80\"}", "e.json:1:8: invalid utf-8 string"},
    {"{\"a\": \"ok \xc0\x80\"}", "e.json:1:11: invalid utf-8 string"},
    {"{\"\xf4\x90\x80\x80\": 1}", "e.json:1:3: invalid utf-8 string"},
};

START_TEST(test_json_errors) {
  const struct jerr *c = &JERRS[_i];
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  size_t len = strlen(c->text);
  if (strstr(c->msg, "NUL"))
    len += 2;
  int rc = gb_manifest_load_buffer(ds, "e.json", c->text, len, &d);
  ck_assert_int_ne(rc, 0);
  ck_assert_msg_present(&d, c->msg);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* ---- YAML syntax errors ---- */

START_TEST(test_yaml_errors) {
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("y.yaml", "a: 1\n---\nb: [1, 2\nc: 3\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_uint_eq(d.n, 1);
  ck_assert_uint_eq(ds->n, 1); /* the document before the error is kept */
  ck_assert_msg(strncmp(d.msgs[0], "y.yaml:4:2: ", 12) == 0, "%s", d.msgs[0]);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("y.yaml", "a: b: c\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "y.yaml:1:5: mapping values are not allowed in this context");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("y.yaml", "a: \xff\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "y.yaml:1:4: invalid leading UTF-8 octet (0xFF)");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = gb_docset_new(NULL);
  gc_diags_init(&d);
  rc = gb_manifest_load_buffer(ds, "bin.yaml", "a: 1\n\x01\x02\0\x03", 9, &d);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "bin.yaml:2:1: control characters are not allowed (0x01)");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_nul_in_strings) {
  /* A NUL would cut the string where C reads it: "rt\0evil" resolved "rt". */
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("n.yaml", "a: \"rt\\0evil\"\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "n.yaml:1:4: invalid string \"rt\\x00evil\": contains a NUL byte");
  ck_assert_uint_eq(ds->n, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("n.yaml", "a:\n  \"k\\x00\": 1\n", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "n.yaml:2:3: invalid string \"k\\x00\": contains a NUL byte");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("n.json", "{\"a\": {\"b\": \"x\\u0000y\"}}", NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "n.json:1:13: invalid string \"x\\x00y\": contains a NUL byte");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* ---- bounds ---- */

START_TEST(test_limit_source_bytes) {
  struct gb_limits l = {.max_source_bytes = 10};
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("big.yaml", "a: 12345678\n", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "big.yaml:1:1: source size exceeds limit 10");
  ck_assert_uint_eq(ds->n, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* The same through a file: read with a cap, not trusting st_size. */
  char dir[] = "/tmp/gbman-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof(path), "%s/big.yaml", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < 100000; i++)
    fputs("k: v\n", f);
  fclose(f);
  l.max_source_bytes = 4096;
  ds = gb_docset_new(&l);
  gc_diags_init(&d);
  rc = gb_manifest_load_path(ds, path, &d);
  ck_assert_int_eq(rc, GC_ELIMIT);
  char want[512];
  snprintf(want, sizeof(want), "%s:1:1: source size exceeds limit 4096", path);
  ck_assert_msg_present(&d, want);
  ck_assert_uint_le(ds->bytes_read, 4096);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  unlink(path);
  rmdir(dir);
}
END_TEST

START_TEST(test_limit_tree_bytes) {
  /* The memory bound of the loaded trees is a limit, not "out of memory". */
  struct gc_diags d;
  char text[20000];
  size_t n = 0;
  for (int i = 0; i < 1000 && n + 32 < sizeof(text); i++)
    n += (size_t)snprintf(text + n, sizeof(text) - n, "k%d: v%d\n", i, i);
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_ptr_nonnull(ds);
  ck_assert_int_eq(gb_docset_limit_trees(ds, 8192), 0);
  gc_diags_init(&d);
  int rc = gb_manifest_load_buffer(ds, "big.yaml", text, strlen(text), &d);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_uint_eq(d.n, 1);
  ck_assert_msg(strstr(d.msgs[0], ": the loaded documents need more than 8192 bytes of memory "
                                  "(the limit for all inputs together)") != NULL, "%s", d.msgs[0]);
  ck_assert(strncmp(d.msgs[0], "big.yaml:", 9) == 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_limit_total_bytes) {
  struct gb_limits l = {.max_total_bytes = 20};
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("one.yaml", "a: 123456789\n", &l, &d, &rc);
  ck_assert_int_eq(rc, 0);
  rc = gb_manifest_load_buffer(ds, "two.yaml", "b: 123456789\n", 13, &d);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "two.yaml:1:1: total input size exceeds limit 20");
  ck_assert_uint_eq(ds->n, 1);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Through a file: the read stops at the remaining total budget. */
  char dir[] = "/tmp/gbman-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof(path), "%s/t.yaml", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("a: 1234567890123\n", f);
  fclose(f);
  l.max_total_bytes = 30;
  ds = gb_docset_new(&l);
  gc_diags_init(&d);
  char path2[256];
  snprintf(path2, sizeof(path2), "%s/t2.yaml", dir);
  f = fopen(path2, "w");
  ck_assert_ptr_nonnull(f);
  fputs("a: 1234567890123\n", f);
  fclose(f);
  ck_assert_int_eq(gb_manifest_load_path(ds, path, &d), 0);
  ck_assert_int_eq(gb_manifest_load_path(ds, path2, &d), GC_ELIMIT);
  char want[512];
  snprintf(want, sizeof(want), "%s:1:1: total input size exceeds limit 30", path2);
  ck_assert_msg_present(&d, want);
  ck_assert_uint_eq(ds->n, 1);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  unlink(path);
  unlink(path2);
  rmdir(dir);
}
END_TEST

START_TEST(test_limit_depth) {
  struct gb_limits l = {.max_depth = 3};
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("ok.yaml", "a: {b: [1]}\n", &l, &d, &rc);
  ck_assert_int_eq(rc, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("deep.yaml", "a:\n  b:\n    c:\n      d: 1\n", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "deep.yaml:4:7: nesting depth exceeds limit 3");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("ok.json", "{\"a\": {\"b\": [1]}}", &l, &d, &rc);
  ck_assert_int_eq(rc, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  ds = load_as("deep.json", "{\"a\": {\"b\": [[1]]}}", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "deep.json:1:14: nesting depth exceeds limit 3");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Aliases cannot nest past the bound either. */
  ds = load_as("alias.yaml", "a: &a [[1]]\nb: [*a]\n", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT); /* b: map 1, seq 2, a's 2 levels: 4 */
  ck_assert_msg_present(&d, "alias.yaml:2:5: nesting depth exceeds limit 3");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  ds = load_as("alias.yaml", "a: &a [[1]]\nb: *a\nc: &c {x: *a}\n", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT); /* c: map 1, {x} 2, a's 2 levels: 4 */
  ck_assert_msg_present(&d, "alias.yaml:3:11: nesting depth exceeds limit 3");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  ds = load_as("alias.yaml", "a: &a [[1]]\nb: *a\nc: &c {x: 1}\nd: {y: *c}\n", &l, &d, &rc);
  ck_assert_int_eq(rc, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* A chain of aliases, each one level deeper, with the default bound. */
  char chain[8192];
  size_t o = (size_t)snprintf(chain, sizeof(chain), "a0: &a0 [x]\n");
  for (int i = 1; i < 100; i++)
    o += (size_t)snprintf(chain + o, sizeof(chain) - o, "a%d: &a%d [*a%d]\n", i, i, i - 1);
  ds = load_as("chain.yaml", chain, NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "chain.yaml:64:12: nesting depth exceeds limit 64");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Far deeper than the limit: json-c's own depth check fires. */
  char deep[4096];
  size_t n = 0;
  deep[n++] = '{';
  const char *k = "\"a\":";
  memcpy(deep + n, k, 4);
  n += 4;
  for (int i = 0; i < 1000; i++)
    deep[n++] = '[';
  deep[n] = '\0';
  ds = load_as("deeper.json", deep, &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_uint_eq(d.n, 1);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "nesting depth exceeds limit 3"));
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Default limit with a very deep flow sequence in YAML. */
  char *y = malloc(200010);
  memcpy(y, "a: ", 3);
  memset(y + 3, '[', 200000);
  y[200003] = '\0';
  ds = load_as("deeper.yaml", y, NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "deeper.yaml:1:67: nesting depth exceeds limit 64");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  free(y);
}
END_TEST

static const char *LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                            "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                            "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                            "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                            "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                            "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                            "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                            "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
                            "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n";

START_TEST(test_limit_nodes) {
  struct gb_limits l = {.max_nodes = 1000};
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("lol.yaml", LAUGHS, &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "lol.yaml:3:36: node count (after alias expansion) exceeds limit 1000");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Default limits: 10^9 nodes are refused at the first alias that would
   * pass 4M, before anything that large is built. */
  ds = load_as("lol.yaml", LAUGHS, NULL, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_uint_eq(d.n, 1);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "exceeds limit 4194304"));
  ck_assert_uint_lt(gc_arena_used(ds->arena), (size_t)1 << 20);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Plain node counting for JSON too. */
  ds = load_as("n.json", "{\"a\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}", &(struct gb_limits){.max_nodes = 5},
               &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "n.json:1:14: node count (after alias expansion) exceeds limit 5");
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* The same document in YAML counts the same nodes (keys included). */
  ds = load_as("n.yaml", "a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n", &(struct gb_limits){.max_nodes = 5},
               &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "n.yaml:1:11: node count (after alias expansion) exceeds limit 5");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_limit_docs) {
  struct gb_limits l = {.max_docs = 2};
  struct gc_diags d;
  int rc;
  struct gb_docset *ds = load_as("docs.yaml", "a: 1\n---\nb: 2\n---\nc: 3\n", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_ELIMIT);
  ck_assert_msg_present(&d, "docs.yaml:5:1: document count exceeds limit 2");
  ck_assert_uint_eq(ds->n, 2);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  /* Rejected documents count too: a flood of bad documents stops early. */
  l.max_docs = 3;
  ds = load_as("bad.yaml", "--- 1\n--- 2\n--- {a: 1, a: 2}\n--- 4\n--- 5\n", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_uint_eq(d.n, 4);
  ck_assert_msg_present(&d, "bad.yaml:1:5: document is not an object");
  ck_assert_msg_present(&d, "bad.yaml:2:5: document is not an object");
  ck_assert_msg_present(&d, "bad.yaml:3:12: duplicate key \"a\"");
  ck_assert_msg_present(&d, "bad.yaml:4:5: document count exceeds limit 3");
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  ds = load_as("bad.json", "{} 1 2 3", &l, &d, &rc);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg_present(&d, "bad.json:1:8: document count exceeds limit 3");
  ck_assert_uint_eq(ds->n, 1);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* ---- paths ---- */

static void write_file(const char *dir, const char *name, const char *text) {
  char path[512];
  /* A truncated path would write some other file: fail instead. */
  int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
  ck_assert(n >= 0 && (size_t)n < sizeof(path));
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

START_TEST(test_directory) {
  char dir[] = "/tmp/gbman-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char sub[512], hid[512];
  snprintf(sub, sizeof(sub), "%s/sub", dir);
  snprintf(hid, sizeof(hid), "%s/.hidden", dir);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  ck_assert_int_eq(mkdir(hid, 0700), 0);
  write_file(dir, "b.yaml", "name: b\n---\nname: b2\n");
  write_file(dir, "a.json", "{\"name\": \"a\"}");
  write_file(dir, "C.yml", "name: C\n");
  write_file(dir, "notes.txt", "not: loaded\n");
  write_file(dir, ".x.yaml", "name: hidden\n");
  write_file(dir, "bad.yaml", "name: [\n");
  write_file(sub, "c.yaml", "name: c\n");
  write_file(hid, "h.yaml", "name: h\n");

  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_manifest_load_path(ds, dir, &d);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_uint_eq(d.n, 1);
  char want[600];
  snprintf(want, sizeof(want), "%s/bad.yaml:2:1:", dir);
  ck_assert_msg(strncmp(d.msgs[0], want, strlen(want)) == 0, "%s", d.msgs[0]);
  const char *order[] = {"C", "a", "b", "b2", "c"};
  ck_assert_uint_eq(ds->n, 5);
  for (size_t i = 0; i < 5; i++)
    ck_assert_str_eq(gc_value_as_str(gc_map_get(ds->docs[i].root, "name")), order[i]);
  snprintf(want, sizeof(want), "%s/sub/c.yaml", dir);
  ck_assert_str_eq(ds->docs[4].file, want);

  /* An explicit file is loaded whatever its extension. */
  snprintf(want, sizeof(want), "%s/notes.txt", dir);
  ck_assert_int_eq(gb_manifest_load_path(ds, want, &d), 0);
  ck_assert_uint_eq(ds->n, 6);

  snprintf(want, sizeof(want), "%s/missing.yaml", dir);
  gc_diags_destroy(&d);
  ck_assert_int_eq(gb_manifest_load_path(ds, want, &d), GC_EIO);
  char msg[700];
  snprintf(msg, sizeof(msg), "%s: No such file or directory", want);
  ck_assert_msg_present(&d, msg);
  gb_docset_free(ds);
  gc_diags_destroy(&d);

  const char *rm[] = {"b.yaml", "a.json", "C.yml", "notes.txt", ".x.yaml", "bad.yaml",
                      "sub/c.yaml", ".hidden/h.yaml", "sub", ".hidden"};
  for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", dir, rm[i]);
    remove(p);
  }
  rmdir(dir);
}
END_TEST

START_TEST(test_directory_loop) {
  /* One self-link loaded a.yaml 41 times; two walked 2^40 paths.  Each
   * directory and file is walked once, by device and inode. */
  char dir[] = "/tmp/gbman-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char link[512], link2[512], flink[512];
  snprintf(link, sizeof(link), "%s/loop", dir);
  snprintf(link2, sizeof(link2), "%s/loop2", dir);
  snprintf(flink, sizeof(flink), "%s/b.yaml", dir);
  ck_assert_int_eq(symlink(".", link), 0);
  ck_assert_int_eq(symlink(".", link2), 0);
  write_file(dir, "a.yaml", "a: 1\n");
  ck_assert_int_eq(symlink("a.yaml", flink), 0);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_manifest_load_path(ds, dir, &d);
  dump(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(d.n, 0);
  ck_assert_uint_eq(ds->n, 1);
  /* The same directory or file given again adds nothing. */
  ck_assert_int_eq(gb_manifest_load_path(ds, link, &d), 0);
  char p[1100];
  snprintf(p, sizeof(p), "%s/a.yaml", dir);
  ck_assert_int_eq(gb_manifest_load_path(ds, p, &d), 0);
  ck_assert_uint_eq(ds->n, 1);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  unlink(p);
  unlink(flink);
  unlink(link);
  unlink(link2);

  /* 70 real nested directories: the loader's bound. */
  char deep[1024];
  size_t n = (size_t)snprintf(deep, sizeof(deep), "%s", dir);
  for (int i = 0; i < 70; i++) {
    n += (size_t)snprintf(deep + n, sizeof(deep) - n, "/d");
    ck_assert_int_eq(mkdir(deep, 0700), 0);
  }
  write_file(deep, "x.yaml", "x: 1\n");
  ds = gb_docset_new(NULL);
  gc_diags_init(&d);
  ck_assert_int_eq(gb_manifest_load_path(ds, dir, &d), GC_ELIMIT);
  ck_assert_uint_eq(d.n, 1);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "/d: directory nesting exceeds limit 64"));
  ck_assert_uint_eq(ds->n, 0);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
  snprintf(p, sizeof(p), "%s/x.yaml", deep);
  unlink(p);
  for (int i = 0; i < 70; i++) {
    rmdir(deep);
    *strrchr(deep, '/') = '\0';
  }
  rmdir(dir);
}
END_TEST

/* ---- upstream inputs ---- */

struct upstream {
  const char *file;
  size_t docs;
};

static const struct upstream UPSTREAM[] = {
    {"examples/01-multi-node.yaml", 1},
    {"examples/02-runtime-patches.yaml", 1},
    {"examples/03-kueue-integration.yaml", 1},
    {"examples/04-volcano-integration.yaml", 2},
    {"examples/05-multi-step.yaml", 2},
    {"runtimes/data-cache_torch_distributed_with_cache.yaml", 1},
    {"runtimes/deepspeed_distributed.yaml", 1},
    {"runtimes/jax_distributed.yaml", 1},
    {"runtimes/mlx_distributed.yaml", 1},
    {"runtimes/torch_distributed.yaml", 1},
    {"runtimes/torchtune_llama3_2_llama3_2_1B.yaml", 1},
    {"runtimes/torchtune_llama3_2_llama3_2_3B.yaml", 1},
    {"runtimes/torchtune_qwen2_5_qwen2_5_1.5B.yaml", 1},
    {"runtimes/xgboost_distributed.yaml", 1},
};

START_TEST(test_upstream_files) {
  const struct upstream *u = &UPSTREAM[_i];
  char path[512];
  snprintf(path, sizeof(path), "%s/tests/golden/inputs/upstream/%s", GB_SRC_DIR, u->file);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_manifest_load_path(ds, path, &d);
  if (rc)
    dump(&d);
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(d.n, 0);
  ck_assert_uint_eq(ds->n, u->docs);
  for (size_t i = 0; i < ds->n; i++) {
    ck_assert_ptr_nonnull(gc_value_as_str(gc_map_get(ds->docs[i].root, "kind")));
    ck_assert_ptr_nonnull(gc_value_as_str(gc_map_get(ds->docs[i].root, "apiVersion")));
  }
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_upstream_dir) {
  char path[512];
  snprintf(path, sizeof(path), "%s/tests/golden/inputs/upstream", GB_SRC_DIR);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_manifest_load_path(ds, path, &d), 0);
  size_t want = 0;
  for (size_t i = 0; i < sizeof(UPSTREAM) / sizeof(UPSTREAM[0]); i++)
    want += UPSTREAM[i].docs;
  ck_assert_uint_ge(ds->n, want);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

/* ---- the syntax-* malformed cases: the loader's messages match .expect ---- */

static int read_lines(const char *path, char lines[][512], size_t max, size_t *n) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  *n = 0;
  char buf[512];
  while (fgets(buf, sizeof(buf), f) && *n < max) {
    buf[strcspn(buf, "\n")] = '\0';
    memcpy(lines[(*n)++], buf, sizeof(buf));
  }
  fclose(f);
  return 0;
}

START_TEST(test_malformed_syntax_cases) {
  ck_assert_int_eq(chdir(GB_SRC_DIR), 0);
  const char *dir = "tests/malformed/cases";
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *de;
  size_t cases = 0;
  while ((de = readdir(d)) != NULL) {
    size_t nl = strlen(de->d_name);
    if (strncmp(de->d_name, "syntax-", 7) != 0 || nl < 8 || strcmp(de->d_name + nl - 7, ".expect"))
      continue;
    char base[300], input[400] = "", expect[400];
    snprintf(base, sizeof(base), "%.*s", (int)(nl - 7), de->d_name);
    snprintf(expect, sizeof(expect), "%s/%s", dir, de->d_name);
    const char *exts[] = {"yaml", "yml", "json"};
    int inputs = 0;
    for (int i = 0; i < 3; i++) {
      char cand[400];
      snprintf(cand, sizeof(cand), "%s/%s.%s", dir, base, exts[i]);
      if (access(cand, R_OK) == 0) {
        memcpy(input, cand, sizeof(cand));
        inputs++;
      }
    }
    ck_assert_msg(inputs == 1, "%s: %d inputs, want exactly one", expect, inputs);
    static char lines[64][512];
    size_t n = 0;
    ck_assert_int_eq(read_lines(expect, lines, 64, &n), 0);
    ck_assert_uint_ge(n, 2);
    ck_assert_str_eq(lines[0], "exit: 1");
    struct gb_docset *ds = gb_docset_new(NULL);
    struct gc_diags dg;
    gc_diags_init(&dg);
    int rc = gb_manifest_load_path(ds, input, &dg);
    ck_assert_msg(rc != 0, "%s loaded cleanly", input);
    size_t want = 0;
    for (size_t i = 1; i < n; i++) {
      if (!lines[i][0])
        continue;
      want++;
      ck_assert_msg_present(&dg, lines[i]);
    }
    if (dg.n != want)
      dump(&dg);
    ck_assert_msg(dg.n == want, "%s: %zu messages, want %zu", input, dg.n, want);
    gb_docset_free(ds);
    gc_diags_destroy(&dg);
    cases++;
  }
  closedir(d);
  ck_assert_uint_ge(cases, 20);
}
END_TEST

static Suite *manifest_suite(void) {
  Suite *s = suite_create("manifest");
  TCase *tc = tcase_create("core");
  tcase_add_loop_test(tc, test_scalar_resolution, 0, (int)(sizeof(SCASES) / sizeof(SCASES[0])));
  tcase_add_test(tc, test_scalar_text_and_nan);
  tcase_add_test(tc, test_tag_mismatch);
  tcase_add_test(tc, test_keys);
  tcase_add_test(tc, test_positions);
  tcase_add_test(tc, test_multidoc);
  tcase_add_test(tc, test_not_object);
  tcase_add_test(tc, test_list_unpack);
  tcase_add_test(tc, test_anchors_merge);
  tcase_add_test(tc, test_duplicates);
  tcase_add_test(tc, test_json);
  tcase_add_loop_test(tc, test_json_errors, 0, (int)(sizeof(JERRS) / sizeof(JERRS[0])));
  tcase_add_test(tc, test_yaml_errors);
  tcase_add_test(tc, test_nul_in_strings);
  tcase_add_test(tc, test_limit_source_bytes);
  tcase_add_test(tc, test_limit_total_bytes);
  tcase_add_test(tc, test_limit_tree_bytes);
  tcase_add_test(tc, test_limit_depth);
  tcase_add_test(tc, test_limit_nodes);
  tcase_add_test(tc, test_limit_docs);
  tcase_add_test(tc, test_directory);
  tcase_add_test(tc, test_directory_loop);
  tcase_add_loop_test(tc, test_upstream_files, 0, (int)(sizeof(UPSTREAM) / sizeof(UPSTREAM[0])));
  tcase_add_test(tc, test_upstream_dir);
  tcase_add_test(tc, test_malformed_syntax_cases);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(manifest_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
