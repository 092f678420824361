/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_gangfacts: a gang's durable facts on gangbridge's PodGroup (see the
 * header).
 */
#include "gb_gangfacts.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gb_kobj.h"
#include "gb_requeue.h"
#include "gb_timeout_report.h"
#include "gc_diag.h"
#include "gc_gang.h"

void gb_gangfacts_clear(struct gb_gangfacts *f) {
  f->started_at = f->ready_at = f->timed_out_at = f->resumed_at = NAN;
}

/* One time annotation into *out; 0, or GC_EINVAL (reported in why). */
static int read_time(json_object *pg, json_object *ann, const char *key, double *out, char *why,
                     size_t cap) {
  const char *s = gb_kobj_str(ann, key);
  int64_t t = 0;
  *out = NAN;
  if (!s)
    return 0;
  if (gb_timeout_report_parse_time(s, &t)) {
    json_object *m = gb_kobj_get(pg, "metadata");
    const char *ns = gb_kobj_str(m, "namespace"), *name = gb_kobj_str(m, "name");
    snprintf(why, cap, "%s/%s: metadata.annotations[%s]: not an RFC 3339 time, got \"%.64s\"",
             ns ? ns : "", name ? name : "", key, s);
    return GC_EINVAL;
  }
  *out = (double)t;
  return 0;
}

int gb_gangfacts_read(json_object *pg, struct gb_gangfacts *f, char *why, size_t why_size) {
  json_object *ann = gb_kobj_dig(pg, "metadata", "annotations", NULL);
  int rc = 0;
  gb_gangfacts_clear(f);
  if (why_size)
    why[0] = '\0';
  if (read_time(pg, ann, GB_ANN_STARTED_AT, &f->started_at, why, why_size))
    rc = GC_EINVAL;
  if (read_time(pg, ann, GB_ANN_READY_AT, &f->ready_at, why, why_size))
    rc = GC_EINVAL;
  if (read_time(pg, ann, GB_ANN_TIMED_OUT_AT, &f->timed_out_at, why, why_size))
    rc = GC_EINVAL;
  if (read_time(pg, ann, GB_ANN_RESUMED_AT, &f->resumed_at, why, why_size))
    rc = GC_EINVAL;
  return rc;
}

int gb_gangfacts_ours(json_object *pg, const char *tj_uid) {
  const char *mb = gb_kobj_label(pg, GC_MANAGED_BY_LABEL);
  if (!mb || strcmp(mb, GC_MANAGER_NAME) != 0)
    return 0;
  json_object *ref = gb_kobj_owner(pg, "TrainJob", tj_uid, 1);
  return ref && gb_kobj_str(ref, "uid");
}

static int add_time(json_object *ann, const char *key, double t) {
  char buf[32];
  if (isnan(t))
    return 0;
  gb_requeue_format_time(t, buf, sizeof(buf));
  json_object *s = json_object_new_string(buf);
  if (!s || json_object_object_add(ann, key, s)) {
    json_object_put(s);
    return GC_ENOMEM;
  }
  return 1;
}

int gb_gangfacts_patch(const char *rv, const struct gb_gangfacts *add, json_object **out) {
  *out = NULL;
  if (!rv || !rv[0])
    return GC_EINVAL;
  json_object *p = json_object_new_object(), *meta = json_object_new_object(),
              *ann = json_object_new_object(), *rvs = json_object_new_string(rv);
  int n = 0, rc = GC_ENOMEM;
  if (!p || !meta || !ann || !rvs)
    goto out;
  const struct {
    const char *key;
    double t;
  } facts[] = {{GB_ANN_STARTED_AT, add->started_at},
               {GB_ANN_READY_AT, add->ready_at},
               {GB_ANN_TIMED_OUT_AT, add->timed_out_at},
               {GB_ANN_RESUMED_AT, add->resumed_at}};
  for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
    int r = add_time(ann, facts[i].key, facts[i].t);
    if (r < 0)
      goto out;
    n += r;
  }
  rc = GC_EINVAL;
  if (n == 0)
    goto out;
  json_object_object_add(meta, "resourceVersion", rvs);
  json_object_object_add(meta, "annotations", ann);
  json_object_object_add(p, "metadata", meta);
  *out = p;
  return 0;
out:
  json_object_put(p);
  json_object_put(meta);
  json_object_put(ann);
  json_object_put(rvs);
  return rc;
}
