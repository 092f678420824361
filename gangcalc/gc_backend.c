/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_backend: the backend table and its lookups (see gc_backend.h).  A new
 * backend is its own file gc_backend_<name>.c defining one descriptor, and
 * one row in BACKENDS below.
 */
#include "gc_backend.h"

#include <stdio.h>
#include <string.h>

extern const struct gc_backend gc_backend_volcano;
extern const struct gc_backend gc_backend_cosched;
extern const struct gc_backend gc_backend_kai;
extern const struct gc_backend gc_backend_workload;

/* In `auto` order: the first whose API is served wins; [0] is the default. */
static const struct gc_backend *const BACKENDS[] = {
    &gc_backend_volcano,
    &gc_backend_cosched,
    &gc_backend_kai,
    &gc_backend_workload,
};
#define N_BACKENDS (sizeof(BACKENDS) / sizeof(BACKENDS[0]))

_Static_assert(N_BACKENDS <= GC_BACKEND_MAX, "raise GC_BACKEND_MAX");

size_t gc_backend_count(void) { return N_BACKENDS; }

const struct gc_backend *gc_backend_at(size_t i) { return i < N_BACKENDS ? BACKENDS[i] : NULL; }

int gc_backend_index(const struct gc_backend *b) {
  for (size_t i = 0; b && i < N_BACKENDS; i++)
    if (BACKENDS[i] == b)
      return (int)i;
  return -1;
}

const struct gc_backend *gc_backend_default(void) { return BACKENDS[0]; }

const struct gc_backend *gc_backend_by_name(const char *name) {
  for (size_t i = 0; name && i < N_BACKENDS; i++)
    if (!strcmp(BACKENDS[i]->name, name))
      return BACKENDS[i];
  return NULL;
}

/* 1 when api_version is "<group>/<anything>". */
static int in_group(const char *api_version, const char *group) {
  size_t n = strlen(group);
  return !strncmp(api_version, group, n) && api_version[n] == '/';
}

const struct gc_backend *gc_backend_by_object(const char *api_version, const char *kind) {
  if (!api_version || !kind)
    return NULL;
  for (size_t i = 0; i < N_BACKENDS; i++) {
    const struct gc_backend *b = BACKENDS[i];
    if (strcmp(b->kind, kind) != 0)
      continue;
    if (in_group(api_version, b->group))
      return b;
    for (size_t k = 0; k < GC_BACKEND_MAX_KEYS && b->legacy_groups[k]; k++)
      if (in_group(api_version, b->legacy_groups[k]))
        return b;
  }
  return NULL;
}

const struct gc_backend *gc_backend_by_proto(int proto) {
  for (size_t i = 0; i < N_BACKENDS; i++)
    if (BACKENDS[i]->proto == proto)
      return BACKENDS[i];
  return NULL;
}

const struct gc_backend *gc_backend_by_extender(const char *extender) {
  for (size_t i = 0; extender && i < N_BACKENDS; i++)
    if (BACKENDS[i]->extender && !strcmp(BACKENDS[i]->extender, extender))
      return BACKENDS[i];
  return NULL;
}

const char *gc_backend_name(const struct gc_backend *b) { return b ? b->name : "unset"; }

/* The names of the backends (serve_only: those serve can use). */
static const char *names_of(char *buf, size_t cap, const char *last, int serve_only) {
  size_t used = 0, n = 0, k = 0;
  if (!cap)
    return buf;
  buf[0] = '\0';
  for (size_t i = 0; i < N_BACKENDS; i++)
    n += !(serve_only && BACKENDS[i]->offline_only);
  for (size_t i = 0; i < N_BACKENDS && used < cap; i++) {
    if (serve_only && BACKENDS[i]->offline_only)
      continue;
    const char *sep = k == 0 ? "" : k + 1 == n ? last : ", ";
    int w = snprintf(buf + used, cap - used, "%s%s", sep, BACKENDS[i]->name);
    if (w < 0)
      break;
    used += (size_t)w;
    k++;
  }
  return buf;
}

const char *gc_backend_names(char *buf, size_t cap, const char *last) {
  return names_of(buf, cap, last, 0);
}

const char *gc_backend_serve_names(char *buf, size_t cap, const char *last) {
  return names_of(buf, cap, last, 1);
}

const struct gc_backend_join *gc_backend_join_of(const struct gc_backend *b,
                                                 enum gc_join_value value) {
  for (size_t i = 0; b && i < b->n_joins; i++)
    if (b->joins[i].value == value && !b->joins[i].legacy)
      return &b->joins[i];
  return NULL;
}

const struct gc_backend_join *gc_backend_join_find(enum gc_join_at at, const char *key, size_t len,
                                                   int with_legacy,
                                                   const struct gc_backend **owner) {
  for (size_t i = 0; key && i < N_BACKENDS; i++) {
    const struct gc_backend *b = BACKENDS[i];
    for (size_t j = 0; j < b->n_joins; j++) {
      const struct gc_backend_join *jn = &b->joins[j];
      if (jn->at == at && (with_legacy || !jn->legacy) && strlen(jn->key) == len &&
          !memcmp(jn->key, key, len)) {
        if (owner)
          *owner = b;
        return jn;
      }
    }
  }
  return NULL;
}

int gc_backend_phase_started(const struct gc_backend *b, const char *phase) {
  for (size_t i = 0; b && phase && i < GC_BACKEND_MAX_KEYS && b->status.started_phases[i]; i++)
    if (!strcmp(b->status.started_phases[i], phase))
      return 1;
  return 0;
}

const struct gc_backend_version *gc_backend_version_find(const struct gc_backend *b,
                                                         const char *version) {
  for (size_t i = 0; b && version && i < b->n_versions; i++)
    if (!strcmp(b->versions[i].version, version))
      return &b->versions[i];
  return NULL;
}

const struct gc_backend_version *gc_backend_version_pick(const struct gc_backend *b,
                                                         const char *const *served, size_t n) {
  /* The versions are newest first: the first one served wins. */
  for (size_t i = 0; b && i < b->n_versions; i++)
    for (size_t k = 0; served && k < n; k++)
      if (served[k] && !strcmp(served[k], b->versions[i].version))
        return &b->versions[i];
  return NULL;
}

const struct gc_backend_version *gc_backend_version_tracked(const struct gc_backend *b,
                                                            const char *api_version,
                                                            const char *kind) {
  for (size_t i = 0; b && api_version && kind && i < b->n_versions; i++) {
    const struct gc_backend_version *v = &b->versions[i];
    const char *k = v->status_kind ? v->status_kind : b->kind;
    if (!strcmp(v->api_version, api_version) && !strcmp(k, kind))
      return v;
  }
  return NULL;
}

const char *gc_backend_version_names(const struct gc_backend *b, char *buf, size_t cap) {
  size_t used = 0, n = b ? b->n_versions : 0;
  if (!cap)
    return buf;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < cap; i++) {
    const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
    int w = snprintf(buf + used, cap - used, "%s%s", sep, b->versions[i].version);
    if (w < 0)
      break;
    used += (size_t)w;
  }
  return buf;
}
