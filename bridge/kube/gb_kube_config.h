/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_config: where the Kubernetes API server is and how to authenticate
 * to it.  Two sources: a kubeconfig file (read by the manifest loader,
 * gb_manifest, and typed as client-go reads it; the current or a named
 * context, its cluster and user: server, certificate-authority(-data),
 * insecure-skip-tls-verify, token, tokenFile, client-certificate(-data),
 * client-key(-data)), and the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT, token, ca.crt, namespace).  Inline *-data
 * fields are base64-decoded into memory and later handed to libcurl's *_BLOB
 * options; nothing is written to temporary files.  Token files (tokenFile and
 * the in-cluster token, which the kubelet rotates) are re-read when their
 * mtime, size or inode changes, and at least every `token_refresh_s` seconds,
 * as client-go's cached file token source does.  Every problem is reported as
 * "file:line:col: field path: message" (syntax errors as "file:line:col:
 * message").
 *
 * Thread-safety: loading is single-threaded.  A loaded config is read-only
 * except for the token cache, which gb_kube_config_token() guards with an
 * internal mutex, so any number of threads may share one config.
 */
#ifndef GB_KUBE_CONFIG_H
#define GB_KUBE_CONFIG_H

#include <stddef.h>

#include "gc_diag.h"

/* Kubeconfig files larger than this are rejected. */
#define GB_KUBE_CONFIG_MAX_BYTES (4u * 1024 * 1024)
/* Token files larger than this are rejected (bound tokens are ~1 KiB). */
#define GB_KUBE_TOKEN_MAX_BYTES (64u * 1024)
/* Default directory of the in-cluster service-account files. */
#define GB_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct gb_kube_token_cache; /* private */

struct gb_kube_config {
  char *source;    /* kubeconfig path, or "in-cluster" */
  char *context;   /* selected context name; NULL in cluster */
  char *server;    /* "https://host:port" without a trailing slash */
  char *namespace; /* context or service-account namespace; "default" if unset */

  char *token;      /* static bearer token, or NULL */
  char *token_file; /* bearer token file (re-read on rotation), or NULL; when
                       both are set the file wins once read (client-go) */

  char *ca_file;          /* CA bundle path, or NULL */
  unsigned char *ca_data; /* decoded certificate-authority-data, or NULL */
  size_t ca_len;
  char *cert_file; /* client certificate path, or NULL */
  unsigned char *cert_data;
  size_t cert_len;
  char *key_file; /* client key path, or NULL */
  unsigned char *key_data;
  size_t key_len;
  int insecure_skip_tls_verify;

  unsigned token_refresh_s; /* re-read token_file at least this often; default 60 */
  struct gb_kube_token_cache *tc;
};

/* Loads the configuration the way controller-runtime does: `path` when not
 * NULL (the --kubeconfig flag), else $KUBECONFIG (only the first file of a
 * colon-separated list is read; merging several files is not supported),
 * else in cluster when KUBERNETES_SERVICE_HOST is set, else ~/.kube/config.
 * `context` (NULL: current-context) picks a kubeconfig context.  On success
 * *out is owned by the caller (free with gb_kube_config_free).  Returns 0,
 * GC_EINVAL (bad content), GC_EIO (unreadable), GC_ENOTFOUND (no source),
 * GC_ELIMIT or GC_ENOMEM; messages go to diags. */
int gb_kube_config_load(const char *path, const char *context, struct gb_kube_config **out,
                        struct gc_diags *diags);

/* Copies the current bearer token (NUL-terminated) into buf.  With a token
 * file, re-reads it when it changed or token_refresh_s elapsed; if a re-read
 * fails the last good token is kept and a warning is added.  buf is "" when
 * the config has no token auth.  Returns 0, GC_ELIMIT (token longer than
 * cap-1) or GC_EIO (token file never readable). */
int gb_kube_config_token(struct gb_kube_config *cfg, char *buf, size_t cap,
                         struct gc_diags *diags);

/* Frees the config and everything it owns.  Accepts NULL. */
void gb_kube_config_free(struct gb_kube_config *cfg);

#endif
