/* SPDX-License-Identifier: Apache-2.0
 *
 * Bad topology data is isolated (issue 17, defect 6): with
 * tp_build_opts.drop_invalid_hypernodes, an invalid HyperNode is left out
 * (named with its reason in a warning and in tp_snapshot_hn_dropped) and
 * the rest of the topology is built; without it (offline `gangbridge
 * place`) the same input is refused with an error naming the HyperNode.
 * Cases: a HyperNode listing itself, a two-HyperNode cycle, a member listed
 * by two parents, a parent whose member's tier is not below its own, an
 * unparsable HyperNode (no tier), a bad regexMatch, a member HyperNode that
 * does not exist (a warning only), and a valid topology (nothing dropped,
 * the same tree as a strict build).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "tp_snapshot.h"

#define NODE(n)                                                                                    \
  "apiVersion: v1\nkind: Node\nmetadata: {name: " n "}\n"                                          \
  "status: {allocatable: {cpu: '8', pods: '10'}}\n---\n"
#define NODES NODE("n1") NODE("n2") NODE("n3") NODE("n4")
#define HN(name, tier, members)                                                                    \
  "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: " name "}\n"        \
  "spec:\n  tier: " tier "\n  members:\n" members "---\n"
#define MN(n) "  - {type: Node, selector: {exactMatch: {name: " n "}}}\n"
#define MH(n) "  - {type: HyperNode, selector: {exactMatch: {name: " n "}}}\n"
/* Two valid racks under a spine: the part that must keep serving. */
#define GOOD                                                                                       \
  HN("ra", "1", MN("n1") MN("n2")) HN("rb", "1", MN("n3")) HN("sp", "2", MH("ra") MH("rb"))

struct built {
  struct gb_docset *ds;
  struct tp_snapshot *s;
  struct gc_diags d;
  int rc;
};

static void build(struct built *b, const char *yaml, int lenient) {
  memset(b, 0, sizeof(*b));
  gc_diags_init(&b->d);
  b->ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(b->ds, "c.yaml", yaml, strlen(yaml), &b->d), 0);
  const struct gc_value *docs[64];
  const char *origins[64];
  ck_assert_uint_le(b->ds->n, 64);
  for (size_t i = 0; i < b->ds->n; i++) {
    docs[i] = b->ds->docs[i].root;
    origins[i] = "c.yaml";
  }
  struct tp_build_opts o = {.drop_invalid_hypernodes = lenient};
  b->rc = tp_snapshot_build(docs, origins, b->ds->n, &o, &b->s, &b->d);
}

static void done(struct built *b) {
  tp_snapshot_free(b->s);
  gb_docset_free(b->ds);
  gc_diags_destroy(&b->d);
}

static int has_msg(const struct gc_diags *d, int warning, const char *n1, const char *n2) {
  for (size_t i = 0; i < d->n; i++)
    if (d->is_warning[i] == warning && strstr(d->msgs[i], n1) && (!n2 || strstr(d->msgs[i], n2)))
      return 1;
  return 0;
}

static void dump(const struct gc_diags *d) {
  for (size_t i = 0; i < d->n; i++)
    fprintf(stderr, "  diag: %s\n", d->msgs[i]);
}

/* The name of the leaf domain of node n, or "" when n is not in the tree. */
static const char *leaf_of(const struct tp_snapshot *s, const char *n) {
  int64_t slot = tp_snapshot_node(s, n);
  if (slot < 0)
    return "";
  return tp_snapshot_domain_name(s, tp_snapshot_node_leaf(s, (uint32_t)slot));
}

static const char *parent_of(const struct tp_snapshot *s, const char *dom) {
  int64_t d = tp_snapshot_domain(s, dom);
  ck_assert_msg(d >= 0, "domain %s missing", dom);
  int64_t p = tp_snapshot_domain_parent(s, (uint32_t)d);
  return p < 0 ? "" : tp_snapshot_domain_name(s, (uint32_t)p);
}

/* Strict: refused naming `culprit` and `what`.  Lenient: built, exactly
 * the HyperNodes in `dropped` (a space-separated, name-ordered list) left
 * out, each named in a warning; the good part (ra, rb under sp) intact. */
static void isolates(const char *yaml, const char *culprit, const char *what, const char *dropped) {
  struct built b;
  build(&b, yaml, 0);
  if (b.rc == 0 || !has_msg(&b.d, 0, culprit, what))
    dump(&b.d);
  ck_assert_int_ne(b.rc, 0);
  ck_assert_msg(has_msg(&b.d, 0, culprit, what), "strict: no error with %s and %s", culprit, what);
  done(&b);

  build(&b, yaml, 1);
  if (b.rc != 0)
    dump(&b.d);
  ck_assert_int_eq(b.rc, 0);
  ck_assert_uint_eq(b.d.errors, 0);
  char got[256] = "";
  for (size_t i = 0; i < tp_snapshot_hn_dropped_count(b.s); i++) {
    const char *name, *why;
    tp_snapshot_hn_dropped(b.s, i, &name, &why);
    ck_assert_msg(*why, "no reason for %s", name);
    snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", name);
    char w[128];
    snprintf(w, sizeof(w), "HyperNode/%s left out", name);
    ck_assert_msg(has_msg(&b.d, 1, w, NULL), "no warning naming %s", name);
    ck_assert_int_lt(tp_snapshot_domain(b.s, name), 0);
  }
  ck_assert_str_eq(got, dropped);
  ck_assert_msg(has_msg(&b.d, 1, culprit, what), "no warning with the reason %s", what);
  ck_assert_str_eq(leaf_of(b.s, "n1"), "ra");
  ck_assert_str_eq(leaf_of(b.s, "n3"), "rb");
  ck_assert_str_eq(parent_of(b.s, "ra"), "sp");
  ck_assert_str_eq(parent_of(b.s, "rb"), "sp");
  done(&b);
}

START_TEST(self_membership) {
  isolates(NODES GOOD HN("bad", "1", MH("bad") MN("n4")), "HyperNode/bad", "bad lists itself",
           "bad");
  /* Its node belongs to no HyperNode now: directly under the root. */
  struct built b;
  build(&b, NODES GOOD HN("bad", "1", MH("bad") MN("n4")), 1);
  ck_assert_str_eq(leaf_of(b.s, "n4"), TP_ROOT_NAME);
  done(&b);
}
END_TEST

START_TEST(cycle) {
  isolates(NODES GOOD HN("cx", "3", MH("cy")) HN("cy", "4", MH("cx")), "cycle in HyperNode members",
           NULL, "cx cy");
}
END_TEST

START_TEST(two_parents) {
  /* rb stays (under neither); both HyperNodes claiming it go. */
  isolates(NODES HN("ra", "1", MN("n1") MN("n2")) HN("rb", "1", MN("n3"))
               HN("sp", "2", MH("ra") MH("rb")) HN("p1", "2", MH("rc")) HN("p2", "2", MH("rc"))
                   HN("rc", "1", MN("n4")),
           "HyperNode/rc has two parents", "p1 and p2", "p1 p2");
  struct built b;
  build(&b, NODES GOOD HN("p1", "2", MH("rc")) HN("p2", "2", MH("rc")) HN("rc", "1", MN("n4")), 1);
  ck_assert_str_eq(leaf_of(b.s, "n4"), "rc");
  ck_assert_str_eq(parent_of(b.s, "rc"), TP_ROOT_NAME);
  done(&b);
}
END_TEST

START_TEST(tier_not_below) {
  isolates(NODES GOOD HN("low", "1", MH("rc")) HN("rc", "2", MN("n4")), "HyperNode/rc: spec.tier",
           "tiers must grow upward", "low");
}
END_TEST

START_TEST(unparsable) {
  isolates(NODES GOOD
           "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: notier}\n"
           "spec:\n  members:\n" MN("n4") "---\n",
           "HyperNode/notier: spec.tier", "required", "notier");
}
END_TEST

START_TEST(bad_regex) {
  isolates(NODES GOOD HN("rx", "1", "  - {type: Node, selector: {regexMatch: {pattern: 'n[4'}}}\n"),
           "HyperNode/rx: spec.members[0].selector.regexMatch.pattern",
           "invalid regular expression", "rx");
}
END_TEST

START_TEST(missing_member_warns) {
  struct built b;
  build(&b, NODES GOOD HN("top", "3", MH("sp") MH("later")), 0);
  ck_assert_int_ne(b.rc, 0);
  ck_assert(has_msg(&b.d, 0, "HyperNode \"later\" does not exist", NULL));
  done(&b);
  build(&b, NODES GOOD HN("top", "3", MH("sp") MH("later")), 1);
  ck_assert_int_eq(b.rc, 0);
  ck_assert_uint_eq(tp_snapshot_hn_dropped_count(b.s), 0);
  ck_assert(has_msg(&b.d, 1, "HyperNode \"later\" does not exist (yet)", NULL));
  ck_assert_str_eq(parent_of(b.s, "sp"), "top");
  done(&b);
}
END_TEST

START_TEST(valid_unchanged) {
  struct built a, b;
  build(&a, NODES GOOD, 0);
  build(&b, NODES GOOD, 1);
  ck_assert_int_eq(a.rc, 0);
  ck_assert_int_eq(b.rc, 0);
  ck_assert_uint_eq(tp_snapshot_hn_dropped_count(b.s), 0);
  ck_assert_uint_eq(tp_snapshot_domain_count(a.s), tp_snapshot_domain_count(b.s));
  for (uint32_t d = 0; d < tp_snapshot_domain_count(a.s); d++) {
    ck_assert_str_eq(tp_snapshot_domain_name(a.s, d), tp_snapshot_domain_name(b.s, d));
    ck_assert_int_eq(tp_snapshot_domain_parent(a.s, d), tp_snapshot_domain_parent(b.s, d));
    ck_assert_int_eq(tp_snapshot_domain_tier(a.s, d), tp_snapshot_domain_tier(b.s, d));
  }
  done(&a);
  done(&b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tp_hn_isolate");
  TCase *tc = tcase_create("isolate");
  tcase_add_test(tc, self_membership);
  tcase_add_test(tc, cycle);
  tcase_add_test(tc, two_parents);
  tcase_add_test(tc, tier_not_below);
  tcase_add_test(tc, unparsable);
  tcase_add_test(tc, bad_regex);
  tcase_add_test(tc, missing_member_warns);
  tcase_add_test(tc, valid_unchanged);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
