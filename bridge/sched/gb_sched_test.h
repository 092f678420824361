/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_test: for tests only.  Functions of gb_sched that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_sched's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_SCHED_TEST_H
#define GB_SCHED_TEST_H

#include "gb_sched.h"

/* Handles one POST to path as the server would (unit tests, benchmarks).
 * resp starts as {200, NULL, 0, NULL}; the caller frees resp->body. */
int gb_sched_handle(struct gb_sched *s, const char *path, const char *body, size_t len,
                    struct gb_http_response *resp);

void gb_sched_stats(struct gb_sched *s, struct gb_sched_stats *out);

/* Tasks of gang key allocated to node in the current session. */
int64_t gb_sched_session_count(struct gb_sched *s, const char *key, const char *node);

#endif
