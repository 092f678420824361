/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_cmd_render: the offline main job.  `gangbridge render` prints the
 * PodGroup(s) gang scheduling needs for every TrainJob in the inputs;
 * `gangbridge explain` prints why: every replicated job, its pods, per-pod
 * request, binding, totals and warnings.  Both read manifests (no cluster),
 * except `explain NAMESPACE/NAME`, which takes the same documents from the
 * API server (gb_live_docs) and is otherwise the same code path.  They
 * report every input problem (one per line on stderr) and exit 0 ok, 1 input
 * errors (including an object not found, forbidden or an unreachable API
 * server), 2 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_cli.h"
#include "gb_diagprint.h"
#include "gb_emit.h"
#include "gb_live_docs.h"
#include "gb_manifest.h"
#include "gc_gang.h"
#include "gc_name.h"
#include "gc_policy.h"
#include "gc_render.h"

enum output_format { OUT_YAML, OUT_JSON };

struct render_opts {
  const char **paths;
  size_t n_paths;
  struct gc_options gang;
  enum output_format format;
  int explain;
  const char *live_ref;   /* explain NAMESPACE/NAME: read from the cluster, not -f */
  const char *kubeconfig; /* --kubeconfig, NULL: the usual search */
  const char *api_version; /* --api-version, checked against --scheduler's versions */
  /* --topology-level KEY (repeatable): config topology.levels, top first. */
  const char *levels[GC_TOPOLOGY_MAX_LEVELS];
  size_t n_levels;
};

/* What one run produced: the computed gangs, in input order. */
struct render_run {
  struct gb_docset *docs;
  struct gc_catalog *catalog;
  struct gc_gang **gangs;
  const struct gb_doc **gang_docs; /* the TrainJob document of each gang */
  size_t n_gangs;
  struct gc_diags diags;
  const struct gc_value **policy_docs; /* the Namespaces and backends' Queues in the inputs */
  size_t n_policy_docs;
};

/* The displays of the backends with Queue objects ("Volcano"), joined. */
static const char *queue_backends(char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < gc_backend_count() && used < cap; i++) {
    const struct gc_backend *b = gc_backend_at(i);
    if (!(b->caps & GC_BCAP_QUEUE) || !b->queue.kind)
      continue;
    int n = snprintf(buf + used, cap - used, "%s%s", used ? "/" : "", b->display);
    if (n < 0)
      break;
    used += (size_t)n;
  }
  return buf;
}

static void usage(FILE *f, int explain) {
  const char *cmd = explain ? "explain" : "render";
  char names[256], queues[256];
  fprintf(
      f,
      "usage: gangbridge %s -f PATH [-f PATH...] [options]\n"
      "%s"
      "\n"
      "%s"
      "\n"
      "  -f, --filename PATH     manifest file, directory (recursive) or - for stdin;\n"
      "                          TrainJobs, TrainingRuntimes and ClusterTrainingRuntimes,\n"
      "                          and the Namespaces and %s Queues whose policy\n"
      "                          annotations apply (docs/timeouts.md)\n"
      "      --scheduler NAME    %s (default: the runtime's\n"
      "                          podGroupPolicy, else %s)\n"
      "      --gang-scope SCOPE  wave (default: the dependsOn wave with the most pods)\n"
      "                          or all (every replicated job, as Kubeflow Trainer)\n"
      "      --api-version V     the API version of a backend with several (workload:\n"
      "                          v1beta1, v1alpha2 or v1alpha1; default: the newest;\n"
      "                          serve writes the newest the API server serves)\n"
      "      --topology-level KEY  a node label key of config topology.levels, top level\n"
      "                          first (repeat it); a required level among them is a\n"
      "                          topology constraint where the backend carries one\n"
      "  -n, --namespace NS      namespace of TrainJobs that name none (default: default)\n"
      "%s"
      "%s"
      "  -h, --help              show this help\n",
      cmd,
      explain ? "       gangbridge explain NAMESPACE/NAME [--kubeconfig PATH] [options]\n" : "",
      explain ? "Explains the gang of every TrainJob: replicated jobs, pods, per-pod\n"
                "requests, which pods are in the gang, totals and warnings.\n"
              : "Prints the PodGroup each TrainJob needs for gang scheduling.\n",
      queue_backends(queues, sizeof(queues)), gc_backend_names(names, sizeof(names), " or "),
      gc_backend_default()->name,
      explain ? ""
              : "  -o, --output FORMAT     yaml (default, multi-document) or json (a v1 List)\n",
      explain ? "      --kubeconfig PATH   with NAMESPACE/NAME (or NAME in the context's\n"
                "                          namespace): read the TrainJob, its runtime and\n"
                "                          its Namespace from the cluster (default: $KUBECONFIG,\n"
                "                          in-cluster, ~/.kube/config)\n"
              : "");
}

/* --api-version names a version of --scheduler's backend, which must have
 * several; it becomes the gangs' version.  Returns 0 or GC_EUSAGE (message
 * printed). */
static int check_api_version(const char *cmd, struct render_opts *o) {
  const struct gc_backend *b = o->gang.backend;
  char names[128];
  if (!b || !b->n_versions) {
    fprintf(stderr,
            "gangbridge %s: --api-version needs --scheduler naming a backend with "
            "several API versions (%s has one)\n",
            cmd, b ? b->name : "the default backend");
    return GC_EUSAGE;
  }
  const char *v = o->api_version;
  /* The whole apiVersion ("<group>/<version>") is accepted as well as the version. */
  size_t glen = strlen(b->group);
  if (!strncmp(v, b->group, glen) && v[glen] == '/')
    v += glen + 1;
  o->gang.backend_version = gc_backend_version_find(b, v);
  if (!o->gang.backend_version) {
    fprintf(stderr, "gangbridge %s: --api-version must be %s for --scheduler %s, not '%s'\n", cmd,
            gc_backend_version_names(b, names, sizeof(names)), b->name, o->api_version);
    return GC_EUSAGE;
  }
  o->gang.backend_version_why = "chosen by --api-version";
  return GC_OK;
}

/* Parses argv into o.  Returns 0, 1 for --help (already printed) or
 * GC_EUSAGE (message printed). */
static int parse_args(int argc, char **argv, int explain, struct render_opts *o) {
  static const struct option longopts[] = {
      {"filename", required_argument, NULL, 'f'},
      {"scheduler", required_argument, NULL, 's'},
      {"gang-scope", required_argument, NULL, 'g'},
      {"namespace", required_argument, NULL, 'n'},
      {"output", required_argument, NULL, 'o'},
      {"kubeconfig", required_argument, NULL, 'k'},
      {"api-version", required_argument, NULL, 'V'},
      {"topology-level", required_argument, NULL, 'L'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *cmd = explain ? "explain" : "render";
  o->paths = calloc((size_t)argc, sizeof(*o->paths));
  if (!o->paths)
    return GC_ENOMEM;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, explain ? ":f:n:h" : ":f:n:o:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'f': o->paths[o->n_paths++] = optarg; break;
    case 's':
      if (!(o->gang.backend = gc_backend_by_name(optarg))) {
        char names[256];
        fprintf(stderr, "gangbridge %s: --scheduler must be %s, not '%s'\n", cmd,
                gc_backend_names(names, sizeof(names), " or "), optarg);
        return GC_EUSAGE;
      }
      break;
    case 'g':
      if (!strcmp(optarg, "wave"))
        o->gang.scope = GC_SCOPE_WAVE;
      else if (!strcmp(optarg, "all"))
        o->gang.scope = GC_SCOPE_ALL;
      else {
        fprintf(stderr, "gangbridge %s: --gang-scope must be wave or all, not '%s'\n", cmd,
                optarg);
        return GC_EUSAGE;
      }
      break;
    case 'n': o->gang.default_namespace = optarg; break;
    case 'V': o->api_version = optarg; break;
    case 'L':
      if (o->n_levels == GC_TOPOLOGY_MAX_LEVELS) {
        fprintf(stderr, "gangbridge %s: --topology-level: at most %d levels\n", cmd,
                GC_TOPOLOGY_MAX_LEVELS);
        return GC_EUSAGE;
      }
      if (!gc_name_is_qualified(optarg, strlen(optarg))) {
        fprintf(stderr, "gangbridge %s: --topology-level '%s' is not a node label key\n", cmd,
                optarg);
        return GC_EUSAGE;
      }
      o->levels[o->n_levels++] = optarg;
      break;
    case 'k':
      if (!explain)
        goto unknown;
      o->kubeconfig = optarg;
      break;
    case 'o':
      if (explain)
        goto unknown;
      if (!strcmp(optarg, "yaml"))
        o->format = OUT_YAML;
      else if (!strcmp(optarg, "json"))
        o->format = OUT_JSON;
      else {
        fprintf(stderr, "gangbridge %s: -o must be yaml or json, not '%s'\n", cmd, optarg);
        return GC_EUSAGE;
      }
      break;
    case 'h': usage(stdout, explain); return 1;
    case ':':
      fprintf(stderr, "gangbridge %s: option '%s' needs a value\n", cmd, argv[optind - 1]);
      return GC_EUSAGE;
    default:
    unknown:
      fprintf(stderr, "gangbridge %s: unknown option '%s'\n", cmd, argv[optind - 1]);
      return GC_EUSAGE;
    }
  }
  if (explain && optind + 1 == argc && o->n_paths == 0)
    o->live_ref = argv[optind++];
  if (optind < argc) {
    fprintf(stderr, "gangbridge %s: unexpected argument '%s' (inputs are given with -f%s)\n",
            cmd, argv[optind], explain ? ", or one NAMESPACE/NAME without -f" : "");
    return GC_EUSAGE;
  }
  if (o->api_version && check_api_version(cmd, o))
    return GC_EUSAGE;
  if (o->kubeconfig && !o->live_ref) {
    fprintf(stderr, "gangbridge %s: --kubeconfig needs a NAMESPACE/NAME to explain\n", cmd);
    return GC_EUSAGE;
  }
  if (o->n_paths == 0 && !o->live_ref) {
    fprintf(stderr, "gangbridge %s: no input: give at least one -f PATH\n", cmd);
    return GC_EUSAGE;
  }
  return GC_OK;
}

static void run_free(struct render_run *r) {
  for (size_t i = 0; i < r->n_gangs; i++)
    gc_gang_free(r->gangs[i]);
  free(r->gangs);
  free(r->gang_docs);
  free(r->policy_docs);
  gc_catalog_free(r->catalog);
  gb_docset_free(r->docs);
  gc_diags_destroy(&r->diags);
}

struct gang_pos {
  const struct gc_gang *g;
  size_t pos;
};

/* By namespace and name, then input order. */
static int cmp_gang_pos(const void *a, const void *b) {
  const struct gang_pos *x = a, *y = b;
  int c = strcmp(x->g->namespace_, y->g->namespace_);
  if (!c)
    c = strcmp(x->g->name, y->g->name);
  return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Two TrainJobs with one namespace and name cannot both exist in a cluster
 * (the second apply replaces the first); rendering both would make two
 * PodGroups of one name.  Every later copy is an error and is dropped. */
static int drop_duplicates(struct render_run *r) {
  size_t n = r->n_gangs;
  if (n < 2)
    return GC_OK;
  struct gang_pos *sorted = malloc(n * sizeof(*sorted));
  size_t *first = malloc(n * sizeof(*first));
  if (!sorted || !first) {
    free(sorted);
    free(first);
    return GC_ENOMEM;
  }
  for (size_t i = 0; i < n; i++)
    sorted[i] = (struct gang_pos){r->gangs[i], i};
  qsort(sorted, n, sizeof(*sorted), cmp_gang_pos);
  for (size_t i = 0, head = 0; i < n; i++) {
    if (i == 0 || strcmp(sorted[i].g->namespace_, sorted[head].g->namespace_) ||
        strcmp(sorted[i].g->name, sorted[head].g->name))
      head = i;
    first[sorted[i].pos] = sorted[head].pos;
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    struct gc_gang *g = r->gangs[i];
    const struct gb_doc *d = r->gang_docs[i], *f = r->gang_docs[first[i]];
    if (first[i] == i) {
      r->gang_docs[kept] = d;
      r->gangs[kept++] = g;
      continue;
    }
    gc_diags_addf(&r->diags, "%s:%u:%u: TrainJob %s/%s is defined again (first at %s:%u:%u): an "
                  "API server holds one object per namespace and name", d->file, d->line, d->col,
                  g->namespace_, g->name, f->file, f->line, f->col);
    gc_gang_free(g);
  }
  r->n_gangs = kept;
  free(sorted);
  free(first);
  return GC_OK;
}

/* 1 when doc is a v1 Namespace or a backend's Queue: the policy sources
 * besides the TrainJob and its runtime. */
static int is_policy_doc(const struct gc_value *doc) {
  const char *api = gc_value_as_str(gc_map_get(doc, "apiVersion"));
  const char *kind = gc_value_as_str(gc_map_get(doc, "kind"));
  if (!api || !kind)
    return 0;
  if (!strcmp(api, "v1") && !strcmp(kind, "Namespace"))
    return 1;
  for (size_t i = 0; i < gc_backend_count(); i++) {
    const struct gc_backend_queue *q = &gc_backend_at(i)->queue;
    if (q->kind && !strcmp(api, q->api_version) && !strcmp(kind, q->kind))
      return 1;
  }
  return 0;
}

/* The last input document of `api` `kind` named `name` (what applying the
 * inputs in order would leave), or NULL. */
static const struct gc_value *find_policy_doc(const struct render_run *r, const char *api,
                                              const char *kind, const char *name) {
  const struct gc_value *found = NULL;
  for (size_t i = 0; i < r->n_policy_docs; i++) {
    const struct gc_value *d = r->policy_docs[i];
    const char *a = gc_value_as_str(gc_map_get(d, "apiVersion"));
    const char *k = gc_value_as_str(gc_map_get(d, "kind"));
    const char *n = gc_value_as_str(gc_value_path(d, "metadata.name"));
    if (a && k && n && !strcmp(a, api) && !strcmp(k, kind) && !strcmp(n, name))
      found = d;
  }
  return found;
}

static const struct gc_value *input_queue_annotations(void *arg, const struct gc_backend *b,
                                                      const char *queue) {
  return gc_value_path(find_policy_doc(arg, b->queue.api_version, b->queue.kind, queue),
                       "metadata.annotations");
}

/* Computes one TrainJob's gang with the Namespace and Queues of the
 * inputs as its policy context. */
static int compute_one(const struct render_opts *o, struct render_run *r,
                       const struct gc_value *tj, struct gc_gang **g) {
  const char *ns = gc_value_as_str(gc_value_path(tj, "metadata.namespace"));
  if (!ns || !*ns)
    ns = o->gang.default_namespace ? o->gang.default_namespace : "default";
  struct gc_policy_context pc;
  memset(&pc, 0, sizeof(pc));
  pc.ns_annotations = gc_value_path(find_policy_doc(r, "v1", "Namespace", ns),
                                    "metadata.annotations");
  pc.queue_annotations = input_queue_annotations;
  pc.queue_arg = r;
  pc.topology_levels = o->levels;
  pc.n_topology_levels = o->n_levels;
  struct gc_options opts = o->gang;
  opts.policy = &pc;
  return gc_gang_compute(tj, r->catalog, &opts, g, &r->diags);
}

/* Loads every path, indexes runtimes, then computes the gang of every
 * TrainJob.  Problems go to r->diags; computing continues past them so one
 * run reports everything. */
static int run_compute(const struct render_opts *o, struct render_run *r) {
  r->docs = gb_docset_new(NULL);
  r->catalog = gc_catalog_new();
  if (!r->docs || !r->catalog)
    return GC_ENOMEM;
  for (size_t i = 0; i < o->n_paths; i++)
    gb_manifest_load_path(r->docs, o->paths[i], &r->diags);
  if (o->live_ref) {
    int rc = gb_live_docs_load(r->docs, o->kubeconfig, o->live_ref, o->gang.default_namespace,
                               &r->diags);
    if (rc == GC_ENOMEM || rc == GC_EUSAGE)
      return rc;
  }

  size_t n_jobs = 0;
  r->policy_docs = calloc(r->docs->n ? r->docs->n : 1, sizeof(*r->policy_docs));
  if (!r->policy_docs)
    return GC_ENOMEM;
  for (size_t i = 0; i < r->docs->n; i++) {
    const struct gb_doc *d = &r->docs->docs[i];
    const char *kind = NULL;
    if (is_policy_doc(d->root))
      r->policy_docs[r->n_policy_docs++] = d->root;
    if (!gc_catalog_trainer_kind(d->root, &kind))
      continue;
    if (!strcmp(kind, "TrainJob")) {
      n_jobs++;
      continue;
    }
    char origin[512];
    snprintf(origin, sizeof(origin), "%s:%u:%u", d->file, d->line, d->col);
    gc_catalog_add(r->catalog, d->root, origin, &r->diags);
  }
  if (n_jobs == 0) {
    if (r->diags.errors == 0)
      gc_diags_addf(&r->diags, "no TrainJob (%s) found in the inputs", GC_TRAINER_API);
    return GC_OK;
  }
  r->gangs = calloc(n_jobs, sizeof(*r->gangs));
  r->gang_docs = calloc(n_jobs, sizeof(*r->gang_docs));
  if (!r->gangs || !r->gang_docs)
    return GC_ENOMEM;
  for (size_t i = 0; i < r->docs->n; i++) {
    const struct gb_doc *d = &r->docs->docs[i];
    const char *kind = NULL;
    if (!gc_catalog_trainer_kind(d->root, &kind) || strcmp(kind, "TrainJob"))
      continue;
    struct gc_gang *g = NULL;
    if (compute_one(o, r, d->root, &g) == GC_OK) {
      r->gang_docs[r->n_gangs] = d;
      r->gangs[r->n_gangs++] = g;
    }
  }
  return drop_duplicates(r);
}

/* "warning: ns/name: message"; names come from manifests, so control bytes
 * are escaped (the message already is). */
static void print_escaped_warning(const struct gc_gang *g, const char *msg) {
  char ns[1024], name[1024];
  gc_diag_escape_controls(ns, sizeof(ns), g->namespace_, strlen(g->namespace_));
  gc_diag_escape_controls(name, sizeof(name), g->name, strlen(g->name));
  fprintf(stderr, "warning: %s/%s: %s\n", ns, name, msg);
}

static void print_warnings(const struct render_run *r) {
  for (size_t i = 0; i < r->n_gangs; i++) {
    const struct gc_gang *g = r->gangs[i];
    for (size_t w = 0; w < g->n_warnings; w++)
      print_escaped_warning(g, g->warnings[w].message);
  }
}

/* Renders every gang's PodGroup and writes them in the chosen format. */
static int write_podgroups(const struct render_opts *o, struct render_run *r) {
  struct gc_arena *a = gc_arena_new(0);
  /* Room for every object of every gang (a gang renders at most
   * GC_RENDER_MAX_OBJECTS). */
  struct gc_value **pgs = calloc(r->n_gangs ? r->n_gangs * GC_RENDER_MAX_OBJECTS : 1, sizeof(*pgs));
  char *text = NULL;
  size_t len = 0, n = 0;
  int rc = GC_ENOMEM;
  if (!a || !pgs)
    goto out;
  for (size_t i = 0; i < r->n_gangs; i++) {
    size_t k = 0;
    rc = gc_render_objects(r->gangs[i], a, pgs + n, GC_RENDER_MAX_OBJECTS, &k);
    if (rc) {
      gc_diags_addf(&r->diags, "%s/%s: cannot render %s: %s", r->gangs[i]->namespace_,
                    r->gangs[i]->name, r->gangs[i]->backend->kind, gc_diag_strerror(rc));
      continue;
    }
    n += k;
  }
  if (o->format == OUT_JSON) {
    /* kubectl prints several objects as a v1 List. */
    struct gc_value *list = gc_value_map(a), *items = gc_value_seq(a), *meta = gc_value_map(a);
    rc = GC_ENOMEM;
    if (!list || !items || !meta)
      goto out;
    for (size_t i = 0; i < n; i++)
      if (gc_seq_push(a, items, pgs[i]))
        goto out;
    struct gc_value *rv = gc_value_strz(a, "");
    if (!rv || gc_map_set(a, meta, "resourceVersion", rv) ||
        gc_map_set(a, list, "apiVersion", gc_value_strz(a, "v1")) ||
        gc_map_set(a, list, "items", items) ||
        gc_map_set(a, list, "kind", gc_value_strz(a, "List")) ||
        gc_map_set(a, list, "metadata", meta))
      goto out;
    rc = gb_emit_json(list, 1, &text, &len);
  } else {
    rc = n ? gb_emit_yaml((const struct gc_value **)pgs, n, &text, &len) : GC_OK;
  }
  if (rc == GC_OK && text && fwrite(text, 1, len, stdout) != len)
    rc = GC_EIO;
out:
  free(text);
  free(pgs);
  gc_arena_free(a);
  return rc;
}

static int write_explanations(struct render_run *r) {
  for (size_t i = 0; i < r->n_gangs; i++) {
    char *text = NULL;
    int rc = gc_explain(r->gangs[i], &text);
    if (rc)
      return rc;
    printf("%s%s", i ? "\n" : "", text);
    free(text);
  }
  return GC_OK;
}

static int run_command(int argc, char **argv, int explain) {
  struct render_opts o;
  struct render_run r;
  memset(&o, 0, sizeof(o));
  memset(&r, 0, sizeof(r));
  gc_diags_init(&r.diags);
  int status = GB_EXIT_USAGE;
  int rc = parse_args(argc, argv, explain, &o);
  if (rc == 1) {
    status = GB_EXIT_OK;
    goto out;
  }
  if (rc)
    goto out;
  rc = run_compute(&o, &r);
  if (rc == GC_EUSAGE) {
    for (size_t i = 0; i < r.diags.n; i++)
      fprintf(stderr, "gangbridge explain: %s\n", r.diags.msgs[i]);
    goto out;
  }
  if (rc == GC_OK) {
    if (!explain)
      print_warnings(&r);
    rc = explain ? write_explanations(&r) : write_podgroups(&o, &r);
  }
  if (rc)
    gc_diags_addf(&r.diags, "gangbridge %s: %s", explain ? "explain" : "render",
                  gc_diag_strerror(rc));
  gb_diagprint_write(stderr, NULL, &r.diags);
  fflush(stdout);
  status = r.diags.errors ? GB_EXIT_INPUT : GB_EXIT_OK;
out:
  run_free(&r);
  free(o.paths);
  return status;
}

int gb_cmd_render(int argc, char **argv) { return run_command(argc, argv, 0); }

int gb_cmd_render_explain(int argc, char **argv) { return run_command(argc, argv, 1); }
