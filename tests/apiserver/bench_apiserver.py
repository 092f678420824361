#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Throughput of the stand-in API server: creates, server-side applies, lists and a watch.

Prints figures (requests/s seen by one keep-alive client, server CPU µs per request, server
RSS); never asserts on them.  `--short` runs a small quick version.  The client is Python,
so the figures are a lower bound for what a C client gets.
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kubeclient import ApiServerProcess, Client, crd_path, install_crd  # noqa: E402

TJ = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs"
PG = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def proc_rss_kib(pid):
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def phase(name, srv, n, fn):
    pid = srv.proc.pid
    c0 = proc_cpu(pid)
    t0 = time.monotonic()
    for i in range(n):
        fn(i)
    dt = time.monotonic() - t0
    cpu = proc_cpu(pid) - c0
    print("%-28s %7d req  %8.0f req/s  server %6.0f us CPU/req" % (name, n, n / dt,
                                                                    cpu * 1e6 / n))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", action="store_true")
    ap.add_argument("-n", type=int, default=10000)
    a = ap.parse_args()
    n = 300 if a.short else a.n
    srv = ApiServerProcess()
    c = Client(srv.url)
    try:
        for d, f in (("trainer", "trainer.kubeflow.org_trainjobs.yaml"),
                     ("volcano", "scheduling.volcano.sh_podgroups.yaml")):
            install_crd(c, crd_path(d, f))
        events = [0]
        w = c.watch(PG + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=600")

        def drain():
            while w.next_event() is not None:
                events[0] += 1
        th = threading.Thread(target=drain, daemon=True)
        th.start()

        def create_tj(i):
            r = c.post(TJ, {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                            "metadata": {"name": "tj-%05d" % i, "labels": {"app": "bench"}},
                            "spec": {"runtimeRef": {"name": "torch-distributed"},
                                     "trainer": {"numNodes": 4}}})
            assert r.status == 201, r
        phase("create TrainJob (POST)", srv, n, create_tj)
        uids = {}
        for it in c.get(TJ).json["items"]:
            uids[it["metadata"]["name"]] = it["metadata"]["uid"]

        def apply_pg(i, mm=4):
            name = "tj-%05d" % i
            r = c.apply(PG + "/" + name, {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default",
                             "labels": {"gangbridge.io/trainjob": name},
                             "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                                  "kind": "TrainJob", "name": name,
                                                  "uid": uids[name], "controller": True,
                                                  "blockOwnerDeletion": True}]},
                "spec": {"minMember": mm, "queue": "default",
                         "minResources": {"cpu": "16", "memory": "64Gi"}}},
                manager="gangbridge", force=True)
            assert r.status in (200, 201), r
        phase("apply PodGroup (create)", srv, n, apply_pg)
        phase("apply PodGroup (no-op)", srv, n, apply_pg)
        phase("apply PodGroup (change)", srv, n, lambda i: apply_pg(i, 5))
        phase("get TrainJob", srv, n, lambda i: c.get(TJ + "/tj-%05d" % i))
        lists = max(3, n // 1000)
        phase("list %d TrainJobs" % n, srv, lists, lambda i: c.get(TJ))
        phase("list paged (limit=500)", srv, lists, lambda i: paged(c))
        print("watch events received: %d (expected %d)" % (events[0], 2 * n))
        print("server RSS: %d KiB for %d TrainJobs + %d PodGroups" % (
            proc_rss_kib(srv.proc.pid), n, n))
        w.close()
    finally:
        c.close()
        srv.stop()


def paged(c):
    cont = ""
    while True:
        r = c.get(TJ + "?limit=500" + ("&continue=" + cont if cont else ""))
        cont = r.json["metadata"].get("continue")
        if not cont:
            return


if __name__ == "__main__":
    main()
