/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_workqueue: the controller's work queue, with client-go's semantics.  A
 * key ("namespace/name") is queued at most once however often it is added
 * (dirty set); a key being processed is not handed to a second worker, and
 * if it is added meanwhile it is queued again when the worker calls
 * gb_workqueue_done (processing set).  Keys can be added after a delay
 * (kept in a min-heap; a key already waiting keeps the earlier time), and
 * gb_workqueue_add_rate_limited delays by the larger of a per-key
 * exponential backoff (base * 2^failures, capped) and an overall token
 * bucket (qps/burst), as client-go's default controller rate limiter.
 * gb_workqueue_forget resets a key's failures after a success.  Delayed
 * keys move into the queue when a worker waits for work, so no extra thread
 * is needed.  The number of distinct keys is bounded.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef GB_WORKQUEUE_H
#define GB_WORKQUEUE_H

#include <stddef.h>

#include "gc_diag.h"

#define GB_WORKQUEUE_KEY_MAX 512 /* bytes of one key, NUL excluded */

struct gb_workqueue_opts {
  double base_delay_s;   /* first per-key backoff; default 0.005 (client-go) */
  double max_delay_s;    /* per-key backoff cap; default 1000 (client-go) */
  double qps;            /* overall bucket refill; default 10; < 0: no bucket */
  int burst;             /* overall bucket size; default 100 */
  size_t max_keys;       /* distinct keys tracked; default 1,000,000 */
};

struct gb_workqueue;

/* Creates a queue; opts may be NULL (zero fields take defaults).  NULL on OOM. */
struct gb_workqueue *gb_workqueue_new(const struct gb_workqueue_opts *opts);

/* Frees the queue.  No thread may use it any more.  Accepts NULL. */
void gb_workqueue_free(struct gb_workqueue *q);

/* Queues key (copied) unless it is queued already.  Returns 0, GC_EINVAL
 * (empty or longer than GB_WORKQUEUE_KEY_MAX), GC_ELIMIT (max_keys), GC_ENOMEM
 * or GC_EUSAGE (shut down; the key is dropped). */
int gb_workqueue_add(struct gb_workqueue *q, const char *key);

/* Records one more failure of key and queues it after its backoff. */
int gb_workqueue_add_rate_limited(struct gb_workqueue *q, const char *key);

/* Clears key's failure count (after a successful reconcile). */
void gb_workqueue_forget(struct gb_workqueue *q, const char *key);

/* How many times key was put back with add_rate_limited since its last forget. */
int gb_workqueue_num_requeues(struct gb_workqueue *q, const char *key);

/* Waits until a key is ready or the queue shuts down, at most timeout_ms (< 0:
 * forever).  On success copies the key into buf and returns 1; the key is
 * then being processed until gb_workqueue_done.  Returns 0 on timeout, -1
 * when the queue is shut down and empty of ready keys. */
int gb_workqueue_get(struct gb_workqueue *q, char *buf, size_t cap, long timeout_ms);

/* Ends the processing of key; queues it again if it was added meanwhile. */
void gb_workqueue_done(struct gb_workqueue *q, const char *key);

/* Keys waiting in the queue (not those being processed or delayed). */
size_t gb_workqueue_len(struct gb_workqueue *q);

/* Total add_rate_limited calls (for gangbridge_workqueue_retries_total). */
unsigned long long gb_workqueue_retries(struct gb_workqueue *q);

/* Stops the queue: adds are refused, waiting getters return -1 at once. */
void gb_workqueue_shutdown(struct gb_workqueue *q);

#endif
