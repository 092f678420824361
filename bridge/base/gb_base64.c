/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_base64: standard base64 encoding and decoding (see gb_base64.h).
 */
#include "gb_base64.h"

#include <stdlib.h>

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int gb_base64_encode(const void *data, size_t len, char **out, size_t *out_len) {
  *out = NULL;
  if (out_len)
    *out_len = 0;
  if (len > GB_BASE64_MAX_INPUT)
    return GC_ELIMIT;
  const unsigned char *in = data;
  char *s = malloc(4 * ((len + 2) / 3) + 1);
  if (!s)
    return GC_ENOMEM;
  size_t o = 0, i = 0;
  for (; i + 2 < len; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
    s[o++] = b64_alphabet[v >> 18];
    s[o++] = b64_alphabet[(v >> 12) & 63];
    s[o++] = b64_alphabet[(v >> 6) & 63];
    s[o++] = b64_alphabet[v & 63];
  }
  if (i < len) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0);
    s[o++] = b64_alphabet[v >> 18];
    s[o++] = b64_alphabet[(v >> 12) & 63];
    s[o++] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
    s[o++] = '=';
  }
  s[o] = '\0';
  *out = s;
  if (out_len)
    *out_len = o;
  return 0;
}

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

static int is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* Decodes into buf (room for len / 4 * 3 + 3 bytes); *n gets the length.
 * Returns 0 or GC_EINVAL. */
static int decode_into(const char *text, size_t len, unsigned char *buf, size_t *n) {
  size_t pad = 0, seen = 0;
  unsigned acc = 0, bits = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (is_space(c))
      continue;
    if (c == '=') {
      pad++;
      continue;
    }
    int v = b64_value(c);
    if (v < 0 || pad)
      return GC_EINVAL;
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    seen++;
    if (bits >= 8) {
      bits -= 8;
      buf[(*n)++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  /* A lone leftover sextet cannot hold a byte; padding, when present, must
   * fill exactly the last quantum; leftover bits must be zero so that each
   * byte string has one encoding. */
  if (seen % 4 == 1 || (pad && (seen % 4 == 0 || (seen + pad) % 4 != 0)) || acc != 0)
    return GC_EINVAL;
  return 0;
}

int gb_base64_decode(const char *text, size_t len, unsigned char **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  if (len > GB_BASE64_MAX_INPUT)
    return GC_ELIMIT;
  unsigned char *buf = malloc(len / 4 * 3 + 4);
  if (!buf)
    return GC_ENOMEM;
  size_t n = 0;
  int rc = decode_into(text, len, buf, &n);
  if (rc) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  *out_len = n;
  return 0;
}
