/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_keep: keep paths and pruning (see gb_keep.h).  Pruning walks the
 * object once; at each level it narrows the paths to those whose step
 * there names the member (or selects the array element), removes what no
 * path names and goes down with the narrowed set.  json-c forbids deleting
 * members while iterating, so the names to drop are collected first, in
 * bounded batches.
 */
#include "gb_keep.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gb_kobj.h"

static int is_elem(const char *step) { return step[0] == '['; }

int gb_keep_check(const struct gb_keep *paths, size_t n, struct gc_diags *d) {
  if (n > GB_KEEP_MAX) {
    gc_diags_addf(d, "keep paths: %zu, more than %d", n, GB_KEEP_MAX);
    return GC_EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    const char *const *p = paths[i].path;
    if (!p[0]) {
      gc_diags_addf(d, "keep path %zu: no step", i);
      return GC_EINVAL;
    }
    for (size_t s = 0; s <= GB_KEEP_DEPTH && p[s]; s++) {
      size_t len = strlen(p[s]);
      const char *eq = strchr(p[s], '=');
      int bad_elem = is_elem(p[s]) &&
                     (p[s][len - 1] != ']' || (len > 2 && (!eq || eq == p[s] + 1 || eq[1] == ']')));
      if (s == GB_KEEP_DEPTH || !len || len > GB_KEEP_STEP_MAX || bad_elem) {
        gc_diags_addf(d,
                      "keep path %zu (%.64s...): step %zu is empty, too long, too deep or a "
                      "malformed [key=value]",
                      i, p[0], s);
        return GC_EINVAL;
      }
    }
  }
  return 0;
}

/* 1 when element step `step` ("[]" or "[key=value]") selects e. */
static int selects(const char *step, json_object *e) {
  size_t len = strlen(step);
  if (len == 2)
    return 1;
  const char *eq = strchr(step, '=');
  char key[GB_KEEP_STEP_MAX + 1];
  size_t kl = (size_t)(eq - step) - 1;
  memcpy(key, step + 1, kl);
  key[kl] = '\0';
  const char *v = gb_kobj_str(e, key);
  size_t vl = len - (size_t)(eq - step) - 2;
  return v && strlen(v) == vl && !memcmp(v, eq + 1, vl);
}

static void prune_level(json_object *v, const struct gb_keep *const *ks, size_t n, int depth);

/* Goes down into v with the paths that reached it (at step depth - 1):
 * kept whole when one of them ends there. */
static void descend(json_object *v, const struct gb_keep *const *ks, size_t n, int depth) {
  for (size_t i = 0; i < n; i++)
    if (!ks[i]->path[depth])
      return;
  prune_level(v, ks, n, depth);
}

static void prune_object(json_object *o, const struct gb_keep *const *ks, size_t n, int depth) {
  const struct gb_keep *sub[GB_KEEP_MAX];
  for (int more = 1; more;) {
    char *drop[64];
    size_t nd = 0;
    more = 0;
    json_object_object_foreach(o, k, v) {
      size_t m = 0;
      for (size_t i = 0; i < n; i++)
        if (!is_elem(ks[i]->path[depth]) && !strcmp(ks[i]->path[depth], k))
          sub[m++] = ks[i];
      if (m) {
        descend(v, sub, m, depth + 1);
        continue;
      }
      if (nd == sizeof(drop) / sizeof(drop[0])) {
        more = 1;
        break;
      }
      drop[nd++] = k;
    }
    for (size_t i = 0; i < nd; i++)
      json_object_object_del(o, drop[i]);
  }
}

static void prune_array(json_object *a, const struct gb_keep *const *ks, size_t n, int depth) {
  const struct gb_keep *sub[GB_KEEP_MAX];
  for (size_t idx = gb_kobj_len(a); idx-- > 0;) {
    json_object *e = json_object_array_get_idx(a, idx);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (is_elem(ks[i]->path[depth]) && selects(ks[i]->path[depth], e))
        sub[m++] = ks[i];
    if (m)
      descend(e, sub, m, depth + 1);
    else
      json_object_array_del_idx(a, idx, 1);
  }
}

static void prune_level(json_object *v, const struct gb_keep *const *ks, size_t n, int depth) {
  if (json_object_is_type(v, json_type_object))
    prune_object(v, ks, n, depth);
  else if (json_object_is_type(v, json_type_array))
    prune_array(v, ks, n, depth);
}

void gb_keep_prune(json_object *obj, const struct gb_keep *const *paths, size_t n) {
  if (!obj || n > GB_KEEP_MAX)
    return;
  prune_level(obj, paths, n, 0);
}

/* ---- decoding only what the paths keep --------------------------------------- */

struct dec {
  struct gb_sj *s;
  json_tokener *tok;
};

/* json-c's reading of the scalar sp that the scanner accepted: plain
 * strings and literals are built here (as json-c builds them), numbers and
 * escaped strings are handed to json-c itself. */
static int scalar(struct dec *x, const struct gb_sj_span *sp, json_object **out) {
  const char *p = sp->p;
  size_t len = sp->len;
  *out = NULL;
  if (len > INT32_MAX - 1) {
    gb_sj_fail(x->s, "value longer than %d bytes", INT32_MAX - 1);
    return GC_ELIMIT;
  }
  if (p[0] == 'n')
    return 0; /* json-c's null is the NULL object */
  int plain = p[0] == '"' && !memchr(p + 1, '\\', len - 2);
  if (p[0] == 't' || p[0] == 'f' || plain) {
    *out = plain ? json_object_new_string_len(p + 1, (int)(len - 2))
                 : json_object_new_boolean(p[0] == 't');
    return *out ? 0 : GC_ENOMEM;
  }
  /* json-c ends a number only at the byte after it: inside the text that
   * byte is there (the scanner stopped at it); at its very end a copy gets a
   * NUL. */
  char num[80], *heap = NULL;
  const char *q = p;
  size_t n = len;
  if (p[0] != '"') {
    if (p + len < x->s->end) {
      n = len + 1;
    } else {
      char *buf = len < sizeof(num) ? num : (heap = malloc(len + 1));
      if (!buf)
        return GC_ENOMEM;
      memcpy(buf, p, len);
      buf[len] = '\0';
      q = buf;
      n = len + 1;
    }
  }
  json_tokener_reset(x->tok);
  *out = json_tokener_parse_ex(x->tok, q, (int)n);
  enum json_tokener_error err = json_tokener_get_error(x->tok);
  free(heap);
  if (err == json_tokener_success)
    return 0;
  json_object_put(*out);
  *out = NULL;
  x->s->p = p;
  return gb_sj_fail(x->s, "json-c refused the value: %s", json_tokener_error_desc(err));
}

static int build(struct dec *x, json_object **out);

/* A member name of a value kept whole, as json-c stores it: a C string
 * (up to a NUL), escapes decoded by json-c itself (so that even a lone
 * surrogate reads as json-c reads it).  raw is where the scanner stood
 * before the member (the name is the first string after it), end where it
 * stands after the colon.  *heap, when set, is the caller's to free. */
static int member_name(struct dec *x, const char *raw, const char *end, char *buf, size_t cap,
                       const char **name, char **heap) {
  const char *q = memchr(raw, '"', (size_t)(end - raw)), *e = q + 1;
  int esc = 0;
  while (*e != '"') {
    esc |= *e == '\\';
    e += *e == '\\' ? 2 : 1;
  }
  *heap = NULL;
  json_object *str = NULL;
  const char *v = q + 1;
  size_t n = (size_t)(e - v);
  if (esc) {
    struct gb_sj_span sp = {q, (size_t)(e + 1 - q)};
    int rc = scalar(x, &sp, &str);
    if (rc < 0)
      return rc;
    v = json_object_get_string(str);
    n = strlen(v);
  }
  char *b = n < cap ? buf : (*heap = malloc(n + 1));
  if (b) {
    memcpy(b, v, n);
    b[n] = '\0';
  }
  json_object_put(str);
  *name = b;
  return b ? 0 : GC_ENOMEM;
}

static int build_object(struct dec *x, json_object **out) {
  struct gb_sj *s = x->s;
  struct gb_sj_span key;
  int rc = gb_sj_object_begin(s, "value");
  if (rc < 0)
    return rc;
  json_object *o = json_object_new_object();
  if (!o)
    return GC_ENOMEM;
  const char *raw = s->p;
  while ((rc = gb_sj_object_next(s, &key)) == 1) {
    char buf[256], *heap;
    const char *name;
    json_object *v = NULL;
    if ((rc = member_name(x, raw, s->p, buf, sizeof(buf), &name, &heap)) < 0)
      break;
    if (!(rc = build(x, &v)) && json_object_object_add(o, name, v)) {
      json_object_put(v);
      rc = GC_ENOMEM;
    }
    free(heap);
    if (rc < 0)
      break;
    raw = s->p;
  }
  if (rc < 0) {
    json_object_put(o);
    return rc;
  }
  *out = o;
  return 0;
}

static int build_array(struct dec *x, json_object **out) {
  int rc = gb_sj_array_begin(x->s, "value");
  if (rc < 0)
    return rc;
  json_object *a = json_object_new_array();
  if (!a)
    return GC_ENOMEM;
  while ((rc = gb_sj_array_next(x->s)) == 1) {
    json_object *v = NULL;
    if ((rc = build(x, &v)) < 0)
      break;
    if (json_object_array_add(a, v)) {
      json_object_put(v);
      rc = GC_ENOMEM;
      break;
    }
  }
  if (rc < 0) {
    json_object_put(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* The value at the cursor, kept whole: the tree json-c would build of it
 * (the scanner validates as it goes; its depth bound holds the recursion). */
static int build(struct dec *x, json_object **out) {
  *out = NULL;
  int c = gb_sj_peek(x->s);
  if (c == '{')
    return build_object(x, out);
  if (c == '[')
    return build_array(x, out);
  struct gb_sj_span sp;
  int rc = gb_sj_skip(x->s, &sp);
  return rc < 0 ? rc : scalar(x, &sp, out);
}

/* The scanner's key as json-c keeps it: up to its first NUL. */
static size_t key_len(const struct gb_sj_span *key) {
  const char *nul = memchr(key->p, '\0', key->len);
  return nul ? (size_t)(nul - key->p) : key->len;
}

/* Whether the element at the cursor is selected by "[key=value]" (as
 * selects() decides on json-c's element: an object whose last member
 * `key` is the string `value`); the cursor does not move. */
static int elem_selects(struct dec *x, const char *step, int *sel) {
  struct gb_sj *s = x->s;
  const char *at = s->p;
  int depth = s->depth, rc;
  *sel = 0;
  if (gb_sj_peek(s) != '{')
    return 0;
  const char *eq = strchr(step, '=');
  size_t kl = (size_t)(eq - step) - 1, vl = strlen(eq + 1) - 1;
  struct gb_sj_span key, val;
  if ((rc = gb_sj_object_begin(s, "value")) < 0)
    return rc;
  while ((rc = gb_sj_object_next(s, &key)) == 1) {
    int is_key = key_len(&key) == kl && !memcmp(key.p, step + 1, kl);
    int is_str = gb_sj_peek(s) == '"';
    if ((rc = gb_sj_skip(s, &val)) < 0)
      return rc;
    if (!is_key)
      continue;
    *sel = 0;
    if (!is_str)
      continue;
    json_object *v = NULL;
    if ((rc = scalar(x, &val, &v)) < 0)
      return rc;
    const char *vs = json_object_get_string(v);
    *sel = strlen(vs) == vl && !memcmp(vs, eq + 1, vl);
    json_object_put(v);
  }
  if (rc < 0)
    return rc;
  s->p = at;
  s->depth = depth;
  return 0;
}

static int decode(struct dec *x, const struct gb_keep *const *ks, size_t n, int depth,
                  json_object **out);

static int decode_object(struct dec *x, const struct gb_keep *const *ks, size_t n, int depth,
                         json_object **out) {
  const struct gb_keep *sub[GB_KEEP_MAX];
  struct gb_sj_span key;
  int rc = gb_sj_object_begin(x->s, "value");
  if (rc < 0)
    return rc;
  json_object *o = json_object_new_object();
  if (!o)
    return GC_ENOMEM;
  while ((rc = gb_sj_object_next(x->s, &key)) == 1) {
    size_t kl = key_len(&key), m = 0;
    const char *name = NULL;
    for (size_t i = 0; i < n; i++) {
      const char *step = ks[i]->path[depth];
      if (kl && step[0] == key.p[0] && !is_elem(step) && !strncmp(step, key.p, kl) &&
          step[kl] == '\0') {
        sub[m++] = ks[i];
        name = step;
      }
    }
    if (!m) {
      if ((rc = gb_sj_skip(x->s, NULL)) < 0)
        break;
      continue;
    }
    json_object *v = NULL;
    if ((rc = decode(x, sub, m, depth + 1, &v)) < 0)
      break;
    if (json_object_object_add(o, name, v)) {
      json_object_put(v);
      rc = GC_ENOMEM;
      break;
    }
  }
  if (rc < 0) {
    json_object_put(o);
    return rc;
  }
  *out = o;
  return 0;
}

/* The paths among ks whose element step at depth selects the element at
 * the cursor (into sub); the last "[key=value]" answer is reused for the
 * same step, as several paths usually share it. */
static int select_elem(struct dec *x, const struct gb_keep *const *ks, size_t n, int depth,
                       const struct gb_keep **sub, size_t *m) {
  const char *last = NULL;
  int sel = 0;
  *m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *step = ks[i]->path[depth];
    if (!is_elem(step))
      continue;
    if (step[1] != ']' && (!last || strcmp(last, step))) {
      int rc = elem_selects(x, step, &sel);
      if (rc < 0)
        return rc;
      last = step;
    }
    if (step[1] == ']' || sel)
      sub[(*m)++] = ks[i];
  }
  return 0;
}

static int decode_array(struct dec *x, const struct gb_keep *const *ks, size_t n, int depth,
                        json_object **out) {
  const struct gb_keep *sub[GB_KEEP_MAX];
  int rc = gb_sj_array_begin(x->s, "value");
  if (rc < 0)
    return rc;
  json_object *a = json_object_new_array();
  if (!a)
    return GC_ENOMEM;
  while ((rc = gb_sj_array_next(x->s)) == 1) {
    size_t m = 0;
    if ((rc = select_elem(x, ks, n, depth, sub, &m)) < 0)
      break;
    if (!m) {
      if ((rc = gb_sj_skip(x->s, NULL)) < 0)
        break;
      continue;
    }
    json_object *v = NULL;
    if ((rc = decode(x, sub, m, depth + 1, &v)) < 0)
      break;
    if (json_object_array_add(a, v)) {
      json_object_put(v);
      rc = GC_ENOMEM;
      break;
    }
  }
  if (rc < 0) {
    json_object_put(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* The value at the cursor, reached by the n paths ks at step depth: whole
 * when one of them ends there (or it is a scalar), else its kept parts. */
static int decode(struct dec *x, const struct gb_keep *const *ks, size_t n, int depth,
                  json_object **out) {
  *out = NULL;
  int c = gb_sj_peek(x->s), all = 0;
  for (size_t i = 0; i < n && !all; i++)
    all = !ks[i]->path[depth];
  if (!all && c == '{')
    return decode_object(x, ks, n, depth, out);
  if (!all && c == '[')
    return decode_array(x, ks, n, depth, out);
  return build(x, out);
}

int gb_keep_decode(struct gb_sj *s, const struct gb_keep *const *paths, size_t n,
                   json_tokener *tok, json_object **out) {
  *out = NULL;
  if (n > GB_KEEP_MAX) {
    gb_sj_fail(s, "more than %d keep paths", GB_KEEP_MAX);
    return GC_ELIMIT;
  }
  struct dec x = {s, tok};
  return decode(&x, paths, n, 0, out);
}
