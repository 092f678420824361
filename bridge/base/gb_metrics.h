/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_metrics: a small thread-safe Prometheus registry and the service's
 * metric set.  A registry holds metric families (counters, gauges and
 * histograms), each with a fixed list of label names; a series is created the
 * first time a label-value combination is used.  gb_metrics_render writes the
 * Prometheus text exposition format 0.0.4: "# HELP" and "# TYPE" lines,
 * families sorted by name, series sorted by label values, label values escaped
 * (backslash, double quote, newline), histograms as cumulative `_bucket{le=}`
 * series ending in le="+Inf" plus `_sum` and `_count`, and numbers written as
 * Go's strconv 'g' shortest form (what client_golang writes).  Every family
 * has its own mutex; a family holds at most `max_series` series (default
 * GB_METRICS_MAX_SERIES) so hostile label values cannot grow it without
 * limit.  gb_service_metrics_register defines every metric gangbridge
 * exports, in one place; docs/metrics.md documents them.
 */
#ifndef GB_METRICS_H
#define GB_METRICS_H

#include <stddef.h>

#include "gc_diag.h"

#define GB_METRICS_MAX_SERIES 10000
#define GB_METRICS_MAX_LABELS 8
#define GB_METRICS_LABEL_VALUE_MAX 1024
#define GB_METRICS_MAX_BUCKETS 64
#define GB_METRICS_MAX_COLLECTORS 16

/* The content type of the exposition this module writes. */
#define GB_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

enum gb_metric_type { GB_METRIC_COUNTER = 0, GB_METRIC_GAUGE, GB_METRIC_HISTOGRAM };

struct gb_metrics; /* a registry */
struct gb_metric;  /* one family; owned by its registry */

/* Creates an empty registry; NULL when out of memory.  Free with gb_metrics_free. */
struct gb_metrics *gb_metrics_new(void);

/* Frees the registry and every family in it.  Accepts NULL.  No other thread
 * may use the registry or its families any more. */
void gb_metrics_free(struct gb_metrics *reg);

/* Registers a family.  `name` must match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 * [a-zA-Z_][a-zA-Z0-9_]* without a leading "__" (and not "le" for histograms),
 * at most GB_METRICS_MAX_LABELS of them and no duplicates.  Histogram
 * `buckets` are finite upper bounds in strictly increasing order (at most
 * GB_METRICS_MAX_BUCKETS; "+Inf" is implied); NULL/0 means the default
 * {.005,.01,.025,.05,.1,.25,.5,1,2.5,5,10}.  Every string is copied.  On
 * success *out is the family, owned by the registry.  Returns 0, GC_EINVAL
 * (bad name, label or bucket; a message goes to `d`, which may be NULL),
 * GC_EUSAGE (the name is already registered) or GC_ENOMEM. */
int gb_metrics_counter(struct gb_metrics *reg, const char *name, const char *help,
                       const char *const *label_names, size_t n_labels, struct gb_metric **out,
                       struct gc_diags *d);
int gb_metrics_gauge(struct gb_metrics *reg, const char *name, const char *help,
                     const char *const *label_names, size_t n_labels, struct gb_metric **out,
                     struct gc_diags *d);
int gb_metrics_histogram(struct gb_metrics *reg, const char *name, const char *help,
                         const char *const *label_names, size_t n_labels, const double *buckets,
                         size_t n_buckets, struct gb_metric **out, struct gc_diags *d);

/* Updates one series.  `values` holds exactly as many label values as the
 * family has label names, in the same order (NULL when it has none); each
 * value is at most GB_METRICS_LABEL_VALUE_MAX bytes and is copied.  A NULL
 * family is accepted and ignored (returns 0), so code can run without a
 * registry.  Returns 0, GC_EINVAL (wrong family type, NULL value, value too
 * long, a negative or non-finite counter increment, a NaN observation),
 * GC_ELIMIT (series limit) or GC_ENOMEM. */
int gb_metric_counter_add(struct gb_metric *m, const char *const *values, double v);
int gb_metric_counter_inc(struct gb_metric *m, const char *const *values);
int gb_metric_gauge_set(struct gb_metric *m, const char *const *values, double v);
int gb_metric_histogram_observe(struct gb_metric *m, const char *const *values, double v);

/* Removes every series of the family (for gauges recomputed from a cache). */
void gb_metric_clear(struct gb_metric *m);

/* Adds a function called at the start of every gb_metrics_render, before any
 * family is read, so that gauges computed from state (PodGroups by phase,
 * queue depth) are fresh.  It runs on the scraping thread and may call the
 * update functions above.  At most GB_METRICS_MAX_COLLECTORS; returns 0,
 * GC_ELIMIT or GC_EINVAL.  `ctx` is borrowed until the registry is freed. */
int gb_metrics_add_collector(struct gb_metrics *reg, void (*fn)(void *ctx, struct gb_metrics *reg),
                             void *ctx);

/* Writes the text exposition of every family into a new NUL-terminated
 * buffer; the caller frees *out with free().  Families with no series still
 * get their HELP and TYPE lines.  Returns 0 or GC_ENOMEM. */
int gb_metrics_render(struct gb_metrics *reg, char **out, size_t *len);

/* ---- The gangbridge metric set ------------------------------------------
 * Every metric the service exports, with its labels.  Label values the
 * service uses are the GB_M_* strings below; see docs/metrics.md. */

/* result label of gangbridge_reconciles_total */
#define GB_M_RESULT_SUCCESS "success"
#define GB_M_RESULT_ERROR "error"
#define GB_M_RESULT_REQUEUE "requeue"
#define GB_M_RESULT_SKIPPED "skipped"
#define GB_M_RESULT_UNCHANGED "unchanged"
/* reason label of gangbridge_watch_restarts_total */
#define GB_M_WATCH_GONE "gone"       /* 410: relist */
#define GB_M_WATCH_TIMEOUT "timeout" /* server closed the stream at its timeout */
#define GB_M_WATCH_ERROR "error"     /* connection or decoding error */
/* result label of gangbridge_webhook_admissions_total */
#define GB_M_ADMIT_PATCHED "patched"
#define GB_M_ADMIT_UNCHANGED "unchanged"
#define GB_M_ADMIT_SKIPPED "skipped"
#define GB_M_ADMIT_DENIED "denied"
#define GB_M_ADMIT_INVALID "invalid"

struct gb_service_metrics {
  struct gb_metric *reconciles;        /* gangbridge_reconciles_total{result} */
  struct gb_metric *reconcile_seconds; /* gangbridge_reconcile_duration_seconds (histogram) */
  struct gb_metric *errors;            /* gangbridge_errors_total{component,reason} */
  struct gb_metric *queue_depth;       /* gangbridge_workqueue_depth */
  struct gb_metric *queue_retries;     /* gangbridge_workqueue_retries_total */
  struct gb_metric *api_latency; /* gangbridge_api_request_duration_seconds{verb,resource,code} */
  struct gb_metric *watch_restarts;    /* gangbridge_watch_restarts_total{resource,reason} */
  struct gb_metric *podgroups;         /* gangbridge_podgroups{backend,phase} */
  struct gb_metric *time_to_schedule;  /* gangbridge_gang_time_to_schedule_seconds{backend,queue,size} */
  struct gb_metric *webhook;           /* gangbridge_webhook_admissions_total{backend,result} */
  struct gb_metric *http_requests;     /* gangbridge_http_requests_total{server,route,code} */
  struct gb_metric *leader;            /* gangbridge_leader (1 while holding the lease) */
  struct gb_metric *build_info;        /* gangbridge_build_info{version} = 1 */
};

/* Registers the whole metric set in `reg` and sets build_info to 1 for
 * `version`.  Returns 0 or a GC_E* code (the registry then holds a partial
 * set and should be freed). */
int gb_service_metrics_register(struct gb_metrics *reg, const char *version,
                                struct gb_service_metrics *out, struct gc_diags *d);

#endif
