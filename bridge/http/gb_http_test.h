/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http_test: for tests only.  Functions of gb_http that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_http's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_HTTP_TEST_H
#define GB_HTTP_TEST_H

#include "gb_http.h"

/* Number of requests being received or handled right now. */
unsigned gb_http_inflight(struct gb_http *srv);

/* A request header (case-insensitive name), or NULL.  Borrowed for the
 * handler call. */
const char *gb_http_request_header(const struct gb_http_request *req, const char *name);

#endif
