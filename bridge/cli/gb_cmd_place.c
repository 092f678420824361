/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_place: `gangbridge place` evaluates where a gang would go on a
 * cluster topology and, when nowhere, why.  The cluster is read from
 * manifests (Nodes, Pods, HyperNodes, as `kubectl get -o yaml` prints them),
 * the gang from a compact Gang document or a TrainJob with its runtimes.
 * Output is a table or JSON, optionally an SVG drawing of the tree.  Exit
 * status: 0 when the gang was evaluated (feasible or not: see "feasible"),
 * 1 for input errors, 2 for usage errors.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_cli.h"
#include "gb_diagprint.h"
#include "gb_emit.h"
#include "gb_manifest.h"
#include "gb_place_json.h"
#include "gb_place_svg.h"
#include "gc_gang.h"
#include "tp_gang.h"
#include "tp_place.h"
#include "tp_snapshot.h"

#define MAX_LEVELS_ARG 1024

struct place_opts {
  const char **cluster;
  size_t n_cluster;
  const char **gang;
  size_t n_gang;
  int has_mode;
  enum tp_mode mode;
  int has_tier;
  int64_t tier;
  const char *tier_name;
  char levels_buf[MAX_LEVELS_ARG];
  const char *levels[TP_MAX_LEVELS + 1];
  size_t n_levels;
  enum tp_profile profile;
  int json;
  const char *svg;
  const char *ns;
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: gangbridge place --cluster PATH [--cluster PATH...] -f PATH [-f PATH...]\n"
          "                        [options]\n"
          "\n"
          "Evaluates where a gang fits on a cluster topology (Volcano HyperNodes or\n"
          "node-label levels) and, when it does not fit, why.  Exits 0 when the gang\n"
          "was evaluated, feasible or not (see the output), 1 for input errors, 2 for\n"
          "usage errors.\n"
          "\n"
          "  -c, --cluster PATH          Nodes, Pods and HyperNodes (file, directory or -)\n"
          "  -f, --filename PATH         the gang: a gangbridge.io/v1alpha1 Gang document,\n"
          "                              or a TrainJob and its runtimes\n"
          "      --mode hard|soft        hard: the whole gang in one domain at tier <= the\n"
          "                              highest tier; soft: the lowest tier that fits, else\n"
          "                              the whole cluster (default: the gang's\n"
          "                              networkTopology, else hard)\n"
          "      --highest-tier N        highest tier allowed in hard mode (default 1)\n"
          "      --highest-tier-name N   the same, by tierName\n"
          "      --levels K1,K2          node-label levels instead of HyperNodes, top\n"
          "                              (coarsest) first; hostname is always the lowest\n"
          "      --profile P             bestfit (default: tightest domain and nodes) or\n"
          "                              spread (most free domain, pods spread over nodes)\n"
          "  -o, --output FORMAT         table (default) or json\n"
          "      --svg FILE              also draw the tree with the placement as SVG\n"
          "  -n, --namespace NS          namespace of TrainJobs that name none\n"
          "  -h, --help                  show this help\n");
}

static int parse_levels(struct place_opts *o, const char *arg) {
  size_t len = strlen(arg);
  if (len == 0 || len >= sizeof(o->levels_buf))
    return GC_EUSAGE;
  memcpy(o->levels_buf, arg, len + 1);
  char *p = o->levels_buf;
  o->n_levels = 0;
  for (;;) {
    char *comma = strchr(p, ',');
    if (comma)
      *comma = 0;
    if (!*p || o->n_levels > TP_MAX_LEVELS)
      return GC_EUSAGE;
    o->levels[o->n_levels++] = p;
    if (!comma)
      break;
    p = comma + 1;
  }
  return GC_OK;
}

static int parse_args(int argc, char **argv, struct place_opts *o) {
  enum { O_MODE = 256, O_TIER, O_TIERNAME, O_LEVELS, O_PROFILE, O_SVG };
  static const struct option longopts[] = {
      {"cluster", required_argument, NULL, 'c'},
      {"filename", required_argument, NULL, 'f'},
      {"mode", required_argument, NULL, O_MODE},
      {"highest-tier", required_argument, NULL, O_TIER},
      {"highest-tier-name", required_argument, NULL, O_TIERNAME},
      {"levels", required_argument, NULL, O_LEVELS},
      {"profile", required_argument, NULL, O_PROFILE},
      {"output", required_argument, NULL, 'o'},
      {"svg", required_argument, NULL, O_SVG},
      {"namespace", required_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  o->cluster = calloc((size_t)argc + 1, sizeof(*o->cluster));
  o->gang = calloc((size_t)argc + 1, sizeof(*o->gang));
  if (!o->cluster || !o->gang)
    return GC_ENOMEM;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":c:f:o:n:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'c': o->cluster[o->n_cluster++] = optarg; break;
    case 'f': o->gang[o->n_gang++] = optarg; break;
    case O_MODE:
      o->has_mode = 1;
      if (!strcmp(optarg, "hard"))
        o->mode = TP_MODE_HARD;
      else if (!strcmp(optarg, "soft"))
        o->mode = TP_MODE_SOFT;
      else {
        fprintf(stderr, "gangbridge place: --mode must be hard or soft, not '%s'\n", optarg);
        return GC_EUSAGE;
      }
      break;
    case O_TIER: {
      char *end;
      errno = 0;
      long long v = strtoll(optarg, &end, 10);
      if (errno || end == optarg || *end || v < 0 || v > 1000000) {
        fprintf(stderr, "gangbridge place: --highest-tier must be an integer from 0, not '%s'\n",
                optarg);
        return GC_EUSAGE;
      }
      o->has_tier = 1;
      o->tier = v;
      break;
    }
    case O_TIERNAME:
      if (!*optarg) {
        fprintf(stderr, "gangbridge place: --highest-tier-name must not be empty\n");
        return GC_EUSAGE;
      }
      o->tier_name = optarg;
      break;
    case O_LEVELS:
      if (parse_levels(o, optarg)) {
        fprintf(stderr,
                "gangbridge place: --levels must be 1 to %d comma-separated label keys, not '%s'\n",
                TP_MAX_LEVELS, optarg);
        return GC_EUSAGE;
      }
      break;
    case O_PROFILE:
      if (!strcmp(optarg, "bestfit"))
        o->profile = TP_PROFILE_BESTFIT;
      else if (!strcmp(optarg, "spread"))
        o->profile = TP_PROFILE_SPREAD;
      else {
        fprintf(stderr, "gangbridge place: --profile must be bestfit or spread, not '%s'\n",
                optarg);
        return GC_EUSAGE;
      }
      break;
    case 'o':
      if (!strcmp(optarg, "json"))
        o->json = 1;
      else if (!strcmp(optarg, "table"))
        o->json = 0;
      else {
        fprintf(stderr, "gangbridge place: -o must be table or json, not '%s'\n", optarg);
        return GC_EUSAGE;
      }
      break;
    case O_SVG: o->svg = optarg; break;
    case 'n': o->ns = optarg; break;
    case 'h': usage(stdout); return 1;
    case ':':
      fprintf(stderr, "gangbridge place: option '%s' needs a value\n", argv[optind - 1]);
      return GC_EUSAGE;
    default:
      fprintf(stderr, "gangbridge place: unknown option '%s'\n", argv[optind - 1]);
      return GC_EUSAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "gangbridge place: unexpected argument '%s'\n", argv[optind]);
    return GC_EUSAGE;
  }
  if (!o->n_cluster || !o->n_gang) {
    fprintf(stderr, "gangbridge place: give the cluster with --cluster PATH and the gang with "
                    "-f PATH\n");
    return GC_EUSAGE;
  }
  if (o->has_tier && o->tier_name) {
    fprintf(stderr, "gangbridge place: give --highest-tier or --highest-tier-name, not both\n");
    return GC_EUSAGE;
  }
  return GC_OK;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */

struct run {
  struct place_opts o;
  struct gb_docset *cluster_docs, *gang_docs;
  struct tp_snapshot *snap;
  struct tp_evaluator *ev;
  struct gc_catalog *catalog;
  struct gc_gang *gcg;
  struct gc_arena *arena;
  struct tp_gang gang;
  struct tp_result res;
  struct gc_diags diags;
};

static int emit_json(struct run *r) {
  struct gc_value *root = NULL;
  int rc = gb_place_json_result_to_value(r->arena, r->snap, &r->gang, &r->res, &root);
  if (rc)
    return GC_ENOMEM;
  char *out = NULL;
  size_t len = 0;
  if ((rc = gb_emit_json(root, 1, &out, &len)))
    return rc;
  fwrite(out, 1, len, stdout);
  free(out);
  return GC_OK;
}

static void emit_table(struct run *r) {
  const struct tp_result *res = &r->res;
  printf("gang %s: %lld pods in %zu pod set(s); mode %s", r->gang.name ? r->gang.name : "-",
         (long long)tp_gang_pods(&r->gang), r->gang.n_sets, tp_mode_name(res->mode));
  if (res->highest_tier >= 0)
    printf(" (tier <= %lld)", (long long)res->highest_tier);
  printf("; profile %s\n", tp_profile_name(res->profile));
  if (!res->feasible) {
    printf("INFEASIBLE: no allowed domain holds the gang\n");
  } else {
    if (res->whole_cluster)
      printf("FEASIBLE: whole cluster (no single HyperNode holds the gang)");
    else
      printf("FEASIBLE: %s (tier %lld%s%s)", res->domain_name, (long long)res->tier,
             res->tier_name ? ", " : "", res->tier_name ? res->tier_name : "");
    printf(": %lld pods on %zu node(s); room for %lld more of these pods in the domain%s\n",
           (long long)res->pods, res->nodes_used, (long long)res->leftover,
           res->exact_search ? " (found by exact search)" : "");
    size_t w = 4, wp = 7;
    for (size_t i = 0; i < res->n_assign; i++) {
      size_t l = strlen(res->assign[i].node), lp = strlen(r->gang.sets[res->assign[i].podset].name);
      w = l > w ? l : w;
      wp = lp > wp ? lp : wp;
    }
    printf("\n%-*s  %-*s  %s\n", (int)w, "NODE", (int)wp, "POD SET", "PODS");
    for (size_t i = 0; i < res->n_assign; i++)
      printf("%-*s  %-*s  %lld\n", (int)w, res->assign[i].node, (int)wp,
             r->gang.sets[res->assign[i].podset].name, (long long)res->assign[i].pods);
  }
  if (res->n_reasons) {
    printf("\n%s\n", res->feasible ? "lower tiers:" : "reasons:");
    for (size_t i = 0; i < res->n_reasons; i++)
      printf("  - %s\n", res->reasons[i]);
  }
}

/* Draws the result (gb_place_svg) and writes the drawing to path.  The
 * file is opened only once the drawing is complete, so a cluster too large
 * to draw leaves no file behind. */
static int write_svg(struct run *r, const char *path) {
  struct gb_buf b;
  gb_buf_init(&b, GB_PLACE_SVG_MAX_BYTES);
  size_t errors = r->diags.errors;
  int rc = gb_place_svg(r->snap, r->ev, &r->gang, &r->res, "--svg", &b, &r->diags);
  if (rc) {
    if (r->diags.errors == errors) /* the buffer's own failure has no message yet */
      gc_diags_addf(&r->diags, "--svg %s: cannot draw: %s", path, gc_diag_strerror(rc));
    goto out;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    gc_diags_addf(&r->diags, "--svg %s: cannot write: %s", path, strerror(errno));
    rc = GC_EIO;
    goto out;
  }
  fwrite(gb_buf_ptr(&b), 1, gb_buf_len(&b), f);
  rc = ferror(f) ? GC_EIO : GC_OK;
  if (fclose(f) && !rc)
    rc = GC_EIO;
  if (rc)
    gc_diags_addf(&r->diags, "--svg %s: write failed", path);
out:
  gb_buf_free(&b);
  return rc;
}

/* ------------------------------------------------------------------ */
/* Run                                                                  */

static int load_cluster(struct run *r) {
  r->cluster_docs = gb_docset_new(NULL);
  if (!r->cluster_docs)
    return GC_ENOMEM;
  for (size_t i = 0; i < r->o.n_cluster; i++)
    gb_manifest_load_path(r->cluster_docs, r->o.cluster[i], &r->diags);
  if (r->diags.errors)
    return GC_EINVAL;
  size_t n = r->cluster_docs->n;
  const struct gc_value **docs = calloc(n + 1, sizeof(*docs));
  const char **origins = calloc(n + 1, sizeof(*origins));
  int rc = GC_ENOMEM;
  if (!docs || !origins)
    goto out;
  for (size_t i = 0; i < n; i++) {
    const struct gb_doc *d = &r->cluster_docs->docs[i];
    docs[i] = d->root;
    origins[i] = gc_arena_printf(r->arena, "%s:%u:%u", d->file, d->line, d->col);
    if (!origins[i])
      goto out;
  }
  struct tp_build_opts bo = {.levels = r->o.levels, .n_levels = r->o.n_levels};
  rc = tp_snapshot_build(docs, origins, n, &bo, &r->snap, &r->diags);
out:
  free(docs);
  free(origins);
  return rc;
}

static int load_gang(struct run *r) {
  r->gang_docs = gb_docset_new(NULL);
  r->catalog = gc_catalog_new();
  if (!r->gang_docs || !r->catalog)
    return GC_ENOMEM;
  for (size_t i = 0; i < r->o.n_gang; i++)
    gb_manifest_load_path(r->gang_docs, r->o.gang[i], &r->diags);
  if (r->diags.errors)
    return GC_EINVAL;
  const struct gb_doc *gang_doc = NULL, *job = NULL;
  size_t n_gangs = 0;
  for (size_t i = 0; i < r->gang_docs->n; i++) {
    const struct gb_doc *d = &r->gang_docs->docs[i];
    const char *kind = NULL;
    char origin[600];
    snprintf(origin, sizeof(origin), "%s:%u:%u", d->file, d->line, d->col);
    if (tp_gang_is_doc(d->root)) {
      gang_doc = d;
      n_gangs++;
    } else if (gc_catalog_trainer_kind(d->root, &kind)) {
      if (!strcmp(kind, "TrainJob")) {
        job = d;
        n_gangs++;
      } else {
        gc_catalog_add(r->catalog, d->root, origin, &r->diags);
      }
    }
  }
  if (n_gangs != 1) {
    gc_diags_addf(&r->diags,
                  "-f: found %zu gangs (Gang documents and TrainJobs); give exactly one", n_gangs);
    return GC_EINVAL;
  }
  if (gang_doc) {
    const char *origin = gc_arena_printf(r->arena, "%s:%u:%u", gang_doc->file, gang_doc->line,
                                         gang_doc->col);
    if (!origin)
      return GC_ENOMEM;
    return tp_gang_from_doc(r->arena, gang_doc->root, origin, &r->gang, &r->diags);
  }
  struct gc_options go = {0};
  go.default_namespace = r->o.ns;
  int rc = gc_gang_compute(job->root, r->catalog, &go, &r->gcg, &r->diags);
  if (rc)
    return rc;
  return tp_gang_from_gc(r->arena, r->gcg, &r->gang, &r->diags);
}

static int run_place(struct run *r) {
  int rc;
  r->arena = gc_arena_new(0);
  r->ev = tp_evaluator_new();
  if (!r->arena || !r->ev)
    return GC_ENOMEM;
  /* Both inputs are read before either is judged so one run reports all. */
  int rc1 = load_cluster(r);
  int rc2 = load_gang(r);
  if (rc1)
    return rc1;
  if (rc2)
    return rc2;
  struct tp_eval_opts eo = {0};
  eo.profile = r->o.profile;
  eo.policy = r->gang.policy;
  if (r->o.has_mode)
    eo.policy.mode = r->o.mode;
  if (r->o.has_tier) {
    eo.policy.has_highest_tier = 1;
    eo.policy.highest_tier = r->o.tier;
    eo.policy.highest_tier_name = NULL;
  }
  if (r->o.tier_name) {
    eo.policy.has_highest_tier = 0;
    eo.policy.highest_tier_name = r->o.tier_name;
  }
  if (eo.policy.mode == TP_MODE_UNSET && (r->o.has_tier || r->o.tier_name))
    eo.policy.mode = TP_MODE_HARD;
  if ((rc = tp_place_evaluate(r->ev, r->snap, &r->gang, &eo, r->arena, &r->res, &r->diags)))
    return rc;
  if (r->o.svg && (rc = write_svg(r, r->o.svg)))
    return rc;
  if (r->o.json)
    return emit_json(r);
  emit_table(r);
  return GC_OK;
}

int gb_cmd_place(int argc, char **argv) {
  struct run r;
  memset(&r, 0, sizeof(r));
  gc_diags_init(&r.diags);
  int status;
  int rc = parse_args(argc, argv, &r.o);
  if (rc == 1) {
    status = GB_EXIT_OK;
    goto out;
  }
  if (rc) {
    if (rc == GC_EUSAGE)
      fprintf(stderr, "Run 'gangbridge place --help' for usage.\n");
    status = rc == GC_EUSAGE ? GB_EXIT_USAGE : GB_EXIT_INPUT;
    goto out;
  }
  rc = run_place(&r);
  if (rc && r.diags.errors == 0)
    gc_diags_addf(&r.diags, "gangbridge place: %s", gc_diag_strerror(rc));
  gb_diagprint_write(stderr, NULL, &r.diags);
  status = rc || r.diags.errors ? GB_EXIT_INPUT : GB_EXIT_OK;
out:
  free(r.o.cluster);
  free(r.o.gang);
  tp_evaluator_free(r.ev);
  tp_snapshot_free(r.snap);
  gc_gang_free(r.gcg);
  gc_catalog_free(r.catalog);
  gb_docset_free(r.cluster_docs);
  gb_docset_free(r.gang_docs);
  gc_arena_free(r.arena);
  gc_diags_destroy(&r.diags);
  return status;
}
