/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_bucket: client-go's token bucket (see the header).
 */
#include "gb_bucket.h"

void gb_bucket_init(struct gb_bucket *b, double qps, int burst, double now) {
  b->qps = qps;
  b->burst = burst < 1 ? 1 : burst;
  b->tokens = b->burst;
  b->last = now;
}

double gb_bucket_reserve(struct gb_bucket *b, double now) {
  if (b->qps <= 0)
    return 0;
  if (now > b->last) {
    b->tokens += (now - b->last) * b->qps;
    if (b->tokens > b->burst)
      b->tokens = b->burst;
    b->last = now;
  }
  b->tokens -= 1;
  if (b->tokens >= 0)
    return 0;
  return -b->tokens / b->qps;
}
