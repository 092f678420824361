/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_jscan_test: for tests only.  Functions of gb_jscan that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_jscan's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_JSCAN_TEST_H
#define GB_JSCAN_TEST_H

#include "gb_jscan.h"

/* Length of the valid UTF-8 sequence at p (1 for ASCII), 0 when p does
 * not start one (p < end). */
int gb_sj_utf8_len(const unsigned char *p, const unsigned char *end);

#endif
