/* SPDX-License-Identifier: Apache-2.0
 *
 * test_model: the live cluster model fed with Node, Pod and HyperNode JSON
 * (gb_model_feed): free sums, the pod-request rule, terminal pods giving
 * back, exclusions, taint masks, generations, coalesced rebuilds on
 * HyperNode changes, gang callbacks and iteration.  The plan is a stub
 * here (weak, so the real gb_plan wins once it is linked): it counts the
 * calls the model makes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_model.h"
#include "gb_model_test.h"

/* ---- Plan stubs (weak: the real gb_plan.c replaces them when linked) ---- */

static int bound_calls, reapply_calls;
static char bound_key[GB_PLAN_KEY_MAX + 1];
static uint32_t bound_slot;

__attribute__((weak)) int gb_plan_pod_bound(struct gb_plan *p, struct tp_snapshot *s,
                                            const char *key, uint32_t slot, size_t n_req,
                                            const char *const *res, const int64_t *val) {
  (void)p, (void)s, (void)n_req, (void)res, (void)val;
  bound_calls++;
  snprintf(bound_key, sizeof(bound_key), "%s", key);
  bound_slot = slot;
  return 0;
}

__attribute__((weak)) int gb_plan_reapply_node(struct gb_plan *p, struct tp_snapshot *s,
                                               const char *node) {
  (void)p, (void)s, (void)node;
  return 0;
}
__attribute__((weak)) int gb_plan_reapply(struct gb_plan *p, struct tp_snapshot *s) {
  (void)p, (void)s;
  reapply_calls++;
  return 0;
}

/* ---- Helpers ---- */

static int gang_calls, capacity_calls;
static char gang_last[2 * GB_PLAN_KEY_MAX];

static void on_gang(void *arg, const char *ns, const char *js) {
  (void)arg;
  gang_calls++;
  snprintf(gang_last, sizeof(gang_last), "%s/%s", ns, js);
}

static void on_capacity(void *arg) {
  (void)arg;
  capacity_calls++;
}

static struct gb_model *model(const char *const *levels, size_t n_levels, struct gb_plan *plan) {
  struct gb_model_opts o = {.levels = levels,
                            .n_levels = n_levels,
                            .plan = plan,
                            .on_gang = on_gang,
                            .on_capacity = on_capacity};
  struct gb_model *m = NULL;
  ck_assert_int_eq(gb_model_new(&o, &m, NULL), 0);
  gang_calls = capacity_calls = bound_calls = reapply_calls = 0;
  return m;
}

static void feed(struct gb_model *m, const char *kind, int op, const char *json) {
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_model_feed(m, kind, op, json, &d);
  if (rc)
    ck_abort_msg("feed %s: %s: %s", kind, gc_diag_strerror(rc), d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
}

static char buf[8][4096];
static int bufi;

static const char *node(const char *name, const char *labels, const char *cpu, const char *gpu,
                        const char *extra) {
  char *b = buf[bufi++ % 8];
  snprintf(b, 4096,
           "{\"metadata\":{\"name\":\"%s\",\"labels\":{%s}},\"spec\":{%s},"
           "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"nvidia.com/gpu\":\"%s\"}}}",
           name, labels, extra, cpu, gpu);
  return b;
}

/* A pod with one container (cpu, gpu), on node (or "" unbound), in
 * jobset js (or ""), with phase and extra spec keys. */
static const char *pod(const char *name, const char *nodename, const char *js, const char *cpu,
                       const char *gpu, const char *phase, const char *spec_extra) {
  char *b = buf[bufi++ % 8];
  snprintf(b, 4096,
           "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"%s\",\"uid\":\"u-%s\","
           "\"resourceVersion\":\"1\",\"creationTimestamp\":\"2026-01-01T00:00:%02dZ\","
           "\"labels\":{\"jobset.sigs.k8s.io/jobset-name\":\"%s\",\"other\":\"x\"},"
           "\"annotations\":{\"big\":\"dropped\"}},"
           "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"image\":\"i\","
           "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"nvidia.com/gpu\":\"%s\"}}}]%s%s},"
           "\"status\":{\"phase\":\"%s\"}}",
           name, name, (int)(strlen(name) * 7 % 60), js, nodename, cpu, gpu, *spec_extra ? "," : "",
           spec_extra, phase);
  return b;
}

struct nf {
  const char *node;
  int64_t cpu, gpu;
  int state;
  char reason[128];
  size_t domains;
  int64_t root_gpu;
  uint64_t gen;
};

static int read_node(void *arg, struct tp_snapshot *s, uint64_t gen) {
  struct nf *f = arg;
  int64_t slot = tp_snapshot_node(s, f->node);
  f->gen = gen;
  f->domains = tp_snapshot_domain_count(s);
  int rg = tp_snapshot_resource(s, "nvidia.com/gpu");
  f->root_gpu = rg < 0 ? -1 : tp_snapshot_domain_free(s, rg, 0);
  if (slot < 0)
    return GC_ENOTFOUND;
  int rc = tp_snapshot_resource(s, "cpu");
  f->cpu = tp_snapshot_node_free(s, rc, (uint32_t)slot);
  f->gpu = rg < 0 ? 0 : tp_snapshot_node_free(s, rg, (uint32_t)slot);
  f->state = tp_snapshot_node_state(s, (uint32_t)slot);
  f->reason[0] = '\0';
  if (f->state == TP_NODE_EXCLUDED)
    snprintf(f->reason, sizeof(f->reason), "%s", s->excl_reason[slot]);
  return 0;
}

static struct nf look(struct gb_model *m, const char *nodename) {
  struct nf f = {.node = nodename};
  ck_assert_int_eq(gb_model_with_snapshot(m, read_node, &f), 0);
  return f;
}

/* ---- Tests ---- */

START_TEST(test_free_sums_bound_pods) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  feed(m, "Node", 0, node("b", "", "8", "4", ""));
  feed(m, "Pod", 0, pod("p1", "a", "", "2", "1", "Running", ""));
  feed(m, "Pod", 0, pod("p2", "a", "", "500m", "0", "Pending", "")); /* bound, not running */
  feed(m, "Pod", 0, pod("p3", "", "", "4", "2", "Pending", ""));     /* unbound: nothing */
  ck_assert_int_eq(gb_model_with_snapshot(m, read_node, &(struct nf){.node = "a"}), GC_ENOTFOUND);
  ck_assert_int_eq(gb_model_feed_done(m), 0);
  ck_assert_int_eq(gb_model_synced(m), 1);
  struct nf a = look(m, "a");
  ck_assert_int_eq(a.cpu, 8000 - 2000 - 500);
  ck_assert_int_eq(a.gpu, 3);
  ck_assert_int_eq(a.root_gpu, 7);
  /* A delta after the build: p3 binds to b. */
  feed(m, "Pod", 0, pod("p3", "b", "", "4", "2", "Pending", ""));
  struct nf b = look(m, "b");
  ck_assert_int_eq(b.cpu, 4000);
  ck_assert_int_eq(b.root_gpu, 5);
  struct gb_model_stats st;
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.nodes, 2);
  ck_assert_uint_eq(st.pods, 3);
  ck_assert_uint_eq(st.rebuilds, 1);
  ck_assert_uint_gt(st.record_bytes, 0);
  gb_model_free(m);
}
END_TEST

START_TEST(test_terminal_and_delete_give_back) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  feed(m, "Pod", 0, pod("p1", "a", "", "2", "1", "Running", ""));
  feed(m, "Pod", 0, pod("p2", "a", "", "1", "1", "Running", ""));
  gb_model_feed_done(m);
  ck_assert_int_eq(look(m, "a").cpu, 5000);
  int before = capacity_calls;
  feed(m, "Pod", 0, pod("p1", "a", "", "2", "1", "Succeeded", ""));
  ck_assert_int_eq(look(m, "a").cpu, 7000);
  ck_assert_int_gt(capacity_calls, before);
  feed(m, "Pod", 1, pod("p2", "a", "", "1", "1", "Running", ""));
  struct nf a = look(m, "a");
  ck_assert_int_eq(a.cpu, 8000);
  ck_assert_int_eq(a.gpu, 4);
  /* Deleting the terminal pod gives nothing back a second time. */
  feed(m, "Pod", 1, pod("p1", "a", "", "2", "1", "Succeeded", ""));
  ck_assert_int_eq(look(m, "a").cpu, 8000);
  gb_model_free(m);
}
END_TEST

START_TEST(test_pod_request_rule) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  gb_model_feed_done(m);
  /* containers 1 + 1 cpu; a sidecar 500m (added to the sum and running
   * before the later init container); an init container of 3 cpu needs
   * 3 + 0.5; the maximum is 3.5, plus 250m overhead: 3750m.  The init
   * container's 2 GPUs beat the container's 1. */
  feed(
      m, "Pod", 0,
      "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"r\"},\"spec\":{\"nodeName\":\"a\","
      "\"containers\":[{\"name\":\"c1\",\"resources\":{\"requests\":{\"cpu\":\"1\","
      "\"nvidia.com/gpu\":\"1\"}}},{\"name\":\"c2\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}],"
      "\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\",\"resources\":"
      "{\"requests\":{\"cpu\":\"500m\"}}},{\"name\":\"init\",\"resources\":{\"requests\":"
      "{\"cpu\":\"3\",\"nvidia.com/gpu\":\"2\"}}}],\"overhead\":{\"cpu\":\"250m\"}},"
      "\"status\":{\"phase\":\"Pending\"}}");
  struct nf a = look(m, "a");
  ck_assert_int_eq(a.cpu, 8000 - 3750);
  ck_assert_int_eq(a.gpu, 2);
  gb_model_free(m);
}
END_TEST

START_TEST(test_exclusions) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0, node("a", "", "8", "4", "\"unschedulable\":true"));
  feed(m, "Node", 0,
       "{\"metadata\":{\"name\":\"b\"},\"status\":{\"allocatable\":{\"cpu\":\"8\"},"
       "\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
       "{\"type\":\"Ready\",\"status\":\"False\"}]}}");
  feed(m, "Node", 0,
       node("c", "", "8", "4", "\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"}]"));
  gb_model_feed_done(m);
  struct nf a = look(m, "a"), b = look(m, "b"), c = look(m, "c");
  ck_assert_int_eq(a.state, TP_NODE_EXCLUDED);
  ck_assert_str_eq(a.reason, "unschedulable (cordoned)");
  ck_assert_int_eq(b.state, TP_NODE_EXCLUDED);
  ck_assert_str_eq(b.reason, "not Ready");
  /* A taint is the gang's business (gb_model_blocked_mask), not an exclusion. */
  ck_assert_int_eq(c.state, TP_NODE_OK);
  ck_assert_int_eq(c.root_gpu, 4);
  int before = capacity_calls;
  feed(m, "Node", 0, node("a", "", "8", "4", "")); /* uncordoned */
  a = look(m, "a");
  ck_assert_int_eq(a.state, TP_NODE_OK);
  ck_assert_int_eq(a.root_gpu, 8);
  ck_assert_int_gt(capacity_calls, before);
  gb_model_free(m);
}
END_TEST

struct mask_q {
  struct gb_model *m;
  const char *pod;
  uint8_t *mask;
  int64_t slot_t, slot_u, slot_p;
};

static int get_mask(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  struct mask_q *q = arg;
  q->slot_t = tp_snapshot_node(s, "t");
  q->slot_u = tp_snapshot_node(s, "u");
  q->slot_p = tp_snapshot_node(s, "p");
  return gb_model_blocked_mask(q->m, s, "ns", q->pod, &q->mask);
}

/* 1 when node t (taint gpu=yes:NoSchedule) is blocked for the pod, checking
 * that u (untainted) and p (PreferNoSchedule) never are. */
static int blocked_t(struct gb_model *m, const char *podname) {
  struct mask_q q = {.m = m, .pod = podname};
  ck_assert_int_eq(gb_model_with_snapshot(m, get_mask, &q), 0);
  if (!q.mask)
    return 0;
  ck_assert_int_eq(q.mask[q.slot_u], 0);
  ck_assert_int_eq(q.mask[q.slot_p], 0);
  int r = q.mask[q.slot_t];
  free(q.mask);
  ck_assert_int_eq(r, 1); /* a mask is only returned when something is blocked */
  return r;
}

START_TEST(test_taint_mask) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0,
       node("t", "", "8", "4",
            "\"taints\":[{\"key\":\"gpu\",\"value\":\"yes\",\"effect\":\"NoSchedule\"}]"));
  feed(m, "Node", 0, node("u", "", "8", "4", ""));
  feed(m, "Node", 0,
       node("p", "", "8", "4", "\"taints\":[{\"key\":\"x\",\"effect\":\"PreferNoSchedule\"}]"));
  static const struct {
    const char *name, *tols;
    int blocked;
  } cases[] = {
      {"none", "", 1},
      {"exists", "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]", 0},
      {"equal", "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Equal\",\"value\":\"yes\"}]", 0},
      {"noop", "\"tolerations\":[{\"key\":\"gpu\",\"value\":\"yes\",\"effect\":\"NoSchedule\"}]",
       0},
      {"wrongval", "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Equal\",\"value\":\"no\"}]",
       1},
      {"wrongeff",
       "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]", 1},
      {"all", "\"tolerations\":[{\"operator\":\"Exists\"}]", 0},
      {"otherkey", "\"tolerations\":[{\"key\":\"other\",\"operator\":\"Exists\"}]", 1},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    feed(m, "Pod", 0, pod(cases[i].name, "", "g", "1", "1", "Pending", cases[i].tols));
  /* A second pod with the same tolerations shares the interned set. */
  feed(m, "Pod", 0, pod("exists2", "", "g", "1", "1", "Pending", cases[1].tols));
  gb_model_feed_done(m);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_msg(blocked_t(m, cases[i].name) == cases[i].blocked, "case %s", cases[i].name);
  ck_assert_int_eq(blocked_t(m, "exists2"), 0);
  struct mask_q q = {.m = m, .pod = "nosuchpod"};
  ck_assert_int_eq(gb_model_with_snapshot(m, get_mask, &q), GC_ENOTFOUND);
  gb_model_free(m);
}
END_TEST

START_TEST(test_generation_bumps) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  gb_model_feed_done(m);
  uint64_t g0 = look(m, "a").gen;
  feed(m, "Pod", 0, pod("p1", "a", "", "1", "0", "Running", ""));
  uint64_t g1 = look(m, "a").gen;
  ck_assert_uint_gt(g1, g0);
  feed(m, "Node", 0, node("a", "", "8", "4", "\"unschedulable\":true"));
  uint64_t g2 = look(m, "a").gen;
  ck_assert_uint_gt(g2, g1);
  feed(m, "Pod", 1, pod("p1", "a", "", "1", "0", "Running", ""));
  uint64_t g3 = look(m, "a").gen;
  ck_assert_uint_gt(g3, g2);
  /* Updates that change nothing the model keeps (a node's heartbeat, a
   * pod's new resourceVersion) do not bump it: the plan re-decides per
   * generation. */
  feed(m, "Node", 0, node("a", "", "8", "4", "\"unschedulable\":true"));
  ck_assert_uint_eq(look(m, "a").gen, g3);
  feed(m, "Pod", 0, pod("p2", "a", "", "1", "0", "Running", ""));
  uint64_t g4 = look(m, "a").gen;
  ck_assert_uint_gt(g4, g3);
  char *rv2 = strdup(pod("p2", "a", "", "1", "0", "Running", ""));
  char *at = strstr(rv2, "\"resourceVersion\":\"1\"");
  ck_assert_ptr_nonnull(at);
  at[strlen("\"resourceVersion\":\"")] = '2';
  feed(m, "Pod", 0, rv2);
  free(rv2);
  ck_assert_uint_eq(look(m, "a").gen, g4);
  feed(m, "Pod", 0, pod("p2", "a", "", "1", "0", "Failed", ""));
  ck_assert_uint_gt(look(m, "a").gen, g4);
  gb_model_free(m);
}
END_TEST

static int read_pods_free(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  int r = tp_snapshot_resource(s, "pods");
  *(int64_t *)arg = r < 0 ? -1 : tp_snapshot_node_free(s, r, (uint32_t)tp_snapshot_node(s, "a"));
  return 0;
}

START_TEST(test_pods_resource) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0,
       "{\"metadata\":{\"name\":\"a\"},\"status\":{\"allocatable\":{\"cpu\":\"8\",\"pods\":\"110\"}"
       "}}");
  feed(m, "Pod", 0, pod("p1", "a", "", "1", "0", "Running", ""));
  gb_model_feed_done(m);
  int64_t free_pods = 0;
  gb_model_with_snapshot(m, read_pods_free, &free_pods);
  ck_assert_int_eq(free_pods, 109); /* every bound pod takes one "pods", as kube-scheduler counts */
  gb_model_free(m);
}
END_TEST

#define HN(name, tier, members)                                                                    \
  "{\"apiVersion\":\"topology.volcano.sh/v1alpha1\",\"kind\":\"HyperNode\",\"metadata\":"          \
  "{\"name\":\"" name "\"},\"spec\":{\"tier\":" tier ",\"members\":[" members "]},"                \
  "\"status\":{\"nodeCount\":2}}"
#define MN(n) "{\"type\":\"Node\",\"selector\":{\"exactMatch\":{\"name\":\"" n "\"}}}"
#define MH(n) "{\"type\":\"HyperNode\",\"selector\":{\"exactMatch\":{\"name\":\"" n "\"}}}"

struct dom_q {
  const char *dom;
  int64_t gpu;
  uint32_t nodes;
};

static int read_dom(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  struct dom_q *q = arg;
  int64_t d = tp_snapshot_domain(s, q->dom);
  if (d < 0)
    return GC_ENOTFOUND;
  q->gpu = tp_snapshot_domain_free(s, tp_snapshot_resource(s, "nvidia.com/gpu"), (uint32_t)d);
  q->nodes = tp_snapshot_domain_nodes(s, (uint32_t)d);
  return 0;
}

static struct dom_q dom(struct gb_model *m, const char *name, int expect_rc) {
  struct dom_q q = {.dom = name};
  ck_assert_int_eq(gb_model_with_snapshot(m, read_dom, &q), expect_rc);
  return q;
}

START_TEST(test_hypernode_rebuild_coalesced) {
  struct gb_plan *fake = (struct gb_plan *)&bound_calls; /* the stubs never look inside */
  struct gb_model *m = model(NULL, 0, fake);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  feed(m, "Node", 0, node("b", "", "8", "4", ""));
  feed(m, "Node", 0, node("c", "", "8", "4", ""));
  feed(m, "HyperNode", 0, HN("r1", "1", MN("a") "," MN("b")));
  feed(m, "HyperNode", 0, HN("r2", "1", MN("c")));
  feed(m, "Pod", 0, pod("p1", "a", "", "1", "1", "Running", ""));
  gb_model_feed_done(m);
  struct gb_model_stats st;
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.rebuilds, 1);
  ck_assert_uint_eq(st.hypernodes, 2);
  ck_assert_int_eq(dom(m, "r1", 0).gpu, 7);
  ck_assert_int_eq(reapply_calls, 1);
  /* A burst: c moves to r1, a spine appears, r2 goes.  One rebuild. */
  feed(m, "HyperNode", 0, HN("r1", "1", MN("a") "," MN("b") "," MN("c")));
  feed(m, "HyperNode", 0, HN("s1", "2", MH("r1")));
  feed(m, "HyperNode", 1, HN("r2", "1", MN("c")));
  struct dom_q r1 = dom(m, "r1", 0);
  ck_assert_int_eq(r1.gpu, 11);
  ck_assert_uint_eq(r1.nodes, 3);
  ck_assert_int_eq(dom(m, "s1", 0).gpu, 11);
  dom(m, "r2", GC_ENOTFOUND);
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.rebuilds, 2);
  ck_assert_int_eq(reapply_calls, 2);
  /* A status-only change (a new resourceVersion, list items without
   * apiVersion and kind) is no topology change: no rebuild. */
  feed(m, "HyperNode", 0,
       "{\"metadata\":{\"name\":\"s1\",\"resourceVersion\":\"77\"},\"spec\":{\"tier\":2,"
       "\"members\":[" MH("r1") "]},"
                                "\"status\":{\"nodeCount\":3}}");
  dom(m, "s1", 0);
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.rebuilds, 2);
  gb_model_free(m);
}
END_TEST

/* A node that arrives after the HyperNode naming it joins that HyperNode's
 * domain (the member selectors are kept for nodes that come later). */
START_TEST(test_node_after_hypernode) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  feed(m, "HyperNode", 0, HN("r1", "1", MN("a") "," MN("d")));
  feed(m, "HyperNode", 0, HN("s1", "2", MH("r1")));
  gb_model_feed_done(m);
  ck_assert_uint_eq(dom(m, "r1", 0).nodes, 1);
  feed(m, "Node", 0, node("d", "", "8", "4", ""));
  struct dom_q r1 = dom(m, "r1", 0);
  ck_assert_uint_eq(r1.nodes, 2);
  ck_assert_int_eq(r1.gpu, 8);
  ck_assert_int_eq(dom(m, "s1", 0).gpu, 8);
  gb_model_free(m);
}
END_TEST

START_TEST(test_label_levels_move) {
  static const char *const levels[] = {"zone"};
  struct gb_model *m = model(levels, 1, NULL);
  feed(m, "Node", 0, node("a", "\"zone\":\"z1\"", "8", "4", ""));
  feed(m, "Node", 0, node("b", "\"zone\":\"z1\"", "8", "4", ""));
  feed(m, "Pod", 0, pod("p1", "b", "", "1", "1", "Running", ""));
  gb_model_feed_done(m);
  ck_assert_int_eq(dom(m, "z1", 0).gpu, 7);
  /* b is relabelled into a new zone: no rebuild, its pod moves with it. */
  feed(m, "Node", 0, node("b", "\"zone\":\"z2\"", "8", "4", ""));
  ck_assert_int_eq(dom(m, "z1", 0).gpu, 4);
  ck_assert_int_eq(dom(m, "z2", 0).gpu, 3);
  /* A label that is no level is not kept: changing it changes nothing. */
  uint64_t g = look(m, "b").gen;
  feed(m, "Node", 0, node("b", "\"zone\":\"z2\",\"team\":\"x\"", "8", "4", ""));
  ck_assert_uint_eq(look(m, "b").gen, g);
  struct gb_model_stats st;
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.rebuilds, 1);
  gb_model_free(m);
}
END_TEST

START_TEST(test_node_departure_and_return) {
  struct gb_model *m = model(NULL, 0, NULL);
  /* The pod arrives before its node: it waits in a placeholder. */
  feed(m, "Pod", 0, pod("p1", "a", "", "2", "1", "Running", ""));
  gb_model_feed_done(m);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  ck_assert_int_eq(look(m, "a").cpu, 6000);
  feed(m, "Node", 1, node("a", "", "8", "4", ""));
  struct nf f = {.node = "a"};
  ck_assert_int_eq(gb_model_with_snapshot(m, read_node, &f), GC_ENOTFOUND);
  feed(m, "Node", 0, node("a", "", "16", "4", ""));
  ck_assert_int_eq(look(m, "a").cpu, 14000);
  /* Allocatable changes keep the pods charged. */
  feed(m, "Node", 0, node("a", "", "4", "4", ""));
  ck_assert_int_eq(look(m, "a").cpu, 2000);
  gb_model_free(m);
}
END_TEST

struct seen {
  char names[8][32];
  int64_t cpu[8];
  int n;
};

static int collect(void *arg, const struct gb_pod_view *p) {
  struct seen *s = arg;
  snprintf(s->names[s->n], 32, "%s", p->name);
  for (size_t i = 0; i < p->n_req; i++)
    if (!strcmp(p->res[i], "cpu"))
      s->cpu[s->n] = p->val[i];
  ck_assert_str_eq(p->jobset, "js");
  s->n++;
  return 0;
}

START_TEST(test_gangs) {
  struct gb_plan *fake = (struct gb_plan *)&bound_calls;
  struct gb_model *m = model(NULL, 0, fake);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  gb_model_feed_done(m);
  /* pod() derives creationTimestamp seconds from the name length. */
  feed(m, "Pod", 0,
       pod("js-w-0-longer", "", "js", "2", "0", "Pending",
           "\"schedulingGates\":[{\"name\":\"gangbridge.io/placement\"}]"));
  ck_assert_int_eq(gang_calls, 1);
  ck_assert_str_eq(gang_last, "ns/js");
  feed(m, "Pod", 0, pod("js-l", "", "js", "1", "0", "Pending", ""));
  feed(m, "Pod", 0, pod("solo", "", "", "1", "0", "Pending", ""));
  ck_assert_int_eq(gang_calls, 2);
  struct seen s = {0};
  ck_assert_int_eq(gb_model_foreach_gang_pod(m, "ns", "js", collect, &s), 0);
  ck_assert_int_eq(s.n, 2);
  ck_assert_str_eq(s.names[0], "js-l"); /* older */
  ck_assert_str_eq(s.names[1], "js-w-0-longer");
  ck_assert_int_eq(s.cpu[1], 2000);
  /* Binding tells the plan once, with the node's slot. */
  feed(m, "Pod", 0, pod("js-l", "a", "js", "1", "0", "Pending", ""));
  ck_assert_int_eq(bound_calls, 1);
  ck_assert_str_eq(bound_key, "ns/js");
  ck_assert_uint_eq(bound_slot, 0);
  feed(m, "Pod", 0, pod("js-l", "a", "js", "1", "0", "Running", ""));
  ck_assert_int_eq(bound_calls, 1);
  feed(m, "Pod", 1, pod("js-l", "a", "js", "1", "0", "Running", ""));
  ck_assert_int_eq(gang_calls, 5);
  s.n = 0;
  gb_model_foreach_gang_pod(m, "ns", "js", collect, &s);
  ck_assert_int_eq(s.n, 1);
  gb_model_free(m);
}
END_TEST

START_TEST(test_feed_errors) {
  struct gb_model *m = model(NULL, 0, NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_model_feed(m, "Secret", 0, "{}", &d), GC_EINVAL);
  ck_assert_int_eq(gb_model_feed(m, "Pod", 0, "{not json", &d), GC_EINVAL);
  ck_assert_int_eq(gb_model_feed(m, "Pod", 0, "{\"metadata\":{}}", &d), GC_EINVAL);
  ck_assert_int_eq(
      gb_model_feed(m, "Pod", 0,
                    "{\"metadata\":{\"name\":\"x\",\"namespace\":\"n\"},\"spec\":"
                    "{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}]}}",
                    &d),
      GC_EINVAL);
  int found = 0;
  for (size_t i = 0; i < d.n; i++)
    found |= strstr(d.msgs[i], "Pod n/x: spec.containers[0].resources.requests.cpu") != NULL;
  ck_assert_msg(found, "no message names the field");
  gc_diags_destroy(&d);
  gb_model_free(m);
}
END_TEST

START_TEST(test_record_path) {
  struct gb_model *m = model(NULL, 0, NULL);
  feed(m, "Node", 0, node("a", "", "8", "4", ""));
  gb_model_feed_done(m);
  const char *res[] = {"cpu", "example.com/fpga"};
  int64_t val[] = {1500, 1};
  struct gb_pod_view v = {
      .ns = "ns", .name = "r", .node = "a", .phase = 1, .n_req = 2, .res = res, .val = val};
  ck_assert_int_eq(gb_model_feed_pod(m, 0, &v), 0);
  ck_assert_int_eq(look(m, "a").cpu, 6500);
  ck_assert_int_eq(gb_model_feed_pod(m, 1, &v), 0);
  ck_assert_int_eq(look(m, "a").cpu, 8000);
  gb_model_free(m);
}
END_TEST

static int read_slots(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  *(size_t *)arg = tp_snapshot_slot_count(s);
  return 0;
}

START_TEST(test_churn_compacts) {
  struct gb_model *m = model(NULL, 0, NULL);
  gb_model_feed_done(m);
  char name[32];
  for (int i = 0; i < 2000; i++) {
    snprintf(name, sizeof(name), "n%d", i);
    feed(m, "Node", 0, node(name, "", "8", "4", ""));
  }
  feed(m, "Pod", 0, pod("p1", "n1999", "", "2", "1", "Running", ""));
  for (int i = 0; i < 1900; i++) {
    snprintf(name, sizeof(name), "n%d", i);
    feed(m, "Node", 1, node(name, "", "8", "4", ""));
  }
  struct gb_model_stats st;
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.rebuilds, 1);
  size_t slots = 0;
  gb_model_with_snapshot(m, read_slots, &slots); /* the read runs the due rebuild */
  gb_model_stats(m, &st);
  ck_assert_uint_eq(st.rebuilds, 2);
  ck_assert_uint_eq(slots, 100);
  ck_assert_int_eq(look(m, "n1999").cpu, 6000);
  gb_model_free(m);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("model");
  TCase *tc = tcase_create("feed");
  tcase_add_test(tc, test_free_sums_bound_pods);
  tcase_add_test(tc, test_terminal_and_delete_give_back);
  tcase_add_test(tc, test_pod_request_rule);
  tcase_add_test(tc, test_exclusions);
  tcase_add_test(tc, test_taint_mask);
  tcase_add_test(tc, test_generation_bumps);
  tcase_add_test(tc, test_pods_resource);
  tcase_add_test(tc, test_hypernode_rebuild_coalesced);
  tcase_add_test(tc, test_node_after_hypernode);
  tcase_add_test(tc, test_label_levels_move);
  tcase_add_test(tc, test_node_departure_and_return);
  tcase_add_test(tc, test_gangs);
  tcase_add_test(tc, test_feed_errors);
  tcase_add_test(tc, test_record_path);
  tcase_add_test(tc, test_churn_compacts);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
