/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_policy: the gang timeout and topology policy, and where each comes
 * from.  It owns the precedence of the sources (most specific first: the
 * TrainJob's annotations, the runtime, the Namespace, for the timeout the
 * gang's Queue when its backend has Queue objects, then the configured
 * default), the syntax of every source
 * (Go durations for the timeout; a tier number, tier name or node-label
 * level for the topology) and their checks, with errors naming the source.
 * The context a caller supplies (struct gc_policy_context) carries what the
 * TrainJob and its runtime do not: the Namespace's and Queues' annotations
 * and the configured defaults, so this module stays pure.  The gang
 * computation (gc_gang) calls it; the result is the gang's `timeout` and
 * `topology` fields.  docs/timeouts.md and docs/placement.md describe the
 * rules for users.
 */
#ifndef GC_POLICY_H
#define GC_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "gc_value.h"

struct gc_backend;

/* The annotations gangbridge reads on TrainJobs, runtimes, Namespaces and
 * (the timeout) a backend's Queues. */
#define GC_ANN_SCHEDULE_TIMEOUT "gangbridge.io/schedule-timeout"
/* The gang's member count on a group object whose spec splits it over
 * sub-groups (GC_BCAP_SUBGROUPS): the timeout tracker's quorum. */
#define GC_ANN_MIN_MEMBER "gangbridge.io/min-member"
/* The platform's ceiling on a gang timeout, read on Namespaces and a
 * backend's Queues (never on TrainJobs or runtimes, which tenants write). */
#define GC_ANN_SCHEDULE_TIMEOUT_MAX "gangbridge.io/schedule-timeout-max"
#define GC_ANN_TOPOLOGY_REQUIRED "gangbridge.io/topology-required"
#define GC_ANN_TOPOLOGY_PREFERRED "gangbridge.io/topology-preferred"

/* Longest gang timeout accepted from any source: 30 days.  Longer is no
 * longer a timeout, and the bound keeps every later sum far from overflow. */
#define GC_TIMEOUT_MAX_SECONDS (30LL * 24 * 3600)
/* Highest tier number a topology annotation may name. */
#define GC_TOPOLOGY_MAX_TIER 64
/* Most label levels config topology.levels may list. */
#define GC_TOPOLOGY_MAX_LEVELS 16

/* What the caller knows beyond the TrainJob and its runtime.  Every member
 * is optional (NULL / 0: not known) and borrowed for the duration of
 * gc_gang_compute. */
struct gc_policy_context {
  /* The TrainJob's Namespace's metadata.annotations (a map), or NULL. */
  const struct gc_value *ns_annotations;
  /* The metadata.annotations of backend b's Queue `queue` (b has
   * GC_BCAP_QUEUE and Queue objects), or NULL when the queue or its
   * annotations are unknown.  The result must stay valid until
   * gc_gang_compute returns. */
  const struct gc_value *(*queue_annotations)(void *arg, const struct gc_backend *b,
                                              const char *queue);
  void *queue_arg;
  /* Config timeouts.default: a Go duration, NULL or "" for none. */
  const char *timeout_default;
  /* Config topology.default: "required:VALUE" or "preferred:VALUE" (VALUE
   * as in the annotations), NULL or "" for none. */
  const char *topology_default;
  /* Config topology.levels: node label keys, top level first. */
  const char *const *topology_levels;
  size_t n_topology_levels;
  /* Config timeouts.max: a Go duration, NULL or "" for none.  With the
   * Namespace's and the Queue's gangbridge.io/schedule-timeout-max
   * annotations it bounds the timeout from every source: the smallest of
   * the three present wins, a longer timeout is clamped to it (a
   * GC_WARN_TIMEOUT_CLAMPED warning names both sources), and a gang that
   * has no timeout gets the maximum. */
  const char *timeout_max;
};

/* Checks a timeout text as a policy source does (a Go duration, > 0, at
 * most GC_TIMEOUT_MAX_SECONDS; rounded up to whole seconds).  On success
 * *seconds is set and 0 returned; otherwise GC_EINVAL and msg holds the
 * message after the source's name, e.g. `invalid duration "15x": unknown
 * unit "x"` (always terminated, at most cap bytes). */
int gc_policy_timeout_parse(const char *text, size_t len, int64_t *seconds, char *msg,
                            size_t cap);

/* Checks a topology.default text ("required:VALUE" or "preferred:VALUE",
 * VALUE as in the annotations; "" is none).  Returns 0 or GC_EINVAL with
 * msg as above. */
int gc_policy_topology_default_check(const char *text, char *msg, size_t cap);

#endif
