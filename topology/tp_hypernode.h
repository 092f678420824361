/* SPDX-License-Identifier: Apache-2.0
 *
 * tp_hypernode: Volcano HyperNode documents (topology.volcano.sh/v1alpha1)
 * read into a snapshot under construction: each HyperNode becomes a domain,
 * its HyperNode members link the tree (one parent each, no cycles, tiers
 * growing upward), and its Node members (exactMatch, regexMatch,
 * labelMatch) are compiled for tp_snapshot_build to match nodes against.
 * Internal to the topology library.
 */
#ifndef TP_HYPERNODE_H
#define TP_HYPERNODE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_snapshot_int.h"

/* One HyperNode document as parsed (strings borrowed from the document). */
struct hn_in {
  const char *name;
  int64_t tier;
  const char *tier_name;
  const struct gc_value *members;
  const char *origin;
  int64_t parent; /* index into the hn array, -1 none */
  int64_t dom;
  int64_t orig;    /* lenient builds: index in the caller's array */
  int bad;         /* found invalid (lenient builds drop it) */
  const char *why; /* the first problem reported about it, borrowed from the diags */
};

/* Reads doc (borrowed, must outlive *out) into *out.  Returns 0 or
 * GC_EINVAL (reported at origin). */
int tp_hypernode_parse(const struct gc_value *doc, const char *origin, struct hn_in *out,
                       struct gc_diags *diags);

/* Sorts hn[0..n) by name, creates a domain for each in s, links the tree,
 * validates it and compiles the Node members into s->members.  Returns 0,
 * GC_EINVAL with every problem reported, or GC_ELIMIT / GC_ENOMEM at once.
 * With lenient (tp_build_opts.drop_invalid_hypernodes), the invalid
 * HyperNodes are found first on a scratch snapshot and left out, each
 * recorded with tp_hypernode_drop and named in a warning; GC_EINVAL then only when
 * a problem cannot be pinned on a HyperNode. */
int tp_hypernode_build_all(struct tp_snapshot *s, struct hn_in *hn, size_t n, int lenient,
                           struct gc_diags *diags);

/* Records HyperNode name as left out of s, with why (both copied into s's
 * arena), and warns in diags.  Returns 0 or GC_ENOMEM. */
int tp_hypernode_drop(struct tp_snapshot *s, const char *name, const char *why,
                      struct gc_diags *diags);

#endif
