/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_options: the generic, table-driven loader of layered options.  A set
 * (struct gb_options) stitches several layers' key tables (base/gb_opt.h),
 * each over its own options struct, into one configuration: it applies
 * every default, sets keys from text (--set, flags), reads the YAML (or
 * JSON) config file with the manifest loader, so every problem is reported
 * as "file:line:col: key: message", refuses unknown keys with a
 * did-you-mean, runs each table's check with the place each key was set in
 * front of its messages, and writes the configuration back (YAML), the
 * keys' help and a machine-readable key list.  It knows no layer: the
 * tables say everything.  A key may appear in one table only; a YAML
 * section ("timeouts:") may hold keys of several tables.
 *
 * Not thread-safe: a set is filled by one thread, then only read.  Strings
 * set into the options structs are owned by the set's arena and live until
 * gb_options_destroy.
 */
#ifndef GB_OPTIONS_H
#define GB_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "gb_opt.h"
#include "gc_arena.h"
#include "gc_diag.h"

/* Largest config file accepted. */
#define GB_OPTIONS_MAX_FILE_BYTES (1u << 20)

/* One layer in a set: its table and its options struct (borrowed). */
struct gb_options_part {
  const struct gb_opt_table *table;
  void *opts;
};

struct gb_options {
  struct gc_arena *arena;              /* owns every string set and every origin */
  const struct gb_options_part *parts; /* borrowed until gb_options_destroy */
  size_t n_parts;
  size_t n_keys;      /* over every part */
  const char **where; /* per key, in part order: where it was set ("f.yaml:3:9", "--set",
                         "--workers"), NULL for the default */
  const char *source; /* the config file read last, or NULL */
};

/* Initialises s over parts[0..n) (borrowed): zeroes each options struct and
 * applies every default.  Returns 0, GC_ENOMEM, or GC_EUSAGE when two
 * tables share a key or a default does not parse (the message in d names
 * it: a table is wrong, not the user).  Free with gb_options_destroy, also
 * after a failure. */
int gb_options_init(struct gb_options *s, const struct gb_options_part *parts, size_t n,
                    struct gc_diags *d);
/* Frees the arena (every string set).  Accepts NULL and a zeroed set. */
void gb_options_destroy(struct gb_options *s);

/* The key whose flag is flag[0..len), or NULL. */
const struct gb_opt *gb_options_find_flag(const struct gb_options *s, const char *flag, size_t len);

/* Sets key k of s from text; where ("--set", "--workers") starts every
 * message and is remembered as the key's origin.  Returns 0, GC_EINVAL
 * ("WHERE: KEY: must be ...") or GC_ENOMEM. */
int gb_options_set_key(struct gb_options *s, const struct gb_opt *k, const char *text,
                       const char *where, struct gc_diags *d);
/* Sets the key at path from text, as gb_options_set_key.  An unknown path
 * is GC_ENOTFOUND: "WHERE: unknown configuration key \"PATH\"", with the
 * nearest key suggested. */
int gb_options_set(struct gb_options *s, const char *path, const char *text, const char *where,
                   struct gc_diags *d);

/* 1 when text is a boolean as --set takes it (true/false, 1/0, yes/no). */
int gb_options_is_bool(const char *text);

/* Reads a YAML (or JSON) config file over the current values: one document
 * holding a map of sections; apiVersion and kind at the top are accepted
 * and ignored.  Unknown keys, wrong types and values out of range are
 * errors with file:line:col, all reported.  Returns 0, GC_EINVAL, GC_EIO,
 * GC_ELIMIT or GC_ENOMEM. */
int gb_options_load_file(struct gb_options *s, const char *path, struct gc_diags *d);
int gb_options_load_buffer(struct gb_options *s, const char *name, const char *buf, size_t len,
                           struct gc_diags *d);

/* Runs every table's check.  A message that starts with a key set from the
 * file or a flag gets that place in front ("cfg.yaml:4:12: http.address:
 * ...").  Returns 0, GC_EINVAL or GC_ENOMEM. */
int gb_options_check(struct gb_options *s, struct gc_diags *d);

/* Writes every key's value as YAML, one section per prefix, in the order
 * the sections first appear in the tables (`serve --print-config`). */
void gb_options_write(const struct gb_options *s, FILE *f);
/* Writes every key with its type, range, default, flag and help, table by
 * table (`serve --help`). */
void gb_options_write_help(const struct gb_options *s, FILE *f);
/* Writes one line per key: path, type, default, flag ("" when none) and
 * layer, separated by tabs (`serve --print-keys`, read by the test that
 * checks deploy/configmap.yaml and docs/operating.md). */
void gb_options_write_keys(const struct gb_options *s, FILE *f);

#endif
