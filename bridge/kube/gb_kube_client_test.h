/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_client_test: for tests only.  Functions of gb_kube_client that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_kube_client's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_KUBE_CLIENT_TEST_H
#define GB_KUBE_CLIENT_TEST_H

#include "gb_kube_client.h"

/* Parses an API `Status` JSON document (as a 4xx/5xx body or a watch ERROR
 * event's object carries) into e: code, reason, message,
 * details.retryAfterSeconds.  Missing fields stay empty; a body that is not a
 * Status leaves a message describing the body's first bytes.  http_code is
 * used when the Status has no `code`.  Never fails. */
void gb_kube_client_status_parse(const char *body, size_t len, long http_code,
                                 struct gb_kube_error *e);

/* Copies the counters. */
void gb_kube_client_stats(struct gb_kube_client *c, struct gb_kube_stats *out);

/* Generic request.  `path` may carry a query string.  body may be NULL.  On a
 * 2xx response with a JSON body *out (if out not NULL) receives it (caller
 * puts it with json_object_put).  verb only selects the counters and whether
 * retries are allowed.  Returns 0, GC_ENOTFOUND (404), GC_EIO (any other
 * failure; e says what), GC_ELIMIT (body over the cap) or GC_ENOMEM. */
int gb_kube_client_request(struct gb_kube_client *c, enum gb_kube_verb verb, const char *method,
                           const char *path, const char *content_type, const char *body,
                           size_t body_len, json_object **out, struct gb_kube_error *e);

/* Replaces an object (PUT).  With metadata.resourceVersion set in obj this
 * is an optimistic-concurrency write: a stale version gives GC_EIO with
 * e->http 409 (reason "Conflict"), which is what a Lease renewal needs. */
int gb_kube_client_update(struct gb_kube_client *c, const char *path, json_object *obj,
                          json_object **out, struct gb_kube_error *e);

#endif
