/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_leader's timing and state logic, driven step by step
 * with a fake clock and an in-memory lease store: acquiring an absent lease,
 * waiting a full LeaseDuration of OUR clock after the last observed change
 * (whatever the remote timestamps say), renewals keeping acquireTime and
 * leaseTransitions, the optimistic fast path and the re-read after a 409,
 * losing at the RenewDeadline exactly (the predicate turns false without
 * any elector step), stopping at once when another holder is seen,
 * ReleaseOnCancel and its hand-over, callbacks and metrics, jitter, config
 * validation, MicroTime formatting and parsing, and a randomized
 * simulation of three electors with store failures and latency asserting
 * that two replicas never lead at once.  The threaded loop is covered too
 * (start/stop with the real clock over the fake store).
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gb_leader.h"
#include "gb_leader_test.h"
#include "gb_log.h"
#include "gb_metrics.h"
#include "gb_metrics_test.h"

/* ---- fake clock ------------------------------------------------------------- */

struct fclock {
  double mono; /* seconds */
  double wall_offset;
};

static double f_mono(void *ctx) { return ((struct fclock *)ctx)->mono; }
static double f_wall(void *ctx) {
  struct fclock *c = ctx;
  return c->mono + c->wall_offset;
}

/* ---- fake store ------------------------------------------------------------ */

struct lease {
  int exists;
  struct gb_lease_record rec;
  long rv;
  long writes;
};

/* One elector's view of the shared lease, with its own faults. */
struct fstore {
  struct lease *l;
  struct fclock *clock;
  int fail_get, fail_update, fail_create; /* > 0: fail that many calls; < 0: always */
  double latency;                         /* clock advance per call */
  int gets, updates, creates, timeouts;
  double last_timeout, max_timeout;       /* the budget of the last call, the largest */
  pthread_mutex_t *mu; /* for the threaded test; NULL otherwise */
};

static int take_fault(int *f) {
  if (*f < 0)
    return 1;
  if (*f > 0) {
    (*f)--;
    return 1;
  }
  return 0;
}

static void lock(struct fstore *s) {
  if (s->mu)
    pthread_mutex_lock(s->mu);
}
static void unlock(struct fstore *s) {
  if (s->mu)
    pthread_mutex_unlock(s->mu);
}

/* Every store operation starts alike: take the lock, count the call and let
 * the fake clock advance by the configured latency, or only by timeout_s
 * when the latency is longer: then the call fails as a client timeout would
 * (returns 1, with the message in d).  unlock() ends it. */
static int fs_enter(struct fstore *s, int *calls, double timeout_s, struct gc_diags *d) {
  lock(s);
  (*calls)++;
  ck_assert_msg(timeout_s > 0, "store call without a time budget");
  s->last_timeout = timeout_s;
  if (timeout_s > s->max_timeout)
    s->max_timeout = timeout_s;
  if (s->latency > timeout_s) {
    if (s->clock)
      s->clock->mono += timeout_s;
    s->timeouts++;
    gc_diags_addf(d, "request timed out after %.3f s", timeout_s);
    return 1;
  }
  if (s->clock)
    s->clock->mono += s->latency;
  return 0;
}

static int fs_get(void *ctx, double timeout_s, struct gb_lease_record *rec, char *rv,
                  struct gc_diags *d) {
  struct fstore *s = ctx;
  int rc = 0;
  if (fs_enter(s, &s->gets, timeout_s, d)) {
    rc = GC_EIO;
  } else if (take_fault(&s->fail_get)) {
    gc_diags_addf(d, "injected get failure");
    rc = GC_EIO;
  } else if (!s->l->exists) {
    rc = GC_ENOTFOUND;
  } else {
    *rec = s->l->rec;
    snprintf(rv, GB_LEADER_RV_MAX, "%ld", s->l->rv);
  }
  unlock(s);
  return rc;
}

static int fs_create(void *ctx, double timeout_s, const struct gb_lease_record *rec, char *rv,
                     int *conflict, struct gc_diags *d) {
  struct fstore *s = ctx;
  int rc = 0;
  if (fs_enter(s, &s->creates, timeout_s, d)) {
    rc = GC_EIO;
  } else if (take_fault(&s->fail_create)) {
    gc_diags_addf(d, "injected create failure");
    rc = GC_EIO;
  } else if (s->l->exists) {
    *conflict = 1;
    rc = GC_EIO;
  } else {
    s->l->exists = 1;
    s->l->rec = *rec;
    s->l->rv++;
    s->l->writes++;
    snprintf(rv, GB_LEADER_RV_MAX, "%ld", s->l->rv);
  }
  unlock(s);
  return rc;
}

static int fs_update(void *ctx, double timeout_s, const struct gb_lease_record *rec, char *rv,
                     int *conflict, struct gc_diags *d) {
  struct fstore *s = ctx;
  int rc = 0;
  if (fs_enter(s, &s->updates, timeout_s, d)) {
    rc = GC_EIO;
  } else if (take_fault(&s->fail_update)) {
    gc_diags_addf(d, "injected update failure");
    rc = GC_EIO;
  } else if (!s->l->exists) {
    rc = GC_EIO;
  } else if (strtol(rv, NULL, 10) != s->l->rv) {
    *conflict = 1;
    gc_diags_addf(d, "conflict");
    rc = GC_EIO;
  } else {
    s->l->rec = *rec;
    s->l->rv++;
    s->l->writes++;
    snprintf(rv, GB_LEADER_RV_MAX, "%ld", s->l->rv);
  }
  unlock(s);
  return rc;
}

/* ---- callbacks ---------------------------------------------------------------- */

struct events {
  atomic_int started, stopped; /* read by the test thread while notifiers run */
  int new_leader;
  char last_holder[GB_LEADER_IDENTITY_MAX];
  int leading_at_start, leading_at_stop;
  struct gb_leader **self;
};

static void on_started(void *arg) {
  struct events *e = arg;
  e->started++;
  e->leading_at_start = gb_leader_is_leader(*e->self);
  ck_assert_int_eq(e->started, e->stopped + 1);
}
static void on_stopped(void *arg) {
  struct events *e = arg;
  e->stopped++;
  e->leading_at_stop = gb_leader_is_leader(*e->self);
  ck_assert_int_eq(e->started, e->stopped);
}
static void on_new_leader(void *arg, const char *id) {
  struct events *e = arg;
  e->new_leader++;
  snprintf(e->last_holder, sizeof(e->last_holder), "%s", id);
}

/* ---- fixture ------------------------------------------------------------------- */

struct elector {
  struct gb_leader *le;
  struct fstore store;
  struct gb_leader_store ops;
  struct gb_leader_clock clk;
  struct events ev;
  double next; /* simulation: when it steps next */
};

static struct fclock clk;
static struct lease lease;

static void setup(void) {
  memset(&clk, 0, sizeof(clk));
  clk.mono = 1000;
  clk.wall_offset = 1.7e9;
  memset(&lease, 0, sizeof(lease));
  lease.rv = 100;
}

static void elector_init_cfg(struct elector *e, const char *id, struct gb_leader_config *cfg) {
  memset(e, 0, sizeof(*e));
  e->store.l = &lease;
  e->store.clock = &clk;
  e->ops = (struct gb_leader_store){fs_get, fs_create, fs_update, &e->store};
  e->clk = (struct gb_leader_clock){f_mono, f_wall, &clk};
  e->ev.self = &e->le;
  cfg->store = &e->ops;
  cfg->clock = &e->clk;
  if (!cfg->lease_namespace)
    cfg->lease_namespace = "gangbridge-system";
  if (!cfg->lease_name)
    cfg->lease_name = "gangbridge";
  cfg->identity = id;
  struct gb_leader_callbacks cb = {on_started, on_stopped, on_new_leader, &e->ev};
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_leader_new(cfg, NULL, &cb, &e->le, &d);
  ck_assert_msg(rc == 0, "gb_leader_new: %s", d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
}

static void elector_init(struct elector *e, const char *id) {
  struct gb_leader_config cfg = {0};
  elector_init_cfg(e, id, &cfg);
}

/* ---- tests --------------------------------------------------------------------- */

START_TEST(test_microtime) {
  char b[GB_LEADER_TIME_MAX];
  ck_assert_int_eq(gb_leader_format_microtime(0.5, b, sizeof(b)), 0);
  ck_assert_str_eq(b, "1970-01-01T00:00:00.500000Z");
  ck_assert_int_eq(gb_leader_format_microtime(1795824780.1234564, b, sizeof(b)), 0);
  ck_assert_str_eq(b, "2026-11-28T00:13:00.123456Z");
  /* 0.9999996 rounds up into the next second. */
  ck_assert_int_eq(gb_leader_format_microtime(59.9999996, b, sizeof(b)), 0);
  ck_assert_str_eq(b, "1970-01-01T00:01:00.000000Z");
  ck_assert_int_eq(gb_leader_format_microtime(-1, b, sizeof(b)), GC_EINVAL);
  ck_assert_int_eq(gb_leader_format_microtime(1, b, 10), GC_EINVAL);

  double t;
  ck_assert_int_eq(gb_leader_parse_time("2026-11-28T00:13:00.123456Z", &t), 0);
  ck_assert_double_eq_tol(t, 1795824780.123456, 1e-6);
  ck_assert_int_eq(gb_leader_parse_time("2026-11-28T02:13:00+02:00", &t), 0);
  ck_assert_double_eq_tol(t, 1795824780.0, 1e-9);
  ck_assert_int_eq(gb_leader_parse_time("2026-11-27T23:13:00.5-01:00", &t), 0);
  ck_assert_double_eq_tol(t, 1795824780.5, 1e-9);
  ck_assert_int_eq(gb_leader_parse_time("2024-02-29T00:00:00Z", &t), 0);
  const char *bad[] = {"", "2026-11-28", "2026-11-28T00:13:00", "2026-11-28T00:13:00.Z",
                       "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z", "2026-11-28 00:13:00Z",
                       "2026-11-28T24:00:00Z", "2026-11-28T00:13:00.1234567890Z",
                       "2026-11-28T00:13:00Zjunk", "2026-11-28T00:13:00+0200"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    ck_assert_msg(gb_leader_parse_time(bad[i], &t) == GC_EINVAL, "accepted \"%s\"", bad[i]);
  /* Round trip. */
  ck_assert_int_eq(gb_leader_format_microtime(1795824780.000001, b, sizeof(b)), 0);
  ck_assert_int_eq(gb_leader_parse_time(b, &t), 0);
  ck_assert_double_eq_tol(t, 1795824780.000001, 1e-6);
}
END_TEST

START_TEST(test_record_json) {
  struct gb_lease_record r;
  struct gc_diags d;
  gc_diags_init(&d);
  json_object *o = json_tokener_parse(
      "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"holderIdentity\":\"a_1\","
      "\"leaseDurationSeconds\":15,\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
      "\"renewTime\":\"2026-01-01T00:00:10.000000Z\",\"leaseTransitions\":3}}");
  ck_assert_int_eq(gb_lease_record_from_json(o, &r, &d), 0);
  ck_assert_str_eq(r.holder, "a_1");
  ck_assert_int_eq(r.duration_s, 15);
  ck_assert_int_eq(r.transitions, 3);
  ck_assert_str_eq(r.renew_time, "2026-01-01T00:00:10.000000Z");
  json_object_put(o);
  /* A Lease without spec (kubectl-created) is an empty record. */
  o = json_tokener_parse("{\"metadata\":{\"name\":\"x\"}}");
  ck_assert_int_eq(gb_lease_record_from_json(o, &r, &d), 0);
  ck_assert_str_eq(r.holder, "");
  json_object_put(o);
  const char *bad[] = {
      "{\"spec\":[]}",
      "{\"spec\":{\"holderIdentity\":5}}",
      "{\"spec\":{\"leaseDurationSeconds\":\"15\"}}",
      "{\"spec\":{\"leaseDurationSeconds\":-1}}",
      "{\"spec\":{\"leaseTransitions\":99999999999}}",
      "{\"spec\":{\"renewTime\":\"yesterday\"}}",
      "[]",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    o = json_tokener_parse(bad[i]);
    ck_assert_ptr_nonnull(o);
    size_t before = d.errors;
    ck_assert_msg(gb_lease_record_from_json(o, &r, &d) == GC_EINVAL, "accepted %s", bad[i]);
    ck_assert_uint_eq(d.errors, before + 1);
    json_object_put(o);
  }
  /* Over-long holder. */
  char big[600];
  memset(big, 'h', 400);
  big[400] = 0;
  char doc[800];
  snprintf(doc, sizeof(doc), "{\"spec\":{\"holderIdentity\":\"%s\"}}", big);
  o = json_tokener_parse(doc);
  ck_assert_int_eq(gb_lease_record_from_json(o, &r, &d), GC_EINVAL);
  json_object_put(o);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(test_config_validation) {
  struct fstore s = {.l = &lease};
  struct gb_leader_store ops = {fs_get, fs_create, fs_update, &s};
  struct {
    double lease, renew, retry;
    const char *ns, *name;
    int ok;
  } cases[] = {
      {0, 0, 0, "ns", "n", 1},           /* 15/10/2 */
      {15, 10, 2, "ns", "n", 1},
      {3, 2, 0.5, "ns", "n", 1},
      {10, 10, 2, "ns", "n", 0},         /* lease must exceed renew */
      {10.5, 10.2, 2, "ns", "n", 0},     /* written as 10 s: below renew */
      {15, 2.4, 2, "ns", "n", 0},        /* renew must exceed 1.2 x retry */
      {0.5, 0.3, 0.1, "ns", "n", 0},     /* under a second */
      {15, 10, 2, "", "n", 0},
      {15, 10, 2, "ns", NULL, 0},
      {15, 10, 2, "Bad_NS", "n", 0},
      {15, 10, 2, "ns", "a/b", 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gb_leader_config cfg = {0};
    cfg.lease_duration_s = cases[i].lease;
    cfg.renew_deadline_s = cases[i].renew;
    cfg.retry_period_s = cases[i].retry;
    cfg.lease_namespace = cases[i].ns;
    cfg.lease_name = cases[i].name;
    cfg.store = &ops;
    struct gb_leader *le = NULL;
    struct gc_diags d;
    gc_diags_init(&d);
    int rc = gb_leader_new(&cfg, NULL, NULL, &le, &d);
    if (cases[i].ok) {
      ck_assert_msg(rc == 0, "case %zu: %s", i, d.n ? d.msgs[0] : "");
    } else {
      ck_assert_msg(rc == GC_EINVAL, "case %zu accepted", i);
      ck_assert_ptr_null(le);
      ck_assert_uint_ge(d.errors, 1);
    }
    gb_leader_free(le);
    gc_diags_destroy(&d);
  }
  /* No store and no client. */
  struct gb_leader_config cfg = {.lease_namespace = "ns", .lease_name = "n"};
  struct gb_leader *le = NULL;
  ck_assert_int_eq(gb_leader_new(&cfg, NULL, NULL, &le, NULL), GC_EINVAL);
  gb_leader_free(NULL);
  ck_assert_int_eq(gb_leader_is_leader(NULL), 0);
}
END_TEST

START_TEST(test_identity) {
  struct elector a, b;
  elector_init(&a, NULL);
  elector_init(&b, NULL);
  const char *ia = gb_leader_identity(a.le), *ib = gb_leader_identity(b.le);
  char host[128] = "";
  gethostname(host, sizeof(host));
  host[sizeof(host) - 1] = 0;
  size_t hl = strlen(host);
  ck_assert_msg(!strncmp(ia, host, hl) && ia[hl] == '_', "identity %s", ia);
  /* hostname_ + a UUID (36 chars, version 4). */
  ck_assert_uint_eq(strlen(ia), hl + 1 + 36);
  ck_assert_int_eq(ia[hl + 1 + 14], '4');
  ck_assert_str_ne(ia, ib);
  gb_leader_free(a.le);
  gb_leader_free(b.le);
}
END_TEST

START_TEST(test_acquire_absent_and_renew) {
  struct elector a;
  elector_init(&a, "a");
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  double delay = gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  ck_assert_double_eq(delay, 2.0);
  ck_assert_int_eq(a.ev.started, 1);
  ck_assert_int_eq(a.ev.leading_at_start, 1);
  ck_assert_int_eq(a.store.creates, 1);
  ck_assert_str_eq(lease.rec.holder, "a");
  ck_assert_int_eq(lease.rec.duration_s, 15);
  ck_assert_int_eq(lease.rec.transitions, 0);
  ck_assert_str_eq(lease.rec.acquire_time, lease.rec.renew_time);
  double t;
  ck_assert_int_eq(gb_leader_parse_time(lease.rec.renew_time, &t), 0);
  ck_assert_double_eq_tol(t, 1.7e9 + 1000, 1e-5);
  char acquired[GB_LEADER_TIME_MAX];
  snprintf(acquired, sizeof(acquired), "%s", lease.rec.acquire_time);

  /* Renewals: the fast path writes without reading; acquireTime and the
   * transition count stay, renewTime moves. */
  int gets = a.store.gets;
  for (int i = 0; i < 5; i++) {
    clk.mono += 2;
    ck_assert_double_eq(gb_leader_step(a.le), 2.0);
    ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  }
  ck_assert_int_eq(a.store.gets, gets);
  ck_assert_int_eq(a.store.updates, 5);
  ck_assert_str_eq(lease.rec.acquire_time, acquired);
  ck_assert_str_ne(lease.rec.renew_time, acquired);
  ck_assert_int_eq(lease.rec.transitions, 0);
  ck_assert_int_eq(a.ev.started, 1);
  ck_assert_int_eq(a.ev.stopped, 0);
  struct gb_leader_status st;
  gb_leader_snapshot(a.le, &st);
  ck_assert_int_eq(st.leading, 1);
  ck_assert_str_eq(st.holder, "a");
  ck_assert_uint_eq(st.terms, 1);
  ck_assert_uint_eq(st.attempts, 6);
  ck_assert_uint_eq(st.failures, 0);
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_wait_for_expiry_on_local_clock) {
  /* Someone else holds the lease; its renewTime is a year old by the wall
   * clock (a skewed remote clock), which must not matter. */
  lease.exists = 1;
  snprintf(lease.rec.holder, sizeof(lease.rec.holder), "other");
  lease.rec.duration_s = 15;
  snprintf(lease.rec.renew_time, sizeof(lease.rec.renew_time), "2025-01-01T00:00:00.000000Z");
  snprintf(lease.rec.acquire_time, sizeof(lease.rec.acquire_time), "2025-01-01T00:00:00.000000Z");
  lease.rec.transitions = 4;
  struct elector a;
  elector_init(&a, "a");
  double first_seen = clk.mono;
  for (int i = 0; i < 7; i++) {
    double delay = gb_leader_step(a.le);
    ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
    /* Jittered retry: RetryPeriod + U[0, 1.2) x RetryPeriod. */
    ck_assert(delay >= 2.0 && delay < 2.0 + 2.4);
    clk.mono += 2;
  }
  ck_assert_int_eq(a.ev.new_leader, 1);
  ck_assert_str_eq(a.ev.last_holder, "other");
  ck_assert_int_eq(lease.writes, 0);
  /* 14 s after first seeing it: still held. */
  clk.mono = first_seen + 14.999;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert_int_eq(lease.writes, 0);
  /* At 15 s: expired by our clock, taken over; the transition is counted. */
  clk.mono = first_seen + 15.001;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  ck_assert_str_eq(lease.rec.holder, "a");
  ck_assert_int_eq(lease.rec.transitions, 5);
  ck_assert_str_eq(lease.rec.acquire_time, lease.rec.renew_time);
  ck_assert_int_eq(a.ev.new_leader, 2);
  ck_assert_str_eq(a.ev.last_holder, "a");
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_standby_wakes_at_expiry) {
  lease.exists = 1;
  snprintf(lease.rec.holder, sizeof(lease.rec.holder), "other");
  lease.rec.duration_s = 15;
  struct elector a;
  elector_init(&a, "a");
  double seen = clk.mono;
  gb_leader_step(a.le);
  /* 14 s later the lease has 1 s left: the next try is due right after it
   * expires, not a full jittered RetryPeriod (2-4.4 s) later. */
  clk.mono = seen + 14;
  double delay = gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert(delay > 1.0 && delay < 1.05);
  clk.mono += delay;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_renewing_holder_is_never_taken_over) {
  lease.exists = 1;
  snprintf(lease.rec.holder, sizeof(lease.rec.holder), "other");
  lease.rec.duration_s = 15;
  struct elector a;
  elector_init(&a, "a");
  /* The holder renews every 10 s (a changed record each time): a standby
   * watching for 5 minutes never acquires. */
  for (int i = 0; i < 300; i++) {
    if (i % 10 == 0) {
      snprintf(lease.rec.renew_time, sizeof(lease.rec.renew_time), "2026-01-01T00:00:%02d.0Z",
               (i / 10) % 60);
      lease.rv++;
    }
    gb_leader_step(a.le);
    ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
    clk.mono += 1;
  }
  ck_assert_int_eq(lease.writes, 0);
  /* The holder stops renewing: taken 15 s after the last change we saw
   * (the last change at i=290 was seen at the step that followed it). */
  double last_change_seen = clk.mono - 10;
  while (!gb_leader_is_leader(a.le)) {
    gb_leader_step(a.le);
    clk.mono += 0.25;
    ck_assert(clk.mono < last_change_seen + 20);
  }
  ck_assert(clk.mono - 0.25 >= last_change_seen + 15);
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_lose_at_renew_deadline) {
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_metric *gauge = NULL, *trans = NULL, *errs = NULL;
  const char *labels[] = {"component", "reason"};
  ck_assert_int_eq(gb_metrics_gauge(reg, "gangbridge_leader", "h", NULL, 0, &gauge, NULL), 0);
  ck_assert_int_eq(gb_leader_metrics_register(reg, &trans, NULL), 0);
  ck_assert_int_eq(gb_metrics_counter(reg, "gangbridge_errors_total", "h", labels, 2, &errs,
                                      NULL), 0);
  struct gb_leader_config cfg = {0};
  cfg.leader_gauge = gauge;
  cfg.transitions = trans;
  cfg.errors = errs;
  struct elector a;
  elector_init_cfg(&a, "a", &cfg);
  double v;
  ck_assert_int_eq(gb_metric_value(gauge, NULL, &v), 0);
  ck_assert_double_eq(v, 0);
  double t0 = clk.mono;
  gb_leader_step(a.le); /* acquire at t0 */
  ck_assert_int_eq(gb_metric_value(gauge, NULL, &v), 0);
  ck_assert_double_eq(v, 1);
  ck_assert_int_eq(gb_metric_value(trans, NULL, &v), 0);
  ck_assert_double_eq(v, 1);
  /* From now on every write fails; reads work. */
  a.store.fail_update = -1;
  clk.mono = t0 + 2;
  gb_leader_step(a.le);
  clk.mono = t0 + 4;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  /* The predicate turns false at t0 + RenewDeadline with no step at all. */
  clk.mono = t0 + 9.9999;
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  clk.mono = t0 + 10.0;
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert_int_eq(a.ev.stopped, 0);
  gb_leader_poll(a.le); /* what the notifier thread does at the deadline */
  ck_assert_int_eq(a.ev.stopped, 1);
  ck_assert_int_eq(a.ev.leading_at_stop, 0);
  ck_assert_int_eq(gb_metric_value(gauge, NULL, &v), 0);
  ck_assert_double_eq(v, 0);
  const char *lv[] = {"leader", "error"};
  ck_assert_int_eq(gb_metric_value(errs, lv, &v), 0);
  ck_assert_double_eq(v, 4); /* fast path + slow path update, twice */
  /* Steps keep failing: no new term. */
  for (int i = 0; i < 5; i++) {
    clk.mono += 2;
    gb_leader_step(a.le);
    ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  }
  ck_assert_int_eq(a.ev.started, 1);
  /* The API recovers: the lease still names us, so we lead again (a new
   * term, as a fresh client-go Run would). */
  a.store.fail_update = 0;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  ck_assert_int_eq(a.ev.started, 2);
  ck_assert_int_eq(gb_metric_value(trans, NULL, &v), 0);
  ck_assert_double_eq(v, 2);
  ck_assert_int_eq(lease.rec.transitions, 0);
  gb_leader_free(a.le);
  gb_metrics_free(reg);
}
END_TEST

START_TEST(test_late_renewal_does_not_extend_term) {
  struct elector a;
  elector_init(&a, "a");
  double t0 = clk.mono;
  gb_leader_step(a.le);
  /* The renewal at t0 + 2 takes 7 s to answer (inside the 8 s left of the
   * window): leading until t0 + 2 + 10 after it returns. */
  clk.mono = t0 + 2;
  a.store.latency = 7;
  gb_leader_step(a.le);
  ck_assert_double_eq_tol(clk.mono, t0 + 9, 1e-9);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  /* The next one would answer after the deadline: it is given up at
   * t0 + 12 and leadership ends there. */
  clk.mono = t0 + 11.5;
  a.store.latency = 20;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert(clk.mono < t0 + 12.1);
  ck_assert_int_eq(a.ev.stopped, 1);
  gb_leader_free(a.le);
}
END_TEST

/* An API that answers every request in 2.5 s (longer than RetryPeriod, well
 * inside RenewDeadline) with client-go's defaults 15/10/2 s: client-go lets
 * each attempt take up to RenewDeadline, so a replica acquires, keeps the
 * lease and writes go on.  Timing each request out after RetryPeriod left
 * nobody able to hold it. */
START_TEST(test_slow_api_within_renew_deadline) {
  struct elector a, b;
  elector_init(&a, "a");
  elector_init(&b, "b");
  /* The fake clock is shared and steps run one after another, so only a's
   * requests take time: b's would eat into a's schedule, which concurrent
   * replicas do not.  b is the standby that must never take over. */
  a.store.latency = 2.5;
  double t_end = clk.mono + 120, next_a = clk.mono, next_b = clk.mono + 0.3;
  int steps = 0;
  while (clk.mono < t_end) {
    struct elector *e = next_a <= next_b ? &a : &b;
    double due = e == &a ? next_a : next_b;
    if (clk.mono < due)
      clk.mono = due;
    double delay = gb_leader_step(e->le);
    if (e == &a)
      next_a = clk.mono + delay;
    else
      next_b = clk.mono + delay;
    ck_assert(!(gb_leader_is_leader(a.le) && gb_leader_is_leader(b.le)));
    steps++;
  }
  ck_assert_int_gt(steps, 20);
  /* a acquired first and never lost the lease; b never led. */
  ck_assert_int_eq(a.ev.started, 1);
  ck_assert_int_eq(a.ev.stopped, 0);
  ck_assert_int_eq(b.ev.started, 0);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  ck_assert_int_eq(a.store.timeouts, 0);
  /* Renewals every RetryPeriod + latency (4.5 s) over two minutes. */
  ck_assert_int_ge(a.store.updates, 120 / 5);
  gb_leader_free(a.le);
  gb_leader_free(b.le);
}
END_TEST

/* A renewal may take what is left of the renew window, no more: at the
 * deadline the request is given up (the lease may be someone else's by then). */
START_TEST(test_renewal_budget_is_the_window) {
  struct elector a;
  elector_init(&a, "a");
  double t0 = clk.mono;
  gb_leader_step(a.le);
  ck_assert_double_eq_tol(a.store.max_timeout, 10, 1e-9); /* acquiring: RenewDeadline */
  clk.mono = t0 + 2;
  a.store.latency = 30;
  a.store.max_timeout = 0;
  gb_leader_step(a.le);
  ck_assert_double_eq_tol(a.store.max_timeout, 8, 1e-9); /* leading: until the deadline */
  ck_assert_double_eq_tol(clk.mono, t0 + 10, 1e-2);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert_int_eq(a.ev.stopped, 1);
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_conflict_rereads_and_other_holder_stops_at_once) {
  struct elector a;
  elector_init(&a, "a");
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  /* Someone touched the lease (e.g. a label): the fast-path update gets a
   * 409, the same attempt re-reads and renews. */
  lease.rv += 5;
  clk.mono += 2;
  int gets = a.store.gets;
  gb_leader_step(a.le);
  ck_assert_int_eq(a.store.gets, gets + 1);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  ck_assert_int_eq(a.ev.stopped, 0);
  /* An administrator hands the lease to "b": the next attempt sees it and
   * stops leading at once, long before the renew deadline. */
  snprintf(lease.rec.holder, sizeof(lease.rec.holder), "b");
  lease.rv++;
  clk.mono += 2;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert_int_eq(a.ev.stopped, 1);
  ck_assert_str_eq(a.ev.last_holder, "b");
  ck_assert_str_eq(lease.rec.holder, "b");
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_deleted_lease_is_recreated) {
  struct elector a;
  elector_init(&a, "a");
  gb_leader_step(a.le);
  lease.exists = 0;
  clk.mono += 2;
  gb_leader_step(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  ck_assert_int_eq(a.store.creates, 2);
  ck_assert_int_eq(lease.exists, 1);
  ck_assert_str_eq(lease.rec.holder, "a");
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_release_hands_over) {
  struct elector a, b;
  elector_init(&a, "a");
  elector_init(&b, "b");
  gb_leader_step(a.le);
  gb_leader_step(b.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 1);
  ck_assert_int_eq(gb_leader_is_leader(b.le), 0);
  clk.mono += 1;
  gb_leader_release_now(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert_int_eq(a.ev.stopped, 1);
  ck_assert_str_eq(lease.rec.holder, "");
  ck_assert_int_eq(lease.rec.duration_s, 1);
  ck_assert_int_eq(lease.rec.transitions, 0);
  /* b takes it on its very next try, not 15 s later. */
  clk.mono += 0.1;
  gb_leader_step(b.le);
  ck_assert_int_eq(gb_leader_is_leader(b.le), 1);
  ck_assert_str_eq(lease.rec.holder, "b");
  ck_assert_int_eq(lease.rec.transitions, 1);
  /* A non-leader's release writes nothing. */
  long writes = lease.writes;
  gb_leader_release_now(a.le);
  ck_assert_int_eq(lease.writes, writes);
  gb_leader_free(a.le);
  gb_leader_free(b.le);
}
END_TEST

START_TEST(test_no_release_on_cancel) {
  struct gb_leader_config cfg = {0};
  cfg.no_release_on_cancel = 1;
  struct elector a;
  elector_init_cfg(&a, "a", &cfg);
  gb_leader_step(a.le);
  gb_leader_release_now(a.le);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert_str_eq(lease.rec.holder, "a");
  gb_leader_free(a.le);
}
END_TEST

START_TEST(test_jitter_spread) {
  lease.exists = 1;
  snprintf(lease.rec.holder, sizeof(lease.rec.holder), "other");
  lease.rec.duration_s = 1000000;
  struct elector a;
  elector_init(&a, "a");
  double lo = 1e9, hi = 0;
  for (int i = 0; i < 400; i++) {
    double d = gb_leader_step(a.le);
    ck_assert(d >= 2.0 && d < 4.4);
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  ck_assert(lo < 2.3 && hi > 4.1);
  gb_leader_free(a.le);
}
END_TEST

/* Three electors on one lease, stepping at their own due times with random
 * store failures and latency; after every store call and every step, at
 * most one of them may lead. */
static struct elector *sim_e;
static int sim_n;

static void check_one_leader(void) {
  int n = 0;
  for (int i = 0; i < sim_n; i++)
    n += gb_leader_is_leader(sim_e[i].le);
  ck_assert_int_le(n, 1);
}

START_TEST(test_simulation_never_two_leaders) {
  struct elector e[3];
  sim_e = e;
  sim_n = 3;
  struct gb_leader_config cfg = {0};
  cfg.lease_duration_s = 15;
  cfg.renew_deadline_s = 10;
  cfg.retry_period_s = 2;
  char ids[3][8];
  for (int i = 0; i < 3; i++) {
    snprintf(ids[i], sizeof(ids[i]), "r%d", i);
    struct gb_leader_config c = cfg;
    elector_init_cfg(&e[i], ids[i], &c);
    e[i].next = clk.mono + i * 0.3;
  }
  unsigned seed = 12345;
  double led[3] = {0}, start = clk.mono, none = 0;
  int terms = 0;
  double t_prev = clk.mono;
  for (int it = 0; it < 20000; it++) {
    int k = 0;
    for (int i = 1; i < 3; i++)
      if (e[i].next < e[k].next)
        k = i;
    if (e[k].next > clk.mono)
      clk.mono = e[k].next;
    /* Faults come and go per elector. */
    int r = rand_r(&seed) % 100;
    e[k].store.fail_update = r < 15 ? 1 : 0;
    e[k].store.fail_get = r >= 95 ? 1 : 0;
    e[k].store.latency = (rand_r(&seed) % 100) < 10 ? (rand_r(&seed) % 12000) / 1000.0 : 0.01;
    int before = gb_leader_is_leader(e[k].le);
    double delay = gb_leader_step(e[k].le);
    for (int i = 0; i < 3; i++)
      gb_leader_poll(e[i].le);
    check_one_leader();
    if (!before && gb_leader_is_leader(e[k].le))
      terms++;
    e[k].next = clk.mono + delay;
    /* Leadership accounting over the elapsed interval (approximate). */
    int who = -1;
    for (int i = 0; i < 3; i++)
      if (gb_leader_is_leader(e[i].le))
        who = i;
    if (who >= 0)
      led[who] += clk.mono - t_prev;
    else
      none += clk.mono - t_prev;
    t_prev = clk.mono;
  }
  double total = clk.mono - start;
  /* Someone leads most of the time, and hand-overs happened. */
  ck_assert_msg(none < 0.5 * total, "no leader %.0f of %.0f s", none, total);
  ck_assert_int_ge(terms, 3);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(e[i].ev.started - e[i].ev.stopped, gb_leader_is_leader(e[i].le));
    gb_leader_free(e[i].le);
  }
}
END_TEST

/* ---- threaded loop over the fake store, real clock ------------------------------- */

static pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;

static void thread_elector(struct elector *x, const char *id) {
  memset(x, 0, sizeof(*x));
  x->store.l = &lease;
  x->store.mu = &store_mu; /* real clock: no clock advance in the store */
  x->ops = (struct gb_leader_store){fs_get, fs_create, fs_update, &x->store};
  x->ev.self = &x->le;
  struct gb_leader_config c = {0};
  c.lease_duration_s = 2;
  c.renew_deadline_s = 1;
  c.retry_period_s = 0.1;
  c.lease_namespace = "ns";
  c.lease_name = "l";
  c.identity = id;
  c.store = &x->ops;
  struct gb_leader_callbacks cb = {on_started, on_stopped, NULL, &x->ev};
  ck_assert_int_eq(gb_leader_new(&c, NULL, &cb, &x->le, NULL), 0);
}

static void set_faults(struct elector *x, int f) {
  pthread_mutex_lock(&store_mu);
  x->store.fail_update = f;
  x->store.fail_get = f;
  pthread_mutex_unlock(&store_mu);
}

/* Polls for up to `ms` until x leads, asserting one leader at most. */
static int wait_leader(struct elector *x, struct elector *y, int ms) {
  for (int i = 0; i < ms / 5 && !gb_leader_is_leader(x->le); i++) {
    ck_assert_int_le(gb_leader_is_leader(x->le) + gb_leader_is_leader(y->le), 1);
    usleep(5000);
  }
  return gb_leader_is_leader(x->le);
}

START_TEST(test_threads_start_stop) {
  struct elector a, b;
  thread_elector(&a, "a");
  thread_elector(&b, "b");
  ck_assert_int_eq(gb_leader_start(a.le), 0);
  ck_assert_int_eq(gb_leader_start(a.le), GC_EUSAGE);
  ck_assert_int_eq(wait_leader(&a, &b, 2000), 1);
  ck_assert_int_eq(gb_leader_start(b.le), 0);
  usleep(300000);
  ck_assert_int_eq(gb_leader_is_leader(b.le), 0);
  /* a's API calls start failing: its notifier announces the stop at the
   * deadline (1 s after its last renewal) and b takes over 2 s after the
   * last change it saw. */
  set_faults(&a, -1);
  for (int i = 0; i < 400 && a.ev.stopped == 0; i++) {
    ck_assert_int_le(gb_leader_is_leader(a.le) + gb_leader_is_leader(b.le), 1);
    usleep(5000);
  }
  ck_assert_int_eq(a.ev.stopped, 1);
  ck_assert_int_eq(gb_leader_is_leader(a.le), 0);
  ck_assert_int_eq(wait_leader(&b, &a, 5000), 1);
  /* b's notifier announces its term just after the predicate turns true; a stop
   * before that announcement rightly announces nothing, so wait for it. */
  for (int i = 0; i < 200 && b.ev.started < 1; i++)
    usleep(5000);
  ck_assert_int_eq(b.ev.started, 1);
  /* a heals; a clean stop of b releases and a takes over on its next try. */
  set_faults(&a, 0);
  gb_leader_stop(b.le);
  ck_assert_int_eq(b.ev.stopped, 1);
  ck_assert_int_eq(gb_leader_is_leader(b.le), 0);
  ck_assert_int_eq(wait_leader(&a, &b, 1000), 1);
  /* The notifier announces right after the predicate turns true. */
  for (int i = 0; i < 200 && a.ev.started < 2; i++)
    usleep(5000);
  ck_assert_int_eq(a.ev.started, 2);
  struct gb_leader_status st;
  gb_leader_snapshot(a.le, &st);
  ck_assert_int_eq(st.alive, 1);
  ck_assert_uint_eq(st.terms, 2);
  gb_leader_free(a.le);
  gb_leader_free(b.le);
  ck_assert_int_eq(a.ev.started, a.ev.stopped);
  ck_assert_int_eq(b.ev.started, 1);
  ck_assert_str_eq(lease.rec.holder, "");
  ck_assert_int_eq(lease.rec.transitions, 2);
}
END_TEST

int main(void) {
  /* The elector logs every failed attempt; the simulation makes thousands. */
  gb_log_set_level(GB_LOG_ERROR);
  Suite *s = suite_create("leader");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_microtime);
  tcase_add_test(tc, test_record_json);
  tcase_add_test(tc, test_config_validation);
  tcase_add_test(tc, test_identity);
  tcase_add_test(tc, test_acquire_absent_and_renew);
  tcase_add_test(tc, test_wait_for_expiry_on_local_clock);
  tcase_add_test(tc, test_standby_wakes_at_expiry);
  tcase_add_test(tc, test_renewing_holder_is_never_taken_over);
  tcase_add_test(tc, test_lose_at_renew_deadline);
  tcase_add_test(tc, test_late_renewal_does_not_extend_term);
  tcase_add_test(tc, test_slow_api_within_renew_deadline);
  tcase_add_test(tc, test_renewal_budget_is_the_window);
  tcase_add_test(tc, test_conflict_rereads_and_other_holder_stops_at_once);
  tcase_add_test(tc, test_deleted_lease_is_recreated);
  tcase_add_test(tc, test_release_hands_over);
  tcase_add_test(tc, test_no_release_on_cancel);
  tcase_add_test(tc, test_jitter_spread);
  tcase_add_test(tc, test_simulation_never_two_leaders);
  tcase_add_test(tc, test_threads_start_stop);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
