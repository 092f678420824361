/* SPDX-License-Identifier: Apache-2.0
 *
 * Unit tests for gb_kube_config: kubeconfig variants, error messages naming
 * file, position and field, KUBECONFIG lists, in-cluster environment and a
 * rotating service-account token.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gb_kube_config.h"
#include "gb_kube_config_test.h"

static char tmpdir[256];

static void setup(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/gbkc.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void) {
  char cmd[300];
  /* The directory only holds files this test wrote. */
  snprintf(cmd, sizeof(cmd), "%s", tmpdir);
  const char *names[] = {"kc", "tok", "token", "ca.crt", "namespace", "c.pem", "k.pem", "kc2"};
  for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
    char p[300];
    snprintf(p, sizeof(p), "%s/%s", tmpdir, names[i]);
    unlink(p);
  }
  rmdir(cmd);
}

static void write_file(const char *name, const char *text) {
  char p[300];
  snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static const char *path_of(const char *name) {
  static char p[300];
  snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
  return p;
}

/* Loads text as kubeconfig "kc" in tmpdir; returns rc, fills *cfg and diags. */
static int load(const char *text, const char *ctx, struct gb_kube_config **cfg,
                struct gc_diags *d) {
  write_file("kc", text);
  return gb_kube_config_load_file(path_of("kc"), ctx, cfg, d);
}

static int diag_has(const struct gc_diags *d, const char *needle) {
  for (size_t i = 0; i < d->n; i++)
    if (strstr(d->msgs[i], needle))
      return 1;
  return 0;
}

#define BASE                                                                                  \
  "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"                                    \
  "clusters:\n- name: c1\n  cluster:\n    server: https://10.0.0.1:6443/\n"                 \
  "    certificate-authority-data: Q0EtUEVN\n"                                                \
  "- name: c2\n  cluster:\n    server: http://127.0.0.1:8080\n"                              \
  "    insecure-skip-tls-verify: true\n"                                                      \
  "contexts:\n- name: dev\n  context:\n    cluster: c1\n    user: u1\n    namespace: team\n" \
  "- name: other\n  context:\n    cluster: c2\n    user: u2\n"

START_TEST(token_and_inline_ca) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = load(BASE "users:\n- name: u1\n  user:\n    token: abc123\n- name: u2\n  user: {}\n",
                NULL, &c, &d);
  ck_assert_msg(rc == 0, "rc=%d %s", rc, d.n ? d.msgs[0] : "");
  ck_assert_str_eq(c->server, "https://10.0.0.1:6443");
  ck_assert_str_eq(c->context, "dev");
  ck_assert_str_eq(c->namespace, "team");
  ck_assert_uint_eq(c->ca_len, 6);
  ck_assert_mem_eq(c->ca_data, "CA-PEM", 6);
  char tok[64];
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "abc123");
  ck_assert_int_eq(c->insecure_skip_tls_verify, 0);
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(other_context_insecure_no_user_auth) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = load(BASE "users:\n- name: u1\n  user:\n    token: abc\n- name: u2\n  user: {}\n",
                "other", &c, &d);
  ck_assert_msg(rc == 0, "rc=%d %s", rc, d.n ? d.msgs[0] : "");
  ck_assert_str_eq(c->server, "http://127.0.0.1:8080");
  ck_assert_str_eq(c->namespace, "default");
  ck_assert_int_eq(c->insecure_skip_tls_verify, 1);
  char tok[64];
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "");
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(token_file_relative_and_client_cert_files) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  write_file("tok", "file-token\n");
  int rc = load(BASE "users:\n- name: u1\n  user:\n    tokenFile: tok\n"
                     "    client-certificate: c.pem\n    client-key: /abs/k.pem\n",
                NULL, &c, &d);
  ck_assert_msg(rc == 0, "rc=%d %s", rc, d.n ? d.msgs[0] : "");
  char want[300];
  snprintf(want, sizeof(want), "%s/tok", tmpdir);
  ck_assert_str_eq(c->token_file, want);
  snprintf(want, sizeof(want), "%s/c.pem", tmpdir);
  ck_assert_str_eq(c->cert_file, want);
  ck_assert_str_eq(c->key_file, "/abs/k.pem");
  char tok[64];
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "file-token");
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(token_file_wins_over_token) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = load(BASE "users:\n- name: u1\n  user:\n    token: static\n    tokenFile: tok\n",
                NULL, &c, &d);
  ck_assert_msg(rc == 0, "rc=%d %s", rc, d.n ? d.msgs[0] : "");
  char tok[64];
  /* The file does not exist yet: the static token is used. */
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "static");
  ck_assert_uint_eq(d.errors, 0);
  ck_assert_uint_eq(d.n, 1); /* a warning naming the file */
  ck_assert_ptr_nonnull(strstr(d.msgs[0], "using the static token"));
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), NULL), 0); /* NULL diags ok */
  write_file("tok", "from-file\n");
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "from-file");
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(inline_client_cert_data) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  /* "CERT" and "KEY!" in base64, the second one wrapped over two lines. */
  int rc = load(BASE "users:\n- name: u1\n  user:\n    client-certificate-data: Q0VSVA==\n"
                     "    client-key-data: |\n      S0VZ\n      IQ==\n",
                NULL, &c, &d);
  ck_assert_msg(rc == 0, "rc=%d %s", rc, d.n ? d.msgs[0] : "");
  ck_assert_uint_eq(c->cert_len, 4);
  ck_assert_mem_eq(c->cert_data, "CERT", 4);
  ck_assert_uint_eq(c->key_len, 4);
  ck_assert_mem_eq(c->key_data, "KEY!", 4);
  ck_assert_ptr_null(c->cert_file);
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
}
END_TEST

/* Each bad kubeconfig must fail with a message naming file, line, col and field. */
struct bad_case {
  const char *users;
  const char *ctx;
  const char *needle;
  const char *pos; /* ":line:col:" expected in the message, or NULL */
};

START_TEST(bad_inputs_name_file_and_field) {
  static const struct bad_case cases[] = {
      {"users:\n- name: u1\n  user:\n    client-key-data: '***'\n", NULL,
       "users[0].user.client-key-data: not valid base64", ":26:22:"},
      {"users:\n- name: u1\n  user:\n    client-certificate: c.pem\n", NULL,
       "users[0].user.client-key: missing", ":26:5:"},
      {"users:\n- name: u1\n  user:\n    exec: {command: x}\n", NULL,
       "users[0].user.exec: not supported", NULL},
      {"users:\n- name: u1\n  user:\n    token: [1]\n", NULL, "users[0].user.token: must be a string",
       NULL},
      {"users: []\n", NULL, "user \"u1\" not found in users", NULL},
      {"users: []\n", "nope", "--context: context \"nope\" not found in contexts", NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    struct gb_kube_config *c = (void *)1;
    struct gc_diags d;
    gc_diags_init(&d);
    char text[2048];
    snprintf(text, sizeof(text), "%s%s", BASE, cases[i].users);
    int rc = load(text, cases[i].ctx, &c, &d);
    ck_assert_msg(rc == GC_EINVAL, "case %zu rc=%d", i, rc);
    ck_assert_ptr_null(c);
    ck_assert_msg(diag_has(&d, cases[i].needle), "case %zu: %s", i, d.n ? d.msgs[0] : "(none)");
    ck_assert_msg(diag_has(&d, path_of("kc")), "case %zu lacks file: %s", i, d.msgs[0]);
    if (cases[i].pos)
      ck_assert_msg(diag_has(&d, cases[i].pos), "case %zu lacks %s: %s", i, cases[i].pos,
                    d.msgs[0]);
    gc_diags_destroy(&d);
  }
}
END_TEST

START_TEST(bad_structure) {
  static const char *texts[] = {
      "- just\n- a list\n",
      "current-context: x\ncontexts: [{name: x, context: {user: u}}]\n",
      "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {}}]\n",
      "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {server: 'ftp://x'}}]\n",
      "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {server: 'https://'}}]\n",
      "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {server: 'http:///api'}}]\n",
      "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: maybe}}]\n",
      "apiVersion: v1\nkind: Config\n",
      "key: [unclosed\n",
      "",
  };
  static const char *needles[] = {":1:1: document is not an object", "contexts[0].context.cluster: missing",
                                  "clusters[0].cluster.server: missing",
                                  "must start with https://", "server: names no host",
                                  "server: names no host", "insecure-skip-tls-verify: must be",
                                  "current-context: not set", ":2:1:", "empty kubeconfig"};
  for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
    struct gb_kube_config *c = NULL;
    struct gc_diags d;
    gc_diags_init(&d);
    int rc = load(texts[i], NULL, &c, &d);
    ck_assert_msg(rc == GC_EINVAL, "case %zu rc=%d", i, rc);
    ck_assert_msg(d.n >= 1 && diag_has(&d, needles[i]) && diag_has(&d, path_of("kc")),
                  "case %zu: %s", i, d.n ? d.msgs[0] : "(none)");
    gc_diags_destroy(&d);
  }
}
END_TEST

/* Scalars are typed as sigs.k8s.io/yaml types them for client-go's Config
 * structs: a string field rejects an unquoted number or bool, the bool field
 * takes YAML bools only (including YAML 1.1's yes/on), and quoting makes
 * text.  Each error names file:line:col and the field. */
struct typed_case {
  const char *cluster_extra; /* appended to the c2 cluster */
  const char *ns;            /* namespace value for context "other" */
  const char *needle;        /* NULL: must load */
  const char *pos;
};

START_TEST(typed_scalars_as_client_go) {
  static const struct typed_case cases[] = {
      {"", "123", "contexts[1].context.namespace: must be a string; 123 is read as an integer "
                  "(quote it)", ":18:16:"},
      {"", "'123'", NULL, NULL},
      {"", "true", "namespace: must be a string; true is read as a bool", ":18:16:"},
      {"", "1.5", "namespace: must be a string; 1.5 is read as a number", NULL},
      {"    insecure-skip-tls-verify: \"true\"\n", "x",
       "clusters[1].cluster.insecure-skip-tls-verify: must be true or false (unquoted", ":11:31:"},
      {"    insecure-skip-tls-verify: 1\n", "x", "insecure-skip-tls-verify: must be true or false",
       NULL},
      {"    insecure-skip-tls-verify: yes\n", "x", NULL, NULL},
      {"    insecure-skip-tls-verify: False\n", "x", NULL, NULL},
      {"    insecure-skip-tls-verify: ~\n", "x", NULL, NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    char text[2048];
    /* BASE's c2 cluster already says insecure-skip-tls-verify: true; the
     * cases that set it use a copy of BASE without that line. */
    snprintf(text, sizeof(text),
             "apiVersion: v1\nkind: Config\ncurrent-context: other\n"
             "clusters:\n- name: c1\n  cluster:\n    server: https://10.0.0.1:6443/\n"
             "- name: c2\n  cluster:\n    server: http://127.0.0.1:8080\n%s"
             "contexts:\n- name: dev\n  context:\n    cluster: c1\n"
             "- name: other\n  context:\n    cluster: c2\n    namespace: %s\n",
             cases[i].cluster_extra[0] ? cases[i].cluster_extra : "", cases[i].ns);
    struct gb_kube_config *c = NULL;
    struct gc_diags d;
    gc_diags_init(&d);
    int rc = load(text, NULL, &c, &d);
    if (!cases[i].needle) {
      ck_assert_msg(rc == 0, "case %zu rc=%d %s", i, rc, d.n ? d.msgs[0] : "");
      gb_kube_config_free(c);
      gc_diags_destroy(&d);
      continue;
    }
    ck_assert_msg(rc == GC_EINVAL, "case %zu rc=%d", i, rc);
    ck_assert_ptr_null(c);
    ck_assert_msg(diag_has(&d, cases[i].needle) && diag_has(&d, path_of("kc")), "case %zu: %s",
                  i, d.n ? d.msgs[0] : "(none)");
    if (cases[i].pos)
      ck_assert_msg(diag_has(&d, cases[i].pos), "case %zu lacks %s: %s", i, cases[i].pos,
                    d.msgs[0]);
    gc_diags_destroy(&d);
  }
}
END_TEST

/* The values behind the typed cases: a quoted number stays text, yes is
 * true, False is false and null is unset. */
START_TEST(typed_scalars_values) {
  static const char *ins[] = {"yes", "False", "~", "on"};
  static const int want[] = {1, 0, 0, 1};
  for (size_t i = 0; i < sizeof(ins) / sizeof(*ins); i++) {
    char text[1024];
    snprintf(text, sizeof(text),
             "current-context: x\ncontexts: [{name: x, context: {cluster: c, namespace: '007'}}]\n"
             "clusters: [{name: c, cluster: {server: 'https://x', insecure-skip-tls-verify: %s}}]\n",
             ins[i]);
    struct gb_kube_config *c = NULL;
    struct gc_diags d;
    gc_diags_init(&d);
    int rc = load(text, NULL, &c, &d);
    ck_assert_msg(rc == 0, "case %zu rc=%d %s", i, rc, d.n ? d.msgs[0] : "");
    ck_assert_int_eq(c->insecure_skip_tls_verify, want[i]);
    ck_assert_str_eq(c->namespace, "007");
    gb_kube_config_free(c);
    gc_diags_destroy(&d);
  }
}
END_TEST

/* What the manifest loader adds: duplicate keys are errors at their
 * position, only the first document is used (as client-go does), JSON
 * kubeconfigs load, and nesting is bounded. */
START_TEST(loader_rules) {
  const char *ok_tail = "contexts: [{name: x, context: {cluster: c}}]\n"
                        "clusters: [{name: c, cluster: {server: 'https://x'}}]\n";
  char text[8192];
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);

  snprintf(text, sizeof(text), "current-context: x\n%scurrent-context: y\n", ok_tail);
  int rc = load(text, NULL, &c, &d);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg(diag_has(&d, ":4:1:") && diag_has(&d, "current-context") &&
                    diag_has(&d, path_of("kc")),
                "%s", d.n ? d.msgs[0] : "(none)");
  gc_diags_destroy(&d);

  gc_diags_init(&d);
  snprintf(text, sizeof(text), "current-context: x\n%s---\ncurrent-context: other\n", ok_tail);
  rc = load(text, NULL, &c, &d);
  ck_assert_msg(rc == 0, "rc=%d %s", rc, d.n ? d.msgs[0] : "");
  ck_assert_str_eq(c->context, "x");
  gb_kube_config_free(c);
  gc_diags_destroy(&d);

  gc_diags_init(&d);
  rc = load("{\"current-context\": \"x\", \"contexts\": [{\"name\": \"x\", \"context\": "
            "{\"cluster\": \"c\", \"namespace\": 5}}],\n \"clusters\": []}",
            NULL, &c, &d);
  ck_assert_int_eq(rc, GC_EINVAL);
  ck_assert_msg(diag_has(&d, "contexts[0].context.namespace: must be a string") &&
                    diag_has(&d, ":1:") && diag_has(&d, path_of("kc")),
                "%s", d.n ? d.msgs[0] : "(none)");
  gc_diags_destroy(&d);

  gc_diags_init(&d);
  size_t n = 0;
  n += (size_t)snprintf(text + n, sizeof(text) - n, "current-context: ");
  for (int i = 0; i < 40; i++)
    n += (size_t)snprintf(text + n, sizeof(text) - n, "[");
  for (int i = 0; i < 40; i++)
    n += (size_t)snprintf(text + n, sizeof(text) - n, "]");
  snprintf(text + n, sizeof(text) - n, "\n");
  rc = load(text, NULL, &c, &d);
  ck_assert_int_ne(rc, 0);
  ck_assert_ptr_null(c);
  ck_assert_msg(diag_has(&d, path_of("kc")) && diag_has(&d, ":1:"), "%s",
                d.n ? d.msgs[0] : "(none)");
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(missing_file_and_kubeconfig_env) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  ck_assert_int_eq(gb_kube_config_load_file("/nonexistent/kc", NULL, &c, &d), GC_ENOTFOUND);
  ck_assert(diag_has(&d, "/nonexistent/kc: cannot open"));
  gc_diags_destroy(&d);

  write_file("kc2", BASE "users:\n- name: u1\n  user:\n    token: from-env\n");
  char env[700];
  snprintf(env, sizeof(env), "%s/kc2:/nonexistent/second", tmpdir);
  setenv("KUBECONFIG", env, 1);
  int rc = gb_kube_config_load(NULL, NULL, &c, &d);
  unsetenv("KUBECONFIG");
  ck_assert_msg(rc == 0, "%s", d.n ? d.msgs[0] : "");
  ck_assert_str_eq(c->token, "from-env");
  gb_kube_config_free(c);
  /* An explicit path wins over KUBECONFIG. */
  setenv("KUBECONFIG", "/nonexistent/kc", 1);
  rc = gb_kube_config_load(path_of("kc2"), NULL, &c, &d);
  unsetenv("KUBECONFIG");
  ck_assert_int_eq(rc, 0);
  gb_kube_config_free(c);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(home_kube_config_fallback) {
  char dir[300], path[320];
  snprintf(dir, sizeof(dir), "%s/.kube", tmpdir);
  ck_assert_int_eq(mkdir(dir, 0700), 0);
  snprintf(path, sizeof(path), "%s/config", dir);
  FILE *f = fopen(path, "w");
  fputs(BASE "users:\n- name: u1\n  user:\n    token: from-home\n", f);
  fclose(f);
  unsetenv("KUBECONFIG");
  unsetenv("KUBERNETES_SERVICE_HOST");
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", tmpdir, 1);
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  int rc = gb_kube_config_load(NULL, "dev", &c, &d);
  if (old_home)
    setenv("HOME", old_home, 1);
  free(old_home);
  ck_assert_msg(rc == 0, "%s", d.n ? d.msgs[0] : "");
  ck_assert_str_eq(c->token, "from-home");
  ck_assert_str_eq(c->source, path);
  gb_kube_config_free(c);
  unlink(path);
  rmdir(dir);
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(in_cluster_env_and_ipv6) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  ck_assert_int_eq(gb_kube_config_in_cluster(tmpdir, &c, &d), GC_ENOTFOUND);
  ck_assert(diag_has(&d, "KUBERNETES_SERVICE_HOST"));
  gc_diags_destroy(&d);

  setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443x", 1);
  ck_assert_int_eq(gb_kube_config_in_cluster(tmpdir, &c, &d), GC_EINVAL);
  ck_assert(diag_has(&d, "KUBERNETES_SERVICE_PORT"));
  gc_diags_destroy(&d);

  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  /* No token file yet: an error naming the file. */
  ck_assert_int_eq(gb_kube_config_in_cluster(tmpdir, &c, &d), GC_EIO);
  ck_assert(diag_has(&d, "/token"));
  gc_diags_destroy(&d);

  write_file("token", "tok-1\n");
  write_file("namespace", "trainer-system\n");
  write_file("ca.crt", "PEM");
  ck_assert_int_eq(gb_kube_config_in_cluster(tmpdir, &c, &d), 0);
  ck_assert_str_eq(c->server, "https://[fd00::1]:443");
  ck_assert_str_eq(c->namespace, "trainer-system");
  ck_assert_str_eq(c->ca_file, path_of("ca.crt"));
  ck_assert_str_eq(c->source, "in-cluster");
  gb_kube_config_free(c);

  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ck_assert_int_eq(gb_kube_config_in_cluster(tmpdir, &c, &d), 0);
  ck_assert_str_eq(c->server, "https://10.96.0.1:443");
  gb_kube_config_free(c);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  gc_diags_destroy(&d);
}
END_TEST

START_TEST(in_cluster_token_rotation) {
  struct gb_kube_config *c = NULL;
  struct gc_diags d;
  gc_diags_init(&d);
  setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  write_file("token", "first-token");
  ck_assert_int_eq(gb_kube_config_in_cluster(tmpdir, &c, &d), 0);
  char tok[64];
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "first-token");

  /* The kubelet replaces the file: a new inode, size and mtime. */
  char tmp[300];
  snprintf(tmp, sizeof(tmp), "%s/tok", tmpdir);
  FILE *f = fopen(tmp, "w");
  fputs("second-token-longer", f);
  fclose(f);
  ck_assert_int_eq(rename(tmp, path_of("token")), 0);
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "second-token-longer");

  /* Same size, same inode, only the mtime moves (rewritten in place). */
  write_file("token", "third--token-longer");
  struct timespec ts[2] = {{0, UTIME_OMIT}, {time(NULL) + 5, 0}};
  ck_assert_int_eq(utimensat(AT_FDCWD, path_of("token"), ts, 0), 0);
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "third--token-longer");

  /* Unchanged file, refresh period 0 s is "default" (60 s): the cached copy
   * is used; then with a 1 s period and a changed file that keeps its stat
   * identity, the periodic re-read picks up the content. */
  struct stat st;
  ck_assert_int_eq(stat(path_of("token"), &st), 0);
  write_file("token", "fourth-token-longer");
  struct timespec same[2] = {{0, UTIME_OMIT}, st.st_mtim};
  ck_assert_int_eq(utimensat(AT_FDCWD, path_of("token"), same, 0), 0);
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "third--token-longer");
  c->token_refresh_s = 1;
  sleep(2);
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "fourth-token-longer");

  /* The file vanishes: the last good token is kept, with a warning. */
  unlink(path_of("token"));
  sleep(2);
  size_t before = d.n;
  ck_assert_int_eq(gb_kube_config_token(c, tok, sizeof(tok), &d), 0);
  ck_assert_str_eq(tok, "fourth-token-longer");
  ck_assert_uint_gt(d.n, before);
  ck_assert_uint_eq(d.errors, 0);

  /* A buffer too small for the token. */
  char small[4];
  ck_assert_int_eq(gb_kube_config_token(c, small, sizeof(small), &d), GC_ELIMIT);
  gb_kube_config_free(c);
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  gc_diags_destroy(&d);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kube_config");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, token_and_inline_ca);
  tcase_add_test(tc, other_context_insecure_no_user_auth);
  tcase_add_test(tc, token_file_relative_and_client_cert_files);
  tcase_add_test(tc, inline_client_cert_data);
  tcase_add_test(tc, token_file_wins_over_token);
  tcase_add_test(tc, bad_inputs_name_file_and_field);
  tcase_add_test(tc, bad_structure);
  tcase_add_test(tc, typed_scalars_as_client_go);
  tcase_add_test(tc, typed_scalars_values);
  tcase_add_test(tc, loader_rules);
  tcase_add_test(tc, missing_file_and_kubeconfig_env);
  tcase_add_test(tc, home_kube_config_fallback);
  tcase_add_test(tc, in_cluster_env_and_ipv6);
  tcase_add_test(tc, in_cluster_token_rotation);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
