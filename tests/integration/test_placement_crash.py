# SPDX-License-Identifier: Apache-2.0
"""Crash consistency of placement (issue 17): serve is SIGKILLed at a random moment of a
release, 20 seeds; after the restart every pod of the gang is in one domain and no node is
promised more than its allocatable.

One stand-in, racks rA..rF of 10, 8, 7, 5, 3 and 1 nodes of 8 cpu, a `mode: hard` rack gang
of 64 one-cpu pods: rA and rB hold it (bestfit takes rB, exactly full), and every smaller
remainder of it fits a tighter rack, so a restarted process that decided the still-gated
pods as a new gang would split it.  Each seed: a new namespace and TrainJob, the release
slowed (pod PATCHes 25 ms, two in flight), serve killed with SIGKILL once the seed's number
of pods (0, for one seed in four, else 1..63) is released plus a random few milliseconds
(before the record is written, after it, or half-way through the PATCHes), serve started
again; then
- every pod is released, all restricted to one rack (its label, or nodes of it),
- the record on the PodGroup names that rack,
- the plan reserves the 64 pods (none is bound: the stand-in has no scheduler) on nodes of
  that rack, none more than the 8 a node holds.
The seeds and outcomes are printed.  Nothing asserts a duration.
"""

import json
import os
import random
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import controller_helpers as ch  # noqa: E402
from controller_helpers import Env, fail, namespace, runtime, trainjob  # noqa: E402
from placement_helpers import (DECISION, HARD_RACK, TAKE_OVER, add_node, create_pods,  # noqa: E402
                               gated, requirements, status_of)

SEEDS = range(1, 21)
PODS = 64
RACKS = (("rA", 10), ("rB", 8), ("rC", 7), ("rD", 5), ("rE", 3), ("rF", 1))
PER_NODE = 8  # 8 cpu nodes, 1 cpu pods
NODE_RACK = {"%s-%d" % (r.lower(), i): r for r, n in RACKS for i in range(n)}


def pods(env, ns):
    r = env.c.get("/api/v1/namespaces/%s/pods" % ns)
    return r.json["items"] if r.status == 200 else []


def domain_of(pod):
    """The rack a released pod is restricted to, None when it is not restricted to one."""
    for r in requirements(pod):
        if r["key"] == "rack" and r["operator"] == "In" and len(r["values"]) == 1:
            return r["values"][0]
        if r["key"] == "kubernetes.io/hostname" and r["operator"] == "In":
            racks = {NODE_RACK.get(v) for v in r["values"]}
            return racks.pop() if len(racks) == 1 else None
    return None


def kill9(env):
    p, env.serve_proc = env.serve_proc, None
    p.send_signal(signal.SIGKILL)
    p.wait()
    env.log.close()


def check(env, ns, seed, at_kill, recorded_at_kill):
    all_pods = pods(env, ns)
    doms = {domain_of(p) for p in all_pods}
    if len(all_pods) != PODS or any(gated(p) for p in all_pods):
        fail("seed %d: not every pod is released" % seed)
    if len(doms) != 1 or None in doms:
        fail("seed %d: the gang is split or unrestricted: %r" % (seed, sorted(map(str, doms))))
    rack = doms.pop()
    pg = env.podgroup("volcano", ns, "job")
    text = (pg["metadata"].get("annotations") or {}).get(DECISION)
    rec = json.loads(text) if text else {}
    if rec.get("domain") != rack:
        fail("seed %d: pods in %s, the record says %r" % (seed, rack, rec.get("domain")))
    st = None

    def reserved_all():
        nonlocal st
        st = status_of(env, ns + "/job") or {}
        return st.get("reservedPods") == PODS

    env.wait(reserved_all, "seed %d: the whole gang reserved (%r)" % (seed, st))
    for node, n in st["reserved"].items():
        if NODE_RACK.get(node) != rack or n > PER_NODE:
            fail("seed %d: %d pods promised on %s (allocatable %d, rack %s)"
                 % (seed, n, node, PER_NODE, rack))
    print("seed %2d: killed with %2d of %d released (decision recorded: %s); after the restart "
          "all %d in %s, %d reserved on %d nodes of it, at most %d per node: ok"
          % (seed, at_kill, PODS, "yes" if recorded_at_kill else "no", PODS, rack,
             st["reservedPods"], len(st["reserved"]), max(st["reserved"].values())))
    sys.stdout.flush()


def one_seed(env, seed):
    rng = random.Random(seed)
    # One seed in four kills around the decision (before the first PATCH, maybe before the
    # record), the others half-way through the release.
    k = 0 if rng.random() < 0.25 else rng.randint(1, PODS - 1)
    extra = rng.random() * 0.05
    ns = "s%d" % seed
    env.create(namespace(ns))
    env.create(runtime("torch", ns, policy=HARD_RACK))
    env.create(trainjob("job", ns, "torch", num_nodes=PODS, cpu="1"))
    env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup %s/job" % ns)
    create_pods(env, ns, "job", PODS, cpu="1")
    ch.kubeclient.wait_for(lambda: sum(not gated(p) for p in pods(env, ns)) >= k, 60, 0.01)
    time.sleep(extra)
    kill9(env)
    at_kill = sum(not gated(p) for p in pods(env, ns))
    recorded = DECISION in ((env.podgroup("volcano", ns, "job") or {})["metadata"]
                            .get("annotations") or {})
    env.start_serve()
    env.wait(lambda: all(not gated(p) for p in pods(env, ns)) and len(pods(env, ns)) == PODS,
             "seed %d: every pod released after the restart" % seed, 90)
    check(env, ns, seed, at_kill, recorded)
    # The gang is over: its pods and TrainJob go, and so do its reservation and record.
    for p in pods(env, ns):
        env.delete("v1", "Pod", ns, p["metadata"]["name"])
    env.delete("trainer.kubeflow.org/v1alpha1", "TrainJob", ns, "job")
    env.wait(lambda: not status_of(env, ns + "/job"), "seed %d: the gang forgotten" % seed, 30)


def main():
    env = Env(crds=("trainer", "volcano"),
              serve_args=["--set", "topology.levels=rack",
                          "--set", "placement.maxInflightPatches=2"] + TAKE_OVER)
    failed = 0
    try:
        for rack, n in RACKS:
            for i in range(n):
                add_node(env, "%s-%d" % (rack.lower(), i), {"rack": rack}, cpu=str(PER_NODE))
        env.c.control("faults", {"latency_ms": 25, "latency_verbs": ["patch"],
                                 "latency_resources": ["pods"]})
        env.start_serve()
        for seed in SEEDS:
            try:
                one_seed(env, seed)
            except AssertionError as ex:
                failed += 1
                print("seed %2d: FAIL %s" % (seed, str(ex)[:2000]))
                sys.stdout.flush()
                if not env.serve_proc:
                    env.start_serve()
    finally:
        env.stop()
    print("%d of %d seeds consistent" % (len(SEEDS) - failed, len(SEEDS)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
