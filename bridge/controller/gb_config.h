/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_config: the configuration of `gangbridge serve` (controller mode).  It
 * owns every setting, its default, the YAML config file (read with the
 * manifest loader, so errors carry file:line:col) and the command-line
 * flags, which override the file.  Every key is a dotted path in one table
 * (gb_config_keys); `--set KEY=VALUE` sets any of them, and the common ones
 * have their own flags.  gb_config_write prints the effective configuration
 * as YAML (`serve --print-config`).  The namespaceSelector and the opt-in
 * label are read with kube/'s gb_selector.  docs/operating.md documents every key and default.
 */
#ifndef GB_CONFIG_H
#define GB_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "gb_log.h"
#include "gb_selector.h"
#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_gang.h"
#include "gc_value.h"

/* Largest config file accepted. */
#define GB_CONFIG_MAX_BYTES (1u << 20)

enum gb_backend_choice { GB_CHOICE_AUTO = 0, GB_CHOICE_VOLCANO, GB_CHOICE_COSCHEDULING };
enum gb_select_mode { GB_SELECT_UNMANAGED = 0, GB_SELECT_NAMESPACE, GB_SELECT_OPTIN };

/* timeouts.action: what happens when a gang's timeout passes. */
enum gb_timeout_action { GB_TIMEOUT_EVENT = 0, GB_TIMEOUT_NONE, GB_TIMEOUT_REQUEUE };
const char *gb_timeout_action_name(enum gb_timeout_action a);

/* ---- configuration ---------------------------------------------------------- */

struct gb_config {
  struct gc_arena *arena; /* owns every string below */
  const char *source;     /* the config file read, or NULL */

  /* kube */
  const char *kubeconfig; /* "" : KUBECONFIG, in-cluster, ~/.kube/config */
  const char *context;    /* "" : current-context */
  double kube_qps;
  int kube_burst;
  double kube_connect_timeout_s;
  double kube_request_timeout_s;
  double kube_watch_timeout_s; /* informers' minimum watch timeoutSeconds */

  /* log */
  enum gb_log_level log_level;
  enum gb_log_format log_format;

  /* grpc ("" address: no gRPC server) */
  const char *grpc_address;
  const char *grpc_tls_cert;
  const char *grpc_tls_key;
  const char *grpc_client_ca;
  int grpc_threads;
  int grpc_max_message_bytes;
  double grpc_grace_s;
  int grpc_memory_budget_mib;      /* estimated memory of heavy calls in flight, MiB */
  double grpc_handshake_timeout_s; /* connections must finish TLS + HTTP/2 preface by then */
  double grpc_self_check_s;        /* listener self-check interval; 0: off */
  int grpc_allow_snapshot_writes; /* ReplaceSnapshot/UpdateNodes over gRPC (off: the cluster feeds it) */

  /* http: /metrics, /healthz, /livez, /readyz */
  const char *http_address;
  int http_max_connections;
  int http_max_per_ip;          /* 0: no per-address cap */
  double http_header_timeout_s; /* TLS handshake + headers, in total */

  /* webhook ("" address: no webhook server) */
  const char *webhook_address;
  const char *webhook_tls_cert;
  const char *webhook_tls_key;
  const char *webhook_path;
  int webhook_allow_on_error;
  int webhook_deny_on_mismatch;
  int webhook_threads;
  int webhook_max_connections;
  int webhook_max_per_ip;          /* 0: no per-address cap */
  double webhook_header_timeout_s; /* TLS handshake + headers, in total */
  int webhook_max_body_total;      /* review bodies held at once, all requests */

  /* sched: the scheduler endpoints ("" address: off; docs/scheduler-integration.md) */
  const char *sched_address;
  const char *sched_tls_cert;
  const char *sched_tls_key;
  const char *sched_client_ca; /* PEM CA: only clients with a certificate it verifies are served */
  const char *sched_volcano_prefix;
  const char *sched_kube_prefix;
  int sched_max_body;          /* bytes: predicate, allocate, filter, kube prioritize */
  int sched_max_list_body;     /* bytes: Volcano prioritize and jobEnqueueable */
  int sched_max_session_mib;   /* MiB: onSessionOpen, read and dropped */
  int sched_threads;
  int sched_max_connections;
  int sched_max_per_ip;        /* 0: no per-address cap */
  double sched_header_timeout_s;

  /* scheduling */
  enum gb_backend_choice backend;
  enum gc_scope gang_scope;
  const char *scheduler_volcano;      /* "" : leave spec.schedulerName alone */
  const char *scheduler_coscheduling;
  double discovery_interval_s;
  int watch_crds;

  /* selection */
  enum gb_select_mode select_mode;
  const char *namespace_selector;
  const char *opt_in_label;
  int take_over_trainer_policies;
  struct gb_selector ns_sel;    /* parsed by gb_config_validate */
  struct gb_selector optin_sel;

  /* podGroups */
  int delete_on_finish;
  int update_while_running; /* accepted, no effect: a PodGroup never changes under gang pods */

  /* controller */
  int workers;
  double queue_base_delay_s;
  double queue_max_delay_s;
  double queue_qps;
  int queue_burst;
  double resync_s; /* 0: none */

  /* events */
  double event_min_interval_s;

  /* leaderElection */
  int leader_elect;
  const char *lease_namespace; /* "" : the pod's namespace (POD_NAMESPACE) or "default" */
  const char *lease_name;
  double lease_duration_s;
  double renew_deadline_s;
  double retry_period_s;

  /* placement (bridge/placement/) */
  int placement_enabled;
  double placement_release_timeout_s; /* released pods unscheduled past it: PlacementRaced */
  double placement_starvation_guard_s; /* a gang waiting longer holds back younger ones */
  double placement_starvation_guard_max_s; /* ... for at most this long */
  const char *placement_profile;       /* "bestfit" or "spread" (validated) */
  int placement_max_inflight;          /* release PATCHes in flight at once */
  double placement_stray_grace_s;      /* a gate gangbridge does not hold goes after this */
  /* /debug/placement's own HTTP server ("": none); never the probes' port:
   * it lists every tenant's gangs. */
  const char *placement_debug_address;

  /* timeouts (policy: the gang timeout when no TrainJob, runtime, Namespace
   * or Queue gives one; gangcalc's gc_policy checks it) */
  const char *timeout_default; /* Go duration, "": none */
  const char *timeout_max;     /* Go duration, "": none; the platform's ceiling */

  /* topology (policy) */
  const char *topology_levels_text; /* node label keys, top first, comma-separated */
  /* kube.watchNamespaces: "" (every namespace, a ClusterRole) or the only
   * namespaces whose TrainJobs, runtimes, JobSet pods and PodGroups are
   * watched (a Role per namespace); parsed by gb_config_validate. */
  const char *watch_namespaces_text;
  const char **watch_namespaces;
  size_t n_watch_namespaces;
  const char *topology_default;     /* "required:VALUE" / "preferred:VALUE", "": none */
  const char **topology_levels;     /* parsed by gb_config_validate (arena) */
  size_t n_topology_levels;

  /* timeouts (the tracker's keys; timeouts.default belongs to the policy) */
  enum gb_timeout_action timeout_action;
  double requeue_base_delay_s;
  double requeue_max_delay_s;
  int requeue_max_attempts;
  int timeout_max_queues; /* queues labelled by name; the rest fold into "other" */
  int timeout_max_gangs;  /* gangs tracked at most */
  const char *timeout_until; /* "scheduled" or "ready": what ends a gang's wait */
  int timeout_until_ready;   /* timeouts.until is "ready" (set by gb_config_validate) */
};

/* Initialises c with every default.  Returns 0 or GC_ENOMEM.  Free with
 * gb_config_destroy. */
int gb_config_init(struct gb_config *c);
void gb_config_destroy(struct gb_config *c);

/* Reads a YAML (or JSON) config file over the current values.  Unknown keys
 * and wrong types are errors ("file:line:col: key: message").  Returns 0,
 * GC_EINVAL, GC_EIO, GC_ELIMIT or GC_ENOMEM. */
int gb_config_load_file(struct gb_config *c, const char *path, struct gc_diags *d);
int gb_config_load_buffer(struct gb_config *c, const char *name, const char *buf, size_t len,
                          struct gc_diags *d);

/* Sets one key from text (as --set KEY=VALUE does).  Returns 0, GC_EINVAL or
 * GC_ENOTFOUND (no such key). */
int gb_config_set(struct gb_config *c, const char *key, const char *value, struct gc_diags *d);

/* Checks cross-field rules and parses the selectors.  Returns 0 or GC_EINVAL. */
int gb_config_validate(struct gb_config *c, struct gc_diags *d);

/* Parses serve's controller flags (argv[0] is "serve"): --config FILE is read
 * first wherever it appears, then every other flag in order.  Returns 0, 1
 * for --help (usage printed to out), 2 for --print-config (requested, the
 * caller prints after validation), or GC_EUSAGE / GC_EINVAL (messages in d). */
int gb_config_parse_args(struct gb_config *c, int argc, char **argv, FILE *out,
                         struct gc_diags *d);

/* Writes the effective configuration as YAML (every key). */
void gb_config_write(const struct gb_config *c, FILE *f);

/* Splits "HOST:PORT" or "[V6]:PORT" into host (copied into buf) and port.
 * Returns 0 or GC_EINVAL. */
int gb_config_split_addr(const char *addr, char *host, size_t cap, unsigned *port);

/* Names for enum values ("auto", "volcano", "coscheduling"; "unmanaged",
 * "namespaceSelector", "optIn"). */
const char *gb_backend_choice_name(enum gb_backend_choice b);
const char *gb_select_mode_name(enum gb_select_mode m);

#endif
