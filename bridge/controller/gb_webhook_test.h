/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_webhook_test: for tests only.  Functions of gb_webhook that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_webhook's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_WEBHOOK_TEST_H
#define GB_WEBHOOK_TEST_H

#include "gb_webhook.h"

/* Reviews one request body.  Sets *status, *out (malloc'd, caller frees),
 * *out_len and *content_type (static).  The answers:
 *  - 200 with an AdmissionReview whose response carries the request's uid:
 *    for every review whose uid could be read.  A pod that is not ours, not
 *    a Pod, not a CREATE, or that the lookup says to leave alone is allowed
 *    with no patch; a review whose object cannot be understood is allowed
 *    with a warning (the API server shows warnings to the client); a failing
 *    lookup denies (code 500 in response.status) unless allow_on_error.
 *  - 400 text/plain when the body is not JSON, not an admission.k8s.io/v1
 *    AdmissionReview, or has no request or no request.uid: without the uid no
 *    valid AdmissionReview answer exists, and Kubernetes treats any non-200
 *    answer as a webhook failure and applies the configuration's
 *    failurePolicy.
 *  - 415 text/plain when the content type is not application/json.
 *  - 413 text/plain when the body is over max_body.
 * Returns 0, or GC_ENOMEM (nothing is set). */
int gb_webhook_review(struct gb_webhook *wh, const char *content_type, const char *body,
                      size_t len, int *status, char **out, size_t *out_len,
                      const char **content_type_out);

/* Escapes a JSON object key as an RFC 6901 JSON Pointer token ("~" -> "~0",
 * "/" -> "~1").  Returns 0, or GC_ELIMIT when `size` is too small. */
int gb_webhook_json_pointer_escape(const char *key, char *buf, size_t size);

#endif
