/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_options: the kube layer's keys in serve's configuration, each
 * struct with its key table (base/gb_opt.h) and its rules: kube.* (the
 * client: kubeconfig, rate, timeouts; the informers: the minimum watch
 * timeout and the namespaces watched), leaderElection.* (the Lease and
 * client-go's timings) and events.* (the Event recorder's repeat interval).
 * serve turns them into gb_kube_client_opts, gb_leader_config and
 * gb_events_opts; the controller and the gate sweeper read the informer
 * keys.  Plain data: strings are owned by the loader (doc/gb_options).
 */
#ifndef GB_KUBE_OPTIONS_H
#define GB_KUBE_OPTIONS_H

#include "gb_opt.h"

/* kube.* */
struct gb_kube_options {
  const char *kubeconfig; /* "": $KUBECONFIG, in cluster, ~/.kube/config */
  const char *context;    /* "": current-context */
  double qps;             /* requests per second; -1: unlimited (never 0) */
  int burst;
  double connect_timeout_s;
  double request_timeout_s;
  double watch_timeout_s; /* the informers' minimum watch timeoutSeconds */
  /* Empty: every namespace (a ClusterRole); else the only namespaces whose
   * TrainJobs, runtimes, JobSet pods and PodGroups are watched (a Role per
   * namespace): namespace names, each once, at most 256. */
  struct gb_opt_list watch_namespaces;
};
extern const struct gb_opt_table gb_kube_options_table;

/* leaderElection.* */
struct gb_leader_options {
  int enabled;
  const char *lease_namespace; /* "": the pod's namespace (POD_NAMESPACE) or "default" */
  const char *lease_name;      /* not empty when enabled */
  /* client-go's timings: lease_duration_s > renew_deadline_s > retry_period_s */
  double lease_duration_s;
  double renew_deadline_s;
  double retry_period_s;
};
extern const struct gb_opt_table gb_kube_options_leader_table;

/* events.* */
struct gb_events_options {
  double min_interval_s; /* a repeat within it is only counted; 0: every repeat written */
};
extern const struct gb_opt_table gb_kube_options_events_table;

#endif
