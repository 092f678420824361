/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_manifest: reads Kubernetes manifests into gc_value trees.  Sources are
 * files, directories (recursively, *.yaml, *.yml, *.json, in sorted order)
 * and "-" for standard input; each may hold multi-document YAML (libyaml) or
 * JSON (json-c), and kubectl "List" objects are unpacked into their items.
 * YAML scalars resolve as sigs.k8s.io/yaml does for Kubernetes objects:
 * quoted stays a string; unquoted ints, floats, bools and null become typed.
 * Every syntax error is reported as "file:line:col: message" and loading
 * goes on with the next source, so one run reports all bad files.  Inputs
 * are bounded (bytes per source, nesting depth, alias expansion, documents).
 * gb_manifest_walk_path hands the same sources to a streaming reader instead.
 */
#ifndef GB_MANIFEST_H
#define GB_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_value.h"

struct gb_limits {
  size_t max_source_bytes; /* per file or stdin; default 16 MiB */
  size_t max_total_bytes;  /* across a docset; default 256 MiB */
  size_t max_depth;        /* nesting of maps/sequences; default 64 */
  size_t max_nodes;        /* nodes per source after alias expansion; default 4M */
  size_t max_docs;         /* documents per docset; default 100000 */
};

struct gb_doc {
  struct gc_value *root; /* a map (documents that are not maps are rejected) */
  const char *file;      /* arena-owned source name ("-" for stdin) */
  uint32_t line, col;    /* where the document starts */
};

struct gb_docset {
  struct gc_arena *arena; /* owns every tree and string */
  struct gb_doc *docs;
  size_t n, cap;
  struct gb_limits limits;
  size_t bytes_read;
  struct gb_visited *visited; /* files and directories already walked (device, inode) */
};

/* Creates an empty docset with the given limits (NULL: defaults; zero fields
 * take defaults).  Returns NULL on OOM.  Free with gb_docset_free. */
struct gb_docset *gb_docset_new(const struct gb_limits *limits);
void gb_docset_free(struct gb_docset *ds);

/* Bounds the memory of the trees loaded into an empty docset (default
 * 1 GiB, gc_arena's limit); reaching it is reported as that limit, with
 * GC_ELIMIT.  Returns 0, GC_EUSAGE when ds already holds documents, or
 * GC_ENOMEM. */
int gb_docset_limit_trees(struct gb_docset *ds, size_t bytes);

/* Loads a file, a directory (recursive) or "-" (stdin).  Every problem goes
 * to diags; returns 0 if the path loaded cleanly, else the first error code
 * (documents parsed before an error in the same file are kept).  A file or
 * directory reached again (same device and inode: a symlink loop, a second
 * link, the same path given twice) is skipped, so each file loads once. */
int gb_manifest_load_path(struct gb_docset *ds, const char *path, struct gc_diags *diags);

/* A streaming reader of one source: name is the path ("-" for stdin), fd
 * is open for reading (the caller closes it).  Returns 0 or a GC_E* code;
 * problems go to diags. */
typedef int (*gb_source_fn)(void *ctx, const char *name, int fd, struct gc_diags *diags);

/* Walks path exactly as gb_manifest_load_path does (a file, the *.yaml, *.yml and
 * *.json files of a directory tree in sorted order, "-" for stdin; each
 * file once, the same depth bound and errors) but hands every source to fn
 * instead of loading it into ds (ds only remembers the files walked), for
 * readers that stream inputs too large to hold.  Returns 0 or the first
 * error code. */
int gb_manifest_walk_path(struct gb_docset *ds, const char *path, gb_source_fn fn, void *ctx,
                          struct gc_diags *diags);

/* Loads bytes as if from a file called name (JSON if the first non-blank
 * byte is '{' or '[', else YAML). */
int gb_manifest_load_buffer(struct gb_docset *ds, const char *name, const char *buf, size_t len,
                            struct gc_diags *diags);

#endif
