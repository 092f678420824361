/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_kube_config: kubeconfig and in-cluster configuration.  The kubeconfig is
 * read by the manifest loader (gb_manifest) into a typed gc_value tree that
 * keeps each node's position for messages; the fields are then checked
 * against the types of client-go's Config structs.
 */
#include "gb_kube_config.h"
#include "gb_kube_config_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gb_base64.h"
#include "gb_clock.h"
#include "gb_file.h"
#include "gb_manifest.h"
#include "gc_value.h"

struct gb_kube_token_cache {
  pthread_mutex_t lock;
  char *token;        /* last good token from token_file */
  struct timespec mtime;
  off_t size;
  ino_t ino;
  time_t read_at;     /* CLOCK_MONOTONIC seconds of the last read */
  int have;
};

/* ---- small helpers ---------------------------------------------------- */

/* strdup that passes NULL through. */
static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }

/* ---- text to tree ------------------------------------------------------ */

/* Bounds of one kubeconfig: the file size, nesting as deep as the old
 * private loader allowed (a kubeconfig is four levels deep), the node count
 * after alias expansion, and the memory of the loaded tree. */
#define KC_MAX_DEPTH 32
#define KC_MAX_NODES 100000
#define KC_MAX_DOCS 64
#define KC_MAX_TREE_BYTES (64u * 1024 * 1024)

/* Loads the text with the manifest loader, so a kubeconfig's scalars are
 * typed as sigs.k8s.io/yaml types them for client-go (an unquoted 123 is a
 * number, true a bool) and every syntax error is "file:line:col: message".
 * As client-go does, only the first document is used.  On success *root
 * points into ds. */
static int parse_doc(struct gb_docset *ds, const char *name, const char *buf, size_t len,
                     const struct gc_value **root, struct gc_diags *d) {
  int rc = gb_docset_limit_trees(ds, KC_MAX_TREE_BYTES);
  if (rc)
    return rc;
  rc = gb_manifest_load_buffer(ds, name, buf, len, d);
  if (rc)
    return rc;
  if (ds->n == 0) {
    gc_diags_addf(d, "%s:1:1: empty kubeconfig (no YAML document)", name);
    return GC_EINVAL;
  }
  *root = ds->docs[0].root;
  return GC_OK;
}

/* ---- kubeconfig interpretation ----------------------------------------- */

struct kload {
  const char *name; /* file name for messages */
  char *dir;        /* directory for relative paths ("" for none) */
  struct gc_diags *d;
  struct gb_kube_config *cfg;
};

/* Reports "file:line:col: where: message" at node v (or its parent pos). */
static int kerr(struct kload *k, const struct gc_value *v, const char *where, const char *msg) {
  gc_diags_addf(k->d, "%s:%u:%u: %s: %s", k->name, v ? v->line : 1, v ? v->col : 1, where, msg);
  return GC_EINVAL;
}

/* Optional string field: NULL if absent or null (client-go leaves a JSON
 * null at the zero value); error if not a string.  client-go rejects an
 * unquoted number or bool in a string field ("cannot unmarshal number into
 * ... of type string"), so the message says how the token was read and that
 * quoting it makes it text. */
static int kstr(struct kload *k, const struct gc_value *map, const char *key, const char *where,
                const char **out) {
  *out = NULL;
  struct gc_value *v = gc_map_get(map, key);
  if (!v || v->type == GC_NULL)
    return GC_OK;
  if (v->type != GC_STR) {
    char w[256], msg[160];
    snprintf(w, sizeof(w), "%s.%s", where, key);
    if (v->type == GC_SEQ || v->type == GC_MAP || !v->text)
      return kerr(k, v, w, "must be a string");
    snprintf(msg, sizeof(msg), "must be a string; %.40s%s is read as %s %s (quote it)", v->text,
             strlen(v->text) > 40 ? "..." : "", v->type == GC_INT ? "an" : "a",
             gc_type_name(v->type));
    return kerr(k, v, w, msg);
  }
  *out = v->u.s;
  return GC_OK;
}

/* Finds the entry named `name` in a list of {name, <inner>: {...}}; returns
 * the inner map or NULL with an error. */
static int kfind(struct kload *k, const struct gc_value *root, const char *list, const char *inner,
                 const char *name, const struct gc_value *ref, const char *ref_where,
                 const struct gc_value **out, char *where, size_t where_cap) {
  struct gc_value *seq = gc_map_get(root, list);
  if (seq && seq->type != GC_SEQ && seq->type != GC_NULL)
    return kerr(k, seq, list, "must be a list");
  for (size_t i = 0; seq && seq->type == GC_SEQ && i < seq->len; i++) {
    struct gc_value *e = seq->u.items[i];
    snprintf(where, where_cap, "%s[%zu]", list, i);
    if (e->type != GC_MAP)
      return kerr(k, e, where, "must be a mapping");
    const char *n = NULL;
    int rc = kstr(k, e, "name", where, &n);
    if (rc)
      return rc;
    if (!n || strcmp(n, name) != 0)
      continue;
    struct gc_value *in = gc_map_get(e, inner);
    char w2[300];
    snprintf(w2, sizeof(w2), "%s.%s", where, inner);
    if (!in || in->type != GC_MAP)
      return kerr(k, in ? in : e, w2, "missing or not a mapping");
    snprintf(where, where_cap, "%s[%zu].%s", list, i, inner);
    *out = in;
    return GC_OK;
  }
  char msg[300];
  snprintf(msg, sizeof(msg), "%s \"%s\" not found in %s", inner, name, list);
  return kerr(k, ref, ref_where, msg);
}

/* Resolves a possibly relative path against the kubeconfig's directory. */
static char *kpath(struct kload *k, const char *p) {
  if (p[0] == '/' || !k->dir[0])
    return xstrdup(p);
  size_t n = strlen(k->dir) + 1 + strlen(p) + 1;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%s/%s", k->dir, p);
  return s;
}

/* Loads a "<field>" path and "<field>-data" base64 pair (mutually exclusive
 * in the sense that -data wins, as in client-go). */
static int kfile_or_data(struct kload *k, const struct gc_value *map, const char *where,
                         const char *field, char **path_out, unsigned char **data_out,
                         size_t *len_out) {
  char dkey[64];
  snprintf(dkey, sizeof(dkey), "%s-data", field);
  const char *p = NULL, *data = NULL;
  int rc = kstr(k, map, field, where, &p);
  if (!rc)
    rc = kstr(k, map, dkey, where, &data);
  if (rc)
    return rc;
  if (data) {
    struct gc_value *v = gc_map_get(map, dkey);
    int brc = gb_base64_decode(data, v->len, data_out, len_out);
    if (brc == GC_ENOMEM)
      return brc;
    if (brc || *len_out == 0) {
      free(*data_out);
      *data_out = NULL;
      char w[256];
      snprintf(w, sizeof(w), "%s.%s", where, dkey);
      return kerr(k, v, w, "not valid base64 (or empty)");
    }
    return GC_OK;
  }
  if (p && p[0]) {
    *path_out = kpath(k, p);
    if (!*path_out)
      return GC_ENOMEM;
  }
  return GC_OK;
}

/* Reads cluster.server into *out (caller frees; trailing slashes dropped):
 * it must be an http(s) URL that names a host. */
static int read_server(struct kload *k, const struct gc_value *cluster, const char *cwhere,
                       char **out) {
  const char *server = NULL;
  char w[200];
  int rc;
  if ((rc = kstr(k, cluster, "server", cwhere, &server)))
    return rc;
  if (!server || !server[0]) {
    snprintf(w, sizeof(w), "%s.server", cwhere);
    return kerr(k, cluster, w, "missing");
  }
  size_t scheme = !strncmp(server, "https://", 8) ? 8 : !strncmp(server, "http://", 7) ? 7 : 0;
  if (!scheme) {
    snprintf(w, sizeof(w), "%s.server", cwhere);
    return kerr(k, gc_map_get(cluster, "server"), w, "must start with https:// or http://");
  }
  /* "https://" or "https:///x" names no host: curl would fail later with a
   * message that no longer says which kubeconfig field is wrong. */
  if (server[scheme] == '\0' || server[scheme] == '/') {
    snprintf(w, sizeof(w), "%s.server", cwhere);
    return kerr(k, gc_map_get(cluster, "server"), w, "names no host");
  }
  *out = xstrdup(server);
  if (!*out)
    return GC_ENOMEM;
  size_t sl = strlen(*out);
  while (sl > 0 && (*out)[sl - 1] == '/')
    (*out)[--sl] = 0;
  return GC_OK;
}

static int interpret(struct kload *k, const struct gc_value *root, const char *ctx_name) {
  struct gb_kube_config *c = k->cfg;
  const struct gc_value *ctx = NULL, *cluster = NULL, *user = NULL;
  char cwhere[128], uwhere[128], xwhere[128];
  int rc;

  const char *cur = ctx_name;
  const struct gc_value *cur_node = root;
  const char *cur_where = "--context";
  if (!cur) {
    rc = kstr(k, root, "current-context", "kubeconfig", &cur);
    if (rc)
      return rc;
    cur_node = gc_map_get(root, "current-context");
    cur_where = "current-context";
    if (!cur || !cur[0])
      return kerr(k, root, "current-context", "not set and no context was given");
  }
  rc = kfind(k, root, "contexts", "context", cur, cur_node ? cur_node : root, cur_where, &ctx,
             xwhere, sizeof(xwhere));
  if (rc)
    return rc;
  c->context = xstrdup(cur);
  const char *cl = NULL, *us = NULL, *ns = NULL;
  if ((rc = kstr(k, ctx, "cluster", xwhere, &cl)) || (rc = kstr(k, ctx, "user", xwhere, &us)) ||
      (rc = kstr(k, ctx, "namespace", xwhere, &ns)))
    return rc;
  if (!cl || !cl[0]) {
    char w[200];
    snprintf(w, sizeof(w), "%s.cluster", xwhere);
    return kerr(k, ctx, w, "missing");
  }
  c->namespace = xstrdup(ns && ns[0] ? ns : "default");

  char w[200];
  snprintf(w, sizeof(w), "%s.cluster", xwhere);
  rc = kfind(k, root, "clusters", "cluster", cl, gc_map_get(ctx, "cluster"), w, &cluster, cwhere,
             sizeof(cwhere));
  if (rc)
    return rc;
  if ((rc = read_server(k, cluster, cwhere, &c->server)))
    return rc;
  rc = kfile_or_data(k, cluster, cwhere, "certificate-authority", &c->ca_file, &c->ca_data,
                     &c->ca_len);
  if (rc)
    return rc;
  struct gc_value *ins = gc_map_get(cluster, "insecure-skip-tls-verify");
  if (ins && ins->type != GC_NULL) {
    snprintf(w, sizeof(w), "%s.insecure-skip-tls-verify", cwhere);
    /* A bool field takes a YAML bool only: client-go rejects a quoted
     * "true" ("cannot unmarshal string into ... of type bool"). */
    if (ins->type != GC_BOOL)
      return kerr(k, ins, w,
                  ins->type == GC_STR ? "must be true or false (unquoted; a quoted value is a "
                                        "string)"
                                      : "must be true or false");
    c->insecure_skip_tls_verify = ins->u.b != 0;
  }

  if (us && us[0]) {
    snprintf(w, sizeof(w), "%s.user", xwhere);
    rc = kfind(k, root, "users", "user", us, gc_map_get(ctx, "user"), w, &user, uwhere,
               sizeof(uwhere));
    if (rc)
      return rc;
    const char *tok = NULL, *tokf = NULL;
    if ((rc = kstr(k, user, "token", uwhere, &tok)) ||
        (rc = kstr(k, user, "tokenFile", uwhere, &tokf)))
      return rc;
    /* Both may be set: as in client-go, the file wins once it has been
     * read, and the static token is the fallback until then. */
    if (tok && tok[0]) {
      c->token = xstrdup(tok);
      if (!c->token)
        return GC_ENOMEM;
    }
    if (tokf && tokf[0]) {
      c->token_file = kpath(k, tokf);
      if (!c->token_file)
        return GC_ENOMEM;
    }
    rc = kfile_or_data(k, user, uwhere, "client-certificate", &c->cert_file, &c->cert_data,
                       &c->cert_len);
    if (!rc)
      rc = kfile_or_data(k, user, uwhere, "client-key", &c->key_file, &c->key_data, &c->key_len);
    if (rc)
      return rc;
    int has_cert = c->cert_file || c->cert_data, has_key = c->key_file || c->key_data;
    if (has_cert != has_key) {
      snprintf(w, sizeof(w), "%s.%s", uwhere, has_cert ? "client-key" : "client-certificate");
      return kerr(k, user, w, "missing (a client certificate needs both certificate and key)");
    }
    static const char *unsupported[] = {"exec", "auth-provider", "username", "password"};
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(*unsupported); i++) {
      struct gc_value *x = gc_map_get(user, unsupported[i]);
      if (x && x->type != GC_NULL && !c->token && !c->token_file && !has_cert) {
        snprintf(w, sizeof(w), "%s.%s", uwhere, unsupported[i]);
        return kerr(k, x, w, "not supported by gangbridge; use token, tokenFile or a client "
                             "certificate");
      }
    }
  }
  return GC_OK;
}

static struct gb_kube_config *config_alloc(void) {
  struct gb_kube_config *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->tc = calloc(1, sizeof(*c->tc));
  if (!c->tc) {
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->tc->lock, NULL);
  c->token_refresh_s = 60;
  return c;
}

int gb_kube_config_load_buffer(const char *name, const char *buf, size_t len,
                               const char *context, struct gb_kube_config **out,
                               struct gc_diags *diags) {
  *out = NULL;
  if (len > GB_KUBE_CONFIG_MAX_BYTES) {
    gc_diags_addf(diags, "%s: larger than the limit of %u bytes", name,
                  GB_KUBE_CONFIG_MAX_BYTES);
    return GC_ELIMIT;
  }
  struct gb_limits lim = {GB_KUBE_CONFIG_MAX_BYTES, GB_KUBE_CONFIG_MAX_BYTES, KC_MAX_DEPTH,
                          KC_MAX_NODES, KC_MAX_DOCS};
  struct gb_docset *ds = gb_docset_new(&lim);
  struct gb_kube_config *c = config_alloc();
  struct kload k = {name, NULL, diags, c};
  int rc = GC_ENOMEM;
  if (!ds || !c)
    goto out;
  k.dir = xstrdup(name);
  if (!k.dir)
    goto out;
  char *slash = strrchr(k.dir, '/');
  if (slash)
    *slash = 0;
  else
    k.dir[0] = 0;
  c->source = xstrdup(name);
  if (!c->source)
    goto out;
  const struct gc_value *root = NULL;
  rc = parse_doc(ds, name, buf, len, &root, diags);
  if (rc)
    goto out;
  rc = interpret(&k, root, context);
  if (rc)
    goto out;
  *out = c;
  c = NULL;
out:
  free(k.dir);
  gb_kube_config_free(c);
  gb_docset_free(ds);
  return rc;
}

int gb_kube_config_load_file(const char *path, const char *context,
                             struct gb_kube_config **out, struct gc_diags *diags) {
  char *buf = NULL;
  size_t len = 0;
  *out = NULL;
  int rc = gb_file_read(path, GB_KUBE_CONFIG_MAX_BYTES, 0, &buf, &len, NULL, diags);
  if (rc)
    return rc;
  rc = gb_kube_config_load_buffer(path, buf, len, context, out, diags);
  free(buf);
  return rc;
}

int gb_kube_config_in_cluster(const char *sa_dir, struct gb_kube_config **out,
                              struct gc_diags *diags) {
  *out = NULL;
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !host[0] || !port || !port[0]) {
    gc_diags_addf(diags, "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must "
                         "both be set");
    return GC_ENOTFOUND;
  }
  for (const char *p = port; *p; p++)
    if (*p < '0' || *p > '9' || p - port > 5) {
      gc_diags_addf(diags, "in-cluster: KUBERNETES_SERVICE_PORT: \"%s\" is not a port number",
                    port);
      return GC_EINVAL;
    }
  if (strlen(host) > 253 || strpbrk(host, "/ @?#[]")) {
    gc_diags_addf(diags, "in-cluster: KUBERNETES_SERVICE_HOST: \"%s\" is not a host name or "
                         "address", host);
    return GC_EINVAL;
  }
  if (!sa_dir)
    sa_dir = GB_KUBE_SA_DIR;
  struct gb_kube_config *c = config_alloc();
  if (!c)
    return GC_ENOMEM;
  int rc = GC_ENOMEM;
  size_t n = strlen(host) + strlen(port) + 16;
  c->server = malloc(n);
  c->source = xstrdup("in-cluster");
  size_t dl = strlen(sa_dir) + 16;
  c->token_file = malloc(dl);
  char *ca = malloc(dl), *nsf = malloc(dl);
  if (!c->server || !c->source || !c->token_file || !ca || !nsf)
    goto out;
  /* An IPv6 literal contains ':' and must be bracketed in a URL. */
  if (strchr(host, ':'))
    snprintf(c->server, n, "https://[%s]:%s", host, port);
  else
    snprintf(c->server, n, "https://%s:%s", host, port);
  snprintf(c->token_file, dl, "%s/token", sa_dir);
  snprintf(ca, dl, "%s/ca.crt", sa_dir);
  snprintf(nsf, dl, "%s/namespace", sa_dir);
  struct stat st;
  if (stat(ca, &st) == 0) {
    c->ca_file = ca;
    ca = NULL;
  }
  char *nsbuf = NULL;
  size_t nslen = 0;
  struct gc_diags quiet;
  gc_diags_init(&quiet);
  if (gb_file_read(nsf, 256, 0, &nsbuf, &nslen, NULL, &quiet) == GC_OK) {
    while (nslen > 0 && (nsbuf[nslen - 1] == '\n' || nsbuf[nslen - 1] == ' '))
      nsbuf[--nslen] = 0;
    c->namespace = nsbuf;
  }
  gc_diags_destroy(&quiet);
  if (!c->namespace && !(c->namespace = xstrdup("default")))
    goto out;
  /* The token must be readable at start; later failures keep the last one. */
  char tok[16];
  rc = gb_kube_config_token(c, tok, sizeof(tok), diags);
  if (rc == GC_ELIMIT)
    rc = GC_OK;
  if (rc)
    goto out;
  *out = c;
  c = NULL;
out:
  free(ca);
  free(nsf);
  gb_kube_config_free(c);
  return rc;
}

int gb_kube_config_load(const char *path, const char *context, struct gb_kube_config **out,
                        struct gc_diags *diags) {
  *out = NULL;
  if (path && path[0])
    return gb_kube_config_load_file(path, context, out, diags);
  const char *env = getenv("KUBECONFIG");
  if (env && env[0]) {
    const char *colon = strchr(env, ':');
    size_t n = colon ? (size_t)(colon - env) : strlen(env);
    char *first = malloc(n + 1);
    if (!first)
      return GC_ENOMEM;
    memcpy(first, env, n);
    first[n] = 0;
    int rc = gb_kube_config_load_file(first, context, out, diags);
    free(first);
    return rc;
  }
  if (getenv("KUBERNETES_SERVICE_HOST"))
    return gb_kube_config_in_cluster(NULL, out, diags);
  const char *home = getenv("HOME");
  if (!home || !home[0]) {
    gc_diags_addf(diags, "no kubeconfig: --kubeconfig and KUBECONFIG unset, not in a cluster, "
                         "and HOME unset");
    return GC_ENOTFOUND;
  }
  size_t n = strlen(home) + 16;
  char *p = malloc(n);
  if (!p)
    return GC_ENOMEM;
  snprintf(p, n, "%s/.kube/config", home);
  int rc = gb_kube_config_load_file(p, context, out, diags);
  free(p);
  return rc;
}

/* gc_diags_move that accepts a NULL destination (messages are dropped). */
static void move_diags(struct gc_diags *dst, struct gc_diags *src) {
  if (dst)
    gc_diags_move(dst, src);
}

/* Re-reads the token file into the cache when it changed or is stale.
 * Called with the cache lock held. */
static int token_refresh(struct gb_kube_config *c, struct gc_diags *d) {
  struct gb_kube_token_cache *tc = c->tc;
  struct stat st;
  double now = gb_clock_s();
  int changed = 1;
  if (tc->have && stat(c->token_file, &st) == 0) {
    changed = st.st_mtim.tv_sec != tc->mtime.tv_sec || st.st_mtim.tv_nsec != tc->mtime.tv_nsec ||
              st.st_size != tc->size || st.st_ino != tc->ino ||
              now - (double)tc->read_at >= (double)(c->token_refresh_s ? c->token_refresh_s : 60);
  }
  if (!changed)
    return GC_OK;
  char *buf = NULL;
  size_t len = 0;
  struct gc_diags local;
  gc_diags_init(&local);
  int rc = gb_file_read(c->token_file, GB_KUBE_TOKEN_MAX_BYTES, 0, &buf, &len, &st, &local);
  while (rc == GC_OK && len > 0 &&
         (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
    buf[--len] = 0;
  if (rc == GC_OK && len == 0) {
    gc_diags_addf(&local, "%s: token file is empty", c->token_file);
    rc = GC_EINVAL;
  }
  if (rc) {
    free(buf);
    if (tc->have) {
      /* Keep the last good token: the kubelet swaps the file atomically, so
       * a failed read is transient, and an old token beats no token. */
      for (size_t i = 0; i < local.n; i++)
        gc_diags_warnf(d, "%s (keeping the previous token)", local.msgs[i]);
      tc->read_at = (time_t)now;
      gc_diags_destroy(&local);
      return GC_OK;
    }
    move_diags(d, &local);
    gc_diags_destroy(&local);
    return GC_EIO;
  }
  gc_diags_destroy(&local);
  free(tc->token);
  tc->token = buf;
  tc->mtime = st.st_mtim;
  tc->size = st.st_size;
  tc->ino = st.st_ino;
  tc->read_at = (time_t)now;
  tc->have = 1;
  return GC_OK;
}

int gb_kube_config_token(struct gb_kube_config *cfg, char *buf, size_t cap,
                         struct gc_diags *diags) {
  if (!cap)
    return GC_EUSAGE;
  buf[0] = 0;
  const char *src = cfg->token;
  int rc = GC_OK;
  pthread_mutex_lock(&cfg->tc->lock);
  if (cfg->token_file) {
    struct gc_diags local;
    gc_diags_init(&local);
    rc = token_refresh(cfg, &local);
    if (rc == GC_OK && cfg->tc->token) {
      src = cfg->tc->token;
      move_diags(diags, &local);
    } else if (cfg->token) {
      /* The file was never readable: fall back to the static token, and
       * say so as a warning. */
      for (size_t i = 0; i < local.n; i++)
        gc_diags_warnf(diags, "%s (using the static token)", local.msgs[i]);
      rc = GC_OK;
    } else {
      move_diags(diags, &local);
    }
    gc_diags_destroy(&local);
  }
  if (rc == GC_OK && src) {
    size_t n = strlen(src);
    if (n >= cap)
      rc = GC_ELIMIT;
    else
      memcpy(buf, src, n + 1);
  }
  pthread_mutex_unlock(&cfg->tc->lock);
  return rc;
}

void gb_kube_config_free(struct gb_kube_config *cfg) {
  if (!cfg)
    return;
  free(cfg->source);
  free(cfg->context);
  free(cfg->server);
  free(cfg->namespace);
  free(cfg->token);
  free(cfg->token_file);
  free(cfg->ca_file);
  free(cfg->ca_data);
  free(cfg->cert_file);
  free(cfg->cert_data);
  free(cfg->key_file);
  free(cfg->key_data);
  if (cfg->tc) {
    pthread_mutex_destroy(&cfg->tc->lock);
    free(cfg->tc->token);
    free(cfg->tc);
  }
  free(cfg);
}
