/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_merge: strategic merge of document trees (see gc_merge.h).  Only the
 * nodes a patch changes are new; every subtree nothing is merged into is
 * shared with the inputs, so merging a small patch into a large runtime
 * template costs the size of the patch and the path to it, not the size of
 * the template.
 */
#include "gc_merge.h"
#include "gc_merge_test.h"

#include <string.h>

#include "gc_diag.h"

struct merge_key {
  const char *field;
  const char *key;
};

/* The list fields of JobSet/Pod specs that a strategic merge patch merges by
 * key (patchMergeKey in k8s.io/api), limited to those a runtime template
 * holds.  Every other list is atomic: the patch replaces it. */
static const struct merge_key MERGE_KEYS[] = {
    {"replicatedJobs", "name"},   {"containers", "name"},       {"initContainers", "name"},
    {"ephemeralContainers", "name"}, {"env", "name"},            {"volumes", "name"},
    {"imagePullSecrets", "name"}, {"volumeMounts", "mountPath"}, {"claims", "name"},
    {"resourceClaims", "name"},   {"schedulingGates", "name"},  {"volumeDevices", "devicePath"},
};

const char *gc_merge_key_for(const char *field) {
  if (!field)
    return NULL;
  for (size_t i = 0; i < sizeof(MERGE_KEYS) / sizeof(MERGE_KEYS[0]); i++)
    if (strcmp(MERGE_KEYS[i].field, field) == 0)
      return MERGE_KEYS[i].key;
  return NULL;
}

static int merge(struct gc_arena *a, const struct gc_value *base, const struct gc_value *patch,
                 const char *field, int depth, struct gc_value **out);

/* Checks that v nests no deeper than the merge limit, counting v itself at
 * `depth`.  Returns 0 or GC_ELIMIT. */
static int depth_ok(const struct gc_value *v, int depth) {
  if (depth > GC_MERGE_MAX_DEPTH)
    return GC_ELIMIT;
  if (!v)
    return GC_OK;
  if (v->type == GC_MAP) {
    for (size_t i = 0; i < v->len; i++)
      if (v->u.members[i].value && (v->u.members[i].value->type == GC_MAP ||
                                    v->u.members[i].value->type == GC_SEQ || depth >= GC_MERGE_MAX_DEPTH))
        if (depth_ok(v->u.members[i].value, depth + 1))
          return GC_ELIMIT;
  } else if (v->type == GC_SEQ) {
    for (size_t i = 0; i < v->len; i++)
      if (v->u.items[i] && (v->u.items[i]->type == GC_MAP || v->u.items[i]->type == GC_SEQ ||
                            depth >= GC_MERGE_MAX_DEPTH))
        if (depth_ok(v->u.items[i], depth + 1))
          return GC_ELIMIT;
  }
  return GC_OK;
}

/* A subtree nothing is merged into is shared with the input, not copied:
 * the result is read-only by contract.  The depth limit still applies, as it
 * did when such subtrees were copied. */
static int share_bounded(const struct gc_value *v, int depth, struct gc_value **out) {
  int rc = depth_ok(v, depth);
  *out = rc ? NULL : (struct gc_value *)v;
  return rc;
}

/* The merge-key value of a list item, or NULL when the item has none. */
static const struct gc_value *item_key(const struct gc_value *item, const char *key) {
  if (!item || item->type != GC_MAP)
    return NULL;
  return gc_map_get(item, key);
}

static int merge_maps(struct gc_arena *a, const struct gc_value *base,
                      const struct gc_value *patch, int depth, struct gc_value **out) {
  struct gc_value *m = gc_value_map(a);
  if (!m)
    return GC_ENOMEM;
  m->line = base->line;
  m->col = base->col;
  for (size_t i = 0; i < base->len; i++) {
    const struct gc_member *bm = &base->u.members[i];
    const struct gc_value *pv = gc_map_getn(patch, bm->key, bm->key_len);
    struct gc_value *c;
    int rc;
    if (pv && pv->type == GC_NULL)
      continue; /* null in a patch deletes the key */
    if (pv)
      rc = merge(a, bm->value, pv, bm->key, depth + 1, &c);
    else
      rc = share_bounded(bm->value, depth + 1, &c);
    if (rc)
      return rc;
    if (gc_map_append(a, m, bm->key, bm->key_len, c))
      return GC_ENOMEM;
  }
  for (size_t i = 0; i < patch->len; i++) {
    const struct gc_member *pm = &patch->u.members[i];
    struct gc_value *c;
    if (gc_map_getn(base, pm->key, pm->key_len) || pm->value->type == GC_NULL)
      continue;
    int rc = merge(a, NULL, pm->value, pm->key, depth + 1, &c);
    if (rc)
      return rc;
    if (gc_map_append(a, m, pm->key, pm->key_len, c))
      return GC_ENOMEM;
  }
  *out = m;
  return GC_OK;
}

/* Merges two lists by `key`: base items keep their order and are merged with
 * the patch item of the same key; patch items with a new key are appended in
 * patch order.  Patch items without the key are appended as they are. */
static int merge_keyed_lists(struct gc_arena *a, const struct gc_value *base,
                             const struct gc_value *patch, const char *key, int depth,
                             struct gc_value **out) {
  if (base->len + patch->len > GC_MERGE_MAX_LIST)
    return GC_ELIMIT;
  struct gc_value *s = gc_value_seq(a);
  if (!s)
    return GC_ENOMEM;
  s->line = base->line;
  s->col = base->col;
  for (size_t i = 0; i < base->len; i++) {
    const struct gc_value *bi = base->u.items[i];
    const struct gc_value *bk = item_key(bi, key);
    const struct gc_value *pi = NULL;
    for (size_t j = 0; bk && j < patch->len; j++) {
      const struct gc_value *pk = item_key(patch->u.items[j], key);
      if (pk && gc_value_equal(bk, pk)) {
        pi = patch->u.items[j];
        break;
      }
    }
    struct gc_value *c;
    int rc = pi ? merge(a, bi, pi, NULL, depth + 1, &c) : share_bounded(bi, depth + 1, &c);
    if (rc)
      return rc;
    if (gc_seq_push(a, s, c))
      return GC_ENOMEM;
  }
  for (size_t j = 0; j < patch->len; j++) {
    const struct gc_value *pi = patch->u.items[j];
    const struct gc_value *pk = item_key(pi, key);
    int found = 0;
    for (size_t i = 0; pk && i < base->len && !found; i++) {
      const struct gc_value *bk = item_key(base->u.items[i], key);
      found = bk && gc_value_equal(bk, pk);
    }
    if (found)
      continue;
    /* Two patch items with the same key: the first one wins the append,
     * later ones merge into it, as the API server does. */
    int dup = 0;
    for (size_t k = 0; pk && k < j && !dup; k++) {
      const struct gc_value *ok = item_key(patch->u.items[k], key);
      dup = ok && gc_value_equal(ok, pk);
    }
    if (dup) {
      for (size_t k = 0; k < s->len; k++) {
        const struct gc_value *sk = item_key(s->u.items[k], key);
        if (sk && gc_value_equal(sk, pk)) {
          struct gc_value *c;
          int rc = merge(a, s->u.items[k], pi, NULL, depth + 1, &c);
          if (rc)
            return rc;
          s->u.items[k] = c;
          break;
        }
      }
      continue;
    }
    struct gc_value *c;
    int rc = merge(a, NULL, pi, NULL, depth + 1, &c);
    if (rc)
      return rc;
    if (gc_seq_push(a, s, c))
      return GC_ENOMEM;
  }
  *out = s;
  return GC_OK;
}

/* 1 if a map member at some chain of maps from v is null (copy_patch drops
 * those, so v cannot be shared). */
static int has_map_null(const struct gc_value *v) {
  if (v->type != GC_MAP)
    return 0;
  for (size_t i = 0; i < v->len; i++)
    if (v->u.members[i].value->type == GC_NULL || has_map_null(v->u.members[i].value))
      return 1;
  return 0;
}

/* Copies a patch value that has nothing to merge with, dropping the nulls
 * inside it (a null in a patch never lands in the result). */
static int copy_patch(struct gc_arena *a, const struct gc_value *patch, int depth,
                      struct gc_value **out) {
  if (depth > GC_MERGE_MAX_DEPTH)
    return GC_ELIMIT;
  if (patch->type != GC_MAP)
    return share_bounded(patch, depth, out);
  /* A map with no null to drop is shared as it is. */
  int drc = depth_ok(patch, depth);
  if (drc)
    return drc;
  if (!has_map_null(patch)) {
    *out = (struct gc_value *)patch;
    return GC_OK;
  }
  struct gc_value *m = gc_value_map(a);
  if (!m)
    return GC_ENOMEM;
  m->line = patch->line;
  m->col = patch->col;
  for (size_t i = 0; i < patch->len; i++) {
    const struct gc_member *pm = &patch->u.members[i];
    if (pm->value->type == GC_NULL)
      continue;
    struct gc_value *c;
    int rc = copy_patch(a, pm->value, depth + 1, &c);
    if (rc)
      return rc;
    if (gc_map_append(a, m, pm->key, pm->key_len, c))
      return GC_ENOMEM;
  }
  *out = m;
  return GC_OK;
}

static int merge(struct gc_arena *a, const struct gc_value *base, const struct gc_value *patch,
                 const char *field, int depth, struct gc_value **out) {
  if (depth > GC_MERGE_MAX_DEPTH)
    return GC_ELIMIT;
  if (!patch)
    return share_bounded(base, depth, out);
  if (!base || base->type == GC_NULL)
    return copy_patch(a, patch, depth, out);
  if (base->type == GC_MAP && patch->type == GC_MAP)
    return merge_maps(a, base, patch, depth, out);
  const char *key = gc_merge_key_for(field);
  if (key && base->type == GC_SEQ && patch->type == GC_SEQ)
    return merge_keyed_lists(a, base, patch, key, depth, out);
  return copy_patch(a, patch, depth, out);
}

int gc_merge_strategic(struct gc_arena *a, const struct gc_value *base,
                       const struct gc_value *patch, const char *field, struct gc_value **out) {
  *out = NULL;
  if (!patch && !base)
    return GC_OK;
  if (patch && patch->type == GC_NULL)
    return GC_OK;
  return merge(a, base, patch, field, 0, out);
}
