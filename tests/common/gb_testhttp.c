/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_testhttp: shared main() for the libcurl-based HTTP unit tests.
 */
#include "gb_testhttp.h"

#include <curl/curl.h>
#include <stdlib.h>

int gb_testhttp_main(Suite *s, enum gb_log_level quiet_level) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  gb_log_set_level(getenv("GB_TEST_LOG") ? GB_LOG_DEBUG : quiet_level);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  curl_global_cleanup();
  return failed ? 1 : 0;
}
