/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_config: serve's configuration (see the header).  One table lists every
 * key with its type, default text and flag; defaults are applied by parsing
 * the default text, so the table is the single source of truth.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "gb_config.h"
#include "gb_manifest.h"
#include "gc_duration.h"
#include "gc_name.h"
#include "gc_policy.h"

enum key_type { T_STR, T_BOOL, T_INT, T_NUM, T_DUR, T_LEVEL, T_FORMAT, T_BACKEND, T_SCOPE,
                T_SELECT, T_LIST, T_TOACTION };

struct key_def {
  const char *path;
  enum key_type type;
  size_t off;
  double lo, hi; /* T_INT, T_NUM, T_DUR */
  const char *def;
  const char *flag; /* long option without "--", or NULL */
};

#define OFF(f) offsetof(struct gb_config, f)

static const struct key_def KEYS[] = {
    {"kube.kubeconfig", T_STR, OFF(kubeconfig), 0, 0, "", "kubeconfig"},
    {"kube.context", T_STR, OFF(context), 0, 0, "", "context"},
    {"kube.qps", T_NUM, OFF(kube_qps), -1, 100000, "50", "kube-qps"},
    {"kube.burst", T_INT, OFF(kube_burst), 1, 100000, "100", "kube-burst"},
    {"kube.connectTimeout", T_DUR, OFF(kube_connect_timeout_s), 0.1, 600, "5s", NULL},
    {"kube.requestTimeout", T_DUR, OFF(kube_request_timeout_s), 0.1, 3600, "30s", NULL},
    {"kube.watchTimeout", T_DUR, OFF(kube_watch_timeout_s), 1, 3600, "5m", NULL},
    {"kube.watchNamespaces", T_LIST, OFF(watch_namespaces_text), 0, 0, "", NULL},
    {"log.level", T_LEVEL, OFF(log_level), 0, 0, "info", "log-level"},
    {"log.format", T_FORMAT, OFF(log_format), 0, 0, "text", "log-format"},
    {"grpc.address", T_STR, OFF(grpc_address), 0, 0, "", "grpc-addr"},
    {"grpc.tlsCert", T_STR, OFF(grpc_tls_cert), 0, 0, "", "grpc-tls-cert"},
    {"grpc.tlsKey", T_STR, OFF(grpc_tls_key), 0, 0, "", "grpc-tls-key"},
    {"grpc.clientCA", T_STR, OFF(grpc_client_ca), 0, 0, "", "grpc-client-ca"},
    {"grpc.threads", T_INT, OFF(grpc_threads), 0, 64, "0", "grpc-threads"},
    {"grpc.maxMessageBytes", T_INT, OFF(grpc_max_message_bytes), 1024, 1073741824, "33554432",
     "max-message-bytes"},
    {"grpc.gracePeriod", T_DUR, OFF(grpc_grace_s), 0, 3600, "5s", "grace-period"},
    {"grpc.allowSnapshotWrites", T_BOOL, OFF(grpc_allow_snapshot_writes), 0, 0, "false", NULL},
    {"grpc.memoryBudget", T_INT, OFF(grpc_memory_budget_mib), 16, 1048576, "640", NULL},
    {"grpc.handshakeTimeout", T_DUR, OFF(grpc_handshake_timeout_s), 0.1, 600, "10s", NULL},
    {"grpc.selfCheckInterval", T_DUR, OFF(grpc_self_check_s), 0, 3600, "10s", NULL},
    {"http.address", T_STR, OFF(http_address), 0, 0, "0.0.0.0:8080", "http-addr"},
    {"http.maxConnections", T_INT, OFF(http_max_connections), 1, 100000, "64", NULL},
    {"http.maxConnectionsPerIP", T_INT, OFF(http_max_per_ip), 0, 100000, "16", NULL},
    {"http.headerTimeout", T_DUR, OFF(http_header_timeout_s), 1, 300, "5s", NULL},
    {"webhook.address", T_STR, OFF(webhook_address), 0, 0, "0.0.0.0:9443", "webhook-addr"},
    {"webhook.tlsCert", T_STR, OFF(webhook_tls_cert), 0, 0, "", "webhook-tls-cert"},
    {"webhook.tlsKey", T_STR, OFF(webhook_tls_key), 0, 0, "", "webhook-tls-key"},
    {"webhook.path", T_STR, OFF(webhook_path), 0, 0, "/mutate-pods", NULL},
    {"webhook.allowOnError", T_BOOL, OFF(webhook_allow_on_error), 0, 0, "false", NULL},
    {"webhook.denyOnPodGroupMismatch", T_BOOL, OFF(webhook_deny_on_mismatch), 0, 0, "false",
     NULL},
    {"webhook.threads", T_INT, OFF(webhook_threads), 1, 64, "4", NULL},
    {"webhook.maxConnections", T_INT, OFF(webhook_max_connections), 1, 100000, "1024", NULL},
    {"webhook.maxConnectionsPerIP", T_INT, OFF(webhook_max_per_ip), 0, 100000, "256", NULL},
    {"webhook.headerTimeout", T_DUR, OFF(webhook_header_timeout_s), 1, 300, "10s", NULL},
    {"webhook.maxBodyBytesInFlight", T_INT, OFF(webhook_max_body_total), 1048576, 1073741824,
     "67108864", NULL},
    {"sched.address", T_STR, OFF(sched_address), 0, 0, "", "sched-addr"},
    {"sched.tlsCert", T_STR, OFF(sched_tls_cert), 0, 0, "", NULL},
    {"sched.tlsKey", T_STR, OFF(sched_tls_key), 0, 0, "", NULL},
    {"sched.clientCA", T_STR, OFF(sched_client_ca), 0, 0, "", NULL},
    {"sched.volcanoPrefix", T_STR, OFF(sched_volcano_prefix), 0, 0, "/volcano", NULL},
    {"sched.kubePrefix", T_STR, OFF(sched_kube_prefix), 0, 0, "/kube", NULL},
    {"sched.maxBodyBytes", T_INT, OFF(sched_max_body), 65536, 1073741824, "16777216", NULL},
    {"sched.maxListBodyBytes", T_INT, OFF(sched_max_list_body), 65536, 2147483647, "268435456",
     NULL},
    {"sched.maxSessionBodyMiB", T_INT, OFF(sched_max_session_mib), 1, 1048576, "8192", NULL},
    {"sched.threads", T_INT, OFF(sched_threads), 1, 64, "4", NULL},
    {"sched.maxConnections", T_INT, OFF(sched_max_connections), 1, 100000, "256", NULL},
    {"sched.maxConnectionsPerIP", T_INT, OFF(sched_max_per_ip), 0, 100000, "64", NULL},
    {"sched.headerTimeout", T_DUR, OFF(sched_header_timeout_s), 1, 300, "10s", NULL},
    {"scheduling.backend", T_BACKEND, OFF(backend), 0, 0, "auto", "backend"},
    {"scheduling.gangScope", T_SCOPE, OFF(gang_scope), 0, 0, "wave", "gang-scope"},
    {"scheduling.schedulerNames.volcano", T_STR, OFF(scheduler_volcano), 0, 0, "volcano", NULL},
    {"scheduling.schedulerNames.coscheduling", T_STR, OFF(scheduler_coscheduling), 0, 0,
     "scheduler-plugins-scheduler", NULL},
    {"scheduling.discoveryInterval", T_DUR, OFF(discovery_interval_s), 1, 86400, "30s", NULL},
    {"scheduling.watchCRDs", T_BOOL, OFF(watch_crds), 0, 0, "true", NULL},
    {"selection.mode", T_SELECT, OFF(select_mode), 0, 0, "unmanaged", "selection"},
    {"selection.namespaceSelector", T_STR, OFF(namespace_selector), 0, 0, "",
     "namespace-selector"},
    {"selection.optInLabel", T_STR, OFF(opt_in_label), 0, 0, "gangbridge.io/enabled=true", NULL},
    {"selection.takeOverTrainerPolicies", T_BOOL, OFF(take_over_trainer_policies), 0, 0, "false",
     NULL},
    {"podGroups.deleteOnFinish", T_BOOL, OFF(delete_on_finish), 0, 0, "true", NULL},
    {"podGroups.updateWhileRunning", T_BOOL, OFF(update_while_running), 0, 0, "false", NULL},
    {"controller.workers", T_INT, OFF(workers), 1, 64, "4", "workers"},
    {"controller.queueBaseDelay", T_DUR, OFF(queue_base_delay_s), 0.0001, 3600, "5ms", NULL},
    {"controller.queueMaxDelay", T_DUR, OFF(queue_max_delay_s), 0.001, 86400, "1000s", NULL},
    {"controller.queueQPS", T_NUM, OFF(queue_qps), -1, 100000, "10", NULL},
    {"controller.queueBurst", T_INT, OFF(queue_burst), 1, 100000, "100", NULL},
    {"controller.resyncPeriod", T_DUR, OFF(resync_s), 0, 86400, "0s", NULL},
    {"events.minInterval", T_DUR, OFF(event_min_interval_s), 0, 86400, "60s", NULL},
    {"leaderElection.enabled", T_BOOL, OFF(leader_elect), 0, 0, "false", "leader-elect"},
    {"leaderElection.namespace", T_STR, OFF(lease_namespace), 0, 0, "", NULL},
    {"leaderElection.name", T_STR, OFF(lease_name), 0, 0, "gangbridge", NULL},
    {"leaderElection.leaseDuration", T_DUR, OFF(lease_duration_s), 1, 3600, "15s", NULL},
    {"leaderElection.renewDeadline", T_DUR, OFF(renew_deadline_s), 1, 3600, "10s", NULL},
    {"leaderElection.retryPeriod", T_DUR, OFF(retry_period_s), 0.1, 3600, "2s", NULL},
    /* placement (the placement controller, bridge/placement/) */
    {"placement.enabled", T_BOOL, OFF(placement_enabled), 0, 0, "true", NULL},
    {"placement.strayGateGrace", T_DUR, OFF(placement_stray_grace_s), 1, 86400, "30s", NULL},
    {"placement.releaseTimeout", T_DUR, OFF(placement_release_timeout_s), 1, 86400, "2m", NULL},
    {"placement.starvationGuard", T_DUR, OFF(placement_starvation_guard_s), 0, 86400, "5m",
     NULL},
    {"placement.starvationGuardMax", T_DUR, OFF(placement_starvation_guard_max_s), 1, 604800,
     "30m", NULL},
    {"placement.profile", T_STR, OFF(placement_profile), 0, 0, "bestfit", NULL},
    {"placement.maxInflightPatches", T_INT, OFF(placement_max_inflight), 1, 1024, "32", NULL},
    {"placement.debugAddress", T_STR, OFF(placement_debug_address), 0, 0, "", NULL},
    /* policy: timeouts.default and topology.* */
    {"timeouts.default", T_STR, OFF(timeout_default), 0, 0, "", NULL},
    {"timeouts.max", T_STR, OFF(timeout_max), 0, 0, "", NULL},
    /* the timeout tracker's timeouts.* (next to timeouts.default: one YAML block) */
    {"timeouts.action", T_TOACTION, OFF(timeout_action), 0, 0, "event", "timeout-action"},
    {"timeouts.requeue.baseDelay", T_DUR, OFF(requeue_base_delay_s), 0.001, 86400, "60s", NULL},
    {"timeouts.requeue.maxDelay", T_DUR, OFF(requeue_max_delay_s), 0.001, 604800, "3600s", NULL},
    {"timeouts.requeue.maxAttempts", T_INT, OFF(requeue_max_attempts), 0, 100, "3", NULL},
    {"timeouts.maxQueues", T_INT, OFF(timeout_max_queues), 1, 1000, "50", NULL},
    {"timeouts.maxGangs", T_INT, OFF(timeout_max_gangs), 1, 10000000, "1000000", NULL},
    {"timeouts.until", T_STR, OFF(timeout_until), 0, 0, "scheduled", NULL},
    {"topology.levels", T_LIST, OFF(topology_levels_text), 0, 0, "", NULL},
    {"topology.default", T_STR, OFF(topology_default), 0, 0, "", NULL},
};
#define N_KEYS (sizeof(KEYS) / sizeof(KEYS[0]))

const char *gb_backend_choice_name(enum gb_backend_choice b) {
  switch (b) {
  case GB_CHOICE_VOLCANO: return "volcano";
  case GB_CHOICE_COSCHEDULING: return "coscheduling";
  default: return "auto";
  }
}

const char *gb_timeout_action_name(enum gb_timeout_action a) {
  switch (a) {
  case GB_TIMEOUT_NONE: return "none";
  case GB_TIMEOUT_REQUEUE: return "requeue";
  default: return "event";
  }
}

const char *gb_select_mode_name(enum gb_select_mode m) {
  switch (m) {
  case GB_SELECT_NAMESPACE: return "namespaceSelector";
  case GB_SELECT_OPTIN: return "optIn";
  default: return "unmanaged";
  }
}

static const struct key_def *find_key(const char *path) {
  for (size_t i = 0; i < N_KEYS; i++)
    if (!strcmp(KEYS[i].path, path))
      return &KEYS[i];
  return NULL;
}

/* True when some key starts with "prefix." (a section). */
static int is_section(const char *prefix) {
  size_t n = strlen(prefix);
  for (size_t i = 0; i < N_KEYS; i++)
    if (!strncmp(KEYS[i].path, prefix, n) && KEYS[i].path[n] == '.')
      return 1;
  return 0;
}

/* Parses a duration: a plain number of seconds, or Go duration text
 * ("1m30s", "500ms", "2h"), read by gangcalc's one Go-duration parser. */
static int parse_duration(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end != s && !*end && !errno && isfinite(v)) {
    *out = v;
    return 0;
  }
  int64_t ns = 0;
  if (gc_duration_parse(s, strlen(s), &ns, NULL, 0))
    return GC_EINVAL;
  *out = (double)ns / 1e9;
  return 0;
}

static int parse_bool(const char *s, int *out) {
  if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes")) {
    *out = 1;
    return 0;
  }
  if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no")) {
    *out = 0;
    return 0;
  }
  return GC_EINVAL;
}

/* Sets k from text; `where` prefixes messages ("file:1:2" or "--set"). */
/* timeouts.action: none, event or requeue. */
static int set_action(const struct key_def *k, const char *text, enum gb_timeout_action *a,
                      const char *where, struct gc_diags *d) {
  static const enum gb_timeout_action all[] = {GB_TIMEOUT_NONE, GB_TIMEOUT_EVENT,
                                               GB_TIMEOUT_REQUEUE};
  for (size_t i = 0; i < 3; i++)
    if (!strcmp(text, gb_timeout_action_name(all[i]))) {
      *a = all[i];
      return 0;
    }
  gc_diags_addf(d, "%s: %s: must be none, event or requeue, not \"%.64s\"", where, k->path, text);
  return GC_EINVAL;
}

static int set_scalar(struct gb_config *c, const struct key_def *k, char *base, const char *text,
                      const char *where, struct gc_diags *d) {
  char *end;
  switch (k->type) {
  case T_LIST:
  case T_STR: {
    const char *s = gc_arena_strdup(c->arena, text);
    if (!s)
      return GC_ENOMEM;
    if (strlen(text) > 4096) {
      gc_diags_addf(d, "%s: %s: value longer than 4096 bytes", where, k->path);
      return GC_EINVAL;
    }
    *(const char **)(void *)base = s;
    return 0;
  }
  case T_BOOL:
    if (parse_bool(text, (int *)(void *)base)) {
      gc_diags_addf(d, "%s: %s: must be true or false, not \"%.64s\"", where, k->path, text);
      return GC_EINVAL;
    }
    return 0;
  case T_INT: {
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < k->lo || v > k->hi) {
      gc_diags_addf(d, "%s: %s: must be an integer in [%g, %g], not \"%.64s\"", where, k->path,
                    k->lo, k->hi, text);
      return GC_EINVAL;
    }
    *(int *)(void *)base = (int)v;
    return 0;
  }
  case T_NUM: {
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < k->lo || v > k->hi) {
      gc_diags_addf(d, "%s: %s: must be a number in [%g, %g], not \"%.64s\"", where, k->path,
                    k->lo, k->hi, text);
      return GC_EINVAL;
    }
    *(double *)(void *)base = v;
    return 0;
  }
  case T_DUR: {
    double v = 0;
    if (parse_duration(text, &v) || v < k->lo || v > k->hi) {
      gc_diags_addf(d,
                    "%s: %s: must be a duration (seconds, or like \"500ms\", \"30s\", \"5m\") "
                    "in [%gs, %gs], not \"%.64s\"",
                    where, k->path, k->lo, k->hi, text);
      return GC_EINVAL;
    }
    *(double *)(void *)base = v;
    return 0;
  }
  case T_LEVEL: {
    enum gb_log_level l;
    if (gb_log_level_parse(text, &l)) {
      gc_diags_addf(d, "%s: %s: must be debug, info, warn, error or off, not \"%.64s\"", where,
                    k->path, text);
      return GC_EINVAL;
    }
    *(enum gb_log_level *)(void *)base = l;
    return 0;
  }
  case T_FORMAT: {
    enum gb_log_format f;
    if (gb_log_format_parse(text, &f)) {
      gc_diags_addf(d, "%s: %s: must be text or json, not \"%.64s\"", where, k->path, text);
      return GC_EINVAL;
    }
    *(enum gb_log_format *)(void *)base = f;
    return 0;
  }
  case T_BACKEND: {
    enum gb_backend_choice *b = (enum gb_backend_choice *)(void *)base;
    if (!strcmp(text, "auto"))
      *b = GB_CHOICE_AUTO;
    else if (!strcmp(text, "volcano"))
      *b = GB_CHOICE_VOLCANO;
    else if (!strcmp(text, "coscheduling"))
      *b = GB_CHOICE_COSCHEDULING;
    else {
      gc_diags_addf(d, "%s: %s: must be auto, volcano or coscheduling, not \"%.64s\"", where,
                    k->path, text);
      return GC_EINVAL;
    }
    return 0;
  }
  case T_SCOPE: {
    enum gc_scope *s = (enum gc_scope *)(void *)base;
    if (!strcmp(text, "wave"))
      *s = GC_SCOPE_WAVE;
    else if (!strcmp(text, "all"))
      *s = GC_SCOPE_ALL;
    else {
      gc_diags_addf(d, "%s: %s: must be wave or all, not \"%.64s\"", where, k->path, text);
      return GC_EINVAL;
    }
    return 0;
  }
  case T_SELECT: {
    enum gb_select_mode *m = (enum gb_select_mode *)(void *)base;
    if (!strcmp(text, "unmanaged"))
      *m = GB_SELECT_UNMANAGED;
    else if (!strcmp(text, "namespaceSelector"))
      *m = GB_SELECT_NAMESPACE;
    else if (!strcmp(text, "optIn"))
      *m = GB_SELECT_OPTIN;
    else {
      gc_diags_addf(d, "%s: %s: must be unmanaged, namespaceSelector or optIn, not \"%.64s\"",
                    where, k->path, text);
      return GC_EINVAL;
    }
    return 0;
  }
  case T_TOACTION: break; /* set_text's */
  }
  return GC_EINVAL;
}

/* Sets key k from text (every type; T_TOACTION has its own parser to keep
 * set_scalar short). */
static int set_text(struct gb_config *c, const struct key_def *k, const char *text,
                    const char *where, struct gc_diags *d) {
  if (k->type == T_TOACTION)
    return set_action(k, text, (enum gb_timeout_action *)(void *)((char *)c + k->off), where, d);
  return set_scalar(c, k, (char *)c + k->off, text, where, d);
}

int gb_config_init(struct gb_config *c) {
  memset(c, 0, sizeof(*c));
  c->arena = gc_arena_new(4u << 20);
  if (!c->arena)
    return GC_ENOMEM;
  for (size_t i = 0; i < N_KEYS; i++) {
    int rc = set_text(c, &KEYS[i], KEYS[i].def, "default", NULL);
    if (rc) {
      gb_config_destroy(c);
      return rc == GC_ENOMEM ? GC_ENOMEM : GC_EINVAL;
    }
  }
  return 0;
}

void gb_config_destroy(struct gb_config *c) {
  if (!c)
    return;
  gc_arena_free(c->arena);
  memset(c, 0, sizeof(*c));
}

int gb_config_set(struct gb_config *c, const char *key, const char *value, struct gc_diags *d) {
  const struct key_def *k = find_key(key);
  if (!k) {
    gc_diags_addf(d, "--set: unknown configuration key \"%.128s\" (see docs/operating.md)", key);
    return GC_ENOTFOUND;
  }
  return set_text(c, k, value, "--set", d);
}

/* ---- file ---------------------------------------------------------------------- */

/* A YAML list for a T_LIST key: its strings joined with ',' (the text form
 * --set takes), split again by gb_config_validate. */
static int set_list(struct gb_config *c, const struct key_def *k, const struct gc_value *v,
                    const char *file, struct gc_diags *d) {
  size_t len = 0;
  for (size_t i = 0; i < v->len; i++) {
    const struct gc_value *it = v->u.items[i];
    if (it->type != GC_STR || strlen(it->u.s) != it->len || strchr(it->u.s, ',')) {
      gc_diags_addf(d, "%s:%u:%u: %s: must be a list of strings (without commas)", file,
                    it->line, it->col, k->path);
      return GC_EINVAL;
    }
    len += it->len + 1;
  }
  if (len > 4096) {
    gc_diags_addf(d, "%s:%u:%u: %s: value longer than 4096 bytes", file, v->line, v->col,
                  k->path);
    return GC_EINVAL;
  }
  char *text = gc_arena_alloc(c->arena, len + 1);
  if (!text)
    return GC_ENOMEM;
  size_t used = 0;
  for (size_t i = 0; i < v->len; i++) {
    if (i)
      text[used++] = ',';
    memcpy(text + used, v->u.items[i]->u.s, v->u.items[i]->len);
    used += v->u.items[i]->len;
  }
  text[used] = '\0';
  *(const char **)(void *)((char *)c + k->off) = text;
  return 0;
}

static int set_from_value(struct gb_config *c, const struct key_def *k, const struct gc_value *v,
                          const char *file, struct gc_diags *d) {
  char where[1100];
  snprintf(where, sizeof(where), "%s:%u:%u", file, v->line, v->col);
  char num[64];
  const char *text = NULL;
  switch (v->type) {
  case GC_NULL: text = k->type == T_STR ? "" : NULL; break;
  case GC_STR:
    if (k->type == T_INT || k->type == T_NUM || k->type == T_BOOL)
      text = NULL; /* a quoted number or bool is a type error, as in Kubernetes */
    else
      text = v->u.s;
    break;
  case GC_BOOL:
    if (k->type == T_BOOL)
      text = v->u.b ? "true" : "false";
    break;
  case GC_INT:
  case GC_FLOAT:
    if (k->type == T_INT || k->type == T_NUM || k->type == T_DUR) {
      if (v->text)
        text = v->text;
      else if (v->type == GC_INT) {
        snprintf(num, sizeof(num), "%lld", (long long)v->u.i);
        text = num;
      } else {
        snprintf(num, sizeof(num), "%.17g", v->u.f);
        text = num;
      }
    }
    break;
  case GC_SEQ:
    if (k->type == T_LIST)
      return set_list(c, k, v, file, d);
    break;
  default: break;
  }
  if (!text) {
    static const char *const want[] = {"a string", "a boolean", "an integer", "a number",
                                       "a duration", "a string", "a string", "a string",
                                       "a string", "a string", "a list of strings"};
    gc_diags_addf(d, "%s: %s: must be %s, not %s", where, k->path, want[k->type],
                  gc_type_name(v->type));
    return GC_EINVAL;
  }
  if (v->type == GC_STR && strlen(text) != v->len) {
    gc_diags_addf(d, "%s: %s: must not contain NUL bytes", where, k->path);
    return GC_EINVAL;
  }
  return set_text(c, k, text, where, d);
}

static int walk(struct gb_config *c, const struct gc_value *m, const char *prefix,
                const char *file, int depth, struct gc_diags *d) {
  int rc = 0;
  for (size_t i = 0; i < m->len; i++) {
    const struct gc_member *mem = &m->u.members[i];
    char path[256];
    if (mem->key_len != strlen(mem->key) ||
        (size_t)snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", mem->key) >=
            sizeof(path)) {
      gc_diags_addf(d, "%s:%u:%u: unknown configuration key", file, mem->value->line,
                    mem->value->col);
      rc = GC_EINVAL;
      continue;
    }
    if (depth == 0 && (!strcmp(path, "apiVersion") || !strcmp(path, "kind")))
      continue;
    const struct key_def *k = find_key(path);
    if (k) {
      int r = set_from_value(c, k, mem->value, file, d);
      if (r && !rc)
        rc = r;
    } else if (is_section(path)) {
      if (mem->value->type == GC_NULL)
        continue;
      if (mem->value->type != GC_MAP) {
        gc_diags_addf(d, "%s:%u:%u: %s: must be a map, not %s", file, mem->value->line,
                      mem->value->col, path, gc_type_name(mem->value->type));
        rc = GC_EINVAL;
        continue;
      }
      int r = walk(c, mem->value, path, file, depth + 1, d);
      if (r && !rc)
        rc = r;
    } else {
      gc_diags_addf(d, "%s:%u:%u: unknown configuration key \"%s\" (see docs/operating.md)", file,
                    mem->value->line, mem->value->col, path);
      rc = GC_EINVAL;
    }
  }
  return rc;
}

static int load_docset(struct gb_config *c, struct gb_docset *ds, int lrc, struct gc_diags *d) {
  if (lrc)
    return lrc;
  if (ds->n != 1) {
    gc_diags_addf(d, "%s: a config file holds exactly one YAML document (found %zu)",
                  ds->n ? ds->docs[0].file : "config", ds->n);
    return GC_EINVAL;
  }
  const struct gb_doc *doc = &ds->docs[0];
  int rc = walk(c, doc->root, "", doc->file, 0, d);
  if (!rc) {
    const char *s = gc_arena_strdup(c->arena, doc->file);
    if (!s)
      return GC_ENOMEM;
    c->source = s;
  }
  return rc;
}

int gb_config_load_file(struct gb_config *c, const char *path, struct gc_diags *d) {
  struct gb_limits lim = {GB_CONFIG_MAX_BYTES, GB_CONFIG_MAX_BYTES, 16, 100000, 4};
  struct gb_docset *ds = gb_docset_new(&lim);
  if (!ds)
    return GC_ENOMEM;
  int rc = load_docset(c, ds, gb_load_path(ds, path, d), d);
  gb_docset_free(ds);
  return rc;
}

int gb_config_load_buffer(struct gb_config *c, const char *name, const char *buf, size_t len,
                          struct gc_diags *d) {
  struct gb_limits lim = {GB_CONFIG_MAX_BYTES, GB_CONFIG_MAX_BYTES, 16, 100000, 4};
  struct gb_docset *ds = gb_docset_new(&lim);
  if (!ds)
    return GC_ENOMEM;
  int rc = load_docset(c, ds, gb_load_buffer(ds, name, buf, len, d), d);
  gb_docset_free(ds);
  return rc;
}

/* ---- validation -------------------------------------------------------------- */

int gb_config_split_addr(const char *addr, char *host, size_t cap, unsigned *port) {
  if (!addr || !*addr)
    return GC_EINVAL;
  const char *colon = strrchr(addr, ':');
  if (!colon)
    return GC_EINVAL;
  const char *h = addr;
  size_t hl = (size_t)(colon - addr);
  if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
    h++;
    hl -= 2;
  } else if (memchr(h, ':', hl)) {
    return GC_EINVAL; /* a bare IPv6 address needs brackets */
  }
  if (hl == 0 || hl >= cap)
    return GC_EINVAL;
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (errno || end == colon + 1 || *end || p < 0 || p > 65535)
    return GC_EINVAL;
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = (unsigned)p;
  return 0;
}

static int check_addr(const char *key, const char *addr, struct gc_diags *d) {
  char host[128];
  unsigned port;
  if (!*addr)
    return 0;
  if (gb_config_split_addr(addr, host, sizeof(host), &port)) {
    gc_diags_addf(d, "%s: \"%.128s\" is not HOST:PORT (numeric host; [V6]:PORT for IPv6)", key,
                  addr);
    return GC_EINVAL;
  }
  return 0;
}

/* Splits a T_LIST key's text (comma-separated) into arena strings, each
 * checked with is_ok (what names it in a message) and unique, at most max
 * (plural names them in that message).
 * Returns 0 (*out NULL and *n 0 for ""), GC_EINVAL or GC_ENOMEM. */
static int split_list(struct gb_config *c, const char *key, const char *t, size_t max,
                      const char *plural, int (*is_ok)(const char *, size_t), const char *what,
                      const char ***out, size_t *n_out, struct gc_diags *d) {
  *out = NULL;
  *n_out = 0;
  if (!t || !*t)
    return 0;
  size_t n = 1;
  for (const char *p = t; *p; p++)
    n += *p == ',';
  if (n > max) {
    gc_diags_addf(d, "%s: at most %zu %s, not %zu", key, max, plural, n);
    return GC_EINVAL;
  }
  const char **lv = gc_arena_alloc(c->arena, n * sizeof(*lv));
  if (!lv)
    return GC_ENOMEM;
  int rc = 0;
  const char *p = t;
  for (size_t i = 0; i < n; i++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char *item = gc_arena_alloc(c->arena, len + 1);
    if (!item)
      return GC_ENOMEM;
    memcpy(item, p, len);
    item[len] = '\0';
    lv[i] = item;
    if (!is_ok(item, len)) {
      gc_diags_addf(d, "%s[%zu]: \"%.64s\" is not %s", key, i, item, what);
      rc = GC_EINVAL;
    }
    for (size_t j = 0; j < i && !rc; j++)
      if (!strcmp(lv[j], item)) {
        gc_diags_addf(d, "%s[%zu]: \"%.64s\" is listed twice", key, i, item);
        rc = GC_EINVAL;
      }
    p = e ? e + 1 : p + len;
  }
  if (!rc) {
    *out = lv;
    *n_out = n;
  }
  return rc;
}

/* topology.levels: node label keys, unique, at most GC_TOPOLOGY_MAX_LEVELS;
 * kube.watchNamespaces: namespace names, unique, at most 256. */
static int parse_levels(struct gb_config *c, struct gc_diags *d) {
  int rc = split_list(c, "topology.levels", c->topology_levels_text, GC_TOPOLOGY_MAX_LEVELS,
                      "levels", gc_name_is_qualified, "a node label key", &c->topology_levels,
                      &c->n_topology_levels, d);
  if (rc == GC_ENOMEM)
    return rc;
  int rc2 = split_list(c, "kube.watchNamespaces", c->watch_namespaces_text, 256,
                       "namespaces", gc_name_is_dns1123_label, "a namespace name", &c->watch_namespaces,
                       &c->n_watch_namespaces, d);
  return rc2 ? rc2 : rc;
}

/* The policy keys, checked with gangcalc's own rules so that serve refuses
 * a default every TrainJob would then fail on. */
static int check_policy(struct gb_config *c, struct gc_diags *d) {
  char msg[512];
  int64_t secs = 0;
  int rc = parse_levels(c, d);
  if (rc == GC_ENOMEM)
    return rc;
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
  c->timeout_until_ready = !strcmp(c->timeout_until, "ready");
  if (!c->timeout_until_ready && strcmp(c->timeout_until, "scheduled") != 0) {
    gc_diags_addf(d, "timeouts.until: must be scheduled or ready, not \"%.64s\"",
                  c->timeout_until);
    rc = GC_EINVAL;
  }
  if (gc_policy_topology_default_check(c->topology_default, msg, sizeof(msg))) {
    gc_diags_addf(d, "topology.default: %s", msg);
    rc = GC_EINVAL;
  }
  return rc;
}

int gb_config_validate(struct gb_config *c, struct gc_diags *d) {
  int rc = check_policy(c, d);
  if (rc == GC_ENOMEM)
    return rc;
  if (check_addr("http.address", c->http_address, d) ||
      check_addr("webhook.address", c->webhook_address, d) ||
      check_addr("grpc.address", c->grpc_address, d))
    rc = GC_EINVAL;
  if (!*c->grpc_tls_cert != !*c->grpc_tls_key) {
    gc_diags_addf(d, "grpc.tlsCert (--grpc-tls-cert) and grpc.tlsKey (--grpc-tls-key) go "
                     "together");
    rc = GC_EINVAL;
  }
  if (*c->grpc_client_ca && !*c->grpc_tls_cert) {
    gc_diags_addf(d, "grpc.clientCA needs grpc.tlsCert and grpc.tlsKey");
    rc = GC_EINVAL;
  }
  if (check_addr("sched.address", c->sched_address, d) ||
      check_addr("placement.debugAddress", c->placement_debug_address, d))
    rc = GC_EINVAL;
  if (!*c->sched_tls_cert != !*c->sched_tls_key) {
    gc_diags_addf(d, "sched.tlsCert and sched.tlsKey go together");
    rc = GC_EINVAL;
  }
  if (*c->sched_client_ca && !*c->sched_tls_cert) {
    gc_diags_addf(d, "sched.clientCA needs sched.tlsCert and sched.tlsKey");
    rc = GC_EINVAL;
  }
  if (c->sched_volcano_prefix[0] != '/' || c->sched_kube_prefix[0] != '/' ||
      !strcmp(c->sched_volcano_prefix, c->sched_kube_prefix)) {
    gc_diags_addf(d, "sched.volcanoPrefix and sched.kubePrefix: must start with '/' and differ");
    rc = GC_EINVAL;
  }
  if (!*c->webhook_tls_cert != !*c->webhook_tls_key) {
    gc_diags_addf(d, "webhook.tlsCert and webhook.tlsKey go together");
    rc = GC_EINVAL;
  }
  if (c->webhook_path[0] != '/') {
    gc_diags_addf(d, "webhook.path: must start with '/'");
    rc = GC_EINVAL;
  }
  if (!*c->http_address) {
    gc_diags_addf(d, "http.address: must be set (probes and metrics)");
    rc = GC_EINVAL;
  }
  if (c->queue_max_delay_s < c->queue_base_delay_s) {
    gc_diags_addf(d, "controller.queueMaxDelay must not be below controller.queueBaseDelay");
    rc = GC_EINVAL;
  }
  if (c->leader_elect && !(c->lease_duration_s > c->renew_deadline_s &&
                           c->renew_deadline_s > c->retry_period_s)) {
    gc_diags_addf(d, "leaderElection: leaseDuration > renewDeadline > retryPeriod is required");
    rc = GC_EINVAL;
  }
  if (c->leader_elect && !*c->lease_name) {
    gc_diags_addf(d, "leaderElection.name: must not be empty");
    rc = GC_EINVAL;
  }
  if (strcmp(c->placement_profile, "bestfit") && strcmp(c->placement_profile, "spread")) {
    gc_diags_addf(d, "placement.profile: \"%s\" is not bestfit or spread", c->placement_profile);
    rc = GC_EINVAL;
  }
  memset(&c->ns_sel, 0, sizeof(c->ns_sel));
  memset(&c->optin_sel, 0, sizeof(c->optin_sel));
  if (c->select_mode == GB_SELECT_NAMESPACE && !*c->namespace_selector) {
    gc_diags_addf(d, "selection.namespaceSelector: required with selection.mode "
                     "namespaceSelector");
    rc = GC_EINVAL;
  } else if (gb_selector_parse(c->arena, c->namespace_selector, &c->ns_sel, d)) {
    gc_diags_addf(d, "selection.namespaceSelector: not a valid label selector");
    rc = GC_EINVAL;
  }
  if (c->select_mode == GB_SELECT_OPTIN && !*c->opt_in_label) {
    gc_diags_addf(d, "selection.optInLabel: required with selection.mode optIn");
    rc = GC_EINVAL;
  } else if (gb_selector_parse(c->arena, c->opt_in_label, &c->optin_sel, d)) {
    gc_diags_addf(d, "selection.optInLabel: not a valid label selector");
    rc = GC_EINVAL;
  }
  return rc;
}

/* ---- flags ---------------------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: gangbridge serve [--config FILE] [options]\n"
          "       gangbridge serve --offline --grpc-addr HOST:PORT [options]  (no cluster)\n"
          "\n"
          "Runs the controller: watches TrainJobs and keeps one PodGroup per gang,\n"
          "serves the pod-binding webhook, /metrics, /healthz and /readyz, and\n"
          "(with --grpc-addr) the gRPC API.  Stops gracefully on SIGTERM or SIGINT.\n"
          "\n"
          "  --config FILE             YAML configuration file (read first)\n"
          "  --set KEY=VALUE           set any configuration key (repeatable)\n"
          "  --print-config            print the effective configuration and exit\n");
  for (size_t i = 0; i < N_KEYS; i++)
    if (KEYS[i].flag)
      fprintf(f, "  --%-23s %s (default \"%s\")\n", KEYS[i].flag, KEYS[i].path, KEYS[i].def);
  fprintf(f, "  -h, --help                show this help\n"
             "\nEvery key and default: docs/operating.md.\n");
}

int gb_config_parse_args(struct gb_config *c, int argc, char **argv, FILE *out,
                         struct gc_diags *d) {
  int rc = 0, print = 0;
  /* --config first, so flags override the file wherever they appear. */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *file = NULL;
    if (!strcmp(a, "--config")) {
      if (i + 1 >= argc) {
        gc_diags_addf(d, "option '--config' needs a value");
        return GC_EUSAGE;
      }
      file = argv[++i];
    } else if (!strncmp(a, "--config=", 9)) {
      file = a + 9;
    } else if (!strcmp(a, "--")) {
      break;
    }
    if (file && (rc = gb_config_load_file(c, file, d)))
      return rc == GC_ENOMEM ? rc : GC_EINVAL;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(out);
      return 1;
    }
    if (!strcmp(a, "--print-config")) {
      print = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0 || !a[2]) {
      gc_diags_addf(d, "unexpected argument '%.128s'", a);
      return GC_EUSAGE;
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    const char *val = eq ? eq + 1 : NULL;
    int is_config = nlen == 6 && !strncmp(name, "config", 6);
    int is_set = nlen == 3 && !strncmp(name, "set", 3);
    const struct key_def *k = NULL;
    for (size_t j = 0; !is_config && !is_set && j < N_KEYS; j++)
      if (KEYS[j].flag && strlen(KEYS[j].flag) == nlen && !strncmp(KEYS[j].flag, name, nlen))
        k = &KEYS[j];
    if (!is_config && !is_set && !k) {
      gc_diags_addf(d, "unknown option '%.128s'", a);
      return GC_EUSAGE;
    }
    if (!val) {
      /* Boolean flags may stand alone ("--leader-elect"). */
      if (k && k->type == T_BOOL && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0 ||
                                     parse_bool(argv[i + 1], &(int){0}))) {
        val = "true";
      } else {
        if (i + 1 >= argc) {
          gc_diags_addf(d, "option '--%.*s' needs a value", (int)nlen, name);
          return GC_EUSAGE;
        }
        val = argv[++i];
      }
    }
    if (is_config)
      continue;
    if (is_set) {
      const char *e = strchr(val, '=');
      char key[128];
      if (!e || (size_t)(e - val) >= sizeof(key)) {
        gc_diags_addf(d, "--set needs KEY=VALUE, not '%.128s'", val);
        return GC_EUSAGE;
      }
      memcpy(key, val, (size_t)(e - val));
      key[e - val] = '\0';
      if ((rc = gb_config_set(c, key, e + 1, d)))
        return rc == GC_ENOTFOUND ? GC_EUSAGE : rc;
      continue;
    }
    char where[160];
    snprintf(where, sizeof(where), "--%.*s", (int)nlen, name);
    if ((rc = set_text(c, k, val, where, d)))
      return rc;
  }
  return print ? 2 : 0;
}

/* ---- output ------------------------------------------------------------------------ */

static void write_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\x%02x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

/* A T_LIST value (comma-separated) as a YAML flow list of strings. */
static void write_list(FILE *f, const char *s) {
  fputc('[', f);
  while (*s) {
    const char *e = strchr(s, ',');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char item[4097];
    snprintf(item, sizeof(item), "%.*s", (int)n, s);
    write_str(f, item);
    s += n;
    if (*s) {
      fputs(", ", f);
      s++;
    }
  }
  fputc(']', f);
}

void gb_config_write(const struct gb_config *c, FILE *f) {
  const char *prev = "";
  size_t prev_len = 0;
  for (size_t i = 0; i < N_KEYS; i++) {
    const struct key_def *k = &KEYS[i];
    /* Open every section that differs from the previous key's. */
    const char *p = k->path;
    size_t common = 0; /* length of the shared section prefix, ending at a '.' */
    for (size_t j = 0; j < prev_len && p[j] && p[j] == prev[j]; j++)
      if (p[j] == '.')
        common = j + 1;
    int depth = 0;
    for (size_t j = 0; j < common; j++)
      if (p[j] == '.')
        depth++;
    const char *seg = p + common;
    for (;;) {
      const char *dot = strchr(seg, '.');
      if (!dot)
        break;
      fprintf(f, "%*s%.*s:\n", depth * 2, "", (int)(dot - seg), seg);
      depth++;
      seg = dot + 1;
    }
    fprintf(f, "%*s%s: ", depth * 2, "", seg);
    const char *base = (const char *)c + k->off;
    switch (k->type) {
    case T_LIST: write_list(f, *(const char *const *)(const void *)base); break;
    case T_STR: write_str(f, *(const char *const *)(const void *)base); break;
    case T_BOOL: fputs(*(const int *)(const void *)base ? "true" : "false", f); break;
    case T_INT: fprintf(f, "%d", *(const int *)(const void *)base); break;
    case T_NUM: fprintf(f, "%g", *(const double *)(const void *)base); break;
    case T_DUR: fprintf(f, "%gs", *(const double *)(const void *)base); break;
    case T_LEVEL:
      fputs(gb_log_level_name(*(const enum gb_log_level *)(const void *)base), f);
      break;
    case T_FORMAT:
      fputs(*(const enum gb_log_format *)(const void *)base == GB_LOG_JSON ? "json" : "text", f);
      break;
    case T_BACKEND:
      fputs(gb_backend_choice_name(*(const enum gb_backend_choice *)(const void *)base), f);
      break;
    case T_SCOPE:
      fputs(*(const enum gc_scope *)(const void *)base == GC_SCOPE_ALL ? "all" : "wave", f);
      break;
    case T_SELECT:
      fputs(gb_select_mode_name(*(const enum gb_select_mode *)(const void *)base), f);
      break;
    case T_TOACTION:
      fputs(gb_timeout_action_name(*(const enum gb_timeout_action *)(const void *)base), f);
      break;
    }
    fputc('\n', f);
    prev = p;
    prev_len = strlen(p);
  }
}
