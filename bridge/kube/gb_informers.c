/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_informers: the shared informer factory (see gb_informers.h): a small
 * table of informers keyed by group, version and resource, each with the
 * counters its last metrics collection saw.
 */
#include "gb_informers.h"
#include "gb_informers_test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gb_log.h"

#define MAX_INFORMERS 32

struct gb_informers;

struct slot {
  struct gb_informers *f;
  struct gb_informer *inf;
  char *group, *version, *resource;
  int deferred;
  struct gb_informer_stats last; /* at the last collection */
  unsigned long long last_timeouts;
};

struct gb_informers {
  struct gb_kube_client *client;
  struct gb_informers_opts o;
  pthread_mutex_t mu; /* guards n and the slots' last counters */
  struct slot s[MAX_INFORMERS];
  size_t n;
  int started;
};

static int same(const char *a, const char *b) { return !strcmp(a ? a : "", b ? b : ""); }

/* Every informer's log line: debug for the expected (a relist), a warning
 * and the errors{informer,watch} counter for a failure. */
static void on_log(void *arg, int is_error, const char *msg) {
  struct slot *s = arg;
  gb_log(is_error ? GB_LOG_WARN : GB_LOG_DEBUG, "informer", "resource", s->resource, "message", msg,
         NULL);
  if (is_error && s->f->o.metrics)
    gb_metric_counter_inc(s->f->o.metrics->errors, (const char *[]){"informer", "watch"});
}

int gb_informers_new(struct gb_kube_client *client, const struct gb_informers_opts *o,
                     struct gb_informers **out) {
  *out = calloc(1, sizeof(**out));
  if (!*out)
    return GC_ENOMEM;
  (*out)->client = client;
  if (o)
    (*out)->o = *o;
  pthread_mutex_init(&(*out)->mu, NULL);
  return 0;
}

static struct slot *find(struct gb_informers *f, const char *group, const char *version,
                         const char *resource) {
  for (size_t i = 0; i < f->n; i++)
    if (same(f->s[i].group, group) && same(f->s[i].version, version) &&
        same(f->s[i].resource, resource))
      return &f->s[i];
  return NULL;
}

/* A new slot with a handler-less informer of spec's resource. */
static int make_slot(struct gb_informers *f, const struct gb_informer_spec *spec, struct slot **out,
                     struct gc_diags *d) {
  if (f->n == MAX_INFORMERS) {
    gc_diags_addf(d, "informer factory: more than %d resources", MAX_INFORMERS);
    return GC_EINVAL;
  }
  struct slot *s = &f->s[f->n];
  memset(s, 0, sizeof(*s));
  struct gb_informer_opts io;
  memset(&io, 0, sizeof(io));
  io.group = spec->group;
  io.version = spec->version;
  io.resource = spec->resource;
  io.min_watch_timeout_s = f->o.min_watch_timeout_s;
  io.on_log = on_log;
  io.log_arg = s;
  s->f = f;
  int rc = gb_informer_new(f->client, &io, &s->inf, d);
  s->group = strdup(spec->group ? spec->group : "");
  s->version = strdup(spec->version);
  s->resource = strdup(spec->resource);
  if (!rc && (!s->group || !s->version || !s->resource))
    rc = GC_ENOMEM;
  if (rc) {
    gb_informer_free(s->inf);
    free(s->group);
    free(s->version);
    free(s->resource);
    memset(s, 0, sizeof(*s));
    return rc;
  }
  s->deferred = spec->deferred;
  pthread_mutex_lock(&f->mu);
  f->n++;
  pthread_mutex_unlock(&f->mu);
  *out = s;
  return 0;
}

int gb_informers_add(struct gb_informers *f, const struct gb_informer_spec *spec,
                     const struct gb_informer_handler *h, struct gb_informer **inf,
                     struct gc_diags *d) {
  if (inf)
    *inf = NULL;
  if (!spec || !spec->version || !spec->resource) {
    gc_diags_addf(d, "informer factory: version and resource are required");
    return GC_EINVAL;
  }
  struct slot *s = find(f, spec->group, spec->version, spec->resource);
  if (f->started || (s && s->deferred != spec->deferred)) {
    gc_diags_addf(d, "informer factory: %s: %s", spec->resource,
                  f->started ? "registered after the start" : "deferred by one consumer only");
    return GC_EUSAGE;
  }
  int rc = s ? 0 : make_slot(f, spec, &s, d);
  if (!rc)
    rc = gb_informer_add_handler(s->inf, h, d);
  if (!rc && inf)
    *inf = s->inf;
  return rc;
}

struct gb_informer *gb_informers_lookup(struct gb_informers *f, const char *group,
                                        const char *version, const char *resource) {
  pthread_mutex_lock(&f->mu);
  struct slot *s = find(f, group, version, resource);
  pthread_mutex_unlock(&f->mu);
  return s ? s->inf : NULL;
}

int gb_informers_start(struct gb_informers *f) {
  f->started = 1;
  for (size_t i = 0; i < f->n; i++) {
    if (f->s[i].deferred)
      continue;
    int rc = gb_informer_start(f->s[i].inf);
    if (rc) {
      gb_log(GB_LOG_ERROR, "cannot start informer", "resource", gb_informer_name(f->s[i].inf),
             "error", gc_diag_strerror(rc), NULL);
      return rc;
    }
  }
  return 0;
}

void gb_informers_stop(struct gb_informers *f) {
  for (size_t i = 0; f && i < f->n; i++)
    gb_informer_stop(f->s[i].inf);
}

void gb_informers_free(struct gb_informers *f) {
  if (!f)
    return;
  gb_informers_stop(f);
  for (size_t i = 0; i < f->n; i++) {
    gb_informer_free(f->s[i].inf);
    free(f->s[i].group);
    free(f->s[i].version);
    free(f->s[i].resource);
  }
  pthread_mutex_destroy(&f->mu);
  free(f);
}

size_t gb_informers_count(struct gb_informers *f) {
  pthread_mutex_lock(&f->mu);
  size_t n = f->n;
  pthread_mutex_unlock(&f->mu);
  return n;
}

/* Adds to the restarts counter what one informer did since the last call. */
static void collect_one(const struct gb_service_metrics *m, struct slot *s) {
  struct gb_informer_stats st;
  gb_informer_stats(s->inf, &st);
  const struct gb_informer_stats *old = &s->last;
  const char *res = s->resource;
  if (st.relists_gone > old->relists_gone)
    gb_metric_counter_add(m->watch_restarts, (const char *[]){res, GB_M_WATCH_GONE},
                          (double)(st.relists_gone - old->relists_gone));
  if (st.watch_failures > old->watch_failures)
    gb_metric_counter_add(m->watch_restarts, (const char *[]){res, GB_M_WATCH_ERROR},
                          (double)(st.watch_failures - old->watch_failures));
  /* Watches that ended normally: every started watch but the current one,
   * less those that failed. */
  unsigned long long ends = st.watches > st.watch_failures + 1 ? st.watches - st.watch_failures - 1
                                                               : 0;
  if (ends > s->last_timeouts) {
    gb_metric_counter_add(m->watch_restarts, (const char *[]){res, GB_M_WATCH_TIMEOUT},
                          (double)(ends - s->last_timeouts));
    s->last_timeouts = ends;
  }
  s->last = st;
}

void gb_informers_collect(void *ctx, struct gb_metrics *reg) {
  (void)reg;
  struct gb_informers *f = ctx;
  if (!f->o.metrics)
    return;
  pthread_mutex_lock(&f->mu);
  for (size_t i = 0; i < f->n; i++)
    collect_one(f->o.metrics, &f->s[i]);
  pthread_mutex_unlock(&f->mu);
}
