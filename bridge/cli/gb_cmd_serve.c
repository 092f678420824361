/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_serve: `gangbridge serve`, the long-running service.  ONE flag
 * parser serves both modes: the few flags only --offline has (--offline,
 * --cluster, --levels) are taken out of argv first, and every other flag
 * goes through gb_serve_config_parse_args, so a flag takes the same values and
 * gives the same errors online and offline (`--grace-period 5s` in both).
 * Without --offline, serve runs the Kubernetes controller (gb_serve.c, which
 * starts the same gRPC server).  With --offline (no cluster) it runs the
 * gRPC side only: GangCalculator, PlacementEvaluator (with a live snapshot
 * loaded from --cluster files or fed by ReplaceSnapshot/UpdateNodes) and
 * grpc.health.v1.Health, plus, with --http-addr, the HTTP probes (/healthz,
 * /livez, /readyz) on the same hardened server as the controller's.
 *
 * Offline structure: serve_start starts every front end, the main thread
 * waits for SIGTERM or SIGINT (gb_stopsig), and serve_stop stops them in
 * reverse order.  The signal watcher starts before anything is read, so a
 * signal during a start-up stuck on a slow file or FIFO ends the process at
 * once (status 128 + signal) instead of waiting for a start-up that may
 * never finish.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_addr.h"
#include "gb_cli.h"
#include "gb_diagprint.h"
#include "gb_health.h"
#include "gb_http.h"
#include "gb_manifest.h"
#include "gb_rpc_server.h"
#include "gb_rpc_service.h"
#include "gb_rpc_options.h"
#include "gb_serve.h"
#include "gb_serve_config.h"
#include "gb_stopsig.h"
#include "tp_snapshot.h"

/* The flags only --offline has.  They are not configuration keys (a cluster
 * snapshot from files makes no sense in a config file for the controller). */
struct serve_flags {
  int offline;
  int http_given;       /* --http-addr was on the command line */
  const char **cluster; /* --cluster paths for the initial live snapshot */
  size_t n_cluster;
  char *levels_buf; /* --levels, split in place into levels[] */
  const char *levels[TP_MAX_LEVELS];
  size_t n_levels;
  char **rest; /* argv without the flags above, for gb_serve_config_parse_args */
  int n_rest;
};

/* What the offline front ends run with, derived from the parsed config. */
struct serve_config {
  const struct gb_serve_config *cfg;
  const struct serve_flags *f;
  struct gb_rpc_config rpc;
  const char *http_addr; /* http.address when --http-addr was given, or NULL */
};

struct serve_state {
  struct gb_rpc_service *svc;
  struct gb_rpc_server *rpc;
  struct gb_health *health;
  struct gb_http *http;
};

static void offline_usage(FILE *f) {
  fprintf(f,
          "\n"
          "Offline (--offline: no cluster; the gRPC API, and with --http-addr the probes;\n"
          "the Kubernetes, webhook and leader-election settings are not used):\n"
          "  --offline                 run without a cluster, gRPC only (needs --grpc-addr)\n"
          "  --cluster PATH            Nodes, Pods, HyperNodes for the initial live\n"
          "                            snapshot (repeatable; file, directory or -)\n"
          "  --levels K1,K2            node-label levels instead of HyperNodes\n");
}

static int split_levels(struct serve_flags *f, const char *arg) {
  free(f->levels_buf);
  f->levels_buf = strdup(arg);
  f->n_levels = 0;
  if (!f->levels_buf)
    return GC_ENOMEM;
  char *p = f->levels_buf;
  while (p) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = '\0';
    if (!*p || f->n_levels == TP_MAX_LEVELS)
      return GC_EUSAGE;
    f->levels[f->n_levels++] = p;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

/* Takes one offline-only flag at argv[*i] (advancing *i past its value).
 * Returns 1 if argv[*i] is not one, 0 when taken, or GC_EUSAGE / GC_ENOMEM
 * (message in d). */
static int take_offline_flag(struct serve_flags *f, int argc, char **argv, int *i,
                             struct gc_diags *d) {
  const char *a = argv[*i];
  if (!strcmp(a, "--offline")) {
    f->offline = 1;
    return 0;
  }
  int is_cluster = !strcmp(a, "--cluster") || !strncmp(a, "--cluster=", 10);
  int is_levels = !strcmp(a, "--levels") || !strncmp(a, "--levels=", 9);
  if (!is_cluster && !is_levels)
    return 1;
  const char *eq = strchr(a, '=');
  const char *val = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
  if (!val) {
    gc_diags_addf(d, "option '%.32s' needs a value", a);
    return GC_EUSAGE;
  }
  if (is_cluster) {
    f->cluster[f->n_cluster++] = val;
    return 0;
  }
  int rc = split_levels(f, val);
  if (rc == GC_EUSAGE)
    gc_diags_addf(d, "--levels takes 1..%d comma-separated label keys", TP_MAX_LEVELS);
  return rc;
}

/* Splits argv into the offline-only flags and the rest (f->rest, argv[0]
 * first).  Returns 0, GC_EUSAGE or GC_ENOMEM (message in d). */
static int split_flags(int argc, char **argv, struct serve_flags *f, struct gc_diags *d) {
  f->cluster = calloc((size_t)argc + 1, sizeof(*f->cluster));
  f->rest = calloc((size_t)argc + 1, sizeof(*f->rest));
  if (!f->cluster || !f->rest)
    return GC_ENOMEM;
  f->rest[f->n_rest++] = argv[0];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) {
      while (i < argc)
        f->rest[f->n_rest++] = argv[i++];
      break;
    }
    int rc = take_offline_flag(f, argc, argv, &i, d);
    if (rc < 0)
      return rc;
    if (rc == 0)
      continue;
    if (!strcmp(argv[i], "--http-addr") || !strncmp(argv[i], "--http-addr=", 12))
      f->http_given = 1;
    f->rest[f->n_rest++] = argv[i];
  }
  return 0;
}

/* The checks only the mode knows.  Returns 0 or GC_EUSAGE (message in d). */
static int check_mode(const struct serve_flags *f, const struct gb_serve_config *cfg,
                      struct gc_diags *d) {
  if (!f->offline && (f->n_cluster || f->n_levels)) {
    gc_diags_addf(d, "--cluster and --levels need --offline (the controller reads the cluster)");
    return GC_EUSAGE;
  }
  if (f->offline && !*cfg->grpc.address) {
    gc_diags_addf(d, "--offline needs --grpc-addr HOST:PORT");
    return GC_EUSAGE;
  }
  if (f->n_levels && !f->n_cluster) {
    gc_diags_addf(d, "--levels needs --cluster");
    return GC_EUSAGE;
  }
  return 0;
}

/* Parses every flag of both modes.  Returns an exit status when serve is
 * done (help, --print-config, an error: printed), or -1 to run. */
static int parse(int argc, char **argv, struct serve_flags *f, struct gb_serve_config *cfg,
                 struct gc_diags *d) {
  int rc = split_flags(argc, argv, f, d);
  if (!rc)
    rc = gb_serve_config_parse_args(cfg, f->n_rest, f->rest, stdout, d);
  if (rc == 1) {
    offline_usage(stdout);
    gb_serve_config_write_help(cfg, stdout);
    return GB_EXIT_OK;
  }
  if (rc == 3)
    return GB_EXIT_OK; /* --print-keys */
  if (rc >= 0 && check_mode(f, cfg, d))
    rc = GC_EUSAGE;
  if (rc < 0) {
    gb_diagprint_write(stderr, "gangbridge serve: ", d);
    return rc == GC_EUSAGE ? GB_EXIT_USAGE : GB_EXIT_INPUT;
  }
  if (gb_serve_config_validate(cfg, d)) {
    gb_diagprint_write(stderr, "gangbridge serve: ", d);
    return GB_EXIT_INPUT;
  }
  if (rc == 2) {
    gb_serve_config_write(cfg, stdout);
    return GB_EXIT_OK;
  }
  return -1;
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
  for (size_t i = 0; i < c->f->n_cluster; i++)
    gb_manifest_load_path(ds, c->f->cluster[i], diags);
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
  rc = gb_rpc_service_snapshot_replace(svc, docs, origins, ds->n, c->f->levels, c->f->n_levels,
                                       diags);
out:
  free(docs);
  free(origins);
  gb_docset_free(ds);
  return rc;
}

/* The "grpc-listener" check (ctx: the started gRPC server), as online. */
static int grpc_listener_check(void *ctx, char *reason, size_t size) {
  return gb_rpc_server_check(ctx, reason, size);
}

/* Starts the HTTP probes with the controller's probes server's limits
 * (http.* in docs/operating.md). */
static int start_probes(const struct serve_config *c, struct serve_state *st,
                        struct gc_diags *diags) {
  char host[128];
  unsigned port = 0;
  if (gb_addr_split(c->http_addr, host, sizeof(host), &port)) {
    gc_diags_addf(diags, "--http-addr: \"%.128s\" is not HOST:PORT (numeric host)", c->http_addr);
    return GC_EUSAGE;
  }
  st->health = gb_health_new();
  if (!st->health)
    return GC_ENOMEM;
  int rc = gb_health_add_check(st->health, GB_HEALTH_LIVE | GB_HEALTH_READY, "grpc-listener",
                               grpc_listener_check, st->rpc);
  if (rc)
    return rc;
  struct gb_http_route routes[3];
  size_t n = gb_health_routes(st->health, routes, 3);
  struct gb_http_config hc;
  gb_http_config_init(&hc);
  hc.name = "probes";
  hc.address = host;
  hc.port = port;
  hc.max_connections = (unsigned)c->cfg->http.max_connections;
  hc.max_per_ip = (unsigned)c->cfg->http.max_per_ip;
  hc.header_timeout_s = (unsigned)ceil(c->cfg->http.header_timeout_s);
  rc = gb_http_start(&hc, routes, n, &st->http, diags);
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
  if (c->f->n_cluster && (rc = load_cluster(c, st->svc, diags)))
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

/* Runs the offline server until SIGTERM or SIGINT.  Returns the exit status. */
static int serve_offline(const struct gb_serve_config *cfg, const struct serve_flags *f) {
  struct serve_config c = {cfg, f, {0}, f->http_given ? cfg->http.address : NULL};
  struct serve_state st;
  struct gc_diags diags;
  memset(&st, 0, sizeof(st));
  gc_diags_init(&diags);
  gb_rpc_options_apply(&cfg->grpc, &c.rpc);
  /* The listener self-check runs in every mode: with --http-addr it fails
   * /healthz, /livez and /readyz ("grpc-listener") once the port stops
   * accepting, so the kubelet restarts a serve whose gRPC port died. */
  int status = GB_EXIT_INPUT;
  struct gb_stopsig *sigs = NULL;
  if (gb_stopsig_start("gangbridge serve", &sigs)) {
    fprintf(stderr, "gangbridge serve: cannot start the signal watcher\n");
    goto out;
  }
  signal(SIGPIPE, SIG_IGN);

  int rc = serve_start(&c, &st, &diags);
  if (rc) {
    gb_diagprint_write(stderr, "gangbridge serve: ", &diags);
    fprintf(stderr, "gangbridge serve: cannot start: %s\n", gc_diag_strerror(rc));
    status = rc == GC_EUSAGE ? GB_EXIT_USAGE : GB_EXIT_INPUT;
    serve_stop(&st);
    gb_stopsig_free(sigs);
    goto out;
  }
  gb_diagprint_write(stderr, "gangbridge serve: ", &diags); /* warnings from the initial snapshot */
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
  return status;
}

int gb_cmd_serve(int argc, char **argv) {
  struct serve_flags f;
  struct gb_serve_config cfg;
  struct gc_diags d;
  memset(&f, 0, sizeof(f));
  gc_diags_init(&d);
  int status = GB_EXIT_INPUT;
  if (gb_serve_config_init(&cfg, &d)) {
    gb_diagprint_write(stderr, "gangbridge serve: ", &d);
    fprintf(stderr, "gangbridge serve: cannot set the defaults\n");
    goto out;
  }
  status = parse(argc, argv, &f, &cfg, &d);
  if (status < 0)
    status = f.offline ? serve_offline(&cfg, &f) : gb_serve_controller(&cfg);
out:
  gc_diags_destroy(&d);
  gb_serve_config_destroy(&cfg);
  free(f.cluster);
  free(f.rest);
  free(f.levels_buf);
  return status;
}
