/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for the watch-stream parser: every chunking of a stream from 1
 * to 7 bytes yields the same events; limits (event bytes, depth) and
 * malformed streams are reported, never crash.  Every test runs twice:
 * parsing whole events with json-c, and in keep mode (the parser frames the
 * events and decodes only the kept paths, as an informer's watch does); a
 * last test compares the two modes' objects on real-looking Pod events
 * split at every size.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_kube_watch.h"
#include "gb_kube_watch_test.h"

/* Set by main for the second run: parsers decode only metadata and spec. */
static int keep_mode;

static struct gb_watch_parser *parser_new(size_t max_event_bytes, int max_depth) {
  static const struct gb_keep keep[] = {{{"metadata"}}, {{"spec"}}};
  static const struct gb_keep *const ptrs[] = {&keep[0], &keep[1]};
  struct gb_watch_parser *p = gb_watch_parser_new(max_event_bytes, max_depth);
  if (p && keep_mode)
    ck_assert_int_eq(gb_watch_parser_set_keep(p, ptrs, 2), 0);
  return p;
}

static const char STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"TrainJob\",\"metadata\":{\"name\":\"a\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"101\"},\"spec\":{\"x\":\"h\\u00e9 \\\"q\\\"\","
    "\"n\":1.50,\"l\":[1,2,{\"z\":null}]}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"TrainJob\",\"metadata\":"
    "{\"resourceVersion\":\"150\"}}}\r\n"
    "  {\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
    "\"resourceVersion\":\"160\"}}}"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
    "\"resourceVersion\":\"170\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
    "\"message\":\"too old resource version: 1 (170)\"}}\n";

struct rec {
  char log[2048];
  int n;
  int stop_at; /* stop after this many events (0: never) */
};

static int on_ev(void *arg, const struct gb_watch_event *ev) {
  struct rec *r = arg;
  size_t len = strlen(r->log);
  const char *extra = "";
  json_object *spec;
  if (json_object_object_get_ex(ev->object, "spec", &spec))
    extra = json_object_to_json_string_ext(spec, JSON_C_TO_STRING_PLAIN);
  if (ev->type == GB_WATCH_ERROR) {
    struct gb_kube_error e = {0};
    gb_kube_client_status_from_json(ev->object, 0, &e);
    snprintf(r->log + len, sizeof(r->log) - len, "ERROR code=%ld reason=%s|", e.http, e.reason);
  } else {
    snprintf(r->log + len, sizeof(r->log) - len, "%s rv=%s %s|", gb_watch_type_name(ev->type),
             ev->rv ? ev->rv : "-", extra);
  }
  r->n++;
  return r->stop_at && r->n >= r->stop_at ? 77 : 0;
}

static const char *EXPECTED =
    "ADDED rv=101 {\"x\":\"h\xc3\xa9 \\\"q\\\"\",\"n\":1.50,\"l\":[1,2,{\"z\":null}]}|"
    "BOOKMARK rv=150 |MODIFIED rv=160 |DELETED rv=170 |ERROR code=410 reason=Expired|";

START_TEST(every_chunk_size_same_events) {
  int chunk = _i; /* 1..7 */
  struct gb_watch_parser *p = parser_new(0, 0);
  ck_assert_ptr_nonnull(p);
  struct rec r = {{0}, 0, 0};
  struct gc_diags d;
  gc_diags_init(&d);
  size_t len = strlen(STREAM);
  for (size_t off = 0; off < len; off += (size_t)chunk) {
    size_t n = len - off < (size_t)chunk ? len - off : (size_t)chunk;
    int rc = gb_watch_parser_feed(p, STREAM + off, n, on_ev, &r, &d);
    ck_assert_msg(rc == 0, "chunk %d off %zu rc %d %s", chunk, off, rc, d.n ? d.msgs[0] : "");
  }
  ck_assert_int_eq(gb_watch_parser_pending(p), 0);
  ck_assert_str_eq(r.log, EXPECTED);
  gb_watch_parser_free(p);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(whole_buffer_and_partial_tail) {
  struct gb_watch_parser *p = parser_new(0, 0);
  struct rec r = {{0}, 0, 0};
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_watch_parser_feed(p, STREAM, strlen(STREAM), on_ev, &r, &d), 0);
  ck_assert_str_eq(r.log, EXPECTED);
  /* A cut event stays pending. */
  ck_assert_int_eq(gb_watch_parser_feed(p, "{\"type\":\"ADD", 12, on_ev, &r, &d), 0);
  ck_assert_int_eq(gb_watch_parser_pending(p), 1);
  gb_watch_parser_reset(p);
  ck_assert_int_eq(gb_watch_parser_pending(p), 0);
  gb_watch_parser_free(p);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(numbers_across_chunks) {
  /* Numbers split anywhere (held back internally) still parse exactly. */
  const char *ev = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n\"},"
                   "\"a\":-12.5e-3,\"b\":[1,22,333],\"c\":9007199254740993,\"d\":2E+1}}";
  for (size_t chunk = 1; chunk <= 12; chunk++) {
    struct gb_watch_parser *p = parser_new(0, 0);
    struct rec r = {{0}, 0, 0};
    size_t len = strlen(ev);
    for (size_t off = 0; off < len; off += chunk)
      ck_assert_int_eq(gb_watch_parser_feed(p, ev + off, len - off < chunk ? len - off : chunk,
                                            on_ev, &r, NULL),
                       0);
    ck_assert_int_eq(r.n, 1);
    ck_assert_int_eq(gb_watch_parser_pending(p), 0);
    gb_watch_parser_free(p);
  }
  /* A trailing number with no terminator stays pending. */
  struct gb_watch_parser *p = parser_new(0, 0);
  ck_assert_int_eq(gb_watch_parser_feed(p, "{\"a\":12", 7, on_ev, NULL, NULL), 0);
  ck_assert_int_eq(gb_watch_parser_pending(p), 1);
  gb_watch_parser_free(p);
}
END_TEST

START_TEST(utf8_across_chunks) {
  /* Raw multi-byte characters (2, 3 and 4 bytes) split at every point parse
   * exactly: a network read may end inside a character. */
  const char *ev = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"n\"},"
                   "\"spec\":{\"x\":\"\xde\xad \xe2\x82\xac \xf0\x9f\x9a\x80\"}}}";
  for (size_t chunk = 1; chunk <= 12; chunk++) {
    struct gb_watch_parser *p = parser_new(0, 0);
    struct rec r = {{0}, 0, 0};
    struct gc_diags d;
    gc_diags_init(&d);
    size_t len = strlen(ev);
    for (size_t off = 0; off < len; off += chunk) {
      int rc = gb_watch_parser_feed(p, ev + off, len - off < chunk ? len - off : chunk, on_ev,
                                    &r, &d);
      ck_assert_msg(rc == 0, "chunk %zu off %zu: %s", chunk, off, d.n ? d.msgs[0] : "");
    }
    ck_assert_str_eq(r.log, "ADDED rv=- {\"x\":\"\xde\xad \xe2\x82\xac \xf0\x9f\x9a\x80\"}|");
    ck_assert_int_eq(gb_watch_parser_pending(p), 0);
    gb_watch_parser_free(p);
    gc_diags_destroy(&d);
  }
}
END_TEST

START_TEST(callback_stops_feeding) {
  struct gb_watch_parser *p = parser_new(0, 0);
  struct rec r = {{0}, 0, 2};
  ck_assert_int_eq(gb_watch_parser_feed(p, STREAM, strlen(STREAM), on_ev, &r, NULL), 77);
  ck_assert_int_eq(r.n, 2);
  gb_watch_parser_free(p);
}
END_TEST

START_TEST(event_byte_cap) {
  /* The first event is about 200 bytes: a 100-byte cap refuses it whatever
   * the chunking, while a cap of exactly its size accepts it. */
  const char *nl = strchr(STREAM, '\n');
  size_t first = (size_t)(nl - STREAM);
  for (int chunk = 1; chunk <= 7; chunk += 3) {
    struct gb_watch_parser *p = parser_new(100, 0);
    struct rec r = {{0}, 0, 0};
    struct gc_diags d;
    gc_diags_init(&d);
    int rc = 0;
    for (size_t off = 0; off < first && rc == 0; off += (size_t)chunk) {
      size_t n = first - off < (size_t)chunk ? first - off : (size_t)chunk;
      rc = gb_watch_parser_feed(p, STREAM + off, n, on_ev, &r, &d);
    }
    ck_assert_int_eq(rc, GC_ELIMIT);
    ck_assert_int_eq(r.n, 0);
    ck_assert_ptr_nonnull(strstr(d.msgs[0], "larger than 100 bytes"));
    gb_watch_parser_free(p);
    gc_diags_destroy(&d);
  }
  struct gb_watch_parser *p = parser_new(first, 0);
  struct rec r = {{0}, 0, 0};
  ck_assert_int_eq(gb_watch_parser_feed(p, STREAM, first + 1, on_ev, &r, NULL), 0);
  ck_assert_int_eq(r.n, 1);
  gb_watch_parser_free(p);
}
END_TEST

START_TEST(depth_cap) {
  char buf[400];
  size_t n = 0;
  n += (size_t)snprintf(buf, sizeof(buf), "{\"type\":\"ADDED\",\"object\":");
  for (int i = 0; i < 40; i++)
    buf[n++] = '[';
  buf[n] = 0;
  struct gb_watch_parser *p = parser_new(0, 16);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_watch_parser_feed(p, buf, n, on_ev, NULL, &d), GC_ELIMIT);
  ck_assert_uint_eq(d.errors, 1);
  gb_watch_parser_free(p);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(malformed_streams) {
  static const char *bad[] = {
      "{\"type\":\"ADDED\",\"object\":{}}}\n",  /* stray brace */
      "[1,2]\n",                                /* not an object */
      "{\"type\":\"ADDED\"}\n",                  /* no object */
      "{\"type\":7,\"object\":{}}\n",            /* type not a string */
      "{\"type\":\"RENAMED\",\"object\":{}}\n",  /* unknown type */
      "{\"type\":\"ADDED\",\"object\":[]}\n",    /* object not an object */
      "\x01\x02\n",                             /* garbage */
      "{\"type\":\"ADDED\",\"object\":{\"a\":tru}}\n",
      /* json-c 0.16 accepts this when a chunk ends right after the 3. */
      "{\"type\":\"ADDED\",\"object\":{\"a\":3-7}}\n",
      "{\"type\":\"ADDED\",\"object\":{\"a\":12345-7}}\n",
      /* json-c extensions that are not JSON. */
      "{\"type\":\"ADDED\",\"object\":{'a':1}}\n",
      "/* c */{\"type\":\"ADDED\",\"object\":{}}\n",
      /* Not numbers in JSON (json-c reads them without its strict mode), and
       * bytes that are not UTF-8 (Go never sends them). */
      "{\"type\":\"ADDED\",\"object\":{\"a\":NaN}}\n",
      "{\"type\":\"ADDED\",\"object\":{\"a\":-Infinity}}\n",
      "{\"type\":\"ADDED\",\"object\":{\"a\":nan}}\n",
      "{\"type\":\"ADDED\",\"object\":{\"a\":\"\xff\"}}\n",
      "{\"type\":\"ADDED\",\"object\":{\"a\":\"\xde\"}}\n",     /* cut short */
      "{\"type\":\"ADDED\",\"object\":{\"a\":\"\xc0\xaf\"}}\n", /* overlong */
      "{\"type\":\"ADDED\",\"object\":{\"a\":\"\xf5\x80\x80\x80\"}}\n",
      "{\"type\":\"ADDED\",\"object\":{\"a\":\xc3\xa9}}\n",       /* outside a string */
      /* A number too long to be a Kubernetes value (one element, split over two lines: the
       * parentheses say the concatenation is meant). */
      ("{\"type\":\"ADDED\",\"object\":{\"a\":"
       "1234567890123456789012345678901234567890123456789012345678901234}}\n"),
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
    for (size_t chunk = 1; chunk <= 40; chunk++) {
      struct gb_watch_parser *p = parser_new(0, 0);
      struct rec r = {{0}, 0, 0};
      struct gc_diags d;
      gc_diags_init(&d);
      int rc = 0;
      size_t len = strlen(bad[i]);
      for (size_t off = 0; off < len && rc == 0; off += chunk)
        rc = gb_watch_parser_feed(p, bad[i] + off, len - off < chunk ? len - off : chunk, on_ev,
                                  &r, &d);
      ck_assert_msg(rc == GC_EINVAL, "case %zu chunk %zu rc %d", i, chunk, rc);
      ck_assert_msg(d.errors == 1 && strstr(d.msgs[0], "watch stream"), "case %zu", i);
      if (strstr(bad[i], "-7"))
        ck_assert_int_eq(r.n, 0);
      gb_watch_parser_free(p);
      gc_diags_destroy(&d);
    }
}
END_TEST

/* Real-looking Pod events (managedFields, escapes, conditions, a
 * duplicate member, an ERROR): keep mode's objects are json-c's pruned. */
static const char POD_STREAM[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"w-0\","
    "\"namespace\":\"team\",\"uid\":\"u-1\",\"resourceVersion\":\"7\",\"labels\":{\"jobset."
    "sigs.k8s.io/jobset-name\":\"js\",\"app\":\"t\\u00e9\"},\"managedFields\":[{\"manager\":"
    "\"k\",\"fieldsV1\":{\"f:spec\":{\"f:x\":{}}}}]},\"spec\":{\"nodeName\":\"n-1\","
    "\"priority\":-12,\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"env\":[{\"name\":"
    "\"E\",\"value\":\"a\\\"b\"}],\"resources\":{\"requests\":{\"cpu\":\"4\",\"memory\":"
    "1.50e3}}}],\"tolerations\":[{\"key\":\"g\",\"operator\":\"Exists\"}],\"nodeName\":"
    "\"n-2\"},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
    "\"status\":\"True\"},{\"type\":\"PodScheduled\",\"status\":\"True\",\"message\":"
    "\"\\ud83d\\ude00 ok\"}]}}}\n"
    "{\"object\":{\"metadata\":{\"name\":\"w-0\",\"namespace\":\"team\",\"resourceVersion\""
    ":\"8\"},\"spec\":{\"containers\":[]}},\"type\":\"MODIFIED\"}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
    "\"details\":{\"causes\":[{\"field\":\"x\"}]}}}\n";

struct texts {
  char t[8][2048];
  size_t bytes[8];
  int n;
  const struct gb_keep *const *prune; /* prune the objects first (whole mode) */
  size_t n_prune;
};

static int on_text(void *arg, const struct gb_watch_event *ev) {
  struct texts *x = arg;
  json_object *o = json_object_get(ev->object);
  if (x->prune && ev->type != GB_WATCH_ERROR) {
    json_object *c = NULL;
    json_object_deep_copy(o, &c, NULL);
    json_object_put(o);
    o = c;
    gb_keep_prune(o, x->prune, x->n_prune);
  }
  x->bytes[x->n] = ev->bytes;
  snprintf(x->t[x->n++], sizeof(x->t[0]), "%s %s %s", gb_watch_type_name(ev->type),
           ev->rv ? ev->rv : "-", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return 0;
}

static void feed_all(struct gb_watch_parser *p, size_t chunk, struct texts *x) {
  size_t len = strlen(POD_STREAM);
  struct gc_diags d;
  gc_diags_init(&d);
  for (size_t off = 0; off < len; off += chunk) {
    int rc = gb_watch_parser_feed(p, POD_STREAM + off, len - off < chunk ? len - off : chunk,
                                  on_text, x, &d);
    ck_assert_msg(rc == 0, "chunk %zu: %s", chunk, d.n ? d.msgs[0] : "");
  }
  ck_assert_int_eq(gb_watch_parser_pending(p), 0);
  gc_diags_destroy(&d);
}

START_TEST(keep_mode_objects_are_json_c_pruned) {
  static const struct gb_keep keep[] = {
      {{"metadata", "name"}},         {{"metadata", "namespace"}},
      {{"metadata", "resourceVersion"}}, {{"metadata", "labels", "app"}},
      {{"spec", "nodeName"}},         {{"spec", "priority"}},
      {{"spec", "containers", "[]", "resources"}},
      {{"spec", "tolerations"}},      {{"status", "conditions", "[type=PodScheduled]", "type"}},
      {{"status", "conditions", "[type=PodScheduled]", "message"}}};
  const struct gb_keep *ptrs[10];
  for (size_t i = 0; i < 10; i++)
    ptrs[i] = &keep[i];
  for (size_t chunk = 1; chunk <= 700; chunk += chunk < 16 ? 1 : 97) {
    struct texts whole = {.prune = ptrs, .n_prune = 10}, kept = {0};
    struct gb_watch_parser *a = gb_watch_parser_new(0, 0), *b = gb_watch_parser_new(0, 0);
    ck_assert_int_eq(gb_watch_parser_set_keep(b, ptrs, 10), 0);
    feed_all(a, chunk, &whole);
    feed_all(b, chunk, &kept);
    ck_assert_int_eq(whole.n, 3);
    ck_assert_int_eq(kept.n, 3);
    const char *line = POD_STREAM;
    for (int i = 0; i < 3; i++) {
      ck_assert_str_eq(kept.t[i], whole.t[i]);
      /* Keep mode counts the event's own bytes (json-c may count the
       * white space after it, depending on where a chunk ended). */
      ck_assert_uint_eq(kept.bytes[i], strcspn(line, "\n"));
      line += strcspn(line, "\n") + 1;
    }
    ck_assert_ptr_nonnull(strstr(kept.t[0], "\"nodeName\":\"n-2\""));
    ck_assert_ptr_null(strstr(kept.t[0], "managedFields"));
    ck_assert_ptr_nonnull(strstr(kept.t[2], "causes")); /* an ERROR's Status whole */
    gb_watch_parser_free(a);
    gb_watch_parser_free(b);
  }
  /* A path of GB_KEEP_DEPTH steps leaves no room for "object": refused. */
  static const struct gb_keep deep = {{"a", "b", "c", "d", "e", "f"}};
  const struct gb_keep *dp = &deep;
  struct gb_watch_parser *p = gb_watch_parser_new(0, 0);
  ck_assert_int_eq(gb_watch_parser_set_keep(p, &dp, 1), GC_ELIMIT);
  gb_watch_parser_free(p);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kube_watch");
  TCase *tc = tcase_create("parser");
  tcase_add_loop_test(tc, every_chunk_size_same_events, 1, 8);
  tcase_add_test(tc, whole_buffer_and_partial_tail);
  tcase_add_test(tc, callback_stops_feeding);
  tcase_add_test(tc, numbers_across_chunks);
  tcase_add_test(tc, utf8_across_chunks);
  tcase_add_test(tc, event_byte_cap);
  tcase_add_test(tc, depth_cap);
  tcase_add_test(tc, malformed_streams);
  tcase_add_test(tc, keep_mode_objects_are_json_c_pruned);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  int failed = 0;
  for (keep_mode = 0; keep_mode <= 1; keep_mode++) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    failed += srunner_ntests_failed(sr);
    srunner_free(sr);
  }
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
