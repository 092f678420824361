/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_standin: the stand-in API server (tests/apiserver/run) as a child
 * process on a free port, with a kubeconfig and a client (QPS unlimited)
 * for it, for the C tests that talk to a real HTTP API server.  It reports
 * failures itself (not with ck_assert), so it may run outside a test, e.g.
 * once in main for a whole suite.
 */
#ifndef GB_STANDIN_H
#define GB_STANDIN_H

#include <sys/types.h>

#include "gb_kube_client.h"
#include "gb_kube_config.h"

struct gb_standin {
  pid_t pid;                   /* the server, or 0 */
  char url[256];               /* "http://127.0.0.1:PORT" */
  struct gb_kube_config *cfg;  /* owned */
  struct gb_kube_client *cli;  /* owned */
};

/* Starts the server and a client for it into *s (zeroed first).  Returns 0,
 * or -1 with the reason on stderr (whatever was started is stopped by
 * gb_standin_stop, which the caller must still call). */
int gb_standin_start(struct gb_standin *s);

/* Frees the client and stops the server (SIGTERM, then waits).  Accepts a
 * zeroed or half-started *s. */
void gb_standin_stop(struct gb_standin *s);

/* Installs the CRDs of tests/shared/crds/<rel> (a YAML file) on the server
 * of cli.  Returns 0, or -1 with the reason on stderr. */
int gb_standin_install_crd(struct gb_kube_client *cli, const char *rel);

/* Creates a TrainJob ns/name (runtime "torch") and its Volcano PodGroup as
 * gangbridge's controller does (the managed-by label, a controller
 * ownerReference to the TrainJob: the stand-in collects PodGroups whose
 * owner does not exist), where the placement controller records its
 * decision; the TrainJob's uid goes to uid.  Needs the TrainJob and Volcano
 * PodGroup CRDs.  Returns 0, or -1 (stderr). */
int gb_standin_podgroup(struct gb_kube_client *cli, const char *ns, const char *name, char *uid,
                        size_t uid_size);

#endif
