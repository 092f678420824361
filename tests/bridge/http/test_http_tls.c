/* SPDX-License-Identifier: Apache-2.0
 *
 * The admission webhook over HTTPS, as the API server calls it: a throwaway
 * certificate and key made by the openssl CLI at test time (in a temporary
 * directory, removed afterwards; no key is ever committed), gb_http with TLS,
 * the gb_webhook route, and libcurl verifying the server against that
 * certificate.  Covers a real review, malformed and oversized ones, a wrong
 * content type, plain HTTP against the TLS port, an untrusted client,
 * concurrent TLS requests, bad key files and a clean stop.
 */
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gb_http.h"
#include "gb_log.h"
#include "gb_testhttp.h"
#include "gb_webhook.h"
#include "http_client.h"

#define DATA GB_SRC_DIR "/tests/bridge/data/admission/"

extern char **environ;

static char dir[64];
static char cert[128], key[128], junk[128], other_key[128];

/* Runs argv (no shell), output to /dev/null; returns the exit status. */
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

static void make_cert(void) {
  snprintf(dir, sizeof(dir), "/tmp/gbtls.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cert, sizeof(cert), "%s/tls.crt", dir);
  snprintf(key, sizeof(key), "%s/tls.key", dir);
  snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
  snprintf(other_key, sizeof(other_key), "%s/other.key", dir);
  char *argv[] = {"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                  "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                  "-days", "1", "-subj", "/CN=gangbridge-webhook", "-addext",
                  "subjectAltName=IP:127.0.0.1,DNS:localhost", NULL};
  ck_assert_int_eq(run(argv), 0);
  char *gen[] = {"openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                 "ec_paramgen_curve:prime256v1", "-out", other_key, NULL};
  ck_assert_int_eq(run(gen), 0);
  FILE *f = fopen(junk, "w");
  ck_assert_ptr_nonnull(f);
  fputs("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n", f);
  fclose(f);
}

static void remove_cert(void) {
  unlink(cert);
  unlink(key);
  unlink(junk);
  unlink(other_key);
  rmdir(dir);
}

static int lookup(void *ctx, const char *ns, const char *jobset, const char *rjob,
                  struct gb_webhook_decision *out, char *reason, size_t size) {
  if (strcmp(jobset, "mnist"))
    return 0;
  out->managed = 1;
  out->bind = 1;
  out->backend = gc_backend_by_name("coscheduling");
  snprintf(out->group, sizeof(out->group), "mnist");
  return 0;
}

static int ping(void *ctx, const struct gb_http_request *req, struct gb_http_response *resp) {
  return gb_http_response_printf(resp, 200, NULL, "ok");
}

struct tls_server {
  struct gb_webhook *wh;
  struct gb_http *srv;
  char url[128];
};

static void up(struct tls_server *t, size_t max_body, unsigned threads) {
  struct gb_webhook_config wc = {lookup, NULL, 0, max_body, NULL, 0};
  ck_assert_int_eq(gb_webhook_new(&wc, &t->wh), 0);
  struct gb_http_route routes[] = {gb_webhook_route(t->wh, "/mutate-pods"),
                                   {"/healthz", 0, GB_HTTP_GET, ping, NULL, 0}};
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.name = "webhook";
  cfg.address = "127.0.0.1";
  cfg.tls_cert_file = cert;
  cfg.tls_key_file = key;
  cfg.threads = threads;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_http_start(&cfg, routes, 2, &t->srv, &d);
  ck_assert_msg(rc == 0, "TLS start: %d %s", rc, d.n ? d.msgs[0] : "");
  gc_diags_destroy(&d);
  snprintf(t->url, sizeof(t->url), "https://127.0.0.1:%u/mutate-pods", gb_http_port(t->srv));
}

static void down(struct tls_server *t) {
  gb_http_stop(t->srv);
  gb_webhook_free(t->wh);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return b;
}

START_TEST(test_review_over_tls) {
  struct tls_server t;
  up(&t, 0, 0);
  size_t len;
  char *body = slurp(DATA "cosched-create.json", &len);
  struct hres r;
  hreq_full("POST", t.url, "application/json", body, len, 0, cert, &r);
  ck_assert_msg(r.cc == CURLE_OK, "curl: %s", curl_easy_strerror(r.cc));
  ck_assert_int_eq(r.status, 200);
  ck_assert_str_eq(r.ctype, "application/json");
  ck_assert_ptr_nonnull(strstr(r.body, "\"uid\":\"8f6c1bd4-5a1e-4f0e-b1b2-3c4d5e6f7a80\""));
  ck_assert_ptr_nonnull(strstr(r.body, "\"allowed\":true"));
  ck_assert_ptr_nonnull(strstr(r.body, "\"patchType\":\"JSONPatch\""));
  hres_free(&r);

  /* Malformed, wrong type, wrong method, unknown path: answered, server survives. */
  hreq_full("POST", t.url, "application/json", "not json", 8, 0, cert, &r);
  ck_assert_int_eq(r.status, 400);
  hres_free(&r);
  hreq_full("POST", t.url, "text/plain", body, len, 0, cert, &r);
  ck_assert_int_eq(r.status, 415);
  hres_free(&r);
  hreq_full("GET", t.url, NULL, NULL, 0, 0, cert, &r);
  ck_assert_int_eq(r.status, 405);
  ck_assert_str_eq(r.allow, "POST");
  hres_free(&r);
  char u[160];
  snprintf(u, sizeof(u), "https://127.0.0.1:%u/validate", gb_http_port(t.srv));
  hreq_full("POST", u, "application/json", body, len, 0, cert, &r);
  ck_assert_int_eq(r.status, 404);
  hres_free(&r);

  /* A client that does not trust the certificate refuses the server. */
  hreq_full("POST", t.url, "application/json", body, len, 0, "/dev/null", &r);
  ck_assert_int_ne(r.cc, CURLE_OK);
  hres_free(&r);
  /* Plain HTTP against the TLS port gets no HTTP answer. */
  snprintf(u, sizeof(u), "http://127.0.0.1:%u/healthz", gb_http_port(t.srv));
  hreq("GET", u, NULL, &r);
  ck_assert(r.cc != CURLE_OK || r.status != 200);
  hres_free(&r);
  /* Still serving. */
  snprintf(u, sizeof(u), "https://127.0.0.1:%u/healthz", gb_http_port(t.srv));
  hreq_full("GET", u, NULL, NULL, 0, 0, cert, &r);
  ck_assert_int_eq(r.status, 200);
  hres_free(&r);
  free(body);
  down(&t);
}
END_TEST

START_TEST(test_huge_review_over_tls) {
  struct tls_server t;
  up(&t, 64 * 1024, 0);
  size_t big = 200 * 1024;
  char *huge = malloc(big);
  memset(huge, ' ', big);
  huge[0] = '{';
  huge[big - 1] = '}';
  struct hres r;
  hreq_full("POST", t.url, "application/json", huge, big, 0, cert, &r);
  ck_assert_int_eq(r.status, 413);
  hres_free(&r);
  hreq_full("POST", t.url, "application/json", NULL, 0, big, cert, &r); /* chunked */
  ck_assert(r.status == 413 || r.cc != CURLE_OK);
  hres_free(&r);
  free(huge);
  down(&t);
}
END_TEST

#define TLS_CLIENTS 4
#define TLS_PER_CLIENT 10

struct tls_client {
  const char *url;
  const char *body;
  size_t len;
  int ok;
};

static void *tls_client(void *arg) {
  struct tls_client *c = arg;
  for (int i = 0; i < TLS_PER_CLIENT; i++) {
    struct hres r;
    hreq_full("POST", c->url, "application/json", c->body, c->len, 0, cert, &r);
    if (r.cc == CURLE_OK && r.status == 200 && strstr(r.body, "\"patch\":"))
      c->ok++;
    hres_free(&r);
  }
  return NULL;
}

START_TEST(test_concurrent_tls) {
  struct tls_server t;
  up(&t, 0, 2);
  size_t len;
  char *body = slurp(DATA "cosched-create.json", &len);
  pthread_t th[TLS_CLIENTS];
  struct tls_client c[TLS_CLIENTS];
  for (int i = 0; i < TLS_CLIENTS; i++) {
    c[i] = (struct tls_client){t.url, body, len, 0};
    ck_assert_int_eq(pthread_create(&th[i], NULL, tls_client, &c[i]), 0);
  }
  for (int i = 0; i < TLS_CLIENTS; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(c[i].ok, TLS_PER_CLIENT);
  }
  free(body);
  down(&t);
}
END_TEST

START_TEST(test_bad_tls_files) {
  static const struct gb_http_route routes[] = {{"/healthz", 0, GB_HTTP_GET, ping, NULL, 0}};
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.address = "127.0.0.1";
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  cfg.tls_cert_file = cert;
  cfg.tls_key_file = junk;
  ck_assert_int_eq(gb_http_start(&cfg, routes, 1, &srv, &d), GC_EINVAL);
  ck_assert_ptr_null(srv);
  ck_assert_ptr_nonnull(strstr(d.msgs[d.n - 1], junk));
  cfg.tls_key_file = "/dev/null"; /* empty */
  ck_assert_int_eq(gb_http_start(&cfg, routes, 1, &srv, &d), GC_EINVAL);
  ck_assert_ptr_nonnull(strstr(d.msgs[d.n - 1], "/dev/null"));
  cfg.tls_cert_file = key; /* a key where the certificate should be */
  cfg.tls_key_file = key;
  ck_assert_int_eq(gb_http_start(&cfg, routes, 1, &srv, &d), GC_EINVAL);
  ck_assert_ptr_nonnull(strstr(d.msgs[d.n - 1], "cannot use certificate"));
  gc_diags_destroy(&d);
}
END_TEST

/* A key that is valid but belongs to another certificate is named as
 * such, with both files, and not reported as a bind failure. */
START_TEST(test_key_not_matching_certificate) {
  static const struct gb_http_route routes[] = {{"/healthz", 0, GB_HTTP_GET, ping, NULL, 0}};
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.name = "webhook";
  cfg.address = "127.0.0.1";
  cfg.tls_cert_file = cert;
  cfg.tls_key_file = other_key;
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  ck_assert_int_eq(gb_http_start(&cfg, routes, 1, &srv, &d), GC_EINVAL);
  ck_assert_ptr_null(srv);
  ck_assert_uint_eq(d.n, 1);
  ck_assert_msg(strstr(d.msgs[0], "does not match") && strstr(d.msgs[0], cert) &&
                    strstr(d.msgs[0], other_key) && !strstr(d.msgs[0], "in use"),
                "message: %s", d.msgs[0]);
  gc_diags_destroy(&d);
}
END_TEST

/* Sockets that connect and never send a ClientHello are closed at the
 * header deadline, although the idle timeout is much longer; with one
 * thread and with the webhook's pool of four. */
START_TEST(test_silent_tls_sockets_closed) {
  static const struct gb_http_route routes[] = {{"/healthz", 0, GB_HTTP_GET, ping, NULL, 0}};
  struct gb_http_config cfg;
  gb_http_config_init(&cfg);
  cfg.threads = _i ? 4 : 1;
  cfg.address = "127.0.0.1";
  cfg.tls_cert_file = cert;
  cfg.tls_key_file = key;
  cfg.idle_timeout_s = 30;
  cfg.header_timeout_s = 1;
  struct gc_diags d;
  gc_diags_init(&d);
  struct gb_http *srv = NULL;
  ck_assert_int_eq(gb_http_start(&cfg, routes, 1, &srv, &d), 0);
  gc_diags_destroy(&d);
  int fds[3];
  for (int i = 0; i < 3; i++)
    fds[i] = raw_connect(gb_http_port(srv));
  for (int i = 0; i < 3; i++) {
    char buf[64];
    int closed = 0;
    raw_read_all(fds[i], buf, sizeof(buf), 8000, &closed);
    ck_assert_msg(closed, "silent TLS socket %d still open after 8 s", i);
    close(fds[i]);
  }
  gb_http_stop(srv);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("http_tls");
  TCase *tc = tcase_create("tls");
  tcase_set_timeout(tc, 60);
  tcase_add_unchecked_fixture(tc, make_cert, remove_cert);
  tcase_add_test(tc, test_review_over_tls);
  tcase_add_test(tc, test_huge_review_over_tls);
  tcase_add_test(tc, test_concurrent_tls);
  tcase_add_test(tc, test_bad_tls_files);
  tcase_add_test(tc, test_key_not_matching_certificate);
  tcase_add_loop_test(tc, test_silent_tls_sockets_closed, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return gb_testhttp_main(suite(), GB_LOG_OFF);
}
