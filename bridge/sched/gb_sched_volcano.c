/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_volcano: Volcano extender requests in, responses out (see
 * gb_sched_volcano.h).
 */
#define _GNU_SOURCE /* strptime, timegm */
#include "gb_sched_volcano.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void task_key(struct gb_sched_vtask *t) {
  const char *ns = t->ns[0] ? t->ns : t->pod.ns;
  if (t->pod.jobset[0] && ns[0])
    snprintf(t->key, sizeof(t->key), "%s/%s", ns, t->pod.jobset);
  else if (strchr(t->job, '/'))
    snprintf(t->key, sizeof(t->key), "%s", t->job);
  else
    gb_sched_pod_key(&t->pod, t->key);
}

/* A TaskInfo at the cursor. */
static int task_decode(struct gb_sj *s, struct gb_sched_vtask *t) {
  memset(t, 0, sizeof(*t));
  int rc = gb_sj_object_begin(s, "task");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "UID"))
      rc = gb_sj_string(s, "task.UID", t->uid, sizeof(t->uid));
    else if (gb_sj_key_is(&k, "Job"))
      rc = gb_sj_string(s, "task.Job", t->job, sizeof(t->job));
    else if (gb_sj_key_is(&k, "Name"))
      rc = gb_sj_string(s, "task.Name", t->name, sizeof(t->name));
    else if (gb_sj_key_is(&k, "Namespace"))
      rc = gb_sj_string(s, "task.Namespace", t->ns, sizeof(t->ns));
    else if (gb_sj_key_is(&k, "NodeName"))
      rc = gb_sj_string(s, "task.NodeName", t->node, sizeof(t->node));
    else if (gb_sj_key_is(&k, "Status"))
      rc = gb_sj_int(s, "task.Status", &t->status);
    else if (gb_sj_key_is(&k, "Pod"))
      rc = gb_sched_pod_decode(s, &t->pod);
    else
      rc = gb_sj_skip(s, NULL);
  }
  if (rc >= 0)
    task_key(t);
  return rc;
}

/* The Name of a NodeInfo at the cursor (else Node.metadata.name). */
static int node_decode(struct gb_sj *s, const char *what, char *name, size_t size) {
  char fallback[GB_SCHED_NAME_MAX + 1] = "";
  name[0] = '\0';
  int rc = gb_sj_object_begin(s, what);
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "Name")) {
      rc = gb_sj_string(s, "node.Name", name, size);
    } else if (gb_sj_key_is(&k, "Node") && gb_sj_peek(s) == '{') {
      struct gb_sched_pod meta; /* a v1.Node's metadata reads like a pod's */
      rc = gb_sched_pod_decode(s, &meta);
      /* Both hold a name and its NUL: a copy, never cut. */
      _Static_assert(sizeof(fallback) == sizeof(meta.name), "fallback holds a node name");
      memcpy(fallback, meta.name, strlen(meta.name) + 1);
    } else {
      rc = gb_sj_skip(s, NULL);
    }
  }
  if (rc >= 0 && !name[0])
    snprintf(name, size, "%s", fallback);
  if (rc >= 0 && !name[0])
    return gb_sj_fail(s, "%s: no Name", what);
  return rc;
}

/* Runs the walk of a request object {"<field>":...}: field_fn for the
 * members it knows, skip for the rest; the message on failure. */
typedef int (*member_fn)(struct gb_sj *s, const struct gb_sj_span *key, void *arg);

static int walk(const char *body, size_t len, const char *what, member_fn fn, void *arg, char *msg,
                size_t msg_size) {
  struct gb_sj s;
  gb_sj_init(&s, body, len);
  msg[0] = '\0';
  int rc = gb_sj_object_begin(&s, what);
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(&s, &k)) == 1)
    rc = fn(&s, &k, arg);
  if (rc >= 0)
    rc = gb_sj_finish(&s);
  if (rc < 0 && rc != GC_ENOMEM)
    snprintf(msg, msg_size, "%s", s.msg[0] ? s.msg : "malformed request");
  return rc;
}

struct pred_ctx {
  struct gb_sched_vtask *t;
  char *node;
  size_t node_size;
  int have_task, have_node;
};

static int pred_member(struct gb_sj *s, const struct gb_sj_span *k, void *arg) {
  struct pred_ctx *c = arg;
  if (gb_sj_key_is(k, "task") && gb_sj_peek(s) != 'n') {
    c->have_task = 1;
    return task_decode(s, c->t);
  }
  if (gb_sj_key_is(k, "node") && gb_sj_peek(s) != 'n') {
    c->have_node = 1;
    return node_decode(s, "node", c->node, c->node_size);
  }
  return gb_sj_skip(s, NULL);
}

static int need(int have, const char *field, char *msg, size_t msg_size) {
  if (have)
    return 0;
  snprintf(msg, msg_size, "request: no \"%s\"", field);
  return GC_EINVAL;
}

int gb_sched_volcano_predicate_decode(const char *body, size_t len, struct gb_sched_vtask *t,
                                      char *node, size_t node_size, char *msg, size_t msg_size) {
  struct pred_ctx c = {t, node, node_size, 0, 0};
  memset(t, 0, sizeof(*t));
  node[0] = '\0';
  int rc = walk(body, len, "PredicateRequest", pred_member, &c, msg, msg_size);
  if (rc < 0)
    return rc;
  if ((rc = need(c.have_task, "task", msg, msg_size)) < 0)
    return rc;
  return need(c.have_node, "node", msg, msg_size);
}

void gb_sched_vnodes_free(struct gb_sched_vnodes *v) {
  if (!v)
    return;
  free(v->names);
  free(v->block);
  free(v->off);
  memset(v, 0, sizeof(*v));
}

static int vnodes_add(struct gb_sj *s, struct gb_sched_vnodes *v, const char *name) {
  size_t n = strlen(name) + 1;
  if (v->n >= v->cap) {
    gb_sj_fail(s, "nodes: more than %zu nodes", v->cap);
    return GC_ELIMIT;
  }
  if (v->used + n > v->block_size) {
    size_t want = v->block_size ? 2 * v->block_size : 4096;
    while (want < v->used + n)
      want *= 2;
    char *nb = realloc(v->block, want);
    if (!nb)
      return GC_ENOMEM;
    v->block = nb;
    v->block_size = want;
  }
  memcpy(v->block + v->used, name, n);
  v->off[v->n++] = v->used;
  v->used += n;
  return 0;
}

struct prio_ctx {
  struct gb_sched_vtask *t;
  struct gb_sched_vnodes *v;
  int have_task;
};

static int prio_member(struct gb_sj *s, const struct gb_sj_span *k, void *arg) {
  struct prio_ctx *c = arg;
  if (gb_sj_key_is(k, "task") && gb_sj_peek(s) != 'n') {
    c->have_task = 1;
    return task_decode(s, c->t);
  }
  if (!gb_sj_key_is(k, "nodes"))
    return gb_sj_skip(s, NULL);
  c->v->n = 0; /* a repeated key: the last one counts, as in Go */
  c->v->used = 0;
  if (gb_sj_null(s))
    return 0;
  char name[GB_SCHED_NAME_MAX + 1];
  int rc = gb_sj_array_begin(s, "nodes");
  while (rc >= 0 && (rc = gb_sj_array_next(s)) == 1) {
    if ((rc = node_decode(s, "nodes[]", name, sizeof(name))) >= 0)
      rc = vnodes_add(s, c->v, name);
  }
  return rc;
}

int gb_sched_volcano_prioritize_decode(const char *body, size_t len, struct gb_sched_vtask *t,
                                       struct gb_sched_vnodes *nodes, char *msg, size_t msg_size) {
  memset(t, 0, sizeof(*t));
  memset(nodes, 0, sizeof(*nodes));
  /* A NodeInfo takes far more than 3 bytes; the cap only keeps the arrays
   * proportional to the body. */
  nodes->cap = len / 3 + 1 < GB_SCHED_MAX_NODES ? len / 3 + 1 : GB_SCHED_MAX_NODES;
  nodes->off = calloc(nodes->cap, sizeof(*nodes->off));
  if (!nodes->off)
    return GC_ENOMEM;
  struct prio_ctx c = {t, nodes, 0};
  int rc = walk(body, len, "PrioritizeRequest", prio_member, &c, msg, msg_size);
  if (rc < 0)
    return rc;
  if ((rc = need(c.have_task, "task", msg, msg_size)) < 0)
    return rc;
  /* The block has stopped moving: point the names into it. */
  nodes->names = calloc(nodes->n ? nodes->n : 1, sizeof(*nodes->names));
  if (!nodes->names)
    return GC_ENOMEM;
  for (size_t i = 0; i < nodes->n; i++)
    nodes->names[i] = nodes->block + nodes->off[i];
  return 0;
}

struct task_ctx {
  struct gb_sched_vtask *t;
  int have_task;
};

static int task_member(struct gb_sj *s, const struct gb_sj_span *k, void *arg) {
  struct task_ctx *c = arg;
  if (gb_sj_key_is(k, "task") && gb_sj_peek(s) != 'n') {
    c->have_task = 1;
    return task_decode(s, c->t);
  }
  return gb_sj_skip(s, NULL);
}

int gb_sched_volcano_task_decode(const char *body, size_t len, struct gb_sched_vtask *t, char *msg,
                                 size_t msg_size) {
  struct task_ctx c = {t, 0};
  memset(t, 0, sizeof(*t));
  int rc = walk(body, len, "EventHandlerRequest", task_member, &c, msg, msg_size);
  if (rc < 0)
    return rc;
  return need(c.have_task, "task", msg, msg_size);
}

/* PodGroup.metadata: name, namespace and the managed-by label. */
static int podgroup_meta(struct gb_sj *s, struct gb_sched_vjob *j) {
  int rc = gb_sj_object_begin(s, "job.PodGroup.metadata");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (!gb_sj_key_is(&k, "labels")) {
      rc = gb_sj_skip(s, NULL);
      continue;
    }
    if (gb_sj_null(s))
      continue;
    rc = gb_sj_object_begin(s, "job.PodGroup.metadata.labels");
    while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
      static const char managed[] = "app.kubernetes.io/managed-by";
      if (k.len == sizeof(managed) - 1 && !memcmp(k.p, managed, k.len)) {
        char v[64];
        rc = gb_sj_string(s, "job.PodGroup.metadata.labels", v, sizeof(v));
        j->managed = rc >= 0 && !strcmp(v, "gangbridge");
        if (rc == GC_ELIMIT) { /* a long value is simply not ours */
          s->msg[0] = '\0';
          rc = gb_sj_skip(s, NULL);
        }
      } else {
        rc = gb_sj_skip(s, NULL);
      }
    }
  }
  return rc;
}

static int podgroup_decode(struct gb_sj *s, struct gb_sched_vjob *j) {
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "job.PodGroup");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1)
    rc = !gb_sj_key_is(&k, "metadata") ? gb_sj_skip(s, NULL)
         : gb_sj_null(s)               ? 0
                                       : podgroup_meta(s, j);
  return rc;
}

static int topology_decode(struct gb_sj *s, struct gb_sched_vjob *j) {
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "job.NetworkTopology");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "mode"))
      rc = gb_sj_string(s, "job.NetworkTopology.mode", j->topology_mode, sizeof(j->topology_mode));
    else if (gb_sj_key_is(&k, "highestTierAllowed"))
      rc = gb_sj_int(s, "job.NetworkTopology.highestTierAllowed", &j->highest_tier);
    else if (gb_sj_key_is(&k, "highestTierName"))
      rc = gb_sj_string(s, "job.NetworkTopology.highestTierName", j->highest_tier_name,
                        sizeof(j->highest_tier_name));
    else
      rc = gb_sj_skip(s, NULL);
  }
  return rc;
}

/* A Resource (MilliCPU, Memory, ScalarResources) into shape r. */
static int resource_decode(struct gb_sj *s, struct gb_sched_vshape *r) {
  memset(r, 0, sizeof(*r));
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "job.Tasks[].InitResreq");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "MilliCPU")) {
      rc = gb_sj_double(s, "job.Tasks[].InitResreq.MilliCPU", &r->milli_cpu);
    } else if (gb_sj_key_is(&k, "Memory")) {
      rc = gb_sj_double(s, "job.Tasks[].InitResreq.Memory", &r->memory);
    } else if (gb_sj_key_is(&k, "ScalarResources") && !gb_sj_null(s)) {
      rc = gb_sj_object_begin(s, "job.Tasks[].InitResreq.ScalarResources");
      while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
        double v;
        if ((rc = gb_sj_double(s, "job.Tasks[].InitResreq.ScalarResources", &v)) < 0)
          break;
        /* "pods" is always 1 for a task; the evaluator adds it itself. */
        if (v <= 0 || (k.len == 4 && !memcmp(k.p, "pods", 4)))
          continue;
        if (r->n_scalar >= GB_SCHED_MAX_SCALARS || k.len > GB_SCHED_RES_NAME_MAX || !k.len) {
          gb_sj_fail(s,
                     "job.Tasks[].InitResreq.ScalarResources: more than %d resources or a "
                     "name longer than %d bytes",
                     GB_SCHED_MAX_SCALARS, GB_SCHED_RES_NAME_MAX);
          return GC_ELIMIT;
        }
        memcpy(r->scalar[r->n_scalar], k.p, k.len);
        r->scalar[r->n_scalar][k.len] = '\0';
        r->scalar_milli[r->n_scalar++] = v;
      }
    } else {
      rc = gb_sj_skip(s, NULL);
    }
  }
  return rc;
}

static int same_shape(const struct gb_sched_vshape *a, const struct gb_sched_vshape *b) {
  if (a->milli_cpu != b->milli_cpu || a->memory != b->memory || a->n_scalar != b->n_scalar)
    return 0;
  for (size_t i = 0; i < a->n_scalar; i++) {
    size_t j = 0;
    while (j < b->n_scalar && strcmp(a->scalar[i], b->scalar[j]))
      j++;
    if (j == b->n_scalar || a->scalar_milli[i] != b->scalar_milli[j])
      return 0;
  }
  return 1;
}

/* One TaskInfo of job.Tasks: its InitResreq joins a shape. */
static int task_shape(struct gb_sj *s, struct gb_sched_vjob *j) {
  struct gb_sched_vshape r;
  memset(&r, 0, sizeof(r));
  int rc = gb_sj_object_begin(s, "job.Tasks[]");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1)
    if (gb_sj_key_is(&k, "InitResreq"))
      rc = resource_decode(s, &r);
    else if (gb_sj_key_is(&k, "Name") && !j->first_task[0])
      rc = gb_sj_string(s, "job.Tasks[].Name", j->first_task, sizeof(j->first_task));
    else
      rc = gb_sj_skip(s, NULL);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < j->n_shapes; i++)
    if (same_shape(&j->shapes[i], &r)) {
      j->shapes[i].count++;
      return 0;
    }
  if (j->n_shapes >= GB_SCHED_MAX_SHAPES) {
    gb_sj_fail(s, "job.Tasks: more than %d distinct task requests", GB_SCHED_MAX_SHAPES);
    return GC_ELIMIT;
  }
  r.count = 1;
  j->shapes[j->n_shapes++] = r;
  return 0;
}

/* Tasks: counted and grouped by request. */
static int tasks_count(struct gb_sj *s, struct gb_sched_vjob *j) {
  j->n_tasks = 0;
  j->n_shapes = 0;
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "job.Tasks");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    j->n_tasks++;
    rc = gb_sj_null(s) ? 0 : task_shape(s, j);
  }
  return rc;
}

/* An RFC 3339 time (metav1.Time) as milliseconds since the epoch; null and
 * unreadable ones read as 0 (the gang is then the oldest: harmless). */
static int timestamp_decode(struct gb_sj *s, const char *what, int64_t *out) {
  char t[64];
  *out = 0;
  int rc = gb_sj_string(s, what, t, sizeof(t));
  if (rc < 0)
    return rc;
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  const char *end = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);
  if (end)
    *out = (int64_t)timegm(&tm) * 1000;
  return 0;
}

static int job_fields(struct gb_sj *s, struct gb_sched_vjob *j) {
  int rc = gb_sj_object_begin(s, "job");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "UID"))
      rc = gb_sj_string(s, "job.UID", j->uid, sizeof(j->uid));
    else if (gb_sj_key_is(&k, "Name"))
      rc = gb_sj_string(s, "job.Name", j->name, sizeof(j->name));
    else if (gb_sj_key_is(&k, "Namespace"))
      rc = gb_sj_string(s, "job.Namespace", j->ns, sizeof(j->ns));
    else if (gb_sj_key_is(&k, "Queue"))
      rc = gb_sj_string(s, "job.Queue", j->queue, sizeof(j->queue));
    else if (gb_sj_key_is(&k, "Priority"))
      rc = gb_sj_int_range(s, "job.Priority", INT32_MIN, INT32_MAX, &j->priority);
    else if (gb_sj_key_is(&k, "CreationTimestamp"))
      rc = timestamp_decode(s, "job.CreationTimestamp", &j->created_ms);
    else if (gb_sj_key_is(&k, "MinAvailable"))
      rc = gb_sj_int_range(s, "job.MinAvailable", INT32_MIN, INT32_MAX, &j->min_available);
    else if (gb_sj_key_is(&k, "Tasks"))
      rc = tasks_count(s, j);
    else if (gb_sj_key_is(&k, "PodGroup"))
      rc = podgroup_decode(s, j);
    else if (gb_sj_key_is(&k, "NetworkTopology"))
      rc = topology_decode(s, j);
    else
      rc = gb_sj_skip(s, NULL);
  }
  return rc;
}

struct job_ctx {
  struct gb_sched_vjob *j;
  int have_job;
};

static int job_member(struct gb_sj *s, const struct gb_sj_span *k, void *arg) {
  struct job_ctx *c = arg;
  if (gb_sj_key_is(k, "job") && gb_sj_peek(s) != 'n') {
    c->have_job = 1;
    memset(c->j, 0, sizeof(*c->j));
    return job_fields(s, c->j);
  }
  return gb_sj_skip(s, NULL);
}

int gb_sched_volcano_job_decode(const char *body, size_t len, struct gb_sched_vjob *j, char *msg,
                                size_t msg_size) {
  struct job_ctx c = {j, 0};
  memset(j, 0, sizeof(*j));
  int rc = walk(body, len, "JobEnqueueableRequest", job_member, &c, msg, msg_size);
  if (rc < 0)
    return rc;
  if ((rc = need(c.have_job, "job", msg, msg_size)) < 0)
    return rc;
  if (j->ns[0] && j->name[0])
    snprintf(j->key, sizeof(j->key), "%s/%s", j->ns, j->name);
  else if (strchr(j->uid, '/'))
    snprintf(j->key, sizeof(j->key), "%s", j->uid);
  return 0;
}

int gb_sched_volcano_predicate_encode(int code, const char *message, struct gb_buf *out) {
  gb_buf_addstr(out, "{\"status\":");
  gb_sched_kube_json_str(out, message ? message : "");
  return gb_buf_printf(out, ",\"code\":%d}", code);
}

/* ":%lld" of v, written at the end of num[24] (a thousand nodes per
 * answer: printf's format parsing was a third of the encoding).  Returns
 * the length. */
static size_t score_text(int64_t v, char num[24]) {
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  size_t i = 24;
  do {
    num[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    num[--i] = '-';
  num[--i] = ':';
  return 24 - i;
}

int gb_sched_volcano_prioritize_encode(const struct gb_sched_vnodes *nodes, const int64_t *score,
                                       struct gb_buf *out) {
  gb_buf_addstr(out, "{\"nodeScore\":{");
  for (size_t i = 0; i < nodes->n; i++) {
    if (i)
      gb_buf_addstr(out, ",");
    gb_sched_kube_json_str(out, nodes->names[i]);
    char num[24];
    size_t n = score_text(score[i], num);
    gb_buf_add(out, num + sizeof(num) - n, n);
  }
  return gb_buf_addstr(out, "},\"errorMessage\":\"\"}");
}

int gb_sched_volcano_error_encode(const char *message, struct gb_buf *out) {
  gb_buf_addstr(out, "{\"errorMessage\":");
  gb_sched_kube_json_str(out, message ? message : "");
  return gb_buf_addstr(out, "}");
}

int gb_sched_volcano_enqueue_encode(int verdict, struct gb_buf *out) {
  return gb_buf_printf(out, "{\"status\":%d}", verdict);
}
