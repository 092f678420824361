# SPDX-License-Identifier: Apache-2.0
"""End-to-end under API faults: `gangbridge serve` converges once the faults stop.

N TrainJobs (default 300; `--n`) exist before serve starts, half of them suspended.  Then
the stand-in injects 10% 5xx/429 answers, cuts every watch after about 3 s, answers 20% of
watches with 410 Gone and adds 200 ms to every request while serve starts and the test
re-sizes suspended TrainJobs, completes some and deletes others (the test's own writes
are retried).  After the faults stop, every PodGroup must be present and correct and none
extra (deleted TrainJobs' PodGroups go by garbage collection, completed ones by
gangbridge).  The time to converge is printed as a figure, not asserted; the wait is
bounded.  serve must exit 0 on SIGTERM.
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import Env, fail, namespace, obj_path, runtime, trainjob  # noqa: E402
import kubeclient  # noqa: E402

TJ_API = "trainer.kubeflow.org/v1alpha1"
NS = "faults"


def retrying(env, fn, what):
    """Runs fn(client) until it answers a non-5xx/429 status (the test's own writes)."""
    c = kubeclient.Client(env.api.url)
    try:
        for _ in range(200):
            r = fn(c)
            if r.status < 500 and r.status != 429:
                return r
            time.sleep(0.05)
    finally:
        c.close()
    fail("%s: still failing" % what)


def parallel(items, fn, threads=8):
    errors = []

    def run(chunk):
        for it in chunk:
            try:
                fn(it)
            except Exception as ex:  # noqa: BLE001 - collected and reported
                errors.append(ex)
    ts = [threading.Thread(target=run, args=(items[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def expected_state(n, resized, completed, deleted):
    want = {}
    for i in range(n):
        name = "tj-%04d" % i
        if name in completed or name in deleted:
            continue
        want[name] = 5 if name in resized else 2
    return want


def actual_state(env):
    r = env.c.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups" % NS)
    if r.status != 200:
        return None
    return {pg["metadata"]["name"]: pg["spec"]["minMember"] for pg in r.json["items"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300)
    a = ap.parse_args()
    n = a.n
    env = Env(crds=("trainer", "volcano"), apiserver_args=("--bookmark-interval", "1"))
    try:
        env.create(namespace(NS))
        env.create(runtime("torch", NS))
        env.create({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                    "metadata": {"name": "default"}, "spec": {"weight": 1}})
        names = ["tj-%04d" % i for i in range(n)]
        t0 = time.monotonic()
        parallel(names, lambda nm: retrying(env, lambda c: c.post(
            obj_path(TJ_API, "TrainJob", NS), trainjob(nm, NS, "torch", num_nodes=2,
                                                       suspend=int(nm[3:]) % 2 == 0)),
            "create " + nm))
        print("created %d TrainJobs in %.1fs" % (n, time.monotonic() - t0))

        env.c.control("faults", {"error_rate": 0.1, "error_codes": [500, 503, 429],
                                 "watch_drop_seconds": 3.0, "watch_410_rate": 0.2,
                                 "latency_ms": 200.0})
        env.start_serve(["--set", "controller.workers=8", "--kube-qps", "200",
                         "--kube-burst", "400"])
        suspended = [nm for nm in names if int(nm[3:]) % 2 == 0]
        resized = set(suspended[: n // 5])
        running = [nm for nm in names if int(nm[3:]) % 2 == 1]
        completed = set(running[: n // 8])
        deleted = set(running[n // 8: n // 4])
        t0 = time.monotonic()
        parallel(sorted(resized), lambda nm: retrying(env, lambda c: c.patch(
            obj_path(TJ_API, "TrainJob", NS, nm), '{"spec":{"trainer":{"numNodes":5}}}',
            "application/merge-patch+json"), "resize " + nm))
        parallel(sorted(completed), lambda nm: retrying(env, lambda c: c.patch(
            obj_path(TJ_API, "TrainJob", NS, nm) + "/status",
            '{"status":{"conditions":[{"type":"Complete","status":"True","reason":"Done",'
            '"message":"done","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}',
            "application/merge-patch+json"), "complete " + nm))
        parallel(sorted(deleted), lambda nm: retrying(env, lambda c: c.delete(
            obj_path(TJ_API, "TrainJob", NS, nm)), "delete " + nm))
        print("changes under faults took %.1fs" % (time.monotonic() - t0))
        time.sleep(3)

        env.c.control("faults", method="DELETE")
        t_stop = time.monotonic()
        want = expected_state(n, resized, completed, deleted)
        last = {}

        def converged():
            last["state"] = actual_state(env)
            return last["state"] == want
        ok = kubeclient.wait_for(converged, 60, 0.1)
        took = time.monotonic() - t_stop
        if not ok:
            have = last.get("state") or {}
            missing = sorted(set(want) - set(have))[:10]
            extra = sorted(set(have) - set(want))[:10]
            wrong = sorted(k for k in want if k in have and have[k] != want[k])[:10]
            fail("not converged 60 s after faults stopped: missing %s extra %s wrong %s\n%s"
                 % (missing, extra, wrong, env.serve_log()[-4000:]))
        print("converged: %d PodGroups correct, none extra, %.2fs after faults stopped"
              % (len(want), took))
        body = env.http_get("/metrics")[1]
        restarts = [ln for ln in body.splitlines()
                    if ln.startswith("gangbridge_watch_restarts_total{")]
        print("\n".join(restarts))
        if not any('reason="error"' in ln or 'reason="gone"' in ln for ln in restarts):
            fail("no watch restarts were counted under faults")
        env.stop_serve()
        print("ok   faults: converge after faults stop")
    finally:
        env.stop()


if __name__ == "__main__":
    main()
