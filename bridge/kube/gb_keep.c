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
