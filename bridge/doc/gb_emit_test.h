/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_emit_test: for tests only.  The reference YAML writer the tests compare
 * gb_emit_yaml with; product code must not include this header except
 * gb_emit's own .c file (so the compiler checks the definition against this
 * declaration).  tests/style/exports.py skips what is declared here when it
 * looks for unused exports.
 */
#ifndef GB_EMIT_TEST_H
#define GB_EMIT_TEST_H

#include "gb_emit.h"

/* gb_emit_yaml with every document written by libyaml's emitter, none
 * directly: the bytes gb_emit_yaml must produce.  Same contract. */
int gb_emit_yaml_libyaml(const struct gc_value *const *docs, size_t n, char **out, size_t *len);

#endif
