/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_qlabels: which Volcano queues get their own `queue` label in the gang
 * metrics, deterministically.  It counts the gangs tracked per queue name
 * (the queues "in use") and answers, for any name, its label: the name
 * itself when fewer than `max` queues in use sort before it (byte order),
 * else "other".  So the same cluster state gives the same labels on every
 * replica and after every restart, whatever order the informers delivered
 * the PodGroups in; a queue's label changes only when queues that sort
 * before it come into use or go out of use.  At most `max_names` distinct
 * names are counted (a name beyond that is labelled as if not in use).
 * Not thread-safe: the tracker holds its lock.
 */
#ifndef GB_QLABELS_H
#define GB_QLABELS_H

#include <stddef.h>

#define GB_QLABEL_MAX 63 /* longest queue name kept (Volcano's are DNS-1123 names) */

struct gb_qlabels {
  struct gb_qlabel_slot {
    char name[GB_QLABEL_MAX + 1];
    size_t gangs;
  } * v; /* sorted by name, gangs > 0 */
  size_t n, cap, max, max_names;
};

/* max: queues labelled by name (timeouts.maxQueues); max_names 0: 100,000. */
void gb_qlabels_init(struct gb_qlabels *q, size_t max, size_t max_names);
void gb_qlabels_destroy(struct gb_qlabels *q);

/* A gang of queue `name` starts (delta 1) or stops (delta -1) being tracked.
 * Returns 0, GC_ELIMIT (too many names: not counted) or GC_ENOMEM. */
int gb_qlabels_count(struct gb_qlabels *q, const char *name, int delta);

/* The label of `name`: a pointer to the stored name, or the static "other". */
const char *gb_qlabels_label(const struct gb_qlabels *q, const char *name);

#endif
