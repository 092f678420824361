/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_keep: what a consumer reads of a Kubernetes object, declared as paths,
 * and the pruning of an object to the union of several consumers' paths
 * (client-go's SetTransform, decided by every consumer of a shared
 * informer instead of by its first).  A path is a list of steps: a member
 * name, "[]" for every element of an array, or "[key=value]" for the
 * elements whose member `key` is the string `value`; the value the last step
 * reaches is kept whole.  So {"metadata", "labels", "app"} keeps one label,
 * {"spec", "containers", "[]", "resources"} every container's resources and
 * {"status", "conditions", "[type=Ready]"} one condition.  Everything no path
 * reaches is removed; a scalar where a path expects more is kept as it is.
 *
 * gb_keep_decode builds that pruned object straight from the JSON text:
 * the pull scanner (gb_jscan) walks the document once, skips (validating)
 * every value no path reaches and only what the paths keep becomes json-c
 * objects, so a watch event costs a skip of its text plus the few objects
 * its consumers read instead of json-c's whole tree and its pruning.
 *
 * Pure functions over json-c objects; thread-safe on distinct objects.
 */
#ifndef GB_KEEP_H
#define GB_KEEP_H

#include <json-c/json.h>
#include <stddef.h>

#include "gb_jscan.h"
#include "gc_diag.h"

#define GB_KEEP_DEPTH 6      /* steps in one path */
#define GB_KEEP_MAX 128      /* paths pruned by at once */
#define GB_KEEP_STEP_MAX 320 /* bytes of one step */

/* One path: its steps, NULL-terminated (a zero-initialised tail ends it). */
struct gb_keep {
  const char *path[GB_KEEP_DEPTH + 1];
};

/* Checks n paths: at least one step each, at most GB_KEEP_DEPTH, every step
 * non-empty and at most GB_KEEP_STEP_MAX bytes, "[...]" steps either "[]"
 * or "[key=value]".  Returns 0 or GC_EINVAL with the path named in d. */
int gb_keep_check(const struct gb_keep *paths, size_t n, struct gc_diags *d);

/* Removes from obj (an object, changed in place) everything none of the n
 * paths (at most GB_KEEP_MAX, already checked) reaches. */
void gb_keep_prune(json_object *obj, const struct gb_keep *const *paths, size_t n);

/* Decodes the value at s's cursor into the object gb_keep_prune would
 * leave of json-c's parse of it (n paths, at most GB_KEEP_MAX, already
 * checked): the same members in the same order, duplicate names resolved
 * as json-c resolves them (the last wins), numbers and escaped strings read
 * by json-c itself (tok, borrowed: a tokener with JSON_TOKENER_STRICT and
 * JSON_TOKENER_ALLOW_TRAILING_CHARS, reset here before each use).  The
 * whole value is validated as RFC 8259 JSON, nesting bounded by
 * s->max_depth; json-c's leniencies (a raw control byte in a string, "1."
 * as a number) are refused.  *out receives a new object (caller puts; NULL
 * for a JSON null).  Returns 0, GC_EINVAL (malformed: s->msg says where),
 * GC_ELIMIT (too deep or too long) or GC_ENOMEM. */
int gb_keep_decode(struct gb_sj *s, const struct gb_keep *const *paths, size_t n,
                   json_tokener *tok, json_object **out);

#endif
