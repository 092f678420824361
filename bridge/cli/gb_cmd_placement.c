/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_placement: `gangbridge placement status`, which reads a running
 * serve's /debug/placement document (on placement.debugAddress) and
 * lists the gangs the placement controller holds: state, outcome, age and
 * the evaluator's reason.  -o json prints the document itself.  With
 * --kubeconfig or --context it reads the API instead and lists every pod
 * that carries the gangbridge.io/placement scheduling gate, whatever serve's
 * configuration (placement disabled, serve not running, before an
 * uninstall): namespace, pod, gang, every gate, the gate's index, age.
 * Exit status: 0 OK, 1 the server or the API could not be read (or
 * answered something that is not the document), 2 usage.
 */
#include <curl/curl.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_cli.h"
#include "gb_diagprint.h"
#include "gb_gate.h"
#include "gb_gatesweep.h"
#include "gb_kube_config.h"

/* deploy/'s placement.debugAddress (inside the pod: kubectl port-forward). */
#define DEFAULT_URL "http://127.0.0.1:8081"
#define MAX_DOC (16u << 20)

static void usage(FILE *f) {
  fprintf(f,
          "usage: gangbridge placement status [--url URL] [-o table|json] [--timeout SECONDS]\n"
          "       gangbridge placement status --kubeconfig PATH [--context NAME] [-n NS]\n"
          "                                   [-o table|json]\n"
          "\n"
          "Lists the gangs gangbridge's placement controller holds (gated, waiting or\n"
          "released), with the outcome of the last decision, the reason a gang waits and\n"
          "its age, read from a running serve's /debug/placement.  With --kubeconfig or\n"
          "--context, lists from the API every pod that carries the gangbridge.io/placement\n"
          "scheduling gate, whatever serve's configuration (or with no serve at all).\n"
          "\n"
          "  --url URL          the serve's placement.debugAddress (default " DEFAULT_URL ")\n"
          "  --kubeconfig PATH  read the API with this kubeconfig (\"\": $KUBECONFIG,\n"
          "                     in-cluster, ~/.kube/config)\n"
          "  --context NAME     kubeconfig context (implies reading the API)\n"
          "  -n, --namespace NS only this namespace (API only; default all)\n"
          "  -o table|json      output format (default table)\n"
          "  --timeout SECONDS  give up after this long (default 10; --url only)\n"
          "  -h, --help         show this help\n");
}

static size_t on_data(char *data, size_t size, size_t n, void *arg) {
  return gb_buf_add(arg, data, size * n) ? 0 : size * n;
}

/* GETs url into b.  Returns 0 or prints why and returns 1. */
static int fetch(const char *url, long timeout_s, struct gb_buf *b) {
  CURL *h = curl_easy_init();
  if (!h) {
    fprintf(stderr, "gangbridge placement: cannot start an HTTP client\n");
    return 1;
  }
  char err[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  CURLcode cc = curl_easy_perform(h);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(h);
  if (cc != CURLE_OK) {
    fprintf(stderr, "gangbridge placement: %s: %s\n", url,
            b->err ? "the answer is too large" : (*err ? err : curl_easy_strerror(cc)));
    return 1;
  }
  if (code != 200) {
    fprintf(stderr, "gangbridge placement: %s: HTTP %ld%s\n", url, code,
            code == 404 ? " (is placement.enabled true on that server? --kubeconfig lists the "
                          "gated pods from the API whatever the configuration)"
                        : "");
    return 1;
  }
  return 0;
}

static const char *str(json_object *o, const char *k) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : "";
}

static void age(double s, char *buf, size_t cap) {
  if (s < 120)
    snprintf(buf, cap, "%.0fs", s);
  else if (s < 7200)
    snprintf(buf, cap, "%.0fm", s / 60);
  else
    snprintf(buf, cap, "%.0fh", s / 3600);
}

static long long num(json_object *g, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(g, key, &v) ? json_object_get_int64(v) : 0;
}

/* The table: one gang per line, waiting ones first as the server lists.
 * PODS is gated/released/minMember and RESERVED the pods the plan still holds
 * capacity for, so a gang half-way through its release reads as such;
 * DECISION is the id of the record on the gang's PodGroup ("-": none). */
static void print_table(json_object *doc, FILE *f) {
  json_object *gangs = NULL;
  json_object_object_get_ex(doc, "gangs", &gangs);
  size_t n = json_object_is_type(gangs, json_type_array) ? json_object_array_length(gangs) : 0;
  if (!n) {
    fprintf(f, "No gangs held by placement.\n");
    return;
  }
  fprintf(f, "%-40s %-13s %-9s %-6s %-11s %-8s %-16s %s\n", "GANG", "STATE", "OUTCOME", "AGE",
          "PODS(G/R/M)", "RESERVED", "DECISION", "REASON");
  for (size_t i = 0; i < n; i++) {
    json_object *g = json_object_array_get_idx(gangs, i), *v = NULL;
    char a[32], pods[48];
    age(json_object_object_get_ex(g, "ageSeconds", &v) ? json_object_get_double(v) : 0, a,
        sizeof(a));
    snprintf(pods, sizeof(pods), "%lld/%lld/%lld", num(g, "gated"), num(g, "released"),
             num(g, "minMember"));
    const char *reason = str(g, "reason");
    const char *domain = str(g, "domain");
    const char *decision = str(g, "decision");
    fprintf(f, "%-40s %-13s %-9s %-6s %-11s %-8lld %-16s %s%s%s\n", str(g, "gang"),
            str(g, "state"), str(g, "outcome"), a, pods, num(g, "reservedPods"),
            *decision ? decision : "-", *reason ? reason : "", *reason || !*domain ? "" : "in ",
            *reason ? "" : domain);
  }
}

/* ---- gated pods from the API ------------------------------------------------ */

struct gated_list {
  json_object *pods; /* array */
  int oom;
};

static int add_gated(void *arg, const struct gb_gated_pod *p, json_object *obj) {
  (void)obj;
  struct gated_list *l = arg;
  json_object *o = json_object_new_object(), *gates = json_object_new_array();
  if (!o || !gates) {
    json_object_put(o);
    json_object_put(gates);
    l->oom = 1;
    return 1;
  }
  for (size_t i = 0; i < p->n_gates; i++)
    json_object_array_add(gates, json_object_new_string(p->gates[i]));
  json_object_object_add(o, "namespace", json_object_new_string(p->ns));
  json_object_object_add(o, "name", json_object_new_string(p->name));
  json_object_object_add(o, "gang", json_object_new_string(p->jobset));
  json_object_object_add(o, "replicatedJob", json_object_new_string(p->rjob));
  json_object_object_add(o, "gates", gates);
  json_object_object_add(o, "gateIndex", json_object_new_int64((int64_t)p->index));
  json_object_object_add(o, "creationTimestamp", json_object_new_string(p->created));
  json_object_array_add(l->pods, o);
  return 0;
}

static void print_pods(json_object *pods, FILE *f) {
  size_t n = json_object_array_length(pods);
  if (!n) {
    fprintf(f, "No pod carries the %s scheduling gate.\n", GB_PLACEMENT_GATE);
    return;
  }
  fprintf(f, "%-20s %-40s %-24s %s\n", "NAMESPACE", "POD", "GANG", "GATES");
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(pods, i), *gates = NULL;
    json_object_object_get_ex(p, "gates", &gates);
    char list[512] = "";
    for (size_t g = 0; g < json_object_array_length(gates); g++)
      snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", g ? "," : "",
               json_object_get_string(json_object_array_get_idx(gates, g)));
    fprintf(f, "%-20s %-40s %-24s %s\n", str(p, "namespace"), str(p, "name"),
            *str(p, "gang") ? str(p, "gang") : "-", list);
  }
  fprintf(f, "%zu pod(s) held by %s\n", n, GB_PLACEMENT_GATE);
}

static int api_status(const char *kubeconfig, const char *context, const char *ns, int json) {
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_kube_config *cfg = NULL;
  struct gb_kube_client *c = NULL;
  struct gated_list l = {json_object_new_array(), 0};
  struct gb_kube_error e;
  gb_kube_error_clear(&e);
  int rc = l.pods ? gb_kube_config_load(kubeconfig && *kubeconfig ? kubeconfig : NULL, context,
                                        &cfg, &d)
                  : GC_ENOMEM;
  if (!rc)
    rc = gb_kube_client_new(cfg, NULL, &c, &d);
  if (!rc)
    rc = gb_gatesweep_list(c, ns, add_gated, &l, &e);
  if (l.oom)
    rc = GC_ENOMEM;
  if (rc) {
    char buf[1200];
    gb_diagprint_write(stderr, "gangbridge placement: ", &d);
    fprintf(stderr, "gangbridge placement: cannot list the gated pods: %s\n",
            e.http || e.curl_code ? gb_kube_error_str(&e, buf, sizeof(buf)) : gc_diag_strerror(rc));
  } else if (json) {
    json_object *doc = json_object_new_object();
    json_object_object_add(doc, "pods", json_object_get(l.pods));
    printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(doc);
  } else {
    print_pods(l.pods, stdout);
  }
  json_object_put(l.pods);
  gb_kube_client_free(c);
  gb_kube_config_free(cfg);
  gc_diags_destroy(&d);
  return rc ? GB_EXIT_INPUT : GB_EXIT_OK;
}

static int status(const char *url, int json, long timeout_s) {
  char full[2048];
  size_t ul = strlen(url);
  while (ul && url[ul - 1] == '/')
    ul--;
  if (snprintf(full, sizeof(full), "%.*s/debug/placement", (int)ul, url) >= (int)sizeof(full)) {
    fprintf(stderr, "gangbridge placement: --url is too long\n");
    return GB_EXIT_USAGE;
  }
  struct gb_buf b;
  gb_buf_init(&b, MAX_DOC);
  int rc = fetch(full, timeout_s, &b);
  json_object *doc = NULL;
  if (!rc) {
    doc = json_tokener_parse(gb_buf_ptr(&b));
    if (!doc || !json_object_is_type(doc, json_type_object)) {
      fprintf(stderr, "gangbridge placement: %s: the answer is not a placement status document\n",
              full);
      rc = 1;
    }
  }
  if (!rc && json)
    printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE));
  else if (!rc)
    print_table(doc, stdout);
  json_object_put(doc);
  gb_buf_free(&b);
  return rc ? GB_EXIT_INPUT : GB_EXIT_OK;
}

int gb_cmd_placement(int argc, char **argv) {
  static const struct option longs[] = {
      {"url", required_argument, NULL, 'u'},     {"output", required_argument, NULL, 'o'},
      {"timeout", required_argument, NULL, 't'}, {"kubeconfig", required_argument, NULL, 'k'},
      {"context", required_argument, NULL, 'c'}, {"namespace", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  const char *url = NULL, *kubeconfig = NULL, *context = NULL, *ns = NULL;
  int json = 0, api = 0;
  long timeout_s = 10;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "o:n:h", longs, NULL)) != -1) {
    char *end = NULL;
    switch (c) {
    case 'u': url = optarg; break;
    case 'k': kubeconfig = optarg, api = 1; break;
    case 'c': context = optarg, api = 1; break;
    case 'n': ns = optarg; break;
    case 'o':
      if (strcmp(optarg, "json") && strcmp(optarg, "table")) {
        fprintf(stderr, "gangbridge placement: -o: \"%s\" is not table or json\n", optarg);
        return GB_EXIT_USAGE;
      }
      json = !strcmp(optarg, "json");
      break;
    case 't':
      timeout_s = strtol(optarg, &end, 10);
      if (!*optarg || *end || timeout_s < 1 || timeout_s > 3600) {
        fprintf(stderr, "gangbridge placement: --timeout: \"%s\" is not 1..3600 seconds\n", optarg);
        return GB_EXIT_USAGE;
      }
      break;
    case 'h': usage(stdout); return GB_EXIT_OK;
    default: usage(stderr); return GB_EXIT_USAGE;
    }
  }
  if (optind >= argc || strcmp(argv[optind], "status") || optind + 1 != argc) {
    usage(stderr);
    return GB_EXIT_USAGE;
  }
  if ((api && url) || (!api && ns)) {
    fprintf(stderr, "gangbridge placement: %s\n",
            api ? "--url and --kubeconfig/--context exclude each other"
                : "-n needs --kubeconfig or --context (it reads the API)");
    return GB_EXIT_USAGE;
  }
  if (api)
    return api_status(kubeconfig, context, ns, json);
  return status(url ? url : DEFAULT_URL, json, timeout_s);
}
