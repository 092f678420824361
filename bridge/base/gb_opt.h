/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_opt: what a layer's configuration keys are, as data.  Every layer of
 * `gangbridge serve` owns an options struct and one table (struct
 * gb_opt_table) describing its keys: the dotted path in the config file,
 * the type (bool; int, number or duration with a range; string; enum; list
 * of strings), where the value lives in the struct, the default as text,
 * the flag that sets it (if any) and one line of help.  A table may also
 * name a check for the rules between its keys.  The types live here, in
 * base/, so that every layer can describe its keys without depending on the
 * loader; the generic loader that reads YAML files, flags and defaults
 * through these tables is doc/gb_options, and cli/gb_serve_config stitches
 * the tables of every layer into serve's configuration.  Header only: no
 * functions, no state.
 *
 * The GB_KEY_* macros build one entry and check at compile time that the
 * field has the type its key stores (int for bool, int and enum; double for
 * number and duration; const char * for string; struct gb_opt_list for
 * list), so a table cannot write a double into an int.
 */
#ifndef GB_OPT_H
#define GB_OPT_H

#include <stddef.h>

#include "gc_arena.h"
#include "gc_diag.h"

enum gb_opt_type {
  GB_OPT_BOOL, /* int: 0 or 1; "true"/"false" (and 1/0, yes/no with --set) */
  GB_OPT_INT,  /* int in [lo, hi] */
  GB_OPT_NUM,  /* double in [lo, hi] */
  GB_OPT_DUR,  /* double seconds in [lo, hi]: a number of seconds or Go duration text */
  GB_OPT_STR,  /* const char *, at most 4096 bytes, no NUL */
  GB_OPT_ENUM, /* int (or an enum of int's size): one of names[] */
  GB_OPT_LIST  /* struct gb_opt_list: a YAML list of strings, or "a,b" with --set */
};

#define GB_OPT_ALIAS 1u   /* accepted, but not listed in messages and help */
#define GB_OPT_ANYCASE 2u /* matches in any case ("DEBUG") */

/* One value of an enum key; a table of them ends with a NULL name.  The
 * first entry of a value is its name in output. */
struct gb_opt_enum {
  const char *name;
  int value;
  unsigned flags; /* GB_OPT_ALIAS, GB_OPT_ANYCASE */
};

/* What the items of a list key must be. */
struct gb_opt_items {
  size_t max;                         /* items at most */
  const char *plural;                 /* "levels": "at most 16 levels" */
  int (*ok)(const char *s, size_t n); /* 1 when an item is valid */
  const char *what;                   /* "a node label key": "\"x\" is not a node label key" */
};

/* A list key's value: unique items, each checked; strings owned by the
 * loader's arena.  Empty: items NULL and n 0. */
struct gb_opt_list {
  const char *const *items;
  size_t n;
};

struct gb_opt {
  const char *path; /* "kube.qps" */
  enum gb_opt_type type;
  size_t off;                       /* offset of the value in the layer's options struct */
  double lo, hi;                    /* GB_OPT_INT, GB_OPT_NUM, GB_OPT_DUR (seconds): the range */
  const char *def;                  /* the default, as the config file or --set would write it */
  const char *flag;                 /* its own long option without "--", or NULL (--set only) */
  const char *doc;                  /* one line for --help */
  const struct gb_opt_enum *names;  /* GB_OPT_ENUM */
  const struct gb_opt_items *items; /* GB_OPT_LIST */
};

/* The rules between a layer's keys, run after every key is set: messages
 * start with the key they are about ("grpc.tlsCert and grpc.tlsKey go
 * together"), and the loader puts where that key was set in front of them.
 * It may fill derived fields (strings and arrays in a).  Returns 0,
 * GC_EINVAL or GC_ENOMEM. */
typedef int (*gb_opt_check_fn)(void *opts, struct gc_arena *a, struct gc_diags *d);

/* A layer's keys.  The loader zeroes `size` bytes of the options struct and
 * then applies every default. */
struct gb_opt_table {
  const char *layer; /* the folder that owns the keys: "kube" is bridge/kube/ */
  const char *title; /* what they configure, for --help ("Kubernetes client and informers") */
  const struct gb_opt *keys;
  size_t n;
  size_t size;           /* sizeof the options struct */
  gb_opt_check_fn check; /* NULL: no rule between keys */
};

/* The offset of field f of struct type st, which must be of one of the
 * given types (a compile error otherwise). */
#define GB_OPT_AT_(st, f, ...) (offsetof(st, f) + 0 * sizeof(_Generic(((st *)0)->f, __VA_ARGS__)))

#define GB_KEY_BOOL(st, path, f, def, flag, doc)                                                   \
  { path, GB_OPT_BOOL, GB_OPT_AT_(st, f, int : 1), 0, 0, def, flag, doc, NULL, NULL }
#define GB_KEY_INT(st, path, f, lo, hi, def, flag, doc)                                            \
  { path, GB_OPT_INT, GB_OPT_AT_(st, f, int : 1), lo, hi, def, flag, doc, NULL, NULL }
#define GB_KEY_NUM(st, path, f, lo, hi, def, flag, doc)                                            \
  { path, GB_OPT_NUM, GB_OPT_AT_(st, f, double : 1), lo, hi, def, flag, doc, NULL, NULL }
#define GB_KEY_DUR(st, path, f, lo, hi, def, flag, doc)                                            \
  { path, GB_OPT_DUR, GB_OPT_AT_(st, f, double : 1), lo, hi, def, flag, doc, NULL, NULL }
#define GB_KEY_STR(st, path, f, def, flag, doc)                                                    \
  { path, GB_OPT_STR, GB_OPT_AT_(st, f, const char * : 1), 0, 0, def, flag, doc, NULL, NULL }
/* An enum field must have int's size: enums of small non-negative values
 * are compatible with unsigned int, which the loader writes as int. */
#define GB_KEY_ENUM(st, path, f, names, def, flag, doc)                                            \
  {                                                                                                \
    path, GB_OPT_ENUM, GB_OPT_AT_(st, f, int : 1, unsigned int : 1), 0, 0, def, flag, doc, names,  \
        NULL                                                                                       \
  }
#define GB_KEY_LIST(st, path, f, items, def, flag, doc)                                            \
  {                                                                                                \
    path, GB_OPT_LIST, GB_OPT_AT_(st, f, struct gb_opt_list : 1), 0, 0, def, flag, doc, NULL,      \
        items                                                                                      \
  }

/* A table over the array keys (not a pointer) of options struct st. */
#define GB_OPT_TABLE(layer, title, st, keys, check)                                                \
  { layer, title, keys, sizeof(keys) / sizeof((keys)[0]), sizeof(st), check }

#endif
