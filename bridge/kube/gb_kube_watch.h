/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_watch: the Kubernetes watch stream.  A watch response is a
 * sequence of JSON objects {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR,
 * "object": {...}} (newline-separated in practice, but nothing here relies on
 * newlines).  gb_watch_parser turns arbitrary byte chunks, split anywhere,
 * into events with json-c's incremental json_tokener, bounded by a per-event
 * byte cap and a nesting depth; given keep paths (gb_keep.h), it frames the
 * events itself and decodes only what the paths keep (gb_keep_decode).  gb_kube_watch_once runs one watch request
 * (watch=1, resourceVersion, allowWatchBookmarks, timeoutSeconds) through
 * gb_kube_client's streaming GET and the parser.  Reconnection, relisting and
 * backoff policy live in gb_informer.
 *
 * Thread-safety: a gb_watch_parser belongs to one thread at a time.
 * gb_kube_watch_once is reentrant (one call per thread).
 */
#ifndef GB_KUBE_WATCH_H
#define GB_KUBE_WATCH_H

#include <json-c/json.h>
#include <stddef.h>

#include "gb_keep.h"
#include "gb_kube_client.h"
#include "gc_diag.h"

#define GB_WATCH_DEFAULT_MAX_EVENT (8u * 1024 * 1024)
#define GB_WATCH_DEFAULT_DEPTH 64

enum gb_watch_type {
  GB_WATCH_ADDED,
  GB_WATCH_MODIFIED,
  GB_WATCH_DELETED,
  GB_WATCH_BOOKMARK,
  GB_WATCH_ERROR
};

struct gb_watch_event {
  enum gb_watch_type type;
  json_object *object; /* borrowed until the callback returns; a Status for ERROR */
  const char *rv;      /* object.metadata.resourceVersion (opaque), NULL if absent */
  size_t bytes;        /* length of the event's JSON text */
};

/* Return 0 to go on; any other value stops feeding and is returned. */
typedef int (*gb_watch_event_fn)(void *arg, const struct gb_watch_event *ev);

struct gb_watch_parser;

struct gb_kube_watch_opts {
  const char *resource_version; /* NULL or "": server's choice ("most recent") */
  long timeout_s;               /* timeoutSeconds sent to the server; 0: none */
  int bookmarks;                /* allowWatchBookmarks=true */
  const char *label_selector;
  const char *field_selector;
  size_t max_event_bytes; /* 0: default */
  /* The paths (gb_keep.h, checked; borrowed for the call) each event's
   * object is decoded to, skipping everything else as it is read (the
   * scanner, not json-c's whole tree): an informer's cached record plus
   * what its selections read.  n_keep 0: whole objects. */
  const struct gb_keep *const *keep;
  size_t n_keep;
};

/* Watches collection_path once until the server ends the stream (0), the
 * request fails (GC_EIO with e filled: HTTP 410 for a too-old
 * resourceVersion), the stream is malformed or over a limit (GC_EINVAL /
 * GC_ELIMIT, e->message says why), fn returns non-zero (that value), or
 * should_abort returns non-zero (GC_EUSAGE; polled about once a second).
 * The request's overall timeout is timeout_s + 30 s, so a silent connection
 * cannot hang forever. */
int gb_kube_watch_once(struct gb_kube_client *c, const char *collection_path,
                       const struct gb_kube_watch_opts *o, gb_watch_event_fn fn,
                       gb_kube_abort_fn should_abort, void *arg, struct gb_kube_error *e);

#endif
