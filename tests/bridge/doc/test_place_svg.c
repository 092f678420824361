/* SPDX-License-Identifier: Apache-2.0
 *
 * Placement drawing tests (gb_place_svg): a drawn result with the chosen
 * domain and the receiving nodes marked, escaping of names, the node row
 * left out above the drawn-node limit, refusal of a cluster too large to
 * draw (with the caller's name for the output), and the buffer's limit.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_manifest.h"
#include "gb_place_svg.h"

#define NODE(n, gpu)                                                                       \
  "apiVersion: v1\nkind: Node\nmetadata: {name: " n "}\n"                                 \
  "status: {allocatable: {cpu: '32', nvidia.com/gpu: '" gpu "', pods: '110'}}\n---\n"
#define HN(name, tier, tn, members)                                                        \
  "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: " name "}\n" \
  "spec:\n  tier: " tier "\n  tierName: " tn "\n  members:\n" members "---\n"
#define MN(n) "  - {type: Node, selector: {exactMatch: {name: " n "}}}\n"

/* Racks r1 {a1 4 GPUs, a2 2 GPUs} and r2 {b1 8, b2 8}. */
static const char *CLUSTER = NODE("a1", "4") NODE("a2", "2") NODE("b1", "8") NODE("b2", "8")
    HN("r1", "1", "rack", MN("a1") MN("a2")) HN("r2", "1", "rack", MN("b1") MN("b2"));

struct fx {
  struct gb_docset *ds;
  struct tp_snapshot *s;
  struct tp_evaluator *ev;
  struct gc_arena *a;
  struct gc_diags d;
  struct tp_gang g;
  struct tp_result res;
};

/* Builds the snapshot of yaml and evaluates a gang of 2 pods of 8 GPUs. */
static void setup(struct fx *f, const char *yaml, const char *gang_name) {
  memset(f, 0, sizeof(*f));
  gc_diags_init(&f->d);
  f->ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(f->ds, "c.yaml", yaml, strlen(yaml), &f->d), 0);
  const struct gc_value **docs = calloc(f->ds->n, sizeof(*docs));
  ck_assert_ptr_nonnull(docs);
  for (size_t i = 0; i < f->ds->n; i++)
    docs[i] = f->ds->docs[i].root;
  ck_assert_int_eq(tp_snapshot_build(docs, NULL, f->ds->n, NULL, &f->s, &f->d), 0);
  free(docs);
  f->ev = tp_evaluator_new();
  f->a = gc_arena_new(0);
  static const char *res[] = {"nvidia.com/gpu"};
  static int64_t val[] = {8};
  static struct tp_podset set = {0};
  set.name = "w";
  set.count = 2;
  set.res = res;
  set.val = val;
  set.n_req = 1;
  f->g.name = gang_name;
  f->g.sets = &set;
  f->g.n_sets = 1;
  struct tp_eval_opts o = {0};
  ck_assert_int_eq(tp_place_evaluate(f->ev, f->s, &f->g, &o, f->a, &f->res, &f->d), 0);
}

static void teardown(struct fx *f) {
  tp_evaluator_free(f->ev);
  tp_snapshot_free(f->s);
  gb_docset_free(f->ds);
  gc_arena_free(f->a);
  gc_diags_destroy(&f->d);
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

START_TEST(draws_result) {
  struct fx f;
  setup(&f, CLUSTER, "job<&\"x\">");
  ck_assert(f.res.feasible);
  struct gb_buf b;
  gb_buf_init(&b, GB_PLACE_SVG_MAX_BYTES);
  ck_assert_int_eq(gb_place_svg(f.s, f.ev, &f.g, &f.res, "out", &b, &f.d), 0);
  const char *svg = gb_buf_ptr(&b);
  ck_assert_int_eq(strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39), 0);
  ck_assert_ptr_nonnull(strstr(svg, ">job&lt;&amp;&quot;x&quot;&gt;: 2 pods on 2 node(s) in r2 ("));
  ck_assert_uint_eq(count(svg, "stroke=\"#e65100\""), 1); /* the chosen rack only */
  ck_assert_ptr_nonnull(strstr(svg, "font-weight=\"bold\">r2</text>"));
  ck_assert_uint_eq(count(svg, ">tier 1 · rack</text>"), 2);
  ck_assert_uint_eq(count(svg, "+1 pods (fits 1)"), 2); /* b1 and b2 */
  ck_assert_uint_eq(count(svg, "stroke=\"#ccc\""), 4);  /* one line per node */
  ck_assert_ptr_nonnull(strstr(svg, "free nvidia.com/gpu: 16</text>"));
  ck_assert_int_eq(strcmp(svg + b.len - 7, "</svg>\n"), 0);
  gb_buf_free(&b);
  teardown(&f);
}
END_TEST

/* A cluster of n nodes of 8 GPUs, no HyperNodes. */
static char *flat_cluster(size_t n) {
  struct gb_buf b;
  gb_buf_init(&b, (size_t)1 << 24);
  for (size_t i = 0; i < n; i++)
    gb_buf_printf(&b, "apiVersion: v1\nkind: Node\nmetadata: {name: n%zu}\nstatus: {allocatable: "
                      "{cpu: '32', nvidia.com/gpu: '8', pods: '110'}}\n---\n", i);
  char *out = NULL;
  ck_assert_int_eq(gb_buf_take(&b, &out, NULL), 0);
  return out;
}

START_TEST(many_nodes_not_drawn) {
  char *yaml = flat_cluster(GB_PLACE_SVG_NODES_DRAWN + 1);
  struct fx f;
  setup(&f, yaml, "g");
  struct gb_buf b;
  gb_buf_init(&b, GB_PLACE_SVG_MAX_BYTES);
  ck_assert_int_eq(gb_place_svg(f.s, f.ev, &f.g, &f.res, "out", &b, &f.d), 0);
  ck_assert_uint_eq(count(gb_buf_ptr(&b), "stroke=\"#ccc\""), 0);
  ck_assert_ptr_nonnull(strstr(gb_buf_ptr(&b), "fits 401 pods · 401 nodes"));
  gb_buf_free(&b);
  teardown(&f);
  free(yaml);
}
END_TEST

START_TEST(too_large_refused) {
  char *yaml = flat_cluster(GB_PLACE_SVG_MAX_NODES + 1);
  struct fx f;
  setup(&f, yaml, "g");
  struct gb_buf b;
  gb_buf_init(&b, GB_PLACE_SVG_MAX_BYTES);
  ck_assert_int_eq(gb_place_svg(f.s, f.ev, &f.g, &f.res, "--out", &b, &f.d), GC_ELIMIT);
  ck_assert_uint_eq(gb_buf_len(&b), 0);
  ck_assert_uint_eq(f.d.errors, 1);
  ck_assert_str_eq(f.d.msgs[f.d.n - 1], "--out: the cluster is too large to draw (1 domains, "
                                        "4001 nodes; at most 2000 and 4000)");
  gb_buf_free(&b);
  teardown(&f);
  free(yaml);
}
END_TEST

START_TEST(buffer_limit) {
  struct fx f;
  setup(&f, CLUSTER, "g");
  struct gb_buf b;
  gb_buf_init(&b, 200);
  ck_assert_int_eq(gb_place_svg(f.s, f.ev, &f.g, &f.res, "out", &b, &f.d), GC_ELIMIT);
  ck_assert_uint_eq(gb_buf_len(&b), 0);
  ck_assert_uint_eq(f.d.errors, 0); /* the caller names its own buffer */
  gb_buf_free(&b);
  teardown(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("place_svg");
  TCase *tc = tcase_create("svg");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, draws_result);
  tcase_add_test(tc, many_nodes_not_drawn);
  tcase_add_test(tc, too_large_refused);
  tcase_add_test(tc, buffer_limit);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
