/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_testhttp: the main() of the unit tests that talk HTTP through libcurl
 * (tests/bridge/http/test_http_*.c).  It brackets the run with libcurl's global
 * init and cleanup and sets the log level the same way for each of them.
 */
#ifndef GB_TESTHTTP_H
#define GB_TESTHTTP_H

#include <check.h>

#include "gb_log.h"

/* Runs suite s (the runner takes ownership) with libcurl initialised.  The
 * service log is at quiet_level, or at debug when GB_TEST_LOG is set in the
 * environment.  Returns the process exit status: 0 when every test passed,
 * 1 otherwise. */
int gb_testhttp_main(Suite *s, enum gb_log_level quiet_level);

#endif
