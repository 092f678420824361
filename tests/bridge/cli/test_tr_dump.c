/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tr_dump, the streaming reader of `timeouts report`: a List's items one
 * by one (kind and apiVersion from a typed List), several top-level
 * documents, multi-document YAML with typed scalars, an item that spans the
 * reader's 1 MiB chunks (its error placed exactly, by file:line:col, after
 * the boundary), exact positions in YAML, an object over its bound refused
 * while the next source is still read, and syntax errors at their place.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gb_tr_dump.h"
#include "gc_diag.h"

static char dir[] = "/tmp/test_tr_dump.XXXXXX";

/* The path of the file written; the last eight paths stay valid. */
static const char *write_file(const char *name, const char *text) {
  static char paths[8][600];
  static int next;
  char *path = paths[next++ % 8];
  snprintf(path, sizeof(paths[0]), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* What the callback saw. */
struct seen {
  int n;
  char kinds[64][32];
  char names[64][64];
  int64_t ints[64];
  uint32_t line[64], col[64];
  uint32_t loc_line, loc_col; /* of the value asked for with steps */
  const struct gb_tr_dump_step *steps;
  size_t n_steps;
  const char *locate_name; /* the object whose value is located */
};

static int on_item(void *ctx, const struct gb_tr_dump_item *it) {
  struct seen *s = ctx;
  json_object *v = NULL, *m = NULL;
  int i = s->n++;
  ck_assert_int_lt(i, 64);
  if (json_object_object_get_ex(it->obj, "kind", &v))
    snprintf(s->kinds[i], sizeof(s->kinds[i]), "%s", json_object_get_string(v));
  if (json_object_object_get_ex(it->obj, "metadata", &m) &&
      json_object_object_get_ex(m, "name", &v))
    snprintf(s->names[i], sizeof(s->names[i]), "%s", json_object_get_string(v));
  if (json_object_object_get_ex(it->obj, "n", &v))
    s->ints[i] = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
  s->line[i] = it->line;
  s->col[i] = it->col;
  if (s->locate_name && !strcmp(s->names[i], s->locate_name))
    gb_tr_dump_locate(it, s->steps, s->n_steps, &s->loc_line, &s->loc_col);
  return 0;
}

static int has_msg(const struct gc_diags *d, const char *part) {
  for (size_t i = 0; i < d->n; i++)
    if (strstr(d->msgs[i], part))
      return 1;
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "  %s\n", d->msgs[i]);
  return 0;
}

static int read_all(const char *path, struct seen *s, struct gc_diags *d,
                    const struct gb_tr_dump_limits *lim) {
  return gb_tr_dump_read(path, lim, on_item, s, d);
}

START_TEST(test_json_list_items) {
  const char *p = write_file(
      "list.json", "{\"apiVersion\": \"v1\", \"kind\": \"PodList\", \"items\": [\n"
                   "  {\"metadata\": {\"name\": \"a\"}},\n"
                   "  {\"kind\": \"PodGroup\", \"metadata\": {\"name\": \"b\"}, \"n\": 7}\n"
                   "], \"metadata\": {}}\n"
                   "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"c\"}}\n");
  struct seen s;
  memset(&s, 0, sizeof(s));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(read_all(p, &s, &d, NULL), 0);
  ck_assert_int_eq(s.n, 3);
  ck_assert_str_eq(s.kinds[0], "Pod"); /* from the typed List */
  ck_assert_str_eq(s.kinds[1], "PodGroup");
  ck_assert_int_eq(s.ints[1], 7);
  ck_assert_str_eq(s.names[2], "c"); /* a second top-level document */
  ck_assert_uint_eq(s.line[1], 3);
  ck_assert_uint_eq(s.col[1], 3);
  ck_assert_uint_eq(s.line[2], 5);
  gc_diags_destroy(&d);
}
END_TEST

/* An item larger than the reader's chunk, with the value to place after
 * the boundary: its text is kept across refills. */
START_TEST(test_item_across_chunks) {
  size_t pad = 1500000;
  char *text = malloc(pad + 512);
  ck_assert_ptr_nonnull(text);
  int n = snprintf(text, 512,
                   "{\"kind\": \"List\", \"items\": [\n {\"kind\": \"Pod\", "
                   "\"metadata\": {\"name\": \"big\"}, \"pad\": \"");
  memset(text + n, 'x', pad);
  snprintf(text + n + pad, 512, "\",\n  \"status\": {\"when\": \"late\"}}\n]}\n");
  const char *p = write_file("big.json", text);
  free(text);
  static const struct gb_tr_dump_step steps[] = {{"status", 0}, {"when", 0}};
  struct seen s;
  memset(&s, 0, sizeof(s));
  s.steps = steps;
  s.n_steps = 2;
  s.locate_name = "big";
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(read_all(p, &s, &d, NULL), 0);
  ck_assert_int_eq(s.n, 1);
  ck_assert_uint_eq(s.loc_line, 3);
  ck_assert_uint_eq(s.loc_col, 22); /* `  "status": {"when": ` is 21 columns */
  /* Over a smaller bound the object is refused, named where it starts. */
  struct gb_tr_dump_limits lim = {0, 1 << 20, 0, 0};
  memset(&s, 0, sizeof(s));
  ck_assert_int_eq(read_all(p, &s, &d, &lim), GC_ELIMIT);
  ck_assert_int_eq(s.n, 0);
  ck_assert_str_eq(d.msgs[d.n - 1] + strlen(p),
                   ":2:2: object larger than the limit of 1048576 bytes");
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_yaml_documents) {
  const char *p = write_file("dump.yaml", "apiVersion: v1\n"
                                          "items:\n"
                                          "- kind: PodGroup\n"
                                          "  metadata: {name: g1}\n"
                                          "  n: 12\n"
                                          "- kind: PodGroup\n"
                                          "  metadata:\n"
                                          "    name: g2\n"
                                          "  spec:\n"
                                          "    minMember: \"3\"\n"
                                          "kind: List\n"
                                          "---\n"
                                          "kind: Pod\n"
                                          "metadata: {name: p}\n"
                                          "n: '5'\n"
                                          "---\n");
  static const struct gb_tr_dump_step steps[] = {{"spec", 0}, {"minMember", 0}};
  struct seen s;
  memset(&s, 0, sizeof(s));
  s.steps = steps;
  s.n_steps = 2;
  s.locate_name = "g2";
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(read_all(p, &s, &d, NULL), 0);
  ck_assert_int_eq(s.n, 3);
  ck_assert_str_eq(s.names[0], "g1");
  ck_assert_int_eq(s.ints[0], 12); /* plain scalar: an integer */
  ck_assert_int_eq(s.ints[2], -1); /* quoted: a string */
  ck_assert_uint_eq(s.line[1], 6);
  ck_assert_uint_eq(s.col[1], 3);
  ck_assert_uint_eq(s.loc_line, 10); /* exact, from the node's own position */
  ck_assert_uint_eq(s.loc_col, 16);
  ck_assert_int_eq(d.errors, 0);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_errors_placed) {
  const char *bad = write_file("bad.json", "{\"items\": [\n  {\"a\": 1},\n  {\"b\": 2,,}\n]}\n");
  const char *yaml = write_file("bad.yaml", "items:\n- *x\n");
  const char *good = write_file("good.json",
                                "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"ok\"}}");
  const char *arr = write_file("arr.json", "[1, 2]");
  struct seen s;
  memset(&s, 0, sizeof(s));
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(read_all(bad, &s, &d, NULL), GC_EINVAL);
  ck_assert(has_msg(&d, "bad.json:3:11: quoted object property name expected"));
  ck_assert_int_eq(read_all(yaml, &s, &d, NULL), GC_EINVAL);
  ck_assert(has_msg(&d, "bad.yaml:2:3: YAML aliases are not read"));
  ck_assert_int_eq(read_all(arr, &s, &d, NULL), GC_EINVAL);
  ck_assert(has_msg(&d, "arr.json:1:1: a top-level JSON array"));
  /* The first item of bad.json came through; the next source is read whole. */
  ck_assert_int_eq(read_all(good, &s, &d, NULL), 0);
  ck_assert_str_eq(s.names[s.n - 1], "ok");
  ck_assert_int_eq(read_all("/nonexistent/x.json", &s, &d, NULL), GC_EIO);
  gc_diags_destroy(&d);
}
END_TEST

int main(void) {
  if (!mkdtemp(dir))
    return 1;
  Suite *su = suite_create("tr_dump");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_json_list_items);
  tcase_add_test(tc, test_item_across_chunks);
  tcase_add_test(tc, test_yaml_documents);
  tcase_add_test(tc, test_errors_placed);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "%s", dir);
  const char *files[] = {"list.json", "big.json",  "dump.yaml", "bad.json",
                         "bad.yaml",  "good.json", "arr.json"};
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    char p[700];
    snprintf(p, sizeof(p), "%s/%s", cmd, files[i]);
    unlink(p);
  }
  rmdir(dir);
  return failed ? 1 : 0;
}
