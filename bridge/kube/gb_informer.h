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
 * Over a set of namespaces, one such loop runs per namespace, each with
 * its own resourceVersion, and all fill the one cache; a relist replaces
 * only its namespace's part.  Consumers see one informer.
 *
 * Shared by several consumers (client-go's shared informer): each consumer
 * is a handler with its own selection (namespaces, label and field
 * selectors) and the fields it reads (keep paths, gb_keep.h).  When the
 * informer is first started (or fed) the handlers are sealed into one list
 * and watch: the union of their namespaces, the selectors they all share
 * (or none), and one record per object pruned to the union of their keep
 * paths.  An object no handler selects is not cached.  A handler whose
 * selection the server did not apply gets it applied here (gb_selector):
 * an object that enters its selection is an add, one that leaves it a
 * delete, exactly what its own list and watch would have shown.  A relist
 * (an expired resourceVersion or repeated failures) happens once for all
 * handlers.
 *
 * Thread-safety: gb_informer_add_handler, start, stop, reset and free from
 * one controlling thread (add_handler before the informer is sealed).
 * Every other function may be called from any thread at any time (the cache
 * is guarded by a rwlock).  Handlers run on an informer thread with no cache
 * lock held, one call at a time for all handlers (serialized across the
 * namespaces' loops by the delivery lock), in event order within a
 * namespace, in the order the handlers were added; they may call the read
 * functions but must not block for long or call gb_informer_stop.
 *
 * Lock order: the delivery lock (held while handlers run, and by
 * gb_informer_hold) comes before anything a handler or a hold function
 * takes; the cache rwlock and the state mutex are leaves, never held while
 * a handler or a hold function runs.
 */
#ifndef GB_INFORMER_H
#define GB_INFORMER_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "gb_keep.h"
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
  int initial; /* 1 while the informer's first list is being delivered */
};

typedef void (*gb_informer_handler_fn)(void *arg, const struct gb_informer_change *ch);

/* Called on the informer thread whenever something notable happens (a
 * relist, a watch failure, backoff); for logs.  msg is borrowed. */
typedef void (*gb_informer_log_fn)(void *arg, int is_error, const char *msg);

/* One consumer of an informer: what it selects, what it reads, and its
 * handler.  Strings and the namespace list are copied; keep (static paths,
 * usually) is borrowed until the informer is freed. */
struct gb_informer_handler {
  /* The namespaces it watches: NULL and 0 for every namespace (a
   * cluster-scoped kind has none).  At most 256. */
  const char *const *namespaces;
  size_t n_namespaces;
  const char *label_selector; /* optional */
  const char *field_selector; /* optional */
  /* The fields it reads (gb_keep.h): the cached record keeps the union of
   * every handler's paths, plus metadata's name, namespace, uid and
   * resourceVersion.  NULL: the whole object (less managedFields). */
  const struct gb_keep *keep;
  size_t n_keep;
  size_t max_objects;               /* the cache bound it needs; the informer takes the largest */
  gb_informer_handler_fn on_change; /* NULL: a selection only (cache reads) */
  void *arg;
};

struct gb_informer_opts {
  const char *group;    /* "" or NULL for the core group */
  const char *version;  /* required */
  const char *resource; /* plural, required */
  /* The first handler's selection and handler (gb_informer_handler's
   * fields), registered by gb_informer_new when any of them is set:
   * namespace (one) or namespaces (a set, namespace then NULL), the
   * selectors, keep, on_change.  None set: an informer with no handler yet
   * (gb_informer_add_handler adds them), which caches everything it lists. */
  const char *namespace;
  const char *const *namespaces;
  size_t n_namespaces;
  const char *label_selector;
  const char *field_selector;
  const struct gb_keep *keep;
  size_t n_keep;
  gb_informer_handler_fn on_change;
  void *handler_arg;
  long page_limit;            /* list page size; default 500 */
  long min_watch_timeout_s;   /* default 300 (client-go's 5 minutes) */
  size_t max_event_bytes;     /* default 8 MiB */
  size_t max_objects;         /* cache bound; default 1,000,000 (or the handlers' largest) */
  double backoff_base_s;      /* default 0.8 (client-go) */
  double backoff_max_s;       /* default 30 */
  int relist_after_failures;  /* consecutive watch failures before a relist; default 5 */
  gb_informer_log_fn on_log;
  void *log_arg;
};

/* At most this many handlers per informer. */
#define GB_INFORMER_MAX_HANDLERS 16

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

/* Creates a stopped informer (with opts' handler, see gb_informer_opts).
 * client is borrowed (must outlive it); opts strings are copied.  Returns
 * 0, GC_EINVAL (missing version/resource, a bad selector or keep path) or
 * GC_ENOMEM. */
int gb_informer_new(struct gb_kube_client *client, const struct gb_informer_opts *opts,
                    struct gb_informer **out, struct gc_diags *diags);

/* Adds a consumer before the informer is sealed (first started or fed).
 * Returns 0, GC_EUSAGE (sealed already, or GB_INFORMER_MAX_HANDLERS
 * reached), GC_EINVAL (a bad selector, namespace set or keep path, with a
 * message in diags) or GC_ENOMEM. */
int gb_informer_add_handler(struct gb_informer *inf, const struct gb_informer_handler *h,
                            struct gc_diags *diags);

/* Seals the handlers (see the top) and starts the list/watch threads.
 * Also after a stop (and a reset): the loops resume from the last
 * resourceVersion (relist after a reset).  Returns 0, GC_EUSAGE (running
 * already), GC_EINVAL (the handlers' namespace sets cannot be joined: more
 * than 256) or GC_ENOMEM. */
int gb_informer_start(struct gb_informer *inf);

/* 1 while the list/watch threads run. */
int gb_informer_running(struct gb_informer *inf);

/* Stops the threads and waits for them (aborting an in-flight request
 * within about a second).  The cache stays readable.  Idempotent. */
void gb_informer_stop(struct gb_informer *inf);

/* Empties the cache of a stopped informer, delivering a delete to every
 * handler for every object it had, and forgets the resourceVersion and the
 * sync: the next start lists from scratch (an API that stopped being
 * served and may come back).  Returns 0 or GC_EUSAGE (running). */
int gb_informer_reset(struct gb_informer *inf);

/* Runs fn(arg) with the delivery lock held: no handler of inf runs
 * meanwhile, so every consumer fed by inf has seen the same changes (one
 * consumer's counts and another's records of the same objects agree).
 * fn must not call gb_informer_stop or take a lock a handler holds while
 * it calls into this informer.  Returns fn's result. */
int gb_informer_hold(struct gb_informer *inf, int (*fn)(void *arg), void *arg);

/* Stops if needed and frees everything.  Accepts NULL. */
void gb_informer_free(struct gb_informer *inf);

/* "resource" or "resource.group" (borrowed, lives as long as inf). */
const char *gb_informer_name(struct gb_informer *inf);

/* True once the first list has been applied to the cache and delivered. */
int gb_informer_has_synced(struct gb_informer *inf);

/* Waits up to timeout_ms for the first sync.  Returns 1 when synced. */
int gb_informer_wait_synced(struct gb_informer *inf, long timeout_ms);

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

#endif
