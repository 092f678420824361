/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched: the scheduler endpoints (see gb_sched.h).
 */
#include "gb_sched.h"
#include "gb_sched_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_clock.h"
#include "gb_hash.h"
#include "gb_metrics.h"
#include "gb_sched_kube.h"

static void gb_sched_stop(struct gb_sched *s);

#define PREFIX_MAX 64
#define PATH_MAX_LEN (PREFIX_MAX + 32)
#define JSON_TYPE "application/json"
#define WHY_MAX 512

enum verb { V_OPEN, V_CLOSE, V_PRED, V_PRIO, V_ALLOC, V_DEALLOC, V_ENQ, K_FILTER, K_PRIO, N_VERBS };

enum body_kind { B_SMALL, B_LIST, B_SESSION };

static const struct {
  const char *protocol, *verb;
  enum body_kind body;
} VERBS[N_VERBS] = {
    [V_OPEN] = {GB_SCHED_EXTENDER_VOLCANO, GB_SCHED_VERB_SESSION_OPEN, B_SESSION},
    [V_CLOSE] = {GB_SCHED_EXTENDER_VOLCANO, GB_SCHED_VERB_SESSION_CLOSE, B_SMALL},
    [V_PRED] = {GB_SCHED_EXTENDER_VOLCANO, GB_SCHED_VERB_PREDICATE, B_SMALL},
    [V_PRIO] = {GB_SCHED_EXTENDER_VOLCANO, GB_SCHED_VERB_PRIORITIZE, B_LIST},
    [V_ALLOC] = {GB_SCHED_EXTENDER_VOLCANO, GB_SCHED_VERB_ALLOCATE, B_SMALL},
    [V_DEALLOC] = {GB_SCHED_EXTENDER_VOLCANO, GB_SCHED_VERB_DEALLOCATE, B_SMALL},
    [V_ENQ] = {GB_SCHED_EXTENDER_VOLCANO, GB_SCHED_VERB_ENQUEUEABLE, B_LIST},
    /* With nodeCacheCapable: false kube-scheduler sends every candidate
     * Node object (5,000 full Nodes of ~5 KB are 25 MB): a list body. */
    [K_FILTER] = {GB_SCHED_EXTENDER_KUBE, GB_SCHED_VERB_FILTER, B_LIST},
    [K_PRIO] = {GB_SCHED_EXTENDER_KUBE, GB_SCHED_VERB_PRIORITIZE, B_LIST},
};

struct route_ctx {
  struct gb_sched *s;
  enum verb verb;
};

/* A task allocated in the session: "uid\0key\0node\0" in one block. */
struct otask {
  struct gb_hnode h;
  const char *key, *node;
  char uid[];
};

/* Tasks of one gang on one node in the session: "key\nnode". */
struct ocount {
  struct gb_hnode h;
  int64_t n;
  char kn[];
};

struct gb_sched {
  struct gb_sched_config cfg;
  struct gb_sched_source be;
  char paths[N_VERBS][PATH_MAX_LEN];
  struct route_ctx ctx[N_VERBS];
  struct gb_metric *requests, *latency, *decisions;
  pthread_mutex_t mu; /* guards the overlay and the stats */
  struct gb_htab tasks, counts;
  uint64_t sessions, overlay_full;
  struct gb_http *srv;
};

/* ---- The session overlay ------------------------------------------- */

static uint64_t kn_hash(const char *key, const char *node) {
  uint64_t h = gb_hash_fnv1a(GB_HASH_FNV_OFFSET, key, strlen(key));
  h = gb_hash_fnv1a(h, "\n", 1);
  return gb_hash_fnv1a(h, node, strlen(node));
}

static struct ocount *count_find(struct gb_sched *s, const char *key, const char *node) {
  uint64_t h = kn_hash(key, node);
  size_t kl = strlen(key);
  for (struct gb_hnode *n = gb_htab_chain(&s->counts, h); n; n = n->next) {
    struct ocount *c = (struct ocount *)n;
    if (n->hash == h && !strncmp(c->kn, key, kl) && c->kn[kl] == '\n' &&
        !strcmp(c->kn + kl + 1, node))
      return c;
  }
  return NULL;
}

static int count_add(struct gb_sched *s, const char *key, const char *node, int64_t d) {
  struct ocount *c = count_find(s, key, node);
  if (!c) {
    if (d <= 0)
      return 0;
    size_t kl = strlen(key), nl = strlen(node);
    c = malloc(sizeof(*c) + kl + nl + 2);
    if (!c)
      return GC_ENOMEM;
    memcpy(c->kn, key, kl);
    c->kn[kl] = '\n';
    memcpy(c->kn + kl + 1, node, nl + 1);
    c->n = 0;
    c->h.hash = kn_hash(key, node);
    gb_htab_insert(&s->counts, &c->h);
  }
  c->n += d;
  if (c->n <= 0) {
    gb_htab_remove(&s->counts, &c->h);
    free(c);
  }
  return 0;
}

static struct otask *task_find(struct gb_sched *s, const char *uid) {
  uint64_t h = gb_hash_str(uid);
  for (struct gb_hnode *n = gb_htab_chain(&s->tasks, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct otask *)n)->uid, uid))
      return (struct otask *)n;
  return NULL;
}

static void task_drop(struct gb_sched *s, struct otask *t) {
  count_add(s, t->key, t->node, -1);
  gb_htab_remove(&s->tasks, &t->h);
  free(t);
}

/* Records task uid of gang key on node (moving it if it was elsewhere).
 * Returns 0, GC_ELIMIT (overlay full) or GC_ENOMEM.  Caller holds mu. */
static int overlay_allocate(struct gb_sched *s, const char *uid, const char *key,
                            const char *node) {
  struct otask *t = task_find(s, uid);
  if (t && !strcmp(t->key, key) && !strcmp(t->node, node))
    return 0; /* Volcano repeats AllocateFunc for Pipeline and unevict */
  if (t)
    task_drop(s, t);
  if (s->tasks.n >= s->cfg.max_session_tasks)
    return GC_ELIMIT;
  size_t ul = strlen(uid) + 1, kl = strlen(key) + 1, nl = strlen(node) + 1;
  t = malloc(sizeof(*t) + ul + kl + nl);
  if (!t)
    return GC_ENOMEM;
  memcpy(t->uid, uid, ul);
  t->key = memcpy(t->uid + ul, key, kl);
  t->node = memcpy(t->uid + ul + kl, node, nl);
  if (count_add(s, key, node, 1) < 0) {
    free(t);
    return GC_ENOMEM;
  }
  t->h.hash = gb_hash_str(uid);
  gb_htab_insert(&s->tasks, &t->h);
  return 0;
}

static void free_node(struct gb_hnode *n, void *ctx) { free(n); }

static void overlay_reset(struct gb_sched *s) {
  pthread_mutex_lock(&s->mu);
  gb_htab_clear(&s->tasks, free_node, NULL);
  gb_htab_clear(&s->counts, free_node, NULL);
  s->sessions++;
  pthread_mutex_unlock(&s->mu);
}

int64_t gb_sched_session_count(struct gb_sched *s, const char *key, const char *node) {
  pthread_mutex_lock(&s->mu);
  struct ocount *c = count_find(s, key, node);
  int64_t n = c ? c->n : 0;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void gb_sched_stats(struct gb_sched *s, struct gb_sched_stats *out) {
  pthread_mutex_lock(&s->mu);
  out->sessions = s->sessions;
  out->overlay_tasks = s->tasks.n;
  out->overlay_full = s->overlay_full;
  pthread_mutex_unlock(&s->mu);
}

/* ---- Redaction ------------------------------------------------------ */

static int label_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }
static int name_char(char c) { return label_char(c) || c == '.'; }

/* Rewrites text in place so that it names no gang of another namespace
 * than ns: every "<namespace>/<name>" whose namespace (a DNS-1123 label,
 * not the end of a dotted prefix such as nvidia.com/gpu) differs from ns
 * becomes "a gang of another namespace".  A reason about a gang reaches
 * that gang's tenant (the PodGroup's Event, the pod's scheduling message),
 * and the plan's reasons can name the gang that goes first
 * ("held: ... team-b/big has waited ..."). */
#define REDACTED "a gang of another namespace"
static void redact_foreign(char *text, size_t size, const char *ns) {
  static const char repl[] = REDACTED;
  size_t rl = sizeof(repl) - 1;
  /* The replacement's own words are never a namespace: a scan back stops at
   * the end of the last replacement ("n1/team-b/x" is redacted once). */
  char *floor = text;
  for (char *slash = strchr(text, '/'); slash; slash = strchr(slash + 1, '/')) {
    char *l = slash;
    while (l > floor && label_char(l[-1]))
      l--;
    char *r = slash + 1;
    while (name_char(*r))
      r++;
    if (l == slash || r == slash + 1 || (l > text && (l[-1] == '.' || l[-1] == '/')))
      continue;
    size_t nl = (size_t)(slash - l);
    if (nl == strlen(ns) && !memcmp(l, ns, nl))
      continue;
    size_t tail = strlen(r) + 1, at = (size_t)(l - text);
    if (at + rl + 1 > size) {
      *l = '\0';
      return;
    }
    if (at + rl + tail > size)
      tail = size - at - rl; /* cut: the last byte is set to NUL below */
    memmove(l + rl, r, tail);
    memcpy(l, repl, rl);
    text[size - 1] = '\0';
    floor = l + rl;
    slash = l + rl - 1;
  }
}

/* The namespace of gang key "ns/name" into out (size NS_MAX). */
#define NS_MAX 64
static const char *key_ns(const char *key, char *out) {
  const char *slash = strchr(key, '/');
  size_t n = slash ? (size_t)(slash - key) : 0;
  if (n >= NS_MAX)
    n = 0;
  memcpy(out, key, n);
  out[n] = '\0';
  return out;
}

/* ---- Source calls --------------------------------------------------- */

static int allowed(struct gb_sched *s, const char *key, const char *node, char *why, size_t size) {
  why[0] = '\0';
  if (!key[0] || !s->be.node_allowed)
    return -1;
  int ok = s->be.node_allowed(s->be.arg, key, node, why, size);
  char ns[NS_MAX];
  redact_foreign(why, size, key_ns(key, ns));
  return ok;
}

/* A request's refusals worded once (the backend's nodes_allowed): a refused
 * node's reason is head + its name + tail, tail already redacted. */
struct batch_why {
  char head[WHY_MAX], tail[WHY_MAX];
  size_t head_len, tail_len;
  size_t bound; /* the longest head + tail can get while redact_foreign works on them */
};

/* Asks the backend for all nodes at once.  Returns 0 (ans and b filled) or
 * a negative code: then the caller asks node by node. */
static int allowed_batch(struct gb_sched *s, const char *key, char *const *nodes, size_t n,
                         int8_t *ans, struct batch_why *b) {
  if (!key[0] || !s->be.nodes_allowed)
    return GC_EUSAGE;
  b->head[0] = b->tail[0] = '\0';
  int rc = s->be.nodes_allowed(s->be.arg, key, (const char *const *)nodes, n, ans, b->head, b->tail,
                               WHY_MAX);
  if (rc < 0)
    return rc;
  size_t slashes = 0;
  for (const char *t = strchr(b->tail, '/'); t; t = strchr(t + 1, '/'))
    slashes++;
  b->head_len = strlen(b->head);
  b->bound = b->head_len + strlen(b->tail) + slashes * (sizeof(REDACTED) - 1);
  if (strchr(b->head, '/') || label_char(b->tail[0]) || b->tail[0] == '/' || b->bound >= WHY_MAX)
    return GC_EINVAL; /* redacting the parts apart might not equal redacting the sentence */
  char ns[NS_MAX];
  redact_foreign(b->tail, sizeof(b->tail), key_ns(key, ns));
  b->tail_len = strlen(b->tail);
  return GC_OK;
}

/* Whether node's reason may be put together from b: exactly the sentence
 * allowed() would give (the name cannot join a foreign key: no slash in it,
 * the head has none and the tail starts with neither a label character nor
 * a slash;
 * nothing is cut at WHY_MAX; never empty). */
static int batch_fits(const struct batch_why *b, const char *node, size_t node_len) {
  return b->bound + node_len < WHY_MAX && !memchr(node, '/', node_len) &&
         b->head_len + node_len + b->tail_len > 0;
}

/* Scores for the nodes of one request, scaled to 0..max: the plan's pods
 * on each node not yet allocated in this session (so the gang's tasks
 * spread as planned), or the planned pods when every planned place is
 * taken.  Rounds up, so every planned node scores at least 1.  Returns 1
 * when the plan had an opinion, 0 (all scores 0) otherwise. */
static int plan_scores(struct gb_sched *s, const char *key, char *const *nodes, size_t n,
                       int64_t max, int64_t *score) {
  memset(score, 0, n * sizeof(*score));
  if (!key[0] || !s->be.node_score || !n)
    return 0;
  int64_t *left = malloc(n * sizeof(*left));
  if (!left)
    return GC_ENOMEM;
  int64_t top = 0, top_left = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t planned = s->be.node_score(s->be.arg, key, nodes[i]);
    score[i] = planned > 0 ? planned : 0;
    top = score[i] > top ? score[i] : top;
  }
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < n; i++) {
    struct ocount *c = score[i] ? count_find(s, key, nodes[i]) : NULL;
    left[i] = score[i] - (c ? c->n : 0);
    left[i] = left[i] > 0 ? left[i] : 0;
    top_left = left[i] > top_left ? left[i] : top_left;
  }
  pthread_mutex_unlock(&s->mu);
  for (size_t i = 0; i < n && top; i++) {
    int64_t v = top_left ? left[i] : score[i];
    int64_t t = top_left ? top_left : top;
    score[i] = (v * max + t - 1) / t;
  }
  free(left);
  return top > 0;
}

/* ---- The verbs ------------------------------------------------------ */

struct call {
  struct gb_sched *s;
  const char *body;
  size_t len;
  struct gb_buf *out;
  char msg[GB_SJ_MSG_MAX + 64]; /* a 400's reason */
  const char *decision;         /* the decisions metric's label */
};

static int v_session(struct call *c) {
  overlay_reset(c->s);
  c->decision = "session";
  return gb_buf_addstr(c->out, "{}");
}

static int v_predicate(struct call *c) {
  struct gb_sched_vtask t;
  char node[GB_SCHED_NAME_MAX + 1], why[WHY_MAX];
  int rc = gb_sched_volcano_predicate_decode(c->body, c->len, &t, node, sizeof(node), c->msg,
                                             sizeof(c->msg));
  if (rc < 0)
    return rc;
  int ok = allowed(c->s, t.key, node, why, sizeof(why));
  c->decision = ok == 0 ? "fail" : ok == 1 ? "pass" : "no_opinion";
  if (ok == 0) {
    char status[WHY_MAX + 64];
    snprintf(status, sizeof(status), "gangbridge: %s", why[0] ? why : "outside the gang's domain");
    return gb_sched_volcano_predicate_encode(GB_VC_UNSCHEDULABLE, status, c->out);
  }
  return gb_sched_volcano_predicate_encode(GB_VC_SUCCESS, "", c->out);
}

static int v_prioritize(struct call *c) {
  struct gb_sched_vtask t;
  struct gb_sched_vnodes nodes;
  int64_t *score = NULL;
  int rc = gb_sched_volcano_prioritize_decode(c->body, c->len, &t, &nodes, c->msg, sizeof(c->msg));
  if (rc < 0)
    goto out;
  score = calloc(nodes.n ? nodes.n : 1, sizeof(*score));
  if (!score) {
    rc = GC_ENOMEM;
    goto out;
  }
  /* Volcano adds the score to the other node-order plugins', which score
   * 0..100 (MaxNodeScore): a planned node outweighs one plugin's taste. */
  rc = plan_scores(c->s, t.key, nodes.names, nodes.n, 100, score);
  if (rc < 0)
    goto out;
  c->decision = rc ? "scored" : "no_opinion";
  rc = gb_sched_volcano_prioritize_encode(&nodes, score, c->out);
out:
  free(score);
  gb_sched_vnodes_free(&nodes);
  return rc;
}

static int v_allocate(struct call *c) {
  struct gb_sched_vtask t;
  char why[WHY_MAX];
  int rc = gb_sched_volcano_task_decode(c->body, c->len, &t, c->msg, sizeof(c->msg));
  if (rc < 0)
    return rc;
  if (!t.key[0] || !t.uid[0] || !t.node[0]) {
    c->decision = "no_opinion";
    return gb_sched_volcano_error_encode("", c->out);
  }
  if (allowed(c->s, t.key, t.node, why, sizeof(why)) == 0) {
    /* An error rolls the allocation back (framework/statement.go), so the
     * gang's tasks never end up on both sides of its domain. */
    char m[WHY_MAX + 3 * GB_SCHED_NAME_MAX + 64];
    snprintf(m, sizeof(m), "gangbridge: task %s/%s on node %s: %s", t.ns, t.name, t.node, why);
    c->decision = "rejected";
    return gb_sched_volcano_error_encode(m, c->out);
  }
  pthread_mutex_lock(&c->s->mu);
  rc = overlay_allocate(c->s, t.uid, t.key, t.node);
  if (rc == GC_ELIMIT)
    c->s->overlay_full++;
  pthread_mutex_unlock(&c->s->mu);
  if (rc == GC_ENOMEM)
    return rc;
  /* A full overlay only makes the prioritize less exact: never fail a
   * session for it. */
  c->decision = rc == GC_ELIMIT ? "overlay_full" : "recorded";
  return gb_sched_volcano_error_encode("", c->out);
}

static int v_deallocate(struct call *c) {
  struct gb_sched_vtask t;
  int rc = gb_sched_volcano_task_decode(c->body, c->len, &t, c->msg, sizeof(c->msg));
  if (rc < 0)
    return rc;
  pthread_mutex_lock(&c->s->mu);
  struct otask *o = t.uid[0] ? task_find(c->s, t.uid) : NULL;
  if (o)
    task_drop(c->s, o);
  pthread_mutex_unlock(&c->s->mu);
  c->decision = o ? "released" : "no_opinion";
  return gb_sched_volcano_error_encode("", c->out);
}

static int v_enqueueable(struct call *c) {
  char reason[WHY_MAX] = "";
  struct gb_sched_vjob *j = malloc(sizeof(*j)); /* ~70 KiB: not on a server thread's stack */
  if (!j)
    return GC_ENOMEM;
  int rc = gb_sched_volcano_job_decode(c->body, c->len, j, c->msg, sizeof(c->msg));
  if (rc < 0)
    goto out;
  int verdict = GB_VC_ABSTAIN;
  struct gb_sched *s = c->s;
  if (j->managed && j->key[0] && s->be.enqueueable &&
      s->be.enqueueable(s->be.arg, j, &verdict, reason, sizeof(reason)) < 0)
    verdict = GB_VC_ABSTAIN; /* no opinion beats a guess */
  if (verdict != GB_VC_PERMIT && verdict != GB_VC_REJECT)
    verdict = GB_VC_ABSTAIN;
  c->decision = verdict == GB_VC_PERMIT ? "permit" : verdict == GB_VC_REJECT ? "reject" : "abstain";
  /* The reason becomes an Event in the PodGroup's namespace. */
  redact_foreign(reason, sizeof(reason), j->ns);
  if (verdict != GB_VC_ABSTAIN && s->be.job_event)
    s->be.job_event(s->be.event_arg ? s->be.event_arg : s->be.arg, j, verdict, reason);
  rc = gb_sched_volcano_enqueue_encode(verdict, c->out);
out:
  free(j);
  return rc;
}

/* What k_filter hands the encoder: pass, and each failed node's reason:
 * joined from the batch's parts, or its own in text (NUL-separated, at
 * off[i]). */
struct filter_ans {
  uint8_t *pass, *joined;
  size_t *off;
  struct gb_buf text;
  struct batch_why *b;
  int opinion;
  size_t failed;
};

/* Each node's answer: from the batch when it answered and the node's
 * reason may be joined, else node by node. */
static int filter_reasons(struct gb_sched *s, const struct gb_sched_kube_args *a,
                          struct filter_ans *f) {
  int8_t *ans = malloc(a->n_nodes ? a->n_nodes : 1);
  if (!ans)
    return GC_ENOMEM;
  int batch = allowed_batch(s, a->key, a->nodes, a->n_nodes, ans, f->b) == 0;
  char w[WHY_MAX];
  for (size_t i = 0; i < a->n_nodes; i++) {
    const char *node = a->nodes[i];
    size_t node_len = strlen(node);
    int ok = ans[i];
    f->joined[i] = batch && ok == 0 && batch_fits(f->b, node, node_len);
    if (!batch || (ok == 0 && !f->joined[i]))
      ok = allowed(s, a->key, node, w, sizeof(w));
    f->opinion |= ok >= 0;
    f->pass[i] = ok != 0;
    if (f->pass[i])
      continue;
    f->failed++;
    if (f->joined[i])
      continue;
    f->off[i] = gb_buf_len(&f->text);
    const char *r = w[0] ? w : "outside the gang's domain";
    gb_buf_add(&f->text, r, strlen(r) + 1);
  }
  free(ans);
  return gb_buf_add(&f->text, "", 0);
}

static int k_filter(struct call *c) {
  struct gb_sched_kube_args a;
  struct filter_ans f = {0};
  const char **why = NULL;
  /* The failed nodes' own reasons: one block, not a malloc each. */
  gb_buf_init(&f.text, c->len * 4 + (1u << 20));
  int rc = gb_sched_kube_args_decode(c->body, c->len, &a, c->msg, sizeof(c->msg));
  if (rc < 0)
    goto out;
  size_t n = a.n_nodes ? a.n_nodes : 1;
  f.pass = calloc(n, 1);
  f.joined = calloc(n, 1);
  f.off = calloc(n, sizeof(*f.off));
  f.b = malloc(sizeof(*f.b));
  why = calloc(n, sizeof(*why));
  if (!f.pass || !f.joined || !f.off || !f.b || !why) {
    rc = GC_ENOMEM;
    goto out;
  }
  f.b->head[0] = f.b->tail[0] = '\0';
  if ((rc = filter_reasons(c->s, &a, &f)) < 0)
    goto out;
  /* The block has stopped moving: point the reasons into it. */
  for (size_t i = 0; i < a.n_nodes; i++)
    why[i] = f.pass[i] || f.joined[i] ? NULL : gb_buf_ptr(&f.text) + f.off[i];
  c->decision = !f.opinion ? "no_opinion" : f.failed ? "filtered" : "pass";
  struct gb_sched_kube_why parts = {f.b->head, f.b->tail, f.joined};
  rc = gb_sched_kube_filter_encode(&a, f.pass, NULL, why, &parts, NULL, c->out);
out:
  gb_buf_free(&f.text);
  free(f.b);
  free(f.off);
  free(f.joined);
  free(f.pass);
  free(why);
  gb_sched_kube_args_free(&a);
  return rc;
}

static int k_prioritize(struct call *c) {
  struct gb_sched_kube_args a;
  int64_t *score = NULL;
  int rc = gb_sched_kube_args_decode(c->body, c->len, &a, c->msg, sizeof(c->msg));
  if (rc < 0)
    goto out;
  score = calloc(a.n_nodes ? a.n_nodes : 1, sizeof(*score));
  if (!score) {
    rc = GC_ENOMEM;
    goto out;
  }
  /* MaxExtenderPriority is 10; kube-scheduler multiplies by the weight. */
  rc = plan_scores(c->s, a.key, a.nodes, a.n_nodes, 10, score);
  if (rc < 0)
    goto out;
  c->decision = rc ? "scored" : "no_opinion";
  rc = gb_sched_kube_priority_encode(&a, score, c->out);
out:
  free(score);
  gb_sched_kube_args_free(&a);
  return rc;
}

static int (*const FNS[N_VERBS])(struct call *) = {
    [V_OPEN] = v_session,    [V_CLOSE] = v_session,  [V_PRED] = v_predicate,
    [V_PRIO] = v_prioritize, [V_ALLOC] = v_allocate, [V_DEALLOC] = v_deallocate,
    [V_ENQ] = v_enqueueable, [K_FILTER] = k_filter,  [K_PRIO] = k_prioritize,
};

/* ---- Requests, metrics and the server ------------------------------ */

static void observe(struct gb_sched *s, enum verb v, int status, const char *decision,
                    int64_t start_ns) {
  char code[8];
  snprintf(code, sizeof(code), "%d", status);
  const char *req[] = {VERBS[v].protocol, VERBS[v].verb, code};
  const char *lat[] = {VERBS[v].protocol, VERBS[v].verb};
  const char *dec[] = {VERBS[v].protocol, VERBS[v].verb, decision};
  gb_metric_counter_inc(s->requests, req);
  gb_metric_histogram_observe(s->latency, lat, (double)(gb_clock_ns() - start_ns) / 1e9);
  gb_metric_counter_inc(s->decisions, dec);
}

static int run_verb(struct gb_sched *s, enum verb v, const char *body, size_t len,
                    struct gb_http_response *resp) {
  int64_t t0 = gb_clock_ns();
  int lead = s->cfg.is_leader ? s->cfg.is_leader(s->cfg.leader_ctx) : 1;
  if (lead <= 0) {
    /* A standby's plan is not the leader's, nor is a new leader's before it
     * has read the decisions back: an answer from either could pin a gang
     * where the leader pinned another.  Non-200 is an error to both
     * schedulers, which then apply their `ignorable` setting. */
    observe(s, v, 503, lead == 0 ? "standby" : "catching_up", t0);
    return gb_http_response_printf(resp, 503, NULL, "%s",
                                   lead == 0 ? GB_SCHED_STANDBY_MSG : GB_SCHED_CATCHING_UP_MSG);
  }
  struct gb_buf out;
  /* An answer is at most the nodes of the request again (the filter's Nodes
   * form echoes them) plus the reasons. */
  gb_buf_init(&out, 2 * len + (1u << 20));
  struct call c = {.s = s, .body = body, .len = len, .out = &out, .decision = "invalid"};
  c.msg[0] = '\0';
  int rc = FNS[v](&c);
  if (rc == GC_EINVAL || rc == GC_ELIMIT) {
    gb_buf_free(&out);
    observe(s, v, 400, "invalid", t0);
    return gb_http_response_printf(resp, 400, NULL, "%s %s: %s\n", VERBS[v].protocol, VERBS[v].verb,
                                   c.msg[0] ? c.msg : "malformed request");
  }
  char *text = NULL;
  size_t n = 0;
  if (rc >= 0)
    rc = gb_buf_take(&out, &text, &n);
  gb_buf_free(&out);
  if (rc < 0) {
    observe(s, v, 500, "error", t0);
    return rc;
  }
  gb_http_response_take(resp, 200, JSON_TYPE, text, n);
  observe(s, v, 200, c.decision, t0);
  return 0;
}

static int on_request(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  struct route_ctx *rc = ctx;
  return run_verb(rc->s, rc->verb, req->body, req->body_len, resp);
}

int gb_sched_handle(struct gb_sched *s, const char *path, const char *body, size_t len,
                    struct gb_http_response *resp) {
  for (int v = 0; v < N_VERBS; v++)
    if (!strcmp(s->paths[v], path))
      return run_verb(s, (enum verb)v, body, len, resp);
  return gb_http_response_printf(resp, 404, NULL, "404 page not found\n");
}

static int register_metrics(struct gb_sched *s, struct gb_metrics *reg, struct gc_diags *d) {
  static const char *const req[] = {"protocol", "verb", "code"};
  static const char *const lat[] = {"protocol", "verb"};
  static const char *const dec[] = {"protocol", "verb", "decision"};
  /* From 50 us (a predicate's goal is 1 ms at p99) to Volcano's 1 s and
   * kube-scheduler's 5 s timeouts. */
  static const double buckets[] = {5e-5,   1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
                                   2.5e-2, 5e-2, 0.1,    0.25, 0.5,  1,      2.5,  5};
  int rc = gb_metrics_counter(reg, "gangbridge_sched_requests_total",
                              "Scheduler extender requests by protocol, verb and HTTP code.", req,
                              3, &s->requests, d);
  if (rc == 0)
    rc = gb_metrics_histogram(reg, "gangbridge_sched_request_duration_seconds",
                              "Time to answer a scheduler extender request (body received).", lat,
                              2, buckets, sizeof(buckets) / sizeof(buckets[0]), &s->latency, d);
  if (rc == 0)
    rc = gb_metrics_counter(reg, "gangbridge_sched_decisions_total",
                            "Scheduler extender answers by protocol, verb and decision.", dec, 3,
                            &s->decisions, d);
  return rc;
}

static int set_prefix(char *dst, const char *src, const char *def, struct gc_diags *d) {
  const char *p = src && src[0] ? src : def;
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/')
    n--;
  if (p[0] != '/' || n >= PREFIX_MAX) {
    gc_diags_addf(d, "sched: URL prefix \"%s\" must start with '/' and be shorter than %d bytes", p,
                  PREFIX_MAX);
    return GC_EINVAL;
  }
  memcpy(dst, p, n);
  dst[n] = '\0';
  return 0;
}

static void config_defaults(struct gb_sched_config *c) {
  if (!c->max_body)
    c->max_body = 16u << 20;
  if (!c->max_list_body)
    c->max_list_body = 256u << 20;
  if (!c->max_session_body)
    c->max_session_body = (size_t)4 << 30;
  if (!c->max_session_tasks)
    c->max_session_tasks = 262144;
}

int gb_sched_new(const struct gb_sched_config *cfg, const struct gb_sched_source *be,
                 struct gb_sched **out, struct gc_diags *d) {
  *out = NULL;
  char vp[PREFIX_MAX], kp[PREFIX_MAX];
  if (set_prefix(vp, cfg->volcano_prefix, "/volcano", d) < 0 ||
      set_prefix(kp, cfg->kube_prefix, "/kube", d) < 0)
    return GC_EINVAL;
  struct gb_sched *s = calloc(1, sizeof(*s));
  if (!s)
    return GC_ENOMEM;
  s->cfg = *cfg;
  config_defaults(&s->cfg);
  if (be)
    s->be = *be;
  pthread_mutex_init(&s->mu, NULL);
  int rc = gb_htab_init(&s->tasks, 1024);
  if (rc == 0)
    rc = gb_htab_init(&s->counts, 1024);
  if (rc == 0 && cfg->metrics)
    rc = register_metrics(s, cfg->metrics, d);
  if (rc < 0) {
    gb_sched_free(s);
    return rc;
  }
  for (int v = 0; v < N_VERBS; v++) {
    snprintf(s->paths[v], sizeof(s->paths[v]), "%s/%s",
             !strcmp(VERBS[v].protocol, GB_SCHED_EXTENDER_VOLCANO) ? vp : kp, VERBS[v].verb);
    s->ctx[v].s = s;
    s->ctx[v].verb = (enum verb)v;
  }
  *out = s;
  return 0;
}

void gb_sched_free(struct gb_sched *s) {
  if (!s)
    return;
  gb_sched_stop(s);
  if (s->tasks.buckets)
    gb_htab_clear(&s->tasks, free_node, NULL);
  if (s->counts.buckets)
    gb_htab_clear(&s->counts, free_node, NULL);
  gb_htab_free(&s->tasks);
  gb_htab_free(&s->counts);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* Fills routes (room for max) with the endpoint's routes; their ctx is s,
 * borrowed until the server stops.  Returns how many (9). */
static size_t gb_sched_routes(struct gb_sched *s, struct gb_http_route *routes, size_t max) {
  size_t n = 0;
  for (int v = 0; v < N_VERBS && n < max; v++, n++) {
    struct gb_http_route *r = &routes[n];
    memset(r, 0, sizeof(*r));
    r->path = s->paths[v];
    r->methods = GB_HTTP_POST | (VERBS[v].body == B_SESSION ? GB_HTTP_BODY_DISCARD : 0);
    r->handler = on_request;
    r->ctx = &s->ctx[v];
    r->max_body = VERBS[v].body == B_SESSION ? s->cfg.max_session_body
                  : VERBS[v].body == B_LIST  ? s->cfg.max_list_body
                                             : s->cfg.max_body;
  }
  return n;
}

int gb_sched_start(struct gb_sched *s, const struct gb_http_config *http, struct gc_diags *d) {
  struct gb_http_config cfg = *http;
  struct gb_http_route routes[N_VERBS];
  size_t n = gb_sched_routes(s, routes, N_VERBS);
  if (!cfg.name)
    cfg.name = "sched";
  /* One list body must fit in the total, with room for the predicates
   * that run meanwhile. */
  size_t want = s->cfg.max_list_body + 16 * s->cfg.max_body;
  if (cfg.max_body_total < want)
    cfg.max_body_total = want;
  /* Volcano's predicate callers keep their connections: each reuses its
   * body buffer (256 connections keep at most 64 MiB of the total). */
  if (!cfg.keep_body)
    cfg.keep_body = GB_SCHED_KEEP_BODY;
  return gb_http_start(&cfg, routes, n, &s->srv, d);
}

unsigned gb_sched_port(const struct gb_sched *s) { return s->srv ? gb_http_port(s->srv) : 0; }

/* Stops the server (idempotent). */
static void gb_sched_stop(struct gb_sched *s) {
  if (!s || !s->srv)
    return;
  gb_http_stop(s->srv);
  s->srv = NULL;
}
