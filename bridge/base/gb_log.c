/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_log: structured, levelled, thread-safe logging (see gb_log.h).
 */
#include "gb_log.h"
#include "gb_log_test.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gc_diag.h"

#define MAX_PAIRS 32

static atomic_int g_level = GB_LOG_INFO;
static atomic_int g_format = GB_LOG_TEXT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_stream; /* NULL means stderr; guarded by g_mu */

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void gb_log_set_level(enum gb_log_level level) {
  if ((int)level < GB_LOG_DEBUG || level > GB_LOG_OFF)
    level = GB_LOG_INFO;
  atomic_store(&g_level, (int)level);
}

void gb_log_set_format(enum gb_log_format format) {
  atomic_store(&g_format, format == GB_LOG_JSON ? GB_LOG_JSON : GB_LOG_TEXT);
}

void gb_log_set_stream(FILE *stream) {
  pthread_mutex_lock(&g_mu);
  g_stream = stream;
  pthread_mutex_unlock(&g_mu);
}

/* The names gb_log_level_parse and gb_log_format_parse take, in any case. */
static const struct gb_opt_enum level_opts[] = {
    {"debug", GB_LOG_DEBUG, GB_OPT_ANYCASE},
    {"info", GB_LOG_INFO, GB_OPT_ANYCASE},
    {"warn", GB_LOG_WARN, GB_OPT_ANYCASE},
    {"warning", GB_LOG_WARN, GB_OPT_ANYCASE | GB_OPT_ALIAS},
    {"error", GB_LOG_ERROR, GB_OPT_ANYCASE},
    {"off", GB_LOG_OFF, GB_OPT_ANYCASE},
    {NULL, 0, 0}};
static const struct gb_opt_enum format_opts[] = {
    {"text", GB_LOG_TEXT, GB_OPT_ANYCASE}, {"json", GB_LOG_JSON, GB_OPT_ANYCASE}, {NULL, 0, 0}};

#define S struct gb_log_options
static const struct gb_opt log_keys[] = {
    GB_KEY_ENUM(S, "log.level", level, level_opts, "info", "log-level",
                "lowest level written: debug, info, warn, error or off"),
    GB_KEY_ENUM(S, "log.format", format, format_opts, "text", "log-format",
                "text (logfmt) or json (one object per line)"),
};
const struct gb_opt_table gb_log_opt_table = GB_OPT_TABLE("base", "Logging", S, log_keys, NULL);
#undef S

int gb_log_level_parse(const char *s, enum gb_log_level *out) {
  if (!s || !out)
    return GC_EINVAL;
  for (int i = GB_LOG_DEBUG; i <= GB_LOG_OFF; i++)
    if (!strcasecmp(s, level_names[i])) {
      *out = (enum gb_log_level)i;
      return 0;
    }
  if (!strcasecmp(s, "warning")) {
    *out = GB_LOG_WARN;
    return 0;
  }
  return GC_EINVAL;
}

int gb_log_format_parse(const char *s, enum gb_log_format *out) {
  if (!s || !out)
    return GC_EINVAL;
  if (!strcasecmp(s, "text"))
    *out = GB_LOG_TEXT;
  else if (!strcasecmp(s, "json"))
    *out = GB_LOG_JSON;
  else
    return GC_EINVAL;
  return 0;
}

const char *gb_log_level_name(enum gb_log_level level) {
  if ((int)level < GB_LOG_DEBUG || level > GB_LOG_OFF)
    return "unknown";
  return level_names[level];
}

int gb_log_enabled(enum gb_log_level level) {
  return level < GB_LOG_OFF && (int)level >= atomic_load(&g_level);
}

/* A bounded line buffer: appends past the end are dropped, and one byte is
 * always kept for the final newline. */
struct line {
  char buf[GB_LOG_LINE_MAX];
  size_t n;
};

static void put_mem(struct line *l, const char *s, size_t len) {
  size_t room = sizeof(l->buf) - 1 - l->n;
  if (len > room)
    len = room;
  memcpy(l->buf + l->n, s, len);
  l->n += len;
}

static void put(struct line *l, const char *s) { put_mem(l, s, strlen(s)); }

static void put_ch(struct line *l, char c) { put_mem(l, &c, 1); }

static void put_hex_escape(struct line *l, unsigned char c) {
  static const char hex[] = "0123456789abcdef";
  char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
  put_mem(l, e, sizeof(e));
}

/* Room always left free by put_escaped: "...", a closing quote, "}" and the
 * newline, so a cut record is still well formed. */
#define TAIL_RESERVE 8

static size_t room(const struct line *l) { return sizeof(l->buf) - 1 - l->n; }

/* Writes `s` escaped for a JSON string or a quoted logfmt value (the same
 * escapes serve both), cut at GB_LOG_VALUE_MAX bytes or when the line is
 * nearly full; a cut value ends with "...". */
static void put_escaped(struct line *l, const char *s) {
  size_t len = strlen(s);
  int cut = len > GB_LOG_VALUE_MAX;
  if (cut)
    len = GB_LOG_VALUE_MAX;
  for (size_t i = 0; i < len; i++) {
    if (room(l) < 6 + TAIL_RESERVE) {
      cut = 1;
      break;
    }
    unsigned char c = (unsigned char)s[i];
    switch (c) {
    case '"': put(l, "\\\""); break;
    case '\\': put(l, "\\\\"); break;
    case '\n': put(l, "\\n"); break;
    case '\r': put(l, "\\r"); break;
    case '\t': put(l, "\\t"); break;
    default:
      if (c < 0x20 || c == 0x7f)
        put_hex_escape(l, c);
      else
        put_ch(l, (char)c);
    }
  }
  if (cut)
    put(l, "...");
}

static int needs_quotes(const char *s) {
  if (!*s || strlen(s) > GB_LOG_VALUE_MAX)
    return 1;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7f)
      return 1;
  }
  return 0;
}

static void put_key(struct line *l, const char *k) {
  size_t n = 0;
  for (; k && *k && n < 128; k++, n++) {
    char c = *k;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '.' || c == '/' || c == '-';
    put_ch(l, ok ? c : '_');
  }
  if (!n)
    put_ch(l, '_');
}

static void put_time(struct line *l) {
  struct timespec ts;
  struct tm tm;
  char b[40];
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(b + n, sizeof(b) - n, ".%03ldZ", ts.tv_nsec / 1000000L);
  put(l, b);
}

static void text_pair(struct line *l, const char *k, const char *v) {
  put_ch(l, ' ');
  put_key(l, k);
  put_ch(l, '=');
  if (needs_quotes(v)) {
    put_ch(l, '"');
    put_escaped(l, v);
    put_ch(l, '"');
  } else {
    put(l, v);
  }
}

static void json_pair(struct line *l, const char *k, const char *v) {
  put(l, ",\"");
  put_key(l, k);
  put(l, "\":\"");
  put_escaped(l, v);
  put_ch(l, '"');
}

void gb_log_kv(enum gb_log_level level, const char *msg, const char *const *kv, size_t n_pairs) {
  if (!gb_log_enabled(level))
    return;
  struct line stack_line; /* 16 KiB: fine on any thread stack */
  struct line *l = &stack_line;
  l->n = 0;
  if (n_pairs > MAX_PAIRS)
    n_pairs = MAX_PAIRS;
  int json = atomic_load(&g_format) == GB_LOG_JSON;
  const char *lvl = gb_log_level_name(level);
  if (!msg)
    msg = "";
  if (json) {
    put(l, "{\"ts\":\"");
    put_time(l);
    put(l, "\",\"level\":\"");
    put(l, lvl);
    put(l, "\",\"msg\":\"");
    put_escaped(l, msg);
    put_ch(l, '"');
  } else {
    put(l, "ts=");
    put_time(l);
    put(l, " level=");
    put(l, lvl);
    text_pair(l, "msg", msg);
  }
  for (size_t i = 0; kv && i < n_pairs; i++) {
    if (room(l) < 160 + TAIL_RESERVE)
      break; /* no room for another key: drop the remaining pairs */
    const char *k = kv[2 * i];
    const char *v = kv[2 * i + 1] ? kv[2 * i + 1] : "";
    if (json)
      json_pair(l, k, v);
    else
      text_pair(l, k, v);
  }
  if (json)
    put_ch(l, '}');
  l->buf[l->n++] = '\n';
  pthread_mutex_lock(&g_mu);
  FILE *f = g_stream ? g_stream : stderr;
  fwrite(l->buf, 1, l->n, f);
  fflush(f);
  pthread_mutex_unlock(&g_mu);
}

void gb_log(enum gb_log_level level, const char *msg, ...) {
  if (!gb_log_enabled(level))
    return;
  const char *kv[2 * MAX_PAIRS];
  size_t n = 0;
  va_list ap;
  va_start(ap, msg);
  for (;;) {
    const char *k = va_arg(ap, const char *);
    if (!k)
      break;
    const char *v = va_arg(ap, const char *);
    if (n < MAX_PAIRS) {
      kv[2 * n] = k;
      kv[2 * n + 1] = v;
      n++;
    }
  }
  va_end(ap);
  gb_log_kv(level, msg, kv, n);
}
