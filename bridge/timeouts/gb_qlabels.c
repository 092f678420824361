/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_qlabels: the deterministic queue labels of the gang metrics (see the
 * header).  A sorted array: lookups are binary searches, a new or gone
 * queue moves the tail (queues are few, changes rare).
 */
#include "gb_qlabels.h"

#include <stdlib.h>
#include <string.h>

#include "gc_diag.h"

void gb_qlabels_init(struct gb_qlabels *q, size_t max, size_t max_names) {
  memset(q, 0, sizeof(*q));
  q->max = max;
  q->max_names = max_names ? max_names : 100000;
}

void gb_qlabels_destroy(struct gb_qlabels *q) {
  free(q->v);
  memset(q, 0, sizeof(*q));
}

/* The number of names in use that sort before name (its would-be index). */
static size_t lower_bound(const struct gb_qlabels *q, const char *name) {
  size_t lo = 0, hi = q->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(q->v[mid].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int gb_qlabels_count(struct gb_qlabels *q, const char *name, int delta) {
  char key[GB_QLABEL_MAX + 1];
  size_t len = strlen(name);
  if (len > GB_QLABEL_MAX)
    len = GB_QLABEL_MAX;
  memcpy(key, name, len);
  key[len] = '\0';
  size_t i = lower_bound(q, key);
  int found = i < q->n && !strcmp(q->v[i].name, key);
  if (delta < 0) {
    if (found && --q->v[i].gangs == 0) {
      memmove(&q->v[i], &q->v[i + 1], (q->n - i - 1) * sizeof(q->v[0]));
      q->n--;
    }
    return 0;
  }
  if (found) {
    q->v[i].gangs++;
    return 0;
  }
  if (q->n >= q->max_names)
    return GC_ELIMIT;
  if (q->n == q->cap) {
    size_t ncap = q->cap ? q->cap * 2 : 16;
    struct gb_qlabel_slot *nv = realloc(q->v, ncap * sizeof(*nv));
    if (!nv)
      return GC_ENOMEM;
    q->v = nv;
    q->cap = ncap;
  }
  memmove(&q->v[i + 1], &q->v[i], (q->n - i) * sizeof(q->v[0]));
  memcpy(q->v[i].name, key, len + 1);
  q->v[i].gangs = 1;
  q->n++;
  return 0;
}

const char *gb_qlabels_label(const struct gb_qlabels *q, const char *name) {
  size_t i = lower_bound(q, name);
  if (i >= q->max)
    return "other";
  if (i < q->n && !strncmp(q->v[i].name, name, GB_QLABEL_MAX) && strlen(name) <= GB_QLABEL_MAX)
    return q->v[i].name;
  /* Not in use now (the gang's PodGroup is gone): its would-be rank decides,
   * and the name is returned as given. */
  return name;
}
