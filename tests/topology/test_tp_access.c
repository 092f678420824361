/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for tp_snapshot's read accessors, the only way code outside
 * topology/ reads a snapshot: counts, the domain tree (parent and the child
 * iterator), node -> leaf, node names in name order, and per-domain sums.
 */
#include <check.h>
#include <string.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "tp_snapshot.h"
#include "tp_snapshot_test.h"

#define NODE(n, rack)                                                                       \
  "apiVersion: v1\nkind: Node\nmetadata: {name: " n ", labels: {rack: " rack "}}\n"         \
  "status: {allocatable: {cpu: '8', pods: '10'}}\n---\n"

START_TEST(accessors) {
  const char *yaml = NODE("n2", "a") NODE("n1", "a") NODE("n3", "b");
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "c.yaml", yaml, strlen(yaml), &d), 0);
  const struct gc_value *docs[8];
  for (size_t i = 0; i < ds->n; i++)
    docs[i] = ds->docs[i].root;
  const char *levels[] = {"rack"};
  struct tp_build_opts o = {.levels = levels, .n_levels = 1};
  struct tp_snapshot *s = NULL;
  ck_assert_int_eq(tp_snapshot_build(docs, NULL, ds->n, &o, &s, &d), 0);

  /* The root and the two racks; three live nodes. */
  ck_assert_uint_eq(tp_snapshot_domain_count(s), 3);
  ck_assert_uint_eq(tp_snapshot_node_count(s), 3);
  ck_assert_uint_ge(tp_snapshot_slot_count(s), 3);
  ck_assert_int_eq(tp_snapshot_domain_parent(s, 0), -1);
  ck_assert_str_eq(tp_snapshot_domain_name(s, 0), TP_ROOT_NAME);

  /* The child iterator visits each rack once, under the root only. */
  int64_t a = tp_snapshot_domain(s, "a"), b = tp_snapshot_domain(s, "b");
  ck_assert(a > 0 && b > 0);
  int seen_a = 0, seen_b = 0, n = 0;
  for (int64_t c = tp_snapshot_child_next(s, 0, -1); c >= 0; c = tp_snapshot_child_next(s, 0, c)) {
    n++;
    seen_a += c == a;
    seen_b += c == b;
    ck_assert_int_eq(tp_snapshot_domain_parent(s, (uint32_t)c), 0);
  }
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(seen_a + seen_b, 2);
  ck_assert_int_eq(tp_snapshot_child_next(s, (uint32_t)a, -1), -1);

  /* Nodes in name order, each with its leaf. */
  const char *want[] = {"n1", "n2", "n3"};
  for (size_t i = 0; i < 3; i++) {
    uint32_t slot = tp_snapshot_node_sorted(s, i);
    ck_assert_str_eq(tp_snapshot_node_name(s, slot), want[i]);
    ck_assert_int_eq(tp_snapshot_node_leaf(s, slot), i < 2 ? a : b);
    ck_assert_int_eq(tp_snapshot_node_state(s, slot), TP_NODE_OK);
  }

  /* Per-domain sums: rack a holds two nodes of 8 cpu (8000 milli-cpu each). */
  int cpu = tp_snapshot_resource(s, "cpu");
  ck_assert_int_ge(cpu, 0);
  ck_assert_str_eq(tp_snapshot_resource_name(s, cpu), "cpu");
  ck_assert_uint_eq(tp_snapshot_domain_nodes(s, (uint32_t)a), 2);
  ck_assert_int_eq(tp_snapshot_domain_free(s, cpu, (uint32_t)a), 16000);
  ck_assert_int_eq(tp_snapshot_domain_free(s, cpu, 0), 24000);
  ck_assert_int_gt(tp_snapshot_domain_tier(s, 0), tp_snapshot_domain_tier(s, (uint32_t)a));
  /* With label levels a domain's tierName is its label key. */
  ck_assert_str_eq(tp_snapshot_domain_tier_name(s, (uint32_t)a), "rack");

  tp_snapshot_free(s);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST


/* Deltas: adjust_free moves a node's free amount and every sum above it by
 * a delta (a reservation or a pod bind), and the node accessors read it. */
START_TEST(adjust_free) {
  const char *yaml = NODE("n1", "a") NODE("n2", "a");
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_docset *ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(ds, "c.yaml", yaml, strlen(yaml), &d), 0);
  const struct gc_value *docs[4];
  for (size_t i = 0; i < ds->n; i++)
    docs[i] = ds->docs[i].root;
  const char *levels[] = {"rack"};
  struct tp_build_opts o = {.levels = levels, .n_levels = 1};
  struct tp_snapshot *s = NULL;
  ck_assert_int_eq(tp_snapshot_build(docs, NULL, ds->n, &o, &s, &d), 0);
  int cpu = tp_snapshot_resource(s, "cpu");
  uint32_t n1 = (uint32_t)tp_snapshot_node(s, "n1");
  uint32_t a = (uint32_t)tp_snapshot_domain(s, "a");
  ck_assert_int_eq(tp_snapshot_node_alloc(s, cpu, n1), 8000);

  ck_assert_int_eq(tp_snapshot_adjust_free(s, n1, cpu, -3000), 0);
  ck_assert_int_eq(tp_snapshot_node_free(s, cpu, n1), 5000);
  ck_assert_int_eq(tp_snapshot_domain_free(s, cpu, a), 13000);
  ck_assert_int_eq(tp_snapshot_domain_free(s, cpu, 0), 13000);

  /* Below zero the node counts 0 in the sums (free may be negative). */
  ck_assert_int_eq(tp_snapshot_adjust_free(s, n1, cpu, -9000), 0);
  ck_assert_int_eq(tp_snapshot_node_free(s, cpu, n1), -4000);
  ck_assert_int_eq(tp_snapshot_domain_free(s, cpu, a), 8000);
  ck_assert_int_eq(tp_snapshot_adjust_free(s, n1, cpu, 12000), 0);
  ck_assert_int_eq(tp_snapshot_domain_free(s, cpu, a), 16000);

  /* A dead or unknown slot and a bad resource are refused. */
  ck_assert_int_eq(tp_snapshot_adjust_free(s, 999, cpu, 1), GC_ENOTFOUND);
  ck_assert_int_eq(tp_snapshot_adjust_free(s, n1, 99, 1), GC_EINVAL);
  ck_assert_int_eq(tp_snapshot_remove_node(s, "n1"), 0);
  ck_assert_int_eq(tp_snapshot_adjust_free(s, n1, cpu, 1), GC_ENOTFOUND);

  tp_snapshot_free(s);
  gb_docset_free(ds);
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("tp_access");
  TCase *tc = tcase_create("tp_access");
  tcase_add_test(tc, accessors);
  tcase_add_test(tc, adjust_free);
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
