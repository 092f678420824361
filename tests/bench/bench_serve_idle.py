#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What an idle `gangbridge serve` costs: threads, RSS and the lists and watches it holds.

Runs the real binary against the stand-in API server with the configuration `deploy/` ships
(deploy/configmap.yaml's config.yaml: placement and timeouts enabled, leader election on),
changed only where a laptop differs from a cluster: the kubeconfig, the listening addresses
(loopback, free ports) and no TLS files.  The stand-in has the Trainer and Volcano CRDs
(HyperNodes included) and one namespace, no workloads unless --pods asks for some (then
--nodes Nodes and --pods pods spread over them, every other one a JobSet pod of a TrainJob's
gang, each a few hundred bytes as a kubelet-less stand-in stores it): the caches' share of the
RSS.  Once serve is ready it is left idle for a few seconds, then the script prints

  - threads: the entries of /proc/PID/task;
  - VmRSS from /proc/PID/status;
  - after SIGTERM (the stand-in logs a watch when it ends, and with bookmarks every second
    it finds a watch's client gone within a second), the LIST and WATCH
    requests per resource and selector from the stand-in's request log (-v), each line
    `resource [selectors]  lists N  watches N`.

It is the before/after measurement of issue 20 (one informer per resource): the same script
runs on both trees.  `--check` makes it exit 1 when any resource and selector was listed or
watched more than once, or when one resource was listed under two selectors (two caches of
the same objects).  Figures only otherwise; nothing is timed.
"""

import argparse
import collections
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GB_SRC") or os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "apiserver"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import yaml  # noqa: E402

import kubeclient  # noqa: E402
from controller_helpers import GANGBRIDGE, free_port  # noqa: E402

CRD_FILES = ["trainer/trainer.kubeflow.org_trainjobs.yaml",
             "trainer/trainer.kubeflow.org_trainingruntimes.yaml",
             "trainer/trainer.kubeflow.org_clustertrainingruntimes.yaml",
             "volcano/scheduling.volcano.sh_podgroups.yaml",
             "volcano/scheduling.volcano.sh_queues.yaml",
             "volcano/topology.volcano.sh_hypernodes.yaml"]
LINE = re.compile(r"^apiserver: GET (\S+) (list|watch) -> ")


def deploy_config(kubeconfig):
    """deploy/configmap.yaml's config.yaml with local addresses, no TLS, this kubeconfig."""
    with open(os.path.join(SRC, "deploy", "configmap.yaml")) as fh:
        cm = yaml.safe_load(fh)
    cfg = yaml.safe_load(cm["data"]["config.yaml"])
    cfg["kube"]["kubeconfig"] = kubeconfig
    for sec in ("grpc", "webhook", "sched"):
        for k in ("tlsCert", "tlsKey", "clientCA"):
            if k in cfg[sec]:
                cfg[sec][k] = ""
        cfg[sec]["address"] = "127.0.0.1:%d" % free_port()
    cfg["http"]["address"] = "127.0.0.1:%d" % free_port()
    cfg["placement"]["debugAddress"] = "127.0.0.1:%d" % free_port()
    cfg["leaderElection"]["namespace"] = "default"
    return cfg


def populate(c, nodes, pods):
    """nodes Nodes and pods pods over them; every other pod a JobSet pod."""
    for i in range(nodes):
        c.post("/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-%d" % i, "labels": {"kubernetes.io/hostname": "node-%d" % i}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    for i in range(pods):
        labels = {"app": "web"}
        if i % 2:
            labels = {"jobset.sigs.k8s.io/jobset-name": "job-%d" % (i // 16),
                      "jobset.sigs.k8s.io/replicatedjob-name": "node"}
        c.post("/api/v1/namespaces/team-a/pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "pod-%d" % i, "labels": labels,
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x" * 200}},
            "spec": {"nodeName": "node-%d" % (i % max(nodes, 1)) if nodes else "",
                     "containers": [{"name": "main", "image": "registry.example/app:1.0",
                                     "command": ["python", "-m", "train"],
                                     "env": [{"name": "RANK", "value": str(i)}],
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})


def ready(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as fh:
        for ln in fh:
            if ln.startswith(key + ":"):
                return ln.split()[1]
    return "?"


def requests_of(log_path):
    """{(resource path without namespace, selectors): Counter(list=, watch=)}"""
    out = collections.defaultdict(collections.Counter)
    with open(log_path) as fh:
        for ln in fh:
            m = LINE.match(ln)
            if not m:
                continue
            u = urllib.parse.urlsplit(m.group(1))
            q = urllib.parse.parse_qs(u.query)
            sel = " ".join("%s=%s" % (k, q[k][0]) for k in ("labelSelector", "fieldSelector")
                           if k in q)
            path = re.sub(r"/namespaces/[^/]+/", "/namespaces/*/", u.path)
            out[(path, sel)][m.group(2)] += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--short", action="store_true", help="idle 3 s instead of 10 (CI)")
    ap.add_argument("--idle", type=float, help="seconds idle before measuring")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every resource is listed and watched at most once")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--pods", type=int, default=0, help="pods to create before serve starts")
    ap.add_argument("--nodes", type=int, default=0, help="Nodes to create (with --pods)")
    a = ap.parse_args()
    idle = a.idle if a.idle is not None else (3.0 if a.short else 10.0)
    tmp = tempfile.mkdtemp(prefix="gb-idle-")
    api_log_path = os.path.join(tmp, "apiserver.log")
    api_log = open(api_log_path, "w")
    # Bookmarks every second: the stand-in logs a watch when it ends, and it sees a watch
    # whose client has gone at its next write.
    api = subprocess.Popen([sys.executable, kubeclient.RUN, "--port", "0", "-v",
                            "--bookmark-interval", "1"],
                           stdout=subprocess.PIPE, stderr=api_log)
    serve = None
    status = 0
    try:
        url = api.stdout.readline().decode().strip()
        c = kubeclient.Client(url)
        for f in CRD_FILES:
            kubeclient.install_crd(c, os.path.join(kubeclient.CRDS, f))
        c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": "team-a"}})
        populate(c, a.nodes, a.pods)
        kc = os.path.join(tmp, "kubeconfig")
        with open(kc, "w") as fh:
            fh.write("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster: {server: %s}\n"
                     "users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n"
                     "  context: {cluster: s, user: u}\ncurrent-context: c\n" % url)
        cfg = deploy_config(kc)
        cfg_path = os.path.join(tmp, "config.yaml")
        with open(cfg_path, "w") as fh:
            yaml.safe_dump(cfg, fh)
        port = int(cfg["http"]["address"].rsplit(":", 1)[1])
        log = open(os.path.join(tmp, "serve.log"), "w")
        env = dict(os.environ, POD_NAME="gangbridge-0", POD_NAMESPACE="default")
        serve = subprocess.Popen([GANGBRIDGE, "serve", "--config", cfg_path, "--log-level",
                                  "info"], stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while not ready(port) and serve.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        if serve.poll() is not None or not ready(port):
            print("serve did not become ready; see", tmp)
            return 1
        time.sleep(idle)
        threads = len(os.listdir("/proc/%d/task" % serve.pid))
        rss = proc_status(serve.pid, "VmRSS")
        serve.send_signal(signal.SIGTERM)
        rc = serve.wait(90)
        time.sleep(3)  # the stand-in logs the watches the stop ended at their next bookmark
        reqs = requests_of(api_log_path)
        print("idle serve (deploy/configmap.yaml, placement and timeouts on), %.0f s idle, "
              "%d nodes, %d pods" % (idle, a.nodes, a.pods))
        print("threads %d" % threads)
        print("VmRSS %s kB" % rss)
        print("exit status after SIGTERM %d" % rc)
        per_resource = collections.Counter()
        for (path, sel), n in sorted(reqs.items()):
            print("%-72s lists %d  watches %d" % (path + (" [" + sel + "]" if sel else ""),
                                                  n["list"], n["watch"]))
            per_resource[path] += 1
            if a.check and (n["list"] > 1 or n["watch"] > 1):
                print("CHECK FAILED: %s [%s] listed %d and watched %d times"
                      % (path, sel, n["list"], n["watch"]))
                status = 1
        for path, n in sorted(per_resource.items()):
            if a.check and n > 1:
                print("CHECK FAILED: %s listed under %d selectors" % (path, n))
                status = 1
        if rc != 0:
            status = 1
        return status
    finally:
        if serve and serve.poll() is None:
            serve.kill()
            serve.wait()
        api.send_signal(signal.SIGTERM)
        try:
            api.wait(30)
        except subprocess.TimeoutExpired:
            api.kill()
        api_log.close()
        if a.keep:
            print("kept", tmp)
        else:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
