/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_merge: Kubernetes strategic merge of two gc_value trees, as Kubeflow
 * Trainer applies runtime patches and overrides onto a runtime's JobSet
 * template.  New nodes go into the caller's arena; subtrees nothing is
 * merged into are shared with the inputs (never copied), so the result is
 * read-only and lives as long as both inputs.  Neither input is modified.
 * Maps merge recursively, a null in the patch deletes the key, lists of
 * known Kubernetes types merge by their patch merge key (name, or mountPath
 * for volumeMounts) and every other list is replaced.
 */
#ifndef GC_MERGE_H
#define GC_MERGE_H

#include "gc_arena.h"
#include "gc_value.h"

/* Maximum nesting the merge follows; deeper input is refused (GC_ELIMIT). */
#define GC_MERGE_MAX_DEPTH 128

/* Longest pair of lists merged by key (base + patch items); keyed merging
 * is quadratic, so larger lists are refused (GC_ELIMIT). */
#define GC_MERGE_MAX_LIST 4096

/* Strategic-merges patch over base into *out: new nodes in arena a, the rest
 * borrowed from base and patch (only read; either may be NULL).  `field` names the key the two
 * values sit under (NULL at the root) and picks the list merge rule.
 * Returns 0, GC_ENOMEM or GC_ELIMIT. */
int gc_merge_strategic(struct gc_arena *a, const struct gc_value *base,
                       const struct gc_value *patch, const char *field, struct gc_value **out);

#endif
