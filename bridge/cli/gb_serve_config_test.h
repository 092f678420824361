/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_serve_config_test: for tests only.  Functions of gb_serve_config that no product code calls
 * outside its own .c but the tests drive directly; product code must not include
 * this header except gb_serve_config's own .c files (so the compiler checks the
 * definitions against these declarations).  tests/style/exports.py skips what is
 * declared here when it looks for unused exports.
 */
#ifndef GB_SERVE_CONFIG_TEST_H
#define GB_SERVE_CONFIG_TEST_H

#include "gb_serve_config.h"

/* Reads a config file (or bytes named name) over the current values, as
 * gb_options_load_file. */
int gb_serve_config_load_buffer(struct gb_serve_config *c, const char *name, const char *buf,
                                size_t len, struct gc_diags *d);

/* Sets one key from text, as --set KEY=VALUE does.  Returns 0, GC_EINVAL,
 * GC_ENOMEM or GC_ENOTFOUND (no such key; the nearest is suggested). */
int gb_serve_config_set(struct gb_serve_config *c, const char *key, const char *value,
                        struct gc_diags *d);

#endif
