/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_gang_int: the field readers and message helpers the gang computation's
 * modules share (see gc_gang_int.h).
 */
#include "gc_gang_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gc_gang_fail(struct ctx *c, const char *prefix, const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  gc_diag_vformat(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  gc_diags_addf(c->d, "%s: %s", prefix, buf);
  c->errors++;
}

/* Formats a path into the arena (cut at 2 KiB). */
char *gc_gang_fmt(struct ctx *c, const char *f, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, f);
  size_t n = gc_diag_vformat(buf, sizeof(buf), f, ap);
  va_end(ap);
  char *s = gc_arena_strndup(c->a, buf, n);
  if (!s)
    c->oom = 1;
  return s ? s : "";
}

/* The integer a number holds: an integer, or a float with an integral value
 * (the API server takes 1.0 or 2e0 for an integer field, as kube-openapi's
 * validation does).  Values beyond int64 saturate, so range checks still
 * refuse them.  Returns 0 for anything else. */
int gc_gang_int_value(const struct gc_value *v, int64_t *out) {
  if (v->type == GC_INT) {
    *out = v->u.i;
    return 1;
  }
  if (v->type != GC_FLOAT || v->u.f != v->u.f)
    return 0;
  /* Every double at or beyond 2^63 in magnitude is integral. */
  if (v->u.f >= 9223372036854775807.0 || v->u.f <= -9223372036854775807.0) {
    *out = v->u.f > 0 ? INT64_MAX : INT64_MIN;
    return v->u.f - v->u.f == 0; /* not an infinity */
  }
  int64_t t = (int64_t)v->u.f;
  if ((double)t != v->u.f)
    return 0;
  *out = t;
  return 1;
}

/* Reads an optional integer.  Returns 1 (set), 0 (absent or null) or -1
 * (reported: wrong type or out of [min, max]). */
int gc_gang_get_int(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                    int64_t min, int64_t max, int64_t *out) {
  int64_t n;
  if (gc_is_null(v))
    return 0;
  if (!gc_gang_int_value(v, &n)) {
    gc_gang_fail(c, prefix, "%s: must be an integer", path);
    return -1;
  }
  if (n < min) {
    gc_gang_fail(c, prefix, "%s: must be >= %lld", path, (long long)min);
    return -1;
  }
  if (n > max) {
    gc_gang_fail(c, prefix, "%s: must be <= %lld", path, (long long)max);
    return -1;
  }
  *out = n;
  return 1;
}

/* Reads an optional string; same return convention as get_int. */
int gc_gang_get_str(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                    const char **out) {
  if (gc_is_null(v))
    return 0;
  if (v->type != GC_STR) {
    gc_gang_fail(c, prefix, "%s: must be a string", path);
    return -1;
  }
  *out = v->u.s;
  return 1;
}

int gc_gang_get_bool(struct ctx *c, const char *prefix, const struct gc_value *v, const char *path,
                     int *out) {
  if (gc_is_null(v))
    return 0;
  if (v->type != GC_BOOL) {
    gc_gang_fail(c, prefix, "%s: must be a boolean", path);
    return -1;
  }
  *out = v->u.b;
  return 1;
}

/* Returns v if it is a map, NULL if absent/null; reports any other type. */
const struct gc_value *gc_gang_get_map(struct ctx *c, const char *prefix, const struct gc_value *v,
                                       const char *path, int *bad) {
  if (gc_is_null(v))
    return NULL;
  if (v->type != GC_MAP) {
    gc_gang_fail(c, prefix, "%s: must be an object", path);
    if (bad)
      *bad = 1;
    return NULL;
  }
  return v;
}

const struct gc_value *gc_gang_get_seq(struct ctx *c, const char *prefix, const struct gc_value *v,
                                       const char *path, int *bad) {
  if (gc_is_null(v))
    return NULL;
  if (v->type != GC_SEQ) {
    gc_gang_fail(c, prefix, "%s: must be an array", path);
    if (bad)
      *bad = 1;
    return NULL;
  }
  return v;
}

/* Checks a map of string to string (labels, annotations). */
void gc_gang_check_string_map(struct ctx *c, const char *prefix, const struct gc_value *v,
                              const char *path) {
  if (!gc_gang_get_map(c, prefix, v, path, NULL))
    return;
  for (size_t i = 0; i < v->len; i++)
    if (v->u.members[i].value->type != GC_STR)
      gc_gang_fail(c, prefix, "%s[%.*s]: must be a string", path, NAME_SHOW_MAX,
                   v->u.members[i].key);
}

const char *gc_gang_lpath(struct ctx *c, struct lpath *p) {
  if (!p->done)
    p->done = p->s ? gc_gang_fmt(c, p->f, p->s, p->i) : gc_gang_fmt(c, p->f, p->i, p->j);
  return p->done;
}
