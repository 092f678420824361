/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_discovery: does the API server serve a group/version/resource?
 * Used for the `auto` backend choice (the first backend of gangcalc's table
 * whose group object's API is served, see gc_backend.h).  It
 * asks the per-group-version discovery document (GET /apis/GROUP/VERSION or
 * /api/v1): a 404 means the group/version is not served; otherwise the
 * resource must be listed in its APIResourceList.  Answers are cached for a
 * configurable age and can be invalidated (for example when a
 * CustomResourceDefinition informer sees a change), so the check is cheap to
 * repeat and picks up CRDs that appear or disappear.
 *
 * Thread-safety: gb_kube_discovery_check is reentrant.  A gb_kube_discovery
 * cache may be shared by threads (internal mutex); two threads missing the
 * cache at once may both ask the server, which is harmless.
 */
#ifndef GB_KUBE_DISCOVERY_H
#define GB_KUBE_DISCOVERY_H

#include "gb_kube_client.h"

struct gb_kube_discovery;

/* A cache of answers no older than max_age_s (0: 30 s).  client is
 * borrowed.  NULL on OOM.  Free with gb_kube_discovery_free. */
struct gb_kube_discovery *gb_kube_discovery_new(struct gb_kube_client *client, double max_age_s);
void gb_kube_discovery_free(struct gb_kube_discovery *d);

/* As gb_kube_discovery_check, answered from the cache when fresh.  A failed
 * check is not cached. */
int gb_kube_discovery_served(struct gb_kube_discovery *d, const char *group, const char *version,
                             const char *resource, int *served, struct gb_kube_error *e);

/* Forgets every cached answer. */
void gb_kube_discovery_invalidate(struct gb_kube_discovery *d);

#endif
