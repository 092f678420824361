/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_deadline: a binary min-heap of intrusive items (see gb_deadline.h).
 */
#include "gb_deadline.h"

#include <stdlib.h>

#include "gc_diag.h"

int gb_deadlines_init(struct gb_deadlines *h, size_t max) {
  h->v = NULL;
  h->n = h->cap = 0;
  h->max = max ? max : 1000000;
  return 0;
}

void gb_deadlines_destroy(struct gb_deadlines *h) {
  if (!h)
    return;
  free(h->v);
  h->v = NULL;
  h->n = h->cap = 0;
}

void gb_deadline_item_init(struct gb_deadline_item *it) {
  it->at = 0;
  it->idx = GB_DEADLINE_NONE;
}

static void place(struct gb_deadlines *h, size_t i, struct gb_deadline_item *it) {
  h->v[i] = it;
  it->idx = i;
}

/* Moves the item at i towards the root while it is due before its parent. */
static void sift_up(struct gb_deadlines *h, size_t i) {
  struct gb_deadline_item *it = h->v[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (h->v[parent]->at <= it->at)
      break;
    place(h, i, h->v[parent]);
    i = parent;
  }
  place(h, i, it);
}

/* Moves the item at i towards the leaves while a child is due before it. */
static void sift_down(struct gb_deadlines *h, size_t i) {
  struct gb_deadline_item *it = h->v[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->v[c + 1]->at < h->v[c]->at)
      c++;
    if (it->at <= h->v[c]->at)
      break;
    place(h, i, h->v[c]);
    i = c;
  }
  place(h, i, it);
}

static int grow(struct gb_deadlines *h) {
  size_t cap = h->cap ? h->cap * 2 : 64;
  if (cap > h->max)
    cap = h->max;
  struct gb_deadline_item **v = realloc(h->v, cap * sizeof(*v));
  if (!v)
    return GC_ENOMEM;
  h->v = v;
  h->cap = cap;
  return 0;
}

int gb_deadlines_set(struct gb_deadlines *h, struct gb_deadline_item *it, double at) {
  if (it->idx != GB_DEADLINE_NONE) {
    double old = it->at;
    it->at = at;
    if (at < old)
      sift_up(h, it->idx);
    else
      sift_down(h, it->idx);
    return 0;
  }
  if (h->n >= h->max)
    return GC_ELIMIT;
  if (h->n == h->cap) {
    int rc = grow(h);
    if (rc)
      return rc;
  }
  it->at = at;
  place(h, h->n++, it);
  sift_up(h, it->idx);
  return 0;
}

void gb_deadlines_remove(struct gb_deadlines *h, struct gb_deadline_item *it) {
  size_t i = it->idx;
  if (i == GB_DEADLINE_NONE || i >= h->n || h->v[i] != it)
    return;
  it->idx = GB_DEADLINE_NONE;
  struct gb_deadline_item *last = h->v[--h->n];
  if (i == h->n)
    return;
  /* The last item fills the hole; it may belong above or below it. */
  place(h, i, last);
  if (i > 0 && h->v[(i - 1) / 2]->at > last->at)
    sift_up(h, i);
  else
    sift_down(h, i);
}

struct gb_deadline_item *gb_deadlines_peek(const struct gb_deadlines *h) {
  return h->n ? h->v[0] : NULL;
}

struct gb_deadline_item *gb_deadlines_pop_due(struct gb_deadlines *h, double now) {
  struct gb_deadline_item *top = gb_deadlines_peek(h);
  if (!top || top->at > now)
    return NULL;
  gb_deadlines_remove(h, top);
  return top;
}
