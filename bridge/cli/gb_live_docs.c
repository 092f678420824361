/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_live_docs: TrainJob, runtime and Namespace read from the API server for
 * `explain NAMESPACE/NAME` (see gb_live_docs.h).
 *
 * Each object is fetched as JSON and handed to gb_manifest_load_buffer under its API
 * path, so it is parsed, bounded and checked exactly as a file given with -f
 * would be; nothing here interprets the objects beyond finding the runtime
 * reference.
 */
#include "gb_live_docs.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "gb_kube_client.h"
#include "gb_kube_config.h"
#include "gb_reconcile.h"
#include "gc_arena.h"
#include "gc_gang.h"

#define NAME_MAX_LEN 253

struct live {
  struct gb_kube_config *cfg;
  struct gb_kube_client *client;
  struct gb_docset *ds;
  struct gc_diags *d;
};

/* Splits "NS/NAME" or "NAME" into ns and name (both non-empty, at most 253
 * bytes, no further '/').  Returns 0 or GC_EUSAGE. */
static int split_ref(const char *ref, const char *default_ns, char *ns, char *name) {
  const char *slash = strchr(ref, '/');
  size_t nl = slash ? (size_t)(slash - ref) : 0;
  const char *n = slash ? slash + 1 : ref;
  if ((slash && (nl == 0 || nl > NAME_MAX_LEN)) || !*n || strlen(n) > NAME_MAX_LEN ||
      strchr(n, '/'))
    return GC_EUSAGE;
  if (slash) {
    memcpy(ns, ref, nl);
    ns[nl] = '\0';
  } else {
    snprintf(ns, NAME_MAX_LEN + 1, "%s", default_ns);
  }
  snprintf(name, NAME_MAX_LEN + 1, "%s", n);
  return 0;
}

/* Reports a failed GET of `what` (e.g. "TrainJob team-a/job") in words an
 * on-call engineer can act on. */
static void report(struct live *l, const char *what, const char *path, int rc,
                   const struct gb_kube_error *e) {
  char buf[1200];
  if (rc == GC_ENOTFOUND)
    gc_diags_addf(l->d, "%s: not found in the cluster (%s)", what, l->cfg->server);
  else if (e->http == 401 || e->http == 403)
    gc_diags_addf(l->d, "%s: %s reading %s: %s (check the RBAC of the kubeconfig's user: it "
                  "needs get on this resource)", what, e->http == 401 ? "unauthorized" :
                  "forbidden", path, e->message);
  else if (e->http == 0)
    gc_diags_addf(l->d, "%s: cannot reach the API server %s: %s", what, l->cfg->server,
                  gb_kube_error_str(e, buf, sizeof(buf)));
  else
    gc_diags_addf(l->d, "%s: reading %s: %s", what, path, gb_kube_error_str(e, buf, sizeof(buf)));
}

/* GETs `path` and adds it to the docset.  *obj (optional) receives the
 * object, caller puts it.  Returns 0, GC_ENOTFOUND (not reported when
 * quiet_404) or another GC_E* code (reported). */
static int fetch(struct live *l, const char *what, const char *path, int quiet_404,
                 json_object **obj) {
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  json_object *o = NULL;
  int rc = gb_kube_client_get(l->client, path, &o, &e);
  if (rc == GC_OK && !json_object_is_type(o, json_type_object)) {
    gc_diags_addf(l->d, "%s: %s answered with something that is not an object", what, path);
    rc = GC_EINVAL;
  }
  if (rc) {
    if (!(rc == GC_ENOTFOUND && quiet_404))
      report(l, what, path, rc, &e);
    json_object_put(o);
    return rc;
  }
  size_t len = 0;
  const char *text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
  rc = text ? gb_manifest_load_buffer(l->ds, path, text, len, l->d) : GC_ENOMEM;
  if (obj && rc == GC_OK)
    *obj = o;
  else
    json_object_put(o);
  return rc;
}

/* The runtime named by the TrainJob's spec.runtimeRef, when it names one of
 * a supported kind (otherwise the gang computation reports the TrainJob). */
static int fetch_runtime(struct live *l, json_object *tj, const char *ns) {
  struct gc_arena *a = gc_arena_new(16u << 20);
  struct gc_value *v = NULL;
  int cluster = 1, rc;
  const char *rt = NULL;
  if (!a)
    return GC_ENOMEM;
  rc = gb_kube_client_json_to_value(a, tj, 64, &v);
  if (rc || gb_reconcile_runtime_ref(v, &cluster, &rt)) {
    gc_arena_free(a);
    return rc == GC_ENOMEM ? rc : GC_OK;
  }
  char path[1024], what[600];
  rc = gb_kube_client_path(path, sizeof(path), GC_TRAINER_GROUP, "v1alpha1",
                           cluster ? "clustertrainingruntimes" : "trainingruntimes",
                           cluster ? NULL : ns, rt);
  snprintf(what, sizeof(what), "%s %s%s%s", cluster ? "ClusterTrainingRuntime" : "TrainingRuntime",
           cluster ? "" : ns, cluster ? "" : "/", rt);
  if (rc == GC_OK)
    rc = fetch(l, what, path, 1, NULL);
  else
    gc_diags_addf(l->d, "%s: not a valid name", what);
  gc_arena_free(a);
  /* A missing runtime is reported by the gang computation, as for files. */
  return rc == GC_ENOTFOUND ? GC_OK : rc;
}

static int connect_api(struct live *l, const char *kubeconfig) {
  int rc = gb_kube_config_load(kubeconfig, NULL, &l->cfg, l->d);
  if (rc)
    return rc;
  struct gb_kube_client_opts ko;
  memset(&ko, 0, sizeof(ko));
  ko.connect_timeout_ms = 10000;
  ko.request_timeout_ms = 30000;
  ko.max_retries = 1; /* an on-call engineer wants an answer, not a long wait */
  ko.user_agent = "gangbridge-explain";
  return gb_kube_client_new(l->cfg, &ko, &l->client, l->d);
}

int gb_live_docs_load(struct gb_docset *ds, const char *kubeconfig, const char *ref,
                      const char *default_ns, struct gc_diags *d) {
  struct live l = {NULL, NULL, ds, d};
  char ns[NAME_MAX_LEN + 1], name[NAME_MAX_LEN + 1], path[1024], what[600];
  json_object *tj = NULL;
  /* A malformed reference is a usage error whatever the kubeconfig says. */
  if (split_ref(ref, "default", ns, name)) {
    gc_diags_addf(d, "'%s' is not NAMESPACE/NAME or NAME", ref);
    return GC_EUSAGE;
  }
  int rc = connect_api(&l, kubeconfig);
  if (rc)
    goto out;
  if (split_ref(ref, default_ns ? default_ns : l.cfg->namespace, ns, name)) {
    gc_diags_addf(d, "%s: the namespace to look in is not a valid name", l.cfg->source);
    rc = GC_EINVAL;
    goto out;
  }
  snprintf(what, sizeof(what), "TrainJob %s/%s", ns, name);
  if ((rc = gb_kube_client_path(path, sizeof(path), GC_TRAINER_GROUP, "v1alpha1", "trainjobs", ns,
                                name))) {
    gc_diags_addf(d, "%s: not a valid namespace and name", what);
    goto out;
  }
  if ((rc = fetch(&l, what, path, 0, &tj)))
    goto out;
  if ((rc = fetch_runtime(&l, tj, ns)))
    goto out;
  /* The Namespace only adds policy annotations: without it (e.g. no RBAC on
   * cluster-scoped Namespaces) explain still works, with a warning. */
  snprintf(what, sizeof(what), "Namespace %s", ns);
  if (gb_kube_client_path(path, sizeof(path), "", "v1", "namespaces", NULL, ns) == GC_OK) {
    struct gc_diags nd;
    gc_diags_init(&nd);
    l.d = &nd;
    if (fetch(&l, what, path, 0, NULL) != GC_OK)
      for (size_t i = 0; i < nd.n; i++)
        gc_diags_warnf(d, "%s; explained without its annotations", nd.msgs[i]);
    l.d = d;
    gc_diags_destroy(&nd);
  }
out:
  json_object_put(tj);
  gb_kube_client_free(l.client);
  gb_kube_config_free(l.cfg);
  return rc;
}
