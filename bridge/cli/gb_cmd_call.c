/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_call: `gangbridge call calculate|evaluate|health`, the operators'
 * gRPC client.  Manifests are read locally exactly as render and place read
 * them (files, directories, -, YAML or JSON, Lists unpacked; syntax errors
 * reported here with file:line:col) and sent one document per entry as
 * JSON.  Exit status: 0 OK, 1 the call failed (status code and message on
 * stderr), 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gangbridge/v1/calculator.pb-c.h"
#include "gangbridge/v1/placement.pb-c.h"
#include "gb_cli.h"
#include "gb_diagprint.h"
#include "gb_emit.h"
#include "gb_manifest.h"
#include "gb_rpc_client.h"
#include "gb_rpc.h"
#include "gc_backend.h"
#include "grpc/health/v1/health.pb-c.h"

#define DEFAULT_ADDR "127.0.0.1:50051"
#define DEFAULT_TIMEOUT_MS 30000

enum call_kind { CALL_CALCULATE, CALL_EVALUATE, CALL_HEALTH };

struct call_opts {
  enum call_kind kind;
  struct gb_rpc_client_config client;
  int timeout_ms;
  const char **files; /* -f: TrainJob + runtime manifests */
  size_t n_files;
  const char **cluster; /* --cluster */
  size_t n_cluster;
  const char *gang_file; /* --gang: compact Gang document */
  Gangbridge__V1__Backend backend;
  Gangbridge__V1__GangScope scope;
  const char *ns;
  const char *trainjob;
  int yaml; /* -o yaml */
  const char *service;
  const char *mode;
  int has_tier;
  long tier;
  const char *tier_name;
  char *levels_buf;
  const char **levels;
  size_t n_levels;
  Gangbridge__V1__Profile profile;
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: gangbridge call calculate -f PATH... [--scheduler S] [--gang-scope S]\n"
          "                                 [-n NS] [--trainjob NS/NAME] [-o yaml|json]\n"
          "       gangbridge call evaluate (-f PATH... | --gang FILE) [--cluster PATH...]\n"
          "                                [--mode hard|soft] [--highest-tier N |\n"
          "                                --highest-tier-name NAME] [--levels K1,K2]\n"
          "                                [--profile bestfit|spread]\n"
          "       gangbridge call health [--service NAME]\n"
          "\n"
          "Calls a running `gangbridge serve`.  Without --cluster, evaluate uses the\n"
          "server's live snapshot.\n"
          "\n"
          "  --addr HOST:PORT        server address (default " DEFAULT_ADDR ")\n"
          "  --timeout SECONDS       call deadline (default 30; fractions allowed)\n"
          "  --tls-ca FILE           PEM CA of the server certificate: use TLS\n"
          "  --tls-cert FILE         PEM client certificate (mutual TLS)\n"
          "  --tls-key FILE          PEM client key\n"
          "  --tls-server-name NAME  name expected in the server certificate\n"
          "  -h, --help              show this help\n");
}

static int fail_usage(const char *msg, const char *arg) {
  fprintf(stderr, "gangbridge call: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
  return GC_EUSAGE;
}

/* --scheduler NAME: a backend of the table, sent as its wire value (the
 * descriptor's proto). */
static int parse_scheduler(struct call_opts *o, const char *arg) {
  const struct gc_backend *be = gc_backend_by_name(arg);
  char names[256], what[300];
  if (!be) {
    snprintf(what, sizeof(what), "--scheduler must be %s, not",
             gc_backend_names(names, sizeof(names), " or "));
    return fail_usage(what, arg);
  }
  o->backend = (Gangbridge__V1__Backend)be->proto;
  return 0;
}

static int split_levels(struct call_opts *o, const char *arg) {
  free(o->levels_buf);
  o->levels_buf = strdup(arg);
  if (!o->levels_buf)
    return GC_ENOMEM;
  o->n_levels = 0;
  char *p = o->levels_buf;
  while (p) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = '\0';
    if (!*p)
      return GC_EUSAGE;
    o->levels[o->n_levels++] = p;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

static int parse_args(int argc, char **argv, struct call_opts *o) {
  enum {
    OPT_ADDR = 256, OPT_TIMEOUT, OPT_CA, OPT_CERT, OPT_KEY, OPT_SNI, OPT_SCHED, OPT_SCOPE,
    OPT_TRAINJOB, OPT_SERVICE, OPT_CLUSTER, OPT_GANG, OPT_MODE, OPT_TIER, OPT_TIER_NAME,
    OPT_LEVELS, OPT_PROFILE
  };
  static const struct option longopts[] = {
      {"addr", required_argument, NULL, OPT_ADDR},
      {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"tls-ca", required_argument, NULL, OPT_CA},
      {"tls-cert", required_argument, NULL, OPT_CERT},
      {"tls-key", required_argument, NULL, OPT_KEY},
      {"tls-server-name", required_argument, NULL, OPT_SNI},
      {"filename", required_argument, NULL, 'f'},
      {"scheduler", required_argument, NULL, OPT_SCHED},
      {"gang-scope", required_argument, NULL, OPT_SCOPE},
      {"namespace", required_argument, NULL, 'n'},
      {"trainjob", required_argument, NULL, OPT_TRAINJOB},
      {"output", required_argument, NULL, 'o'},
      {"service", required_argument, NULL, OPT_SERVICE},
      {"cluster", required_argument, NULL, OPT_CLUSTER},
      {"gang", required_argument, NULL, OPT_GANG},
      {"mode", required_argument, NULL, OPT_MODE},
      {"highest-tier", required_argument, NULL, OPT_TIER},
      {"highest-tier-name", required_argument, NULL, OPT_TIER_NAME},
      {"levels", required_argument, NULL, OPT_LEVELS},
      {"profile", required_argument, NULL, OPT_PROFILE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? GC_EUSAGE : 1;
  }
  if (!strcmp(argv[1], "calculate"))
    o->kind = CALL_CALCULATE;
  else if (!strcmp(argv[1], "evaluate"))
    o->kind = CALL_EVALUATE;
  else if (!strcmp(argv[1], "health"))
    o->kind = CALL_HEALTH;
  else
    return fail_usage("unknown method (calculate, evaluate or health):", argv[1]);
  o->client.addr = DEFAULT_ADDR;
  o->timeout_ms = DEFAULT_TIMEOUT_MS;
  o->yaml = 1;
  o->files = calloc((size_t)argc, sizeof(*o->files));
  o->cluster = calloc((size_t)argc, sizeof(*o->cluster));
  o->levels = calloc((size_t)argc + 1, sizeof(*o->levels));
  if (!o->files || !o->cluster || !o->levels)
    return GC_ENOMEM;
  argc--;
  argv++;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":f:n:o:h", longopts, NULL)) != -1) {
    char *end = NULL;
    switch (c) {
    case OPT_ADDR: o->client.addr = optarg; break;
    case OPT_TIMEOUT: {
      errno = 0;
      double s = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(s > 0) || s > 86400)
        return fail_usage("--timeout must be a number of seconds in (0, 86400], not", optarg);
      o->timeout_ms = (int)(s * 1000 + 0.5);
      if (o->timeout_ms < 1)
        o->timeout_ms = 1;
      break;
    }
    case OPT_CA: o->client.tls_ca_file = optarg; break;
    case OPT_CERT: o->client.tls_cert_file = optarg; break;
    case OPT_KEY: o->client.tls_key_file = optarg; break;
    case OPT_SNI: o->client.tls_server_name = optarg; break;
    case 'f': o->files[o->n_files++] = optarg; break;
    case OPT_SCHED:
      if (parse_scheduler(o, optarg))
        return GC_EUSAGE;
      break;
    case OPT_SCOPE:
      if (!strcmp(optarg, "wave"))
        o->scope = GANGBRIDGE__V1__GANG_SCOPE__GANG_SCOPE_WAVE;
      else if (!strcmp(optarg, "all"))
        o->scope = GANGBRIDGE__V1__GANG_SCOPE__GANG_SCOPE_ALL;
      else
        return fail_usage("--gang-scope must be wave or all, not", optarg);
      break;
    case 'n': o->ns = optarg; break;
    case OPT_TRAINJOB: o->trainjob = optarg; break;
    case 'o':
      if (!strcmp(optarg, "yaml"))
        o->yaml = 1;
      else if (!strcmp(optarg, "json"))
        o->yaml = 0;
      else
        return fail_usage("-o must be yaml or json, not", optarg);
      break;
    case OPT_SERVICE: o->service = optarg; break;
    case OPT_CLUSTER: o->cluster[o->n_cluster++] = optarg; break;
    case OPT_GANG: o->gang_file = optarg; break;
    case OPT_MODE:
      if (strcmp(optarg, "hard") && strcmp(optarg, "soft"))
        return fail_usage("--mode must be hard or soft, not", optarg);
      o->mode = optarg;
      break;
    case OPT_TIER:
      errno = 0;
      o->tier = strtol(optarg, &end, 10);
      if (errno || end == optarg || *end || o->tier < 1 || o->tier > 1000000)
        return fail_usage("--highest-tier must be a positive integer, not", optarg);
      o->has_tier = 1;
      break;
    case OPT_TIER_NAME: o->tier_name = optarg; break;
    case OPT_LEVELS:
      if (split_levels(o, optarg))
        return fail_usage("--levels takes comma-separated label keys, not", optarg);
      break;
    case OPT_PROFILE:
      if (!strcmp(optarg, "bestfit"))
        o->profile = GANGBRIDGE__V1__PROFILE__PROFILE_BESTFIT;
      else if (!strcmp(optarg, "spread"))
        o->profile = GANGBRIDGE__V1__PROFILE__PROFILE_SPREAD;
      else
        return fail_usage("--profile must be bestfit or spread, not", optarg);
      break;
    case 'h': usage(stdout); return 1;
    case ':': return fail_usage("option needs a value:", argv[optind - 1]);
    default: return fail_usage("unknown option", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return fail_usage("unexpected argument", argv[optind]);
  if (o->kind == CALL_CALCULATE && !o->n_files)
    return fail_usage("calculate needs -f PATH (the TrainJob and its runtime)", NULL);
  if (o->kind == CALL_EVALUATE && !o->n_files == !o->gang_file)
    return fail_usage("evaluate needs either -f PATH (TrainJob + runtime) or --gang FILE", NULL);
  if (o->has_tier && o->tier_name)
    return fail_usage("--highest-tier and --highest-tier-name exclude each other", NULL);
  return 0;
}

/* Loads paths and re-encodes every document as compact JSON, one entry
 * each.  Entries and their data are malloc'd into *out (free with
 * free_bytes).  Problems go to diags. */
static int load_as_bytes(const char *const *paths, size_t n, ProtobufCBinaryData **out,
                         size_t *n_out,
                         struct gc_diags *diags) {
  *out = NULL;
  *n_out = 0;
  struct gb_docset *ds = gb_docset_new(NULL);
  if (!ds)
    return GC_ENOMEM;
  int rc = 0;
  for (size_t i = 0; i < n; i++)
    gb_manifest_load_path(ds, paths[i], diags);
  if (diags->errors) {
    rc = GC_EINVAL;
    goto out;
  }
  *out = calloc(ds->n ? ds->n : 1, sizeof(**out));
  if (!*out) {
    rc = GC_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < ds->n; i++) {
    char *text = NULL;
    size_t len = 0;
    rc = gb_emit_json(ds->docs[i].root, 0, &text, &len);
    if (rc)
      goto out;
    (*out)[i].data = (uint8_t *)text;
    (*out)[i].len = len;
    *n_out = i + 1;
  }
out:
  gb_docset_free(ds);
  return rc;
}

static void free_bytes(ProtobufCBinaryData *b, size_t n) {
  for (size_t i = 0; b && i < n; i++)
    free(b[i].data);
  free(b);
}

static void print_status(const struct gb_rpc_status *st) {
  fprintf(stderr, "gangbridge call: %s: %s\n", gb_rpc_code_name(st->code),
          st->message ? st->message : "");
}

static int write_out(const char *text, size_t len) {
  return fwrite(text, 1, len, stdout) == len ? 0 : GC_EIO;
}

static void fill_calc(const struct call_opts *o, Gangbridge__V1__CalculateRequest *req,
                      ProtobufCBinaryData *docs, size_t n) {
  req->manifests = docs;
  req->n_manifests = n;
  req->backend = o->backend;
  req->gang_scope = o->scope;
  if (o->ns)
    req->default_namespace = (char *)o->ns;
  if (o->trainjob)
    req->trainjob = (char *)o->trainjob;
}

static int do_calculate(const struct call_opts *o, struct gb_rpc_client *cl,
                        struct gc_diags *diags) {
  ProtobufCBinaryData *docs = NULL;
  size_t n = 0;
  ProtobufCMessage *reply = NULL;
  struct gb_rpc_status st = {0, NULL};
  int status = GB_EXIT_INPUT;
  if (load_as_bytes(o->files, o->n_files, &docs, &n, diags))
    goto out;
  Gangbridge__V1__CalculateRequest req;
  gangbridge__v1__calculate_request__init(&req);
  fill_calc(o, &req, docs, n);
  if (gb_rpc_client_call(cl, "/" GB_RPC_SERVICE_CALCULATOR "/Calculate", &req.base,
                         &gangbridge__v1__calculate_response__descriptor, o->timeout_ms, &reply,
                         &st) ||
      st.code != GB_RPC_OK) {
    print_status(&st);
    goto out;
  }
  const Gangbridge__V1__CalculateResponse *resp = (const Gangbridge__V1__CalculateResponse *)reply;
  if (resp->gang)
    for (size_t i = 0; i < resp->gang->n_warnings; i++)
      fprintf(stderr, "warning: %s/%s: %s\n", resp->gang->namespace_, resp->gang->name,
              resp->gang->warnings[i]->message);
  if (!o->yaml) {
    if (write_out((const char *)resp->pod_group_json.data, resp->pod_group_json.len))
      goto out;
  } else {
    /* The PodGroup arrives as JSON; print it as render -o yaml would. */
    struct gb_docset *ds = gb_docset_new(NULL);
    char *text = NULL;
    size_t len = 0;
    int rc = ds ? gb_manifest_load_buffer(ds, "reply", (const char *)resp->pod_group_json.data,
                                          resp->pod_group_json.len, diags)
                : GC_ENOMEM;
    if (!rc && ds->n == 1) {
      const struct gc_value *doc = ds->docs[0].root;
      rc = gb_emit_yaml(&doc, 1, &text, &len);
    } else if (!rc) {
      rc = GC_EINVAL;
    }
    if (!rc)
      rc = write_out(text, len);
    free(text);
    gb_docset_free(ds);
    if (rc) {
      gc_diags_addf(diags, "gangbridge call: cannot print the PodGroup: %s", gc_diag_strerror(rc));
      goto out;
    }
  }
  status = GB_EXIT_OK;
out:
  if (reply)
    protobuf_c_message_free_unpacked(reply, NULL);
  gb_rpc_status_clear(&st);
  free_bytes(docs, n);
  return status;
}

static int do_evaluate(const struct call_opts *o, struct gb_rpc_client *cl,
                       struct gc_diags *diags) {
  ProtobufCBinaryData *docs = NULL, *cluster = NULL;
  size_t n = 0, n_cluster = 0;
  ProtobufCMessage *reply = NULL;
  struct gb_rpc_status st = {0, NULL};
  int status = GB_EXIT_INPUT;
  Gangbridge__V1__EvaluateRequest req;
  Gangbridge__V1__CalculateRequest calc;
  Gangbridge__V1__TopologyPolicy policy;
  gangbridge__v1__evaluate_request__init(&req);
  gangbridge__v1__calculate_request__init(&calc);
  gangbridge__v1__topology_policy__init(&policy);
  if (o->gang_file) {
    /* A compact Gang document travels as the calculate manifests would:
     * the server recognises kind Gang among them. */
    if (load_as_bytes(&o->gang_file, 1, &docs, &n, diags))
      goto out;
  } else if (load_as_bytes(o->files, o->n_files, &docs, &n, diags)) {
    goto out;
  }
  fill_calc(o, &calc, docs, n);
  req.gang_source_case = GANGBRIDGE__V1__EVALUATE_REQUEST__GANG_SOURCE_CALCULATE;
  req.calculate = &calc;
  if (o->mode || o->has_tier || o->tier_name) {
    if (o->mode)
      policy.mode = (char *)o->mode;
    if (o->has_tier) {
      policy.highest_tier_opt_case = GANGBRIDGE__V1__TOPOLOGY_POLICY__HIGHEST_TIER_OPT_HIGHEST_TIER;
      policy.highest_tier = (int32_t)o->tier;
    }
    if (o->tier_name)
      policy.highest_tier_name = (char *)o->tier_name;
    req.policy = &policy;
  }
  if (o->n_cluster && load_as_bytes(o->cluster, o->n_cluster, &cluster, &n_cluster, diags))
    goto out;
  req.cluster = cluster;
  req.n_cluster = n_cluster;
  req.levels = (char **)o->levels;
  req.n_levels = o->n_levels;
  req.profile = o->profile;
  if (gb_rpc_client_call(cl, "/" GB_RPC_SERVICE_PLACEMENT "/Evaluate", &req.base,
                         &gangbridge__v1__evaluate_response__descriptor, o->timeout_ms, &reply,
                         &st) ||
      st.code != GB_RPC_OK) {
    print_status(&st);
    goto out;
  }
  const Gangbridge__V1__EvaluateResponse *resp = (const Gangbridge__V1__EvaluateResponse *)reply;
  if (write_out((const char *)resp->place_json.data, resp->place_json.len))
    goto out;
  status = GB_EXIT_OK; /* as place: evaluated, feasible or not (see the output) */
out:
  if (reply)
    protobuf_c_message_free_unpacked(reply, NULL);
  gb_rpc_status_clear(&st);
  free_bytes(docs, n);
  free_bytes(cluster, n_cluster);
  return status;
}

static int do_health(const struct call_opts *o, struct gb_rpc_client *cl) {
  Grpc__Health__V1__HealthCheckRequest req;
  grpc__health__v1__health_check_request__init(&req);
  if (o->service)
    req.service = (char *)o->service;
  ProtobufCMessage *reply = NULL;
  struct gb_rpc_status st = {0, NULL};
  int status = GB_EXIT_INPUT;
  if (gb_rpc_client_call(cl, "/" GB_RPC_SERVICE_HEALTH "/Check", &req.base,
                         &grpc__health__v1__health_check_response__descriptor, o->timeout_ms,
                         &reply, &st) ||
      st.code != GB_RPC_OK) {
    print_status(&st);
    goto out;
  }
  const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
      &grpc__health__v1__health_check_response__serving_status__descriptor,
      ((const Grpc__Health__V1__HealthCheckResponse *)reply)->status);
  printf("%s\n", v ? v->name : "UNKNOWN");
  status = ((const Grpc__Health__V1__HealthCheckResponse *)reply)->status ==
                   GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
               ? GB_EXIT_OK
               : GB_EXIT_INPUT;
out:
  if (reply)
    protobuf_c_message_free_unpacked(reply, NULL);
  gb_rpc_status_clear(&st);
  return status;
}

int gb_cmd_call(int argc, char **argv) {
  struct call_opts o;
  memset(&o, 0, sizeof(o));
  struct gc_diags diags;
  gc_diags_init(&diags);
  struct gb_rpc_client *cl = NULL;
  int status = GB_EXIT_USAGE;
  int rc = parse_args(argc, argv, &o);
  if (rc == 1)
    status = GB_EXIT_OK;
  if (rc)
    goto out;
  rc = gb_rpc_client_new(&o.client, &cl, &diags);
  if (rc) {
    status = rc == GC_EUSAGE ? GB_EXIT_USAGE : GB_EXIT_INPUT;
    goto out;
  }
  switch (o.kind) {
  case CALL_CALCULATE: status = do_calculate(&o, cl, &diags); break;
  case CALL_EVALUATE: status = do_evaluate(&o, cl, &diags); break;
  case CALL_HEALTH: status = do_health(&o, cl); break;
  }
  fflush(stdout);
out:
  gb_diagprint_write(stderr, NULL, &diags);
  gb_rpc_client_free(cl);
  gc_diags_destroy(&diags);
  free(o.files);
  free(o.cluster);
  free(o.levels);
  free(o.levels_buf);
  return status;
}
