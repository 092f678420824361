# SPDX-License-Identifier: Apache-2.0
"""Helpers for the scale, fault and high-availability tests and the controller benchmark.

This module owns a test cluster made of the stand-in API server (tests/apiserver/run, its
stderr written to a file so a long run can never block on a full pipe), the CRDs, any number
of `gangbridge serve` processes (each optionally behind its own counting proxy, so every
request can be attributed to the replica that sent it), process CPU and RSS readings from
/proc, Prometheus text parsing, retried writes for the test's own requests under injected
faults, and the comparison of served PodGroups with `gangbridge render` (reusing
controller_helpers.same_as_render).  Nothing here asserts timings.  The temporary directory
(logs, kubeconfigs) is removed at stop() unless GB_KEEP_TMP=1.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from controller_helpers import (CRD, GANGBRIDGE, SRC, fail, free_port, obj_path,  # noqa: E402
                                same_as_render)
import kubeclient  # noqa: E402

TJ_API = "trainer.kubeflow.org/v1alpha1"
PG_VOLCANO = "scheduling.volcano.sh/v1beta1"
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def sanitized_build():
    """True when GANGBRIDGE was built with ASan (GB_BUILD's cache says GB_SANITIZE=ON)."""
    build = os.environ.get("GB_BUILD") or os.path.dirname(GANGBRIDGE)
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as fh:
            return any(ln.strip().startswith("GB_SANITIZE:BOOL=ON") for ln in fh)
    except OSError:
        return False


# ---- /proc readings

def proc_cpu_seconds(pid):
    """utime + stime of a process (all threads) in seconds."""
    with open("/proc/%d/stat" % pid) as fh:
        s = fh.read()
    fields = s[s.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_kib(pid):
    with open("/proc/%d/status" % pid) as fh:
        for ln in fh:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return -1


# ---- Prometheus text

def metric_sum(text, name, **labels):
    """Sum of the samples of metric `name` whose labels include `labels`."""
    total = 0.0
    for ln in text.splitlines():
        if not ln.startswith(name) or ln.startswith("#"):
            continue
        rest = ln[len(name):]
        if rest[:1] not in ("{", " "):
            continue
        lab = {}
        if rest.startswith("{"):
            body, rest = rest[1:].split("}", 1)
            for part in body.split(","):
                if "=" in part:
                    k, v = part.split("=", 1)
                    lab[k.strip()] = v.strip().strip('"')
        if all(lab.get(k) == v for k, v in labels.items()):
            total += float(rest.split()[0])
    return total


def http_get(port, path, timeout=5):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


# ---- a counting HTTP proxy (attribution of requests to one client process)

class CountingProxy:
    """A TCP proxy in front of the stand-in that parses the HTTP/1.1 requests one client
    sends (request line, headers, Content-Length or chunked body) and records
    (time, method, path) for each, forwarding every byte unchanged both ways.  Each
    `gangbridge serve` replica gets its own proxy through its own kubeconfig, so a request
    counted here was sent by that replica and no other.  `cut()` closes every connection and
    refuses new ones (a network partition of that replica) until `heal()`."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(128)
        self.port = self.lsock.getsockname()[1]
        self.url = "http://127.0.0.1:%d" % self.port
        self.mu = threading.Lock()
        self.log = []  # (monotonic time, method, path)
        self.socks = set()
        self.partitioned = False
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            with self.mu:
                refuse = self.partitioned or self.closed
            if refuse:
                c.close()
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                c.close()
                continue
            with self.mu:
                self.socks.update((c, u))
            threading.Thread(target=self._requests, args=(c, u), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c), daemon=True).start()

    def _drop(self, *socks):
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
            with self.mu:
                self.socks.discard(s)

    def _pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        self._drop(src, dst)

    def _requests(self, c, u):
        buf = b""

        def need(n):
            nonlocal buf
            while len(buf) < n:
                d = c.recv(65536)
                if not d:
                    raise EOFError
                u.sendall(d)
                buf += d

        def line():
            nonlocal buf
            while b"\r\n" not in buf:
                need(len(buf) + 1)
            ln, buf = buf.split(b"\r\n", 1)
            return ln

        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    need(len(buf) + 1)
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path = lines[0].split(" ")[:2]
                hdr = {}
                for ln in lines[1:]:
                    k, _, v = ln.partition(":")
                    hdr[k.strip().lower()] = v.strip()
                with self.mu:
                    self.log.append((time.monotonic(), method, path))
                if "chunked" in hdr.get("transfer-encoding", "").lower():
                    while True:
                        size = int(line().split(b";")[0], 16)
                        need(size + 2)
                        buf = buf[size + 2:]
                        if size == 0:
                            break
                else:
                    n = int(hdr.get("content-length", "0") or 0)
                    need(n)
                    buf = buf[n:]
        except (EOFError, OSError, ValueError, IndexError):
            pass
        self._drop(c, u)

    def requests(self, since=0.0, methods=None, contains=None, excludes=None):
        with self.mu:
            log = list(self.log)
        return [(t, m, p) for t, m, p in log
                if t >= since and (methods is None or m in methods)
                and (contains is None or contains in p)
                and (excludes is None or excludes not in p)]

    def writes(self, since=0.0, contains=None, excludes=None):
        return self.requests(since, WRITE_METHODS, contains, excludes)

    def cut(self):
        with self.mu:
            self.partitioned = True
            socks = list(self.socks)
        self._drop(*socks)

    def heal(self):
        with self.mu:
            self.partitioned = False

    def close(self):
        self.closed = True
        self.cut()
        self.lsock.close()


# ---- the cluster

class Serve:
    """One `gangbridge serve` process."""

    def __init__(self, cluster, name, url, args, env=None):
        self.name = name
        self.http_port = free_port()
        self.kubeconfig = cluster.kubeconfig_for(url, name)
        self.log_path = os.path.join(cluster.tmp, "serve-%s.log" % name)
        self.log = open(self.log_path, "w")
        e = dict(os.environ, POD_NAME=name, POD_NAMESPACE="default")
        e.update(env or {})
        self.proc = subprocess.Popen(
            [GANGBRIDGE, "serve", "--kubeconfig", self.kubeconfig,
             "--http-addr", "127.0.0.1:%d" % self.http_port, "--webhook-addr", "",
             "--log-level", "info"] + list(args),
            stdout=self.log, stderr=subprocess.STDOUT, env=e)
        self.pid = self.proc.pid

    def ready(self):
        return http_get(self.http_port, "/readyz") == (200, "ok")

    def wait_ready(self, timeout=60):
        if not kubeclient.wait_for(lambda: self.ready() or self.proc.poll() is not None,
                                   timeout, 0.05) or self.proc.poll() is not None:
            fail("serve %s never became ready:\n%s" % (self.name, self.text()[-4000:]))

    def metrics(self):
        return http_get(self.http_port, "/metrics")[1]

    def reconciles(self, text=None):
        return metric_sum(text if text is not None else self.metrics(),
                          "gangbridge_reconciles_total")

    def text(self):
        try:
            with open(self.log_path) as fh:
                return fh.read()
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=90):
        """Signals the process and waits; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()
        return self.proc.returncode


class Cluster:
    """The stand-in API server with CRDs installed, plus the serve processes of a test."""

    def __init__(self, crds=("trainer", "volcano"), apiserver_args=()):
        self.tmp = tempfile.mkdtemp(prefix="gb-scale-")
        self.api_log_path = os.path.join(self.tmp, "apiserver.log")
        self.api_log = open(self.api_log_path, "w")
        self.api_proc = subprocess.Popen(
            [sys.executable, kubeclient.RUN, "--port", "0"] + list(apiserver_args),
            stdout=subprocess.PIPE, stderr=self.api_log)
        line = self.api_proc.stdout.readline().decode().strip()
        if not line.startswith("http"):
            self.api_proc.kill()
            raise RuntimeError("the stand-in did not start: %r" % line)
        self.url = line
        self.api_port = int(line.rsplit(":", 1)[1])
        self.c = kubeclient.Client(self.url)
        self.serves = []
        self.proxies = []
        for group in crds:
            for f in CRD[group]:
                kubeclient.install_crd(self.c, os.path.join(kubeclient.CRDS, f))

    def kubeconfig_for(self, url, name):
        path = os.path.join(self.tmp, "kubeconfig-%s" % name)
        with open(path, "w") as fh:
            fh.write("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster: {server: %s}\n"
                     "users:\n- name: u\n  user: {token: test}\ncontexts:\n- name: c\n"
                     "  context: {cluster: s, user: u}\ncurrent-context: c\n" % url)
        return path

    def proxy(self):
        p = CountingProxy(self.api_port)
        self.proxies.append(p)
        return p

    def serve(self, name, args=(), url=None, env=None):
        s = Serve(self, name, url or self.url, args, env)
        self.serves.append(s)
        return s

    def stats(self):
        return self.c.control("stats", method="GET")

    def faults(self, obj=None):
        if obj is None:
            return self.c.control("faults", method="DELETE")
        return self.c.control("faults", obj)

    def stop(self):
        for s in self.serves:
            if s.proc.poll() is None:
                s.stop(signal.SIGKILL)
        for p in self.proxies:
            p.close()
        self.c.close()
        if self.api_proc.poll() is None:
            self.api_proc.send_signal(signal.SIGTERM)
            try:
                self.api_proc.wait(30)
            except subprocess.TimeoutExpired:
                self.api_proc.kill()
                self.api_proc.wait()
        self.api_proc.stdout.close()
        self.api_log.close()
        if os.environ.get("GB_KEEP_TMP") != "1":
            shutil.rmtree(self.tmp, ignore_errors=True)

    def api_log_tail(self, n=4000):
        try:
            with open(self.api_log_path) as fh:
                return fh.read()[-n:]
        except OSError:
            return ""

    # ---- the test's own requests, retried through injected faults

    def retry(self, fn, what, client=None, attempts=400):
        """Runs fn(client) until it answers something other than 5xx/429 (or a dropped
        connection); returns that response."""
        c = client or kubeclient.Client(self.url)
        try:
            for _ in range(attempts):
                try:
                    r = fn(c)
                except (OSError, ValueError):
                    c.close()
                    time.sleep(0.02)
                    continue
                if r.status < 500 and r.status != 429:
                    return r
                time.sleep(0.02)
        finally:
            if client is None:
                c.close()
        fail("%s: still failing after %d attempts" % (what, attempts))

    def list_all(self, api_version, kind, client=None):
        """Every object of a kind, cluster-wide (retried; pages of 500)."""
        c = client or self.c
        base = obj_path(api_version, kind)
        items, cont = [], ""
        while True:
            path = base + "?limit=500" + ("&continue=" + cont if cont else "")
            r = self.retry(lambda cl: cl.get(path), "list " + kind, client=c)
            if r.status != 200:
                fail("list %s: %r" % (kind, r))
            doc = r.json
            for it in doc["items"]:
                it.setdefault("apiVersion", api_version)
                it.setdefault("kind", kind)
                items.append(it)
            cont = doc["metadata"].get("continue")
            if not cont:
                return items

    def render(self, objs, *args):
        path = os.path.join(self.tmp, "render-input.json")
        with open(path, "w") as fh:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, fh)
        out = subprocess.run([GANGBRIDGE, "render", "-o", "json", "-f", path] + list(args),
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            fail("render failed: %s" % out.stderr[-2000:])
        doc = json.loads(out.stdout)
        return doc["items"] if doc.get("kind") == "List" else [doc]


def parallel(items, fn, threads=16):
    """fn(item) for every item on `threads` threads; re-raises the first failure."""
    errors = []

    def run(chunk):
        for it in chunk:
            try:
                fn(it)
            except Exception as ex:  # noqa: BLE001 - collected and re-raised
                errors.append(ex)
                return
    ts = [threading.Thread(target=run, args=(items[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def compare_podgroups(served, expected):
    """Problems between served PodGroups and rendered ones, both dicts keyed by ns/name."""
    problems = []
    for key in sorted(set(expected) - set(served)):
        problems.append("%s: missing" % key)
    for key in sorted(set(served) - set(expected)):
        problems.append("%s: extra" % key)
    for key in sorted(set(served) & set(expected)):
        for p in same_as_render(served[key], expected[key]):
            problems.append("%s: %s" % (key, p))
    return problems


def by_key(objs):
    return {"%s/%s" % (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in objs}


__all__ = ["CRD", "GANGBRIDGE", "SRC", "TJ_API", "PG_VOLCANO", "Cluster", "CountingProxy",
           "Serve", "by_key", "compare_podgroups", "fail", "free_port", "http_get",
           "metric_sum", "obj_path", "parallel", "proc_cpu_seconds", "proc_rss_kib",
           "sanitized_build"]
