/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informer: a client-go style reflector plus cache for one resource type.
 * One thread per informer: it lists (paged, consistent read), then watches
 * from the list's resourceVersion with allowWatchBookmarks and a jittered
 * timeoutSeconds in [min, 2*min); a normal end rewatches from the last seen
 * resourceVersion; BOOKMARK events only advance it; an expired
 * resourceVersion (HTTP 410 or an in-stream ERROR with code 410) relists;
 * every other failure backs off exponentially with full jitter and then
 * rewatches (after repeated watch failures it relists).  resourceVersion is
 * opaque: it is only stored and sent back, never compared by order.
 *
 * The cache is keyed by "namespace/name" ("name" for cluster-scoped kinds).
 * Each entry keeps the object's compact JSON text with metadata.managedFields
 * removed (one malloc per object: key, resourceVersion, uid and text packed
 * together), which is the smallest faithful form; readers get a json-c object
 * or a gc_value tree in their own arena.  A relist replaces the cache and
 * emits add/update/delete so handlers see every final state once: unchanged
 * objects (same resourceVersion) emit nothing, vanished ones a delete.
 *
 * Over a set of namespaces (opts.namespaces), one such loop runs per
 * namespace, each with its own resourceVersion, and all fill the one cache;
 * a relist replaces only its namespace's part.  Consumers see one informer.
 *
 * Thread-safety: gb_informer_start/stop/free from one controlling thread.
 * Every other function may be called from any thread at any time (the cache
 * is guarded by a rwlock).  Handlers run on an informer thread with no cache
 * lock held, one at a time (serialized across the namespaces' loops), in
 * event order within a namespace; they may call the read functions but
 * must not block for long or call gb_informer_stop.
 */
#ifndef GB_INFORMER_H
#define GB_INFORMER_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "gb_kube_client.h"
#include "gc_arena.h"
#include "gc_value.h"

enum gb_informer_op { GB_INFORMER_ADD, GB_INFORMER_UPDATE, GB_INFORMER_DELETE };

/* One change.  obj is the new object (for DELETE the last known state),
 * borrowed until the handler returns.  old_json is the previous cached text
 * for UPDATE (NULL otherwise), also borrowed. */
struct gb_informer_change {
  enum gb_informer_op op;
  const char *key; /* "ns/name" or "name" */
  const char *ns;  /* "" for cluster-scoped */
  const char *name;
  json_object *obj;
  const char *old_json;
};

typedef void (*gb_informer_handler_fn)(void *arg, const struct gb_informer_change *ch);

/* Called on the informer thread whenever something notable happens (a
 * relist, a watch failure, backoff); for logs.  msg is borrowed. */
typedef void (*gb_informer_log_fn)(void *arg, int is_error, const char *msg);

struct gb_informer_opts {
  const char *group;    /* "" or NULL for the core group */
  const char *version;  /* required */
  const char *resource; /* plural, required */
  const char *namespace;      /* NULL: all namespaces */
  /* A set of namespaces instead (namespace must then be NULL): one
   * list/watch loop per namespace, all in the one cache (keys, reads and
   * handlers as for all namespaces; synced once every namespace has
   * listed).  What a Role per namespace allows, where a ClusterRole is not
   * granted.  Copied; at most 256. */
  const char *const *namespaces;
  size_t n_namespaces;
  const char *label_selector; /* optional */
  const char *field_selector; /* optional */
  long page_limit;            /* list page size; default 500 */
  long min_watch_timeout_s;   /* default 300 (client-go's 5 minutes) */
  size_t max_event_bytes;     /* default 8 MiB */
  size_t max_objects;         /* cache bound; default 1,000,000 */
  double backoff_base_s;      /* default 0.8 (client-go) */
  double backoff_max_s;       /* default 30 */
  int relist_after_failures;  /* consecutive watch failures before a relist; default 5 */
  /* Optional: trims each object in place before it is cached and handed
   * to on_change (client-go's SetTransform), so a cache of a large kind
   * holds only what its owner reads. */
  void (*transform)(json_object *obj);
  gb_informer_handler_fn on_change;
  void *handler_arg;
  gb_informer_log_fn on_log;
  void *log_arg;
};

struct gb_informer_stats {
  uint64_t lists;          /* completed lists */
  uint64_t list_failures;
  uint64_t watches;        /* watch requests started */
  uint64_t watch_failures; /* watch requests that ended with an error */
  uint64_t relists_gone;   /* relists caused by 410 */
  uint64_t events;         /* ADDED/MODIFIED/DELETED received */
  uint64_t bookmarks;
  uint64_t adds, updates, deletes; /* changes delivered to the handler */
  size_t objects;
  size_t cache_bytes; /* bytes held by cache entries (payload plus entry struct) */
};

struct gb_informer;

/* Creates a stopped informer.  client is borrowed (must outlive it); opts
 * strings are copied.  Returns 0, GC_EINVAL (missing version/resource) or
 * GC_ENOMEM. */
int gb_informer_new(struct gb_kube_client *client, const struct gb_informer_opts *opts,
                    struct gb_informer **out, struct gc_diags *diags);

/* Starts the informer thread.  Returns 0, GC_EUSAGE (already started) or
 * GC_ENOMEM. */
int gb_informer_start(struct gb_informer *inf);

/* Stops the thread and waits for it (aborting an in-flight request within
 * about a second).  The cache stays readable.  Idempotent. */
void gb_informer_stop(struct gb_informer *inf);

/* Stops if needed and frees everything.  Accepts NULL. */
void gb_informer_free(struct gb_informer *inf);

/* True once the first list has been applied to the cache. */
int gb_informer_has_synced(struct gb_informer *inf);

/* Waits up to timeout_ms for the first sync.  Returns 1 when synced. */
int gb_informer_wait_synced(struct gb_informer *inf, long timeout_ms);

/* Copies the last resourceVersion seen (list, event or bookmark). */
void gb_informer_last_rv(struct gb_informer *inf, char *buf, size_t cap);

void gb_informer_stats(struct gb_informer *inf, struct gb_informer_stats *out);

/* Looks up ns/name (ns NULL or "" for cluster-scoped).  *out receives a new
 * json-c object (caller puts).  Returns 0 or GC_ENOTFOUND. */
int gb_informer_get_json(struct gb_informer *inf, const char *ns, const char *name,
                         json_object **out);

/* As gb_informer_get_json, converted into an arena-owned gc_value tree.
 * Returns 0, GC_ENOTFOUND, GC_ENOMEM or GC_ELIMIT. */
int gb_informer_get_value(struct gb_informer *inf, const char *ns, const char *name,
                          struct gc_arena *a, struct gc_value **out);

/* Copies the cached resourceVersion (and uid, if uid_buf) of ns/name.
 * Returns 0 or GC_ENOTFOUND. */
int gb_informer_get_meta(struct gb_informer *inf, const char *ns, const char *name,
                         char *rv_buf, size_t rv_cap, char *uid_buf, size_t uid_cap);

/* Calls fn for every cached key (under the read lock: fn must not call
 * informer functions that take the lock).  Stops when fn returns non-zero. */
typedef int (*gb_informer_key_fn)(void *arg, const char *key);
int gb_informer_foreach_key(struct gb_informer *inf, gb_informer_key_fn fn, void *arg);

/* Number of cached objects. */
size_t gb_informer_count(struct gb_informer *inf);

/* Applies one event to the cache of an informer that is not running, as if
 * it came from the watch (ADDED/MODIFIED upsert, DELETED removes, BOOKMARK
 * only records the resourceVersion), calling the handler on this thread, and
 * marks the informer synced.  For tests and benchmarks that need a filled
 * cache without a server.  obj is borrowed; managedFields is removed from
 * it.  Returns 0, GC_EUSAGE (informer running), GC_EINVAL (no name) or
 * GC_ENOMEM / GC_ELIMIT. */
int gb_informer_feed(struct gb_informer *inf, int watch_type, json_object *obj);

/* Transforms for gb_informer_opts.transform.  trim_pod keeps only a pod's
 * identity (namespace, name, uid, resourceVersion, creationTimestamp), its
 * JobSet name label, the group labels and annotations of every backend
 * (gc_backend.h; a pod spec field join keeps its first element), its
 * spec.schedulingGates and its PodScheduled and Ready conditions (type,
 * status, reason, message, lastTransitionTime; for the timeout tracker, whose
 * timeouts.until may be Ready): a few hundred bytes
 * per pod.
 * trim_crd keeps a CRD's name, group, names, scope and versions' name,
 * served and storage (no schema, no status). */
void gb_informer_trim_pod(json_object *obj);
void gb_informer_trim_crd(json_object *obj);

/* Removes metadata.managedFields from obj in place (what the cache stores). */
void gb_informer_strip(json_object *obj);

#endif
