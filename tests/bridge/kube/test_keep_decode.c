/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_keep_decode against the old way, json-c's whole parse (strict, as the
 * watch parses) then gb_keep_prune: over thousands of generated
 * real-looking Pods and Nodes (managedFields, env, volumes, conditions in
 * any order, escapes, raw and escaped unicode, escaped keys, keys holding a
 * NUL, duplicate members at every level, members of the wrong type,
 * numbers of every shape) and several keep sets (the model's, the Node
 * keeps, "[key=value]" steps whose key no sub-path keeps, "[]" where an
 * object is), both must give the same text, byte for byte.  Malformed
 * input (truncations and byte flips of those documents, and a list of
 * classics) is refused by the decoder whenever json-c refuses it, with a
 * "body:LINE:COL:" message; json-c's two leniencies (a raw control byte in
 * a string, "1." as a number) are refused; nesting is bounded as json-c's
 * depth bounds it.
 */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_keep.h"

#define DEPTH 64 /* the watch's json-c depth */
#define DOC_MAX (256u << 10)

/* ---- the two ways ------------------------------------------------------------ */

static json_tokener *new_tok(void) {
  json_tokener *t = json_tokener_new_ex(DEPTH);
  ck_assert_ptr_nonnull(t);
  json_tokener_set_flags(t, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  return t;
}

/* The old way: NULL when json-c refuses the text (or leaves more than
 * white space after the value). */
static json_object *old_way(const char *text, size_t len, const struct gb_keep *const *ks,
                            size_t n, int *ok) {
  json_tokener *t = new_tok();
  json_object *o = json_tokener_parse_ex(t, text, (int)len);
  *ok = json_tokener_get_error(t) == json_tokener_success;
  if (*ok) {
    for (size_t i = json_tokener_get_parse_end(t); i < len; i++)
      if (!strchr(" \t\r\n", text[i]))
        *ok = 0;
  } else if (json_tokener_get_error(t) == json_tokener_continue) {
    /* A lone number needs its terminator: json-c gets the NUL. */
    char *z = strndup(text, len);
    json_tokener_reset(t);
    o = json_tokener_parse_ex(t, z, (int)len + 1);
    *ok = json_tokener_get_error(t) == json_tokener_success;
    free(z);
  }
  json_tokener_free(t);
  if (*ok && o)
    gb_keep_prune(o, ks, n);
  return *ok ? o : (json_object_put(o), NULL);
}

static json_object *new_way(const char *text, size_t len, const struct gb_keep *const *ks,
                            size_t n, int *ok, char *msg, size_t cap) {
  json_tokener *t = new_tok();
  struct gb_sj s;
  gb_sj_init(&s, text, len);
  s.max_depth = DEPTH - 1;
  json_object *o = NULL;
  int rc = gb_keep_decode(&s, ks, n, t, &o);
  if (!rc)
    rc = gb_sj_finish(&s);
  json_tokener_free(t);
  *ok = rc == 0;
  snprintf(msg, cap, "%s", s.msg);
  if (!*ok) {
    json_object_put(o);
    o = NULL;
  }
  return o;
}

static const char *text_of(json_object *o, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "null");
  return buf;
}

/* Compares both ways on text; returns 1 when both accepted it. */
static int same(const char *text, size_t len, const struct gb_keep *const *ks, size_t n,
                int must_accept) {
  static char a[DOC_MAX], b[DOC_MAX];
  char msg[GB_SJ_MSG_MAX];
  int ok_old, ok_new;
  json_object *o = old_way(text, len, ks, n, &ok_old);
  json_object *d = new_way(text, len, ks, n, &ok_new, msg, sizeof(msg));
  if (must_accept)
    ck_assert_msg(ok_old && ok_new, "refused (old %d, new %d: %s): %.300s", ok_old, ok_new, msg,
                  text);
  if (!ok_old)
    ck_assert_msg(!ok_new, "json-c refuses what the decoder accepts: %.*s", (int)len, text);
  if (!ok_new)
    ck_assert_msg(!strncmp(msg, "body:", 5), "no place in the message \"%s\"", msg);
  if (ok_old && ok_new) {
    ck_assert_msg(json_object_get_type(o) == json_object_get_type(d), "type differs: %.300s",
                  text);
    ck_assert_msg(!strcmp(text_of(o, a, sizeof(a)), text_of(d, b, sizeof(b))),
                  "differ:\n old %.2000s\n new %.2000s\n doc %.2000s", a, b, text);
  }
  json_object_put(o);
  json_object_put(d);
  return ok_old && ok_new;
}

/* ---- keep sets ------------------------------------------------------------------ */

#define JS "jobset.sigs.k8s.io/jobset-name"
#define RJ "jobset.sigs.k8s.io/replicatedjob-name"

/* The model's Pod keeps (bridge/model's POD_KEEP) and the informer's own. */
static const struct gb_keep POD[] = {
    {{"metadata", "name"}},
    {{"metadata", "namespace"}},
    {{"metadata", "uid"}},
    {{"metadata", "resourceVersion"}},
    {{"metadata", "creationTimestamp"}},
    {{"metadata", "labels", JS}},
    {{"metadata", "labels", RJ}},
    {{"spec", "nodeName"}},
    {{"spec", "priority"}},
    {{"spec", "schedulingGates"}},
    {{"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"}},
    {{"spec", "tolerations"}},
    {{"spec", "containers", "[]", "name"}},
    {{"spec", "containers", "[]", "resources"}},
    {{"spec", "containers", "[]", "restartPolicy"}},
    {{"spec", "initContainers", "[]", "name"}},
    {{"spec", "initContainers", "[]", "resources"}},
    {{"spec", "initContainers", "[]", "restartPolicy"}},
    {{"spec", "overhead"}},
    {{"spec", "resources"}},
    {{"status", "phase"}},
    {{"status", "conditions", "[type=PodScheduled]", "type"}},
    {{"status", "conditions", "[type=PodScheduled]", "status"}},
    {{"status", "conditions", "[type=PodScheduled]", "lastTransitionTime"}},
    {{"status", "conditions", "[type=PodScheduled]", "message"}},
};

static const struct gb_keep NODE[] = {
    {{"metadata", "name"}},           {{"metadata", "uid"}},
    {{"metadata", "resourceVersion"}}, {{"metadata", "labels"}},
    {{"spec", "unschedulable"}},      {{"spec", "taints"}},
    {{"status", "allocatable"}},      {{"status", "conditions", "[type=Ready]"}},
};

/* Selections whose key no sub-path keeps, two keys on one array, "[]"
 * where an object is, a member step where an array is, whole subtrees. */
static const struct gb_keep ODD[] = {
    {{"status", "conditions", "[type=Ready]", "status"}},
    {{"status", "conditions", "[reason=r\xc3\xa9]"}},
    {{"spec", "containers", "[name=trainer]", "resources", "requests"}},
    {{"spec", "containers", "[name=trainer]", "env", "[]", "value"}},
    {{"spec", "tolerations", "[]", "key"}},
    {{"metadata", "[]"}},
    {{"spec", "volumes", "name"}},
    {{"metadata", "annotations"}},
    {{"metadata", "labels", "a\"b"}},
    {{"status", "n"}},
};

static const struct gb_keep TOP[] = {{{"[]"}}, {{"[k=v]", "x"}}};

struct keepset {
  const struct gb_keep *k;
  size_t n;
};

static const struct keepset SETS[] = {{POD, sizeof(POD) / sizeof(POD[0])},
                                      {NODE, sizeof(NODE) / sizeof(NODE[0])},
                                      {ODD, sizeof(ODD) / sizeof(ODD[0])},
                                      {TOP, sizeof(TOP) / sizeof(TOP[0])}};
#define N_SETS (sizeof(SETS) / sizeof(SETS[0]))

static size_t ptrs_of(const struct keepset *ks, const struct gb_keep **out) {
  for (size_t i = 0; i < ks->n; i++)
    out[i] = &ks->k[i];
  return ks->n;
}

/* ---- a generator of real-looking Pods and Nodes ------------------------------- */

struct gen {
  uint64_t rng;
  char *buf;
  size_t len;
};

static uint32_t rnd(struct gen *g, uint32_t n) {
  g->rng ^= g->rng << 13;
  g->rng ^= g->rng >> 7;
  g->rng ^= g->rng << 17;
  return (uint32_t)(g->rng >> 11) % n;
}

static void put(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct gen *g, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(g->buf + g->len, DOC_MAX - g->len, fmt, ap);
  va_end(ap);
  ck_assert(n >= 0 && g->len + (size_t)n < DOC_MAX);
  g->len += (size_t)n;
}

/* A string's body: plain text, escapes, raw and escaped unicode. */
static void str_body(struct gen *g, const char *base) {
  static const char *const bits[] = {
      "\\n",         "\\\"",  "\\u00e9", "\xc3\xa9", "\\ud83d\\ude00", "\xf0\x9f\x98\x80",
      "\\/",         "\\\\",  "\\t",     "/",        "\\u0000",       "\\ud800",
      "\\u20AC",     "\\b\\f\\r", " ",   "-x-"};
  put(g, "%s", base);
  if (rnd(g, 4) == 0)
    put(g, "%s", bits[rnd(g, sizeof(bits) / sizeof(bits[0]))]);
}

static void str(struct gen *g, const char *base) {
  put(g, "\"");
  str_body(g, base);
  put(g, "\"");
}

/* A member name, sometimes with an escape that decodes to the same name. */
static void key(struct gen *g, const char *k) {
  if (rnd(g, 10) == 0 && k[0] >= 'a' && k[0] <= 'z')
    put(g, "\"\\u%04x%s\":", (unsigned)k[0], k + 1);
  else if (rnd(g, 40) == 0)
    put(g, "\"%s\\u0000x\":", k); /* json-c keys end at the NUL */
  else
    put(g, "\"%s\":", k);
}

static void number(struct gen *g) {
  static const char *const nums[] = {"0",     "-0",   "7",      "-12",  "1.5",  "-0.25",
                                     "1e3",   "2E-7", "1.0e+2", "3.10", "-0.0", "100000",
                                     "9223372036854775807", "-9223372036854775808",
                                     "12345678901234567890", "1e308", "5e-324"};
  put(g, "%s", nums[rnd(g, sizeof(nums) / sizeof(nums[0]))]);
}

static void junk(struct gen *g, int depth);

static void junk_members(struct gen *g, int depth) {
  static const char *const names[] = {"a", "name", "value", "type", "k", "x", "status"};
  int n = (int)rnd(g, 4);
  for (int i = 0; i < n; i++) {
    put(g, "%s", i ? "," : "");
    key(g, names[rnd(g, sizeof(names) / sizeof(names[0]))]);
    junk(g, depth + 1);
  }
}

/* Any value: the wrong type where a field is expected, or filler. */
static void junk(struct gen *g, int depth) {
  switch (rnd(g, depth > 3 ? 5 : 7)) {
  case 0: str(g, "v"); break;
  case 1: number(g); break;
  case 2: put(g, "true"); break;
  case 3: put(g, "false"); break;
  case 4: put(g, "null"); break;
  case 5:
    put(g, "{");
    junk_members(g, depth);
    put(g, "}");
    break;
  default: {
    int n = (int)rnd(g, 4);
    put(g, "[");
    for (int i = 0; i < n; i++) {
      put(g, "%s", i ? ", " : "");
      junk(g, depth + 1);
    }
    put(g, "]");
  }
  }
}

typedef void (*member_fn)(struct gen *g);

/* The members of an object in a random order; now and then one twice (a
 * duplicate, the last of which json-c keeps) or of the wrong type. */
static void members(struct gen *g, const char *const *names, const member_fn *fns, size_t n) {
  size_t order[32];
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  for (size_t i = n; i > 1; i--) {
    size_t j = rnd(g, (uint32_t)i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  put(g, "{");
  int first = 1;
  for (size_t i = 0; i < n; i++) {
    size_t k = order[i];
    if (rnd(g, 8) == 0)
      continue;
    for (int twice = rnd(g, 12) == 0 ? 2 : 1; twice > 0; twice--) {
      put(g, "%s", first ? "" : ",");
      first = 0;
      key(g, names[k]);
      if (rnd(g, 25) == 0)
        junk(g, 2);
      else
        fns[k](g);
    }
  }
  put(g, "}");
}

static void v_name(struct gen *g) { str(g, "trainer-0"); }
static void v_ns(struct gen *g) { str(g, "team-a"); }
static void v_uid(struct gen *g) { str(g, "0b6c5e0e-4f3c-4f1e-9d2b-6c0a7c1d2e3f"); }
static void v_rv(struct gen *g) { put(g, "\"%u\"", rnd(g, 1000000)); }
static void v_time(struct gen *g) { str(g, "2026-11-27T22:00:00Z"); }
static void v_labels(struct gen *g) {
  static const char *const names[] = {JS, RJ, "app", "a\\\"b", "team"};
  static const member_fn fns[] = {v_name, v_name, v_ns, v_ns, v_ns};
  members(g, names, fns, 5);
}
static void v_annotations(struct gen *g) {
  put(g, "{\"kubectl.kubernetes.io/last-applied-configuration\":");
  str(g, "{\\\"apiVersion\\\":\\\"v1\\\",\\\"kind\\\":\\\"Pod\\\"}\\n");
  put(g, "}");
}
static void v_managed(struct gen *g) {
  put(g, "[{\"manager\":\"kube-scheduler\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
         "\"time\":\"2026-11-27T22:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":"
         "{\"f:conditions\":{\".\":{},\"k:{\\\"type\\\":\\\"PodScheduled\\\"}\":{\".\":{},"
         "\"f:lastProbeTime\":{},\"f:message\":{}}}}}}]");
}
static void v_owner(struct gen *g) {
  put(g, "[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"u\","
         "\"controller\":true,\"blockOwnerDeletion\":true}]");
}
static void v_metadata(struct gen *g) {
  static const char *const names[] = {"name",   "namespace",   "uid",           "resourceVersion",
                                      "labels", "annotations", "managedFields", "ownerReferences",
                                      "creationTimestamp", "generateName"};
  static const member_fn fns[] = {v_name,   v_ns,          v_uid,     v_rv,   v_labels,
                                  v_annotations, v_managed, v_owner, v_time, v_name};
  members(g, names, fns, 10);
}
static void v_quantity(struct gen *g) {
  static const char *const q[] = {"\"4\"", "\"32Gi\"", "\"500m\"", "\"1\"", "2", "1.5"};
  put(g, "%s", q[rnd(g, 6)]);
}
static void v_reqs(struct gen *g) {
  static const char *const names[] = {"cpu", "memory", "nvidia.com/gpu"};
  static const member_fn fns[] = {v_quantity, v_quantity, v_quantity};
  members(g, names, fns, 3);
}
static void v_resources(struct gen *g) {
  static const char *const names[] = {"requests", "limits", "claims"};
  static const member_fn fns[] = {v_reqs, v_reqs, v_managed};
  members(g, names, fns, 3);
}
static void v_env(struct gen *g) {
  put(g, "[");
  for (uint32_t i = 0, n = rnd(g, 5); i < n; i++) {
    put(g, "%s{\"name\":\"E%u\",\"value\":", i ? "," : "", i);
    str(g, "x");
    put(g, "}");
  }
  put(g, "]");
}
static void v_policy(struct gen *g) { str(g, rnd(g, 2) ? "Always" : "Never"); }
static void v_container(struct gen *g) {
  static const char *const names[] = {"name",  "image", "env",          "resources",
                                      "ports", "args",  "restartPolicy", "volumeMounts"};
  static const member_fn fns[] = {v_name, v_name, v_env, v_resources,
                                  v_owner, v_env, v_policy, v_env};
  members(g, names, fns, 8);
}
static void v_containers(struct gen *g) {
  put(g, "[");
  for (uint32_t i = 0, n = 1 + rnd(g, 3); i < n; i++) {
    put(g, "%s", i ? "," : "");
    if (rnd(g, 15) == 0)
      junk(g, 2);
    else
      v_container(g);
  }
  put(g, "]");
}
static void v_node(struct gen *g) { put(g, "\"node-%u\"", rnd(g, 100000)); }
static void v_prio(struct gen *g) { number(g); }
static void v_gates(struct gen *g) {
  put(g, "[{\"name\":\"gangbridge.io/placement\"}%s]", rnd(g, 2) ? ",{\"name\":\"x\"}" : "");
}
static void v_affinity(struct gen *g) {
  put(g, "{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
         "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"r\",\"operator\":\"In\","
         "\"values\":[\"a\",\"b\"]}]}]},\"preferredDuringSchedulingIgnoredDuringExecution\":[]},"
         "\"podAntiAffinity\":{}}");
}
static void v_tolerations(struct gen *g) {
  put(g, "[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"},"
         "{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
         "\"tolerationSeconds\":%u}]",
      rnd(g, 400));
}
static void v_spec(struct gen *g) {
  static const char *const names[] = {"nodeName",  "priority",   "schedulingGates", "affinity",
                                      "tolerations", "containers", "initContainers", "overhead",
                                      "resources", "volumes",    "dnsPolicy",       "unschedulable",
                                      "taints"};
  static const member_fn fns[] = {v_node,    v_prio,       v_gates,      v_affinity, v_tolerations,
                                  v_containers, v_containers, v_reqs,    v_resources, v_env,
                                  v_policy,  v_prio,       v_tolerations};
  members(g, names, fns, 13);
}
static void v_cond(struct gen *g) {
  static const char *const types[] = {"PodScheduled", "Ready", "Initialized", "P\\u006fdScheduled",
                                      "PodScheduled\\u0000x"};
  put(g, "{\"type\":\"%s\",\"status\":\"True\",\"lastProbeTime\":null,\"reason\":",
      types[rnd(g, 5)]);
  str(g, rnd(g, 2) ? "r\\u00e9" : "r\xc3\xa9");
  put(g, ",\"message\":");
  str(g, "0/5 nodes are available");
  if (rnd(g, 6) == 0)
    put(g, ",\"type\":\"%s\"", types[rnd(g, 3)]);
  put(g, ",\"lastTransitionTime\":\"2026-11-27T22:00:00Z\"}");
}
static void v_conditions(struct gen *g) {
  put(g, "[");
  for (uint32_t i = 0, n = rnd(g, 5); i < n; i++) {
    put(g, "%s", i ? "," : "");
    if (rnd(g, 12) == 0)
      junk(g, 2);
    else
      v_cond(g);
  }
  put(g, "]");
}
static void v_phase(struct gen *g) { str(g, rnd(g, 2) ? "Running" : "Pending"); }
static void v_status(struct gen *g) {
  static const char *const names[] = {"phase",      "conditions", "hostIP",  "containerStatuses",
                                      "allocatable", "n",         "podIPs"};
  static const member_fn fns[] = {v_phase, v_conditions, v_node, v_managed,
                                  v_reqs,  v_prio,       v_env};
  members(g, names, fns, 7);
}

/* A Pod or a Node (they share the generator: a Node is a Pod's shape with
 * Node fields mixed in). */
static size_t gen_doc(struct gen *g, char *buf) {
  static const char *const names[] = {"kind", "apiVersion", "metadata", "spec", "status"};
  static const member_fn fns[] = {v_name, v_ns, v_metadata, v_spec, v_status};
  g->buf = buf;
  g->len = 0;
  if (rnd(g, 3) == 0)
    put(g, " \n\t");
  members(g, names, fns, 5);
  if (rnd(g, 3) == 0)
    put(g, "\r\n ");
  return g->len;
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(generated_documents_decode_as_parse_and_prune) {
  static char doc[DOC_MAX];
  struct gen g = {0x9e3779b97f4a7c15ULL + (uint64_t)_i, NULL, 0};
  const struct gb_keep *ptrs[GB_KEEP_MAX];
  size_t accepted = 0;
  for (int i = 0; i < 500; i++) {
    size_t len = gen_doc(&g, doc);
    for (size_t s = 0; s < N_SETS; s++)
      accepted += (size_t)same(doc, len, ptrs, ptrs_of(&SETS[s], ptrs), 1);
  }
  ck_assert_uint_eq(accepted, 500 * N_SETS);
}
END_TEST

/* Truncations and byte flips of real-looking documents: whatever json-c
 * refuses the decoder refuses (with its place), whatever both accept
 * decodes the same. */
START_TEST(damaged_documents_are_refused_as_json_c_refuses_them) {
  static char doc[DOC_MAX], bad[DOC_MAX];
  struct gen g = {0x51ed270b27a1c3d5ULL + (uint64_t)_i, NULL, 0};
  const struct gb_keep *ptrs[GB_KEEP_MAX];
  size_t n = ptrs_of(&SETS[0], ptrs), refused = 0, total = 0;
  static const char flips[] = "{}[]\",:\\0-.eE tfn\x01\xff";
  for (int i = 0; i < 40; i++) {
    size_t len = gen_doc(&g, doc);
    for (int k = 0; k < 40; k++, total++) {
      memcpy(bad, doc, len);
      size_t at = rnd(&g, (uint32_t)len), blen = len;
      if (k % 3 == 0)
        blen = at; /* truncated */
      else
        bad[at] = flips[rnd(&g, sizeof(flips) - 1)];
      refused += !same(bad, blen, ptrs, n, 0);
    }
  }
  ck_assert_uint_gt(refused, total / 4); /* the damage was real */
}
END_TEST

START_TEST(malformed_input_refused_with_its_place) {
  static const char *const bad[] = {
      "",        "{",           "{\"a\":}",      "{\"a\" 1}",     "{\"a\":1,}",   "{\"a\":1 \"b\":2}",
      "[1,]",    "[1 2]",       "{\"a\":tru}",   "{\"a\":nul}",   "{\"a\":01}",   "{\"a\":-}",
      "{\"a\":1e}", "{\"a\":\"x}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}", "{a:1}", "{'a':1}",
      "{\"a\":NaN}", "{\"a\":1}x",  "{\"a\":1}{}",   "{\"a\":[}",     "]",            "{\"a\":1}}",
      "{\"metadata\":{\"name\":\"x\"", "{\"spec\":{\"containers\":[{\"name\":\"a\"},]}}",
      "{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",}]}}",
  };
  const struct gb_keep *ptrs[GB_KEEP_MAX];
  size_t n = ptrs_of(&SETS[0], ptrs);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int ok;
    char msg[GB_SJ_MSG_MAX];
    json_object *o = new_way(bad[i], strlen(bad[i]), ptrs, n, &ok, msg, sizeof(msg));
    ck_assert_msg(!ok && !o, "accepted: %s", bad[i]);
    ck_assert_msg(!strncmp(msg, "body:1:", 7), "message \"%s\" for %s", msg, bad[i]);
    same(bad[i], strlen(bad[i]), ptrs, n, 0);
  }
  /* json-c's leniencies are not JSON, and the API server never sends them. */
  static const char *const lenient[] = {"{\"metadata\":{\"name\":\"a\tb\"}}",
                                        "{\"spec\":{\"priority\":1.}}", "{\"x\":\"\x01\"}"};
  for (size_t i = 0; i < sizeof(lenient) / sizeof(lenient[0]); i++) {
    int ok;
    char msg[GB_SJ_MSG_MAX];
    json_object *o = new_way(lenient[i], strlen(lenient[i]), ptrs, n, &ok, msg, sizeof(msg));
    ck_assert_msg(!ok && !o && strstr(msg, "body:1:"), "accepted: %s (%s)", lenient[i], msg);
  }
}
END_TEST

/* The classics of equivalence, spelled out. */
START_TEST(edges_decode_as_parse_and_prune) {
  static const char *const docs[] = {
      "{\"metadata\":{\"name\":\"a\",\"name\":\"b\"}}",
      "{\"metadata\":{\"name\":\"a\"},\"metadata\":{\"uid\":\"u\",\"x\":1}}",
      "{\"metadata\":\"flat\",\"spec\":[1,2],\"status\":{\"conditions\":{\"type\":\"x\"}}}",
      ("{\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"type\":\"Ready\"},"
      "{\"type\":\"Ready\",\"type\":\"PodScheduled\",\"status\":\"False\"},"
      "{\"type\":1},\"PodScheduled\",null,{\"type\":\"P\\u006fdScheduled\",\"message\":\"m\"},"
      "{\"type\":\"PodScheduled\\u0000x\",\"status\":\"s\"}]}}"),
      "{\"met\\u0061data\":{\"n\\u0061me\":\"\\ud83d\\ude00\\u00e9\\/\\\\\\\"\"}}",
      "{\"metadata\\u0000x\":{\"name\":\"cut at the NUL\"}}",
      ("{\"spec\":{\"priority\":-9223372036854775808,\"overhead\":{\"cpu\":1.50e+2},"
      "\"nodeName\":\"\\ud800lone\",\"resources\":[1.0,-0,2E-3,12345678901234567890]}}"),
      "{\"spec\":{\"priority\":1e400}}",
      "{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{}},{},[],\"s\",{\"name\":null}]}}",
      "  {\"spec\":{\"tolerations\":null,\"schedulingGates\":[]}}  ",
      "{}",
      "[]",
      "{\"[]\":1,\"[k=v]\":{\"x\":1},\"k\":\"v\"}",
      "[{\"k\":\"v\",\"x\":1,\"y\":2},{\"k\":\"w\",\"x\":3},{\"x\":4}]",
      "\"top\"",
      "42",
      "-1.5e3",
      "true",
      "null",
  };
  const struct gb_keep *ptrs[GB_KEEP_MAX];
  for (size_t s = 0; s < N_SETS; s++) {
    size_t n = ptrs_of(&SETS[s], ptrs);
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
      same(docs[i], strlen(docs[i]), ptrs, n, 1);
  }
  /* Long member names, escaped or not, inside a value kept whole (the
   * Node keeps its labels whole). */
  static char doc[4096];
  char name[700];
  memset(name, 'a', sizeof(name) - 1);
  name[sizeof(name) - 1] = '\0';
  size_t n = ptrs_of(&SETS[1], ptrs);
  snprintf(doc, sizeof(doc), "{\"metadata\":{\"labels\":{\"%s\\u0041\":\"1\",\"%s\":2}}}", name,
           name + 300);
  same(doc, strlen(doc), ptrs, n, 1);
}
END_TEST

/* json-c's depth D reads D - 1 levels; the scanner bounded at D - 1 agrees. */
START_TEST(nesting_bounded_as_json_c_bounds_it) {
  static char doc[512];
  const struct gb_keep *ptrs[GB_KEEP_MAX];
  size_t n = ptrs_of(&SETS[2], ptrs);
  for (int levels = DEPTH - 3; levels <= DEPTH + 1; levels++) {
    size_t len = 0;
    len += (size_t)snprintf(doc + len, sizeof(doc) - len, "{\"metadata\":");
    for (int i = 1; i < levels; i++)
      doc[len++] = '[';
    for (int i = 1; i < levels; i++)
      doc[len++] = ']';
    doc[len++] = '}';
    int accepted = same(doc, len, ptrs, n, 0);
    ck_assert_int_eq(accepted, levels <= DEPTH - 1);
  }
}
END_TEST

/* The informer's watch decodes a superset of its keeps (what its
 * selections read, and the member each "[key=value]" step selects by:
 * gb_informer_seal_watch), then prunes to the keeps: the same object as
 * pruning json-c's whole tree.  Without the selecting members the second
 * pruning would drop selected elements, which the last check shows. */
START_TEST(superset_decode_then_prune_is_prune) {
  static const struct gb_keep extra[] = {
      {{"metadata", "labels"}},
      {{"status", "phase"}},
      {{"status", "conditions", "[type=Ready]", "type"}},
      {{"status", "conditions", "[reason=r\xc3\xa9]", "reason"}},
      {{"spec", "containers", "[name=trainer]", "name"}},
  };
  static char doc[DOC_MAX], a[DOC_MAX], b[DOC_MAX];
  struct gen g = {0x2545f4914f6cdd1dULL, NULL, 0};
  const struct gb_keep *keep[GB_KEEP_MAX], *wide[GB_KEEP_MAX];
  size_t nk = ptrs_of(&SETS[2], keep), nw = nk, differs = 0;
  memcpy(wide, keep, nk * sizeof(*keep));
  for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
    wide[nw++] = &extra[i];
  for (int i = 0; i < 400; i++) {
    size_t len = gen_doc(&g, doc);
    int ok_old, ok_new, ok_bare;
    char msg[GB_SJ_MSG_MAX];
    json_object *o = old_way(doc, len, keep, nk, &ok_old);
    json_object *d = new_way(doc, len, wide, nw, &ok_new, msg, sizeof(msg));
    json_object *bare = new_way(doc, len, keep, nk, &ok_bare, msg, sizeof(msg));
    ck_assert(ok_old && ok_new && ok_bare);
    gb_keep_prune(d, keep, nk);
    ck_assert_str_eq(text_of(d, b, sizeof(b)), text_of(o, a, sizeof(a)));
    /* Decoded to the keeps alone then pruned again: a Ready condition kept
     * as its "status" alone no longer has the "type" that selects it. */
    gb_keep_prune(bare, keep, nk);
    differs += strcmp(text_of(bare, b, sizeof(b)), a) != 0;
    json_object_put(o);
    json_object_put(d);
    json_object_put(bare);
  }
  ck_assert_uint_gt(differs, 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("keep_decode");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, generated_documents_decode_as_parse_and_prune, 0, 4);
  tcase_add_loop_test(tc, damaged_documents_are_refused_as_json_c_refuses_them, 0, 3);
  tcase_add_test(tc, malformed_input_refused_with_its_place);
  tcase_add_test(tc, edges_decode_as_parse_and_prune);
  tcase_add_test(tc, nesting_bounded_as_json_c_bounds_it);
  tcase_add_test(tc, superset_decode_then_prune_is_prune);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
