/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_bucket: client-go's flowcontrol token bucket, the rate limiter both the
 * Kubernetes client (requests to the API server) and the work queue (the
 * overall retry rate) use.  It owns only the arithmetic: the caller supplies
 * the clock and does the waiting, so it is testable without sleeping.  It is
 * not thread-safe by itself; each user guards it with its own lock.
 */
#ifndef GB_BUCKET_H
#define GB_BUCKET_H

/* `burst` tokens, refilled at `qps` per second.  qps <= 0 means unlimited.
 * A plain value: no allocation, nothing to free. */
struct gb_bucket {
  double qps;
  double burst;
  double tokens;
  double last; /* time of the last refill, seconds on the caller's clock */
};

/* Starts full (burst tokens; a burst below 1 counts as 1) at time `now`. */
void gb_bucket_init(struct gb_bucket *b, double qps, int burst, double now);

/* Takes one token at time `now` and returns how many seconds the caller must
 * wait before proceeding (0 when a token was available).  Tokens may go
 * negative: waiting callers are queued in order, as client-go's reservation. */
double gb_bucket_reserve(struct gb_bucket *b, double now);

#endif
