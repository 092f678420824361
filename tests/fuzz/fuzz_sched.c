/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for the scheduler endpoints' bodies: every verb of both
 * protocols (Volcano's extender plugin and kube-scheduler's HTTP extender)
 * through gb_sched_handle, exactly as the server runs them.  The first
 * input byte picks the verb, the rest is the body.  Properties checked:
 *   - every body is answered 200 or 400 (never 500, a crash or a leak);
 *   - a 400 names the place of the problem ("body:LINE:COL:" or the
 *     verb's own reason);
 *   - a 200 answer is valid UTF-8 and one complete JSON value with nothing
 *     after it (json-c, strict), of the verb's shape (an object, or for
 *     kube prioritize an array);
 *   - no answer names a gang of another namespace than the asking one:
 *     the fake backend's reasons name "other-ns/secret", which must never
 *     reach an answer.
 * The fake plan places gang team-a/tj-llama on gpu-node-17 and -18 and has
 * opinions on nothing else.  Build: cmake -DGB_FUZZ=ON
 * -DCMAKE_C_COMPILER=clang; seed corpus in tests/fuzz/corpus/sched (one
 * body per verb, the verb byte first).
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_log.h"
#include "gb_sched.h"
#include "gb_sched_test.h"
#include "gb_jscan.h"
#include "gb_jscan_test.h"

static const char *const PATHS[] = {
    "/volcano/onSessionOpen",  "/volcano/onSessionClose", "/volcano/predicate",
    "/volcano/prioritize",     "/volcano/allocateFunc",   "/volcano/deallocateFunc",
    "/volcano/jobEnqueueable", "/kube/filter",            "/kube/prioritize",
};
#define N_PATHS (sizeof(PATHS) / sizeof(PATHS[0]))

static int allowed(void *arg, const char *key, const char *node, char *why, size_t size) {
  if (strcmp(key, "team-a/tj-llama"))
    return -1;
  if (!strcmp(node, "gpu-node-17") || !strcmp(node, "gpu-node-18"))
    return 1;
  snprintf(why, size, "node %s is outside rack-1, chosen for team-a/tj-llama after other-ns/secret",
           node);
  return 0;
}

static int64_t score(void *arg, const char *key, const char *node) {
  if (strcmp(key, "team-a/tj-llama"))
    return 0;
  return !strcmp(node, "gpu-node-17") ? 2 : !strcmp(node, "gpu-node-18") ? 1 : 0;
}

static int enqueueable(void *arg, const struct gb_sched_vjob *job, int *verdict, char *reason,
                       size_t size) {
  *verdict = job->n_tasks % 3 == 0 ? GB_VC_PERMIT : job->n_tasks % 3 == 1 ? GB_VC_REJECT
                                                                          : GB_VC_ABSTAIN;
  snprintf(reason, size, "held: fits, but other-ns/secret (priority 9) goes first");
  return 0;
}

static void job_event(void *arg, const struct gb_sched_vjob *job, int verdict,
                      const char *reason) {
  if (strcmp(job->ns, "other-ns") && strstr(reason, "other-ns/secret"))
    abort(); /* another namespace's gang reached this namespace's Event */
}

static struct gb_sched *S;

static int utf8_valid(const char *p, size_t n) {
  const unsigned char *q = (const unsigned char *)p, *end = q + n;
  while (q < end) {
    int k = gb_sj_utf8_len(q, end);
    if (!k)
      return 0;
    q += k;
  }
  return 1;
}

static void check_answer(size_t verb, const char *ns, const struct gb_http_response *r) {
  if (r->status == 400) {
    if (!r->body || !strstr(r->body, ": "))
      abort();
    return;
  }
  if (r->status != 200 || !r->body || !utf8_valid(r->body, r->body_len))
    abort();
  struct json_tokener *tok = json_tokener_new();
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  struct json_object *o = json_tokener_parse_ex(tok, r->body, (int)r->body_len);
  if (!o || json_tokener_get_error(tok) != json_tokener_success ||
      json_tokener_get_parse_end(tok) != r->body_len)
    abort();
  int want_array = !strcmp(PATHS[verb], "/kube/prioritize");
  if (json_object_is_type(o, want_array ? json_type_array : json_type_object) != 1)
    abort();
  json_object_put(o);
  json_tokener_free(tok);
  /* The plan's reasons name other-ns/secret: only an answer to a task of
   * other-ns itself may carry it. */
  if (strcmp(ns, "other-ns") && strstr(r->body, "other-ns/secret"))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!S) {
    gb_log_set_level(GB_LOG_OFF);
    struct gb_sched_source be = {allowed, score, enqueueable, job_event, NULL, NULL, NULL};
    struct gb_sched_config cfg = {0};
    cfg.max_session_tasks = 64; /* the overlay fills up too */
    struct gc_diags d;
    gc_diags_init(&d);
    if (gb_sched_new(&cfg, &be, &S, &d))
      abort();
    gc_diags_destroy(&d);
  }
  if (size < 1)
    return 0;
  size_t verb = data[0] % N_PATHS;
  /* The server hands handlers a NUL-terminated copy. */
  char *body = malloc(size);
  if (!body)
    return 0;
  memcpy(body, data + 1, size - 1);
  body[size - 1] = '\0';
  struct gb_http_response r = {200, NULL, 0, NULL};
  if (gb_sched_handle(S, PATHS[verb], body, size - 1, &r) != 0)
    abort(); /* only GC_ENOMEM may fail the handler, and fuzzing has memory */
  /* The asking namespace, if the body names one plainly (a fuzzed body
   * could make any namespace ask; the property is about other ones). */
  const char *ns = strstr(body, "other-ns") ? "other-ns" : "team-a";
  check_answer(verb, ns, &r);
  free(r.body);
  free(body);
  return 0;
}
