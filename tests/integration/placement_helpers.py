# SPDX-License-Identifier: Apache-2.0
"""Helpers for the placement end-to-end tests (`gangbridge serve` on the stand-in).

The tests play JobSet and the API server: each gang's pods are created in index order, each
first sent to serve's pod webhook (an AdmissionReview v1, as the API server does), the JSON
Patch it answers applied, then created on the stand-in, which enforces Kubernetes' rules for
gated pods.  This module owns that path, cluster objects (nodes), reading pods' gates and
node affinity, and waiting for a gang's release or status.
"""

import base64
import copy
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import controller_helpers as ch  # noqa: E402
from controller_helpers import fail, trainjob  # noqa: E402

ch.PLURAL.update({"Node": "nodes", "HyperNode": "hypernodes"})
ch.CLUSTER_SCOPED |= {"Node", "HyperNode"}
GATE = "gangbridge.io/placement"
DECISION = "gangbridge.io/placement-decision"
# The runtimes carry Trainer's podGroupPolicy (with networkTopology): gangbridge takes them over.
TAKE_OVER = ["--set", "selection.takeOverTrainerPolicies=true"]
HARD_RACK = {"volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 1}}}


# ---- the API server's side: webhook call and JSON Patch ----------------------------------

def pointer(path):
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def apply_patch(obj, ops):
    """RFC 6902 add/remove/replace, as the API server applies a webhook's patch."""
    for op in ops:
        parts = pointer(op["path"])
        parent = obj
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                elif op["op"] == "add":
                    parent.insert(int(last), op["value"])
                else:
                    parent[int(last)] = op["value"]
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        else:
            fail("unexpected patch op %r" % op)
    return obj


JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"


def admit_review(port, pod, user=None):
    """Sends pod to serve's webhook on port as the API server would at CREATE (as user, if
    given); returns (the patched pod, the admission warnings)."""
    request = {"uid": "00000000-0000-4000-8000-%012d" % (hash(pod["metadata"]["name"]) % 10**12),
               "kind": {"group": "", "version": "v1", "kind": "Pod"},
               "resource": {"group": "", "version": "v1", "resource": "pods"},
               "namespace": pod["metadata"]["namespace"], "operation": "CREATE",
               "object": pod, "dryRun": False}
    if user:
        request["userInfo"] = {"username": user}
    review = {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", "/mutate-pods", body=json.dumps(review),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        status, body = r.status, r.read()
    finally:
        c.close()
    if status != 200:
        fail("webhook answered %d: %r" % (status, body[:300]))
    resp = json.loads(body)["response"]
    if not resp.get("allowed"):
        fail("webhook denied %s: %r" % (pod["metadata"]["name"], resp.get("status")))
    ops = json.loads(base64.b64decode(resp["patch"])) if resp.get("patch") else []
    return apply_patch(copy.deepcopy(pod), ops), resp.get("warnings") or []


def admit(env, pod):
    """The pod as the job controller's CREATE leaves serve's webhook."""
    return admit_review(env.hook_port, pod, JOB_CONTROLLER)[0]


def create_pods(env, ns, jobset, n, cpu="8", rjob="node"):
    """JobSet's pods of replicated job rjob, through the webhook, in index order."""
    for i in range(n):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "%s-%s-0-%d" % (jobset, rjob, i), "namespace": ns,
                            "labels": {"jobset.sigs.k8s.io/jobset-name": jobset,
                                       "jobset.sigs.k8s.io/replicatedjob-name": rjob,
                                       "batch.kubernetes.io/job-completion-index": str(i)}},
               "spec": {"schedulerName": "default-scheduler",
                        "containers": [{"name": "node", "image": "pytorch:1",
                                        "resources": {"requests": {"cpu": cpu}}}]}}
        env.create(admit(env, pod))


# ---- cluster objects -------------------------------------------------------------------

def add_node(env, name, labels, cpu="8"):
    env.create({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": dict(labels, **{"kubernetes.io/hostname": name})}})
    env.merge_patch("v1", "Node", None, name,
                    {"status": {"allocatable": {"cpu": cpu, "pods": "110", "memory": "64Gi"},
                                "conditions": [{"type": "Ready", "status": "True"}]}},
                    sub="/status")


def gated(pod):
    return any(g.get("name") == GATE for g in pod["spec"].get("schedulingGates") or [])


def requirements(pod):
    terms = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    return [e for t in terms for e in t.get("matchExpressions") or []]


def pods_of(env, ns, jobset, n):
    return [env.get("v1", "Pod", ns, "%s-node-0-%d" % (jobset, i)) for i in range(n)]


def wait_released(env, ns, jobset, n, want):
    """Waits until every pod of the gang is ungated with requirement `want` (key, values)."""
    def done():
        pods = pods_of(env, ns, jobset, n)
        return all(p and not gated(p) and any(
            r["key"] == want[0] and r["operator"] == "In" and sorted(r["values"]) == sorted(want[1])
            for r in requirements(p)) for p in pods)
    if not ch.kubeclient.wait_for(done, 30, 0.05):
        fail("%s/%s not released with %s In %s; pods %r\n/debug/placement: %s\n--- serve log ---\n%s"
             % (ns, jobset, want[0], want[1],
                [(p["metadata"]["name"], p["spec"].get("schedulingGates"), requirements(p))
                 for p in pods_of(env, ns, jobset, n) if p],
                env.http_get("/debug/placement", env.debug_port)[1], env.serve_log()[-3000:]))


def status_of(env, key):
    code, body = env.http_get("/debug/placement", env.debug_port)
    if code != 200:
        return None
    return next((g for g in json.loads(body)["gangs"] if g["gang"] == key), None)


def model_has(env, hypernodes, nodes):
    """Waits until serve's live model holds that many HyperNodes and nodes (a real cluster
    describes its network long before a gang arrives)."""
    def ok():
        code, body = env.http_get("/debug/placement", env.debug_port)
        m = json.loads(body)["model"] if code == 200 else {}
        return m.get("hypernodes") == hypernodes and m.get("nodes") == nodes
    env.wait(ok, "the model to hold %d HyperNodes and %d nodes" % (hypernodes, nodes))


def setup_gang(env, ns, name, pods=2, cpu="8"):
    env.create(trainjob(name, ns, "torch", num_nodes=pods, cpu=cpu))
    env.wait(lambda: env.podgroup("volcano", ns, name), "PodGroup %s/%s" % (ns, name))
    create_pods(env, ns, name, pods, cpu)


