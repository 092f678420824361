/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kueue: is a TrainJob really Kueue's (see the header).
 */
#include "gb_kueue.h"
#include "gb_kobj.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "gc_diag.h"

struct wl_find {
  const char *tj_uid;
  char *name;
  size_t cap;
};

static int wl_item(void *arg, json_object *wl) {
  struct wl_find *f = arg;
  if (!gb_kobj_owner(wl, "TrainJob", f->tj_uid, 0))
    return 0;
  const char *n = gb_kobj_meta(wl, "name");
  snprintf(f->name, f->cap, "%s", n ? n : "?");
  return 1; /* found: stop listing */
}

int gb_kueue_workload(struct gb_kube_client *c, struct gb_kube_discovery *d, const char *ns,
                      const char *tj_uid, char *name, size_t cap) {
  static const char *const versions[] = {"v1beta2", "v1beta1"};
  if (!c || !d || !ns || !tj_uid || !tj_uid[0])
    return 0;
  for (size_t i = 0; i < 2; i++) {
    struct gb_kube_error e;
    gb_kube_error_clear(&e);
    int served = 0;
    if (gb_kube_discovery_served(d, GB_KUEUE_GROUP, versions[i], "workloads", &served, &e))
      return GC_EIO;
    if (!served)
      continue;
    char path[512], sel[160];
    if (gb_kube_client_path(path, sizeof(path), "kueue.x-k8s.io", versions[i], "workloads", ns,
                            NULL))
      return GC_EIO;
    snprintf(sel, sizeof(sel), GB_KUEUE_JOB_UID_LABEL "=%s", tj_uid);
    struct gb_kube_list_opts lo = {sel, NULL, 100};
    struct wl_find f = {tj_uid, name, cap};
    int rc = gb_kube_client_list(c, path, &lo, wl_item, &f, NULL, 0, &e);
    if (rc == 1)
      return 1;
    if (rc && rc != GC_ENOTFOUND)
      return GC_EIO;
    return 0; /* the preferred served version answers */
  }
  return 0;
}
