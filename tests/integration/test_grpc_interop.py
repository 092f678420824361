#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""python3-grpcio (Debian) against `gangbridge serve --offline`: every
method, answers equal to the CLI (`render -o json`, `place -o json`),
malformed bytes, an oversized message, expired deadlines, unknown methods,
concurrency, and a SIGTERM under load that ends every call with a status
and the process with exit 0."""

import concurrent.futures as cf
import glob
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc_helpers as H  # noqa: E402
import grpc  # noqa: E402

CLUSTER = """\
apiVersion: v1
kind: Node
metadata: {name: n0, labels: {rack: r0}}
status: {allocatable: {cpu: '64', memory: 256Gi, nvidia.com/gpu: '8', pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {rack: r0}}
status: {allocatable: {cpu: '64', memory: 256Gi, nvidia.com/gpu: '8', pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {rack: r1}}
status: {allocatable: {cpu: '64', memory: 256Gi, nvidia.com/gpu: '8', pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {rack: r1}}
status: {allocatable: {cpu: '64', memory: 256Gi, nvidia.com/gpu: '8', pods: '110'}}
"""

GANG = """\
apiVersion: gangbridge.io/v1alpha1
kind: Gang
metadata: {name: trainers}
spec:
  podSets:
  - name: worker
    count: 3
    requests: {cpu: '16', nvidia.com/gpu: '4'}
"""

NODE_N4 = """\
apiVersion: v1
kind: Node
metadata: {name: n4, labels: {rack: r2}}
status: {allocatable: {cpu: '64', memory: 256Gi, nvidia.com/gpu: '8', pods: '110'}}
"""


def cli(*args):
    p = subprocess.run([H.GANGBRIDGE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode()


def main():
    r = H.Report()
    with H.tmpdir() as tmp:
        stubs = H.Stubs(tmp)
        C, P, HL = stubs.calc, stubs.place, stubs.health
        cluster_path = os.path.join(tmp, "cluster.yaml")
        gang_path = os.path.join(tmp, "gang.yaml")
        with open(cluster_path, "w") as f:
            f.write(CLUSTER)
        with open(gang_path, "w") as f:
            f.write(GANG)

        srv = H.Server("--max-message-bytes", str(1 << 20), "--grpc-threads", "4",
                       "--grace-period", "2")
        ch = grpc.insecure_channel(srv.addr)
        m = H.methods(ch, stubs)

        # ---- Health
        code, res = H.code_of(lambda: m["check"](HL.HealthCheckRequest(), timeout=10))
        r.check("health ''", code == "OK" and res.status == HL.HealthCheckResponse.SERVING,
                (code, res))
        for name in ("gangbridge.v1.GangCalculator", "gangbridge.v1.PlacementEvaluator",
                     "grpc.health.v1.Health"):
            code, res = H.code_of(lambda: m["check"](HL.HealthCheckRequest(service=name),
                                                     timeout=10))
            r.check("health " + name,
                    code == "OK" and res.status == HL.HealthCheckResponse.SERVING, (code, res))
        code, res = H.code_of(lambda: m["check"](HL.HealthCheckRequest(service="nope"),
                                                 timeout=10))
        r.check("health unknown service -> NOT_FOUND", code == "NOT_FOUND", (code, res))
        code, res = H.code_of(lambda: list(m["watch"](HL.HealthCheckRequest(), timeout=10)))
        r.check("health Watch -> UNIMPLEMENTED", code == "UNIMPLEMENTED", (code, res))

        # ---- Calculate == render -o json, for every example TrainJob, both backends
        runtimes = sorted(glob.glob(os.path.join(H.SRC, "examples", "runtimes", "*.yaml")))
        rt_bytes = [H.read(p) for p in runtimes]
        jobs = sorted(glob.glob(os.path.join(H.SRC, "examples", "trainjobs", "*.yaml")))
        compared = 0
        for job in jobs:
            for sched, backend in (("volcano", C.BACKEND_VOLCANO),
                                   ("coscheduling", C.BACKEND_COSCHEDULING)):
                rc, out, err = cli("render", "-o", "json", "--scheduler", sched,
                                   "-f", os.path.join(H.SRC, "examples", "runtimes"), "-f", job)
                items = json.loads(out)["items"] if rc == 0 else []
                if rc != 0:
                    code, res = H.code_of(lambda: m["calculate"](C.CalculateRequest(
                        manifests=rt_bytes + [H.read(job)], backend=backend), timeout=30))
                    r.check("calculate %s %s fails as render does" % (os.path.basename(job),
                                                                      sched),
                            code in ("INVALID_ARGUMENT", "NOT_FOUND"), (code, res, err))
                    continue
                for item in items:
                    sel = "%s/%s" % (item["metadata"]["namespace"], item["metadata"]["name"])
                    code, res = H.code_of(lambda: m["calculate"](C.CalculateRequest(
                        manifests=rt_bytes + [H.read(job)], backend=backend, trainjob=sel),
                        timeout=30))
                    ok = code == "OK" and json.loads(res.pod_group_json) == item
                    ok = ok and res.gang.name == item["metadata"]["name"]
                    ok = ok and res.gang.min_member == item["spec"]["minMember"]
                    r.check("calculate %s %s %s == render" % (os.path.basename(job), sched, sel),
                            ok, (code, res if code != "OK" else res.pod_group_json[:300]))
                    compared += 1
        r.check("calculate compared with render at least 4 times", compared >= 4, compared)

        # ---- Calculate errors
        code, det = H.code_of(lambda: m["calculate"](C.CalculateRequest(), timeout=10))
        r.check("calculate empty -> INVALID_ARGUMENT naming manifests",
                code == "INVALID_ARGUMENT" and "manifests" in det, (code, det))
        code, det = H.code_of(lambda: m["calculate"](
            C.CalculateRequest(manifests=[H.read(jobs[0])]), timeout=10))
        r.check("calculate without runtime -> NOT_FOUND", code == "NOT_FOUND", (code, det))
        code, det = H.code_of(lambda: m["calculate"](
            C.CalculateRequest(manifests=[b"kind: [unclosed\n"]), timeout=10))
        r.check("calculate bad YAML -> INVALID_ARGUMENT manifests[0]:line:col",
                code == "INVALID_ARGUMENT" and "manifests[0]:" in det, (code, det))

        # ---- Evaluate == place -o json (inline cluster, Gang document and TrainJob)
        for label, files in (("gang", [gang_path]),
                             ("trainjob", [os.path.join(H.SRC, "examples", "runtimes",
                                                        "torch_distributed.yaml"),
                                           os.path.join(H.SRC, "examples", "trainjobs",
                                                        "01-multi-node.yaml")])):
            for mode in ("hard", "soft"):
                args = ["place", "-o", "json", "--cluster", cluster_path, "--levels", "rack",
                        "--mode", mode]
                for f in files:
                    args += ["-f", f]
                rc, out, err = cli(*args)
                req = P.EvaluateRequest(
                    calculate=C.CalculateRequest(manifests=[H.read(f) for f in files]),
                    cluster=[CLUSTER.encode()], levels=["rack"],
                    policy=P.TopologyPolicy(mode=mode))
                code, res = H.code_of(lambda: m["evaluate"](req, timeout=30))
                ok = rc == 0 and code == "OK" and res.place_json == out
                if ok:
                    want = json.loads(out)
                    ok = (res.feasible == want["feasible"]
                          and (res.hyper_node or None) == want["hyperNode"]
                          and [(a.node, a.pod_set, a.pods) for a in res.assignments]
                          == [(a["node"], a["podSet"], a["pods"]) for a in want["assignments"]]
                          and list(res.reasons) == want["reasons"])
                r.check("evaluate %s %s == place -o json" % (label, mode), ok,
                        (rc, err, code, res if code != "OK" else res.place_json[:400], out[:400]))

        # ---- The live snapshot
        code, res = H.code_of(lambda: m["status"](P.GetSnapshotStatusRequest(), timeout=10))
        r.check("snapshot status: not ready", code == "OK" and not res.ready, (code, res))
        spec = P.GangSpec(pod_sets=[P.GangPodSet(name="w", pods=2,
                                                 request={"nvidia.com/gpu": "8"})])
        code, det = H.code_of(lambda: m["evaluate"](P.EvaluateRequest(gang=spec), timeout=10))
        r.check("evaluate without snapshot -> UNAVAILABLE", code == "UNAVAILABLE", (code, det))
        code, res = H.code_of(lambda: m["replace"](P.ReplaceSnapshotRequest(
            cluster=[CLUSTER.encode()], levels=["rack"]), timeout=10))
        r.check("replace snapshot", code == "OK" and res.ready and res.nodes == 4
                and res.domains == 2, (code, res))
        code, res = H.code_of(lambda: m["evaluate"](P.EvaluateRequest(gang=spec), timeout=10))
        r.check("evaluate on live snapshot: one rack", code == "OK" and res.feasible
                and res.hyper_node in ("r0", "r1") and sum(a.pods for a in res.assignments) == 2,
                (code, res))
        # Take n0's gpus and add a node n4 on a new rack r2.
        code, res = H.code_of(lambda: m["update"](P.UpdateNodesRequest(updates=[
            P.NodeUpdate(name="n0", free=P.Quantities(values={"nvidia.com/gpu": "0"})),
            P.NodeUpdate(name="n2", free=P.Quantities(values={"nvidia.com/gpu": "0"})),
            P.NodeUpdate(node=NODE_N4.encode())]), timeout=10))
        r.check("update nodes", code == "OK" and res.nodes == 5, (code, res))
        spec3 = P.GangSpec(pod_sets=[P.GangPodSet(name="w", pods=3,
                                                  request={"nvidia.com/gpu": "8"})])
        code, res = H.code_of(lambda: m["evaluate"](P.EvaluateRequest(
            gang=spec3, policy=P.TopologyPolicy(mode="hard", highest_tier=1)), timeout=10))
        r.check("evaluate after update: 3 gpu nodes left on 3 racks -> infeasible at tier 1",
                code == "OK" and not res.feasible and len(res.reasons) > 0, (code, res))
        code, det = H.code_of(lambda: m["update"](P.UpdateNodesRequest(updates=[
            P.NodeUpdate(name="ghost", remove=True)]), timeout=10))
        r.check("update unknown node -> NOT_FOUND", code == "NOT_FOUND" and "ghost" in det,
                (code, det))

        # ---- Protocol-level errors
        code, det = H.code_of(lambda: m["raw"]("/gangbridge.v1.GangCalculator/Calculate")(
            b"\xff\xff\xff\xff\x0f", timeout=10))
        r.check("malformed bytes -> INVALID_ARGUMENT", code == "INVALID_ARGUMENT", (code, det))
        code, det = H.code_of(lambda: m["calculate"](
            C.CalculateRequest(manifests=[b"x" * (2 << 20)]), timeout=30))
        r.check("2 MiB message over a 1 MiB cap -> RESOURCE_EXHAUSTED",
                code == "RESOURCE_EXHAUSTED", (code, det))
        code, det = H.code_of(lambda: m["raw"]("/gangbridge.v1.GangCalculator/Nope")(
            b"", timeout=10))
        r.check("unknown method -> UNIMPLEMENTED", code == "UNIMPLEMENTED", (code, det))
        code, det = H.code_of(lambda: m["raw"]("/other.Service/Method")(b"", timeout=10))
        r.check("unknown service -> UNIMPLEMENTED", code == "UNIMPLEMENTED", (code, det))
        # 180 distinct runtime copies (a comment differs, so the server's
        # document cache cannot share them) take far longer than 1 ms.
        copies = [b"# copy %d\n" % i + b for i, b in enumerate(rt_bytes * 20)]
        big = C.CalculateRequest(manifests=copies + [H.read(jobs[0])])
        code, det = H.code_of(lambda: m["calculate"](big, timeout=0.001))
        r.check("expired deadline -> DEADLINE_EXCEEDED", code == "DEADLINE_EXCEEDED",
                (code, det))
        code, res = H.code_of(lambda: m["check"](HL.HealthCheckRequest(), timeout=10))
        r.check("still serving after the errors", code == "OK", (code, res))

        # ---- The C client (gangbridge call) against the same server
        rc, out, err = cli("call", "health", "--addr", srv.addr)
        r.check("gangbridge call health", rc == 0 and out.strip() == b"SERVING", (rc, out, err))
        rc, out, err = cli("call", "calculate", "--addr", srv.addr, "-o", "json", "-f",
                           os.path.join(H.SRC, "examples", "runtimes"), "-f", jobs[0])
        rc2, out2, _ = cli("render", "-o", "json", "-f",
                           os.path.join(H.SRC, "examples", "runtimes"), "-f", jobs[0])
        r.check("gangbridge call calculate == render",
                rc == 0 and rc2 == 0 and json.loads(out) == json.loads(out2)["items"][0],
                (rc, err, out[:200]))
        rc, out, err = cli("call", "evaluate", "--addr", srv.addr, "--gang", gang_path,
                           "--cluster", cluster_path, "--levels", "rack", "--mode", "soft")
        rc2, out2, _ = cli("place", "-o", "json", "--cluster", cluster_path, "--levels", "rack",
                           "--mode", "soft", "-f", gang_path)
        r.check("gangbridge call evaluate == place -o json", rc == 0 and out == out2,
                (rc, err, out[:300], out2[:300]))

        # ---- serve --cluster: the live snapshot from files at startup
        srv2 = H.Server("--cluster", cluster_path, "--levels", "rack")
        ch2 = grpc.insecure_channel(srv2.addr)
        m2 = H.methods(ch2, stubs)
        code, res = H.code_of(lambda: m2["status"](P.GetSnapshotStatusRequest(), timeout=10))
        r.check("serve --cluster: snapshot ready at start", code == "OK" and res.ready
                and res.nodes == 4 and res.domains == 2, (code, res))
        code, res = H.code_of(lambda: m2["evaluate"](P.EvaluateRequest(gang=spec), timeout=10))
        r.check("serve --cluster: evaluate on it", code == "OK" and res.feasible, (code, res))
        ch2.close()
        r.check("serve --cluster: stops cleanly", srv2.stop() == 0, srv2.stderr())
        rc, _, err = cli("serve", "--offline", "--grpc-addr", "127.0.0.1:0", "--cluster",
                         os.path.join(tmp, "missing.yaml"))
        r.check("serve --cluster with a missing file: exit 1 naming it",
                rc == 1 and "missing.yaml" in err, (rc, err))

        # ---- Command-line errors
        rc, _, err = cli("serve", "--offline")
        r.check("serve without --grpc-addr: usage error", rc == 2 and "--grpc-addr" in err,
                (rc, err))
        rc, _, err = cli("serve", "--offline", "--grpc-addr", srv.addr)
        r.check("serve on a port in use: exit 1 naming it", rc == 1 and srv.addr in err,
                (rc, err))
        rc, _, err = cli("call", "frobnicate")
        r.check("call of an unknown method: usage error", rc == 2, (rc, err))
        rc, _, err = cli("call", "health", "--addr", "127.0.0.1:1", "--timeout", "2")
        r.check("call to a closed port: UNAVAILABLE, exit 1", rc == 1 and "UNAVAILABLE" in err,
                (rc, err))

        # ---- Concurrency: 400 calls from 32 threads on one channel
        req = C.CalculateRequest(manifests=rt_bytes + [H.read(jobs[0])])
        with cf.ThreadPoolExecutor(32) as ex:
            futs = [ex.submit(H.code_of, lambda: m["calculate"](req, timeout=60))
                    for _ in range(400)]
            codes = [f.result()[0] for f in futs]
        r.check("400 concurrent Calculate calls", codes.count("OK") == 400,
                {c: codes.count(c) for c in set(codes)})

        # ---- SIGTERM under load
        stop = threading.Event()
        seen = {}
        lock = threading.Lock()

        def hammer():
            ch2 = grpc.insecure_channel(srv.addr)
            calc = H.methods(ch2, stubs)["calculate"]
            while not stop.is_set():
                code, _ = H.code_of(lambda: calc(req, timeout=10))
                with lock:
                    seen[code] = seen.get(code, 0) + 1
            ch2.close()
        threads = [threading.Thread(target=hammer) for _ in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        t0 = time.time()
        rc = srv.stop(timeout=60)
        took = time.time() - t0
        stop.set()
        for t in threads:
            t.join(30)
        allowed = {"OK", "UNAVAILABLE", "CANCELLED", "DEADLINE_EXCEEDED"}
        r.check("SIGTERM under load: exit 0, stopped, within grace",
                rc == 0 and "stopped" in srv.stderr() and took < 10,
                (rc, took, srv.stderr()[-2000:]))
        r.check("SIGTERM under load: every call ended with a status",
                seen.get("OK", 0) > 0 and set(seen) <= allowed, seen)
        ch.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
