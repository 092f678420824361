/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_explain: the human-readable account of a gang (see gc_explain.h):
 * where the runtime and backend came from, every replicated job with its
 * wave, pods, per-pod request and binding in aligned columns, the totals,
 * the PodGroup policy fields and every warning.
 */
#include "gc_explain.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_duration.h"
#include "gc_gang.h"

/* Hard cap on the text of one explanation (jobs are capped upstream). */
#define EXPLAIN_MAX (16u << 20)

struct sbuf {
  char *s;
  size_t len, cap;
  int err;
};

__attribute__((format(printf, 2, 3))) static void put(struct sbuf *b, const char *f, ...) {
  if (b->err)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, f);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, f, ap);
    va_end(ap);
    if (n < 0) {
      b->err = GC_EINVAL;
      return;
    }
    if (b->s && (size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t ncap = b->cap ? b->cap : 1024;
    while (ncap < b->len + (size_t)n + 1)
      ncap *= 2;
    if (ncap > EXPLAIN_MAX) {
      b->err = GC_ELIMIT;
      return;
    }
    char *ns = realloc(b->s, ncap);
    if (!ns) {
      b->err = GC_ENOMEM;
      return;
    }
    b->s = ns;
    b->cap = ncap;
  }
}

/* "cpu=500m, memory=1Gi" or "-" into a malloc'd string. */
static char *reslist_text(const struct gc_reslist *l) {
  struct sbuf b = {0};
  for (size_t i = 0; i < l->n; i++) {
    char q[GC_QUANTITY_BUFSZ];
    if (gc_quantity_format(&l->items[i].q, q, sizeof(q)))
      snprintf(q, sizeof(q), "?");
    put(&b, "%s%s=%s", i ? ", " : "", l->items[i].name, q);
  }
  if (!l->n)
    put(&b, "-");
  if (b.err) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

/* A malloc'd copy of a manifest string with control bytes escaped. */
static char *esc_dup(const char *s) {
  if (!s)
    s = "?";
  size_t n = strlen(s);
  char *o = malloc(n * 4 + 1);
  if (o)
    gc_diag_escape_controls(o, n * 4 + 1, s, n);
  return o;
}

/* Appends a manifest string, control bytes escaped. */
static void put_esc(struct sbuf *b, const char *s) {
  char *e = esc_dup(s);
  if (!e) {
    b->err = GC_ENOMEM;
    return;
  }
  put(b, "%s", e);
  free(e);
}

static char *depends_text(const struct gc_podset *ps) {
  struct sbuf b = {0};
  for (size_t i = 0; i < ps->n_depends_on; i++)
    put(&b, "%s%s(%s)", i ? ", " : "", ps->depends_on[i],
        ps->depends_status && ps->depends_status[i] && *ps->depends_status[i]
            ? ps->depends_status[i] : "?");
  if (!ps->n_depends_on)
    put(&b, "-");
  if (b.err) {
    free(b.s);
    return NULL;
  }
  return b.s;
}

static const char *backend_reason(const struct gc_gang *g) {
  int overridden = 0;
  for (size_t i = 0; i < g->n_warnings; i++)
    if (strstr(g->warnings[i].message, "podGroupPolicy names") ||
        g->warnings[i].code == GC_WARN_POLICY_BOTH)
      overridden = 1;
  if (g->backend_from_runtime && !overridden)
    return "from the runtime's podGroupPolicy";
  if (g->backend_from_runtime)
    return "the runtime's podGroupPolicy is ambiguous or was overridden; see warnings";
  return "the runtime names no podGroupPolicy: chosen by option or default";
}

/* 1 when the gang phase holds the trainer step (same rule as gc_gang). */
static int trainer_phase(const struct gc_gang *g) {
  for (size_t i = 0; i < g->n_podsets; i++) {
    const struct gc_podset *ps = &g->podsets[i];
    if (ps->phase == g->gang_phase && ((ps->ancestor && !strcmp(ps->ancestor, "trainer")) ||
                                       (ps->name && !strcmp(ps->name, "node"))))
      return 1;
  }
  return 0;
}

#define NCOLS 8

static void put_header(struct sbuf *b, const struct gc_gang *g) {
  put(b, "TrainJob ");
  put_esc(b, g->namespace_);
  put(b, "/");
  put_esc(b, g->name);
  put(b, "\n  runtime:         %s ", g->runtime_kind ? g->runtime_kind : "?");
  put_esc(b, g->runtime_name);
  put(b, "\n");
  put(b, "  API generation:  %s\n", g->api_generation ? g->api_generation : "?");
  put(b, "  backend:         %s (%s)\n", gc_backend_name(g->backend), backend_reason(g));
  if (g->ganged_by) {
    put(b, "  ganged by:       ");
    put_esc(b, g->ganged_by);
    put(b, "\n                   (gangbridge writes no %s for it)\n", g->backend->kind);
  }
  if (g->backend_version)
    put(b, "  API version:     %s (%s; %s): %s\n", g->backend_version->api_version,
        g->backend_version->release, g->backend_version->maturity,
        g->backend_version_why ? g->backend_version_why : "?");
  if (g->scope == GC_SCOPE_ALL)
    put(b, "  gang scope:      all (every replicated job counted, as Trainer does)\n");
  else
    put(b, "  gang scope:      wave (gang = first wave of dependsOn phase %d, %s)\n",
        g->gang_phase, trainer_phase(g) ? "the phase holding the trainer step"
                                        : "the phase with the most pods");
  put(b, "  suspended:       %s\n\n", g->suspended ? "yes" : "no");
}

/* Fills one table row (malloc'd cells, control bytes escaped); GC_ENOMEM
 * leaves the cells made so far for the caller to free. */
static int fill_row(const struct gc_podset *ps, char **row) {
  char num[32], phase[32], pods[48];
  snprintf(num, sizeof(num), "%d", ps->wave);
  snprintf(phase, sizeof(phase), "%d", ps->phase);
  if (ps->replicas > 1)
    snprintf(pods, sizeof(pods), "%d (replicas %d)", ps->count, ps->replicas);
  else
    snprintf(pods, sizeof(pods), "%d", ps->count);
  row[0] = strdup(ps->name ? ps->name : "?");
  row[1] = strdup(ps->ancestor ? ps->ancestor : "-");
  row[2] = strdup(phase);
  row[3] = strdup(num);
  row[4] = depends_text(ps);
  row[5] = strdup(pods);
  row[6] = reslist_text(&ps->request);
  row[7] = strdup(gc_binding_name(ps->binding));
  for (size_t c = 0; c < NCOLS; c++) {
    if (row[c] && gc_diag_has_controls(row[c], strlen(row[c]))) {
      char *e = esc_dup(row[c]);
      free(row[c]);
      row[c] = e;
    }
    if (!row[c])
      return GC_ENOMEM;
  }
  return GC_OK;
}

/* The aligned table of replicated jobs. */
static int put_table(struct sbuf *b, const struct gc_gang *g) {
  static const char *const HEAD[NCOLS] = {"REPLICATED JOB", "ANCESTOR", "PHASE", "WAVE",
                                          "DEPENDS ON", "PODS", "PER-POD REQUEST",
                                          "BINDING"};
  size_t n = g->n_podsets;
  char **cells = calloc((n + 1) * NCOLS, sizeof(char *));
  size_t width[NCOLS];
  int rc = GC_OK;
  if (!cells)
    return GC_ENOMEM;
  for (size_t c = 0; c < NCOLS; c++)
    width[c] = strlen(HEAD[c]);
  for (size_t i = 0; i < n && !rc; i++) {
    char **row = cells + i * NCOLS;
    rc = fill_row(&g->podsets[i], row);
    for (size_t c = 0; c < NCOLS && !rc; c++)
      if (strlen(row[c]) > width[c])
        width[c] = strlen(row[c]);
  }
  if (rc)
    goto out;
  for (size_t i = 0; i <= n; i++) {
    for (size_t c = 0; c < NCOLS; c++) {
      const char *cell = i == 0 ? HEAD[c] : cells[(i - 1) * NCOLS + c];
      if (c + 1 < NCOLS)
        put(b, "%-*s  ", (int)width[c], cell);
      else
        put(b, "%s\n", cell);
    }
  }
out:
  for (size_t i = 0; i < n * NCOLS; i++)
    free(cells[i]);
  free(cells);
  return rc;
}

/* What g's group object can carry: its version's capabilities, else its
 * backend's. */
static unsigned gang_caps(const struct gc_gang *g) {
  return g->backend_version ? g->backend_version->caps : g->backend->caps;
}

/* "Workload" or "Workload at v1alpha2": the object, at the gang's version. */
static void put_kind(struct sbuf *b, const struct gc_gang *g) {
  put(b, "%s", g->backend->kind);
  if (g->backend_version)
    put(b, " at %s", g->backend_version->version);
}

/* Resources taken from limits, then minMember and minResources. */
static int put_totals(struct sbuf *b, const struct gc_gang *g) {
  for (size_t i = 0; i < g->n_podsets; i++) {
    const struct gc_podset *ps = &g->podsets[i];
    if (!ps->limits_only.n)
      continue;
    char *t = reslist_text(&ps->limits_only);
    if (!t)
      return GC_ENOMEM;
    put(b, "  (");
    put_esc(b, ps->name);
    put(b, ": taken from limits: ");
    put_esc(b, t);
    put(b, ")\n");
    free(t);
  }
  char *res = reslist_text(&g->min_resources);
  if (!res)
    return GC_ENOMEM;
  put(b, "\nminMember:         %d\n", g->min_member);
  put(b, "minResources:      ");
  put_esc(b, g->min_resources.n ? res : "{} (no requests)");
  if (!(gang_caps(g) & GC_BCAP_MIN_RESOURCES)) {
    put(b, " (not part of a %s ", g->backend->name);
    put_kind(b, g);
    put(b, ")");
  }
  put(b, "\n");
  free(res);
  return GC_OK;
}

/* Why a topology policy is not a constraint of g's group object. */
static const char *topology_not_carried(const struct gc_gang *g) {
  const struct gc_topology_policy *tp = &g->topology;
  if (!(gang_caps(g) & GC_BCAP_NETWORK_TOPOLOGY))
    return "this version has no topology constraint";
  if (tp->mode && strcmp(tp->mode, "hard") != 0)
    return "a preferred level is not a constraint";
  return "only a required level of config topology.levels is a node label key";
}

/* The topology policy, its source, and who acts on it. */
static void put_topology(struct sbuf *b, const struct gc_gang *g) {
  const struct gc_topology_policy *tp = &g->topology;
  const struct gc_backend *be = g->backend;
  const char *key = gc_render_topology_key(g);
  if (!tp->set) {
    put(b, "network topology:  (none)\n");
    return;
  }
  put(b, "network topology:  mode %s, ", tp->mode ? tp->mode : "hard");
  if (tp->highest_tier_name) {
    put(b, "highestTierName ");
    put_esc(b, tp->highest_tier_name);
    if (tp->level)
      put(b, " (topology.levels[%d])", tp->level - 1);
  } else {
    put(b, "highestTierAllowed %lld", (long long)(tp->has_highest_tier ? tp->highest_tier : 1));
  }
  put(b, " from ");
  put_esc(b, tp->source ? tp->source : "?");
  if (tp->in_podgroup && (be->caps & GC_BCAP_NETWORK_TOPOLOGY) && be->runtime_topology) {
    put(b, "\n                   (in the %s's spec.%s: %s places it)\n", be->kind,
        be->runtime_topology, be->display);
  } else if (key) {
    put(b, "\n                   (schedulingConstraints.topology key ");
    put_esc(b, key);
    put(b, ": %s keeps the gang in one domain; needs TopologyAwareWorkloadScheduling)\n",
        be->display);
  } else if ((be->caps & GC_BCAP_TOPOLOGY_LEVEL) && tp->highest_tier_name && g->topology_object) {
    put(b, "\n                   (gangbridge's placement policy, and in the %s's "
           "topologyConstraint within %s Topology ", be->kind, be->display);
    put_esc(b, g->topology_object);
    put(b, ")\n");
  } else if (be->n_versions) {
    put(b, "\n                   (gangbridge's placement policy; not part of the ");
    put_kind(b, g);
    put(b, ": %s)\n", topology_not_carried(g));
  } else
    put(b, "\n                   (gangbridge's placement policy; not part of the %s)\n", be->kind);
}

/* A scheduler whose gang wait nothing sets: gangbridge's own deadline, if
 * a policy gives one, is the only timeout a user tunes. */
static void put_fixed_wait(struct sbuf *b, const struct gc_gang *g) {
  const struct gc_backend_timeout *bt = &g->backend->timeout;
  char d[GC_DURATION_BUFSZ];
  if (!g->timeout.set) {
    put(b, "schedule timeout:  (none; %s)\n", bt->fixed_why ? bt->fixed_why : "fixed");
    return;
  }
  if (gc_duration_format_seconds(g->timeout.seconds, d, sizeof(d)))
    snprintf(d, sizeof(d), "?");
  put(b, "schedule timeout:  %s (%lld s) from ", d, (long long)g->timeout.seconds);
  put_esc(b, g->timeout.source ? g->timeout.source : "?");
  put(b, "\n                   (gangbridge's GangTimeout deadline; %s)\n",
      bt->fixed_why ? bt->fixed_why : "the scheduler's own wait is fixed");
}

/* The effective timeout, its source, and how the backend carries it. */
static void put_timeout(struct sbuf *b, const struct gc_gang *g) {
  const struct gc_backend *be = g->backend;
  const struct gc_backend_timeout *bt = &be->timeout;
  char d[GC_DURATION_BUFSZ];
  if (bt->fixed_seconds > 0) {
    put_fixed_wait(b, g);
    return;
  }
  if (!g->timeout.set && (g->has_timeout || bt->default_seconds > 0)) {
    put(b, "schedule timeout:  %lld s (no policy source: the %s default)\n",
        (long long)(g->has_timeout ? g->schedule_timeout_seconds : bt->default_seconds), be->name);
    return;
  }
  if (!g->timeout.set) {
    put(b, "schedule timeout:  (none; %s waits without limit)\n", be->display);
    return;
  }
  if (gc_duration_format_seconds(g->timeout.seconds, d, sizeof(d)))
    snprintf(d, sizeof(d), "?");
  put(b, "schedule timeout:  %s (%lld s) from ", d, (long long)g->timeout.seconds);
  put_esc(b, g->timeout.source ? g->timeout.source : "?");
  if (bt->annotations[0])
    put(b, "\n                   (%s annotation %s=%s%s%s)\n", be->kind, bt->annotations[0], d,
        bt->needs ? "; needs " : "", bt->needs ? bt->needs : "");
  else if (!bt->spec_seconds)
    put(b, "\n                   (%s has no scheduling timeout: gangbridge's tracker acts on it)\n",
        be->display);
  else if (g->has_timeout && g->schedule_timeout_seconds < g->timeout.seconds)
    put(b, "\n                   (the %s gets %d s: %s)\n", be->kind, g->schedule_timeout_seconds,
        bt->max_why ? bt->max_why : "the backend's cap");
  else
    put(b, "\n");
}

/* How pods join: every key the backend writes (at the gang's version),
 * with what it holds. */
static void put_binding(struct sbuf *b, const struct gc_gang *g) {
  static const char *const at[] = {"?", "label", "annotation", "pod spec field"};
  const struct gc_backend *be = g->backend;
  const struct gc_backend_version *v = g->backend_version;
  const struct gc_backend_join *joins = v ? v->joins : be->joins;
  size_t n = v ? v->n_joins : be->n_joins;
  int first = 1, spec_field = 0;
  for (size_t i = 0; i < n; i++) {
    const struct gc_backend_join *j = &joins[i];
    if (j->legacy)
      continue;
    put(b, "%s%s %s=", first ? "pod binding:       " : "                   ", at[j->at], j->key);
    if (j->value == GC_JOIN_GROUP || j->value == GC_JOIN_PARENT)
      put_esc(b, g->name);
    if (j->value == GC_JOIN_GROUP && v && v->group_suffix)
      put_esc(b, v->group_suffix);
    if (j->value == GC_JOIN_TEMPLATE && v && v->gang_template)
      put_esc(b, v->gang_template);
    else if (j->value == GC_JOIN_SUBGROUP || j->value == GC_JOIN_TEMPLATE)
      put(b, j->value == GC_JOIN_SUBGROUP ? "<its replicated job>" : "<template>");
    put(b, first ? ((be->caps & GC_BCAP_ELASTIC_MEMBERS) ? " on every pod of the TrainJob\n"
                                                          : " on the gang and bound jobs\n")
                 : "\n");
    spec_field |= j->at == GC_JOIN_SPEC_FIELD;
    first = 0;
  }
  if (spec_field)
    put(b, "                   (a pod spec field is immutable once the pod exists: it must be "
           "set when the pod is created, as serve's webhook does)\n");
}

/* The objects a backend with several writes, and the Workload's templates. */
static void put_objects(struct sbuf *b, const struct gc_gang *g) {
  const struct gc_backend_version *v = g->backend_version;
  int other = 0;
  if (!v)
    return;
  for (size_t i = 0; i < g->n_podsets; i++)
    other |= g->podsets[i].binding == GC_BIND_UNBOUND;
  put(b, "objects:           %s ", g->backend->kind);
  put_esc(b, g->name);
  put(b, " (%s \"%s\": gang, minCount %d", v->group_suffix ? "template" : "pod group",
      v->gang_template ? v->gang_template : "?", g->min_member);
  if (other)
    put(b, "; \"other\": basic, the other phases' jobs, their pods not bound");
  put(b, ")");
  if (v->group_suffix) {
    put(b, ", PodGroup ");
    put_esc(b, g->name);
    put_esc(b, v->group_suffix);
  }
  put(b, "\n");
}

/* The sub-groups of a backend that has them: one per replicated job, in
 * template order; all are required, and one that needs no pod is
 * satisfied without any.  Then whether the scheduler's own grouper keeps
 * out. */
static void put_subgroups(struct sbuf *b, const struct gc_gang *g) {
  const struct gc_backend *be = g->backend;
  if (!(be->caps & GC_BCAP_SUBGROUPS))
    return;
  put(b, "sub-groups:        %zu, all required (minSubGroup %zu)\n", g->n_podsets, g->n_podsets);
  for (size_t i = 0; i < g->n_podsets; i++) {
    const struct gc_podset *ps = &g->podsets[i];
    put(b, "                   ");
    put_esc(b, ps->name);
    if (ps->binding == GC_BIND_COUNTED)
      put(b, ": minMember %d (the gang)\n", ps->count);
    else
      put(b, ": minMember 0 (%s: its pods join, none is waited for)\n",
          ps->binding == GC_BIND_BOUND ? "a later wave of the gang phase" : "not in the gang");
  }
  if (be->grouper_skip_key)
    put(b, "own grouper:       %s's %s (annotation %s: \"%s\")\n", be->display,
        g->grouper_skipped ? "is told to keep out" : "is NOT told to keep out, see warnings",
        be->grouper_skip_key, be->grouper_skip_value);
}

/* The backend's part: queue, priority class, topology, timeout, binding;
 * what the backend cannot carry is said so. */
static void put_backend(struct sbuf *b, const struct gc_gang *g) {
  const struct gc_backend *be = g->backend;
  if (be->caps & GC_BCAP_QUEUE) {
    put(b, "queue:             ");
    if (g->queue)
      put_esc(b, g->queue);
    else
      put(b, "(none; %s uses \"%s\")", be->display, be->queue.default_name);
    put(b, "\n");
  }
  put(b, "priority class:    ");
  put_esc(b, g->priority_class ? g->priority_class : "(none)");
  if (!(gang_caps(g) & GC_BCAP_PRIORITY_CLASS)) {
    put(b, " (not part of a %s ", be->name);
    put_kind(b, g);
    put(b, ")");
  }
  put(b, "\n");
  put_topology(b, g);
  put_timeout(b, g);
  put_binding(b, g);
  put_objects(b, g);
  put_subgroups(b, g);
}

int gc_explain(const struct gc_gang *g, char **out) {
  struct sbuf b = {0};
  if (!out)
    return GC_EUSAGE;
  *out = NULL;
  if (!g)
    return GC_EUSAGE;
  put_header(&b, g);
  int rc = put_table(&b, g);
  if (!rc)
    rc = put_totals(&b, g);
  if (!rc) {
    put_backend(&b, g);
    put(&b, "\nwarnings:%s\n", g->n_warnings ? "" : " none");
    for (size_t i = 0; i < g->n_warnings; i++) {
      put(&b, "  - ");
      put_esc(&b, g->warnings[i].message);
      put(&b, "\n");
    }
    rc = b.err;
  }
  if (rc) {
    free(b.s);
    return rc;
  }
  *out = b.s;
  return GC_OK;
}
