/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_selflabel: one label on this process's own Pod (POD_NAMESPACE/POD_NAME
 * from the downward API), kept in step with a wanted state: on while this
 * replica leads, off otherwise.  serve uses it for gangbridge.io/leader=true,
 * which the leader-only Service of the scheduler endpoints selects, so the
 * scheduler reaches the leader and no standby.  A worker thread reads the
 * pod (GET) and writes only when the label differs from what is wanted (a
 * JSON merge patch of metadata.labels, nothing else of the pod), retrying
 * every retry_s until it holds, and re-reads every resync_s so a label
 * added or removed by hand is put right.  gb_selflabel_set never blocks: a
 * leadership callback only changes the wanted state.  At free the label is
 * removed (one attempt of at most 2 s) unless it is known to be off.  A pod
 * that does not exist (404) or may not be read or written (403) cannot
 * carry a label this process set: it counts as off, is logged once, and is
 * re-read every resync_s.
 *
 * The stale-label bound: gb_selflabel_check (a readiness check) fails while
 * the label is wanted off and may still be on: from start until the pod has
 * been read (a label left by an earlier process), and after a removal that
 * has not succeeded within stale_s; so the Service drops a pod that says it
 * leads but does not, even when its API server is unreachable; the window
 * is stale_s plus the readiness probe's periodSeconds x failureThreshold.
 *
 * Thread-safety: set, check and status from any thread; new/start/free from
 * one controlling thread.
 */
#ifndef GB_SELFLABEL_H
#define GB_SELFLABEL_H

#include <stddef.h>
#include <stdint.h>

#include "gb_kube_client.h"
#include "gb_metrics.h"
#include "gc_diag.h"

/* The label serve keeps on the leader's pod; the leader-only Service of the
 * scheduler endpoints (deploy/service.yaml, gangbridge-sched) selects it. */
#define GB_LEADER_LABEL "gangbridge.io/leader"
#define GB_LEADER_LABEL_VALUE "true"

struct gb_selflabel_opts {
  struct gb_kube_client *client; /* borrowed until free; required */
  const char *ns, *pod;          /* this process's pod (copied); required */
  const char *key, *value;       /* the label (copied); key a qualified name */
  double retry_s;                /* after a failed read or write; default 1 */
  double resync_s;               /* re-read the pod this often; default 30 */
  double stale_s;                /* readiness grace for a label wanted off; default 5 */
  long request_timeout_ms;       /* each request; default 5000 */
  struct gb_metric *errors;      /* optional gangbridge_errors_total{component,reason} */
};

struct gb_selflabel;

/* Creates a stopped labeller wanting the label off (copies opts).  Returns
 * 0, GC_EINVAL (a missing option or a key that is not a qualified name,
 * message in d) or GC_ENOMEM. */
int gb_selflabel_new(const struct gb_selflabel_opts *o, struct gb_selflabel **out,
                     struct gc_diags *d);
/* Starts the worker.  Returns 0 or GC_ENOMEM. */
int gb_selflabel_start(struct gb_selflabel *s);
/* Wants the label on (1) or off (0).  Any thread; never blocks on I/O. */
void gb_selflabel_set(struct gb_selflabel *s, int on);
/* Stops the worker and, unless the label is known to be off, removes it
 * (one attempt of at most 2 s).  Accepts NULL. */
void gb_selflabel_free(struct gb_selflabel *s);

/* gb_health_check_fn (ctx = labeller): 1 with a reason while the label is
 * wanted off and may be on (unread since start, or a removal pending for
 * longer than stale_s), else 0. */
int gb_selflabel_check(void *ctx, char *reason, size_t size);

struct gb_selflabel_status {
  int want;        /* 0 or 1 */
  int have;        /* 0, 1, or -1 while unknown */
  int pod_missing; /* the last read found no pod (404) or was refused (403) */
  uint64_t reads, writes, failures;
};

#endif
