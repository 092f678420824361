/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_serve: `gangbridge serve`, the long-running service.  Without
 * --offline it runs the Kubernetes controller (gb_controller.c, which
 * starts the same gRPC server).  With --offline (no cluster) it runs the
 * gRPC side only: GangCalculator, PlacementEvaluator (with a live snapshot
 * loaded from --cluster files or fed by ReplaceSnapshot/UpdateNodes) and
 * grpc.health.v1.Health, plus, with --http-addr, the HTTP probes (/healthz,
 * /livez, /readyz) on the same hardened server as the controller's.
 *
 * Structure, so other front ends (the Kubernetes watch, HTTP) slot in:
 * parse_args fills a struct serve_config (one sub-struct per front end),
 * serve_start starts every front end, the main thread waits for SIGTERM or
 * SIGINT (gb_stopsig), and serve_stop stops them in reverse order.  The
 * signal watcher starts before anything is read, so a signal during a
 * start-up stuck on a slow file or FIFO ends the process at once (status
 * 128 + signal) instead of waiting for a start-up that may never finish.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_cli.h"
#include "gb_config.h"
#include "gb_controller.h"
#include "gb_diagprint.h"
#include "gb_health.h"
#include "gb_http.h"
#include "gb_manifest.h"
#include "gb_rpc_server.h"
#include "gb_rpc_service.h"
#include "gb_stopsig.h"
#include "tp_snapshot.h"

struct serve_config {
  int offline;
  struct gb_rpc_config rpc;
  const char *http_addr; /* --http-addr, or NULL: no HTTP probes */
  const char **cluster; /* --cluster paths for the initial live snapshot */
  size_t n_cluster;
  char *levels_buf; /* --levels, split in place into levels[] */
  const char *levels[TP_MAX_LEVELS];
  size_t n_levels;
};

struct serve_state {
  struct gb_rpc_service *svc;
  struct gb_rpc_server *rpc;
  struct gb_health *health;
  struct gb_http *http;
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: gangbridge serve --offline --grpc-addr HOST:PORT [options]\n"
          "\n"
          "Runs the gangbridge service: gRPC GangCalculator, PlacementEvaluator and\n"
          "grpc.health.v1.Health.  Stops gracefully on SIGTERM or SIGINT.\n"
          "\n"
          "  --offline                  run without a cluster, gRPC only (without it,\n"
          "                             serve runs the Kubernetes controller)\n"
          "  --grpc-addr HOST:PORT      gRPC listen address (port 0: any free port)\n"
          "  --grpc-tls-cert FILE       PEM certificate chain: serve TLS\n"
          "  --grpc-tls-key FILE        PEM private key for --grpc-tls-cert\n"
          "  --grpc-client-ca FILE      PEM CA bundle: require client certificates\n"
          "                             signed by it (mutual TLS)\n"
          "  --grpc-threads N           worker threads (default: CPUs, at least 2)\n"
          "  --max-message-bytes N      receive and send cap per message (default 32 MiB)\n"
          "  --grace-period SECONDS     time running calls get at shutdown (default 5)\n"
          "  --cluster PATH             Nodes, Pods, HyperNodes for the initial live\n"
          "                             snapshot (repeatable; file, directory or -)\n"
          "  --levels K1,K2             node-label levels instead of HyperNodes\n"
          "  --http-addr HOST:PORT      also serve /healthz, /livez, /readyz over HTTP\n"
          "                             (limits as http.* in docs/operating.md)\n"
          "  -h, --help                 show this help\n");
}

/* Parses a decimal integer in [lo, hi].  Returns 0 or GC_EUSAGE. */
static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return GC_EUSAGE;
  *out = v;
  return 0;
}

static int split_levels(struct serve_config *c, const char *arg) {
  free(c->levels_buf);
  c->levels_buf = strdup(arg);
  c->n_levels = 0;
  if (!c->levels_buf)
    return GC_ENOMEM;
  char *p = c->levels_buf;
  while (p) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = '\0';
    if (!*p || c->n_levels == TP_MAX_LEVELS)
      return GC_EUSAGE;
    c->levels[c->n_levels++] = p;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

/* Returns 0, 1 for --help (printed) or GC_EUSAGE (message printed). */
static int parse_args(int argc, char **argv, struct serve_config *c) {
  enum {
    OPT_OFFLINE = 256, OPT_ADDR, OPT_CERT, OPT_KEY, OPT_CA, OPT_THREADS, OPT_MAXMSG, OPT_GRACE,
    OPT_CLUSTER, OPT_LEVELS, OPT_HTTP
  };
  static const struct option longopts[] = {
      {"offline", no_argument, NULL, OPT_OFFLINE},
      {"grpc-addr", required_argument, NULL, OPT_ADDR},
      {"grpc-tls-cert", required_argument, NULL, OPT_CERT},
      {"grpc-tls-key", required_argument, NULL, OPT_KEY},
      {"grpc-client-ca", required_argument, NULL, OPT_CA},
      {"grpc-threads", required_argument, NULL, OPT_THREADS},
      {"max-message-bytes", required_argument, NULL, OPT_MAXMSG},
      {"grace-period", required_argument, NULL, OPT_GRACE},
      {"cluster", required_argument, NULL, OPT_CLUSTER},
      {"levels", required_argument, NULL, OPT_LEVELS},
      {"http-addr", required_argument, NULL, OPT_HTTP},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  gb_rpc_config_init(&c->rpc);
  c->cluster = calloc((size_t)argc + 1, sizeof(*c->cluster));
  if (!c->cluster)
    return GC_ENOMEM;
  optind = 1;
  opterr = 0;
  int o;
  long v;
  while ((o = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (o) {
    case OPT_OFFLINE: c->offline = 1; break;
    case OPT_ADDR: c->rpc.addr = optarg; break;
    case OPT_CERT: c->rpc.tls_cert_file = optarg; break;
    case OPT_KEY: c->rpc.tls_key_file = optarg; break;
    case OPT_CA: c->rpc.client_ca_file = optarg; break;
    case OPT_THREADS:
      if (parse_long(optarg, 1, GB_RPC_MAX_THREADS, &v)) {
        fprintf(stderr, "gangbridge serve: --grpc-threads must be 1..%d, not '%s'\n",
                GB_RPC_MAX_THREADS, optarg);
        return GC_EUSAGE;
      }
      c->rpc.threads = (int)v;
      break;
    case OPT_MAXMSG:
      if (parse_long(optarg, 1024, 1L << 30, &v)) {
        fprintf(stderr,
                "gangbridge serve: --max-message-bytes must be 1024..1073741824, not '%s'\n",
                optarg);
        return GC_EUSAGE;
      }
      c->rpc.max_message_bytes = (size_t)v;
      break;
    case OPT_GRACE:
      if (parse_long(optarg, 0, 3600, &v)) {
        fprintf(stderr, "gangbridge serve: --grace-period must be 0..3600 seconds, not '%s'\n",
                optarg);
        return GC_EUSAGE;
      }
      /* 0 s still gives calls 1 ms, since 0 means "default" in the config. */
      c->rpc.grace_ms = v ? (int)v * 1000 : 1;
      break;
    case OPT_CLUSTER: c->cluster[c->n_cluster++] = optarg; break;
    case OPT_HTTP: c->http_addr = optarg; break;
    case OPT_LEVELS:
      if (split_levels(c, optarg)) {
        fprintf(stderr, "gangbridge serve: --levels takes 1..%d comma-separated label keys\n",
                TP_MAX_LEVELS);
        return GC_EUSAGE;
      }
      break;
    case 'h': usage(stdout); return 1;
    case ':':
      fprintf(stderr, "gangbridge serve: option '%s' needs a value\n", argv[optind - 1]);
      return GC_EUSAGE;
    default:
      fprintf(stderr, "gangbridge serve: unknown option '%s'\n", argv[optind - 1]);
      return GC_EUSAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "gangbridge serve: unexpected argument '%s'\n", argv[optind]);
    return GC_EUSAGE;
  }
  if (!c->offline) {
    fprintf(stderr, "gangbridge serve: this mode needs --offline\n");
    return GC_EUSAGE;
  }
  if (!c->rpc.addr) {
    fprintf(stderr, "gangbridge serve: --grpc-addr HOST:PORT is required\n");
    return GC_EUSAGE;
  }
  if (c->n_levels && !c->n_cluster) {
    fprintf(stderr, "gangbridge serve: --levels needs --cluster\n");
    return GC_EUSAGE;
  }
  return 0;
}

/* Loads --cluster paths into the service's live snapshot. */
static int load_cluster(const struct serve_config *c, struct gb_rpc_service *svc,
                        struct gc_diags *diags) {
  struct gb_docset *ds = gb_docset_new(NULL);
  const struct gc_value **docs = NULL;
  const char **origins = NULL;
  int rc = GC_ENOMEM;
  if (!ds)
    goto out;
  for (size_t i = 0; i < c->n_cluster; i++)
    gb_load_path(ds, c->cluster[i], diags);
  if (diags->errors) {
    rc = GC_EINVAL;
    goto out;
  }
  docs = calloc(ds->n ? ds->n : 1, sizeof(*docs));
  origins = calloc(ds->n ? ds->n : 1, sizeof(*origins));
  if (!docs || !origins)
    goto out;
  for (size_t i = 0; i < ds->n; i++) {
    docs[i] = ds->docs[i].root;
    origins[i] = gc_arena_printf(ds->arena, "%s:%u:%u", ds->docs[i].file, ds->docs[i].line,
                                 ds->docs[i].col);
  }
  rc = gb_rpc_service_snapshot_replace(svc, docs, origins, ds->n, c->levels, c->n_levels, diags);
out:
  free(docs);
  free(origins);
  gb_docset_free(ds);
  return rc;
}

/* Starts the HTTP probes with the same limits as the controller's probes
 * server (http.* defaults in docs/operating.md). */
static int start_probes(const struct serve_config *c, struct serve_state *st,
                        struct gc_diags *diags) {
  char host[128];
  unsigned port = 0;
  if (gb_config_split_addr(c->http_addr, host, sizeof(host), &port)) {
    gc_diags_addf(diags, "--http-addr: \"%.128s\" is not HOST:PORT (numeric host)", c->http_addr);
    return GC_EUSAGE;
  }
  st->health = gb_health_new();
  if (!st->health)
    return GC_ENOMEM;
  struct gb_http_route routes[3];
  size_t n = gb_health_routes(st->health, routes, 3);
  struct gb_http_config hc;
  gb_http_config_init(&hc);
  hc.name = "probes";
  hc.address = host;
  hc.port = port;
  hc.max_connections = 64;
  hc.max_per_ip = 16;
  hc.header_timeout_s = 5;
  int rc = gb_http_start(&hc, routes, n, &st->http, diags);
  if (rc)
    return rc;
  fprintf(stderr, "gangbridge serve: http probes listening on %s:%u\n", host,
          gb_http_port(st->http));
  return 0;
}

/* Starts every front end.  Returns 0 or a GC_E* code (problems in diags). */
static int serve_start(const struct serve_config *c, struct serve_state *st,
                       struct gc_diags *diags) {
  int rc;
  st->svc = gb_rpc_service_new();
  if (!st->svc)
    return GC_ENOMEM;
  /* Offline, gRPC callers are the only source of the snapshot. */
  gb_rpc_service_allow_writes(st->svc, 1);
  if (c->n_cluster && (rc = load_cluster(c, st->svc, diags)))
    return rc;
  if ((rc = gb_rpc_server_new(&c->rpc, &st->rpc, diags)))
    return rc;
  if ((rc = gb_rpc_service_register(st->svc, st->rpc)))
    return rc;
  if ((rc = gb_rpc_server_start(st->rpc, diags)))
    return rc;
  /* Print the bound port: with port 0 this is the only way to learn it. */
  const char *colon = strrchr(c->rpc.addr, ':');
  int hostlen = colon ? (int)(colon - c->rpc.addr) : (int)strlen(c->rpc.addr);
  fprintf(stderr, "gangbridge serve: grpc listening on %.*s:%d (%s)\n", hostlen, c->rpc.addr,
          gb_rpc_server_port(st->rpc),
          c->rpc.client_ca_file ? "mutual TLS" : c->rpc.tls_cert_file ? "TLS" : "plaintext");
  fflush(stderr);
  return c->http_addr ? start_probes(c, st, diags) : 0;
}

/* Stops the front ends in reverse order; safe on a partial start. */
static void serve_stop(struct serve_state *st) {
  if (st->health)
    gb_health_shutdown(st->health);
  gb_http_stop(st->http);
  st->http = NULL;
  gb_health_free(st->health);
  st->health = NULL;
  if (st->svc)
    gb_rpc_service_set_serving(st->svc, 0);
  gb_rpc_server_free(st->rpc);
  st->rpc = NULL;
  gb_rpc_service_free(st->svc);
  st->svc = NULL;
}

int gb_cmd_serve(int argc, char **argv) {
  /* Without --offline, serve runs the controller (gb_controller.c). */
  int offline = 0;
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    offline |= !strcmp(argv[i], "--offline");
  if (!offline)
    return gb_controller_serve(argc, argv);
  struct serve_config c;
  struct serve_state st;
  struct gc_diags diags;
  memset(&c, 0, sizeof(c));
  memset(&st, 0, sizeof(st));
  gc_diags_init(&diags);
  int status = GB_EXIT_USAGE;
  int rc = parse_args(argc, argv, &c);
  if (rc == 1)
    status = GB_EXIT_OK;
  if (rc)
    goto out;

  struct gb_stopsig *sigs = NULL;
  if (gb_stopsig_start("gangbridge serve", &sigs)) {
    fprintf(stderr, "gangbridge serve: cannot start the signal watcher\n");
    status = GB_EXIT_INPUT;
    goto out;
  }
  signal(SIGPIPE, SIG_IGN);

  rc = serve_start(&c, &st, &diags);
  if (rc) {
    gb_diag_print(stderr, NULL, &diags);
    fprintf(stderr, "gangbridge serve: cannot start: %s\n", gc_strerror(rc));
    status = rc == GC_EUSAGE ? GB_EXIT_USAGE : GB_EXIT_INPUT;
    serve_stop(&st);
    gb_stopsig_free(sigs);
    goto out;
  }
  gb_diag_print(stderr, NULL, &diags); /* warnings from the initial snapshot */
  gb_stopsig_started(sigs);
  int sig = gb_stopsig_wait(sigs);
  fprintf(stderr, "gangbridge serve: %s received, stopping (grace %d ms)\n",
          sig == SIGTERM ? "SIGTERM" : "SIGINT", c.rpc.grace_ms);
  fflush(stderr);
  serve_stop(&st);
  gb_stopsig_free(sigs);
  fprintf(stderr, "gangbridge serve: stopped\n");
  status = GB_EXIT_OK;
out:
  gc_diags_destroy(&diags);
  free(c.cluster);
  free(c.levels_buf);
  return status;
}
