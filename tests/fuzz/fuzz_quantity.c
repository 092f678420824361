/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target for gc_quantity.  The input is split at the first '|'
 * into two quantity texts (the whole input is the first when there is
 * none).  Properties checked:
 *   - a text that parses formats to a canonical string that parses back to
 *     an equal quantity and formats to the identical string (see roundtrip
 *     for the one binary-SI exception apimachinery shares);
 *   - add, sub, mul, cmp, milli, units and div_floor with the second value
 *     (or a few fixed ones) never crash, and a failed operation leaves its
 *     operand unchanged; a successful add followed by sub gives back an
 *     equal value; cmp is antisymmetric.
 * Build: cmake -DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang; run fuzz/fuzz_quantity
 * with tests/fuzz/corpus/quantity as the seed corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gc_diag.h"
#include "gc_quantity.h"
#include "gc_quantity_test.h"

static void roundtrip(const struct gc_quantity *q) {
  char buf[GC_QUANTITY_BUFSZ], again[GC_QUANTITY_BUFSZ];
  struct gc_quantity r;
  if (gc_quantity_format(q, buf, sizeof(buf)) != 0)
    abort();
  int rc = gc_quantity_parse(buf, strlen(buf), &r);
  if (rc != 0) {
    /* Only values outside the parse bounds may fail to re-parse: scales
     * below nano reached by construction, or exponents past int32 after
     * the canonical exponent was lowered to a multiple of three. */
    if (q->scale >= -9 && q->scale < INT32_MAX - 40)
      abort();
    return;
  }
  /* A binary-SI value above 2^63-1 (reachable by arithmetic) prints as,
   * e.g., "10Ei", which ParseQuantity caps back to 2^63-1: upstream has the
   * same asymmetry, so only the value check is skipped there. */
  struct gc_quantity hi = {INT64_MAX, 0, GC_QF_DECIMAL_SI};
  struct gc_quantity lo = {-INT64_MAX, 0, GC_QF_DECIMAL_SI};
  if (q->format == GC_QF_BINARY_SI && buf[strlen(buf) - 1] == 'i' &&
      (gc_quantity_cmp(q, &hi) > 0 || gc_quantity_cmp(q, &lo) < 0))
    return;
  if (gc_quantity_cmp(q, &r) != 0)
    abort();
  if (gc_quantity_format(&r, again, sizeof(again)) != 0)
    abort();
  /* One upstream exception to "same string": a binary-SI integer of 1024 or
   * more that is not a multiple of 1024 prints as bare digits, and if those
   * end in zeros the re-parsed (decimal-SI) value prints with a decimal
   * suffix ("2000" -> "2k").  The second round must then be stable. */
  size_t bl = strlen(buf);
  if (q->format == GC_QF_BINARY_SI && buf[bl - 1] == '0') {
    struct gc_quantity r2;
    char third[GC_QUANTITY_BUFSZ];
    if (gc_quantity_parse(again, strlen(again), &r2) != 0 || gc_quantity_cmp(&r, &r2) != 0 ||
        gc_quantity_format(&r2, third, sizeof(third)) != 0 || strcmp(again, third) != 0)
      abort();
    return;
  }
  if (strcmp(buf, again) != 0)
    abort();
}

static int sgn(int c) { return (c > 0) - (c < 0); }

static void arith(const struct gc_quantity *a, const struct gc_quantity *b) {
  struct gc_quantity t = *a;
  if (sgn(gc_quantity_cmp(a, b)) != -sgn(gc_quantity_cmp(b, a)))
    abort();
  if (gc_quantity_add(&t, b) == 0) {
    roundtrip(&t);
    struct gc_quantity u = t;
    /* (a + b) - b is a again, which is representable, so it must succeed. */
    if (gc_quantity_sub(&u, b) != 0 || gc_quantity_cmp(&u, a) != 0)
      abort();
  } else if (memcmp(&t, a, sizeof(t)) != 0) {
    abort();
  }
  t = *a;
  if (gc_quantity_sub(&t, b) == 0)
    roundtrip(&t);
  else if (memcmp(&t, a, sizeof(t)) != 0)
    abort();
  static const int64_t muls[] = {0, 1, -1, 2, 3, 10, 1000, 1024, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof(muls) / sizeof(muls[0]); i++) {
    t = *a;
    if (gc_quantity_mul_int(&t, muls[i]) == 0)
      roundtrip(&t);
    else if (memcmp(&t, a, sizeof(t)) != 0)
      abort();
  }
  int64_t v;
  (void)gc_quantity_milli(a, &v);
  (void)gc_quantity_units(a, &v);
  if (gc_quantity_div_floor(a, b, &v) == 0 && b->mant <= 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  const char *bar = memchr(s, '|', size);
  size_t n1 = bar ? (size_t)(bar - s) : size;
  struct gc_quantity a, b;
  int ra = gc_quantity_parse(s, n1, &a);
  if (ra != 0 && ra != GC_EINVAL && ra != GC_ERANGE)
    abort();
  if (ra != 0)
    return 0;
  roundtrip(&a);
  static const char *const fixed[] = {"0", "1", "-1", "1n", "1Ki", "9Ei", "1e18", "-1.5"};
  for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
    if (gc_quantity_parse(fixed[i], strlen(fixed[i]), &b) != 0)
      abort();
    arith(&a, &b);
    arith(&b, &a);
  }
  if (bar) {
    int rb = gc_quantity_parse(bar + 1, size - n1 - 1, &b);
    if (rb == 0) {
      roundtrip(&b);
      arith(&a, &b);
      arith(&b, &a);
    }
  }
  return 0;
}
