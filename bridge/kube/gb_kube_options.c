/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_options: the kube layer's keys (see the header).
 */
#include <string.h>

#include "gb_kube_options.h"
#include "gc_name.h"

static const struct gb_opt_items namespaces = {256, "namespaces", gc_name_is_dns1123_label,
                                               "a namespace name"};

#define S struct gb_kube_options
static const struct gb_opt kube_keys[] = {
    GB_KEY_STR(S, "kube.kubeconfig", kubeconfig, "", "kubeconfig",
               "kubeconfig file; empty: $KUBECONFIG (first file), in cluster, ~/.kube/config"),
    GB_KEY_STR(S, "kube.context", context, "", "context",
               "kubeconfig context; empty: current-context"),
    GB_KEY_NUM(S, "kube.qps", qps, -1, 100000, "50", "kube-qps",
               "API request rate (token bucket); -1: unlimited"),
    GB_KEY_INT(S, "kube.burst", burst, 1, 100000, "100", "kube-burst", "token bucket size"),
    GB_KEY_DUR(S, "kube.connectTimeout", connect_timeout_s, 0.1, 600, "5s", NULL,
               "TCP/TLS connect timeout"),
    GB_KEY_DUR(S, "kube.requestTimeout", request_timeout_s, 0.1, 3600, "30s", NULL,
               "timeout of one non-watch request"),
    GB_KEY_DUR(S, "kube.watchTimeout", watch_timeout_s, 1, 3600, "5m", NULL,
               "minimum watch timeoutSeconds; each watch picks one in [min, 2 min)"),
    GB_KEY_LIST(S, "kube.watchNamespaces", watch_namespaces, &namespaces, "", NULL,
                "the only namespaces whose TrainJobs, runtimes, JobSet pods and PodGroups are "
                "watched; empty: every namespace"),
};

/* A rate of 0 is refused: the client would read it as its default (50),
 * which is not what was written. */
static int kube_check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_kube_options *o = opts;
  (void)a;
  if (o->qps == 0) {
    gc_diags_addf(d, "kube.qps: must not be 0 (-1 is unlimited)");
    return GC_EINVAL;
  }
  return 0;
}

const struct gb_opt_table gb_kube_options_table = GB_OPT_TABLE(
    "kube", "Kubernetes client and informers", S, kube_keys, kube_check);
#undef S

#define S struct gb_leader_options
static const struct gb_opt leader_keys[] = {
    GB_KEY_BOOL(S, "leaderElection.enabled", enabled, "false", "leader-elect",
                "elect a leader on a Lease; only the leader writes"),
    GB_KEY_STR(S, "leaderElection.namespace", lease_namespace, "", NULL,
               "Lease namespace; empty: $POD_NAMESPACE, the kubeconfig's or default"),
    GB_KEY_STR(S, "leaderElection.name", lease_name, "gangbridge", NULL, "Lease name"),
    GB_KEY_DUR(S, "leaderElection.leaseDuration", lease_duration_s, 1, 3600, "15s", NULL,
               "client-go's leaseDuration (> renewDeadline)"),
    GB_KEY_DUR(S, "leaderElection.renewDeadline", renew_deadline_s, 1, 3600, "10s", NULL,
               "client-go's renewDeadline (> retryPeriod)"),
    GB_KEY_DUR(S, "leaderElection.retryPeriod", retry_period_s, 0.1, 3600, "2s", NULL,
               "client-go's retryPeriod"),
};

static int leader_check(void *opts, struct gc_arena *a, struct gc_diags *d) {
  const struct gb_leader_options *o = opts;
  int rc = 0;
  (void)a;
  if (o->enabled &&
      !(o->lease_duration_s > o->renew_deadline_s && o->renew_deadline_s > o->retry_period_s)) {
    gc_diags_addf(d, "leaderElection: leaseDuration > renewDeadline > retryPeriod is required");
    rc = GC_EINVAL;
  }
  if (o->enabled && !*o->lease_name) {
    gc_diags_addf(d, "leaderElection.name: must not be empty");
    rc = GC_EINVAL;
  }
  return rc;
}

const struct gb_opt_table gb_kube_options_leader_table = GB_OPT_TABLE("kube", "Leader election", S,
                                                                      leader_keys, leader_check);
#undef S

#define S struct gb_events_options
static const struct gb_opt events_keys[] = {
    GB_KEY_DUR(S, "events.minInterval", min_interval_s, 0, 86400, "60s", NULL,
               "a repeat of the same Event within this time is only counted; 0s: every repeat "
               "is written"),
};

const struct gb_opt_table gb_kube_options_events_table = GB_OPT_TABLE("kube", "Events", S,
                                                                      events_keys, NULL);
#undef S
