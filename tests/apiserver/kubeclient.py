# SPDX-License-Identifier: Apache-2.0
"""A tiny HTTP client and process launcher for tests of the stand-in API server.

This module owns starting `tests/apiserver/run` as a child process (reading its URL from
the first stdout line) and talking to it over keep-alive HTTP/1.1, including reading
chunked watch streams event by event.  Other Python tests of gangbridge may reuse it.
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = os.path.join(HERE, "run")
SRC = os.environ.get("GB_SRC") or os.path.abspath(os.path.join(HERE, "..", ".."))
SHARED = os.environ.get("GB_SHARED") or os.path.abspath(os.path.join(SRC, "..", "shared"))
CRDS = os.path.join(SHARED, "crds")


class ApiServerProcess:
    """tests/apiserver/run in a child process."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, RUN, "--port", "0"] + list(args),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = self.proc.stdout.readline().decode().strip()
        if not line.startswith("http"):
            err = self.proc.stderr.read().decode()
            self.proc.kill()
            raise RuntimeError("apiserver did not start: %r %s" % (line, err))
        self.url = line

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def json(self):
        return json.loads(self.body) if self.body else None

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


class Client:
    def __init__(self, url, timeout=30):
        u = urllib.parse.urlsplit(url)
        self.host = u.hostname
        self.port = u.port
        self.timeout = timeout
        self.conn = None

    def _connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def request(self, method, path, body=None, ctype=None, headers=None, retry=True):
        if self.conn is None:
            self.conn = self._connect()
        h = {"User-Agent": "kubeclient.py/1.0"}
        h.update(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            ctype = ctype or "application/json"
        if isinstance(body, str):
            body = body.encode()
        if ctype:
            h["Content-Type"] = ctype
        try:
            self.conn.request(method, path, body=body, headers=h)
            r = self.conn.getresponse()
            data = r.read()
        except (http.client.HTTPException, ConnectionError, OSError):
            self.conn.close()
            self.conn = None
            if not retry:
                raise
            return self.request(method, path, body, ctype, headers, retry=False)
        hdrs = {}
        for k, v in r.getheaders():
            k = k.lower()
            hdrs[k] = hdrs[k] + ", " + v if k in hdrs else v
        if r.will_close:
            self.conn.close()
            self.conn = None
        return Response(r.status, hdrs, data)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, obj, **kw):
        return self.request("POST", path, obj, **kw)

    def put(self, path, obj, **kw):
        return self.request("PUT", path, obj, **kw)

    def delete(self, path, obj=None, **kw):
        return self.request("DELETE", path, obj, **kw)

    def patch(self, path, body, ctype, **kw):
        return self.request("PATCH", path, body, ctype=ctype, **kw)

    def apply(self, path, obj, manager="test", force=False, **kw):
        q = "fieldManager=%s" % urllib.parse.quote(manager) if manager is not None else ""
        if force:
            q += "&force=true"
        sep = "&" if "?" in path else "?"
        return self.request("PATCH", path + sep + q, json.dumps(obj),
                            ctype="application/apply-patch+yaml", **kw)

    def control(self, what, obj=None, method="POST"):
        r = self.request(method, "/_control/" + what, obj if obj is not None else {})
        if r.status != 200:
            raise RuntimeError("control %s: %r" % (what, r))
        return r.json

    def watch(self, path, timeout=30):
        return Watch(self.host, self.port, path, timeout)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Watch:
    """One watch request; iterate events with next_event()."""

    def __init__(self, host, port, path, timeout):
        self.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        self.conn.request("GET", path, headers={"User-Agent": "kubeclient.py/1.0"})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.chunked = self.resp.chunked
        self.ended = False       # the server ended the stream cleanly (last chunk seen)
        self.broken = False      # the stream was cut without the last chunk
        self.buf = b""

    def body(self):
        return json.loads(self.resp.read())

    def _chunk(self):
        """Read one chunk of the stream; None at the end (ended or broken set)."""
        fp = self.resp.fp
        try:
            line = fp.readline(1024)
            if not line.endswith(b"\n"):
                self.broken = True
                return None
            n = int(line.split(b";")[0].strip(), 16)
            if n == 0:
                fp.readline(1024)
                self.ended = True
                return None
            data = fp.read(n)
            crlf = fp.read(2)
            if len(data) != n or crlf != b"\r\n":
                self.broken = True
                return None
            return data
        except (ValueError, AttributeError, ConnectionError, OSError):
            self.broken = True
            return None

    def next_event(self):
        """The next event as a dict, or None when the stream ended (see ended/broken)."""
        if not self.chunked:
            return None
        while b"\n" not in self.buf:
            if self.ended or self.broken:
                return None
            data = self._chunk()
            if data is None:
                return None
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def events_until(self, pred, limit=10000):
        out = []
        for _ in range(limit):
            ev = self.next_event()
            if ev is None:
                break
            out.append(ev)
            if pred(ev):
                break
        return out

    def close(self):
        self.conn.close()


def wait_for(pred, timeout=10.0, step=0.02):
    """Poll pred until true; returns its last value (functional wait, not a timing assertion)."""
    end = time.monotonic() + timeout
    v = pred()
    while not v and time.monotonic() < end:
        time.sleep(step)
        v = pred()
    return v


_yaml_cache = {}


def load_yaml_docs(path):
    """YAML documents of a file (parsed once per process; callers must not modify them)."""
    if path not in _yaml_cache:
        import yaml
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with open(path) as fh:
            _yaml_cache[path] = [d for d in yaml.load_all(fh, Loader=loader) if d]
    return _yaml_cache[path]


def crd_path(group_dir, name):
    return os.path.join(CRDS, group_dir, name)


def install_crd(client, path):
    """Install a CRD the way `kubectl apply --server-side` does."""
    doc = load_yaml_docs(path)[0]
    name = doc["metadata"]["name"]
    r = client.apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name, doc,
                     manager="kubectl", force=False)
    if r.status not in (200, 201):
        raise RuntimeError("install %s: %r" % (path, r))
    return doc
