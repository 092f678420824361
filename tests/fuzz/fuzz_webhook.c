/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for gb_webhook_review.  The input is the request body
 * (content type application/json).  Properties checked:
 *   - every input is answered: 200, 400, 413 or 415, with a body whose length
 *     matches, and nothing crashes or leaks;
 *   - a 200 answer is an admission.k8s.io/v1 AdmissionReview whose response
 *     has a non-empty uid and a boolean `allowed`;
 *   - a patch, when present, is base64 of a JSON array of "add" operations
 *     whose paths only touch metadata labels/annotations or
 *     /spec/schedulerName.
 * The lookup binds JobSets whose name starts with "v" to Volcano, "c" to
 * coscheduling, fails for "e" and leaves the rest unmanaged.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; seed corpus in
 * tests/fuzz/corpus/webhook (real AdmissionReview documents).
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_log.h"
#include "gb_webhook.h"
#include "gb_webhook_test.h"

static int lookup(void *ctx, const char *ns, const char *jobset, const char *rjob,
                  struct gb_webhook_decision *out, char *reason, size_t size) {
  switch (jobset[0]) {
  case 'v':
  case 'c':
    out->managed = 1;
    out->bind = rjob[0] != 'i';
    out->backend = gc_backend_at(jobset[0] == 'v' ? 0 : 1);
    snprintf(out->group, sizeof(out->group), "%s", jobset);
    snprintf(out->scheduler_name, sizeof(out->scheduler_name), "%s",
             jobset[0] == 'v' ? "volcano" : "");
    return 0;
  case 'e':
    snprintf(reason, size, "not synced");
    return GC_ENOTFOUND;
  default:
    return 0;
  }
}

static int b64val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

static void check_patch(const char *b64) {
  size_t n = strlen(b64);
  if (n == 0 || n % 4)
    abort();
  char *raw = malloc(n / 4 * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4) {
    int v[4];
    for (int k = 0; k < 4; k++) {
      v[k] = b64[i + k] == '=' ? 0 : b64val(b64[i + k]);
      if (v[k] < 0)
        abort();
    }
    unsigned w = (unsigned)(v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3]);
    raw[o++] = (char)(w >> 16);
    if (b64[i + 2] != '=') raw[o++] = (char)(w >> 8);
    if (b64[i + 3] != '=') raw[o++] = (char)w;
  }
  raw[o] = '\0';
  json_object *ops = json_tokener_parse(raw);
  if (!ops || !json_object_is_type(ops, json_type_array) || !json_object_array_length(ops))
    abort();
  for (size_t i = 0; i < json_object_array_length(ops); i++) {
    json_object *op = json_object_array_get_idx(ops, i), *v;
    if (!json_object_object_get_ex(op, "op", &v) || strcmp(json_object_get_string(v), "add"))
      abort();
    if (!json_object_object_get_ex(op, "path", &v))
      abort();
    const char *p = json_object_get_string(v);
    if (strncmp(p, "/metadata/labels", 16) && strncmp(p, "/metadata/annotations", 21) &&
        strcmp(p, "/spec/schedulerName"))
      abort();
    if (!json_object_object_get_ex(op, "value", &v))
      abort();
  }
  json_object_put(ops);
  free(raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct gb_webhook *wh;
  if (!wh) {
    gb_log_set_level(GB_LOG_OFF);
    struct gb_webhook_config cfg = {lookup, NULL, 0, 1 << 20, NULL, 0};
    if (gb_webhook_new(&cfg, &wh) != 0)
      abort();
  }
  int status = 0;
  char *out = NULL;
  size_t len = 0;
  const char *ctype = NULL;
  if (gb_webhook_review(wh, "application/json", (const char *)data, size, &status, &out, &len,
                        &ctype) != 0)
    abort();
  if (!out || strlen(out) != len || !ctype)
    abort();
  if (status != 200 && status != 400 && status != 413 && status != 415)
    abort();
  if (status == 200) {
    json_object *doc = json_tokener_parse(out), *resp, *v;
    if (!doc || !json_object_object_get_ex(doc, "response", &resp))
      abort();
    if (!json_object_object_get_ex(resp, "uid", &v) || !json_object_get_string_len(v))
      abort();
    if (!json_object_object_get_ex(resp, "allowed", &v) ||
        !json_object_is_type(v, json_type_boolean))
      abort();
    if (json_object_object_get_ex(resp, "patch", &v))
      check_patch(json_object_get_string(v));
    json_object_put(doc);
  }
  free(out);
  return 0;
}
