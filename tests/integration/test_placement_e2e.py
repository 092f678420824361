# SPDX-License-Identifier: Apache-2.0
"""End-to-end: topology-aware placement by `gangbridge serve` on the stand-in.

The test plays JobSet and the API server: it creates each gang's pods in dependsOn order,
and for each pod first asks serve's pod webhook (an AdmissionReview v1, as the API server
does), applies the JSON Patch it answers, then creates the pod on the stand-in, which
enforces Kubernetes' rules for gated pods.  gangbridge's live model sees the gated pods and
releases each gang (gate removed, node affinity added) into the domain it chose.  Cases:
- label levels (topology.levels=block,rack): a gang of two 8-cpu pods, required in one rack,
  is released with `rack In [r1]`; a second gang that the first one's reservation leaves no
  room for stays gated, with a PlacementWaiting Event, and is released into r2 once a node
  joins it;
- a cordoned node is not counted: a gang that needs it waits until another node joins;
- restart (a new leader) while a gang is gated: the new process picks the gang up from the
  pods' gates and releases it when capacity appears;
- HyperNodes (the Volcano CRD served, no label levels): the restriction lists the chosen
  HyperNode's nodes by kubernetes.io/hostname.
Waits poll with a bound; nothing asserts a duration.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import controller_helpers as ch  # noqa: E402
import kubeclient  # noqa: E402
from controller_helpers import Env, fail, namespace, runtime, trainjob  # noqa: E402
from placement_helpers import (HARD_RACK, TAKE_OVER, add_node, create_pods, gated,  # noqa: E402
                               model_has, pods_of, setup_gang, status_of, wait_released)

# ---- cases ---------------------------------------------------------------------------------

def test_label_levels(env):
    ns = "team-a"
    env.create(namespace(ns))
    env.create(runtime("torch", ns, policy=HARD_RACK))
    for name, block, rack in (("n1", "b1", "r1"), ("n2", "b1", "r1"), ("n3", "b2", "r2")):
        add_node(env, name, {"block": block, "rack": rack})

    # Two 8-cpu pods in one rack: only r1 has two free nodes.
    setup_gang(env, ns, "job")
    wait_released(env, ns, "job", 2, ("rack", ["r1"]))

    # r1 is reserved for job until its pods bind; r2 has one node: job2 waits, gated, saying why.
    setup_gang(env, ns, "job2")
    env.wait(lambda: (status_of(env, ns + "/job2") or {}).get("outcome") == "nofit",
             "job2 decided NOFIT")
    env.wait(lambda: env.events(ns, "job2", "PlacementWaiting"), "PlacementWaiting Event")
    if not all(gated(p) for p in pods_of(env, ns, "job2", 2)):
        fail("job2 was released although it fits nowhere")
    reason = status_of(env, ns + "/job2")["reason"]
    if not reason:
        fail("no reason for the waiting gang")
    # The gangs' document is on placement.debugAddress only: the probes' port, which Prometheus
    # and the kubelet reach, answers 404 for it (issue 19, finding 2).
    code, body = env.http_get("/debug/placement")
    if code != 404 or "job2" in body:
        fail("/debug/placement on the probes port answered %s: %s" % (code, body[:200]))

    # A node joins r2: capacity grew, job2 goes there.
    add_node(env, "n4", {"block": "b2", "rack": "r2"})
    wait_released(env, ns, "job2", 2, ("rack", ["r2"]))

def test_grpc_evaluate_live(env):
    """gRPC Evaluate without cluster documents answers from serve's live model.  After the
    label-levels case the two gangs hold all four 8-cpu nodes (bound or reserved), so a 1-cpu
    probe fits nowhere, and the reason names the cluster's own racks: only the live model,
    with the plan's reservations, knows both."""
    gang = os.path.join(env.tmp, "gang.yaml")
    with open(gang, "w") as fh:
        fh.write("apiVersion: gangbridge.io/v1alpha1\nkind: Gang\nmetadata: {name: probe}\n"
                 "spec:\n  podSets: [{name: w, count: 1, requests: {cpu: '1'}}]\n"
                 "  networkTopology: {mode: hard, highestTierAllowed: 1}\n")
    out = subprocess.run([ch.GANGBRIDGE, "call", "evaluate", "--gang", gang,
                          "--addr", "127.0.0.1:%d" % GRPC_PORT], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        fail("call evaluate: exit %d: %s" % (out.returncode, out.stderr))
    doc = json.loads(out.stdout)
    reasons = " ".join(doc.get("reasons") or [])
    if doc.get("feasible"):
        fail("every node is taken or reserved, yet the probe fits: %s" % out.stdout[:500])
    if "/r1" not in reasons and "/r2" not in reasons:
        fail("the reasons name none of the cluster's racks: %s" % reasons)


def test_cordoned_node(env):
    ns = "team-c"
    env.create(namespace(ns))
    env.create(runtime("torch", ns, policy=HARD_RACK))
    add_node(env, "c1", {"block": "b3", "rack": "r3"})
    add_node(env, "c2", {"block": "b3", "rack": "r3"})
    # c2 is cordoned before the gang arrives: r3 has one schedulable node, nothing else is free.
    env.merge_patch("v1", "Node", None, "c2", {"spec": {"unschedulable": True}})
    setup_gang(env, ns, "job")
    env.wait(lambda: (status_of(env, ns + "/job") or {}).get("outcome") == "nofit",
             "job waits: the cordoned node does not count")
    if not all(gated(p) for p in pods_of(env, ns, "job", 2)):
        fail("released onto a cordoned node")
    add_node(env, "c3", {"block": "b3", "rack": "r3"})
    wait_released(env, ns, "job", 2, ("rack", ["r3"]))


def test_restart_while_gated(env):
    ns = "team-r"
    env.create(namespace(ns))
    env.create(runtime("torch", ns, policy=HARD_RACK))
    add_node(env, "x1", {"block": "b9", "rack": "r9"})
    setup_gang(env, ns, "job")
    env.wait(lambda: (status_of(env, ns + "/job") or {}).get("outcome") == "nofit", "job waits")
    # A new process that must win the leader election first: on becoming leader it picks up
    # the gated gang from the pods' gates (the state is on the pods).
    env.stop_serve()
    env.start_serve(extra=["--leader-elect", "--set", "leaderElection.namespace=default",
                           "--set", "leaderElection.retryPeriod=0.2s"])
    env.wait(lambda: "started leading" in env.serve_log(), "the new process to lead")
    add_node(env, "x2", {"block": "b9", "rack": "r9"})
    wait_released(env, ns, "job", 2, ("rack", ["r9"]))


def test_hypernodes():
    env = Env(crds=("trainer", "volcano"), serve_args=TAKE_OVER)
    try:
        kubeclient.install_crd(env.c, os.path.join(kubeclient.CRDS, "volcano",
                                                   "topology.volcano.sh_hypernodes.yaml"))
        env.start_serve()
        ns = "team-h"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, policy=HARD_RACK))
        for n in ("h1", "h2", "h3"):
            add_node(env, n, {})
        for name, members in (("leaf-a", ["h1"]), ("leaf-b", ["h2", "h3"])):
            env.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                        "metadata": {"name": name},
                        "spec": {"tier": 1, "members": [{"type": "Node", "selector": {
                            "exactMatch": {"name": m}}} for m in members]}})
        model_has(env, 2, 3)
        setup_gang(env, ns, "job")
        wait_released(env, ns, "job", 2, ("kubernetes.io/hostname", ["h2", "h3"]))

        # Node cordoned between the evaluation and the release: leaf-c has h4, h5 and h6, h5
        # and h6 cordoned, when job2 is evaluated (NOFIT); then h5 is uncordoned: the plan is
        # made again on the new model and lists h4 and h5, never the cordoned h6.
        for n in ("h4", "h5", "h6"):
            add_node(env, n, {})
        env.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                    "metadata": {"name": "leaf-c"},
                    "spec": {"tier": 1, "members": [{"type": "Node", "selector": {
                        "exactMatch": {"name": m}}} for m in ("h4", "h5", "h6")]}})
        for n in ("h5", "h6"):
            env.merge_patch("v1", "Node", None, n, {"spec": {"unschedulable": True}})
        model_has(env, 3, 6)
        env.create(trainjob("job2", ns, "torch", num_nodes=2, cpu="8"))
        env.wait(lambda: env.podgroup("volcano", ns, "job2"), "PodGroup job2")
        create_pods(env, ns, "job2", 2)
        env.wait(lambda: (status_of(env, ns + "/job2") or {}).get("outcome") == "nofit",
                 "job2 evaluated: NOFIT")
        env.merge_patch("v1", "Node", None, "h5", {"spec": {"unschedulable": False}})
        wait_released(env, ns, "job2", 2, ("kubernetes.io/hostname", ["h4", "h5"]))
    finally:
        env.stop()


GRPC_PORT = ch.free_port()


def main():
    env = Env(crds=("trainer", "volcano"),
              serve_args=["--set", "topology.levels=block,rack",
                          "--set", "grpc.address=127.0.0.1:%d" % GRPC_PORT] + TAKE_OVER)
    runner = ch.Runner()
    try:
        env.start_serve()
        runner.run("label levels: release, NOFIT, capacity", test_label_levels, env)
        runner.run("gRPC Evaluate on the live model", test_grpc_evaluate_live, env)
        runner.run("cordoned node not used", test_cordoned_node, env)
        runner.run("restart while gated", test_restart_while_gated, env)
    finally:
        env.stop()
    runner.run("HyperNodes", test_hypernodes)
    runner.exit()


if __name__ == "__main__":
    main()
