# SPDX-License-Identifier: Apache-2.0
"""Helpers for the controller's end-to-end tests (`gangbridge serve` against the stand-in).

This module owns one test environment: the stand-in API server (tests/apiserver/run) with
the CRDs a scenario needs, a kubeconfig for it, `gangbridge serve` started on free ports and
waited for until /readyz answers ok, small REST helpers, polling, and `gangbridge render` of
the same objects for comparison.  Tests call stop() (in a finally) and stop() checks that
serve exited 0 after SIGTERM (under ASan that also means no leaks).
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SRC = os.environ.get("GB_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "apiserver"))
import kubeclient  # noqa: E402

GANGBRIDGE = os.environ.get("GANGBRIDGE") or os.path.join(SRC, "build", "gangbridge")
CRD = {
    "trainer": ["trainer/trainer.kubeflow.org_trainjobs.yaml",
                "trainer/trainer.kubeflow.org_trainingruntimes.yaml",
                "trainer/trainer.kubeflow.org_clustertrainingruntimes.yaml"],
    "volcano": ["volcano/scheduling.volcano.sh_podgroups.yaml",
                "volcano/scheduling.volcano.sh_queues.yaml"],
    "coscheduling": ["coscheduling/scheduling.x-k8s.io_podgroups.yaml"],
    "kai": ["kai/scheduling.run.ai_podgroups.yaml"],
}
PLURAL = {"TrainJob": "trainjobs", "TrainingRuntime": "trainingruntimes",
          "ClusterTrainingRuntime": "clustertrainingruntimes", "Namespace": "namespaces",
          "Queue": "queues", "PodGroup": "podgroups", "Event": "events", "Pod": "pods"}
CLUSTER_SCOPED = {"ClusterTrainingRuntime", "Namespace", "Queue"}
PG_API = {"volcano": "scheduling.volcano.sh/v1beta1", "coscheduling": "scheduling.x-k8s.io/v1alpha1",
          "kai": "scheduling.run.ai/v2alpha2"}


_HANDED_OUT = set()


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            lo, hi = (int(x) for x in fh.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A port no one listens on, for a server this test starts later.

    The port is drawn from below the kernel's ephemeral range: a port the kernel hands
    out for bind(0) (the stand-in API server, a proxy) or as an outgoing connection's
    source port is always inside that range, so it can never take the port between this
    call and the server's own bind.  A port once returned is never returned again by
    this process; the test bind detects ports other processes hold."""
    lo, _ = _ephemeral_range()
    first, last = 10000, max(10001, lo - 1)
    rnd = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(1000):
        p = rnd.randint(first, last)
        if p in _HANDED_OUT:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        _HANDED_OUT.add(p)
        return p
    raise RuntimeError("no free port below the ephemeral range")


def api_prefix(api_version):
    return "/api/v1" if api_version == "v1" else "/apis/" + api_version


def obj_path(api_version, kind, ns=None, name=None):
    p = api_prefix(api_version)
    if ns and kind not in CLUSTER_SCOPED:
        p += "/namespaces/" + ns
    p += "/" + PLURAL[kind]
    if name:
        p += "/" + name
    return p


def fail(msg):
    raise AssertionError(msg)


class Env:
    def __init__(self, crds=("trainer", "volcano"), serve_args=(), apiserver_args=()):
        self.tmp = tempfile.mkdtemp(prefix="gb-ctrl-")
        self.serve_proc = None
        self.api = kubeclient.ApiServerProcess(*apiserver_args)
        self.c = kubeclient.Client(self.api.url)
        for group in crds:
            self.install(group)
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        with open(self.kubeconfig, "w") as fh:
            fh.write("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster: {server: %s}\n"
                     "users:\n- name: u\n  user: {token: test}\ncontexts:\n- name: c\n"
                     "  context: {cluster: s, user: u}\ncurrent-context: c\n" % self.api.url)
        self.serve_args = list(serve_args)

    # ---- processes

    def install(self, group):
        for f in CRD[group]:
            kubeclient.install_crd(self.c, os.path.join(kubeclient.CRDS, f))

    def start_serve(self, extra=(), wrapper=(), ready_timeout=20):
        self.http_port = free_port()
        self.hook_port = free_port()
        self.debug_port = free_port()
        self.log_path = os.path.join(self.tmp, "serve.log")
        args = list(wrapper) + [GANGBRIDGE, "serve", "--kubeconfig", self.kubeconfig,
                "--http-addr", "127.0.0.1:%d" % self.http_port,
                "--webhook-addr", "127.0.0.1:%d" % self.hook_port,
                "--set", "placement.debugAddress=127.0.0.1:%d" % self.debug_port,
                "--log-level", "debug",
                "--set", "scheduling.discoveryInterval=2s",
                "--set", "events.minInterval=0s",
                "--set", "controller.queueMaxDelay=1s"] + self.serve_args + list(extra)
        self.log = open(self.log_path, "w")
        self.serve_proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        if not kubeclient.wait_for(lambda: self.http_get("/readyz") == (200, "ok"),
                                   ready_timeout):
            fail("serve never became ready:\n" + self.serve_log())

    def serve_log(self):
        try:
            with open(getattr(self, "log_path", "")) as fh:
                return fh.read()[-20000:]
        except OSError:
            return ""

    def stop_serve(self):
        """SIGTERM serve and require a clean exit (0: no leaks under ASan)."""
        if not self.serve_proc:
            return
        p, self.serve_proc = self.serve_proc, None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(90)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                fail("serve did not stop within 90 s:\n" + self.serve_log())
        self.log.close()
        if p.returncode != 0:
            fail("serve exited %s:\n%s" % (p.returncode, self.serve_log()))

    def stop(self):
        try:
            self.stop_serve()
        finally:
            self.c.close()
            self.api.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def http_get(self, path, port=None):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port or self.http_port, path),
                                        timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return 0, ""

    # ---- objects

    def create(self, obj):
        md = obj["metadata"]
        r = self.c.post(obj_path(obj["apiVersion"], obj["kind"], md.get("namespace")), obj)
        if r.status != 201:
            fail("create %s %s: %r" % (obj["kind"], md["name"], r))
        return r.json

    def get(self, api_version, kind, ns, name):
        r = self.c.get(obj_path(api_version, kind, ns, name))
        if r.status == 404:
            return None
        if r.status != 200:
            fail("get %s %s/%s: %r" % (kind, ns, name, r))
        return r.json

    def merge_patch(self, api_version, kind, ns, name, patch, sub=""):
        r = self.c.patch(obj_path(api_version, kind, ns, name) + sub, json.dumps(patch),
                         "application/merge-patch+json")
        if r.status != 200:
            fail("patch %s %s/%s%s: %r" % (kind, ns, name, sub, r))
        return r.json

    def delete(self, api_version, kind, ns, name):
        r = self.c.delete(obj_path(api_version, kind, ns, name))
        if r.status not in (200, 202):
            fail("delete %s %s/%s: %r" % (kind, ns, name, r))

    def podgroup(self, backend, ns, name):
        return self.get(PG_API[backend], "PodGroup", ns, name)

    def events(self, ns, name, reason=None):
        r = self.c.get("/api/v1/namespaces/%s/events?fieldSelector=involvedObject.name=%s"
                       % (ns, name))
        if r.status != 200:
            fail("list events: %r" % r)
        return [e for e in r.json["items"] if reason is None or e.get("reason") == reason]

    def wait(self, pred, what, timeout=15):
        v = kubeclient.wait_for(pred, timeout, 0.05)
        if not v:
            fail("timed out waiting for %s\n--- serve log ---\n%s" % (what, self.serve_log()))
        return v

    # ---- render for comparison

    def render(self, objs, *args):
        path = os.path.join(self.tmp, "render-input.json")
        with open(path, "w") as fh:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, fh)
        out = subprocess.run([GANGBRIDGE, "render", "-o", "json", "-f", path] + list(args),
                             capture_output=True, text=True, timeout=30)
        if out.returncode != 0:
            fail("render failed: %s" % out.stderr)
        doc = json.loads(out.stdout)
        return doc["items"] if doc.get("kind") == "List" else [doc]


# spec fields the CRD schemas default (the API server adds them to what was applied).
CRD_DEFAULTS = {"scheduling.volcano.sh/v1beta1": {"queue": "default"}}


# Annotations the timeout tracker adds to gangbridge's PodGroups (field manager
# gangbridge-timeouts): facts of the gang's wait, not part of what render produces.
TRACKER_FACTS = ("gangbridge.io/started-at", "gangbridge.io/ready-at", "gangbridge.io/timed-out-at",
                 "gangbridge.io/resumed-at")


def same_as_render(pg, rendered):
    """The PodGroup served carries exactly what render produced, apart from server fields,
    spec fields the CRD schema defaults and the timeout tracker's facts."""
    problems = []
    for k in ("apiVersion", "kind"):
        if pg.get(k) != rendered.get(k):
            problems.append("%s: served %r, rendered %r" % (k, pg.get(k), rendered.get(k)))
    spec = dict(pg.get("spec") or {})
    for k, v in CRD_DEFAULTS.get(pg.get("apiVersion"), {}).items():
        if k not in rendered.get("spec", {}) and spec.get(k) == v:
            del spec[k]
    if spec != rendered.get("spec"):
        problems.append("spec: served %r, rendered %r" % (pg.get("spec"), rendered.get("spec")))
    served = dict(pg["metadata"])
    if served.get("annotations"):
        served["annotations"] = {k: v for k, v in served["annotations"].items()
                                 if k not in TRACKER_FACTS} or None
    for k in ("name", "namespace", "labels", "annotations", "ownerReferences"):
        if served.get(k) != rendered["metadata"].get(k):
            problems.append("metadata.%s: served %r, rendered %r"
                            % (k, served.get(k), rendered["metadata"].get(k)))
    return problems


def trainjob(name, ns, runtime, num_nodes=2, kind="TrainingRuntime", suspend=None, labels=None,
             cpu="2"):
    tj = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
          "metadata": {"name": name, "namespace": ns},
          "spec": {"runtimeRef": {"name": runtime, "kind": kind},
                   "trainer": {"numNodes": num_nodes,
                               "resourcesPerNode": {"requests": {"cpu": cpu, "memory": "4Gi"}}}}}
    if suspend is not None:
        tj["spec"]["suspend"] = suspend
    if labels:
        tj["metadata"]["labels"] = labels
    return tj


def runtime(name, ns=None, policy=None, annotations=None, initializer=False):
    """A TrainingRuntime (ClusterTrainingRuntime when ns is None) with a torch trainer and,
    optionally, a dataset initializer that runs in an earlier dependsOn wave."""
    jobs = []
    if initializer:
        jobs.append({"name": "dataset-initializer",
                     "template": {"metadata": {"labels": {
                         "trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
                         "spec": {"template": {"spec": {"containers": [
                             {"name": "dataset-initializer", "image": "init:1",
                              "resources": {"requests": {"cpu": "1"}}}]}}}}})
    node = {"name": "node",
            "template": {"metadata": {"labels": {
                "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "node", "image": "pytorch:1"}]}}}}}
    if initializer:
        node["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
    jobs.append(node)
    spec = {"mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": jobs}}}
    if annotations:
        spec["template"]["metadata"] = {"annotations": annotations}
    if policy:
        spec["podGroupPolicy"] = policy
    md = {"name": name}
    if ns:
        md["namespace"] = ns
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainingRuntime" if ns else "ClusterTrainingRuntime",
            "metadata": md, "spec": spec}


def gang_pod(name, ns, jobset, backend="volcano"):
    """A pod of JobSet `jobset` as Trainer's JobSet makes it: the JobSet name label and the
    PodGroup reference of the backend (Volcano annotation or coscheduling label)."""
    labels = {"jobset.sigs.k8s.io/jobset-name": jobset,
              "jobset.sigs.k8s.io/replicatedjob-name": "node"}
    md = {"name": name, "namespace": ns, "labels": labels}
    if backend == "volcano":
        md["annotations"] = {"scheduling.k8s.io/group-name": jobset}
    else:
        labels["scheduling.x-k8s.io/pod-group"] = jobset
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "node", "image": "pytorch:1"}]}}


def namespace(name, labels=None, annotations=None):
    md = {"name": name}
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": md}


class Runner:
    """Runs named test functions and reports like a tiny unittest."""

    def __init__(self):
        self.failed = 0

    def run(self, name, fn, *args):
        t0 = time.monotonic()
        try:
            fn(*args)
            print("ok   %-40s %.1fs" % (name, time.monotonic() - t0))
        except Exception as ex:  # noqa: BLE001 - report every failure and go on
            self.failed += 1
            print("FAIL %-40s %s" % (name, ex))
        sys.stdout.flush()

    def exit(self):
        print("%s" % ("FAILED: %d" % self.failed if self.failed else "all passed"))
        sys.exit(1 if self.failed else 0)
