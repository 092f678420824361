/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_decision: the durable form of a gang's placement decision, the
 * annotation gangbridge.io/placement-decision on gangbridge's own PodGroup
 * of the gang (docs/placement.md, "What is durable").  It owns the record's
 * format, version 1, compact JSON:
 *
 *   {"v":1,"id":"<16 hex>","gen":G,"at":"<RFC 3339, ms, UTC>","mode":"hard",
 *    "domain":"b1/r1","tier":1,"tierName":"rack","pods":8,
 *    "restriction":{"key":"rack","values":["r1"]},
 *    "sets":[{"pods":8,"req":{"cpu":8000}}],
 *    "nodes":[["n1",0,4],["n2",0,4]],"truncated":0}
 *
 * `restriction` is what the release AND-s into each pod: {"key":K,
 * "values":[...]} (a label level, or kubernetes.io/hostname with at most
 * GB_RESTRICTION_MAX_HOSTS names), {"perPod":true} (each counted pod its
 * own planned node), or {} (the whole cluster: nothing added); `whole` is
 * true for a placement on the whole cluster.  `sets` are the per-pod
 * requests of each pod set in the snapshot's units (cpu in milli-cores,
 * memory in bytes, other resources whole), `nodes` the plan's assignment
 * (node, set index, pods), listed while the record stays within
 * GB_DECISION_MAX_BYTES; `truncated` counts the pods not listed.  The
 * encoder is deterministic; the decoder validates every field and bound
 * and names the field of the first problem.  No I/O.
 *
 * Thread-safety: none needed (values owned by the caller).
 */
#ifndef GB_DECISION_H
#define GB_DECISION_H

#include <stddef.h>
#include <stdint.h>

#include "gb_buf.h"
#include "gb_plan.h"
#include "gb_restriction.h"
#include "gc_arena.h"
#include "gc_diag.h"

#define GB_DECISION_ANNOTATION "gangbridge.io/placement-decision"
#define GB_DECISION_FIELD_MANAGER "gangbridge-placement"
#define GB_DECISION_VERSION 1
#define GB_DECISION_MAX_BYTES (128u << 10) /* annotations are 256 KiB in all */
#define GB_DECISION_MAX_TEXT (256u << 10)  /* what the decoder reads at most */

/* A decision as recorded.  Everything the record points to lives in a. */
struct gb_decision {
  struct gc_arena *a;
  struct gb_plan_record rec; /* the plan's part (members: HOSTS or perPod nodes) */
  char mode[8];              /* "hard", "soft" or "" */
  struct gb_restriction restr;
  int per_pod; /* each counted pod is restricted to its own planned node */
};

/* A new empty decision with its arena.  Returns 0 or GC_ENOMEM. */
int gb_decision_new(struct gb_decision **out);
/* Frees d and its arena.  Accepts NULL. */
void gb_decision_free(struct gb_decision *d);
/* A deep copy of src into *out (caller frees).  Returns 0 or GC_ENOMEM. */
int gb_decision_copy(const struct gb_decision *src, struct gb_decision **out);

/* The id as the record writes it (16 lowercase hex digits). */
void gb_decision_id_text(uint64_t id, char out[17]);

/* Appends d's record text to b (at most GB_DECISION_MAX_BYTES: assignment
 * lines that do not fit are left out and counted in "truncated").
 * Returns 0, GC_ELIMIT (even without the assignment it does not fit) or
 * GC_ENOMEM. */
int gb_decision_encode(const struct gb_decision *d, struct gb_buf *b);

/* Parses a record (at most GB_DECISION_MAX_TEXT bytes) into a new decision
 * (caller frees).  Returns 0, GC_EINVAL (not a valid version-1 record: the
 * first problem named in diags as "<field>: <problem>"), GC_ELIMIT (too
 * long) or GC_ENOMEM. */
int gb_decision_decode(const char *text, size_t len, struct gb_decision **out,
                       struct gc_diags *diags);

#endif
