/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informers: the shared informer factory (client-go's
 * SharedInformerFactory).  It owns one gb_informer per resource
 * (group, version, resource), whoever asks for it: every consumer
 * (controller, model, timeouts...) registers its selection, the fields it
 * reads and its handler with gb_informers_add, and the one informer lists
 * and watches the union for all of them (gb_informer.h says how
 * selections and records are joined), so a resource is listed and watched
 * once per process and cached once.  gb_informers_start starts every
 * informer registered so far except the deferred ones: an informer of an
 * API that may not be served (PodGroups, Queues, HyperNodes) is started
 * by the consumer that watches discovery, with gb_informer_start, and
 * stopped (and reset) by it when the API goes away.  It also owns the
 * informers' share of the service metrics (watch restarts per resource)
 * and their log lines.
 *
 * Thread-safety: new, add, start, stop and free from one controlling
 * thread, every add before gb_informers_start (a deferred informer's
 * handlers too: they are sealed when its owner starts it).  A deferred
 * informer is started and stopped by its one owner, never while
 * gb_informers_stop runs.  lookup and the collector from any thread.  Lock
 * order: the factory's lock is a leaf (held only around its table).
 */
#ifndef GB_INFORMERS_H
#define GB_INFORMERS_H

#include "gb_informer.h"
#include "gb_metrics.h"

/* The resource one informer watches, and whether its owner starts it. */
struct gb_informer_spec {
  const char *group; /* "" or NULL for the core group */
  const char *version;
  const char *resource; /* plural */
  int deferred;         /* started by its owner, not by gb_informers_start */
};

struct gb_informers_opts {
  long min_watch_timeout_s; /* every informer's watch timeout (kube.watchTimeout); 0: 300 */
  const struct gb_service_metrics *metrics; /* optional: errors{informer,watch}, restarts */
};

struct gb_informers;

/* Creates an empty factory over client (borrowed).  Returns 0 or
 * GC_ENOMEM. */
int gb_informers_new(struct gb_kube_client *client, const struct gb_informers_opts *o,
                     struct gb_informers **out);

/* Registers handler h on the informer of spec's resource, made on first
 * use; *inf (optional) receives it (borrowed: the factory frees it).  All
 * registrations of a resource must agree on deferred.  Returns 0,
 * GC_EUSAGE (the factory started, or deferred disagrees), GC_EINVAL (a bad
 * spec or handler, message in d) or GC_ENOMEM. */
int gb_informers_add(struct gb_informers *f, const struct gb_informer_spec *spec,
                     const struct gb_informer_handler *h, struct gb_informer **inf,
                     struct gc_diags *d);

/* Starts every informer not deferred.  Returns 0 or the first error (those
 * started stay started: gb_informers_stop stops them). */
int gb_informers_start(struct gb_informers *f);

/* Stops every informer (deferred ones too).  Idempotent. */
void gb_informers_stop(struct gb_informers *f);

/* Stops and frees every informer and the factory.  Accepts NULL. */
void gb_informers_free(struct gb_informers *f);

/* Metrics collector (ctx = factory): watch restarts per resource (expired,
 * failed, timed out), from every informer's statistics. */
void gb_informers_collect(void *ctx, struct gb_metrics *reg);

#endif
