/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_discovery: per-group-version discovery with a small answer cache.
 */
#include "gb_clock.h"
#include "gb_kube_discovery.h"
#include "gb_kube_discovery_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE_SLOTS 16

struct slot {
  char key[256]; /* "group/version/resource" */
  int served;
  double at;
};

struct gb_kube_discovery {
  struct gb_kube_client *client;
  double max_age;
  pthread_mutex_t lock;
  struct slot slots[CACHE_SLOTS];
  size_t next; /* round-robin replacement */
};

int gb_kube_discovery_check(struct gb_kube_client *c, const char *group, const char *version,
                            const char *resource, int *served, struct gb_kube_error *e) {
  struct gb_kube_error local;
  if (!e)
    e = &local;
  *served = 0;
  char path[512];
  /* The path of a collection without namespace is the discovery document
   * plus "/resource"; build it and cut the last segment. */
  if (gb_kube_client_path(path, sizeof(path), group, version, resource, NULL, NULL)) {
    gb_kube_error_clear(e);
    snprintf(e->message, sizeof(e->message), "discovery: invalid group/version/resource");
    return GC_EINVAL;
  }
  *strrchr(path, '/') = 0;
  json_object *doc = NULL;
  int rc = gb_kube_client_get(c, path, &doc, e);
  if (rc == GC_ENOTFOUND)
    return GC_OK;
  if (rc)
    return GC_EIO;
  json_object *res = NULL;
  if (!json_object_object_get_ex(doc, "resources", &res) ||
      !json_object_is_type(res, json_type_array)) {
    json_object_put(doc);
    snprintf(e->message, sizeof(e->message), "GET %s: not an APIResourceList", path);
    return GC_EIO;
  }
  size_t n = json_object_array_length(res);
  for (size_t i = 0; i < n && !*served; i++) {
    json_object *r = json_object_array_get_idx(res, i), *name;
    if (json_object_object_get_ex(r, "name", &name) &&
        json_object_is_type(name, json_type_string) &&
        !strcmp(json_object_get_string(name), resource))
      *served = 1;
  }
  json_object_put(doc);
  return GC_OK;
}

struct gb_kube_discovery *gb_kube_discovery_new(struct gb_kube_client *client, double max_age_s) {
  struct gb_kube_discovery *d = calloc(1, sizeof(*d));
  if (!d)
    return NULL;
  d->client = client;
  d->max_age = max_age_s > 0 ? max_age_s : 30;
  pthread_mutex_init(&d->lock, NULL);
  return d;
}

void gb_kube_discovery_free(struct gb_kube_discovery *d) {
  if (!d)
    return;
  pthread_mutex_destroy(&d->lock);
  free(d);
}

void gb_kube_discovery_invalidate(struct gb_kube_discovery *d) {
  pthread_mutex_lock(&d->lock);
  memset(d->slots, 0, sizeof(d->slots));
  pthread_mutex_unlock(&d->lock);
}

int gb_kube_discovery_served(struct gb_kube_discovery *d, const char *group, const char *version,
                             const char *resource, int *served, struct gb_kube_error *e) {
  char key[256];
  int n = snprintf(key, sizeof(key), "%s/%s/%s", group ? group : "", version ? version : "",
                   resource ? resource : "");
  if (n < 0 || (size_t)n >= sizeof(key))
    return GC_EINVAL;
  double t = gb_clock_s();
  pthread_mutex_lock(&d->lock);
  for (size_t i = 0; i < CACHE_SLOTS; i++)
    if (d->slots[i].key[0] && !strcmp(d->slots[i].key, key) && t - d->slots[i].at < d->max_age) {
      *served = d->slots[i].served;
      pthread_mutex_unlock(&d->lock);
      gb_kube_error_clear(e);
      return GC_OK;
    }
  pthread_mutex_unlock(&d->lock);
  int rc = gb_kube_discovery_check(d->client, group, version, resource, served, e);
  if (rc)
    return rc;
  pthread_mutex_lock(&d->lock);
  size_t idx = CACHE_SLOTS;
  for (size_t i = 0; i < CACHE_SLOTS && idx == CACHE_SLOTS; i++)
    if (!strcmp(d->slots[i].key, key))
      idx = i;
  if (idx == CACHE_SLOTS)
    idx = d->next++ % CACHE_SLOTS;
  snprintf(d->slots[idx].key, sizeof(d->slots[idx].key), "%s", key);
  d->slots[idx].served = *served;
  d->slots[idx].at = t;
  pthread_mutex_unlock(&d->lock);
  return GC_OK;
}
