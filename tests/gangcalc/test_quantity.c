/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gc_quantity.  Known (input -> canonical) pairs come from
 * apimachinery's own tests, k8s.io/apimachinery/pkg/api/resource/
 * quantity_test.go: TestQuantityParseEmit (string pairs, also negated),
 * TestQuantityString (the "alternate" spelling -> canonical, and every
 * canonical spelling re-parsing to itself), TestQuantityParse (the expected
 * value of each input, printed by CanonicalizeBytes' rules), TestQuantityCmp*
 * and TestAdd/TestSub/TestMul.  Pairs marked "issue" are the literals of the
 * gangbridge issue and Kubeflow Trainer's tests (1.25 -> 1250m, ...).
 */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_quantity.h"
#include "gc_quantity_test.h"
#include "gc_value.h"

static struct gc_quantity P(const char *s) {
  struct gc_quantity q;
  int rc = gc_quantity_parse(s, strlen(s), &q);
  ck_assert_msg(rc == 0, "parse(\"%s\") = %d", s, rc);
  return q;
}

static const char *F(const struct gc_quantity *q, char *buf) {
  int rc = gc_quantity_format(q, buf, GC_QUANTITY_BUFSZ);
  ck_assert_int_eq(rc, 0);
  return buf;
}

static struct gc_quantity Q(int64_t mant, int32_t scale, enum gc_qformat f) {
  struct gc_quantity q = {mant, scale, f};
  return q;
}

struct pair {
  const char *in;
  const char *out;
};

static const struct pair canonical_pairs[] = {
    /* issue / Trainer literals */
    {"1.25", "1250m"},
    {"2.5Gi", "2560Mi"},
    {"0.5Gi", "512Mi"},
    {"1000", "1k"},
    {"1024", "1024"},
    {"1.5Ki", "1536"},
    {"100m", "100m"},
    {"0.1", "100m"},
    {"1e3", "1e3"},
    {"1E3", "1e3"},
    {"12e6", "12e6"},
    {"-1", "-1"},
    {"0", "0"},
    /* TestQuantityParseEmit */
    {"1Ki", "1Ki"},
    {"1Mi", "1Mi"},
    {"1Gi", "1Gi"},
    {"1024Mi", "1Gi"},
    {"1000M", "1G"},
    {".001Ki", "1024m"},
    {".000001Ki", "1024u"},
    {".000000001Ki", "1024n"},
    {".000000000001Ki", "2n"},
    {"-1Ki", "-1Ki"},
    {"-1Mi", "-1Mi"},
    {"-1Gi", "-1Gi"},
    {"-1024Mi", "-1Gi"},
    {"-1000M", "-1G"},
    {"-.001Ki", "-1024m"},
    {"-.000001Ki", "-1024u"},
    {"-.000000001Ki", "-1024n"},
    {"-.000000000001Ki", "-2n"},
    /* TestQuantityString: alternate spelling -> canonical */
    {"307200Ki", "300Mi"},
    {"5000m", "5"},
    {"0.5", "500m"},
    {"0.001T", "1G"},
    {"1000u", "1m"},
    {"1.08", "1080m"},
    {"1080000000n", "1080m"},
    {"1000E", "1e21"},
    {"5000E", "5e21"},
    {"1000000E", "1e24"},
    {".001e12", "1e9"},
    {"0.001e0", "1e-3"},
    {"1000e-12", "1e-9"},
    {"00", "0"},
    /* TestQuantityString: canonical spellings re-parse to themselves */
    {"6Ki", "6Ki"},
    {"1001Gi", "1001Gi"},
    {"1Ti", "1Ti"},
    {"80m", "80m"},
    {"300M", "300M"},
    {"1T", "1T"},
    {"1E", "1E"},
    {"1234567M", "1234567M"},
    {"3k", "3k"},
    {"1025", "1025"},
    {"80e-3", "80e-3"},
    {"300e6", "300e6"},
    {"1e12", "1e12"},
    {"3e3", "3e3"},
    {"1n", "1n"},
    {"80n", "80n"},
    {"1080n", "1080n"},
    {"1u", "1u"},
    {"80u", "80u"},
    {"1080u", "1080u"},
    /* TestQuantityParse: expected values, printed canonically */
    {"0n", "0"},
    {"0Ki", "0"},
    {"8Ki", "8Ki"},
    {"7Mi", "7Mi"},
    {"3Ei", "3Ei"},
    {"100Ti", "100Ti"},
    {"50k", "50k"},
    {"40T", "40T"},
    {"300T", "300T"},
    {"2P", "2P"},
    {"1E-3", "1e-3"},
    {"1E18", "1e18"},
    {"1e14", "100e12"},
    {"100.035k", "100035"},
    {"0.0005k", "500m"},
    {"0.00500", "5m"},
    {"0.5e0", "500e-3"},
    {"0.5e-2", "5e-3"},
    {"10.035M", "10035k"},
    {"1.2e3", "1200"},
    {"1.3E+6", "1300e3"},
    {"1.40e9", "1400e6"},
    {"1.53E12", "1530e9"},
    {"1.7E18", "1700e15"},
    {"9.01", "9010m"},
    {"8.1k", "8100"},
    {"7.123456M", "7123456"},
    {"6.987654321G", "6987654321"},
    {"5.444T", "5444G"},
    {"40.1T", "40100G"},
    {"2.5P", "2500T"},
    {"1.01E", "1010P"},
    {"3.001n", "4n"},
    {"1.1E-9", "2e-9"},
    {"0.0000000001", "1n"},
    {"0.0000000005", "1n"},
    {"0.5e-9", "1e-9"},
    {"0.9n", "1n"},
    {"0.00000012345", "124n"},
    {"0.00000012354", "124n"},
    {"9Ei", "9223372036854775807"},
    {"9223372036854775807Ki", "9223372036854775807"},
    {"12E", "12E"},
    {"100.035Ki", "102435840m"},
    {"0.5Mi", "512Ki"},
    {"0.05Gi", "53687091200m"},
    {"0.025Ti", "27487790694400m"},
    {"0.000000000001Ki", "2n"},
    {".001", "1m"},
    {".0001k", "100m"},
    {"1.", "1"},
    {"1.G", "1G"},
    /* explicit '+' (TestQuantityParse runs every input with "+") */
    {"+1.5Gi", "1536Mi"},
    {"+100m", "100m"},
};

START_TEST(test_canonical_pairs) {
  char buf[GC_QUANTITY_BUFSZ];
  size_t n = sizeof(canonical_pairs) / sizeof(canonical_pairs[0]);
  ck_assert_uint_ge(n, 60);
  for (size_t i = 0; i < n; i++) {
    struct gc_quantity q = P(canonical_pairs[i].in);
    F(&q, buf);
    ck_assert_msg(strcmp(buf, canonical_pairs[i].out) == 0, "%s -> %s, want %s",
                  canonical_pairs[i].in, buf, canonical_pairs[i].out);
    /* The canonical string must parse back to an equal value and itself. */
    struct gc_quantity r = P(buf);
    ck_assert_int_eq(gc_quantity_cmp(&q, &r), 0);
    char again[GC_QUANTITY_BUFSZ];
    F(&r, again);
    ck_assert_str_eq(again, buf);
  }
}
END_TEST

/* TestQuantityString: a value in a given format prints as expected. */
START_TEST(test_string_from_values) {
  static const struct {
    int64_t mant;
    int32_t scale;
    enum gc_qformat f;
    const char *out;
  } t[] = {
      {1024LL * 1024 * 1024, 0, GC_QF_BINARY_SI, "1Gi"},
      {300LL * 1024 * 1024, 0, GC_QF_BINARY_SI, "300Mi"},
      {5, 0, GC_QF_BINARY_SI, "5"},
      {500, -3, GC_QF_BINARY_SI, "500m"},
      {1000, 6, GC_QF_DECIMAL_SI, "1G"},
      {1000000, 3, GC_QF_DECIMAL_SI, "1G"},
      {108, -2, GC_QF_DECIMAL_SI, "1080m"},
      {10800, -4, GC_QF_DECIMAL_SI, "1080m"},
      {1, 21, GC_QF_DECIMAL_SI, "1e21"},
      {1234567, -3, GC_QF_BINARY_SI, "1234567m"},
      {0, 0, GC_QF_BINARY_SI, "0"},
      {0, 0, GC_QF_DECIMAL_EXPONENT, "0"},
      {1, 9, GC_QF_DECIMAL_EXPONENT, "1e9"},
      {80, -3, GC_QF_DECIMAL_EXPONENT, "80e-3"},
      {108, -8, GC_QF_DECIMAL_SI, "1080n"},
      {10800, -10, GC_QF_DECIMAL_SI, "1080n"},
      {901, -2, GC_QF_DECIMAL_SI, "9010m"},
      {-901, -2, GC_QF_DECIMAL_SI, "-9010m"}, /* TestQuantityNeg */
      /* TestMilliNewSet / TestNewSet / TestNewScaledSet */
      {1024, -3, GC_QF_BINARY_SI, "1024m"},
      {1024 * 1024, -3, GC_QF_BINARY_SI, "1048576m"},
      {1234000, -3, GC_QF_DECIMAL_SI, "1234"},
      {1234000, 0, GC_QF_DECIMAL_SI, "1234k"},
      {1024, 0, GC_QF_BINARY_SI, "1Ki"},
      {1000000, 0, GC_QF_DECIMAL_EXPONENT, "1e6"},
      {1000000, -3, GC_QF_DECIMAL_EXPONENT, "1e3"},
      {1000, -9, GC_QF_DECIMAL_SI, "1u"},
      /* 2^63 - 1 is odd: no binary suffix */
      {INT64_MAX, 0, GC_QF_BINARY_SI, "9223372036854775807"},
      {INT64_MIN, 0, GC_QF_BINARY_SI, "-8Ei"},
      {INT64_MIN, -3, GC_QF_DECIMAL_SI, "-9223372036854775808m"},
      /* binary value with a fraction above 1024 falls back to DecimalSI */
      {10245, -1, GC_QF_BINARY_SI, "1024500m"},
      {-10235, -1, GC_QF_BINARY_SI, "-1023500m"},
  };
  char buf[GC_QUANTITY_BUFSZ];
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    struct gc_quantity q = Q(t[i].mant, t[i].scale, t[i].f);
    ck_assert_msg(strcmp(F(&q, buf), t[i].out) == 0, "case %zu: %s, want %s", i, buf, t[i].out);
  }
}
END_TEST

START_TEST(test_parse_formats) {
  ck_assert_int_eq(P("1").format, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(P("1Ki").format, GC_QF_BINARY_SI);
  ck_assert_int_eq(P("1e3").format, GC_QF_DECIMAL_EXPONENT);
  ck_assert_int_eq(P("0Mi").format, GC_QF_BINARY_SI);
  ck_assert_int_eq(P("1.5Ki").format, GC_QF_BINARY_SI);
  /* 0 < value < 1 in binary switches to DecimalSI at parse time */
  ck_assert_int_eq(P("0.000000000001Ki").format, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(P("-0.0001Ki").format, GC_QF_DECIMAL_SI);
  /* the binary cap keeps BinarySI and is symmetric for negatives */
  struct gc_quantity q = P("-9Ei");
  ck_assert_int_eq(q.mant, -INT64_MAX);
  ck_assert_int_eq(q.format, GC_QF_BINARY_SI);
  q = P("8Ei");
  ck_assert_int_eq(q.mant, INT64_MAX);
  q = P("7.99999999999999999999Ei");
  ck_assert_int_eq(q.mant, INT64_MAX);
}
END_TEST

/* Digit-less numbers follow upstream's scanner: "." and "-" are 0 (see
 * TestParseQuantityString's "." and "-." cases), a bare suffix is 0 when it
 * stays on the int64 fast path (Ki..Ti, decimal scale >= nano). */
START_TEST(test_parse_digitless_corners) {
  static const char *zero[] = {".", "-.", "+", "-", "Mi", "Ki", "Ti", "k", "m", "n", "e3",
                               "-0", "+0", "0.0", "000.000", "0e-20", "-0Ei"};
  for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++) {
    struct gc_quantity q;
    ck_assert_msg(gc_quantity_parse(zero[i], strlen(zero[i]), &q) == 0, "%s", zero[i]);
    ck_assert_msg(gc_quantity_is_zero(&q), "%s", zero[i]);
  }
  static const char *bad[] = {"Pi", "Ei", "-Ei", ".e-10", "e-10"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    struct gc_quantity q;
    ck_assert_msg(gc_quantity_parse(bad[i], strlen(bad[i]), &q) == GC_EINVAL, "%s", bad[i]);
  }
}
END_TEST

START_TEST(test_parse_malformed) {
  /* The first eleven are TestQuantityParse's invalid list. */
  static const char *bad[] = {
      "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ",
      "",      "1Gi2",   "1.5.5", "+-1",   "1e",   "1ki", "1KB", "Non-Numeric", "1e3e3", "0x10",
      "1,5",   "--1",    "1e+",   "1E-",   "inf",  "NaN", "1Ki1", "1 Ki", "1\t", "1mi", "1Mi ",
      "e",     "1ee3",   "1e3.5", "1K",    "1ii",
  };
  size_t n = sizeof(bad) / sizeof(bad[0]);
  ck_assert_uint_ge(n, 15);
  for (size_t i = 0; i < n; i++) {
    struct gc_quantity q = Q(77, 7, GC_QF_BINARY_SI);
    int rc = gc_quantity_parse(bad[i], strlen(bad[i]), &q);
    ck_assert_msg(rc == GC_EINVAL, "\"%s\" gave %d", bad[i], rc);
    /* *out is written only on success */
    ck_assert_int_eq(q.mant, 77);
    ck_assert_int_eq(q.scale, 7);
  }
  /* embedded NUL and a NULL pointer */
  struct gc_quantity q;
  ck_assert_int_eq(gc_quantity_parse("1\0", 2, &q), GC_EINVAL);
  ck_assert_int_eq(gc_quantity_parse(NULL, 1, &q), GC_EINVAL);
}
END_TEST

START_TEST(test_parse_range) {
  struct gc_quantity q;
  /* 2^64: kept by upstream in inf.Dec; not representable in int64 * 10^s */
  ck_assert_int_eq(gc_quantity_parse("18446744073709551616", 20, &q), GC_ERANGE);
  ck_assert_int_eq(gc_quantity_parse("9223372036854775808", 19, &q), GC_ERANGE);
  /* ...but a long number with trailing zeros is exact */
  const char *big = "1000000000000000000000000000000000000000";
  ck_assert_int_eq(gc_quantity_parse(big, strlen(big), &q), 0);
  ck_assert_int_eq(q.mant, 1);
  ck_assert_int_eq(q.scale, 39);
  ck_assert_int_eq(gc_quantity_parse("-9223372036854775808", 20, &q), 0);
  ck_assert_int_eq(q.mant, INT64_MIN);
  ck_assert_int_eq(gc_quantity_parse("9223372036854775807", 19, &q), 0);
  ck_assert_int_eq(q.mant, INT64_MAX);
  /* exponents outside int32 (apimachinery truncates them to int32) */
  ck_assert_int_eq(gc_quantity_parse("1e2147483648", 12, &q), GC_ERANGE);
  ck_assert_int_eq(gc_quantity_parse("1e99999999999999999999", 22, &q), GC_ERANGE);
  ck_assert_int_eq(gc_quantity_parse("1e2147483647", 12, &q), 0);
  ck_assert_int_eq(q.scale, INT32_MAX);
  /* 10 * 10^INT32_MAX is kept by moving a zero back into the mantissa */
  ck_assert_int_eq(gc_quantity_parse("10e2147483647", 13, &q), 0);
  ck_assert_int_eq(q.mant, 10);
  ck_assert_int_eq(q.scale, INT32_MAX);
  /* tiny exponents round up to one nano */
  ck_assert_int_eq(gc_quantity_parse("1e-2147483648", 13, &q), 0);
  ck_assert_int_eq(q.mant, 1);
  ck_assert_int_eq(q.scale, -9);
  /* rounding carries through a run of nines */
  char buf[GC_QUANTITY_BUFSZ];
  q = P("0.99999999999999999999999");
  ck_assert_str_eq(F(&q, buf), "1");
  q = P("-1.0000000001");
  ck_assert_str_eq(F(&q, buf), "-1000000001n");
  q = P("19999999999999999999.9999999999");
  ck_assert_str_eq(F(&q, buf), "20E");
}
END_TEST

/* Long inputs: the digit buffer bound and the sub-nano tail. */
START_TEST(test_parse_long) {
  static char s[2048];
  char buf[GC_QUANTITY_BUFSZ];
  struct gc_quantity q;
  /* 600 significant digits: beyond any int64 mantissa */
  memset(s, '7', 600);
  ck_assert_int_eq(gc_quantity_parse(s, 600, &q), GC_ERANGE);
  /* 1 and 1500 zeros: exact */
  s[0] = '1';
  memset(s + 1, '0', 1500);
  ck_assert_int_eq(gc_quantity_parse(s, 1501, &q), 0);
  ck_assert_int_eq(q.mant, 1);
  ck_assert_int_eq(q.scale, 1500);
  ck_assert_str_eq(F(&q, buf), "1e1500");
  /* 1.000...000 (1500 zeros) is 1 */
  s[1] = '.';
  memset(s + 2, '0', 1500);
  ck_assert_int_eq(gc_quantity_parse(s, 1502, &q), 0);
  ck_assert_str_eq(F(&q, buf), "1");
  /* 0.000...0001 far below nano rounds up to 1n */
  s[0] = '0';
  s[1] = '.';
  memset(s + 2, '0', 1500);
  s[1502] = '1';
  ck_assert_int_eq(gc_quantity_parse(s, 1503, &q), 0);
  ck_assert_str_eq(F(&q, buf), "1n");
  /* 0.1111... (1500 ones): the tail below nano only rounds up */
  memset(s + 2, '1', 1500);
  ck_assert_int_eq(gc_quantity_parse(s, 1502, &q), 0);
  ck_assert_str_eq(F(&q, buf), "111111112n");
  /* same with a binary suffix: 1500 fraction digits exceed the buffer */
  memcpy(s + 1502, "Ki", 2);
  ck_assert_int_eq(gc_quantity_parse(s, 1504, &q), GC_ERANGE);
  /* binary with a 600-digit integer part is simply capped */
  memset(s, '9', 600);
  memcpy(s + 600, ".5Mi", 4);
  ck_assert_int_eq(gc_quantity_parse(s, 604, &q), 0);
  ck_assert_int_eq(q.mant, INT64_MAX);
  /* 1500 leading zeros are skipped */
  memset(s, '0', 1500);
  memcpy(s + 1500, "25m", 3);
  ck_assert_int_eq(gc_quantity_parse(s, 1503, &q), 0);
  ck_assert_str_eq(F(&q, buf), "25m");
}
END_TEST

START_TEST(test_add_sub_format_rules) {
  char buf[GC_QUANTITY_BUFSZ];
  /* TestQuantityAddZeroPreservesSuffix / SubZero */
  const char *vals[] = {"100m", "1Gi"};
  for (int i = 0; i < 2; i++) {
    struct gc_quantity zero = P("0"), v = P(vals[i]), v1 = v;
    ck_assert_int_eq(gc_quantity_add(&v1, &zero), 0);
    ck_assert_str_eq(F(&v1, buf), vals[i]);
    struct gc_quantity z2 = zero;
    ck_assert_int_eq(gc_quantity_add(&z2, &v), 0);
    ck_assert_str_eq(F(&z2, buf), vals[i]);
    struct gc_quantity z3 = zero;
    ck_assert_int_eq(gc_quantity_sub(&z3, &v), 0);
    char want[GC_QUANTITY_BUFSZ + 1] = "-";
    strncat(want, vals[i], sizeof(want) - 2);
    ck_assert_str_eq(F(&z3, buf), want);
    struct gc_quantity v4 = v;
    ck_assert_int_eq(gc_quantity_sub(&v4, &zero), 0);
    ck_assert_str_eq(F(&v4, buf), vals[i]);
  }
  /* TestAdd / TestSub: the receiver's format wins unless it is zero */
  struct gc_quantity a = Q(10, 0, GC_QF_DECIMAL_SI), b = Q(1, 1, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  struct gc_quantity want = Q(20, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_cmp(&a, &want), 0);
  a = Q(10, 0, GC_QF_BINARY_SI);
  b = Q(1, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_sub(&a, &b), 0);
  want = Q(9, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_cmp(&a, &want), 0);
  ck_assert_int_eq(a.format, GC_QF_BINARY_SI);
  a = Q(10, 0, GC_QF_DECIMAL_SI);
  b = Q(1, 1, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_sub(&a, &b), 0);
  ck_assert(gc_quantity_is_zero(&a));
  /* zero minus zero takes the subtrahend's format */
  a = gc_quantity_zero(GC_QF_DECIMAL_SI);
  b = gc_quantity_zero(GC_QF_BINARY_SI);
  ck_assert_int_eq(gc_quantity_sub(&a, &b), 0);
  ck_assert_int_eq(a.format, GC_QF_BINARY_SI);
  /* mixed formats and scales */
  a = P("1Gi");
  b = P("500m");
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  ck_assert_str_eq(F(&a, buf), "1073741824500m");
  a = P("1k");
  b = P("1Ki");
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  ck_assert_str_eq(F(&a, buf), "2024");
  a = P("1Ki");
  b = P("1Ki");
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  ck_assert_str_eq(F(&a, buf), "2Ki");
  a = P("1.25");
  b = P("1.25");
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  ck_assert_str_eq(F(&a, buf), "2500m");
  a = P("1e3");
  b = P("1");
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  ck_assert_str_eq(F(&a, buf), "1001");
  a = P("1n");
  b = P("1");
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  ck_assert_str_eq(F(&a, buf), "1000000001n");
  /* 1E + 1n needs 28 significant digits */
  b = P("1E");
  ck_assert_int_eq(gc_quantity_add(&a, &b), GC_ERANGE);
  ck_assert_str_eq(F(&a, buf), "1000000001n");
  /* TestSubMostNegativeCrossScale: 10 - mostNegative = 2^63 + 10, which
   * needs 19 significant digits past int64: out of range for us */
  a = Q(1, 1, GC_QF_DECIMAL_SI);
  b = Q(INT64_MIN, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_sub(&a, &b), GC_ERANGE);
  ck_assert_int_eq(a.mant, 1);
  ck_assert_int_eq(a.scale, 1);
  /* 0 - mostNegative at scale 100 = 2^63 * 10^100: not representable */
  a = gc_quantity_zero(GC_QF_DECIMAL_SI);
  b = Q(INT64_MIN, 100, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_sub(&a, &b), GC_ERANGE);
  ck_assert(gc_quantity_is_zero(&a));
  /* but -(mostNegative+1) is mostPositive */
  b = Q(INT64_MIN + 1, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_sub(&a, &b), 0);
  ck_assert_int_eq(a.mant, INT64_MAX);
}
END_TEST

START_TEST(test_add_overflow) {
  struct gc_quantity a = Q(INT64_MAX, 0, GC_QF_DECIMAL_SI), one = P("1");
  ck_assert_int_eq(gc_quantity_add(&a, &one), GC_ERANGE);
  ck_assert_int_eq(a.mant, INT64_MAX);
  ck_assert_int_eq(a.scale, 0);
  a = P("9Ei");
  ck_assert_int_eq(gc_quantity_add(&a, &one), GC_ERANGE);
  ck_assert_int_eq(a.mant, INT64_MAX);
  a = P("5");
  struct gc_quantity big = P("1e30");
  ck_assert_int_eq(gc_quantity_add(&a, &big), GC_ERANGE);
  ck_assert_int_eq(a.mant, 5);
  a = Q(INT64_MIN, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_sub(&a, &one), GC_ERANGE);
  ck_assert_int_eq(a.mant, INT64_MIN);
  /* sums that overflow int64 but end in zeros are kept exactly */
  a = Q(5000000000000000000LL, 0, GC_QF_DECIMAL_SI);
  struct gc_quantity b = a;
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  char buf[GC_QUANTITY_BUFSZ];
  ck_assert_str_eq(F(&a, buf), "10E");
  /* huge scale gaps: 1e30 + 1e-9 needs 40 digits */
  a = P("1e30");
  b = P("1n");
  ck_assert_int_eq(gc_quantity_add(&a, &b), GC_ERANGE);
  /* -1e19 + 9e18+7 fits */
  a = Q(-1, 19, GC_QF_DECIMAL_SI);
  b = Q(9000000000000000007LL, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_add(&a, &b), 0);
  ck_assert_int_eq(a.mant, -999999999999999993LL);
}
END_TEST

START_TEST(test_mul) {
  char buf[GC_QUANTITY_BUFSZ];
  /* TestMul cases that fit */
  static const struct {
    int64_t m;
    int64_t by;
    int64_t want_m;
    int32_t want_s;
  } t[] = {
      {10, 10, 100, 0},
      {10, 1, 10, 0},
      {0, 50, 0, 0},
      {50, 0, 0, 0},
      {10, -10, -100, 0},
      {-50, -50, 2500, 0},
      {INT64_MAX, 1, INT64_MAX, 0},
      {INT64_MAX, -1, -INT64_MAX, 0},
      {INT64_MAX / 2, 2, (INT64_MAX / 2) * 2, 0},
      {INT64_MAX, 10, INT64_MAX, 1}, /* inexact as int64 upstream, exact here */
      {INT64_MAX, -10, -INT64_MAX, 1},
      {INT64_MIN, 1, INT64_MIN, 0},
      {INT64_MIN / 2, 2, INT64_MIN, 0},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    struct gc_quantity q = Q(t[i].m, 0, GC_QF_DECIMAL_SI);
    ck_assert_int_eq(gc_quantity_mul_int(&q, t[i].by), 0);
    struct gc_quantity w = Q(t[i].want_m, t[i].want_s, GC_QF_DECIMAL_SI);
    ck_assert_msg(gc_quantity_cmp(&q, &w) == 0, "case %zu", i);
  }
  struct gc_quantity q = P("2.5Gi");
  ck_assert_int_eq(gc_quantity_mul_int(&q, 3), 0);
  ck_assert_str_eq(F(&q, buf), "7680Mi");
  ck_assert_int_eq(q.format, GC_QF_BINARY_SI);
  q = P("1.25");
  ck_assert_int_eq(gc_quantity_mul_int(&q, 4), 0);
  ck_assert_str_eq(F(&q, buf), "5");
  q = P("1Ei");
  ck_assert_int_eq(gc_quantity_mul_int(&q, 1000), 0);
  ck_assert_str_eq(F(&q, buf), "1000Ei");
  /* overflow: 2 * (2^63-1) is odd-ish (no factor of ten): operand unchanged */
  q = Q(INT64_MAX, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_mul_int(&q, 2), GC_ERANGE);
  ck_assert_int_eq(q.mant, INT64_MAX);
  q = Q(INT64_MIN, 0, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_mul_int(&q, -1), GC_ERANGE);
  ck_assert_int_eq(q.mant, INT64_MIN);
  q = P("3Gi");
  ck_assert_int_eq(gc_quantity_mul_int(&q, INT64_MAX), GC_ERANGE);
  ck_assert_int_eq(q.mant, 3LL << 30);
}
END_TEST

/* TestQuantityCmp and TestQuantityCmpInt64AndDec */
START_TEST(test_cmp) {
  static const struct {
    const char *x, *y;
    int want;
  } s[] = {{"0", "0", 0},           {"100m", "50m", 1},  {"50m", "100m", -1},
           {"10000T", "100Gi", 1},  {"1Ki", "1024", 0},  {"1k", "1Ki", -1},
           {"1e3", "1k", 0},        {"-1", "1n", -1},    {"-1Gi", "-1G", -1},
           {"0.5Gi", "512Mi", 0},   {"1E", "999P", 1},   {"1n", "0", 1}};
  for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
    struct gc_quantity x = P(s[i].x), y = P(s[i].y);
    int c = gc_quantity_cmp(&x, &y);
    ck_assert_msg((c > 0) - (c < 0) == s[i].want, "%s vs %s", s[i].x, s[i].y);
    c = gc_quantity_cmp(&y, &x);
    ck_assert_msg((c > 0) - (c < 0) == -s[i].want, "%s vs %s (inverted)", s[i].x, s[i].y);
  }
  static const struct {
    int64_t am;
    int32_t as;
    int64_t bm;
    int32_t bs;
    int want;
  } t[] = {
      {901, -2, 901, -2, 0},
      {90, -1, 901, -2, -1},
      {901, -2, 900, -2, 1},
      {0, 0, 0, 0, 0},
      {0, 1, 0, -1, 0},
      {800, -3, 1, 0, -1},
      {800, -3, 79, -2, 1},
      {INT64_MAX, 0, 1, -1, 1},
      {INT64_MAX, 1, 1, 0, 1},
      {INT64_MAX, 1, 1, 1, 1},
      {INT64_MAX, 1, 0, 1, 1},
      {INT64_MAX, -16, 1, 3, -1},
      {INT64_MIN, 0, 0, 0, -1},
      {INT64_MIN, -18, -1, 0, -1},
      {INT64_MIN, -19, -1, 0, 1},
      {1000000000000000000LL, -17, 1, 1, 0},
      {1000000000000000000LL, -17, -10, 0, 1},
      {-1000000000000000000LL, -17, -10, 0, 0},
      {1000000000000000000LL, -17, 1, 0, 1},
      {1000000000000000001LL, -17, 1, 1, 1},
      {999999999999999999LL, -17, 1, 1, -1},
      /* extreme scales do not overflow */
      {1, INT32_MAX, INT64_MAX, INT32_MIN, 1},
      {-1, INT32_MAX, 1, INT32_MIN, -1},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    struct gc_quantity a = Q(t[i].am, t[i].as, GC_QF_DECIMAL_SI);
    struct gc_quantity b = Q(t[i].bm, t[i].bs, GC_QF_DECIMAL_SI);
    int c = gc_quantity_cmp(&a, &b);
    ck_assert_msg((c > 0) - (c < 0) == t[i].want, "case %zu", i);
    c = gc_quantity_cmp(&b, &a);
    ck_assert_msg((c > 0) - (c < 0) == -t[i].want, "case %zu inverted", i);
  }
}
END_TEST

START_TEST(test_milli_units) {
  static const struct {
    const char *in;
    int64_t milli, units;
  } t[] = {
      {"1", 1000, 1},          {"1.5", 1500, 2},       {"100m", 100, 1},
      {"1n", 1, 1},            {"0", 0, 0},            {"1Ki", 1024000, 1024},
      {"0.5Gi", 536870912000LL, 536870912}, {"1.0001", 1001, 2},
      {"-1.5", -1500, -2},     {"-1n", -1, -1},        {"1234", 1234000, 1234},
      {"9.01", 9010, 10},      {"1e-3", 1, 1},         {"12e6", 12000000000LL, 12000000},
      {"1u", 1, 1},            {"999999u", 1000, 1},   {"1e-1000", 1, 1},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    struct gc_quantity q = P(t[i].in);
    int64_t m = 7, u = 7;
    ck_assert_int_eq(gc_quantity_milli(&q, &m), 0);
    ck_assert_int_eq(gc_quantity_units(&q, &u), 0);
    ck_assert_msg(m == t[i].milli, "%s milli %lld", t[i].in, (long long)m);
    ck_assert_msg(u == t[i].units, "%s units %lld", t[i].in, (long long)u);
  }
  /* TestScaledValue (to milli and to units) */
  int64_t v;
  struct gc_quantity q = Q(1, 2, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_milli(&q, &v), 0);
  ck_assert_int_eq(v, 100000);
  /* out of range */
  q = P("9Ei");
  ck_assert_int_eq(gc_quantity_milli(&q, &v), GC_ERANGE);
  ck_assert_int_eq(gc_quantity_units(&q, &v), 0);
  ck_assert_int_eq(v, INT64_MAX);
  q = P("1e19");
  ck_assert_int_eq(gc_quantity_units(&q, &v), GC_ERANGE);
  q = P("9223372036854775.807");
  ck_assert_int_eq(gc_quantity_milli(&q, &v), 0);
  ck_assert_int_eq(v, INT64_MAX);
  q = Q(INT64_MAX, -2, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_milli(&q, &v), GC_ERANGE);
  q = Q(INT64_MIN, -3, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_milli(&q, &v), 0);
  ck_assert_int_eq(v, INT64_MIN);
}
END_TEST

START_TEST(test_div_floor) {
  static const struct {
    const char *n, *d;
    int64_t want;
  } t[] = {
      {"10", "3", 3},       {"7.5", "2.5", 3},    {"-1", "3", -1},     {"-6", "3", -2},
      {"1Gi", "512Mi", 2},  {"0", "5", 0},        {"1", "1n", 1000000000}, {"1n", "1", 0},
      {"-1n", "1", -1},     {"64", "8", 8},       {"100", "1e-3", 100000}, {"1", "1e30", 0},
      {"-1", "1e30", -1},   {"1e18", "1", 1000000000000000000LL},
      {"9Ei", "1", INT64_MAX},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    struct gc_quantity n = P(t[i].n), d = P(t[i].d);
    int64_t v = 7;
    ck_assert_int_eq(gc_quantity_div_floor(&n, &d, &v), 0);
    ck_assert_msg(v == t[i].want, "%s / %s = %lld", t[i].n, t[i].d, (long long)v);
  }
  struct gc_quantity n = P("1"), z = P("0"), neg = P("-1"), big = P("1e30"), nano = P("1n");
  int64_t v;
  ck_assert_int_eq(gc_quantity_div_floor(&n, &z, &v), GC_EINVAL);
  ck_assert_int_eq(gc_quantity_div_floor(&n, &neg, &v), GC_EINVAL);
  ck_assert_int_eq(gc_quantity_div_floor(&big, &nano, &v), GC_ERANGE);
  struct gc_quantity huge_scale = Q(1, INT32_MAX, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_div_floor(&huge_scale, &n, &v), GC_ERANGE);
  struct gc_quantity tiny = Q(-1, INT32_MIN, GC_QF_DECIMAL_SI);
  ck_assert_int_eq(gc_quantity_div_floor(&tiny, &n, &v), 0);
  ck_assert_int_eq(v, -1);
}
END_TEST

START_TEST(test_format_bounds) {
  char small[4];
  struct gc_quantity q = P("1234567");
  ck_assert_int_eq(gc_quantity_format(&q, small, sizeof(small)), GC_ERANGE);
  q = P("1Ki");
  ck_assert_int_eq(gc_quantity_format(&q, small, sizeof(small)), 0);
  ck_assert_str_eq(small, "1Ki");
  /* the widest outputs fit GC_QUANTITY_BUFSZ */
  char buf[GC_QUANTITY_BUFSZ];
  struct gc_quantity w[] = {
      Q(INT64_MIN, INT32_MIN, GC_QF_DECIMAL_SI),     Q(INT64_MIN, INT32_MAX, GC_QF_DECIMAL_EXPONENT),
      Q(INT64_MIN, 19, GC_QF_BINARY_SI),             Q(INT64_MAX, 19, GC_QF_BINARY_SI),
      Q(INT64_MIN + 1, INT32_MIN + 1, GC_QF_BINARY_SI), Q(INT64_MAX, 20, GC_QF_BINARY_SI),
      Q(7, 5, (enum gc_qformat)9),
  };
  for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
    ck_assert_int_eq(gc_quantity_format(&w[i], buf, sizeof(buf)), 0);
    struct gc_quantity r;
    ck_assert_msg(gc_quantity_parse(buf, strlen(buf), &r) == 0 || w[i].scale < -9, "%s", buf);
  }
  /* BinarySI beyond 10^19 * mant falls back to decimal but stays exact */
  q = Q(INT64_MAX, 20, GC_QF_BINARY_SI);
  ck_assert_str_eq(F(&q, buf), "922337203685477580700E");
  /* an unknown format prints as DecimalExponent (upstream's default case) */
  q = Q(7, 5, (enum gc_qformat)9);
  ck_assert_str_eq(F(&q, buf), "700e3");
}
END_TEST

START_TEST(test_from_value) {
  struct gc_arena *a = gc_arena_new(0);
  char buf[GC_QUANTITY_BUFSZ];
  struct gc_quantity q;
  struct gc_value *v = gc_value_int(a, 5);
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "5");
  v = gc_value_int(a, 4000);
  v->text = "0xFA0"; /* a YAML 1.1 spelling: Kubernetes sees 4000 */
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "4k");
  v = gc_value_int(a, INT64_MIN);
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_int_eq(q.mant, INT64_MIN);
  /* floats use their source spelling */
  v = gc_value_float(a, 0.5);
  v->text = "0.5";
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "500m");
  v = gc_value_float(a, 1000);
  v->text = "1e3";
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "1e3");
  v = gc_value_float(a, 0.1);
  v->text = "0.1000000000000000000001";
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "100000001n");
  /* without a spelling: Go's JSON encoding of the float64 */
  static const struct {
    double f;
    const char *out;
  } t[] = {{0.5, "500m"},  {0.1, "100m"},      {1e21, "1e21"},  {1e20, "100E"},
           {1e-7, "100e-9"}, {-2.5, "-2500m"},   {1.25e-6, "1250n"}, {123456789.125, "123456789125m"},
           {0.0, "0"},     {3e-10, "1e-9"}};
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    v = gc_value_float(a, t[i].f);
    ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
    ck_assert_msg(strcmp(F(&q, buf), t[i].out) == 0, "%g -> %s", t[i].f, buf);
  }
  /* YAML-only float spellings fall back to the value */
  v = gc_value_float(a, 1000.5);
  v->text = "1_000.5";
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "1000500m");
  v = gc_value_float(a, 1.0 / 0.0);
  v->text = ".inf";
  ck_assert_int_eq(gc_quantity_from_value(v, &q), GC_EINVAL);
  /* strings: TestJSONWhitespace trims, as UnmarshalJSON does */
  v = gc_value_strz(a, " 1 ");
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "1");
  v = gc_value_strz(a, "\t-1\n");
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "-1");
  v = gc_value_strz(a, "\xc2\xa0" "2Gi" "\xe3\x80\x80");
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert_str_eq(F(&q, buf), "2Gi");
  v = gc_value_strz(a, "1 Gi");
  ck_assert_int_eq(gc_quantity_from_value(v, &q), GC_EINVAL);
  v = gc_value_strz(a, "   ");
  ck_assert_int_eq(gc_quantity_from_value(v, &q), GC_EINVAL);
  v = gc_value_str(a, "1\0", 2);
  ck_assert_int_eq(gc_quantity_from_value(v, &q), GC_EINVAL);
  /* null is a zero quantity (UnmarshalJSON("null")); others are errors */
  v = gc_value_null(a);
  ck_assert_int_eq(gc_quantity_from_value(v, &q), 0);
  ck_assert(gc_quantity_is_zero(&q));
  ck_assert_int_eq(gc_quantity_from_value(gc_value_bool(a, 1), &q), GC_EINVAL);
  ck_assert_int_eq(gc_quantity_from_value(gc_value_map(a), &q), GC_EINVAL);
  ck_assert_int_eq(gc_quantity_from_value(gc_value_seq(a), &q), GC_EINVAL);
  ck_assert_int_eq(gc_quantity_from_value(NULL, &q), GC_EINVAL);
  gc_arena_free(a);
}
END_TEST

START_TEST(test_zero) {
  struct gc_quantity z = gc_quantity_zero(GC_QF_BINARY_SI);
  ck_assert(gc_quantity_is_zero(&z));
  ck_assert_int_eq(z.format, GC_QF_BINARY_SI);
  char buf[GC_QUANTITY_BUFSZ];
  ck_assert_str_eq(F(&z, buf), "0");
  /* TestQuantityCanocicalizeZero: any scale of zero prints as "0" */
  z = Q(0, -3, GC_QF_DECIMAL_SI);
  ck_assert_str_eq(F(&z, buf), "0");
  struct gc_quantity one = P("1");
  ck_assert(!gc_quantity_is_zero(&one));
}
END_TEST

static Suite *quantity_suite(void) {
  Suite *s = suite_create("quantity");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_canonical_pairs);
  tcase_add_test(tc, test_string_from_values);
  tcase_add_test(tc, test_parse_formats);
  tcase_add_test(tc, test_parse_digitless_corners);
  tcase_add_test(tc, test_parse_malformed);
  tcase_add_test(tc, test_parse_range);
  tcase_add_test(tc, test_parse_long);
  tcase_add_test(tc, test_add_sub_format_rules);
  tcase_add_test(tc, test_add_overflow);
  tcase_add_test(tc, test_mul);
  tcase_add_test(tc, test_cmp);
  tcase_add_test(tc, test_milli_units);
  tcase_add_test(tc, test_div_floor);
  tcase_add_test(tc, test_format_bounds);
  tcase_add_test(tc, test_from_value);
  tcase_add_test(tc, test_zero);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(quantity_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
