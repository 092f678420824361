/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_hypernode: Volcano HyperNode documents read into the snapshot's domain
 * tree (see tp_hypernode.h).
 */
#include "tp_hypernode.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_hn(const void *a, const void *b) {
  const struct hn_in *x = a, *y = b;
  return strcmp(x->name, y->name);
}

static int64_t hn_find(const struct hn_in *hn, size_t n, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(hn[mid].name, name);
    if (!c)
      return (int64_t)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Marks h invalid, its reason the first message reported into d since
 * `from` (a lenient build leaves it out; a strict one just fails). */
static void fault(struct hn_in *h, const struct gc_diags *d, size_t from) {
  if (h->bad)
    return;
  h->bad = 1;
  h->why = d && d->n > from ? d->msgs[from] : NULL;
}

static size_t mark(const struct gc_diags *d) { return d ? d->n : 0; }

int tp_hypernode_parse(const struct gc_value *doc, const char *origin, struct hn_in *out,
                       struct gc_diags *diags) {
  const char *name = gc_value_as_str(gc_value_path(doc, "metadata.name"));
  if (!name || !*name || strlen(name) > TP_MAX_NAME) {
    gc_diags_addf(diags, "%s: HyperNode: metadata.name: required (1 to %d bytes)", tp_pfx(origin),
                  TP_MAX_NAME);
    return GC_EINVAL;
  }
  if (!strcmp(name, TP_ROOT_NAME)) {
    gc_diags_addf(diags, "%s: HyperNode/%s: metadata.name: reserved for the cluster root",
                  tp_pfx(origin), name);
    return GC_EINVAL;
  }
  memset(out, 0, sizeof(*out));
  out->name = name;
  out->origin = origin;
  out->parent = -1;
  const struct gc_value *tier = gc_value_path(doc, "spec.tier");
  if (!tier || tier->type != GC_INT || tier->u.i < 0 || tier->u.i > 1000000) {
    gc_diags_addf(diags, "%s: HyperNode/%s: spec.tier: required, an integer from 0", tp_pfx(origin),
                  name);
    return GC_EINVAL;
  }
  out->tier = tier->u.i;
  const struct gc_value *tn = gc_value_path(doc, "spec.tierName");
  if (tn && tn->type != GC_NULL) {
    if (tn->type != GC_STR || tn->len > TP_MAX_NAME) {
      gc_diags_addf(diags, "%s: HyperNode/%s: spec.tierName: must be a string of at most %d bytes",
                    tp_pfx(origin), name, TP_MAX_NAME);
      return GC_EINVAL;
    }
    out->tier_name = tn->u.s;
  }
  out->members = gc_value_path(doc, "spec.members");
  if (!out->members || out->members->type != GC_SEQ || out->members->len == 0) {
    gc_diags_addf(diags, "%s: HyperNode/%s: spec.members: required, at least one member",
                  tp_pfx(origin), name);
    return GC_EINVAL;
  }
  return GC_OK;
}

static int lsel_compile(struct gc_arena *a, const struct gc_value *sel, const char *where,
                        struct tp_member *m, struct gc_diags *diags) {
  if (sel->type != GC_MAP) {
    gc_diags_addf(diags, "%s.labelMatch: must be an object", where);
    return GC_EINVAL;
  }
  const struct gc_value *ml = gc_map_get(sel, "matchLabels");
  const struct gc_value *me = gc_map_get(sel, "matchExpressions");
  if ((ml && ml->type != GC_MAP && ml->type != GC_NULL) ||
      (me && me->type != GC_SEQ && me->type != GC_NULL)) {
    gc_diags_addf(diags, "%s.labelMatch: matchLabels must be an object and matchExpressions a list",
                  where);
    return GC_EINVAL;
  }
  size_t n = (ml && ml->type == GC_MAP ? ml->len : 0) + (me && me->type == GC_SEQ ? me->len : 0);
  m->req = n ? gc_arena_alloc(a, n * sizeof(*m->req)) : NULL;
  if (n && !m->req)
    return GC_ENOMEM;
  m->n_req = 0;
  for (size_t i = 0; ml && ml->type == GC_MAP && i < ml->len; i++) {
    const char *v = gc_value_as_str(ml->u.members[i].value);
    if (!v) {
      gc_diags_addf(diags, "%s.labelMatch.matchLabels.%s: must be a string", where,
                    ml->u.members[i].key);
      return GC_EINVAL;
    }
    struct lsel_req *q = &m->req[m->n_req++];
    /* Selectors outlive the documents: copy every string. */
    q->key = gc_arena_strdup(a, ml->u.members[i].key);
    q->op = LSEL_IN;
    q->vals = gc_arena_alloc(a, sizeof(*q->vals));
    if (!q->vals || !q->key)
      return GC_ENOMEM;
    q->vals[0] = gc_arena_strdup(a, v);
    if (!q->vals[0])
      return GC_ENOMEM;
    q->n_vals = 1;
  }
  for (size_t i = 0; me && me->type == GC_SEQ && i < me->len; i++) {
    const struct gc_value *e = me->u.items[i];
    const char *key = gc_value_as_str(gc_map_get(e, "key"));
    const char *op = gc_value_as_str(gc_map_get(e, "operator"));
    const struct gc_value *vals = gc_map_get(e, "values");
    struct lsel_req *q = &m->req[m->n_req];
    if (!key || !op) {
      gc_diags_addf(diags, "%s.labelMatch.matchExpressions[%zu]: key and operator are required",
                    where, i);
      return GC_EINVAL;
    }
    if (!strcmp(op, "In"))
      q->op = LSEL_IN;
    else if (!strcmp(op, "NotIn"))
      q->op = LSEL_NOTIN;
    else if (!strcmp(op, "Exists"))
      q->op = LSEL_EXISTS;
    else if (!strcmp(op, "DoesNotExist"))
      q->op = LSEL_NOTEXISTS;
    else {
      gc_diags_addf(diags,
                    "%s.labelMatch.matchExpressions[%zu].operator: \"%s\" is not In, NotIn, "
                    "Exists or DoesNotExist",
                    where, i, op);
      return GC_EINVAL;
    }
    size_t nv = vals && vals->type == GC_SEQ ? vals->len : 0;
    int want_vals = q->op == LSEL_IN || q->op == LSEL_NOTIN;
    if (vals && vals->type != GC_SEQ && vals->type != GC_NULL) {
      gc_diags_addf(diags, "%s.labelMatch.matchExpressions[%zu].values: must be a list", where, i);
      return GC_EINVAL;
    }
    if (want_vals != (nv > 0)) {
      gc_diags_addf(diags, "%s.labelMatch.matchExpressions[%zu].values: %s for operator %s", where,
                    i, want_vals ? "must be non-empty" : "must be empty", op);
      return GC_EINVAL;
    }
    q->key = gc_arena_strdup(a, key);
    if (!q->key)
      return GC_ENOMEM;
    q->n_vals = nv;
    q->vals = nv ? gc_arena_alloc(a, nv * sizeof(*q->vals)) : NULL;
    if (nv && !q->vals)
      return GC_ENOMEM;
    for (size_t k = 0; k < nv; k++) {
      q->vals[k] = gc_value_as_str(vals->u.items[k]);
      if (q->vals[k] && !(q->vals[k] = gc_arena_strdup(a, q->vals[k])))
        return GC_ENOMEM;
      if (!q->vals[k]) {
        gc_diags_addf(diags, "%s.labelMatch.matchExpressions[%zu].values[%zu]: must be a string",
                      where, i, k);
        return GC_EINVAL;
      }
    }
    m->n_req++;
  }
  return GC_OK;
}

static int member_push(struct tp_snapshot *s, size_t *cap, struct tp_member **out) {
  if (s->n_members >= TP_MAX_MEMBERS)
    return GC_ELIMIT;
  if (s->n_members == *cap) {
    size_t ncap = *cap ? *cap * 2 : 32;
    struct tp_member *n = realloc(s->members, ncap * sizeof(*n));
    if (!n)
      return GC_ENOMEM;
    s->members = n;
    *cap = ncap;
  }
  *out = &s->members[s->n_members++];
  memset(*out, 0, sizeof(**out));
  (*out)->next_exact = -1;
  return GC_OK;
}

/* Sorts hn by name and reports duplicates.  Returns GC_OK or GC_EINVAL. */
static int hn_sort_unique(struct hn_in *hn, size_t n, struct gc_diags *diags) {
  int rc = GC_OK;
  qsort(hn, n, sizeof(*hn), cmp_hn);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(hn[i].name, hn[i - 1].name)) {
      size_t at = mark(diags);
      gc_diags_addf(diags, "%s: HyperNode/%s: metadata.name: duplicate (also at %s)",
                    tp_pfx(hn[i].origin), hn[i].name, tp_pfx(hn[i - 1].origin));
      fault(&hn[i], diags, at);
      rc = GC_EINVAL;
    }
  return rc;
}

/* One HyperNode member's selector, checked: exactly one kind is set. */
struct member_sel {
  int is_hypernode;
  const struct gc_value *ex, *rx, *lm;
  const char *exname; /* exactMatch.name, when ex */
};

/* Checks member m's type and selector into *ms.  Returns GC_OK or
 * GC_EINVAL (reported at where). */
static int member_sel_read(const struct gc_value *m, const char *where, struct member_sel *ms,
                           struct gc_diags *diags) {
  const char *type = gc_value_as_str(gc_map_get(m, "type"));
  const struct gc_value *sel = gc_map_get(m, "selector");
  if (!type || (strcmp(type, "Node") && strcmp(type, "HyperNode"))) {
    gc_diags_addf(diags, "%s.type: must be \"Node\" or \"HyperNode\"", where);
    return GC_EINVAL;
  }
  ms->is_hypernode = !strcmp(type, "HyperNode");
  ms->ex = gc_map_get(sel, "exactMatch");
  ms->rx = gc_map_get(sel, "regexMatch");
  ms->lm = gc_map_get(sel, "labelMatch");
  int nsel = !!ms->ex + !!ms->rx + !!ms->lm;
  if (!sel || sel->type != GC_MAP || nsel != 1) {
    gc_diags_addf(diags,
                  "%s.selector: exactly one of exactMatch, regexMatch or labelMatch is "
                  "required (found %d)",
                  where, nsel);
    return GC_EINVAL;
  }
  ms->exname = ms->ex ? gc_value_as_str(gc_map_get(ms->ex, "name")) : NULL;
  if (ms->ex && (!ms->exname || !*ms->exname || strlen(ms->exname) > TP_MAX_NAME)) {
    gc_diags_addf(diags, "%s.selector.exactMatch.name: required (1 to %d bytes)", where,
                  TP_MAX_NAME);
    return GC_EINVAL;
  }
  return GC_OK;
}

/* Links the HyperNode member ms of hn[i] as hn[i]'s child.  Returns GC_OK
 * or GC_EINVAL (reported at where; with two parents the other parent is
 * faulted too).  lenient: a member that does not exist is a warning. */
static int member_link(struct hn_in *hn, size_t n, size_t i, const char *where,
                       const struct member_sel *ms, int lenient, struct gc_diags *diags) {
  if (!ms->ex) {
    gc_diags_addf(diags,
                  "%s.selector: a HyperNode member must use exactMatch (%s is only "
                  "for Node members)",
                  where, ms->rx ? "regexMatch" : "labelMatch");
    return GC_EINVAL;
  }
  int64_t c = hn_find(hn, n, ms->exname);
  if (c < 0 && lenient) {
    gc_diags_warnf(diags, "%s.selector.exactMatch.name: HyperNode \"%s\" does not exist (yet)",
                   where, ms->exname);
    return GC_OK;
  }
  if (c < 0) {
    gc_diags_addf(diags, "%s.selector.exactMatch.name: HyperNode \"%s\" does not exist", where,
                  ms->exname);
    return GC_EINVAL;
  }
  if ((size_t)c == i) {
    gc_diags_addf(diags, "%s.selector.exactMatch.name: cycle: %s lists itself", where, ms->exname);
    return GC_EINVAL;
  }
  if (hn[c].parent >= 0 && hn[c].parent != (int64_t)i) {
    size_t at = mark(diags);
    gc_diags_addf(diags,
                  "%s: HyperNode/%s has two parents: %s and %s (a HyperNode may belong "
                  "to one parent only)",
                  where, ms->exname, hn[hn[c].parent].name, hn[i].name);
    fault(&hn[hn[c].parent], diags, at); /* both list it: neither is trusted */
    return GC_EINVAL;
  }
  hn[c].parent = (int64_t)i;
  return GC_OK;
}

/* Compiles a regexMatch member into mm.  Returns GC_OK or GC_EINVAL
 * (reported at where). */
static int member_regex(struct tp_member *mm, const struct gc_value *rx, const char *where,
                        struct gc_diags *diags) {
  const char *pat = gc_value_as_str(gc_map_get(rx, "pattern"));
  mm->kind = MEMBER_REGEX;
  if (!pat || !*pat || strlen(pat) > 1024) {
    gc_diags_addf(diags, "%s.selector.regexMatch.pattern: required (1 to 1024 bytes)", where);
    return GC_EINVAL;
  }
  int re = regcomp(&mm->re, pat, REG_EXTENDED | REG_NOSUB);
  if (re) {
    char buf[256];
    regerror(re, &mm->re, buf, sizeof(buf));
    gc_diags_addf(diags,
                  "%s.selector.regexMatch.pattern: invalid regular expression "
                  "\"%s\": %s",
                  where, pat, buf);
    return GC_EINVAL;
  }
  mm->re_ok = 1;
  return GC_OK;
}

/* Compiles the Node member ms of domain dom into a new s->members entry.
 * Returns GC_OK, GC_EINVAL (reported at where), GC_ELIMIT or GC_ENOMEM. */
static int member_compile(struct tp_snapshot *s, size_t *mcap, int64_t dom, const char *where,
                          const struct member_sel *ms, struct gc_diags *diags) {
  struct tp_member *mm;
  int rc = member_push(s, mcap, &mm);
  if (rc)
    return rc;
  mm->dom = (uint32_t)dom;
  mm->origin = NULL; /* the documents may be freed after the build */
  mm->path = gc_arena_strdup(s->arena, where);
  if (!mm->path)
    return GC_ENOMEM;
  if (ms->ex) {
    mm->kind = MEMBER_EXACT;
    mm->exact = gc_arena_strdup(s->arena, ms->exname);
    return mm->exact ? GC_OK : GC_ENOMEM;
  }
  if (ms->rx)
    return member_regex(mm, ms->rx, where, diags);
  mm->kind = MEMBER_LABEL;
  char w2[700];
  snprintf(w2, sizeof(w2), "%s.selector", where);
  rc = lsel_compile(s->arena, ms->lm, w2, mm, diags);
  if (rc && rc != GC_ENOMEM) {
    mm->kind = MEMBER_EXACT; /* inert: matches nothing useful, build fails anyway */
    mm->exact = "";
  }
  return rc;
}

/* Members: HyperNode children link the tree; Node members are compiled.
 * Returns GC_OK, GC_EINVAL when a member was reported, or a fatal code
 * (GC_ELIMIT, GC_ENOMEM) at once. */
static int hn_members(struct tp_snapshot *s, struct hn_in *hn, size_t n, int lenient,
                      struct gc_diags *diags) {
  int rc = GC_OK;
  size_t mcap = 0;
  for (size_t i = 0; i < n; i++) {
    const struct gc_value *list = hn[i].members;
    for (size_t k = 0; k < list->len; k++) {
      char where[600];
      snprintf(where, sizeof(where), "%s: HyperNode/%s: spec.members[%zu]", tp_pfx(hn[i].origin),
               hn[i].name, k);
      struct member_sel ms;
      size_t at = mark(diags);
      int e = member_sel_read(list->u.items[k], where, &ms, diags);
      if (!e)
        e = ms.is_hypernode ? member_link(hn, n, i, where, &ms, lenient, diags)
                            : member_compile(s, &mcap, hn[i].dom, where, &ms, diags);
      if (e == GC_EINVAL) {
        fault(&hn[i], diags, at);
        rc = e;
      } else if (e) {
        return e;
      }
    }
  }
  return rc;
}

/* Reports the cycle through j found by a parent walk, naming it the way
 * members are listed (parent -> child) from j; every HyperNode on it is
 * faulted. */
static void report_cycle(struct hn_in *hn, int64_t j, struct gc_diags *diags) {
  int64_t ring[64];
  size_t nring = 0;
  int64_t k = j;
  do {
    if (nring < 64)
      ring[nring++] = k;
    k = hn[k].parent;
  } while (k != j);
  char path[1024];
  int w = snprintf(path, sizeof(path), "%s", hn[j].name);
  size_t len = w > 0 ? (size_t)w : 0;
  for (size_t q = nring; q-- > 0 && len < sizeof(path) - 1;) {
    w = snprintf(path + len, sizeof(path) - len, " -> %s", hn[ring[q]].name);
    if (w < 0)
      break;
    len += (size_t)w;
  }
  size_t at = mark(diags);
  gc_diags_addf(diags, "%s: HyperNode/%s: cycle in HyperNode members: %s", tp_pfx(hn[j].origin),
                hn[j].name, path);
  k = j;
  do {
    fault(&hn[k], diags, at);
    k = hn[k].parent;
  } while (k != j);
}

/* Cycles through parent links: each HyperNode has at most one parent, so
 * walking up either ends or revisits a HyperNode of the same walk.  Each
 * cycle is reported and cut.  Returns GC_OK, GC_EINVAL or GC_ENOMEM. */
static int hn_break_cycles(struct hn_in *hn, size_t n, struct gc_diags *diags) {
  int rc = GC_OK;
  int64_t *walk = malloc((n ? n : 1) * sizeof(*walk));
  if (!walk)
    return GC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    walk[i] = -1;
  for (size_t i = 0; i < n; i++) {
    int64_t j = (int64_t)i;
    while (j >= 0 && walk[j] < 0) {
      walk[j] = (int64_t)i;
      j = hn[j].parent;
    }
    if (j < 0 || walk[j] != (int64_t)i)
      continue;
    report_cycle(hn, j, diags);
    rc = GC_EINVAL;
    hn[j].parent = -1;
  }
  free(walk);
  return rc;
}

/* Tiers must grow upward; sets each domain's parent.  A tierName naming
 * two tiers is ambiguous: a warning, and the lowest tier wins.  Returns
 * GC_OK or GC_EINVAL. */
static int hn_check_tiers(struct tp_snapshot *s, struct hn_in *hn, size_t n,
                          struct gc_diags *diags) {
  int rc = GC_OK;
  for (size_t i = 0; i < n; i++) {
    int64_t p = hn[i].parent;
    if (p >= 0 && hn[i].tier >= hn[p].tier) {
      size_t at = mark(diags);
      gc_diags_addf(diags,
                    "%s: HyperNode/%s: spec.tier: %lld is not below the tier of its parent "
                    "%s (%lld); tiers must grow upward",
                    tp_pfx(hn[i].origin), hn[i].name, (long long)hn[i].tier, hn[p].name,
                    (long long)hn[p].tier);
      fault(&hn[p], diags, at); /* the parent lists a member that cannot be below it */
      rc = GC_EINVAL;
    }
    s->dom_parent[hn[i].dom] = p >= 0 ? (int32_t)hn[p].dom : 0;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n && j < i + 64; j++)
      if (hn[i].tier_name && hn[j].tier_name && !strcmp(hn[i].tier_name, hn[j].tier_name) &&
          hn[i].tier != hn[j].tier) {
        gc_diags_warnf(diags,
                       "HyperNode/%s and HyperNode/%s: tierName \"%s\" names tiers %lld "
                       "and %lld; the lower is used",
                       hn[i].name, hn[j].name, hn[i].tier_name, (long long)hn[i].tier,
                       (long long)hn[j].tier);
        break;
      }
  return rc;
}

/* Parses every HyperNode, links the tree and validates it; creates the
 * domains and the compiled Node members.  Returns 0 or GC_EINVAL with every
 * problem reported (and the HyperNodes at fault marked). */
static int hn_build(struct tp_snapshot *s, struct hn_in *hn, size_t n, int lenient,
                    struct gc_diags *diags) {
  int rc = hn_sort_unique(hn, n, diags);
  if (rc)
    return rc;
  int64_t max_tier = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t d = tp_snapshot_dom_add(s, hn[i].name, hn[i].tier, hn[i].tier_name, 0);
    if (d < 0)
      return (int)d;
    hn[i].dom = d;
    if (hn[i].tier > max_tier)
      max_tier = hn[i].tier;
  }
  s->dom_tier[0] = max_tier + 1;
  rc = hn_members(s, hn, n, lenient, diags);
  if (rc && rc != GC_EINVAL)
    return rc;
  int e = hn_break_cycles(hn, n, diags);
  if (e && e != GC_EINVAL)
    return e;
  rc = rc ? rc : e;
  e = hn_check_tiers(s, hn, n, diags);
  return rc ? rc : e;
}

int tp_hypernode_drop(struct tp_snapshot *s, const char *name, const char *why,
                      struct gc_diags *diags) {
  struct tp_hypernode_drop *d = gc_arena_alloc(s->arena, sizeof(*d));
  if (!d || !(d->name = gc_arena_strdup(s->arena, name)) ||
      !(d->why = gc_arena_strdup(s->arena, why)))
    return GC_ENOMEM;
  d->next = NULL;
  if (s->hn_dropped_tail)
    s->hn_dropped_tail->next = d;
  else
    s->hn_dropped = d;
  s->hn_dropped_tail = d;
  s->n_hn_dropped++;
  gc_diags_warnf(diags, "HyperNode/%s left out of the topology (the rest is kept): %s", name, why);
  return GC_OK;
}

/* Copies the HyperNodes of hn not marked bad into live (fresh links). */
static size_t survivors(const struct hn_in *hn, size_t n, struct hn_in *live) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (hn[i].bad)
      continue;
    live[m] = hn[i];
    live[m].orig = (int64_t)i;
    live[m].parent = -1;
    live[m].dom = 0;
    live[m].why = NULL;
    m++;
  }
  return m;
}

/* Finds the invalid HyperNodes of hn (marked bad, with why borrowed from
 * pd) by building the survivors on scratch snapshots until a build passes;
 * leaving a HyperNode out cannot make another invalid, so each round only
 * confirms the last.  Returns 0, GC_EINVAL (a problem no HyperNode is at
 * fault for), GC_ELIMIT or GC_ENOMEM. */
static int find_invalid(struct hn_in *hn, size_t n, struct hn_in *live, struct gc_diags *pd) {
  for (;;) {
    size_t m = survivors(hn, n, live), newly = 0;
    struct tp_snapshot *scratch = tp_snapshot_alloc();
    if (!scratch)
      return GC_ENOMEM;
    int rc = (int)tp_snapshot_dom_add(scratch, TP_ROOT_NAME, 1, NULL, -1);
    if (rc >= 0)
      rc = hn_build(scratch, live, m, 1, pd);
    tp_snapshot_free(scratch);
    if (rc != GC_OK && rc != GC_EINVAL)
      return rc;
    for (size_t j = 0; j < m; j++)
      if (live[j].bad && !hn[live[j].orig].bad) {
        hn[live[j].orig].bad = 1;
        hn[live[j].orig].why = live[j].why;
        newly++;
      }
    if (rc == GC_OK)
      return GC_OK;
    if (!newly)
      return GC_EINVAL;
  }
}

int tp_hypernode_build_all(struct tp_snapshot *s, struct hn_in *hn, size_t n, int lenient,
                           struct gc_diags *diags) {
  if (!lenient)
    return hn_build(s, hn, n, 0, diags);
  struct hn_in *live = malloc((n ? n : 1) * sizeof(*live));
  if (!live)
    return GC_ENOMEM;
  struct gc_diags pd;
  gc_diags_init(&pd);
  pd.max = 16 * n + 64; /* the reasons are read back: keep them all */
  for (size_t i = 0; i < n; i++) {
    hn[i].bad = 0;
    hn[i].why = NULL;
  }
  int rc = find_invalid(hn, n, live, &pd);
  if (rc == GC_EINVAL && pd.n)
    gc_diags_addf(diags, "%s", pd.msgs[0]); /* not pinned on a HyperNode: say what */
  for (size_t i = 0; rc == GC_OK && i < n; i++)
    if (hn[i].bad)
      rc = tp_hypernode_drop(s, hn[i].name, hn[i].why ? hn[i].why : "invalid", diags);
  if (rc == GC_OK)
    rc = hn_build(s, live, survivors(hn, n, live), 1, diags);
  gc_diags_destroy(&pd);
  free(live);
  return rc;
}
