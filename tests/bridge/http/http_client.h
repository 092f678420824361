/* SPDX-License-Identifier: Apache-2.0
 *
 * http_client.h: a small libcurl and raw-socket client shared by the HTTP
 * unit tests (test_http_*.c).  Header-only: every function is static.
 */
#ifndef GB_TEST_HTTP_CLIENT_H
#define GB_TEST_HTTP_CLIENT_H

#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Whole-request timeout for hreq_full; tests may lower it. */
static long hreq_timeout_ms __attribute__((unused)) = 20000;

struct hres {
  CURLcode cc;
  long status;
  char *body;
  size_t len;
  char ctype[128];
  char allow[128];
  char connection[32];
};

static inline size_t hres_write(char *p, size_t sz, size_t n, void *ud) {
  struct hres *r = ud;
  size_t add = sz * n;
  char *b = realloc(r->body, r->len + add + 1);
  if (!b)
    return 0;
  memcpy(b + r->len, p, add);
  r->body = b;
  r->len += add;
  r->body[r->len] = '\0';
  return add;
}

static inline void hres_header_value(const char *line, size_t n, const char *name,
                                     char *dst, size_t dst_size) {
  size_t k = strlen(name);
  if (n <= k + 1 || strncasecmp(line, name, k) || line[k] != ':')
    return;
  const char *v = line + k + 1;
  size_t vl = n - k - 1;
  while (vl && (*v == ' ' || *v == '\t')) {
    v++;
    vl--;
  }
  while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
    vl--;
  if (vl >= dst_size)
    vl = dst_size - 1;
  memcpy(dst, v, vl);
  dst[vl] = '\0';
}

static inline size_t hres_header(char *p, size_t sz, size_t n, void *ud) {
  struct hres *r = ud;
  size_t len = sz * n;
  hres_header_value(p, len, "Content-Type", r->ctype, sizeof(r->ctype));
  hres_header_value(p, len, "Allow", r->allow, sizeof(r->allow));
  hres_header_value(p, len, "Connection", r->connection, sizeof(r->connection));
  return len;
}

struct chunked_src {
  size_t left;
};

static inline size_t chunked_read(char *buf, size_t sz, size_t n, void *ud) {
  struct chunked_src *s = ud;
  size_t want = sz * n;
  if (want > 1000)
    want = 1000;
  if (want > s->left)
    want = s->left;
  memset(buf, 'x', want);
  s->left -= want;
  return want;
}

/* Performs one request.  body may be NULL.  chunked_len > 0 sends that many
 * bytes with Transfer-Encoding: chunked instead of body.  cainfo enables
 * HTTPS verification against that CA file. */
static inline void hreq_full(const char *method, const char *url, const char *ctype,
                             const char *body, size_t len, size_t chunked_len,
                             const char *cainfo, struct hres *r) {
  memset(r, 0, sizeof(*r));
  CURL *c = curl_easy_init();
  ck_assert_ptr_nonnull(c);
  struct curl_slist *hdrs = NULL;
  char ct[160];
  if (ctype) {
    snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
    hdrs = curl_slist_append(hdrs, ct);
  } else {
    hdrs = curl_slist_append(hdrs, "Content-Type:");
  }
  hdrs = curl_slist_append(hdrs, "Expect:");
  struct chunked_src src = {chunked_len};
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, hreq_timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, hres_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hres_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  if (!strcmp(method, "HEAD")) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (chunked_len) {
    hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, chunked_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &src);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  } else if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "GET")) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  }
  if (cainfo) {
    curl_easy_setopt(c, CURLOPT_CAINFO, cainfo);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  r->cc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_slist_free_all(hdrs);
  curl_easy_cleanup(c);
  if (!r->body) {
    r->body = calloc(1, 1);
    ck_assert_ptr_nonnull(r->body);
  }
}

static inline void hreq(const char *method, const char *url, const char *body, struct hres *r) {
  hreq_full(method, url, body ? "text/plain" : NULL, body, body ? strlen(body) : 0, 0, NULL, r);
}

static inline void hres_free(struct hres *r) {
  free(r->body);
  r->body = NULL;
}

/* A connected raw TCP socket to 127.0.0.1:port. */
static inline int raw_connect(unsigned port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  return fd;
}

static inline void raw_send(int fd, const char *s) {
  size_t n = strlen(s);
  ck_assert_int_eq(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until the peer closes or timeout_ms passes; returns bytes read and
 * sets *closed when the peer closed. */
static inline size_t raw_read_all(int fd, char *buf, size_t size, int timeout_ms,
                                  int *closed) {
  size_t n = 0;
  *closed = 0;
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int pr = poll(&p, 1, timeout_ms);
    if (pr <= 0)
      break;
    ssize_t got = recv(fd, buf + n, size - 1 - n, 0);
    if (got <= 0) {
      *closed = 1;
      break;
    }
    n += (size_t)got;
    if (n >= size - 1)
      break;
  }
  buf[n] = '\0';
  return n;
}

#endif
