/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_leader: Lease-based leader election (see the header).  The loop is
 * client-go's LeaderElector: acquire (tryAcquireOrRenew every RetryPeriod
 * with jitter until it succeeds), then renew (every RetryPeriod; give up once
 * no renewal succeeded within RenewDeadline, or at once when the lease names
 * someone else), then back to acquire.  The one deliberate difference is that
 * "leading" is a deadline every reader compares with the monotonic clock, so
 * a renewal stuck in a slow request cannot extend leadership past the
 * deadline; a notifier thread turns deadline and flag changes into the
 * on_started/on_stopped callbacks and the gauge.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "gb_leader.h"
#include "gb_leader_test.h"
#include "gb_kobj.h"
#include "gb_clock.h"
#include "gb_log.h"

enum phase { PH_ACQUIRE = 0, PH_LEAD };

struct gb_leader {
  /* configuration (immutable after new) */
  char ns[254];
  char name[254];
  char identity[GB_LEADER_IDENTITY_MAX];
  char lease_path[600];
  char collection_path[600];
  double lease_s, renew_s, retry_s;
  long long lease_whole_s; /* leaseDurationSeconds we write */
  int release_on_cancel;
  struct gb_metric *gauge, *transitions_metric, *errors;
  struct gb_leader_callbacks cb;
  struct gb_leader_store store;
  struct gb_leader_clock clock;
  struct gb_kube_client *client;

  /* the kube store's state (elector thread, or the stopping thread after join) */
  json_object *last_lease; /* the Lease as last read or written */
  const char *last_reason; /* gangbridge_errors_total reason of the last failure */

  /* elector state (elector thread only, or the stepping/stopping thread) */
  enum phase phase;
  int have_observed;
  struct gb_lease_record observed;
  char observed_rv[GB_LEADER_RV_MAX];
  double observed_time; /* monotonic: when the record last changed as we saw it */
  uint64_t rng;

  /* lock-free leadership */
  atomic_int holding;
  atomic_llong deadline_us; /* monotonic microseconds */

  /* shared, under mu */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int started, stop_req, notifier_quit, elector_alive;
  int announced; /* what the callbacks last said */
  struct gb_leader_status st;
  pthread_t elector_thr, notifier_thr;
};

/* ---- time ----------------------------------------------------------------- */

static double sys_clock(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_mono(const struct gb_leader *le) {
  return le->clock.mono ? le->clock.mono(le->clock.ctx) : gb_clock_s();
}

static double now_wall(const struct gb_leader *le) {
  return le->clock.wall ? le->clock.wall(le->clock.ctx) : sys_clock(CLOCK_REALTIME);
}

int gb_leader_format_microtime(double t, char *buf, size_t cap) {
  if (!buf || cap < GB_LEADER_TIME_MAX || !isfinite(t) || t < 0 || t > 253402300799.0)
    return GC_EINVAL;
  time_t secs = (time_t)floor(t);
  long usec = (long)llround((t - (double)secs) * 1e6);
  if (usec >= 1000000) {
    secs++;
    usec -= 1000000;
  }
  struct tm tm;
  if (!gmtime_r(&secs, &tm))
    return GC_EINVAL;
  int n = snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
  return n > 0 && (size_t)n < cap ? 0 : GC_EINVAL;
}

/* Reads exactly n digits at *p. */
static int digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*p)[i]))
      return GC_EINVAL;
    v = v * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

int gb_leader_parse_time(const char *s, double *out) {
  if (!s || !out)
    return GC_EINVAL;
  const char *p = s;
  int y, mo, d, h, mi, sec;
  if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
      digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
    return GC_EINVAL;
  p++;
  if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
      digits(&p, 2, &sec))
    return GC_EINVAL;
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60)
    return GC_EINVAL;
  double frac = 0;
  if (*p == '.') {
    p++;
    double scale = 0.1;
    int n = 0;
    while (isdigit((unsigned char)*p)) {
      if (++n > 9)
        return GC_EINVAL;
      frac += (*p - '0') * scale;
      scale /= 10;
      p++;
    }
    if (!n)
      return GC_EINVAL;
  }
  int off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p == '-' ? -1 : 1, oh, om;
    p++;
    if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
      return GC_EINVAL;
    off = sign * (oh * 3600 + om * 60);
  } else {
    return GC_EINVAL;
  }
  if (*p)
    return GC_EINVAL;
  struct tm tm = {0};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  /* timegm normalises 29 Feb 2025 into March: reject dates that moved (a
   * leap second, :60, legitimately rolls over and is kept). */
  struct tm back;
  if (sec != 60 && (!gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != mo - 1))
    return GC_EINVAL;
  *out = (double)t - off + frac;
  return 0;
}

/* ---- the record ------------------------------------------------------------ */

/* 1 when both records hold the same values (client-go compares the records,
 * not the resourceVersion, to decide that the lease "changed"). */
static int gb_lease_record_equal(const struct gb_lease_record *a, const struct gb_lease_record *b) {
  return !strcmp(a->holder, b->holder) && a->duration_s == b->duration_s &&
         !strcmp(a->acquire_time, b->acquire_time) && !strcmp(a->renew_time, b->renew_time) &&
         a->transitions == b->transitions;
}

static int copy_str_field(json_object *spec, const char *key, char *dst, size_t cap,
                          int is_time, struct gc_diags *d) {
  json_object *v;
  dst[0] = 0;
  if (!json_object_object_get_ex(spec, key, &v) || json_object_is_type(v, json_type_null))
    return 0;
  if (!json_object_is_type(v, json_type_string)) {
    gc_diags_addf(d, "spec.%s: must be a string", key);
    return GC_EINVAL;
  }
  const char *s = json_object_get_string(v);
  size_t n = strlen(s);
  if (n >= cap) {
    gc_diags_addf(d, "spec.%s: longer than %zu bytes", key, cap - 1);
    return GC_EINVAL;
  }
  double t;
  if (is_time && n && gb_leader_parse_time(s, &t)) {
    gc_diags_addf(d, "spec.%s: \"%s\" is not an RFC 3339 time", key, s);
    return GC_EINVAL;
  }
  memcpy(dst, s, n + 1);
  return 0;
}

static int copy_int_field(json_object *spec, const char *key, long long *dst,
                          struct gc_diags *d) {
  json_object *v;
  *dst = 0;
  if (!json_object_object_get_ex(spec, key, &v) || json_object_is_type(v, json_type_null))
    return 0;
  if (!json_object_is_type(v, json_type_int)) {
    gc_diags_addf(d, "spec.%s: must be an integer", key);
    return GC_EINVAL;
  }
  errno = 0;
  int64_t x = json_object_get_int64(v);
  if (errno || x < 0 || x > INT32_MAX) {
    gc_diags_addf(d, "spec.%s: out of range", key);
    return GC_EINVAL;
  }
  *dst = x;
  return 0;
}

int gb_lease_record_from_json(json_object *lease, struct gb_lease_record *rec,
                              struct gc_diags *d) {
  memset(rec, 0, sizeof(*rec));
  if (!lease || !json_object_is_type(lease, json_type_object)) {
    gc_diags_addf(d, "lease: not an object");
    return GC_EINVAL;
  }
  json_object *spec;
  if (!json_object_object_get_ex(lease, "spec", &spec) ||
      json_object_is_type(spec, json_type_null))
    return 0;
  if (!json_object_is_type(spec, json_type_object)) {
    gc_diags_addf(d, "spec: must be an object");
    return GC_EINVAL;
  }
  int rc;
  if ((rc = copy_str_field(spec, "holderIdentity", rec->holder, sizeof(rec->holder), 0, d)) ||
      (rc = copy_int_field(spec, "leaseDurationSeconds", &rec->duration_s, d)) ||
      (rc = copy_str_field(spec, "acquireTime", rec->acquire_time, sizeof(rec->acquire_time), 1,
                           d)) ||
      (rc = copy_str_field(spec, "renewTime", rec->renew_time, sizeof(rec->renew_time), 1, d)) ||
      (rc = copy_int_field(spec, "leaseTransitions", &rec->transitions, d)))
    return rc;
  return 0;
}

/* The Lease spec for rec (client-go's LeaderElectionRecordToLeaseSpec). */
static json_object *record_to_spec(const struct gb_lease_record *rec) {
  json_object *spec = json_object_new_object();
  if (!spec)
    return NULL;
  int bad = json_object_object_add(spec, "holderIdentity", json_object_new_string(rec->holder));
  bad |= json_object_object_add(spec, "leaseDurationSeconds",
                                json_object_new_int64(rec->duration_s));
  if (rec->acquire_time[0])
    bad |= json_object_object_add(spec, "acquireTime",
                                  json_object_new_string(rec->acquire_time));
  if (rec->renew_time[0])
    bad |= json_object_object_add(spec, "renewTime", json_object_new_string(rec->renew_time));
  bad |= json_object_object_add(spec, "leaseTransitions",
                                json_object_new_int64(rec->transitions));
  if (bad) {
    json_object_put(spec);
    return NULL;
  }
  return spec;
}

/* ---- the Lease through the API server --------------------------------------- */

static const char *reason_of(const struct gb_kube_error *e) {
  if (e->http == 409)
    return "conflict";
  if (e->http >= 500)
    return "status_5xx";
  if (e->http == 429)
    return "throttled";
  if (e->http >= 400)
    return "status_4xx";
  return e->curl_code == 28 ? "timeout" : "transport";
}

static void kube_fail(struct gb_leader *le, const char *what, const struct gb_kube_error *e,
                      struct gc_diags *d) {
  char buf[1200];
  le->last_reason = reason_of(e);
  gc_diags_addf(d, "%s/%s: %s lease: %s", le->ns, le->name, what,
                gb_kube_error_str(e, buf, sizeof(buf)));
}

/* Remembers the Lease as served and extracts its record and resourceVersion. */
static int kube_take(struct gb_leader *le, json_object *obj, struct gb_lease_record *rec,
                     char *rv, struct gc_diags *d) {
  const char *v = gb_kobj_meta(obj, "resourceVersion");
  if (!v || !*v || strlen(v) >= GB_LEADER_RV_MAX) {
    le->last_reason = "decode";
    gc_diags_addf(d, "%s/%s: lease: metadata.resourceVersion missing or too long", le->ns,
                  le->name);
    json_object_put(obj);
    return GC_EINVAL;
  }
  struct gb_lease_record tmp;
  int rc = gb_lease_record_from_json(obj, rec ? rec : &tmp, d);
  if (rc) {
    le->last_reason = "decode";
    json_object_put(obj);
    return rc;
  }
  snprintf(rv, GB_LEADER_RV_MAX, "%s", v);
  json_object_put(le->last_lease);
  le->last_lease = obj;
  return 0;
}

static long timeout_ms(double timeout_s) {
  long ms = (long)(timeout_s * 1000.0);
  return ms < 1 ? 1 : ms;
}

static int kube_get(void *ctx, double timeout_s, struct gb_lease_record *rec, char *rv,
                    struct gc_diags *d) {
  struct gb_leader *le = ctx;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  json_object *obj = NULL;
  int rc = gb_kube_client_request_timeout(le->client, GB_KUBE_GET, "GET", le->lease_path, NULL,
                                          NULL, 0, timeout_ms(timeout_s), &obj, &e);
  if (rc == GC_ENOTFOUND) {
    json_object_put(le->last_lease);
    le->last_lease = NULL;
    return GC_ENOTFOUND;
  }
  if (rc) {
    kube_fail(le, "get", &e, d);
    json_object_put(obj);
    return rc;
  }
  return kube_take(le, obj, rec, rv, d);
}

static json_object *new_lease_object(const struct gb_leader *le) {
  json_object *o = json_object_new_object(), *md = json_object_new_object();
  if (!o || !md) {
    json_object_put(o);
    json_object_put(md);
    return NULL;
  }
  json_object_object_add(o, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
  json_object_object_add(o, "kind", json_object_new_string("Lease"));
  json_object_object_add(md, "name", json_object_new_string(le->name));
  json_object_object_add(md, "namespace", json_object_new_string(le->ns));
  json_object_object_add(o, "metadata", md);
  return o;
}

static int kube_create(void *ctx, double timeout_s, const struct gb_lease_record *rec, char *rv,
                       int *conflict, struct gc_diags *d) {
  struct gb_leader *le = ctx;
  json_object *o = new_lease_object(le), *spec = record_to_spec(rec), *out = NULL;
  if (!o || !spec) {
    json_object_put(o);
    json_object_put(spec);
    return GC_ENOMEM;
  }
  json_object_object_add(o, "spec", spec);
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  const char *body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  int rc = body ? gb_kube_client_request_timeout(le->client, GB_KUBE_CREATE, "POST",
                                                 le->collection_path, "application/json", body,
                                                 strlen(body), timeout_ms(timeout_s), &out, &e)
                : GC_ENOMEM;
  json_object_put(o);
  if (rc) {
    *conflict = e.http == 409;
    kube_fail(le, "create", &e, d);
    json_object_put(out);
    return rc == GC_ENOTFOUND ? GC_EIO : rc;
  }
  return kube_take(le, out, NULL, rv, d);
}

/* PUT of the last Lease we saw with its spec replaced: labels, annotations
 * and fields we do not know survive, and metadata.resourceVersion makes the
 * write conditional (409 when someone wrote in between). */
static int kube_update(void *ctx, double timeout_s, const struct gb_lease_record *rec, char *rv,
                       int *conflict, struct gc_diags *d) {
  struct gb_leader *le = ctx;
  json_object *o = NULL;
  if (le->last_lease && json_object_deep_copy(le->last_lease, &o, NULL) != 0)
    o = NULL;
  if (!o)
    o = new_lease_object(le);
  json_object *spec = record_to_spec(rec), *md = NULL;
  if (!o || !spec) {
    json_object_put(o);
    json_object_put(spec);
    return GC_ENOMEM;
  }
  json_object_object_add(o, "spec", spec);
  if (!json_object_object_get_ex(o, "metadata", &md) ||
      !json_object_is_type(md, json_type_object)) {
    md = json_object_new_object();
    json_object_object_add(o, "metadata", md);
  }
  json_object_object_del(md, "managedFields");
  json_object_object_add(md, "resourceVersion", json_object_new_string(rv));
  const char *body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  json_object *out = NULL;
  int rc = gb_kube_client_request_timeout(le->client, GB_KUBE_UPDATE, "PUT", le->lease_path,
                                          "application/json", body, strlen(body),
                                          timeout_ms(timeout_s), &out, &e);
  json_object_put(o);
  if (rc) {
    *conflict = e.http == 409;
    kube_fail(le, "update", &e, d);
    json_object_put(out);
    /* A 404 means someone deleted the lease: the next attempt re-reads. */
    return rc == GC_ENOTFOUND ? GC_EIO : rc;
  }
  return kube_take(le, out, NULL, rv, d);
}

/* ---- identity and randomness ---------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
  /* xorshift64*: enough for jitter. */
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static void random_bytes(void *buf, size_t n) {
  ssize_t got = getrandom(buf, n, GRND_NONBLOCK);
  if (got == (ssize_t)n)
    return;
  /* Fall back to time and address bits: uniqueness, not secrecy, matters. */
  uint64_t s = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)buf << 16) ^ (uint64_t)getpid();
  s |= 1;
  unsigned char *p = buf;
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(rng_next(&s) >> 56);
}

static double jitter(struct gb_leader *le, double base) {
  /* wait.Jitter(base, 1.2): base + U[0,1) * 1.2 * base. */
  double u = (double)(rng_next(&le->rng) >> 11) / 9007199254740992.0;
  return base + u * GB_LEADER_JITTER * base;
}

static void make_identity(char *out, size_t cap) {
  char host[128];
  if (gethostname(host, sizeof(host)) != 0 || !host[0])
    snprintf(host, sizeof(host), "localhost");
  host[sizeof(host) - 1] = 0;
  unsigned char u[16];
  random_bytes(u, sizeof(u));
  u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* UUID version 4 */
  u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
  snprintf(out, cap,
           "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", host, u[0],
           u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
           u[15]);
}

/* ---- leadership state ---------------------------------------------------------- */

int gb_leader_is_leader(const struct gb_leader *le) {
  if (!le)
    return 0;
  struct gb_leader *m = (struct gb_leader *)le; /* atomics need non-const access */
  if (!atomic_load_explicit(&m->holding, memory_order_acquire))
    return 0;
  long long dl = atomic_load_explicit(&m->deadline_us, memory_order_acquire);
  return now_mono(le) * 1e6 < (double)dl;
}

int gb_leader_is_leader_fn(void *le) { return gb_leader_is_leader(le); }

const char *gb_leader_identity(const struct gb_leader *le) { return le ? le->identity : ""; }

static void wake(struct gb_leader *le) {
  pthread_mutex_lock(&le->mu);
  pthread_cond_broadcast(&le->cond);
  pthread_mutex_unlock(&le->mu);
}

/* Leading until t_sent + RenewDeadline.  The deadline is written before the
 * flag so a reader that sees the flag sees a current deadline. */
static void set_leading(struct gb_leader *le, double t_sent) {
  atomic_store_explicit(&le->deadline_us, (long long)((t_sent + le->renew_s) * 1e6),
                        memory_order_release);
  if (!atomic_exchange_explicit(&le->holding, 1, memory_order_acq_rel))
    wake(le);
}

static void clear_leading(struct gb_leader *le) {
  if (atomic_exchange_explicit(&le->holding, 0, memory_order_acq_rel))
    wake(le);
}

/* Brings the callbacks and the gauge in line with gb_leader_is_leader.  Runs
 * on the notifier thread (or the stepping thread); callbacks run unlocked. */
static void announce(struct gb_leader *le) {
  for (;;) {
    int now = gb_leader_is_leader(le);
    pthread_mutex_lock(&le->mu);
    if (now == le->announced) {
      pthread_mutex_unlock(&le->mu);
      return;
    }
    le->announced = now;
    if (now)
      le->st.terms++;
    pthread_mutex_unlock(&le->mu);
    gb_metric_gauge_set(le->gauge, NULL, now ? 1 : 0);
    if (now) {
      gb_metric_counter_inc(le->transitions_metric, NULL);
      gb_log(GB_LOG_INFO, "became leader", "lease", le->lease_path, "identity", le->identity,
             NULL);
      if (le->cb.on_started)
        le->cb.on_started(le->cb.arg);
    } else {
      gb_log(GB_LOG_WARN, "stopped leading", "lease", le->lease_path, "identity", le->identity,
             NULL);
      if (le->cb.on_stopped)
        le->cb.on_stopped(le->cb.arg);
    }
  }
}

void gb_leader_poll(struct gb_leader *le) {
  if (le)
    announce(le);
}

/* ---- tryAcquireOrRenew ---------------------------------------------------------- */

static void count_error(struct gb_leader *le, const char *reason) {
  const char *labels[2] = {"leader", reason ? reason : "error"};
  gb_metric_counter_inc(le->errors, labels);
}

static void log_diags(struct gb_leader *le, const char *msg, struct gc_diags *d) {
  gb_log(GB_LOG_WARN, msg, "lease", le->lease_path, "identity", le->identity, "error",
         d->n ? d->msgs[d->n - 1] : "", NULL);
}

static void observe(struct gb_leader *le, const struct gb_lease_record *rec, const char *rv,
                    double mono) {
  int holder_changed = !le->have_observed || strcmp(le->observed.holder, rec->holder) != 0;
  if (!le->have_observed || !gb_lease_record_equal(&le->observed, rec)) {
    le->observed = *rec;
    le->observed_time = mono;
    le->have_observed = 1;
  }
  snprintf(le->observed_rv, sizeof(le->observed_rv), "%s", rv);
  pthread_mutex_lock(&le->mu);
  snprintf(le->st.holder, sizeof(le->st.holder), "%s", rec->holder);
  le->st.transitions = rec->transitions;
  pthread_mutex_unlock(&le->mu);
  if (holder_changed) {
    gb_log(GB_LOG_INFO, "new leader observed", "lease", le->lease_path, "holder", rec->holder,
           NULL);
    if (le->cb.on_new_leader)
      le->cb.on_new_leader(le->cb.arg, rec->holder);
  }
}

/* When the attempt that starts at t0 must be over.  client-go bounds the
 * renew loop by RenewDeadline (each attempt gets what is left of it) and
 * lets an acquire attempt run as long as its client allows; timing a
 * request out after RetryPeriod instead means that an API slower than
 * RetryPeriod (2 s) but well inside RenewDeadline (10 s) lets nobody hold
 * the lease, and every write stops.  So: while leading, until the renew
 * deadline (a renewal that answers later cannot keep this term anyway);
 * otherwise RenewDeadline from the start of the attempt. */
static double attempt_end(struct gb_leader *le, double t0) {
  double dl = (double)atomic_load(&le->deadline_us) / 1e6;
  if (le->phase == PH_LEAD && atomic_load(&le->holding) && dl > t0)
    return dl;
  return t0 + le->renew_s;
}

/* What is left of the attempt for the next request (never 0: a request with
 * no time left fails at once as a timeout). */
static double budget(struct gb_leader *le, double end) {
  double left = end - now_mono(le);
  return left > 0.001 ? left : 0.001;
}

/* One attempt; 1 when we hold the lease afterwards.  t0 (monotonic, taken
 * before any request) is the base of the renew deadline: whoever observes
 * our write does so after t0, so waits until at least t0 + LeaseDuration. */
static int try_acquire_or_renew(struct gb_leader *le) {
  double t0 = now_mono(le);
  double end = attempt_end(le, t0);
  struct gb_lease_record want;
  memset(&want, 0, sizeof(want));
  snprintf(want.holder, sizeof(want.holder), "%s", le->identity);
  want.duration_s = le->lease_whole_s;
  if (gb_leader_format_microtime(now_wall(le), want.renew_time, sizeof(want.renew_time)))
    want.renew_time[0] = 0;
  memcpy(want.acquire_time, want.renew_time, sizeof(want.acquire_time));
  struct gc_diags d;
  gc_diags_init(&d);
  int ok = 0, conflict = 0, rc;
  char rv[GB_LEADER_RV_MAX];
  pthread_mutex_lock(&le->mu);
  le->st.attempts++;
  pthread_mutex_unlock(&le->mu);

  /* Fast path: the leader updates its last record optimistically. */
  if (le->have_observed && !strcmp(le->observed.holder, le->identity) &&
      atomic_load(&le->holding)) {
    struct gb_lease_record r = want;
    memcpy(r.acquire_time, le->observed.acquire_time, sizeof(r.acquire_time));
    r.transitions = le->observed.transitions;
    snprintf(rv, sizeof(rv), "%s", le->observed_rv);
    rc = le->store.update(le->store.ctx, budget(le, end), &r, rv, &conflict, &d);
    if (rc == 0) {
      observe(le, &r, rv, now_mono(le));
      set_leading(le, t0);
      ok = 1;
      goto out;
    }
    count_error(le, conflict ? "conflict" : le->last_reason);
    log_diags(le, "lease renewal failed; re-reading", &d);
    gc_diags_destroy(&d);
    gc_diags_init(&d);
  }

  /* Slow path: read, decide, write. */
  struct gb_lease_record cur;
  rc = le->store.get(le->store.ctx, budget(le, end), &cur, rv, &d);
  if (rc == GC_ENOTFOUND) {
    conflict = 0;
    rc = le->store.create(le->store.ctx, budget(le, end), &want, rv, &conflict, &d);
    if (rc) {
      count_error(le, conflict ? "conflict" : le->last_reason);
      log_diags(le, "lease create failed", &d);
      goto out;
    }
    observe(le, &want, rv, now_mono(le));
    set_leading(le, t0);
    ok = 1;
    goto out;
  }
  if (rc) {
    count_error(le, le->last_reason);
    log_diags(le, "lease read failed", &d);
    goto out;
  }
  observe(le, &cur, rv, now_mono(le));
  int mine = !strcmp(cur.holder, le->identity);
  if (!mine) {
    /* Another holder: stop leading at once, whatever the deadline says. */
    clear_leading(le);
    if (cur.holder[0] && le->observed_time + (double)cur.duration_s > now_mono(le))
      goto out; /* held and not expired by our clock */
    want.transitions = cur.transitions + 1;
  } else {
    memcpy(want.acquire_time, cur.acquire_time, sizeof(want.acquire_time));
    want.transitions = cur.transitions;
  }
  conflict = 0;
  rc = le->store.update(le->store.ctx, budget(le, end), &want, rv, &conflict, &d);
  if (rc) {
    count_error(le, conflict ? "conflict" : le->last_reason);
    log_diags(le, conflict ? "lease changed under us; re-reading next try"
                           : "lease update failed", &d);
    goto out;
  }
  observe(le, &want, rv, now_mono(le));
  set_leading(le, t0);
  ok = 1;
out:
  if (!ok) {
    pthread_mutex_lock(&le->mu);
    le->st.failures++;
    pthread_mutex_unlock(&le->mu);
  }
  gc_diags_destroy(&d);
  return ok;
}

/* ---- the loop ------------------------------------------------------------------- */

static int deadline_passed(struct gb_leader *le) {
  return now_mono(le) * 1e6 >= (double)atomic_load(&le->deadline_us);
}

static void lose(struct gb_leader *le, const char *why) {
  clear_leading(le);
  le->phase = PH_ACQUIRE;
  gb_log(GB_LOG_WARN, "leader lease lost", "lease", le->lease_path, "identity", le->identity,
         "reason", why, NULL);
}

static double step(struct gb_leader *le) {
  /* A renewal that comes back after the deadline does not extend the old
   * term: the deadline is checked before trying again, as client-go's renew
   * loop gives up at its timeout. */
  if (le->phase == PH_LEAD && deadline_passed(le))
    lose(le, "renew deadline passed");
  int ok = try_acquire_or_renew(le);
  double delay;
  if (le->phase == PH_ACQUIRE) {
    if (ok) {
      le->phase = PH_LEAD;
      delay = le->retry_s;
    } else {
      delay = jitter(le, le->retry_s);
      /* Try again right when the observed lease expires by our clock rather
       * than up to one jittered RetryPeriod later: with client-go's timings
       * that bounds a handover after a crash by about 2.2 x RetryPeriod +
       * LeaseDuration (19.4 s) instead of 23.8 s. */
      if (le->have_observed && le->observed.holder[0] &&
          strcmp(le->observed.holder, le->identity) != 0) {
        double until = le->observed_time + (double)le->observed.duration_s - now_mono(le);
        if (until > 0 && until + 0.01 < delay)
          delay = until + 0.01;
      }
    }
  } else {
    if (!ok && !atomic_load(&le->holding)) {
      lose(le, "another holder observed");
      delay = jitter(le, le->retry_s);
    } else if (!ok && deadline_passed(le)) {
      lose(le, "renew deadline passed");
      delay = jitter(le, le->retry_s);
    } else {
      /* Renewed, or still inside RenewDeadline: try again after RetryPeriod. */
      delay = le->retry_s;
    }
  }
  return delay;
}

double gb_leader_step(struct gb_leader *le) {
  double delay = step(le);
  announce(le);
  return delay;
}

void gb_leader_release_now(struct gb_leader *le) {
  clear_leading(le);
  le->phase = PH_ACQUIRE;
  announce(le);
  if (!le->release_on_cancel || !le->have_observed || strcmp(le->observed.holder, le->identity))
    return;
  /* client-go's release(): holder "", duration 1 s, times now, transitions kept. */
  struct gb_lease_record r;
  memset(&r, 0, sizeof(r));
  r.duration_s = 1;
  if (gb_leader_format_microtime(now_wall(le), r.renew_time, sizeof(r.renew_time)))
    r.renew_time[0] = 0;
  memcpy(r.acquire_time, r.renew_time, sizeof(r.acquire_time));
  r.transitions = le->observed.transitions;
  char rv[GB_LEADER_RV_MAX];
  snprintf(rv, sizeof(rv), "%s", le->observed_rv);
  struct gc_diags d;
  gc_diags_init(&d);
  int conflict = 0;
  double end = now_mono(le) + le->renew_s;
  if (le->store.update(le->store.ctx, budget(le, end), &r, rv, &conflict, &d) == 0) {
    observe(le, &r, rv, now_mono(le));
    gb_log(GB_LOG_INFO, "leader lease released", "lease", le->lease_path, "identity",
           le->identity, NULL);
  } else {
    count_error(le, conflict ? "conflict" : le->last_reason);
    log_diags(le, "lease release failed", &d);
  }
  gc_diags_destroy(&d);
}

static void *elector_main(void *arg) {
  struct gb_leader *le = arg;
  for (;;) {
    pthread_mutex_lock(&le->mu);
    int stop = le->stop_req;
    pthread_mutex_unlock(&le->mu);
    if (stop)
      break;
    double delay = step(le);
    struct timespec ts;
    gb_clock_deadline_s(&ts, delay);
    pthread_mutex_lock(&le->mu);
    while (!le->stop_req && pthread_cond_timedwait(&le->cond, &le->mu, &ts) != ETIMEDOUT)
      ;
    pthread_mutex_unlock(&le->mu);
  }
  clear_leading(le);
  pthread_mutex_lock(&le->mu);
  le->elector_alive = 0;
  pthread_cond_broadcast(&le->cond);
  pthread_mutex_unlock(&le->mu);
  return NULL;
}

/* Waits for leadership changes and deadlines and announces them, so
 * on_stopped runs when the deadline passes even while the elector thread is
 * blocked in a request. */
static void *notifier_main(void *arg) {
  struct gb_leader *le = arg;
  for (;;) {
    announce(le);
    pthread_mutex_lock(&le->mu);
    int leading = le->announced;
    if (le->notifier_quit && !leading && !gb_leader_is_leader(le)) {
      pthread_mutex_unlock(&le->mu);
      break;
    }
    if (gb_leader_is_leader(le) != leading) {
      pthread_mutex_unlock(&le->mu);
      continue;
    }
    if (leading) {
      double left = (double)atomic_load(&le->deadline_us) / 1e6 - now_mono(le);
      struct timespec ts;
      gb_clock_deadline_s(&ts, left + 0.0005);
      pthread_cond_timedwait(&le->cond, &le->mu, &ts);
    } else if (!le->notifier_quit) {
      pthread_cond_wait(&le->cond, &le->mu);
    }
    pthread_mutex_unlock(&le->mu);
  }
  return NULL;
}

/* ---- lifecycle ---------------------------------------------------------------- */

static int copy_name(char *dst, size_t cap, const char *src, const char *what,
                     struct gc_diags *d) {
  if (!src || !*src) {
    gc_diags_addf(d, "leaderElection.%s: must not be empty", what);
    return GC_EINVAL;
  }
  size_t n = strlen(src);
  if (n >= cap || n > 253) {
    gc_diags_addf(d, "leaderElection.%s: longer than 253 characters", what);
    return GC_EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    char c = src[i];
    if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '-' || c == '.')) {
      gc_diags_addf(d, "leaderElection.%s: \"%s\" is not a valid Kubernetes name", what, src);
      return GC_EINVAL;
    }
  }
  memcpy(dst, src, n + 1);
  return 0;
}

int gb_leader_new(const struct gb_leader_config *cfg, struct gb_kube_client *client,
                  const struct gb_leader_callbacks *cb, struct gb_leader **out,
                  struct gc_diags *d) {
  if (!out || !cfg)
    return GC_EINVAL;
  *out = NULL;
  double lease = cfg->lease_duration_s > 0 ? cfg->lease_duration_s : GB_LEADER_DEFAULT_LEASE_S;
  double renew = cfg->renew_deadline_s > 0 ? cfg->renew_deadline_s : GB_LEADER_DEFAULT_RENEW_S;
  double retry = cfg->retry_period_s > 0 ? cfg->retry_period_s : GB_LEADER_DEFAULT_RETRY_S;
  if (!isfinite(lease) || !isfinite(renew) || !isfinite(retry) || lease > 86400) {
    gc_diags_addf(d, "leaderElection: durations must be finite and at most a day");
    return GC_EINVAL;
  }
  /* client-go's NewLeaderElector checks; the duration is written in whole
   * seconds, so the deadline must stay below what others will wait. */
  if (lease < 1) {
    gc_diags_addf(d, "leaderElection.leaseDuration: must be at least 1s");
    return GC_EINVAL;
  }
  if (!(floor(lease) > renew)) {
    gc_diags_addf(d, "leaderElection: leaseDuration (%gs, written as %llds) must be greater "
                     "than renewDeadline (%gs)",
                  lease, (long long)floor(lease), renew);
    return GC_EINVAL;
  }
  if (!(renew > GB_LEADER_JITTER * retry)) {
    gc_diags_addf(d, "leaderElection: renewDeadline (%gs) must be greater than 1.2 x "
                     "retryPeriod (%gs)",
                  renew, retry);
    return GC_EINVAL;
  }
  if (!cfg->store && !client) {
    gc_diags_addf(d, "leaderElection: no Kubernetes client");
    return GC_EINVAL;
  }
  if (cfg->identity && strlen(cfg->identity) >= GB_LEADER_IDENTITY_MAX) {
    gc_diags_addf(d, "leaderElection: identity longer than %d bytes", GB_LEADER_IDENTITY_MAX - 1);
    return GC_EINVAL;
  }
  if (cfg->identity && !*cfg->identity) {
    gc_diags_addf(d, "leaderElection: identity must not be empty");
    return GC_EINVAL;
  }
  if (cfg->store && (!cfg->store->get || !cfg->store->create || !cfg->store->update)) {
    gc_diags_addf(d, "leaderElection: store lacks a function");
    return GC_EINVAL;
  }
  struct gb_leader *le = calloc(1, sizeof(*le));
  if (!le)
    return GC_ENOMEM;
  int rc;
  if ((rc = copy_name(le->ns, sizeof(le->ns), cfg->lease_namespace, "namespace", d)) ||
      (rc = copy_name(le->name, sizeof(le->name), cfg->lease_name, "name", d))) {
    free(le);
    return rc;
  }
  if (gb_kube_client_path(le->lease_path, sizeof(le->lease_path), "coordination.k8s.io", "v1",
                          "leases", le->ns, le->name) ||
      gb_kube_client_path(le->collection_path, sizeof(le->collection_path), "coordination.k8s.io",
                          "v1", "leases", le->ns, NULL)) {
    gc_diags_addf(d, "leaderElection: bad lease namespace or name");
    free(le);
    return GC_EINVAL;
  }
  if (cfg->identity)
    snprintf(le->identity, sizeof(le->identity), "%s", cfg->identity);
  else
    make_identity(le->identity, sizeof(le->identity));
  le->lease_s = lease;
  le->renew_s = renew;
  le->retry_s = retry;
  le->lease_whole_s = (long long)floor(lease);
  le->release_on_cancel = !cfg->no_release_on_cancel;
  le->gauge = cfg->leader_gauge;
  le->transitions_metric = cfg->transitions;
  le->errors = cfg->errors;
  if (cb)
    le->cb = *cb;
  le->client = client;
  if (cfg->store) {
    le->store = *cfg->store;
  } else {
    le->store.get = kube_get;
    le->store.create = kube_create;
    le->store.update = kube_update;
    le->store.ctx = le;
  }
  if (cfg->clock)
    le->clock = *cfg->clock;
  le->last_reason = "error";
  random_bytes(&le->rng, sizeof(le->rng));
  le->rng |= 1;
  atomic_init(&le->holding, 0);
  atomic_init(&le->deadline_us, 0);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (pthread_mutex_init(&le->mu, NULL) || pthread_cond_init(&le->cond, &ca)) {
    pthread_condattr_destroy(&ca);
    free(le);
    return GC_ENOMEM;
  }
  pthread_condattr_destroy(&ca);
  gb_metric_gauge_set(le->gauge, NULL, 0);
  *out = le;
  return 0;
}

int gb_leader_start(struct gb_leader *le) {
  if (!le)
    return GC_EINVAL;
  pthread_mutex_lock(&le->mu);
  if (le->started) {
    pthread_mutex_unlock(&le->mu);
    return GC_EUSAGE;
  }
  le->started = 1;
  le->stop_req = 0;
  le->notifier_quit = 0;
  le->elector_alive = 1;
  pthread_mutex_unlock(&le->mu);
  if (pthread_create(&le->notifier_thr, NULL, notifier_main, le)) {
    pthread_mutex_lock(&le->mu);
    le->started = 0;
    le->elector_alive = 0;
    pthread_mutex_unlock(&le->mu);
    return GC_ENOMEM;
  }
  if (pthread_create(&le->elector_thr, NULL, elector_main, le)) {
    pthread_mutex_lock(&le->mu);
    le->notifier_quit = 1;
    le->elector_alive = 0;
    le->started = 0;
    pthread_cond_broadcast(&le->cond);
    pthread_mutex_unlock(&le->mu);
    pthread_join(le->notifier_thr, NULL);
    return GC_ENOMEM;
  }
  gb_log(GB_LOG_INFO, "leader election started", "lease", le->lease_path, "identity",
         le->identity, NULL);
  return 0;
}

void gb_leader_stop(struct gb_leader *le) {
  if (!le)
    return;
  pthread_mutex_lock(&le->mu);
  int started = le->started;
  le->started = 0;
  le->stop_req = 1;
  pthread_cond_broadcast(&le->cond);
  pthread_mutex_unlock(&le->mu);
  if (!started)
    return;
  pthread_join(le->elector_thr, NULL); /* it clears `holding` on its way out */
  pthread_mutex_lock(&le->mu);
  le->notifier_quit = 1;
  pthread_cond_broadcast(&le->cond);
  pthread_mutex_unlock(&le->mu);
  pthread_join(le->notifier_thr, NULL); /* on_stopped has returned */
  /* Release only after on_stopped returned, so the caller's writes are done
   * before a standby can take over. */
  gb_leader_release_now(le);
}

void gb_leader_free(struct gb_leader *le) {
  if (!le)
    return;
  gb_leader_stop(le);
  json_object_put(le->last_lease);
  pthread_cond_destroy(&le->cond);
  pthread_mutex_destroy(&le->mu);
  free(le);
}

void gb_leader_snapshot(struct gb_leader *le, struct gb_leader_status *out) {
  memset(out, 0, sizeof(*out));
  if (!le)
    return;
  pthread_mutex_lock(&le->mu);
  *out = le->st;
  out->alive = le->elector_alive;
  pthread_mutex_unlock(&le->mu);
  out->leading = gb_leader_is_leader(le);
}

int gb_leader_metrics_register(struct gb_metrics *reg, struct gb_metric **out,
                               struct gc_diags *d) {
  return gb_metrics_counter(reg, "gangbridge_leader_transitions_total",
                            "Times this replica started leading (acquired the leader lease).",
                            NULL, 0, out, d);
}
