/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_rpc_options: the grpc.* table loads alone through the
 * generic loader (its defaults, its check), and gb_rpc_options_apply turns
 * every duration into the milliseconds the server takes without turning a
 * short value into 0, which the server reads as its default (grace 5 s,
 * handshake 10 s) or as off (self-check).
 */
#include <check.h>
#include <string.h>

#include "gb_options.h"
#include "gb_rpc_options.h"

struct fx {
  struct gb_rpc_options o;
  struct gb_options_part part;
  struct gb_options set;
};

static void fx_init(struct fx *f) {
  memset(f, 0, sizeof(*f));
  f->part = (struct gb_options_part){&gb_rpc_options_table, &f->o};
  ck_assert_int_eq(gb_options_init(&f->set, &f->part, 1, NULL), 0);
}

START_TEST(test_defaults_apply) {
  struct fx f;
  fx_init(&f);
  struct gb_rpc_config c;
  gb_rpc_options_apply(&f.o, &c);
  ck_assert_str_eq(c.addr, "");
  ck_assert_ptr_null(c.tls_cert_file);
  ck_assert_int_eq(c.threads, 0);
  ck_assert_uint_eq(c.max_message_bytes, 33554432);
  ck_assert_int_eq(c.grace_ms, 5000);
  ck_assert_int_eq(c.handshake_timeout_ms, 10000);
  ck_assert_int_eq(c.self_check_ms, 10000);
  ck_assert_uint_eq(c.memory_budget, (size_t)640 << 20);
  gb_options_destroy(&f.set);
}
END_TEST

/* 400us is honoured as the 1 ms the server can keep, 0s stays 0 (off, or
 * for the grace period the 1 ms that means "none"). */
START_TEST(test_short_durations) {
  struct fx f;
  fx_init(&f);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_options_set(&f.set, "grpc.selfCheckInterval", "400us", "--set", &d), 0);
  ck_assert_int_eq(gb_options_set(&f.set, "grpc.gracePeriod", "0.0004", "--set", &d), 0);
  struct gb_rpc_config c;
  gb_rpc_options_apply(&f.o, &c);
  ck_assert_int_eq(c.self_check_ms, 1);
  ck_assert_int_eq(c.grace_ms, 1);
  ck_assert_int_eq(gb_options_set(&f.set, "grpc.selfCheckInterval", "0s", "--set", &d), 0);
  ck_assert_int_eq(gb_options_set(&f.set, "grpc.gracePeriod", "0", "--set", &d), 0);
  gb_rpc_options_apply(&f.o, &c);
  ck_assert_int_eq(c.self_check_ms, 0);
  ck_assert_int_eq(c.grace_ms, 1);
  ck_assert_int_eq(gb_options_set(&f.set, "grpc.gracePeriod", "1.5s", "--set", &d), 0);
  gb_rpc_options_apply(&f.o, &c);
  ck_assert_int_eq(c.grace_ms, 1500);
  gc_diags_destroy(&d);
  gb_options_destroy(&f.set);
}
END_TEST

START_TEST(test_check) {
  struct fx f;
  fx_init(&f);
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_options_set(&f.set, "grpc.clientCA", "/ca.pem", "--grpc-client-ca", &d), 0);
  ck_assert_int_eq(gb_options_set(&f.set, "grpc.address", "localhost", "--set", &d), 0);
  ck_assert_int_eq(gb_options_check(&f.set, &d), GC_EINVAL);
  ck_assert_uint_eq(d.n, 2);
  ck_assert_str_eq(d.msgs[0], "--set: grpc.address: \"localhost\" is not HOST:PORT (numeric host; "
                              "[V6]:PORT for IPv6)");
  ck_assert_str_eq(d.msgs[1], "--grpc-client-ca: grpc.clientCA needs grpc.tlsCert and "
                              "grpc.tlsKey");
  gc_diags_destroy(&d);
  gb_options_destroy(&f.set);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rpc_options");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_defaults_apply);
  tcase_add_test(tc, test_short_durations);
  tcase_add_test(tc, test_check);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
