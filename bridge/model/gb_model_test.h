/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_model_test: for tests only.  Functions of gb_model that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_model's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_MODEL_TEST_H
#define GB_MODEL_TEST_H

#include "gb_model.h"

/* ---- Feeding without a server (tests, benchmarks, the synthetic feed) ----
 * kind is "Node", "Pod" or "HyperNode"; obj a JSON object text of that kind;
 * op 0 upsert, 1 delete.  Marks the model synced after gb_model_feed_done. */
int gb_model_feed(struct gb_model *m, const char *kind, int op, const char *json,
                  struct gc_diags *diags);

int gb_model_feed_done(struct gb_model *m);

/* The compact-record path of the feed (a synthetic feed with no JSON, the
 * benchmarks): pod (borrowed; copied) as the record would hold it, without
 * tolerations; one "pods" is added to its requests as for JSON pods.  op 0
 * upsert, 1 delete (only ns and name read).  Returns 0 or GC_EINVAL /
 * GC_ENOMEM / GC_ELIMIT. */
int gb_model_feed_pod(struct gb_model *m, int op, const struct gb_pod_view *pod);

#endif
