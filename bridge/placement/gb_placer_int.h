/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_placer_int: what the placer's parts share and nothing outside them
 * includes: gb_placer.c (the table of gangs, the thread, the lookup, the
 * status and the metrics), gb_placer_pass.c (one pass: examine, decide,
 * record, release, report) and gb_placer_record.c (the decision record on
 * the gang's PodGroup: read, written, cleared).
 */
#ifndef GB_PLACER_INT_H
#define GB_PLACER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gb_decision.h"
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
  int64_t pods, gated, released_pods, min_member;
  int had_pods;                 /* pods of it were seen (their record is cleared when they go) */
  int suspended;                /* its TrainJob is suspended */
  struct gb_decision *rec;      /* the record last written or read (heap), or NULL */
  uint64_t evented_id;          /* the decision the last Redecided/Overlap Event was about */
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
  int records_scanned; /* the gangs with a record were found since the start or takeover */
  unsigned long long passes, dropped;
  uint64_t resync_gen, caught_up_gen; /* gb_placer_caught_up: resyncs asked, and seen through */
  int64_t last_decide_ns, last_release_ns; /* the last pass that decided: its two phases */
  size_t last_decided, last_released_pods;
  pthread_t th;
  pthread_mutex_t pass_mu; /* one pass at a time */

  struct gb_metric *m_gated, *m_gated_s, *m_decisions, *m_release_s, *m_raced, *m_release_err;
  struct gb_metric *m_record_err;
  struct gb_metric *m_gen, *m_size;
};

/* Where a gang's decision record lives: gangbridge's PodGroup of the
 * TrainJob (its uid: the PodGroup's controller ownerReference). */
struct gb_placer_pg {
  const struct gc_backend *backend;
  const char *ns, *name, *tj_uid;
};

/* Reads the record on pg: from the record_lookup cache unless fresh (or
 * no lookup), else with a GET.  *out is NULL when there is none.  A record
 * that does not decode is logged and treated as none.  Returns 0 or a
 * GC_E* code (why says it). */
int gb_placer_record_read(struct gb_placer *p, const struct gb_placer_pg *pg, int fresh,
                          struct gb_decision **out, char *why, size_t why_size);
/* Writes want on pg, replacing the record of id `expect` (0: none): a GET
 * for the current record and resourceVersion, then a JSON merge patch with
 * that version as precondition and field manager gangbridge-placement (a
 * 409 reads again).  When another decision is recorded there (another
 * id), nothing is written and *found receives it.  Returns 0, GC_ENOTFOUND
 * (no such PodGroup), GC_EINVAL (the PodGroup is not gangbridge's for this
 * TrainJob), GC_EIO or GC_ENOMEM, with a sentence in why. */
int gb_placer_record_write(struct gb_placer *p, const struct gb_placer_pg *pg,
                           const struct gb_decision *want, uint64_t expect,
                           struct gb_decision **found, char *why, size_t why_size);
/* Removes the record on pg when it is the decision `expect` (0: any).
 * Returns 0 (also when there was none) or a GC_E* code. */
int gb_placer_record_clear(struct gb_placer *p, const struct gb_placer_pg *pg, uint64_t expect);

/* One gang in a pass (the pass's arena holds its pods and gang). */
struct gb_placer_item {
  char key[GB_PLAN_KEY_MAX + 1];
  char ns[64], name[254];
  struct gc_gang *gg; /* NULL: not managed now */
  struct gb_placer_pod *pods;
  size_t n, cap;
  enum gb_gang_state state;
  int64_t gated;    /* pods carrying the gate when examined */
  int used;         /* a counted pod was released or is bound */
  int had_pods;     /* the table saw pods of it before */
  int decide;       /* goes to gb_plan_decide */
  int restore;      /* rec is known and the plan holds no decision: restore it first */
  int legacy;       /* released without a record: decided inside legacy_restr */
  int release;      /* release its gated pods with restr (or pod_nodes) */
  int write;        /* want must be recorded before anything is released */
  int written;      /* want was recorded */
  int adopted;      /* another decision was recorded meanwhile: it is taken back next pass */
  int forget;       /* suspended or every pod gone: the plan forgets it */
  int clear;        /* the record on the PodGroup goes */
  int busy;         /* another caller is recording a decision of it: later */
  int unrestricted; /* no policy (any more): released with no restriction */
  struct tp_gang tg;
  int64_t priority, first_ms;
  struct gb_plan_view view;
  struct gb_decision *rec;  /* the record known when examined (owned) */
  struct gb_decision *want; /* the record to write (owned) */
  struct gb_restriction restr, legacy_restr;
  int per_pod;
  const char **pod_nodes;            /* per_pod: parallel to pods */
  char why[512];                     /* a record that could not be written, and why */
  char overlap[GB_PLAN_KEY_MAX + 1]; /* another gang may take nodes planned for it */
  atomic_int failed, done;           /* pods whose release failed, was done, in this pass */
  int released;                      /* every gated pod released */
};

struct gb_placer_pass {
  struct gb_placer *p;
  struct gc_arena *a;
  struct gb_placer_item *items;
  size_t n;
  int64_t now_ms;
  int leader;
  struct gc_diags d;
};

/* A bounded list of borrowed names. */
struct gb_placer_names {
  const char **names;
  size_t n, cap;
};

/* The restriction of the PLACED or RELEASED decision v of key, inside the
 * model's lock: the domain's label or nodes (gb_gangview_restriction_of),
 * unless another gang's reservation shares the domain, then exactly the
 * nodes the plan counted for key; *per_pod 1 (out NONE) when those are too
 * many to list.  The plan's allowed nodes of key become what the
 * restriction allows.  Returns 0 or a GC_E* code. */
int gb_placer_restrict(struct gb_placer *p, struct tp_snapshot *s, const char *key,
                       const struct gb_plan_view *v, struct gb_restriction *out, int *per_pod);

/* Writes every item's want (outside the model's lock); an item whose
 * record could not be written releases nothing. */
void gb_placer_write_records(struct gb_placer_pass *ps);
/* Removes the records of items marked clear. */
void gb_placer_clear_records(struct gb_placer_pass *ps);
/* Releases every gated pod of every item to release, max_inflight at once
 * (stopping when leadership is lost).  Returns 0 or GC_ENOMEM. */
int gb_placer_release_all(struct gb_placer_pass *ps);
/* Updates the table, Events and metrics from the pass. */
void gb_placer_report(struct gb_placer_pass *ps, int64_t t0_ns);

/* The gang of key (NULL when absent; with create, a new zeroed one, NULL
 * when the table is full or memory is out).  Call with mu held. */
struct gang *gb_placer_find(struct gb_placer *p, const char *key, int create);
const char *gb_placer_outcome_name(enum gb_plan_outcome o);
int64_t gb_placer_now_ms(void);

#endif
