/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_deadline: the deadline structure of the timeout tracker, a binary
 * min-heap of intrusive items ordered by their due time.  Each item records
 * its own heap index, so moving or removing a gang's deadline is O(log n)
 * and the earliest deadline is O(1): the timer thread sleeps until exactly
 * that time instead of scanning every gang each second.  The heap owns no
 * item; callers embed a struct gb_deadline_item in their own records and
 * must remove it before freeing the record.  Not thread-safe: the caller
 * holds its own lock.
 */
#ifndef GB_DEADLINE_H
#define GB_DEADLINE_H

#include <stddef.h>

#define GB_DEADLINE_NONE ((size_t)-1) /* idx of an item that is not in the heap */

struct gb_deadline_item {
  double at;  /* due time (any clock, seconds); set by gb_deadline_set */
  size_t idx; /* position in the heap or GB_DEADLINE_NONE; owned by the heap */
};

struct gb_deadlines {
  struct gb_deadline_item **v; /* heap-owned array of borrowed items */
  size_t n, cap;
  size_t max; /* refuses items beyond this many */
};

/* Initialises an empty heap of at most max items (0: 1,000,000).  Free its
 * array with gb_deadlines_destroy.  Returns 0. */
int gb_deadlines_init(struct gb_deadlines *h, size_t max);

/* Frees the array; items are the caller's.  Accepts an initialised-to-zero h. */
void gb_deadlines_destroy(struct gb_deadlines *h);

/* Marks an item as outside any heap (call once before the first set). */
void gb_deadline_item_init(struct gb_deadline_item *it);

/* Inserts it with due time at, or moves it there when already in.  it is
 * borrowed until removed or popped.  Returns 0, GC_ELIMIT (full) or GC_ENOMEM. */
int gb_deadlines_set(struct gb_deadlines *h, struct gb_deadline_item *it, double at);

/* Removes it (no-op when it is not in the heap). */
void gb_deadlines_remove(struct gb_deadlines *h, struct gb_deadline_item *it);

/* The earliest item, or NULL when empty.  Borrowed. */
struct gb_deadline_item *gb_deadlines_peek(const struct gb_deadlines *h);

/* Removes and returns the earliest item when it is due (at <= now), else NULL. */
struct gb_deadline_item *gb_deadlines_pop_due(struct gb_deadlines *h, double now);

#endif
