/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gatesweep: no pod is held by gangbridge's scheduling gate
 * (gangbridge.io/placement) unless gangbridge holds its gang.  It owns the
 * removal of that gate from every other pod, on the leader: with placement
 * disabled, from every gated pod at once (nothing will ever release it); with
 * placement enabled, from a pod that carries the gate but is not a pod of a
 * gang gangbridge places (no JobSet label, a TrainJob gangbridge does not
 * manage, a replicated job outside the gang, a gang without a topology
 * policy: a stray gate set by hand or by a template), once the pod is older
 * than the grace period, so a pod whose TrainJob the caches have not seen
 * yet is not touched.  The removal is the placement release with no
 * restriction (gb_release: one merge patch, only gangbridge's gate
 * removed, other gates kept in order, resourceVersion as precondition, a 409
 * re-read), then a PlacementGateRemoved Event on the pod and
 * gangbridge_placement_gates_removed_total{reason}.  It also owns reading the
 * gated pods from the API (gb_gatesweep_list: unbound pods, paged), which the
 * sweeper uses while placement is disabled (no live model then) and `gangbridge
 * placement status --kubeconfig` uses whatever the configuration.
 *
 * Thread-safety: new/start/stop/free from one thread; kick from any thread.
 * Sweeps run on the sweeper's own thread (or the caller's, for
 * gb_gatesweep_run_once).
 */
#ifndef GB_GATESWEEP_H
#define GB_GATESWEEP_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "gb_events.h"
#include "gb_kube_client.h"
#include "gb_metrics.h"
#include "gb_model.h"
#include "gb_placer.h"

#define GB_GATESWEEP_MAX_GATES 32 /* gate names kept per pod (Kubernetes allows more; rare) */

/* A pod carrying gangbridge's gate, as read from the API (strings borrowed
 * from the pod object for the callback). */
struct gb_gated_pod {
  const char *ns, *name, *uid, *jobset, *rjob;
  const char *created; /* metadata.creationTimestamp text, "" if none */
  int64_t created_ms;  /* the same as Unix ms, 0 when unreadable */
  size_t n_gates;      /* every gate of the pod, ours included */
  const char *gates[GB_GATESWEEP_MAX_GATES];
  size_t index; /* the position of gangbridge's gate in spec.schedulingGates */
};

/* Called per gated pod; return non-zero to stop (gb_gatesweep_list returns it). */
typedef int (*gb_gated_pod_fn)(void *arg, const struct gb_gated_pod *pod, json_object *obj);

/* Lists the unbound pods of namespace ns (NULL: all) page by page
 * (fieldSelector spec.nodeName=) and calls fn for each that carries
 * gangbridge's gate.  Returns 0, fn's first non-zero result, or a GC_E*
 * code with e filled (GC_EIO for an API error). */
int gb_gatesweep_list(struct gb_kube_client *client, const char *ns, gb_gated_pod_fn fn, void *arg,
                      struct gb_kube_error *e);

struct gb_gatesweep_opts {
  struct gb_kube_client *client; /* borrowed; required */
  struct gb_model *model;        /* borrowed: placement enabled (stray gates only);
                                    NULL: placement disabled (every gate goes) */
  gb_placer_gang_fn gang;        /* with a model: the gang of a TrainJob (required then) */
  void *gang_ctx;
  struct gb_events *events;    /* borrowed; NULL: no Events */
  int (*is_leader)(void *ctx); /* NULL: always the leader */
  void *leader_ctx;
  int64_t grace_ms;     /* stray gates younger than this stay; default 30000 */
  int64_t interval_ms;  /* between sweeps; default 10000 */
  size_t max_per_sweep; /* removals per sweep; default 1024 */
  /* kube.watchNamespaces (borrowed): only pods there are touched, since
   * outside them gangbridge writes nothing; 0 namespaces: every one. */
  const char *const *namespaces;
  size_t n_namespaces;
  struct gb_metrics *reg; /* optional: gangbridge_placement_gates_removed_total */
};

struct gb_gatesweep;

/* Creates a stopped sweeper (copies opts, registers its metric).  Returns
 * 0, GC_EINVAL (a required option missing; message in d) or GC_ENOMEM. */
int gb_gatesweep_new(const struct gb_gatesweep_opts *o, struct gb_gatesweep **out,
                     struct gc_diags *d);
/* Starts the sweeper's thread: a sweep at once, then every interval_ms and
 * at each kick.  Returns 0 or GC_ENOMEM. */
int gb_gatesweep_start(struct gb_gatesweep *g);
/* Sweeps soon (call on becoming leader).  Any thread. */
void gb_gatesweep_kick(struct gb_gatesweep *g);
/* Stops the thread (waits for a sweep in progress).  Idempotent. */
void gb_gatesweep_stop(struct gb_gatesweep *g);
/* Stops and frees.  Accepts NULL. */
void gb_gatesweep_free(struct gb_gatesweep *g);

#endif
