/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_client: a small Kubernetes REST client on libcurl and json-c.  It
 * owns the HTTP side: a pool of curl easy handles (each keeps its connection
 * open, so requests reuse connections; HTTP/2 is used when curl and the
 * server agree), TLS from a gb_kube_config (CA, client certificate and key
 * as files or in-memory *_BLOBs, bearer token re-read on rotation), a
 * QPS/burst token bucket shared by every request, connect and request
 * timeouts, a response-body cap, bounded retries with jittered exponential
 * backoff for idempotent verbs on 429/5xx/transport errors, and per-verb
 * latency counters (plus an optional callback) for metrics.  Failed calls
 * fill a caller-owned struct gb_kube_error with the HTTP code and the API
 * `Status` reason and message.  Bodies are json-c objects; gb_kube_client_json_to_value
 * converts them to gc_value trees for gangcalc.
 *
 * Thread-safety: a gb_kube_client may be used from any number of threads at
 * once (the handle pool, bucket and counters are mutex-guarded; each request
 * runs on its own easy handle).  The token bucket is base/gb_bucket.
 */
#ifndef GB_KUBE_CLIENT_H
#define GB_KUBE_CLIENT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "gb_kube_config.h"
#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_value.h"

/* ---- errors ------------------------------------------------------------ */

/* What went wrong with one API call.  http is 0 for transport failures
 * (then curl_code and message say why). */
struct gb_kube_error {
  long http;         /* HTTP status code, 0 if no response */
  int curl_code;     /* CURLcode of a transport failure, else 0 */
  int retry_after_s; /* Retry-After or Status details.retryAfterSeconds; 0 if none */
  char reason[64];   /* Status.reason ("NotFound", "Conflict", "Expired"), or "" */
  char message[1024];
  int failed_attempts; /* attempts of the call that failed (transport or HTTP >= 400),
                          retried ones included, also when the call then succeeded */
};

/* Clears an error struct. */
void gb_kube_error_clear(struct gb_kube_error *e);

/* As gb_kube_client_status_parse, from an already parsed object (may be NULL). */
void gb_kube_client_status_from_json(json_object *status, long http_code, struct gb_kube_error *e);

/* True for 410 Gone / reason Expired or Gone (watch or list too old). */
int gb_kube_error_is_gone(const struct gb_kube_error *e);

/* Formats e as "HTTP 409 Conflict: message" into buf; returns buf. */
const char *gb_kube_error_str(const struct gb_kube_error *e, char *buf, size_t cap);

/* ---- client ------------------------------------------------------------ */

enum gb_kube_verb {
  GB_KUBE_GET,
  GB_KUBE_LIST,
  GB_KUBE_WATCH,
  GB_KUBE_CREATE,
  GB_KUBE_UPDATE,
  GB_KUBE_PATCH,
  GB_KUBE_APPLY,
  GB_KUBE_DELETE,
  GB_KUBE_VERB_COUNT
};

/* Prometheus-style latency histogram bucket upper bounds, seconds. */
#define GB_KUBE_LAT_BUCKETS 11
extern const double gb_kube_client_lat_bounds[GB_KUBE_LAT_BUCKETS];

struct gb_kube_verb_stats {
  uint64_t requests;                         /* completed requests (each retry counts) */
  uint64_t errors;                           /* transport failures and HTTP >= 400 */
  uint64_t retries;                          /* attempts beyond the first */
  double seconds_sum;                        /* total latency */
  uint64_t buckets[GB_KUBE_LAT_BUCKETS + 1]; /* cumulative-free counts; last is +Inf */
};

struct gb_kube_stats {
  struct gb_kube_verb_stats verb[GB_KUBE_VERB_COUNT];
  uint64_t connections;     /* new connections opened (the rest were reused) */
  uint64_t throttled;       /* requests that waited on the token bucket */
  double throttled_seconds; /* total wait */
};

/* Called after every HTTP attempt (from the requesting thread; must be
 * thread-safe).  For watches, seconds is the time to the response headers. */
typedef void (*gb_kube_latency_fn)(void *arg, enum gb_kube_verb verb, long http_code,
                                   double seconds);

struct gb_kube_client_opts {
  double qps;                    /* default 50; < 0 means unlimited */
  int burst;                     /* default 100 */
  long connect_timeout_ms;       /* default 5000 */
  long request_timeout_ms;       /* whole non-watch request; default 30000 */
  size_t max_body_bytes;         /* response cap; default 64 MiB */
  int max_retries;               /* idempotent verbs; default 3; < 0 means none */
  double retry_base_s;           /* first retry delay; default 0.1 */
  double retry_max_s;            /* cap; default 5 */
  size_t max_handles;            /* idle easy handles kept; default 8 */
  const char *user_agent;        /* default "gangbridge/<version>" */
  gb_kube_latency_fn on_latency; /* optional */
  void *latency_arg;
};

struct gb_kube_client;

/* Creates a client for cfg (borrowed: must outlive the client).  opts may be
 * NULL; zero fields take defaults.  Calls curl_global_init once per process
 * (thread-safe with curl >= 7.84).  Returns 0, GC_ENOMEM or GC_EINVAL. */
int gb_kube_client_new(struct gb_kube_config *cfg, const struct gb_kube_client_opts *opts,
                       struct gb_kube_client **out, struct gc_diags *diags);

/* Frees the client and its handles.  No request may be in flight.  NULL ok. */
void gb_kube_client_free(struct gb_kube_client *c);

/* Builds a resource path: "/api/v1/..." when group is "" or NULL, else
 * "/apis/GROUP/VERSION/...", with "namespaces/NS/" when ns is set and "/NAME"
 * when name is set.  Segments must be non-empty and free of '/', '?', '#',
 * '%' and whitespace (Kubernetes names always are).  Returns 0, GC_EINVAL or
 * GC_ELIMIT (does not fit in cap). */
int gb_kube_client_path(char *buf, size_t cap, const char *group, const char *version,
                        const char *resource, const char *ns, const char *name);

/* gb_kube_client_request whose whole time (curl's CURLOPT_TIMEOUT_MS, which bounds
 * the connect too) is timeout_ms instead of the client's request_timeout_ms;
 * timeout_ms <= 0 takes the client's.  For callers with their own deadline,
 * such as the leader elector's renew window. */
int gb_kube_client_request_timeout(struct gb_kube_client *c, enum gb_kube_verb verb,
                                   const char *method, const char *path, const char *content_type,
                                   const char *body, size_t body_len, long timeout_ms,
                                   json_object **out, struct gb_kube_error *e);

int gb_kube_client_get(struct gb_kube_client *c, const char *path, json_object **out,
                       struct gb_kube_error *e);

int gb_kube_client_create(struct gb_kube_client *c, const char *collection_path, json_object *obj,
                          json_object **out, struct gb_kube_error *e);

/* JSON merge patch (application/merge-patch+json). */
int gb_kube_client_merge_patch(struct gb_kube_client *c, const char *path, json_object *patch,
                               json_object **out, struct gb_kube_error *e);

/* Server-side apply: PATCH path with application/apply-patch+yaml (the body
 * is serialised as JSON, which is YAML), fieldManager and, when force,
 * force=true.  A field owned by another manager without force gives GC_EIO
 * with e->http 409 and the Status message naming the conflicts. */
int gb_kube_client_apply(struct gb_kube_client *c, const char *path, json_object *obj,
                         const char *field_manager, int force, json_object **out,
                         struct gb_kube_error *e);

/* DELETE with propagationPolicy (NULL: server default) and, when uid is not
 * NULL, a precondition on that uid.  A 404 returns GC_ENOTFOUND. */
int gb_kube_client_delete(struct gb_kube_client *c, const char *path, const char *propagation,
                          const char *uid, struct gb_kube_error *e);

struct gb_kube_list_opts {
  const char *label_selector; /* NULL: none */
  const char *field_selector; /* NULL: none */
  long limit;                 /* page size; 0 means 500 */
};

/* Called once per item of every page; obj is borrowed until return.
 * Return non-zero to stop listing (gb_kube_client_list then returns that value). */
typedef int (*gb_kube_item_fn)(void *arg, json_object *obj);

/* Lists a collection page by page (limit/continue), calling fn per item.
 * Items lacking apiVersion and kind (built-in lists omit them) get the
 * list's apiVersion and its kind without the "List" suffix.
 * On success rv (cap bytes) receives the list's metadata.resourceVersion. A
 * continue token that expired mid-list gives GC_EIO with a 410 error: the
 * caller restarts the list. */
int gb_kube_client_list(struct gb_kube_client *c, const char *collection_path,
                        const struct gb_kube_list_opts *o, gb_kube_item_fn fn, void *arg, char *rv,
                        size_t rv_cap, struct gb_kube_error *e);

/* ---- streaming (used by gb_kube_watch) ---------------------------------- */

/* Receives response body bytes of a streaming request.  Returns 0 to go on or
 * non-zero to abort the transfer. */
typedef int (*gb_kube_chunk_fn)(void *arg, const char *data, size_t len);

/* Polled about once a second while the stream is idle; non-zero aborts. */
typedef int (*gb_kube_abort_fn)(void *arg);

/* Runs one streaming GET (a watch): the 2xx body goes to fn in chunks as it
 * arrives; a non-2xx response's body (up to 64 KiB) is parsed as a Status
 * into e and GC_EIO returned.  timeout_s bounds the whole stream (0: none;
 * the server's timeoutSeconds normally ends it first).  Returns 0 when the
 * server ended the stream, GC_EIO on failures, or the first non-zero value
 * of fn / GC_EUSAGE when should_abort stopped it. */
int gb_kube_client_stream(struct gb_kube_client *c, const char *path, long timeout_s,
                          gb_kube_chunk_fn fn, gb_kube_abort_fn should_abort, void *arg,
                          struct gb_kube_error *e);

/* ---- JSON helpers ---------------------------------------------------------- */

/* Converts a json-c tree into an arena-owned gc_value tree.  Integers become
 * GC_INT (with their spelling in `text`), other numbers GC_FLOAT with json-c's
 * original spelling when it kept one.  Returns 0, GC_ELIMIT (deeper than
 * max_depth, 0 means 64) or GC_ENOMEM (arena exhausted). */
int gb_kube_client_json_to_value(struct gc_arena *a, json_object *j, size_t max_depth,
                                 struct gc_value **out);

/* Converts a gc_value tree to json-c (caller puts).  GC_INT/GC_FLOAT become
 * numbers; NULL on OOM or if deeper than 64. */
json_object *gb_kube_client_value_to_json(const struct gc_value *v);

#endif
