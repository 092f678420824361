/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_watch_test: for tests only.  Functions of gb_kube_watch that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_kube_watch's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_KUBE_WATCH_TEST_H
#define GB_KUBE_WATCH_TEST_H

#include "gb_kube_watch.h"

/* "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR". */
const char *gb_watch_type_name(enum gb_watch_type t);

/* max_event_bytes 0: GB_WATCH_DEFAULT_MAX_EVENT; max_depth 0:
 * GB_WATCH_DEFAULT_DEPTH.  NULL on OOM.  Free with gb_watch_parser_free. */
struct gb_watch_parser *gb_watch_parser_new(size_t max_event_bytes, int max_depth);

void gb_watch_parser_free(struct gb_watch_parser *p);

/* Forgets any partial event (for a new stream). */
void gb_watch_parser_reset(struct gb_watch_parser *p);

/* Feeds len bytes.  Calls fn once per complete event, in order.  Returns 0;
 * the callback's non-zero value; GC_EINVAL for malformed JSON or an event
 * that is not {type, object} (message in diags); GC_ELIMIT when an event
 * exceeds the byte cap or depth.  After an error the parser must be reset. */
int gb_watch_parser_feed(struct gb_watch_parser *p, const char *data, size_t len,
                         gb_watch_event_fn fn, void *arg, struct gc_diags *diags);

/* Keep mode: each event's object is decoded to what the n paths (checked,
 * borrowed until the parser is freed or set again) keep, as gb_keep_prune
 * would leave json-c's tree of it, and an ERROR event's Status whole; 0
 * paths: json-c parses whole events (the default).  Returns 0, or
 * GC_ELIMIT (more than GB_KEEP_MAX - 1 paths, or one of GB_KEEP_DEPTH
 * steps: no room for "object" in front), which leaves the parser parsing
 * whole events. */
int gb_watch_parser_set_keep(struct gb_watch_parser *p, const struct gb_keep *const *paths,
                             size_t n);

/* True when a partial event is buffered (a stream that ends here was cut). */
int gb_watch_parser_pending(const struct gb_watch_parser *p);

#endif
