/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_scalar: how an untagged plain YAML scalar resolves, exactly as goyaml.v2
 * (under sigs.k8s.io/yaml) resolves it for untyped Kubernetes objects: the
 * YAML 1.1 bool words (y, yes, on, ...), null words, Go ParseInt base-0
 * integers with '_' separators, YAML-style floats and .inf/.nan; anything
 * else is a string.  The loader uses it to type scalars and the emitter to
 * decide which strings need quotes, so the two always agree.
 */
#ifndef GB_SCALAR_H
#define GB_SCALAR_H

#include <stddef.h>
#include <stdint.h>

#include "gc_value.h"

struct gb_scalar {
  enum gc_type type; /* GC_NULL, GC_BOOL, GC_INT, GC_FLOAT or GC_STR */
  int b;
  int64_t i;
  double f;
};

/* Resolves the plain scalar s (len bytes).  Never fails: text that is no
 * bool, null, int or float is GC_STR ("<<" included; merge keys are the
 * loader's business).  Integers beyond int64 that fit uint64 are GC_FLOAT,
 * as they become such after the JSON round trip Kubernetes does. */
void gb_scalar_resolve(const char *s, size_t len, struct gb_scalar *out);

/* Go's strconv.ParseInt(s, 0, 64) (then ParseUint) on text without '_':
 * returns 1 with *out for an int64, 2 with *uout for a value only uint64
 * holds, 0 when it is not such an integer. */
int gb_scalar_parse_int(const char *s, size_t len, int64_t *out, uint64_t *uout);

/* Returns 1 when the string s would not read back as the same string if
 * written as a plain scalar (it resolves to another type, is empty, is the
 * merge key "<<", or looks like a base-60 number or a timestamp, which
 * goyaml.v2 also quotes). */
int gb_scalar_needs_quotes(const char *s, size_t len);

/* Writes the shortest decimal text that reads back as d ("1.5", "1e+20"),
 * always with a '.' or an exponent so it stays a float; ".inf", "-.inf",
 * ".nan" for the non-finite values.  Returns the length (cap >= 32). */
size_t gb_scalar_format_double(double d, char *buf, size_t cap);

/* Go's strconv.FormatFloat(f, 'g', -1, 32), which sigs.k8s.io/yaml uses for
 * float map keys: the shortest digits that read back as the float32 nearest
 * to f, scientific ("1e+06") when the exponent is below -4 or at least 6,
 * no ".0" on integers; ".inf", "-.inf", ".nan", "0", "-0" as Go writes
 * them.  Returns the length (cap >= 32). */
size_t gb_scalar_format_float32_key(double f, char *buf, size_t cap);

/* Strict UTF-8 check (no overlong forms, surrogates or code points past
 * U+10FFFF), which YAML and JSON both require.  Returns the offset of the
 * first byte that is not valid, or len when all of s is. */
size_t gb_scalar_utf8_check(const char *s, size_t len);

#endif
