/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_live_docs: the cluster as a source of manifests for `gangbridge explain
 * NAMESPACE/NAME`.  It owns reading, through the kube client, exactly the
 * documents `explain -f` would be given for that TrainJob: the TrainJob, the
 * TrainingRuntime or ClusterTrainingRuntime its spec.runtimeRef names, and
 * its Namespace (for the gangbridge.io policy and queue annotations), and adding
 * them to a docset as JSON documents named after their API paths, so the
 * rest of the command is the offline code path unchanged.  Failures are
 * diagnostics naming the object and the cause: not found, forbidden (RBAC),
 * or an API server that cannot be reached.
 */
#ifndef GB_LIVE_DOCS_H
#define GB_LIVE_DOCS_H

#include "gb_manifest.h"
#include "gc_diag.h"

/* Reads TrainJob `ref` ("NAMESPACE/NAME", or "NAME" in `default_ns`; NULL
 * default_ns: the kubeconfig context's namespace, else "default") and what it
 * refers to, and adds them to ds (borrowed).  `kubeconfig` is the
 * --kubeconfig path (NULL: $KUBECONFIG, in-cluster, ~/.kube/config, as
 * gb_kube_config_load).  A missing runtime is not an error here: the gang
 * computation reports it as it does for files.  A Namespace that cannot be
 * read only adds a warning.  Returns 0, GC_EUSAGE (ref malformed; message in
 * d), or another GC_E* code with the problem in d. */
int gb_live_docs_load(struct gb_docset *ds, const char *kubeconfig, const char *ref,
                      const char *default_ns, struct gc_diags *d);

#endif
