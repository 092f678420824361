/* SPDX-License-Identifier: Apache-2.0
 *
 * gc_name: the Kubernetes name rules gangcalc and the bridge check, as
 * apimachinery's pkg/util/validation spells them (IsDNS1035Label,
 * IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue).
 * Each function takes a byte range, not a C string, so that a name with an
 * embedded NUL byte is refused rather than cut short.  The functions only
 * answer yes or no; callers word the error, naming where the name came from.
 */
#ifndef GC_NAME_H
#define GC_NAME_H

#include <stddef.h>

/* Longest DNS-1123 / DNS-1035 label, and the name part of a qualified name
 * or a label value. */
#define GC_NAME_LABEL_MAX 63
/* Longest DNS-1123 subdomain (also the prefix of a qualified name). */
#define GC_NAME_SUBDOMAIN_MAX 253

/* 1 if s[0..len) is an RFC 1035 label (TrainJob and replicated job names):
 * [a-z]([-a-z0-9]*[a-z0-9])?, 1..63 bytes.  s is borrowed; NULL gives 0. */
int gc_name_is_dns1035(const char *s, size_t len);

/* 1 if s[0..len) is an RFC 1123 label (namespaces):
 * [a-z0-9]([-a-z0-9]*[a-z0-9])?, 1..63 bytes.  s is borrowed; NULL gives 0. */
int gc_name_is_dns1123_label(const char *s, size_t len);

/* 1 if s[0..len) is an RFC 1123 subdomain (Volcano queue names): labels as
 * above joined by '.', 1..253 bytes in all.  As in apimachinery, a single
 * label is not limited to 63 bytes here: only the total length is.  s is
 * borrowed; NULL gives 0. */
int gc_name_is_dns1123_subdomain(const char *s, size_t len);

/* 1 if s[0..len) is a qualified name (label and annotation keys): an
 * optional "<subdomain>/" prefix, then a name of 1..63 bytes matching
 * ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].  s is borrowed; NULL gives 0. */
int gc_name_is_qualified(const char *s, size_t len);

/* 1 if s[0..len) is a label value: empty, or 1..63 bytes matching
 * ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].  s is borrowed; NULL with
 * len 0 is the empty value. */
int gc_name_is_label_value(const char *s, size_t len);

#endif
