/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_quantity: Kubernetes resource.Quantity in C.  A quantity is an exact
 * decimal, mant * 10^scale, plus the format it was written in (decimal SI,
 * binary SI or decimal exponent), which decides how it is printed.  Parsing,
 * arithmetic, comparison and canonical formatting follow apimachinery's
 * resource.Quantity exactly (e.g. "1.25" -> "1250m", "2.5Gi" -> "2560Mi",
 * "0.5Gi" -> "512Mi").  Arithmetic never wraps: a result that does not fit
 * returns GC_ERANGE and leaves the operand unchanged.
 */
#ifndef GC_QUANTITY_H
#define GC_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include "gc_value.h"

enum gc_qformat {
  GC_QF_DECIMAL_SI = 0,    /* "", k, M, G, T, P, E and m, u, n */
  GC_QF_BINARY_SI = 1,     /* Ki, Mi, Gi, Ti, Pi, Ei */
  GC_QF_DECIMAL_EXPONENT = 2 /* 1e3, 5E-3 */
};

struct gc_quantity {
  int64_t mant;  /* value = mant * 10^scale, exactly */
  int32_t scale;
  enum gc_qformat format;
};

/* Large enough for any canonical quantity string and its NUL. */
#define GC_QUANTITY_BUFSZ 64

/* Parses s[0..len) as a Kubernetes quantity.  Returns 0, GC_EINVAL for
 * malformed text (including empty), or GC_ERANGE when the value cannot be
 * represented exactly.  *out is written only on success. */
int gc_quantity_parse(const char *s, size_t len, struct gc_quantity *out);

/* Parses a quantity held in a document node: a string, or an integer or
 * number (parsed from its source spelling, as Quantity.UnmarshalJSON does). */
int gc_quantity_from_value(const struct gc_value *v, struct gc_quantity *out);

/* As gc_quantity_from_value, for a value of a resource list: one above
 * 2^63-1 in magnitude is capped at 2^63-1 (format kept) instead of being
 * kept or refused with GC_ERANGE.  Kubernetes caps binary values at parse and
 * saturates every other one at 2^63-1 when the scheduler reads it
 * (Quantity.Value), so that is the amount a pod asks for. */
int gc_quantity_from_value_capped(const struct gc_value *v, struct gc_quantity *out);

/* acc += q; the format rule is Quantity.Add's (a zero acc takes q's format). */
int gc_quantity_add(struct gc_quantity *acc, const struct gc_quantity *q);

/* q *= n, exactly. */
int gc_quantity_mul_int(struct gc_quantity *q, int64_t n);

/* Returns <0, 0 or >0 as a <, ==, > b (exact, any scales). */
int gc_quantity_cmp(const struct gc_quantity *a, const struct gc_quantity *b);

/* Writes the canonical string (Quantity.String()) into buf.  Returns 0, or
 * GC_ERANGE when cap is too small (GC_QUANTITY_BUFSZ is always enough). */
int gc_quantity_format(const struct gc_quantity *q, char *buf, size_t cap);

/* Value in milli-units rounded up (Quantity.MilliValue), or GC_ERANGE. */
int gc_quantity_milli(const struct gc_quantity *q, int64_t *out);

/* Value in whole units rounded up (Quantity.Value), or GC_ERANGE. */
int gc_quantity_units(const struct gc_quantity *q, int64_t *out);

#endif
