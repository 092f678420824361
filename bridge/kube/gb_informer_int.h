/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informer_int: what the informer's two files share and nothing outside
 * them includes: gb_informer.c (the handlers and their sealing, the cache,
 * delivery, the public API) and gb_informer_loop.c (the reflectors: list,
 * watch, backoff).  Lock order: handler_mu (delivery), then nothing of the
 * informer's own; cache_lock and lock are leaves.
 */
#ifndef GB_INFORMER_INT_H
#define GB_INFORMER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gb_informer.h"
#include "gb_selector.h"

#define GB_INF_RV_MAX 512
#define GB_INF_UID_MAX 128
#define GB_INF_KEY_MAX 512
#define GB_INF_MAX_NAMESPACES 256

/* A cache entry: one allocation holding key, rv, uid and JSON text. */
struct gb_inf_entry {
  struct gb_inf_entry *next;
  uint32_t hash;
  uint32_t gen;   /* list generation that last saw the object */
  uint32_t match; /* bit i: handler i selects the object */
  uint16_t key_len, rv_len, uid_len;
  uint32_t text_len;
  char data[]; /* key \0 rv \0 uid \0 text \0 */
};

/* One list/watch loop: all namespaces (ns NULL), or one namespace. */
struct gb_inf_reflector {
  struct gb_informer *inf;
  char *ns; /* owned; NULL: every namespace */
  char path[1024];
  char rv[GB_INF_RV_MAX]; /* under inf->lock */
  uint32_t gen;           /* the generation of its last list (its thread only) */
  int synced;             /* under inf->lock */
  int running;
  pthread_t thread;
  unsigned rng;
};

/* One consumer (gb_informer_handler, copied). */
struct gb_inf_handler {
  gb_informer_handler_fn fn;
  void *arg;
  char **ns; /* sorted, unique; n_ns 0: every namespace */
  size_t n_ns;
  char *label, *field;
  const struct gb_keep *keep; /* borrowed; NULL: the whole object */
  size_t n_keep;
  size_t max_objects;
  struct gc_arena *sel_arena; /* holds sel */
  struct gb_selector sel;     /* its own label and field selectors */
  /* Set when sealed: what the server's list does not select for it. */
  int ns_filter;  /* the list spans more namespaces than ns */
  int sel_filter; /* the list's selectors are not its own: sel applies here */
};

struct gb_informer {
  struct gb_kube_client *client;
  struct gb_informer_opts o;
  char *group, *version, *resource; /* owned copies */
  char name[300];                   /* "resource" or "resource.group", for logs */
  struct gb_inf_handler h[GB_INFORMER_MAX_HANDLERS];
  size_t n_h;
  int sealed;
  /* Sealed: the list's selection and the cached record's paths. */
  const char *label, *field; /* borrowed from a handler; NULL: none */
  const struct gb_keep *keeps[GB_KEEP_MAX];
  size_t n_keeps; /* 0: no pruning (some handler reads everything) */
  /* What the watch decodes of each event's object (gb_informer_seal_watch):
   * keeps, what the handlers' selections read, and the member each
   * "[key=value]" step selects by; 0: whole objects.  wextra's steps live
   * in warena. */
  const struct gb_keep *wkeeps[GB_KEEP_MAX];
  size_t n_wkeep;
  struct gb_keep wextra[GB_KEEP_MAX];
  struct gc_arena *warena;
  struct gb_inf_reflector *refl;
  size_t n_refl;

  pthread_rwlock_t cache_lock;
  struct gb_inf_entry **buckets;
  size_t n_buckets, n_entries, bytes;
  atomic_uint gen_seq; /* generations, unique across the reflectors */

  pthread_mutex_t lock; /* guards rv, stats, synced, started; with cond for sleeps */
  pthread_cond_t cond;
  char rv[GB_INF_RV_MAX]; /* the last resourceVersion seen by any reflector */
  struct gb_informer_stats st;
  int synced; /* every reflector has listed once */
  int started;
  atomic_int stopping;
  pthread_mutex_t handler_mu; /* one handler call at a time, whatever the reflector */
  int limit_logged;
};

#define GB_INF_WATCH_GONE 1001
#define GB_INF_WATCH_ERROR_EVENT 1002
#define GB_INF_WATCH_STOP 1003

/* A log line through opts.on_log, prefixed with the informer's name. */
void gb_informer_logf(struct gb_informer *inf, int is_error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records rv as the informer's (and r's, when r) last resourceVersion. */
void gb_informer_set_rv(struct gb_informer *inf, struct gb_inf_reflector *r, const char *rv);
/* Applies an ADDED/MODIFIED object (untrimmed; changed in place) stamped
 * with gen: cached and delivered when a handler selects it, removed
 * (delivered as a delete) when it left every selection.  Returns 0,
 * GC_ENOMEM or GC_ELIMIT (cache full). */
int gb_informer_upsert(struct gb_informer *inf, struct gb_inf_reflector *r, json_object *obj,
                       uint32_t gen);
/* Applies a DELETED object: removed and delivered when cached. */
void gb_informer_apply_delete(struct gb_informer *inf, struct gb_inf_reflector *r, json_object *obj,
                              const char *rv);
/* Removes and delivers every entry of namespace ns (NULL: all) not stamped
 * with gen: the objects a relist no longer found. */
void gb_informer_sweep(struct gb_informer *inf, const char *ns, uint32_t gen);
/* Sets wkeeps from the sealed keeps and the handlers' selections (see
 * struct gb_informer); leaves n_wkeep 0 (whole objects) when they do not
 * fit a watch's paths.  Returns 0 or GC_ENOMEM. */
int gb_informer_seal_watch(struct gb_informer *inf);
/* The reflector thread. */
void *gb_informer_run(void *arg);

#endif
