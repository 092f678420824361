/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_jscan, the pull scanner: strings skipped 8 bytes at a time must
 * stop exactly at a quote, a backslash or a control byte wherever it falls
 * in the word; escapes decode as Go decodes them; the grammar is enforced
 * in skipped values (numbers, literals, commas, colons); nesting is
 * bounded; keys match as Go's decoder matches struct fields; and the edges
 * are Go's encoding/json's (escaped keys, trailing data, invalid UTF-8,
 * NaN, ranges checked before any cast).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gb_buf.h"
#include "gb_jscan.h"

static int skip_all(const char *text, char *msg, size_t size) {
  struct gb_sj s;
  gb_sj_init(&s, text, strlen(text));
  int rc = gb_sj_skip(&s, NULL);
  if (rc == 0)
    rc = gb_sj_finish(&s);
  snprintf(msg, size, "%s", s.msg);
  return rc;
}

START_TEST(specials_at_every_offset) {
  /* A quote, an escape and a control byte at offsets 0..23 of a string. */
  for (int off = 0; off < 24; off++) {
    char text[64], msg[GB_SJ_MSG_MAX];
    memset(text, 'a', sizeof(text));
    text[0] = '"';
    text[1 + off] = '"';
    text[2 + off] = '\0';
    ck_assert_msg(skip_all(text, msg, sizeof(msg)) == 0, "off %d: %s", off, msg);
    memset(text, 'a', sizeof(text));
    text[0] = '"';
    memcpy(text + 1 + off, "\\\"x\"", 5); /* an escaped quote, then the end */
    ck_assert_msg(skip_all(text, msg, sizeof(msg)) == 0, "escaped quote at %d: %s", off, msg);
    struct gb_sj s;
    gb_sj_init(&s, text, strlen(text));
    char out[64];
    ck_assert_int_eq(gb_sj_string(&s, "v", out, sizeof(out)), 0);
    ck_assert_int_eq(strlen(out), (size_t)off + 2);
    ck_assert(out[off] == '"' && out[off + 1] == 'x');
    memset(text, 'a', sizeof(text));
    text[0] = '"';
    text[1 + off] = '\n';
    text[2 + off] = '"';
    text[3 + off] = '\0';
    ck_assert_int_eq(skip_all(text, msg, sizeof(msg)), GC_EINVAL);
    char want[64];
    snprintf(want, sizeof(want), "body:1:%d: control character in string", off + 2);
    ck_assert_str_eq(msg, want);
  }
}
END_TEST

START_TEST(escapes_decode_like_go) {
  const char *text = "\"a\\u00e9\\ud83d\\ude00\\n\\/\\\\\"";
  struct gb_sj s;
  gb_sj_init(&s, text, strlen(text));
  char out[32];
  ck_assert_int_eq(gb_sj_string(&s, "v", out, sizeof(out)), 0);
  ck_assert_str_eq(out, "a\xc3\xa9\xf0\x9f\x98\x80\n/\\");
  char msg[GB_SJ_MSG_MAX];
  ck_assert_int_eq(skip_all("\"\\q\"", msg, sizeof(msg)), GC_EINVAL);
  ck_assert_str_eq(msg, "body:1:2: invalid escape in string");
  ck_assert_int_eq(skip_all("\"\\u12g4\"", msg, sizeof(msg)), GC_EINVAL);
  ck_assert_str_eq(msg, "body:1:2: invalid \\u escape in string");
  ck_assert_int_eq(skip_all("\"abc\\", msg, sizeof(msg)), GC_EINVAL);
  ck_assert_str_eq(msg, "body:1:5: unterminated string");
  /* Too long for the buffer: GC_ELIMIT naming the field. */
  gb_sj_init(&s, "\"abcdef\"", 8);
  ck_assert_int_eq(gb_sj_string(&s, "task.UID", out, 4), GC_ELIMIT);
  ck_assert_str_eq(s.msg, "body:1:1: task.UID: longer than 3 bytes");
}
END_TEST

START_TEST(grammar_in_skipped_values) {
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"{\"a\":01}", "body:1:7: expected ',' or '}'"},
      {"{\"a\":-}", "body:1:6: invalid number"},
      {"{\"a\":1.}", "body:1:6: invalid number"},
      {"{\"a\":1e}", "body:1:6: invalid number"},
      {"{\"a\" 1}", "body:1:6: expected ':' after a member name"},
      {"{\"a\":1 \"b\":2}", "body:1:8: expected ',' or '}'"},
      {"[1,]", "body:1:4: trailing comma"},
      {"[1 2]", "body:1:4: expected ',' or ']'"},
      {"{a:1}", "body:1:2: expected a member name"},
      {"[nul]", "body:1:2: invalid literal"},
      {"[1]]", "body:1:4: unexpected data after the JSON value"},
      {"{\"a\":[{}", "body:1:9: unexpected end of body"},
  };
  char msg[GB_SJ_MSG_MAX];
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    ck_assert_msg(skip_all(bad[i].text, msg, sizeof(msg)) < 0, "%s accepted", bad[i].text);
    ck_assert_msg(!strcmp(msg, bad[i].msg), "%s: %s", bad[i].text, msg);
  }
  ck_assert_int_eq(
      skip_all(" {\"a\" : [ -1.5e+3 , true, false, null, \"\", {} ] }\n", msg, sizeof(msg)), 0);
}
END_TEST

START_TEST(depth_bounded) {
  char deep[GB_SJ_MAX_DEPTH * 2 + 8];
  size_t n = 0;
  for (int i = 0; i <= GB_SJ_MAX_DEPTH; i++)
    deep[n++] = '[';
  for (int i = 0; i <= GB_SJ_MAX_DEPTH; i++)
    deep[n++] = ']';
  deep[n] = '\0';
  char msg[GB_SJ_MSG_MAX];
  ck_assert_int_eq(skip_all(deep, msg, sizeof(msg)), GC_ELIMIT);
  ck_assert_str_eq(msg, "body:1:257: nesting deeper than 256");
  deep[0] = ' '; /* one level less: accepted */
  deep[n - 1] = ' ';
  ck_assert_int_eq(skip_all(deep, msg, sizeof(msg)), 0);
}
END_TEST

START_TEST(keys_fold_like_go) {
  struct gb_sj_span k = {"nodeNAME", 8};
  ck_assert(gb_sj_key_is(&k, "NodeName"));
  ck_assert(!gb_sj_key_is(&k, "NodeNam"));
  /* Go folds field names with unicode.ToUpper(unicode.ToLower(r)): the
   * long s, the Kelvin sign and both Turkish i fold to ASCII letters. */
  struct gb_sj_span ks = {"ta\xc5\xbf\xe2\x84\xaa", 7};
  ck_assert(gb_sj_key_is(&ks, "task"));
  struct gb_sj_span ki = {"U\xc4\xb0" "D", 4}, kd = {"u\xc4\xb1" "d", 4};
  ck_assert(gb_sj_key_is(&ki, "UID") && gb_sj_key_is(&kd, "UID"));
  struct gb_sj_span ke = {"\xc3\xa9", 2};
  ck_assert(!gb_sj_key_is(&ke, "e"));
}
END_TEST

static char upper_ascii(unsigned char c) { return (char)(c >= 'a' && c <= 'z' ? c - 32 : c); }

/* Go's field-name match, written plainly: each letter of the name against
 * one rune of the key, ASCII case folded, and the four runes beyond ASCII
 * that fold to S, K and I. */
static int ref_key_is(const char *k, size_t len, const char *name) {
  size_t i = 0;
  for (size_t j = 0; name[j]; j++) {
    char w = upper_ascii((unsigned char)name[j]);
    if (i >= len)
      return 0;
    if ((unsigned char)k[i] < 0x80) {
      if (upper_ascii((unsigned char)k[i]) != w)
        return 0;
      i++;
    } else if (w == 'S' && len - i >= 2 && !memcmp(k + i, "\xc5\xbf", 2)) {
      i += 2;
    } else if (w == 'K' && len - i >= 3 && !memcmp(k + i, "\xe2\x84\xaa", 3)) {
      i += 3;
    } else if (w == 'I' && len - i >= 2 &&
               (!memcmp(k + i, "\xc4\xb0", 2) || !memcmp(k + i, "\xc4\xb1", 2))) {
      i += 2;
    } else {
      return 0;
    }
  }
  return i == len;
}

/* gb_sj_key_is answers from a key's first byte when it can: every first
 * byte (and the folding runes in its place), before names of each kind,
 * with the rest of the key equal, longer, shorter or folded, agrees with
 * the plain reference. */
START_TEST(key_first_byte_like_reference) {
  static const char *const names[] = {"task", "Name", "UID", "k8s", "_x", "@", "Status", "z"};
  static const char *const firsts[] = {"\xc5\xbf", "\xe2\x84\xaa", "\xc4\xb0", "\xc4\xb1",
                                       "\xc3\xa9"};
  for (size_t ni = 0; ni < sizeof(names) / sizeof(names[0]); ni++) {
    const char *name = names[ni];
    for (int b = 0; b < 256 + 5; b++) {
      for (int form = 0; form < 4; form++) {
        char key[32];
        size_t n = 0;
        if (b < 256) {
          key[n++] = (char)b;
        } else {
          memcpy(key, firsts[b - 256], strlen(firsts[b - 256]));
          n = strlen(firsts[b - 256]);
        }
        const char *rest = name + 1;
        if (form == 0 || form == 1) {
          memcpy(key + n, rest, strlen(rest)); /* the rest equal */
          n += strlen(rest);
        }
        if (form == 1)
          key[n++] = 'x'; /* longer */
        if (form == 3 && strlen(rest) > 0) {
          memcpy(key + n, rest, strlen(rest) - 1); /* shorter */
          n += strlen(rest) - 1;
        }
        struct gb_sj_span k = {key, n};
        ck_assert_msg(gb_sj_key_is(&k, name) == ref_key_is(key, n, name),
                      "name %s, first byte %d, form %d: %d", name, b, form, gb_sj_key_is(&k, name));
      }
    }
  }
}
END_TEST

/* Integer literals read as doubles are the doubles strtod reads (small
 * ones take a shorter way): the same bits, the sign of zero too. */
START_TEST(doubles_like_strtod) {
  static const char *const texts[] = {"0",
                                      "-0",
                                      "1",
                                      "-1",
                                      "16000",
                                      "137438953472",
                                      "999999999999999",
                                      "-999999999999999",
                                      "1000000000000000",
                                      "9007199254740993",
                                      "18446744073709551617",
                                      "123456789012345678901234567890",
                                      "1.5",
                                      "1e3",
                                      "-0.0"};
  uint64_t x = 88172645463325252ULL;
  for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]) + 2000; i++) {
    char text[64];
    if (i < sizeof(texts) / sizeof(texts[0])) {
      snprintf(text, sizeof(text), "%s", texts[i]);
    } else {
      x ^= x << 13; /* xorshift: integers of every length up to 19 digits */
      x ^= x >> 7;
      x ^= x << 17;
      unsigned digits = 1 + (unsigned)(x % 19);
      unsigned long long v = x % 10000000000000000000ULL;
      snprintf(text, sizeof(text), "%s%llu", (x >> 60) & 1 ? "-" : "", v);
      text[digits + ((x >> 60) & 1)] = '\0';
    }
    struct gb_sj s;
    gb_sj_init(&s, text, strlen(text));
    double got, want = strtod(text, NULL);
    ck_assert_int_eq(gb_sj_double(&s, "n", &got), 0);
    ck_assert_msg(!memcmp(&got, &want, sizeof(got)), "%s: %.17g, strtod %.17g", text, got, want);
  }
}
END_TEST

/* Reads {"<key>":"v"} and says whether the key matched name. */
static int key_matches(const char *text, const char *name) {
  struct gb_sj s;
  struct gb_sj_span k;
  gb_sj_init(&s, text, strlen(text));
  ck_assert_int_eq(gb_sj_object_begin(&s, "x"), 0);
  ck_assert_int_eq(gb_sj_object_next(&s, &k), 1);
  return gb_sj_key_is(&k, name);
}

/* The issue's cases, each checked against what Go's encoding/json does. */
START_TEST(go_edges) {
  /* Escaped keys are decoded before they are matched. */
  ck_assert(key_matches("{\"t\\u0061sk\":1}", "task"));
  ck_assert(key_matches("{\"\\u0054ASK\":1}", "task"));
  ck_assert(key_matches("{\"jobset.sigs.k8s.io\\/jobset-name\":1}",
                        "jobset.sigs.k8s.io/jobset-name"));
  ck_assert(!key_matches("{\"t\\u0061s\":1}", "task"));
  /* Trailing data after the value, a NUL byte too, is refused. */
  char msg[GB_SJ_MSG_MAX];
  struct gb_sj s;
  static const char nul[] = "{}\0garbage";
  gb_sj_init(&s, nul, sizeof(nul) - 1);
  ck_assert_int_eq(gb_sj_skip(&s, NULL), 0);
  ck_assert_int_eq(gb_sj_finish(&s), GC_EINVAL);
  ck_assert_str_eq(s.msg, "body:1:3: unexpected data after the JSON value");
  ck_assert_int_eq(skip_all("{} x", msg, sizeof(msg)), GC_EINVAL);
  /* Invalid UTF-8 reads as U+FFFD per bad byte, as Go reads it. */
  char out[64];
  gb_sj_init(&s, "\"a\xff\xc3\x28" "b\xed\xa0\x80\"", 10);
  ck_assert_int_eq(gb_sj_string(&s, "v", out, sizeof(out)), 0);
  ck_assert_str_eq(out, "a\xef\xbf\xbd\xef\xbf\xbd(" "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  ck_assert_int_eq(s.bad_utf8, 1);
  /* A lone surrogate escape is U+FFFD too; valid UTF-8 stays as it is. */
  gb_sj_init(&s, "\"\\ud800x\xc3\xa9\"", 12);
  ck_assert_int_eq(gb_sj_string(&s, "v", out, sizeof(out)), 0);
  ck_assert_str_eq(out, "\xef\xbf\xbd" "x\xc3\xa9");
  /* A skipped span is never echoed with the bad bytes. */
  static const char body[] = "[\"\xfe\",\"ok\"]";
  struct gb_sj_span span;
  gb_sj_init(&s, body, sizeof(body) - 1);
  ck_assert_int_eq(gb_sj_skip(&s, &span), 0);
  struct gb_buf b;
  gb_buf_init(&b, 1024);
  ck_assert_int_eq(gb_sj_add_span(&b, s.bad_utf8, &span), 0);
  ck_assert_str_eq(gb_buf_ptr(&b), "[\"\xef\xbf\xbd\",\"ok\"]");
  gb_buf_free(&b);
  /* NaN and Infinity are not numbers, and the message says so. */
  double d;
  gb_sj_init(&s, "NaN", 3);
  ck_assert_int_eq(gb_sj_double(&s, "n", &d), GC_EINVAL);
  ck_assert_str_eq(s.msg, "body:1:1: n: expected a number, found an invalid character");
  ck_assert_int_eq(skip_all("[Infinity]", msg, sizeof(msg)), GC_EINVAL);
  ck_assert_str_eq(msg, "body:1:2: unexpected character 'I'");
  ck_assert_int_eq(skip_all("[-Infinity]", msg, sizeof(msg)), GC_EINVAL);
}
END_TEST

START_TEST(numbers) {
  struct gb_sj s;
  int64_t v;
  /* Exact, as strconv.ParseInt (no trip through a double). */
  gb_sj_init(&s, "9007199254740993", 16);
  ck_assert_int_eq(gb_sj_int(&s, "n", &v), 0);
  ck_assert(v == 9007199254740993LL);
  gb_sj_init(&s, "-9223372036854775808", 20);
  ck_assert_int_eq(gb_sj_int(&s, "n", &v), 0);
  ck_assert(v == INT64_MIN);
  /* Ranges are checked on the text, before any conversion: 1e300 and
   * 9223372036854775808 used to be cast from a double first. */
  static const char *const bad[] = {"1e300", "1e400", "9223372036854775808", "1.0", "1e3",
                                    "-9223372036854775809"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    gb_sj_init(&s, bad[i], strlen(bad[i]));
    ck_assert_msg(gb_sj_int(&s, "n", &v) == GC_EINVAL, "%s accepted", bad[i]);
    char want[128];
    snprintf(want, sizeof(want),
             "body:1:1: n: number %s is not an integer in [-9223372036854775808, "
             "9223372036854775807]",
             bad[i]);
    ck_assert_str_eq(s.msg, want);
  }
  /* An int32 field (Priority, MinAvailable). */
  gb_sj_init(&s, "2147483648", 10);
  ck_assert_int_eq(gb_sj_int_range(&s, "job.Priority", INT32_MIN, INT32_MAX, &v), GC_EINVAL);
  ck_assert_str_eq(s.msg,
                   "body:1:1: job.Priority: number 2147483648 is not an integer in [-2147483648, "
                   "2147483647]");
  gb_sj_init(&s, "null", 4);
  ck_assert_int_eq(gb_sj_int(&s, "n", &v), 0);
  ck_assert_int_eq(v, 0);
  /* float64 fields: overflow refused, underflow rounds to 0 (as Go). */
  double d;
  gb_sj_init(&s, "1e400", 5);
  ck_assert_int_eq(gb_sj_double(&s, "n", &d), GC_EINVAL);
  ck_assert_str_eq(s.msg, "body:1:1: n: number 1e400 out of range of float64");
  gb_sj_init(&s, "1e-400", 6);
  ck_assert_int_eq(gb_sj_double(&s, "n", &d), 0);
  ck_assert(d == 0);
}
END_TEST


/* ---- A reference for the skip: the JSON grammar as Go's decoder takes it,
 * written plainly (recursive, a byte at a time), to hold the one-loop skip
 * to exactly the same acceptance. */
static const char *ref_value(const char *p, const char *end, int depth);

static const char *ref_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
    p++;
  return p;
}

static int ref_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static const char *ref_string(const char *p, const char *end) {
  for (p++; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"')
      return p + 1;
    if (c < 0x20)
      return NULL;
    if (c != '\\')
      continue; /* bytes above 0x7f: accepted, valid UTF-8 or not (Go reads U+FFFD) */
    if (++p >= end)
      return NULL;
    if (*p == 'u') {
      for (int i = 1; i <= 4; i++)
        if (p + i >= end || !ref_hex(p[i]))
          return NULL;
      p += 4;
    } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
      return NULL;
    }
  }
  return NULL;
}

static const char *ref_digits(const char *p, const char *end) {
  if (p >= end || *p < '0' || *p > '9')
    return NULL;
  while (p < end && *p >= '0' && *p <= '9')
    p++;
  return p;
}

static const char *ref_number(const char *p, const char *end) {
  if (p < end && *p == '-')
    p++;
  if (p < end && *p == '0')
    p++;
  else if (!(p = ref_digits(p, end)))
    return NULL;
  if (p < end && *p == '.' && !(p = ref_digits(p + 1, end)))
    return NULL;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-'))
      p++;
    p = ref_digits(p, end);
  }
  return p;
}

static const char *ref_items(const char *p, const char *end, int depth, char close) {
  p = ref_ws(p + 1, end);
  if (p < end && *p == close)
    return p + 1;
  for (;;) {
    if (close == '}') {
      if (p >= end || *p != '"' || !(p = ref_string(p, end)))
        return NULL;
      p = ref_ws(p, end);
      if (p >= end || *p != ':')
        return NULL;
      p++;
    }
    if (!(p = ref_value(p, end, depth + 1)))
      return NULL;
    p = ref_ws(p, end);
    if (p < end && *p == close)
      return p + 1;
    if (p >= end || *p != ',')
      return NULL;
    p = ref_ws(p + 1, end);
  }
}

static const char *ref_value(const char *p, const char *end, int depth) {
  p = ref_ws(p, end);
  if (p >= end)
    return NULL;
  switch (*p) {
  case '"': return ref_string(p, end);
  case '{':
  case '[': return depth >= GB_SJ_MAX_DEPTH ? NULL : ref_items(p, end, depth, *p == '{' ? '}' : ']');
  case 't': return end - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
  case 'f': return end - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
  case 'n': return end - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
  default: return *p == '-' || (*p >= '0' && *p <= '9') ? ref_number(p, end) : NULL;
  }
}

static int ref_valid(const char *text, size_t len) {
  const char *p = ref_value(text, text + len, 0);
  return p && ref_ws(p, text + len) == text + len;
}

/* Every byte of a body that uses every part of the grammar, replaced by
 * each byte that matters to it (and deleted, and the body cut there): the
 * one-loop skip accepts exactly what the reference accepts. */
START_TEST(skip_matches_reference) {
  static const char seed[] =
      "{\"a\":[1,-2.5e+3,0,true,false,null,\"x\\\"y\\u00e9\\\\\"],\"k\\u0061\":{\"b\":{}},"
      "\"c\":[],\"d\":\"\xc3\xa9\xff plain text long enough for sixteen bytes\",\"e\":-0.0E-1,"
      "\"f\":[[[{\"g\":\"h\"}]]], \"i\" : [ 1 , { } ] }";
  static const char subst[] = "\"\\{}[],:0-1e.E+tfnu \t\x01\xff\xc3/a";
  size_t n = sizeof(seed) - 1;
  char *buf = malloc(n + 2);
  char msg[GB_SJ_MSG_MAX];
  ck_assert(ref_valid(seed, n));
  ck_assert_int_eq(skip_all(seed, msg, sizeof(msg)), 0);
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; k <= sizeof(subst); k++) {
      size_t len = n;
      memcpy(buf, seed, n);
      if (k < sizeof(subst) - 1) {
        buf[i] = subst[k]; /* replaced */
      } else if (k == sizeof(subst) - 1) {
        memmove(buf + i, buf + i + 1, n - i - 1); /* deleted */
        len = n - 1;
      } else {
        len = i; /* cut */
      }
      buf[len] = '\0';
      struct gb_sj s;
      gb_sj_init(&s, buf, len);
      int rc = gb_sj_skip(&s, NULL);
      if (rc == 0)
        rc = gb_sj_finish(&s);
      ck_assert_msg((rc == 0) == ref_valid(buf, len), "offset %zu, case %zu: skip %d, reference %d",
                    i, k, rc, ref_valid(buf, len));
      ck_assert_msg(rc == 0 || s.msg[0], "offset %zu, case %zu: refused without a message", i, k);
    }
  }
  free(buf);
}
END_TEST

/* Walks an object with gb_sj_object_next (each value skipped), the keys
 * joined by '|' into keys.  Returns 0 or the scanner's code. */
static int walk_keys(const char *text, size_t len, char *keys, size_t size, char *msg, size_t msz) {
  struct gb_sj s;
  struct gb_sj_span k;
  size_t used = 0;
  int rc;
  gb_sj_init(&s, text, len);
  keys[0] = '\0';
  if ((rc = gb_sj_object_begin(&s, "x")) == 0) {
    while ((rc = gb_sj_object_next(&s, &k)) == 1) {
      used += (size_t)snprintf(keys + used, size - used, "%.*s|", (int)k.len, k.p);
      ck_assert(used < size);
      if ((rc = gb_sj_skip(&s, NULL)) < 0)
        break;
    }
  }
  if (rc == 0)
    rc = gb_sj_finish(&s);
  snprintf(msg, msz, "%s", s.msg);
  return rc;
}

/* Member names are read plainly when Go would have written them (plain
 * bytes, the colon right after the quote) and the general way otherwise:
 * the keys come out decoded either way, and every body made from the seed
 * by replacing, deleting or cutting a byte is taken exactly when the
 * reference grammar takes it, and refused with a message otherwise. */
START_TEST(object_keys_like_reference) {
  static const char seed[] =
      "{\"plain\":1,\"esc\\\"aped\":[2],\"sp\" : 3,\"\":{\"in\":4},"
      "\"a key long enough to cross sixteen bytes\":5,\"\xc3\xa9t\xc3\xa9\":\"x\",\"t\\u0061sk\":6,"
      "\"last\":null}";
  static const char subst[] = "\"\\{}[],: a\x01\xff";
  size_t n = sizeof(seed) - 1;
  char keys[512], msg[GB_SJ_MSG_MAX];
  ck_assert(ref_valid(seed, n));
  ck_assert_int_eq(walk_keys(seed, n, keys, sizeof(keys), msg, sizeof(msg)), 0);
  ck_assert_str_eq(keys, "plain|esc\"aped|sp||a key long enough to cross sixteen bytes|"
                         "\xc3\xa9t\xc3\xa9|task|last|");
  char *buf = malloc(n + 1);
  for (size_t i = 0; i < n; i++) {
    for (size_t c = 0; c <= sizeof(subst); c++) {
      size_t len = n;
      memcpy(buf, seed, n);
      if (c < sizeof(subst) - 1) {
        buf[i] = subst[c];
      } else if (c == sizeof(subst) - 1) {
        memmove(buf + i, buf + i + 1, n - i - 1);
        len = n - 1;
      } else {
        len = i;
      }
      int rc = walk_keys(buf, len, keys, sizeof(keys), msg, sizeof(msg));
      ck_assert_msg((rc == 0) == ref_valid(buf, len), "offset %zu, case %zu: walk %d, reference %d",
                    i, c, rc, ref_valid(buf, len));
      ck_assert_msg(rc == 0 || msg[0], "offset %zu, case %zu: refused without a message", i, c);
    }
  }
  free(buf);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sched_json");
  TCase *tc = tcase_create("scanner");
  tcase_add_test(tc, specials_at_every_offset);
  tcase_add_test(tc, escapes_decode_like_go);
  tcase_add_test(tc, grammar_in_skipped_values);
  tcase_add_test(tc, depth_bounded);
  tcase_add_test(tc, keys_fold_like_go);
  tcase_add_test(tc, key_first_byte_like_reference);
  tcase_add_test(tc, doubles_like_strtod);
  tcase_add_test(tc, object_keys_like_reference);
  tcase_add_test(tc, numbers);
  tcase_add_test(tc, go_edges);
  tcase_add_test(tc, skip_matches_reference);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
