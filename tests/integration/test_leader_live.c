/* SPDX-License-Identifier: Apache-2.0
 *
 * Leader election against the stand-in API server over real HTTP.  Each
 * replica is a separate process (forked from the test) with its own
 * Kubernetes client and gb_leader on a Lease in gangbridge-system, plus a
 * "controller" writer thread that, every 20 ms, checks gb_leader_is_leader()
 * and only then merge-patches a ConfigMap (so writes the gate lets through
 * are visible on the server).  Replicas publish their announced leadership
 * (on_started/on_stopped) and the time of their last gate pass in shared
 * memory; the test samples it every millisecond.
 *
 * Checked: two replicas, never two leaders and one within seconds; a clean
 * stop (SIGTERM: ReleaseOnCancel) hands over faster than the lease duration;
 * SIGKILL (no release) hands over after the lease duration and within
 * leaseDuration + 2.2 x retryPeriod; the same with client-go's real
 * defaults (15/10/2 s, bounded by 25 s); 503 on every lease request for
 * longer than RenewDeadline stops the leader at the deadline and the
 * ConfigMap receives no write afterwards; latency longer than RenewDeadline
 * with requests still in flight stops it at the deadline too; 2.5 s of
 * latency on every request (above RetryPeriod, below RenewDeadline) with
 * serve's settings still gives one leader whose writes go on.  Handover
 * times are printed ("leader-figure ...").
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gb_kobj.h"
#include "gb_kube_client.h"
#include "gb_kube_client_test.h"
#include "gb_leader.h"
#include "gb_leader_test.h"
#include "gb_log.h"
#include "gb_kube_config_test.h"

#ifndef GB_SRC_DIR
#define GB_SRC_DIR "."
#endif

#define NS "gangbridge-system"
#define TOKEN "leader-test-token"
#define MAX_REPLICAS 3

struct slot {
  atomic_int leading;          /* announced by callbacks */
  atomic_int started, stopped; /* callback counts */
  atomic_llong last_gate_us;   /* monotonic time of the last is_leader()==1 before a write */
  atomic_llong stopped_us;     /* monotonic time of the last on_stopped */
  atomic_int writes;           /* successful writes */
  atomic_int ready;
};

struct rep_opts {
  double lease, renew, retry;
  long request_timeout_ms;
};

static struct slot *slots;
static pid_t server_pid, rep_pid[MAX_REPLICAS];
static char server_url[128];
static struct gb_kube_config *cfg;
static struct gb_kube_client *ctl;

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) && errno == EINTR)
    ;
}

/* ---- server ----------------------------------------------------------------- */

static void start_server(void) {
  const char *src = getenv("GB_SRC") ? getenv("GB_SRC") : GB_SRC_DIR;
  char run[512];
  snprintf(run, sizeof(run), "%s/tests/apiserver/run", src);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  server_pid = fork();
  ck_assert_int_ge(server_pid, 0);
  if (server_pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl("/usr/bin/python3", "python3", run, "--port", "0", "--token", TOKEN, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  ck_assert_ptr_nonnull(fgets(server_url, sizeof(server_url), f));
  fclose(f);
  server_url[strcspn(server_url, "\r\n")] = 0;
  ck_assert_msg(!strncmp(server_url, "http", 4), "server printed \"%s\"", server_url);
}

static struct gb_kube_config *load_cfg(void) {
  char kc[1024];
  snprintf(kc, sizeof(kc),
           "current-context: t\ncontexts: [{name: t, context: {cluster: c, user: u}}]\n"
           "clusters: [{name: c, cluster: {server: '%s'}}]\n"
           "users: [{name: u, user: {token: %s}}]\n",
           server_url, TOKEN);
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_kube_config_load_buffer("kubeconfig", kc, strlen(kc), NULL, &c, &d);
  if (rc) {
    fprintf(stderr, "kubeconfig: %s\n", d.n ? d.msgs[0] : "?");
    gc_diags_destroy(&d);
    return NULL;
  }
  gc_diags_destroy(&d);
  return c;
}

static struct gb_kube_client *new_client(struct gb_kube_config *c, int retries, long timeout_ms) {
  struct gb_kube_client_opts o = {0};
  o.qps = -1;
  o.max_retries = retries;
  o.request_timeout_ms = timeout_ms;
  o.connect_timeout_ms = 2000;
  struct gb_kube_client *cl = NULL;
  if (gb_kube_client_new(c, &o, &cl, NULL))
    return NULL;
  return cl;
}

static json_object *control(const char *what, const char *json) {
  char path[128];
  snprintf(path, sizeof(path), "/_control/%s", what);
  json_object *out = NULL;
  struct gb_kube_error e;
  int rc = json ? gb_kube_client_request(ctl, GB_KUBE_CREATE, "POST", path, "application/json",
                                         json, strlen(json), &out, &e)
                : gb_kube_client_get(ctl, path, &out, &e);
  ck_assert_msg(rc == 0, "control %s: %s", what, e.message);
  return out;
}

static void faults(const char *json) {
  if (json) {
    json_object_put(control("faults", json));
    return;
  }
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_request(ctl, GB_KUBE_DELETE, "DELETE", "/_control/faults", NULL,
                                          NULL, 0, NULL, &e),
                   0);
}

static void post(const char *path, const char *text) {
  json_object *o = json_tokener_parse(text), *out = NULL;
  ck_assert_ptr_nonnull(o);
  struct gb_kube_error e;
  int rc = gb_kube_client_create(ctl, path, o, &out, &e);
  ck_assert_msg(rc == 0, "POST %s: %s", path, e.message);
  json_object_put(o);
  json_object_put(out);
}

/* resourceVersion of the writers' ConfigMap: changes with every write. */
static long writes_rv(void) {
  json_object *o = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(gb_kube_client_get(ctl, "/api/v1/namespaces/" NS "/configmaps/writes", &o, &e),
                   0);
  long rv = strtol(gb_kobj_meta(o, "resourceVersion"), NULL, 10);
  json_object_put(o);
  return rv;
}

/* Lease requests of one verb the server has answered so far. */
static long lease_requests(const char *verb) {
  json_object *st = control("stats", NULL), *res, *l, *v;
  long n = 0;
  if (json_object_object_get_ex(st, "resources", &res) &&
      json_object_object_get_ex(res, "leases", &l) && json_object_object_get_ex(l, verb, &v))
    n = (long)json_object_get_int64(v);
  json_object_put(st);
  return n;
}

static void lease_holder(char *buf, size_t cap) {
  json_object *o = NULL;
  struct gb_kube_error e;
  int rc = gb_kube_client_get(
      ctl, "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/gangbridge", &o, &e);
  buf[0] = 0;
  if (rc == 0) {
    struct gb_lease_record r;
    if (gb_lease_record_from_json(o, &r, NULL) == 0)
      snprintf(buf, cap, "%s", r.holder);
  }
  json_object_put(o);
}

/* ---- replica process ------------------------------------------------------------ */

struct rep_ctx {
  struct slot *slot;
  struct gb_leader *le;
  struct gb_kube_client *writer;
  char id[64];
  atomic_int quit;
};

static void rep_started(void *arg) {
  struct rep_ctx *r = arg;
  atomic_fetch_add(&r->slot->started, 1);
  atomic_store(&r->slot->leading, 1);
}

static void rep_stopped(void *arg) {
  struct rep_ctx *r = arg;
  atomic_store(&r->slot->leading, 0);
  atomic_store(&r->slot->stopped_us, (long long)(mono() * 1e6));
  atomic_fetch_add(&r->slot->stopped, 1);
}

/* The controller stand-in: check the gate before every write. */
static void *writer_main(void *arg) {
  struct rep_ctx *r = arg;
  long seq = 0;
  while (!atomic_load(&r->quit)) {
    if (gb_leader_is_leader(r->le)) {
      atomic_store(&r->slot->last_gate_us, (long long)(mono() * 1e6));
      char text[256];
      snprintf(text, sizeof(text), "{\"data\":{\"%s\":\"%ld\"}}", r->id, ++seq);
      json_object *patch = json_tokener_parse(text), *out = NULL;
      struct gb_kube_error e;
      if (gb_kube_client_merge_patch(r->writer, "/api/v1/namespaces/" NS "/configmaps/writes",
                                     patch, &out, &e) == 0)
        atomic_fetch_add(&r->slot->writes, 1);
      json_object_put(patch);
      json_object_put(out);
    }
    sleep_s(0.02);
  }
  return NULL;
}

static void replica_main(int idx, const struct rep_opts *o) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  gb_log_set_level(GB_LOG_ERROR);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  struct rep_ctx r;
  memset(&r, 0, sizeof(r));
  r.slot = &slots[idx];
  snprintf(r.id, sizeof(r.id), "replica-%d", idx);
  struct gb_kube_config *c = load_cfg();
  struct gb_kube_client *lc = c ? new_client(c, 0, o->request_timeout_ms) : NULL;
  r.writer = c ? new_client(c, 0, 5000) : NULL;
  if (!lc || !r.writer)
    _exit(3);
  struct gb_leader_config lcfg = {0};
  lcfg.lease_namespace = NS;
  lcfg.lease_name = "gangbridge";
  lcfg.lease_duration_s = o->lease;
  lcfg.renew_deadline_s = o->renew;
  lcfg.retry_period_s = o->retry;
  struct gb_leader_callbacks cb = {rep_started, rep_stopped, NULL, &r};
  struct gc_diags d;
  gc_diags_init(&d);
  if (gb_leader_new(&lcfg, lc, &cb, &r.le, &d)) {
    fprintf(stderr, "replica %d: %s\n", idx, d.n ? d.msgs[0] : "?");
    _exit(4);
  }
  pthread_t w;
  if (gb_leader_start(r.le) || pthread_create(&w, NULL, writer_main, &r))
    _exit(5);
  atomic_store(&r.slot->ready, 1);
  int sig;
  sigwait(&set, &sig);
  /* Clean shutdown: stop writing, stop leading, release. */
  atomic_store(&r.quit, 1);
  pthread_join(w, NULL);
  gb_leader_free(r.le);
  gb_kube_client_free(lc);
  gb_kube_client_free(r.writer);
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
  _exit(0);
}

static void spawn(int idx, const struct rep_opts *o) {
  memset(&slots[idx], 0, sizeof(slots[idx]));
  fflush(NULL);
  pid_t p = fork();
  ck_assert_int_ge(p, 0);
  if (p == 0)
    replica_main(idx, o);
  rep_pid[idx] = p;
  for (int i = 0; i < 500 && !atomic_load(&slots[idx].ready); i++)
    sleep_s(0.01);
  ck_assert_msg(atomic_load(&slots[idx].ready), "replica %d did not start", idx);
}

/* Ends a replica; SIGTERM is a clean stop and must exit 0. */
static void end(int idx, int sig) {
  if (rep_pid[idx] <= 0)
    return;
  kill(rep_pid[idx], sig);
  int st = 0;
  waitpid(rep_pid[idx], &st, 0);
  rep_pid[idx] = 0;
  if (sig == SIGTERM)
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "replica %d exit status %d", idx, st);
}

/* ---- sampling ---------------------------------------------------------------- */

static int leaders(int *who) {
  int n = 0;
  for (int i = 0; i < MAX_REPLICAS; i++)
    if (rep_pid[i] > 0 && atomic_load(&slots[i].leading)) {
      n++;
      if (who)
        *who = i;
    }
  return n;
}

static long samples;

/* Samples every millisecond for up to `secs` until `until` holds (NULL: the
 * whole time), failing on two leaders.  Returns the seconds waited. */
static double watch(double secs, int (*until)(int), int arg) {
  double t0 = mono();
  while (mono() - t0 < secs) {
    ck_assert_int_le(leaders(NULL), 1);
    samples++;
    if (until && until(arg))
      break;
    sleep_s(0.001);
  }
  return mono() - t0;
}

static int leads(int idx) { return atomic_load(&slots[idx].leading); }
static int nobody(int unused) {
  (void)unused;
  return leaders(NULL) == 0;
}
static int somebody(int unused) {
  (void)unused;
  return leaders(NULL) == 1;
}

/* ---- fixture ---------------------------------------------------------------- */

static void setup(void) {
  gb_log_set_level(GB_LOG_ERROR);
  slots = mmap(NULL, sizeof(struct slot) * MAX_REPLICAS, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert(slots != MAP_FAILED);
  memset(slots, 0, sizeof(struct slot) * MAX_REPLICAS);
  start_server();
  cfg = load_cfg();
  ck_assert_ptr_nonnull(cfg);
  ctl = new_client(cfg, -1, 10000);
  ck_assert_ptr_nonnull(ctl);
  post("/api/v1/namespaces", "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                             "\"metadata\":{\"name\":\"" NS "\"}}");
  post("/api/v1/namespaces/" NS "/configmaps",
       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"writes\"},"
       "\"data\":{}}");
  samples = 0;
}

static void teardown(void) {
  for (int i = 0; i < MAX_REPLICAS; i++)
    if (rep_pid[i] > 0) {
      kill(rep_pid[i], SIGKILL);
      waitpid(rep_pid[i], NULL, 0);
      rep_pid[i] = 0;
    }
  gb_kube_client_free(ctl);
  gb_kube_config_free(cfg);
  ctl = NULL;
  cfg = NULL;
  if (server_pid > 0) {
    kill(server_pid, SIGTERM);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
  munmap(slots, sizeof(struct slot) * MAX_REPLICAS);
}

static const struct rep_opts FAST = {3, 2, 0.5, 1000};

/* Starts two replicas and returns the index of the one that leads. */
static int two_replicas(const struct rep_opts *o) {
  spawn(0, o);
  spawn(1, o);
  double t = watch(10, somebody, 0);
  ck_assert_msg(leaders(NULL) == 1, "no leader after %.1f s", t);
  int who = -1;
  leaders(&who);
  /* Keep sampling: exactly one leader, the same one, while both renew. */
  watch(3 * o->lease, NULL, 0);
  ck_assert_int_eq(leaders(NULL), 1);
  ck_assert(leads(who));
  ck_assert_int_eq(atomic_load(&slots[who].started), 1);
  ck_assert_int_eq(atomic_load(&slots[1 - who].started), 0);
  ck_assert_int_gt(atomic_load(&slots[who].writes), 10);
  ck_assert_int_eq(atomic_load(&slots[1 - who].writes), 0);
  char holder[GB_LEADER_IDENTITY_MAX];
  lease_holder(holder, sizeof(holder));
  ck_assert_msg(holder[0] != 0, "lease has no holder");
  return who;
}

START_TEST(test_clean_stop_releases) {
  int who = two_replicas(&FAST);
  int other = 1 - who;
  /* Request rates: the leader renews with one PUT per retry period and no
   * GET (fast path); the standby GETs once per jittered retry period
   * (0.5-1.1 s). */
  long g0 = lease_requests("get"), u0 = lease_requests("update");
  double w = watch(4, NULL, 0);
  long gets = lease_requests("get") - g0, puts = lease_requests("update") - u0;
  printf("leader-figure lease requests in %.1f s: %ld GET (standby), %ld PUT (leader)\n", w,
         gets, puts);
  ck_assert_msg(gets >= w / 1.1 - 1 && gets <= w / 0.5 + 1, "standby GETs: %ld", gets);
  ck_assert_msg(puts >= w / 0.6 - 1 && puts <= w / 0.5 + 1, "leader PUTs: %ld", puts);
  double t0 = mono();
  end(who, SIGTERM);
  double stop_s = mono() - t0;
  double t = watch(10, leads, other) + stop_s;
  ck_assert_msg(leads(other), "standby did not take over");
  printf("leader-figure clean-stop handover %.3f s (lease %.0f s, retry %.1f s; stop itself "
         "%.3f s; %ld samples)\n",
         t, FAST.lease, FAST.retry, stop_s, samples);
  /* Released: faster than waiting out the lease. */
  ck_assert_msg(t < FAST.lease, "handover took %.2f s: the lease was not released", t);
  char holder[GB_LEADER_IDENTITY_MAX];
  lease_holder(holder, sizeof(holder));
  ck_assert_str_ne(holder, "");
  watch(2, NULL, 0);
  ck_assert(leads(other));
}
END_TEST

/* The Lease as served (caller puts). */
static json_object *get_lease(void) {
  json_object *o = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(
      gb_kube_client_get(ctl, "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/gangbridge",
                         &o, &e),
      0);
  return o;
}

START_TEST(test_kill_hands_over_after_lease) {
  int who = two_replicas(&FAST);
  int other = 1 - who;
  /* Someone else writes the Lease (a label): the leader's next renewal gets
   * a 409, re-reads and renews in the same attempt, without losing the
   * lease, and its PUTs keep the label. */
  json_object *patch = json_tokener_parse("{\"metadata\":{\"labels\":{\"team\":\"ml\"}}}");
  json_object *out = NULL;
  struct gb_kube_error e;
  ck_assert_int_eq(
      gb_kube_client_merge_patch(
          ctl, "/apis/coordination.k8s.io/v1/namespaces/" NS "/leases/gangbridge", patch, &out, &e),
      0);
  json_object_put(patch);
  struct gb_lease_record before, after;
  ck_assert_int_eq(gb_lease_record_from_json(out, &before, NULL), 0);
  json_object_put(out);
  watch(2, NULL, 0);
  ck_assert(leads(who));
  ck_assert_int_eq(atomic_load(&slots[who].started), 1);
  ck_assert_int_eq(atomic_load(&slots[who].stopped), 0);
  json_object *l = get_lease(), *md, *labels, *team;
  ck_assert_int_eq(gb_lease_record_from_json(l, &after, NULL), 0);
  ck_assert_str_ne(after.renew_time, before.renew_time);
  ck_assert_str_eq(after.acquire_time, before.acquire_time);
  ck_assert_str_eq(after.holder, before.holder);
  ck_assert(json_object_object_get_ex(l, "metadata", &md) &&
            json_object_object_get_ex(md, "labels", &labels) &&
            json_object_object_get_ex(labels, "team", &team));
  ck_assert_str_eq(json_object_get_string(team), "ml");
  json_object_put(l);
  end(who, SIGKILL);
  double t = watch(20, leads, other);
  ck_assert_msg(leads(other), "standby did not take over within 20 s");
  printf("leader-figure kill handover %.3f s (lease %.0f s, renew %.0f s, retry %.1f s)\n", t,
         FAST.lease, FAST.renew, FAST.retry);
  /* Not before the lease could have expired (the last renewal was at most
   * one retry period before the kill) and within lease + jittered retry. */
  ck_assert_msg(t >= FAST.lease - FAST.retry - 0.05, "took over after %.2f s: too early", t);
  ck_assert_msg(t <= FAST.lease + 2.2 * FAST.retry + 1.0, "took over after %.2f s", t);
}
END_TEST

START_TEST(test_kill_with_default_timings) {
  const struct rep_opts def = {15, 10, 2, 5000};
  spawn(0, &def);
  double t = watch(10, somebody, 0);
  ck_assert_msg(leads(0), "no leader after %.1f s", t);
  spawn(1, &def);
  watch(3, NULL, 0);
  ck_assert(leads(0) && !leads(1));
  end(0, SIGKILL);
  t = watch(30, leads, 1);
  printf("leader-figure kill handover with defaults %.3f s (15/10/2 s)\n", t);
  ck_assert_msg(leads(1), "standby did not take over within 30 s");
  ck_assert_msg(t >= 15 - 2 - 0.05, "took over after %.2f s: too early", t);
  ck_assert_msg(t <= 25, "took over after %.2f s (bound 25 s)", t);
  /* A clean stop with the defaults: the third replica takes the released
   * lease on its next attempt (at most 2.2 x RetryPeriod = 4.4 s). */
  spawn(2, &def);
  watch(3, NULL, 0);
  ck_assert(leads(1) && !leads(2));
  double t0 = mono();
  end(1, SIGTERM);
  watch(20, leads, 2);
  t = mono() - t0;
  printf("leader-figure clean-stop handover with defaults %.3f s (15/10/2 s)\n", t);
  ck_assert_msg(leads(2), "standby did not take over");
  ck_assert_msg(t < 15, "handover took %.2f s: the lease was not released", t);
}
END_TEST

START_TEST(test_5xx_past_renew_deadline_stops_writes) {
  int who = two_replicas(&FAST);
  /* Every lease request fails with 503; ConfigMaps still work, so only the
   * gate keeps the old leader from writing. */
  faults("{\"error_rate\":1.0,\"error_codes\":[503],\"error_resources\":[\"leases\"],"
         "\"retry_after\":0}");
  double t = watch(10, nobody, 0);
  ck_assert_msg(leaders(NULL) == 0, "still leading %.1f s into the fault", t);
  printf("leader-figure 5xx: stopped leading %.3f s after the fault began (renew deadline "
         "%.0f s, retry %.1f s)\n",
         t, FAST.renew, FAST.retry);
  /* Stopped at the deadline: the last success was at most one retry period
   * (plus a request) before the fault. */
  /* (The predicate itself turns false exactly at the deadline; the 0.25 s
   * allow for the notifier and this sampler being scheduled late on a busy
   * machine.) */
  ck_assert_msg(t <= FAST.renew + 0.25, "stopped %.2f s after the fault", t);
  /* Not long before the deadline either: the last success started at most a
   * retry period plus one (slow) attempt before the fault. */
  ck_assert_msg(t >= FAST.renew - FAST.retry - 1.0, "stopped %.2f s after the fault", t);
  long long stop_us = atomic_load(&slots[who].stopped_us);
  long long gate_us = atomic_load(&slots[who].last_gate_us);
  ck_assert_msg(gate_us <= stop_us, "a write passed the gate %.3f s after stopping",
                (double)(gate_us - stop_us) / 1e6);
  /* No write reaches the server while the fault lasts. */
  sleep_s(0.2); /* a write that passed the gate just before the deadline lands */
  long rv0 = writes_rv();
  int w0 = atomic_load(&slots[who].writes);
  watch(2 * FAST.lease, NULL, 0);
  ck_assert_int_eq(leaders(NULL), 0);
  ck_assert_int_eq(writes_rv(), rv0);
  ck_assert_int_eq(atomic_load(&slots[who].writes), w0);
  ck_assert_int_eq(atomic_load(&slots[who].last_gate_us), gate_us);
  /* The API recovers: exactly one replica leads again and writes. */
  faults(NULL);
  t = watch(10, somebody, 0);
  ck_assert_msg(leaders(NULL) == 1, "no leader %.1f s after recovery", t);
  watch(1, NULL, 0);
  ck_assert_int_gt(writes_rv(), rv0);
}
END_TEST

START_TEST(test_latency_past_renew_deadline) {
  /* The elector's client would wait up to 10 s per request: with 6 s of
   * latency a renewal is still in flight at the deadline, and leadership
   * must end at the deadline (the notifier announces it; the elector gives
   * the request up at the deadline too). */
  const struct rep_opts slow = {3, 2, 0.5, 10000};
  int who = two_replicas(&slow);
  faults("{\"latency_ms\":6000}");
  double t = watch(10, nobody, 0);
  ck_assert_msg(leaders(NULL) == 0, "still leading %.1f s into the latency", t);
  printf("leader-figure latency: stopped leading %.3f s after 6 s latency began (renew "
         "deadline %.0f s)\n",
         t, slow.renew);
  ck_assert_msg(t <= slow.renew + 0.25, "stopped %.2f s after the latency began", t);
  long long stop_us = atomic_load(&slots[who].stopped_us);
  long long gate_us = atomic_load(&slots[who].last_gate_us);
  ck_assert_msg(gate_us <= stop_us, "a write passed the gate after stopping");
  sleep_s(1.0);
  ck_assert_int_eq(atomic_load(&slots[who].last_gate_us), gate_us);
  faults(NULL);
  t = watch(20, somebody, 0);
  ck_assert_msg(leaders(NULL) == 1, "no leader %.1f s after recovery", t);
}
END_TEST

START_TEST(test_slow_api_one_leader_writes_go_on) {
  /* Every API request takes 2.5 s: longer than RetryPeriod, well inside
   * RenewDeadline.  The replicas run as `serve` configures them (client-go's
   * defaults 15/10/2 s, a client whose own request timeout is RetryPeriod);
   * the elector gives each attempt up to RenewDeadline, as client-go does,
   * so one replica acquires, keeps the lease, and its writes go on. */
  const struct rep_opts serve_like = {15, 10, 2, 2000};
  faults("{\"latency_ms\":2500}");
  spawn(0, &serve_like);
  spawn(1, &serve_like);
  double t = watch(20, somebody, 0);
  ck_assert_msg(leaders(NULL) == 1, "no leader %.1f s into 2.5 s latency", t);
  printf("leader-figure slow API: leading %.3f s after start with 2.5 s latency\n", t);
  int who = -1;
  leaders(&who);
  long rv0 = writes_rv();
  int w0 = atomic_load(&slots[who].writes);
  watch(15, NULL, 0);
  ck_assert_int_eq(leaders(NULL), 1);
  ck_assert(leads(who));
  ck_assert_int_eq(atomic_load(&slots[who].started), 1);
  ck_assert_int_eq(atomic_load(&slots[who].stopped), 0);
  ck_assert_int_eq(atomic_load(&slots[1 - who].started), 0);
  /* A write takes 2.5 s too: some went through in 15 s. */
  ck_assert_int_ge(atomic_load(&slots[who].writes) - w0, 3);
  faults(NULL);
  ck_assert_int_gt(writes_rv(), rv0);
}
END_TEST

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  Suite *s = suite_create("leader_live");
  TCase *tc = tcase_create("live");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, test_clean_stop_releases);
  tcase_add_test(tc, test_kill_hands_over_after_lease);
  tcase_add_test(tc, test_kill_with_default_timings);
  tcase_add_test(tc, test_5xx_past_renew_deadline_stops_writes);
  tcase_add_test(tc, test_latency_past_renew_deadline);
  tcase_add_test(tc, test_slow_api_one_leader_writes_go_on);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
