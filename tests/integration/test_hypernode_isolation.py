# SPDX-License-Identifier: Apache-2.0
"""Issue 17, defect 6: one bad HyperNode does not switch placement off for everyone.

The stand-in serves Volcano's HyperNode CRD.  Nodes h1..h4; HyperNodes leaf-a [h1],
leaf-b [h2, h3] and spine [leaf-a, leaf-b] are valid; `loop` lists itself (and h4), and is
there before `gangbridge serve` starts, so its live model never had a good tree to fall back
on.  Then:
- serve's model leaves `loop` out and keeps the rest: a Warning Event HyperNodeInvalid on
  HyperNode loop (in namespace default, as for every cluster-scoped object) names the
  reason, and the log says it;
- a gang with a hard tier-1 (leaf) policy is released into leaf-b (its pods restricted to
  h2 and h3), not left `nofit` on a flat cluster;
- a second bad HyperNode added while serving (a two-HyperNode cycle) is left out too, with
  its Events, and the next gang is still placed by leaf;
- offline `gangbridge place` on the same objects stays strict: exit 1, naming HyperNode/loop.
Waits poll with a bound; nothing asserts a duration.
"""

import json
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import controller_helpers as ch  # noqa: E402
import kubeclient  # noqa: E402
from controller_helpers import Env, Runner, fail, namespace, runtime  # noqa: E402
from placement_helpers import (HARD_RACK, TAKE_OVER, add_node, setup_gang,  # noqa: E402
                                status_of, wait_released)

ch.PLURAL.update({"Node": "nodes", "HyperNode": "hypernodes"})
ch.CLUSTER_SCOPED |= {"Node", "HyperNode"}
HN_API = "topology.volcano.sh/v1alpha1"


def hypernode(name, tier, nodes=(), hypernodes=()):
    members = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in hypernodes]
    return {"apiVersion": HN_API, "kind": "HyperNode", "metadata": {"name": name},
            "spec": {"tier": tier, "members": members}}


def hn_events(env, name):
    r = env.c.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=%s" % name)
    if r.status != 200:
        fail("list events: %r" % r)
    return [e for e in r.json["items"] if e.get("reason") == "HyperNodeInvalid"
            and e["involvedObject"].get("kind") == "HyperNode"]


def main():
    env = Env(crds=("trainer", "volcano"), serve_args=TAKE_OVER)
    run = Runner()
    try:
        kubeclient.install_crd(env.c, os.path.join(kubeclient.CRDS, "volcano",
                                                   "topology.volcano.sh_hypernodes.yaml"))
        ns = "team-i"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, policy=HARD_RACK))
        for n in ("h1", "h2", "h3", "h4"):
            add_node(env, n, {})
        objs = [hypernode("leaf-a", 1, ["h1"]), hypernode("leaf-b", 1, ["h2", "h3"]),
                hypernode("spine", 2, hypernodes=["leaf-a", "leaf-b"]),
                hypernode("loop", 1, ["h4"], ["loop"])]
        for o in objs:
            env.create(o)
        env.start_serve()

        def test_left_out_with_event():
            env.wait(lambda: hn_events(env, "loop"), "a HyperNodeInvalid Event on loop", 30)
            ev = hn_events(env, "loop")[0]
            if ev["type"] != "Warning" or "loop lists itself" not in ev["message"]:
                fail("Event: %r" % ev)
            if ev["involvedObject"].get("namespace"):
                fail("a cluster-scoped object's Event names a namespace: %r" % ev["involvedObject"])
            if "HyperNode left out of the topology" not in env.serve_log():
                fail("no log line for the left-out HyperNode")
            for good in ("leaf-a", "leaf-b", "spine"):
                if hn_events(env, good):
                    fail("a valid HyperNode got an Event: %s" % good)

        def test_gang_placed_by_leaf():
            setup_gang(env, ns, "job")
            wait_released(env, ns, "job", 2, ("kubernetes.io/hostname", ["h2", "h3"]))
            st = status_of(env, ns + "/job")
            if st and st.get("outcome") == "nofit":
                fail("nofit: %r" % st)

        def test_cycle_while_serving():
            env.create(hypernode("cyc-a", 3, hypernodes=["cyc-b"]))
            env.create(hypernode("cyc-b", 4, hypernodes=["cyc-a"]))
            env.wait(lambda: hn_events(env, "cyc-a") and hn_events(env, "cyc-b"),
                     "HyperNodeInvalid Events on both HyperNodes of the cycle", 30)
            # The job's pods are not bound (nobody schedules here): leaf-b stays reserved for
            # it, leaf-a is free.  A one-pod gang still goes by leaf.
            add_node(env, "h5", {})
            env.create(hypernode("leaf-c", 1, ["h5"]))
            setup_gang(env, ns, "job2", pods=1)
            env.wait(lambda: all(p and not any(g["name"] == "gangbridge.io/placement"
                                               for g in p["spec"].get("schedulingGates") or [])
                                 for p in [env.get("v1", "Pod", ns, "job2-node-0-0")]),
                     "job2 released", 30)
            pod = env.get("v1", "Pod", ns, "job2-node-0-0")
            terms = pod["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            hosts = [e["values"] for t in terms for e in t["matchExpressions"]
                     if e["key"] == "kubernetes.io/hostname"]
            if hosts not in ([["h1"]], [["h5"]]):
                fail("job2 restricted to %r, want one leaf (h1 or h5)" % hosts)

        def test_offline_place_strict():
            path = os.path.join(env.tmp, "cluster.yaml")
            nodes = [env.get("v1", "Node", None, n) for n in ("h1", "h2", "h3", "h4")]
            with open(path, "w") as fh:
                yaml.safe_dump_all(nodes + objs, fh)
            gang = os.path.join(env.tmp, "gang.yaml")
            with open(gang, "w") as fh:
                fh.write("apiVersion: gangbridge.io/v1alpha1\nkind: Gang\nmetadata: {name: g}\n"
                         "spec:\n  podSets: [{name: w, count: 2, requests: {cpu: '8'}}]\n")
            out = subprocess.run([ch.GANGBRIDGE, "place", "-c", path, "-f", gang, "-o", "json"],
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 1 or "HyperNode/loop" not in out.stderr:
                fail("offline place: exit %d, stderr %s" % (out.returncode, out.stderr[-1000:]))

        run.run("left out, Event names it", test_left_out_with_event)
        run.run("hard leaf gang placed", test_gang_placed_by_leaf)
        run.run("a cycle added while serving", test_cycle_while_serving)
        run.run("offline place stays strict", test_offline_place_strict)
    finally:
        env.stop()
    run.exit()


if __name__ == "__main__":
    _ = json
    main()
