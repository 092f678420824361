#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark of the `gangbridge serve` process against the stand-in API server (issue 5).

Unlike bench_controller.c, which links the controller into the benchmark process, this
driver runs the real service binary as a separate process and measures that process from
/proc, so the figures are the service's own:

  1. RSS at start: a serve process on the cluster without TrainJobs (same flags), once
     ready and idle for a second (VmRSS of /proc/<pid>/status).
  2. Time to converge: N TrainJobs (10,000; --short: 500) exist; serve starts; the time
     until the stand-in holds a PodGroup for every one (its /_control/stats object count).
  3. Client CPU per reconcile: serve's utime+stime (/proc/<pid>/stat) at convergence divided
     by gangbridge_reconciles_total from its /metrics (start-up, lists, watches, JSON, HTTP
     and rendering included); and the same for the steady phase below.
  4. RSS per cached TrainJob: (VmRSS with N TrainJobs and their PodGroups cached - RSS at
     start) / N.
  5. create -> PodGroup latency at a steady 100 TrainJobs/s for S seconds (30; --short: 10):
     the time from just before each POST to the PodGroup's ADDED event on a watch the
     benchmark holds on the stand-in (p50, p99, max).
  6. The stand-in's own CPU during convergence, to tell whether it is the bottleneck.

Goals from issue 5: <= 50 us CPU per reconcile, <= 4 KiB per TrainJob, p99 <= 50 ms.
Figures only: nothing is asserted except that serve converges within bounded waits and exits
0 on SIGTERM.  `--short` finishes in well under a minute and is what CI runs
(tests/bench/test_bench_controller.sh).
"""

import argparse
import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from controller_helpers import namespace, runtime, trainjob  # noqa: E402
from gbtest_cluster import (PG_VOLCANO, TJ_API, Cluster, fail, metric_sum, obj_path,  # noqa: E402
                            parallel, proc_cpu_seconds, proc_rss_kib, sanitized_build)
import kubeclient  # noqa: E402

NS = "bench"
PG_KEY = "scheduling.volcano.sh/podgroups"
SERVE_ARGS = ["--kube-qps", "5000", "--kube-burst", "10000"]


def podgroup_count(cl):
    return cl.stats()["objects"].get(PG_KEY, 0)


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", action="store_true", help="500 TrainJobs, 10 s at 100/s (CI)")
    ap.add_argument("--n", type=int, help="TrainJobs for convergence (default 10000)")
    ap.add_argument("--seconds", type=float, help="latency phase length (default 30)")
    ap.add_argument("--rate", type=float, default=100.0, help="creates per second (100)")
    a = ap.parse_args()
    n = a.n or (500 if a.short else 10000)
    secs = a.seconds or (10.0 if a.short else 30.0)
    print("bench_controller (gangbridge serve as a separate process): %d TrainJobs, "
          "%.0f s at %.0f/s%s" % (n, secs, a.rate,
                                  "; ASan build: figures are not representative"
                                  if sanitized_build() else ""))
    sys.stdout.flush()

    cl = Cluster(apiserver_args=("--history", str(max(20000, 3 * n)),
                                 "--bookmark-interval", "1"))
    try:
        if cl.c.post(obj_path("v1", "Namespace"), namespace(NS)).status != 201:
            fail("create namespace")
        if cl.c.post(obj_path(PG_VOLCANO, "Queue"),
                     {"apiVersion": PG_VOLCANO, "kind": "Queue",
                      "metadata": {"name": "default"}, "spec": {"weight": 1}}).status != 201:
            fail("create queue")
        if cl.c.post(obj_path(TJ_API, "TrainingRuntime", NS), runtime("torch", NS)).status != 201:
            fail("create runtime")

        # 1. RSS at start.
        base = cl.serve("baseline", SERVE_ARGS)
        base.wait_ready()
        time.sleep(1)
        rss0 = proc_rss_kib(base.pid)
        if base.stop() != 0:
            fail("baseline serve exited %s:\n%s" % (base.proc.returncode, base.text()[-3000:]))

        # 2. N TrainJobs, then serve.
        t0 = time.monotonic()
        names = ["job-%05d" % i for i in range(n)]
        tjpath = obj_path(TJ_API, "TrainJob", NS)

        def create(name, client_box=threading.local()):
            c = getattr(client_box, "c", None)
            if c is None:
                c = client_box.c = kubeclient.Client(cl.url)
            r = c.post(tjpath, trainjob(name, NS, "torch", num_nodes=4, cpu="8"))
            if r.status != 201:
                fail("create %s: %r" % (name, r))
        parallel(names, create, threads=8)
        print("setup: %d TrainJobs created in %.1f s" % (n, time.monotonic() - t0))
        sys.stdout.flush()

        api_cpu0 = proc_cpu_seconds(cl.api_proc.pid)
        t0 = time.monotonic()
        serve = cl.serve("bench", SERVE_ARGS)
        while podgroup_count(cl) < n:
            if serve.proc.poll() is not None:
                fail("serve exited %s:\n%s" % (serve.proc.returncode, serve.text()[-3000:]))
            if time.monotonic() - t0 > 900:
                fail("no convergence within 900 s (%d of %d PodGroups)"
                     % (podgroup_count(cl), n))
            time.sleep(0.02)
        converge = time.monotonic() - t0
        cpu = proc_cpu_seconds(serve.pid)
        api_cpu = proc_cpu_seconds(cl.api_proc.pid) - api_cpu0
        m = serve.metrics()
        rec = metric_sum(m, "gangbridge_reconciles_total")
        ok = metric_sum(m, "gangbridge_reconciles_total", result="success")
        time.sleep(1)
        rss1 = proc_rss_kib(serve.pid)
        print("converge: %d TrainJobs -> %d PodGroups in %.2f s (%.0f PodGroups/s)"
              % (n, n, converge, n / converge))
        print("client CPU per reconcile (convergence, start-up included): %.1f us "
              "(serve CPU %.2f s / %d reconciles, %d success; goal <= 50 us)"
              % (cpu / max(rec, 1) * 1e6, cpu, rec, ok))
        print("RSS per cached TrainJob (with its PodGroup): %.2f KiB "
              "((%d KiB - %d KiB at start) / %d; goal <= 4 KiB)"
              % ((rss1 - rss0) / n, rss1, rss0, n))
        print("stand-in CPU during convergence: %.2f s over %.2f s wall (%.0f%% of a core)"
              % (api_cpu, converge, 100 * api_cpu / converge))
        sys.stdout.flush()

        # Idle cost (bookmarks, timers), to read the per-reconcile figures against.
        c0, r0 = proc_cpu_seconds(serve.pid), serve.reconciles()
        time.sleep(2)
        idle = (proc_cpu_seconds(serve.pid) - c0) / 2
        print("idle: serve CPU %.1f ms/s with %d TrainJobs cached (%d reconciles meanwhile)"
              % (idle * 1000, n, serve.reconciles() - r0))

        # 5. create -> PodGroup latency at a steady rate.
        count = int(secs * a.rate)
        created, seen = {}, {}
        mu = threading.Lock()
        r = cl.c.get(obj_path(PG_VOLCANO, "PodGroup", NS) + "?limit=1")
        rv = r.json["metadata"]["resourceVersion"]
        w = cl.c.watch(obj_path(PG_VOLCANO, "PodGroup", NS) + "?watch=1&resourceVersion=" + rv,
                       timeout=secs + 120)
        stop = threading.Event()

        def watcher():
            while not stop.is_set():
                ev = w.next_event()
                if ev is None:
                    return
                t = time.monotonic()
                name = ev.get("object", {}).get("metadata", {}).get("name", "")
                if ev.get("type") == "ADDED" and name.startswith("lat-"):
                    with mu:
                        seen.setdefault(name, t)
        wt = threading.Thread(target=watcher, daemon=True)
        wt.start()
        cpu_a, rec_a = proc_cpu_seconds(serve.pid), serve.reconciles()
        cc = kubeclient.Client(cl.url)
        start = time.monotonic()
        late = 0
        post_ms = []
        for i in range(count):
            due = start + i / a.rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            elif now - due > 0.05:
                late += 1
            name = "lat-%05d" % i
            tc = time.monotonic()
            r = cc.post(tjpath, trainjob(name, NS, "torch", num_nodes=4, cpu="8"))
            post_ms.append((time.monotonic() - tc) * 1000)
            if r.status != 201:
                fail("create %s: %r" % (name, r))
            with mu:
                created[name] = tc
        rate = count / (time.monotonic() - start)
        kubeclient.wait_for(lambda: len(seen) >= count, 60, 0.05)
        cpu_b, rec_b = proc_cpu_seconds(serve.pid), serve.reconciles()
        stop.set()
        try:
            w.conn.sock.shutdown(socket.SHUT_RDWR)  # wakes the watcher's read
        except OSError:
            pass
        wt.join(10)
        w.close()
        cc.close()
        missing = [k for k in created if k not in seen]
        if missing:
            fail("%d PodGroups of the latency phase never appeared (e.g. %s)"
                 % (len(missing), missing[:3]))
        lat = [(seen[k] - created[k]) * 1000 for k in created]
        print("create -> PodGroup at %.0f/s (%d TrainJobs, %d creates sent > 50 ms late): "
              "p50 %.1f ms, p99 %.1f ms, max %.1f ms (goal p99 <= 50 ms)"
              % (rate, count, late, percentile(lat, 0.5), percentile(lat, 0.99), max(lat)))
        print("  the stand-in's answer to each create POST: p50 %.1f ms, p99 %.1f ms, max %.1f ms"
              % (percentile(post_ms, 0.5), percentile(post_ms, 0.99), max(post_ms)))
        print("client CPU per reconcile (steady %.0f/s, %d cached): %.1f us (%.2f s / %d)"
              % (rate, n, (cpu_b - cpu_a) / max(rec_b - rec_a, 1) * 1e6, cpu_b - cpu_a,
                 rec_b - rec_a))
        t_stop = time.monotonic()
        rc = serve.stop()
        print("serve stopped in %.1f s" % (time.monotonic() - t_stop))
        if rc != 0:
            fail("serve exited %s on SIGTERM:\n%s" % (rc, serve.text()[-3000:]))
    finally:
        cl.stop()


if __name__ == "__main__":
    main()
