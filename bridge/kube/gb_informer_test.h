/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informer_test: for tests only.  Functions of gb_informer that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_informer's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_INFORMER_TEST_H
#define GB_INFORMER_TEST_H

#include "gb_informer.h"

/* Copies the last resourceVersion seen (list, event or bookmark). */
void gb_informer_last_rv(struct gb_informer *inf, char *buf, size_t cap);

/* Number of cached objects. */
size_t gb_informer_count(struct gb_informer *inf);

/* Applies one event to the cache of an informer that is not running, as if
 * it came from the watch (ADDED/MODIFIED upsert, DELETED removes, BOOKMARK
 * only records the resourceVersion), calling the handlers on this thread
 * (sealing them first), and marks the informer synced.  For tests and
 * benchmarks that need a filled cache without a server.  obj is borrowed; managedFields is removed from
 * it.  Returns 0, GC_EUSAGE (informer running), GC_EINVAL (no name) or
 * GC_ENOMEM / GC_ELIMIT. */
int gb_informer_feed(struct gb_informer *inf, int watch_type, json_object *obj);

/* The paths the informer's watch decodes each event's object to (set when
 * it is sealed: first started or fed); *n 0 when it decodes whole objects.
 * Borrowed for the informer's life. */
void gb_informer_watch_keeps(struct gb_informer *inf, const struct gb_keep *const **paths,
                             size_t *n);

#endif
