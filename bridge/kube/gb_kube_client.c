/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_client: libcurl transport, Status errors, token bucket, retries,
 * paged lists, streaming GETs and json-c <-> gc_value conversion.
 */
#include "gb_kube_client.h"
#include "gb_kube_client_test.h"
#include "gb_bucket.h"
#include "gb_clock.h"
#include "gb_version.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define DEFAULT_MAX_BODY (64u * 1024 * 1024)
#define STATUS_BODY_MAX (64u * 1024)
#define JSON_DEPTH 64
#define TOKEN_MAX 16384
#define URL_MAX 8192

const double gb_kube_client_lat_bounds[GB_KUBE_LAT_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                               0.5,   1,    2.5,   5,    10};

struct gb_kube_client {
  struct gb_kube_config *cfg;
  struct gb_kube_client_opts o;
  char user_agent[128];
  pthread_mutex_t lock; /* guards idle, bucket, stats, rng */
  CURL **idle;
  size_t n_idle;
  struct gb_bucket bucket;
  struct gb_kube_stats stats;
  unsigned rng;
};

/* ---- small helpers ------------------------------------------------------- */

static void sleep_s(double s) {
  if (s <= 0)
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void copy_str(char *dst, size_t cap, const char *src) {
  if (!cap)
    return;
  size_t n = src ? strlen(src) : 0;
  if (n >= cap)
    n = cap - 1;
  if (n)
    memcpy(dst, src, n);
  dst[n] = 0;
}

/* ---- errors -------------------------------------------------------------- */

void gb_kube_error_clear(struct gb_kube_error *e) {
  if (e)
    memset(e, 0, sizeof(*e));
}

void gb_kube_client_status_from_json(json_object *st, long http_code, struct gb_kube_error *e) {
  if (!e)
    return;
  long code = http_code;
  json_object *v;
  if (st && json_object_is_type(st, json_type_object)) {
    if (json_object_object_get_ex(st, "code", &v) && json_object_is_type(v, json_type_int))
      code = (long)json_object_get_int64(v);
    if (json_object_object_get_ex(st, "reason", &v) && json_object_is_type(v, json_type_string))
      copy_str(e->reason, sizeof(e->reason), json_object_get_string(v));
    if (json_object_object_get_ex(st, "message", &v) && json_object_is_type(v, json_type_string))
      copy_str(e->message, sizeof(e->message), json_object_get_string(v));
    json_object *det;
    if (json_object_object_get_ex(st, "details", &det) &&
        json_object_object_get_ex(det, "retryAfterSeconds", &v) &&
        json_object_is_type(v, json_type_int)) {
      int64_t ra = json_object_get_int64(v);
      e->retry_after_s = ra < 0 ? 0 : ra > 3600 ? 3600 : (int)ra;
    }
  }
  e->http = code;
  if (!e->message[0])
    snprintf(e->message, sizeof(e->message), "HTTP %ld with no Status message", code);
}

void gb_kube_client_status_parse(const char *body, size_t len, long http_code,
                                 struct gb_kube_error *e) {
  if (!e)
    return;
  json_object *st = NULL;
  if (body && len && len <= STATUS_BODY_MAX) {
    json_tokener *tok = json_tokener_new_ex(16);
    if (tok) {
      st = json_tokener_parse_ex(tok, body, (int)len);
      if (json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(st);
        st = NULL;
      }
      json_tokener_free(tok);
    }
  }
  if (st && json_object_is_type(st, json_type_object)) {
    gb_kube_client_status_from_json(st, http_code, e);
  } else {
    e->http = http_code;
    /* Not a Status (a proxy's HTML page, say): show a printable prefix. */
    char snip[160];
    size_t n = 0;
    for (size_t i = 0; body && i < len && n < sizeof(snip) - 1; i++)
      snip[n++] = (body[i] >= 0x20 && body[i] < 0x7f) ? body[i] : ' ';
    snip[n] = 0;
    snprintf(e->message, sizeof(e->message), "HTTP %ld: %s", http_code,
             n ? snip : "(empty body)");
  }
  json_object_put(st);
}

int gb_kube_error_is_gone(const struct gb_kube_error *e) {
  return e && (e->http == 410 || !strcmp(e->reason, "Expired") || !strcmp(e->reason, "Gone"));
}

const char *gb_kube_error_str(const struct gb_kube_error *e, char *buf, size_t cap) {
  if (e->http)
    snprintf(buf, cap, "HTTP %ld%s%s: %s", e->http, e->reason[0] ? " " : "", e->reason,
             e->message);
  else
    snprintf(buf, cap, "transport: %s", e->message[0] ? e->message : "unknown failure");
  return buf;
}

/* ---- client lifecycle ---------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int gb_kube_client_new(struct gb_kube_config *cfg, const struct gb_kube_client_opts *opts,
                       struct gb_kube_client **out, struct gc_diags *diags) {
  *out = NULL;
  if (!cfg || !cfg->server) {
    gc_diags_addf(diags, "kube client: no server configured");
    return GC_EUSAGE;
  }
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc != CURLE_OK) {
    gc_diags_addf(diags, "kube client: curl_global_init failed: %s",
                  curl_easy_strerror(curl_init_rc));
    return GC_EIO;
  }
  struct gb_kube_client *c = calloc(1, sizeof(*c));
  if (!c)
    return GC_ENOMEM;
  c->cfg = cfg;
  if (opts)
    c->o = *opts;
  if (c->o.qps == 0)
    c->o.qps = 50;
  if (c->o.burst <= 0)
    c->o.burst = 100;
  if (c->o.connect_timeout_ms <= 0)
    c->o.connect_timeout_ms = 5000;
  if (c->o.request_timeout_ms <= 0)
    c->o.request_timeout_ms = 30000;
  if (!c->o.max_body_bytes)
    c->o.max_body_bytes = DEFAULT_MAX_BODY;
  if (c->o.max_retries == 0)
    c->o.max_retries = 3;
  if (c->o.max_retries < 0)
    c->o.max_retries = 0;
  if (c->o.retry_base_s <= 0)
    c->o.retry_base_s = 0.1;
  if (c->o.retry_max_s <= 0)
    c->o.retry_max_s = 5;
  if (!c->o.max_handles)
    c->o.max_handles = 8;
  copy_str(c->user_agent, sizeof(c->user_agent),
           c->o.user_agent ? c->o.user_agent : "gangbridge/" GB_VERSION);
  c->o.user_agent = c->user_agent;
  c->idle = calloc(c->o.max_handles, sizeof(*c->idle));
  if (!c->idle) {
    free(c);
    return GC_ENOMEM;
  }
  pthread_mutex_init(&c->lock, NULL);
  gb_bucket_init(&c->bucket, c->o.qps, c->o.burst, gb_clock_s());
  c->rng = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)c;
  *out = c;
  return GC_OK;
}

void gb_kube_client_free(struct gb_kube_client *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n_idle; i++)
    curl_easy_cleanup(c->idle[i]);
  free(c->idle);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

void gb_kube_client_stats(struct gb_kube_client *c, struct gb_kube_stats *out) {
  pthread_mutex_lock(&c->lock);
  *out = c->stats;
  pthread_mutex_unlock(&c->lock);
}

static CURL *handle_get(struct gb_kube_client *c) {
  CURL *h = NULL;
  pthread_mutex_lock(&c->lock);
  if (c->n_idle)
    h = c->idle[--c->n_idle];
  pthread_mutex_unlock(&c->lock);
  if (h)
    curl_easy_reset(h); /* options only: the open connection stays */
  else
    h = curl_easy_init();
  return h;
}

static void handle_put(struct gb_kube_client *c, CURL *h) {
  if (!h)
    return;
  pthread_mutex_lock(&c->lock);
  if (c->n_idle < c->o.max_handles) {
    c->idle[c->n_idle++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  if (h)
    curl_easy_cleanup(h);
}

static double jitter01(struct gb_kube_client *c) {
  pthread_mutex_lock(&c->lock);
  double r = (double)rand_r(&c->rng) / ((double)RAND_MAX + 1.0);
  pthread_mutex_unlock(&c->lock);
  return r;
}

static void throttle(struct gb_kube_client *c) {
  pthread_mutex_lock(&c->lock);
  double wait = gb_bucket_reserve(&c->bucket, gb_clock_s());
  if (wait > 0) {
    c->stats.throttled++;
    c->stats.throttled_seconds += wait;
  }
  pthread_mutex_unlock(&c->lock);
  sleep_s(wait);
}

static void record(struct gb_kube_client *c, CURL *h, enum gb_kube_verb verb, long http,
                   double secs, int retry) {
  long connects = 0;
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
  pthread_mutex_lock(&c->lock);
  c->stats.connections += connects > 0 ? (uint64_t)connects : 0;
  struct gb_kube_verb_stats *s = &c->stats.verb[verb];
  s->requests++;
  if (http == 0 || http >= 400)
    s->errors++;
  if (retry)
    s->retries++;
  s->seconds_sum += secs;
  size_t b = 0;
  while (b < GB_KUBE_LAT_BUCKETS && secs > gb_kube_client_lat_bounds[b])
    b++;
  s->buckets[b]++;
  pthread_mutex_unlock(&c->lock);
  if (c->o.on_latency)
    c->o.on_latency(c->o.latency_arg, verb, http, secs);
}

/* ---- one HTTP exchange ------------------------------------------------------ */

struct xfer {
  char *buf;
  size_t len, cap, max;
  int too_big;
  int retry_after;
  /* streaming */
  CURL *h;
  gb_kube_chunk_fn fn;
  gb_kube_abort_fn abort_fn;
  void *arg;
  int fn_rc;
  long http;
};

static size_t on_header(char *data, size_t size, size_t n, void *p) {
  struct xfer *x = p;
  size_t len = size * n;
  if (len > 12 && !strncasecmp(data, "Retry-After:", 12)) {
    long v = strtol(data + 12, NULL, 10);
    x->retry_after = v < 0 ? 0 : v > 3600 ? 3600 : (int)v;
  }
  return len;
}

static int buf_append(struct xfer *x, const char *data, size_t len) {
  if (len > x->max - x->len) {
    x->too_big = 1;
    return -1;
  }
  if (x->len + len + 1 > x->cap) {
    size_t ncap = x->cap ? x->cap : 4096;
    while (ncap < x->len + len + 1)
      ncap *= 2;
    if (ncap > x->max + 1)
      ncap = x->max + 1;
    char *nb = realloc(x->buf, ncap);
    if (!nb)
      return -1;
    x->buf = nb;
    x->cap = ncap;
  }
  memcpy(x->buf + x->len, data, len);
  x->len += len;
  x->buf[x->len] = 0;
  return 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *p) {
  struct xfer *x = p;
  size_t len = size * n;
  return buf_append(x, data, len) ? 0 : len;
}

static size_t on_stream(char *data, size_t size, size_t n, void *p) {
  struct xfer *x = p;
  size_t len = size * n;
  if (!x->http)
    curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->http);
  if (x->http < 200 || x->http >= 300) {
    /* Keep the first 64 KiB of an error body for the Status; drop the rest. */
    size_t room = x->max - x->len;
    buf_append(x, data, len < room ? len : room);
    return len;
  }
  x->fn_rc = x->fn(x->arg, data, len);
  return x->fn_rc ? 0 : len;
}

static int on_progress(void *p, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  struct xfer *x = p;
  return x->abort_fn && x->abort_fn(x->arg) ? 1 : 0;
}

/* Sets URL, TLS, auth and common headers.  *hdrs receives the list to free. */
static int setup(struct gb_kube_client *c, CURL *h, const char *method, const char *path,
                 const char *content_type, struct curl_slist **hdrs, struct gb_kube_error *e) {
  char url[URL_MAX];
  int n = snprintf(url, sizeof(url), "%s%s", c->cfg->server, path);
  if (n < 0 || (size_t)n >= sizeof(url)) {
    snprintf(e->message, sizeof(e->message), "request path too long (%zu bytes)", strlen(path));
    return GC_ELIMIT;
  }
  struct gb_kube_config *cfg = c->cfg;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->o.connect_timeout_ms);
  curl_easy_setopt(h, CURLOPT_USERAGENT, c->o.user_agent);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (strcmp(method, "GET") != 0)
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  if (cfg->insecure_skip_tls_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (cfg->ca_data) {
    struct curl_blob b = {cfg->ca_data, cfg->ca_len, CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
  } else if (cfg->ca_file) {
    curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
  }
  if (cfg->cert_data) {
    struct curl_blob b = {cfg->cert_data, cfg->cert_len, CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (cfg->cert_file) {
    curl_easy_setopt(h, CURLOPT_SSLCERT, cfg->cert_file);
  }
  if (cfg->key_data) {
    struct curl_blob b = {cfg->key_data, cfg->key_len, CURL_BLOB_NOCOPY};
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (cfg->key_file) {
    curl_easy_setopt(h, CURLOPT_SSLKEY, cfg->key_file);
  }
  struct curl_slist *l = curl_slist_append(NULL, "Accept: application/json");
  if (l && content_type) {
    char ct[128];
    snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
    l = curl_slist_append(l, ct);
  }
  if (l && (cfg->token || cfg->token_file)) {
    char *auth = malloc(TOKEN_MAX + 32);
    struct gc_diags d;
    gc_diags_init(&d);
    int rc = auth ? gb_kube_config_token(cfg, auth + 22, TOKEN_MAX, &d) : GC_ENOMEM;
    if (rc) {
      snprintf(e->message, sizeof(e->message), "bearer token: %s",
               d.n ? d.msgs[0] : gc_diag_strerror(rc));
      gc_diags_destroy(&d);
      free(auth);
      curl_slist_free_all(l);
      return rc == GC_ENOMEM ? GC_ENOMEM : GC_EIO;
    }
    gc_diags_destroy(&d);
    memcpy(auth, "Authorization: Bearer ", 22);
    l = curl_slist_append(l, auth);
    /* The header copy lives in the slist; wipe ours. */
    memset(auth, 0, TOKEN_MAX + 32);
    free(auth);
  }
  if (!l)
    return GC_ENOMEM;
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
  *hdrs = l;
  return GC_OK;
}

static int retryable_verb(enum gb_kube_verb v) { return v != GB_KUBE_CREATE && v != GB_KUBE_WATCH; }

static int retryable_result(long http, CURLcode cc) {
  if (http == 0)
    return cc != CURLE_OK && cc != CURLE_FILESIZE_EXCEEDED && cc != CURLE_WRITE_ERROR;
  return http == 429 || (http >= 500 && http != 501);
}

static int parse_json(const char *buf, size_t len, json_object **out, struct gb_kube_error *e) {
  json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
  if (!tok)
    return GC_ENOMEM;
  if (len > INT32_MAX) {
    json_tokener_free(tok);
    return GC_ELIMIT;
  }
  json_object *j = json_tokener_parse_ex(tok, buf, (int)len);
  enum json_tokener_error err = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  while (err == json_tokener_success && end < len &&
         (buf[end] == ' ' || buf[end] == '\n' || buf[end] == '\r' || buf[end] == '\t'))
    end++;
  if (err != json_tokener_success || end != len) {
    json_object_put(j);
    snprintf(e->message, sizeof(e->message), "response is not valid JSON: %s",
             err != json_tokener_success ? json_tokener_error_desc(err) : "trailing bytes");
    return GC_EIO;
  }
  *out = j;
  return GC_OK;
}

int gb_kube_client_request(struct gb_kube_client *c, enum gb_kube_verb verb, const char *method,
                           const char *path, const char *content_type, const char *body,
                           size_t body_len, json_object **out, struct gb_kube_error *e) {
  return gb_kube_client_request_timeout(c, verb, method, path, content_type, body, body_len, 0, out,
                                        e);
}

int gb_kube_client_request_timeout(struct gb_kube_client *c, enum gb_kube_verb verb,
                                   const char *method, const char *path, const char *content_type,
                                   const char *body, size_t body_len, long timeout_ms,
                                   json_object **out, struct gb_kube_error *e) {
  struct gb_kube_error local;
  if (!e)
    e = &local;
  gb_kube_error_clear(e);
  if (out)
    *out = NULL;
  int attempts = retryable_verb(verb) ? c->o.max_retries + 1 : 1;
  int rc = GC_EIO, failed = 0;
  for (int attempt = 0; attempt < attempts; attempt++) {
    gb_kube_error_clear(e);
    e->failed_attempts = failed;
    CURL *h = handle_get(c);
    if (!h)
      return GC_ENOMEM;
    struct curl_slist *hdrs = NULL;
    struct xfer x = {0};
    x.max = c->o.max_body_bytes;
    rc = setup(c, h, method, path, content_type, &hdrs, e);
    if (rc) {
      handle_put(c, h);
      return rc;
    }
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     timeout_ms > 0 ? timeout_ms : c->o.request_timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    if (body) {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    throttle(c);
    double t0 = gb_clock_s();
    CURLcode cc = curl_easy_perform(h);
    double dt = gb_clock_s() - t0;
    long http = 0;
    if (cc == CURLE_OK)
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
    curl_slist_free_all(hdrs);
    record(c, h, verb, http, dt, attempt > 0);
    if (cc != CURLE_OK) {
      /* A transfer error may leave the connection unusable: drop the handle. */
      curl_easy_cleanup(h);
      e->curl_code = (int)cc;
      if (x.too_big) {
        snprintf(e->message, sizeof(e->message), "%s %s: response larger than %zu bytes", method,
                 path, x.max);
        rc = GC_ELIMIT;
      } else {
        snprintf(e->message, sizeof(e->message), "%s %s: %s", method, path,
                 curl_easy_strerror(cc));
        rc = GC_EIO;
      }
    } else {
      handle_put(c, h);
      if (http >= 200 && http < 300) {
        rc = GC_OK;
        if (out && x.len)
          rc = parse_json(x.buf, x.len, out, e);
        if (rc)
          e->http = http;
      } else {
        gb_kube_client_status_parse(x.buf, x.len, http, e);
        if (!e->retry_after_s)
          e->retry_after_s = x.retry_after;
        rc = http == 404 ? GC_ENOTFOUND : GC_EIO;
      }
    }
    free(x.buf);
    if (rc != GC_OK)
      e->failed_attempts = ++failed;
    if (rc == GC_OK || attempt + 1 >= attempts || !retryable_result(e->http, (CURLcode)e->curl_code))
      break;
    /* Jittered exponential backoff, at least the server's Retry-After. */
    double d = c->o.retry_base_s * (double)(1u << (attempt < 16 ? attempt : 16));
    if (d > c->o.retry_max_s)
      d = c->o.retry_max_s;
    d = d / 2 + d / 2 * jitter01(c);
    if (e->retry_after_s && e->retry_after_s > d)
      d = e->retry_after_s < c->o.retry_max_s ? e->retry_after_s : c->o.retry_max_s;
    sleep_s(d);
  }
  return rc;
}

int gb_kube_client_get(struct gb_kube_client *c, const char *path, json_object **out,
                       struct gb_kube_error *e) {
  return gb_kube_client_request(c, GB_KUBE_GET, "GET", path, NULL, NULL, 0, out, e);
}

static int send_json(struct gb_kube_client *c, enum gb_kube_verb verb, const char *method,
                     const char *path, const char *ct, json_object *obj, json_object **out,
                     struct gb_kube_error *e) {
  size_t len = 0;
  const char *s = json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN, &len);
  if (!s)
    return GC_ENOMEM;
  return gb_kube_client_request(c, verb, method, path, ct, s, len, out, e);
}

int gb_kube_client_create(struct gb_kube_client *c, const char *collection_path, json_object *obj,
                          json_object **out, struct gb_kube_error *e) {
  return send_json(c, GB_KUBE_CREATE, "POST", collection_path, "application/json", obj, out, e);
}

int gb_kube_client_update(struct gb_kube_client *c, const char *path, json_object *obj,
                          json_object **out, struct gb_kube_error *e) {
  return send_json(c, GB_KUBE_UPDATE, "PUT", path, "application/json", obj, out, e);
}

int gb_kube_client_merge_patch(struct gb_kube_client *c, const char *path, json_object *patch,
                               json_object **out, struct gb_kube_error *e) {
  return send_json(c, GB_KUBE_PATCH, "PATCH", path, "application/merge-patch+json", patch, out,
                   e);
}

/* Appends "?k=v" or "&k=v" with v URL-escaped. */
static int add_query(char *buf, size_t cap, const char *k, const char *v) {
  char *esc = curl_easy_escape(NULL, v, 0);
  if (!esc)
    return GC_ENOMEM;
  size_t len = strlen(buf);
  int n = snprintf(buf + len, cap - len, "%c%s=%s", strchr(buf, '?') ? '&' : '?', k, esc);
  curl_free(esc);
  return (n < 0 || (size_t)n >= cap - len) ? GC_ELIMIT : GC_OK;
}

int gb_kube_client_apply(struct gb_kube_client *c, const char *path, json_object *obj,
                         const char *field_manager, int force, json_object **out,
                         struct gb_kube_error *e) {
  char p[URL_MAX];
  copy_str(p, sizeof(p), path);
  int rc = add_query(p, sizeof(p), "fieldManager", field_manager ? field_manager : "gangbridge");
  if (!rc && force)
    rc = add_query(p, sizeof(p), "force", "true");
  if (rc)
    return rc;
  return send_json(c, GB_KUBE_APPLY, "PATCH", p, "application/apply-patch+yaml", obj, out, e);
}

int gb_kube_client_delete(struct gb_kube_client *c, const char *path, const char *propagation,
                          const char *uid, struct gb_kube_error *e) {
  json_object *o = json_object_new_object();
  if (!o)
    return GC_ENOMEM;
  json_object_object_add(o, "kind", json_object_new_string("DeleteOptions"));
  json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
  if (propagation)
    json_object_object_add(o, "propagationPolicy", json_object_new_string(propagation));
  if (uid) {
    json_object *pre = json_object_new_object();
    json_object_object_add(pre, "uid", json_object_new_string(uid));
    json_object_object_add(o, "preconditions", pre);
  }
  int rc = send_json(c, GB_KUBE_DELETE, "DELETE", path, "application/json", o, NULL, e);
  json_object_put(o);
  return rc;
}

int gb_kube_client_path(char *buf, size_t cap, const char *group, const char *version,
                        const char *resource, const char *ns, const char *name) {
  const char *segs[] = {group && group[0] ? group : NULL, version, resource, ns, name};
  for (size_t i = 0; i < 5; i++) {
    if (!segs[i])
      continue;
    if (!segs[i][0] || strpbrk(segs[i], "/?#% \t\r\n"))
      return GC_EINVAL;
  }
  if (!version || !resource)
    return GC_EINVAL;
  int n;
  if (group && group[0])
    n = snprintf(buf, cap, "/apis/%s/%s", group, version);
  else
    n = snprintf(buf, cap, "/api/%s", version);
  if (n < 0 || (size_t)n >= cap)
    return GC_ELIMIT;
  size_t len = (size_t)n;
  if (ns) {
    n = snprintf(buf + len, cap - len, "/namespaces/%s", ns);
    if (n < 0 || (size_t)n >= cap - len)
      return GC_ELIMIT;
    len += (size_t)n;
  }
  n = snprintf(buf + len, cap - len, "/%s%s%s", resource, name ? "/" : "", name ? name : "");
  if (n < 0 || (size_t)n >= cap - len)
    return GC_ELIMIT;
  return GC_OK;
}

int gb_kube_client_list(struct gb_kube_client *c, const char *collection_path,
                        const struct gb_kube_list_opts *o, gb_kube_item_fn fn, void *arg, char *rv,
                        size_t rv_cap, struct gb_kube_error *e) {
  struct gb_kube_error local;
  if (!e)
    e = &local;
  gb_kube_error_clear(e);
  char *cont = NULL;
  int rc = GC_OK, first = 1;
  long limit = o && o->limit > 0 ? o->limit : 500;
  if (rv && rv_cap)
    rv[0] = 0;
  for (int pages = 0;; pages++) {
    char p[URL_MAX], num[32];
    copy_str(p, sizeof(p), collection_path);
    snprintf(num, sizeof(num), "%ld", limit);
    rc = add_query(p, sizeof(p), "limit", num);
    if (!rc && o && o->label_selector && o->label_selector[0])
      rc = add_query(p, sizeof(p), "labelSelector", o->label_selector);
    if (!rc && o && o->field_selector && o->field_selector[0])
      rc = add_query(p, sizeof(p), "fieldSelector", o->field_selector);
    if (!rc && cont)
      rc = add_query(p, sizeof(p), "continue", cont);
    if (rc)
      break;
    json_object *page = NULL;
    rc = gb_kube_client_request(c, GB_KUBE_LIST, "GET", p, NULL, NULL, 0, &page, e);
    if (rc)
      break;
    json_object *items = NULL, *meta = NULL, *v;
    if (!page || !json_object_object_get_ex(page, "items", &items) ||
        !(json_object_is_type(items, json_type_array) || json_object_is_type(items, json_type_null))) {
      snprintf(e->message, sizeof(e->message), "GET %.300s: list response has no items array", p);
      json_object_put(page);
      rc = GC_EIO;
      break;
    }
    json_object_object_get_ex(page, "metadata", &meta);
    if (first && rv && json_object_object_get_ex(meta, "resourceVersion", &v))
      copy_str(rv, rv_cap, json_object_get_string(v));
    first = 0;
    /* Items of built-in lists come without apiVersion and kind; fill them
     * in from the list ("PodList" -> "Pod") so every object looks the same
     * whether it came from a list or a watch. */
    char kind[128] = "";
    const char *api_version = NULL;
    if (json_object_object_get_ex(page, "kind", &v) && json_object_is_type(v, json_type_string)) {
      size_t kl = (size_t)json_object_get_string_len(v);
      if (kl > 4 && kl < sizeof(kind) && !strcmp(json_object_get_string(v) + kl - 4, "List")) {
        memcpy(kind, json_object_get_string(v), kl - 4);
        kind[kl - 4] = 0;
      }
    }
    if (json_object_object_get_ex(page, "apiVersion", &v) &&
        json_object_is_type(v, json_type_string))
      api_version = json_object_get_string(v);
    size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
    for (size_t i = 0; i < n && rc == GC_OK; i++) {
      json_object *it = json_object_array_get_idx(items, i);
      if (kind[0] && api_version && json_object_is_type(it, json_type_object) &&
          !json_object_object_get_ex(it, "kind", NULL)) {
        json_object_object_add(it, "apiVersion", json_object_new_string(api_version));
        json_object_object_add(it, "kind", json_object_new_string(kind));
      }
      rc = fn(arg, it);
    }
    free(cont);
    cont = NULL;
    if (rc == GC_OK && json_object_object_get_ex(meta, "continue", &v) &&
        json_object_is_type(v, json_type_string) && json_object_get_string_len(v) > 0) {
      cont = strdup(json_object_get_string(v));
      if (!cont)
        rc = GC_ENOMEM;
    }
    json_object_put(page);
    if (rc || !cont)
      break;
    if (pages > 1000000) {
      snprintf(e->message, sizeof(e->message), "GET %.300s: more than a million pages", p);
      rc = GC_ELIMIT;
      break;
    }
  }
  free(cont);
  return rc;
}

int gb_kube_client_stream(struct gb_kube_client *c, const char *path, long timeout_s,
                          gb_kube_chunk_fn fn, gb_kube_abort_fn should_abort, void *arg,
                          struct gb_kube_error *e) {
  struct gb_kube_error local;
  if (!e)
    e = &local;
  gb_kube_error_clear(e);
  CURL *h = handle_get(c);
  if (!h)
    return GC_ENOMEM;
  struct curl_slist *hdrs = NULL;
  int rc = setup(c, h, "GET", path, NULL, &hdrs, e);
  if (rc) {
    handle_put(c, h);
    return rc;
  }
  struct xfer x = {0};
  x.max = STATUS_BODY_MAX;
  x.h = h;
  x.fn = fn;
  x.abort_fn = should_abort;
  x.arg = arg;
  if (timeout_s > 0)
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_s * 1000L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
  throttle(c);
  double t0 = gb_clock_s();
  CURLcode cc = curl_easy_perform(h);
  double dt = gb_clock_s() - t0;
  long http = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
  curl_slist_free_all(hdrs);
  record(c, h, GB_KUBE_WATCH, cc == CURLE_OK || x.fn_rc ? http : 0, dt, 0);
  if (x.fn_rc) {
    rc = x.fn_rc;
  } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
    rc = GC_EUSAGE;
  } else if (cc != CURLE_OK) {
    e->curl_code = (int)cc;
    e->http = 0;
    snprintf(e->message, sizeof(e->message), "watch %s: %s", path, curl_easy_strerror(cc));
    rc = GC_EIO;
  } else if (http < 200 || http >= 300) {
    gb_kube_client_status_parse(x.buf, x.len, http, e);
    if (!e->retry_after_s)
      e->retry_after_s = x.retry_after;
    rc = GC_EIO;
  } else {
    rc = GC_OK;
  }
  free(x.buf);
  /* An aborted or failed stream leaves the connection mid-response. */
  if (cc == CURLE_OK)
    handle_put(c, h);
  else
    curl_easy_cleanup(h);
  return rc;
}

/* ---- JSON helpers --------------------------------------------------------- */

static int j2v(struct gc_arena *a, json_object *j, size_t depth, size_t max,
               struct gc_value **out) {
  if (depth > max)
    return GC_ELIMIT;
  struct gc_value *v = NULL;
  switch (json_object_get_type(j)) {
  case json_type_null:
    v = gc_value_null(a);
    break;
  case json_type_boolean:
    v = gc_value_bool(a, json_object_get_boolean(j));
    break;
  case json_type_int:
    v = gc_value_int(a, json_object_get_int64(j));
    if (v && !(v->text = gc_arena_strdup(a, json_object_get_string(j))))
      v = NULL;
    break;
  case json_type_double:
    v = gc_value_float(a, json_object_get_double(j));
    if (v && !(v->text = gc_arena_strdup(a, json_object_get_string(j))))
      v = NULL;
    break;
  case json_type_string:
    v = gc_value_str(a, json_object_get_string(j), (size_t)json_object_get_string_len(j));
    if (v)
      v->text = v->u.s;
    break;
  case json_type_array: {
    v = gc_value_seq(a);
    size_t n = v ? json_object_array_length(j) : 0;
    for (size_t i = 0; i < n; i++) {
      struct gc_value *c = NULL;
      int rc = j2v(a, json_object_array_get_idx(j, i), depth + 1, max, &c);
      if (rc)
        return rc;
      if (gc_seq_push(a, v, c))
        return GC_ENOMEM;
    }
    break;
  }
  case json_type_object: {
    v = gc_value_map(a);
    if (!v)
      break;
    json_object_object_foreach(j, key, val) {
      struct gc_value *c = NULL;
      int rc = j2v(a, val, depth + 1, max, &c);
      if (rc)
        return rc;
      if (gc_map_append(a, v, key, strlen(key), c))
        return GC_ENOMEM;
    }
    break;
  }
  }
  if (!v)
    return GC_ENOMEM;
  *out = v;
  return GC_OK;
}

int gb_kube_client_json_to_value(struct gc_arena *a, json_object *j, size_t max_depth,
                                 struct gc_value **out) {
  *out = NULL;
  return j2v(a, j, 0, max_depth ? max_depth : 64, out);
}

static json_object *v2j(const struct gc_value *v, int depth) {
  if (!v || depth > 64)
    return NULL;
  json_object *j = NULL;
  switch (v->type) {
  case GC_NULL:
    return json_object_new_null();
  case GC_BOOL:
    return json_object_new_boolean(v->u.b);
  case GC_INT:
    return json_object_new_int64(v->u.i);
  case GC_FLOAT:
    return json_object_new_double(v->u.f);
  case GC_STR:
    return json_object_new_string_len(v->u.s, (int)v->len);
  case GC_SEQ:
    j = json_object_new_array_ext((int)v->len);
    for (size_t i = 0; j && i < v->len; i++) {
      json_object *c = v2j(v->u.items[i], depth + 1);
      if ((!c && v->u.items[i]->type != GC_NULL) || json_object_array_add(j, c)) {
        json_object_put(c);
        json_object_put(j);
        return NULL;
      }
    }
    return j;
  case GC_MAP:
    j = json_object_new_object();
    for (size_t i = 0; j && i < v->len; i++) {
      json_object *c = v2j(v->u.members[i].value, depth + 1);
      if ((!c && v->u.members[i].value->type != GC_NULL) ||
          json_object_object_add(j, v->u.members[i].key, c)) {
        json_object_put(c);
        json_object_put(j);
        return NULL;
      }
    }
    return j;
  }
  return NULL;
}

json_object *gb_kube_client_value_to_json(const struct gc_value *v) { return v2j(v, 0); }
