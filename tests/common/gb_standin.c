/* SPDX-License-Identifier: Apache-2.0 */
#include "gb_standin.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gb_manifest.h"
#include "gc_diag.h"
#include "gb_kube_config_test.h"

/* Forks the server; its first stdout line is its URL. */
static int spawn(struct gb_standin *s) {
  int fds[2];
  if (pipe(fds))
    return -1;
  s->pid = fork();
  if (s->pid < 0) {
    s->pid = 0;
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (s->pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    execl("/usr/bin/python3", "python3", GB_SRC_DIR "/tests/apiserver/run", "--port", "0",
          (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *f = fdopen(fds[0], "r");
  int ok = f && fgets(s->url, sizeof(s->url), f) && !strncmp(s->url, "http://", 7);
  if (f)
    fclose(f);
  else
    close(fds[0]);
  s->url[strcspn(s->url, "\r\n")] = '\0';
  if (!ok) {
    fprintf(stderr, "gb_standin: the stand-in printed no URL: %s\n", s->url);
    return -1;
  }
  return 0;
}

int gb_standin_start(struct gb_standin *s) {
  memset(s, 0, sizeof(*s));
  if (spawn(s))
    return -1;
  char kc[512];
  snprintf(kc, sizeof(kc),
           "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
           "clusters: [{name: c, cluster: {server: '%s'}}]\n",
           s->url);
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_client_opts o = {.qps = -1};
  int rc = gb_kube_config_load_buffer("t", kc, strlen(kc), NULL, &s->cfg, &d) ||
           gb_kube_client_new(s->cfg, &o, &s->cli, &d);
  if (rc)
    fprintf(stderr, "gb_standin: no client for %s: %s\n", s->url,
            d.n ? d.msgs[0] : "unknown error");
  gc_diags_destroy(&d);
  return rc ? -1 : 0;
}

void gb_standin_stop(struct gb_standin *s) {
  gb_kube_client_free(s->cli);
  gb_kube_config_free(s->cfg);
  s->cli = NULL;
  s->cfg = NULL;
  if (s->pid > 0) {
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
  }
  s->pid = 0;
}

int gb_standin_install_crd(struct gb_kube_client *cli, const char *rel) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/shared/crds/%s", GB_SRC_DIR, rel);
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_manifest_load_path(ds, path, &d) ? -1 : 0;
  for (size_t i = 0; !rc && i < ds->n; i++) {
    json_object *o = gb_kube_client_value_to_json(ds->docs[i].root);
    struct gb_kube_error e;
    gb_kube_error_clear(&e);
    if (!o || gb_kube_client_create(cli, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                    o, NULL, &e)) {
      fprintf(stderr, "gb_standin: CRD %s: %s\n", rel, e.message);
      rc = -1;
    }
    json_object_put(o);
  }
  if (d.n && rc)
    fprintf(stderr, "gb_standin: %s: %s\n", rel, d.msgs[0]);
  gc_diags_destroy(&d);
  gb_docset_free(ds);
  return rc;
}

static int create(struct gb_kube_client *cli, const char *coll, const char *json, char *uid,
                  size_t uid_size) {
  json_object *o = json_tokener_parse(json), *out = NULL, *md = NULL, *u = NULL;
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = o && gb_kube_client_create(cli, coll, o, &out, &e) == 0 ? 0 : -1;
  if (rc)
    fprintf(stderr, "gb_standin: create in %s: %s\n", coll, e.message);
  if (!rc && uid && json_object_object_get_ex(out, "metadata", &md) &&
      json_object_object_get_ex(md, "uid", &u))
    snprintf(uid, uid_size, "%s", json_object_get_string(u));
  json_object_put(o);
  json_object_put(out);
  return rc;
}

int gb_standin_podgroup(struct gb_kube_client *cli, const char *ns, const char *name, char *uid,
                        size_t uid_size) {
  char b[1024], coll[256];
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":"
           "{\"runtimeRef\":{\"name\":\"torch\"}}}",
           name, ns);
  snprintf(coll, sizeof(coll), "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs", ns);
  if (create(cli, coll, b, uid, uid_size))
    return -1;
  snprintf(b, sizeof(b),
           "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":"
           "{\"app.kubernetes.io/managed-by\":\"gangbridge\"},\"ownerReferences\":[{"
           "\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
           "\"name\":\"%s\",\"uid\":\"%s\",\"controller\":true}]},"
           "\"spec\":{\"minMember\":1}}",
           name, ns, name, uid);
  snprintf(coll, sizeof(coll), "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups", ns);
  return create(cli, coll, b, NULL, 0);
}
