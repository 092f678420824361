/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_place_svg: the SVG drawing of a placement result, the picture
 * `gangbridge place --svg` writes.  It owns the layout of the domain tree
 * (columns by name order, one row per depth, a row of nodes when there are
 * few enough to draw) and the emission of that layout into a bounded
 * gb_buf; the caller decides where the text goes.  It reads the snapshot
 * only through the accessors of tp_snapshot.h and never prints.
 */
#ifndef GB_PLACE_SVG_H
#define GB_PLACE_SVG_H

#include "gb_buf.h"
#include "gc_diag.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

/* The largest tree drawn; a larger cluster is refused with GC_ELIMIT. */
#define GB_PLACE_SVG_MAX_DOMAINS 2000
#define GB_PLACE_SVG_MAX_NODES 4000
/* Above this many nodes, nodes are not drawn (domains still show counts). */
#define GB_PLACE_SVG_NODES_DRAWN 400
/* A buffer limit that holds the largest tree drawn with long names. */
#define GB_PLACE_SVG_MAX_BYTES ((size_t)64 << 20)

/* Appends the drawing of result res of gang g on snapshot s to out
 * (caller-owned, set up by the caller with its own limit).  ev is the
 * evaluator that produced res (its per-domain and per-node figures are
 * drawn); all inputs are borrowed.  where names the output in messages
 * (for example "--svg"), added to diags (caller-owned).  Returns 0,
 * GC_ELIMIT (the cluster is too large to draw, with a message; or out's
 * limit was reached), GC_ENOMEM, or out's sticky error. */
int gb_place_svg(const struct tp_snapshot *s, const struct tp_evaluator *ev,
                 const struct tp_gang *g, const struct tp_result *res, const char *where,
                 struct gb_buf *out, struct gc_diags *diags);

#endif
