/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_plan: the endpoints' decision source on gb_plan and gb_model (see
 * gb_sched_plan.h).
 */
#include "gb_sched_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int node_allowed(void *arg, const char *key, const char *node, char *why, size_t size) {
  struct gb_sched_plan *sp = arg;
  return gb_plan_node_allowed(sp->plan, key, node, why, size);
}

static int nodes_allowed(void *arg, const char *key, const char *const *nodes, size_t n,
                         int8_t *ans, char *head, char *tail, size_t part_size) {
  struct gb_sched_plan *sp = arg;
  struct gb_plan_why w = {.head = "", .tail = ""};
  int rc = gb_plan_nodes_allowed(sp->plan, key, nodes, n, ans, &w);
  if (rc)
    return rc;
  /* A part that does not fit: the endpoint asks node by node instead. */
  size_t hl = strlen(w.head), tl = strlen(w.tail);
  if (hl >= part_size || tl >= part_size)
    return GC_ELIMIT;
  memcpy(head, w.head, hl + 1);
  memcpy(tail, w.tail, tl + 1);
  return GC_OK;
}

static int64_t node_score(void *arg, const char *key, const char *node) {
  struct gb_sched_plan *sp = arg;
  return gb_plan_node_score(sp->plan, key, node);
}

static int64_t ceil_units(double v) { return v <= 0 ? 0 : (int64_t)ceil(v); }

/* One shape into a pod set: Volcano's MilliCPU is the snapshot's cpu unit,
 * Memory its bytes; scalars are milli-units in Volcano, whole units in the
 * snapshot. */
static int shape_podset(struct gc_arena *a, const struct gb_sched_vshape *sh, size_t i,
                        struct tp_podset *ps) {
  size_t n = 2 + sh->n_scalar;
  ps->res = gc_arena_alloc(a, n * sizeof(*ps->res));
  ps->val = gc_arena_alloc(a, n * sizeof(*ps->val));
  char name[32];
  snprintf(name, sizeof(name), "tasks-%zu", i);
  ps->name = gc_arena_strdup(a, name);
  if (!ps->res || !ps->val || !ps->name)
    return GC_ENOMEM;
  ps->count = sh->count;
  ps->n_req = 0;
  if (ceil_units(sh->milli_cpu) > 0) {
    ps->res[ps->n_req] = "cpu";
    ps->val[ps->n_req++] = ceil_units(sh->milli_cpu);
  }
  if (ceil_units(sh->memory) > 0) {
    ps->res[ps->n_req] = "memory";
    ps->val[ps->n_req++] = ceil_units(sh->memory);
  }
  for (size_t r = 0; r < sh->n_scalar; r++) {
    int64_t v = ceil_units(sh->scalar_milli[r] / 1000.0);
    if (v <= 0)
      continue;
    if (!(ps->res[ps->n_req] = gc_arena_strdup(a, sh->scalar[r])))
      return GC_ENOMEM;
    ps->val[ps->n_req++] = v;
  }
  return 0;
}

/* The tp_gang of a decoded JobInfo, in the snapshot's units (cpu milli,
 * others whole units rounded up), everything in arena a.  Returns 0,
 * GC_EINVAL (no tasks: reason set) or GC_ENOMEM. */
static int gb_sched_plan_gang(struct gc_arena *a, const struct gb_sched_vjob *j, struct tp_gang *out,
                       char *reason, size_t reason_size) {
  memset(out, 0, sizeof(*out));
  if (!j->n_shapes) {
    snprintf(reason, reason_size, "%s: the JobInfo lists no tasks", j->key);
    return GC_EINVAL;
  }
  out->name = gc_arena_strdup(a, j->key);
  out->sets = gc_arena_alloc(a, j->n_shapes * sizeof(*out->sets));
  if (!out->name || !out->sets)
    return GC_ENOMEM;
  memset(out->sets, 0, j->n_shapes * sizeof(*out->sets));
  out->n_sets = j->n_shapes;
  for (size_t i = 0; i < j->n_shapes; i++)
    if (shape_podset(a, &j->shapes[i], i, &out->sets[i]) < 0)
      return GC_ENOMEM;
  /* minMember below the task count places only that many pods; the
   * evaluator honours it for a single pod set, so with several shapes
   * every task counts (the stricter answer). */
  if (j->n_shapes == 1 && j->min_available > 0 && j->min_available < j->shapes[0].count)
    out->min_member = j->min_available;
  if (!strcmp(j->topology_mode, "hard") || !strcmp(j->topology_mode, "soft")) {
    out->policy.mode = !strcmp(j->topology_mode, "hard") ? TP_MODE_HARD : TP_MODE_SOFT;
    out->policy.has_highest_tier = j->highest_tier > 0;
    out->policy.highest_tier = j->highest_tier;
    if (j->highest_tier_name[0] &&
        !(out->policy.highest_tier_name = gc_arena_strdup(a, j->highest_tier_name)))
      return GC_ENOMEM;
  }
  return 0;
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct decide_ctx {
  struct gb_sched_plan *sp;
  const struct gb_sched_vjob *j;
  const struct tp_gang *gang;
  struct gb_plan_view view;
  int decide_rc;
};

/* Inside the model's lock: decides the gang on the current snapshot (a
 * new decision is reserved, PLACED, until it is recorded). */
static int decide(void *arg, struct tp_snapshot *s, uint64_t gen) {
  struct decide_ctx *c = arg;
  uint8_t *mask = NULL;
  if (c->j->first_task[0])
    gb_model_blocked_mask(c->sp->model, s, c->j->ns, c->j->first_task, &mask);
  struct gb_plan_gang pg = {c->j->key, c->gang, c->j->priority, c->j->created_ms, mask};
  struct gc_diags d;
  gc_diags_init(&d);
  c->decide_rc = gb_plan_decide(c->sp->plan, s, gen, &pg, 1, wall_ms(), &c->view, &d);
  gc_diags_destroy(&d);
  free(mask);
  return 0;
}

static int give_back(void *arg, struct tp_snapshot *s, uint64_t gen) {
  (void)gen;
  struct decide_ctx *c = arg;
  gb_plan_unreserve(c->sp->plan, s, c->j->key);
  return 0;
}

/* A new decision: recorded, then pinned (released); or given back. */
static int pin(struct gb_sched_plan *sp, struct decide_ctx *c, char *reason, size_t size) {
  int rc = sp->record ? sp->record(sp->record_ctx, c->j->ns, c->j->name, c->j->key, c->view.prev_id,
                                   reason, size)
                      : 0;
  if (rc) {
    gb_model_with_snapshot(sp->model, give_back, c);
    return rc;
  }
  gb_plan_mark_released(sp->plan, c->j->key, wall_ms());
  c->view.outcome = GB_PLAN_RELEASED;
  return 0;
}

static int verdict_of(struct gb_sched_plan *sp, struct decide_ctx *c, int *verdict, char *reason,
                      size_t size) {
  switch (c->view.outcome) {
  case GB_PLAN_PLACED:
    if (!c->view.fresh) {
      *verdict = GB_VC_REJECT;
      snprintf(reason, size, "the gang's placement decision is being recorded");
    } else if (pin(sp, c, reason, size)) {
      *verdict = GB_VC_REJECT; /* reason set: nothing unrecorded is acted on */
    } else {
      *verdict = GB_VC_PERMIT;
    }
    break;
  case GB_PLAN_RELEASED: *verdict = GB_VC_PERMIT; break;
  case GB_PLAN_NOFIT:
  case GB_PLAN_HELD:
    *verdict = GB_VC_REJECT;
    snprintf(reason, size, "%s", c->view.reason[0] ? c->view.reason : "the gang fits nowhere now");
    break;
  default: break; /* no policy: not the plan's business */
  }
  return 0;
}

static int enqueueable(void *arg, const struct gb_sched_vjob *j, int *verdict, char *reason,
                       size_t size) {
  struct gb_sched_plan *sp = arg;
  struct gb_plan_view v;
  *verdict = GB_VC_ABSTAIN;
  /* Pinned and used (a pod of it released or bound): its domain is fixed
   * and already what every verb answers from. */
  if (gb_plan_get(sp->plan, j->key, &v) == 0 && v.outcome == GB_PLAN_RELEASED && v.used) {
    *verdict = GB_VC_PERMIT;
    return 0;
  }
  struct gc_arena *a = gc_arena_new(1u << 20);
  if (!a)
    return GC_ENOMEM;
  struct tp_gang g;
  int rc = gb_sched_plan_gang(a, j, &g, reason, size);
  if (rc < 0)
    goto out;
  struct decide_ctx c = {.sp = sp, .j = j, .gang = &g};
  rc = gb_model_with_snapshot(sp->model, decide, &c); /* GC_ENOTFOUND: no snapshot yet */
  if (rc == 0)
    rc = c.decide_rc;
  if (rc == 0)
    rc = verdict_of(sp, &c, verdict, reason, size);
out:
  gc_arena_free(a);
  return rc;
}

void gb_sched_plan_source(struct gb_sched_plan *sp, struct gb_sched_source *be) {
  memset(be, 0, sizeof(*be));
  be->node_allowed = node_allowed;
  be->nodes_allowed = nodes_allowed;
  be->node_score = node_score;
  be->enqueueable = enqueueable;
  be->arg = sp;
}
