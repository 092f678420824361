/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_http with a client CA (tls_client_ca_file): only a client whose
 * certificate chains to that CA and may authenticate a TLS client is
 * served; no certificate, one from another CA, or one made for servers
 * only is answered 403, on every path, before anything about the routes
 * is told.  This is what keeps the scheduler endpoints to the scheduler
 * (sched.clientCA).  Certificates are made by the openssl CLI in a
 * temporary directory at test time; libcurl is the client.
 */
#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gb_http.h"
#include "gb_log.h"
#include "gb_testhttp.h"

extern char **environ;

static char dir[64];

static void path(char *out, size_t size, const char *name) {
  snprintf(out, size, "%s/%s", dir, name);
}

/* Runs a shell-free command line given as words; returns its status. */
static int run(char *const argv[]) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ck_assert_msg(rc == 0, "cannot run %s", argv[0]);
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void make_ca(const char *name) {
  char key[128], crt[128], subj[64];
  snprintf(subj, sizeof(subj), "/CN=%s", name);
  snprintf(key, sizeof(key), "%s/%s.key", dir, name);
  snprintf(crt, sizeof(crt), "%s/%s.crt", dir, name);
  char *argv[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                  "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", crt,
                  "-days", "1", "-subj", subj, NULL};
  ck_assert_int_eq(run(argv), 0);
}

/* A key and a certificate `name` signed by CA `ca` with the given
 * extensions file contents. */
static void make_leaf(const char *name, const char *ca, const char *ext) {
  char key[128], csr[128], crt[128], cakey[128], cacrt[128], extf[128], subj[64];
  snprintf(subj, sizeof(subj), "/CN=%s", name);
  snprintf(key, sizeof(key), "%s/%s.key", dir, name);
  snprintf(csr, sizeof(csr), "%s/%s.csr", dir, name);
  snprintf(crt, sizeof(crt), "%s/%s.crt", dir, name);
  snprintf(extf, sizeof(extf), "%s/%s.ext", dir, name);
  snprintf(cakey, sizeof(cakey), "%s/%s.key", dir, ca);
  snprintf(cacrt, sizeof(cacrt), "%s/%s.crt", dir, ca);
  FILE *f = fopen(extf, "w");
  ck_assert_ptr_nonnull(f);
  fputs(ext, f);
  fclose(f);
  char *req[] = {"openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", key, "-out", csr, "-subj", subj, NULL};
  ck_assert_int_eq(run(req), 0);
  char *sign[] = {"openssl", "x509", "-req", "-in", csr, "-CA", cacrt, "-CAkey", cakey,
                  "-CAcreateserial", "-days", "1", "-extfile", extf, "-out", crt, NULL};
  ck_assert_int_eq(run(sign), 0);
}

static void setup_certs(void) {
  snprintf(dir, sizeof(dir), "/tmp/gbmtls.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  make_ca("ca");
  make_ca("other-ca");
  make_leaf("server", "ca", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  make_leaf("scheduler", "ca", "extendedKeyUsage=clientAuth\n");
  make_leaf("tenant", "other-ca", "extendedKeyUsage=clientAuth\n");
  make_leaf("server-only", "ca", "extendedKeyUsage=serverAuth\n");
}

static void remove_certs(void) {
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "%s", dir);
  char *argv[] = {"rm", "-rf", cmd, NULL};
  run(argv);
}

static int ok_handler(void *ctx, const struct gb_http_request *req,
                      struct gb_http_response *resp) {
  return gb_http_response_printf(resp, 200, NULL, "ok\n");
}

static struct gb_http *start(const char *client_ca, struct gc_diags *d) {
  char crt[128], key[128];
  path(crt, sizeof(crt), "server.crt");
  path(key, sizeof(key), "server.key");
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.name = "sched";
  cfg.address = "127.0.0.1";
  cfg.tls_cert_file = crt;
  cfg.tls_key_file = key;
  cfg.tls_client_ca_file = client_ca;
  struct gb_http_route r = {"/volcano/predicate", 0, GB_HTTP_POST, ok_handler, NULL, 0};
  struct gb_http *srv = NULL;
  gb_http_start(&cfg, &r, 1, &srv, d);
  return srv;
}

static size_t sink(char *p, size_t sz, size_t n, void *ud) {
  (void)p;
  (void)ud;
  return sz * n;
}

/* POSTs to path as client `who` (NULL: no certificate); returns the HTTP
 * status, 0 when the exchange failed. */
static long post(unsigned port, const char *urlpath, const char *who) {
  char url[128], ca[128], crt[128], key[128];
  snprintf(url, sizeof(url), "https://127.0.0.1:%u%s", port, urlpath);
  path(ca, sizeof(ca), "ca.crt");
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CAINFO, ca);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{}");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  if (who) {
    snprintf(crt, sizeof(crt), "%s/%s.crt", dir, who);
    snprintf(key, sizeof(key), "%s/%s.key", dir, who);
    curl_easy_setopt(c, CURLOPT_SSLCERT, crt);
    curl_easy_setopt(c, CURLOPT_SSLKEY, key);
  }
  long status = 0;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return status;
}

START_TEST(only_verified_clients_are_served) {
  char ca[128];
  path(ca, sizeof(ca), "ca.crt");
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = start(ca, &d);
  ck_assert_msg(srv != NULL, "start: %s", d.n ? d.msgs[0] : "?");
  unsigned port = gb_http_port(srv);
  ck_assert_int_eq(post(port, "/volcano/predicate", "scheduler"), 200);
  ck_assert_int_eq(post(port, "/volcano/predicate", NULL), 403);
  ck_assert_int_eq(post(port, "/volcano/predicate", "tenant"), 403);
  ck_assert_int_eq(post(port, "/volcano/predicate", "server-only"), 403);
  /* Not even which paths exist is told. */
  ck_assert_int_eq(post(port, "/no/such/path", NULL), 403);
  ck_assert_int_eq(post(port, "/no/such/path", "scheduler"), 404);
  gb_http_stop(srv);
  /* Without a client CA the same clients are all served. */
  srv = start(NULL, &d);
  ck_assert_ptr_nonnull(srv);
  ck_assert_int_eq(post(gb_http_port(srv), "/volcano/predicate", NULL), 200);
  gb_http_stop(srv);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(bad_client_ca_refused_at_start) {
  struct gc_diags d;
  gc_diags_init(&d);
  char junk[128];
  path(junk, sizeof(junk), "scheduler.ext"); /* text, not a certificate */
  ck_assert_ptr_null(start(junk, &d));
  ck_assert_int_ge(d.n, 1);
  ck_assert_msg(strstr(d.msgs[d.n - 1], "holds no PEM certificate"), "%s", d.msgs[d.n - 1]);
  gc_diags_destroy(&d);
  gc_diags_init(&d);
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  cfg.tls_client_ca_file = junk;
  struct gb_http_route r = {"/x", 0, GB_HTTP_GET, ok_handler, NULL, 0};
  struct gb_http *srv = NULL;
  ck_assert_int_eq(gb_http_start(&cfg, &r, 1, &srv, &d), GC_EINVAL);
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "a client CA needs TLS"));
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("http_mtls");
  TCase *tc = tcase_create("mtls");
  tcase_set_timeout(tc, 60);
  tcase_add_unchecked_fixture(tc, setup_certs, remove_certs);
  tcase_add_test(tc, only_verified_clients_are_served);
  tcase_add_test(tc, bad_client_ca_refused_at_start);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return gb_testhttp_main(suite(), GB_LOG_ERROR); }
