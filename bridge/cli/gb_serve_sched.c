/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve_sched: the scheduler endpoints in serve (see gb_serve_sched.h).
 */
#include "gb_serve_sched.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_addr.h"
#include "gb_events.h"
#include "gb_hash.h"
#include "gb_log.h"
#include "gb_sched.h"
#include "gb_sched_plan.h"
#include "gc_backend.h"

#define VERDICTS_MAX 4096 /* gangs whose last verdict is remembered */

struct pending {
  char ns[GB_SCHED_NS_MAX + 1];
  char name[GB_SCHED_NAME_MAX + 1];
  int verdict;
  char reason[512];
};

struct gb_serve_sched {
  struct gb_sched_plan sp;
  struct gb_sched *sched;
  struct gb_events *events;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct pending q[GB_SERVE_SCHED_QUEUE];
  size_t head, n;
  unsigned long dropped;
  int stop, worker_running;
  pthread_t worker;
  /* The last verdict per gang ("ns/name" hash -> verdict), so that a gang
   * asked every session gets one Event per change, not one per second. */
  uint64_t keys[VERDICTS_MAX];
  int verdicts[VERDICTS_MAX];
  size_t n_verdicts;
};

/* 1 when key's verdict changed (and remembers it).  Caller holds mu. */
static int verdict_changed(struct gb_serve_sched *s, const char *key, int verdict) {
  uint64_t h = gb_hash_str(key);
  for (size_t i = 0; i < s->n_verdicts; i++)
    if (s->keys[i] == h) {
      int changed = s->verdicts[i] != verdict;
      s->verdicts[i] = verdict;
      return changed;
    }
  if (s->n_verdicts == VERDICTS_MAX)
    s->n_verdicts = 0; /* forget everything: at worst one repeated Event each */
  s->keys[s->n_verdicts] = h;
  s->verdicts[s->n_verdicts++] = verdict;
  return verdict == GB_VC_REJECT; /* a first Permit says nothing new */
}

static void on_job_event(void *arg, const struct gb_sched_vjob *j, int verdict,
                         const char *reason) {
  struct gb_serve_sched *s = arg;
  pthread_mutex_lock(&s->mu);
  if (verdict_changed(s, j->key, verdict)) {
    if (s->n == GB_SERVE_SCHED_QUEUE) {
      s->dropped++;
    } else {
      struct pending *p = &s->q[(s->head + s->n++) % GB_SERVE_SCHED_QUEUE];
      snprintf(p->ns, sizeof(p->ns), "%s", j->ns);
      snprintf(p->name, sizeof(p->name), "%s", j->name);
      p->verdict = verdict;
      snprintf(p->reason, sizeof(p->reason), "%s", reason);
      pthread_cond_signal(&s->cv);
    }
  }
  pthread_mutex_unlock(&s->mu);
}

static void emit(struct gb_serve_sched *s, const struct pending *p) {
  /* jobEnqueueable is asked about the group objects of the backend whose
   * scheduler calls Volcano's extender protocol. */
  const struct gc_backend *b = gc_backend_by_extender(GB_SCHED_EXTENDER_VOLCANO);
  if (!b)
    return;
  struct gb_event_ref ref = {b->api_version, b->kind, p->ns, p->name, NULL};
  char msg[640];
  if (p->verdict == GB_VC_REJECT)
    snprintf(msg, sizeof(msg), "not enqueued: %s", p->reason);
  else
    snprintf(msg, sizeof(msg), "the gang fits now: enqueued");
  struct gb_kube_error e;
  memset(&e, 0, sizeof(e));
  if (gb_events_record(s->events, &ref, p->verdict == GB_VC_REJECT ? "Warning" : "Normal",
                       p->verdict == GB_VC_REJECT ? "GangNotEnqueueable" : "GangEnqueueable", msg,
                       0, &e) < 0)
    gb_log(GB_LOG_WARN, "sched: cannot write the PodGroup event", "podgroup", p->name, "namespace",
           p->ns, NULL);
}

static void *worker_main(void *arg) {
  struct gb_serve_sched *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->n && !s->stop)
      pthread_cond_wait(&s->cv, &s->mu);
    if (s->stop)
      break;
    struct pending p = s->q[s->head];
    s->head = (s->head + 1) % GB_SERVE_SCHED_QUEUE;
    s->n--;
    pthread_mutex_unlock(&s->mu);
    emit(s, &p);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static int start_server(struct gb_serve_sched *s, const struct gb_serve_config *cfg,
                        struct gb_metric *http_requests, struct gc_diags *d) {
  char host[128];
  unsigned port = 0;
  if (gb_addr_split(cfg->sched.address, host, sizeof(host), &port) < 0) {
    gc_diags_addf(d, "sched.address: \"%s\" is not HOST:PORT", cfg->sched.address);
    return GC_EINVAL;
  }
  struct gb_http_config h;
  gb_http_config_init(&h);
  h.name = "sched";
  h.address = host;
  h.port = port;
  if (*cfg->sched.tls_cert) {
    h.tls_cert_file = cfg->sched.tls_cert;
    h.tls_key_file = cfg->sched.tls_key;
  }
  if (*cfg->sched.client_ca)
    h.tls_client_ca_file = cfg->sched.client_ca;
  else if (strcmp(host, "127.0.0.1") && strcmp(host, "::1"))
    /* Then "the scheduler" is whoever reaches the port: the NetworkPolicy
     * is the only guard (docs/scheduler-integration.md, "Who may call"). */
    gb_log(GB_LOG_WARN,
           "sched endpoints verify no client certificate (no sched.clientCA): "
           "only the network policy keeps tenants off this port",
           "address", cfg->sched.address, NULL);
  h.threads = (unsigned)cfg->sched.threads;
  h.max_connections = (unsigned)cfg->sched.max_connections;
  h.max_per_ip = (unsigned)cfg->sched.max_per_ip;
  h.header_timeout_s = (unsigned)ceil(cfg->sched.header_timeout_s);
  h.requests = http_requests;
  int rc = gb_sched_start(s->sched, &h, d);
  if (rc == 0) {
    char p[16];
    snprintf(p, sizeof(p), "%u", gb_sched_port(s->sched));
    gb_log(GB_LOG_INFO, "sched endpoints listening", "address", cfg->sched.address, "port", p,
           "tls",
           *cfg->sched.client_ca  ? "mutual"
           : *cfg->sched.tls_cert ? "true"
                                  : "false",
           NULL);
  }
  return rc;
}

int gb_serve_sched_start(const struct gb_serve_config *cfg, struct gb_model *model,
                         struct gb_plan *plan, gb_sched_record_fn record, void *record_ctx,
                         struct gb_kube_client *client, struct gb_metrics *reg,
                         struct gb_metric *http_requests, int (*is_leader)(void *),
                         void *leader_ctx, struct gb_serve_sched **out, struct gc_diags *d) {
  *out = NULL;
  if (!*cfg->sched.address)
    return 0;
  struct gb_serve_sched *s = calloc(1, sizeof(*s));
  if (!s)
    return GC_ENOMEM;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  struct gb_sched_source be;
  memset(&be, 0, sizeof(be));
  if (model && plan) {
    s->sp.model = model;
    s->sp.plan = plan;
    s->sp.record = record;
    s->sp.record_ctx = record_ctx;
    gb_sched_plan_source(&s->sp, &be);
  } else {
    gb_log(GB_LOG_WARN,
           "sched endpoints without the placement model: every predicate passes and "
           "jobEnqueueable abstains (enable placement)",
           NULL);
  }
  struct gb_events_opts eo;
  memset(&eo, 0, sizeof(eo));
  eo.min_interval_s = cfg->events.min_interval_s;
  int rc = 0;
  if (client && !(s->events = gb_events_new(client, &eo)))
    rc = GC_ENOMEM;
  if (rc == 0 && s->events) {
    be.job_event = on_job_event;
    be.event_arg = s;
    if (pthread_create(&s->worker, NULL, worker_main, s) != 0)
      rc = GC_ENOMEM;
    else
      s->worker_running = 1;
  }
  struct gb_sched_config sc = {.volcano_prefix = cfg->sched.volcano_prefix,
                               .kube_prefix = cfg->sched.kube_prefix,
                               .max_body = (size_t)cfg->sched.max_body,
                               .max_list_body = (size_t)cfg->sched.max_list_body,
                               .max_session_body = (size_t)cfg->sched.max_session_mib << 20,
                               .metrics = reg,
                               .is_leader = is_leader,
                               .leader_ctx = leader_ctx};
  if (rc == 0)
    rc = gb_sched_new(&sc, &be, &s->sched, d);
  if (rc == 0)
    rc = start_server(s, cfg, http_requests, d);
  if (rc < 0) {
    gb_serve_sched_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void gb_serve_sched_free(struct gb_serve_sched *s) {
  if (!s)
    return;
  gb_sched_free(s->sched); /* stops the server: no more callbacks */
  if (s->worker_running) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
  }
  if (s->dropped)
    gb_log(GB_LOG_WARN, "sched: PodGroup events dropped (queue full)", NULL);
  gb_events_free(s->events);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s);
}
