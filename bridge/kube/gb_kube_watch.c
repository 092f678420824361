/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_watch: incremental watch-event parser and a single watch request.
 */
#include "gb_kube_watch.h"
#include "gb_kube_watch_test.h"
#include "gb_jscan.h"
#include "gb_kobj.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Trailing number characters held back from one chunk to the next (see
 * gb_watch_parser_feed). */
#define CARRY_MAX 64

struct gb_watch_parser {
  json_tokener *tok;
  char carry[CARRY_MAX];
  size_t ncarry;
  /* A minimal lexer over every byte fed: inside a string, after a
   * backslash, and the length of the current run of number characters
   * outside strings.  json-c's strict mode cannot replace it: it refuses
   * bytes after a complete value, i.e. the next event. */
  char in_str;
  int esc;
  size_t numrun;
  /* Continuation bytes the current UTF-8 sequence still needs.  It lives
   * here, across chunks, because json-c's own check (JSON_TOKENER_VALIDATE_
   * UTF8) restarts at every call and so refuses a valid character that a
   * network read happened to split. */
  int utf8_need;
  size_t max_bytes;
  int depth;
  int in_event; /* bytes of the current event have been fed to tok */
  size_t cur;   /* bytes of the current event so far */
  int nest;     /* open objects and arrays of the current event (the lexer's) */
  /* Keep mode (gb_watch_parser_set_keep): the lexer frames each event, its
   * bytes are gathered here when a chunk ends inside it, and gb_keep_decode
   * builds only {"type", "object": what the paths keep}. */
  struct gb_keep ev_keep[GB_KEEP_MAX];
  const struct gb_keep *ev_ptrs[GB_KEEP_MAX];
  size_t n_ev; /* 0: json-c parses whole events */
  char *buf;
  size_t nbuf, capbuf;
};

const char *gb_watch_type_name(enum gb_watch_type t) {
  static const char *n[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
  return (unsigned)t <= GB_WATCH_ERROR ? n[t] : "UNKNOWN";
}

struct gb_watch_parser *gb_watch_parser_new(size_t max_event_bytes, int max_depth) {
  struct gb_watch_parser *p = calloc(1, sizeof(*p));
  if (!p)
    return NULL;
  p->max_bytes = max_event_bytes ? max_event_bytes : GB_WATCH_DEFAULT_MAX_EVENT;
  p->depth = max_depth > 0 ? max_depth : GB_WATCH_DEFAULT_DEPTH;
  p->tok = json_tokener_new_ex(p->depth);
  if (!p->tok) {
    free(p);
    return NULL;
  }
  /* The API server (Go) sends RFC 8259 JSON in valid UTF-8: anything else
   * (NaN, Infinity, single quotes, bytes that are not UTF-8) is refused
   * as a malformed event rather than read as json-c's extensions.  Events
   * follow each other in one buffer, hence the trailing characters.  UTF-8
   * is checked by gb_watch_parser_feed's lexer, not by json-c (see
   * utf8_need). */
  json_tokener_set_flags(p->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
  return p;
}

void gb_watch_parser_free(struct gb_watch_parser *p) {
  if (!p)
    return;
  json_tokener_free(p->tok);
  free(p->buf);
  free(p);
}

int gb_watch_parser_set_keep(struct gb_watch_parser *p, const struct gb_keep *const *paths,
                             size_t n) {
  p->n_ev = 0;
  if (!n)
    return GC_OK;
  if (n + 1 > GB_KEEP_MAX)
    return GC_ELIMIT;
  for (size_t i = 0; i < n; i++)
    if (paths[i]->path[GB_KEEP_DEPTH - 1])
      return GC_ELIMIT; /* no room for the "object" step in front */
  memset(p->ev_keep, 0, sizeof(p->ev_keep));
  p->ev_keep[0].path[0] = "type";
  p->ev_ptrs[0] = &p->ev_keep[0];
  for (size_t i = 0; i < n; i++) {
    p->ev_keep[i + 1].path[0] = "object";
    for (size_t s = 0; s < GB_KEEP_DEPTH - 1 && paths[i]->path[s]; s++)
      p->ev_keep[i + 1].path[s + 1] = paths[i]->path[s];
    p->ev_ptrs[i + 1] = &p->ev_keep[i + 1];
  }
  p->n_ev = n + 1;
  return GC_OK;
}

void gb_watch_parser_reset(struct gb_watch_parser *p) {
  json_tokener_reset(p->tok);
  p->in_event = 0;
  p->cur = 0;
  p->ncarry = 0;
  p->in_str = 0;
  p->esc = 0;
  p->numrun = 0;
  p->utf8_need = 0;
  p->nest = 0;
  p->nbuf = 0;
}

int gb_watch_parser_pending(const struct gb_watch_parser *p) { return p->in_event || p->ncarry; }

static int is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* Validates one parsed document and hands it to fn. */
static int deliver(struct gb_watch_parser *p, json_object *doc, gb_watch_event_fn fn, void *arg,
                   struct gc_diags *d) {
  json_object *t = NULL, *obj = NULL;
  if (!json_object_is_type(doc, json_type_object) ||
      !json_object_object_get_ex(doc, "type", &t) || !json_object_is_type(t, json_type_string) ||
      !json_object_object_get_ex(doc, "object", &obj) ||
      !json_object_is_type(obj, json_type_object)) {
    gc_diags_addf(d, "watch stream: event is not an object with string \"type\" and object "
                     "\"object\"");
    return GC_EINVAL;
  }
  const char *ts = json_object_get_string(t);
  struct gb_watch_event ev = {0};
  if (!strcmp(ts, "ADDED"))
    ev.type = GB_WATCH_ADDED;
  else if (!strcmp(ts, "MODIFIED"))
    ev.type = GB_WATCH_MODIFIED;
  else if (!strcmp(ts, "DELETED"))
    ev.type = GB_WATCH_DELETED;
  else if (!strcmp(ts, "BOOKMARK"))
    ev.type = GB_WATCH_BOOKMARK;
  else if (!strcmp(ts, "ERROR"))
    ev.type = GB_WATCH_ERROR;
  else {
    gc_diags_addf(d, "watch stream: unknown event type \"%.40s\"", ts);
    return GC_EINVAL;
  }
  ev.object = obj;
  ev.rv = gb_kobj_meta(obj, "resourceVersion");
  ev.bytes = p->cur;
  return fn(arg, &ev);
}

static int feed_raw(struct gb_watch_parser *p, const char *data, size_t len,
                    gb_watch_event_fn fn, void *arg, struct gc_diags *diags) {
  while (len > 0) {
    if (!p->in_event) {
      while (len > 0 && is_ws(*data)) {
        data++;
        len--;
      }
      if (!len)
        break;
      p->in_event = 1;
      p->cur = 0;
    }
    /* Feed no more than the event may still use, so the tokener never
     * buffers more than the cap; an event still open at the cap is too big. */
    size_t room = p->max_bytes - p->cur;
    size_t n = len < room ? len : room;
    if (n == 0) {
      gc_diags_addf(diags, "watch stream: event larger than %zu bytes", p->max_bytes);
      return GC_ELIMIT;
    }
    if (n > INT32_MAX)
      n = INT32_MAX;
    json_object *doc = json_tokener_parse_ex(p->tok, data, (int)n);
    enum json_tokener_error err = json_tokener_get_error(p->tok);
    if (err == json_tokener_continue) {
      p->cur += n;
      data += n;
      len -= n;
      continue;
    }
    if (err != json_tokener_success) {
      json_object_put(doc);
      gc_diags_addf(diags, "watch stream: malformed JSON at event byte %zu: %s",
                    p->cur + json_tokener_get_parse_end(p->tok), json_tokener_error_desc(err));
      return err == json_tokener_error_depth ? GC_ELIMIT : GC_EINVAL;
    }
    size_t used = json_tokener_get_parse_end(p->tok);
    p->cur += used;
    data += used;
    len -= used;
    json_tokener_reset(p->tok);
    p->in_event = 0;
    int rc = deliver(p, doc, fn, arg, diags);
    json_object_put(doc);
    if (rc)
      return rc;
  }
  return GC_OK;
}

static int is_numch(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Advances the UTF-8 check by one byte (RFC 3629: no overlong two-byte
 * leads, nothing above U+10FFFF); returns 0 when the byte cannot come next. */
static int utf8_step(struct gb_watch_parser *p, unsigned char c) {
  if (p->utf8_need > 0) {
    if ((c & 0xC0) != 0x80)
      return 0;
    p->utf8_need--;
    return 1;
  }
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    p->utf8_need = 1;
  else if ((c & 0xF0) == 0xE0)
    p->utf8_need = 2;
  else if (c >= 0xF0 && c <= 0xF4)
    p->utf8_need = 3;
  else
    return 0;
  return 1;
}

/* The lexer's step over one byte (see gb_watch_parser_feed): UTF-8, strings,
 * runs of number characters, letters outside strings, and the nesting. */
static inline int lex_byte(struct gb_watch_parser *p, char c, struct gc_diags *diags) {
  if (!utf8_step(p, (unsigned char)c)) {
    gc_diags_addf(diags, "watch stream: invalid UTF-8 (byte 0x%02x)", (unsigned char)c);
    return GC_EINVAL;
  }
  if (p->in_str) {
    if (p->esc)
      p->esc = 0;
    else if (c == '\\')
      p->esc = 1;
    else if (c == p->in_str)
      p->in_str = 0;
  } else if (is_numch(c)) {
    if (++p->numrun >= CARRY_MAX) {
      gc_diags_addf(diags, "watch stream: number longer than %d characters", CARRY_MAX - 1);
      return GC_EINVAL;
    }
  } else {
    p->numrun = 0;
    if (c == '"') {
      p->in_str = c;
    } else if (c == '{' || c == '[') {
      p->nest++;
    } else if (c == '}' || c == ']') {
      p->nest--;
    } else if (c == '\'' || c == '/' ||
               (((c | 0x20) >= 'a' && (c | 0x20) <= 'z') && !strchr("truefalsnE", c))) {
      /* json-c's extensions (single-quoted strings, comments, NaN and
       * Infinity, which it reads even in strict mode) are not JSON, and
       * they would change where a value ends.  Outside strings JSON has
       * only the letters of true, false, null and the exponent's e. */
      gc_diags_addf(diags, "watch stream: unexpected '%c' outside a string (not JSON)", c);
      return GC_EINVAL;
    }
  }
  return GC_OK;
}

/* 1 when doc's "type" is the string "ERROR". */
static int is_error_event(json_object *doc) {
  const char *t = gb_kobj_str(doc, "type");
  return t && !strcmp(t, "ERROR");
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The first index at or after i (before len) of a quote, a backslash or a
 * byte above 0x7f (a string's bytes the lexer must see), 8 bytes at a time;
 * len when there is none. */
static size_t plain_end(const char *data, size_t i, size_t len) {
  for (; len - i >= 8; i += 8) {
    uint64_t v, q, b;
    memcpy(&v, data + i, 8);
    q = v ^ (ONES * '"');
    b = v ^ (ONES * '\\');
    if ((((q - ONES) & ~q) | ((b - ONES) & ~b) | v) & HIGHS)
      break;
  }
  while (i < len && (unsigned char)data[i] < 0x80 && data[i] != '"' && data[i] != '\\')
    i++;
  return i;
}

/* Decodes one framed event (text, n) to what the keep paths reach (an
 * ERROR event's Status whole) and delivers it. */
static int decode_event(struct gb_watch_parser *p, const char *text, size_t n,
                        gb_watch_event_fn fn, void *arg, struct gc_diags *diags) {
  static const struct gb_keep whole[] = {{{"type"}}, {{"object"}}};
  const struct gb_keep *const whole_ptrs[] = {&whole[0], &whole[1]};
  json_object *doc = NULL;
  struct gb_sj s;
  int rc = 0;
  for (int pass = 0; pass < 2; pass++) {
    gb_sj_init(&s, text, n);
    s.max_depth = p->depth - 1; /* json-c's depth counts one more */
    json_object_put(doc);
    doc = NULL;
    rc = pass ? gb_keep_decode(&s, whole_ptrs, 2, p->tok, &doc)
              : gb_keep_decode(&s, p->ev_ptrs, p->n_ev, p->tok, &doc);
    if (!rc)
      rc = gb_sj_finish(&s);
    if (rc || !is_error_event(doc))
      break;
  }
  if (rc) {
    json_object_put(doc);
    gc_diags_addf(diags, "watch stream: malformed JSON in an event: %s", s.msg);
    return rc == GC_ELIMIT || rc == GC_ENOMEM ? rc : GC_EINVAL;
  }
  p->cur = n;
  rc = deliver(p, doc, fn, arg, diags);
  json_object_put(doc);
  return rc;
}

/* Appends an event's bytes to the parser's buffer, within the byte cap. */
static int gather(struct gb_watch_parser *p, const char *data, size_t len,
                  struct gc_diags *diags) {
  if (p->nbuf + len > p->max_bytes) {
    gc_diags_addf(diags, "watch stream: event larger than %zu bytes", p->max_bytes);
    return GC_ELIMIT;
  }
  if (p->nbuf + len > p->capbuf) {
    size_t cap = p->capbuf ? p->capbuf : 4096;
    while (cap < p->nbuf + len)
      cap *= 2;
    char *nb = realloc(p->buf, cap);
    if (!nb)
      return GC_ENOMEM;
    p->buf = nb;
    p->capbuf = cap;
  }
  memcpy(p->buf + p->nbuf, data, len);
  p->nbuf += len;
  return GC_OK;
}

/* Keep mode: the lexer frames the events (an event is one object, from its
 * '{' to the '}' that closes it); a complete event is decoded in place, or
 * from the buffer when it began in an earlier chunk. */
static int feed_keep(struct gb_watch_parser *p, const char *data, size_t len,
                     gb_watch_event_fn fn, void *arg, struct gc_diags *diags) {
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    if (p->in_str && !p->esc && !p->utf8_need) {
      /* Most of an event is plain string bytes: nothing in them changes
       * the lexer's state, so they are passed over without it. */
      i = plain_end(data, i, len);
      if (i == len)
        break;
    }
    char c = data[i];
    if (!p->in_event) {
      if (is_ws(c))
        continue;
      if (c != '{') {
        gc_diags_addf(diags, "watch stream: event is not an object with string \"type\" and "
                             "object \"object\"");
        return GC_EINVAL;
      }
      p->in_event = 1;
      p->nest = 0;
      p->nbuf = 0;
      start = i;
    }
    int rc = lex_byte(p, c, diags);
    if (!rc && p->nest >= p->depth) {
      gc_diags_addf(diags, "watch stream: malformed JSON at event byte %zu: nesting too deep",
                    p->nbuf + i - start);
      rc = GC_ELIMIT;
    }
    if (rc)
      return rc;
    if (p->nest > 0 || p->in_str)
      continue;
    p->in_event = 0;
    const char *ev = data + start;
    size_t n = i + 1 - start;
    if (p->nbuf) {
      if ((rc = gather(p, ev, n, diags)))
        return rc;
      ev = p->buf;
      n = p->nbuf;
      p->nbuf = 0;
    } else if (n > p->max_bytes) {
      gc_diags_addf(diags, "watch stream: event larger than %zu bytes", p->max_bytes);
      return GC_ELIMIT;
    }
    if ((rc = decode_event(p, ev, n, fn, arg, diags)))
      return rc;
  }
  return p->in_event ? gather(p, data + start, len - start, diags) : GC_OK;
}

/* json-c 0.16 accepts a malformed number such as 3-7 when a chunk boundary
 * falls right after a digit (it parses 3 and drops the rest), while the same
 * bytes in one piece are rejected.  So a run of number characters at the end
 * of a chunk is held back and handed to the tokener together with the rest
 * of the number and its terminator.  Events end with '}', so holding back
 * never delays a complete event.  Numbers of CARRY_MAX characters or more
 * are refused (Kubernetes never sends one: int64 has 19 digits). */
int gb_watch_parser_feed(struct gb_watch_parser *p, const char *data, size_t len,
                         gb_watch_event_fn fn, void *arg, struct gc_diags *diags) {
  /* Track strings so that only numbers are held back, and refuse numbers
   * too long to hold back whole, wherever they are, so the outcome never
   * depends on the chunking. */
  if (p->n_ev)
    return feed_keep(p, data, len, fn, arg, diags);
  for (size_t i = 0; i < len; i++) {
    int rc = lex_byte(p, data[i], diags);
    if (rc)
      return rc;
  }
  int outside = !p->in_str;
  if (p->ncarry) {
    size_t k = 0;
    while (k < len && is_numch(data[k]) && p->ncarry + k < CARRY_MAX)
      k++;
    if (k == len && p->ncarry + k < CARRY_MAX) {
      memcpy(p->carry + p->ncarry, data, k);
      p->ncarry += k;
      return GC_OK;
    }
    char tmp[2 * CARRY_MAX + 1];
    size_t take = k < len ? k + 1 : k;
    memcpy(tmp, p->carry, p->ncarry);
    memcpy(tmp + p->ncarry, data, take);
    size_t n = p->ncarry + take;
    p->ncarry = 0;
    int rc = feed_raw(p, tmp, n, fn, arg, diags);
    if (rc)
      return rc;
    data += take;
    len -= take;
  }
  size_t r = 0;
  while (outside && r < len && is_numch(data[len - 1 - r]))
    r++;
  if (r > 0) {
    int rc = feed_raw(p, data, len - r, fn, arg, diags);
    if (rc)
      return rc;
    memcpy(p->carry, data + len - r, r);
    p->ncarry = r;
    return GC_OK;
  }
  return feed_raw(p, data, len, fn, arg, diags);
}

/* ---- one watch request ---------------------------------------------------- */

struct wctx {
  struct gb_watch_parser *p;
  gb_watch_event_fn fn;
  gb_kube_abort_fn abort_fn;
  void *arg;
  struct gc_diags diags;
  int parse_rc; /* parser's own error (not the callback's value) */
};

static int wfwd(void *arg, const struct gb_watch_event *ev) {
  struct wctx *w = arg;
  return w->fn(w->arg, ev);
}

static int wchunk(void *arg, const char *data, size_t len) {
  struct wctx *w = arg;
  size_t before = w->diags.errors;
  int rc = gb_watch_parser_feed(w->p, data, len, wfwd, w, &w->diags);
  if (rc && w->diags.errors > before && (rc == GC_EINVAL || rc == GC_ELIMIT))
    w->parse_rc = rc;
  return rc;
}

static int wabort(void *arg) {
  struct wctx *w = arg;
  return w->abort_fn ? w->abort_fn(w->arg) : 0;
}

static int add_q(char *buf, size_t cap, const char *k, const char *v) {
  size_t len = strlen(buf);
  /* Selectors need escaping; everything else here is a plain token. */
  char esc[1024];
  size_t n = 0;
  for (const char *s = v; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (n + 4 >= sizeof(esc))
      return GC_ELIMIT;
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      esc[n++] = (char)ch;
    } else {
      snprintf(esc + n, 4, "%%%02X", ch);
      n += 3;
    }
  }
  esc[n] = 0;
  int w = snprintf(buf + len, cap - len, "%c%s=%s", strchr(buf, '?') ? '&' : '?', k, esc);
  return (w < 0 || (size_t)w >= cap - len) ? GC_ELIMIT : GC_OK;
}

int gb_kube_watch_once(struct gb_kube_client *c, const char *collection_path,
                       const struct gb_kube_watch_opts *o, gb_watch_event_fn fn,
                       gb_kube_abort_fn should_abort, void *arg, struct gb_kube_error *e) {
  struct gb_kube_error local;
  if (!e)
    e = &local;
  gb_kube_error_clear(e);
  char path[8192], num[32];
  int n = snprintf(path, sizeof(path), "%s", collection_path);
  if (n < 0 || (size_t)n >= sizeof(path))
    return GC_ELIMIT;
  int rc = add_q(path, sizeof(path), "watch", "1");
  if (!rc && o && o->resource_version && o->resource_version[0])
    rc = add_q(path, sizeof(path), "resourceVersion", o->resource_version);
  if (!rc && o && o->bookmarks)
    rc = add_q(path, sizeof(path), "allowWatchBookmarks", "true");
  if (!rc && o && o->timeout_s > 0) {
    snprintf(num, sizeof(num), "%ld", o->timeout_s);
    rc = add_q(path, sizeof(path), "timeoutSeconds", num);
  }
  if (!rc && o && o->label_selector && o->label_selector[0])
    rc = add_q(path, sizeof(path), "labelSelector", o->label_selector);
  if (!rc && o && o->field_selector && o->field_selector[0])
    rc = add_q(path, sizeof(path), "fieldSelector", o->field_selector);
  if (rc) {
    snprintf(e->message, sizeof(e->message), "watch %s: query too long", collection_path);
    return rc;
  }
  struct wctx w = {0};
  w.fn = fn;
  w.abort_fn = should_abort;
  w.arg = arg;
  gc_diags_init(&w.diags);
  w.p = gb_watch_parser_new(o ? o->max_event_bytes : 0, 0);
  if (!w.p)
    return GC_ENOMEM;
  if (o && o->n_keep)
    gb_watch_parser_set_keep(w.p, o->keep, o->n_keep); /* too deep: whole objects */
  long overall = o && o->timeout_s > 0 ? o->timeout_s + 30 : 0;
  rc = gb_kube_client_stream(c, path, overall, wchunk, wabort, &w, e);
  if (w.parse_rc) {
    snprintf(e->message, sizeof(e->message), "%s", w.diags.n ? w.diags.msgs[0] : "bad stream");
    rc = w.parse_rc;
  } else if (rc == GC_OK && gb_watch_parser_pending(w.p)) {
    /* The server closed mid-event: report it, the caller rewatches. */
    snprintf(e->message, sizeof(e->message), "watch %.300s: stream ended inside an event", path);
    rc = GC_EIO;
  }
  gb_watch_parser_free(w.p);
  gc_diags_destroy(&w.diags);
  return rc;
}
