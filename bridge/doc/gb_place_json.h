/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_place_json: the one builder of a placement result's document, the
 * object `gangbridge place -o json` prints and gRPC Evaluate returns as
 * place_json.  Both call it, so the two cannot drift apart: same keys, same
 * order, same values.
 */
#ifndef GB_PLACE_JSON_H
#define GB_PLACE_JSON_H

#include "gc_arena.h"
#include "gc_value.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

/* Builds the document for result res of gang g on snapshot snap (res must
 * come from an evaluation on snap).  *out is arena-owned (arena a); strings
 * are copied, so it stays valid after the snapshot changes.  Returns 0 or
 * GC_ENOMEM. */
int gb_place_json_result_to_value(struct gc_arena *a, const struct tp_snapshot *snap,
                                  const struct tp_gang *g, const struct tp_result *res,
                                  struct gc_value **out);

#endif
