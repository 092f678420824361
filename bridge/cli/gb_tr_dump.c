/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tr_dump: kubectl dumps read one object at a time (see the header).
 *
 * JSON: a small scanner walks the top level (whitespace, the braces of each
 * document, its member names, commas) and hands every value to json-c's
 * tokener, positioned at its first byte and fed chunk by chunk; the
 * elements of a top-level "items" array each become an object of their own,
 * any other member goes into the document.  Line and column are counted
 * over the bytes as they pass (memchr for the newlines), and each object's
 * text is kept (copied only when it spans two chunks) so an error inside it
 * can be placed exactly by re-reading just that object with gb_manifest's
 * positioned JSON reader.
 *
 * YAML: libyaml's event parser reads the source through a small handler;
 * each item (or document) is built as a json-c tree whose nodes carry their
 * position as userdata, with plain scalars typed as sigs.k8s.io/yaml types
 * them (gb_scalar).  Aliases are refused: kubectl never writes them, and a
 * streaming reader keeps no anchored nodes.
 */
#include "gb_tr_dump.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "gb_buf.h"
#include "gb_manifest.h"
#include "gb_scalar.h"

#define CHUNK ((size_t)1 << 20)

/* One source being read. */
struct src {
  struct gb_tr_dump_limits lim;
  gb_tr_dump_fn fn;
  void *ctx;
  struct gc_diags *diags;
  const char *name;
  int fd;
  uint64_t total; /* bytes read so far */
  int rc;         /* the first error */
};

static int src_err(struct src *s, int rc, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int src_err(struct src *s, int rc, uint32_t line, uint32_t col, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  gc_diags_addf(s->diags, "%s:%u:%u: %s", s->name, line, col, msg);
  if (!s->rc)
    s->rc = rc;
  return rc;
}

/* Reads up to cap bytes; returns the count, 0 at the end, or -1 (reported). */
static ssize_t src_read(struct src *s, void *buf, size_t cap) {
  ssize_t n;
  do
    n = read(s->fd, buf, cap);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    gc_diags_addf(s->diags, "%s: %s", s->name, strerror(errno));
    if (!s->rc)
      s->rc = GC_EIO;
    return -1;
  }
  s->total += (uint64_t)n;
  if (s->total > s->lim.max_source_bytes) {
    gc_diags_addf(s->diags, "%s: source size exceeds limit %llu bytes", s->name,
                  (unsigned long long)s->lim.max_source_bytes);
    if (!s->rc)
      s->rc = GC_ELIMIT;
    return -1;
  }
  return n;
}

/* Gives an item without apiVersion and kind those of its List ("PodList"
 * -> "Pod"); returns 1 when it still has no kind. */
static int list_item_kind(json_object *item, json_object *doc) {
  json_object *v = NULL;
  if (json_object_object_get_ex(item, "kind", &v))
    return 0;
  const char *lk = NULL;
  if (json_object_object_get_ex(doc, "kind", &v) && json_object_is_type(v, json_type_string))
    lk = json_object_get_string(v);
  size_t n = lk ? strlen(lk) : 0;
  if (n <= 4 || strcmp(lk + n - 4, "List") != 0)
    return 1;
  json_object_object_add(item, "kind", json_object_new_string_len(lk, (int)(n - 4)));
  if (!json_object_object_get_ex(item, "apiVersion", NULL) &&
      json_object_object_get_ex(doc, "apiVersion", &v) && json_object_is_type(v, json_type_string))
    json_object_object_add(item, "apiVersion", json_object_new_string(json_object_get_string(v)));
  return 0;
}

static int deliver(struct src *s, json_object *obj, uint32_t line, uint32_t col, const char *text,
                   size_t len) {
  struct gb_tr_dump_item it = {obj, s->name, line, col, text, len};
  int rc = s->fn(s->ctx, &it);
  if (rc < 0 && !s->rc)
    s->rc = rc;
  return rc < 0 ? rc : 0;
}

static void missing_kinds(struct src *s, size_t n, uint32_t line, uint32_t col) {
  if (n)
    gc_diags_warnf(s->diags,
                   "%s:%u:%u: %zu List items without kind (the List names none before "
                   "its items): left out",
                   s->name, line, col, n);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */

/* Bytes kept from a mark on, across refills. */
struct capture {
  int on;
  size_t mark;
  struct gb_buf b;
};

struct jr {
  struct src *s;
  char *buf;
  size_t len, pos;
  int eof;
  uint32_t line, col; /* the position of buf[lc] */
  size_t lc;
  struct json_tokener *tok;
  struct capture cap[2]; /* 0: the document, 1: the current item */
};

/* Moves the line:col count forward to buf[upto]. */
static void advance_lc(struct jr *r, size_t upto) {
  const char *p = r->buf + r->lc, *end = r->buf + upto, *nl;
  while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
    r->line++;
    r->col = 1;
    p = nl + 1;
  }
  for (; p < end; p++)
    if (((unsigned char)*p & 0xC0) != 0x80)
      r->col++;
  r->lc = upto;
}

static void pos_at(struct jr *r, size_t at, uint32_t *line, uint32_t *col) {
  advance_lc(r, at);
  *line = r->line;
  *col = r->col;
}

/* Next chunk: 1, 0 at the end, or -1 (reported). */
static int refill(struct jr *r) {
  advance_lc(r, r->len);
  for (int i = 0; i < 2; i++)
    if (r->cap[i].on) {
      gb_buf_add(&r->cap[i].b, r->buf + r->cap[i].mark, r->len - r->cap[i].mark);
      r->cap[i].mark = 0;
    }
  ssize_t n = src_read(r->s, r->buf, CHUNK);
  r->len = n > 0 ? (size_t)n : 0;
  r->pos = r->lc = 0;
  if (n == 0)
    r->eof = 1;
  return n < 0 ? -1 : n > 0;
}

/* The next byte that is not whitespace (not consumed), -1 at the end, -2
 * on a read error. */
static int skip_ws(struct jr *r) {
  for (;;) {
    while (r->pos < r->len) {
      char c = r->buf[r->pos];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
        return (unsigned char)c;
      r->pos++;
    }
    if (r->eof)
      return -1;
    int k = refill(r);
    if (k <= 0)
      return k == 0 ? -1 : -2;
  }
}

static int jr_err(struct jr *r, int rc, size_t at, const char *msg) {
  uint32_t line, col;
  pos_at(r, at, &line, &col);
  return src_err(r->s, rc, line, col, "%s", msg);
}

static void capture_start(struct jr *r, int i) {
  r->cap[i].on = 1;
  r->cap[i].mark = r->pos;
  gb_buf_reset(&r->cap[i].b);
}

/* The captured text up to pos (the capture ends). */
static const char *capture_end(struct jr *r, int i, size_t *len) {
  struct capture *c = &r->cap[i];
  c->on = 0;
  if (gb_buf_len(&c->b) == 0 && !c->b.err) {
    *len = r->pos - c->mark;
    return r->buf + c->mark;
  }
  gb_buf_add(&c->b, r->buf + c->mark, r->pos - c->mark);
  *len = gb_buf_len(&c->b);
  return gb_buf_ptr(&c->b); /* NULL when it grew past the bound */
}

/* Parses one value at pos with json-c, across chunks.  *out is the
 * caller's.  Returns 0 or a GC_E* code (reported). */
static int parse_value(struct jr *r, json_object **out) {
  size_t bytes = 0;
  uint32_t line, col; /* where the value starts, for a value over the bound */
  pos_at(r, r->pos, &line, &col);
  json_tokener_reset(r->tok);
  *out = NULL;
  for (;;) {
    size_t avail = r->len - r->pos;
    int n = avail > INT_MAX ? INT_MAX : (int)avail;
    json_object *o = json_tokener_parse_ex(r->tok, r->buf + r->pos, n);
    enum json_tokener_error e = json_tokener_get_error(r->tok);
    if (e == json_tokener_success &&
        bytes + json_tokener_get_parse_end(r->tok) <= r->s->lim.max_object_bytes) {
      r->pos += json_tokener_get_parse_end(r->tok);
      *out = o;
      return 0;
    }
    if (e == json_tokener_success) {
      json_object_put(o);
      avail = r->s->lim.max_object_bytes + 1; /* reported below */
    }
    if (e != json_tokener_continue && e != json_tokener_success)
      return jr_err(r, e == json_tokener_error_depth ? GC_ELIMIT : GC_EINVAL,
                    r->pos + json_tokener_get_parse_end(r->tok), json_tokener_error_desc(e));
    bytes += avail;
    if (bytes > r->s->lim.max_object_bytes)
      return src_err(r->s, GC_ELIMIT, line, col, "object larger than the limit of %zu bytes",
                     r->s->lim.max_object_bytes);
    r->pos = r->len;
    int k = r->eof ? 0 : refill(r);
    if (k < 0)
      return GC_EIO;
    if (k == 0) {
      /* The input ended inside a value: a NUL tells json-c it is the end,
       * so a trailing number completes and anything else is truncated. */
      o = json_tokener_parse_ex(r->tok, "", 1);
      if (o && json_tokener_get_error(r->tok) == json_tokener_success) {
        *out = o;
        return 0;
      }
      json_object_put(o);
      return jr_err(r, GC_EINVAL, r->pos, "unexpected end of JSON input");
    }
  }
}

/* The elements of a top-level "items" array ('[' consumed). */
static int read_items(struct jr *r, json_object *doc, size_t *missing) {
  for (size_t i = 0;; i++) {
    int c = skip_ws(r);
    if (c == ']' && i == 0) {
      r->pos++;
      return 0;
    }
    if (c < 0)
      return c == -1 ? jr_err(r, GC_EINVAL, r->pos, "unexpected end of JSON input") : GC_EIO;
    uint32_t line, col;
    pos_at(r, r->pos, &line, &col);
    capture_start(r, 1);
    json_object *item = NULL;
    int rc = parse_value(r, &item);
    size_t len = 0;
    const char *text = capture_end(r, 1, &len);
    if (rc)
      return rc;
    if (!json_object_is_type(item, json_type_object)) {
      src_err(r->s, GC_EINVAL, line, col, "items[%zu]: not an object", i);
    } else if (list_item_kind(item, doc)) {
      (*missing)++;
    } else if ((rc = deliver(r->s, item, line, col, text, len)) != 0) {
      json_object_put(item);
      return rc;
    }
    json_object_put(item);
    c = skip_ws(r);
    r->pos += c == ',' || c == ']';
    if (c == ']')
      return 0;
    if (c != ',')
      return c == -2 ? GC_EIO : jr_err(r, GC_EINVAL, r->pos, "expected ',' or ']' after an item");
  }
}

/* One member of a top-level object; *list set when it was "items". */
static int read_member(struct jr *r, json_object *doc, int *list, size_t *missing) {
  json_object *k = NULL, *v = NULL;
  size_t at = r->pos;
  int rc = parse_value(r, &k);
  if (rc)
    return rc;
  if (!json_object_is_type(k, json_type_string)) {
    json_object_put(k);
    return jr_err(r, GC_EINVAL, at, "expected a member name");
  }
  int c = skip_ws(r);
  if (c != ':') {
    json_object_put(k);
    return c == -2 ? GC_EIO : jr_err(r, GC_EINVAL, r->pos, "expected ':' after a member name");
  }
  r->pos++;
  c = skip_ws(r);
  if (!strcmp(json_object_get_string(k), "items") && c == '[') {
    r->pos++;
    *list = 1;
    r->cap[0].on = 0; /* a List: its items are the objects, not the document */
    rc = read_items(r, doc, missing);
  } else if (!(rc = parse_value(r, &v))) {
    json_object_object_add(doc, json_object_get_string(k), v);
  }
  json_object_put(k);
  return rc;
}

/* One top-level document ('{' at pos). */
static int read_document(struct jr *r) {
  uint32_t line, col;
  pos_at(r, r->pos, &line, &col);
  capture_start(r, 0);
  r->pos++;
  json_object *doc = json_object_new_object();
  int list = 0, rc = doc ? 0 : GC_ENOMEM;
  size_t missing = 0;
  for (int first = 1; !rc; first = 0) {
    int c = skip_ws(r);
    if (c == '}' && first) {
      r->pos++;
      break;
    }
    if (c != '"') {
      rc = c == -2 ? GC_EIO : jr_err(r, GC_EINVAL, r->pos, "expected a member name");
      break;
    }
    if ((rc = read_member(r, doc, &list, &missing)))
      break;
    c = skip_ws(r);
    r->pos += c == ',' || c == '}';
    if (c == '}')
      break;
    if (c != ',')
      rc = c == -2 ? GC_EIO : jr_err(r, GC_EINVAL, r->pos, "expected ',' or '}'");
  }
  size_t len = 0;
  const char *text = r->cap[0].on ? capture_end(r, 0, &len) : NULL;
  r->cap[0].on = 0;
  if (!rc && !list)
    rc = deliver(r->s, doc, line, col, text, len);
  missing_kinds(r->s, missing, line, col);
  json_object_put(doc);
  return rc;
}

static void read_json(struct src *s, char *buf, size_t len, size_t start) {
  struct jr r = {.s = s, .buf = buf, .len = len, .pos = start, .line = 1, .col = 1, .lc = start};
  /* json-c's tokener depth D admits D - 1 nested containers. */
  r.tok = json_tokener_new_ex((int)s->lim.max_depth + 1);
  if (!r.tok) {
    src_err(s, GC_ENOMEM, 1, 1, "out of memory");
    return;
  }
  json_tokener_set_flags(r.tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
  for (int i = 0; i < 2; i++)
    gb_buf_init(&r.cap[i].b, s->lim.max_object_bytes + 1);
  for (;;) {
    int c = skip_ws(&r);
    if (c < 0)
      break;
    if (c != '{') {
      jr_err(&r, GC_EINVAL, r.pos,
             c == '[' ? "a top-level JSON array is not a Kubernetes object"
                      : "expected a JSON object");
      break;
    }
    if (read_document(&r))
      break;
  }
  json_tokener_free(r.tok);
  for (int i = 0; i < 2; i++)
    gb_buf_free(&r.cap[i].b);
}

/* ------------------------------------------------------------------------ */
/* YAML                                                                     */

struct yr {
  struct src *s;
  yaml_parser_t p;
  const char *pre; /* bytes read while telling JSON from YAML */
  size_t pre_len, pre_pos;
  size_t nodes;
  int failed; /* an error was reported: stop */
};

static int yread(void *data, unsigned char *buffer, size_t size, size_t *size_read) {
  struct yr *y = data;
  if (y->pre_pos < y->pre_len) {
    size_t n = y->pre_len - y->pre_pos < size ? y->pre_len - y->pre_pos : size;
    memcpy(buffer, y->pre + y->pre_pos, n);
    y->pre_pos += n;
    *size_read = n;
    return 1;
  }
  ssize_t n = src_read(y->s, buffer, size);
  if (n < 0)
    return 0;
  *size_read = (size_t)n;
  return 1;
}

static uint32_t ev_line(const yaml_event_t *ev) { return (uint32_t)ev->start_mark.line + 1; }
static uint32_t ev_col(const yaml_event_t *ev) { return (uint32_t)ev->start_mark.column + 1; }

static int ynext(struct yr *y, yaml_event_t *ev) {
  if (yaml_parser_parse(&y->p, ev))
    return 0;
  if (!y->s->rc)
    src_err(y->s, GC_EINVAL, (uint32_t)y->p.problem_mark.line + 1,
            (uint32_t)y->p.problem_mark.column + 1, "%s%s%s",
            y->p.problem ? y->p.problem : "YAML error", y->p.context ? " " : "",
            y->p.context ? y->p.context : "");
  y->failed = 1;
  return GC_EINVAL;
}

/* The node's position travels with it (json-c's userdata, no allocation). */
static void set_pos(json_object *o, const yaml_event_t *ev) {
  uintptr_t packed = ((uintptr_t)ev_line(ev) << 20) | (ev_col(ev) & 0xFFFFF);
  if (o)
    json_object_set_userdata(o, (void *)packed, NULL);
}

static json_object *yscalar(const yaml_event_t *ev) {
  const char *v = (const char *)ev->data.scalar.value;
  size_t n = ev->data.scalar.length;
  const char *tag = (const char *)ev->data.scalar.tag;
  if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || (tag && !strcmp(tag, YAML_STR_TAG)) ||
      n > INT_MAX)
    return json_object_new_string_len(v, (int)(n > INT_MAX ? INT_MAX : n));
  struct gb_scalar sc;
  gb_scalar_resolve(v, n, &sc);
  switch (sc.type) {
  case GC_NULL: return NULL;
  case GC_BOOL: return json_object_new_boolean(sc.b);
  case GC_INT: return json_object_new_int64(sc.i);
  case GC_FLOAT: return json_object_new_double(sc.f);
  default: return json_object_new_string_len(v, (int)n);
  }
}

static json_object *ybuild(struct yr *y, yaml_event_t *ev, size_t depth);

/* The children of a sequence or mapping until its end event. */
static json_object *ycontainer(struct yr *y, yaml_event_t *start, size_t depth) {
  int is_map = start->type == YAML_MAPPING_START_EVENT;
  yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
  json_object *o = is_map ? json_object_new_object() : json_object_new_array();
  set_pos(o, start);
  yaml_event_delete(start);
  for (;;) {
    yaml_event_t ev;
    if (!o || ynext(y, &ev))
      break;
    if (ev.type == end) {
      yaml_event_delete(&ev);
      return o;
    }
    if (!is_map) {
      json_object *item = ybuild(y, &ev, depth + 1);
      if (y->failed)
        break;
      json_object_array_add(o, item);
      continue;
    }
    if (ev.type != YAML_SCALAR_EVENT) {
      src_err(y->s, GC_EINVAL, ev_line(&ev), ev_col(&ev), "mapping keys must be scalars");
      yaml_event_delete(&ev);
      y->failed = 1;
      break;
    }
    char *key = strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
    yaml_event_delete(&ev);
    yaml_event_t vev;
    json_object *v = key && !ynext(y, &vev) ? ybuild(y, &vev, depth + 1) : NULL;
    if (!key || y->failed) {
      free(key);
      break;
    }
    json_object_object_add(o, key, v);
    free(key);
  }
  json_object_put(o);
  y->failed = 1;
  return NULL;
}

/* Builds the node that starts with ev (consumed), bounded in depth and nodes. */
static json_object *ybuild(struct yr *y, yaml_event_t *ev, size_t depth) {
  if (++y->nodes > y->s->lim.max_nodes || depth > y->s->lim.max_depth) {
    src_err(y->s, GC_ELIMIT, ev_line(ev), ev_col(ev), "%s exceeds limit %zu",
            depth > y->s->lim.max_depth ? "nesting depth" : "nodes in one object",
            depth > y->s->lim.max_depth ? y->s->lim.max_depth : y->s->lim.max_nodes);
    yaml_event_delete(ev);
    y->failed = 1;
    return NULL;
  }
  switch (ev->type) {
  case YAML_SCALAR_EVENT: {
    json_object *o = yscalar(ev);
    set_pos(o, ev);
    yaml_event_delete(ev);
    return o;
  }
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: return ycontainer(y, ev, depth);
  case YAML_ALIAS_EVENT:
    src_err(y->s, GC_EINVAL, ev_line(ev), ev_col(ev),
            "YAML aliases are not read in dumps (kubectl does not write them)");
    break;
  default: src_err(y->s, GC_EINVAL, ev_line(ev), ev_col(ev), "unexpected YAML event"); break;
  }
  yaml_event_delete(ev);
  y->failed = 1;
  return NULL;
}

/* The items of a top-level "items" sequence (its start consumed). */
static int yitems(struct yr *y, json_object *doc, size_t *missing) {
  for (size_t i = 0;; i++) {
    yaml_event_t ev;
    if (ynext(y, &ev))
      return GC_EINVAL;
    if (ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      return 0;
    }
    uint32_t line = ev_line(&ev), col = ev_col(&ev);
    y->nodes = 0;
    json_object *item = ybuild(y, &ev, 1);
    int rc = 0;
    if (y->failed)
      return y->s->rc ? y->s->rc : GC_EINVAL;
    if (!json_object_is_type(item, json_type_object))
      src_err(y->s, GC_EINVAL, line, col, "items[%zu]: not a mapping", i);
    else if (list_item_kind(item, doc))
      (*missing)++;
    else
      rc = deliver(y->s, item, line, col, NULL, 0);
    json_object_put(item);
    if (rc)
      return rc;
  }
}

/* One document (its start consumed): a mapping, a List's items, or empty. */
static int ydocument(struct yr *y) {
  yaml_event_t ev;
  if (ynext(y, &ev))
    return GC_EINVAL;
  uint32_t line = ev_line(&ev), col = ev_col(&ev);
  if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 0) {
    yaml_event_delete(&ev); /* an empty document */
  } else if (ev.type != YAML_MAPPING_START_EVENT) {
    yaml_event_delete(&ev);
    y->failed = 1;
    return src_err(y->s, GC_EINVAL, line, col, "a document must be a mapping (an object)");
  } else {
    yaml_event_delete(&ev);
    json_object *doc = json_object_new_object();
    int list = 0, rc = doc ? 0 : GC_ENOMEM;
    size_t missing = 0;
    y->nodes = 0;
    while (!rc) {
      yaml_event_t k, v;
      if (ynext(y, &k)) {
        rc = GC_EINVAL;
        break;
      }
      if (k.type == YAML_MAPPING_END_EVENT) {
        yaml_event_delete(&k);
        break;
      }
      if (k.type != YAML_SCALAR_EVENT) {
        rc = src_err(y->s, GC_EINVAL, ev_line(&k), ev_col(&k), "mapping keys must be scalars");
        yaml_event_delete(&k);
        break;
      }
      char *key = strndup((const char *)k.data.scalar.value, k.data.scalar.length);
      yaml_event_delete(&k);
      if (!key || ynext(y, &v)) {
        free(key);
        rc = key ? GC_EINVAL : GC_ENOMEM;
        break;
      }
      if (!strcmp(key, "items") && v.type == YAML_SEQUENCE_START_EVENT) {
        yaml_event_delete(&v);
        list = 1;
        rc = yitems(y, doc, &missing);
      } else {
        json_object *val = ybuild(y, &v, 1);
        if (y->failed)
          rc = y->s->rc ? y->s->rc : GC_EINVAL;
        else
          json_object_object_add(doc, key, val);
      }
      free(key);
    }
    if (!rc && !list)
      rc = deliver(y->s, doc, line, col, NULL, 0);
    missing_kinds(y->s, missing, line, col);
    json_object_put(doc);
    if (rc)
      return rc;
  }
  if (ynext(y, &ev))
    return GC_EINVAL;
  yaml_event_delete(&ev); /* DOCUMENT_END */
  return 0;
}

static void read_yaml(struct src *s, const char *pre, size_t pre_len) {
  struct yr y = {.s = s, .pre = pre, .pre_len = pre_len};
  if (!yaml_parser_initialize(&y.p)) {
    src_err(s, GC_ENOMEM, 1, 1, "out of memory");
    return;
  }
  yaml_parser_set_input(&y.p, yread, &y);
  for (;;) {
    yaml_event_t ev;
    if (ynext(&y, &ev))
      break;
    yaml_event_type_t t = ev.type;
    yaml_event_delete(&ev);
    if (t == YAML_STREAM_END_EVENT)
      break;
    if (t == YAML_DOCUMENT_START_EVENT && ydocument(&y))
      break;
  }
  yaml_parser_delete(&y.p);
}

/* ------------------------------------------------------------------------ */
/* Sources                                                                  */

static int read_source(void *ctx, const char *name, int fd, struct gc_diags *diags) {
  struct src s = *(const struct src *)ctx;
  s.name = name;
  s.fd = fd;
  s.diags = diags;
  s.total = 0;
  s.rc = 0;
  char *buf = malloc(CHUNK);
  if (!buf) {
    gc_diags_addf(diags, "%s: out of memory", name);
    return GC_ENOMEM;
  }
  ssize_t n = src_read(&s, buf, CHUNK);
  if (n >= 0) {
    size_t i = 0, len = (size_t)n;
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
      i = 3; /* a byte order mark takes no column, as in libyaml */
    size_t j = i;
    while (j < len && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\n' || buf[j] == '\r'))
      j++;
    if (j < len && (buf[j] == '{' || buf[j] == '['))
      read_json(&s, buf, len, i);
    else
      read_yaml(&s, buf, len);
  }
  free(buf);
  return s.rc;
}

int gb_tr_dump_read(const char *path, const struct gb_tr_dump_limits *lim, gb_tr_dump_fn fn,
                    void *ctx, struct gc_diags *diags) {
  struct src s;
  memset(&s, 0, sizeof(s));
  if (lim)
    s.lim = *lim;
  if (!s.lim.max_source_bytes)
    s.lim.max_source_bytes = (uint64_t)64 << 30;
  if (!s.lim.max_object_bytes)
    s.lim.max_object_bytes = (size_t)16 << 20;
  if (!s.lim.max_depth)
    s.lim.max_depth = 64;
  if (!s.lim.max_nodes)
    s.lim.max_nodes = 1000000;
  s.fn = fn;
  s.ctx = ctx;
  /* The docset only remembers the files walked (each is read once). */
  struct gb_docset *walked = gb_docset_new(NULL);
  if (!walked)
    return GC_ENOMEM;
  int rc = gb_manifest_walk_path(walked, path, read_source, &s, diags);
  gb_docset_free(walked);
  return rc;
}

/* ------------------------------------------------------------------------ */
/* Positions                                                                */

static void locate_json(const struct gb_tr_dump_item *it, const struct gb_tr_dump_step *steps,
                        size_t n, uint32_t *line, uint32_t *col) {
  struct gb_docset *ds = gb_docset_new(NULL);
  struct gc_diags d;
  gc_diags_init(&d);
  if (ds && !gb_manifest_load_buffer(ds, it->file, it->text, it->len, &d) && ds->n == 1) {
    const struct gc_value *v = ds->docs[0].root, *at = v;
    for (size_t i = 0; i < n && v; i++) {
      if (steps[i].key)
        v = gc_map_get(v, steps[i].key);
      else
        v = v->type == GC_SEQ && steps[i].index < v->len ? v->u.items[steps[i].index] : NULL;
      if (v && v->line)
        at = v;
    }
    if (at->line) {
      *col = at->line == 1 ? it->col + at->col - 1 : at->col;
      *line = it->line + at->line - 1;
    }
  }
  gc_diags_destroy(&d);
  gb_docset_free(ds);
}

void gb_tr_dump_locate(const struct gb_tr_dump_item *it, const struct gb_tr_dump_step *steps,
                       size_t n, uint32_t *line, uint32_t *col) {
  *line = it->line;
  *col = it->col;
  if (it->text) {
    locate_json(it, steps, n, line, col);
    return;
  }
  json_object *v = it->obj;
  for (size_t i = 0; i < n && v; i++) {
    json_object *next = NULL;
    if (steps[i].key)
      json_object_object_get_ex(v, steps[i].key, &next);
    else if (json_object_is_type(v, json_type_array) &&
             steps[i].index < json_object_array_length(v))
      next = json_object_array_get_idx(v, steps[i].index);
    v = next;
    uintptr_t packed = v ? (uintptr_t)json_object_get_userdata(v) : 0;
    if (packed) {
      *line = (uint32_t)(packed >> 20);
      *col = (uint32_t)(packed & 0xFFFFF);
    }
  }
}
