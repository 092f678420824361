/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_log: the service's structured logger.  One record is one line on stderr
 * (or a stream the caller chooses) holding a UTC timestamp, a level, a message
 * and key=value pairs, either as logfmt text or as one JSON object per line.
 * Records below the configured level are dropped before any formatting.  The
 * logger is process-wide and thread-safe: each record is formatted into a
 * bounded local buffer and written with a single locked fwrite, so lines from
 * different threads never interleave.  Values longer than GB_LOG_VALUE_MAX
 * bytes are cut and marked with "...", and a whole record never exceeds
 * GB_LOG_LINE_MAX bytes.  It owns serve's log.* keys (gb_log_opt_table
 * over struct gb_log_options).
 */
#ifndef GB_LOG_H
#define GB_LOG_H

#include <stdio.h>

#include "gb_opt.h"

#define GB_LOG_LINE_MAX 16384
#define GB_LOG_VALUE_MAX 4096

enum gb_log_level { GB_LOG_DEBUG = 0, GB_LOG_INFO, GB_LOG_WARN, GB_LOG_ERROR, GB_LOG_OFF };
enum gb_log_format { GB_LOG_TEXT = 0, GB_LOG_JSON };

/* serve's log.* keys (gb_log_opt_table); serve applies them with
 * gb_log_set_level and gb_log_set_format. */
struct gb_log_options {
  enum gb_log_level level;   /* log.level */
  enum gb_log_format format; /* log.format */
};
extern const struct gb_opt_table gb_log_opt_table;

/* Sets the lowest level that is written (default GB_LOG_INFO). */
void gb_log_set_level(enum gb_log_level level);

/* Chooses logfmt text (default) or JSON lines. */
void gb_log_set_format(enum gb_log_format format);

/* Writes one record.  The variadic part is pairs of `const char *` key and
 * value, ended by a single NULL key: gb_log(GB_LOG_INFO, "reconciled",
 * "namespace", ns, "name", name, NULL).  A NULL value is written as an empty
 * string.  Keys are reduced to [A-Za-z0-9_./-]; at most 32 pairs are used. */
void gb_log(enum gb_log_level level, const char *msg, ...) __attribute__((sentinel));

#endif
