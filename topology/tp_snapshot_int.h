/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_snapshot_int: what tp_snapshot.c and tp_hypernode.c share and nothing
 * else sees: the compiled HyperNode members a snapshot holds, and the
 * helpers that add a domain and name an input in a message.  Not part of
 * the public topology API.
 */
#ifndef TP_SNAPSHOT_INT_H
#define TP_SNAPSHOT_INT_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "tp_snapshot.h"

/* A compiled Node member of a HyperNode. */
enum member_kind { MEMBER_EXACT, MEMBER_REGEX, MEMBER_LABEL };
enum lsel_op { LSEL_IN, LSEL_NOTIN, LSEL_EXISTS, LSEL_NOTEXISTS };

struct lsel_req {
  const char *key;
  enum lsel_op op;
  const char **vals;
  size_t n_vals;
};

struct tp_member {
  uint32_t dom;
  enum member_kind kind;
  const char *exact;  /* MEMBER_EXACT */
  int64_t next_exact; /* next member with the same exact name hash chain, -1 */
  regex_t re;         /* MEMBER_REGEX */
  int re_ok;
  struct lsel_req *req; /* MEMBER_LABEL */
  size_t n_req;
  const char *origin; /* for messages */
  const char *path;   /* "HyperNode/x: spec.members[i]" */
};

/* The input a message names: origin, or "<input>" when there is none. */
static inline const char *tp_pfx(const char *origin) { return origin ? origin : "<input>"; }

/* Adds a domain to s (name and tier_name copied into s's arena) and returns
 * its index, or GC_ELIMIT / GC_ENOMEM. */
int64_t tp_snapshot_dom_add(struct tp_snapshot *s, const char *name, int64_t tier,
                            const char *tier_name, int32_t parent);

/* One Node document as parsed (strings borrowed from the document). */
struct node_in {
  const char *name;
  const struct gc_value *labels;
  const struct gc_value *alloc;
  const char *excl;
  const char *origin;
};

/* A new empty snapshot with its arena and a fresh layout version; NULL on
 * OOM.  Free with tp_snapshot_free. */
struct tp_snapshot *tp_snapshot_alloc(void);

/* Open-addressed name tables (value = index + 1) over names[]. */
int tp_snapshot_hash_grow(uint32_t **tab, size_t *cap, size_t want, const char **names);
int64_t tp_snapshot_hash_find(const uint32_t *tab, size_t cap, const char *const *names,
                              const char *key);
void tp_snapshot_hash_insert(uint32_t *tab, size_t cap, const char *key, uint32_t idx);

/* Makes room for want node slots.  Returns 0, GC_ELIMIT or GC_ENOMEM. */
int tp_snapshot_nodes_reserve(struct tp_snapshot *s, size_t want);

/* Recomputes the domain tree's orders and tier tables after domains
 * changed.  Returns 0 or a negative GC_E* code. */
int tp_snapshot_dom_reindex(struct tp_snapshot *s);

/* Reads a Node document (borrowed) into *out; names in a.  Returns 0,
 * GC_EINVAL (reported) or GC_ENOMEM. */
int tp_snapshot_node_parse(struct gc_arena *a, const struct gc_value *doc, const char *origin,
                           struct node_in *out, struct gc_diags *diags);

/* The leaf domain of a parsed node: from the label levels, or from the
 * HyperNode members.  On failure *err is set (reported) and 0 returned. */
uint32_t tp_snapshot_find_leaf(struct tp_snapshot *s, const struct node_in *in, int *err,
                               struct gc_diags *diags);

/* Places a parsed node under leaf.  Returns 0, GC_EINVAL (reported, the
 * node is kept without its bad amounts), GC_ELIMIT or GC_ENOMEM. */
int tp_snapshot_node_insert(struct tp_snapshot *s, const struct node_in *in, uint32_t leaf,
                            int keep_sorted, struct gc_diags *diags);

#endif
