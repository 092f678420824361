/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tr_dump: reads kubectl dumps for `gangbridge timeouts report`
 * streaming, one object at a time, so the size of a dump bounds neither the
 * memory nor the time beyond one pass: a `kubectl get podgroups,pods -A -o
 * json` of a large cluster is one List whose items are read one by one.
 * Sources are what gb_manifest_walk_path gives (files, directories, "-" for stdin);
 * each holds JSON (json-c's tokener, positioned at each element of a
 * top-level "items" array, or any number of top-level objects) or
 * multi-document YAML (libyaml's events, each item built as its own small
 * tree).  A List's items get its apiVersion and kind ("PodList" -> "Pod")
 * when they lack them.  Each object goes to a callback as a json-c tree,
 * freed after it returns; gb_tr_dump_locate gives the file:line:col of any
 * value in it (in YAML every node carries its position; in JSON the
 * object's own text is kept and re-read with positions, only when asked,
 * which is only on an error).  Bounds: bytes per source, bytes, nodes and
 * nesting per object; every problem is "file:line:col: message" in diags.
 * Not thread-safe (one reader per call); no globals.
 */
#ifndef GB_TR_DUMP_H
#define GB_TR_DUMP_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "gc_diag.h"

struct gb_tr_dump_limits {
  uint64_t max_source_bytes; /* per file or stdin; 0: 64 GiB */
  size_t max_object_bytes;   /* one object (a List item or a document); 0: 16 MiB */
  size_t max_depth;          /* nesting in one object; 0: 64 */
  size_t max_nodes;          /* nodes in one object; 0: 1,000,000 */
};

/* One object of a dump; everything is borrowed for the callback. */
struct gb_tr_dump_item {
  json_object *obj;   /* a map */
  const char *file;   /* the source's name ("-" for stdin) */
  uint32_t line, col; /* where the object starts */
  const char *text;   /* JSON: the object's text (len bytes); NULL for YAML */
  size_t len;
};

/* Receives each object.  Returns 0 to go on, a negative GC_E* code to stop
 * (GC_ENOMEM, GC_ELIMIT: the reader returns it). */
typedef int (*gb_tr_dump_fn)(void *ctx, const struct gb_tr_dump_item *it);

/* One step of a path into an object: a map key, or (key NULL) a list index. */
struct gb_tr_dump_step {
  const char *key;
  size_t index;
};

/* Reads every source of path (gb_manifest_walk_path's rules) and calls fn for each
 * object.  lim may be NULL (defaults).  Returns 0, or the first error code
 * (problems in diags; reading goes on with the next source). */
int gb_tr_dump_read(const char *path, const struct gb_tr_dump_limits *lim, gb_tr_dump_fn fn,
                    void *ctx, struct gc_diags *diags);

/* The position of the value at steps[0..n) inside it (the deepest one that
 * exists when the path does not), or of the object itself. */
void gb_tr_dump_locate(const struct gb_tr_dump_item *it, const struct gb_tr_dump_step *steps,
                       size_t n, uint32_t *line, uint32_t *col);

#endif
