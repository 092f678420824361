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
int64_t tp_dom_add(struct tp_snapshot *s, const char *name, int64_t tier, const char *tier_name,
                   int32_t parent);

#endif
