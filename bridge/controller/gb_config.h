/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_config: the controller layer's keys in serve's configuration, each
 * struct with its key table (base/gb_opt.h) and its rules.  struct
 * gb_config is the TrainJob controller's own: scheduling.* (the backend,
 * the gang scope, scheduler names, discovery), selection.* (which
 * TrainJobs), podGroups.*, controller.* (workers, the work queue's rate
 * limiter, resync) and the policy defaults timeouts.default, timeouts.max
 * and topology.* (gangcalc's gc_policy checks them).  struct
 * gb_webhook_options holds webhook.* (the pod-binding webhook's server and
 * its answers).  The loader (doc/gb_options) fills them; serve's
 * configuration (cli/gb_serve_config) stitches them with every other
 * layer's.  The namespaceSelector and the opt-in label are read with
 * kube/'s gb_selector (the one selector parser).  docs/operating.md
 * documents every key and default.
 */
#ifndef GB_CONFIG_H
#define GB_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "gb_opt.h"
#include "gb_selector.h"
#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_gang.h"
#include "gc_value.h"

enum gb_select_mode { GB_SELECT_UNMANAGED = 0, GB_SELECT_NAMESPACE, GB_SELECT_OPTIN };

/* ---- the controller's options ------------------------------------------------ */

struct gb_config {
  /* scheduling (the backends are gangcalc's table, gc_backend.h) */
  int backend_choice; /* scheduling.backend: 0 auto, else gc_backend_index + 1
                         (gb_config_backend gives the descriptor) */
  enum gc_scope gang_scope;
  /* scheduling.schedulerNames.<backend>, by gc_backend_index; "": leave
   * spec.schedulerName alone. */
  const char *scheduler_names[GC_BACKEND_MAX];
  double discovery_interval_s;
  int watch_crds;

  /* selection */
  enum gb_select_mode select_mode;
  const char *namespace_selector;
  const char *opt_in_label;
  int take_over_trainer_policies;
  struct gb_selector ns_sel; /* parsed by the table's check */
  struct gb_selector optin_sel;

  /* podGroups */
  int delete_on_finish;
  int update_while_running; /* accepted, no effect: a PodGroup never changes under gang pods */

  /* controller */
  int workers;
  double queue_base_delay_s;
  double queue_max_delay_s;
  double queue_qps; /* -1: none (never 0) */
  int queue_burst;
  double resync_s; /* 0: none */

  /* timeouts (policy: the gang timeout when no TrainJob, runtime, Namespace
   * or Queue gives one; gangcalc's gc_policy checks it) */
  const char *timeout_default; /* Go duration, "": none */
  const char *timeout_max;     /* Go duration, "": none; the platform's ceiling */

  /* topology (policy) */
  struct gb_opt_list topology_levels; /* node label keys, top first, each once */
  const char *topology_default;       /* "required:VALUE" / "preferred:VALUE", "": none */
};
/* The controller's keys: one scheduling.schedulerNames.<name> key per
 * backend of the table and scheduling.backend's values are made from it
 * (built once; thread-safe). */
const struct gb_opt_table *gb_config_table(void);

/* webhook.* ("" address: no webhook server) */
struct gb_webhook_options {
  const char *address;
  const char *tls_cert;
  const char *tls_key;
  const char *path;
  int allow_on_error;
  int deny_on_mismatch;
  int threads;
  int max_connections;
  int max_per_ip;          /* 0: no per-address cap */
  double header_timeout_s; /* TLS handshake + headers, in total */
  int max_body_total;      /* review bodies held at once, all requests */
};
extern const struct gb_opt_table gb_config_webhook_table;

/* Names for values: scheduling.backend (a backend's name, "auto" for NULL);
 * selection.mode ("unmanaged", "namespaceSelector", "optIn"). */
const char *gb_config_backend_choice_name(const struct gc_backend *b);
/* scheduling.backend as a descriptor; NULL: auto. */
const struct gc_backend *gb_config_backend(const struct gb_config *c);

#endif
