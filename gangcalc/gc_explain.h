/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_explain: the human-readable account of a computed gang: where the
 * runtime and backend came from, every replicated job with its wave, pods,
 * per-pod request and binding in aligned columns, the totals, the PodGroup
 * policy fields and every warning.  It owns the text layout only.
 */
#ifndef GC_EXPLAIN_H
#define GC_EXPLAIN_H

struct gc_gang;

/* Writes the human-readable explanation of g (borrowed) into a new
 * malloc'd string *out (caller frees).  Returns 0 or GC_ENOMEM. */
int gc_explain(const struct gc_gang *g, char **out);

#endif
