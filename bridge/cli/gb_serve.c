/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve: `gangbridge serve`'s composition root (see the header): it
 * builds the metrics registry, health checks, Kubernetes client, leader
 * elector, controller, webhook, HTTP servers and gRPC server from one
 * gb_serve_config (each layer's options), starts them, waits for a stop signal and stops them in reverse
 * order.  Moved here from controller/gb_controller.c (serve_run,
 * serve_start, serve_stop, leader_create, start_http and what was
 * gb_controller_serve) so that the controller knows nothing of gRPC, the
 * CLI or exit codes.
 */
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_addr.h"
#include "gb_cli.h"
#include "gb_controller.h"
#include "gb_timeouts.h"
#include "gb_diagprint.h"
#include "gb_events.h"
#include "gb_gatesweep.h"
#include "gb_health.h"
#include "gb_http.h"
#include "gb_informers.h"
#include "gb_kube_config.h"
#include "gb_leader.h"
#include "gb_log.h"
#include "gb_model.h"
#include "gb_placer.h"
#include "gb_plan.h"
#include "gb_rpc_options.h"
#include "gb_rpc_server.h"
#include "gb_rpc_service.h"
#include "gb_selflabel.h"
#include "gb_serve.h"
#include "gb_serve_sched.h"
#include "gb_stopsig.h"
#include "gb_version.h"

static void on_api_latency(void *arg, enum gb_kube_verb verb, long code, double seconds) {
  const struct gb_service_metrics *sm = arg;
  /* A watch's "latency" is its whole stream: not a request latency. */
  if (verb == GB_KUBE_WATCH || verb >= GB_KUBE_VERB_COUNT)
    return;
  static const char *const verbs[GB_KUBE_VERB_COUNT] = {"GET",  "LIST",  "WATCH", "POST",
                                                        "PUT",  "PATCH", "PATCH", "DELETE"};
  char cb[24];
  if (code > 0)
    snprintf(cb, sizeof(cb), "%ld", code);
  else
    snprintf(cb, sizeof(cb), "error");
  /* The client's callback does not carry the resource; "all" stands for it. */
  gb_metric_histogram_observe(sm->api_latency, (const char *[]){verbs[verb], "all", cb}, seconds);
  if (code == 0)
    gb_metric_counter_inc(sm->errors, (const char *[]){"kube", "transport"});
  else if (code >= 500)
    gb_metric_counter_inc(sm->errors, (const char *[]){"kube", "status_5xx"});
  else if (code == 429)
    gb_metric_counter_inc(sm->errors, (const char *[]){"kube", "throttled"});
}

struct serve_run {
  const struct gb_serve_config *cfg; /* borrowed from gb_serve_controller's caller */
  struct gb_metrics *reg;
  struct gb_service_metrics sm;
  struct gb_health *health;
  struct gb_kube_config *kcfg;
  struct gb_kube_client *client;
  struct gb_informers *informers; /* one informer per resource, for every consumer */
  struct gb_controller *ctrl;
  struct gb_timeouts *timeouts; /* the gang timeout tracker, fed by the controller */
  struct gb_webhook *wh;
  struct gb_http *probes, *hook;
  struct gb_http *debug; /* /debug/placement (placement.debugAddress) */
  struct gb_rpc_service *rpc_svc;
  struct gb_rpc_server *rpc;
  atomic_int rpc_started; /* set once rpc listens; read by the health check */
  struct gb_kube_client *lease_client; /* the elector's own client (short timeouts) */
  /* The placer's release PATCHes: their own token bucket
   * (placement.releaseQPS/releaseBurst) and connections. */
  struct gb_kube_client *release_client;
  struct gb_leader *leader;
  struct gb_metric *transitions;
  struct gb_serve_sched *sched; /* the scheduler endpoints (sched.address) */
  struct gb_selflabel *leader_label; /* gangbridge.io/leader on this pod while it leads */
  /* placement (placement.enabled): the live model, the plan, the placer */
  struct gb_plan *plan;
  struct gb_model *model;
  struct gb_events *place_events;
  struct gb_placer *placer;
  /* every placement setting: the gate removed from pods gangbridge does not hold */
  struct gb_events *sweep_events; /* when placement is disabled (else place_events) */
  struct gb_gatesweep *sweeper;
};

static void on_started_leading(void *arg) {
  struct serve_run *r = arg;
  gb_log(GB_LOG_INFO, "started leading: re-queueing every TrainJob", "identity",
         gb_leader_identity(r->leader), NULL);
  if (r->ctrl)
    gb_controller_resync(r->ctrl);
  gb_timeouts_kick(r->timeouts); /* deadlines that passed while following */
  /* The gates are on the pods: the new leader picks up every gated gang. */
  if (r->placer)
    gb_placer_resync(r->placer);
  /* The scheduler's Service selects the leader's label. */
  gb_selflabel_set(r->leader_label, 1);
  gb_gatesweep_kick(r->sweeper); /* gates nobody holds: at once, not at the next round */
}

/* The timeout tracker acts only once the controller's informers have all
 * synced: a gang's PodGroup, pods and TrainJob are then known together. */
static int timeouts_synced(void *ctx) {
  struct serve_run *r = ctx;
  return r->ctrl && gb_controller_synced(r->ctrl);
}

static void on_stopped_leading(void *arg) {
  struct serve_run *r = arg;
  gb_log(GB_LOG_WARN, "stopped leading: no more writes", "identity",
         gb_leader_identity(r->leader), NULL);
  gb_selflabel_set(r->leader_label, 0);
}

static void on_new_leader(void *arg, const char *identity) {
  (void)arg;
  gb_log(GB_LOG_INFO, "leader observed", "holder", *identity ? identity : "(none)", NULL);
}

static int elector_alive(void *ctx, char *reason, size_t size) {
  struct serve_run *r = ctx;
  struct gb_leader_status st;
  gb_leader_snapshot(r->leader, &st);
  if (st.alive)
    return 0;
  snprintf(reason, size, "the leader elector has stopped");
  return 1;
}

/* Creates (not starts) the elector with its own client and no client
 * retries.  The elector sets each Lease request's timeout itself (what is
 * left of the renew window, at most RenewDeadline, as client-go bounds its
 * renew loop); the client's own timeouts are only the outer bound. */
static int leader_create(struct serve_run *r, struct gc_diags *d) {
  const struct gb_leader_options *cfg = &r->cfg->leader;
  struct gb_kube_client_opts ko;
  memset(&ko, 0, sizeof(ko));
  ko.qps = -1;
  ko.connect_timeout_ms = (long)(cfg->renew_deadline_s * 1000);
  ko.request_timeout_ms = (long)(cfg->renew_deadline_s * 1000);
  ko.max_retries = -1;
  ko.max_handles = 2;
  ko.user_agent = "gangbridge/" GB_VERSION " leader-election";
  ko.on_latency = on_api_latency;
  ko.latency_arg = &r->sm;
  int rc = gb_kube_client_new(r->kcfg, &ko, &r->lease_client, d);
  if (rc)
    return rc;
  if ((rc = gb_leader_metrics_register(r->reg, &r->transitions, d)))
    return rc;
  const char *ns = cfg->lease_namespace;
  if (!*ns)
    ns = getenv("POD_NAMESPACE");
  if (!ns || !*ns)
    ns = r->kcfg->namespace && *r->kcfg->namespace ? r->kcfg->namespace : "default";
  const char *id = getenv("POD_NAME");
  struct gb_leader_config lc;
  memset(&lc, 0, sizeof(lc));
  lc.lease_namespace = ns;
  lc.lease_name = cfg->lease_name;
  lc.identity = id && *id ? id : NULL;
  lc.lease_duration_s = cfg->lease_duration_s;
  lc.renew_deadline_s = cfg->renew_deadline_s;
  lc.retry_period_s = cfg->retry_period_s;
  lc.leader_gauge = r->sm.leader;
  lc.transitions = r->transitions;
  lc.errors = r->sm.errors;
  struct gb_leader_callbacks cb = {on_started_leading, on_stopped_leading, on_new_leader, r};
  if ((rc = gb_leader_new(&lc, r->lease_client, &cb, &r->leader, d)))
    return rc;
  gb_log(GB_LOG_INFO, "leader election", "lease", ns, "name", cfg->lease_name, "identity",
         gb_leader_identity(r->leader), NULL);
  return gb_health_add_check(r->health, GB_HEALTH_READY, "leader-elector", elector_alive, r);
}

/* The leader label on this pod (POD_NAMESPACE/POD_NAME from the downward
 * API), for the leader-only Service of the scheduler endpoints: made only
 * when they are served and the pod is known.  Without leader election the
 * one replica always leads.  Created before the elector starts, so no
 * leadership callback can miss it. */
static int leader_label_create(struct serve_run *r, struct gc_diags *d) {
  const char *ns = getenv("POD_NAMESPACE"), *pod = getenv("POD_NAME");
  if (!*r->cfg->sched.address)
    return 0;
  if (!ns || !*ns || !pod || !*pod) {
    gb_log(GB_LOG_WARN,
           "POD_NAME or POD_NAMESPACE unset: the scheduler endpoints' leader "
           "label is not kept (the leader-only Service will select no pod)",
           NULL);
    return 0;
  }
  struct gb_selflabel_opts o;
  memset(&o, 0, sizeof(o));
  o.client = r->client;
  o.ns = ns;
  o.pod = pod;
  o.key = GB_LEADER_LABEL;
  o.value = GB_LEADER_LABEL_VALUE;
  o.retry_s = r->cfg->leader.retry_period_s > 0 ? r->cfg->leader.retry_period_s : 1;
  /* A label request that hangs may not outlast a leadership term. */
  double t = r->cfg->kube.request_timeout_s < r->cfg->leader.renew_deadline_s
                 ? r->cfg->kube.request_timeout_s
                 : r->cfg->leader.renew_deadline_s;
  o.request_timeout_ms = (long)(t * 1000);
  o.errors = r->sm.errors;
  int rc = gb_selflabel_new(&o, &r->leader_label, d);
  if (rc)
    return rc;
  if (!r->leader)
    gb_selflabel_set(r->leader_label, 1);
  return gb_health_add_check(r->health, GB_HEALTH_READY, "leader-label", gb_selflabel_check,
                             r->leader_label);
}

/* Per-role limits of one HTTP server (probes or webhook), from the config. */
struct http_role {
  const char *name, *addr, *cert, *key;
  unsigned threads, max_connections, max_per_ip, header_timeout_s;
  size_t max_body_total; /* 0: gb_http's default */
};

static int start_http(const struct http_role *role, const struct gb_http_route *routes, size_t n,
                      struct gb_metric *requests, struct gb_http **out, struct gc_diags *d) {
  char host[128];
  unsigned port = 0;
  if (gb_addr_split(role->addr, host, sizeof(host), &port))
    return GC_EINVAL;
  struct gb_http_config hc;
  gb_http_config_init(&hc);
  hc.name = role->name;
  hc.address = host;
  hc.port = port;
  hc.threads = role->threads;
  hc.requests = requests;
  hc.max_connections = role->max_connections;
  /* 0 in the config means no per-address cap; gb_http takes 0 the same way. */
  hc.max_per_ip = role->max_per_ip;
  hc.header_timeout_s = role->header_timeout_s;
  if (role->max_body_total)
    hc.max_body_total = role->max_body_total;
  if (role->cert && *role->cert) {
    hc.tls_cert_file = role->cert;
    hc.tls_key_file = role->key;
  }
  /* gb_http logs the bound address and port itself. */
  return gb_http_start(&hc, routes, n, out, d);
}

/* The "grpc-listener" health check: fails when the gRPC self-check finds
 * that the port no longer accepts new connections (see gb_rpc_server_check),
 * so the pod is restarted instead of taking traffic on a dead port. */
static int grpc_listener_check(void *ctx, char *reason, size_t size) {
  struct serve_run *r = ctx;
  if (!atomic_load(&r->rpc_started))
    return 0;
  return gb_rpc_server_check(r->rpc, reason, size);
}

/* The scheduler endpoints' leadership: 1 (answer) on the leader once its
 * placer has read every gang back after it took over, -1 before, 0 on a
 * standby (see gb_sched_config.is_leader).  Without leader election the one
 * replica leads, and still waits for the plan after a restart. */
static int sched_may_answer(void *ctx) {
  struct serve_run *r = ctx;
  if (r->leader && !gb_leader_is_leader(r->leader))
    return 0;
  return !r->placer || gb_placer_caught_up(r->placer) ? 1 : -1;
}

/* gb_rpc_snapshot_source_fn over the live model (ctx = the model). */
static int model_snapshot_source(void *ctx, gb_rpc_snapshot_use_fn use, void *arg) {
  return gb_model_with_snapshot(ctx, use, arg);
}

/* Starts the gRPC server (grpc.address set).  With placement on, the live
 * model is its snapshot.  Returns 0 or a GC_E* code. */
static int rpc_start(struct serve_run *r, struct gc_diags *d) {
  const struct gb_rpc_options *cfg = &r->cfg->grpc;
  int rc;
  struct gb_rpc_config rc_cfg;
  gb_rpc_options_apply(cfg, &rc_cfg);
  r->rpc_svc = gb_rpc_service_new();
  if (!r->rpc_svc)
    return GC_ENOMEM;
  if (r->model) {
    /* The live model is the snapshot: Evaluate reads it, and no gRPC
     * caller may write another one beside it. */
    gb_rpc_service_set_snapshot_source(r->rpc_svc, model_snapshot_source, r->model);
    if (cfg->allow_snapshot_writes)
      gb_log(GB_LOG_WARN, "grpc.allowSnapshotWrites is ignored: placement's live model "
                          "is the snapshot", NULL);
  } else {
    gb_rpc_service_allow_writes(r->rpc_svc, cfg->allow_snapshot_writes);
  }
  if ((rc = gb_rpc_server_new(&rc_cfg, &r->rpc, d)) ||
      (rc = gb_rpc_service_register(r->rpc_svc, r->rpc)) ||
      (rc = gb_rpc_server_start(r->rpc, d)))
    return rc;
  atomic_store(&r->rpc_started, 1);
  char p[16];
  snprintf(p, sizeof(p), "%d", gb_rpc_server_port(r->rpc));
  gb_log(GB_LOG_INFO, "grpc listening", "address", cfg->address, "port", p, NULL);
  return 0;
}

/* The client options kube.* sets (the main client's; the release client
 * replaces its budget, connections and user agent). */
static void client_opts(struct serve_run *r, struct gb_kube_client_opts *ko) {
  const struct gb_kube_options *kube = &r->cfg->kube;
  memset(ko, 0, sizeof(*ko));
  ko->qps = kube->qps;
  ko->burst = kube->burst;
  ko->connect_timeout_ms = (long)(kube->connect_timeout_s * 1000);
  ko->request_timeout_ms = (long)(kube->request_timeout_s * 1000);
  ko->user_agent = "gangbridge/" GB_VERSION;
  ko->on_latency = on_api_latency;
  ko->latency_arg = &r->sm;
}

/* The release client: the main client's settings, but its own token
 * bucket and one connection per PATCH in flight.  A gang's release is one
 * PATCH per pod (Kubernetes has no bulk ungate); behind kube.qps it would
 * take pods/qps seconds.  What protects the API server from a burst of
 * releases is its API Priority and Fairness (and the bound on PATCHes in
 * flight), not this process's shared bucket. */
static int release_client_create(struct serve_run *r, struct gc_diags *d) {
  const struct gb_placement_options *pc = &r->cfg->placement;
  struct gb_kube_client_opts ko;
  client_opts(r, &ko);
  ko.qps = pc->release_qps;
  ko.burst = pc->release_burst;
  ko.max_handles = (size_t)pc->max_inflight;
  ko.user_agent = "gangbridge/" GB_VERSION " placement-release";
  return gb_kube_client_new(r->kcfg, &ko, &r->release_client, d);
}

/* Creates (not starts) the plan, the live model and the placer. */
static int placement_create(struct serve_run *r, struct gc_diags *d) {
  const struct gb_serve_config *cfg = r->cfg;
  struct gb_plan_opts po;
  memset(&po, 0, sizeof(po));
  po.reservation_ttl_ms = (int64_t)(cfg->plan.release_timeout_s * 1000);
  po.starvation_guard_ms = (int64_t)(cfg->plan.starvation_guard_s * 1000);
  po.starvation_guard_max_ms = (int64_t)(cfg->plan.starvation_guard_max_s * 1000);
  po.profile = strcmp(cfg->plan.profile, "spread") ? TP_PROFILE_BESTFIT : TP_PROFILE_SPREAD;
  int rc = gb_plan_new(&po, &r->plan);
  if (rc)
    return rc;
  struct gb_model_opts mo;
  memset(&mo, 0, sizeof(mo));
  mo.client = r->client;
  mo.levels = cfg->controller.topology_levels.items;
  mo.n_levels = cfg->controller.topology_levels.n;
  mo.informers = r->informers;
  mo.plan = r->plan;
  struct gb_events_opts eo;
  memset(&eo, 0, sizeof(eo));
  eo.min_interval_s = cfg->events.min_interval_s;
  if (!(r->place_events = gb_events_new(r->client, &eo)))
    return GC_ENOMEM;
  mo.events = r->place_events; /* HyperNodeInvalid on a HyperNode left out */
  if (r->leader) {
    mo.is_leader = gb_leader_is_leader_fn;
    mo.leader_ctx = r->leader;
  }
  if ((rc = gb_model_new(&mo, &r->model, d)) || (rc = release_client_create(r, d)))
    return rc;
  struct gb_placer_opts pl;
  memset(&pl, 0, sizeof(pl));
  pl.model = r->model;
  pl.plan = r->plan;
  pl.client = r->client;
  pl.release_client = r->release_client;
  pl.events = r->place_events;
  /* The placer reads gangs and decision records from the controller's
   * caches, the pods from the model: the same pod informer feeds both. */
  pl.gang = gb_controller_gang;
  pl.gang_ctx = r->ctrl;
  pl.record_lookup = gb_controller_podgroup_annotation;
  pl.record_gangs = gb_controller_foreach_podgroup_annotation;
  pl.record_ctx = r->ctrl;
  if (r->leader) {
    pl.is_leader = gb_leader_is_leader_fn;
    pl.leader_ctx = r->leader;
  }
  pl.label_levels = mo.n_levels > 0;
  pl.release_timeout_ms = po.reservation_ttl_ms;
  pl.max_inflight = cfg->placement.max_inflight;
  pl.reg = r->reg;
  if ((rc = gb_placer_new(&pl, &r->placer, d)))
    return rc;
  /* From here a pod's walk passes no serve code: the webhook asks the
   * placer whether to gate, the model tells it of gang and capacity
   * changes. */
  gb_controller_set_placement(r->ctrl, gb_placer_webhook_lookup, r->placer);
  gb_model_listen(r->model, gb_placer_on_gang, gb_placer_on_capacity, r->placer);
  return gb_metrics_add_collector(r->reg, gb_placer_collect, r->placer);
}

/* The gate sweeper: with placement on, stray gates found in the live model
 * (pods gangbridge does not place) go after placement.strayGateGrace; with
 * placement off, every gangbridge gate goes at once (read from the API). */
static int sweeper_create(struct serve_run *r, struct gc_diags *d) {
  struct gb_gatesweep_opts o;
  memset(&o, 0, sizeof(o));
  o.client = r->client;
  o.model = r->model;
  o.gang = gb_controller_gang;
  o.gang_ctx = r->ctrl;
  if (!r->place_events) {
    struct gb_events_opts eo;
    memset(&eo, 0, sizeof(eo));
    eo.min_interval_s = r->cfg->events.min_interval_s;
    if (!(r->sweep_events = gb_events_new(r->client, &eo)))
      return GC_ENOMEM;
  }
  o.events = r->place_events ? r->place_events : r->sweep_events;
  if (r->leader) {
    o.is_leader = gb_leader_is_leader_fn;
    o.leader_ctx = r->leader;
  }
  o.grace_ms = (int64_t)(r->cfg->placement.stray_grace_s * 1000);
  o.namespaces = r->cfg->kube.watch_namespaces.items; /* kube.watchNamespaces: nowhere else */
  o.n_namespaces = r->cfg->kube.watch_namespaces.n;
  /* With placement off only strays can appear after the first sweep: a list
   * of the unbound pods a minute is plenty. */
  o.interval_ms = r->model ? 10000 : 60000;
  o.reg = r->reg;
  return gb_gatesweep_new(&o, &r->sweeper, d);
}

/* Starts the scheduler endpoints, the leader label and the workers, the
 * elector last (its first callback may come at once). */
static int start_workers(struct serve_run *r, struct gc_diags *d) {
  int rc;
  /* The scheduler endpoints answer from the placement plan and model
   * (NULL while placement is disabled: no opinion). */
  gb_sched_record_fn record = r->placer ? gb_placer_record_decision : NULL;
  if ((rc = gb_serve_sched_start(r->cfg, r->model, r->plan, record, r->placer, r->client, r->reg,
                                 r->sm.http_requests, sched_may_answer, r, &r->sched, d)))
    return rc;
  if ((rc = leader_label_create(r, d)) ||
      (r->leader_label && (rc = gb_selflabel_start(r->leader_label))))
    return rc;
  /* Every consumer has registered: one list and watch per resource. */
  if ((rc = gb_informers_start(r->informers)) || (rc = gb_controller_start(r->ctrl)) ||
      (rc = gb_timeouts_start(r->timeouts)))
    return rc;
  if (r->model && ((rc = gb_model_start(r->model)) || (rc = gb_placer_start(r->placer))))
    return rc;
  if ((rc = gb_gatesweep_start(r->sweeper)))
    return rc;
  return r->leader ? gb_leader_start(r->leader) : 0;
}

/* The Kubernetes client (kube.*). */
static int client_create(struct serve_run *r, struct gc_diags *d) {
  const struct gb_kube_options *kube = &r->cfg->kube;
  int rc = gb_kube_config_load(*kube->kubeconfig ? kube->kubeconfig : NULL,
                               *kube->context ? kube->context : NULL, &r->kcfg, d);
  if (rc)
    return rc;
  struct gb_kube_client_opts ko;
  client_opts(r, &ko);
  if ((rc = gb_kube_client_new(r->kcfg, &ko, &r->client, d)))
    return rc;
  gb_log(GB_LOG_INFO, "kubernetes API", "server", r->kcfg->server, "source", r->kcfg->source,
         NULL);
  struct gb_informers_opts fo = {(long)kube->watch_timeout_s, &r->sm};
  return gb_informers_new(r->client, &fo, &r->informers);
}

/* The timeout tracker and the controller that feeds it. */
static int controller_create(struct serve_run *r, struct gc_diags *d) {
  const struct gb_serve_config *cfg = r->cfg;
  struct gb_timeouts_opts to = {.cfg = &cfg->controller,
                                .options = &cfg->timeouts,
                                .events = &cfg->events,
                                .kube = &cfg->kube,
                                .client = r->client,
                                .informers = r->informers,
                                .metrics = &r->sm,
                                .reg = r->reg,
                                .synced = timeouts_synced,
                                .synced_ctx = r};
  struct gb_controller_opts co = {.cfg = &cfg->controller,
                                  .kube = &cfg->kube,
                                  .events = &cfg->events,
                                  .webhook = &cfg->webhook,
                                  .client = r->client,
                                  .informers = r->informers,
                                  .metrics = &r->sm};
  if (r->leader) {
    co.is_leader = to.is_leader = gb_leader_is_leader_fn;
    co.leader_ctx = to.leader_ctx = r->leader;
  }
  /* The tracker registers first: its handlers see a change before the
   * controller queues the TrainJob, as when it was the controller's
   * observer. */
  int rc = gb_timeouts_new(&to, &r->timeouts, d);
  if (rc)
    return rc;
  return gb_controller_new(&co, &r->ctrl, d);
}

/* The webhook's own server (webhook.*). */
static int start_webhook(struct serve_run *r, struct gc_diags *d) {
  const struct gb_webhook_options *wo = &r->cfg->webhook;
  struct gb_webhook_config wc = {
      gb_controller_webhook_lookup, r->ctrl, wo->allow_on_error, 0, r->sm.webhook,
      wo->deny_on_mismatch};
  int rc = gb_webhook_new(&wc, &r->wh);
  if (rc)
    return rc;
  struct gb_http_route hook = gb_webhook_route(r->wh, wo->path);
  if (!*wo->tls_cert)
    gb_log(GB_LOG_WARN,
           "webhook serves plain HTTP (no webhook.tlsCert): for tests only; the "
           "API server calls webhooks over HTTPS",
           NULL);
  struct http_role whr = {"webhook",
                          wo->address,
                          wo->tls_cert,
                          wo->tls_key,
                          (unsigned)wo->threads,
                          (unsigned)wo->max_connections,
                          (unsigned)wo->max_per_ip,
                          (unsigned)ceil(wo->header_timeout_s),
                          (size_t)wo->max_body_total};
  return start_http(&whr, &hook, 1, r->sm.http_requests, &r->hook, d);
}

/* The HTTP servers: probes and metrics, /debug/placement, the webhook. */
static int start_http_servers(struct serve_run *r, struct gc_diags *d) {
  const struct gb_serve_config *cfg = r->cfg;
  struct gb_http_route routes[4];
  size_t n = gb_health_routes(r->health, routes, 3);
  routes[n++] = gb_health_metrics_route(r->reg, "/metrics");
  /* Probes and metrics have their own server, so a flood on the webhook port
   * cannot starve the kubelet's probes; its own flood is bounded per address
   * and by the header deadline. */
  struct http_role probes = {"probes",
                             cfg->http.address,
                             NULL,
                             NULL,
                             0,
                             (unsigned)cfg->http.max_connections,
                             (unsigned)cfg->http.max_per_ip,
                             (unsigned)ceil(cfg->http.header_timeout_s),
                             0};
  int rc = start_http(&probes, routes, n, r->sm.http_requests, &r->probes, d);
  if (rc)
    return rc;
  /* /debug/placement lists every tenant's gangs (names, sizes, racks,
   * reasons): never on the probes' port, which Prometheus and the kubelet
   * reach, but on an address of its own (off by default; deploy/ puts it
   * on loopback, which kubectl port-forward reaches and other pods do
   * not). */
  if (r->placer && *cfg->placement.debug_address) {
    struct gb_http_route dbg = gb_placer_route(r->placer, "/debug/placement");
    struct http_role debug = {"debug", cfg->placement.debug_address,
                              NULL,    NULL,
                              0,       8,
                              4,       (unsigned)ceil(cfg->http.header_timeout_s),
                              0};
    if ((rc = start_http(&debug, &dbg, 1, r->sm.http_requests, &r->debug, d)))
      return rc;
  }
  return *cfg->webhook.address ? start_webhook(r, d) : 0;
}

static int serve_start(struct serve_run *r, struct gc_diags *d) {
  const struct gb_serve_config *cfg = r->cfg;
  int rc;
  r->reg = gb_metrics_new();
  r->health = gb_health_new();
  if (!r->reg || !r->health)
    return GC_ENOMEM;
  if ((rc = gb_service_metrics_register(r->reg, GB_VERSION, &r->sm, d)) ||
      (rc = client_create(r, d)))
    return rc;
  if (cfg->leader.enabled && (rc = leader_create(r, d)))
    return rc;
  if ((rc = controller_create(r, d)))
    return rc;
  if (cfg->placement.enabled && (rc = placement_create(r, d)))
    return rc;
  if ((rc = sweeper_create(r, d)))
    return rc;
  if ((rc = gb_metrics_add_collector(r->reg, gb_controller_collect, r->ctrl)) ||
      (rc = gb_metrics_add_collector(r->reg, gb_informers_collect, r->informers)) ||
      (rc = gb_metrics_add_collector(r->reg, gb_timeouts_collect, r->timeouts)) ||
      (rc = gb_health_add_check(r->health, GB_HEALTH_READY, "informers-synced",
                                gb_controller_ready_check, r->ctrl)))
    return rc;
  if (*cfg->grpc.address && (rc = gb_health_add_check(r->health, GB_HEALTH_LIVE | GB_HEALTH_READY,
                                                      "grpc-listener", grpc_listener_check, r)))
    return rc;
  if (!r->leader)
    gb_metric_gauge_set(r->sm.leader, NULL, 1); /* a single replica always leads */
  if ((rc = start_http_servers(r, d)))
    return rc;
  if (*cfg->grpc.address && (rc = rpc_start(r, d)))
    return rc;
  return start_workers(r, d);
}

static void serve_stop(struct serve_run *r) {
  if (r->health)
    gb_health_shutdown(r->health);
  /* The label goes first (in the background): the scheduler's Service stops
   * choosing this pod while the rest shuts down. */
  gb_selflabel_set(r->leader_label, 0);
  if (r->rpc_svc)
    gb_rpc_service_set_serving(r->rpc_svc, 0);
  gb_serve_sched_free(r->sched);
  gb_http_stop(r->hook);
  gb_http_stop(r->debug);
  gb_http_stop(r->probes);
  gb_rpc_server_free(r->rpc);
  gb_rpc_service_free(r->rpc_svc);
  /* Workers first (no write after this), then release the lease so a
   * standby takes over at once. */
  gb_gatesweep_stop(r->sweeper);
  gb_placer_stop(r->placer);
  gb_model_stop(r->model);
  gb_controller_stop(r->ctrl);
  gb_timeouts_stop(r->timeouts);
  gb_informers_stop(r->informers); /* no handler runs after this */
  gb_leader_free(r->leader);
  gb_kube_client_free(r->lease_client);
  gb_selflabel_free(r->leader_label); /* removes the label if it may still be on */
  gb_gatesweep_free(r->sweeper);
  gb_events_free(r->sweep_events);
  gb_placer_free(r->placer);
  gb_model_free(r->model);
  gb_kube_client_free(r->release_client);
  gb_plan_free(r->plan);
  gb_events_free(r->place_events);
  gb_controller_free(r->ctrl);
  gb_timeouts_free(r->timeouts);
  gb_informers_free(r->informers);
  gb_kube_client_free(r->client);
  gb_kube_config_free(r->kcfg);
  gb_webhook_free(r->wh);
  gb_health_free(r->health);
  gb_metrics_free(r->reg);
}

int gb_serve_controller(const struct gb_serve_config *cfg) {
  struct serve_run r;
  struct gc_diags d;
  memset(&r, 0, sizeof(r));
  r.cfg = cfg;
  gc_diags_init(&d);
  int status = GB_EXIT_INPUT;
  int rc;
  gb_log_set_level(cfg->log.level);
  gb_log_set_format(cfg->log.format);

  /* The watcher starts before the kubeconfig, TLS files or the API server
   * are touched: a signal during a stuck start-up ends the process at once. */
  struct gb_stopsig *sigs = NULL;
  if (gb_stopsig_start("gangbridge serve", &sigs)) {
    fprintf(stderr, "gangbridge serve: cannot start the signal watcher\n");
    status = GB_EXIT_INPUT;
    goto out;
  }
  signal(SIGPIPE, SIG_IGN);

  rc = serve_start(&r, &d);
  if (rc) {
    gb_diagprint_write(stderr, "gangbridge serve: ", &d);
    fprintf(stderr, "gangbridge serve: cannot start: %s\n", gc_diag_strerror(rc));
    serve_stop(&r);
    gb_stopsig_free(sigs);
    status = GB_EXIT_INPUT;
    goto out;
  }
  gb_diagprint_write(stderr, "gangbridge serve: ", &d); /* warnings (e.g. token file) */
  gb_log(GB_LOG_INFO, "gangbridge serve started", "version", GB_VERSION, "config",
         cfg->opts.source ? cfg->opts.source : "(defaults and flags)", NULL);
  gb_stopsig_started(sigs);
  int sig = gb_stopsig_wait(sigs);
  gb_log(GB_LOG_INFO, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
  serve_stop(&r);
  gb_stopsig_free(sigs);
  gb_log(GB_LOG_INFO, "stopped", NULL);
  status = GB_EXIT_OK;
out:
  gc_diags_destroy(&d);
  return status;
}
