# SPDX-License-Identifier: Apache-2.0
"""End-to-end, issue 17: one durable decision per gang, whatever the restart or failure.

`gangbridge serve` on the stand-in API server, which plays JobSet's pods through serve's
webhook (placement_helpers).  Cases, each failing before the fix:
- kill -9 half-way through a release (defect 1): racks rA 12, rB 8, rC 7 nodes of one pod
  each, a hard-rack gang of 8, the release slowed to one PATCH at a time; serve is killed once
  some pods are released; the restarted serve finishes the gang in rB, the recorded rack,
  with its whole capacity reserved (alone, the rest would fit the tighter rC);
- the decision record and the controller's server-side apply of the same PodGroup coexist:
  an apply (a label put back) neither removes the annotation nor reports it as drift;
- a PATCH that always fails (defect 2): the gang keeps its rack, later gangs go elsewhere,
  the status counts released and gated pods, the error metric counts every failed request,
  and the pod is released into the rack once the fault clears;
- a decision pinned by jobEnqueueable whose rack loses a node before any pod is released is
  decided again (defect 4): Permit into the other rack, the record rewritten, an Event, the
  filter offering only the new rack;
- a gang that can never start (more than any zone holds) holds no other tenant's gang back,
  and one that could start holds back only for placement.starvationGuardMax (defect 5);
- a suspended TrainJob's gated pods are not released and hold nothing (defect 7);
- a gang whose domain holds another gang's reservation is restricted to its planned nodes,
  and told (PlacementOverlap) where the earlier restriction still covers them (defect 9);
- a leader change half-way through a release: a second replica finishes the gang in the
  recorded rack.
Waits poll with a bound; nothing asserts a duration.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import controller_helpers as ch  # noqa: E402
import kubeclient  # noqa: E402
from controller_helpers import Env, fail, namespace, runtime, trainjob  # noqa: E402
from placement_helpers import (DECISION, HARD_RACK, TAKE_OVER, add_node, create_pods,  # noqa: E402
                               gated, pods_of, requirements, status_of, wait_released)

LEVELS = ["--set", "topology.levels=rack"]
SLOW_PATCH = {"latency_ms": 150, "latency_verbs": ["patch"], "latency_resources": ["pods"]}


def rack_of(pod):
    """The value of the pod's `rack In [...]` requirement, or None."""
    for r in requirements(pod):
        if r["key"] == "rack" and r["operator"] == "In":
            return r["values"][0]
    return None


def in_rack(pod, rack):
    """1 when the pod's restriction keeps it in rack (the rack label, or nodes of it)."""
    for r in requirements(pod):
        if r["key"] == "rack" and r["values"] == [rack]:
            return True
        if r["key"] == "kubernetes.io/hostname" and all(
                v.startswith(rack.lower() + "-") for v in r["values"]):
            return True
    return False


def released(env, ns, job, n):
    return [p for p in pods_of(env, ns, job, n) if p and not gated(p)]


def record(env, ns, name):
    pg = env.podgroup("volcano", ns, name)
    text = ((pg or {}).get("metadata", {}).get("annotations") or {}).get(DECISION)
    return json.loads(text) if text else None


def kill9(env):
    """SIGKILL serve (no cleanup at all) and forget it."""
    p, env.serve_proc = env.serve_proc, None
    p.send_signal(signal.SIGKILL)
    p.wait()
    env.log.close()


def racks(env, spec):
    for rack, count in spec:
        for i in range(count):
            add_node(env, "%s-%d" % (rack.lower(), i), {"rack": rack})


def gang_env(ns, name, pods, env, cpu="8", policy=HARD_RACK, rt="torch", suspend=None):
    env.create(trainjob(name, ns, rt, num_nodes=pods, cpu=cpu, suspend=suspend))
    env.wait(lambda: env.podgroup("volcano", ns, name), "PodGroup %s/%s" % (ns, name))
    create_pods(env, ns, name, pods, cpu)


def wait_status(env, key, pred, what, timeout=30):
    return env.wait(lambda: pred(status_of(env, key) or {}), what, timeout)


def metric(env, name):
    code, body = env.http_get("/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), body, re.M) if code == 200 else None
    return float(m.group(1)) if m else None


# ---- defect 1 and the SSA coexistence ----------------------------------------------------

def test_kill_mid_release():
    env = Env(crds=("trainer", "volcano"), serve_args=LEVELS + TAKE_OVER +
              ["--set", "placement.maxInflightPatches=1"])
    try:
        env.start_serve()
        ns = "team-k"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, policy=HARD_RACK))
        racks(env, (("rA", 12), ("rB", 8), ("rC", 7)))
        env.c.control("faults", SLOW_PATCH)
        gang_env(ns, "job", 8, env)
        env.wait(lambda: len(released(env, ns, "job", 8)) >= 3, "3 pods released", 30)
        kill9(env)
        first = released(env, ns, "job", 8)
        if not 1 <= len(first) < 8 or {rack_of(p) for p in first} != {"rB"}:
            fail("before the kill: %d released, racks %r" % (len(first), {rack_of(p) for p in first}))
        rec = record(env, ns, "job")
        env.start_serve()
        wait_released(env, ns, "job", 8, ("rack", ["rB"]))
        if not rec or rec["domain"] != "rB" or rec["restriction"] != {"key": "rack", "values": ["rB"]}:
            fail("the decision was not recorded before the release: %r" % rec)
        wait_status(env, ns + "/job", lambda g: g.get("reservedPods") == 8,
                    "all 8 pods reserved in rB")
        st = status_of(env, ns + "/job")
        if any(not n.startswith("rb-") for n in st["reserved"]):
            fail("reserved outside rB: %r" % st["reserved"])
        env.c.control("faults", method="DELETE")
        check_apply_keeps_record(env, ns, "job", rec)
    finally:
        env.stop()


def check_apply_keeps_record(env, ns, name, rec):
    """The controller's server-side apply (manager gangbridge) of the PodGroup, triggered by a
    label someone removed, puts the label back and leaves the record alone."""
    pg = env.podgroup("volcano", ns, name)
    labels = pg["metadata"].get("labels") or {}
    label = next((k for k in sorted(labels) if k != "app.kubernetes.io/managed-by"), None)
    if not label:
        fail("the PodGroup has no label but managed-by: %r" % labels)
    env.merge_patch(ch.PG_API["volcano"], "PodGroup", ns, name,
                    {"metadata": {"labels": {label: None}}})
    env.wait(lambda: label in ((env.podgroup("volcano", ns, name) or {})["metadata"]
                               .get("labels") or {}), "the controller to apply the label back")
    pg = env.podgroup("volcano", ns, name)
    now = json.loads(pg["metadata"]["annotations"].get(DECISION) or "null")
    if now != rec:
        fail("the apply changed the record: %r -> %r" % (rec, now))
    owners = [m["manager"] for m in pg["metadata"].get("managedFields") or []
              if DECISION in json.dumps(m.get("fieldsV1") or {})]
    if owners != ["gangbridge-placement"]:
        fail("the record is owned by %r, not gangbridge-placement alone" % owners)
    if env.events(ns, name, "PodGroupOutdated"):
        fail("the record was reported as drift: %r" % env.events(ns, name, "PodGroupOutdated"))


# ---- defect 2 ------------------------------------------------------------------------------

def test_failed_patch_keeps_reservation():
    env = Env(crds=("trainer", "volcano"), serve_args=LEVELS + TAKE_OVER)
    try:
        env.start_serve()
        ns = "team-f"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, policy=HARD_RACK))
        racks(env, (("rA", 4), ("rB", 6)))
        env.c.control("faults", {"error_rate": 1.0, "error_codes": [500], "error_verbs": ["patch"],
                                 "error_resources": ["pods"], "error_names": ["j-node-0-3"]})
        gang_env(ns, "j", 4, env)
        env.wait(lambda: len(released(env, ns, "j", 4)) == 3, "3 of j's pods released")
        if {rack_of(p) for p in released(env, ns, "j", 4)} != {"rA"}:
            fail("j not in rA")
        for name, n in (("k", 4), ("m", 2)):
            gang_env(ns, name, n, env)
            env.wait(lambda: len(released(env, ns, name, n)) == n, "%s released" % name)
            where = [in_rack(p, "rB") for p in released(env, ns, name, n)]
            if not all(where):
                fail("%s not restricted to rB: %r" % (name, [requirements(p) for p in
                                                             released(env, ns, name, n)]))
        wait_status(env, ns + "/j", lambda g: g.get("gated") == 1 and g.get("released") == 3
                    and g.get("reservedPods") == 4, "status: 3 released, 1 gated, 4 reserved")
        env.c.control("faults", method="DELETE")
        wait_released(env, ns, "j", 4, ("rack", ["rA"]))
        injected = env.c.control("stats", method="GET")["faults"].get("500", 0)
        env.wait(lambda: metric(env, "gangbridge_placement_release_errors_total") == injected,
                 "the error metric to count all %d failed PATCHes" % injected)
        if injected < 2:
            fail("the fault never fired: %d" % injected)
    finally:
        env.stop()


# ---- defect 4: jobEnqueueable's pin re-decided ---------------------------------------------

def sched_port(env):
    m = env.wait(lambda: re.search(r"sched endpoints listening.*port=(\d+)", env.serve_log()),
                 "the sched endpoints")
    return int(m.group(1))


def post_once(port, path, body):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def post(port, path, body, timeout=30):
    """The leader's answer: a replica that has just started answers 503 until it
    has read the decision records back (by design, docs/scheduler-integration.md),
    so a 503 is asked again; any other answer must be JSON."""
    deadline = time.time() + timeout
    while True:
        status, text = post_once(port, path, body)
        if status != 503 or time.time() > deadline:
            break
        time.sleep(0.1)
    try:
        return status, json.loads(text)
    except ValueError:
        fail("%s: %d with a body that is not JSON: %r" % (path, status, text[:200]))


def task(ns, job, i):
    name = "%s-node-0-%d" % (job, i)
    return {"UID": "t%d" % i, "Job": "%s/%s" % (ns, job), "Name": name, "Namespace": ns,
            "InitResreq": {"MilliCPU": 8000, "Memory": 0, "ScalarResources": {"pods": 1}},
            "NodeName": "", "Pod": {"metadata": {"name": name, "namespace": ns, "labels": {
                "jobset.sigs.k8s.io/jobset-name": job}}, "spec": {}}}


def job_info(ns, job, n):
    return {"job": {"UID": "%s/%s" % (ns, job), "Name": job, "Namespace": ns, "Priority": 0,
                    "MinAvailable": n, "NetworkTopology": {"mode": "hard", "highestTierAllowed": 1},
                    "Tasks": {"t%d" % i: task(ns, job, i) for i in range(n)},
                    "CreationTimestamp": "2026-08-20T10:00:00Z",
                    "PodGroup": {"metadata": {"name": job, "namespace": ns, "labels": {
                        "app.kubernetes.io/managed-by": "gangbridge"}}}}}


def test_pinned_redecided():
    env = Env(crds=("trainer", "volcano"), serve_args=LEVELS + TAKE_OVER)
    try:
        env.start_serve(extra=["--sched-addr", "127.0.0.1:0"])
        port = sched_port(env)
        ns = "team-p"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, policy=HARD_RACK))
        racks(env, (("rack-a", 5), ("rack-b", 5)))
        env.wait(lambda: (json.loads(env.http_get("/debug/placement", env.debug_port)[1] or "{}").get("model")
                          or {}).get("nodes") == 10, "the model to hold 10 nodes")
        env.create(trainjob("job", ns, "torch", num_nodes=5, cpu="8"))
        env.wait(lambda: env.podgroup("volcano", ns, "job"), "PodGroup")
        status, ans = post(port, "/volcano/jobEnqueueable", job_info(ns, "job", 5))
        if (status, ans) != (200, {"status": 1}):
            fail("jobEnqueueable: %d %r" % (status, ans))
        rec = record(env, ns, "job")
        names = ["%s-%d" % (r, i) for r in ("rack-a", "rack-b") for i in range(5)]
        filt = {"Pod": {"metadata": {"namespace": ns, "name": "job-node-0-0", "labels": {
            "jobset.sigs.k8s.io/jobset-name": "job"}}}, "NodeNames": names}
        first = post(port, "/kube/filter", filt)[1]["NodeNames"][0].rsplit("-", 1)[0]
        other = "rack-b" if first == "rack-a" else "rack-a"
        env.delete("v1", "Node", None, first + "-0")
        env.wait(lambda: (json.loads(env.http_get("/debug/placement", env.debug_port)[1] or "{}").get("model")
                          or {}).get("nodes") == 9, "the model to lose the node")
        status, ans = post(port, "/volcano/jobEnqueueable", job_info(ns, "job", 5))
        if (status, ans) != (200, {"status": 1}):
            fail("jobEnqueueable after the node went: %d %r" % (status, ans))
        ans = post(port, "/kube/filter", filt)[1]
        if sorted(ans["NodeNames"]) != ["%s-%d" % (other, i) for i in range(5)]:
            fail("filter still offers %r" % ans["NodeNames"])
        rec2 = record(env, ns, "job")
        if not rec or rec["domain"] != first:
            fail("Permit without a recorded decision: %r" % rec)
        if not rec2 or rec2["domain"] != other or rec2["id"] == rec["id"]:
            fail("not decided again into %s: %r" % (other, rec2))
        env.wait(lambda: env.events(ns, "job", "PlacementRedecided"), "PlacementRedecided Event")
        # A restart before any pod exists: the pinned decision is taken back from its record.
        env.stop_serve()
        env.start_serve(extra=["--sched-addr", "127.0.0.1:0"])
        port = sched_port(env)
        wait_status(env, ns + "/job", lambda g: g.get("reservedPods") == 5,
                    "the pinned decision reserved again after the restart")
        ans = post(port, "/kube/filter", filt)[1]
        if sorted(ans["NodeNames"]) != ["%s-%d" % (other, i) for i in range(5)]:
            fail("after the restart the filter offers %r" % ans["NodeNames"])
    finally:
        env.stop()


# ---- defect 5: fair hold-back ----------------------------------------------------------------

ZONE = {"volcano": {"networkTopology": {"mode": "hard", "highestTierAllowed": 2}}}


def test_fair_holdback():
    env = Env(crds=("trainer", "volcano"),
              serve_args=["--set", "topology.levels=zone,rack",
                          "--set", "placement.starvationGuard=1s",
                          "--set", "placement.starvationGuardMax=6s"] + TAKE_OVER)
    try:
        env.start_serve()
        for ns in ("team-a", "team-b"):
            env.create(namespace(ns))
            env.create(runtime("torch", ns, policy=ZONE))
        for z in ("z1", "z2"):
            for i in range(4):
                add_node(env, "%s-n%d" % (z, i), {"zone": z, "rack": "%s-r%d" % (z, i // 2)})
        # Tenant A's gang can never start: 5 x 8 cpu in one zone of 4 nodes of 8 cpu.
        gang_env("team-a", "hog", 5, env)
        wait_status(env, "team-a/hog", lambda g: g.get("outcome") == "nofit", "hog: nofit")
        time.sleep(1.5)  # hog has now waited past placement.starvationGuard
        gang_env("team-b", "small", 1, env)
        env.wait(lambda: len(released(env, "team-b", "small", 1)) == 1,
                 "team-b/small released although team-a/hog can never start (%r)"
                 % status_of(env, "team-b/small"))
        # A gang that could start (a zone of 4 free nodes) but not now (a filler on z2-n0 and
        # small's reservation in z1): it holds tenant B back, for at most starvationGuardMax.
        env.create(namespace("other"))
        env.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "filler",
                    "namespace": "other"}, "spec": {"nodeName": "z2-n0", "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "8"}}}]}})
        gang_env("team-a", "big", 4, env)
        wait_status(env, "team-a/big", lambda g: g.get("outcome") == "nofit", "big: nofit")
        time.sleep(1.5)
        gang_env("team-b", "small2", 1, env)
        seen = set()

        def done():
            seen.add((status_of(env, "team-b/small2") or {}).get("outcome"))
            return len(released(env, "team-b", "small2", 1)) == 1
        env.wait(done, "team-b/small2 released once big's starvationGuardMax passed", 60)
        if "held" not in seen:
            fail("small2 was never held behind big (outcomes seen: %r)" % seen)
    finally:
        env.stop()


# ---- defect 7 ------------------------------------------------------------------------------

def test_suspended_not_released():
    env = Env(crds=("trainer", "volcano"), serve_args=LEVELS + TAKE_OVER)
    try:
        env.start_serve()
        ns = "team-s"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, policy=HARD_RACK))
        racks(env, (("rA", 2),))
        gang_env(ns, "job", 2, env, suspend=True)
        wait_status(env, ns + "/job", lambda g: g.get("pods") == 2, "the gang's pods seen")
        time.sleep(1.5)  # a few passes: the pods must stay gated (not a timed assertion)
        if released(env, ns, "job", 2):
            fail("a suspended TrainJob's pods were released")
        wait_status(env, ns + "/job", lambda g: g.get("state") == "suspended", "state suspended")
        st = status_of(env, ns + "/job")
        if st.get("reservedPods") or record(env, ns, "job"):
            fail("a suspended TrainJob holds a reservation or a decision: %r" % st)
        env.merge_patch("trainer.kubeflow.org/v1alpha1", "TrainJob", ns, "job",
                        {"spec": {"suspend": False}})
        wait_released(env, ns, "job", 2, ("rack", ["rA"]))
    finally:
        env.stop()


# ---- defect 9 ------------------------------------------------------------------------------

def hypernode(env, name, tier, members, kind="Node"):
    env.create({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                "metadata": {"name": name},
                "spec": {"tier": tier, "members": [{"type": kind, "selector": {
                    "exactMatch": {"name": m}}} for m in members]}})


def test_shared_domain():
    env = Env(crds=("trainer", "volcano"), serve_args=TAKE_OVER)
    try:
        kubeclient.install_crd(env.c, os.path.join(kubeclient.CRDS, "volcano",
                                                   "topology.volcano.sh_hypernodes.yaml"))
        env.start_serve()
        ns = "team-o"
        env.create(namespace(ns))
        env.create(runtime("leaf", ns, policy=HARD_RACK))
        env.create(runtime("spine", ns, policy={"volcano": {"networkTopology": {
            "mode": "hard", "highestTierAllowed": 2}}}))
        for n in ("h6", "h7", "h8", "h9", "h10"):
            add_node(env, n, {})
        hypernode(env, "s3", 1, ["h6", "h7", "h8", "h9"])
        hypernode(env, "s4", 1, ["h10"])
        hypernode(env, "sp", 2, ["s3", "s4"], kind="HyperNode")
        env.wait(lambda: (json.loads(env.http_get("/debug/placement", env.debug_port)[1] or "{}").get("model")
                          or {}).get("hypernodes") == 3, "the model to hold the HyperNodes")
        gang_env(ns, "gb", 2, env, rt="leaf")
        wait_released(env, ns, "gb", 2, ("kubernetes.io/hostname", ["h6", "h7", "h8", "h9"]))
        gang_env(ns, "gc", 3, env, rt="spine")
        wait_released(env, ns, "gc", 3, ("kubernetes.io/hostname", ["h8", "h9", "h10"]))
        env.wait(lambda: env.events(ns, "gc", "PlacementOverlap"), "PlacementOverlap Event")
    finally:
        env.stop()


# ---- leader change mid-release ------------------------------------------------------------

def start_replica(env, extra):
    """A second serve of the same configuration on its own ports and log."""
    http_port, hook_port = ch.free_port(), ch.free_port()
    log_path = os.path.join(env.tmp, "replica.log")
    args = [ch.GANGBRIDGE, "serve", "--kubeconfig", env.kubeconfig,
            "--http-addr", "127.0.0.1:%d" % http_port, "--webhook-addr", "127.0.0.1:%d" % hook_port,
            "--log-level", "debug", "--set", "scheduling.discoveryInterval=2s",
            "--set", "events.minInterval=0s", "--set", "controller.queueMaxDelay=1s"] + \
        env.serve_args + list(extra)
    log = open(log_path, "w")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    return proc, log, log_path


def test_leader_change_mid_release():
    lease = ["--leader-elect", "--set", "leaderElection.namespace=default",
             "--set", "leaderElection.leaseDuration=2s", "--set", "leaderElection.renewDeadline=1.5s",
             "--set", "leaderElection.retryPeriod=0.2s"]
    env = Env(crds=("trainer", "volcano"), serve_args=LEVELS + TAKE_OVER + lease +
              ["--set", "placement.maxInflightPatches=1"])
    replica = None
    try:
        env.start_serve()
        env.wait(lambda: "started leading" in env.serve_log(), "the first replica to lead")
        replica, rlog, rlog_path = start_replica(env, [])
        ns = "team-l"
        env.create(namespace(ns))
        env.create(runtime("torch", ns, policy=HARD_RACK))
        racks(env, (("rA", 12), ("rB", 8), ("rC", 7)))
        env.c.control("faults", SLOW_PATCH)
        gang_env(ns, "job", 8, env)
        env.wait(lambda: len(released(env, ns, "job", 8)) >= 2, "2 pods released", 30)
        kill9(env)
        env.wait(lambda: "started leading" in open(rlog_path).read(), "the replica to take over")
        wait_released(env, ns, "job", 8, ("rack", ["rB"]))
        rec = record(env, ns, "job")
        if not rec or rec["domain"] != "rB":
            fail("record: %r" % rec)
    finally:
        if replica:
            replica.send_signal(signal.SIGTERM)
            try:
                replica.wait(60)
            except subprocess.TimeoutExpired:
                replica.kill()
            rlog.close()
            if replica.returncode != 0:
                print(open(rlog_path).read()[-3000:])
                env.stop()
                fail("the replica exited %s" % replica.returncode)
        env.stop()


def main():
    runner = ch.Runner()
    runner.run("kill -9 mid-release, restart, apply", test_kill_mid_release)
    runner.run("failed PATCH keeps the reservation", test_failed_patch_keeps_reservation)
    runner.run("pinned, unused: decided again", test_pinned_redecided)
    runner.run("fair hold-back", test_fair_holdback)
    runner.run("suspended TrainJob not released", test_suspended_not_released)
    runner.run("shared domain: planned nodes", test_shared_domain)
    runner.run("leader change mid-release", test_leader_change_mid_release)
    runner.exit()


if __name__ == "__main__":
    main()
