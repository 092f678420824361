/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_webhook with real admission.k8s.io/v1 AdmissionReview
 * documents (tests/bridge/data/admission/): each valid review is answered with
 * the request's uid, its base64 JSON Patch is decoded and applied to
 * request.object by a small RFC 6902 applier in this file, and the result is
 * compared with the expected pod in data/admission/expected/.  Malformed
 * reviews (not JSON, wrong apiVersion/kind, no request, no uid, truncated,
 * trailing data, deep nesting, huge, wrong content type) must get a clear
 * HTTP error or an allowed answer with a warning, never a crash.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_log.h"
#include "gb_base64.h"
#include "gb_metrics.h"
#include "gb_metrics_test.h"
#include "gb_kube_client.h"
#include "gb_webhook.h"
#include "gb_webhook_test.h"
#include "gc_arena.h"

#define DATA GB_SRC_DIR "/tests/bridge/data/admission/"

/* ---- the lookup the service would back with its caches ------------------ */

struct lookup_log {
  int calls;
  char last_ns[64], last_jobset[64], last_rjob[64];
};

static struct lookup_log lk;

static int test_lookup(void *ctx, const char *ns, const char *jobset, const char *rjob,
                       struct gb_webhook_decision *out, char *reason, size_t reason_size) {
  struct lookup_log *l = ctx;
  l->calls++;
  snprintf(l->last_ns, sizeof(l->last_ns), "%s", ns);
  snprintf(l->last_jobset, sizeof(l->last_jobset), "%s", jobset);
  snprintf(l->last_rjob, sizeof(l->last_rjob), "%s", rjob);
  if (strcmp(ns, "team-a"))
    return 0; /* unknown namespace: unmanaged */
  if (!strcmp(jobset, "mnist")) {
    out->managed = 1;
    out->bind = 1;
    out->backend = gc_backend_by_name("coscheduling");
    snprintf(out->group, sizeof(out->group), "mnist");
    snprintf(out->scheduler_name, sizeof(out->scheduler_name), "scheduler-plugins-scheduler");
  } else if (!strcmp(jobset, "llm")) {
    out->managed = 1;
    out->bind = strcmp(rjob, "initializer") != 0;
    out->backend = gc_backend_by_name("volcano");
    snprintf(out->group, sizeof(out->group), "llm-pg");
    snprintf(out->scheduler_name, sizeof(out->scheduler_name), "volcano");
  } else if (!strcmp(jobset, "kai-job")) {
    /* A backend with sub-groups: the pod's is its replicated job. */
    out->managed = 1;
    out->bind = 1;
    out->backend = gc_backend_by_name("kai");
    snprintf(out->group, sizeof(out->group), "kai-job");
    snprintf(out->subgroup, sizeof(out->subgroup), "%s", rjob);
    snprintf(out->scheduler_name, sizeof(out->scheduler_name), "kai-scheduler");
  } else if (!strncmp(jobset, "wl-", 3)) {
    /* The upstream Workload API at the version in the name: pods join by a pod spec field. */
    const struct gc_backend *w = gc_backend_by_name("workload");
    out->managed = 1;
    out->bind = strcmp(rjob, "initializer") != 0;
    out->backend = w;
    out->version = gc_backend_version_find(w, jobset + 3);
    snprintf(out->group, sizeof(out->group), "%s", jobset);
    snprintf(out->scheduler_name, sizeof(out->scheduler_name), "default-scheduler");
  } else if (!strcmp(jobset, "broken")) {
    snprintf(reason, reason_size, "TrainJob cache not synced");
    return GC_ENOTFOUND;
  } else if (!strcmp(jobset, "conflict")) {
    /* A PodGroup exists but is not the gang's: the controller's check says so. */
    out->managed = 1;
    out->bind = 1;
    out->backend = gc_backend_by_name("volcano");
    out->mismatch = 1;
    snprintf(out->group, sizeof(out->group), "conflict");
    snprintf(out->why, sizeof(out->why), "PodGroup team-a/conflict has minMember 3, the gang 2");
  } else if (!strcmp(jobset, "nogroup")) {
    out->managed = 1;
    out->bind = 1;
    out->backend = gc_backend_by_name("volcano"); /* but no group name: a lookup bug */
  }
  return 0;
}

static struct gb_webhook *make(int allow_on_error, struct gb_metric *m) {
  struct gb_webhook_config cfg = {test_lookup, &lk, allow_on_error, 0, m, 0};
  struct gb_webhook *wh = NULL;
  ck_assert_int_eq(gb_webhook_new(&cfg, &wh), 0);
  memset(&lk, 0, sizeof(lk));
  return wh;
}

static char *slurp(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof(path), DATA "%s", name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return b;
}

/* ---- a small RFC 6902 applier (add, remove, replace) -------------------- */

/* The patch decoded with the bridge's own decoder, which refuses anything
 * an API server would not take (gb_base64 has its own tests). */
static unsigned char *b64_decode(const char *s, size_t *out_len) {
  unsigned char *out = NULL;
  ck_assert_int_eq(gb_base64_decode(s, strlen(s), &out, out_len), 0);
  ck_assert_msg(strlen(s) % 4 == 0, "base64 length %zu is not a multiple of 4", strlen(s));
  return out;
}

/* Unescapes one JSON Pointer token in place ("~1" -> "/", "~0" -> "~"). */
static void unescape_token(char *t) {
  char *w = t;
  for (char *r = t; *r; r++) {
    if (*r == '~') {
      ck_assert_msg(r[1] == '0' || r[1] == '1', "bad escape in pointer token %s", t);
      *w++ = r[1] == '0' ? '~' : '/';
      r++;
    } else {
      *w++ = *r;
    }
  }
  *w = '\0';
}

/* Applies one operation to doc (an object tree). */
static void apply_op(json_object *doc, json_object *op) {
  json_object *jop, *jpath, *jval = NULL;
  ck_assert(json_object_object_get_ex(op, "op", &jop));
  ck_assert(json_object_object_get_ex(op, "path", &jpath));
  const char *kind = json_object_get_string(jop);
  char path[1024];
  snprintf(path, sizeof(path), "%s", json_object_get_string(jpath));
  ck_assert_msg(path[0] == '/', "path %s must start with /", path);
  /* Walk to the parent of the last token. */
  json_object *cur = doc;
  char *tok = path + 1;
  for (;;) {
    char *slash = strchr(tok, '/');
    if (!slash)
      break;
    *slash = '\0';
    unescape_token(tok);
    json_object *next = NULL;
    ck_assert_msg(json_object_object_get_ex(cur, tok, &next) && next,
                  "patch path goes through missing member %s", tok);
    cur = next;
    tok = slash + 1;
  }
  unescape_token(tok);
  ck_assert_msg(json_object_is_type(cur, json_type_object), "parent of %s is not an object", tok);
  if (!strcmp(kind, "remove")) {
    ck_assert(json_object_object_get_ex(cur, tok, NULL));
    json_object_object_del(cur, tok);
    return;
  }
  ck_assert(json_object_object_get_ex(op, "value", &jval));
  if (!strcmp(kind, "replace"))
    ck_assert_msg(json_object_object_get_ex(cur, tok, NULL), "replace of missing %s", tok);
  else
    ck_assert_str_eq(kind, "add");
  json_object *copy = NULL;
  ck_assert_int_eq(json_object_deep_copy(jval, &copy, NULL), 0);
  json_object_object_add(cur, tok, copy);
}

/* ---- running a review ---------------------------------------------------- */

struct result {
  int status;
  char *body;
  size_t len;
  const char *ctype;
  json_object *review; /* parsed body when JSON */
  json_object *resp;   /* review.response */
};

static void run(struct gb_webhook *wh, const char *ctype, const char *body, size_t len,
                struct result *r) {
  memset(r, 0, sizeof(*r));
  ck_assert_int_eq(gb_webhook_review(wh, ctype, body, len, &r->status, &r->body, &r->len,
                                     &r->ctype), 0);
  ck_assert_ptr_nonnull(r->body);
  ck_assert_uint_eq(strlen(r->body), r->len);
  if (r->status == 200) {
    ck_assert_str_eq(r->ctype, "application/json");
    r->review = json_tokener_parse(r->body);
    ck_assert_msg(r->review != NULL, "answer is not JSON: %s", r->body);
    json_object *v;
    ck_assert(json_object_object_get_ex(r->review, "apiVersion", &v));
    ck_assert_str_eq(json_object_get_string(v), "admission.k8s.io/v1");
    ck_assert(json_object_object_get_ex(r->review, "kind", &v));
    ck_assert_str_eq(json_object_get_string(v), "AdmissionReview");
    ck_assert(json_object_object_get_ex(r->review, "response", &r->resp));
  } else {
    ck_assert_str_eq(r->ctype, "text/plain; charset=utf-8");
  }
}

static void run_file(struct gb_webhook *wh, const char *name, struct result *r) {
  size_t len;
  char *body = slurp(name, &len);
  run(wh, "application/json", body, len, r);
  free(body);
}

static void result_free(struct result *r) {
  free(r->body);
  json_object_put(r->review);
}

static const char *resp_str(const struct result *r, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(r->resp, key, &v))
    return NULL;
  return json_object_get_string(v);
}

static int resp_allowed(const struct result *r) {
  json_object *v;
  ck_assert(json_object_object_get_ex(r->resp, "allowed", &v));
  ck_assert(json_object_is_type(v, json_type_boolean));
  return json_object_get_boolean(v);
}

static size_t resp_warnings(const struct result *r, const char *needle) {
  json_object *w;
  if (!json_object_object_get_ex(r->resp, "warnings", &w))
    return 0;
  size_t hits = 0, n = json_object_array_length(w);
  for (size_t i = 0; i < n; i++)
    if (!needle || strstr(json_object_get_string(json_object_array_get_idx(w, i)), needle))
      hits++;
  return needle ? hits : n;
}

/* Applies the answer's patch to the review's request.object and compares
 * with expected/<name>; returns the number of operations. */
static size_t check_patched(const char *name, const struct result *r) {
  size_t len;
  char *in = slurp(name, &len);
  json_object *review = json_tokener_parse(in);
  free(in);
  ck_assert_ptr_nonnull(review);
  json_object *req, *pod, *uid;
  ck_assert(json_object_object_get_ex(review, "request", &req));
  ck_assert(json_object_object_get_ex(req, "object", &pod));
  ck_assert(json_object_object_get_ex(req, "uid", &uid));
  ck_assert_str_eq(resp_str(r, "uid"), json_object_get_string(uid));

  size_t nops = 0;
  const char *patch = resp_str(r, "patch");
  if (patch) {
    ck_assert_str_eq(resp_str(r, "patchType"), "JSONPatch");
    size_t plen;
    unsigned char *raw = b64_decode(patch, &plen);
    json_object *ops = json_tokener_parse((char *)raw);
    ck_assert_msg(ops && json_object_is_type(ops, json_type_array), "patch is not an array: %s",
                  raw);
    nops = json_object_array_length(ops);
    ck_assert_uint_gt(nops, 0);
    for (size_t i = 0; i < nops; i++)
      apply_op(pod, json_object_array_get_idx(ops, i));
    json_object_put(ops);
    free(raw);
  } else {
    ck_assert_ptr_null(resp_str(r, "patchType"));
  }
  char ename[256];
  snprintf(ename, sizeof(ename), "expected/%s", name);
  char *exp_text = slurp(ename, &len);
  json_object *expected = json_tokener_parse(exp_text);
  free(exp_text);
  ck_assert_ptr_nonnull(expected);
  ck_assert_msg(json_object_equal(pod, expected), "patched pod differs from %s:\n%s", ename,
                json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PRETTY));
  json_object_put(expected);
  json_object_put(review);
  return nops;
}

/* Runs the review in `name` with the first `from` replaced by `to`. */
static void run_edited(struct gb_webhook *wh, const char *name, const char *from, const char *to,
                       struct result *r) {
  size_t len;
  char *body = slurp(name, &len);
  char *at = strstr(body, from);
  ck_assert_msg(at != NULL, "%s has no %s", name, from);
  size_t nf = strlen(from), nt = strlen(to);
  char *edited = malloc(len - nf + nt + 1);
  ck_assert_ptr_nonnull(edited);
  size_t pre = (size_t)(at - body);
  memcpy(edited, body, pre);
  memcpy(edited + pre, to, nt);
  memcpy(edited + pre + nt, at + nf, len - pre - nf + 1);
  run(wh, "application/json", edited, len - nf + nt, r);
  free(edited);
  free(body);
}

/* The decoded patch text (caller frees), or NULL when the answer has none. */
static char *patch_text(const struct result *r) {
  const char *p = resp_str(r, "patch");
  size_t plen;
  return p ? (char *)b64_decode(p, &plen) : NULL;
}

static int deny_code(const struct result *r, const char **msg) {
  json_object *st, *code, *m;
  ck_assert(json_object_object_get_ex(r->resp, "status", &st));
  ck_assert(json_object_object_get_ex(st, "code", &code));
  ck_assert(json_object_object_get_ex(st, "message", &m));
  *msg = json_object_get_string(m);
  return json_object_get_int(code);
}

/* ---- valid reviews ------------------------------------------------------- */

/* The review of cosched-create.json's pod with JobSet `jobset`, replicated job `rjob`
 * and, when given, `field` (a JSON object) set in its spec as `key`. */
static void run_pod(struct gb_webhook *wh, const char *jobset, const char *rjob, const char *key,
                    const char *field, struct result *r) {
  size_t len;
  char *body = slurp("cosched-create.json", &len);
  json_object *doc = json_tokener_parse(body);
  free(body);
  json_object *req, *obj, *meta, *labels, *spec;
  ck_assert(json_object_object_get_ex(doc, "request", &req));
  ck_assert(json_object_object_get_ex(req, "object", &obj));
  ck_assert(json_object_object_get_ex(obj, "metadata", &meta));
  ck_assert(json_object_object_get_ex(meta, "labels", &labels));
  ck_assert(json_object_object_get_ex(obj, "spec", &spec));
  json_object_object_add(labels, "jobset.sigs.k8s.io/jobset-name", json_object_new_string(jobset));
  json_object_object_add(labels, "jobset.sigs.k8s.io/replicatedjob-name",
                         json_object_new_string(rjob));
  if (key)
    json_object_object_add(spec, key, json_tokener_parse(field));
  const char *text = json_object_to_json_string(doc);
  run(wh, "application/json", text, strlen(text), r);
  json_object_put(doc);
}

/* The Workload API: a gang pod gets the pod spec field of the decision's version (v1alpha2
 * and v1beta1 spec.schedulingGroup naming the PodGroup <name>-gang, v1alpha1
 * spec.workloadRef naming the Workload and its gang template) and no label or annotation;
 * a pod outside the gang gets nothing; a pod that already names a scheduling group is left
 * exactly as it is, with a warning. */
START_TEST(test_workload_spec_field) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  static const char *const cases[][2] = {
      {"wl-v1alpha2", "{\"op\":\"add\",\"path\":\"/spec/schedulingGroup\",\"value\":"
                      "{\"podGroupName\":\"wl-v1alpha2-gang\"}}"},
      {"wl-v1beta1", "{\"op\":\"add\",\"path\":\"/spec/schedulingGroup\",\"value\":"
                     "{\"podGroupName\":\"wl-v1beta1-gang\"}}"},
      {"wl-v1alpha1", "{\"op\":\"add\",\"path\":\"/spec/workloadRef\",\"value\":"
                      "{\"name\":\"wl-v1alpha1\",\"podGroup\":\"gang\"}}"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    run_pod(wh, cases[i][0], "node", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert(resp_allowed(&r));
    char *p = patch_text(&r);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(strstr(p, cases[i][1]) != NULL, "%s: %s", cases[i][0], p);
    ck_assert_msg(!strstr(p, "/metadata/"), "%s: %s", cases[i][0], p);
    ck_assert_uint_eq(resp_warnings(&r, NULL), 0);
    free(p);
    result_free(&r);
  }
  /* Outside the gang: no spec field. */
  run_pod(wh, "wl-v1beta1", "initializer", NULL, NULL, &r);
  ck_assert(resp_allowed(&r));
  char *p = patch_text(&r);
  ck_assert_msg(!p || (!strstr(p, "schedulingGroup") && !strstr(p, "workloadRef")), "%s", p);
  free(p);
  result_free(&r);
  /* Already names a group (either field, at any version): no patch at all, one warning. */
  static const char *const own[][2] = {{"schedulingGroup", "{\"podGroupName\":\"mine\"}"},
                                       {"workloadRef", "{\"name\":\"w\",\"podGroup\":\"g\"}"}};
  for (size_t i = 0; i < 2; i++) {
    run_pod(wh, i ? "wl-v1alpha1" : "wl-v1alpha2", "node", own[i][0], own[i][1], &r);
    ck_assert(resp_allowed(&r));
    ck_assert_ptr_null(resp_str(&r, "patch"));
    ck_assert_uint_eq(resp_warnings(&r, "already names a scheduling group"), 1);
    result_free(&r);
  }
  gb_webhook_free(wh);
}
END_TEST


START_TEST(test_cosched_create) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "cosched-create.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_uint_eq(check_patched("cosched-create.json", &r), 2); /* label + schedulerName */
  ck_assert_uint_eq(resp_warnings(&r, NULL), 0);
  ck_assert_int_eq(lk.calls, 1);
  ck_assert_str_eq(lk.last_ns, "team-a");
  ck_assert_str_eq(lk.last_jobset, "mnist");
  ck_assert_str_eq(lk.last_rjob, "node");
  /* The label key's "/" is escaped as "~1" in the pointer. */
  size_t plen;
  unsigned char *raw = b64_decode(resp_str(&r, "patch"), &plen);
  ck_assert_ptr_nonnull(strstr((char *)raw, "/metadata/labels/scheduling.x-k8s.io~1pod-group"));
  free(raw);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

/* A KAI pod gets the group annotation and the sub-group label (the
 * backend's GC_JOIN_SUBGROUP key, filled from the decision), nothing else
 * of another backend. */
START_TEST(test_subgroup_label) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_edited(wh, "cosched-create.json", "\"jobset.sigs.k8s.io/jobset-name\": \"mnist\"",
             "\"jobset.sigs.k8s.io/jobset-name\": \"kai-job\"", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_str_eq(lk.last_jobset, "kai-job");
  char *p = patch_text(&r);
  ck_assert_ptr_nonnull(p);
  ck_assert_msg(strstr(p, "{\"op\":\"add\",\"path\":\"/metadata/annotations/pod-group-name\","
                          "\"value\":\"kai-job\"}") != NULL, "%s", p);
  ck_assert_msg(strstr(p, "{\"op\":\"add\",\"path\":\"/metadata/labels/"
                          "kai.scheduler~1subgroup-name\",\"value\":\"node\"}") != NULL, "%s", p);
  ck_assert_ptr_nonnull(strstr(p, "\"value\":\"kai-scheduler\""));
  ck_assert_ptr_null(strstr(p, "scheduling.x-k8s.io"));
  free(p);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_volcano_creates_annotations) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "volcano-no-annotations.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_uint_eq(check_patched("volcano-no-annotations.json", &r), 2);
  size_t plen;
  unsigned char *raw = b64_decode(resp_str(&r, "patch"), &plen);
  /* The whole map is added because the pod had none. */
  ck_assert_ptr_nonnull(strstr((char *)raw, "\"path\":\"/metadata/annotations\""));
  free(raw);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_volcano_existing_annotations) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "volcano-annotations.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(check_patched("volcano-annotations.json", &r), 2);
  size_t plen;
  unsigned char *raw = b64_decode(resp_str(&r, "patch"), &plen);
  ck_assert_ptr_nonnull(strstr((char *)raw, "/metadata/annotations/scheduling.k8s.io~1group-name"));
  free(raw);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_tilde_slash_keys_and_stale_label) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "labels-tilde-slash.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_uint_eq(check_patched("labels-tilde-slash.json", &r), 2);
  ck_assert_uint_eq(resp_warnings(&r, "stale"), 1);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_already_bound_no_patch) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "already-bound.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_ptr_null(resp_str(&r, "patch"));
  ck_assert_uint_eq(check_patched("already-bound.json", &r), 0);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_custom_scheduler_kept) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "custom-scheduler.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(check_patched("custom-scheduler.json", &r), 1);
  ck_assert_uint_eq(resp_warnings(&r, "my-scheduler"), 1);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_namespace_from_pod) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "namespace-from-pod.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert_uint_eq(check_patched("namespace-from-pod.json", &r), 2);
  ck_assert_str_eq(lk.last_ns, "team-a");
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

/* Reviews that must be allowed untouched: no patch, no patchType. */
static const struct {
  const char *file;
  int lookups;  /* expected lookup calls */
  int warnings; /* expects at least one warning */
} untouched[] = {
    {"unmanaged.json", 1, 0},       {"unbound-rjob.json", 1, 0}, {"no-labels.json", 0, 0},
    {"update-op.json", 0, 0},       {"not-pod.json", 0, 1},      {"object-not-object.json", 0, 1},
};

START_TEST(test_untouched) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, untouched[_i].file, &r);
  ck_assert_msg(r.status == 200, "%s: status %d", untouched[_i].file, r.status);
  ck_assert(resp_allowed(&r));
  ck_assert_ptr_null(resp_str(&r, "patch"));
  ck_assert_ptr_null(resp_str(&r, "patchType"));
  ck_assert_str_eq(resp_str(&r, "uid"), "8f6c1bd4-5a1e-4f0e-b1b2-3c4d5e6f7a80");
  ck_assert_int_eq(lk.calls, untouched[_i].lookups);
  if (untouched[_i].warnings)
    ck_assert_uint_gt(resp_warnings(&r, NULL), 0);
  else
    ck_assert_uint_eq(resp_warnings(&r, NULL), 0);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_lookup_error_denies) {
  struct gb_metrics *reg = gb_metrics_new();
  struct gb_service_metrics sm;
  ck_assert_int_eq(gb_service_metrics_register(reg, "test", &sm, NULL), 0);
  struct gb_webhook *wh = make(0, sm.webhook);
  struct result r;
  run_file(wh, "lookup-error.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(!resp_allowed(&r));
  json_object *st, *code, *msg;
  ck_assert(json_object_object_get_ex(r.resp, "status", &st));
  ck_assert(json_object_object_get_ex(st, "code", &code));
  ck_assert_int_eq(json_object_get_int(code), 500);
  ck_assert(json_object_object_get_ex(st, "message", &msg));
  ck_assert_ptr_nonnull(strstr(json_object_get_string(msg), "TrainJob cache not synced"));
  ck_assert_ptr_null(resp_str(&r, "patch"));
  double v = 0;
  ck_assert_int_eq(gb_metric_value(sm.webhook, (const char *[]){"none", "denied"}, &v), 0);
  ck_assert(v == 1);
  result_free(&r);
  gb_webhook_free(wh);

  /* allow_on_error: admitted without a patch, with a warning. */
  wh = make(1, sm.webhook);
  run_file(wh, "lookup-error.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_ptr_null(resp_str(&r, "patch"));
  ck_assert_uint_eq(resp_warnings(&r, "TrainJob cache not synced"), 1);
  result_free(&r);
  gb_webhook_free(wh);
  gb_metrics_free(reg);
}
END_TEST

START_TEST(test_lookup_without_group_is_an_error) {
  struct gb_webhook *wh = make(0, NULL);
  size_t len;
  char *body = slurp("cosched-create.json", &len);
  /* Point the same review at the "nogroup" JobSet. */
  json_object *doc = json_tokener_parse(body);
  free(body);
  json_object *req, *obj, *meta, *labels;
  json_object_object_get_ex(doc, "request", &req);
  json_object_object_get_ex(req, "object", &obj);
  json_object_object_get_ex(obj, "metadata", &meta);
  json_object_object_get_ex(meta, "labels", &labels);
  json_object_object_add(labels, GB_JOBSET_NAME_LABEL, json_object_new_string("nogroup"));
  const char *text = json_object_to_json_string(doc);
  struct result r;
  run(wh, "application/json", text, strlen(text), &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(!resp_allowed(&r));
  ck_assert_ptr_null(resp_str(&r, "patch"));
  result_free(&r);
  json_object_put(doc);
  gb_webhook_free(wh);
}
END_TEST

/* annotations: null and labels with extra keys: the whole map is added. */
START_TEST(test_null_annotations) {
  struct gb_webhook *wh = make(0, NULL);
  size_t len;
  char *body = slurp("volcano-annotations.json", &len);
  json_object *doc = json_tokener_parse(body);
  free(body);
  json_object *req, *obj, *meta;
  ck_assert(json_object_object_get_ex(doc, "request", &req));
  ck_assert(json_object_object_get_ex(req, "object", &obj));
  ck_assert(json_object_object_get_ex(obj, "metadata", &meta));
  json_object_object_add(meta, "annotations", NULL); /* JSON null */
  const char *text = json_object_to_json_string(doc);
  struct result r;
  run(wh, "application/json", text, strlen(text), &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  size_t plen;
  unsigned char *raw = b64_decode(resp_str(&r, "patch"), &plen);
  json_object *ops = json_tokener_parse((char *)raw);
  ck_assert_ptr_nonnull(ops);
  for (size_t i = 0; i < json_object_array_length(ops); i++)
    apply_op(obj, json_object_array_get_idx(ops, i));
  json_object *ann, *g, *spec, *sched;
  ck_assert(json_object_object_get_ex(meta, "annotations", &ann));
  ck_assert_uint_eq(json_object_object_length(ann), 1);
  ck_assert(json_object_object_get_ex(ann, "scheduling.k8s.io/group-name", &g));
  ck_assert_str_eq(json_object_get_string(g), "llm-pg");
  ck_assert(json_object_object_get_ex(obj, "spec", &spec));
  ck_assert(json_object_object_get_ex(spec, "schedulerName", &sched));
  ck_assert_str_eq(json_object_get_string(sched), "volcano");
  json_object_put(ops);
  free(raw);
  result_free(&r);
  json_object_put(doc);
  gb_webhook_free(wh);
}
END_TEST

/* A pod of a replicated job outside the gang that carries Trainer's group
 * annotation and label (take-over mode) loses both. */
START_TEST(test_unbound_pod_loses_group_keys) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, "unbound-with-group.json", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_int_eq(lk.calls, 1);
  ck_assert_uint_eq(check_patched("unbound-with-group.json", &r), 2);
  char *p = patch_text(&r);
  ck_assert_ptr_nonnull(strstr(p, "{\"op\":\"remove\",\"path\":\"/metadata/annotations/"
                                  "scheduling.k8s.io~1group-name\"}"));
  ck_assert_ptr_nonnull(strstr(p, "{\"op\":\"remove\",\"path\":\"/metadata/labels/"
                                  "scheduling.x-k8s.io~1pod-group\"}"));
  free(p);
  ck_assert_uint_eq(resp_warnings(&r, "not part of its TrainJob's gang"), 2);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

/* A PodGroup that is not the gang's (a foreign one, or one after a
 * PodGroupConflict): the pod is not bound to it and loses a group label it
 * carries, or is denied when the policy says so. */
START_TEST(test_mismatched_podgroup_not_bound) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_edited(wh, "volcano-annotations.json", "\"jobset.sigs.k8s.io/jobset-name\": \"llm\"",
             "\"jobset.sigs.k8s.io/jobset-name\": \"conflict\"", &r);
  ck_assert_int_eq(r.status, 200);
  ck_assert(resp_allowed(&r));
  ck_assert_int_eq(lk.calls, 1);
  ck_assert_ptr_null(resp_str(&r, "patch"));
  ck_assert_uint_eq(resp_warnings(&r, "not bound to PodGroup conflict: PodGroup team-a/conflict "
                                      "has minMember 3"), 1);
  result_free(&r);
  /* With Trainer's annotation on the pod it is removed, not kept. */
  run_edited(wh, "unbound-with-group.json", "\"jobset.sigs.k8s.io/jobset-name\": \"llm\"",
             "\"jobset.sigs.k8s.io/jobset-name\": \"conflict\"", &r);
  char *p = patch_text(&r);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_nonnull(strstr(p, "\"remove\",\"path\":\"/metadata/annotations/scheduling.k8s.io~1"));
  ck_assert_ptr_null(strstr(p, "\"add\""));
  free(p);
  result_free(&r);
  gb_webhook_free(wh);

  struct gb_webhook_config cfg = {test_lookup, &lk, 0, 0, NULL, 1};
  ck_assert_int_eq(gb_webhook_new(&cfg, &wh), 0);
  run_edited(wh, "volcano-annotations.json", "\"jobset.sigs.k8s.io/jobset-name\": \"llm\"",
             "\"jobset.sigs.k8s.io/jobset-name\": \"conflict\"", &r);
  ck_assert(!resp_allowed(&r));
  const char *msg;
  ck_assert_int_eq(deny_code(&r, &msg), 409);
  ck_assert_ptr_nonnull(strstr(msg, "minMember 3"));
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

static struct gc_value *tree(struct gc_arena *a, const char *json) {
  json_object *j = json_tokener_parse(json);
  ck_assert_ptr_nonnull(j);
  struct gc_value *v = NULL;
  ck_assert_int_eq(gb_kube_client_json_to_value(a, j, 64, &v), 0);
  json_object_put(j);
  return v;
}

/* The binding rule: owned by gangbridge, controlled by the TrainJob, spec of the gang. */
START_TEST(test_podgroup_bindable) {
  struct gc_arena *a = gc_arena_new(1u << 20);
  const char *own = "\"labels\":{\"app.kubernetes.io/managed-by\":\"gangbridge\"},"
                    "\"ownerReferences\":[{\"kind\":\"TrainJob\",\"uid\":\"u1\","
                    "\"controller\":true}]";
  char buf[1024], why[256];
  snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\",%s},"
           "\"spec\":{\"minMember\":2,\"queue\":\"q\"}}", own);
  struct gc_value *pg = tree(a, buf);
  struct gc_value *want2 = tree(a, "{\"spec\":{\"minMember\":2}}");
  struct gc_value *want3 = tree(a, "{\"spec\":{\"minMember\":3}}");
  ck_assert_int_eq(gb_webhook_podgroup_bindable(NULL, "u1", want2, why, sizeof(why)), 1);
  ck_assert_int_eq(gb_webhook_podgroup_bindable(pg, "u1", want2, why, sizeof(why)), 1);
  ck_assert_int_eq(gb_webhook_podgroup_bindable(pg, "u1", NULL, why, sizeof(why)), 1);
  ck_assert_int_eq(gb_webhook_podgroup_bindable(pg, "u1", want3, why, sizeof(why)), 0);
  ck_assert_str_eq(why, "PodGroup ns/job waits for minMember 2, the gang has 3");
  ck_assert_int_eq(gb_webhook_podgroup_bindable(pg, "u2", want2, why, sizeof(why)), 0);
  ck_assert_ptr_nonnull(strstr(why, "not controlled by the TrainJob (uid u2)"));
  struct gc_value *foreign = tree(a, "{\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\"},"
                                     "\"spec\":{\"minMember\":2}}");
  ck_assert_int_eq(gb_webhook_podgroup_bindable(foreign, "u1", want2, why, sizeof(why)), 0);
  ck_assert_ptr_nonnull(strstr(why, "not managed by gangbridge"));
  /* A non-controller owner reference does not count. */
  struct gc_value *weak = tree(a, "{\"metadata\":{\"name\":\"job\",\"namespace\":\"ns\","
                                  "\"labels\":{\"app.kubernetes.io/managed-by\":\"gangbridge\"},"
                                  "\"ownerReferences\":[{\"uid\":\"u1\"}]}}");
  ck_assert_int_eq(gb_webhook_podgroup_bindable(weak, "u1", NULL, why, sizeof(why)), 0);
  gc_arena_free(a);
}
END_TEST

/* NUL bytes in the strings the webhook reads: refused naming the field,
 * never cut (a cut uid would answer another review, a cut name would bind
 * the pod to another TrainJob's group). */
START_TEST(test_nul_bytes_refused) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_edited(wh, "cosched-create.json", "8f6c1bd4-", "8f6c1bd4\\u0000-", &r);
  ck_assert_int_eq(r.status, 400);
  ck_assert_ptr_nonnull(strstr(r.body, "request.uid contains a NUL byte"));
  result_free(&r);
  run_edited(wh, "cosched-create.json", "admission.k8s.io/v1", "admission.k8s.io/v1\\u0000x",
             &r);
  ck_assert_int_eq(r.status, 400);
  ck_assert_ptr_nonnull(strstr(r.body, "NUL"));
  result_free(&r);
  static const struct {
    const char *from, *to, *field;
  } cases[] = {
      {"\"namespace\": \"team-a\"", "\"namespace\": \"team-a\\u0000x\"", "request.namespace"},
      {"\"jobset.sigs.k8s.io/jobset-name\": \"mnist\"",
       "\"jobset.sigs.k8s.io/jobset-name\": \"mnist\\u0000x\"",
       "request.object.metadata.labels[\"jobset.sigs.k8s.io/jobset-name\"]"},
      {"\"jobset.sigs.k8s.io/replicatedjob-name\": \"node\"",
       "\"jobset.sigs.k8s.io/replicatedjob-name\": \"node\\u0000\"",
       "request.object.metadata.labels[\"jobset.sigs.k8s.io/replicatedjob-name\"]"},
      {"\"operation\": \"CREATE\"", "\"operation\": \"CREATE\\u0000\"", "request.operation"},
      {"\"schedulerName\": \"default-scheduler\"",
       "\"schedulerName\": \"default-scheduler\\u0000\"", "request.object.spec.schedulerName"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    memset(&lk, 0, sizeof(lk));
    run_edited(wh, "cosched-create.json", cases[i].from, cases[i].to, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(!resp_allowed(&r), "%s: allowed", cases[i].field);
    const char *msg;
    ck_assert_int_eq(deny_code(&r, &msg), 400);
    ck_assert_msg(strstr(msg, cases[i].field) && strstr(msg, "NUL"), "%s: %s", cases[i].field,
                  msg);
    ck_assert_ptr_null(resp_str(&r, "patch"));
    ck_assert_int_eq(lk.calls, 0);
    result_free(&r);
  }
  /* Bytes that are not UTF-8. */
  run_edited(wh, "cosched-create.json", "mnist-node-0-0-", "mnist-\xff\xfe-", &r);
  ck_assert_int_eq(r.status, 400);
  ck_assert_ptr_nonnull(strstr(r.body, "not JSON"));
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

/* ---- malformed input ----------------------------------------------------- */

static const struct {
  const char *file;
  const char *needle; /* expected in the 400 message */
} bad[] = {
    {"bad-not-json.json", "not JSON"},
    {"bad-truncated.json", "not JSON"},
    {"bad-trailing-garbage.json", "not JSON"},
    {"bad-array.json", "not a JSON object"},
    {"bad-empty.json", "empty body"},
    {"bad-wrong-apiversion.json", "admission.k8s.io/v1beta1"},
    {"bad-wrong-kind.json", "kind Pod"},
    {"bad-missing-request.json", "no request"},
    {"bad-request-not-object.json", "no request"},
    {"bad-missing-uid.json", "no uid"},
    {"bad-uid-not-string.json", "no uid"},
};

START_TEST(test_malformed_400) {
  struct gb_webhook *wh = make(0, NULL);
  struct result r;
  run_file(wh, bad[_i].file, &r);
  ck_assert_msg(r.status == 400, "%s: status %d", bad[_i].file, r.status);
  ck_assert_msg(strstr(r.body, bad[_i].needle) != NULL, "%s: message '%s' lacks '%s'",
                bad[_i].file, r.body, bad[_i].needle);
  ck_assert_int_eq(lk.calls, 0);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_wrong_content_type) {
  struct gb_webhook *wh = make(0, NULL);
  size_t len;
  char *body = slurp("cosched-create.json", &len);
  const char *types[] = {"text/plain", "application/yaml", "application/jsonx", NULL,
                         "application/x-www-form-urlencoded"};
  for (size_t i = 0; i < sizeof(types) / sizeof(*types); i++) {
    struct result r;
    run(wh, types[i], body, len, &r);
    ck_assert_int_eq(r.status, 415);
    ck_assert_ptr_nonnull(strstr(r.body, "application/json"));
    result_free(&r);
  }
  /* Parameters and case are fine. */
  struct result r;
  run(wh, "Application/JSON; charset=utf-8", body, len, &r);
  ck_assert_int_eq(r.status, 200);
  result_free(&r);
  free(body);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_huge_and_deep) {
  struct gb_webhook *wh = make(0, NULL);
  /* Over the cap: refused before parsing. */
  size_t big = GB_WEBHOOK_DEFAULT_MAX_BODY + 1;
  char *huge = malloc(big + 1);
  memset(huge, ' ', big);
  huge[0] = '{';
  huge[big - 1] = '}';
  huge[big] = '\0';
  struct result r;
  run(wh, "application/json", huge, big, &r);
  ck_assert_int_eq(r.status, 413);
  result_free(&r);
  free(huge);
  /* 100,000 nested arrays: the parser's depth limit answers 400. */
  size_t depth = 100000;
  char *deep = malloc(2 * depth + 1);
  memset(deep, '[', depth);
  memset(deep + depth, ']', depth);
  deep[2 * depth] = '\0';
  run(wh, "application/json", deep, 2 * depth, &r);
  ck_assert_int_eq(r.status, 400);
  ck_assert_ptr_nonnull(strstr(r.body, "not JSON"));
  result_free(&r);
  free(deep);
  /* A second document after the first. */
  const char two[] = "{\"apiVersion\":\"admission.k8s.io/v1\"} {}";
  run(wh, "application/json", two, sizeof(two) - 1, &r);
  ck_assert_int_eq(r.status, 400);
  ck_assert_ptr_nonnull(strstr(r.body, "not JSON"));
  result_free(&r);
  /* Embedded NUL bytes inside the body. */
  const char nul[] = "{\"apiVersion\":\"admission.k8s.io/v1\"\0,\"kind\":\"AdmissionReview\"}";
  run(wh, "application/json", nul, sizeof(nul) - 1, &r);
  ck_assert_int_eq(r.status, 400);
  result_free(&r);
  gb_webhook_free(wh);
}
END_TEST

/* Every prefix of a valid review is answered, none crashes. */
START_TEST(test_every_truncation) {
  struct gb_webhook *wh = make(0, NULL);
  size_t len;
  char *body = slurp("labels-tilde-slash.json", &len);
  for (size_t cut = 0; cut < len; cut += 7) {
    struct result r;
    run(wh, "application/json", body, cut, &r);
    ck_assert_msg(r.status == 400, "prefix of %zu bytes: status %d", cut, r.status);
    result_free(&r);
  }
  free(body);
  gb_webhook_free(wh);
}
END_TEST

START_TEST(test_pointer_and_base64) {
  char buf[64];
  ck_assert_int_eq(gb_webhook_json_pointer_escape("a/b~c", buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "a~1b~0c");
  ck_assert_int_eq(gb_webhook_json_pointer_escape("~1", buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "~01");
  ck_assert_int_eq(gb_webhook_json_pointer_escape("abcdef", buf, 6), GC_ELIMIT);
  ck_assert_int_eq(gb_webhook_json_pointer_escape("abcde", buf, 6), 0);
  const char *cases[][2] = {{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
                            {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *e = NULL;
    ck_assert_int_eq(gb_base64_encode(cases[i][0], strlen(cases[i][0]), &e, NULL), 0);
    ck_assert_str_eq(e, cases[i][1]);
    free(e);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("webhook");
  TCase *tc = tcase_create("valid");
  tcase_add_test(tc, test_cosched_create);
  tcase_add_test(tc, test_volcano_creates_annotations);
  tcase_add_test(tc, test_volcano_existing_annotations);
  tcase_add_test(tc, test_tilde_slash_keys_and_stale_label);
  tcase_add_test(tc, test_already_bound_no_patch);
  tcase_add_test(tc, test_custom_scheduler_kept);
  tcase_add_test(tc, test_namespace_from_pod);
  tcase_add_loop_test(tc, test_untouched, 0, sizeof(untouched) / sizeof(untouched[0]));
  tcase_add_test(tc, test_lookup_error_denies);
  tcase_add_test(tc, test_subgroup_label);
  tcase_add_test(tc, test_workload_spec_field);
  tcase_add_test(tc, test_lookup_without_group_is_an_error);
  tcase_add_test(tc, test_null_annotations);
  tcase_add_test(tc, test_unbound_pod_loses_group_keys);
  tcase_add_test(tc, test_mismatched_podgroup_not_bound);
  tcase_add_test(tc, test_nul_bytes_refused);
  tcase_add_test(tc, test_podgroup_bindable);
  suite_add_tcase(s, tc);
  TCase *tm = tcase_create("malformed");
  tcase_add_loop_test(tm, test_malformed_400, 0, sizeof(bad) / sizeof(bad[0]));
  tcase_add_test(tm, test_wrong_content_type);
  tcase_add_test(tm, test_huge_and_deep);
  tcase_add_test(tm, test_every_truncation);
  tcase_add_test(tm, test_pointer_and_base64);
  suite_add_tcase(s, tm);
  return s;
}

int main(void) {
  gb_log_set_level(GB_LOG_ERROR); /* rejected reviews log warnings by design */
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
