/* SPDX-License-Identifier: Apache-2.0
 *
 * gb_release: the release merge patch of a gated pod and where a pod stands
 * (see gb_release.h).  The restriction's terms come from
 * controller/gb_restriction and the gate's name from kube/gb_gate; this file
 * owns the body.
 */
#include "gb_release.h"

#include <stdio.h>
#include <string.h>

#include "gb_gate.h"
#include "gb_kobj.h"

#define REQUIRED "requiredDuringSchedulingIgnoredDuringExecution"

/* Copies the pod's gates but ours into *kept (NULL when none is left).
 * Returns 1 when ours was there, 0 when not, or a negative code. */
static int gates_without_ours(json_object *pod, const char *where, json_object **kept,
                              struct gc_diags *d) {
  json_object *gates = gb_kobj_dig(pod, "spec", "schedulingGates", NULL);
  *kept = NULL;
  if (!gates)
    return 0;
  if (!json_object_is_type(gates, json_type_array)) {
    gc_diags_addf(d, "%s: spec.schedulingGates: not a list", where);
    return GC_EINVAL;
  }
  int ours = 0;
  json_object *list = json_object_new_array();
  if (!list)
    return GC_ENOMEM;
  for (size_t i = 0; i < json_object_array_length(gates); i++) {
    json_object *g = json_object_array_get_idx(gates, i);
    const char *name = gb_kobj_str(g, "name");
    if (name && !strcmp(name, GB_PLACEMENT_GATE))
      ours = 1;
    else
      json_object_array_add(list, gb_kobj_copy(g));
  }
  if (json_object_array_length(list))
    *kept = list;
  else
    json_object_put(list);
  return ours;
}

/* {"metadata":{"resourceVersion":rv},"spec":{"schedulingGates":kept,
 * ["affinity":{"nodeAffinity":{REQUIRED:{"nodeSelectorTerms":terms}}}]}}
 * (takes kept and terms). */
static json_object *release_body(const char *rv, json_object *kept, json_object *terms) {
  json_object *body = json_object_new_object(), *md = json_object_new_object();
  json_object *spec = json_object_new_object(), *rvs = json_object_new_string(rv);
  json_object *aff = terms ? json_object_new_object() : NULL;
  json_object *na = terms ? json_object_new_object() : NULL;
  json_object *req = terms ? json_object_new_object() : NULL;
  if (!body || !md || !spec || !rvs || (terms && (!aff || !na || !req))) {
    json_object *all[] = {body, md, spec, rvs, aff, na, req, kept, terms};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
      json_object_put(all[i]);
    return NULL;
  }
  json_object_object_add(md, "resourceVersion", rvs);
  json_object_object_add(body, "metadata", md);
  json_object_object_add(spec, "schedulingGates", kept); /* NULL: JSON null, removes the list */
  if (terms) {
    json_object_object_add(req, "nodeSelectorTerms", terms);
    json_object_object_add(na, REQUIRED, req);
    json_object_object_add(aff, "nodeAffinity", na);
    json_object_object_add(spec, "affinity", aff);
  }
  json_object_object_add(body, "spec", spec);
  return body;
}

int gb_release_patch(json_object *pod, const struct gb_restriction *r, json_object **out,
                     struct gc_diags *d) {
  if (!out)
    return GC_EINVAL;
  *out = NULL;
  if (!pod || !r)
    return GC_EINVAL;
  char where[330];
  gb_kobj_where(pod, where, sizeof(where));
  const char *rv = gb_kobj_meta(pod, "resourceVersion");
  if (!rv || !rv[0]) {
    gc_diags_addf(d,
                  "%s: metadata.resourceVersion: missing; the release needs it as its "
                  "precondition",
                  where);
    return GC_EINVAL;
  }
  json_object *kept = NULL, *terms = NULL;
  int rc = gates_without_ours(pod, where, &kept, d);
  if (rc == 0) {
    gc_diags_addf(d, "%s: spec.schedulingGates: no %s gate (see gb_release_state)", where,
                  GB_PLACEMENT_GATE);
    rc = GC_ENOTFOUND;
  }
  if (rc < 0)
    goto out;
  if ((rc = gb_restriction_anded_terms(pod, r, &terms, d)))
    goto out;
  *out = release_body(rv, kept, terms);
  kept = terms = NULL;
  rc = *out ? 0 : GC_ENOMEM;
out:
  json_object_put(kept);
  json_object_put(terms);
  return rc;
}

int gb_release_state(json_object *pod, const struct gb_restriction *r, enum gb_release_state *state,
                     struct gc_diags *d) {
  if (!pod || !r || !state)
    return GC_EINVAL;
  char where[330];
  gb_kobj_where(pod, where, sizeof(where));
  json_object *kept = NULL;
  int rc = gates_without_ours(pod, where, &kept, d);
  json_object_put(kept);
  if (rc < 0)
    return rc;
  if (rc == 1 || r->kind == GB_RESTRICT_NONE) {
    *state = rc == 1 ? GB_RELEASE_GATED : GB_RELEASE_DONE;
    return 0;
  }
  int in_place = 0;
  if ((rc = gb_restriction_in_place(pod, r, &in_place, d)))
    return rc;
  *state = in_place ? GB_RELEASE_DONE : GB_RELEASE_UNRESTRICTED;
  return 0;
}
