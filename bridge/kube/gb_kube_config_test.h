/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_config_test: for tests only.  Functions of gb_kube_config that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_kube_config's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_KUBE_CONFIG_TEST_H
#define GB_KUBE_CONFIG_TEST_H

#include "gb_kube_config.h"

/* Loads one kubeconfig file.  Relative file references in it are resolved
 * against the file's directory, as kubectl does. */
int gb_kube_config_load_file(const char *path, const char *context,
                             struct gb_kube_config **out, struct gc_diags *diags);

/* Loads kubeconfig text as if read from a file called `name`; relative file
 * references resolve against the directory part of `name`. */
int gb_kube_config_load_buffer(const char *name, const char *buf, size_t len,
                               const char *context, struct gb_kube_config **out,
                               struct gc_diags *diags);

/* In-cluster configuration from KUBERNETES_SERVICE_HOST/PORT (IPv6 hosts are
 * bracketed) and the files token, ca.crt and namespace in `sa_dir` (NULL:
 * GB_KUBE_SA_DIR).  The token file must be readable now; ca.crt is optional
 * (the system CA store is used without it). */
int gb_kube_config_in_cluster(const char *sa_dir, struct gb_kube_config **out,
                              struct gc_diags *diags);

#endif
