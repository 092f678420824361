/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for rpc/gb_rpc.h: the one GC -> gRPC status map every service
 * handler uses (each GC_E* code, and the caller's fallback for the rest), and
 * the status names.
 */
#include <check.h>

#include "gb_rpc.h"

START_TEST(map_each_code) {
  /* Codes with a meaning of their own keep it whatever the fallback. */
  for (int i = 0; i < 2; i++) {
    enum gb_rpc_code other = i ? GB_RPC_INTERNAL : GB_RPC_INVALID_ARGUMENT;
    ck_assert_int_eq(gb_rpc_code_of(GC_ENOMEM, other), GB_RPC_RESOURCE_EXHAUSTED);
    ck_assert_int_eq(gb_rpc_code_of(GC_ENOTFOUND, other), GB_RPC_NOT_FOUND);
    /* The rest is the caller's: the request's fault or ours. */
    ck_assert_int_eq(gb_rpc_code_of(GC_EINVAL, other), other);
    ck_assert_int_eq(gb_rpc_code_of(GC_ERANGE, other), other);
    ck_assert_int_eq(gb_rpc_code_of(GC_ELIMIT, other), other);
    ck_assert_int_eq(gb_rpc_code_of(GC_EIO, other), other);
    ck_assert_int_eq(gb_rpc_code_of(GC_EUSAGE, other), other);
    ck_assert_int_eq(gb_rpc_code_of(-99, other), other);
    /* 0 with diagnostics is still a failure: the fallback, never OK. */
    ck_assert_int_eq(gb_rpc_code_of(0, other), other);
  }
}
END_TEST

START_TEST(names) {
  ck_assert_str_eq(gb_rpc_code_name(GB_RPC_OK), "OK");
  ck_assert_str_eq(gb_rpc_code_name(GB_RPC_NOT_FOUND), "NOT_FOUND");
  ck_assert_str_eq(gb_rpc_code_name(GB_RPC_UNAUTHENTICATED), "UNAUTHENTICATED");
  ck_assert_str_eq(gb_rpc_code_name(17), "UNKNOWN_CODE");
  ck_assert_str_eq(GB_RPC_SERVICE_HEALTH, "grpc.health.v1.Health");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("rpc");
  TCase *tc = tcase_create("rpc");
  tcase_add_test(tc, map_each_code);
  tcase_add_test(tc, names);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
