/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_clock: the one monotonic clock of the bridge (CLOCK_MONOTONIC, which
 * wall-clock steps never move) read as nanoseconds, milliseconds or seconds,
 * and the absolute deadlines that pthread_cond_timedwait wants for condition
 * variables set to CLOCK_MONOTONIC.  Timeouts, backoff, cache ages and
 * latencies are measured with it; wall-clock times (timestamps written into
 * objects) are not its business.  It depends only on libc/POSIX.
 */
#ifndef GB_CLOCK_H
#define GB_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The longest wait gb_clock_deadline accepts (one day); longer ones are cut
 * to it so that the sum can never overflow time_t. */
#define GB_CLOCK_MAX_WAIT_NS (86400LL * 1000000000LL)

/* Monotonic time in nanoseconds since an arbitrary start.  Can't fail. */
int64_t gb_clock_ns(void);

/* Monotonic time in milliseconds (gb_clock_ns() / 1e6, rounded down). */
int64_t gb_clock_ms(void);

/* Monotonic time in seconds, with nanosecond resolution. */
double gb_clock_s(void);

/* Fills *ts (caller-owned) with the CLOCK_MONOTONIC time after_ns from now,
 * after_ns clamped to [0, GB_CLOCK_MAX_WAIT_NS], tv_nsec normalised. */
void gb_clock_deadline(struct timespec *ts, int64_t after_ns);

/* As gb_clock_deadline for a wait given in seconds; NaN counts as 0. */
void gb_clock_deadline_s(struct timespec *ts, double after_s);

#endif
