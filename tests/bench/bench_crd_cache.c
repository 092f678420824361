/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark of the CustomResourceDefinition cache on a CRD-heavy cluster
 * (issue: 205 CRDs, 41 MB of JSON, cost 514 MiB and an OOM crash loop).  It
 * feeds N foreign CRDs the size of Crossplane's (two versions with a large
 * openAPIV3Schema each, about 200 KB as served) into two informers through
 * gb_informer_feed (the code watch events run): first with serve's two
 * handlers of the shared CRD informer (the controller reads the name only,
 * the model the HyperNode CRD's name: both keep nothing beyond the
 * metadata every record holds), then with a handler that reads the whole
 * object (as before the trims), and prints cache bytes and RSS growth for
 * each.  N is 300; --short uses 60.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_bench.h"
#include "gb_informer.h"
#include "gb_informer_test.h"
#include "gb_kube_watch.h"
#include "gb_kube_config_test.h"

#define PROPS 340 /* schema properties per version: about 100 KB each */

static json_object *make_schema(int crd) {
  json_object *props = json_object_new_object();
  char key[64], desc[400];
  for (int p = 0; p < PROPS; p++) {
    json_object *prop = json_object_new_object();
    snprintf(key, sizeof(key), "field%03dOfResource%04d", p, crd);
    snprintf(desc, sizeof(desc),
             "%s configures one aspect of the managed resource %d. It is passed through "
             "to the provider's API unchanged; see the provider documentation for the "
             "allowed values, defaults and the effect of changing it after creation.",
             key, crd);
    json_object_object_add(prop, "description", json_object_new_string(desc));
    json_object_object_add(prop, "type", json_object_new_string(p % 3 ? "string" : "integer"));
    json_object_object_add(props, key, prop);
  }
  json_object *spec = json_object_new_object(), *schema = json_object_new_object();
  json_object_object_add(spec, "type", json_object_new_string("object"));
  json_object_object_add(spec, "properties", props);
  json_object *top = json_object_new_object(), *tprops = json_object_new_object();
  json_object_object_add(tprops, "spec", spec);
  json_object_object_add(top, "type", json_object_new_string("object"));
  json_object_object_add(top, "properties", tprops);
  json_object_object_add(schema, "openAPIV3Schema", top);
  return schema;
}

static json_object *make_crd(int i) {
  char text[2048];
  snprintf(text, sizeof(text),
           "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
           "\"metadata\":{\"name\":\"resource%04ds.example%d.upbound.io\",\"uid\":\"u-%d\","
           "\"resourceVersion\":\"%d\",\"generation\":1,"
           "\"annotations\":{\"controller-gen.kubebuilder.io/version\":\"v0.16.0\"}},"
           "\"spec\":{\"group\":\"example%d.upbound.io\",\"scope\":\"Cluster\","
           "\"names\":{\"kind\":\"Resource%04d\",\"listKind\":\"Resource%04dList\","
           "\"plural\":\"resource%04ds\",\"singular\":\"resource%04d\","
           "\"categories\":[\"crossplane\",\"managed\"]},\"versions\":[]},"
           "\"status\":{\"acceptedNames\":{\"kind\":\"Resource%04d\",\"plural\":\"resource%04ds\"},"
           "\"storedVersions\":[\"v1beta1\"],\"conditions\":[{\"type\":\"Established\","
           "\"status\":\"True\"}]}}",
           i, i % 40, i, 1000 + i, i % 40, i, i, i, i, i, i);
  json_object *crd = json_tokener_parse(text), *spec = NULL, *versions = NULL;
  if (!crd || !json_object_object_get_ex(crd, "spec", &spec) ||
      !json_object_object_get_ex(spec, "versions", &versions))
    return crd;
  static const char *const names[] = {"v1beta1", "v1beta2"};
  for (int v = 0; v < 2; v++) {
    json_object *ver = json_object_new_object();
    json_object_object_add(ver, "name", json_object_new_string(names[v]));
    json_object_object_add(ver, "served", json_object_new_boolean(1));
    json_object_object_add(ver, "storage", json_object_new_boolean(v == 0));
    json_object_object_add(ver, "schema", make_schema(i));
    json_object_array_add(versions, ver);
  }
  return crd;
}

static void on_change(void *arg, const struct gb_informer_change *ch) {
  (void)arg;
  (void)ch;
}

static const struct gb_keep NAME[] = {{{"metadata", "name"}}};

/* Feeds n CRDs into a new informer (serve's handlers when trimmed, else
 * one that reads everything) and prints figures.  Returns 0 or 1. */
static int run(struct gb_kube_client *cli, int n, int trimmed, const char *what,
               struct gb_informer **out) {
  struct gb_informer_opts o = {0};
  o.group = "apiextensions.k8s.io";
  o.version = "v1";
  o.resource = "customresourcedefinitions";
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_informer_new(cli, &o, out, &d);
  struct gb_informer_handler ctl = {.keep = NAME, .n_keep = 0, .on_change = on_change};
  struct gb_informer_handler model = {
      .field_selector = "metadata.name=hypernodes.topology.volcano.sh",
      .keep = NAME,
      .n_keep = 1,
      .on_change = on_change};
  struct gb_informer_handler whole = {.on_change = on_change};
  if (!rc)
    rc = gb_informer_add_handler(*out, trimmed ? &ctl : &whole, &d);
  if (!rc && trimmed)
    rc = gb_informer_add_handler(*out, &model, &d);
  gc_diags_destroy(&d);
  if (rc)
    return 1;
  size_t served = 0;
  long rss0 = gb_bench_rss_kib();
  for (int i = 0; i < n; i++) {
    json_object *crd = make_crd(i);
    if (!crd)
      return 1;
    served += strlen(json_object_to_json_string_ext(crd, JSON_C_TO_STRING_PLAIN));
    rc = gb_informer_feed(*out, GB_WATCH_ADDED, crd);
    json_object_put(crd);
    if (rc)
      return 1;
  }
  long rss1 = gb_bench_rss_kib();
  struct gb_informer_stats st;
  gb_informer_stats(*out, &st);
  printf("  %-26s %d CRDs, %.1f MB as served: cache %.2f MB, RSS growth %.1f MiB\n", what, n,
         (double)served / 1e6, (double)st.cache_bytes / 1e6, (double)(rss1 - rss0) / 1024.0);
  return 0;
}

int main(int argc, char **argv) {
  int n = 300;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--short"))
      n = 60;
  /* The informer needs a client only to exist; no request is made. */
  const char *kc = "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                   "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n";
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_config *cfg = NULL;
  struct gb_kube_client *cli = NULL;
  if (gb_kube_config_load_buffer("bench", kc, strlen(kc), NULL, &cfg, &d) ||
      gb_kube_client_new(cfg, NULL, &cli, &d)) {
    fprintf(stderr, "bench_crd_cache: setup failed\n");
    return 1;
  }
  gc_diags_destroy(&d);
  printf("bench_crd_cache: foreign CRDs in the controller's CRD cache\n");
  /* Trimmed first, so that its RSS figure is not helped by memory the
   * untrimmed run freed. */
  struct gb_informer *trimmed = NULL, *full = NULL;
  int rc = run(cli, n, 1, "trimmed (gangbridge now):", &trimmed);
  if (!rc)
    rc = run(cli, n, 0, "whole objects (before):", &full);
  struct gc_arena *a = gc_arena_new(0);
  struct gc_value *v = NULL;
  /* What the controller reads (the name) is still there, nothing else. */
  if (!rc && (gb_informer_get_value(trimmed, NULL, "resource0001s.example1.upbound.io", a, &v) ||
              !gc_value_path(v, "metadata.name") || gc_value_path(v, "spec") ||
              gc_value_path(v, "status")))
    rc = 1;
  gc_arena_free(a);
  gb_informer_free(trimmed);
  gb_informer_free(full);
  gb_kube_client_free(cli);
  gb_kube_config_free(cfg);
  if (rc)
    fprintf(stderr, "bench_crd_cache: failed\n");
  return rc;
}
