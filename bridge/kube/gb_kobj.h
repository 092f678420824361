/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kobj: reading Kubernetes objects held as json-c trees, the one set of
 * accessors every layer uses (client-go's meta.Accessor and
 * unstructured.Nested* helpers).  A getter returns what is there with the
 * right JSON type, or NULL (0 for lengths): a missing member, a JSON null,
 * a value of another type and a NULL object all read as absent, so chains
 * like gb_kobj_str(gb_kobj_dig(o, "spec", "template", NULL), "name") need no
 * checks in between.  Nothing is copied (but by gb_kobj_copy): every
 * result is borrowed from the object and lives as long as it does.  Objects are only read, never
 * changed; thread-safe for objects no one writes.
 */
#ifndef GB_KOBJ_H
#define GB_KOBJ_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

/* o[key] of any type, or NULL (o not an object, key absent or null). */
json_object *gb_kobj_get(json_object *o, const char *key);

/* o[k1][k2]...: the keys are a NULL-terminated list; NULL when any step is
 * missing or not an object. */
json_object *gb_kobj_dig(json_object *o, ...) __attribute__((sentinel));

/* o at a dotted path of keys ("schedulingPolicy.gang.minCount", as the
 * scheduler backends name nested fields), or NULL as gb_kobj_dig; a path
 * of more than 8 steps or an empty step gives NULL. */
json_object *gb_kobj_path(json_object *o, const char *dotted);

/* o[key] when it is a string, else NULL. */
const char *gb_kobj_str(json_object *o, const char *key);

/* o[key] when it is an object (gb_kobj_obj) or an array (gb_kobj_arr). */
json_object *gb_kobj_obj(json_object *o, const char *key);
json_object *gb_kobj_arr(json_object *o, const char *key);

/* o[key] when it is a boolean: 1 or 0; dflt when absent or not a bool. */
int gb_kobj_bool(json_object *o, const char *key, int dflt);

/* Length of array a, 0 when a is not an array; element i of it, or NULL. */
size_t gb_kobj_len(json_object *a);
json_object *gb_kobj_at(json_object *a, size_t i);

/* ---- metadata ----------------------------------------------------------- */

/* metadata.<field> when it is a string (name, namespace, uid,
 * resourceVersion, creationTimestamp, generateName...), else NULL. */
const char *gb_kobj_meta(json_object *o, const char *field);

/* metadata.labels[key] / metadata.annotations[key] when a string, or NULL. */
const char *gb_kobj_label(json_object *o, const char *key);
const char *gb_kobj_annotation(json_object *o, const char *key);

/* The first entry of metadata.ownerReferences whose kind is `kind` and
 * whose uid is `uid` (either NULL: any) and, with controller set, that
 * says controller: true; NULL when none does. */
json_object *gb_kobj_owner(json_object *o, const char *kind, const char *uid, int controller);

/* The entry of status.conditions whose type is `type`, or NULL. */
json_object *gb_kobj_condition(json_object *o, const char *type);

/* "namespace/name" of o for messages into buf (always terminated;
 * "namespace/generateName*" before it has a name, "(unnamed)" without
 * either).  Returns buf. */
const char *gb_kobj_where(json_object *o, char *buf, size_t cap);

/* A deep copy of o (the caller puts it), or NULL when o is NULL or memory
 * is out. */
json_object *gb_kobj_copy(json_object *o);

#endif
