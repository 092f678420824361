#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A tiny Kubernetes-like API server for the kube client tests (standard library only).

It serves any group/version/resource generically (namespaced paths and cluster-wide
lists), with one global resourceVersion counter, paged lists (limit/continue), watches
with bookmarks and timeoutSeconds, create/get/delete, JSON merge patch and a reduced
server-side apply (leaf-field ownership per field manager, 409 on conflicts without
force).  Faults are set with POST /_control/faults (JSON merged into the fault state):
  fail_next      the next N non-watch, non-control requests are answered 500
  error_rate     fraction of non-watch, non-control requests answered 500
  latency_ms     delay before every answer
  hold           1: stop delivering events to open watches (they queue nothing)
  bookmark_s     bookmark interval on watches that allow them (default 0.5)
POST /_control/drop closes every open watch; POST /_control/compact forgets history up to
now (old resourceVersions then get 410); with {"inband": true} open watches are sent an
ERROR 410 event before closing.  Every control call answers the current resourceVersion,
counters and the number of open watches.

Usage: kube_fixture.py [--port N]; prints its URL on the first line.
"""

import json
import random
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Condition()
STATE = {"rv": 100, "served": set(), "compacted": 0, "objects": {}, "log": [], "watch_gen": 0,
         "faults": {"fail_next": 0, "error_rate": 0.0, "latency_ms": 0, "hold": 0, "bookmark_s": 0.5},
         "inband_gen": -1, "open_watches": 0, "counters": {"list": 0, "watch": 0, "gone": 0, "errors": 0,
                                         "bookmarks": 0}}
OWNERS = {}  # (collection, ns, name) -> {leaf path: manager}


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def parse_path(path):
    """Returns (collection, ns, name, group, version, resource) or None."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        gv, rest = ("", parts[1]), parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        gv, rest = (parts[1], parts[2]), parts[3:]
    else:
        return None
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 2:
        return ("discovery", ns, None, gv[0], gv[1], None) if not rest else None
    res = rest[0]
    name = rest[1] if len(rest) == 2 else None
    return ("%s/%s/%s" % (gv[0], gv[1], res), ns, name, gv[0], gv[1], res)


def leaves(obj, prefix=""):
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            if prefix == "" and k in ("apiVersion", "kind"):
                continue
            if prefix == ".metadata" and k in ("name", "namespace", "resourceVersion", "uid"):
                continue
            if isinstance(v, dict) and v:
                out.update(leaves(v, prefix + "." + k))
            else:
                out[prefix + "." + k] = v
    return out


def merge(dst, src):
    for k, v in src.items():
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge(dst[k], v)
        else:
            dst[k] = v
    return dst


def get_leaf(obj, path):
    cur = obj
    for k in path.split(".")[1:]:
        if not isinstance(cur, dict) or k not in cur:
            return None
        cur = cur[k]
    return cur


def record(kind, obj, coll):
    """Called with LOCK held: bumps the RV and logs the event."""
    STATE["rv"] += 1
    obj["metadata"]["resourceVersion"] = str(STATE["rv"])
    STATE["log"].append((STATE["rv"], kind, json.loads(json.dumps(obj)), coll))
    LOCK.notify_all()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        """The request body, read once (always read before answering, so that
        a kept-alive connection stays in step)."""
        if not hasattr(self, "_body"):
            n = int(self.headers.get("Content-Length") or 0)
            self._body = self.rfile.read(n) if n else b""
        return self._body

    def faults(self, watch=False):
        f = STATE["faults"]
        if f["latency_ms"]:
            time.sleep(f["latency_ms"] / 1000.0)
        if not watch and (f["fail_next"] > 0 or random.random() < f["error_rate"]):
            f["fail_next"] = max(0, f["fail_next"] - 1)
            STATE["counters"]["errors"] += 1
            self.send_json(500, status(500, "InternalError", "injected fault"))
            return True
        return False

    def route(self, method):
        if hasattr(self, "_body"):
            del self._body
        self.body()
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path.startswith("/_control/"):
            return self.control(method, url.path[len("/_control/"):])
        p = parse_path(url.path)
        if p is None:
            return self.send_json(404, status(404, "NotFound", "the server could not find "
                                              "the requested resource"))
        coll, ns, name, group, version, res = p
        if coll == "discovery":
            return self.discovery(group, version)
        if method == "GET" and name is None and q.get("watch") in ("1", "true"):
            return self.watch(coll, ns, q)
        if self.faults():
            return
        if method == "GET" and name is None:
            return self.list(coll, ns, q)
        if method == "GET":
            return self.get(coll, ns, name)
        if method == "POST" and name is None:
            return self.create(coll, ns, json.loads(self.body() or b"{}"))
        if method == "DELETE" and name:
            self.body()
            return self.delete(coll, ns, name)
        if method == "PATCH" and name:
            ct = self.headers.get("Content-Type", "")
            return self.patch(coll, ns, name, ct, q, json.loads(self.body() or b"{}"))
        self.send_json(405, status(405, "MethodNotAllowed", "method not allowed"))

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")

    def do_PATCH(self):
        self.route("PATCH")

    def control(self, method, what):
        body = json.loads(self.body() or b"{}")
        with LOCK:
            if what == "faults":
                STATE["faults"].update(body)
            elif what == "drop":
                STATE["watch_gen"] += 1
            elif what == "compact":
                STATE["compacted"] = STATE["rv"]
                STATE["log"] = []
                if body.get("inband"):
                    STATE["inband_gen"] = STATE["watch_gen"]
                STATE["watch_gen"] += 1
            LOCK.notify_all()
            state = {"rv": str(STATE["rv"]), "counters": dict(STATE["counters"]),
                     "open_watches": STATE["open_watches"],
                     "objects": len(STATE["objects"])}
        self.send_json(200, state)

    def discovery(self, group, version):
        with LOCK:
            names = sorted({c.split("/")[2] for c in STATE["served"]
                            if c.startswith("%s/%s/" % (group, version))})
        if not names:
            return self.send_json(404, status(404, "NotFound", "not served"))
        self.send_json(200, {"kind": "APIResourceList", "groupVersion": version,
                             "resources": [{"name": n, "namespaced": True} for n in names]})

    def items(self, coll, ns):
        return sorted((k, v) for k, v in STATE["objects"].items()
                      if k[0] == coll and (ns is None or k[1] == ns))

    def list(self, coll, ns, q):
        limit = int(q.get("limit") or 0)
        with LOCK:
            STATE["counters"]["list"] += 1
            rv = str(STATE["rv"])
            objs = [v for _, v in self.items(coll, ns)]
        start = 0
        if q.get("continue"):
            start, rv = int(q["continue"].split(":")[0]), q["continue"].split(":")[1]
        page = objs[start:start + limit] if limit else objs[start:]
        meta = {"resourceVersion": rv}
        if limit and start + limit < len(objs):
            meta["continue"] = "%d:%s" % (start + limit, rv)
        self.send_json(200, {"kind": "List", "apiVersion": "v1", "metadata": meta,
                             "items": page})

    def get(self, coll, ns, name):
        with LOCK:
            obj = STATE["objects"].get((coll, ns or "", name))
        if obj is None:
            return self.send_json(404, status(404, "NotFound", "%s \"%s\" not found" %
                                              (coll.split("/")[2], name)))
        self.send_json(200, obj)

    def create(self, coll, ns, obj):
        name = obj.get("metadata", {}).get("name")
        if not name:
            return self.send_json(422, status(422, "Invalid", "metadata.name: Required value"))
        with LOCK:
            key = (coll, ns or "", name)
            if key in STATE["objects"]:
                return self.send_json(409, status(409, "AlreadyExists",
                                                  "\"%s\" already exists" % name))
            obj["metadata"]["uid"] = "uid-%d" % (STATE["rv"] + 1)
            if ns:
                obj["metadata"]["namespace"] = ns
            STATE["objects"][key] = obj
            STATE["served"].add(coll)
            record("ADDED", obj, coll)
            out = json.loads(json.dumps(obj))
        self.send_json(201, out)

    def delete(self, coll, ns, name):
        with LOCK:
            obj = STATE["objects"].pop((coll, ns or "", name), None)
            OWNERS.pop((coll, ns or "", name), None)
            if obj is not None:
                record("DELETED", obj, coll)
        if obj is None:
            return self.send_json(404, status(404, "NotFound", "\"%s\" not found" % name))
        self.send_json(200, status(200, "", "deleted") | {"status": "Success"})

    def patch(self, coll, ns, name, ct, q, body):
        key = (coll, ns or "", name)
        with LOCK:
            obj = STATE["objects"].get(key)
            if ct.startswith("application/merge-patch+json"):
                if obj is None:
                    return self.send_json(404, status(404, "NotFound", "not found"))
                merge(obj, body)
                record("MODIFIED", obj, coll)
                return self.send_json(200, obj)
            if not ct.startswith("application/apply-patch+yaml"):
                return self.send_json(415, status(415, "UnsupportedMediaType", ct))
            mgr = q.get("fieldManager")
            if not mgr:
                return self.send_json(422, status(422, "Invalid", "fieldManager is required"))
            force = q.get("force") == "true"
            owners = OWNERS.setdefault(key, {})
            new = leaves(body)
            conflicts = [p for p, v in sorted(new.items())
                         if owners.get(p, mgr) != mgr and obj is not None and
                         get_leaf(obj, p) != v]
            if conflicts and not force:
                msg = "Apply failed with %d conflict%s: %s" % (
                    len(conflicts), "s" if len(conflicts) > 1 else "",
                    "; ".join("conflict with \"%s\": %s" % (owners[p], p) for p in conflicts))
                return self.send_json(409, status(409, "Conflict", msg))
            for p in new:
                owners[p] = mgr
            created = obj is None
            if created:
                obj = {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"),
                       "metadata": {"name": name, "uid": "uid-%d" % (STATE["rv"] + 1)}}
                if ns:
                    obj["metadata"]["namespace"] = ns
                STATE["objects"][key] = obj
                STATE["served"].add(coll)
            merge(obj, body)
            obj["metadata"]["managedFields"] = [
                {"manager": m, "operation": "Apply", "fieldsV1": {}}
                for m in sorted(set(owners.values()))]
            record("ADDED" if created else "MODIFIED", obj, coll)
            out = json.loads(json.dumps(obj))
        self.send_json(201 if created else 200, out)

    def watch(self, coll, ns, q):
        rv = int(q.get("resourceVersion") or 0)
        timeout = float(q.get("timeoutSeconds") or 3600)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        self.faults(watch=True)
        with LOCK:
            STATE["counters"]["watch"] += 1
            if rv and rv < STATE["compacted"]:
                STATE["counters"]["gone"] += 1
                gone = True
            else:
                gone = False
                if not rv:
                    rv = STATE["rv"]
                gen = STATE["watch_gen"]
                STATE["open_watches"] += 1
        if gone:
            return self.send_json(410, status(410, "Expired",
                                              "too old resource version: %d" % rv))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.time() + timeout
        last_bm = time.time()
        sent_rv = rv
        try:
            while True:
                out = []
                with LOCK:
                    while True:
                        if STATE["watch_gen"] != gen:
                            if STATE["inband_gen"] == gen:
                                STATE["counters"]["gone"] += 1
                                out.append({"type": "ERROR", "object": status(
                                    410, "Expired", "too old resource version: %d" % sent_rv)})
                            end = True
                            break
                        end = time.time() >= deadline
                        if end:
                            break
                        hold = STATE["faults"]["hold"]
                        evs = [] if hold else [e for e in STATE["log"] if e[0] > sent_rv]
                        mine = [e for e in evs if e[3] == coll and (
                            ns is None or e[2]["metadata"].get("namespace") == ns)]
                        if evs:
                            sent_rv = evs[-1][0]
                        for e in mine:
                            out.append({"type": e[1], "object": e[2]})
                        bm = STATE["faults"]["bookmark_s"]
                        if bookmarks and not hold and bm and time.time() - last_bm >= bm:
                            last_bm = time.time()
                            sent_rv = max(sent_rv, STATE["rv"])
                            STATE["counters"]["bookmarks"] += 1
                            out.append({"type": "BOOKMARK", "object": {
                                "kind": "Bookmark", "apiVersion": "v1",
                                "metadata": {"resourceVersion": str(sent_rv)}}})
                        if out:
                            break
                        LOCK.wait(0.1)
                for ev in out:
                    data = (json.dumps(ev) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if end:
                    break
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with LOCK:
                STATE["open_watches"] -= 1
        self.close_connection = True


def main():
    port = 0
    if len(sys.argv) == 3 and sys.argv[1] == "--port":
        port = int(sys.argv[2])
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    print("http://127.0.0.1:%d" % srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
