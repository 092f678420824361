/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_int: what the placer's two parts share and nothing outside them
 * includes: gb_placer.c (the table of gangs, the thread, the lookup, the
 * status and the metrics) and gb_placer_pass.c (one pass: examine, decide,
 * release, report).
 */
#ifndef GB_PLACER_INT_H
#define GB_PLACER_INT_H

#include <pthread.h>
#include <stdint.h>

#include "gb_hash.h"
#include "gb_placer.h"

/* Gangs remembered at most; more are counted as dropped and not placed. */
#define GB_PLACER_MAX_GANGS 100000

/* What the placer remembers of one gang (guarded by the placer's mu). */
struct gang {
  struct gb_hnode h; /* first */
  char key[GB_PLAN_KEY_MAX + 1];
  int dirty;
  enum gb_gang_state state;
  enum gb_plan_outcome outcome;
  char reason[512];
  char domain[TP_MAX_NAME + 1];
  int64_t first_ms;    /* the gang's first pod's creation (wall clock) */
  int64_t released_ms; /* wall clock; 0 while not released */
  int64_t pods, gated, min_member;
  int raced;                    /* PlacementRaced reported for this release */
  int watching;                 /* released, not every counted pod bound yet */
  int64_t decided_ms;           /* when the plan made the decision last counted */
  char evented[512];            /* the last PlacementWaiting message posted */
  struct gb_restriction *restr; /* once released (heap) */
};

struct gb_placer {
  struct gb_placer_opts o;
  pthread_mutex_t mu; /* guards everything below; with cond */
  pthread_cond_t cond;
  struct gb_htab gangs; /* of struct gang */
  int kick, capacity, tick, stopping, started;
  unsigned long long passes, dropped;
  uint64_t resync_gen, caught_up_gen; /* gb_placer_caught_up: resyncs asked, and seen through */
  int64_t last_decide_ns, last_release_ns; /* the last pass that decided: its two phases */
  size_t last_decided, last_released_pods;
  pthread_t th;
  pthread_mutex_t pass_mu; /* one pass at a time */

  struct gb_metric *m_gated, *m_gated_s, *m_decisions, *m_release_s, *m_raced, *m_release_err;
  struct gb_metric *m_gen, *m_size;
};

/* The gang of key (NULL when absent; with create, a new zeroed one, NULL
 * when the table is full or memory is out).  Call with mu held. */
struct gang *gb_placer_find(struct gb_placer *p, const char *key, int create);
const char *gb_placer_outcome_name(enum gb_plan_outcome o);
int64_t gb_placer_now_ms(void);

#endif
