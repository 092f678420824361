/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_emit: writes gc_value trees as YAML (libyaml's emitter, block style, as
 * kubectl -o yaml prints) or JSON (json-c, as kubectl -o json prints: four
 * spaces of indent, <, > and & escaped as Go does).  Strings that would read back as another type
 * ("true", "1", "null", "") are quoted in YAML.
 */
#ifndef GB_EMIT_H
#define GB_EMIT_H

#include <stddef.h>

#include "gc_value.h"

/* Writes docs as a YAML stream, separated by "---" lines.  *out is a new
 * malloc'd NUL-terminated buffer (caller frees), *len its length.  Returns 0,
 * GC_ENOMEM, GC_EINVAL, or GC_ELIMIT when the text would reach 1 GiB. */
int gb_emit_yaml(const struct gc_value *const *docs, size_t n, char **out, size_t *len);

/* Writes v as JSON, pretty (kubectl's layout: four-space indent,
 * HTML characters escaped, trailing newline) or compact.
 * *out is malloc'd (caller frees).  Returns 0, GC_ENOMEM, GC_EINVAL, or
 * GC_ELIMIT when the text would reach 1 GiB. */
int gb_emit_json(const struct gc_value *v, int pretty, char **out, size_t *len);

#endif
