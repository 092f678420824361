/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_name: Kubernetes name rules (see gc_name.h).  Each rule is written out
 * as a loop over bytes rather than a regex, so that it needs no regex
 * library state and can be called on hot paths.
 */
#include "gc_name.h"

#include <string.h>

static int is_lower_alnum(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'); }

static int is_alnum(char ch) { return is_lower_alnum(ch) || (ch >= 'A' && ch <= 'Z'); }

/* The length check also refuses an embedded NUL byte. */
static int has_len(const char *s, size_t len, size_t max) {
  return s && len > 0 && len <= max && strnlen(s, len) == len;
}

int gc_name_is_dns1035(const char *s, size_t len) {
  if (!has_len(s, len, GC_NAME_LABEL_MAX))
    return 0;
  if (s[0] < 'a' || s[0] > 'z')
    return 0;
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'))
      return 0;
  }
  return s[len - 1] != '-';
}

int gc_name_is_dns1123_subdomain(const char *s, size_t len) {
  if (!has_len(s, len, GC_NAME_SUBDOMAIN_MAX))
    return 0;
  size_t start = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && s[i] != '.')
      continue;
    /* apimachinery limits only the whole subdomain, not each label. */
    if (i == start)
      return 0;
    for (size_t k = start; k < i; k++) {
      char ch = s[k];
      int alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
      if (!alnum && !(ch == '-' && k != start && k != i - 1))
        return 0;
    }
    start = i + 1;
  }
  return 1;
}

int gc_name_is_dns1123_label(const char *s, size_t len) {
  if (!has_len(s, len, GC_NAME_LABEL_MAX))
    return 0;
  for (size_t i = 0; i < len; i++)
    if (!is_lower_alnum(s[i]) && !(s[i] == '-' && i > 0 && i < len - 1))
      return 0;
  return 1;
}

/* The name part of a qualified name and a non-empty label value:
 * ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], 1..63 bytes. */
static int is_label_name(const char *s, size_t len) {
  if (!has_len(s, len, GC_NAME_LABEL_MAX))
    return 0;
  for (size_t i = 0; i < len; i++) {
    int inner = s[i] == '-' || s[i] == '_' || s[i] == '.';
    if (!is_alnum(s[i]) && !(inner && i > 0 && i < len - 1))
      return 0;
  }
  return 1;
}

int gc_name_is_qualified(const char *s, size_t len) {
  if (!has_len(s, len, GC_NAME_SUBDOMAIN_MAX + 1 + GC_NAME_LABEL_MAX))
    return 0;
  const char *slash = memchr(s, '/', len);
  if (!slash)
    return is_label_name(s, len);
  size_t plen = (size_t)(slash - s);
  return plen > 0 && gc_name_is_dns1123_subdomain(s, plen) &&
         is_label_name(slash + 1, len - plen - 1);
}

int gc_name_is_label_value(const char *s, size_t len) { return len == 0 || is_label_name(s, len); }
