/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_manifest: YAML (libyaml events) and JSON (json-c, plus a position walk)
 * into gc_value trees, with sigs.k8s.io/yaml scalar resolution, bounded
 * inputs and "file:line:col: message" diagnostics.  docs/internals/loader.md
 * describes the rules.
 */
#include "gb_manifest.h"

#include "gb_hash.h"
#include "gb_scalar.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#define DEF_SOURCE_BYTES ((size_t)16 << 20)
#define DEF_TOTAL_BYTES ((size_t)256 << 20)
#define DEF_DEPTH 64
#define DEF_NODES ((size_t)4 << 20)
#define DEF_DOCS 100000
/* Recursion in the builders follows the nesting depth, so a caller-supplied
 * depth is clamped to keep the C stack bounded (threads have small stacks). */
#define HARD_DEPTH 1000
/* Directory recursion bound for real nesting (symlink loops end earlier:
 * each directory is walked once). */
#define MAX_DIR_DEPTH 64
/* Maps at or below this size check duplicate keys by scanning; larger ones
 * build a hash index so hostile inputs with huge maps stay linear. */
#define KEYSET_LINEAR 16

#define TAG_PREFIX "tag:yaml.org,2002:"

/* ------------------------------------------------------------------------ */
/* Docset                                                                   */

struct gb_docset *gb_docset_new(const struct gb_limits *limits) {
  struct gb_docset *ds = calloc(1, sizeof(*ds));
  if (!ds)
    return NULL;
  struct gb_limits l = {0};
  if (limits)
    l = *limits;
  if (!l.max_source_bytes)
    l.max_source_bytes = DEF_SOURCE_BYTES;
  if (!l.max_total_bytes)
    l.max_total_bytes = DEF_TOTAL_BYTES;
  if (!l.max_depth)
    l.max_depth = DEF_DEPTH;
  if (l.max_depth > HARD_DEPTH)
    l.max_depth = HARD_DEPTH;
  if (!l.max_nodes)
    l.max_nodes = DEF_NODES;
  if (!l.max_docs)
    l.max_docs = DEF_DOCS;
  ds->limits = l;
  ds->arena = gc_arena_new(0);
  if (!ds->arena) {
    free(ds);
    return NULL;
  }
  return ds;
}

static void visited_free(struct gb_visited *v);

int gb_docset_limit_trees(struct gb_docset *ds, size_t bytes) {
  if (!ds || ds->n || ds->bytes_read)
    return GC_EUSAGE;
  struct gc_arena *a = gc_arena_new(bytes);
  if (!a)
    return GC_ENOMEM;
  gc_arena_free(ds->arena);
  ds->arena = a;
  return GC_OK;
}

void gb_docset_free(struct gb_docset *ds) {
  if (!ds)
    return;
  visited_free(ds->visited);
  gc_arena_free(ds->arena);
  free(ds->docs);
  free(ds);
}

/* ------------------------------------------------------------------------ */
/* Per-source context                                                       */

struct anchor {
  char *name; /* malloc'd */
  struct gc_value *value;
  size_t nodes;  /* nodes in the anchored subtree, aliases expanded */
  size_t height; /* container levels in it (0 for a scalar) */
  size_t slot;   /* its position in the hash index */
};

struct src {
  struct gb_docset *ds;
  struct gc_diags *diags;
  const char *name; /* arena-owned */
  const char *buf;  /* the whole source */
  size_t len;
  size_t nodes; /* nodes built for this source */
  struct anchor *anchors; /* unique names; a redefinition replaces */
  size_t nanchors, capanchors;
  uint32_t *slots; /* hash index into anchors (index + 1; 0 = empty) */
  size_t nslots;
  int rc;          /* first error of this source */
  int doc_aliases; /* the current YAML document used an alias */
  size_t rejected; /* documents of this source dropped for errors */
  size_t deepest;  /* deepest container level reached in the current node */
  void **scratch;  /* per nesting depth, a block a container's slots are built in */
};

static int src_fail(struct src *s, int rc) {
  if (!s->rc)
    s->rc = rc;
  return rc;
}

/* A map's members and a sequence's items are built in a block kept per
 * nesting depth and reused (a container's children are one level deeper,
 * so each level has one container in progress), then copied once into the
 * arena at their exact size: an array doubled in the arena leaves every
 * smaller copy behind.  A container that outgrows the block moves into
 * the arena and grows there as before. */
#define SCRATCH_BYTES 768

/* The block of depth (malloc'd on first use), or NULL: then the container
 * grows in the arena. */
static void *scratch_at(struct src *s, size_t depth) {
  if (depth > s->ds->limits.max_depth)
    return NULL;
  if (!s->scratch && !(s->scratch = calloc(s->ds->limits.max_depth + 1, sizeof(*s->scratch))))
    return NULL;
  if (!s->scratch[depth])
    s->scratch[depth] = malloc(SCRATCH_BYTES);
  return s->scratch[depth];
}

/* Moves a finished container's slots (elem bytes each) out of the block
 * into the arena.  Returns 0 or GC_ENOMEM. */
static int scratch_settle(struct gc_arena *a, struct gc_value *v, const void *block,
                          size_t elem) {
  void **slots = v->type == GC_MAP ? (void **)&v->u.members : (void **)&v->u.items;
  if (!block || *slots != block)
    return GC_OK;
  void *p = NULL;
  if (v->len && !(p = gc_arena_alloc(a, v->len * elem)))
    return GC_ENOMEM;
  if (v->len)
    memcpy(p, block, v->len * elem);
  *slots = p;
  v->cap = v->len;
  return GC_OK;
}

static void scratch_free(struct src *s) {
  for (size_t i = 0; s->scratch && i <= s->ds->limits.max_depth; i++)
    free(s->scratch[i]);
  free(s->scratch);
}

/* Records an error at line:col (1-based) and returns rc. */
__attribute__((format(printf, 5, 6))) static int src_err(struct src *s, int rc, uint32_t line,
                                                         uint32_t col, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  gc_diags_addf(s->diags, "%s:%u:%u: %s", s->name, (unsigned)line, (unsigned)col, msg);
  return src_fail(s, rc);
}

/* An allocation failed: either the docset's tree limit (an input bound,
 * reported as such) or the process's memory. */
static int src_oom(struct src *s, uint32_t line, uint32_t col) {
  if (gc_arena_limit_hit(s->ds->arena))
    return src_err(s, GC_ELIMIT, line, col, "the loaded documents need more than %zu bytes of "
                   "memory (the limit for all inputs together)", gc_arena_limit(s->ds->arena));
  return src_err(s, GC_ENOMEM, line, col, "out of memory");
}

/* Line and column (1-based, columns in characters) of a byte offset. */
static void offset_pos(const char *buf, size_t len, size_t off, uint32_t *line, uint32_t *col) {
  uint32_t l = 1, c = 1;
  if (off > len)
    off = len;
  for (size_t i = 0; i < off; i++) {
    unsigned char b = (unsigned char)buf[i];
    if (b == '\n') {
      l++;
      c = 1;
    } else if ((b & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *col = c;
}

/* Writes a printable, quoted rendering of a key (bounded) for messages. */
static void quote_key(char *out, size_t cap, const char *k, size_t len) {
  size_t o = 0;
  if (cap < 8)
    return;
  out[o++] = '"';
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)k[i];
    if (o + 8 >= cap) {
      out[o++] = '.';
      out[o++] = '.';
      out[o++] = '.';
      break;
    }
    if (c == '"' || c == '\\') {
      out[o++] = '\\';
      out[o++] = (char)c;
    } else if (c < 0x20 || c == 0x7f) {
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  out[o++] = '"';
  out[o] = '\0';
}

/* ------------------------------------------------------------------------ */
/* Duplicate-key index                                                      */

struct keyset {
  struct gc_value *map;
  uint32_t *slots; /* member index + 1; 0 = empty */
  size_t nslots;
};

static void keyset_free(struct keyset *ks) {
  free(ks->slots);
  ks->slots = NULL;
  ks->nslots = 0;
}

static int keyset_insert_slot(struct keyset *ks, size_t idx) {
  const struct gc_member *m = &ks->map->u.members[idx];
  size_t mask = ks->nslots - 1;
  size_t i = (size_t)gb_hash_bytes(m->key, m->key_len) & mask;
  while (ks->slots[i])
    i = (i + 1) & mask;
  ks->slots[i] = (uint32_t)(idx + 1);
  return GC_OK;
}

/* Rebuilds the index so it holds every member with load factor <= 1/2. */
static int keyset_rebuild(struct keyset *ks) {
  size_t want = 64;
  while (want < ks->map->len * 2 + 2)
    want *= 2;
  if (ks->map->len >= UINT32_MAX)
    return GC_ENOMEM;
  uint32_t *n = calloc(want, sizeof(*n));
  if (!n)
    return GC_ENOMEM;
  free(ks->slots);
  ks->slots = n;
  ks->nslots = want;
  for (size_t i = 0; i < ks->map->len; i++)
    keyset_insert_slot(ks, i);
  return GC_OK;
}

/* Returns the member with this key, or NULL. */
static struct gc_member *keyset_find(struct keyset *ks, const char *k, size_t len) {
  struct gc_value *map = ks->map;
  if (!ks->slots) {
    for (size_t i = 0; i < map->len; i++) {
      struct gc_member *m = &map->u.members[i];
      if (m->key_len == len && memcmp(m->key, k, len) == 0)
        return m;
    }
    return NULL;
  }
  size_t mask = ks->nslots - 1;
  size_t i = (size_t)gb_hash_bytes(k, len) & mask;
  while (ks->slots[i]) {
    struct gc_member *m = &map->u.members[ks->slots[i] - 1];
    if (m->key_len == len && memcmp(m->key, k, len) == 0)
      return m;
    i = (i + 1) & mask;
  }
  return NULL;
}

/* Appends a member (the caller checked it is new) and indexes it. */
static int keyset_append(struct gc_arena *a, struct keyset *ks, const char *k, size_t len,
                         struct gc_value *v) {
  int rc = gc_map_append(a, ks->map, k, len, v);
  if (rc)
    return rc;
  if (ks->map->len <= KEYSET_LINEAR)
    return GC_OK;
  if (!ks->slots || ks->map->len * 2 + 2 > ks->nslots)
    return keyset_rebuild(ks);
  return keyset_insert_slot(ks, ks->map->len - 1);
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int digit_val(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z')
    return c - 'A' + 10;
  return 99;
}

/* ------------------------------------------------------------------------ */
/* Value construction helpers                                               */

static struct gc_value *make_scalar(struct gc_arena *a, const struct gb_scalar *r,
                                    const char *text, size_t len) {
  struct gc_value *v = NULL;
  switch (r->type) {
  case GC_NULL: v = gc_value_null(a); break;
  case GC_BOOL: v = gc_value_bool(a, r->b); break;
  case GC_INT: v = gc_value_int(a, r->i); break;
  case GC_FLOAT: v = gc_value_float(a, r->f); break;
  default: return gc_value_str(a, text, len); /* text set by caller */
  }
  if (!v)
    return NULL;
  v->text = gc_arena_strndup(a, text, len);
  return v->text ? v : NULL;
}

/* A new empty map (is_map) or sequence at line:col. */
static int new_container(struct src *s, int is_map, uint32_t line, uint32_t col,
                         struct gc_value **out) {
  struct gc_arena *a = s->ds->arena;
  struct gc_value *v = is_map ? gc_value_map(a) : gc_value_seq(a);
  if (!v)
    return src_oom(s, line, col);
  v->line = line;
  v->col = col;
  *out = v;
  return GC_OK;
}

/* Adds k: val to the map behind ks, or reports a duplicate key at the key's
 * position kline:kcol.  YAML and JSON documents share this rule. */
static int add_member(struct src *s, struct keyset *ks, const char *k, size_t klen,
                      struct gc_value *val, uint32_t kline, uint32_t kcol) {
  if (keyset_find(ks, k, klen)) {
    char q[96];
    quote_key(q, sizeof(q), k, klen);
    return src_err(s, GC_EINVAL, kline, kcol, "duplicate key %s", q);
  }
  if (keyset_append(s->ds->arena, ks, k, klen, val))
    return src_oom(s, kline, kcol);
  return GC_OK;
}

/* The string a scalar map key becomes, as sigs.k8s.io/yaml converts keys.
 * Returns 0 and sets *k and *klen (arena- or node-owned), or GC_EINVAL. */
static int key_string(struct gc_arena *a, const struct gc_value *v, const char **k,
                      size_t *klen) {
  char buf[64];
  switch (v->type) {
  case GC_STR:
    *k = v->u.s;
    *klen = v->len;
    return GC_OK;
  case GC_BOOL:
    *k = v->u.b ? "true" : "false";
    *klen = strlen(*k);
    return GC_OK;
  case GC_INT: snprintf(buf, sizeof(buf), "%lld", (long long)v->u.i); break;
  case GC_FLOAT:
    /* Integers beyond int64 keep their spelling. */
    if (v->text && !strpbrk(v->text, ".eEnNiI"))
      snprintf(buf, sizeof(buf), "%s", v->text);
    else
      gb_scalar_format_float32_key(v->u.f, buf, sizeof(buf));
    break;
  default: return GC_EINVAL;
  }
  char *s = gc_arena_strdup(a, buf);
  if (!s)
    return GC_ENOMEM;
  *k = s;
  *klen = strlen(s);
  return GC_OK;
}

/* ------------------------------------------------------------------------ */
/* Documents                                                                */

static int docs_push(struct src *s, struct gc_value *root, uint32_t line, uint32_t col) {
  struct gb_docset *ds = s->ds;
  if (ds->n >= ds->limits.max_docs)
    return src_err(s, GC_ELIMIT, line, col, "document count exceeds limit %zu",
                   ds->limits.max_docs);
  if (ds->n == ds->cap) {
    size_t ncap = ds->cap ? ds->cap * 2 : 16;
    struct gb_doc *n = realloc(ds->docs, ncap * sizeof(*n));
    if (!n)
      return src_oom(s, line, col);
    ds->docs = n;
    ds->cap = ncap;
  }
  struct gb_doc *d = &ds->docs[ds->n++];
  d->root = root;
  d->file = s->name;
  d->line = line;
  d->col = col;
  return GC_OK;
}

static int ends_with(const char *s, size_t len, const char *suffix) {
  size_t sl = strlen(suffix);
  return len >= sl && memcmp(s + len - sl, suffix, sl) == 0;
}

/* Counts n more nodes for the current source against max_nodes. */
static int count_node(struct src *s, size_t n, uint32_t line, uint32_t col) {
  size_t max = s->ds->limits.max_nodes;
  if (n > max || s->nodes > max - n)
    return src_err(s, GC_ELIMIT, line, col, "node count (after alias expansion) exceeds limit %zu",
                   max);
  s->nodes += n;
  return GC_OK;
}

/* Rejected documents count against the document bound too, so a stream of
 * millions of bad documents stops early instead of producing millions of
 * errors.  Returns 0 or GC_ELIMIT (reported). */
static int reject_document(struct src *s, uint32_t line, uint32_t col) {
  struct gb_docset *ds = s->ds;
  if (s->rejected >= ds->limits.max_docs || ds->n >= ds->limits.max_docs - s->rejected)
    return src_err(s, GC_ELIMIT, line, col, "document count exceeds limit %zu",
                   ds->limits.max_docs);
  s->rejected++;
  return GC_OK;
}

/* Adds a document, unpacking kubectl List objects (kind ending in "List"
 * with an items array; kind List with no items is an empty list).  Items of
 * a typed list (PodList) that lack kind/apiVersion get them from the list,
 * as the API server's list decoding does. */
static int add_document(struct src *s, struct gc_value *root, int depth) {
  if (!root || root->type != GC_MAP) {
    uint32_t line = root ? root->line : 1, col = root ? root->col : 1;
    int rc = reject_document(s, line, col);
    return rc ? rc : src_err(s, GC_EINVAL, line, col, "document is not an object");
  }
  struct gc_value *kind = gc_map_get(root, "kind");
  struct gc_value *items = gc_map_get(root, "items");
  if (kind && kind->type == GC_STR && ends_with(kind->u.s, kind->len, "List") &&
      depth < 8) {
    int plain_list = kind->len == 4;
    if (items && items->type == GC_SEQ) {
      struct gc_value *api = gc_map_get(root, "apiVersion");
      int rc = GC_OK;
      for (size_t i = 0; i < items->len; i++) {
        struct gc_value *it = items->u.items[i];
        if (it && it->type == GC_MAP && !plain_list) {
          /* Filled fields count as nodes (key and value) like any other. */
          int need = (!gc_map_get(it, "kind") ? 2 : 0) +
                     (api && !gc_map_get(it, "apiVersion") ? 2 : 0);
          int crc = need ? count_node(s, (size_t)need, it->line, it->col) : GC_OK;
          if (crc)
            return crc;
          if (!gc_map_get(it, "kind")) {
            struct gc_value *k = gc_value_str(s->ds->arena, kind->u.s, kind->len - 4);
            if (!k || gc_map_append(s->ds->arena, it, "kind", 4, k))
              return src_oom(s, it->line, it->col);
          }
          if (api && !gc_map_get(it, "apiVersion")) {
            struct gc_value *ac = gc_value_clone(s->ds->arena, api);
            if (!ac || gc_map_append(s->ds->arena, it, "apiVersion", 10, ac))
              return src_oom(s, it->line, it->col);
          }
        }
        int r = add_document(s, it, depth + 1);
        if (r == GC_ELIMIT || r == GC_ENOMEM)
          return r;
        if (r && !rc)
          rc = r;
      }
      return rc;
    }
    if (plain_list && (!items || items->type == GC_NULL))
      return GC_OK;
  }
  return docs_push(s, root, root->line, root->col);
}

/* ------------------------------------------------------------------------ */
/* YAML                                                                     */

struct ybuild {
  struct src *s;
  yaml_parser_t parser;
  int parser_ok; /* 0 after a libyaml error */
};

static void yaml_report(struct ybuild *y) {
  struct src *s = y->s;
  yaml_parser_t *p = &y->parser;
  const char *problem = p->problem ? p->problem : "unknown YAML error";
  if (p->error == YAML_MEMORY_ERROR) {
    src_err(s, GC_ENOMEM, 1, 1, "out of memory while parsing YAML");
    return;
  }
  if (p->error == YAML_READER_ERROR) {
    uint32_t line, col;
    offset_pos(s->buf, s->len, p->problem_offset, &line, &col);
    if (p->problem_value != -1)
      src_err(s, GC_EINVAL, line, col, "%s (0x%02X)", problem, (unsigned)p->problem_value);
    else
      src_err(s, GC_EINVAL, line, col, "%s", problem);
    return;
  }
  uint32_t line = (uint32_t)p->problem_mark.line + 1;
  uint32_t col = (uint32_t)p->problem_mark.column + 1;
  if (p->context)
    src_err(s, GC_EINVAL, line, col, "%s (%s at %u:%u)", problem, p->context,
            (unsigned)p->context_mark.line + 1, (unsigned)p->context_mark.column + 1);
  else
    src_err(s, GC_EINVAL, line, col, "%s", problem);
}

/* Fetches the next event; on a libyaml error reports it and returns rc. */
static int ynext(struct ybuild *y, yaml_event_t *ev) {
  if (!yaml_parser_parse(&y->parser, ev)) {
    y->parser_ok = 0;
    yaml_report(y);
    return y->s->rc ? y->s->rc : GC_EINVAL;
  }
  return GC_OK;
}

static uint32_t ev_line(const yaml_event_t *ev) { return (uint32_t)ev->start_mark.line + 1; }
static uint32_t ev_col(const yaml_event_t *ev) { return (uint32_t)ev->start_mark.column + 1; }


/* Copies the nodes of an anchored tree for an alias.  Nodes are copied, so
 * a consumer that edits one place never edits another; string bytes, texts
 * and keys are immutable and shared.  Arrays get exactly their length. */
static struct gc_value *tree_copy(struct gc_arena *a, const struct gc_value *v) {
  struct gc_value *c = gc_arena_alloc(a, sizeof(*c));
  if (!c)
    return NULL;
  *c = *v;
  if (v->type == GC_SEQ) {
    c->cap = v->len;
    c->u.items = NULL;
    if (v->len) {
      c->u.items = gc_arena_alloc(a, v->len * sizeof(*c->u.items));
      if (!c->u.items)
        return NULL;
      for (size_t i = 0; i < v->len; i++)
        if (!(c->u.items[i] = tree_copy(a, v->u.items[i])))
          return NULL;
    }
  } else if (v->type == GC_MAP) {
    c->cap = v->len;
    c->u.members = NULL;
    if (v->len) {
      c->u.members = gc_arena_alloc(a, v->len * sizeof(*c->u.members));
      if (!c->u.members)
        return NULL;
      for (size_t i = 0; i < v->len; i++) {
        c->u.members[i] = v->u.members[i];
        if (!(c->u.members[i].value = tree_copy(a, v->u.members[i].value)))
          return NULL;
      }
    }
  }
  return c;
}

static uint32_t *anchor_slot(struct src *s, const char *name) {
  size_t mask = s->nslots - 1;
  size_t i = (size_t)gb_hash_bytes(name, strlen(name)) & mask;
  while (s->slots[i] && strcmp(s->anchors[s->slots[i] - 1].name, name) != 0)
    i = (i + 1) & mask;
  return &s->slots[i];
}

/* Keeps the anchor index at load factor <= 1/2. */
static int anchor_index_grow(struct src *s) {
  if (s->nslots && (s->nanchors + 1) * 2 <= s->nslots)
    return GC_OK;
  size_t want = s->nslots ? s->nslots * 2 : 64;
  uint32_t *n = calloc(want, sizeof(*n));
  if (!n)
    return GC_ENOMEM;
  free(s->slots);
  s->slots = n;
  s->nslots = want;
  for (size_t i = 0; i < s->nanchors; i++) {
    uint32_t *slot = anchor_slot(s, s->anchors[i].name);
    *slot = (uint32_t)(i + 1);
    s->anchors[i].slot = (size_t)(slot - s->slots);
  }
  return GC_OK;
}

/* Defines (or redefines: the latest definition wins) an anchor.  Lookups
 * go through a hash index so a document with a million anchors and aliases
 * stays linear. */
static int anchor_add(struct src *s, const char *name, struct gc_value *v, size_t nodes,
                      size_t height) {
  if (s->nanchors >= UINT32_MAX - 1 || anchor_index_grow(s))
    return GC_ENOMEM;
  uint32_t *slot = anchor_slot(s, name);
  if (*slot) {
    s->anchors[*slot - 1].value = v;
    s->anchors[*slot - 1].nodes = nodes;
    s->anchors[*slot - 1].height = height;
    return GC_OK;
  }
  if (s->nanchors == s->capanchors) {
    size_t ncap = s->capanchors ? s->capanchors * 2 : 8;
    struct anchor *n = realloc(s->anchors, ncap * sizeof(*n));
    if (!n)
      return GC_ENOMEM;
    s->anchors = n;
    s->capanchors = ncap;
  }
  char *copy = strdup(name);
  if (!copy)
    return GC_ENOMEM;
  struct anchor *an = &s->anchors[s->nanchors++];
  an->name = copy;
  an->value = v;
  an->nodes = nodes;
  an->height = height;
  an->slot = (size_t)(slot - s->slots);
  *slot = (uint32_t)s->nanchors;
  return GC_OK;
}

static struct anchor *anchor_find(struct src *s, const char *name) {
  if (!s->nslots)
    return NULL;
  uint32_t idx = *anchor_slot(s, name);
  return idx ? &s->anchors[idx - 1] : NULL;
}

/* Forgets the anchors of a document in time proportional to their number
 * (every occupied slot belongs to one of them), not to the index size. */
static void anchors_clear(struct src *s) {
  for (size_t i = 0; i < s->nanchors; i++) {
    s->slots[s->anchors[i].slot] = 0;
    free(s->anchors[i].name);
  }
  s->nanchors = 0;
}

/* Builds a scalar from an event, honouring tags. */
/* A NUL byte would cut the string wherever C reads it ("rt\0evil" would
 * resolve runtime "rt"), so no string may carry one. */
static int nul_err(struct src *s, const char *text, size_t len, uint32_t line, uint32_t col) {
  char q[96];
  quote_key(q, sizeof(q), text, len);
  return src_err(s, GC_EINVAL, line, col, "invalid string %s: contains a NUL byte", q);
}

static int yscalar(struct ybuild *y, const yaml_event_t *ev, struct gc_value **out) {
  struct src *s = y->s;
  struct gc_arena *a = s->ds->arena;
  const char *text = (const char *)ev->data.scalar.value;
  size_t len = ev->data.scalar.length;
  const char *tag = (const char *)ev->data.scalar.tag;
  uint32_t line = ev_line(ev), col = ev_col(ev);
  struct gb_scalar r = {.type = GC_STR};
  int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  if (memchr(text, '\0', len))
    return nul_err(s, text, len, line, col);
  if (!tag || !strcmp(tag, "!")) {
    /* "!" is the non-specific tag: a plain "! 12" is a string in goyaml.v2. */
    if (plain && !tag)
      gb_scalar_resolve(text, len, &r);
  } else if (!strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX))) {
    const char *t = tag + strlen(TAG_PREFIX);
    if (!strcmp(t, "str") || !strcmp(t, "binary") || !strcmp(t, "timestamp")) {
      r.type = GC_STR;
    } else if (!strcmp(t, "int") || !strcmp(t, "float") || !strcmp(t, "bool") ||
               !strcmp(t, "null")) {
      gb_scalar_resolve(text, len, &r);
      enum gc_type want = !strcmp(t, "int")     ? GC_INT
                          : !strcmp(t, "float") ? GC_FLOAT
                          : !strcmp(t, "bool")  ? GC_BOOL
                                                : GC_NULL;
      if (want == GC_FLOAT && r.type == GC_INT) {
        r.type = GC_FLOAT;
        r.f = (double)r.i;
      }
      if (r.type != want) {
        char q[96];
        quote_key(q, sizeof(q), text, len);
        return src_err(s, GC_EINVAL, line, col, "cannot decode %s as !!%s", q, t);
      }
    }
  }
  struct gc_value *v = make_scalar(a, &r, text, len);
  if (!v)
    return src_oom(s, line, col);
  if (r.type == GC_STR)
    v->text = v->u.s;
  v->line = line;
  v->col = col;
  *out = v;
  return GC_OK;
}

static int ynode(struct ybuild *y, yaml_event_t *ev, size_t depth, struct gc_value **out);

static int is_merge_key(const yaml_event_t *ev) {
  if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.length != 2 ||
      memcmp(ev->data.scalar.value, "<<", 2) != 0)
    return 0;
  const char *tag = (const char *)ev->data.scalar.tag;
  if (tag)
    return !strcmp(tag, TAG_PREFIX "merge");
  return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* 1 when kev is a key that becomes a string as it is: a scalar without
 * anchor or tag, quoted, or plain text that resolves to no other type (the
 * caller took "<<" first).  Such a key needs no node: its text goes into
 * the map as the member's key.  Other keys are built by ynode and turned
 * into strings by key_string. */
static int key_is_string(const yaml_event_t *kev) {
  if (kev->type != YAML_SCALAR_EVENT || kev->data.scalar.anchor || kev->data.scalar.tag)
    return 0;
  if (kev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return 1;
  struct gb_scalar r;
  gb_scalar_resolve((const char *)kev->data.scalar.value, kev->data.scalar.length, &r);
  return r.type == GC_STR;
}

/* What ynode checks of a scalar key, for one that key_is_string took: it
 * counts as a node and may not hold a NUL byte. */
static int string_key_check(struct src *s, const yaml_event_t *kev, uint32_t line,
                            uint32_t col) {
  const char *text = (const char *)kev->data.scalar.value;
  size_t len = kev->data.scalar.length;
  int rc = count_node(s, 1, line, col);
  if (!rc && memchr(text, '\0', len))
    rc = nul_err(s, text, len, line, col);
  return rc;
}

/* Adds the members of one merge source that the map lacks. */
static int merge_one(struct src *s, struct keyset *ks, const struct gc_value *from) {
  for (size_t i = 0; i < from->len; i++) {
    const struct gc_member *m = &from->u.members[i];
    if (keyset_find(ks, m->key, m->key_len))
      continue;
    if (keyset_append(s->ds->arena, ks, m->key, m->key_len, m->value))
      return GC_ENOMEM;
  }
  return GC_OK;
}

static int ymapping(struct ybuild *y, yaml_event_t *start, size_t depth, struct gc_value **out) {
  struct src *s = y->s;
  struct gc_arena *a = s->ds->arena;
  uint32_t line = ev_line(start), col = ev_col(start);
  struct gc_value *map = NULL;
  int rc = new_container(s, 1, line, col, &map);
  if (rc)
    return rc;
  struct gc_member *block = scratch_at(s, depth);
  if (block) {
    map->u.members = block;
    map->cap = SCRATCH_BYTES / sizeof(*block);
  }
  struct keyset ks = {.map = map};
  struct gc_value **merges = NULL;
  size_t nmerges = 0, capmerges = 0;
  yaml_event_t kev;
  int kev_live = 0; /* kev holds a string key's text until its member is added */
  for (;;) {
    if ((rc = ynext(y, &kev)))
      goto out;
    if (kev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&kev);
      break;
    }
    uint32_t kline = ev_line(&kev), kcol = ev_col(&kev);
    int merge = is_merge_key(&kev);
    struct gc_value *key = NULL;
    if (merge) {
      yaml_event_delete(&kev);
      if ((rc = count_node(s, 1, kline, kcol)))
        goto out;
    } else if (key_is_string(&kev)) {
      kev_live = 1;
      if ((rc = string_key_check(s, &kev, kline, kcol)))
        goto out;
    } else if ((rc = ynode(y, &kev, depth, &key))) {
      goto out;
    }
    yaml_event_t vev;
    if ((rc = ynext(y, &vev)))
      goto out;
    struct gc_value *val = NULL;
    if ((rc = ynode(y, &vev, depth, &val)))
      goto out;
    if (merge) {
      int ok = val->type == GC_MAP;
      if (val->type == GC_SEQ) {
        ok = 1;
        for (size_t i = 0; i < val->len; i++)
          if (val->u.items[i]->type != GC_MAP)
            ok = 0;
      }
      if (!ok) {
        rc = src_err(s, GC_EINVAL, val->line, val->col,
                     "map merge requires a map or a sequence of maps as the value");
        goto out;
      }
      if (nmerges == capmerges) {
        size_t ncap = capmerges ? capmerges * 2 : 4;
        struct gc_value **n = realloc(merges, ncap * sizeof(*n));
        if (!n) {
          rc = src_oom(s, kline, kcol);
          goto out;
        }
        merges = n;
        capmerges = ncap;
      }
      merges[nmerges++] = val;
      continue;
    }
    const char *k = (const char *)kev.data.scalar.value;
    size_t klen = kev.data.scalar.length;
    int kr = kev_live ? GC_OK : key_string(a, key, &k, &klen);
    if (kr == GC_ENOMEM) {
      rc = src_oom(s, kline, kcol);
      goto out;
    }
    if (kr) {
      rc = src_err(s, GC_EINVAL, kline, kcol, "map key must be a string, number or bool, not %s",
                   gc_type_name(key->type));
      goto out;
    }
    rc = add_member(s, &ks, k, klen, val, kline, kcol);
    if (kev_live)
      yaml_event_delete(&kev);
    kev_live = 0;
    if (rc)
      goto out;
  }
  /* Explicit keys win over merged ones; among merges, earlier sources win,
   * and within a sequence of maps the earlier maps win (YAML 1.1 merge). */
  for (size_t i = 0; i < nmerges; i++) {
    struct gc_value *m = merges[i];
    int r = GC_OK;
    if (m->type == GC_MAP) {
      r = merge_one(s, &ks, m);
    } else {
      for (size_t j = 0; j < m->len && !r; j++)
        r = merge_one(s, &ks, m->u.items[j]);
    }
    if (r) {
      rc = src_oom(s, line, col);
      goto out;
    }
  }
  if (scratch_settle(a, map, block, sizeof(*block)))
    rc = src_oom(s, line, col);
  else
    *out = map;
out:
  if (kev_live)
    yaml_event_delete(&kev);
  keyset_free(&ks);
  free(merges);
  return rc;
}

static int ysequence(struct ybuild *y, yaml_event_t *start, size_t depth, struct gc_value **out) {
  struct src *s = y->s;
  struct gc_arena *a = s->ds->arena;
  uint32_t line = ev_line(start), col = ev_col(start);
  struct gc_value *seq = NULL;
  int rc = new_container(s, 0, line, col, &seq);
  if (rc)
    return rc;
  struct gc_value **block = scratch_at(s, depth);
  if (block) {
    seq->u.items = block;
    seq->cap = SCRATCH_BYTES / sizeof(*block);
  }
  for (;;) {
    yaml_event_t ev;
    if ((rc = ynext(y, &ev)))
      return rc;
    if (ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    struct gc_value *item = NULL;
    if ((rc = ynode(y, &ev, depth, &item)))
      return rc;
    if (gc_seq_push(a, seq, item))
      return src_oom(s, item->line, item->col);
  }
  if (scratch_settle(a, seq, block, sizeof(*block)))
    return src_oom(s, line, col);
  *out = seq;
  return GC_OK;
}

/* Builds the node that starts with ev (consumed: deleted here) at nesting
 * depth `depth` of its parent. */
static int ynode(struct ybuild *y, yaml_event_t *ev, size_t depth, struct gc_value **out) {
  struct src *s = y->s;
  uint32_t line = ev_line(ev), col = ev_col(ev);
  const char *anchor = NULL;
  size_t before = s->nodes;
  size_t outer_deepest = s->deepest;
  int rc = GC_OK;
  struct gc_value *v = NULL;
  s->deepest = depth;
  switch (ev->type) {
  case YAML_ALIAS_EVENT: {
    struct anchor *an = anchor_find(s, (const char *)ev->data.alias.anchor);
    if (!an) {
      rc = src_err(s, GC_EINVAL, line, col, "unknown anchor '%s' referenced",
                   (const char *)ev->data.alias.anchor);
      break;
    }
    /* An alias puts the whole anchored subtree here, so the depth bound
     * must hold for it too (else chained aliases would nest without end). */
    if (depth + an->height > s->ds->limits.max_depth) {
      rc = src_err(s, GC_ELIMIT, line, col, "nesting depth exceeds limit %zu",
                   s->ds->limits.max_depth);
      break;
    }
    s->deepest = depth + an->height;
    if ((rc = count_node(s, an->nodes, line, col)))
      break;
    /* Shared for now, so an alias bomb costs nothing before the node count
     * stops it; load_yaml copies a document that used aliases into a real
     * tree once it has passed every bound. */
    v = an->value;
    s->doc_aliases = 1;
    break;
  }
  case YAML_SCALAR_EVENT:
    anchor = (const char *)ev->data.scalar.anchor;
    if ((rc = count_node(s, 1, line, col)))
      break;
    rc = yscalar(y, ev, &v);
    break;
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT:
    anchor = ev->type == YAML_SEQUENCE_START_EVENT ? (const char *)ev->data.sequence_start.anchor
                                                   : (const char *)ev->data.mapping_start.anchor;
    if (depth + 1 > s->ds->limits.max_depth) {
      rc = src_err(s, GC_ELIMIT, line, col, "nesting depth exceeds limit %zu",
                   s->ds->limits.max_depth);
      break;
    }
    if ((rc = count_node(s, 1, line, col)))
      break;
    s->deepest = depth + 1;
    if (ev->type == YAML_SEQUENCE_START_EVENT)
      rc = ysequence(y, ev, depth + 1, &v);
    else
      rc = ymapping(y, ev, depth + 1, &v);
    break;
  default: rc = src_err(s, GC_EINVAL, line, col, "unexpected YAML event"); break;
  }
  if (!rc && anchor && anchor_add(s, anchor, v, s->nodes - before, s->deepest - depth))
    rc = src_oom(s, line, col);
  if (s->deepest < outer_deepest)
    s->deepest = outer_deepest;
  yaml_event_delete(ev);
  if (!rc)
    *out = v;
  return rc;
}

static int is_empty_doc(const struct gc_value *v) {
  return v->type == GC_NULL && v->text && v->text[0] == '\0';
}

static void load_yaml(struct src *s) {
  struct ybuild y = {.s = s, .parser_ok = 1};
  if (!yaml_parser_initialize(&y.parser)) {
    src_oom(s, 1, 1);
    return;
  }
  yaml_parser_set_input_string(&y.parser, (const unsigned char *)s->buf, s->len);
  for (;;) {
    yaml_event_t ev;
    if (ynext(&y, &ev))
      break;
    yaml_event_type_t t = ev.type;
    uint32_t dline = ev_line(&ev), dcol = ev_col(&ev);
    yaml_event_delete(&ev);
    if (t == YAML_STREAM_END_EVENT)
      break;
    if (t != YAML_DOCUMENT_START_EVENT)
      continue;
    anchors_clear(s);
    s->doc_aliases = 0;
    yaml_event_t nev;
    if (ynext(&y, &nev))
      break;
    struct gc_value *root = NULL;
    int empty_plain = nev.type == YAML_SCALAR_EVENT &&
                           nev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                           !nev.data.scalar.tag && nev.data.scalar.length == 0;
    int rc = ynode(&y, &nev, 0, &root);
    if (rc == GC_EINVAL && y.parser_ok) {
      if (reject_document(s, dline, dcol))
        break;
      /* A semantic problem (duplicate key, bad merge): the document is
       * dropped but later documents can still be read, so skip to the end
       * of this one (document ends never nest). */
      for (;;) {
        yaml_event_t sev;
        if (ynext(&y, &sev))
          goto done;
        yaml_event_type_t st = sev.type;
        yaml_event_delete(&sev);
        if (st == YAML_DOCUMENT_END_EVENT)
          break;
        if (st == YAML_STREAM_END_EVENT)
          goto done;
      }
      continue;
    }
    if (rc)
      break;
    if (s->doc_aliases) {
      struct gc_value *shared = root;
      if (!(root = tree_copy(s->ds->arena, shared))) {
        src_oom(s, shared->line, shared->col);
        break;
      }
    }
    if (!(empty_plain && is_empty_doc(root))) {
      rc = add_document(s, root, 0);
      if (rc == GC_ELIMIT || rc == GC_ENOMEM)
        break;
    }
  }
done:
  anchors_clear(s);
  yaml_parser_delete(&y.parser);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */

/* json-c validates the text (syntax, UTF-8, depth); json-c records no
 * positions and keeps the last of duplicate keys, so the validated text is
 * then walked to build the tree with positions, exact number spellings and
 * duplicate detection.  The walk trusts json-c's verdict but still checks
 * every byte so a disagreement is an error, never an overrun. */
struct jwalk {
  struct src *s;
  const char *p, *end;
  uint32_t line, col;
};

static void jw_adv(struct jwalk *w) {
  unsigned char b = (unsigned char)*w->p++;
  if (b == '\n') {
    w->line++;
    w->col = 1;
  } else if ((b & 0xC0) != 0x80) {
    w->col++;
  }
}

static void jw_ws(struct jwalk *w) {
  while (w->p < w->end && (*w->p == ' ' || *w->p == '\t' || *w->p == '\n' || *w->p == '\r'))
    jw_adv(w);
}

static int jw_bad(struct jwalk *w) {
  return src_err(w->s, GC_EINVAL, w->line, w->col, "malformed JSON");
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int d = digit_val(p[i]);
    if (d > 15)
      return 0;
    v = v * 16 + (unsigned)d;
  }
  *out = v;
  return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Decodes the string at w->p (a '"') into the arena. */
static int jw_string(struct jwalk *w, char **out, size_t *outlen) {
  if (w->p >= w->end || *w->p != '"')
    return jw_bad(w);
  uint32_t sline = w->line, scol = w->col;
  jw_adv(w);
  const char *start = w->p;
  while (w->p < w->end && *w->p != '"') {
    if (*w->p == '\\') {
      jw_adv(w);
      if (w->p >= w->end)
        return jw_bad(w);
    }
    jw_adv(w);
  }
  if (w->p >= w->end)
    return jw_bad(w);
  size_t raw = (size_t)(w->p - start);
  /* json-c's UTF-8 check lets overlong forms, encoded surrogates and code
   * points past U+10FFFF through; neither format can carry them. */
  size_t bad = gb_scalar_utf8_check(start, raw);
  if (bad != raw) {
    uint32_t line, col;
    offset_pos(w->s->buf, w->s->len, (size_t)(start - w->s->buf) + bad, &line, &col);
    return src_err(w->s, GC_EINVAL, line, col, "invalid utf-8 string");
  }
  jw_adv(w); /* closing quote */
  char *o = gc_arena_alloc(w->s->ds->arena, raw + 1);
  if (!o)
    return src_oom(w->s, w->line, w->col);
  size_t n = 0;
  for (size_t i = 0; i < raw;) {
    char c = start[i];
    if (c != '\\') {
      o[n++] = c;
      i++;
      continue;
    }
    char e = start[i + 1];
    i += 2;
    switch (e) {
    case 'b': o[n++] = '\b'; break;
    case 'f': o[n++] = '\f'; break;
    case 'n': o[n++] = '\n'; break;
    case 'r': o[n++] = '\r'; break;
    case 't': o[n++] = '\t'; break;
    case 'u': {
      unsigned cp;
      if (i + 4 > raw || !hex4(start + i, &cp))
        return jw_bad(w);
      i += 4;
      if (cp >= 0xD800 && cp < 0xDC00) {
        unsigned lo;
        if (i + 6 <= raw && start[i] == '\\' && start[i + 1] == 'u' && hex4(start + i + 2, &lo) &&
            lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        } else {
          cp = 0xFFFD;
        }
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        cp = 0xFFFD;
      }
      /* A \uXXXX escape is 6 bytes and yields at most 3 (4 for a pair from
       * 12 bytes), so the output never outgrows the raw length. */
      n += put_utf8(o + n, cp);
      break;
    }
    default: o[n++] = e; break; /* \" \\ \/ */
    }
  }
  o[n] = '\0';
  if (memchr(o, '\0', n))
    return nul_err(w->s, o, n, sline, scol);
  *out = o;
  *outlen = n;
  return GC_OK;
}

static int jw_value(struct jwalk *w, size_t depth, struct gc_value **out);

static int jw_container(struct jwalk *w, size_t depth, int is_map, struct gc_value **out) {
  struct src *s = w->s;
  struct gc_arena *a = s->ds->arena;
  uint32_t line = w->line, col = w->col;
  if (depth + 1 > s->ds->limits.max_depth)
    return src_err(s, GC_ELIMIT, line, col, "nesting depth exceeds limit %zu",
                   s->ds->limits.max_depth);
  int rc = count_node(s, 1, line, col);
  if (rc)
    return rc;
  struct gc_value *v = NULL;
  if ((rc = new_container(s, is_map, line, col, &v)))
    return rc;
  struct keyset ks = {.map = v};
  char close = is_map ? '}' : ']';
  jw_adv(w);
  jw_ws(w);
  if (w->p < w->end && *w->p == close) {
    jw_adv(w);
    *out = v;
    return GC_OK;
  }
  for (;;) {
    jw_ws(w);
    struct gc_value *item = NULL;
    if (is_map) {
      uint32_t kline = w->line, kcol = w->col;
      char *k;
      size_t klen;
      /* Keys count as nodes, as they do in YAML. */
      if ((rc = count_node(s, 1, kline, kcol)) || (rc = jw_string(w, &k, &klen)))
        goto out;
      jw_ws(w);
      if (w->p >= w->end || *w->p != ':') {
        rc = jw_bad(w);
        goto out;
      }
      jw_adv(w);
      if ((rc = jw_value(w, depth + 1, &item)))
        goto out;
      if ((rc = add_member(s, &ks, k, klen, item, kline, kcol)))
        goto out;
    } else {
      if ((rc = jw_value(w, depth + 1, &item)))
        goto out;
      if (gc_seq_push(a, v, item)) {
        rc = src_oom(s, item->line, item->col);
        goto out;
      }
    }
    jw_ws(w);
    if (w->p < w->end && *w->p == ',') {
      jw_adv(w);
      continue;
    }
    if (w->p < w->end && *w->p == close) {
      jw_adv(w);
      break;
    }
    rc = jw_bad(w);
    goto out;
  }
  *out = v;
out:
  keyset_free(&ks);
  return rc;
}

static int jw_literal(struct jwalk *w, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(w->end - w->p) < n || memcmp(w->p, word, n) != 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    jw_adv(w);
  return 1;
}

static int jw_value(struct jwalk *w, size_t depth, struct gc_value **out) {
  struct src *s = w->s;
  struct gc_arena *a = s->ds->arena;
  jw_ws(w);
  if (w->p >= w->end)
    return jw_bad(w);
  uint32_t line = w->line, col = w->col;
  char c = *w->p;
  if (c == '{' || c == '[')
    return jw_container(w, depth, c == '{', out);
  int rc = count_node(s, 1, line, col);
  if (rc)
    return rc;
  struct gc_value *v = NULL;
  if (c == '"') {
    char *str;
    size_t len;
    if ((rc = jw_string(w, &str, &len)))
      return rc;
    v = gc_arena_alloc(a, sizeof(*v));
    if (v) {
      v->type = GC_STR;
      v->u.s = str;
      v->len = len;
      v->text = str;
    }
  } else if (c == 't' || c == 'f' || c == 'n') {
    const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
    if (!jw_literal(w, word))
      return jw_bad(w);
    v = c == 'n' ? gc_value_null(a) : gc_value_bool(a, c == 't');
    if (v)
      v->text = word;
  } else if (c == '-' || is_digit(c)) {
    const char *start = w->p;
    int integral = 1;
    while (w->p < w->end && (is_digit(*w->p) || (*w->p && strchr("+-.eE", *w->p)))) {
      if (*w->p == '.' || *w->p == 'e' || *w->p == 'E')
        integral = 0;
      jw_adv(w);
    }
    size_t len = (size_t)(w->p - start);
    int64_t iv;
    uint64_t uv;
    struct gb_scalar r = {.type = GC_FLOAT};
    if (integral && gb_scalar_parse_int(start, len, &iv, &uv) == 1 && !(len > 1 && start[0] == '0') &&
        !(len > 2 && start[0] == '-' && start[1] == '0')) {
      r.type = GC_INT;
      r.i = iv;
    } else {
      /* json-c accepted it, so it is a JSON number; an overflowing one is
       * kept as an infinite float with its text. */
      char tmp[512];
      size_t n = len < sizeof(tmp) - 1 ? len : sizeof(tmp) - 1;
      memcpy(tmp, start, n);
      tmp[n] = '\0';
      r.f = strtod(tmp, NULL);
    }
    v = make_scalar(a, &r, start, len);
  } else {
    return jw_bad(w);
  }
  if (!v)
    return src_oom(s, line, col);
  v->line = line;
  v->col = col;
  *out = v;
  return GC_OK;
}

static void load_json(struct src *s, size_t start) {
  const char *nul = memchr(s->buf, '\0', s->len);
  if (nul) {
    uint32_t line, col;
    offset_pos(s->buf, s->len, (size_t)(nul - s->buf), &line, &col);
    src_err(s, GC_EINVAL, line, col, "invalid character (NUL byte) in JSON");
    return;
  }
  /* json-c's tokener depth D admits D - 1 nested containers. */
  int jdepth = (int)s->ds->limits.max_depth + 1;
  struct json_tokener *tok = json_tokener_new_ex(jdepth);
  if (!tok) {
    src_oom(s, 1, 1);
    return;
  }
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                  JSON_TOKENER_VALIDATE_UTF8);
  /* A byte order mark (start = 3) takes no column, as in libyaml. */
  struct jwalk w = {.s = s, .p = s->buf + start, .end = s->buf + s->len, .line = 1, .col = 1};
  for (;;) {
    jw_ws(&w);
    if (w.p >= w.end)
      break;
    size_t off = (size_t)(w.p - s->buf);
    if (s->len - off > INT32_MAX) {
      src_err(s, GC_ELIMIT, w.line, w.col, "JSON text too large");
      break;
    }
    json_tokener_reset(tok);
    struct json_object *jo = json_tokener_parse_ex(tok, w.p, (int)(s->len - off));
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t consumed = json_tokener_get_parse_end(tok);
    if (!jo && jerr == json_tokener_continue) {
      /* The input ended inside a value; a NUL tells json-c it is the end, so
       * a trailing number completes and anything else is truncated. */
      jo = json_tokener_parse_ex(tok, "", 1);
      jerr = json_tokener_get_error(tok);
      consumed = s->len - off;
    }
    if (!jo || jerr != json_tokener_success) {
      size_t eoff = off + (jerr == json_tokener_continue ? s->len - off : consumed);
      uint32_t line, col;
      offset_pos(s->buf, s->len, eoff, &line, &col);
      if (jerr == json_tokener_error_depth && eoff > 0 &&
          (s->buf[eoff - 1] == '[' || s->buf[eoff - 1] == '{'))
        offset_pos(s->buf, s->len, eoff - 1, &line, &col); /* at the bracket */
      if (jerr == json_tokener_error_depth)
        src_err(s, GC_ELIMIT, line, col, "nesting depth exceeds limit %zu",
                s->ds->limits.max_depth);
      else if (jerr == json_tokener_continue || eoff >= s->len)
        src_err(s, GC_EINVAL, line, col, "unexpected end of JSON input");
      else
        src_err(s, GC_EINVAL, line, col, "%s", json_tokener_error_desc(jerr));
      json_object_put(jo);
      break;
    }
    json_object_put(jo);
    size_t end = off + consumed;
    if (end > s->len)
      end = s->len;
    struct jwalk dw = w;
    dw.end = s->buf + end;
    struct gc_value *root = NULL;
    int rc = jw_value(&dw, 0, &root);
    if (rc)
      break;
    jw_ws(&dw);
    if (dw.p != dw.end) {
      jw_bad(&dw);
      break;
    }
    w.line = dw.line;
    w.col = dw.col;
    w.p = dw.p;
    rc = add_document(s, root, 0);
    if (rc == GC_ELIMIT || rc == GC_ENOMEM)
      break;
  }
  json_tokener_free(tok);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                             */

static int check_total(struct gb_docset *ds, const char *name, size_t len,
                       struct gc_diags *diags) {
  if (len > ds->limits.max_source_bytes) {
    gc_diags_addf(diags, "%s:1:1: source size exceeds limit %zu", name,
                  ds->limits.max_source_bytes);
    return GC_ELIMIT;
  }
  if (len > ds->limits.max_total_bytes - ds->bytes_read ||
      ds->bytes_read > ds->limits.max_total_bytes) {
    gc_diags_addf(diags, "%s:1:1: total input size exceeds limit %zu", name,
                  ds->limits.max_total_bytes);
    return GC_ELIMIT;
  }
  return GC_OK;
}

int gb_manifest_load_buffer(struct gb_docset *ds, const char *name, const char *buf, size_t len,
                            struct gc_diags *diags) {
  if (!ds || !name || (!buf && len))
    return GC_EUSAGE;
  int rc = check_total(ds, name, len, diags);
  if (rc)
    return rc;
  ds->bytes_read += len;
  struct src s = {.ds = ds, .diags = diags, .buf = buf ? buf : "", .len = len};
  s.name = gc_arena_strdup(ds->arena, name);
  if (!s.name && gc_arena_limit_hit(ds->arena)) {
    gc_diags_addf(diags, "%s:1:1: the loaded documents need more than %zu bytes of memory (the "
                  "limit for all inputs together)", name, gc_arena_limit(ds->arena));
    return GC_ELIMIT;
  }
  if (!s.name) {
    gc_diags_addf(diags, "%s:1:1: out of memory", name);
    return GC_ENOMEM;
  }
  size_t i = 0;
  if (len >= 3 && memcmp(s.buf, "\xEF\xBB\xBF", 3) == 0)
    i = 3;
  size_t bom = i;
  while (i < len && (s.buf[i] == ' ' || s.buf[i] == '\t' || s.buf[i] == '\n' || s.buf[i] == '\r'))
    i++;
  if (i < len && (s.buf[i] == '{' || s.buf[i] == '['))
    load_json(&s, bom);
  else
    load_yaml(&s);
  scratch_free(&s);
  free(s.anchors);
  free(s.slots);
  return s.rc;
}

/* Reads at most cap+1 bytes from fd; sets *over when the source is larger
 * than cap.  Returns 0 or an errno value. */
static int read_capped(int fd, size_t cap, char **out, size_t *outlen, int *over) {
  size_t len = 0;
  if (cap > SIZE_MAX / 2)
    cap = SIZE_MAX / 2;
  size_t bufcap = cap + 1 < 64 * 1024 ? cap + 1 : 64 * 1024;
  *over = 0;
  char *buf = malloc(bufcap);
  if (!buf)
    return ENOMEM;
  for (;;) {
    if (len == bufcap) {
      if (len > cap) {
        *over = 1;
        break;
      }
      size_t ncap = bufcap * 2;
      if (ncap > cap + 1)
        ncap = cap + 1;
      if (ncap <= bufcap)
        ncap = bufcap + 1;
      char *n = realloc(buf, ncap);
      if (!n) {
        free(buf);
        return ENOMEM;
      }
      buf = n;
      bufcap = ncap;
    }
    ssize_t r = read(fd, buf + len, bufcap - len);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      free(buf);
      return e;
    }
    if (r == 0)
      break;
    len += (size_t)r;
    if (len > cap) {
      *over = 1;
      break;
    }
  }
  *out = buf;
  *outlen = len;
  return 0;
}

static int load_fd(struct gb_docset *ds, const char *name, int fd, struct gc_diags *diags) {
  size_t remaining = ds->bytes_read < ds->limits.max_total_bytes
                         ? ds->limits.max_total_bytes - ds->bytes_read
                         : 0;
  size_t cap = ds->limits.max_source_bytes;
  int total_bound = remaining < cap;
  if (total_bound)
    cap = remaining;
  char *buf = NULL;
  size_t len = 0;
  int over = 0;
  int e = read_capped(fd, cap, &buf, &len, &over);
  if (e) {
    gc_diags_addf(diags, "%s: %s", name, strerror(e));
    return e == ENOMEM ? GC_ENOMEM : GC_EIO;
  }
  int rc;
  if (over) {
    if (total_bound)
      gc_diags_addf(diags, "%s:1:1: total input size exceeds limit %zu", name,
                    ds->limits.max_total_bytes);
    else
      gc_diags_addf(diags, "%s:1:1: source size exceeds limit %zu", name,
                    ds->limits.max_source_bytes);
    rc = GC_ELIMIT;
  } else {
    rc = gb_manifest_load_buffer(ds, name, buf, len, diags);
  }
  free(buf);
  return rc;
}

static int load_file(struct gb_docset *ds, const char *path, struct gc_diags *diags) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    gc_diags_addf(diags, "%s: %s", path, strerror(errno));
    return GC_EIO;
  }
  int rc = load_fd(ds, path, fd, diags);
  close(fd);
  return rc;
}

static int has_manifest_ext(const char *name) {
  size_t n = strlen(name);
  return ends_with(name, n, ".yaml") || ends_with(name, n, ".yml") || ends_with(name, n, ".json");
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The set of (device, inode) pairs already walked, open addressing. */
struct gb_visited {
  struct visit_key {
    dev_t dev;
    ino_t ino;
    int used;
  } *slots;
  size_t n, cap; /* cap is a power of two, kept at most half full */
};

static void visited_free(struct gb_visited *v) {
  if (!v)
    return;
  free(v->slots);
  free(v);
}

static size_t visit_hash(dev_t dev, ino_t ino, size_t cap) {
  uint64_t h = ((uint64_t)dev * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)ino * 0xC2B2AE3D27D4EB4Full);
  return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static void visit_put(struct visit_key *slots, size_t cap, dev_t dev, ino_t ino) {
  size_t i = visit_hash(dev, ino, cap);
  while (slots[i].used)
    i = (i + 1) & (cap - 1);
  slots[i] = (struct visit_key){dev, ino, 1};
}

/* Records st; returns 1 when it was new, 0 when already walked, GC_ENOMEM. */
static int visit_first(struct gb_docset *ds, const struct stat *st) {
  struct gb_visited *v = ds->visited;
  if (!v && !(v = ds->visited = calloc(1, sizeof(*v))))
    return GC_ENOMEM;
  for (size_t i = v->cap ? visit_hash(st->st_dev, st->st_ino, v->cap) : 0;
       v->cap && v->slots[i].used; i = (i + 1) & (v->cap - 1))
    if (v->slots[i].dev == st->st_dev && v->slots[i].ino == st->st_ino)
      return 0;
  if (2 * (v->n + 1) > v->cap) {
    size_t ncap = v->cap ? v->cap * 2 : 64;
    struct visit_key *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
      return GC_ENOMEM;
    for (size_t i = 0; i < v->cap; i++)
      if (v->slots[i].used)
        visit_put(ns, ncap, v->slots[i].dev, v->slots[i].ino);
    free(v->slots);
    v->slots = ns;
    v->cap = ncap;
  }
  visit_put(v->slots, v->cap, st->st_dev, st->st_ino);
  v->n++;
  return 1;
}

/* Who reads each file found: the docset's own loader, or a caller's
 * streaming reader (gb_manifest_walk_path). */
struct walker {
  gb_source_fn fn; /* NULL: load into the docset */
  void *ctx;
};

static int load_dir(struct gb_docset *ds, const char *path, int level, struct gc_diags *diags,
                    const struct walker *w);

static int read_source(struct gb_docset *ds, const char *path, struct gc_diags *diags,
                       const struct walker *w) {
  if (!w->fn)
    return load_file(ds, path, diags);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    gc_diags_addf(diags, "%s: %s", path, strerror(errno));
    return GC_EIO;
  }
  int rc = w->fn(w->ctx, path, fd, diags);
  close(fd);
  return rc;
}

static int load_any(struct gb_docset *ds, const char *path, int level, int explicit_path,
                    struct gc_diags *diags, const struct walker *w) {
  struct stat st;
  if (stat(path, &st) != 0) {
    gc_diags_addf(diags, "%s: %s", path, strerror(errno));
    return GC_EIO;
  }
  int is_dir = S_ISDIR(st.st_mode);
  if (!is_dir && !explicit_path && (!S_ISREG(st.st_mode) || !has_manifest_ext(path)))
    return GC_OK;
  int first = is_dir || S_ISREG(st.st_mode) ? visit_first(ds, &st) : 1;
  if (first < 0) {
    gc_diags_addf(diags, "%s: %s", path, strerror(ENOMEM));
    return first;
  }
  /* Reached before (a symlink loop such as `ln -s . x`, a second link, the
   * same path twice): walking it again would load its files again, and two
   * loops would walk 2^depth paths. */
  if (!first)
    return GC_OK;
  if (is_dir) {
    if (level >= MAX_DIR_DEPTH) {
      gc_diags_addf(diags, "%s: directory nesting exceeds limit %d", path, MAX_DIR_DEPTH);
      return GC_ELIMIT;
    }
    return load_dir(ds, path, level + 1, diags, w);
  }
  return read_source(ds, path, diags, w);
}

static int load_dir(struct gb_docset *ds, const char *path, int level, struct gc_diags *diags,
                    const struct walker *w) {
  DIR *d = opendir(path);
  if (!d) {
    gc_diags_addf(diags, "%s: %s", path, strerror(errno));
    return GC_EIO;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = GC_OK;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 32;
      char **nn = realloc(names, ncap * sizeof(*nn));
      if (!nn) {
        rc = GC_ENOMEM;
        break;
      }
      names = nn;
      cap = ncap;
    }
    names[n] = strdup(de->d_name);
    if (!names[n]) {
      rc = GC_ENOMEM;
      break;
    }
    n++;
  }
  closedir(d);
  if (rc) {
    gc_diags_addf(diags, "%s: %s", path, strerror(ENOMEM));
    goto out;
  }
  qsort(names, n, sizeof(*names), cmp_names);
  size_t plen = strlen(path);
  int slash = plen > 0 && path[plen - 1] == '/';
  for (size_t i = 0; i < n; i++) {
    size_t need = plen + 1 + strlen(names[i]) + 1;
    char *full = malloc(need);
    if (!full) {
      if (!rc)
        rc = GC_ENOMEM;
      break;
    }
    snprintf(full, need, "%s%s%s", path, slash ? "" : "/", names[i]);
    int r = load_any(ds, full, level, 0, diags, w);
    free(full);
    if (r && !rc)
      rc = r;
  }
out:
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  return rc;
}

int gb_manifest_load_path(struct gb_docset *ds, const char *path, struct gc_diags *diags) {
  if (!ds || !path)
    return GC_EUSAGE;
  if (!strcmp(path, "-"))
    return load_fd(ds, "-", STDIN_FILENO, diags);
  struct walker w = {NULL, NULL};
  return load_any(ds, path, 0, 1, diags, &w);
}

int gb_manifest_walk_path(struct gb_docset *ds, const char *path, gb_source_fn fn, void *ctx,
                          struct gc_diags *diags) {
  if (!ds || !path || !fn)
    return GC_EUSAGE;
  if (!strcmp(path, "-"))
    return fn(ctx, "-", STDIN_FILENO, diags);
  struct walker w = {fn, ctx};
  return load_any(ds, path, 0, 1, diags, &w);
}
