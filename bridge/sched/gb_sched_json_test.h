/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_sched_json_test: for tests only.  Functions of gb_sched_json that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_sched_json's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_SCHED_JSON_TEST_H
#define GB_SCHED_JSON_TEST_H

#include "gb_sched_json.h"

/* Length of the valid UTF-8 sequence at p (1 for ASCII), 0 when p does
 * not start one (p < end). */
int gb_sj_utf8_len(const unsigned char *p, const unsigned char *end);

#endif
