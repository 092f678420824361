/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_events: de-duplicated core v1 Events (see the header).  The cache is a
 * chained hash table of entries on a doubly linked LRU list; the API calls
 * are made without the lock held.
 */
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gb_clock.h"
#include "gb_events.h"
#include "gb_hash.h"

struct ev_entry {
  struct gb_hnode node; /* first member: the cache table's link and hash */
  struct ev_entry *prev, *next;
  char name[256]; /* Event object name; "" until created */
  char first_ts[32];
  long count;         /* occurrences so far */
  double last_write;  /* monotonic seconds of the last successful write */
  char key[];         /* uid|ns/name|type|reason|message */
};

struct gb_events {
  struct gb_kube_client *client;
  char component[128];
  char instance[256];
  double min_interval_s;
  size_t max_cache;
  pthread_mutex_t mu;
  struct gb_htab cache;                 /* of struct ev_entry */
  struct ev_entry *lru_head, *lru_tail; /* head = most recent */
  size_t n;
  struct gb_events_stats stats;
};

static void rfc3339(char *buf, size_t cap) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

struct gb_events *gb_events_new(struct gb_kube_client *client, const struct gb_events_opts *o) {
  struct gb_events *ev = calloc(1, sizeof(*ev));
  if (!ev)
    return NULL;
  ev->client = client;
  snprintf(ev->component, sizeof(ev->component), "%s",
           o && o->component ? o->component : "gangbridge");
  if (o && o->instance)
    snprintf(ev->instance, sizeof(ev->instance), "%s", o->instance);
  else if (gethostname(ev->instance, sizeof(ev->instance) - 1))
    snprintf(ev->instance, sizeof(ev->instance), "unknown");
  ev->min_interval_s = o && o->min_interval_s > 0 ? o->min_interval_s : 0;
  ev->max_cache = o && o->max_cache ? o->max_cache : 4096;
  if (gb_htab_init(&ev->cache, 1024) < 0) {
    free(ev);
    return NULL;
  }
  pthread_mutex_init(&ev->mu, NULL);
  return ev;
}

void gb_events_free(struct gb_events *ev) {
  if (!ev)
    return;
  struct ev_entry *e = ev->lru_head;
  while (e) {
    struct ev_entry *n = e->next;
    free(e);
    e = n;
  }
  gb_htab_free(&ev->cache);
  pthread_mutex_destroy(&ev->mu);
  free(ev);
}

/* ---- cache (caller holds mu) --------------------------------------------- */

static void lru_unlink(struct gb_events *ev, struct ev_entry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    ev->lru_head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    ev->lru_tail = e->prev;
  e->prev = e->next = NULL;
}

static void lru_front(struct gb_events *ev, struct ev_entry *e) {
  e->next = ev->lru_head;
  e->prev = NULL;
  if (ev->lru_head)
    ev->lru_head->prev = e;
  ev->lru_head = e;
  if (!ev->lru_tail)
    ev->lru_tail = e;
}

static void drop(struct gb_events *ev, struct ev_entry *e) {
  gb_htab_remove(&ev->cache, &e->node);
  lru_unlink(ev, e);
  ev->n--;
  free(e);
}

static struct ev_entry *find(struct gb_events *ev, const char *key, uint64_t h) {
  for (struct gb_hnode *n = gb_htab_chain(&ev->cache, h); n; n = n->next)
    if (n->hash == h && !strcmp(((struct ev_entry *)n)->key, key))
      return (struct ev_entry *)n;
  return NULL;
}

static struct ev_entry *insert(struct gb_events *ev, const char *key, uint64_t h) {
  while (ev->n >= ev->max_cache && ev->lru_tail)
    drop(ev, ev->lru_tail);
  size_t len = strlen(key);
  struct ev_entry *e = calloc(1, sizeof(*e) + len + 1);
  if (!e)
    return NULL;
  memcpy(e->key, key, len + 1);
  e->node.hash = h;
  gb_htab_insert(&ev->cache, &e->node);
  lru_front(ev, e);
  ev->n++;
  return e;
}

/* ---- API ------------------------------------------------------------------- */

static json_object *str(const char *s) { return json_object_new_string(s ? s : ""); }

/* The namespace an Event about o lives in: o's own, or "default" for a
 * cluster-scoped object (client-go's recorder does the same). */
static const char *event_ns(const struct gb_event_ref *o) {
  return o->ns && *o->ns ? o->ns : "default";
}

static int create_event(struct gb_events *ev, const struct gb_event_ref *o, const char *type,
                        const char *reason, const char *msg, long count, const char *first_ts,
                        uint64_t hash, char *name_out, size_t name_cap,
                        struct gb_kube_error *e) {
  char now[32];
  rfc3339(now, sizeof(now));
  /* Named like client-go's Events (object name, a dot, a hex suffix), but the
   * suffix is the hash of the de-duplication key rather than the time: the
   * same Event after a restart or a leader change then meets the one already
   * recorded (409 AlreadyExists) instead of becoming a second object. */
  snprintf(name_out, name_cap, "%.236s.%016llx", o->name, (unsigned long long)hash);
  json_object *obj = json_object_new_object();
  json_object *meta = json_object_new_object();
  json_object *inv = json_object_new_object();
  json_object *src = json_object_new_object();
  if (!obj || !meta || !inv || !src) {
    json_object_put(obj);
    json_object_put(meta);
    json_object_put(inv);
    json_object_put(src);
    return GC_ENOMEM;
  }
  json_object_object_add(obj, "apiVersion", str("v1"));
  json_object_object_add(obj, "kind", str("Event"));
  json_object_object_add(meta, "name", str(name_out));
  json_object_object_add(meta, "namespace", str(event_ns(o)));
  json_object_object_add(obj, "metadata", meta);
  json_object_object_add(inv, "apiVersion", str(o->api_version));
  json_object_object_add(inv, "kind", str(o->kind));
  if (o->ns && *o->ns)
    json_object_object_add(inv, "namespace", str(o->ns));
  json_object_object_add(inv, "name", str(o->name));
  if (o->uid)
    json_object_object_add(inv, "uid", str(o->uid));
  json_object_object_add(obj, "involvedObject", inv);
  json_object_object_add(obj, "type", str(type));
  json_object_object_add(obj, "reason", str(reason));
  json_object_object_add(obj, "message", str(msg));
  json_object_object_add(src, "component", str(ev->component));
  json_object_object_add(src, "host", str(ev->instance));
  json_object_object_add(obj, "source", src);
  json_object_object_add(obj, "reportingComponent", str(ev->component));
  json_object_object_add(obj, "reportingInstance", str(ev->instance));
  json_object_object_add(obj, "firstTimestamp", str(first_ts ? first_ts : now));
  json_object_object_add(obj, "lastTimestamp", str(now));
  json_object_object_add(obj, "count", json_object_new_int64(count));
  char path[600];
  int rc = gb_kube_client_path(path, sizeof(path), "", "v1", "events", event_ns(o), NULL);
  if (!rc)
    rc = gb_kube_client_create(ev->client, path, obj, NULL, e);
  json_object_put(obj);
  return rc;
}

static int patch_count(struct gb_events *ev, const struct gb_event_ref *o, const char *name,
                       long count, struct gb_kube_error *e) {
  char now[32];
  rfc3339(now, sizeof(now));
  json_object *p = json_object_new_object();
  if (!p)
    return GC_ENOMEM;
  json_object_object_add(p, "count", json_object_new_int64(count));
  json_object_object_add(p, "lastTimestamp", str(now));
  char path[600];
  int rc = gb_kube_client_path(path, sizeof(path), "", "v1", "events", event_ns(o), name);
  if (!rc)
    rc = gb_kube_client_merge_patch(ev->client, path, p, NULL, e);
  json_object_put(p);
  return rc;
}

/* The Event `name` already exists (recorded before a restart): reads its
 * count so that later repeats continue from it.  Returns 0 or a GC_E* code. */
static int existing_count(struct gb_events *ev, const struct gb_event_ref *o, const char *name,
                          long *count, struct gb_kube_error *e) {
  char path[600];
  json_object *obj = NULL, *c = NULL;
  int rc = gb_kube_client_path(path, sizeof(path), "", "v1", "events", event_ns(o), name);
  if (!rc)
    rc = gb_kube_client_get(ev->client, path, &obj, e);
  if (!rc && json_object_object_get_ex(obj, "count", &c) && json_object_get_int64(c) > 0)
    *count = (long)json_object_get_int64(c);
  json_object_put(obj);
  return rc;
}

/* One write in flight: the Event's name ("" until created), first
 * timestamp, the count to write, and what happened. */
struct ev_write {
  char name[256];
  char first_ts[32];
  long count;
  int created;  /* a new Event object was POSTed (or tried) */
  long adopted; /* > 0: one recorded before a restart was found; its count */
};

/* Writes one occurrence: patches the Event's count, or creates it (again
 * after it expired: Events have a TTL).  An Event recorded before a restart
 * (409 AlreadyExists, since names derive from the key) is adopted, not
 * repeated.  Returns 0 or a GC_E* code. */
static int write_event(struct gb_events *ev, const struct gb_event_ref *o, const char *type,
                       const char *reason, const char *msg, uint64_t h, struct ev_write *w,
                       struct gb_kube_error *e) {
  if (w->name[0]) {
    int rc = patch_count(ev, o, w->name, w->count, e);
    if (rc != GC_ENOTFOUND)
      return rc;
  }
  w->created = 1;
  int rc = create_event(ev, o, type, reason, msg, w->count, w->first_ts, h, w->name,
                        sizeof(w->name), e);
  if (rc == GC_EIO && e && e->http == 409) {
    gb_kube_error_clear(e);
    w->created = 0;
    w->adopted = w->count;
    rc = existing_count(ev, o, w->name, &w->adopted, e);
  }
  return rc;
}

int gb_events_emit(struct gb_events *ev, const struct gb_event_ref *o, const char *type,
                   const char *reason, const char *message, struct gb_kube_error *e) {
  return gb_events_record(ev, o, type, reason, message, 0, e);
}

int gb_events_record(struct gb_events *ev, const struct gb_event_ref *o, const char *type,
                     const char *reason, const char *message, int once,
                     struct gb_kube_error *e) {
  if (!ev || !o || !o->name || !*o->name || !o->kind || !o->api_version || !type || !reason ||
      !message)
    return GC_EINVAL;
  char msg[GB_EVENT_MESSAGE_MAX + 1];
  snprintf(msg, sizeof(msg), "%s", message);
  const char *ns = o->ns ? o->ns : "";
  size_t klen = strlen(msg) + strlen(ns) + strlen(o->name) + strlen(type) + strlen(reason) +
                (o->uid ? strlen(o->uid) : 0) + 8;
  char *key = malloc(klen);
  if (!key)
    return GC_ENOMEM;
  snprintf(key, klen, "%s|%s/%s|%s|%s|%s", o->uid ? o->uid : "", ns, o->name, type, reason, msg);
  uint64_t h = gb_hash_str(key);
  double now = gb_clock_s();
  struct ev_write w = {"", "", 0, 0, 0};
  pthread_mutex_lock(&ev->mu);
  struct ev_entry *ent = find(ev, key, h);
  if (!ent) {
    ent = insert(ev, key, h);
    if (!ent) {
      pthread_mutex_unlock(&ev->mu);
      free(key);
      return GC_ENOMEM;
    }
    rfc3339(ent->first_ts, sizeof(ent->first_ts));
  } else {
    lru_unlink(ev, ent);
    lru_front(ev, ent);
  }
  if (once && ent->name[0]) {
    pthread_mutex_unlock(&ev->mu);
    free(key);
    return 0;
  }
  ent->count++;
  w.count = ent->count;
  if (ent->name[0] && ev->min_interval_s > 0 && now - ent->last_write < ev->min_interval_s) {
    ev->stats.deferred++;
    pthread_mutex_unlock(&ev->mu);
    free(key);
    return 0;
  }
  snprintf(w.name, sizeof(w.name), "%s", ent->name);
  snprintf(w.first_ts, sizeof(w.first_ts), "%s", ent->first_ts);
  pthread_mutex_unlock(&ev->mu);

  int rc = write_event(ev, o, type, reason, msg, h, &w, e);
  pthread_mutex_lock(&ev->mu);
  ent = find(ev, key, h); /* it may have been evicted meanwhile */
  if (rc == 0) {
    if (w.adopted)
      ev->stats.adopted++;
    else if (w.created)
      ev->stats.created++;
    else
      ev->stats.patched++;
    if (ent) {
      snprintf(ent->name, sizeof(ent->name), "%s", w.name);
      if (w.adopted)
        ent->count = w.adopted;
      ent->last_write = now;
    }
  } else {
    ev->stats.failed++;
    if (ent && w.created)
      ent->name[0] = '\0';
  }
  pthread_mutex_unlock(&ev->mu);
  free(key);
  return rc;
}
