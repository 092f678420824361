# SPDX-License-Identifier: Apache-2.0
"""Issue 17 defect 8 and issue 19 finding 7: no pod is ever stranded behind gangbridge's gate.

`gangbridge serve` (label levels block/rack, placement.strayGateGrace 2s) on the stand-in:
1. A gang that fits nowhere (three 8-cpu pods, a hard rack policy, racks of two 8-cpu nodes)
   is gated through the webhook; one of its pods also carries Kueue's gate.  It stays gated:
   gangbridge holds it.  `gangbridge placement status --kubeconfig` lists its three pods
   from the API.
2. Stray gates: a pod created with gangbridge.io/placement but no JobSet label, and a JobSet
   pod of a TrainJob that does not exist, both created directly (never seen by the webhook),
   lose the gate once older than the grace, each with a Warning PlacementGateRemoved Event;
   the held gang keeps its gates.  The webhook strips the gate from a JobSet pod of a TrainJob
   gangbridge does not manage.
3. serve restarted with placement.enabled=false: the held gang's pods are released at once
   without a restriction; only gangbridge's gate goes (Kueue's stays); each gets a Normal
   PlacementGateRemoved Event; no /debug/placement is served and `placement status
   --kubeconfig` says no pod carries the gate.
Waits poll with a bound; nothing asserts a duration.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import controller_helpers as ch  # noqa: E402
from controller_helpers import Env, Runner, fail, namespace, runtime, trainjob  # noqa: E402
from placement_helpers import HARD_RACK, TAKE_OVER, add_node, admit  # noqa: E402

ch.PLURAL.update({"Node": "nodes"})
ch.CLUSTER_SCOPED |= {"Node"}
NS = "team-g"
GATE = "gangbridge.io/placement"
KUEUE = "kueue.x-k8s.io/admission"


def gates(env, name, ns=NS):
    p = env.get("v1", "Pod", ns, name)
    return [g["name"] for g in (p["spec"].get("schedulingGates") or [])] if p else None


def affinity(env, name):
    return env.get("v1", "Pod", NS, name)["spec"].get("affinity")


def pod(name, labels=None, gate_names=(GATE,)):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
            "spec": {"schedulingGates": [{"name": g} for g in gate_names],
                     "containers": [{"name": "c", "image": "i",
                                     "resources": {"requests": {"cpu": "8"}}}]}}


def jobset_labels(js, rjob="node"):
    return {"jobset.sigs.k8s.io/jobset-name": js, "jobset.sigs.k8s.io/replicatedjob-name": rjob}


def event(env, name, reason="PlacementGateRemoved"):
    evs = env.events(NS, name, reason)
    return evs[0] if evs else None


def status_api(env, *args):
    out = subprocess.run([ch.GANGBRIDGE, "placement", "status", "--kubeconfig", env.kubeconfig]
                         + list(args), capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        fail("placement status --kubeconfig: %s" % out.stderr)
    return out.stdout


def main():
    env = Env(crds=("trainer", "volcano"),
              serve_args=["--set", "topology.levels=block,rack",
                          "--set", "placement.strayGateGrace=2s"] + TAKE_OVER)
    run = Runner()
    big = ["big-node-0-%d" % i for i in range(3)]
    try:
        env.create(namespace(NS))
        env.create(runtime("torch", NS, policy=HARD_RACK))
        for n, b, r in (("n1", "b1", "r1"), ("n2", "b1", "r1"), ("n3", "b2", "r2")):
            add_node(env, n, {"block": b, "rack": r})
        env.start_serve()

        def test_held_gang_listed():
            env.create(trainjob("big", NS, "torch", num_nodes=3, cpu="8"))
            env.wait(lambda: env.podgroup("volcano", NS, "big"), "PodGroup big")
            for i, name in enumerate(big):
                p = pod(name, jobset_labels("big"), (KUEUE,) if i == 0 else ())
                p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = str(i)
                env.create(admit(env, p))
            if gates(env, big[0]) != [KUEUE, GATE] or gates(env, big[1]) != [GATE]:
                fail("the webhook did not gate the gang: %r %r" % (gates(env, big[0]),
                                                                   gates(env, big[1])))
            doc = json.loads(status_api(env, "-o", "json"))
            listed = sorted(p["name"] for p in doc["pods"])
            if listed != big:
                fail("placement status --kubeconfig lists %r" % listed)

        def test_stray_gates_removed():
            env.create(pod("lone"))
            env.create(pod("ghost-node-0-0", jobset_labels("ghost")))
            env.wait(lambda: gates(env, "lone") == [] and gates(env, "ghost-node-0-0") == [],
                     "the stray gates removed", 30)
            for name, why in (("lone", "not a JobSet pod"),
                              ("ghost-node-0-0", "does not manage TrainJob %s/ghost" % NS)):
                ev = env.wait(lambda: event(env, name), "the Event on " + name)
                if ev["type"] != "Warning" or why not in ev["message"]:
                    fail("%s: Event %r" % (name, ev))
            for name in big:
                if GATE not in gates(env, name):
                    fail("the held gang lost its gate: %s %r" % (name, gates(env, name)))
            # The webhook strips the gate where it sees one that gangbridge will not hold.
            p = admit(env, pod("nobody-node-0-0", jobset_labels("nobody"), (KUEUE, GATE)))
            if [g["name"] for g in p["spec"]["schedulingGates"]] != [KUEUE]:
                fail("webhook left %r" % p["spec"]["schedulingGates"])

        def test_disabled_releases_everything():
            env.stop_serve()
            env.start_serve(extra=["--set", "placement.enabled=false"])
            env.wait(lambda: all(GATE not in gates(env, n) for n in big),
                     "every gated pod released with placement disabled", 30)
            if gates(env, big[0]) != [KUEUE]:
                fail("Kueue's gate must stay: %r" % gates(env, big[0]))
            for n in big:
                if affinity(env, n):
                    fail("%s was restricted: %r" % (n, affinity(env, n)))
                ev = env.wait(lambda: event(env, n), "the Event on " + n)
                if ev["type"] != "Normal" or "placement is disabled" not in ev["message"]:
                    fail("%s: Event %r" % (n, ev))
            if env.http_get("/debug/placement", env.debug_port)[0] == 200:
                fail("/debug/placement served with placement disabled")
            out = status_api(env)
            if "No pod carries the gangbridge.io/placement scheduling gate." not in out:
                fail("status after the release: %s" % out)

        run.run("held gang listed from the API", test_held_gang_listed)
        run.run("stray gates removed, webhook strips", test_stray_gates_removed)
        run.run("placement disabled releases every gate", test_disabled_releases_everything)
    finally:
        env.stop()
    run.exit()


if __name__ == "__main__":
    main()
