/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_place: per-node pod capacities, bottom-up domain sums, tier search,
 * node assignment and the "why not" explanations.
 */
#include "tp_place.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REQ (TP_MAX_RESOURCES + 1)
#define MAX_REASONS 64
#define EXACT_MAX_CELLS 1024 /* pod sets x nodes explored by the exact search (its depth) */

struct rec {
  uint32_t slot;
  uint32_t set;
  int64_t pods;
};

struct keyed {
  int64_t key;
  uint32_t pos;
};

struct dcand {
  uint32_t d;
  int64_t key;
  const char *name;
};

/* Division by a request value v >= 1 as a multiply and a shift: with
 * l = ceil(log2 v) and m = ceil(2^(63+l) / v), floor(n / v) equals
 * floor(n * m / 2^(63+l)) for every 0 <= n < 2^63 (Granlund and
 * Montgomery, "Division by invariant integers using multiplication",
 * theorem 4.2: m * v lies in [2^(63+l), 2^(63+l) + 2^l]).  m < 2^64 holds
 * because v > 2^(l-1); v = 1 gives m = 2^63, l = 0. */
struct divisor {
  uint64_t m;
  unsigned sh; /* 63 + l */
};

static struct divisor divisor_of(int64_t v) {
  unsigned l = 0;
  while (l < 63 && ((uint64_t)1 << l) < (uint64_t)v)
    l++;
  unsigned __int128 num = (unsigned __int128)1 << (63 + l);
  struct divisor d = {(uint64_t)((num + (uint64_t)v - 1) / (uint64_t)v), 63 + l};
  return d;
}

/* min(floor(max(f, 0) / v), INT32_MAX) without a division or a branch. */
static inline int64_t cap_div(int64_t f, struct divisor d) {
  uint64_t n = f < 0 ? 0 : (uint64_t)f;
  uint64_t q = (uint64_t)(((unsigned __int128)n * d.m) >> d.sh);
  return q > INT32_MAX ? INT32_MAX : (int64_t)q;
}

struct tp_evaluator {
  int32_t *cap; /* cap[set * n_slots + slot] */
  size_t cap_n;
  int64_t *dom_count; /* dom_count[d * n_sets + set]: a domain's counts share a cache line */
  size_t dom_count_n;
  uint32_t *lorder, *lstart, *cursor;
  size_t lorder_n, lstart_n, cursor_n;
  uint32_t *rank; /* rank[slot]: the node's position in name order (with lorder) */
  size_t rank_n;
  uint64_t *rk; /* (rank << 32 | slot) keys of a small domain's candidates */
  size_t rk_n;
  uint64_t lorder_version; /* the snapshot layout lorder was built for; 0 none */
  uint32_t *cand;
  size_t cand_n;
  int64_t *cc, *take, *sol;
  size_t cc_n, take_n, sol_n;
  uint32_t *pick; /* place_one's nodes, parallel to take */
  size_t pick_n, n_pick;
  uint32_t *sorted, *bucket;
  size_t sorted_n, bucket_n;
  struct keyed *keyed;
  size_t keyed_n;
  int64_t *wf;
  size_t wf_n;
  int32_t *tpos; /* candidate -> touched index, -1 untouched */
  size_t tpos_n;
  uint32_t *tix; /* touched candidates */
  size_t tix_n;
  int64_t *twf; /* their working free, n_used per touched node */
  size_t twf_n;
  double *qbuf; /* capacity kernel scratch: (FAST_OPS + pod sets) x BLK */
  struct rec *rec;
  size_t rec_len, rec_n;
  struct dcand *cands;
  size_t cands_n;
  /* The blocked mask of this evaluation (borrowed) and what it takes from
   * each domain: bsum[d * n_used + u] is the free amount of used resource u
   * (counted as in dom_free) on blocked candidate nodes below d, bcount[d]
   * their number. */
  const uint8_t *blocked;
  int64_t *bsum;
  size_t bsum_n;
  uint32_t *bcount;
  size_t bcount_n;

  /* Per evaluation. */
  size_t n_sets, n_slots, n_dom;
  int valid;
  /* Each pod set's requests: resource index, value per pod, divisor for
   * free / value, and position in `used`; n_req[set] of them. */
  int req_res[TP_MAX_PODSETS][MAX_REQ];
  int64_t req_val[TP_MAX_PODSETS][MAX_REQ];
  struct divisor req_div[TP_MAX_PODSETS][MAX_REQ];
  int req_used[TP_MAX_PODSETS][MAX_REQ]; /* index into used */
  size_t n_req[TP_MAX_PODSETS];
  const char *missing[TP_MAX_PODSETS];
  int64_t need[TP_MAX_PODSETS];
  uint32_t order[TP_MAX_PODSETS];
  int used[TP_MAX_RESOURCES]; /* the resources any pod set requests */
  size_t n_used;
  int64_t budget;
  int exhausted;
};

static int ensure(void *pp, size_t *cap, size_t n, size_t elem) {
  void **p = pp;
  if (n <= *cap && *p)
    return GC_OK;
  size_t nc = *cap ? *cap : 64;
  while (nc < n)
    nc *= 2;
  void *q = realloc(*p, nc * elem);
  if (!q)
    return GC_ENOMEM;
  *p = q;
  *cap = nc;
  return GC_OK;
}

struct tp_evaluator *tp_evaluator_new(void) { return calloc(1, sizeof(struct tp_evaluator)); }

void tp_evaluator_free(struct tp_evaluator *ev) {
  if (!ev)
    return;
  free(ev->cap);
  free(ev->dom_count);
  free(ev->lorder);
  free(ev->lstart);
  free(ev->cursor);
  free(ev->rank);
  free(ev->rk);
  free(ev->cand);
  free(ev->cc);
  free(ev->take);
  free(ev->pick);
  free(ev->sol);
  free(ev->sorted);
  free(ev->bucket);
  free(ev->keyed);
  free(ev->wf);
  free(ev->qbuf);
  free(ev->tpos);
  free(ev->tix);
  free(ev->twf);
  free(ev->rec);
  free(ev->cands);
  free(ev->bsum);
  free(ev->bcount);
  free(ev);
}

const char *tp_profile_name(enum tp_profile p) {
  return p == TP_PROFILE_SPREAD ? "spread" : "bestfit";
}

int64_t tp_evaluator_domain_pods(const struct tp_evaluator *ev, uint32_t d) {
  if (!ev || !ev->valid || d >= ev->n_dom)
    return -1;
  int64_t t = 0;
  for (size_t k = 0; k < ev->n_sets; k++)
    t += ev->dom_count[(size_t)d * ev->n_sets + k];
  return t;
}

int64_t tp_evaluator_node_pods(const struct tp_evaluator *ev, uint32_t set, uint32_t slot) {
  if (!ev || !ev->valid || set >= ev->n_sets || slot >= ev->n_slots)
    return -1;
  return ev->cap[(size_t)set * ev->n_slots + slot];
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* ------------------------------------------------------------------ */
/* Capacities and domain sums                                           */

/* The capacity kernel works on blocks of BLK nodes in vectors of VL
 * doubles (GCC/Clang vector extensions: SSE2 on plain x86-64, two
 * registers per vector).  For 0 <= x < 2^51 and 1 <= v < 2^50 the quotient
 * floor(x / v) is computed exactly in doubles: t = floor(x * (1/v)) is
 * within one of the truth (relative error 2^-52 of a value < 2^51), and
 * r = x - t * v is exact (an integer product below 2^53), so one step on
 * the sign of r and on r >= v corrects it.  Integers convert through the
 * 2^52 + 2^51 bias trick, which needs only 64-bit adds. */
enum { BLK = 256, VL = 4, FAST_OPS = 16 };
typedef double vdbl __attribute__((vector_size(VL * sizeof(double))));
typedef int64_t vi64 __attribute__((vector_size(VL * sizeof(int64_t))));
typedef uint64_t vu64 __attribute__((vector_size(VL * sizeof(uint64_t))));

/* m ? a : b per lane (a macro: vectors wider than SSE may not cross a
 * function boundary in the baseline ABI). */
#define vsel(m, a, b) ((vdbl)(((vi64)(a) & (m)) | ((vi64)(b) & ~(m))))

/* x86-64: the kernel is also compiled for AVX2 (four lanes in one
 * register) and the loader picks the variant the CPU runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(GB_NO_TARGET_CLONES)
#define KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define KERNEL_CLONES
#endif

/* Capacity of one pod set on nodes [i0, i0 + bn): c[i] = min over the
 * set's ops of floor(max(x, 0) / v), clamped to INT32_MAX, computed in
 * registers (the rows of a block stay in L1 across sets).  Returns 1 when a
 * free amount is outside (-2^51, 2^51): the caller then redoes the block on
 * the integer path. */
KERNEL_CLONES
static int setcap_block(const int64_t *const *orow, const double *vd, const double *inv,
                        const int *exact_inv, const uint8_t *ops, size_t nops, size_t i0,
                        size_t bn, double *c) {
  const double bias_d = 6755399441055744.0; /* 2^52 + 2^51 */
  const uint64_t bias_i = UINT64_C(0x4338000000000000);
  const double two52 = 4503599627370496.0;
  const vdbl one = 1.0 - (vdbl){0}, zero = {0}, cap = 2147483647.0 - (vdbl){0};
  vu64 oob = {0};
  for (size_t i = 0; i < bn; i += VL) {
    vdbl b = cap;
    for (size_t j = 0; j < nops; j++) {
      size_t o = ops[j];
      vu64 xi; /* unsigned: the additions below wrap by design */
      memcpy(&xi, orow[o] + i0 + i, sizeof(xi));
      /* In range iff x + 2^51 lies in [0, 2^52). */
      oob |= xi + (UINT64_C(1) << 51);
      vu64 bx = xi + bias_i;
      vdbl x;
      memcpy(&x, &bx, sizeof(x));
      x -= bias_d;
      x = vsel(x > zero, x, zero);
      vdbl t = x;
      if (vd[o] != 1.0) {
        vdbl y = x * inv[o];
        t = (y + two52) - two52; /* round to nearest */
        t = vsel(t > y, t - one, t);
        if (!exact_inv[o]) {
          vdbl r = x - t * vd[o];
          t = vsel(r < zero, t - one, t);
          t = vsel(r >= vd[o], t + one, t);
        }
      }
      b = vsel(t < b, t, b);
    }
    memcpy(c + i, &b, sizeof(b));
  }
  int bad = 0;
  for (int l = 0; l < VL; l++)
    bad |= (oob[l] >> 52) != 0;
  return bad;
}

/* c[i] = min over the set's ops of q[op * BLK + i]. */
static void set_min_block(const double *q, const uint8_t *ops, size_t nops, size_t bn,
                          double *c) {
  /* Whole vectors only: the rows hold bn values, and the lanes past bn of a
   * last partial vector were never written (the scalar tail does those). */
  for (size_t i = 0; i + VL <= bn; i += VL) {
    vdbl b = 2147483647.0 - (vdbl){0};
    for (size_t j = 0; j < nops; j++) {
      vdbl x;
      memcpy(&x, q + (size_t)ops[j] * BLK + i, sizeof(x));
      b = vsel(x < b, x, b);
    }
    memcpy(c + i, &b, sizeof(b));
  }
  for (size_t i = bn - bn % VL; i < bn; i++) {
    double b = 2147483647.0;
    for (size_t j = 0; j < nops; j++)
      b = q[(size_t)ops[j] * BLK + i] < b ? q[(size_t)ops[j] * BLK + i] : b;
    c[i] = b;
  }
}

/* Per-node pod capacity of every pod set, in one pass over the nodes: each
 * node's requested free amounts are loaded once and every set's capacity
 * computed from them (a multiply and a shift per request, no branch on the
 * data; excluded and dead nodes are masked to 0).  Leaf counts are added on
 * the way, then one pass over the domains, children before parents, adds
 * every domain's counts to its parent. */
static void capacity_pass(struct tp_evaluator *ev, const struct tp_snapshot *s) {
  size_t n = ev->n_slots, S = ev->n_sets, n_used = ev->n_used;
  int64_t *cands = ev->dom_count;
  memset(cands, 0, ev->n_dom * S * sizeof(*cands));
  /* Sets that request a resource no node offers hold nowhere. */
  uint32_t live[TP_MAX_PODSETS];
  size_t nl = 0;
  for (size_t k = 0; k < S; k++) {
    if (ev->missing[k])
      memset(ev->cap + k * n, 0, n * sizeof(*ev->cap));
    else
      live[nl++] = (uint32_t)k;
  }
  if (!nl)
    return;
  const int64_t *rows[TP_MAX_RESOURCES];
  for (size_t u = 0; u < n_used; u++)
    rows[u] = s->free[ev->used[u]];
  const uint8_t *st = s->state, *bm = ev->blocked; /* blocked: as if excluded */
  const uint32_t *leaf = s->leaf;
  /* Distinct (resource, request) quotients, each computed once per node
   * and shared by the sets that request the same amount. */
  const int64_t *orow[FAST_OPS];
  uint64_t om[FAST_OPS];
  unsigned osh[FAST_OPS];
  int64_t oid[FAST_OPS]; /* all ones when the request is 1 (no division) */
  int64_t ov[FAST_OPS];  /* the request */
  uint8_t sop[FAST_OPS][FAST_OPS];
  size_t nsop[FAST_OPS], nops = 0;
  int fast = nl <= FAST_OPS;
  for (size_t q = 0; q < nl && fast; q++) {
    size_t k = live[q];
    nsop[q] = 0;
    for (size_t j = 0; j < ev->n_req[k] && fast; j++) {
      const int64_t *row = rows[ev->req_used[k][j]];
      struct divisor req_div = ev->req_div[k][j];
      size_t o;
      for (o = 0; o < nops && !(orow[o] == row && ov[o] == ev->req_val[k][j]); o++)
        ;
      if (o == nops) {
        if (nops == FAST_OPS || nsop[q] == FAST_OPS) {
          fast = 0;
          break;
        }
        orow[o] = row;
        om[o] = req_div.m;
        ov[o] = ev->req_val[k][j];
        /* floor(n m / 2^(63+l)) = floor(n m / 2^64) >> (l - 1) for l >= 1. */
        osh[o] = req_div.sh - 64;
        oid[o] = req_div.sh == 63 ? -1 : 0;
        if (req_div.sh == 63)
          osh[o] = 0;
        nops++;
      }
      if (nsop[q] == FAST_OPS) {
        fast = 0;
        break;
      }
      sop[q][nsop[q]++] = (uint8_t)o;
    }
  }
  if (fast) {
    int32_t *crow[FAST_OPS];
    for (size_t q = 0; q < nl; q++)
      crow[q] = ev->cap + (size_t)live[q] * n;
    double vd[FAST_OPS], inv[FAST_OPS];
    int exact_inv[FAST_OPS];
    for (size_t o = 0; o < nops; o++) {
      vd[o] = (double)ov[o];
      inv[o] = 1.0 / vd[o];
      exact_inv[o] = (ov[o] & (ov[o] - 1)) == 0; /* 1/2^k is exact: no correction */
    }
    int simd_ok = 1;
    for (size_t o = 0; o < nops; o++)
      simd_ok &= ov[o] < ((int64_t)1 << 50);
    for (size_t i0 = 0; i0 < n; i0 += BLK) {
      size_t bn = n - i0 < BLK ? n - i0 : BLK;
      int bad = !simd_ok || bn % VL;
      for (size_t q = 0; q < nl && !bad; q++)
        bad = setcap_block(orow, vd, inv, exact_inv, sop[q], nsop[q], i0, bn,
                           ev->qbuf + (FAST_OPS + q) * BLK);
      if (bad) {
        /* Free amounts beyond 2^51 (or a short tail): exact integer path. */
        for (size_t o = 0; o < nops; o++)
          for (size_t i = 0; i < bn; i++) {
            int64_t f = orow[o][i0 + i];
            uint64_t x = f < 0 ? 0 : (uint64_t)f;
            uint64_t h = (uint64_t)(((unsigned __int128)x * om[o]) >> 64) >> osh[o];
            uint64_t v = (x & (uint64_t)oid[o]) | (h & ~(uint64_t)oid[o]);
            ev->qbuf[o * BLK + i] = v > INT32_MAX ? INT32_MAX : (double)v;
          }
        for (size_t q = 0; q < nl; q++)
          set_min_block(ev->qbuf, sop[q], nsop[q], bn, ev->qbuf + (FAST_OPS + q) * BLK);
      }
      /* One pass stores every set's capacity and adds it to the leaf. */
      const double *cb = ev->qbuf + FAST_OPS * BLK;
      for (size_t i = 0; i < bn; i++) {
        int64_t ok = -(int64_t)((st[i0 + i] == TP_NODE_OK) & !(bm && bm[i0 + i]));
        int64_t *dl = cands + (size_t)leaf[i0 + i] * S;
        for (size_t q = 0; q < nl; q++) {
          int64_t b = (int64_t)cb[q * BLK + i] & ok;
          crow[q][i0 + i] = (int32_t)b;
          dl[live[q]] += b;
        }
      }
    }
  } else {
    int64_t f[TP_MAX_RESOURCES];
    for (size_t i = 0; i < n; i++) {
      for (size_t u = 0; u < n_used; u++)
        f[u] = rows[u][i];
      int64_t ok = (st[i] == TP_NODE_OK) & !(bm && bm[i]);
      int64_t *dl = cands + (size_t)leaf[i] * S;
      for (size_t q = 0; q < nl; q++) {
        size_t k = live[q];
        int64_t b = INT32_MAX;
        for (size_t j = 0; j < ev->n_req[k]; j++) {
          int64_t v = cap_div(f[ev->req_used[k][j]], ev->req_div[k][j]);
          b = v < b ? v : b;
        }
        b &= -ok;
        ev->cap[k * n + i] = (int32_t)b;
        dl[k] += b;
      }
    }
  }
  for (size_t i = 0; i < ev->n_dom; i++) {
    uint32_t d = s->dom_post[i];
    int32_t p = s->dom_parent[d];
    if (p < 0)
      continue;
    for (size_t k = 0; k < S; k++)
      cands[(size_t)p * S + k] += cands[(size_t)d * S + k];
  }
}

/* The free sum of used resource u over the candidate nodes of domain d for
 * this gang: the snapshot's sum less what blocked nodes hold. */
static int64_t dom_free_of(const struct tp_evaluator *ev, const struct tp_snapshot *s, size_t u,
                           uint32_t d) {
  int64_t f = s->dom_free[ev->used[u]][d];
  if (ev->blocked)
    f -= ev->bsum[(size_t)d * ev->n_used + u];
  return f;
}

/* With a blocked mask, sums what the blocked candidate nodes hold per
 * domain (leaves first, then children into parents), so that pruning and
 * reasons see the same candidates as the capacities.  One pass over the
 * nodes, only when a mask is given. */
static int blocked_pass(struct tp_evaluator *ev, const struct tp_snapshot *s) {
  if (!ev->blocked)
    return GC_OK;
  size_t nd = ev->n_dom, nu = ev->n_used ? ev->n_used : 1;
  if (ensure(&ev->bsum, &ev->bsum_n, nd * nu, sizeof(int64_t)) ||
      ensure(&ev->bcount, &ev->bcount_n, nd, sizeof(uint32_t)))
    return GC_ENOMEM;
  memset(ev->bsum, 0, nd * nu * sizeof(int64_t));
  memset(ev->bcount, 0, nd * sizeof(uint32_t));
  for (size_t i = 0; i < s->n_slots; i++) {
    if (!ev->blocked[i] || s->state[i] != TP_NODE_OK)
      continue;
    uint32_t l = s->leaf[i];
    ev->bcount[l]++;
    for (size_t u = 0; u < ev->n_used; u++) {
      int64_t f = s->free[ev->used[u]][i];
      ev->bsum[(size_t)l * nu + u] += f > 0 ? f : 0;
    }
  }
  for (size_t i = 0; i < nd; i++) {
    uint32_t d = s->dom_post[i];
    int32_t p = s->dom_parent[d];
    if (p < 0)
      continue;
    ev->bcount[p] += ev->bcount[d];
    for (size_t u = 0; u < ev->n_used; u++)
      ev->bsum[(size_t)p * nu + u] += ev->bsum[(size_t)d * nu + u];
  }
  return GC_OK;
}

/* Live slots ordered by their leaf's Euler-tour position, then by name: the
 * nodes of domain d are lorder[lstart[tin[d]] .. lstart[tout[d] + 1]). */
static int build_lorder(struct tp_evaluator *ev, const struct tp_snapshot *s) {
  /* The order depends only on the layout: kept across evaluations. */
  if (ev->lorder_version == s->layout_version && ev->lorder_version != 0)
    return GC_OK;
  size_t nd = ev->n_dom;
  if (ensure(&ev->lorder, &ev->lorder_n, s->n_alive + 1, sizeof(uint32_t)) ||
      ensure(&ev->lstart, &ev->lstart_n, nd + 1, sizeof(uint32_t)) ||
      ensure(&ev->cursor, &ev->cursor_n, nd + 1, sizeof(uint32_t)) ||
      ensure(&ev->rank, &ev->rank_n, s->n_slots + 1, sizeof(uint32_t)))
    return GC_ENOMEM;
  for (size_t i = 0; i < s->n_alive; i++)
    ev->rank[s->by_name[i]] = (uint32_t)i;
  memset(ev->lstart, 0, (nd + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < s->n_alive; i++)
    ev->lstart[s->dom_tin[s->leaf[s->by_name[i]]] + 1]++;
  for (size_t i = 0; i < nd; i++)
    ev->lstart[i + 1] += ev->lstart[i];
  memcpy(ev->cursor, ev->lstart, (nd + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < s->n_alive; i++) {
    uint32_t slot = s->by_name[i];
    ev->lorder[ev->cursor[s->dom_tin[s->leaf[slot]]]++] = slot;
  }
  ev->lorder_version = s->layout_version;
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Placing one pod set on a list of nodes                               */

static int cmp_keyed_desc(const void *a, const void *b) {
  const struct keyed *x = a, *y = b;
  if (x->key != y->key)
    return x->key > y->key ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Sorts the indices of nodes with c > 0 by min(c, P) descending, stable.
 * Returns how many there are (in ev->sorted). */
static int sort_desc(struct tp_evaluator *ev, size_t k, const int64_t *c, int64_t P, int64_t maxc,
                     size_t *m) {
  int64_t B = maxc < P ? maxc : P;
  if (ensure(&ev->sorted, &ev->sorted_n, k + 1, sizeof(uint32_t)))
    return GC_ENOMEM;
  size_t nz = 0;
  if (B <= (int64_t)(4 * k + 1024)) {
    if (ensure(&ev->bucket, &ev->bucket_n, (size_t)B + 2, sizeof(uint32_t)))
      return GC_ENOMEM;
    memset(ev->bucket, 0, ((size_t)B + 2) * sizeof(uint32_t));
    /* Bucket b holds key B - b, so ascending buckets are descending keys;
     * zero capacities land in the last bucket and are cut off.  No
     * data-dependent branches: capacities are random-looking. */
    for (size_t i = 0; i < k; i++) {
      int64_t key = c[i] < P ? c[i] : P;
      ev->bucket[B - key + 1]++;
    }
    for (int64_t b = 0; b <= B; b++)
      ev->bucket[b + 1] += ev->bucket[b];
    nz = ev->bucket[B];
    for (size_t i = 0; i < k; i++) {
      int64_t key = c[i] < P ? c[i] : P;
      ev->sorted[ev->bucket[B - key]++] = (uint32_t)i;
    }
  } else {
    if (ensure(&ev->keyed, &ev->keyed_n, k + 1, sizeof(struct keyed)))
      return GC_ENOMEM;
    for (size_t i = 0; i < k; i++)
      if (c[i] > 0)
        ev->keyed[nz++] = (struct keyed){c[i] < P ? c[i] : P, (uint32_t)i};
    qsort(ev->keyed, nz, sizeof(struct keyed), cmp_keyed_desc);
    for (size_t i = 0; i < nz; i++)
      ev->sorted[i] = ev->keyed[i].pos;
  }
  *m = nz;
  return GC_OK;
}

static inline int64_t key_of(const int64_t *c, uint32_t i, int64_t P) {
  return c[i] < P ? c[i] : P;
}

/* Places P pods on k nodes with capacities c[]: the nodes used are
 * ev->pick[0 .. ev->n_pick) (indices into c) with ev->take[j] pods each.
 * BestFit: whole nodes largest first, then the remainder on the tightest
 * node that holds it (fewest nodes, exact last fit).  Spread: the lowest
 * even level, extra pods to the largest nodes.  Returns 1 when all P were
 * placed, 0 when they do not fit, or GC_ENOMEM. */
static int place_one(struct tp_evaluator *ev, size_t k, const int64_t *c, int64_t P,
                     enum tp_profile prof) {
  /* Capacities are at most INT32_MAX on at most TP_MAX_NODES nodes: the
   * total fits an int64 without saturation (and the loop vectorises). */
  int64_t total = 0, maxc = 0;
  ev->n_pick = 0;
  for (size_t i = 0; i < k; i++) {
    total += c[i];
    maxc = c[i] > maxc ? c[i] : maxc;
  }
  if (P <= 0)
    return 1;
  if (total < P)
    return 0;
  size_t m;
  if (sort_desc(ev, k, c, P, maxc, &m))
    return GC_ENOMEM;
  const uint32_t *o = ev->sorted;
  if (prof == TP_PROFILE_BESTFIT) {
    int64_t rem = P;
    for (size_t j = 0; j < m && rem > 0; j++) {
      uint32_t i = o[j];
      if (c[i] < rem) {
        ev->pick[ev->n_pick] = i;
        ev->take[ev->n_pick++] = c[i];
        rem -= c[i];
        continue;
      }
      /* Keys (min(c, P)) do not increase along o, so the nodes that hold
       * the remainder are o[j .. e]; the tightest is the first of the
       * smallest key, unless every key is the clamp P (then scan). */
      size_t lo = j, hi = m;
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_of(c, o[mid], P) >= rem)
          lo = mid + 1;
        else
          hi = mid;
      }
      size_t e = lo - 1;
      int64_t kmin = key_of(c, o[e], P);
      uint32_t best = i;
      if (kmin < P) {
        lo = j;
        hi = e;
        while (lo < hi) {
          size_t mid = lo + (hi - lo) / 2;
          if (key_of(c, o[mid], P) > kmin)
            lo = mid + 1;
          else
            hi = mid;
        }
        best = o[lo];
      } else {
        /* Every key is the clamp P, so nothing was taken yet (j == 0,
         * rem == P) and o[0 .. e] are all nodes with c >= P, in index order
         * (the sort is stable).  The tightest is the first smallest c: a
         * sequential scan finds it without gathering through o. */
        int64_t bc = c[best];
        for (size_t ii = 0; ii < k; ii++) {
          int take = (c[ii] >= rem) & (c[ii] < bc);
          bc = take ? c[ii] : bc;
          best = take ? (uint32_t)ii : best;
        }
      }
      ev->pick[ev->n_pick] = best;
      ev->take[ev->n_pick++] = rem;
      rem = 0;
    }
    return rem == 0;
  }
  int64_t lo = 1, hi = maxc < P ? maxc : P;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2, sum = 0;
    for (size_t j = 0; j < m && sum < P; j++)
      sum += c[o[j]] < mid ? c[o[j]] : mid;
    if (sum >= P)
      hi = mid;
    else
      lo = mid + 1;
  }
  int64_t placed = 0;
  for (size_t j = 0; j < m; j++) {
    uint32_t i = o[j];
    ev->take[j] = c[i] < lo - 1 ? c[i] : lo - 1;
    placed += ev->take[j];
  }
  for (size_t j = 0; j < m && placed < P; j++)
    if (c[o[j]] >= lo) {
      ev->take[j]++;
      placed++;
    }
  for (size_t j = 0; j < m; j++)
    if (ev->take[j] > 0) {
      ev->pick[ev->n_pick] = o[j];
      ev->take[ev->n_pick++] = ev->take[j];
    }
  return placed == P;
}

static int rec_push(struct tp_evaluator *ev, uint32_t slot, uint32_t set, int64_t pods) {
  if (ensure(&ev->rec, &ev->rec_len, ev->rec_n + 1, sizeof(struct rec)))
    return GC_ENOMEM;
  ev->rec[ev->rec_n++] = (struct rec){slot, set, pods};
  return GC_OK;
}

/* Collects the candidate nodes of domain d into ev->cand; with a pod set
 * given, only nodes where it fits at least once.  Returns k. */
static size_t collect(struct tp_evaluator *ev, const struct tp_snapshot *s, uint32_t d,
                      int64_t set) {
  uint32_t lo = ev->lstart[s->dom_tin[d]], hi = ev->lstart[s->dom_tout[d] + 1];
  size_t k = 0;
  for (uint32_t j = lo; j < hi; j++) {
    uint32_t slot = ev->lorder[j];
    if (s->state[slot] != TP_NODE_OK || (ev->blocked && ev->blocked[slot]))
      continue;
    if (set >= 0 && ev->cap[(size_t)set * ev->n_slots + slot] <= 0)
      continue;
    ev->cand[k++] = slot;
  }
  return k;
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static int place_homog(struct tp_evaluator *ev, const struct tp_snapshot *s, uint32_t d,
                       enum tp_profile prof) {
  /* Candidates in name order (ties in place_one go to the first name).  A
   * small domain's nodes come from the cached leaf order and are sorted by
   * name rank; a large one is a filtered scan of every node in name order;
   * the whole cluster needs no membership test. */
  size_t k = 0;
  uint32_t lo = s->dom_tin[d], hi = s->dom_tout[d];
  int rc = build_lorder(ev, s);
  if (rc)
    return rc;
  uint32_t a = ev->lstart[lo], b = ev->lstart[hi + 1];
  if (d == 0) {
    for (size_t i = 0; i < s->n_alive; i++) {
      uint32_t slot = s->by_name[i];
      ev->cand[k] = slot; /* kept only when it counts: no branch */
      k += (size_t)(ev->cap[slot] > 0);
    }
  } else if ((size_t)(b - a) * 8 <= s->n_alive) {
    if (ensure(&ev->rk, &ev->rk_n, (size_t)(b - a) + 1, sizeof(uint64_t)))
      return GC_ENOMEM;
    for (uint32_t j = a; j < b; j++) {
      uint32_t slot = ev->lorder[j];
      ev->rk[k] = (uint64_t)ev->rank[slot] << 32 | slot;
      k += (size_t)(ev->cap[slot] > 0);
    }
    if (s->dom_tin[d] != s->dom_tout[d]) /* one leaf is in name order already */
      qsort(ev->rk, k, sizeof(uint64_t), cmp_u64);
    for (size_t i = 0; i < k; i++)
      ev->cand[i] = (uint32_t)ev->rk[i];
  } else {
    for (size_t i = 0; i < s->n_alive; i++) {
      uint32_t slot = s->by_name[i];
      uint32_t t = s->dom_tin[s->leaf[slot]];
      ev->cand[k] = slot; /* kept only when it counts: no branch */
      k += (size_t)((t - lo <= hi - lo) & (ev->cap[slot] > 0));
    }
  }
  for (size_t i = 0; i < k; i++)
    ev->cc[i] = ev->cap[ev->cand[i]];
  int r = place_one(ev, k, ev->cc, ev->need[0], prof);
  if (r <= 0)
    return r < 0 ? r : GC_EINVAL; /* cannot happen: the domain's count fits */
  ev->rec_n = 0;
  for (size_t j = 0; j < ev->n_pick; j++)
    if (rec_push(ev, ev->cand[ev->pick[j]], 0, ev->take[j]))
      return GC_ENOMEM;
  return 1;
}

/* Pods of set `set` that fit on candidate i under the working free wf. */
static int64_t wf_cap(const struct tp_evaluator *ev, size_t set, size_t i, size_t k) {
  if (ev->missing[set])
    return 0;
  int64_t c = INT64_MAX;
  for (size_t r = 0; r < ev->n_req[set]; r++) {
    int64_t f = ev->wf[(size_t)ev->req_used[set][r] * k + i];
    int64_t q = cap_div(f, ev->req_div[set][r]);
    if (q < c)
      c = q;
  }
  return c;
}

static void wf_apply(struct tp_evaluator *ev, size_t set, size_t i, size_t k, int64_t pods) {
  for (size_t r = 0; r < ev->n_req[set]; r++)
    ev->wf[(size_t)ev->req_used[set][r] * k + i] -= pods * ev->req_val[set][r];
}

static void wf_load(struct tp_evaluator *ev, const struct tp_snapshot *s, size_t k) {
  for (size_t u = 0; u < ev->n_used; u++)
    for (size_t i = 0; i < k; i++) {
      int64_t f = s->free[ev->used[u]][ev->cand[i]];
      ev->wf[u * k + i] = f > 0 ? f : 0;
    }
}

struct dfs_ctx {
  struct tp_evaluator *ev;
  size_t k;
  int64_t rem[TP_MAX_PODSETS];
};

static int dfs(struct dfs_ctx *x, size_t si, size_t i) {
  struct tp_evaluator *ev = x->ev;
  if (si == ev->n_sets)
    return 1;
  size_t set = ev->order[si];
  if (x->rem[set] == 0)
    return dfs(x, si + 1, 0);
  if (i == x->k)
    return 0;
  if (--ev->budget < 0) {
    ev->exhausted = 1;
    return 0;
  }
  int64_t sum = 0;
  size_t j;
  for (j = i; j < x->k && sum < x->rem[set]; j++)
    sum += wf_cap(ev, set, j, x->k);
  /* The bound costs work too: charge it, so the budget bounds time. */
  ev->budget -= (int64_t)(j - i);
  if (sum < x->rem[set])
    return 0;
  int64_t c = wf_cap(ev, set, i, x->k);
  if (c > x->rem[set])
    c = x->rem[set];
  for (int64_t v = c; v >= 0; v--) {
    wf_apply(ev, set, i, x->k, v);
    x->rem[set] -= v;
    ev->sol[set * x->k + i] = v;
    if (dfs(x, si, i + 1))
      return 1;
    wf_apply(ev, set, i, x->k, -v);
    x->rem[set] += v;
    if (ev->budget < 0)
      break;
  }
  ev->sol[set * x->k + i] = 0;
  return 0;
}

/* How place_hetero placed a gang in a domain, if it did: the greedy pass,
 * or the bounded exact search after the greedy pass failed. */
enum placed_by { PLACED_NONE = 0, PLACED_GREEDY = 1, PLACED_EXACT = 2 };

/* Tries to place every pod set in domain d: greedy first (sets in order,
 * each with place_one on what the earlier ones left), then the bounded
 * exact search.  Returns a placed_by value, or a negative GC_E* code. */
static int place_hetero(struct tp_evaluator *ev, const struct tp_snapshot *s, uint32_t d,
                        enum tp_profile prof) {
  int rc = build_lorder(ev, s);
  if (rc)
    return rc;
  size_t k = collect(ev, s, d, -1);
  /* Greedy pass.  A node's capacity for a set is its precomputed cap[]
   * until an earlier set takes pods on it; only those touched nodes keep a
   * working free vector (max(free, 0) minus what was taken), so the pass
   * costs a gather per set instead of re-dividing every node. */
  size_t n_used = ev->n_used;
  if (ensure(&ev->tpos, &ev->tpos_n, k + 1, sizeof(int32_t)) ||
      ensure(&ev->tix, &ev->tix_n, 1, sizeof(uint32_t)) ||
      ensure(&ev->twf, &ev->twf_n, n_used + 1, sizeof(int64_t)))
    return GC_ENOMEM;
  memset(ev->tpos, 0xff, k * sizeof(int32_t));
  size_t nt = 0;
  ev->rec_n = 0;
  int ok = 1;
  for (size_t si = 0; si < ev->n_sets && ok; si++) {
    size_t set = ev->order[si];
    const int32_t *cr = ev->cap + set * ev->n_slots;
    for (size_t i = 0; i < k; i++)
      ev->cc[i] = cr[ev->cand[i]];
    for (size_t t = 0; t < nt; t++) {
      int64_t c = INT32_MAX;
      for (size_t r = 0; r < ev->n_req[set]; r++) {
        int64_t q =
            cap_div(ev->twf[t * n_used + (size_t)ev->req_used[set][r]], ev->req_div[set][r]);
        c = q < c ? q : c;
      }
      ev->cc[ev->tix[t]] = ev->missing[set] ? 0 : c;
    }
    int r = place_one(ev, k, ev->cc, ev->need[set], prof);
    if (r < 0)
      return r;
    if (!r) {
      ok = 0;
      break;
    }
    for (size_t j = 0; j < ev->n_pick; j++) {
      uint32_t i = ev->pick[j];
      if (ev->tpos[i] < 0) {
        if (ensure(&ev->tix, &ev->tix_n, nt + 1, sizeof(uint32_t)) ||
            ensure(&ev->twf, &ev->twf_n, (nt + 1) * n_used, sizeof(int64_t)))
          return GC_ENOMEM;
        ev->tpos[i] = (int32_t)nt;
        ev->tix[nt] = i;
        for (size_t u = 0; u < n_used; u++) {
          int64_t f = s->free[ev->used[u]][ev->cand[i]];
          ev->twf[nt * n_used + u] = f > 0 ? f : 0;
        }
        nt++;
      }
      int64_t *w = ev->twf + (size_t)ev->tpos[i] * n_used;
      for (size_t q = 0; q < ev->n_req[set]; q++)
        w[ev->req_used[set][q]] -= ev->take[j] * ev->req_val[set][q];
      if (rec_push(ev, ev->cand[i], (uint32_t)set, ev->take[j]))
        return GC_ENOMEM;
    }
  }
  if (ok)
    return PLACED_GREEDY;
  if (ev->budget <= 0)
    return 0;
  if (k * ev->n_sets > EXACT_MAX_CELLS) {
    ev->exhausted = 1;
    return 0;
  }
  if (ensure(&ev->sol, &ev->sol_n, k * ev->n_sets + 1, sizeof(int64_t)))
    return GC_ENOMEM;
  memset(ev->sol, 0, (k * ev->n_sets + 1) * sizeof(int64_t));
  if (ensure(&ev->wf, &ev->wf_n, ev->n_used * k + 1, sizeof(int64_t)))
    return GC_ENOMEM;
  wf_load(ev, s, k);
  struct dfs_ctx x;
  x.ev = ev;
  x.k = k;
  for (size_t set = 0; set < ev->n_sets; set++)
    x.rem[set] = ev->need[set];
  if (!dfs(&x, 0, 0))
    return 0;
  ev->rec_n = 0;
  for (size_t set = 0; set < ev->n_sets; set++)
    for (size_t i = 0; i < k; i++)
      if (ev->sol[set * k + i] > 0 && rec_push(ev, ev->cand[i], (uint32_t)set, ev->sol[set * k + i]))
        return GC_ENOMEM;
  return PLACED_EXACT;
}

/* ------------------------------------------------------------------ */
/* Reasons                                                              */

struct reasons {
  struct gc_arena *a;
  const char **v;
  size_t n;
};

static int reason_add(struct reasons *r, const char *msg) {
  if (!msg)
    return GC_ENOMEM;
  if (r->n < MAX_REASONS)
    r->v[r->n++] = msg;
  return GC_OK;
}

/* Appends to a bounded buffer; truncation is harmless for messages. */
static void cat(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void cat(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
  if (*len >= cap - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (w > 0)
    *len = *len + (size_t)w < cap - 1 ? *len + (size_t)w : cap - 1;
}

static const char *dom_label(const struct tp_snapshot *s, uint32_t d, char *buf, size_t cap) {
  if (d == 0)
    snprintf(buf, cap, "whole cluster (tier %lld)", (long long)s->dom_tier[0]);
  else
    snprintf(buf, cap, "%s (tier %lld)", s->dom_name[d], (long long)s->dom_tier[d]);
  return buf;
}

/* Names the nodes of d blocked for this gang (at most two of them). */
static void explain_blocked(struct tp_evaluator *ev, const struct tp_snapshot *s, uint32_t d,
                            char *buf, size_t cap, size_t *len) {
  cat(buf, cap, len, "; %u node(s) blocked for this gang", ev->bcount[d]);
  if (build_lorder(ev, s) != GC_OK)
    return;
  uint32_t lo = ev->lstart[s->dom_tin[d]], hi = ev->lstart[s->dom_tout[d] + 1];
  int shown = 0;
  for (uint32_t j = lo; j < hi && shown < 2; j++) {
    uint32_t slot = ev->lorder[j];
    if (s->state[slot] == TP_NODE_OK && ev->blocked[slot])
      cat(buf, cap, len, "%s%s", shown++ ? ", " : " (", s->node_name[slot]);
  }
  if (shown)
    cat(buf, cap, len, "%s)", ev->bcount[d] > 2 ? ", ..." : "");
}

/* Why domain d does not hold the gang. */
static const char *explain(struct tp_evaluator *ev, const struct tp_snapshot *s,
                           const struct tp_gang *g, uint32_t d, int tried_together,
                           struct gc_arena *a) {
  char buf[2048], lab[600];
  size_t len = 0;
  int64_t fit = 0, want = 0;
  for (size_t k = 0; k < ev->n_sets; k++) {
    int64_t c = ev->dom_count[(size_t)d * ev->n_sets + k];
    fit += c < ev->need[k] ? c : ev->need[k];
    want += ev->need[k];
  }
  cat(buf, sizeof(buf), &len, "%s: fits %lld of %lld pods", dom_label(s, d, lab, sizeof(lab)),
      (long long)fit, (long long)want);
  if (ev->n_sets > 1) {
    cat(buf, sizeof(buf), &len, " (");
    for (size_t k = 0; k < ev->n_sets; k++) {
      int64_t c = ev->dom_count[(size_t)d * ev->n_sets + k];
      cat(buf, sizeof(buf), &len, "%s%s %lld/%lld", k ? ", " : "", g->sets[k].name,
          (long long)(c < ev->need[k] ? c : ev->need[k]), (long long)ev->need[k]);
    }
    cat(buf, sizeof(buf), &len, ")");
  }
  int said = 0;
  for (size_t k = 0; k < ev->n_sets; k++)
    if (ev->missing[k]) {
      cat(buf, sizeof(buf), &len, "; no node offers %s", ev->missing[k]);
      said = 1;
      break;
    }
  for (size_t u = 0; u < ev->n_used && !said; u++) {
    int r = ev->used[u];
    int64_t demand = 0;
    for (size_t k = 0; k < ev->n_sets; k++)
      for (size_t j = 0; j < ev->n_req[k]; j++)
        if (ev->req_res[k][j] == r)
          demand = sat_add(demand, sat_mul(ev->need[k], ev->req_val[k][j]));
    int64_t have = dom_free_of(ev, s, u, d);
    if (demand > have) {
      char q[GC_QUANTITY_BUFSZ];
      tp_snapshot_units_format(s->res_name[r], demand - have, q, sizeof(q));
      cat(buf, sizeof(buf), &len, "; %s short by %s", s->res_name[r], q);
    }
  }
  if (!said && strstr(buf, " short by ") == NULL) {
    if (tried_together)
      cat(buf, sizeof(buf), &len, "; each pod set fits alone but not all together%s",
          ev->exhausted ? " (exact search budget exhausted: may be pessimistic)" : "");
    else if (fit < want)
      cat(buf, sizeof(buf), &len, "; enough free resources in total, but fragmented across nodes");
  }
  if (ev->blocked && ev->bcount[d])
    explain_blocked(ev, s, d, buf, sizeof(buf), &len);
  if (s->dom_excluded[d]) {
    cat(buf, sizeof(buf), &len, "; %u node(s) excluded", s->dom_excluded[d]);
    if (build_lorder(ev, s) == GC_OK) {
      uint32_t lo = ev->lstart[s->dom_tin[d]], hi = ev->lstart[s->dom_tout[d] + 1];
      int shown = 0;
      for (uint32_t j = lo; j < hi && shown < 2; j++) {
        uint32_t slot = ev->lorder[j];
        if (s->state[slot] == TP_NODE_EXCLUDED) {
          cat(buf, sizeof(buf), &len, "%s%s: %s", shown ? ", " : " (", s->node_name[slot],
              s->excl_reason[slot] ? s->excl_reason[slot] : "excluded");
          shown++;
        }
      }
      if (shown)
        cat(buf, sizeof(buf), &len, "%s)", s->dom_excluded[d] > 2 ? ", ..." : "");
    }
  }
  return gc_arena_strdup(a, buf);
}

/* ------------------------------------------------------------------ */
/* Evaluation                                                           */

static int cmp_dcand(const void *a, const void *b) {
  const struct dcand *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int cmp_assign(const void *a, const void *b) {
  const struct tp_assignment *x = a, *y = b;
  int c = strcmp(x->node, y->node);
  if (c)
    return c;
  return x->podset < y->podset ? -1 : x->podset > y->podset;
}

static double share_of(const struct tp_evaluator *ev, const struct tp_snapshot *s, size_t set,
                       uint32_t d) {
  double best = 0;
  for (size_t j = 0; j < ev->n_req[set]; j++) {
    int64_t have = dom_free_of(ev, s, (size_t)ev->req_used[set][j], d);
    double sh = (double)ev->req_val[set][j] / (double)(have > 0 ? have : 1);
    if (sh > best)
      best = sh;
  }
  return best;
}

/* Orders pod sets for the greedy pass: largest per-pod dominant share of
 * the domain first (first-fit decreasing), ties by index. */
static void order_sets(struct tp_evaluator *ev, const struct tp_snapshot *s, uint32_t d) {
  double sh[TP_MAX_PODSETS];
  for (size_t k = 0; k < ev->n_sets; k++) {
    sh[k] = share_of(ev, s, k, d);
    ev->order[k] = (uint32_t)k;
  }
  for (size_t i = 1; i < ev->n_sets; i++) {
    uint32_t v = ev->order[i];
    size_t j = i;
    while (j > 0 && sh[ev->order[j - 1]] < sh[v]) {
      ev->order[j] = ev->order[j - 1];
      j--;
    }
    ev->order[j] = v;
  }
}

static int prepare(struct tp_evaluator *ev, const struct tp_snapshot *s, const struct tp_gang *g,
                   struct gc_diags *diags) {
  ev->n_sets = g->n_sets;
  ev->n_slots = s->n_slots;
  ev->n_dom = s->n_dom;
  ev->n_used = 0;
  int pods_r = tp_snapshot_resource(s, "pods");
  int64_t total = 0;
  for (size_t k = 0; k < g->n_sets; k++) {
    const struct tp_podset *ps = &g->sets[k];
    if (ps->count < 1 || ps->count > TP_MAX_SET_PODS || ps->n_req > TP_MAX_RESOURCES) {
      gc_diags_addf(diags, "gang: pod set %s: count must be 1 to %d", ps->name ? ps->name : "?",
                    TP_MAX_SET_PODS);
      return GC_EINVAL;
    }
    total += ps->count;
    ev->n_req[k] = 0;
    ev->missing[k] = NULL;
    ev->need[k] = ps->count;
    for (size_t j = 0; j <= ps->n_req; j++) {
      const char *name = j < ps->n_req ? ps->res[j] : "pods";
      int64_t v = j < ps->n_req ? ps->val[j] : 1;
      if (j < ps->n_req && !strcmp(name, "pods"))
        continue;
      if (v <= 0)
        continue;
      int r = j < ps->n_req ? tp_snapshot_resource(s, name) : pods_r;
      if (r < 0) {
        if (!ev->missing[k])
          ev->missing[k] = name;
        continue;
      }
      size_t u;
      for (u = 0; u < ev->n_used && ev->used[u] != r; u++)
        ;
      if (u == ev->n_used)
        ev->used[ev->n_used++] = r;
      ev->req_res[k][ev->n_req[k]] = r;
      ev->req_val[k][ev->n_req[k]] = v;
      ev->req_div[k][ev->n_req[k]] = divisor_of(v);
      ev->req_used[k][ev->n_req[k]] = (int)u;
      ev->n_req[k]++;
    }
  }
  if (total > TP_MAX_GANG_PODS) {
    gc_diags_addf(diags, "gang: %lld pods, more than %d", (long long)total, TP_MAX_GANG_PODS);
    return GC_ELIMIT;
  }
  if (g->n_sets == 1 && g->min_member > 0 && g->min_member < ev->need[0])
    ev->need[0] = g->min_member;
  size_t ns = ev->n_slots ? ev->n_slots : 1;
  if (ensure(&ev->cap, &ev->cap_n, g->n_sets * ns, sizeof(int32_t)) ||
      ensure(&ev->dom_count, &ev->dom_count_n, g->n_sets * ev->n_dom, sizeof(int64_t)) ||
      ensure(&ev->cand, &ev->cand_n, ns, sizeof(uint32_t)) ||
      ensure(&ev->cc, &ev->cc_n, ns, sizeof(int64_t)) ||
      ensure(&ev->take, &ev->take_n, ns, sizeof(int64_t)) ||
      ensure(&ev->pick, &ev->pick_n, ns, sizeof(uint32_t)) ||
      ensure(&ev->cands, &ev->cands_n, ev->n_dom, sizeof(struct dcand)))
    return GC_ENOMEM;
  if (!ev->qbuf && !(ev->qbuf = malloc((FAST_OPS + FAST_OPS) * BLK * sizeof(double))))
    return GC_ENOMEM;
  return GC_OK;
}

/* Fills the policy part of out (mode, profile, highest tier) from the
 * options, which win when they set a mode, or else the gang.  Returns GC_OK
 * or GC_ENOTFOUND for a tier name no domain has. */
static int resolve_policy(const struct tp_snapshot *s, const struct tp_gang *g,
                          const struct tp_eval_opts *o, struct tp_result *out,
                          struct gc_diags *diags) {
  const struct tp_policy *pol = o->policy.mode != TP_MODE_UNSET ? &o->policy : &g->policy;
  out->mode = pol->mode == TP_MODE_UNSET ? TP_MODE_HARD : pol->mode;
  out->profile = o->profile;
  out->highest_tier = -1;
  if (out->mode != TP_MODE_HARD)
    return GC_OK;
  if (!pol->highest_tier_name) {
    out->highest_tier = pol->has_highest_tier ? pol->highest_tier : 1;
    return GC_OK;
  }
  int64_t t = tp_snapshot_tier_by_name(s, pol->highest_tier_name);
  if (t < 0) {
    gc_diags_addf(diags, "highestTierName \"%s\": no domain has this tierName",
                  pol->highest_tier_name);
    return GC_ENOTFOUND;
  }
  out->highest_tier = t;
  return GC_OK;
}

/* Reads domain d's pod counts: 1 if every pod set fits by count.  *total
 * is the pods it could hold in all, *footprint the part of the gang it
 * could hold (each set's count capped at its need). */
static int counts_fit(const struct tp_evaluator *ev, uint32_t d, int64_t *total,
                      int64_t *footprint) {
  size_t n_sets = ev->n_sets;
  if (n_sets == 1) {
    /* Counts are sums of int32 capacities over at most TP_MAX_NODES
     * nodes: no saturation needed. */
    int64_t c = ev->dom_count[d], nd = ev->need[0];
    *total = c;
    *footprint = c < nd ? c : nd;
    return c >= nd;
  }
  int fits = 1;
  int64_t tot = 0, fp = 0;
  for (size_t k = 0; k < n_sets; k++) {
    int64_t c = ev->dom_count[(size_t)d * n_sets + k];
    if (c < ev->need[k])
      fits = 0;
    tot = sat_add(tot, c);
    fp += c < ev->need[k] ? c : ev->need[k];
  }
  *total = tot;
  *footprint = fp;
  return fits;
}

/* A necessary condition on the domain's free sums before any node-level
 * work: 1 if, for every resource the gang uses, d's free total covers the
 * whole gang's demand. */
static int sums_cover(const struct tp_evaluator *ev, const struct tp_snapshot *s, uint32_t d) {
  for (size_t u = 0; u < ev->n_used; u++) {
    int r = ev->used[u];
    int64_t demand = 0;
    for (size_t k = 0; k < ev->n_sets; k++)
      for (size_t q = 0; q < ev->n_req[k]; q++)
        if (ev->req_res[k][q] == r)
          demand = sat_add(demand, sat_mul(ev->need[k], ev->req_val[k][q]));
    if (demand > dom_free_of(ev, s, u, d))
      return 0;
  }
  return 1;
}

/* Collects tier index t's candidate domains (those that fit by count and,
 * for several pod sets, by sums) into ev->cands and returns how many.
 * *closest is the domain that holds the largest part of the gang, which a
 * reason names when none fits. */
static size_t collect_candidates(struct tp_evaluator *ev, const struct tp_snapshot *s, size_t t,
                                 enum tp_profile profile, uint32_t *closest) {
  uint32_t lo = s->tier_start[t], hi = s->tier_start[t + 1];
  size_t nc = 0;
  int64_t best_fit = -1;
  *closest = s->tier_dom[lo];
  for (uint32_t j = lo; j < hi; j++) {
    uint32_t d = s->tier_dom[j];
    int64_t total = 0, footprint = 0;
    int fits = counts_fit(ev, d, &total, &footprint);
    if (footprint > best_fit) {
      best_fit = footprint;
      *closest = d;
    }
    if (!fits || (ev->n_sets > 1 && !sums_cover(ev, s, d)))
      continue;
    int64_t key = profile == TP_PROFILE_SPREAD ? -total : total;
    ev->cands[nc++] = (struct dcand){d, key, s->dom_name[d]};
  }
  return nc;
}

/* The index of the best of ev->cands[0..nc) (nc >= 1) in cmp_dcand's order. */
static size_t best_candidate(const struct tp_evaluator *ev, size_t nc) {
  size_t b = 0;
  for (size_t i = 1; i < nc; i++)
    if (cmp_dcand(&ev->cands[i], &ev->cands[b]) < 0)
      b = i;
  return b;
}

/* Tries ev->cands[0..nc) (nc >= 1) best first.  On success *chosen and *how
 * say where and how the gang was placed; *chosen stays -1 otherwise.
 * Returns GC_OK or a negative GC_E* code. */
static int try_candidates(struct tp_evaluator *ev, const struct tp_snapshot *s, size_t nc,
                          enum tp_profile profile, int64_t *chosen, enum placed_by *how) {
  size_t b = best_candidate(ev, nc);
  if (ev->n_sets == 1) {
    int rc = place_homog(ev, s, ev->cands[b].d, profile);
    if (rc < 0)
      return rc;
    *chosen = ev->cands[b].d;
    *how = PLACED_GREEDY;
    return GC_OK;
  }
  /* The best candidate usually succeeds: bring it to the front in
   * O(candidates) and sort the rest only if it does not. */
  struct dcand tmp = ev->cands[0];
  ev->cands[0] = ev->cands[b];
  ev->cands[b] = tmp;
  for (size_t i = 0; i < nc; i++) {
    if (i == 1)
      qsort(ev->cands + 1, nc - 1, sizeof(*ev->cands), cmp_dcand);
    order_sets(ev, s, ev->cands[i].d);
    int rc = place_hetero(ev, s, ev->cands[i].d, profile);
    if (rc < 0)
      return rc;
    if (rc != PLACED_NONE) {
      *chosen = ev->cands[i].d;
      *how = (enum placed_by)rc;
      return GC_OK;
    }
  }
  return GC_OK;
}

/* Scans the tiers lowest first and stops at the first domain that takes
 * the gang; each tier that takes none adds a reason to rs.  Returns GC_OK
 * or a negative GC_E* code. */
static int scan_tiers(struct tp_evaluator *ev, const struct tp_snapshot *s,
                      const struct tp_gang *g, const struct tp_result *out, struct reasons *rs,
                      int64_t *chosen, enum placed_by *how) {
  for (size_t t = 0; t < s->n_tiers && *chosen < 0; t++) {
    if (out->mode == TP_MODE_HARD && s->tiers[t] > out->highest_tier)
      break;
    if (s->tier_start[t + 1] == s->tier_start[t])
      continue;
    uint32_t closest;
    size_t nc = collect_candidates(ev, s, t, out->profile, &closest);
    int together = 0;
    if (nc) {
      int rc = try_candidates(ev, s, nc, out->profile, chosen, how);
      if (rc < 0)
        return rc;
      /* Several sets that fit one by one but not together: the reason
       * names the best candidate, not the closest by count. */
      if (*chosen < 0) {
        together = 1;
        closest = ev->cands[0].d;
      }
    }
    if (*chosen < 0) {
      int rc = reason_add(rs, explain(ev, s, g, closest, together, rs->a));
      if (rc)
        return rc;
    }
  }
  return GC_OK;
}

/* In hard mode with no domain found, says which tiers the limit kept out. */
static int hard_mode_reason(const struct tp_snapshot *s, const struct tp_result *out,
                            struct reasons *rs) {
  if (!s->n_tiers)
    return GC_OK;
  long long limit = (long long)out->highest_tier;
  if (s->tiers[0] > out->highest_tier)
    return reason_add(rs, gc_arena_printf(rs->a, "hard mode: no domain at tier <= %lld (lowest "
                                                 "tier is %lld)",
                                          limit, (long long)s->tiers[0]));
  if (s->tiers[s->n_tiers - 1] > out->highest_tier)
    return reason_add(rs, gc_arena_printf(rs->a, "hard mode: domains above tier %lld were not "
                                                 "considered",
                                          limit));
  return GC_OK;
}

/* Fills out for a gang placed in domain chosen: the domain, and the
 * assignments ev->rec holds sorted by node (copied into a). */
static int fill_result(const struct tp_evaluator *ev, const struct tp_snapshot *s,
                       int64_t chosen, enum placed_by how, struct gc_arena *a,
                       struct tp_result *out) {
  out->feasible = 1;
  out->domain = chosen;
  out->whole_cluster = chosen == 0;
  out->domain_name = chosen ? s->dom_name[chosen] : NULL;
  out->tier = chosen ? s->dom_tier[chosen] : -1;
  out->tier_name = s->dom_tier_name[chosen];
  out->exact_search = how == PLACED_EXACT;
  out->assign = gc_arena_alloc(a, (ev->rec_n ? ev->rec_n : 1) * sizeof(*out->assign));
  if (!out->assign)
    return GC_ENOMEM;
  int64_t placed = 0;
  for (size_t i = 0; i < ev->rec_n; i++) {
    out->assign[i] = (struct tp_assignment){s->node_name[ev->rec[i].slot], ev->rec[i].slot,
                                            ev->rec[i].set, ev->rec[i].pods};
    placed += ev->rec[i].pods;
  }
  out->n_assign = ev->rec_n;
  qsort(out->assign, out->n_assign, sizeof(*out->assign), cmp_assign);
  for (size_t i = 0; i < out->n_assign; i++)
    if (i == 0 || out->assign[i].slot != out->assign[i - 1].slot)
      out->nodes_used++;
  out->pods = placed;
  out->domain_pods = tp_evaluator_domain_pods(ev, (uint32_t)chosen);
  out->leftover = out->domain_pods - placed;
  return GC_OK;
}

int tp_place_evaluate(struct tp_evaluator *ev, const struct tp_snapshot *s, const struct tp_gang *g,
                      const struct tp_eval_opts *opts, struct gc_arena *a, struct tp_result *out,
                      struct gc_diags *diags) {
  if (!ev || !s || !g || !a || !out)
    return GC_EUSAGE;
  memset(out, 0, sizeof(*out));
  out->domain = -1;
  out->tier = -1;
  ev->valid = 0;
  if (g->n_sets < 1 || g->n_sets > TP_MAX_PODSETS || !g->sets) {
    gc_diags_addf(diags, "gang: needs 1 to %d pod sets", TP_MAX_PODSETS);
    return GC_EINVAL;
  }
  struct tp_eval_opts o = {0};
  if (opts)
    o = *opts;
  int rc = resolve_policy(s, g, &o, out, diags);
  if (!rc)
    rc = prepare(ev, s, g, diags);
  if (rc)
    return rc;
  ev->blocked = o.blocked;
  if ((rc = blocked_pass(ev, s)))
    return rc;
  ev->budget = o.search_budget == 0 ? TP_DEFAULT_SEARCH_BUDGET : o.search_budget;
  ev->exhausted = 0;
  struct reasons rs = {a, gc_arena_alloc(a, MAX_REASONS * sizeof(char *)), 0};
  if (!rs.v)
    return GC_ENOMEM;
  capacity_pass(ev, s);
  ev->valid = 1;

  int64_t chosen = -1;
  enum placed_by how = PLACED_NONE;
  if ((rc = scan_tiers(ev, s, g, out, &rs, &chosen, &how)))
    return rc;
  if (out->mode == TP_MODE_HARD && chosen < 0 && (rc = hard_mode_reason(s, out, &rs)))
    return rc;
  out->reasons = rs.v;
  out->n_reasons = rs.n;
  out->search_exhausted = ev->exhausted;
  if (chosen < 0)
    return GC_OK;
  return fill_result(ev, s, chosen, how, a, out);
}
