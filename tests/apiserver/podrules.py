# SPDX-License-Identifier: Apache-2.0
"""The pod update rules of the real API server that the stand-in enforces.

This module owns what ValidatePodUpdate (pkg/apis/core/validation) checks on a pod spec
update, as far as gangbridge's placement depends on it: spec.schedulingGates may only lose
gates (KEP-3521); while the old pod still has a gate, spec.nodeSelector may only gain
entries and spec.affinity.nodeAffinity may be set when it has no required terms, or else
keep the same number of required nodeSelectorTerms, each only gaining matchExpressions and
matchFields after its existing ones (an empty term gains nothing), while
preferredDuringSchedulingIgnoredDuringExecution may change freely (KEP-3838); every other
spec change is refused with the usual "pod updates may not change fields other than ..."
error, except the container images, activeDeadlineSeconds, added tolerations and a
terminationGracePeriodSeconds set to 1 from a negative value.  Equality is semantic as in
apimachinery: an absent, null, empty list or empty map value are the same.  It also owns
the pods/binding subresource's checks (a scheduler binds a pod only when it has no gate and
no node).
"""

import copy
import difflib
import json

import schema as vschema

TERMS = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution" \
        ".nodeSelectorTerms"
UPDATABLE = ("pod updates may not change fields other than `spec.containers[*].image`,"
             "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
             "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
             "(allow it to be set to 1 if it was previously negative)")


def forbidden(field, detail):
    return vschema.FieldError(field, "FieldValueForbidden", "Forbidden: " + detail)


def semantic(v):
    """v with every null, empty list and empty map member removed (apimachinery's
    Semantic.DeepEqual treats them as absent)."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            x = semantic(x)
            if x is not None and x != [] and x != {}:
                out[k] = x
        return out
    if isinstance(v, list):
        return [semantic(x) for x in v]
    return v


def _list(v):
    return v if isinstance(v, list) else []


def _map(v):
    return v if isinstance(v, dict) else {}


def only_deleted_gates(new, old):
    """validateOnlyDeletedSchedulingGates: a gate name the old pod did not have."""
    added = {}
    for i, g in enumerate(_list(new)):
        added[_map(g).get("name")] = i
    for g in _list(old):
        added.pop(_map(g).get("name"), None)
    return [forbidden("spec.schedulingGates[%d].name" % i,
                      "only deletion is allowed, but found new scheduling gate '%s'" % name)
            for name, i in sorted(added.items(), key=lambda kv: kv[1])]


def _only_added_tolerations(new, old):
    """validateOnlyAddedTolerations, simplified: every old toleration must still be there
    (its tolerationSeconds may change)."""
    def key(t):
        t = dict(_map(t))
        t.pop("tolerationSeconds", None)
        return semantic(t)
    have = [key(t) for t in _list(new)]
    if all(key(t) in have for t in _list(old)):
        return []
    return [forbidden("spec.tolerations",
                      "existing toleration can not be modified except its tolerationSeconds")]


def _term_has_only_additions(new, old):
    """validateNodeSelectorTermHasOnlyAdditions."""
    new, old = _map(new), _map(old)
    om, of = _list(old.get("matchExpressions")), _list(old.get("matchFields"))
    nm, nf = _list(new.get("matchExpressions")), _list(new.get("matchFields"))
    # An empty term matches no node: a requirement added to it would widen the pod's
    # choice, not narrow it.
    if not om and not of and (nm or nf):
        return False
    for o, n in ((om, nm), (of, nf)):
        if o and (len(n) < len(o) or semantic(n[:len(o)]) != semantic(o)):
            return False
    return True


def node_affinity_mutation(new, old):
    """validateNodeAffinityMutation: errors of a gated pod's node affinity change."""
    old_req = _map(old).get("requiredDuringSchedulingIgnoredDuringExecution")
    if old_req is None:
        return []
    old_terms = _list(_map(old_req).get("nodeSelectorTerms"))
    new_req = _map(_map(new).get("requiredDuringSchedulingIgnoredDuringExecution"))
    new_terms = _list(new_req.get("nodeSelectorTerms"))
    if not old_terms:
        return []
    if len(old_terms) != len(new_terms):
        return [vschema.invalid(TERMS, new_terms, "no additions/deletions to non-empty "
                                "NodeSelectorTerms list are allowed")]
    return [vschema.invalid("%s[%d]" % (TERMS, i), new_terms[i],
                            "only additions are allowed (no mutations or deletions)")
            for i in range(len(old_terms))
            if not _term_has_only_additions(new_terms[i], old_terms[i])]


def _munge_gated(munged, old, errs):
    """The relaxations of a pod that still has a gate: checks them and puts the old values
    back into munged, so that only other changes remain for the final comparison."""
    old_sel, new_sel = _map(old.get("nodeSelector")), munged.get("nodeSelector")
    if semantic(old_sel) != semantic(_map(new_sel)):
        if any(_map(new_sel).get(k) != v for k, v in old_sel.items()):
            errs.append(vschema.invalid("spec.nodeSelector", new_sel or {},
                                        "only additions to spec.nodeSelector are allowed (no "
                                        "mutations or deletions)"))
        munged["nodeSelector"] = copy.deepcopy(old.get("nodeSelector"))
    old_na = _map(old.get("affinity")).get("nodeAffinity")
    aff = munged.get("affinity")
    new_na = _map(aff).get("nodeAffinity")
    if semantic(old_na) == semantic(new_na):
        return
    errs.extend(node_affinity_mutation(new_na, old_na))
    aff = dict(_map(aff))
    if old_na is None:
        aff.pop("nodeAffinity", None)
    else:
        aff["nodeAffinity"] = copy.deepcopy(old_na)
    munged["affinity"] = aff


def _spec_diff(old, new):
    a = json.dumps(semantic(old), indent=1, sort_keys=True).splitlines()
    b = json.dumps(semantic(new), indent=1, sort_keys=True).splitlines()
    return "\n".join(list(difflib.unified_diff(a, b, lineterm=""))[2:])


def validate_update(old_pod, new_pod):
    """The field errors of updating old_pod to new_pod (both whole Pod objects)."""
    old, new = _map(old_pod.get("spec")), _map(new_pod.get("spec"))
    errs = only_deleted_gates(new.get("schedulingGates"), old.get("schedulingGates"))
    errs.extend(_only_added_tolerations(new.get("tolerations"), old.get("tolerations")))
    munged = copy.deepcopy(new)
    for key in ("containers", "initContainers"):
        oc, nc = _list(old.get(key)), _list(munged.get(key))
        if len(oc) == len(nc):
            for o, n in zip(oc, nc):
                if isinstance(n, dict):
                    n["image"] = _map(o).get("image")
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        munged[key] = copy.deepcopy(old.get(key))
    grace = old.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = grace
    if _list(old.get("schedulingGates")):
        _munge_gated(munged, old, errs)
    if semantic(munged) != semantic(old):
        errs.append(forbidden("spec", UPDATABLE + "\n" + _spec_diff(old, munged)))
    return errs


def binding_conflict(pod):
    """Why a scheduler may not bind pod now (the registry's assignPod), or None."""
    spec = _map(pod.get("spec"))
    name = _map(pod.get("metadata")).get("name")
    if spec.get("nodeName"):
        return 'pod %s is already assigned to node "%s"' % (name, spec["nodeName"])
    if _list(spec.get("schedulingGates")):
        return "pod %s has non-empty .spec.schedulingGates" % name
    return None
