/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_kube: ExtenderArgs in, ExtenderFilterResult and HostPriorityList
 * out (see gb_sched_kube.h).
 */
#include "gb_sched_kube.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_backend.h"

static int exact(const struct gb_sj_span *k, const char *name) {
  size_t n = strlen(name);
  return k->len == n && !memcmp(k->p, name, n);
}

/* 1 when k is a key some backend joins pods to their group by, at `at`
 * (gc_backend.h; the keys gangbridge writes). */
static int group_key(const struct gb_sj_span *k, enum gc_join_at at) {
  const struct gc_backend_join *j = gc_backend_join_find(at, k->p, k->len, 0, NULL);
  return j && j->value == GC_JOIN_GROUP;
}

/* metadata.annotations: a backend's group annotation. */
static int annotations_decode(struct gb_sj *s, struct gb_sched_pod *pod) {
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "Pod.metadata.annotations");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1)
    rc = group_key(&k, GC_JOIN_ANNOTATION)
             ? gb_sj_string(s, "Pod.metadata.annotations", pod->pod_group, sizeof(pod->pod_group))
             : gb_sj_skip(s, NULL);
  return rc;
}

/* metadata.labels: the JobSet name and a backend's group label. */
static int labels_decode(struct gb_sj *s, struct gb_sched_pod *pod) {
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "Pod.metadata.labels");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (exact(&k, GB_SCHED_JOBSET_LABEL))
      rc = gb_sj_string(s, "Pod.metadata.labels", pod->jobset, sizeof(pod->jobset));
    else if (group_key(&k, GC_JOIN_LABEL))
      rc = gb_sj_string(s, "Pod.metadata.labels", pod->pod_group, sizeof(pod->pod_group));
    else
      rc = gb_sj_skip(s, NULL);
  }
  return rc;
}

static int metadata_decode(struct gb_sj *s, struct gb_sched_pod *pod) {
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "Pod.metadata");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "name"))
      rc = gb_sj_string(s, "Pod.metadata.name", pod->name, sizeof(pod->name));
    else if (gb_sj_key_is(&k, "namespace"))
      rc = gb_sj_string(s, "Pod.metadata.namespace", pod->ns, sizeof(pod->ns));
    else if (gb_sj_key_is(&k, "uid"))
      rc = gb_sj_string(s, "Pod.metadata.uid", pod->uid, sizeof(pod->uid));
    else if (gb_sj_key_is(&k, "labels"))
      rc = labels_decode(s, pod);
    else if (gb_sj_key_is(&k, "annotations") && !pod->pod_group[0])
      rc = annotations_decode(s, pod);
    else
      rc = gb_sj_skip(s, NULL);
  }
  return rc;
}

static int spec_decode(struct gb_sj *s, struct gb_sched_pod *pod) {
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "Pod.spec");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1)
    rc = gb_sj_key_is(&k, "nodeName")
             ? gb_sj_string(s, "Pod.spec.nodeName", pod->node, sizeof(pod->node))
             : gb_sj_skip(s, NULL);
  return rc;
}

int gb_sched_pod_decode(struct gb_sj *s, struct gb_sched_pod *pod) {
  memset(pod, 0, sizeof(*pod));
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "Pod");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "metadata"))
      rc = metadata_decode(s, pod);
    else if (gb_sj_key_is(&k, "spec"))
      rc = spec_decode(s, pod);
    else
      rc = gb_sj_skip(s, NULL);
  }
  return rc;
}

void gb_sched_pod_key(const struct gb_sched_pod *pod, char *out) {
  const char *group = pod->jobset[0] ? pod->jobset : pod->pod_group;
  if (!pod->ns[0] || !group[0]) {
    out[0] = '\0';
    return;
  }
  snprintf(out, GB_SCHED_KEY_MAX + 1, "%s/%s", pod->ns, group);
}

/* Keeps a node name: copies it into the block (which is as large as the
 * body, so names always fit). */
static int add_node(struct gb_sched_kube_args *a, size_t *used, size_t cap, const char *name,
                    const struct gb_sj_span *item) {
  if (a->n_nodes >= a->cap_nodes)
    return GC_ELIMIT;
  size_t n = strlen(name) + 1;
  if (*used + n > cap)
    return GC_ELIMIT;
  memcpy(a->block + *used, name, n);
  a->nodes[a->n_nodes] = a->block + *used;
  if (item)
    a->items[a->n_nodes] = *item;
  a->n_nodes++;
  *used += n;
  return 0;
}

/* One v1.Node of Nodes.items: its metadata.name. */
static int node_name(struct gb_sj *s, char *name, size_t size) {
  name[0] = '\0';
  int rc = gb_sj_object_begin(s, "Nodes.items[]");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (!gb_sj_key_is(&k, "metadata")) {
      rc = gb_sj_skip(s, NULL);
      continue;
    }
    if (gb_sj_null(s))
      continue;
    rc = gb_sj_object_begin(s, "Nodes.items[].metadata");
    while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1)
      rc = gb_sj_key_is(&k, "name") ? gb_sj_string(s, "Nodes.items[].metadata.name", name, size)
                                    : gb_sj_skip(s, NULL);
  }
  return rc;
}

static int nodes_decode(struct gb_sj *s, struct gb_sched_kube_args *a, size_t *used, size_t cap) {
  if (gb_sj_null(s))
    return 0;
  int rc = gb_sj_object_begin(s, "Nodes");
  struct gb_sj_span k;
  char name[GB_SCHED_NAME_MAX + 1];
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (!gb_sj_key_is(&k, "items")) {
      rc = gb_sj_skip(s, NULL);
      continue;
    }
    if (gb_sj_null(s))
      continue;
    a->n_nodes = 0; /* a repeated items key: the last one counts, as in Go */
    *used = 0;
    rc = gb_sj_array_begin(s, "Nodes.items");
    while (rc >= 0 && (rc = gb_sj_array_next(s)) == 1) {
      struct gb_sj_span item;
      gb_sj_peek(s);
      item.p = s->p;
      if ((rc = node_name(s, name, sizeof(name))) < 0)
        break;
      item.len = (size_t)(s->p - item.p);
      if (!name[0])
        return gb_sj_fail(s, "Nodes.items[%zu]: no metadata.name", a->n_nodes);
      if ((rc = add_node(a, used, cap, name, &item)) < 0)
        return gb_sj_fail(s, "Nodes: more than %d nodes", GB_SCHED_MAX_NODES), GC_ELIMIT;
    }
  }
  return rc;
}

static int names_decode(struct gb_sj *s, struct gb_sched_kube_args *a, size_t *used, size_t cap) {
  if (gb_sj_null(s))
    return 0;
  a->n_nodes = 0;
  *used = 0;
  char name[GB_SCHED_NAME_MAX + 1];
  int rc = gb_sj_array_begin(s, "NodeNames");
  while (rc >= 0 && (rc = gb_sj_array_next(s)) == 1) {
    if ((rc = gb_sj_string(s, "NodeNames[]", name, sizeof(name))) < 0)
      break;
    if ((rc = add_node(a, used, cap, name, NULL)) < 0)
      return gb_sj_fail(s, "NodeNames: more than %d nodes", GB_SCHED_MAX_NODES), GC_ELIMIT;
  }
  return rc;
}

static int args_walk(struct gb_sj *s, struct gb_sched_kube_args *a, size_t cap) {
  size_t used = 0;
  int seen_names = 0;
  int rc = gb_sj_object_begin(s, "ExtenderArgs");
  struct gb_sj_span k;
  while (rc >= 0 && (rc = gb_sj_object_next(s, &k)) == 1) {
    if (gb_sj_key_is(&k, "Pod")) {
      rc = gb_sched_pod_decode(s, &a->pod);
    } else if (gb_sj_key_is(&k, "NodeNames")) {
      /* The scheduler sends NodeNames only when nodeCacheCapable, then Nodes
       * is null; a non-null NodeNames decides the form. */
      if (gb_sj_peek(s) == 'n') {
        rc = gb_sj_skip(s, NULL);
        continue;
      }
      seen_names = 1;
      a->node_names = 1;
      rc = names_decode(s, a, &used, cap);
    } else if (gb_sj_key_is(&k, "Nodes") && !seen_names) {
      rc = nodes_decode(s, a, &used, cap);
    } else {
      rc = gb_sj_skip(s, NULL);
    }
  }
  return rc < 0 ? rc : gb_sj_finish(s);
}

int gb_sched_kube_args_decode(const char *body, size_t len, struct gb_sched_kube_args *a, char *msg,
                              size_t msg_size) {
  memset(a, 0, sizeof(*a));
  msg[0] = '\0';
  /* At most one name per 3 body bytes ("",) and never more than the cap. */
  size_t max = len / 3 + 1 < GB_SCHED_MAX_NODES ? len / 3 + 1 : GB_SCHED_MAX_NODES;
  a->block = malloc(len + 1);
  a->nodes = calloc(max, sizeof(*a->nodes));
  a->items = calloc(max, sizeof(*a->items));
  if (!a->block || !a->nodes || !a->items)
    return GC_ENOMEM;
  a->cap_nodes = max;
  struct gb_sj s;
  gb_sj_init(&s, body, len);
  int rc = args_walk(&s, a, len + 1);
  a->bad_utf8 = s.bad_utf8;
  if (rc < 0) {
    snprintf(msg, msg_size, "%s", s.msg[0] ? s.msg : "ExtenderArgs: malformed");
    return rc;
  }
  gb_sched_pod_key(&a->pod, a->key);
  return 0;
}

void gb_sched_kube_args_free(struct gb_sched_kube_args *a) {
  if (!a)
    return;
  free(a->block);
  free(a->nodes);
  free(a->items);
  a->block = NULL;
  a->nodes = NULL;
  a->items = NULL;
  a->n_nodes = 0;
}

int gb_sched_kube_json_str(struct gb_buf *out, const char *s) {
  /* Most names and reasons hold nothing json-c would escape (a quote, a
   * backslash or a control byte; "/" is not escaped with NOSLASHESCAPE and
   * bytes above 0x7f pass as they are): those are copied between quotes,
   * which is json-c's output for them; the rest go through json-c. */
  size_t n = 0;
  while (s[n] && (unsigned char)s[n] >= 0x20 && s[n] != '"' && s[n] != '\\')
    n++;
  if (!s[n] && n <= 510) {
    char q[512]; /* one append for the common, short string */
    q[0] = '"';
    memcpy(q + 1, s, n);
    q[n + 1] = '"';
    return gb_buf_add(out, q, n + 2);
  }
  if (!s[n]) {
    gb_buf_add(out, "\"", 1);
    gb_buf_add(out, s, n);
    return gb_buf_add(out, "\"", 1);
  }
  struct json_object *o = json_object_new_string(s);
  if (!o)
    return gb_buf_fail(out, GC_ENOMEM);
  int rc = gb_buf_addstr(out, json_object_to_json_string_ext(
                                  o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
  return rc;
}

/* The escaped text of s between its quotes, appended to out. */
static int json_inner(struct gb_buf *out, const char *s) {
  struct gb_buf q;
  gb_buf_init(&q, 8 * strlen(s) + 16);
  int rc = gb_sched_kube_json_str(&q, s);
  if (rc >= 0)
    rc = gb_buf_add(out, gb_buf_ptr(&q) + 1, gb_buf_len(&q) - 2);
  gb_buf_free(&q);
  return rc < 0 ? gb_buf_fail(out, rc) : rc;
}

/* The escaped parts of joined reasons: json-c escapes byte by byte, so
 * the escaped sentence is the escaped head, name and tail one after the
 * other.  scratch holds one entry of a plain name (nothing to escape, at
 * most GB_SCHED_NAME_MAX bytes), so that entry is one append. */
struct esc_parts {
  struct gb_buf head, tail;
  char *scratch;
};

/* The entry "name":"head name tail" of a plain name in one append; 0 when
 * the name is not plain (the caller writes it piece by piece). */
static int plain_entry(struct gb_buf *out, const char *name, const struct esc_parts *ep) {
  size_t n = 0;
  while (name[n] && (unsigned char)name[n] >= 0x20 && name[n] != '"' && name[n] != '\\')
    n++;
  if (name[n] || n > GB_SCHED_NAME_MAX || !ep->scratch)
    return 0;
  size_t hl = gb_buf_len(&ep->head), tl = gb_buf_len(&ep->tail);
  char *w = ep->scratch;
  *w++ = '"';
  memcpy(w, name, n), w += n;
  memcpy(w, "\":\"", 3), w += 3;
  memcpy(w, gb_buf_ptr(&ep->head), hl), w += hl;
  memcpy(w, name, n), w += n;
  memcpy(w, gb_buf_ptr(&ep->tail), tl), w += tl;
  *w++ = '"';
  gb_buf_add(out, ep->scratch, (size_t)(w - ep->scratch));
  return 1;
}

/* "name":"reason" of node i: a joined reason copies the name's escaped
 * text the key just wrote. */
static void failed_entry(struct gb_buf *out, const char *name, const char *why,
                         const struct esc_parts *ep) {
  if (ep && plain_entry(out, name, ep))
    return;
  size_t at = gb_buf_len(out);
  gb_sched_kube_json_str(out, name);
  size_t end = gb_buf_len(out);
  if (!ep) {
    gb_buf_addstr(out, ":");
    gb_sched_kube_json_str(out, why ? why : "");
    return;
  }
  size_t hl = gb_buf_len(&ep->head), tl = gb_buf_len(&ep->tail), nl = end - at - 2;
  if (end < at + 2 || gb_buf_reserve(out, hl + nl + tl + 3) < 0)
    return; /* the sticky error is the answer */
  gb_buf_add(out, ":\"", 2);
  gb_buf_add(out, gb_buf_ptr(&ep->head), hl);
  gb_buf_add(out, gb_buf_ptr(out) + at + 1, nl); /* room reserved: the text does not move */
  gb_buf_add(out, gb_buf_ptr(&ep->tail), tl);
  gb_buf_add(out, "\"", 1);
}

/* {"node":"why",...} of the failed nodes with unresolvable[i] == want. */
static void failed_map(struct gb_buf *out, const struct gb_sched_kube_args *a, const uint8_t *pass,
                       const uint8_t *unresolvable, const char *const *why,
                       const struct gb_sched_kube_why *parts, const struct esc_parts *ep,
                       int want) {
  int first = 1;
  gb_buf_addstr(out, "{");
  for (size_t i = 0; i < a->n_nodes; i++) {
    if (pass[i] || (unresolvable && unresolvable[i]) != want)
      continue;
    if (!first)
      gb_buf_addstr(out, ",");
    first = 0;
    int joined = parts && parts->joined && parts->joined[i];
    failed_entry(out, a->nodes[i], why ? why[i] : NULL, joined ? ep : NULL);
  }
  gb_buf_addstr(out, "}");
}

int gb_sched_kube_filter_encode(const struct gb_sched_kube_args *a, const uint8_t *pass,
                                const uint8_t *unresolvable, const char *const *why,
                                const struct gb_sched_kube_why *parts, const char *error,
                                struct gb_buf *out) {
  int first = 1;
  struct esc_parts ep;
  gb_buf_init(&ep.head, 1u << 20);
  gb_buf_init(&ep.tail, 1u << 20);
  ep.scratch = NULL;
  if (parts && (json_inner(&ep.head, parts->head ? parts->head : "") < 0 ||
                json_inner(&ep.tail, parts->tail ? parts->tail : "") < 0))
    gb_buf_fail(out, GC_ENOMEM);
  else if (parts)
    ep.scratch = malloc(gb_buf_len(&ep.head) + gb_buf_len(&ep.tail) + 2 * GB_SCHED_NAME_MAX + 8);
  if (a->node_names) {
    gb_buf_addstr(out, "{\"Nodes\":null,\"NodeNames\":[");
    for (size_t i = 0; i < a->n_nodes; i++) {
      if (!pass[i])
        continue;
      gb_buf_addstr(out, first ? "" : ",");
      first = 0;
      gb_sched_kube_json_str(out, a->nodes[i]);
    }
    gb_buf_addstr(out, "]");
  } else {
    gb_buf_addstr(out, "{\"Nodes\":{\"metadata\":{},\"items\":[");
    for (size_t i = 0; i < a->n_nodes; i++) {
      if (!pass[i])
        continue;
      gb_buf_addstr(out, first ? "" : ",");
      first = 0;
      gb_sj_add_span(out, a->bad_utf8, &a->items[i]);
    }
    gb_buf_addstr(out, "]},\"NodeNames\":null");
  }
  gb_buf_addstr(out, ",\"FailedNodes\":");
  failed_map(out, a, pass, unresolvable, why, parts, &ep, 0);
  gb_buf_addstr(out, ",\"FailedAndUnresolvableNodes\":");
  failed_map(out, a, pass, unresolvable, why, parts, &ep, 1);
  gb_buf_addstr(out, ",\"Error\":");
  gb_sched_kube_json_str(out, error ? error : "");
  gb_buf_free(&ep.head);
  gb_buf_free(&ep.tail);
  free(ep.scratch);
  return gb_buf_addstr(out, "}");
}

int gb_sched_kube_priority_encode(const struct gb_sched_kube_args *a, const int64_t *score,
                                  struct gb_buf *out) {
  gb_buf_addstr(out, "[");
  for (size_t i = 0; i < a->n_nodes; i++) {
    gb_buf_addstr(out, i ? ",{\"Host\":" : "{\"Host\":");
    gb_sched_kube_json_str(out, a->nodes[i]);
    gb_buf_printf(out, ",\"Score\":%lld}", (long long)score[i]);
  }
  return gb_buf_addstr(out, "]");
}
