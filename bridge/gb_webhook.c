/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_webhook: Pod mutating admission for PodGroup binding (see gb_webhook.h).
 *
 * A review runs in three steps: validate the envelope (anything wrong before
 * the uid is known is an HTTP error), decide (every outcome after that is an
 * AdmissionReview answer), and build the JSON Patch.  The patch only ever
 * uses "add", which RFC 6902 defines as "replace" for an existing object
 * member, so the same operation sets a missing key or corrects a wrong one.
 */
#include "gb_webhook.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gb_log.h"
#include "gb_metrics.h"

#define ADMISSION_API "admission.k8s.io/v1"
#define JSON_DEPTH 64
#define MAX_WARNINGS 8

struct gb_webhook {
  struct gb_webhook_config cfg;
};

int gb_webhook_new(const struct gb_webhook_config *cfg, struct gb_webhook **out) {
  if (!cfg || !cfg->lookup || !out)
    return GC_EINVAL;
  struct gb_webhook *wh = calloc(1, sizeof(*wh));
  if (!wh)
    return GC_ENOMEM;
  wh->cfg = *cfg;
  if (!wh->cfg.max_body)
    wh->cfg.max_body = GB_WEBHOOK_DEFAULT_MAX_BODY;
  if (wh->cfg.max_body > GB_WEBHOOK_MAX_BODY_LIMIT)
    wh->cfg.max_body = GB_WEBHOOK_MAX_BODY_LIMIT; /* json-c takes an int length */
  *out = wh;
  return 0;
}

void gb_webhook_free(struct gb_webhook *wh) { free(wh); }

int gb_json_pointer_escape(const char *key, char *buf, size_t size) {
  size_t n = 0;
  for (const char *p = key; *p; p++) {
    const char *rep = *p == '~' ? "~0" : *p == '/' ? "~1" : NULL;
    size_t add = rep ? 2 : 1;
    if (n + add + 1 > size)
      return GC_ELIMIT;
    if (rep) {
      buf[n++] = rep[0];
      buf[n++] = rep[1];
    } else {
      buf[n++] = *p;
    }
  }
  if (n + 1 > size)
    return GC_ELIMIT;
  buf[n] = '\0';
  return 0;
}

char *gb_base64_encode(const void *data, size_t len) {
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const unsigned char *in = data;
  size_t out_len = 4 * ((len + 2) / 3);
  char *out = malloc(out_len + 1);
  if (!out)
    return NULL;
  size_t o = 0, i = 0;
  for (; i + 2 < len; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
    out[o++] = tbl[v >> 18];
    out[o++] = tbl[(v >> 12) & 63];
    out[o++] = tbl[(v >> 6) & 63];
    out[o++] = tbl[v & 63];
  }
  if (i < len) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0);
    out[o++] = tbl[v >> 18];
    out[o++] = tbl[(v >> 12) & 63];
    out[o++] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
    out[o++] = '=';
  }
  out[o] = '\0';
  return out;
}

/* ---- small json-c helpers --------------------------------------------- */

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!o || !json_object_is_type(o, json_type_object))
    return NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *get_str(json_object *o, const char *key) {
  json_object *v = get(o, key);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static json_object *get_obj(json_object *o, const char *key) {
  json_object *v = get(o, key);
  return v && json_object_is_type(v, json_type_object) ? v : NULL;
}

/* ---- answers ---------------------------------------------------------- */

struct answer {
  int status;
  char *body;
  size_t len;
  const char *ctype;
};

static int text_answer(struct answer *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int text_answer(struct answer *a, int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  size_t n = strlen(msg);
  a->body = malloc(n + 2);
  if (!a->body)
    return GC_ENOMEM;
  memcpy(a->body, msg, n);
  a->body[n] = '\n';
  a->body[n + 1] = '\0';
  a->len = n + 1;
  a->status = status;
  a->ctype = "text/plain; charset=utf-8";
  char code[8];
  snprintf(code, sizeof(code), "%d", status);
  gb_log(GB_LOG_WARN, "admission review rejected", "status", code, "reason", msg, NULL);
  return 0;
}

/* What one review decided, before it is written out. */
struct verdict {
  int allowed;
  int deny_code;
  char deny_msg[512];
  const char *warnings[MAX_WARNINGS]; /* each points into warn_buf */
  char warn_buf[MAX_WARNINGS][384];
  size_t n_warnings;
  json_object *patch; /* array of operations, or NULL */
};

static void warn(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct verdict *v, const char *fmt, ...) {
  if (v->n_warnings >= MAX_WARNINGS)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->warn_buf[v->n_warnings], sizeof(v->warn_buf[0]), fmt, ap);
  va_end(ap);
  v->warnings[v->n_warnings] = v->warn_buf[v->n_warnings];
  v->n_warnings++;
}

static int review_answer(struct answer *a, const char *uid, struct verdict *v) {
  int rc = GC_ENOMEM;
  json_object *root = json_object_new_object();
  json_object *resp = json_object_new_object();
  if (!root || !resp)
    goto out;
  json_object_object_add(root, "apiVersion", json_object_new_string(ADMISSION_API));
  json_object_object_add(root, "kind", json_object_new_string("AdmissionReview"));
  json_object_object_add(resp, "uid", json_object_new_string(uid));
  json_object_object_add(resp, "allowed", json_object_new_boolean(v->allowed));
  if (!v->allowed) {
    json_object *st = json_object_new_object();
    if (!st)
      goto out;
    json_object_object_add(st, "code", json_object_new_int(v->deny_code));
    json_object_object_add(st, "message", json_object_new_string(v->deny_msg));
    json_object_object_add(resp, "status", st);
  }
  if (v->allowed && v->patch && json_object_array_length(v->patch) > 0) {
    const char *p = json_object_to_json_string_ext(
        v->patch, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *b64 = p ? gb_base64_encode(p, strlen(p)) : NULL;
    if (!b64)
      goto out;
    json_object_object_add(resp, "patchType", json_object_new_string("JSONPatch"));
    json_object_object_add(resp, "patch", json_object_new_string(b64));
    free(b64);
  }
  if (v->n_warnings) {
    json_object *w = json_object_new_array();
    if (!w)
      goto out;
    for (size_t i = 0; i < v->n_warnings; i++)
      json_object_array_add(w, json_object_new_string(v->warnings[i]));
    json_object_object_add(resp, "warnings", w);
  }
  json_object_object_add(root, "response", resp);
  resp = NULL;
  size_t len = 0;
  const char *s = json_object_to_json_string_length(
      root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  if (!s)
    goto out;
  a->body = malloc(len + 1);
  if (!a->body)
    goto out;
  memcpy(a->body, s, len + 1);
  a->len = len;
  a->status = 200;
  a->ctype = "application/json";
  rc = 0;
out:
  json_object_put(resp);
  json_object_put(root);
  return rc;
}

/* ---- patch construction ----------------------------------------------- */

static int add_op(json_object *patch, const char *path, json_object *value) {
  json_object *op = json_object_new_object();
  if (!op || !value) {
    json_object_put(op);
    json_object_put(value);
    return GC_ENOMEM;
  }
  json_object_object_add(op, "op", json_object_new_string("add"));
  json_object_object_add(op, "path", json_object_new_string(path));
  json_object_object_add(op, "value", value);
  json_object_array_add(patch, op);
  return 0;
}

/* Sets metadata.<map>[key] = value: adds the whole map when the pod has none
 * (or a non-object there), else adds or corrects the one key.  Returns 1 when
 * an operation was added, 0 when the pod already had it, <0 on error. */
static int set_map_key(json_object *patch, json_object *meta, const char *map, const char *key,
                       const char *value, struct verdict *v) {
  json_object *m = get(meta, map);
  char path[600];
  if (!m || !json_object_is_type(m, json_type_object)) {
    json_object *obj = json_object_new_object();
    if (!obj)
      return GC_ENOMEM;
    json_object_object_add(obj, key, json_object_new_string(value));
    snprintf(path, sizeof(path), "/metadata/%s", map);
    int rc = add_op(patch, path, obj);
    return rc < 0 ? rc : 1;
  }
  const char *cur = get_str(m, key);
  if (cur && !strcmp(cur, value))
    return 0;
  if (cur)
    warn(v, "gangbridge: replaced %s %s=%s with the TrainJob's PodGroup %s",
         !strcmp(map, "labels") ? "label" : "annotation", key, cur, value);
  char esc[300];
  if (gb_json_pointer_escape(key, esc, sizeof(esc)) < 0)
    return GC_ELIMIT;
  snprintf(path, sizeof(path), "/metadata/%s/%s", map, esc);
  int rc = add_op(patch, path, json_object_new_string(value));
  return rc < 0 ? rc : 1;
}

static const char *backend_name(enum gc_backend b) {
  return b == GC_BACKEND_VOLCANO ? "volcano" : b == GC_BACKEND_COSCHEDULING ? "coscheduling"
                                                                           : "none";
}

/* Builds the patch for a pod the lookup says to bind. */
static int build_patch(json_object *pod, const struct gb_webhook_decision *dec,
                       struct verdict *v) {
  v->patch = json_object_new_array();
  if (!v->patch)
    return GC_ENOMEM;
  json_object *meta = get_obj(pod, "metadata");
  int rc;
  if (dec->backend == GC_BACKEND_VOLCANO)
    rc = set_map_key(v->patch, meta, "annotations", GC_VOLCANO_GROUP_ANNOTATION, dec->group, v);
  else
    rc = set_map_key(v->patch, meta, "labels", GC_COSCHED_GROUP_LABEL, dec->group, v);
  if (rc < 0)
    return rc;
  if (dec->scheduler_name[0]) {
    json_object *spec = get_obj(pod, "spec");
    const char *cur = get_str(spec, "schedulerName");
    if (!spec) {
      warn(v, "gangbridge: pod has no spec; schedulerName %s not set", dec->scheduler_name);
    } else if (!cur || !cur[0] || !strcmp(cur, GB_DEFAULT_SCHEDULER)) {
      rc = add_op(v->patch, "/spec/schedulerName", json_object_new_string(dec->scheduler_name));
      if (rc < 0)
        return rc;
    } else if (strcmp(cur, dec->scheduler_name)) {
      warn(v, "gangbridge: pod asks for scheduler %s; left as is (the PodGroup expects %s)",
           cur, dec->scheduler_name);
    }
  }
  return 0;
}

/* ---- the review ------------------------------------------------------- */

static int is_json_type(const char *ct) {
  if (!ct)
    return 0;
  while (*ct == ' ')
    ct++;
  size_t n = strlen("application/json");
  if (strncasecmp(ct, "application/json", n))
    return 0;
  return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

static void count(struct gb_webhook *wh, const char *backend, const char *result) {
  const char *labels[2] = {backend, result};
  gb_counter_inc(wh->cfg.admissions, labels);
}

/* Decides for a well-formed envelope.  Sets *result to the metric result. */
static int decide(struct gb_webhook *wh, json_object *req, struct verdict *v, const char **backend,
                  const char **result) {
  v->allowed = 1;
  *backend = "none";
  *result = GB_M_ADMIT_SKIPPED;
  json_object *kind = get_obj(req, "kind");
  const char *op = get_str(req, "operation");
  if (!kind || strcmp(get_str(kind, "kind") ? get_str(kind, "kind") : "", "Pod") ||
      (get_str(kind, "group") && get_str(kind, "group")[0])) {
    warn(v, "gangbridge: this webhook only reviews core/v1 Pods; request left unchanged");
    *result = GB_M_ADMIT_INVALID;
    return 0;
  }
  if (!op || strcmp(op, "CREATE")) {
    /* Pod labels and annotations the webhook sets are fixed at creation;
     * other operations have nothing to do. */
    return 0;
  }
  json_object *pod = get_obj(req, "object");
  if (!pod) {
    warn(v, "gangbridge: request.object is missing or not an object; pod left unchanged");
    *result = GB_M_ADMIT_INVALID;
    return 0;
  }
  json_object *meta = get_obj(pod, "metadata");
  json_object *labels = get_obj(meta, "labels");
  const char *jobset = get_str(labels, GB_JOBSET_NAME_LABEL);
  const char *rjob = get_str(labels, GB_JOBSET_RJOB_LABEL);
  if (!jobset || !rjob || !jobset[0] || !rjob[0])
    return 0; /* not a JobSet pod: not ours */
  const char *ns = get_str(req, "namespace");
  if (!ns || !ns[0])
    ns = get_str(meta, "namespace");
  if (!ns || !ns[0]) {
    warn(v, "gangbridge: the review names no namespace; pod left unchanged");
    *result = GB_M_ADMIT_INVALID;
    return 0;
  }
  struct gb_webhook_decision dec;
  memset(&dec, 0, sizeof(dec));
  char reason[256] = "";
  int rc = wh->cfg.lookup(wh->cfg.ctx, ns, jobset, rjob, &dec, reason, sizeof(reason));
  dec.group[sizeof(dec.group) - 1] = '\0';
  dec.scheduler_name[sizeof(dec.scheduler_name) - 1] = '\0';
  reason[sizeof(reason) - 1] = '\0';
  if (rc == 0 && dec.managed && dec.bind &&
      ((dec.backend != GC_BACKEND_VOLCANO && dec.backend != GC_BACKEND_COSCHEDULING) ||
       !dec.group[0])) {
    rc = GC_EINVAL;
    snprintf(reason, sizeof(reason), "lookup returned no backend or no group name");
  }
  if (rc < 0) {
    gb_log(GB_LOG_WARN, "webhook lookup failed", "namespace", ns, "jobset", jobset,
           "replicatedJob", rjob, "reason", reason[0] ? reason : gc_strerror(rc), NULL);
    if (wh->cfg.allow_on_error) {
      warn(v, "gangbridge: cannot tell this pod's PodGroup (%s); admitted without gang binding",
           reason[0] ? reason : gc_strerror(rc));
      *result = GB_M_ADMIT_INVALID;
    } else {
      v->allowed = 0;
      v->deny_code = 500;
      snprintf(v->deny_msg, sizeof(v->deny_msg),
               "gangbridge: cannot tell the PodGroup of %s/%s replicated job %s yet (%s); "
               "retry",
               ns, jobset, rjob, reason[0] ? reason : gc_strerror(rc));
      *result = GB_M_ADMIT_DENIED;
    }
    return 0;
  }
  if (!dec.managed || !dec.bind)
    return 0;
  *backend = backend_name(dec.backend);
  rc = build_patch(pod, &dec, v);
  if (rc < 0)
    return rc;
  *result = json_object_array_length(v->patch) ? GB_M_ADMIT_PATCHED : GB_M_ADMIT_UNCHANGED;
  gb_log(GB_LOG_DEBUG, "webhook bound pod", "namespace", ns, "jobset", jobset, "replicatedJob",
         rjob, "podGroup", dec.group, "backend", *backend, "result", *result, NULL);
  return 0;
}

int gb_webhook_review(struct gb_webhook *wh, const char *content_type, const char *body,
                      size_t len, int *status, char **out, size_t *out_len,
                      const char **content_type_out) {
  if (!wh || !status || !out || !out_len || !content_type_out || (len && !body))
    return GC_EINVAL;
  struct answer a = {0, NULL, 0, NULL};
  struct verdict v;
  memset(&v, 0, sizeof(v));
  json_object *root = NULL;
  json_tokener *tok = NULL;
  int rc = 0;
  const char *backend = "none", *result = GB_M_ADMIT_INVALID;

  if (len > wh->cfg.max_body) {
    rc = text_answer(&a, 413, "admission review of %zu bytes is over the %zu-byte limit", len,
                     wh->cfg.max_body);
    goto done;
  }
  if (!is_json_type(content_type)) {
    rc = text_answer(&a, 415, "content type must be application/json, not %s",
                     content_type ? content_type : "(none)");
    goto done;
  }
  if (!len) {
    rc = text_answer(&a, 400, "empty body: expected an admission.k8s.io/v1 AdmissionReview");
    goto done;
  }
  tok = json_tokener_new_ex(JSON_DEPTH);
  if (!tok) {
    rc = GC_ENOMEM;
    goto done;
  }
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  root = json_tokener_parse_ex(tok, body, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  if (!root || jerr != json_tokener_success) {
    if (jerr == json_tokener_continue)
      rc = text_answer(&a, 400, "body is not JSON: unexpected end of input");
    else
      rc = text_answer(&a, 400, "body is not JSON: %s at byte %zu",
                       json_tokener_error_desc(jerr), json_tokener_get_parse_end(tok));
    goto done;
  }
  size_t end = json_tokener_get_parse_end(tok);
  while (end < len && (body[end] == ' ' || body[end] == '\n' || body[end] == '\r' ||
                       body[end] == '\t'))
    end++;
  if (end != len) {
    rc = text_answer(&a, 400, "body is not JSON: extra data at byte %zu", end);
    goto done;
  }
  if (!json_object_is_type(root, json_type_object)) {
    rc = text_answer(&a, 400, "body is not a JSON object");
    goto done;
  }
  const char *api = get_str(root, "apiVersion");
  const char *kind = get_str(root, "kind");
  if (!api || strcmp(api, ADMISSION_API) || !kind || strcmp(kind, "AdmissionReview")) {
    rc = text_answer(&a, 400,
                     "expected apiVersion %s kind AdmissionReview, got apiVersion %s kind %s",
                     ADMISSION_API, api ? api : "(none)", kind ? kind : "(none)");
    goto done;
  }
  json_object *req = get_obj(root, "request");
  if (!req) {
    rc = text_answer(&a, 400, "AdmissionReview has no request object");
    goto done;
  }
  const char *uid = get_str(req, "uid");
  if (!uid || !uid[0]) {
    rc = text_answer(&a, 400, "AdmissionReview request has no uid");
    goto done;
  }
  rc = decide(wh, req, &v, &backend, &result);
  if (rc == 0)
    rc = review_answer(&a, uid, &v);

done:
  json_object_put(v.patch);
  json_object_put(root);
  if (tok)
    json_tokener_free(tok);
  if (rc < 0) {
    free(a.body);
    return rc;
  }
  count(wh, backend, result);
  *status = a.status;
  *out = a.body;
  *out_len = a.len;
  *content_type_out = a.ctype;
  return 0;
}

static int webhook_handler(void *ctx, const struct gb_http_request *req,
                           struct gb_http_response *resp) {
  int status = 0;
  char *out = NULL;
  size_t len = 0;
  const char *ctype = NULL;
  int rc = gb_webhook_review(ctx, req->content_type, req->body, req->body_len, &status, &out,
                             &len, &ctype);
  if (rc < 0)
    return rc;
  gb_http_response_take(resp, status, ctype, out, len);
  return 0;
}

struct gb_http_route gb_webhook_route(struct gb_webhook *wh, const char *path) {
  struct gb_http_route r = {path ? path : "/mutate-pods", 0, GB_HTTP_POST, webhook_handler, wh,
                            wh ? wh->cfg.max_body : 0};
  return r;
}
