/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_config: the controller layer's keys (see the
 * header).  The tables are the single source of truth: the loader applies
 * their defaults, --help and --print-config are written from them, and a
 * test checks deploy/configmap.yaml and docs/operating.md against them.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "gb_addr.h"
#include "gb_config.h"
#include "gc_name.h"
#include "gc_policy.h"

const char *gb_config_backend_choice_name(const struct gc_backend *b) {
  return b ? b->name : "auto";
}

const struct gc_backend *gb_config_backend(const struct gb_config *c) {
  return c->backend_choice > 0 ? gc_backend_at((size_t)c->backend_choice - 1) : NULL;
}

/* ---- the controller's keys ------------------------------------------------------ */

/* scheduling.backend's values: auto, then the table's backends (index + 1);
 * its help line; filled by keys_build. */
static struct gb_opt_enum backends[GC_BACKEND_MAX + 2];
static char backend_doc[512];
static const struct gb_opt_enum scopes[] = {
    {"wave", GC_SCOPE_WAVE, 0}, {"all", GC_SCOPE_ALL, 0}, {NULL, 0, 0}};
static const struct gb_opt_enum modes[] = {{"unmanaged", GB_SELECT_UNMANAGED, 0},
                                           {"namespaceSelector", GB_SELECT_NAMESPACE, 0},
                                           {"optIn", GB_SELECT_OPTIN, 0},
                                           {NULL, 0, 0}};
static const struct gb_opt_items levels = {GC_TOPOLOGY_MAX_LEVELS, "levels", gc_name_is_qualified,
                                           "a node label key"};

#define S struct gb_config
static const struct gb_opt controller_keys[] = {
    GB_KEY_ENUM(S, "scheduling.backend", backend_choice, backends, "auto", "backend", backend_doc),
    GB_KEY_ENUM(S, "scheduling.gangScope", gang_scope, scopes, "wave", "gang-scope",
                "wave: the dependsOn wave with the most pods forms the gang; all: every "
                "replicated job"),
    /* scheduling.schedulerNames.<backend> keys go here (keys_build). */
    GB_KEY_DUR(S, "scheduling.discoveryInterval", discovery_interval_s, 1, 86400, "30s", NULL,
               "how often API discovery is repeated"),
    GB_KEY_BOOL(S, "scheduling.watchCRDs", watch_crds, "true", NULL,
                "re-run discovery as soon as a scheduling CRD changes"),
    GB_KEY_ENUM(S, "selection.mode", select_mode, modes, "unmanaged", "selection",
                "which TrainJobs gangbridge manages: unmanaged, namespaceSelector or optIn"),
    GB_KEY_STR(S, "selection.namespaceSelector", namespace_selector, "", "namespace-selector",
               "label selector on Namespaces; required with namespaceSelector"),
    GB_KEY_STR(S, "selection.optInLabel", opt_in_label, "gangbridge.io/enabled=true", NULL,
               "label selector a TrainJob must match in optIn mode"),
    GB_KEY_BOOL(S, "selection.takeOverTrainerPolicies", take_over_trainer_policies, "false", NULL,
                "also manage TrainJobs whose runtime has a podGroupPolicy"),
    GB_KEY_BOOL(S, "podGroups.deleteOnFinish", delete_on_finish, "true", NULL,
                "delete the PodGroup when the TrainJob is Complete or Failed"),
    GB_KEY_BOOL(S, "podGroups.updateWhileRunning", update_while_running, "false", NULL,
                "no effect (accepted for old configurations)"),
    GB_KEY_INT(S, "controller.workers", workers, 1, 64, "4", "workers", "reconcile worker threads"),
    GB_KEY_DUR(S, "controller.queueBaseDelay", queue_base_delay_s, 0.0001, 3600, "5ms", NULL,
               "first retry delay of a failing TrainJob; doubles per failure"),
    GB_KEY_DUR(S, "controller.queueMaxDelay", queue_max_delay_s, 0.001, 86400, "1000s", NULL,
               "cap of that delay"),
    GB_KEY_NUM(S, "controller.queueQPS", queue_qps, -1, 100000, "10", NULL,
               "overall retry rate (token bucket); -1: none"),
    GB_KEY_INT(S, "controller.queueBurst", queue_burst, 1, 100000, "100", NULL, "its bucket size"),
    GB_KEY_DUR(S, "controller.resyncPeriod", resync_s, 0, 86400, "0s", NULL,
               "re-queue every TrainJob this often; 0s: never"),
    GB_KEY_STR(S, "timeouts.default", timeout_default, "", NULL,
               "gang timeout (Go duration) of TrainJobs with none of their own; empty: none"),
    GB_KEY_STR(S, "timeouts.max", timeout_max, "", NULL,
               "the platform's ceiling on every gang timeout (Go duration); empty: none"),
    GB_KEY_LIST(S, "topology.levels", topology_levels, &levels, "", NULL,
                "node label keys of the topology levels, top first"),
    GB_KEY_STR(S, "topology.default", topology_default, "", NULL,
               "topology policy of gangs with none: required:VALUE or preferred:VALUE"),
};

/* The policy keys, checked with gangcalc's own rules so that serve refuses
 * a default every TrainJob would then fail on. */
static int check_policy(const struct gb_config *c, struct gc_diags *d) {
  char msg[512];
  int64_t secs = 0;
  int rc = 0;
  if (*c->timeout_default &&
      gc_policy_timeout_parse(c->timeout_default, strlen(c->timeout_default), &secs, msg,
                              sizeof(msg))) {
    gc_diags_addf(d, "timeouts.default: %s", msg);
    rc = GC_EINVAL;
  }
  if (*c->timeout_max &&
      gc_policy_timeout_parse(c->timeout_max, strlen(c->timeout_max), &secs, msg, sizeof(msg))) {
    gc_diags_addf(d, "timeouts.max: %s", msg);
    rc = GC_EINVAL;
  }
  if (gc_policy_topology_default_check(c->topology_default, msg, sizeof(msg))) {
    gc_diags_addf(d, "topology.default: %s", msg);
    rc = GC_EINVAL;
  }
  return rc;
}

/* selection.*: the selectors parsed into c (arena a). */
static int check_selection(struct gb_config *c, struct gc_arena *a, struct gc_diags *d) {
  int rc = 0;
  memset(&c->ns_sel, 0, sizeof(c->ns_sel));
  memset(&c->optin_sel, 0, sizeof(c->optin_sel));
  if (c->select_mode == GB_SELECT_NAMESPACE && !*c->namespace_selector) {
    gc_diags_addf(d, "selection.namespaceSelector: required with selection.mode "
                     "namespaceSelector");
    rc = GC_EINVAL;
  } else if (gb_selector_parse(a, c->namespace_selector, &c->ns_sel, d)) {
    gc_diags_addf(d, "selection.namespaceSelector: not a valid label selector");
    rc = GC_EINVAL;
  }
  if (c->select_mode == GB_SELECT_OPTIN && !*c->opt_in_label) {
    gc_diags_addf(d, "selection.optInLabel: required with selection.mode optIn");
    rc = GC_EINVAL;
  } else if (gb_selector_parse(a, c->opt_in_label, &c->optin_sel, d)) {
    gc_diags_addf(d, "selection.optInLabel: not a valid label selector");
    rc = GC_EINVAL;
  }
  return rc;
}

static int controller_check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  struct gb_config *c = opts;
  int rc = check_policy(c, d);
  if (c->queue_max_delay_s < c->queue_base_delay_s) {
    gc_diags_addf(d, "controller.queueMaxDelay must not be below controller.queueBaseDelay");
    rc = GC_EINVAL;
  }
  /* The work queue would read 0 as its default rate (10): refused instead. */
  if (c->queue_qps == 0) {
    gc_diags_addf(d, "controller.queueQPS: must not be 0 (-1 is no limit)");
    rc = GC_EINVAL;
  }
  int r = check_selection(c, a, d);
  return r == GC_ENOMEM ? r : r ? r : rc;
}

#define N_STATIC (sizeof(controller_keys) / sizeof(controller_keys[0]))
static struct gb_opt keys_all[N_STATIC + GC_BACKEND_MAX];
static char sched_paths[GC_BACKEND_MAX][96], sched_docs[GC_BACKEND_MAX][160];
static struct gb_opt_table table;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

/* scheduling.backend's values and help ("auto (Volcano when its PodGroup CRD
 * is served, else coscheduling), volcano or coscheduling"). */
static void backends_build(void) {
  size_t n = gc_backend_count(), used = 0, v = 1;
  backends[0] = (struct gb_opt_enum){"auto", 0, 0};
  /* A backend serve cannot create objects for yet is no value here. */
  for (size_t i = 0; i < n; i++)
    if (!gc_backend_at(i)->offline_only)
      backends[v++] = (struct gb_opt_enum){gc_backend_at(i)->name, (int)i + 1, 0};
  backends[v] = (struct gb_opt_enum){NULL, 0, 0};
  const struct gc_backend *first = gc_backend_at(0);
  int k = snprintf(backend_doc, sizeof(backend_doc), "auto (%s when its %s CRD is served",
                   first->display, first->kind);
  for (size_t i = 1; k > 0 && (size_t)k < sizeof(backend_doc) && i < n; i++)
    if (gc_backend_at(i)->in_auto)
      k += snprintf(backend_doc + k, sizeof(backend_doc) - (size_t)k, ", else %s",
                    gc_backend_at(i)->display);
  used = k > 0 && (size_t)k < sizeof(backend_doc) ? (size_t)k : 0;
  char names[256];
  snprintf(backend_doc + used, sizeof(backend_doc) - used, "), %s",
           gc_backend_serve_names(names, sizeof(names), " or "));
}

/* The controller's table: the static keys with one
 * scheduling.schedulerNames.<name> key per backend after
 * scheduling.gangScope, each defaulting to its scheduler name. */
static void keys_build(void) {
  size_t n = 0;
  backends_build();
  for (size_t i = 0; i < N_STATIC; i++) {
    keys_all[n++] = controller_keys[i];
    if (strcmp(controller_keys[i].path, "scheduling.gangScope") != 0)
      continue;
    for (size_t b = 0; b < gc_backend_count(); b++) {
      const struct gc_backend *be = gc_backend_at(b);
      if (be->offline_only)
        continue;
      snprintf(sched_paths[b], sizeof(sched_paths[b]), "scheduling.schedulerNames.%s", be->name);
      if (b == 0)
        snprintf(sched_docs[b], sizeof(sched_docs[b]),
                 "spec.schedulerName the webhook sets on %s gang pods; empty: leave it",
                 be->display);
      else
        snprintf(sched_docs[b], sizeof(sched_docs[b]), "likewise for %s", be->display);
      keys_all[n++] = (struct gb_opt){
          .path = sched_paths[b],
          .type = GB_OPT_STR,
          .off = offsetof(S, scheduler_names) + b * sizeof(const char *),
          .def = be->scheduler_name ? be->scheduler_name : "",
          .doc = sched_docs[b],
      };
    }
  }
  table = (struct gb_opt_table){.layer = "controller",
                                .title = "TrainJob controller",
                                .keys = keys_all,
                                .n = n,
                                .size = sizeof(S),
                                .check = controller_check};
}

const struct gb_opt_table *gb_config_table(void) {
  pthread_once(&keys_once, keys_build);
  return &table;
}
#undef S

/* ---- the webhook's keys --------------------------------------------------------- */

#define S struct gb_webhook_options
static const struct gb_opt webhook_keys[] = {
    GB_KEY_STR(S, "webhook.address", address, "0.0.0.0:9443", "webhook-addr",
               "webhook listen HOST:PORT; empty: no webhook"),
    GB_KEY_STR(S, "webhook.tlsCert", tls_cert, "", "webhook-tls-cert",
               "serving certificate (with webhook.tlsKey; read at start)"),
    GB_KEY_STR(S, "webhook.tlsKey", tls_key, "", "webhook-tls-key", "its key"),
    GB_KEY_STR(S, "webhook.path", path, "/mutate-pods", NULL, "URL path of the webhook"),
    GB_KEY_BOOL(S, "webhook.allowOnError", allow_on_error, "false", NULL,
                "admit a pod unbound when the lookup fails, instead of denying it"),
    GB_KEY_BOOL(S, "webhook.denyOnPodGroupMismatch", deny_on_mismatch, "false", NULL,
                "deny (409) a pod whose PodGroup is not gangbridge's or not the gang's, "
                "instead of admitting it unbound"),
    GB_KEY_INT(S, "webhook.threads", threads, 1, 64, "4", NULL, "webhook server threads"),
    GB_KEY_INT(S, "webhook.maxConnections", max_connections, 1, 100000, "1024", NULL,
               "connections the webhook server holds at once"),
    GB_KEY_INT(S, "webhook.maxConnectionsPerIP", max_per_ip, 0, 100000, "256", NULL,
               "connections from one client address; 0: no cap"),
    GB_KEY_DUR(S, "webhook.headerTimeout", header_timeout_s, 1, 300, "10s", NULL,
               "TLS handshake, request line and headers, in total"),
    GB_KEY_INT(S, "webhook.maxBodyBytesInFlight", max_body_total, 1048576, 1073741824, "67108864",
               NULL, "review bodies held at once by all requests"),
};

static int webhook_check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_webhook_options *o = opts;
  int rc = gb_addr_check("webhook.address", o->address, d);
  (void)a;
  if (!*o->tls_cert != !*o->tls_key) {
    gc_diags_addf(d, "webhook.tlsCert and webhook.tlsKey go together");
    rc = GC_EINVAL;
  }
  if (o->path[0] != '/') {
    gc_diags_addf(d, "webhook.path: must start with '/'");
    rc = GC_EINVAL;
  }
  return rc;
}

const struct gb_opt_table gb_config_webhook_table = GB_OPT_TABLE(
    "controller", "Pod-binding webhook", S, webhook_keys, webhook_check);
#undef S
