/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_snapshot: building, validating and updating the cluster model.
 */
#include "tp_snapshot.h"
#include "tp_snapshot_test.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "tp_hypernode.h"
#include "tp_snapshot_int.h"


/* ------------------------------------------------------------------ */
/* Small helpers                                                        */

/* Layout versions are drawn from one process-wide counter, so a version
 * names one layout of one snapshot even when snapshots are built on
 * several threads or a freed snapshot's memory is reused. */
static atomic_uint_fast64_t layout_counter = 1;

static uint64_t next_layout_version(void) {
  return (uint64_t)atomic_fetch_add(&layout_counter, 1);
}

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ULL;
  }
  return h;
}

static int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

static int64_t pos(int64_t v) { return v > 0 ? v : 0; }

/* Domain sums are exact or saturated for good: once a sum reaches
 * INT64_MAX it stays there, an over-estimate, which is safe for the
 * necessary conditions the evaluator checks (it only skips a "short by"
 * message).  A saturating add that later subtracts would under-estimate. */
static void sum_add(int64_t *sum, int64_t delta) {
  if (*sum != INT64_MAX)
    *sum = sat_add(*sum, delta);
}

/* Unit helpers: 1 if resource `name` is counted in milli-units (cpu). */
static int tp_snapshot_resource_is_milli(const char *name) { return strcmp(name, "cpu") == 0; }

static int resource_is_bytes(const char *name) {
  return !strcmp(name, "memory") || !strcmp(name, "ephemeral-storage") ||
         !strncmp(name, "hugepages-", 10);
}

int tp_snapshot_quantity_to_units(const char *resource, const struct gc_quantity *q, int64_t *out) {
  if (tp_snapshot_resource_is_milli(resource))
    return gc_quantity_milli(q, out);
  return gc_quantity_units(q, out);
}

void tp_snapshot_units_format(const char *resource, int64_t v, char *buf, size_t cap) {
  struct gc_quantity q;
  q.mant = v;
  q.scale = tp_snapshot_resource_is_milli(resource) ? -3 : 0;
  q.format = resource_is_bytes(resource) ? GC_QF_BINARY_SI : GC_QF_DECIMAL_SI;
  if (gc_quantity_format(&q, buf, cap) != 0)
    snprintf(buf, cap, "%lld%s", (long long)v, q.scale ? "m" : "");
}

/* ------------------------------------------------------------------ */
/* Hash tables (open addressing, linear probing, value = index + 1)      */

int tp_snapshot_hash_grow(uint32_t **tab, size_t *cap, size_t want, const char **names) {
  if (*cap >= want * 2 && *tab)
    return GC_OK;
  size_t ncap = 64;
  while (ncap < want * 2)
    ncap *= 2;
  uint32_t *nt = calloc(ncap, sizeof(*nt));
  if (!nt)
    return GC_ENOMEM;
  for (size_t i = 0; i < *cap; i++) {
    uint32_t v = (*tab)[i];
    if (!v)
      continue;
    size_t h = hash_str(names[v - 1]) & (ncap - 1);
    while (nt[h])
      h = (h + 1) & (ncap - 1);
    nt[h] = v;
  }
  free(*tab);
  *tab = nt;
  *cap = ncap;
  return GC_OK;
}

int64_t tp_snapshot_hash_find(const uint32_t *tab, size_t cap, const char *const *names,
                              const char *key) {
  if (!cap)
    return -1;
  size_t h = hash_str(key) & (cap - 1);
  while (tab[h]) {
    if (!strcmp(names[tab[h] - 1], key))
      return (int64_t)tab[h] - 1;
    h = (h + 1) & (cap - 1);
  }
  return -1;
}

void tp_snapshot_hash_insert(uint32_t *tab, size_t cap, const char *key, uint32_t idx) {
  size_t h = hash_str(key) & (cap - 1);
  while (tab[h])
    h = (h + 1) & (cap - 1);
  tab[h] = idx + 1;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void hash_delete(uint32_t *tab, size_t cap, const char *const *names, const char *key) {
  if (!cap)
    return;
  size_t mask = cap - 1, h = hash_str(key) & mask;
  while (tab[h] && strcmp(names[tab[h] - 1], key))
    h = (h + 1) & mask;
  if (!tab[h])
    return;
  size_t i = h;
  for (;;) {
    tab[i] = 0;
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (!tab[j])
        return;
      size_t home = hash_str(names[tab[j] - 1]) & mask;
      /* Move j back to i unless its home lies cyclically in (i, j]. */
      int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!in_range)
        break;
    }
    tab[i] = tab[j];
    i = j;
  }
}

/* ------------------------------------------------------------------ */
/* Growth                                                               */

static int grow_row(void **row, size_t old, size_t ncap, size_t elem) {
  void *n = realloc(*row, ncap * elem);
  if (!n)
    return GC_ENOMEM;
  memset((char *)n + old * elem, 0, (ncap - old) * elem);
  *row = n;
  return GC_OK;
}

int tp_snapshot_nodes_reserve(struct tp_snapshot *s, size_t want) {
  if (want <= s->cap_slots)
    return GC_OK;
  if (want > TP_MAX_NODES)
    return GC_ELIMIT;
  size_t ncap = s->cap_slots ? s->cap_slots : 64;
  while (ncap < want)
    ncap *= 2;
  size_t old = s->cap_slots;
  if (grow_row((void **)&s->node_name, old, ncap, sizeof(*s->node_name)) ||
      grow_row((void **)&s->leaf, old, ncap, sizeof(*s->leaf)) ||
      grow_row((void **)&s->state, old, ncap, sizeof(*s->state)) ||
      grow_row((void **)&s->excl_reason, old, ncap, sizeof(*s->excl_reason)) ||
      grow_row((void **)&s->by_name, old, ncap, sizeof(*s->by_name)) ||
      grow_row((void **)&s->dead, old, ncap, sizeof(*s->dead)))
    return GC_ENOMEM;
  for (size_t r = 0; r < s->n_res; r++)
    if (grow_row((void **)&s->free[r], old, ncap, sizeof(int64_t)) ||
        grow_row((void **)&s->alloc[r], old, ncap, sizeof(int64_t)))
      return GC_ENOMEM;
  s->cap_slots = ncap;
  return GC_OK;
}

static int dom_reserve(struct tp_snapshot *s, size_t want) {
  if (want <= s->cap_dom)
    return GC_OK;
  if (want > TP_MAX_DOMAINS)
    return GC_ELIMIT;
  size_t ncap = s->cap_dom ? s->cap_dom : 16;
  while (ncap < want)
    ncap *= 2;
  size_t old = s->cap_dom;
  if (grow_row((void **)&s->dom_name, old, ncap, sizeof(*s->dom_name)) ||
      grow_row((void **)&s->dom_tier, old, ncap, sizeof(*s->dom_tier)) ||
      grow_row((void **)&s->dom_tier_name, old, ncap, sizeof(*s->dom_tier_name)) ||
      grow_row((void **)&s->dom_parent, old, ncap, sizeof(*s->dom_parent)) ||
      grow_row((void **)&s->dom_tin, old, ncap, sizeof(*s->dom_tin)) ||
      grow_row((void **)&s->dom_tout, old, ncap, sizeof(*s->dom_tout)) ||
      grow_row((void **)&s->dom_post, old, ncap, sizeof(*s->dom_post)) ||
      grow_row((void **)&s->dom_nodes, old, ncap, sizeof(*s->dom_nodes)) ||
      grow_row((void **)&s->dom_excluded, old, ncap, sizeof(*s->dom_excluded)) ||
      grow_row((void **)&s->tier_dom, old, ncap, sizeof(*s->tier_dom)) ||
      grow_row((void **)&s->tiers, old, ncap, sizeof(*s->tiers)) ||
      grow_row((void **)&s->tier_start, old, ncap + 1, sizeof(*s->tier_start)))
    return GC_ENOMEM;
  for (size_t r = 0; r < s->n_res; r++)
    if (grow_row((void **)&s->dom_free[r], old, ncap, sizeof(int64_t)))
      return GC_ENOMEM;
  s->cap_dom = ncap;
  return GC_OK;
}

int tp_snapshot_resource(const struct tp_snapshot *s, const char *name) {
  for (size_t r = 0; r < s->n_res; r++)
    if (!strcmp(s->res_name[r], name))
      return (int)r;
  return -1;
}

/* Finds or adds a resource; returns its index or a negative code. */
static int resource_add(struct tp_snapshot *s, const char *name) {
  int r = tp_snapshot_resource(s, name);
  if (r >= 0)
    return r;
  if (s->n_res >= TP_MAX_RESOURCES)
    return GC_ELIMIT;
  const char *copy = gc_arena_strdup(s->arena, name);
  if (!copy)
    return GC_ENOMEM;
  size_t i = s->n_res;
  s->free[i] = calloc(s->cap_slots ? s->cap_slots : 1, sizeof(int64_t));
  s->alloc[i] = calloc(s->cap_slots ? s->cap_slots : 1, sizeof(int64_t));
  s->dom_free[i] = calloc(s->cap_dom ? s->cap_dom : 1, sizeof(int64_t));
  if (!s->free[i] || !s->alloc[i] || !s->dom_free[i]) {
    free(s->free[i]);
    free(s->alloc[i]);
    free(s->dom_free[i]);
    s->free[i] = s->alloc[i] = s->dom_free[i] = NULL;
    return GC_ENOMEM;
  }
  s->res_name[i] = copy;
  s->res_milli[i] = tp_snapshot_resource_is_milli(name);
  s->n_res++;
  return (int)i;
}

/* ------------------------------------------------------------------ */
/* Lookups                                                              */

int64_t tp_snapshot_node(const struct tp_snapshot *s, const char *name) {
  return tp_snapshot_hash_find(s->node_hash, s->node_hash_cap, s->node_name, name);
}

int64_t tp_snapshot_domain(const struct tp_snapshot *s, const char *name) {
  return tp_snapshot_hash_find(s->dom_hash, s->dom_hash_cap, s->dom_name, name);
}

int64_t tp_snapshot_tier_by_name(const struct tp_snapshot *s, const char *tier_name) {
  /* Several domains normally share a tierName; a conflicting one was
   * warned about at build time and the lowest tier wins here. */
  int64_t best = -1;
  for (size_t d = 1; d < s->n_dom; d++)
    if (s->dom_tier_name[d] && !strcmp(s->dom_tier_name[d], tier_name) &&
        (best < 0 || s->dom_tier[d] < best))
      best = s->dom_tier[d];
  return best;
}

int tp_snapshot_in_domain(const struct tp_snapshot *s, uint32_t slot, uint32_t d) {
  uint32_t t = s->dom_tin[s->leaf[slot]];
  return s->dom_tin[d] <= t && t <= s->dom_tout[d];
}

/* ------------------------------------------------------------------ */
/* Domains                                                              */

int64_t tp_snapshot_dom_add(struct tp_snapshot *s, const char *name, int64_t tier,
                            const char *tier_name, int32_t parent) {
  if (dom_reserve(s, s->n_dom + 1))
    return s->n_dom + 1 > TP_MAX_DOMAINS ? GC_ELIMIT : GC_ENOMEM;
  size_t d = s->n_dom;
  const char *copy = gc_arena_strdup(s->arena, name);
  const char *tn = tier_name ? gc_arena_strdup(s->arena, tier_name) : NULL;
  if (!copy || (tier_name && !tn))
    return GC_ENOMEM;
  s->dom_name[d] = copy;
  s->dom_tier[d] = tier;
  s->dom_tier_name[d] = tn;
  s->dom_parent[d] = parent;
  s->dom_nodes[d] = s->dom_excluded[d] = 0;
  for (size_t r = 0; r < s->n_res; r++)
    s->dom_free[r][d] = 0;
  s->n_dom++;
  if (tp_snapshot_hash_grow(&s->dom_hash, &s->dom_hash_cap, s->n_dom, s->dom_name))
    return GC_ENOMEM;
  tp_snapshot_hash_insert(s->dom_hash, s->dom_hash_cap, copy, (uint32_t)d);
  return (int64_t)d;
}

struct name_idx {
  const char *name;
  int64_t key; /* tier for the tier sort */
  uint32_t idx;
};

static int cmp_name_idx(const void *a, const void *b) {
  const struct name_idx *x = a, *y = b;
  return strcmp(x->name, y->name);
}

static int cmp_tier_name_idx(const void *a, const void *b) {
  const struct name_idx *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Recomputes the Euler tour, the children-first order and the tier tables
 * from the parent links.  O(domains log domains); run after domains change
 * (never on node updates). */
int tp_snapshot_dom_reindex(struct tp_snapshot *s) {
  size_t n = s->n_dom;
  int rc = GC_ENOMEM;
  struct name_idx *ord = malloc(n * sizeof(*ord));
  uint32_t *cstart = calloc(n + 1, sizeof(*cstart));
  uint32_t *child = malloc(n * sizeof(*child));
  uint32_t *stack = malloc(n * sizeof(*stack));
  uint32_t *iter = calloc(n, sizeof(*iter));
  if (!ord || !cstart || !child || !stack || !iter)
    goto out;
  for (size_t d = 0; d < n; d++)
    ord[d] = (struct name_idx){s->dom_name[d], 0, (uint32_t)d};
  qsort(ord, n, sizeof(*ord), cmp_name_idx);
  /* Children lists (CSR), each in name order. */
  for (size_t d = 1; d < n; d++)
    cstart[s->dom_parent[d] + 1]++;
  for (size_t d = 0; d < n; d++)
    cstart[d + 1] += cstart[d];
  {
    uint32_t *fill = iter; /* reuse as fill cursor, reset below */
    for (size_t i = 0; i < n; i++) {
      uint32_t d = ord[i].idx;
      if (d == 0)
        continue;
      uint32_t p = (uint32_t)s->dom_parent[d];
      child[cstart[p] + fill[p]++] = d;
    }
    memset(iter, 0, n * sizeof(*iter));
  }
  /* Iterative DFS from the root. */
  uint32_t clock = 0, npost = 0;
  size_t sp = 0;
  stack[sp++] = 0;
  s->dom_tin[0] = clock++;
  while (sp) {
    uint32_t d = stack[sp - 1];
    if (iter[d] < cstart[d + 1] - cstart[d]) {
      uint32_t c = child[cstart[d] + iter[d]++];
      s->dom_tin[c] = clock++;
      stack[sp++] = c;
    } else {
      s->dom_tout[d] = clock - 1;
      s->dom_post[npost++] = d;
      sp--;
    }
  }
  /* Tiers. */
  for (size_t d = 0; d < n; d++)
    ord[d] = (struct name_idx){s->dom_name[d], s->dom_tier[d], (uint32_t)d};
  qsort(ord, n, sizeof(*ord), cmp_tier_name_idx);
  s->n_tiers = 0;
  for (size_t i = 0; i < n; i++) {
    s->tier_dom[i] = ord[i].idx;
    if (i == 0 || ord[i].key != ord[i - 1].key) {
      s->tiers[s->n_tiers] = ord[i].key;
      s->tier_start[s->n_tiers] = (uint32_t)i;
      s->n_tiers++;
    }
  }
  s->tier_start[s->n_tiers] = (uint32_t)n;
  rc = GC_OK;
out:
  free(ord);
  free(cstart);
  free(child);
  free(stack);
  free(iter);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Nodes                                                                */

/* Adds (sign 1) or removes (sign -1) a node's contribution to the sums of
 * its leaf and every ancestor. */
static void node_account(struct tp_snapshot *s, uint32_t slot, int sign) {
  for (int64_t d = s->leaf[slot]; d >= 0; d = s->dom_parent[d]) {
    s->dom_nodes[d] += (uint32_t)sign;
    if (s->state[slot] == TP_NODE_EXCLUDED) {
      s->dom_excluded[d] += (uint32_t)sign;
      continue;
    }
    for (size_t r = 0; r < s->n_res; r++)
      sum_add(&s->dom_free[r][d], sign * pos(s->free[r][slot]));
  }
}

static int cmp_slot_name(const struct tp_snapshot *s, uint32_t a, const char *name) {
  return strcmp(s->node_name[a], name);
}

/* Position of name in by_name (lower bound). */
static size_t by_name_pos(const struct tp_snapshot *s, const char *name) {
  size_t lo = 0, hi = s->n_alive;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_slot_name(s, s->by_name[mid], name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int label_get(const struct gc_value *labels, const char *key, const char **val) {
  const struct gc_value *v = gc_map_get(labels, key);
  if (!v)
    return 0;
  if (v->type == GC_STR)
    *val = v->u.s;
  else
    *val = v->text ? v->text : "";
  return 1;
}

static int member_matches(const struct tp_member *m, const char *name,
                          const struct gc_value *labels) {
  switch (m->kind) {
  case MEMBER_EXACT:
    return !strcmp(m->exact, name);
  case MEMBER_REGEX:
    return m->re_ok && regexec(&m->re, name, 0, NULL, 0) == 0;
  case MEMBER_LABEL:
    for (size_t i = 0; i < m->n_req; i++) {
      const struct lsel_req *q = &m->req[i];
      const char *val = NULL;
      int has = label_get(labels, q->key, &val);
      int in = 0;
      for (size_t k = 0; has && k < q->n_vals; k++)
        if (!strcmp(q->vals[k], val))
          in = 1;
      switch (q->op) {
      case LSEL_IN:
        if (!in)
          return 0;
        break;
      case LSEL_NOTIN:
        if (in)
          return 0;
        break;
      case LSEL_EXISTS:
        if (!has)
          return 0;
        break;
      case LSEL_NOTEXISTS:
        if (has)
          return 0;
        break;
      }
    }
    return 1;
  }
  return 0;
}

/* The leaf of a node from label levels, creating domains as needed.  Nodes
 * missing a level label belong to the root only. */
static int64_t leaf_from_levels(struct tp_snapshot *s, const struct gc_value *labels) {
  char id[4096];
  size_t len = 0;
  int64_t parent = 0;
  for (size_t i = 0; i < s->n_levels; i++) {
    const char *val;
    if (!label_get(labels, s->levels[i], &val))
      return 0;
    size_t vl = strlen(val);
    if (len + vl + 2 > sizeof(id))
      return GC_ELIMIT;
    /* Label values cannot contain '/', so joining with it keeps ids of
     * different parents apart ("a.b"/"c" and "a"/"b.c"). */
    if (strchr(val, '/'))
      return GC_EINVAL;
    if (i)
      id[len++] = '/';
    memcpy(id + len, val, vl);
    len += vl;
    id[len] = 0;
    int64_t d = tp_snapshot_domain(s, id);
    if (d < 0) {
      d = tp_snapshot_dom_add(s, id, (int64_t)(s->n_levels - i), s->levels[i], (int32_t)parent);
      if (d < 0)
        return d;
    } else if (s->dom_parent[d] != parent) {
      /* Same id under another parent cannot happen: ids carry every level
       * above, and a HyperNode-free build has no other names. */
      return GC_EINVAL;
    }
    parent = d;
  }
  return parent;
}

/* Reads the parts of a Node document the model uses; reports problems. */
int tp_snapshot_node_parse(struct gc_arena *a, const struct gc_value *doc, const char *origin,
                           struct node_in *out, struct gc_diags *diags) {
  const char *name = gc_value_as_str(gc_value_path(doc, "metadata.name"));
  if (!name || !*name) {
    gc_diags_addf(diags, "%s: Node: metadata.name: required", tp_pfx(origin));
    return GC_EINVAL;
  }
  if (strlen(name) > TP_MAX_NAME) {
    gc_diags_addf(diags, "%s: Node/%.40s...: metadata.name: longer than %d bytes", tp_pfx(origin),
                  name, TP_MAX_NAME);
    return GC_EINVAL;
  }
  out->name = name;
  out->origin = origin;
  out->labels = gc_value_path(doc, "metadata.labels");
  if (out->labels && out->labels->type != GC_MAP) {
    gc_diags_addf(diags, "%s: Node/%s: metadata.labels: must be an object", tp_pfx(origin), name);
    return GC_EINVAL;
  }
  out->alloc = gc_value_path(doc, "status.allocatable");
  if (out->alloc && out->alloc->type != GC_MAP) {
    gc_diags_addf(diags, "%s: Node/%s: status.allocatable: must be an object", tp_pfx(origin), name);
    return GC_EINVAL;
  }
  out->excl = NULL;
  const struct gc_value *unsched = gc_value_path(doc, "spec.unschedulable");
  if (unsched && unsched->type == GC_BOOL && unsched->u.b)
    out->excl = "unschedulable (cordoned)";
  const struct gc_value *taints = gc_value_path(doc, "spec.taints");
  if (taints && taints->type == GC_SEQ) {
    for (size_t i = 0; i < taints->len && !out->excl; i++) {
      const struct gc_value *t = taints->u.items[i];
      const char *effect = gc_value_as_str(gc_map_get(t, "effect"));
      if (!effect || (strcmp(effect, "NoSchedule") && strcmp(effect, "NoExecute")))
        continue;
      const char *key = gc_value_as_str(gc_map_get(t, "key"));
      const char *val = gc_value_as_str(gc_map_get(t, "value"));
      out->excl = gc_arena_printf(a, "taint %s%s%s:%s", key ? key : "", val ? "=" : "",
                                  val ? val : "", effect);
      if (!out->excl)
        return GC_ENOMEM;
    }
  }
  return GC_OK;
}

/* Why a Node or Pod quantity cannot be used, or NULL with *units set: a
 * negative value is not "invalid", it is refused as the API server does. */
static const char *qty_problem(const struct gc_value *val, const char *key, int64_t *units) {
  struct gc_quantity q;
  if (gc_quantity_from_value(val, &q))
    return "not a valid quantity";
  if (q.mant < 0)
    return "must be greater than or equal to 0";
  if (tp_snapshot_quantity_to_units(key, &q, units))
    return "does not fit an int64 in the resource's unit";
  return NULL;
}

/* Places a parsed node into a fresh or reused slot.  Allocatable problems
 * are reported; the node is still added with what parsed. */
int tp_snapshot_node_insert(struct tp_snapshot *s, const struct node_in *in, uint32_t leaf,
                            int keep_sorted, struct gc_diags *diags) {
  int rc = GC_OK;
  uint32_t slot;
  if (s->n_dead) {
    slot = s->dead[--s->n_dead];
  } else {
    if ((rc = tp_snapshot_nodes_reserve(s, s->n_slots + 1)))
      return rc;
    slot = (uint32_t)s->n_slots++;
  }
  const char *copy = gc_arena_strdup(s->arena, in->name);
  if (!copy)
    return GC_ENOMEM;
  s->node_name[slot] = copy;
  s->leaf[slot] = leaf;
  s->state[slot] = in->excl ? TP_NODE_EXCLUDED : TP_NODE_OK;
  s->excl_reason[slot] = in->excl ? gc_arena_strdup(s->arena, in->excl) : NULL;
  for (size_t r = 0; r < s->n_res; r++)
    s->free[r][slot] = s->alloc[r][slot] = 0;
  for (size_t i = 0; in->alloc && i < in->alloc->len; i++) {
    const struct gc_member *m = &in->alloc->u.members[i];
    int64_t v;
    int r;
    const char *why = qty_problem(m->value, m->key, &v);
    if (why) {
      gc_diags_addf(diags, "%s: Node/%s: status.allocatable.%s: %s", tp_pfx(in->origin), in->name,
                    m->key, why);
      rc = GC_EINVAL;
      continue;
    }
    if ((r = resource_add(s, m->key)) < 0) {
      gc_diags_addf(diags, "%s: Node/%s: status.allocatable.%s: more than %d resources",
                    tp_pfx(in->origin), in->name, m->key, TP_MAX_RESOURCES);
      return r;
    }
    s->free[r][slot] = s->alloc[r][slot] = v;
  }
  if (tp_snapshot_hash_grow(&s->node_hash, &s->node_hash_cap, s->n_alive + 1, s->node_name))
    return GC_ENOMEM;
  tp_snapshot_hash_insert(s->node_hash, s->node_hash_cap, copy, slot);
  size_t at = keep_sorted ? by_name_pos(s, copy) : s->n_alive;
  memmove(s->by_name + at + 1, s->by_name + at, (s->n_alive - at) * sizeof(*s->by_name));
  s->by_name[at] = slot;
  s->n_alive++;
  s->layout_version = next_layout_version();
  node_account(s, slot, 1);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Bound pods (open addressing, backward-shift deletion)                */

struct pod_entry {
  const char *key;  /* "namespace/name" in the snapshot arena; NULL: empty */
  const char *node; /* the node it is bound to (arena copy) */
};

struct tp_pod_table {
  struct pod_entry *e;
  size_t cap, n;
};

static void pods_free(struct tp_pod_table *t) {
  if (!t)
    return;
  free(t->e);
  free(t);
}

static int64_t pods_find(const struct tp_pod_table *t, const char *key) {
  if (!t || !t->cap)
    return -1;
  size_t mask = t->cap - 1;
  for (size_t h = hash_str(key) & mask; t->e[h].key; h = (h + 1) & mask)
    if (!strcmp(t->e[h].key, key))
      return (int64_t)h;
  return -1;
}

static int pods_grow(struct tp_snapshot *s) {
  if (!s->pods && !(s->pods = calloc(1, sizeof(*s->pods))))
    return GC_ENOMEM;
  struct tp_pod_table *t = s->pods;
  if (t->cap && (t->n + 1) * 2 <= t->cap)
    return GC_OK;
  size_t ncap = t->cap ? t->cap * 2 : 64;
  struct pod_entry *ne = calloc(ncap, sizeof(*ne));
  if (!ne)
    return GC_ENOMEM;
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->e[i].key)
      continue;
    size_t h = hash_str(t->e[i].key) & (ncap - 1);
    while (ne[h].key)
      h = (h + 1) & (ncap - 1);
    ne[h] = t->e[i];
  }
  free(t->e);
  t->e = ne;
  t->cap = ncap;
  return GC_OK;
}

/* Records key as bound to node (replacing an older record). */
static int pods_put(struct tp_snapshot *s, const char *key, const char *node) {
  int64_t at = pods_find(s->pods, key);
  const char *n = gc_arena_strdup(s->arena, node);
  if (!n)
    return GC_ENOMEM;
  if (at >= 0) {
    s->pods->e[at].node = n;
    return GC_OK;
  }
  const char *k = gc_arena_strdup(s->arena, key);
  if (!k || pods_grow(s))
    return GC_ENOMEM;
  struct tp_pod_table *t = s->pods;
  size_t h = hash_str(k) & (t->cap - 1);
  while (t->e[h].key)
    h = (h + 1) & (t->cap - 1);
  t->e[h].key = k;
  t->e[h].node = n;
  t->n++;
  return GC_OK;
}

static void pods_delete(struct tp_pod_table *t, size_t i) {
  size_t mask = t->cap - 1;
  t->e[i].key = NULL;
  t->n--;
  for (size_t j = (i + 1) & mask; t->e[j].key; j = (j + 1) & mask) {
    size_t home = hash_str(t->e[j].key) & mask;
    /* Move e[j] into the hole when its home is not in (i, j]. */
    if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
      t->e[i] = t->e[j];
      t->e[j].key = NULL;
      i = j;
    }
  }
}

/* Forgets the pods bound to a node that leaves: its free amounts start
 * again from allocatable when it comes back, so they are no longer
 * accounted.  O(table); nodes leave rarely. */
static void pods_drop_node(struct tp_pod_table *t, const char *node) {
  if (!t)
    return;
  for (size_t i = 0; i < t->cap;) {
    /* Deleting shifts a later entry into slot i: look at i again. */
    if (t->e[i].key && !strcmp(t->e[i].node, node))
      pods_delete(t, i);
    else
      i++;
  }
}

/* "namespace/name" of a pod into buf; 0, or GC_EINVAL without a name. */
static int pod_key(const struct gc_value *pod, char *buf, size_t cap) {
  const char *ns = gc_value_as_str(gc_value_path(pod, "metadata.namespace"));
  const char *name = gc_value_as_str(gc_value_path(pod, "metadata.name"));
  if (!name || !*name)
    return GC_EINVAL;
  snprintf(buf, cap, "%s/%s", ns && *ns ? ns : "default", name);
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Pods                                                                 */

/* Reads a container's per-resource request (requests, or limits when a
 * resource has only a limit) and adds it to acc[] (by resource index).  The
 * container is where's spec.<list>[index]: its path is written only into a
 * message, not for every container read. */
static int container_req(struct tp_snapshot *s, const struct gc_value *c, const char *where,
                         const char *list, size_t index, int64_t *acc, struct gc_diags *diags) {
  const struct gc_value *req = gc_value_path(c, "resources.requests");
  const struct gc_value *lim = gc_value_path(c, "resources.limits");
  int rc = GC_OK;
  for (int pass = 0; pass < 2; pass++) {
    const struct gc_value *m = pass ? lim : req;
    if (!m)
      continue;
    if (m->type != GC_MAP) {
      gc_diags_addf(diags, "%s: spec.%s[%zu].resources.%s: must be an object", where, list,
                    index, pass ? "limits" : "requests");
      rc = GC_EINVAL;
      continue;
    }
    for (size_t i = 0; i < m->len; i++) {
      const char *key = m->u.members[i].key;
      if (pass && gc_map_get(req, key))
        continue; /* the request wins over the limit */
      int64_t v;
      const char *why = qty_problem(m->u.members[i].value, key, &v);
      if (why) {
        gc_diags_addf(diags, "%s: spec.%s[%zu].resources.%s.%s: %s", where, list, index,
                      pass ? "limits" : "requests", key, why);
        rc = GC_EINVAL;
        continue;
      }
      int r = resource_add(s, key);
      if (r < 0)
        return r;
      acc[r] = sat_add(acc[r], v);
    }
  }
  return rc;
}

/* Kubernetes' pod request rule: max(sum of containers + restartable init
 * containers, the largest init step) + overhead, plus one "pods". */
static int pod_requests(struct tp_snapshot *s, const struct gc_value *pod, const char *where,
                        int64_t *out, struct gc_diags *diags) {
  int64_t sum[TP_MAX_RESOURCES] = {0}, side[TP_MAX_RESOURCES] = {0},
          initmax[TP_MAX_RESOURCES] = {0}, one[TP_MAX_RESOURCES];
  int rc = GC_OK;
  const struct gc_value *cs = gc_value_path(pod, "spec.containers");
  for (size_t i = 0; cs && cs->type == GC_SEQ && i < cs->len; i++) {
    int e = container_req(s, cs->u.items[i], where, "containers", i, sum, diags);
    if (e == GC_ELIMIT || e == GC_ENOMEM)
      return e;
    if (e)
      rc = e;
  }
  const struct gc_value *ics = gc_value_path(pod, "spec.initContainers");
  for (size_t i = 0; ics && ics->type == GC_SEQ && i < ics->len; i++) {
    const struct gc_value *c = ics->u.items[i];
    memset(one, 0, sizeof(one));
    int e = container_req(s, c, where, "initContainers", i, one, diags);
    if (e == GC_ELIMIT || e == GC_ENOMEM)
      return e;
    if (e)
      rc = e;
    const char *rp = gc_value_as_str(gc_map_get(c, "restartPolicy"));
    int restartable = rp && !strcmp(rp, "Always");
    for (size_t r = 0; r < s->n_res; r++) {
      int64_t step;
      if (restartable) {
        side[r] = sat_add(side[r], one[r]);
        step = side[r];
      } else {
        step = sat_add(one[r], side[r]);
      }
      if (step > initmax[r])
        initmax[r] = step;
    }
  }
  const struct gc_value *ov = gc_value_path(pod, "spec.overhead");
  memset(one, 0, sizeof(one));
  if (ov && ov->type == GC_MAP) {
    for (size_t i = 0; i < ov->len; i++) {
      int64_t v;
      const char *key = ov->u.members[i].key;
      const char *why = qty_problem(ov->u.members[i].value, key, &v);
      if (why) {
        gc_diags_addf(diags, "%s: spec.overhead.%s: %s", where, key, why);
        rc = GC_EINVAL;
        continue;
      }
      int r = resource_add(s, key);
      if (r < 0)
        return r;
      one[r] = v;
    }
  }
  for (size_t r = 0; r < s->n_res; r++) {
    int64_t v = sat_add(sum[r], side[r]);
    if (initmax[r] > v)
      v = initmax[r];
    out[r] = sat_add(v, one[r]);
  }
  int pr = resource_add(s, "pods");
  if (pr < 0)
    return pr;
  out[pr] = sat_add(out[pr], 1);
  return rc;
}

static void node_set_free(struct tp_snapshot *s, uint32_t slot, size_t r, int64_t v) {
  int64_t old = s->free[r][slot];
  s->free[r][slot] = v;
  if (s->state[slot] != TP_NODE_OK)
    return;
  int64_t delta = pos(v) - pos(old);
  if (!delta)
    return;
  for (int64_t d = s->leaf[slot]; d >= 0; d = s->dom_parent[d])
    sum_add(&s->dom_free[r][d], delta);
}

int tp_snapshot_apply_pod(struct tp_snapshot *s, const struct gc_value *pod, int sign,
                          const char *origin, int *applied, struct gc_diags *diags) {
  if (applied)
    *applied = 0;
  if (!s || !pod)
    return GC_EINVAL;
  const char *node = gc_value_as_str(gc_value_path(pod, "spec.nodeName"));
  const char *phase = gc_value_as_str(gc_value_path(pod, "status.phase"));
  if (!node || !*node)
    return GC_OK;
  if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
    return GC_OK;
  int64_t slot = tp_snapshot_node(s, node);
  if (slot < 0)
    return GC_OK;
  const char *ns = gc_value_as_str(gc_value_path(pod, "metadata.namespace"));
  const char *name = gc_value_as_str(gc_value_path(pod, "metadata.name"));
  char where[640];
  snprintf(where, sizeof(where), "%s: Pod %s/%s", tp_pfx(origin), ns ? ns : "default",
           name ? name : "?");
  int64_t req[TP_MAX_RESOURCES] = {0};
  int rc = pod_requests(s, pod, where, req, diags);
  if (rc)
    return rc;
  for (size_t r = 0; r < s->n_res; r++)
    if (req[r])
      node_set_free(s, (uint32_t)slot, r,
                    sat_add(s->free[r][slot], sign > 0 ? -req[r] : req[r]));
  char key[600];
  if (pod_key(pod, key, sizeof(key)) == GC_OK) {
    int64_t at = pods_find(s->pods, key);
    if (sign > 0 && (rc = pods_put(s, key, node)))
      return rc;
    if (sign < 0 && at >= 0)
      pods_delete(s->pods, (size_t)at);
  }
  if (applied)
    *applied = 1;
  return GC_OK;
}

/* The checks of tp_snapshot_update_pod that need no requests. */
static int pod_update_check(struct tp_snapshot *s, const struct gc_value *pod, int sign,
                            const char *node, const char *where, const char *key,
                            struct gc_diags *diags) {
  const char *nn = gc_value_as_str(gc_value_path(pod, "spec.nodeName"));
  const char *phase = gc_value_as_str(gc_value_path(pod, "status.phase"));
  if (!nn || !*nn) {
    gc_diags_addf(diags, "%s: spec.nodeName: required (only bound pods change the model)", where);
    return GC_EINVAL;
  }
  if (node && *node && strcmp(node, nn)) {
    gc_diags_addf(diags, "%s: spec.nodeName '%.253s' differs from the update's node '%.253s'",
                  where, nn, node);
    return GC_EINVAL;
  }
  if (tp_snapshot_node(s, nn) < 0) {
    gc_diags_addf(diags, "%s: spec.nodeName: no node '%.253s' in the snapshot", where, nn);
    return GC_ENOTFOUND;
  }
  int64_t at = pods_find(s->pods, key);
  if (sign > 0 && phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
    gc_diags_addf(diags, "%s: status.phase %s: a finished pod cannot be bound", where, phase);
    return GC_EINVAL;
  }
  if (sign > 0 && at >= 0) {
    gc_diags_addf(diags, "%s: already bound to node '%s'", where, s->pods->e[at].node);
    return GC_EINVAL;
  }
  if (sign < 0 && at < 0) {
    gc_diags_addf(diags, "%s: was never bound (released without a bind)", where);
    return GC_EINVAL;
  }
  if (sign < 0 && strcmp(s->pods->e[at].node, nn)) {
    gc_diags_addf(diags, "%s: bound to node '%s', not '%.253s'", where, s->pods->e[at].node, nn);
    return GC_EINVAL;
  }
  return GC_OK;
}

int tp_snapshot_update_pod(struct tp_snapshot *s, const struct gc_value *pod, int sign,
                           const char *node, const char *origin, struct gc_diags *diags) {
  if (!s || !pod || !sign)
    return GC_EUSAGE;
  char key[600], where[700];
  if (pod_key(pod, key, sizeof(key))) {
    gc_diags_addf(diags, "%s: Pod: metadata.name: required", tp_pfx(origin));
    return GC_EINVAL;
  }
  snprintf(where, sizeof(where), "%s: Pod %s", tp_pfx(origin), key);
  int rc = pod_update_check(s, pod, sign, node, where, key, diags);
  if (rc)
    return rc;
  const char *nn = gc_value_as_str(gc_value_path(pod, "spec.nodeName"));
  uint32_t slot = (uint32_t)tp_snapshot_node(s, nn);
  int64_t req[TP_MAX_RESOURCES] = {0};
  if ((rc = pod_requests(s, pod, where, req, diags)))
    return rc;
  for (size_t r = 0; sign < 0 && r < s->n_res; r++) {
    int64_t v = sat_add(s->free[r][slot], req[r]);
    if (req[r] && v > s->alloc[r][slot]) {
      char a[GC_QUANTITY_BUFSZ], b[GC_QUANTITY_BUFSZ];
      tp_snapshot_units_format(s->res_name[r], v, a, sizeof(a));
      tp_snapshot_units_format(s->res_name[r], s->alloc[r][slot], b, sizeof(b));
      gc_diags_addf(diags, "%s: releasing it would raise free %s on node '%s' to %s, above its "
                    "allocatable %s", where, s->res_name[r], nn, a, b);
      return GC_EINVAL;
    }
  }
  /* Not tp_snapshot_apply_pod: that skips finished pods, and a released
   * pod has usually finished. */
  for (size_t r = 0; r < s->n_res; r++)
    if (req[r])
      node_set_free(s, slot, r, sat_add(s->free[r][slot], sign > 0 ? -req[r] : req[r]));
  if (sign > 0)
    return pods_put(s, key, nn);
  pods_delete(s->pods, (size_t)pods_find(s->pods, key));
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Build                                                                */

struct tp_snapshot *tp_snapshot_alloc(void) {
  struct tp_snapshot *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->layout_version = next_layout_version();
  s->arena = gc_arena_new(0);
  if (!s->arena) {
    free(s);
    return NULL;
  }
  return s;
}

void tp_snapshot_free(struct tp_snapshot *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n_members; i++)
    if (s->members[i].re_ok)
      regfree(&s->members[i].re);
  free(s->members);
  free(s->member_hash);
  free(s->member_names);
  free(s->inexact);
  free(s->node_name);
  free(s->leaf);
  free(s->state);
  free(s->excl_reason);
  free(s->by_name);
  free(s->dead);
  free(s->node_hash);
  for (size_t r = 0; r < s->n_res; r++) {
    free(s->free[r]);
    free(s->alloc[r]);
    free(s->dom_free[r]);
  }
  pods_free(s->pods);
  free(s->dom_name);
  free(s->dom_tier);
  free(s->dom_tier_name);
  free(s->dom_parent);
  free(s->dom_tin);
  free(s->dom_tout);
  free(s->dom_post);
  free(s->dom_nodes);
  free(s->dom_excluded);
  free(s->dom_hash);
  free(s->tiers);
  free(s->tier_start);
  free(s->tier_dom);
  gc_arena_free(s->arena);
  free(s);
}

static uint32_t leaf_fast(struct tp_snapshot *s, const struct node_in *in,
                          struct gc_diags *diags);

uint32_t tp_snapshot_find_leaf(struct tp_snapshot *s, const struct node_in *in, int *err,
                               struct gc_diags *diags) {
  if (s->use_levels) {
    int64_t d = leaf_from_levels(s, in->labels);
    if (d < 0) {
      *err = (int)d;
      gc_diags_addf(diags,
                    "%s: Node/%s: metadata.labels: cannot place the node in the label levels "
                    "(%s: a level label value contains '/' or the values are too long)",
                    tp_pfx(in->origin), in->name, gc_diag_strerror((int)d));
      return 0;
    }
    return (uint32_t)d;
  }
  return leaf_fast(s, in, diags);
}

/* Exact-match members resolve through a hash; the rest are matched one by
 * one.  Returns the chosen leaf as leaf_from_members does. */
static uint32_t leaf_fast(struct tp_snapshot *s, const struct node_in *in,
                          struct gc_diags *diags) {
  int64_t best = -1, other = -1;
  size_t nmatch = 0;
  int64_t idx = tp_snapshot_hash_find(s->member_hash, s->member_hash_cap, s->member_names,
                                      in->name);
  for (int64_t i = idx; i >= 0; i = s->members[i].next_exact) {
    int64_t d = s->members[i].dom;
    if (d == best || d == other)
      continue;
    nmatch++;
    if (best < 0 || s->dom_tier[d] < s->dom_tier[best] ||
        (s->dom_tier[d] == s->dom_tier[best] && strcmp(s->dom_name[d], s->dom_name[best]) < 0)) {
      other = best;
      best = d;
    } else if (other < 0) {
      other = d;
    }
  }
  for (size_t q = 0; q < s->n_inexact; q++) {
    const struct tp_member *m = &s->members[s->inexact[q]];
    if (!member_matches(m, in->name, in->labels))
      continue;
    int64_t d = m->dom;
    if (d == best || d == other)
      continue;
    nmatch++;
    if (best < 0 || s->dom_tier[d] < s->dom_tier[best] ||
        (s->dom_tier[d] == s->dom_tier[best] && strcmp(s->dom_name[d], s->dom_name[best]) < 0)) {
      other = best;
      best = d;
    } else if (other < 0) {
      other = d;
    }
  }
  if (nmatch > 1)
    gc_diags_warnf(diags,
                   "%s: Node/%s: is a member of %zu HyperNodes (%s and %s at least); using %s "
                   "(lowest tier, then first by name)",
                   tp_pfx(in->origin), in->name, nmatch, s->dom_name[best], s->dom_name[other],
                   s->dom_name[best]);
  return best < 0 ? 0 : (uint32_t)best;
}

/* ------------------------------------------------------------------ */
/* Updates                                                              */

int tp_snapshot_set_free(struct tp_snapshot *s, const char *node, const char *resource,
                         int64_t value) {
  if (!s || !node || !resource)
    return GC_EUSAGE;
  int64_t slot = tp_snapshot_node(s, node);
  if (slot < 0)
    return GC_ENOTFOUND;
  int r = resource_add(s, resource);
  if (r < 0)
    return r;
  node_set_free(s, (uint32_t)slot, (size_t)r, value);
  return GC_OK;
}

int tp_snapshot_adjust_free(struct tp_snapshot *s, uint32_t slot, int r, int64_t delta) {
  if (!s)
    return GC_EUSAGE;
  if (slot >= s->n_slots || s->state[slot] == TP_NODE_DEAD)
    return GC_ENOTFOUND;
  if (r < 0 || (size_t)r >= s->n_res)
    return GC_EINVAL;
  int64_t v;
  if (__builtin_add_overflow(s->free[r][slot], delta, &v))
    return GC_ERANGE;
  node_set_free(s, slot, (size_t)r, v);
  return GC_OK;
}

int tp_snapshot_set_free_list(struct tp_snapshot *s, const char *node,
                              const struct gc_reslist *list, struct gc_diags *diags) {
  if (!s || !node || !list)
    return GC_EUSAGE;
  int64_t slot = tp_snapshot_node(s, node);
  if (slot < 0) {
    gc_diags_addf(diags, "Node/%s: not in the snapshot", node);
    return GC_ENOTFOUND;
  }
  for (size_t i = 0; i < list->n; i++) {
    int64_t v;
    if (tp_snapshot_quantity_to_units(list->items[i].name, &list->items[i].q, &v)) {
      gc_diags_addf(diags, "Node/%s: %s: quantity out of range", node, list->items[i].name);
      return GC_ERANGE;
    }
    int e = tp_snapshot_set_free(s, node, list->items[i].name, v);
    if (e)
      return e;
  }
  return GC_OK;
}

/* Checks one amount of tp_snapshot_update_free. */
static int free_check(const struct tp_snapshot *s, uint32_t slot, const struct gc_resource *it,
                      const char *where, struct gc_diags *diags) {
  int64_t v;
  if (tp_snapshot_quantity_to_units(it->name, &it->q, &v)) {
    gc_diags_addf(diags, "%s.free.values[%s]: quantity out of range", where, it->name);
    return GC_EINVAL;
  }
  int r = tp_snapshot_resource(s, it->name);
  int64_t alloc = r >= 0 ? s->alloc[r][slot] : 0;
  char a[GC_QUANTITY_BUFSZ], b[GC_QUANTITY_BUFSZ];
  tp_snapshot_units_format(it->name, v, a, sizeof(a));
  tp_snapshot_units_format(it->name, alloc, b, sizeof(b));
  if (v < 0) {
    gc_diags_addf(diags, "%s.free.values[%s]: %s is negative", where, it->name, a);
    return GC_EINVAL;
  }
  if (v > alloc) {
    gc_diags_addf(diags, "%s.free.values[%s]: %s is above the node's allocatable %s", where,
                  it->name, a, b);
    return GC_EINVAL;
  }
  return GC_OK;
}

int tp_snapshot_update_free(struct tp_snapshot *s, const char *node,
                            const struct gc_reslist *list, const char *where,
                            struct gc_diags *diags) {
  if (!s || !node || !list || !where)
    return GC_EUSAGE;
  int64_t slot = tp_snapshot_node(s, node);
  if (slot < 0) {
    gc_diags_addf(diags, "%s.name: no node '%.253s' in the snapshot", where, node);
    return GC_ENOTFOUND;
  }
  for (size_t i = 0; i < list->n; i++) {
    int rc = free_check(s, (uint32_t)slot, &list->items[i], where, diags);
    if (rc)
      return rc;
  }
  return tp_snapshot_set_free_list(s, node, list, diags);
}

int tp_snapshot_add_node(struct tp_snapshot *s, const struct gc_value *doc, const char *origin,
                         struct gc_diags *diags) {
  if (!s || !doc)
    return GC_EUSAGE;
  struct node_in in;
  int rc = tp_snapshot_node_parse(s->arena, doc, origin, &in, diags);
  if (rc)
    return rc;
  if (tp_snapshot_node(s, in.name) >= 0) {
    gc_diags_addf(diags, "%s: Node/%s: already in the snapshot", tp_pfx(origin), in.name);
    return GC_EINVAL;
  }
  if (s->n_alive >= TP_MAX_NODES)
    return GC_ELIMIT;
  size_t before = s->n_dom;
  int err = 0;
  uint32_t leaf = tp_snapshot_find_leaf(s, &in, &err, diags);
  if (err)
    return err;
  if (s->n_dom != before && (rc = tp_snapshot_dom_reindex(s)))
    return rc;
  return tp_snapshot_node_insert(s, &in, leaf, 1, diags);
}

int tp_snapshot_remove_node(struct tp_snapshot *s, const char *node) {
  if (!s || !node)
    return GC_EUSAGE;
  int64_t slot = tp_snapshot_node(s, node);
  if (slot < 0)
    return GC_ENOTFOUND;
  node_account(s, (uint32_t)slot, -1);
  pods_drop_node(s->pods, node);
  size_t at = by_name_pos(s, node);
  memmove(s->by_name + at, s->by_name + at + 1, (s->n_alive - at - 1) * sizeof(*s->by_name));
  hash_delete(s->node_hash, s->node_hash_cap, s->node_name, node);
  s->n_alive--;
  s->layout_version = next_layout_version();
  s->state[slot] = TP_NODE_DEAD;
  s->node_name[slot] = NULL;
  s->excl_reason[slot] = NULL;
  s->leaf[slot] = 0;
  for (size_t r = 0; r < s->n_res; r++)
    s->free[r][slot] = s->alloc[r][slot] = 0;
  s->dead[s->n_dead++] = (uint32_t)slot;
  return GC_OK;
}

int tp_snapshot_set_excluded(struct tp_snapshot *s, const char *node, const char *reason) {
  if (!s || !node)
    return GC_EUSAGE;
  int64_t slot = tp_snapshot_node(s, node);
  if (slot < 0)
    return GC_ENOTFOUND;
  const char *copy = reason ? gc_arena_strdup(s->arena, reason) : NULL;
  if (reason && !copy)
    return GC_ENOMEM;
  node_account(s, (uint32_t)slot, -1);
  s->state[slot] = reason ? TP_NODE_EXCLUDED : TP_NODE_OK;
  s->excl_reason[slot] = copy;
  node_account(s, (uint32_t)slot, 1);
  return GC_OK;
}

/* ---- Read accessors (see the header) ---------------------------------------- */

size_t tp_snapshot_domain_count(const struct tp_snapshot *s) { return s->n_dom; }
size_t tp_snapshot_node_count(const struct tp_snapshot *s) { return s->n_alive; }
size_t tp_snapshot_slot_count(const struct tp_snapshot *s) { return s->n_slots; }

int64_t tp_snapshot_domain_parent(const struct tp_snapshot *s, uint32_t d) {
  return s->dom_parent[d];
}

int64_t tp_snapshot_child_next(const struct tp_snapshot *s, uint32_t d, int64_t prev) {
  for (size_t e = prev < 0 ? 1 : (size_t)prev + 1; e < s->n_dom; e++)
    if (s->dom_parent[e] == (int32_t)d)
      return (int64_t)e;
  return -1;
}

const char *tp_snapshot_domain_name(const struct tp_snapshot *s, uint32_t d) {
  return s->dom_name[d];
}

int64_t tp_snapshot_domain_tier(const struct tp_snapshot *s, uint32_t d) { return s->dom_tier[d]; }

const char *tp_snapshot_domain_tier_name(const struct tp_snapshot *s, uint32_t d) {
  return s->dom_tier_name[d];
}

uint32_t tp_snapshot_domain_nodes(const struct tp_snapshot *s, uint32_t d) {
  return s->dom_nodes[d];
}

int64_t tp_snapshot_domain_free(const struct tp_snapshot *s, int r, uint32_t d) {
  return s->dom_free[r][d];
}

uint32_t tp_snapshot_node_sorted(const struct tp_snapshot *s, size_t i) { return s->by_name[i]; }

const char *tp_snapshot_node_name(const struct tp_snapshot *s, uint32_t slot) {
  return s->node_name[slot];
}

uint32_t tp_snapshot_node_leaf(const struct tp_snapshot *s, uint32_t slot) {
  return s->leaf[slot];
}

int tp_snapshot_node_state(const struct tp_snapshot *s, uint32_t slot) { return s->state[slot]; }

int64_t tp_snapshot_node_free(const struct tp_snapshot *s, int r, uint32_t slot) {
  return s->free[r][slot];
}

int64_t tp_snapshot_node_alloc(const struct tp_snapshot *s, int r, uint32_t slot) {
  return s->alloc[r][slot];
}

const char *tp_snapshot_resource_name(const struct tp_snapshot *s, int r) {
  return s->res_name[r];
}

size_t tp_snapshot_hn_dropped_count(const struct tp_snapshot *s) { return s->n_hn_dropped; }

void tp_snapshot_hn_dropped(const struct tp_snapshot *s, size_t i, const char **name,
                            const char **why) {
  const struct tp_hypernode_drop *d = s->hn_dropped;
  while (d && i--)
    d = d->next;
  *name = d ? d->name : "";
  *why = d ? d->why : "";
}
