/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_log_test: for tests only.  Functions of gb_log that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_log's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_LOG_TEST_H
#define GB_LOG_TEST_H

#include "gb_log.h"

/* Sends records to `stream` (borrowed until the next call; NULL means stderr). */
void gb_log_set_stream(FILE *stream);

/* Parses "debug", "info", "warn"/"warning", "error" or "off" (any case).
 * Returns 0, or GC_EINVAL for anything else (*out untouched). */
int gb_log_level_parse(const char *s, enum gb_log_level *out);

/* Parses "text" or "json".  Returns 0 or GC_EINVAL. */
int gb_log_format_parse(const char *s, enum gb_log_format *out);

/* Static lowercase name of a level ("debug", "info", "warn", "error", "off"). */
const char *gb_log_level_name(enum gb_log_level level);

/* Non-zero when a record at `level` would be written. */
int gb_log_enabled(enum gb_log_level level);

/* As gb_log with the pairs in an array: kv[0] key, kv[1] value, ... for
 * `n_pairs` pairs. */
void gb_log_kv(enum gb_log_level level, const char *msg, const char *const *kv, size_t n_pairs);

#endif
