#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""deploy/admissionpolicy.yaml, run: the ValidatingAdmissionPolicy's CEL expressions evaluated
(tests/common/cel_subset.py, a subset evaluator: no CEL implementation is packaged for Debian
and the stand-in API server has no admission policies, so this is not the API server's
cel-go) on the writes gangbridge makes and on the writes a compromised gangbridge pod could
try.  Every allowed case is a write the code makes (the placement release of
bridge/placement/gb_release.c, the requeue of bridge/timeouts/gb_requeue.c, the leader label
on its own pod); every refused one is a write nothing in gangbridge makes.  Requests of other
users are not matched."""
import copy
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GB_SRC") or os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "common"))
import cel_subset  # noqa: E402

policy = next(d for d in yaml.safe_load_all(open(os.path.join(SRC, "deploy",
                                                              "admissionpolicy.yaml")))
              if d and d["kind"] == "ValidatingAdmissionPolicy")
SA = "system:serviceaccount:gangbridge-system:gangbridge"
GATE = "gangbridge.io/placement"


def req(resource, user=SA, pod_name="gangbridge-7d9f-abc"):
    extra = {"authentication.kubernetes.io/pod-name": [pod_name]} if pod_name else {}
    return {"resource": {"group": "" if resource == "pods" else "trainer.kubeflow.org",
                         "version": "v1", "resource": resource},
            "operation": "UPDATE", "userInfo": {"username": user, "extra": extra}}


POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "llama-node-0-0", "namespace": "team-a",
                 "labels": {"jobset.sigs.k8s.io/jobset-name": "llama"},
                 "annotations": {"scheduling.k8s.io/group-name": "llama"},
                 "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "llama-node-0",
                                      "uid": "u1", "controller": True}]},
    "spec": {"containers": [{"name": "node", "image": "pytorch:2.4",
                             "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
             "schedulingGates": [{"name": GATE}],
             "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
             "terminationGracePeriodSeconds": 30},
}
RESTRICTION = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In",
                                                 "values": ["r1"]}]}]}}}
TJ = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "llama", "namespace": "team-a", "labels": {"team": "a"},
                 "annotations": {"owner": "alice"}},
    "spec": {"runtimeRef": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
             "trainer": {"numNodes": 4, "image": "pytorch:2.4"}, "suspend": False},
}


def edit(obj, fn):
    o = copy.deepcopy(obj)
    fn(o)
    return o


def release(p):  # gb_release: gate removed, node affinity AND-ed in
    p["spec"]["schedulingGates"] = [g for g in p["spec"]["schedulingGates"] if g["name"] != GATE]
    if not p["spec"]["schedulingGates"]:
        del p["spec"]["schedulingGates"]
    p["spec"]["affinity"] = copy.deepcopy(RESTRICTION)


def own_pod():
    return edit(POD, lambda p: (p["metadata"].update(name="gangbridge-7d9f-abc",
                                                     namespace="gangbridge-system"),
                                p["spec"].pop("schedulingGates")))


def add_gate(name):
    return lambda p: p["spec"]["schedulingGates"].append({"name": name})


cases = [
    # (what, allowed, request, object, oldObject)
    ("placement release: gate removed, node affinity added", True,
     req("pods"), edit(POD, release), POD),
    ("release of one gate among others: only ours removed", True,
     req("pods"), edit(edit(POD, add_gate("other.io/gate")), release),
     edit(POD, add_gate("other.io/gate"))),
    ("node affinity added while still gated (release in two steps)", True,
     req("pods"), edit(POD, lambda p: p["spec"].update(affinity=RESTRICTION)), POD),
    ("a no-op update", True, req("pods"), POD, POD),
    ("leader label on its own pod", True, req("pods"),
     edit(own_pod(), lambda p: p["metadata"]["labels"].update({"gangbridge.io/leader": "true"})),
     own_pod()),
    ("leader label removed from its own pod", True, req("pods"), own_pod(),
     edit(own_pod(), lambda p: p["metadata"]["labels"].update({"gangbridge.io/leader": "true"}))),
    ("image changed", False, req("pods"),
     edit(POD, lambda p: p["spec"]["containers"][0].update(image="evil:latest")), POD),
    ("image changed in a released pod", False, req("pods"),
     edit(edit(POD, release), lambda p: p["spec"]["containers"][0].update(image="evil")),
     edit(POD, release)),
    ("another scheduler's gate removed", False, req("pods"),
     edit(POD, lambda p: p["spec"].update(schedulingGates=[{"name": GATE}])),
     edit(POD, add_gate("other.io/gate"))),
    ("a gate added", False, req("pods"), edit(POD, add_gate("x.io/hold")), POD),
    ("node affinity on a pod gangbridge does not gate", False, req("pods"),
     edit(edit(POD, release), lambda p: p["spec"]["affinity"]["nodeAffinity"].update(x=1)),
     edit(POD, release)),
    ("pod anti-affinity added while gated", False, req("pods"),
     edit(POD, lambda p: p["spec"].update(affinity={"podAntiAffinity": {"x": 1}})), POD),
    ("a toleration added", False, req("pods"),
     edit(POD, lambda p: p["spec"]["tolerations"].append({"operator": "Exists"})), POD),
    ("a tenant pod labelled", False, req("pods"),
     edit(POD, lambda p: p["metadata"]["labels"].update(evil="1")), POD),
    ("a tenant pod labelled leader", False, req("pods"),
     edit(POD, lambda p: p["metadata"]["labels"].update({"gangbridge.io/leader": "true"})), POD),
    ("the other replica's pod labelled leader", False, req("pods", pod_name="gangbridge-other"),
     edit(own_pod(), lambda p: p["metadata"]["labels"].update({"gangbridge.io/leader": "true"})),
     own_pod()),
    ("a token bound to no pod labels a pod leader", False, req("pods", pod_name=None),
     edit(own_pod(), lambda p: p["metadata"]["labels"].update({"gangbridge.io/leader": "true"})),
     own_pod()),
    ("its own pod's other labels changed", False, req("pods"),
     edit(own_pod(), lambda p: p["metadata"]["labels"].update(app="x")), own_pod()),
    ("a pod annotation changed", False, req("pods"),
     edit(POD, lambda p: p["metadata"]["annotations"].update(x="1")), POD),
    ("a pod's owner removed", False, req("pods"),
     edit(POD, lambda p: p["metadata"].pop("ownerReferences")), POD),
    ("requeue: suspended, requeue annotations written", True, req("trainjobs"),
     edit(TJ, lambda t: (t["spec"].update(suspend=True),
                         t["metadata"]["annotations"].update({
                             "gangbridge.io/requeue-attempt": "1",
                             "gangbridge.io/requeue-resume-at": "2026-11-27T12:00:00Z",
                             "gangbridge.io/requeued-by": "gangbridge"}))), TJ),
    ("resume: unsuspended, annotations removed", True, req("trainjobs"), TJ,
     edit(TJ, lambda t: (t["spec"].update(suspend=True),
                         t["metadata"]["annotations"].update({
                             "gangbridge.io/requeue-resume-at": "x"})))),
    ("TrainJob trainer image changed", False, req("trainjobs"),
     edit(TJ, lambda t: t["spec"]["trainer"].update(image="evil")), TJ),
    ("TrainJob runtime changed", False, req("trainjobs"),
     edit(TJ, lambda t: t["spec"]["runtimeRef"].update(name="other")), TJ),
    ("TrainJob managedBy set", False, req("trainjobs"),
     edit(TJ, lambda t: t["spec"].update(managedBy="kueue.x-k8s.io/multikueue")), TJ),
    ("a TrainJob's own annotation changed", False, req("trainjobs"),
     edit(TJ, lambda t: t["metadata"]["annotations"].update(owner="mallory")), TJ),
    ("a TrainJob label changed", False, req("trainjobs"),
     edit(TJ, lambda t: t["metadata"]["labels"].update(team="b")), TJ),
    ("another user's image change is not this policy's business", True,
     req("pods", user="system:serviceaccount:team-a:default"),
     edit(POD, lambda p: p["spec"]["containers"][0].update(image="x")), POD),
]

failed = 0
for what, want, request, obj, old in cases:
    got, why = cel_subset.admit(policy, request, obj, old)
    ok = got == want
    failed += not ok
    print("%s %-60s %s%s" % ("ok  " if ok else "FAIL", what, "allowed" if got else "denied",
                            "" if got else ": " + "; ".join(why)[:160]))
# The cases name every validation at least once as the reason for a denial.
msgs = {v["message"] for v in policy["spec"]["validations"]}
seen = set()
for what, want, request, obj, old in cases:
    _, why = cel_subset.admit(policy, request, obj, old)
    seen |= {m for m in msgs if any(w.startswith(m) for w in why)}
for m in sorted(msgs - seen):
    print("FAIL no case is denied by: %s" % m)
    failed += 1
print("%d passed, %d failed" % (len(cases) + len(msgs) - failed, failed))
sys.exit(1 if failed else 0)
