/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_tts_test: for tests only.  Functions of gb_tts that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_tts's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_TTS_TEST_H
#define GB_TTS_TEST_H

#include "gb_tts.h"

/* Number of PodGroups remembered. */
size_t gb_tts_size(struct gb_tts *t);

#endif
