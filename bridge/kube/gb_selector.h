/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_selector: Kubernetes label and field selectors, parsed and matched on
 * this side (apimachinery's labels.Parse and fields.ParseSelector, with
 * Matches): the one selector parser of gangbridge.  serve's configuration
 * reads its namespace and opt-in selectors with it, and a shared informer,
 * which lists the union of what its handlers select, applies a handler's
 * own selection with it object by object, so the handler sees exactly what
 * a list and watch with its own selectors would have shown.
 *
 * Labels: requirements separated by commas, each `key`, `!key`, `key=v`,
 * `key==v`, `key!=v`, `key in (v1,v2)` or `key notin (v1,v2)`; `!=` and
 * `notin` also match an object without the label, as on the server.
 * Fields: `path=v`, `path==v` or `path!=v` separated by commas, where path
 * is the object's dotted field path (metadata.name, metadata.namespace,
 * status.phase, spec.nodeName...); a missing field reads as "", a number or
 * bool as its JSON text.  Bounds: 4 KiB of text, 64 requirements, 64
 * values per set.
 *
 * A parsed selector lives in the caller's arena and is only read: thread-
 * safe to match from any thread.
 */
#ifndef GB_SELECTOR_H
#define GB_SELECTOR_H

#include <json-c/json.h>
#include <stddef.h>

#include "gc_arena.h"
#include "gc_diag.h"
#include "gc_value.h"

enum gb_selector_op {
  GB_SEL_EQ,       /* k=v, k==v */
  GB_SEL_NE,       /* k!=v (true when k is absent) */
  GB_SEL_IN,       /* k in (a,b) */
  GB_SEL_NOTIN,    /* k notin (a,b) (true when k is absent) */
  GB_SEL_EXISTS,   /* k */
  GB_SEL_NOTEXISTS /* !k */
};

struct gb_selector_req {
  const char *key; /* a label key, or a field path */
  enum gb_selector_op op;
  const char **values;
  size_t n_values;
  int field; /* a field requirement */
};

/* A parsed selector; every requirement must hold.  Arena-owned.  An empty
 * selector matches everything. */
struct gb_selector {
  struct gb_selector_req *reqs;
  size_t n;
};

/* Parses a Kubernetes label selector ("team=ml,tier in (a,b),!legacy")
 * into *out (NULL text: empty).  Returns 0, GC_EINVAL (message names the
 * bad requirement) or GC_ENOMEM. */
int gb_selector_parse(struct gc_arena *a, const char *text, struct gb_selector *out,
                      struct gc_diags *d);

/* Adds the requirements of a field selector ("status.phase!=Failed,
 * metadata.name=x"; NULL: none) to *out, parsed by gb_selector_parse
 * before.  Returns 0, GC_EINVAL (message names the requirement) or
 * GC_ENOMEM. */
int gb_selector_add_fields(struct gc_arena *a, const char *text, struct gb_selector *out,
                           struct gc_diags *d);

/* 1 when labels (a map of strings, or NULL for none) satisfies the label
 * requirements of sel (field requirements are not looked at). */
int gb_selector_match(const struct gb_selector *sel, const struct gc_value *labels);

/* 1 when obj (a Kubernetes object, borrowed) satisfies every requirement
 * of sel: labels from its metadata.labels, fields from its paths. */
int gb_selector_match_object(const struct gb_selector *sel, json_object *obj);

#endif
