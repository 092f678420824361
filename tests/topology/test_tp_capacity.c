/* SPDX-License-Identifier: Apache-2.0
 *
 * Exactness of the evaluator's per-node pod capacities against plain
 * integer division: min over requests of floor(max(free, 0) / request),
 * clamped to INT32_MAX, 0 on excluded nodes.  The evaluator computes them
 * with a vector kernel in doubles, falls back to a multiply-and-shift
 * integer path for blocks holding amounts beyond 2^51 and for requests of
 * 2^50 or more, and uses a generic path beyond 16 pod sets; every path is
 * driven here with random amounts of every magnitude (negative, near the
 * 2^51 switch, near INT64_MAX) on 601 nodes (two full blocks and a tail).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

#define N_NODES 601
#define RES_N 4

static const char *RES[RES_N] = {"cpu", "memory", "example.com/big", "pods"};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Requests used below: exact multiples of them are where a quotient
 * computed through a rounded reciprocal lands just under an integer. */
static const int64_t DIVS[] = {3, 7, 37, 1000000007, 12345678901LL, 1000003, 4096};

/* An amount of a random magnitude; huge ones only when allowed. */
static int64_t amount(int huge) {
  switch (next() % (huge ? 9 : 7)) {
  case 0:
    return -(int64_t)(next() % 1000);
  case 1:
    return (int64_t)(next() % 64);
  case 2:
    return (int64_t)(next() % 1000000);
  case 3:
    return (int64_t)(next() % ((uint64_t)1 << 40));
  case 4:
    return ((int64_t)1 << 51) - 1 - (int64_t)(next() % 4096);
  case 5:
    return (int64_t)(next() % ((uint64_t)1 << 51));
  case 6: {
    int64_t d = DIVS[next() % (sizeof(DIVS) / sizeof(DIVS[0]))];
    return (int64_t)(next() % (uint64_t)(((int64_t)1 << 50) / d)) * d;
  }
  case 7:
    return ((int64_t)1 << 51) + (int64_t)(next() % 4096);
  default:
    return INT64_MAX - (int64_t)(next() % 4096);
  }
}

struct fx {
  struct gb_docset *ds;
  struct tp_snapshot *s;
  struct tp_evaluator *ev;
  struct gc_arena *a;
  struct gc_diags d;
};

static void setup(struct fx *f) {
  memset(f, 0, sizeof(*f));
  gc_diags_init(&f->d);
  static char yaml[N_NODES * 160];
  size_t len = 0;
  for (int i = 0; i < N_NODES; i++)
    len += (size_t)snprintf(yaml + len, sizeof(yaml) - len,
                            "apiVersion: v1\nkind: Node\nmetadata: {name: n%03d}\nstatus: "
                            "{allocatable: {cpu: '1', memory: 1Gi, example.com/big: '1', "
                            "pods: '1'}}\n---\n",
                            i);
  ck_assert_uint_lt(len, sizeof(yaml) - 1);
  f->ds = gb_docset_new(NULL);
  ck_assert_int_eq(gb_manifest_load_buffer(f->ds, "c.yaml", yaml, len, &f->d), 0);
  static const struct gc_value *docs[N_NODES];
  for (size_t i = 0; i < f->ds->n; i++)
    docs[i] = f->ds->docs[i].root;
  ck_assert_int_eq(tp_snapshot_build(docs, NULL, f->ds->n, NULL, &f->s, &f->d), 0);
  f->ev = tp_evaluator_new();
  f->a = gc_arena_new(0);
  ck_assert_ptr_nonnull(f->ev);
  /* Node names are zero-padded, so slot i holds n<i>.  Huge amounts only in
   * the second block of 256 nodes: the other blocks stay on the vector
   * path. */
  for (int i = 0; i < N_NODES; i++) {
    char name[16];
    snprintf(name, sizeof(name), "n%03d", i);
    int huge = i >= 256 && i < 512;
    for (int r = 0; r < RES_N; r++)
      ck_assert_int_eq(tp_snapshot_set_free(f->s, name, RES[r], amount(huge)), 0);
    if (i % 97 == 5)
      ck_assert_int_eq(tp_snapshot_set_excluded(f->s, name, "test"), 0);
  }
}

static void teardown(struct fx *f) {
  tp_evaluator_free(f->ev);
  tp_snapshot_free(f->s);
  gb_docset_free(f->ds);
  gc_arena_free(f->a);
  gc_diags_destroy(&f->d);
}

/* Evaluates g and compares every set's capacity on every node. */
static void check_gang(struct fx *f, const struct tp_gang *g) {
  struct tp_eval_opts o = {0};
  o.policy.mode = TP_MODE_SOFT;
  o.search_budget = -1;
  struct tp_result res;
  gc_arena_reset(f->a);
  ck_assert_int_eq(tp_place_evaluate(f->ev, f->s, g, &o, f->a, &res, &f->d), 0);
  int pods_r = tp_snapshot_resource(f->s, "pods");
  for (size_t k = 0; k < g->n_sets; k++)
    for (uint32_t slot = 0; slot < f->s->n_slots; slot++) {
      int64_t want = INT32_MAX;
      for (size_t j = 0; j <= g->sets[k].n_req; j++) {
        int r = j < g->sets[k].n_req ? tp_snapshot_resource(f->s, g->sets[k].res[j]) : pods_r;
        int64_t v = j < g->sets[k].n_req ? g->sets[k].val[j] : 1;
        int64_t fr = f->s->free[r][slot];
        int64_t q = (fr < 0 ? 0 : fr) / v;
        if (q < want)
          want = q;
      }
      if (f->s->state[slot] != TP_NODE_OK)
        want = 0;
      int64_t got = tp_evaluator_node_pods(f->ev, (uint32_t)k, slot);
      ck_assert_msg(got == want, "set %zu node %s: capacity %lld, want %lld (free %lld %lld %lld)",
                    k, f->s->node_name[slot], (long long)got, (long long)want,
                    (long long)f->s->free[0][slot], (long long)f->s->free[1][slot],
                    (long long)f->s->free[2][slot]);
    }
}

static const char *R_CPU[] = {"cpu"};
static const char *R_CM[] = {"cpu", "memory"};
static const char *R_MB[] = {"memory", "example.com/big"};
static const char *R_B[] = {"example.com/big"};
static const char *R_ALL[] = {"cpu", "memory", "example.com/big"};

START_TEST(vector_path_and_fallback_blocks) {
  struct fx f;
  setup(&f);
  int64_t v1[] = {1}, v2[] = {3, (int64_t)1 << 30}, v3[] = {1000000007, 1},
          v4[] = {((int64_t)1 << 49) + 1}, v5[] = {7, 4096, 12345678901LL};
  struct tp_podset sets[] = {{"one", 1, 1, R_CPU, v1},       {"pow2", 1, 2, R_CM, v2},
                             {"prime", 1, 2, R_MB, v3},      {"near-limit", 1, 1, R_B, v4},
                             {"mixed", 1, 3, R_ALL, v5}};
  for (int seed = 0; seed < 20; seed++) {
    for (size_t k = 0; k < 5; k++) {
      struct tp_gang g = {0};
      g.sets = &sets[k];
      g.n_sets = 1;
      check_gang(&f, &g);
    }
    struct tp_gang g = {0};
    g.sets = sets;
    g.n_sets = 5;
    check_gang(&f, &g);
    teardown(&f);
    setup(&f);
  }
  teardown(&f);
}
END_TEST

START_TEST(integer_path_for_huge_requests) {
  struct fx f;
  setup(&f);
  int64_t v1[] = {((int64_t)1 << 55) + 12345}, v2[] = {5, ((int64_t)1 << 50)};
  struct tp_podset sets[] = {{"huge", 1, 1, R_B, v1}, {"edge", 1, 2, R_MB, v2}};
  struct tp_gang g = {0};
  g.sets = sets;
  g.n_sets = 2;
  check_gang(&f, &g);
  teardown(&f);
}
END_TEST

START_TEST(generic_path_beyond_sixteen_sets) {
  struct fx f;
  setup(&f);
  struct tp_podset sets[20];
  int64_t vals[20][3];
  for (int k = 0; k < 20; k++) {
    vals[k][0] = 1 + k * 37;
    vals[k][1] = ((int64_t)1 << (k + 10)) + k;
    vals[k][2] = 1 + (int64_t)k * k * 1000003;
    sets[k] = (struct tp_podset){"s", 1, 3, R_ALL, vals[k]};
  }
  struct tp_gang g = {0};
  g.sets = sets;
  g.n_sets = 20;
  check_gang(&f, &g);
  teardown(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("tp_capacity");
  TCase *t = tcase_create("core");
  tcase_set_timeout(t, 120);
  tcase_add_test(t, vector_path_and_fallback_blocks);
  tcase_add_test(t, integer_path_for_huge_requests);
  tcase_add_test(t, generic_path_beyond_sixteen_sets);
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
