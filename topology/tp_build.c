/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_build: tp_snapshot_build's phases (see tp_build.h).
 */
#include "tp_build.h"

#include <stdlib.h>
#include <string.h>

#include "tp_hypernode.h"

static int doc_is(const struct gc_value *doc, const char *api, const char *kind) {
  const char *a = gc_value_as_str(gc_map_get(doc, "apiVersion"));
  const char *k = gc_value_as_str(gc_map_get(doc, "kind"));
  return a && k && !strcmp(a, api) && !strcmp(k, kind);
}

static int cmp_node_in(const void *a, const void *b) {
  const struct node_in *x = a, *y = b;
  return strcmp(x->name, y->name);
}

/* The state of one tp_snapshot_build: the parsed input and the last
 * problem reported so far (the build goes on after one, to report all). */
struct build {
  const struct gc_value *const *docs;
  const char *const *origins;
  size_t n;
  struct node_in *nodes; /* owned */
  struct hn_in *hns;     /* owned */
  size_t n_nodes, n_hn;  /* documents of each kind */
  size_t ni, hi;         /* of which parsed */
  int bad;               /* 0, or the code of the last problem reported */
  int missing_members_ok; /* tp_build_opts.missing_members_ok */
  int drop_invalid_hn;    /* tp_build_opts.drop_invalid_hypernodes */
};

static int is_node_doc(const struct gc_value *doc) { return doc_is(doc, "v1", "Node"); }

static int is_hn_doc(const struct gc_value *doc) {
  return doc_is(doc, "topology.volcano.sh/v1alpha1", "HyperNode");
}

/* Counts the documents of each kind and allocates the parse arrays.
 * Returns GC_OK, GC_ELIMIT or GC_ENOMEM. */
static int count_docs(struct build *b, struct gc_diags *diags) {
  size_t n_other = 0;
  for (size_t i = 0; i < b->n; i++) {
    if (!b->docs[i])
      continue;
    if (is_node_doc(b->docs[i]))
      b->n_nodes++;
    else if (is_hn_doc(b->docs[i]))
      b->n_hn++;
    else if (!doc_is(b->docs[i], "v1", "Pod"))
      n_other++;
  }
  if (b->n_nodes > TP_MAX_NODES || b->n_hn + 1 > TP_MAX_DOMAINS) {
    gc_diags_addf(diags, "cluster: %zu Nodes and %zu HyperNodes exceed the limits (%d, %d)",
                  b->n_nodes, b->n_hn, TP_MAX_NODES, TP_MAX_DOMAINS - 1);
    return GC_ELIMIT;
  }
  b->nodes = calloc(b->n_nodes ? b->n_nodes : 1, sizeof(*b->nodes));
  b->hns = calloc(b->n_hn ? b->n_hn : 1, sizeof(*b->hns));
  if (!b->nodes || !b->hns)
    return GC_ENOMEM;
  if (n_other)
    gc_diags_warnf(diags, "cluster: ignored %zu document(s) that are not Nodes, Pods or HyperNodes",
                   n_other);
  return GC_OK;
}

/* Checks --levels and stores them in s; a trailing kubernetes.io/hostname
 * is implied and dropped.  Returns GC_OK, GC_EINVAL, GC_ELIMIT or
 * GC_ENOMEM. */
static int set_levels(struct tp_snapshot *s, const struct tp_build_opts *opts,
                      struct gc_diags *diags) {
  size_t nl = opts->n_levels;
  if (!strcmp(opts->levels[nl - 1], "kubernetes.io/hostname"))
    nl--;
  if (nl > TP_MAX_LEVELS) {
    gc_diags_addf(diags, "--levels: at most %d label levels", TP_MAX_LEVELS);
    return GC_ELIMIT;
  }
  for (size_t i = 0; i < nl; i++) {
    if (!opts->levels[i] || !*opts->levels[i] ||
        !strcmp(opts->levels[i], "kubernetes.io/hostname")) {
      gc_diags_addf(diags, "--levels: level %zu: %s", i + 1,
                    opts->levels[i] && *opts->levels[i]
                        ? "kubernetes.io/hostname may only be the last level"
                        : "empty label key");
      return GC_EINVAL;
    }
    for (size_t j = 0; j < i; j++)
      if (!strcmp(opts->levels[i], opts->levels[j])) {
        gc_diags_addf(diags, "--levels: label %s is listed twice", opts->levels[i]);
        return GC_EINVAL;
      }
    s->levels[i] = gc_arena_strdup(s->arena, opts->levels[i]);
    if (!s->levels[i])
      return GC_ENOMEM;
  }
  s->n_levels = nl;
  s->use_levels = 1;
  return GC_OK;
}

/* Parses one HyperNode document into b->hns.  A lenient build leaves an
 * unparsable one out (recorded and warned, named when it has a name).
 * Returns GC_OK, GC_EINVAL (reported) or GC_ENOMEM. */
static int parse_hn(struct tp_snapshot *s, struct build *b, const struct gc_value *doc,
                    const char *origin, struct gc_diags *diags) {
  if (!b->drop_invalid_hn) {
    int e = tp_hypernode_parse(doc, origin, &b->hns[b->hi], diags);
    b->hi += !e;
    return e;
  }
  struct gc_diags pd;
  gc_diags_init(&pd);
  int e = tp_hypernode_parse(doc, origin, &b->hns[b->hi], &pd);
  b->hi += !e;
  if (e) {
    const char *name = gc_value_as_str(gc_value_path(doc, "metadata.name"));
    e = tp_hypernode_drop(s, name && *name ? name : "(no name)", pd.n ? pd.msgs[0] : "invalid",
                          diags);
  }
  gc_diags_destroy(&pd);
  return e;
}

/* Parses the Node (and, without levels, HyperNode) documents, reports
 * duplicate Node names and builds the HyperNode tree.  Returns GC_OK or a
 * fatal code; reported problems go to b->bad. */
static int parse_docs(struct tp_snapshot *s, struct build *b, struct gc_diags *diags) {
  for (size_t i = 0; i < b->n; i++) {
    const char *o = b->origins ? b->origins[i] : NULL;
    if (!b->docs[i])
      continue;
    if (is_node_doc(b->docs[i])) {
      int e = tp_snapshot_node_parse(s->arena, b->docs[i], o, &b->nodes[b->ni], diags);
      if (e == GC_ENOMEM)
        return e;
      if (e)
        b->bad = e;
      else
        b->ni++;
    } else if (!s->use_levels && is_hn_doc(b->docs[i])) {
      int e = parse_hn(s, b, b->docs[i], o, diags);
      if (e == GC_ENOMEM)
        return e;
      if (e)
        b->bad = e;
    }
  }
  qsort(b->nodes, b->ni, sizeof(*b->nodes), cmp_node_in);
  for (size_t i = 1; i < b->ni; i++)
    if (!strcmp(b->nodes[i].name, b->nodes[i - 1].name)) {
      gc_diags_addf(diags, "%s: Node/%s: metadata.name: duplicate (also at %s)",
                    tp_pfx(b->nodes[i].origin), b->nodes[i].name, tp_pfx(b->nodes[i - 1].origin));
      b->bad = GC_EINVAL;
    }
  if (s->use_levels)
    return GC_OK;
  int e = tp_hypernode_build_all(s, b->hns, b->hi, b->drop_invalid_hn, diags);
  if (e == GC_ENOMEM || e == GC_ELIMIT)
    return e;
  if (e)
    b->bad = e;
  return GC_OK;
}

/* Indexes the exact Node members through a hash (chains link same-name
 * members) and lists the others.  Returns GC_OK or GC_ENOMEM. */
static int index_members(struct tp_snapshot *s) {
  size_t n_exact = 0;
  for (size_t i = 0; i < s->n_members; i++)
    n_exact += s->members[i].kind == MEMBER_EXACT;
  s->member_names = malloc((s->n_members ? s->n_members : 1) * sizeof(*s->member_names));
  s->inexact = malloc((s->n_members ? s->n_members : 1) * sizeof(*s->inexact));
  if (!s->member_names || !s->inexact)
    return GC_ENOMEM;
  for (size_t i = 0; i < s->n_members; i++) {
    s->member_names[i] = s->members[i].kind == MEMBER_EXACT ? s->members[i].exact : "";
    if (s->members[i].kind != MEMBER_EXACT)
      s->inexact[s->n_inexact++] = (uint32_t)i;
  }
  if (!n_exact)
    return GC_OK;
  if (tp_snapshot_hash_grow(&s->member_hash, &s->member_hash_cap, n_exact, s->member_names))
    return GC_ENOMEM;
  for (size_t i = 0; i < s->n_members; i++) {
    if (s->members[i].kind != MEMBER_EXACT)
      continue;
    int64_t first = tp_snapshot_hash_find(s->member_hash, s->member_hash_cap, s->member_names,
                                          s->members[i].exact);
    if (first >= 0) {
      s->members[i].next_exact = s->members[first].next_exact;
      s->members[first].next_exact = (int64_t)i;
    } else {
      tp_snapshot_hash_insert(s->member_hash, s->member_hash_cap, s->members[i].exact, (uint32_t)i);
    }
  }
  return GC_OK;
}

/* Inserts the nodes in name order, so slots start out sorted, then checks
 * that exact Node members name existing nodes.  Returns GC_OK or a fatal
 * code; reported problems go to b->bad. */
static int insert_nodes(struct tp_snapshot *s, struct build *b, struct gc_diags *diags) {
  int rc = tp_snapshot_nodes_reserve(s, b->ni);
  if (rc)
    return rc;
  for (size_t i = 0; i < b->ni; i++) {
    int err = 0;
    uint32_t leaf = tp_snapshot_find_leaf(s, &b->nodes[i], &err, diags);
    if (err)
      return err;
    int e = tp_snapshot_node_insert(s, &b->nodes[i], leaf, 0, diags);
    if (e == GC_ENOMEM || e == GC_ELIMIT)
      return e;
    if (e)
      b->bad = e;
  }
  for (size_t i = 0; i < s->n_members; i++) {
    const struct tp_member *m = &s->members[i];
    if (m->kind != MEMBER_EXACT || !*m->exact || tp_snapshot_node(s, m->exact) >= 0)
      continue;
    if (b->missing_members_ok) {
      gc_diags_warnf(diags, "%s.selector.exactMatch.name: Node \"%s\" does not exist (yet)",
                     m->path, m->exact);
      continue;
    }
    gc_diags_addf(diags, "%s.selector.exactMatch.name: Node \"%s\" does not exist", m->path,
                  m->exact);
    b->bad = GC_EINVAL;
  }
  return GC_OK;
}

/* Applies the Pods bound to known nodes; Pods bound to other nodes are
 * counted in one warning.  Returns GC_OK or a fatal code; reported
 * problems go to b->bad. */
static int apply_pods(struct tp_snapshot *s, struct build *b, struct gc_diags *diags) {
  size_t unknown = 0;
  for (size_t i = 0; i < b->n; i++) {
    if (!b->docs[i] || !doc_is(b->docs[i], "v1", "Pod"))
      continue;
    const char *node = gc_value_as_str(gc_value_path(b->docs[i], "spec.nodeName"));
    if (node && *node && tp_snapshot_node(s, node) < 0) {
      unknown++;
      continue;
    }
    const char *o = b->origins ? b->origins[i] : NULL;
    int e = tp_snapshot_apply_pod(s, b->docs[i], 1, o, NULL, diags);
    if (e == GC_ENOMEM || e == GC_ELIMIT)
      return e;
    if (e)
      b->bad = e;
  }
  if (unknown)
    gc_diags_warnf(diags,
                   "cluster: %zu Pod(s) are bound to nodes that are not in the input; "
                   "ignored",
                   unknown);
  return GC_OK;
}

/* The phases after counting: levels or HyperNodes, the root domain,
 * documents, member index, nodes, domain index and pods.  Returns GC_OK or
 * the first fatal code, or the last problem reported. */
static int build_phases(struct tp_snapshot *s, struct build *b, const struct tp_build_opts *opts,
                        struct gc_diags *diags) {
  int rc;
  if (opts && opts->n_levels) {
    if ((rc = set_levels(s, opts, diags)))
      return rc;
    if (b->n_hn)
      gc_diags_warnf(diags, "cluster: --levels given: %zu HyperNode(s) ignored", b->n_hn);
  }
  int64_t root = tp_snapshot_dom_add(s, TP_ROOT_NAME, s->use_levels ? (int64_t)s->n_levels + 1 : 1,
                                     NULL, -1);
  if (root < 0)
    return (int)root;
  if ((rc = parse_docs(s, b, diags)) || b->bad)
    return rc ? rc : b->bad;
  if ((rc = index_members(s)) || (rc = insert_nodes(s, b, diags)) || b->bad)
    return rc ? rc : b->bad;
  if ((rc = tp_snapshot_dom_reindex(s)) || (rc = apply_pods(s, b, diags)))
    return rc;
  return b->bad;
}

int tp_snapshot_build(const struct gc_value *const *docs, const char *const *origins, size_t n,
                      const struct tp_build_opts *opts, struct tp_snapshot **out,
                      struct gc_diags *diags) {
  if (!out || (n && !docs))
    return GC_EUSAGE;
  *out = NULL;
  struct build b = {.docs = docs,
                    .origins = origins,
                    .n = n,
                    .missing_members_ok = opts && opts->missing_members_ok,
                    .drop_invalid_hn = opts && opts->drop_invalid_hypernodes};
  struct tp_snapshot *s = tp_snapshot_alloc();
  if (!s)
    return GC_ENOMEM;
  int rc = count_docs(&b, diags);
  if (!rc)
    rc = build_phases(s, &b, opts, diags);
  free(b.nodes);
  free(b.hns);
  if (rc) {
    tp_snapshot_free(s);
    return rc;
  }
  *out = s;
  return GC_OK;
}
