/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for tp_snapshot: every invalid topology is refused with a
 * message naming the culprit; nodes in several leaves are reported and
 * resolved deterministically; pods, taints and label levels are modelled;
 * updates (free resources, pods, node add/remove) change the sums exactly
 * as a rebuild would.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "tp_snapshot.h"

/* Node documents n1..n4 with 8 cpu, 4 gpu, 10 pods. */
#define NODE(n, labels)                                                                     \
  "apiVersion: v1\nkind: Node\nmetadata: {name: " n ", labels: {" labels "}}\n"              \
  "status: {allocatable: {cpu: '8', nvidia.com/gpu: '4', pods: '10'}}\n---\n"
#define NODES NODE("n1", "rack: a") NODE("n2", "rack: a") NODE("n3", "rack: b") NODE("n4", "rack: b")

#define HN(name, tier, members)                                                            \
  "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\nmetadata: {name: " name "}\n" \
  "spec:\n  tier: " tier "\n  members:\n" members "---\n"
#define MN(n) "  - {type: Node, selector: {exactMatch: {name: " n "}}}\n"
#define MH(n) "  - {type: HyperNode, selector: {exactMatch: {name: " n "}}}\n"

struct built {
  struct gb_docset *ds;
  struct tp_snapshot *s;
  struct gc_diags d;
  int rc;
};

static void build(struct built *b, const char *yaml, const char *const *levels, size_t nl) {
  memset(b, 0, sizeof(*b));
  gc_diags_init(&b->d);
  b->ds = gb_docset_new(NULL);
  ck_assert_ptr_nonnull(b->ds);
  ck_assert_int_eq(gb_manifest_load_buffer(b->ds, "c.yaml", yaml, strlen(yaml), &b->d), 0);
  const struct gc_value *docs[64];
  const char *origins[64];
  ck_assert_uint_le(b->ds->n, 64);
  for (size_t i = 0; i < b->ds->n; i++) {
    docs[i] = b->ds->docs[i].root;
    origins[i] = "c.yaml";
  }
  struct tp_build_opts o = {.levels = levels, .n_levels = nl};
  b->rc = tp_snapshot_build(docs, origins, b->ds->n, &o, &b->s, &b->d);
}

static void done(struct built *b) {
  tp_snapshot_free(b->s);
  gb_docset_free(b->ds);
  gc_diags_destroy(&b->d);
}

/* 1 if some message (error or warning as asked) contains every needle. */
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

static void expect_error(const char *yaml, const char *n1, const char *n2) {
  struct built b;
  build(&b, yaml, NULL, 0);
  if (b.rc == 0 || !has_msg(&b.d, 0, n1, n2))
    dump(&b.d);
  ck_assert_int_ne(b.rc, 0);
  ck_assert_ptr_null(b.s);
  ck_assert_msg(has_msg(&b.d, 0, n1, n2), "no error containing '%s' and '%s'", n1,
                n2 ? n2 : "");
  done(&b);
}

START_TEST(valid_tree) {
  struct built b;
  build(&b,
        NODES HN("top", "2", MH("ra") MH("rb")) HN("ra", "1", MN("n1") MN("n2"))
            HN("rb", "1", "  - {type: Node, selector: {regexMatch: {pattern: 'n[34]'}}}\n"),
        NULL, 0);
  dump(&b.d);
  ck_assert_int_eq(b.rc, 0);
  const struct tp_snapshot *s = b.s;
  ck_assert_uint_eq(s->n_alive, 4);
  ck_assert_uint_eq(s->n_dom, 4);
  ck_assert_int_eq(s->dom_tier[0], 3); /* root = max tier + 1 */
  int64_t top = tp_snapshot_domain(s, "top"), ra = tp_snapshot_domain(s, "ra"),
          rb = tp_snapshot_domain(s, "rb");
  ck_assert_int_ge(top, 1);
  ck_assert_int_eq(s->dom_parent[ra], top);
  ck_assert_int_eq(s->dom_parent[top], 0);
  ck_assert_int_eq(s->leaf[tp_snapshot_node(s, "n3")], rb);
  int gpu = tp_snapshot_resource(s, "nvidia.com/gpu");
  ck_assert_int_eq(s->dom_free[gpu][top], 16);
  ck_assert_int_eq(s->dom_free[gpu][ra], 8);
  ck_assert_int_eq(s->dom_free[tp_snapshot_resource(s, "cpu")][0], 32000); /* milli */
  ck_assert(tp_snapshot_in_domain(s, (uint32_t)tp_snapshot_node(s, "n4"), (uint32_t)top));
  ck_assert(!tp_snapshot_in_domain(s, (uint32_t)tp_snapshot_node(s, "n4"), (uint32_t)ra));
  done(&b);
}
END_TEST

START_TEST(cycle) {
  /* a (tier 3) -> b (tier 2) -> c (tier 1) -> a: a cycle, named in order. */
  expect_error(NODES HN("a", "3", MH("b")) HN("b", "2", MH("c")) HN("c", "1", MH("a") MN("n1")),
               "cycle in HyperNode members", "a -> b -> c -> a");
}
END_TEST

START_TEST(self_cycle) {
  expect_error(NODES HN("a", "1", MH("a")), "HyperNode/a", "cycle: a lists itself");
}
END_TEST

START_TEST(two_parents) {
  expect_error(NODES HN("p1", "2", MH("leaf")) HN("p2", "2", MH("leaf")) HN("leaf", "1", MN("n1")),
               "HyperNode/leaf has two parents", "p1 and p2");
}
END_TEST

START_TEST(hypernode_member_not_exact) {
  expect_error(NODES HN("p", "2", "  - {type: HyperNode, selector: {regexMatch: {pattern: 'r.*'}}}\n")
                   HN("r1", "1", MN("n1")),
               "HyperNode/p: spec.members[0].selector", "must use exactMatch");
  expect_error(NODES HN("p", "2", "  - {type: HyperNode, selector: {labelMatch: {matchLabels: {a: b}}}}\n"),
               "HyperNode/p: spec.members[0].selector", "labelMatch");
}
END_TEST

START_TEST(unknown_members) {
  expect_error(NODES HN("p", "2", MH("nope")), "HyperNode/p: spec.members[0]",
               "HyperNode \"nope\" does not exist");
  expect_error(NODES HN("r", "1", MN("n1") MN("n9")), "HyperNode/r: spec.members[1]",
               "Node \"n9\" does not exist");
}
END_TEST

START_TEST(tier_not_growing) {
  expect_error(NODES HN("p", "1", MH("c")) HN("c", "1", MN("n1")), "HyperNode/c: spec.tier",
               "not below the tier of its parent p");
  expect_error(NODES HN("p", "1", MH("c")) HN("c", "2", MN("n1")), "HyperNode/c: spec.tier: 2",
               "tiers must grow upward");
}
END_TEST

START_TEST(bad_regex) {
  expect_error(NODES HN("r", "1", "  - {type: Node, selector: {regexMatch: {pattern: 'n[1'}}}\n"),
               "HyperNode/r: spec.members[0].selector.regexMatch.pattern",
               "invalid regular expression");
}
END_TEST

START_TEST(bad_selectors) {
  expect_error(NODES HN("r", "1", "  - {type: Node, selector: {exactMatch: {name: n1}, "
                                  "regexMatch: {pattern: n}}}\n"),
               "HyperNode/r: spec.members[0].selector", "exactly one of");
  expect_error(NODES HN("r", "1", "  - {type: Node, selector: {}}\n"),
               "HyperNode/r: spec.members[0].selector", "exactly one of");
  expect_error(NODES HN("r", "1", "  - {type: Rack, selector: {exactMatch: {name: n1}}}\n"),
               "HyperNode/r: spec.members[0].type", "Node");
  expect_error(NODES HN("r", "1",
                        "  - {type: Node, selector: {labelMatch: {matchExpressions: "
                        "[{key: rack, operator: Near, values: [a]}]}}}\n"),
               "matchExpressions[0].operator", "Near");
  expect_error(NODES HN("r", "1",
                        "  - {type: Node, selector: {labelMatch: {matchExpressions: "
                        "[{key: rack, operator: In}]}}}\n"),
               "matchExpressions[0].values", "non-empty");
}
END_TEST

START_TEST(bad_fields) {
  expect_error(NODES HN("r", "-1", MN("n1")), "HyperNode/r: spec.tier", "integer");
  expect_error(NODES HN("r", "'1'", MN("n1")), "HyperNode/r: spec.tier", "integer");
  expect_error(NODES "apiVersion: topology.volcano.sh/v1alpha1\nkind: HyperNode\n"
                     "metadata: {name: r}\nspec: {tier: 1, members: []}\n",
               "HyperNode/r: spec.members", "at least one");
  expect_error(NODES HN("r", "1", MN("n1")) HN("r", "1", MN("n2")), "HyperNode/r: metadata.name",
               "duplicate");
  expect_error(NODE("n1", "") NODE("n1", ""), "Node/n1: metadata.name", "duplicate");
  expect_error("apiVersion: v1\nkind: Node\nmetadata: {name: x}\n"
               "status: {allocatable: {cpu: lots}}\n",
               "Node/x: status.allocatable.cpu", "not a valid quantity");
  expect_error(NODE("n1", "") "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"
                              "spec: {nodeName: n1, containers: [{name: c, resources: "
                              "{requests: {cpu: 1x}}}]}\n",
               "Pod ns/p: spec.containers[0].resources.requests.cpu", "not a valid quantity");
}
END_TEST

START_TEST(node_in_several_leaves) {
  struct built b;
  /* n1 is listed by r-b and r-a (both tier 1) and by the tier-0 leaf z:
   * the lowest tier wins, then the first name. */
  build(&b, NODES HN("r-b", "1", MN("n1")) HN("r-a", "1", MN("n1") MN("n2")), NULL, 0);
  ck_assert_int_eq(b.rc, 0);
  ck_assert(has_msg(&b.d, 1, "Node/n1: is a member of 2 HyperNodes", "using r-a"));
  ck_assert_int_eq(b.s->leaf[tp_snapshot_node(b.s, "n1")], tp_snapshot_domain(b.s, "r-a"));
  done(&b);
  build(&b, NODES HN("r-b", "1", MN("n1")) HN("r-a", "2", MN("n1") MN("n2")), NULL, 0);
  ck_assert_int_eq(b.rc, 0);
  ck_assert(has_msg(&b.d, 1, "Node/n1", "using r-b"));
  ck_assert_int_eq(b.s->leaf[tp_snapshot_node(b.s, "n1")], tp_snapshot_domain(b.s, "r-b"));
  done(&b);
}
END_TEST

START_TEST(pods_and_taints) {
  struct built b;
  build(&b,
        NODE("n1", "") NODE("n2", "")
        "apiVersion: v1\nkind: Node\nmetadata: {name: n3}\nspec: {unschedulable: true}\n"
        "status: {allocatable: {cpu: '8', pods: '10'}}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n4}\n"
        "spec: {taints: [{key: k, effect: PreferNoSchedule}, {key: gpu, value: bad, effect: "
        "NoExecute}]}\nstatus: {allocatable: {cpu: '8', pods: '10'}}\n---\n"
        /* containers 1 + 0.5 (limits only) = 1.5 cpu; init 2 cpu; sidecar 0.25 cpu is
         * added to both; overhead 100m: max(1.75, 2.25) + 0.1 = 2.35 cpu. */
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec:\n  nodeName: n1\n"
        "  overhead: {cpu: 100m}\n"
        "  initContainers:\n  - {name: side, restartPolicy: Always, resources: {requests: {cpu: 250m}}}\n"
        "  - {name: init, resources: {requests: {cpu: '2', nvidia.com/gpu: '1'}}}\n"
        "  containers:\n  - {name: a, resources: {requests: {cpu: '1'}}}\n"
        "  - {name: b, resources: {limits: {cpu: 500m, nvidia.com/gpu: '2'}}}\n"
        "status: {phase: Running}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: done}\n"
        "spec: {nodeName: n2, containers: [{name: a, resources: {requests: {cpu: '8'}}}]}\n"
        "status: {phase: Failed}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: pending}\n"
        "spec: {containers: [{name: a, resources: {requests: {cpu: '8'}}}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere}\n"
        "spec: {nodeName: gone, containers: [{name: a}]}\n",
        NULL, 0);
  dump(&b.d);
  ck_assert_int_eq(b.rc, 0);
  const struct tp_snapshot *s = b.s;
  int cpu = tp_snapshot_resource(s, "cpu"), gpu = tp_snapshot_resource(s, "nvidia.com/gpu"),
      pods = tp_snapshot_resource(s, "pods");
  int64_t n1 = tp_snapshot_node(s, "n1"), n2 = tp_snapshot_node(s, "n2");
  ck_assert_int_eq(s->free[cpu][n1], 8000 - 2350);
  ck_assert_int_eq(s->free[gpu][n1], 4 - 2); /* max(2 containers, 1 init) */
  ck_assert_int_eq(s->free[pods][n1], 9);
  ck_assert_int_eq(s->free[cpu][n2], 8000); /* Failed pods hold nothing */
  ck_assert_int_eq(s->state[tp_snapshot_node(s, "n3")], TP_NODE_EXCLUDED);
  ck_assert_int_eq(s->state[tp_snapshot_node(s, "n4")], TP_NODE_EXCLUDED);
  ck_assert_str_eq(s->excl_reason[tp_snapshot_node(s, "n4")], "taint gpu=bad:NoExecute");
  ck_assert_int_eq(s->dom_excluded[0], 2);
  ck_assert_int_eq(s->dom_free[cpu][0], 8000 - 2350 + 8000); /* excluded nodes not summed */
  ck_assert(has_msg(&b.d, 1, "1 Pod(s) are bound to nodes that are not in the input", NULL));
  done(&b);
}
END_TEST

START_TEST(label_levels) {
  static const char *levels[] = {"block", "rack", "kubernetes.io/hostname"};
  struct built b;
  build(&b,
        NODE("n1", "block: x, rack: a") NODE("n2", "block: x, rack: b")
            NODE("n3", "block: y, rack: a") NODE("n4", "rack: a"),
        levels, 3);
  dump(&b.d);
  ck_assert_int_eq(b.rc, 0);
  const struct tp_snapshot *s = b.s;
  ck_assert_uint_eq(s->n_levels, 2);
  ck_assert_uint_eq(s->n_dom, 1 + 2 + 3); /* root, blocks x y, racks x/a x/b y/a */
  int64_t xa = tp_snapshot_domain(s, "x/a"), x = tp_snapshot_domain(s, "x");
  ck_assert_int_ge(xa, 0);
  ck_assert_int_eq(s->dom_tier[xa], 1);
  ck_assert_int_eq(s->dom_tier[x], 2);
  ck_assert_int_eq(s->dom_tier[0], 3);
  ck_assert_str_eq(s->dom_tier_name[xa], "rack");
  ck_assert_int_eq(s->dom_parent[xa], x);
  ck_assert_int_eq(s->leaf[tp_snapshot_node(s, "n4")], 0); /* no block label: root only */
  ck_assert_int_eq(tp_snapshot_tier_by_name(s, "block"), 2);
  done(&b);
  build(&b, NODE("n1", "block: x, rack: 'a/b'"), levels, 3);
  ck_assert_int_ne(b.rc, 0);
  ck_assert(has_msg(&b.d, 0, "Node/n1: metadata.labels", "contains '/'"));
  done(&b);
  static const char *bad[] = {"kubernetes.io/hostname", "rack"};
  build(&b, NODE("n1", ""), bad, 2);
  ck_assert_int_ne(b.rc, 0);
  ck_assert(has_msg(&b.d, 0, "--levels", "only be the last level"));
  done(&b);
}
END_TEST

/* Compares every per-domain sum of a with a fresh build b (same state). */
static void same_sums(const struct tp_snapshot *a, const struct tp_snapshot *b) {
  ck_assert_uint_eq(a->n_alive, b->n_alive);
  for (size_t d = 0; d < b->n_dom; d++) {
    int64_t da = tp_snapshot_domain(a, b->dom_name[d]);
    ck_assert_int_ge(da, 0);
    ck_assert_uint_eq(a->dom_nodes[da], b->dom_nodes[d]);
    ck_assert_uint_eq(a->dom_excluded[da], b->dom_excluded[d]);
    for (size_t r = 0; r < b->n_res; r++) {
      int ra = tp_snapshot_resource(a, b->res_name[r]);
      ck_assert_int_ge(ra, 0);
      ck_assert_msg(a->dom_free[ra][da] == b->dom_free[r][d], "%s %s: %lld vs %lld",
                    b->dom_name[d], b->res_name[r], (long long)a->dom_free[ra][da],
                    (long long)b->dom_free[r][d]);
    }
  }
  for (size_t i = 0; i < b->n_alive; i++) {
    uint32_t sb = b->by_name[i], sa = a->by_name[i];
    ck_assert_str_eq(a->node_name[sa], b->node_name[sb]);
    ck_assert_str_eq(a->dom_name[a->leaf[sa]], b->dom_name[b->leaf[sb]]);
  }
}

START_TEST(updates_match_rebuild) {
  static const char *levels[] = {"rack"};
  struct built a, b;
  build(&a, NODES, levels, 1);
  ck_assert_int_eq(a.rc, 0);
  struct tp_snapshot *s = a.s;
  /* A free-resource change, a removal, two additions (one in a new rack) and
   * a bound pod, then the same state built from scratch. */
  ck_assert_int_eq(tp_snapshot_set_free(s, "n2", "nvidia.com/gpu", 1), 0);
  ck_assert_int_eq(tp_snapshot_set_free(s, "nope", "cpu", 1), GC_ENOTFOUND);
  ck_assert_int_eq(tp_snapshot_remove_node(s, "n3"), 0);
  ck_assert_int_eq(tp_snapshot_remove_node(s, "n3"), GC_ENOTFOUND);
  struct gb_docset *extra = gb_docset_new(NULL);
  const char *more = NODE("n0", "rack: c") NODE("n5", "rack: b")
      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
      "spec: {nodeName: n5, containers: [{name: a, resources: {requests: {cpu: '3'}}}]}\n";
  ck_assert_int_eq(gb_manifest_load_buffer(extra, "more.yaml", more, strlen(more), &a.d), 0);
  ck_assert_int_eq(tp_snapshot_add_node(s, extra->docs[0].root, "more.yaml", &a.d), 0);
  ck_assert_int_eq(tp_snapshot_add_node(s, extra->docs[1].root, "more.yaml", &a.d), 0);
  ck_assert_int_eq(tp_snapshot_add_node(s, extra->docs[1].root, "more.yaml", &a.d), GC_EINVAL);
  int applied = 0;
  ck_assert_int_eq(tp_snapshot_apply_pod(s, extra->docs[2].root, 1, "more.yaml", &applied, &a.d),
                   0);
  ck_assert_int_eq(applied, 1);
  ck_assert_int_eq(tp_snapshot_set_excluded(s, "n4", "maintenance"), 0);
  build(&b,
        NODE("n0", "rack: c") NODE("n1", "rack: a")
        "apiVersion: v1\nkind: Node\nmetadata: {name: n2, labels: {rack: a}}\n"
        "status: {allocatable: {cpu: '8', nvidia.com/gpu: '1', pods: '10'}}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n4, labels: {rack: b}}\n"
        "spec: {unschedulable: true}\n"
        "status: {allocatable: {cpu: '8', nvidia.com/gpu: '4', pods: '10'}}\n---\n"
        NODE("n5", "rack: b")
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {nodeName: n5, containers: [{name: a, resources: {requests: {cpu: '3'}}}]}\n",
        levels, 1);
  ck_assert_int_eq(b.rc, 0);
  same_sums(s, b.s);
  /* Releasing the pod gives its requests back. */
  ck_assert_int_eq(tp_snapshot_apply_pod(s, extra->docs[2].root, -1, "more.yaml", NULL, &a.d), 0);
  int cpu = tp_snapshot_resource(s, "cpu");
  ck_assert_int_eq(s->free[cpu][tp_snapshot_node(s, "n5")], 8000);
  /* Removing everything leaves zero sums; slots are reused. */
  size_t slots = s->n_slots;
  const char *names[] = {"n0", "n1", "n2", "n4", "n5"};
  for (size_t i = 0; i < 5; i++)
    ck_assert_int_eq(tp_snapshot_remove_node(s, names[i]), 0);
  ck_assert_uint_eq(s->n_alive, 0);
  for (size_t d = 0; d < s->n_dom; d++) {
    ck_assert_uint_eq(s->dom_nodes[d], 0);
    for (size_t r = 0; r < s->n_res; r++)
      ck_assert_int_eq(s->dom_free[r][d], 0);
  }
  ck_assert_int_eq(tp_snapshot_add_node(s, extra->docs[0].root, "more.yaml", &a.d), 0);
  ck_assert_uint_eq(s->n_slots, slots);
  gb_docset_free(extra);
  done(&a);
  done(&b);
}
END_TEST

START_TEST(hypernode_add_node_matches_members) {
  struct built b;
  build(&b,
        NODES HN("ra", "1", MN("n1") "  - {type: Node, selector: {labelMatch: {matchExpressions: "
                                     "[{key: rack, operator: In, values: [z]}]}}}\n")
            HN("rb", "1", "  - {type: Node, selector: {regexMatch: {pattern: '^n[3-9]$'}}}\n"),
        NULL, 0);
  ck_assert_int_eq(b.rc, 0);
  /* The snapshot must not borrow from the documents it was built from. */
  gb_docset_free(b.ds);
  b.ds = NULL;
  struct gb_docset *extra = gb_docset_new(NULL);
  const char *more = NODE("n7", "rack: q") NODE("m1", "rack: z") NODE("x", "");
  ck_assert_int_eq(gb_manifest_load_buffer(extra, "more.yaml", more, strlen(more), &b.d), 0);
  for (size_t i = 0; i < 3; i++)
    ck_assert_int_eq(tp_snapshot_add_node(b.s, extra->docs[i].root, "more.yaml", &b.d), 0);
  ck_assert_int_eq(b.s->leaf[tp_snapshot_node(b.s, "n7")], tp_snapshot_domain(b.s, "rb"));
  ck_assert_int_eq(b.s->leaf[tp_snapshot_node(b.s, "m1")], tp_snapshot_domain(b.s, "ra"));
  ck_assert_int_eq(b.s->leaf[tp_snapshot_node(b.s, "x")], 0);
  ck_assert_str_eq(b.s->node_name[b.s->by_name[0]], "m1");
  gb_docset_free(extra);
  done(&b);
}
END_TEST

#define POD(name, node, cpu)                                                                \
  "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: ns}\n"                   \
  "spec: {nodeName: " node ", containers: [{name: c, resources: {requests: {cpu: '" cpu "'}}}]}\n"

/* Loads one Pod document into b's docset and returns it. */
static const struct gc_value *pod_doc(struct built *b, const char *yaml) {
  size_t before = b->ds->n;
  ck_assert_int_eq(gb_manifest_load_buffer(b->ds, "u.yaml", yaml, strlen(yaml), &b->d), 0);
  ck_assert_uint_eq(b->ds->n, before + 1);
  return b->ds->docs[before].root;
}

static int64_t cpu_free(const struct tp_snapshot *s, const char *node) {
  return s->free[tp_snapshot_resource(s, "cpu")][tp_snapshot_node(s, node)];
}

/* Strict pod updates are checked against the model: a release needs a bind
 * on the same node, a bind needs a node that exists and is the one named,
 * and nothing changes when an update is refused. */
START_TEST(pod_updates_validated) {
  struct built b;
  build(&b, NODES POD("p0", "n1", "2"), NULL, 0);
  ck_assert_int_eq(b.rc, 0);
  ck_assert_int_eq(cpu_free(b.s, "n1"), 6000);
  /* Released but never bound. */
  const struct gc_value *ghost = pod_doc(&b, POD("ghost", "n2", "3"));
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, ghost, -1, NULL, "u:1", &b.d), GC_EINVAL);
  ck_assert(has_msg(&b.d, 0, "ns/ghost", "was never bound"));
  ck_assert_int_eq(cpu_free(b.s, "n2"), 8000);
  /* A bound pod naming another node than the update's. */
  const struct gc_value *p1 = pod_doc(&b, POD("p1", "n2", "1"));
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p1, 1, "n3", "u:2", &b.d), GC_EINVAL);
  ck_assert(has_msg(&b.d, 0, "spec.nodeName", "n3"));
  /* A node that does not exist. */
  const struct gc_value *p2 = pod_doc(&b, POD("p2", "nx", "1"));
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p2, 1, NULL, "u:3", &b.d), GC_ENOTFOUND);
  /* A pod with no node. */
  const struct gc_value *p3 = pod_doc(&b, "kind: Pod\nmetadata: {name: p3}\nspec: {}\n");
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p3, 1, NULL, "u:4", &b.d), GC_EINVAL);
  ck_assert(has_msg(&b.d, 0, "spec.nodeName", "required"));
  /* Bind, bind again (refused), release, release again (refused). */
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p1, 1, "n2", "u:5", &b.d), 0);
  ck_assert_int_eq(cpu_free(b.s, "n2"), 7000);
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p1, 1, NULL, "u:6", &b.d), GC_EINVAL);
  ck_assert(has_msg(&b.d, 0, "ns/p1", "already bound"));
  ck_assert_int_eq(cpu_free(b.s, "n2"), 7000);
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p1, -1, NULL, "u:7", &b.d), 0);
  ck_assert_int_eq(cpu_free(b.s, "n2"), 8000);
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p1, -1, NULL, "u:8", &b.d), GC_EINVAL);
  ck_assert_int_eq(cpu_free(b.s, "n2"), 8000);
  /* A pod of the built snapshot can be released; released with more cpu
   * than it was bound with, free would pass allocatable: refused. */
  const struct gc_value *big = pod_doc(&b, POD("p0", "n1", "5"));
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, big, -1, NULL, "u:9", &b.d), GC_EINVAL);
  ck_assert(has_msg(&b.d, 0, "ns/p0", "allocatable"));
  ck_assert_int_eq(cpu_free(b.s, "n1"), 6000);
  const struct gc_value *p0 = pod_doc(&b, POD("p0", "n1", "2"));
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p0, -1, NULL, "u:10", &b.d), 0);
  ck_assert_int_eq(cpu_free(b.s, "n1"), 8000);
  /* A node that leaves takes its pods' records along: the same pod may be
   * bound again elsewhere. */
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p1, 1, "n2", "u:11", &b.d), 0);
  ck_assert_int_eq(tp_snapshot_remove_node(b.s, "n2"), 0);
  const struct gc_value *p1b = pod_doc(&b, POD("p1", "n3", "1"));
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, p1b, 1, "n3", "u:12", &b.d), 0);
  ck_assert_int_eq(cpu_free(b.s, "n3"), 7000);
  /* A pod that finished is released (its requests come back). */
  const struct gc_value *done_pod =
      pod_doc(&b, POD("p1", "n3", "1") "status: {phase: Succeeded}\n");
  ck_assert_int_eq(tp_snapshot_update_pod(b.s, done_pod, -1, "n3", "u:13", &b.d), 0);
  ck_assert_int_eq(cpu_free(b.s, "n3"), 8000);
  done(&b);
}
END_TEST

/* Free amounts set by an update lie in [0, allocatable]. */
START_TEST(free_updates_validated) {
  struct built b;
  build(&b, NODES, NULL, 0);
  ck_assert_int_eq(b.rc, 0);
  struct gc_arena *a = gc_arena_new(0);
  struct gc_reslist l = {0};
  struct gc_quantity q;
  ck_assert_int_eq(gc_quantity_parse("9", 1, &q), 0);
  ck_assert_int_eq(gc_reslist_set(a, &l, "cpu", &q), 0);
  ck_assert_int_eq(tp_snapshot_update_free(b.s, "n1", &l, "updates[0]", &b.d), GC_EINVAL);
  ck_assert(has_msg(&b.d, 0, "updates[0].free.values[cpu]", "allocatable"));
  ck_assert_int_eq(cpu_free(b.s, "n1"), 8000);
  struct gc_reslist l2 = {0};
  ck_assert_int_eq(gc_quantity_parse("-1", 2, &q), 0);
  ck_assert_int_eq(gc_reslist_set(a, &l2, "cpu", &q), 0);
  ck_assert_int_eq(tp_snapshot_update_free(b.s, "n1", &l2, "updates[1]", &b.d), GC_EINVAL);
  ck_assert(has_msg(&b.d, 0, "updates[1].free.values[cpu]", "negative"));
  struct gc_reslist l3 = {0};
  ck_assert_int_eq(gc_quantity_parse("1", 1, &q), 0);
  ck_assert_int_eq(gc_reslist_set(a, &l3, "example.com/fpga", &q), 0);
  ck_assert_int_eq(tp_snapshot_update_free(b.s, "n1", &l3, "updates[2]", &b.d), GC_EINVAL);
  struct gc_reslist l4 = {0};
  ck_assert_int_eq(gc_quantity_parse("3", 1, &q), 0);
  ck_assert_int_eq(gc_reslist_set(a, &l4, "cpu", &q), 0);
  ck_assert_int_eq(tp_snapshot_update_free(b.s, "n1", &l4, "updates[3]", &b.d), 0);
  ck_assert_int_eq(cpu_free(b.s, "n1"), 3000);
  ck_assert_int_eq(tp_snapshot_update_free(b.s, "nx", &l4, "updates[4]", &b.d), GC_ENOTFOUND);
  gc_arena_free(a);
  done(&b);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("tp_snapshot");
  TCase *t = tcase_create("core");
  tcase_add_test(t, valid_tree);
  tcase_add_test(t, cycle);
  tcase_add_test(t, self_cycle);
  tcase_add_test(t, two_parents);
  tcase_add_test(t, hypernode_member_not_exact);
  tcase_add_test(t, unknown_members);
  tcase_add_test(t, tier_not_growing);
  tcase_add_test(t, bad_regex);
  tcase_add_test(t, bad_selectors);
  tcase_add_test(t, bad_fields);
  tcase_add_test(t, node_in_several_leaves);
  tcase_add_test(t, pods_and_taints);
  tcase_add_test(t, label_levels);
  tcase_add_test(t, updates_match_rebuild);
  tcase_add_test(t, hypernode_add_node_matches_members);
  tcase_add_test(t, pod_updates_validated);
  tcase_add_test(t, free_updates_validated);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
