/* SPDX-License-Identifier: Apache-2.0
 *
 * test_decision: the decision record's format (gb_decision): a decision
 * encodes to the documented compact JSON and decodes back to the same
 * fields (label, host-list, per-pod and whole-cluster restrictions); an
 * assignment too long for the byte budget is cut and counted in
 * "truncated"; bad records are refused naming the field.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_decision.h"

static struct gb_decision *sample(void) {
  struct gb_decision *d = NULL;
  ck_assert_int_eq(gb_decision_new(&d), 0);
  static const char *res[] = {"cpu", "nvidia.com/gpu"};
  static int64_t val[] = {8000, 8};
  static struct tp_podset sets[] = {{"shape-1", 2, 2, res, val}};
  static struct gb_plan_assign as[] = {{"n1", 0, 1}, {"n2", 0, 1}};
  d->rec.id = 0x9f3c0a1b2c3d4e5full;
  d->rec.generation = 4812;
  d->rec.decided_ms = 1777636800123; /* 2026-05-01T12:00:00.123Z */
  d->rec.domain = "b1/r1";
  d->rec.tier = 1;
  d->rec.tier_name = "rack";
  d->rec.pods = 2;
  d->rec.sets = sets;
  d->rec.n_sets = 1;
  d->rec.assign = as;
  d->rec.n_assign = 2;
  snprintf(d->mode, sizeof(d->mode), "hard");
  ck_assert_int_eq(gb_restriction_label(&d->restr, "rack", "r1", NULL), 0);
  return d;
}

static char *encode(const struct gb_decision *d) {
  struct gb_buf b;
  gb_buf_init(&b, GB_DECISION_MAX_TEXT);
  ck_assert_int_eq(gb_decision_encode(d, &b), 0);
  char *out = NULL;
  size_t len = 0;
  ck_assert_int_eq(gb_buf_take(&b, &out, &len), 0);
  gb_buf_free(&b);
  return out;
}

static struct gb_decision *decode_ok(const char *text) {
  struct gb_decision *d = NULL;
  struct gc_diags dg;
  gc_diags_init(&dg);
  int rc = gb_decision_decode(text, strlen(text), &d, &dg);
  ck_assert_msg(rc == 0, "%s: %s", text, dg.n ? dg.msgs[0] : gc_diag_strerror(rc));
  gc_diags_destroy(&dg);
  return d;
}

START_TEST(round_trip_label) {
  struct gb_decision *d = sample();
  char *text = encode(d);
  ck_assert_str_eq(text,
                   "{\"v\":1,\"id\":\"9f3c0a1b2c3d4e5f\",\"gen\":4812,"
                   "\"at\":\"2026-05-01T12:00:00.123Z\",\"mode\":\"hard\",\"domain\":\"b1/r1\","
                   "\"tier\":1,\"tierName\":\"rack\",\"pods\":2,\"restriction\":{\"key\":"
                   "\"rack\",\"values\":[\"r1\"]},\"sets\":[{\"pods\":2,\"req\":{\"cpu\":"
                   "8000,\"nvidia.com/gpu\":8}}],\"nodes\":[[\"n1\",0,1],[\"n2\",0,1]]}");
  struct gb_decision *back = decode_ok(text);
  ck_assert_uint_eq(back->rec.id, d->rec.id);
  ck_assert_uint_eq(back->rec.generation, 4812);
  ck_assert_int_eq(back->rec.decided_ms, d->rec.decided_ms);
  ck_assert_str_eq(back->rec.domain, "b1/r1");
  ck_assert_str_eq(back->rec.tier_name, "rack");
  ck_assert_int_eq(back->rec.tier, 1);
  ck_assert_str_eq(back->mode, "hard");
  ck_assert_int_eq(back->restr.kind, GB_RESTRICT_LABEL);
  ck_assert_str_eq(back->restr.values[0], "r1");
  ck_assert_uint_eq(back->rec.n_sets, 1);
  ck_assert_int_eq(back->rec.sets[0].count, 2);
  ck_assert_str_eq(back->rec.sets[0].res[1], "nvidia.com/gpu");
  ck_assert_int_eq(back->rec.sets[0].val[1], 8);
  ck_assert_uint_eq(back->rec.n_assign, 2);
  ck_assert_str_eq(back->rec.assign[1].node, "n2");
  ck_assert_ptr_null(back->rec.members); /* a label level: the domain's nodes */
  struct gb_decision *copy = NULL;
  ck_assert_int_eq(gb_decision_copy(back, &copy), 0);
  char *again = encode(copy);
  ck_assert_str_eq(again, text);
  free(again);
  free(text);
  gb_decision_free(copy);
  gb_decision_free(back);
  gb_decision_free(d);
}
END_TEST

START_TEST(hosts_per_pod_and_whole) {
  struct gb_decision *d = sample();
  memset(&d->restr, 0, sizeof(d->restr));
  gb_restriction_add_host(&d->restr, "n2", NULL);
  gb_restriction_add_host(&d->restr, "n1", NULL);
  char *text = encode(d);
  struct gb_decision *back = decode_ok(text);
  ck_assert_int_eq(back->restr.kind, GB_RESTRICT_HOSTS);
  ck_assert_uint_eq(back->rec.n_members, 2); /* the hosts are the allowed nodes */
  free(text);
  gb_decision_free(back);
  memset(&d->restr, 0, sizeof(d->restr));
  d->per_pod = 1;
  text = encode(d);
  ck_assert(strstr(text, "\"restriction\":{\"perPod\":true}") != NULL);
  back = decode_ok(text);
  ck_assert(back->per_pod);
  ck_assert_uint_eq(back->rec.n_members, 2);
  free(text);
  gb_decision_free(back);
  d->per_pod = 0;
  d->rec.whole_cluster = 1;
  d->rec.domain = "";
  d->rec.tier = -1;
  snprintf(d->mode, sizeof(d->mode), "soft");
  text = encode(d);
  ck_assert(strstr(text, "\"whole\":true") && strstr(text, "\"restriction\":{}"));
  back = decode_ok(text);
  ck_assert(back->rec.whole_cluster);
  ck_assert_int_eq(back->restr.kind, GB_RESTRICT_NONE);
  free(text);
  gb_decision_free(back);
  gb_decision_free(d);
}
END_TEST

/* An assignment over the byte budget is cut; the pods left out are counted. */
START_TEST(truncated) {
  struct gb_decision *d = sample();
  size_t n = 20000;
  struct gb_plan_assign *as = calloc(n, sizeof(*as));
  char(*names)[32] = calloc(n, sizeof(*names));
  for (size_t i = 0; i < n; i++) {
    snprintf(names[i], sizeof(names[i]), "node-%05zu.example.internal", i);
    as[i] = (struct gb_plan_assign){names[i], 0, 1};
  }
  d->rec.assign = as;
  d->rec.n_assign = n;
  d->rec.pods = (int64_t)n;
  char *text = encode(d);
  ck_assert_uint_le(strlen(text), GB_DECISION_MAX_BYTES);
  struct gb_decision *back = decode_ok(text);
  ck_assert_uint_lt(back->rec.n_assign, n);
  ck_assert_int_eq(back->rec.truncated, (int64_t)(n - back->rec.n_assign));
  free(text);
  free(names);
  free(as);
  gb_decision_free(back);
  gb_decision_free(d);
}
END_TEST

static void decode_bad(const char *text, const char *field) {
  struct gb_decision *d = NULL;
  struct gc_diags dg;
  gc_diags_init(&dg);
  ck_assert_int_eq(gb_decision_decode(text, strlen(text), &d, &dg), GC_EINVAL);
  ck_assert_ptr_null(d);
  ck_assert_msg(dg.n && !strncmp(dg.msgs[0], field, strlen(field)), "%s: %s", text,
                dg.n ? dg.msgs[0] : "(no message)");
  gc_diags_destroy(&dg);
}

#define HEAD "{\"v\":1,\"id\":\"00000000000000ab\",\"gen\":1,\"at\":\"2026-05-01T12:00:00.000Z\","
#define TAIL "\"sets\":[{\"pods\":1,\"req\":{\"cpu\":1}}],\"nodes\":[[\"n1\",0,1]]}"

START_TEST(bad_records) {
  decode_bad("[]", "record");
  decode_bad("{\"v\":2}", "v");
  decode_bad(HEAD "\"mode\":\"hard\",\"domain\":\"d\",\"tier\":1,\"pods\":1,\"restriction\":{},"
                  "\"sets\":[{\"pods\":1,\"req\":{\"cpu\":1}}],\"nodes\":[[\"n1\",1,1]]}",
             "nodes[]");
  decode_bad(HEAD "\"mode\":\"x\",\"domain\":\"d\",\"tier\":1,\"pods\":1,\"restriction\":{}," TAIL,
             "mode");
  decode_bad(HEAD
             "\"mode\":\"hard\",\"domain\":\"\",\"tier\":1,\"pods\":1,\"restriction\":{}," TAIL,
             "domain");
  decode_bad(HEAD "\"mode\":\"hard\",\"domain\":\"d\",\"tier\":1,\"pods\":1,\"restriction\":"
                  "{\"key\":\"rack\",\"values\":[\"a\",\"b\"]}," TAIL,
             "restriction");
  decode_bad(HEAD "\"mode\":\"hard\",\"domain\":\"d\",\"tier\":1,\"pods\":1,\"restriction\":"
                  "{\"key\":\"kubernetes.io/hostname\",\"values\":[\"Bad Host\"]}," TAIL,
             "restriction");
  decode_bad("{\"v\":1,\"id\":\"0000000000000000\"}", "id");
  decode_bad("{\"v\":1,\"id\":\"00000000000000ab\",\"gen\":1,\"at\":\"yesterday\"}", "at");
  decode_bad(HEAD "\"mode\":\"hard\",\"domain\":\"d\",\"tier\":1,\"pods\":1,\"restriction\":{},"
                  "\"sets\":[],\"nodes\":[]}",
             "sets");
  /* Trailing bytes after the object are not a record. */
  decode_bad(HEAD "\"mode\":\"\",\"domain\":\"d\",\"tier\":1,\"pods\":1,\"restriction\":{}," TAIL
                  "x",
             "record");
}
END_TEST

int main(void) {
  Suite *s = suite_create("decision");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, round_trip_label);
  tcase_add_test(tc, hosts_per_pod_and_whole);
  tcase_add_test(tc, truncated);
  tcase_add_test(tc, bad_records);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
