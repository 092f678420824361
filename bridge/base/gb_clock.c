/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_clock: monotonic time and cond-wait deadlines (see gb_clock.h).
 */
#include "gb_clock.h"

#define NS_PER_S 1000000000LL

int64_t gb_clock_ns(void) {
  struct timespec ts;
  /* CLOCK_MONOTONIC exists on every POSIX system the bridge builds on and
   * clock_gettime cannot fail for it with a valid pointer. */
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

int64_t gb_clock_ms(void) { return gb_clock_ns() / 1000000; }

double gb_clock_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gb_clock_deadline(struct timespec *ts, int64_t after_ns) {
  if (after_ns < 0)
    after_ns = 0;
  if (after_ns > GB_CLOCK_MAX_WAIT_NS)
    after_ns = GB_CLOCK_MAX_WAIT_NS;
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += (time_t)(after_ns / NS_PER_S);
  ts->tv_nsec += (long)(after_ns % NS_PER_S);
  if (ts->tv_nsec >= NS_PER_S) {
    ts->tv_sec++;
    ts->tv_nsec -= NS_PER_S;
  }
}

void gb_clock_deadline_s(struct timespec *ts, double after_s) {
  /* Clamped in floating point first: converting a double beyond INT64_MAX
   * to an integer is undefined behaviour. */
  double ns = after_s * 1e9;
  if (!(ns > 0))
    ns = 0;
  if (ns > (double)GB_CLOCK_MAX_WAIT_NS)
    ns = (double)GB_CLOCK_MAX_WAIT_NS;
  gb_clock_deadline(ts, (int64_t)ns);
}
