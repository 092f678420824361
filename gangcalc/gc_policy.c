/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_policy: the gang timeout and topology policy and its sources (see
 * gc_policy.h).  Each source is read only when every more specific one is
 * absent, so a bad value at a less specific level never blocks a gang that
 * does not use it; a bad value at the level that answers is an error naming
 * that level, never a silent fall-through.
 */
#include "gc_policy.h"

#include <stdio.h>
#include <string.h>

#include "gc_duration.h"
#include "gc_gang_int.h"

#define ANN_PATH(k) "metadata.annotations[" k "]"
#define VALUE_HINT "give a tier number, a tier name or a node label key"
/* Longest value shown in a message. */
#define SHOW_MAX 64

/* One object whose annotations are a source. */
struct ann_src {
  const char *prefix; /* in errors: "ns/name", "ClusterTrainingRuntime/x", "Namespace ns" */
  const char *kind;   /* in sources: "TrainJob ns/name", ... */
  const struct gc_value *ann; /* metadata.annotations, NULL: none */
};

/* s[0..n) with control bytes escaped and cut at SHOW_MAX, into buf. */
static const char *shown(char *buf, size_t cap, const char *s, size_t n) {
  gc_diag_escape_controls(buf, cap, s, n > SHOW_MAX ? SHOW_MAX : n);
  return buf;
}

int gc_policy_timeout_parse(const char *text, size_t len, int64_t *seconds, char *msg,
                            size_t cap) {
  char why[4 * SHOW_MAX + 32], show[4 * SHOW_MAX + 1];
  int64_t ns = 0;
  shown(show, sizeof(show), text, len);
  const char *more = len > SHOW_MAX ? "..." : "";
  if (gc_duration_parse(text, len, &ns, why, sizeof(why))) {
    /* A message cut at cap is still a clear message: the result is only
     * checked so that the compiler knows the cut is intended. */
    if (snprintf(msg, cap, "invalid duration \"%s%s\"%s%s", show, more, *why ? ": " : "", why) <
            0 &&
        cap)
      msg[0] = '\0';
    return GC_EINVAL;
  }
  if (ns <= 0) {
    snprintf(msg, cap, "invalid duration \"%s\": must be greater than 0", show);
    return GC_EINVAL;
  }
  /* Whole seconds, rounded up: coscheduling takes seconds, and a timeout
   * never fires before the time it was given. */
  int64_t s = ns / 1000000000LL + (ns % 1000000000LL != 0);
  if (s > GC_TIMEOUT_MAX_SECONDS) {
    char max[GC_DURATION_BUFSZ];
    gc_duration_format_seconds(GC_TIMEOUT_MAX_SECONDS, max, sizeof(max));
    snprintf(msg, cap, "invalid duration \"%s\": must be at most %s", show, max);
    return GC_EINVAL;
  }
  *seconds = s;
  return 0;
}

/* Parses a topology VALUE into tp's tier or tier name (name borrowed from
 * v).  Returns 0 or GC_EINVAL with msg set. */
static int topology_value(const char *v, size_t n, struct gc_topology_policy *tp, char *msg,
                          size_t cap) {
  char show[4 * SHOW_MAX + 1];
  size_t digits = 0;
  while (digits < n && v[digits] >= '0' && v[digits] <= '9')
    digits++;
  if (n == 0) {
    snprintf(msg, cap, "must not be empty: " VALUE_HINT);
    return GC_EINVAL;
  }
  if (digits == n) {
    int64_t tier = 0;
    for (size_t i = 0; i < n && tier <= GC_TOPOLOGY_MAX_TIER; i++)
      tier = tier * 10 + (v[i] - '0');
    if (tier < 1 || tier > GC_TOPOLOGY_MAX_TIER) {
      snprintf(msg, cap, "tier %s is out of range: tiers are 1 to %d", shown(show, sizeof(show), v, n),
               GC_TOPOLOGY_MAX_TIER);
      return GC_EINVAL;
    }
    tp->has_highest_tier = 1;
    tp->highest_tier = tier;
    tp->highest_tier_name = NULL;
    return 0;
  }
  if (strlen(v) != n || !gc_name_is_qualified(v, n)) {
    snprintf(msg, cap, "\"%s%s\" is neither a tier number nor a tier name or node label key",
             shown(show, sizeof(show), v, n), n > SHOW_MAX ? "..." : "");
    return GC_EINVAL;
  }
  tp->has_highest_tier = 0;
  tp->highest_tier = 0;
  tp->highest_tier_name = v;
  return 0;
}

/* Splits "required:VALUE" / "preferred:VALUE" into tp (name borrowed). */
static int topology_default(const char *text, struct gc_topology_policy *tp, char *msg,
                            size_t cap) {
  const char *colon = strchr(text, ':');
  size_t wl = colon ? (size_t)(colon - text) : 0;
  if (colon && wl == 8 && !strncmp(text, "required", 8))
    tp->mode = "hard";
  else if (colon && wl == 9 && !strncmp(text, "preferred", 9))
    tp->mode = "soft";
  else {
    char show[4 * SHOW_MAX + 1];
    snprintf(msg, cap, "\"%s\" must be \"required:VALUE\" or \"preferred:VALUE\"",
             shown(show, sizeof(show), text, strlen(text)));
    return GC_EINVAL;
  }
  return topology_value(colon + 1, strlen(colon + 1), tp, msg, cap);
}

int gc_policy_topology_default_check(const char *text, char *msg, size_t cap) {
  struct gc_topology_policy tp;
  memset(&tp, 0, sizeof(tp));
  if (!text || !*text)
    return 0;
  return topology_default(text, &tp, msg, cap);
}

/* ---- reading sources ------------------------------------------------------------ */

/* Annotation key of s: 1 (a string in *v, *n), 0 absent, -1 reported. */
static int ann_str(struct ctx *c, const struct ann_src *s, const char *key, const char **v,
                   size_t *n) {
  if (!s->ann || s->ann->type != GC_MAP)
    return 0;
  const struct gc_value *x = gc_map_get(s->ann, key);
  if (!x)
    return 0;
  if (x->type != GC_STR) {
    gc_gang_fail(c, s->prefix, "metadata.annotations[%s]: must be a string", key);
    return -1;
  }
  *v = x->u.s;
  *n = x->len;
  return 1;
}

/* Sets the gang's timeout from v[0..n), or reports the problem as
 * "<prefix>: <path>: <why>" (without path: "<prefix>: <why>").  The
 * recorded source is "<kind>: <path>", or kind alone without a path. */
static void timeout_text(struct ctx *c, const char *prefix, const char *kind, const char *path,
                         const char *v, size_t n) {
  char msg[512];
  int64_t secs = 0;
  if (gc_policy_timeout_parse(v, n, &secs, msg, sizeof(msg))) {
    if (path)
      gc_gang_fail(c, prefix, "%s: %s", path, msg);
    else
      gc_gang_fail(c, prefix, "%s", msg);
    return;
  }
  c->g->timeout.set = 1;
  c->g->timeout.seconds = secs;
  c->g->timeout.source = path ? gc_gang_fmt(c, "%s: %s", kind, path) : kind;
}

/* The timeout annotation of s: 1 when it decided (set or reported). */
static int timeout_from(struct ctx *c, const struct ann_src *s) {
  const char *v = NULL;
  size_t n = 0;
  int rc = ann_str(c, s, GC_ANN_SCHEDULE_TIMEOUT, &v, &n);
  if (rc > 0)
    timeout_text(c, s->prefix, s->kind, ANN_PATH(GC_ANN_SCHEDULE_TIMEOUT), v, n);
  return rc != 0;
}

/* The 1-based position of name in the configured label levels, or 0. */
static int level_of(const struct gc_policy_context *p, const char *name) {
  for (size_t i = 0; p && name && i < p->n_topology_levels; i++)
    if (p->topology_levels[i] && !strcmp(p->topology_levels[i], name))
      return (int)i + 1;
  return 0;
}

/* Stores tp as the gang's policy from `source`, copying the tier name. */
static void topology_set(struct ctx *c, struct gc_topology_policy tp, const char *source) {
  if (tp.highest_tier_name && !(tp.highest_tier_name = gc_arena_strdup(c->a, tp.highest_tier_name)))
    c->oom = 1;
  tp.set = 1;
  tp.source = source;
  tp.level = level_of(c->opts->policy, tp.highest_tier_name);
  c->g->topology = tp;
}

/* The topology annotations of s: 1 when they decided (set or reported). */
static int topology_from(struct ctx *c, const struct ann_src *s) {
  const char *req = NULL, *pref = NULL;
  size_t nreq = 0, npref = 0;
  int rr = ann_str(c, s, GC_ANN_TOPOLOGY_REQUIRED, &req, &nreq);
  int rp = ann_str(c, s, GC_ANN_TOPOLOGY_PREFERRED, &pref, &npref);
  if (rr < 0 || rp < 0)
    return 1;
  if (rr > 0 && rp > 0) {
    gc_gang_fail(c, s->prefix, "metadata.annotations: %s and %s are both set; set one of them",
                 GC_ANN_TOPOLOGY_REQUIRED, GC_ANN_TOPOLOGY_PREFERRED);
    return 1;
  }
  if (rr == 0 && rp == 0)
    return 0;
  const char *key = rr > 0 ? GC_ANN_TOPOLOGY_REQUIRED : GC_ANN_TOPOLOGY_PREFERRED;
  struct gc_topology_policy tp;
  memset(&tp, 0, sizeof(tp));
  tp.mode = rr > 0 ? "hard" : "soft";
  char msg[512];
  if (topology_value(rr > 0 ? req : pref, rr > 0 ? nreq : npref, &tp, msg, sizeof(msg))) {
    gc_gang_fail(c, s->prefix, "metadata.annotations[%s]: %s", key, msg);
    return 1;
  }
  topology_set(c, tp, gc_gang_fmt(c, "%s: metadata.annotations[%s]", s->kind, key));
  return 1;
}

/* ---- precedence ----------------------------------------------------------------- */

/* The error prefix of a source that is not the TrainJob itself: the
 * TrainJob first, so that a bad Namespace, Queue, runtime or config value
 * says which TrainJob it stopped ("team-a/job: Namespace team-a: ..."). */
static const char *via_job(struct ctx *c, const char *source) {
  return gc_gang_fmt(c, "%s: %s", c->tj, source);
}

/* The Queue of the gang as a source: 1 when *qs is set (a gang whose
 * backend has Queue objects, and a Queue lookup), else 0. */
static int queue_src(struct ctx *c, struct ann_src *qs) {
  const struct gc_policy_context *p = c->opts->policy;
  const struct gc_backend *b = c->g->backend;
  if (!(b->caps & GC_BCAP_QUEUE) || !b->queue.kind || !p || !p->queue_annotations)
    return 0;
  const char *q = c->g->queue ? c->g->queue : b->queue.default_name;
  const char *qn = gc_gang_fmt(c, "%s %s", b->queue.kind, q);
  *qs = (struct ann_src){via_job(c, qn), qn, p->queue_annotations(p->queue_arg, b, q)};
  return 1;
}

static void resolve_timeout(struct ctx *c, const struct ann_src *tj, const struct ann_src *rt,
                            const struct ann_src *ns, const struct rt_info *r) {
  const struct gc_policy_context *p = c->opts->policy;
  struct gc_gang *g = c->g;
  if (timeout_from(c, tj))
    return;
  if (timeout_from(c, rt)) {
    if (r->rt_timeout_set)
      WARN(c, GC_WARN_OTHER,
           "%s: %s is ignored: the runtime's annotation " GC_ANN_SCHEDULE_TIMEOUT
           " is set too, and wins",
           c->rt, r->rt_timeout_path);
    return;
  }
  if (r->rt_timeout_set) {
    g->timeout = (struct gc_timeout_policy){1, r->rt_timeout,
                                            gc_gang_fmt(c, "%s: %s", c->rt, r->rt_timeout_path)};
    return;
  }
  if (timeout_from(c, ns))
    return;
  struct ann_src qs;
  if (queue_src(c, &qs) && timeout_from(c, &qs))
    return;
  if (p && p->timeout_default && *p->timeout_default)
    timeout_text(c, via_job(c, "config timeouts.default"), "config timeouts.default", NULL,
                 p->timeout_default, strlen(p->timeout_default));
}

/* The lowest ceiling found so far and where it was set. */
struct ceiling {
  int64_t seconds;
  const char *source; /* NULL: none yet */
};

static void ceiling_offer(struct ceiling *cl, int64_t secs, const char *source) {
  if (!cl->source || secs < cl->seconds) {
    cl->seconds = secs;
    cl->source = source;
  }
}

/* The maximum annotation of s (a Namespace or a Queue) into cl.  A bad
 * value is an error naming s: a ceiling the platform meant to set must not
 * silently vanish. */
static void max_from(struct ctx *c, const struct ann_src *s, struct ceiling *cl) {
  const char *v = NULL;
  size_t n = 0;
  char msg[512];
  int64_t secs = 0;
  if (ann_str(c, s, GC_ANN_SCHEDULE_TIMEOUT_MAX, &v, &n) <= 0)
    return;
  if (gc_policy_timeout_parse(v, n, &secs, msg, sizeof(msg))) {
    gc_gang_fail(c, s->prefix, ANN_PATH(GC_ANN_SCHEDULE_TIMEOUT_MAX) ": %s", msg);
    return;
  }
  ceiling_offer(cl, secs, gc_gang_fmt(c, "%s: " ANN_PATH(GC_ANN_SCHEDULE_TIMEOUT_MAX), s->kind));
}

static const char *seconds_text(struct ctx *c, int64_t secs) {
  char d[GC_DURATION_BUFSZ];
  if (gc_duration_format_seconds(secs, d, sizeof(d)))
    return gc_gang_fmt(c, "%llds", (long long)secs);
  return gc_gang_fmt(c, "%s", d);
}

/* Applies the platform's maximum (config timeouts.max and the Namespace's
 * and the Queue's gangbridge.io/schedule-timeout-max; the smallest wins):
 * every source may lengthen or shorten the timeout up to it, the ceilings
 * themselves only lower it.  A longer timeout is clamped with a warning
 * naming both sources; a gang without a timeout whose scheduler would wait
 * without limit gets the maximum, one whose backend has a default in its
 * spec (coscheduling's 60 s) keeps it unless the maximum is lower. */
static void clamp_timeout(struct ctx *c, const struct ann_src *ns) {
  const struct gc_policy_context *p = c->opts->policy;
  struct gc_gang *g = c->g;
  struct ceiling cl = {0, NULL};
  char msg[512];
  int64_t secs = 0;
  if (p && p->timeout_max && *p->timeout_max) {
    if (gc_policy_timeout_parse(p->timeout_max, strlen(p->timeout_max), &secs, msg, sizeof(msg)))
      gc_gang_fail(c, via_job(c, "config timeouts.max"), "%s", msg);
    else
      ceiling_offer(&cl, secs, "config timeouts.max");
  }
  max_from(c, ns, &cl);
  struct ann_src qs;
  if (queue_src(c, &qs))
    max_from(c, &qs, &cl);
  if (!cl.source)
    return;
  if (!g->timeout.set) {
    const struct gc_backend_timeout *bt = &g->backend->timeout;
    if (bt->spec_seconds && bt->default_seconds > 0 && cl.seconds >= bt->default_seconds)
      return;
    g->timeout = (struct gc_timeout_policy){
        1, cl.seconds, gc_gang_fmt(c, "%s (the maximum; no source gave a timeout)", cl.source)};
    return;
  }
  if (g->timeout.seconds <= cl.seconds)
    return;
  WARN(c, GC_WARN_TIMEOUT_CLAMPED, "%s is %s; clamped to %s, the maximum set by %s",
       g->timeout.source, seconds_text(c, g->timeout.seconds), seconds_text(c, cl.seconds),
       cl.source);
  g->timeout.source = gc_gang_fmt(c, "%s (%s asked for %s)", cl.source, g->timeout.source,
                                  seconds_text(c, g->timeout.seconds));
  g->timeout.seconds = cl.seconds;
}

/* A backend that carries the timeout as whole seconds in its spec gets it
 * within its scheduler's cap; without a policy it keeps its default. */
static void spec_timeout(struct ctx *c) {
  struct gc_gang *g = c->g;
  const struct gc_backend_timeout *bt = &g->backend->timeout;
  if (!bt->spec_seconds)
    return;
  int64_t t = g->timeout.set ? g->timeout.seconds : bt->default_seconds;
  if (bt->max_seconds > 0 && t > bt->max_seconds) {
    WARN(c, GC_WARN_TIMEOUT_CLAMPED, "%s is %lld s; clamped to %lld s because %s",
         g->timeout.source, (long long)t, (long long)bt->max_seconds, bt->max_why);
    t = bt->max_seconds;
  }
  g->has_timeout = 1;
  g->schedule_timeout_seconds = (int32_t)t;
}

static void resolve_topology(struct ctx *c, const struct ann_src *tj, const struct ann_src *rt,
                             const struct ann_src *ns, const struct rt_info *r) {
  const struct gc_policy_context *p = c->opts->policy;
  if (topology_from(c, tj))
    return;
  if (topology_from(c, rt)) {
    if (r->nt.set)
      WARN(c, GC_WARN_OTHER,
           "%s: %s is ignored: the runtime's topology annotation is set too, and wins", c->rt,
           r->nt_path);
    return;
  }
  if (r->nt.set) {
    topology_set(c, r->nt, gc_gang_fmt(c, "%s: %s", c->rt, r->nt_path));
    return;
  }
  if (topology_from(c, ns) || !p || !p->topology_default || !*p->topology_default)
    return;
  struct gc_topology_policy tp;
  char msg[512];
  memset(&tp, 0, sizeof(tp));
  if (topology_default(p->topology_default, &tp, msg, sizeof(msg)))
    gc_gang_fail(c, via_job(c, "config topology.default"), "%s", msg);
  else
    topology_set(c, tp, "config topology.default");
}

void gc_policy_resolve(struct ctx *c, const struct gc_value *trainjob, const struct gc_value *rt,
                       const struct rt_info *r) {
  const struct gc_policy_context *p = c->opts->policy;
  const char *nsname = gc_gang_fmt(c, "Namespace %s", c->g->namespace_);
  struct ann_src tj = {c->tj, gc_gang_fmt(c, "TrainJob %s", c->tj),
                       gc_value_path(trainjob, "metadata.annotations")};
  struct ann_src rts = {via_job(c, c->rt), c->rt, gc_value_path(rt, "metadata.annotations")};
  struct ann_src ns = {via_job(c, nsname), nsname, p ? p->ns_annotations : NULL};
  resolve_timeout(c, &tj, &rts, &ns, r);
  clamp_timeout(c, &ns);
  spec_timeout(c);
  resolve_topology(c, &tj, &rts, &ns, r);
}
