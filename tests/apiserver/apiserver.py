# SPDX-License-Identifier: Apache-2.0
"""A stand-in Kubernetes API server for gangbridge's tests (Python 3 standard library).

This module owns the HTTP front end, the object store, discovery, watches, garbage
collection and fault injection of the test API server started by `tests/apiserver/run`.
It aims to answer like a real kube-apiserver for what gangbridge and kubectl use:
discovery (served kinds follow installed CRDs), list/get/create/update/patch/apply/delete,
watch streams with bookmarks and 410 Expired, managedFields, status subresources,
ownerReference garbage collection, and real `Status` errors.  Server-side apply lives in
ssa.py, schema validation in schema.py.  docs/internals/apiserver.md lists every endpoint,
fault and known deviation.
"""

import base64
import bisect
import hashlib
import json
import os
import queue
import random
import re
import signal
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openapiv2  # noqa: E402
import podrules  # noqa: E402
import schema as vschema  # noqa: E402
import ssa  # noqa: E402

try:
    import yaml
    _YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _K8sYamlLoader(_YamlLoader):
        """Safe loader without the timestamp resolver (Kubernetes keeps dates as strings)."""

    _K8sYamlLoader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in _YamlLoader.yaml_implicit_resolvers.items()
    }
except ImportError:  # pragma: no cover - python3-yaml is a declared test dependency
    yaml = None

SERVER_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.4-gangbridge-standin",
    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
    "platform": "linux/amd64",
}

MAX_BODY = 3 * 1024 * 1024
_MISSING = object()
ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


def now_ts():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


# ------------------------------------------------------------------------- errors

class ApiError(Exception):
    """An error answered as a real metav1.Status."""

    def __init__(self, code, reason, message, details=None, headers=None, extra=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.extra = extra

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": dict(self.extra or {}),
              "status": "Failure", "message": self.message}
        if self.reason:
            st["reason"] = self.reason
        if self.details is not None:
            st["details"] = self.details
        st["code"] = self.code
        return st


def _details(rt, name):
    d = {}
    if name is not None:
        d["name"] = name
    if rt.group:
        d["group"] = rt.group
    d["kind"] = rt.resource
    return d


def err_not_found(rt, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (rt.qualified, name), _details(rt, name))


def err_exists(rt, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (rt.qualified, name),
                    _details(rt, name))


def err_conflict(rt, name, why="the object has been modified; please apply your changes to "
                 "the latest version and try again"):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (rt.qualified, name, why), _details(rt, name))


def err_invalid(kind, group, name, errs):
    qk = "%s.%s" % (kind, group) if group else kind
    if len(errs) == 1:
        agg = errs[0].text()
    else:
        agg = "[" + ", ".join(e.text() for e in errs) + "]"
    d = {"name": name or "", "group": group, "kind": kind, "causes": [e.cause() for e in errs]}
    if not group:
        del d["group"]
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (qk, name or "", agg), d)


def err_bad_request(msg):
    return ApiError(400, "BadRequest", msg)


def err_expired(msg):
    return ApiError(410, "Expired", msg)


def err_method():
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {})


def err_path():
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def err_media(accepted):
    return ApiError(415, "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types "
                    "include: " + ", ".join(accepted))


# ------------------------------------------------------------------------- resource types

class ResourceType:
    """One served resource (plural) in one group/version."""

    def __init__(self, group, version, resource, kind, namespaced, singular=None,
                 short_names=(), categories=(), schema=None, status_sub=False, crd_name=None,
                 printer_columns=None, verbs=None, versions=None, generation=True):
        self.group = group
        self.version = version
        self.resource = resource
        self.kind = kind
        self.list_kind = kind + "List"
        self.namespaced = namespaced
        self.singular = singular or kind.lower()
        self.short_names = list(short_names or ())
        self.categories = list(categories or ())
        self.schema = schema               # CRD openAPIV3Schema (None: built-in, untyped)
        self.ssa_schema = ssa.root_schema(schema)
        self.status_sub = status_sub
        self.crd_name = crd_name
        self.printer_columns = printer_columns
        self.verbs = verbs or ALL_VERBS
        self.versions = versions or [version]
        self.generation = generation
        self.qualified = "%s.%s" % (resource, group) if group else resource
        self.api_version = "%s/%s" % (group, version) if group else version
        self.gr = (group, resource)


def _builtin_types():
    t = []
    add = t.append
    add(ResourceType("", "v1", "namespaces", "Namespace", False, short_names=["ns"],
                     status_sub=True, verbs=["create", "delete", "get", "list", "patch", "update",
                                             "watch"], generation=False))
    add(ResourceType("", "v1", "events", "Event", True, short_names=["ev"], generation=False))
    add(ResourceType("", "v1", "pods", "Pod", True, short_names=["po"], categories=["all"],
                     status_sub=True))
    add(ResourceType("", "v1", "nodes", "Node", False, short_names=["no"], status_sub=True,
                     generation=False))
    add(ResourceType("", "v1", "configmaps", "ConfigMap", True, short_names=["cm"],
                     generation=False))
    add(ResourceType("", "v1", "secrets", "Secret", True, generation=False))
    add(ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=["sa"],
                     generation=False))
    add(ResourceType("", "v1", "services", "Service", True, short_names=["svc"],
                     categories=["all"], status_sub=True, generation=False))
    add(ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True, generation=False))
    add(ResourceType("events.k8s.io", "v1", "events", "Event", True, short_names=["ev"],
                     generation=False))
    add(ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                     "CustomResourceDefinition", False, short_names=["crd", "crds"],
                     categories=["api-extensions"], status_sub=True))
    return t


# The upstream Workload API (scheduling.k8s.io, GenericWorkload gate): built into kube-apiserver,
# one version per Kubernetes release; its schemas are tests/apiserver/builtin's, which the golden
# tests validate gangbridge's output against too.
WORKLOAD_GROUP = "scheduling.k8s.io"
WORKLOAD_RELEASES = {"1.35": "v1alpha1", "1.36": "v1alpha2", "1.37": "v1beta1"}
BUILTIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "builtin")


def _workload_types(release):
    """The ResourceTypes the Workload API of `release` serves ("1.36"), or [] for "none"."""
    if release in (None, "", "none"):
        return []
    version = WORKLOAD_RELEASES.get(release)
    if version is None:
        raise ValueError("workload API: release must be none or one of %s, not %r"
                         % (", ".join(sorted(WORKLOAD_RELEASES)), release))
    out = []
    with open(os.path.join(BUILTIN_DIR, WORKLOAD_GROUP + ".yaml")) as fh:
        for d in yaml.safe_load_all(fh):
            spec = (d or {}).get("spec") or {}
            for v in spec.get("versions") or []:
                if v["name"] != version:
                    continue
                names = spec["names"]
                out.append(ResourceType(WORKLOAD_GROUP, version, names["plural"], names["kind"],
                                        spec.get("scope") == "Namespaced",
                                        schema=v["schema"]["openAPIV3Schema"],
                                        status_sub="status" in (v.get("subresources") or {})))
    return out


CRD_RT_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NS_RT_KEY = ("", "namespaces")
POD_RT_KEY = ("", "pods")


# ------------------------------------------------------------------------- selectors

_LSEL_SET = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_LSEL_OP = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")


def _split_selector(s):
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]


def parse_label_selector(s):
    """Parse a label selector into a list of (key, op, values); raises ApiError 400."""
    reqs = []
    if not s:
        return reqs
    for part in _split_selector(s):
        m = _LSEL_OP.match(part)
        if m:
            op = "!=" if m.group(2) == "!=" else "="
            reqs.append((m.group(1), op, [m.group(3)]))
            continue
        m = _LSEL_SET.match(part)
        if m:
            if m.group(3):
                if m.group(1):
                    raise err_bad_request("unable to parse requirement: %s" % part.strip())
                vals = [v.strip() for v in m.group(4).split(",") if v.strip()]
                reqs.append((m.group(2), m.group(3), vals))
            else:
                reqs.append((m.group(2), "!exists" if m.group(1) else "exists", []))
            continue
        raise err_bad_request("unable to parse requirement: found '%s', expected: in, notin, "
                              "=, ==, !=, gt, lt" % part.strip())
    return reqs


def label_match(reqs, labels):
    for key, op, vals in reqs:
        has = key in labels
        v = labels.get(key)
        if op == "=":
            if not has or v != vals[0]:
                return False
        elif op == "!=":
            if has and v == vals[0]:
                return False
        elif op == "in":
            if not has or v not in vals:
                return False
        elif op == "notin":
            if has and v in vals:
                return False
        elif op == "exists":
            if not has:
                return False
        elif op == "!exists":
            if has:
                return False
    return True


FIELD_LABELS = {
    "metadata.name": lambda o: o["metadata"].get("name", ""),
    "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
}
POD_FIELD_LABELS = {
    "spec.nodeName": lambda o: (o.get("spec") or {}).get("nodeName", ""),
    "spec.schedulerName": lambda o: (o.get("spec") or {}).get("schedulerName", ""),
    "status.phase": lambda o: (o.get("status") or {}).get("phase", ""),
}
EVENT_FIELD_LABELS = {
    "involvedObject.name": lambda o: (o.get("involvedObject") or {}).get("name", ""),
    "involvedObject.kind": lambda o: (o.get("involvedObject") or {}).get("kind", ""),
    "involvedObject.uid": lambda o: (o.get("involvedObject") or {}).get("uid", ""),
    "involvedObject.namespace": lambda o: (o.get("involvedObject") or {}).get("namespace", ""),
    "reason": lambda o: o.get("reason", ""),
    "type": lambda o: o.get("type", ""),
}


NEW_EVENT_FIELD_LABELS = {
    "regarding.name": lambda o: (o.get("regarding") or {}).get("name", ""),
    "regarding.kind": lambda o: (o.get("regarding") or {}).get("kind", ""),
    "regarding.uid": lambda o: (o.get("regarding") or {}).get("uid", ""),
    "regarding.namespace": lambda o: (o.get("regarding") or {}).get("namespace", ""),
    "reason": lambda o: o.get("reason", ""),
    "type": lambda o: o.get("type", ""),
    "reportingController": lambda o: o.get("reportingController", ""),
}


def parse_field_selector(rt, s, label_sel):
    reqs = []
    if not s:
        return reqs
    table = dict(FIELD_LABELS)
    if rt.gr == ("", "pods"):
        table.update(POD_FIELD_LABELS)
    if rt.gr == ("", "events"):
        table.update(EVENT_FIELD_LABELS)
    if rt.gr == ("events.k8s.io", "events"):
        table.update(NEW_EVENT_FIELD_LABELS)
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.match(r"^([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise err_bad_request("invalid selector: '%s'; can't understand '%s'" % (s, part))
        key, op, val = m.group(1), m.group(2), m.group(3)
        if key not in table:
            raise err_bad_request('Unable to find "%s/%s, Resource=%s" that match label selector '
                                  '"%s", field selector "%s": field label not supported: %s'
                                  % (rt.group, rt.version, rt.resource, label_sel or "", s, key))
        reqs.append((table[key], op != "!=", val))
    return reqs


def field_match(reqs, obj):
    for get, eq, val in reqs:
        if (get(obj) == val) != eq:
            return False
    return True


# ------------------------------------------------------------------------- patches

def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return ssa.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def _ptr(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise err_bad_request('the server rejected our request due to an error in our request')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _ptr_parent(doc, toks):
    cur = doc
    for t in toks[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise KeyError(t)
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[int(t)]
        else:
            raise KeyError(t)
    return cur


def json_patch(doc, ops):
    """RFC 6902 on a deep copy of doc."""
    if not isinstance(ops, list):
        raise err_bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = ssa.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise err_bad_request("the server rejected our request due to an error in our "
                                  "request")
        kind = op["op"]
        toks = _ptr(op["path"])
        try:
            if kind in ("add", "replace", "test"):
                if "value" not in op:
                    raise err_bad_request('missing value for op "%s"' % kind)
                val = ssa.deepcopy(op["value"])
            if kind == "test":
                parent = _ptr_parent(doc, toks)
                cur = parent[int(toks[-1])] if isinstance(parent, list) else parent[toks[-1]]
                if cur != val:
                    raise ApiError(422, "Invalid", "the server rejected our request due to an "
                                   "error in our request")
                continue
            if kind in ("move", "copy"):
                ftoks = _ptr(op.get("from", ""))
                fparent = _ptr_parent(doc, ftoks)
                if isinstance(fparent, list):
                    val = fparent[int(ftoks[-1])]
                    if kind == "move":
                        del fparent[int(ftoks[-1])]
                else:
                    val = fparent[ftoks[-1]]
                    if kind == "move":
                        del fparent[ftoks[-1]]
                val = ssa.deepcopy(val)
                kind = "add"
            if not toks:
                if kind in ("add", "replace"):
                    doc = val
                    continue
                raise err_bad_request("cannot remove the whole document")
            parent = _ptr_parent(doc, toks)
            last = toks[-1]
            if isinstance(parent, list):
                if kind == "add":
                    idx = len(parent) if last == "-" else int(last)
                    if idx < 0 or idx > len(parent):
                        raise IndexError(idx)
                    parent.insert(idx, val)
                elif kind == "replace":
                    parent[int(last)] = val
                elif kind == "remove":
                    del parent[int(last)]
                else:
                    raise err_bad_request('Unexpected kind: %s' % kind)
            elif isinstance(parent, dict):
                if kind == "add":
                    parent[last] = val
                elif kind == "replace":
                    if last not in parent:
                        raise KeyError(last)
                    parent[last] = val
                elif kind == "remove":
                    del parent[last]
                else:
                    raise err_bad_request('Unexpected kind: %s' % kind)
            else:
                raise KeyError(last)
        except (KeyError, IndexError, ValueError, TypeError):
            raise ApiError(422, "Invalid", "the server rejected our request due to an error in "
                           "our request", extra=None) from None
    return doc


# ------------------------------------------------------------------------- store

class EventLog:
    """The watch history of one resource: events with strictly increasing RVs."""

    __slots__ = ("rvs", "events", "floor")

    def __init__(self, floor):
        self.rvs = []
        self.events = []
        self.floor = floor      # every event with rv > floor is retained

    def append(self, ev, window):
        self.rvs.append(ev[0])
        self.events.append(ev)
        if len(self.events) > window * 2:
            drop = len(self.events) - window
            self.floor = self.rvs[drop - 1]
            del self.rvs[:drop]
            del self.events[:drop]

    def trim(self, window):
        if len(self.events) > window:
            drop = len(self.events) - window
            self.floor = self.rvs[drop - 1]
            del self.rvs[:drop]
            del self.events[:drop]

    def since(self, rv):
        i = bisect.bisect_right(self.rvs, rv)
        return self.events[i:]

    def compact(self, rv):
        self.floor = max(self.floor, rv)
        i = bisect.bisect_right(self.rvs, rv)
        del self.rvs[:i]
        del self.events[:i]


class Watcher:
    def __init__(self, rt, ns):
        self.rt = rt
        self.ns = ns
        self.expire = False     # send an in-stream 410 and end
        self.stop = False       # end normally
        self.drop = False       # cut the connection


class Faults:
    """Runtime-adjustable fault injection (see docs/internals/apiserver.md)."""

    FIELDS = {
        "error_rate": float, "error_codes": list, "error_verbs": (list, type(None)),
        "error_resources": (list, type(None)), "retry_after": int,
        "error_names": (list, type(None)),
        "latency_ms": float, "latency_jitter_ms": float,
        "latency_verbs": (list, type(None)), "latency_resources": (list, type(None)),
        "watch_drop_seconds": float,
        "watch_410_rate": float, "watch_expire_seconds": float, "down": bool,
        "error_after_write_rate": float,
    }

    def __init__(self):
        self.reset()

    def reset(self):
        self.error_rate = 0.0
        self.error_codes = [500, 503, 429]
        self.error_verbs = None
        self.error_resources = None
        self.error_names = None
        self.retry_after = 1
        self.latency_ms = 0.0
        self.latency_jitter_ms = 0.0
        self.latency_verbs = None
        self.latency_resources = None
        self.watch_drop_seconds = 0.0
        self.watch_410_rate = 0.0
        self.watch_expire_seconds = 0.0
        self.down = False
        self.error_after_write_rate = 0.0

    def as_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}

    def update(self, d):
        if not isinstance(d, dict):
            raise err_bad_request("faults: expected a JSON object")
        for k, v in d.items():
            if k not in self.FIELDS:
                raise err_bad_request("faults: unknown field %r (known: %s)"
                                      % (k, ", ".join(sorted(self.FIELDS))))
            want = self.FIELDS[k]
            if want is float and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if not isinstance(v, want) or (isinstance(v, bool) and want is not bool):
                raise err_bad_request("faults: %s has the wrong type" % k)
            if k in ("error_rate", "watch_410_rate", "error_after_write_rate") and \
                    not 0.0 <= v <= 1.0:
                raise err_bad_request("faults: %s must be within [0, 1]" % k)
            if k == "error_codes":
                if not v or any(c not in (403, 429, 500, 502, 503, 504) for c in v):
                    raise err_bad_request("faults: error_codes must be a non-empty list of "
                                          "403, 429, 500, 502, 503, 504")
            if isinstance(v, float) and v < 0:
                raise err_bad_request("faults: %s must not be negative" % k)
        for k, v in d.items():
            if self.FIELDS[k] is float:
                v = float(v)
            setattr(self, k, v)


class Store:
    """Objects, resource types, history and watchers.  Every access holds self.lock."""

    def __init__(self, history=10000, gc_delay=0.0):
        self.lock = threading.RLock()
        self.conds = {}          # (group, resource) -> Condition on self.lock (wakes its watchers)
        self.rv = 0
        self.window = history
        self.gc_delay = gc_delay
        self.types = {}          # (group, version, resource) -> ResourceType
        self.by_gr = {}          # (group, resource) -> storage ResourceType
        self.objs = {}           # (group, resource) -> {(ns, name): (obj, raw)}
        self.logs = {}           # (group, resource) -> EventLog
        self.uids = {}           # uid -> ((group, resource), key)
        self.owners = {}         # owner uid -> set(((group, resource), key))
        self.watchers = set()
        self.discovery_gen = 0
        self.workload_release = "none"
        self.gcq = queue.Queue()
        for rt in _builtin_types():
            self._register(rt)
        with self.lock:
            for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
                self.put_namespace(ns)

    # -- types

    def _register(self, rt):
        for v in rt.versions:
            if v == rt.version:
                self.types[(rt.group, v, rt.resource)] = rt
            else:
                alias = ResourceType(rt.group, v, rt.resource, rt.kind, rt.namespaced,
                                     rt.singular, rt.short_names, rt.categories, rt.schema,
                                     rt.status_sub, rt.crd_name, rt.printer_columns, rt.verbs,
                                     rt.versions, rt.generation)
                alias.storage = rt
                self.types[(rt.group, v, rt.resource)] = alias
        rt.storage = rt
        self.by_gr[rt.gr] = rt
        if rt.gr not in self.conds:
            self.conds[rt.gr] = threading.Condition(self.lock)
        self.objs.setdefault(rt.gr, {})
        if rt.gr not in self.logs:
            self.logs[rt.gr] = EventLog(self.rv)
        self.discovery_gen += 1

    def _unregister(self, gr):
        for k in [k for k in self.types if (k[0], k[2]) == gr]:
            del self.types[k]
        self.by_gr.pop(gr, None)
        self.objs.pop(gr, None)
        self.logs.pop(gr, None)
        for w in list(self.watchers):
            if w.rt.gr == gr:
                w.stop = True
        self.wake_all()
        self.discovery_gen += 1

    def set_workload_api(self, release):
        """Serves the Workload API of Kubernetes `release` ("1.35", "1.36", "1.37") or none.
        Switching drops every object of the old version, as the 1.36 -> 1.37 release note asks
        operators to delete all v1alpha2 objects before the upgrade."""
        types = _workload_types(release)
        with self.lock:
            for gr in [gr for gr in self.by_gr if gr[0] == WORKLOAD_GROUP]:
                self._unregister(gr)
            for rt in types:
                self._register(rt)
            self.workload_release = release if types else "none"

    def crd_to_type(self, crd):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        if not versions:
            return None
        storage = next((v for v in versions if v.get("storage")), versions[0])
        sch = ((storage.get("schema") or {}).get("openAPIV3Schema")) or None
        return ResourceType(
            spec.get("group", ""), storage["name"], names.get("plural", ""),
            names.get("kind", ""), spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular"), short_names=names.get("shortNames"),
            categories=names.get("categories"), schema=sch,
            status_sub="status" in (storage.get("subresources") or {}),
            crd_name=crd["metadata"]["name"],
            printer_columns=storage.get("additionalPrinterColumns"),
            versions=[v["name"] for v in versions])

    # -- helpers

    def put_namespace(self, name):
        obj = {"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": name, "uid": str(uuid.uuid4()),
                            "creationTimestamp": now_ts(),
                            "labels": {"kubernetes.io/metadata.name": name}},
               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
        self.commit(self.by_gr[NS_RT_KEY], "ADDED", obj, None)

    def commit(self, rt, etype, obj, prev):
        """Store a write: bump the RV, serialise once, record the event, wake watchers."""
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        raw = dumps(obj)
        key = (meta.get("namespace", ""), meta["name"])
        table = self.objs[rt.gr]
        entry = (obj, raw)
        uid = meta.get("uid")
        if etype == "DELETED":
            table.pop(key, None)
            self.uids.pop(uid, None)
        else:
            table[key] = entry
            if uid:
                self.uids[uid] = (rt.gr, key)
        old_refs = {r.get("uid") for r in (prev[0]["metadata"].get("ownerReferences") or ())
                    if isinstance(r, dict)} if prev else set()
        new_refs = set() if etype == "DELETED" else {
            r.get("uid") for r in (meta.get("ownerReferences") or ()) if isinstance(r, dict)}
        for u in old_refs - new_refs:
            s = self.owners.get(u)
            if s:
                s.discard((rt.gr, key))
                if not s:
                    del self.owners[u]
        for u in new_refs - old_refs:
            self.owners.setdefault(u, set()).add((rt.gr, key))
        if new_refs and etype != "DELETED" and not any(u in self.uids for u in new_refs):
            self.gcq.put(("check", rt.gr, key, uid))
        self.logs[rt.gr].append((self.rv, etype, obj, raw, prev), self.window)
        self.conds[rt.gr].notify_all()
        return raw

    def wake_all(self):
        for c in self.conds.values():
            c.notify_all()

    def get_entry(self, rt, ns, name):
        return self.objs.get(rt.gr, {}).get((ns or "", name))

    def compact(self, rv=None):
        rv = self.rv if rv is None else rv
        for log in self.logs.values():
            log.compact(rv)

    def snapshot(self, rt, rv):
        """The resource's objects as of rv; raises 410 when history no longer covers it."""
        log = self.logs[rt.gr]
        if rv < log.floor:
            raise err_expired("too old resource version: %d (%d)" % (rv, log.floor + 1))
        table = dict(self.objs[rt.gr])
        for ev in reversed(log.since(rv)):
            erv, etype, obj, raw, prev = ev
            key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            if etype == "ADDED":
                table.pop(key, None)
            elif prev is not None:
                table[key] = prev
        return table

    def state(self):
        objs = []
        crds = self.objs.get(CRD_RT_KEY, {})
        for e in crds.values():
            objs.append(e[0])
        for gr, table in self.objs.items():
            if gr == CRD_RT_KEY:
                continue
            for e in table.values():
                objs.append(e[0])
        return {"resourceVersion": self.rv, "objects": objs}

    def load_state(self, st):
        objs = st.get("objects") or []
        rv = int(st.get("resourceVersion") or 0)
        for gr in [gr for gr, rt in self.by_gr.items() if rt.crd_name]:
            self._unregister(gr)
        for gr in list(self.objs):
            self.objs[gr] = {}
        self.uids.clear()
        self.owners.clear()
        for o in objs:
            if o.get("kind") == "CustomResourceDefinition":
                rt = self.crd_to_type(o)
                if rt is not None:
                    self._register(rt)
        for o in objs:
            av = o.get("apiVersion", "")
            group = av.split("/")[0] if "/" in av else ""
            rt = next((r for r in self.by_gr.values()
                       if r.group == group and r.kind == o.get("kind")), None)
            if rt is None:
                continue
            meta = o["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            self.objs[rt.gr][key] = (o, dumps(o))
            if meta.get("uid"):
                self.uids[meta["uid"]] = (rt.gr, key)
            for r in meta.get("ownerReferences") or ():
                self.owners.setdefault(r.get("uid"), set()).add((rt.gr, key))
        self.rv = max(rv, self.rv)
        for gr in self.by_gr:
            self.logs[gr] = EventLog(self.rv)
        self.discovery_gen += 1


# ------------------------------------------------------------------------- the API

class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.requests = {}
        self.codes = {}
        self.resources = {}
        self.faults = {}
        self.watches_started = 0
        self.watches_dropped = 0
        self.watches_expired = 0
        self.events_sent = 0
        self.bookmarks_sent = 0

    def count(self, verb, resource, code):
        with self.lock:
            self.requests[verb] = self.requests.get(verb, 0) + 1
            self.codes[str(code)] = self.codes.get(str(code), 0) + 1
            if resource:
                d = self.resources.setdefault(resource, {})
                d[verb] = d.get(verb, 0) + 1

    def fault(self, what):
        with self.lock:
            self.faults[what] = self.faults.get(what, 0) + 1


class Api:
    """Request semantics, independent of the HTTP transport."""

    def __init__(self, opts):
        self.opts = opts
        self.store = Store(history=opts.history, gc_delay=opts.gc_delay)
        self.faults = Faults()
        self.stats = Stats()
        self.bookmark_interval = opts.bookmark_interval
        self.expired_mode = opts.expired_watch
        self.schema_defaults = not opts.no_defaults
        self.down_until = 0.0
        self.gc_thread = threading.Thread(target=self._gc_loop, name="gc", daemon=True)
        self.gc_thread.start()
        self._openapi_cache = {}

    # ---------------------------------------------------------------- discovery

    def api_versions(self):
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                "serverAddress": self.opts.address}]}

    def _groups(self):
        groups = {}
        with self.store.lock:
            for (g, v, r), rt in self.store.types.items():
                if g:
                    groups.setdefault(g, []).append(rt)
        out = []
        for g in sorted(groups):
            rts = groups[g]
            storage = rts[0].storage
            vers = sorted({rt.version for rt in rts}, key=lambda v: (v != storage.version, v))
            gvs = [{"groupVersion": "%s/%s" % (g, v), "version": v} for v in vers]
            out.append({"name": g, "versions": gvs, "preferredVersion": gvs[0]})
        return out

    def api_group_list(self):
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": self._groups()}

    def api_group(self, group):
        for g in self._groups():
            if g["name"] == group:
                d = {"kind": "APIGroup", "apiVersion": "v1"}
                d.update(g)
                return d
        raise err_path()

    def resource_list(self, group, version):
        res = []
        with self.store.lock:
            rts = [rt for (g, v, r), rt in self.store.types.items() if g == group and v == version]
        if not rts:
            raise err_path()
        for rt in sorted(rts, key=lambda r: r.resource):
            d = {"name": rt.resource, "singularName": rt.singular, "namespaced": rt.namespaced,
                 "kind": rt.kind, "verbs": rt.verbs}
            if rt.short_names:
                d["shortNames"] = rt.short_names
            if rt.categories:
                d["categories"] = rt.categories
            d["storageVersionHash"] = base64.b64encode(hashlib.sha256(
                rt.api_version.encode() + rt.kind.encode()).digest()[:8]).decode()
            res.append(d)
            if rt.status_sub:
                res.append({"name": rt.resource + "/status", "singularName": "",
                            "namespaced": rt.namespaced, "kind": rt.kind, "verbs": STATUS_VERBS})
        gv = "%s/%s" % (group, version) if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": res}

    # ---------------------------------------------------------------- OpenAPI

    def openapi_v3_root(self):
        paths = {}
        with self.store.lock:
            gvs = sorted({(g, v) for (g, v, r) in self.store.types})
        for g, v in gvs:
            key = "api/%s" % v if not g else "apis/%s/%s" % (g, v)
            doc = self.openapi_v3_doc(g, v)
            h = hashlib.sha512(doc).hexdigest()[:32].upper()
            paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (key, h)}
        return {"paths": paths}

    def openapi_v3_doc(self, group, version):
        with self.store.lock:
            gen = self.store.discovery_gen
            rts = [rt for (g, v, r), rt in self.store.types.items() if g == group and v == version]
        ck = (group, version)
        cached = self._openapi_cache.get(ck)
        if cached and cached[0] == gen:
            return cached[1]
        if not rts:
            raise err_path()
        schemas = {}
        paths = {}
        rg = ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"
        qparams = [
            {"name": n, "in": "query", "schema": {"type": t}, "uniqueItems": True}
            for n, t in (("dryRun", "string"), ("fieldManager", "string"),
                         ("fieldValidation", "string"))]
        force = {"name": "force", "in": "query", "schema": {"type": "boolean"},
                 "uniqueItems": True}
        for rt in rts:
            sname = "%s.%s.%s" % (rg, version, rt.kind)
            gvk = [{"group": group, "version": version, "kind": rt.kind}]
            body = dict(rt.schema) if rt.schema else {"type": "object",
                                                      "x-kubernetes-preserve-unknown-fields": True}
            body["x-kubernetes-group-version-kind"] = gvk
            schemas[sname] = body
            ref = {"schema": {"$ref": "#/components/schemas/" + sname}}
            resp = {"200": {"description": "OK", "content": {"application/json": ref}}}
            prefix = "/api/%s" % version if not group else "/apis/%s/%s" % (group, version)
            coll = "%s/namespaces/{namespace}/%s" % (prefix, rt.resource) if rt.namespaced \
                else "%s/%s" % (prefix, rt.resource)
            item = coll + "/{name}"
            ctypes = {"application/json-patch+json": ref, "application/merge-patch+json": ref,
                      "application/apply-patch+yaml": ref}

            def op(action, extra=(), body_types=None):
                o = {"operationId": action + rt.kind, "responses": resp,
                     "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk[0],
                     "parameters": list(extra)}
                if body_types:
                    o["requestBody"] = {"content": body_types, "required": True}
                return o

            paths[coll] = {"get": op("list"), "post": op("post", qparams,
                                                         {"application/json": ref})}
            paths[item] = {"get": op("get"), "put": op("put", qparams, {"application/json": ref}),
                           "patch": op("patch", qparams + [force], ctypes),
                           "delete": op("delete")}
            if rt.status_sub:
                paths[item + "/status"] = {
                    "get": op("get"), "put": op("put", qparams, {"application/json": ref}),
                    "patch": op("patch", qparams + [force], ctypes)}
        doc = dumps({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version":
                                                  SERVER_VERSION["gitVersion"]},
                     "paths": paths, "components": {"schemas": schemas}})
        self._openapi_cache[ck] = (gen, doc)
        return doc

    # ---------------------------------------------------------------- reads

    def get(self, rt, ns, name):
        with self.store.lock:
            e = self.store.get_entry(rt, ns, name)
        if e is None:
            raise err_not_found(rt, name)
        return e[1]

    def list(self, rt, ns, q):
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(rt, q.get("fieldSelector", ""), q.get("labelSelector", ""))
        limit = q.get("limit", "")
        try:
            limit = max(0, int(limit)) if limit else 0
        except ValueError:
            raise err_bad_request("limit: Invalid value: %r" % limit) from None
        cont = q.get("continue", "")
        rvq = q.get("resourceVersion", "")
        match = q.get("resourceVersionMatch", "")
        st = self.store
        start = ""
        with st.lock:
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont + "=" * (-len(cont) % 4)))
                    snap_rv = int(tok["rv"])
                    start = tok["start"]
                    if not isinstance(start, str) or not start:
                        raise ValueError(start)
                except (ValueError, KeyError, TypeError):
                    raise err_bad_request("continue key is not valid: incorrect encoded start "
                                          "resourceVersion (version meta.k8s.io/v1)") from None
                if rvq:
                    raise err_bad_request("specifying resource version is not allowed when using "
                                          "continue")
                try:
                    table = st.snapshot(rt, snap_rv)
                except ApiError:
                    raise err_expired(
                        "The provided continue parameter is too old to display a consistent list "
                        "result. You can start a new list without the continue parameter, or use "
                        "the continue token in this response to retrieve the remainder of the "
                        "results. Continuing with the provided token results in an inconsistent "
                        "list - objects that were created, modified, or deleted between the time "
                        "the first chunk was returned and now may show up in the list.") from None
            else:
                snap_rv = st.rv
                table = st.objs[rt.gr]
                if rvq and rvq != "0":
                    try:
                        want = int(rvq)
                    except ValueError:
                        raise err_bad_request("resourceVersion: Invalid value: %s" % rvq) from None
                    if want > st.rv:
                        raise ApiError(504, "Timeout", "Too large resource version: %d, current: %d"
                                       % (want, st.rv),
                                       {"causes": [{"reason": "ResourceVersionTooLarge",
                                                    "message": "Too large resource version"}],
                                        "retryAfterSeconds": 1},
                                       headers={"Retry-After": "1"})
                    if match == "Exact":
                        table = st.snapshot(rt, want)
                        snap_rv = want
                elif match == "Exact":
                    raise err_bad_request("resourceVersionMatch: Forbidden: resourceVersionMatch "
                                          "is forbidden unless resourceVersion is provided")
                table = dict(table) if table is st.objs[rt.gr] else table
        keys = sorted(k for k in table if ns is None or k[0] == ns)
        if start:
            skey = start.rstrip("\x00")
            if rt.namespaced and "/" in skey:
                skey = tuple(skey.split("/", 1))
            else:
                skey = ("", skey)
            keys = keys[bisect.bisect_left(keys, skey):]
        items = []
        next_key = None
        for idx, k in enumerate(keys):
            obj, raw = table[k]
            if lsel and not label_match(lsel, obj["metadata"].get("labels") or {}):
                continue
            if fsel and not field_match(fsel, obj):
                continue
            if limit and len(items) >= limit:
                next_key = k
                break
            items.append(raw)
        meta = {"resourceVersion": str(snap_rv)}
        if next_key is not None:
            skey = ("%s/%s" % next_key if next_key[0] else next_key[1])
            tok = dumps({"v": "meta.k8s.io/v1", "rv": snap_rv, "start": skey + "\x00"})
            meta["continue"] = base64.urlsafe_b64encode(tok).decode().rstrip("=")
            if not lsel and not fsel:
                meta["remainingItemCount"] = len(keys) - keys.index(next_key)
        head = dumps({"apiVersion": rt.api_version, "items": [], "kind": rt.list_kind,
                      "metadata": meta})
        # Splice the cached item serialisations into the list without re-encoding them.
        pos = head.index(b'"items":[]') + len(b'"items":[')
        return head[:pos] + b",".join(items) + head[pos:]

    # ---------------------------------------------------------------- writes

    def _manager(self, q, ua, required_for_apply=False):
        fm = q.get("fieldManager")
        if fm is None:
            if required_for_apply:
                return None
            fm = (ua or "unknown").split("/")[0][:128] or "unknown"
        return fm

    def _check_manager(self, fm, kind):
        if fm is not None and len(fm) > 128:
            raise err_invalid(kind, "meta.k8s.io", "", [vschema.invalid(
                "fieldManager", fm, "must be less than 128 characters")])

    def _validate(self, rt, obj, q, warnings):
        errs = []
        meta = obj.get("metadata")
        vschema.validate_meta(meta, rt.namespaced, rt.gr == NS_RT_KEY, errs)
        unknown = []
        if rt.schema is not None:
            obj = vschema.validate_object(obj, rt.schema, errs, unknown,
                                          defaults=self.schema_defaults)
        if rt.gr == CRD_RT_KEY and isinstance(meta, dict) and not errs:
            spec = obj.get("spec") or {}
            names = spec.get("names") or {}
            want = "%s.%s" % (names.get("plural", ""), spec.get("group", ""))
            if meta.get("name") != want:
                errs.append(vschema.invalid("metadata.name", meta.get("name"),
                                            'must be spec.names.plural+"."+spec.group'))
            for f in ("group", "names", "scope", "versions"):
                if not spec.get(f):
                    errs.append(vschema.required("spec." + f))
            if not errs and not any(v.get("storage") for v in spec.get("versions") or []):
                errs.append(vschema.invalid("spec.versions", spec.get("versions"),
                                            "must have exactly one version marked as storage "
                                            "version"))
        if errs:
            raise err_invalid(rt.kind, rt.group, (meta or {}).get("name") if isinstance(meta, dict)
                              else "", errs)
        if unknown:
            mode = q.get("fieldValidation", "Warn")
            if mode == "Strict":
                if len(unknown) == 1:
                    why = 'unknown field "%s"' % unknown[0]
                else:
                    why = ", ".join('unknown field "%s"' % u for u in unknown)
                raise err_bad_request('%s in version "%s" cannot be handled as a %s: strict '
                                      'decoding error: %s' % (rt.kind, rt.version, rt.kind, why))
            if mode != "Ignore":
                warnings.extend('unknown field "%s"' % u for u in unknown)
        return obj

    def _check_body_type(self, rt, obj, name=None, ns=None):
        if not isinstance(obj, dict):
            raise err_bad_request("the object provided is unrecognized (must be of type %s)"
                                  % rt.kind)
        if not obj.get("kind"):
            raise err_bad_request("Object 'Kind' is missing in '%s'"
                                  % dumps(obj).decode()[:200])
        av = obj.get("apiVersion")
        if av and av != rt.api_version:
            raise err_bad_request("the API version in the data (%s) does not match the expected "
                                  "API version (%s)" % (av, rt.api_version))
        if obj.get("kind") != rt.kind:
            raise err_bad_request("the kind in the data (%s) does not match the expected kind "
                                  "(%s)" % (obj.get("kind"), rt.kind))
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise err_bad_request("metadata must be an object")
        if name is not None and meta.get("name") and meta["name"] != name:
            raise err_bad_request("the name of the object (%s) does not match the name on the URL "
                                  "(%s)" % (meta["name"], name))
        if ns is not None and rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise err_bad_request("the namespace of the provided object does not match the "
                                      "namespace sent on the request")
            meta["namespace"] = ns
        elif not rt.namespaced:
            meta.pop("namespace", None)
        obj["apiVersion"] = rt.storage.api_version
        return obj

    def _ns_exists(self, rt, ns):
        if rt.namespaced and ("", ns) not in self.store.objs[NS_RT_KEY]:
            raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns,
                           {"name": ns, "kind": "namespaces"})

    def _ignored(self, rt, sub):
        if not rt.status_sub:
            return ()
        if sub == "status":
            return ("f:spec", "f:metadata")
        return ("f:status",)

    def _bump_generation(self, rt, old, new):
        if not rt.generation:
            return
        skip = ("metadata", "status") if rt.status_sub or rt.schema is None else ("metadata",)
        if rt.schema is None:
            changed = old.get("spec") != new.get("spec")
        else:
            changed = any(old.get(k) != new.get(k) for k in set(old) | set(new) if k not in skip)
        gen = old["metadata"].get("generation", 1)
        new["metadata"]["generation"] = gen + 1 if changed else gen

    def create(self, rt, ns, obj, q, ua, warnings):
        obj = self._check_body_type(rt, obj, ns=ns)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        fm = self._manager(q, ua)
        self._check_manager(fm, "CreateOptions")
        if rt.status_sub and rt.gr not in (NS_RT_KEY, CRD_RT_KEY):
            obj.pop("status", None)         # reset before validation, as the real strategy
        obj = self._validate(rt, obj, q, warnings)
        meta = obj["metadata"]
        for k in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "selfLink", "managedFields", "generation"):
            meta.pop(k, None)
        self._defaults_on_create(rt, obj)
        with self.store.lock:
            self._ns_exists(rt, ns)
            if self.store.get_entry(rt, ns, meta["name"]) is not None:
                raise err_exists(rt, meta["name"])
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_ts()
            if rt.generation:
                meta["generation"] = 1
            mg = ssa.update(None, obj, rt.ssa_schema, fm, "", rt.storage.api_version,
                            self._ignored(rt, ""), now_ts())
            ents = mg.entries()
            if ents:
                meta["managedFields"] = ents
            if q.get("dryRun") == "All":
                return dumps(obj)
            raw = self.store.commit(rt.storage, "ADDED", obj, None)
            self._after_write(rt, obj)
            return raw

    def _defaults_on_create(self, rt, obj):
        if rt.gr == NS_RT_KEY:
            name = obj["metadata"]["name"]
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
        if rt.gr == CRD_RT_KEY:
            spec = obj.get("spec") or {}
            names = dict(spec.get("names") or {})
            names.setdefault("singular", names.get("kind", "").lower())
            names.setdefault("listKind", names.get("kind", "") + "List")
            storage = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
            t = now_ts()
            obj["status"] = {
                "acceptedNames": names, "storedVersions": storage,
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "lastTransitionTime": t,
                     "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "lastTransitionTime": t,
                     "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted"}]}

    def _after_write(self, rt, obj):
        """Side effects of CRD writes: (re)register the served type."""
        if rt.gr == CRD_RT_KEY:
            nrt = self.store.crd_to_type(obj)
            old = next((r for r in self.store.by_gr.values()
                        if r.crd_name == obj["metadata"]["name"]), None)
            if old is not None and nrt is not None and old.gr != nrt.gr:
                self.store._unregister(old.gr)
            if nrt is not None:
                self.store._register(nrt)

    def _finish_update(self, rt, live_entry, new, q, fm, sub, warnings, mgrs=None):
        """Common tail of update/patch/apply: strategy, validation, ownership, no-op, commit."""
        live = live_entry[0]
        lm = live["metadata"]
        if not isinstance(new, dict):
            raise err_bad_request("the object provided is unrecognized")
        new["apiVersion"] = rt.storage.api_version
        new["kind"] = rt.kind
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            meta = new["metadata"] = {}
        if meta.get("name") not in (None, lm["name"]):
            raise err_bad_request("the name of the object (%s) does not match the name on the "
                                  "URL (%s)" % (meta.get("name"), lm["name"]))
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and rv != lm["resourceVersion"]:
            raise err_conflict(rt, lm["name"])
        if meta.get("uid") not in (None, "", lm.get("uid")):
            raise err_conflict(rt, lm["name"], "Precondition failed: UID in precondition: %s, UID "
                               "in object meta: %s" % (meta.get("uid"), lm.get("uid")))
        for k in ("name", "namespace", "uid", "creationTimestamp", "generation",
                  "deletionTimestamp", "resourceVersion"):
            if k in lm:
                meta[k] = lm[k]
            else:
                meta.pop(k, None)
        meta.pop("selfLink", None)
        if rt.status_sub:
            if sub == "status":
                status = new.get("status", _MISSING)
                keep_mf = meta.get("managedFields")
                new = ssa.deepcopy(live)
                if keep_mf is not None:
                    new["metadata"]["managedFields"] = keep_mf
                if status is _MISSING:
                    new.pop("status", None)
                else:
                    new["status"] = status
                meta = new["metadata"]
            elif "status" in live:
                new["status"] = live["status"]
            else:
                new.pop("status", None)
        if rt.gr == POD_RT_KEY and sub != "status":
            errs = podrules.validate_update(live, new)
            if errs:
                raise err_invalid(rt.kind, rt.group, lm["name"], errs)
        new = self._validate(rt, new, q, warnings)
        meta = new["metadata"]
        self._bump_generation(rt, live, new)
        if mgrs is None:
            mgrs = ssa.update(live, new, rt.ssa_schema, fm, sub or "", rt.storage.api_version,
                              self._ignored(rt, sub), now_ts())
        ents = mgrs.entries()
        if ents:
            meta["managedFields"] = ents
        else:
            meta.pop("managedFields", None)
        if new == live:
            return live_entry[1]
        if q.get("dryRun") == "All":
            return dumps(new)
        raw = self.store.commit(rt.storage, "MODIFIED", new, live_entry)
        self._after_write(rt, new)
        return raw

    def update(self, rt, ns, name, sub, obj, q, ua, warnings):
        obj = self._check_body_type(rt, obj, name=name, ns=ns)
        fm = self._manager(q, ua)
        self._check_manager(fm, "UpdateOptions")
        with self.store.lock:
            e = self.store.get_entry(rt, ns, name)
            if e is None:
                raise err_not_found(rt, name)
            if rt.schema is not None and not obj["metadata"].get("resourceVersion"):
                raise err_invalid(rt.kind, rt.group, name, [vschema.invalid(
                    "metadata.resourceVersion", "0x0", "must be specified for an update")])
            return self._finish_update(rt, e, obj, q, fm, sub, warnings)

    def patch(self, rt, ns, name, sub, ctype, body, q, ua, warnings):
        is_cr = rt.schema is not None or rt.crd_name is not None
        if ctype == "application/apply-patch+yaml":
            return self.apply(rt, ns, name, sub, body, q, warnings)
        if "force" in q:
            raise err_invalid("PatchOptions", "meta.k8s.io", "", [vschema.FieldError(
                "force", "FieldValueForbidden", "Forbidden: may not be specified for non-apply "
                "patch")])
        accepted = ["application/json-patch+json", "application/merge-patch+json",
                    "application/apply-patch+yaml"]
        if not is_cr:
            accepted.insert(2, "application/strategic-merge-patch+json")
        if ctype not in accepted:
            raise err_media(accepted)
        try:
            p = json.loads(body)
        except ValueError as ex:
            raise err_bad_request("error decoding patch: %s" % ex) from None
        fm = self._manager(q, ua)
        self._check_manager(fm, "PatchOptions")
        with self.store.lock:
            e = self.store.get_entry(rt, ns, name)
            if e is None:
                raise err_not_found(rt, name)
            if ctype == "application/json-patch+json":
                new = json_patch(e[0], p)
            else:
                if not isinstance(p, dict):
                    raise err_bad_request("json: cannot unmarshal into Go value of type "
                                          "map[string]interface {}")
                new = merge_patch(e[0], p)    # new containers along the patch only
                # A resourceVersion in a merge patch is a precondition.
                prv = (p.get("metadata") or {}).get("resourceVersion") \
                    if isinstance(p.get("metadata"), dict) else None
                if prv and prv != e[0]["metadata"]["resourceVersion"]:
                    raise err_conflict(rt, name)
            if isinstance(new, dict):
                new = dict(new)
                m = new.get("metadata")
                if isinstance(m, dict):
                    # Never modify the stored object's metadata in place.
                    m = new["metadata"] = dict(m)
                    m["resourceVersion"] = e[0]["metadata"]["resourceVersion"]
            return self._finish_update(rt, e, new, q, fm, sub, warnings)

    def bind(self, rt, ns, name, obj):
        """POST pods/<name>/binding: what a scheduler does to put a pod on a node."""
        if not isinstance(obj, dict) or obj.get("kind") != "Binding":
            raise err_bad_request("the object provided is unrecognized (must be of type Binding)")
        target = (obj.get("target") or {}).get("name") if isinstance(obj.get("target"),
                                                                      dict) else None
        if not target:
            raise err_invalid("Binding", "", name, [vschema.required("target.name")])
        with self.store.lock:
            e = self.store.get_entry(rt, ns, name)
            if e is None:
                raise err_not_found(rt, name)
            why = podrules.binding_conflict(e[0])
            if why:
                raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on pods/binding '
                               '"%s": %s' % (name, why), {"name": name, "kind": "pods/binding"})
            pod = ssa.deepcopy(e[0])
            pod["spec"]["nodeName"] = target
            st = pod.setdefault("status", {})
            conds = [c for c in st.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                          "lastTransitionTime": now_ts()})
            st["conditions"] = conds
            self.store.commit(rt.storage, "MODIFIED", pod, e)
        return dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                      "status": "Success", "code": 201})

    def apply(self, rt, ns, name, sub, body, q, warnings):
        fm = q.get("fieldManager")
        if not fm:
            raise err_invalid("PatchOptions", "meta.k8s.io", "", [vschema.required(
                "fieldManager", "is required for apply patch")])
        self._check_manager(fm, "PatchOptions")
        force = q.get("force", "false").lower() in ("true", "1")
        cfg = parse_yaml_or_json(body)
        if not isinstance(cfg, dict):
            raise err_bad_request("error decoding YAML: object expected")
        if not cfg.get("apiVersion") or not cfg.get("kind"):
            raise err_bad_request("Object 'Kind' is missing in '%s'" % body[:200].decode(
                "utf-8", "replace")) if not cfg.get("kind") else err_bad_request(
                "Object 'apiVersion' is missing")
        cfg = self._check_body_type(rt, cfg, name=name, ns=ns)
        cmeta = cfg["metadata"]
        if cmeta.get("managedFields") is not None:
            raise err_bad_request("metadata.managedFields must be nil")
        cmeta.setdefault("name", name)
        # Unknown fields are dropped from the configuration (and reported) before merging.
        unknown = []
        cfg_errs = []
        if rt.schema is not None:
            cfg = vschema.validate_object(cfg, rt.schema, cfg_errs, unknown, defaults=False)
            if unknown and q.get("fieldValidation") == "Strict":
                raise err_bad_request('%s in version "%s" cannot be handled as a %s: strict '
                                      'decoding error: %s' % (
                                          rt.kind, rt.version, rt.kind,
                                          ", ".join('unknown field "%s"' % u for u in unknown)))
        cmeta = cfg["metadata"]
        now = now_ts()
        with self.store.lock:
            e = self.store.get_entry(rt, ns, name)
            if e is None:
                if sub:
                    raise err_not_found(rt, name)
                self._ns_exists(rt, ns)
                crv = cmeta.pop("resourceVersion", None)
                if crv:
                    raise err_not_found(rt, name)
                try:
                    merged, mgrs = ssa.apply(None, cfg, rt.ssa_schema, fm, "",
                                             rt.storage.api_version, force,
                                             self._ignored(rt, ""), now)
                except ssa.ApplyConflict as c:
                    raise ApiError(409, "Conflict", c.message(), {"causes": c.causes()}) from None
                merged["apiVersion"] = rt.storage.api_version
                merged["kind"] = rt.kind
                mq = dict(q)
                mq["fieldManager"] = fm
                mq["fieldValidation"] = "Ignore"
                m = merged["metadata"]
                for k in ("uid", "creationTimestamp", "generation", "managedFields",
                          "deletionTimestamp", "selfLink"):
                    m.pop(k, None)
                if rt.status_sub and rt.gr not in (NS_RT_KEY, CRD_RT_KEY):
                    merged.pop("status", None)
                self._defaults_on_create(rt, merged)
                merged = self._validate(rt, merged, mq, warnings)
                m = merged["metadata"]
                m["uid"] = str(uuid.uuid4())
                m["creationTimestamp"] = now
                if rt.generation:
                    m["generation"] = 1
                ents = mgrs.entries()
                if ents:
                    m["managedFields"] = ents
                if unknown and q.get("fieldValidation", "Warn") == "Warn":
                    warnings.extend('unknown field "%s"' % u for u in unknown)
                if q.get("dryRun") == "All":
                    return dumps(merged), 201
                raw = self.store.commit(rt.storage, "ADDED", merged, None)
                self._after_write(rt, merged)
                return raw, 201
            live = e[0]
            crv = cmeta.get("resourceVersion")
            if crv and crv != live["metadata"]["resourceVersion"]:
                raise err_conflict(rt, name)
            try:
                merged, mgrs = ssa.apply(live, cfg, rt.ssa_schema, fm, sub or "",
                                         rt.storage.api_version, force, self._ignored(rt, sub),
                                         now)
            except ssa.ApplyConflict as c:
                raise ApiError(409, "Conflict", c.message(), {"causes": c.causes()}) from None
            merged["metadata"]["managedFields"] = live["metadata"].get("managedFields")
            merged["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            if unknown and q.get("fieldValidation", "Warn") == "Warn":
                warnings.extend('unknown field "%s"' % u for u in unknown)
            mq = dict(q)
            mq["fieldValidation"] = "Ignore"
            return self._finish_update(rt, e, merged, mq, fm, sub, warnings, mgrs=mgrs), 200

    def delete(self, rt, ns, name, opts, q):
        if opts is not None and not isinstance(opts, dict):
            raise err_bad_request("DeleteOptions must be an object")
        opts = opts or {}
        policy = q.get("propagationPolicy") or opts.get("propagationPolicy")
        if opts.get("orphanDependents") is True and not policy:
            policy = "Orphan"
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise err_invalid("DeleteOptions", "meta.k8s.io", "", [vschema.FieldError(
                "propagationPolicy", "FieldValueNotSupported",
                'Unsupported value: "%s": supported values: "Foreground", "Background", '
                '"Orphan", "nil"' % policy)])
        pre = opts.get("preconditions") or {}
        dry = q.get("dryRun") == "All" or opts.get("dryRun") == ["All"]
        with self.store.lock:
            e = self.store.get_entry(rt, ns, name)
            if e is None:
                raise err_not_found(rt, name)
            lm = e[0]["metadata"]
            if pre.get("uid") and pre["uid"] != lm.get("uid"):
                raise err_conflict(rt, name, "Precondition failed: UID in precondition: %s, UID in "
                                   "object meta: %s" % (pre["uid"], lm.get("uid")))
            if pre.get("resourceVersion") and pre["resourceVersion"] != lm["resourceVersion"]:
                raise err_conflict(rt, name, "Precondition failed: ResourceVersion in "
                                   "precondition: %s, ResourceVersion in object meta: %s"
                                   % (pre["resourceVersion"], lm["resourceVersion"]))
            if dry:
                return e[1]
            if policy == "Foreground":
                self._cascade(lm.get("uid"), "Background", sync=True)
            raw = self._delete_entry(rt.storage, e)
            if policy == "Orphan":
                self._orphan(lm.get("uid"))
            elif policy != "Foreground":
                self.store.gcq.put(("owner", lm.get("uid")))
            return raw

    def _delete_entry(self, rt, e):
        obj = dict(e[0])        # commit() sets the resourceVersion in a fresh metadata
        obj["metadata"] = dict(obj["metadata"])
        raw = self.store.commit(rt, "DELETED", obj, e)
        if rt.gr == CRD_RT_KEY:
            crd_name = obj["metadata"]["name"]
            crt = next((r for r in self.store.by_gr.values() if r.crd_name == crd_name), None)
            if crt is not None:
                for k, ce in sorted(self.store.objs[crt.gr].items()):
                    gone = dict(ce[0])
                    gone["metadata"] = dict(gone["metadata"])
                    self.store.commit(crt, "DELETED", gone, ce)
                self.store._unregister(crt.gr)
        if rt.gr == NS_RT_KEY:
            self.store.gcq.put(("namespace", obj["metadata"]["name"]))
        return raw

    def _remove_owner_refs(self, rt, e, uids):
        """The garbage collector's patch that drops ownerReferences (holding the lock)."""
        new = ssa.deepcopy(e[0])
        refs = [r for r in new["metadata"].get("ownerReferences") or () if r.get("uid") not in uids]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        mgrs = ssa.update(e[0], new, rt.ssa_schema, "kube-controller-manager", "",
                          rt.api_version, self._ignored(rt, ""), now_ts())
        ents = mgrs.entries()
        if ents:
            new["metadata"]["managedFields"] = ents
        else:
            new["metadata"].pop("managedFields", None)
        self.store.commit(rt, "MODIFIED", new, e)

    def _orphan(self, uid):
        deps = self.store.owners.get(uid, set())
        for gr, key in sorted(deps):
            e = self.store.objs.get(gr, {}).get(key)
            rt = self.store.by_gr.get(gr)
            if e is not None and rt is not None:
                self._remove_owner_refs(rt, e, {uid})

    def _cascade(self, uid, policy, sync=False):
        """Delete dependents of a gone owner whose every owner is gone (holding the lock)."""
        st = self.store
        for gr, key in sorted(st.owners.get(uid, set())):
            e = st.objs.get(gr, {}).get(key)
            rt = st.by_gr.get(gr)
            if e is None or rt is None:
                continue
            refs = e[0]["metadata"].get("ownerReferences") or ()
            others = [r.get("uid") for r in refs if r.get("uid") != uid]
            if any(u in st.uids for u in others):
                # Other owners remain: the real GC only drops the dangling references.
                self._remove_owner_refs(rt, e, {uid} | {u for u in others if u not in st.uids})
                continue
            if sync:
                self._cascade(e[0]["metadata"].get("uid"), policy, sync=True)
            self._delete_entry(rt, e)
            if not sync:
                st.gcq.put(("owner", e[0]["metadata"].get("uid")))

    def _gc_loop(self):
        st = self.store
        while True:
            item = st.gcq.get()
            if st.gc_delay:
                time.sleep(st.gc_delay)
            try:
                with st.lock:
                    if item[0] == "owner":
                        if item[1] not in st.uids:
                            self._cascade(item[1], "Background")
                    elif item[0] == "check":
                        _, gr, key, uid = item
                        e = st.objs.get(gr, {}).get(key)
                        rt = st.by_gr.get(gr)
                        if e is None or rt is None or e[0]["metadata"].get("uid") != uid:
                            continue
                        refs = e[0]["metadata"].get("ownerReferences") or ()
                        if refs and not any(r.get("uid") in st.uids for r in refs):
                            self._delete_entry(rt, e)
                            st.gcq.put(("owner", uid))
                    elif item[0] == "namespace":
                        ns = item[1]
                        if ("", ns) in st.objs[NS_RT_KEY]:
                            continue
                        for gr, table in list(st.objs.items()):
                            rt = st.by_gr.get(gr)
                            if rt is None or not rt.namespaced:
                                continue
                            for key in sorted(k for k in table if k[0] == ns):
                                e = table.get(key)
                                if e is not None:
                                    self._delete_entry(rt, e)
                    elif item[0] == "stop":
                        return
            except Exception as ex:  # the GC must never die; report and go on
                sys.stderr.write("apiserver: gc: %r\n" % (ex,))

    def delete_collection(self, rt, ns, q):
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(rt, q.get("fieldSelector", ""), q.get("labelSelector", ""))
        items = []
        with self.store.lock:
            for key in sorted(self.store.objs[rt.gr]):
                if ns is not None and key[0] != ns:
                    continue
                e = self.store.objs[rt.gr][key]
                if lsel and not label_match(lsel, e[0]["metadata"].get("labels") or {}):
                    continue
                if fsel and not field_match(fsel, e[0]):
                    continue
                items.append(self._delete_entry(rt.storage, e))
                self.store.gcq.put(("owner", e[0]["metadata"].get("uid")))
            rv = self.store.rv
        head = dumps({"apiVersion": rt.api_version, "items": [], "kind": rt.list_kind,
                      "metadata": {"resourceVersion": str(rv)}})
        pos = head.index(b'"items":[]') + len(b'"items":[')
        return head[:pos] + b",".join(items) + head[pos:]


_JP_STEP = re.compile(r"^([^\[\]]*)((?:\[[^\]]*\])*)$")


def jsonpath(obj, expr):
    """The values a printer-column JSONPath (.a.b[0].c, .a[-1:].b) selects."""
    cur = [obj]
    for step in [p for p in expr.strip().strip("{}").split(".") if p]:
        m = _JP_STEP.match(step)
        if not m:
            return []
        name, idx = m.group(1), m.group(2)
        nxt = []
        for v in cur:
            if name:
                if isinstance(v, dict) and name in v:
                    nxt.append(v[name])
            else:
                nxt.append(v)
        for sel in re.findall(r"\[([^\]]*)\]", idx):
            out = []
            for v in nxt:
                if not isinstance(v, list):
                    continue
                try:
                    if ":" in sel:
                        a, b = (sel.split(":") + [""])[:2]
                        out.extend(v[int(a) if a else None:int(b) if b else None])
                    elif sel == "*":
                        out.extend(v)
                    elif -len(v) <= int(sel) < len(v):
                        out.append(v[int(sel)])
                except ValueError:
                    return []
            nxt = out
        cur = nxt
    return cur


def human_age(ts):
    """A timestamp as the age kubectl shows (apimachinery's duration.HumanDuration)."""
    try:
        import calendar
        t = calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return ts
    sec = int(time.time() - t)
    if sec < -1:
        return "<invalid>"
    if sec < 0:
        return "0s"
    if sec < 120:
        return "%ds" % sec
    mins = sec // 60
    if mins < 10:
        return "%dm%ds" % (mins, sec % 60) if sec % 60 else "%dm" % mins
    if mins < 180:
        return "%dm" % mins
    hours = sec // 3600
    if hours < 8:
        return "%dh%dm" % (hours, mins % 60) if mins % 60 else "%dh" % hours
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        return "%dd%dh" % (hours // 24, hours % 24) if hours % 24 else "%dd" % (hours // 24)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return "%dy%dd" % (hours // 24 // 365, dy) if dy else "%dy" % (hours // 24 // 365)
    return "%dy" % (hours // 24 // 365)


def table(rt, items, list_meta):
    """A meta.k8s.io/v1 Table, as kubectl get asks for: Name plus the printer columns."""
    cols = [{"name": "Name", "type": "string", "format": "name", "priority": 0,
             "description": "Name must be unique within a namespace."}]
    pcs = rt.printer_columns
    if not pcs:
        pcs = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    for pc in pcs:
        cols.append({"name": pc.get("name", ""), "type": pc.get("type", "string"),
                     "format": pc.get("format", ""), "priority": pc.get("priority", 0),
                     "description": pc.get("description", "")})
    rows = []
    for obj in items:
        cells = [obj["metadata"].get("name", "")]
        for pc in pcs:
            vals = jsonpath(obj, pc.get("jsonPath", ""))
            v = vals[0] if vals else None
            if pc.get("type") == "date" and isinstance(v, str):
                v = human_age(v)
            elif isinstance(v, (dict, list)):
                v = json.dumps(v, separators=(",", ":"))
            cells.append(v)
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata",
                                                "apiVersion": "meta.k8s.io/v1",
                                                "metadata": meta}})
    out = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
           "columnDefinitions": cols, "rows": rows}
    if list_meta:
        out["metadata"] = {k: v for k, v in list_meta.items()
                           if k in ("resourceVersion", "continue", "remainingItemCount")}
    return dumps(out)


def parse_yaml_or_json(body):
    text = body.lstrip()
    if text[:1] in (b"{", b"["):
        try:
            return json.loads(body)
        except ValueError:
            pass
    if yaml is None:
        raise err_bad_request("YAML bodies need python3-yaml")
    try:
        docs = list(yaml.load_all(body, Loader=_K8sYamlLoader))
    except yaml.YAMLError as ex:
        raise err_bad_request("error decoding YAML: %s" % str(ex).replace("\n", " ")) from None
    docs = [d for d in docs if d is not None]
    if len(docs) != 1:
        raise err_bad_request("error decoding YAML: expected exactly one document")
    return docs[0]


# ------------------------------------------------------------------------- HTTP

REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict",
           410: "Gone", 413: "Request Entity Too Large", 415: "Unsupported Media Type",
           422: "Unprocessable Entity", 429: "Too Many Requests", 500: "Internal Server Error",
           502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gangbridge-apiserver"
    sys_version = ""

    def setup(self):
        self.tls_failed = False
        if isinstance(self.request, ssl.SSLSocket):
            # The handshake runs here, in the connection's thread, so that a client that
            # never completes it cannot block the accept loop.
            try:
                self.request.settimeout(10)
                self.request.do_handshake()
                self.request.settimeout(None)
            except (OSError, ssl.SSLError):
                self.tls_failed = True
        super().setup()
        try:
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        with self.server.conns_lock:
            self.server.conns.add(self.connection)

    def handle(self):
        if not self.tls_failed:
            super().handle()

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        with self.server.conns_lock:
            self.server.conns.discard(self.connection)

    def log_message(self, fmt, *args):
        if self.server.api.opts.verbose:
            sys.stderr.write("apiserver: %s - %s\n" % (self.address_string(), fmt % args))

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except (ConnectionError, socket.timeout, ssl.SSLError, OSError):
            self.close_connection = True

    # -- response helpers

    def _send(self, code, body, ctype="application/json", headers=None):
        h = ["HTTP/1.1 %d %s" % (code, REASONS.get(code, "Unknown")),
             "Content-Type: " + ctype,
             "Cache-Control: no-cache, private",
             "Date: " + self.date_time_string(),
             "Content-Length: %d" % len(body)]
        for k, v in (headers or {}).items():
            if isinstance(v, list):
                h.extend("%s: %s" % (k, x) for x in v)
            else:
                h.append("%s: %s" % (k, v))
        if self.close_connection:
            h.append("Connection: close")
        data = ("\r\n".join(h) + "\r\n\r\n").encode() + (body if self.command != "HEAD" else b"")
        self.wfile.write(data)
        self._code = code

    def _send_error(self, err):
        self._send(err.code, dumps(err.status()), headers=err.headers)

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if te == "chunked":
            out = bytearray()
            while True:
                line = self.rfile.readline(1024)
                try:
                    n = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise err_bad_request("malformed chunked body") from None
                if n == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                if len(out) + n > MAX_BODY:
                    self.close_connection = True
                    raise ApiError(413, "RequestEntityTooLarge",
                                   "Request entity too large: limit is %d" % MAX_BODY)
                out += self.rfile.read(n)
                self.rfile.readline(1024)
            return bytes(out)
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge",
                           "Request entity too large: limit is %d" % MAX_BODY)
        return self.rfile.read(n) if n > 0 else b""

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = lambda self: self._dispatch()

    # -- dispatch

    def _dispatch(self):
        api = self.server.api
        self._code = 0
        self._fail_after = None
        verb = self.command.lower()
        resource = None
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        body = b""
        try:
            body = self._read_body()
            if path.startswith("/_control/"):
                verb = "control"
                return self._control(path, body)
            f = api.faults
            if f.down or time.time() < api.down_until:
                api.stats.fault("down")
                self.close_connection = True
                self._abort()
                return
            if api.opts.token and not self._authorized():
                raise ApiError(401, "Unauthorized", "Unauthorized")
            verb, resource, name = self._route(path, q, body, dry_verb=True)
            if (f.latency_ms or f.latency_jitter_ms) and \
                    (f.latency_verbs is None or verb in f.latency_verbs) and \
                    (f.latency_resources is None or resource in f.latency_resources):
                time.sleep((f.latency_ms + random.random() * f.latency_jitter_ms) / 1000.0)
            if f.error_rate and random.random() < f.error_rate and \
                    (f.error_verbs is None or verb in f.error_verbs) and \
                    (f.error_resources is None or resource in f.error_resources) and \
                    (f.error_names is None or name in f.error_names):
                code = random.choice(f.error_codes)
                api.stats.fault(str(code))
                raise injected_error(code, f.retry_after)
            if f.error_after_write_rate and verb in WRITE_VERBS and \
                    (f.error_resources is None or resource in f.error_resources) and \
                    random.random() < f.error_after_write_rate:
                code = random.choice([c for c in f.error_codes if c != 429] or [500])
                self._fail_after = injected_error(code, f.retry_after)
            self._route(path, q, body)
        except ApiError as ex:
            try:
                self._send_error(ex)
            except OSError:
                self.close_connection = True
        except (ConnectionError, BrokenPipeError, socket.timeout):
            self.close_connection = True
        except Exception as ex:  # an internal error answers 500, never kills the server
            import traceback
            traceback.print_exc()
            try:
                self._send_error(ApiError(500, "InternalError", "Internal error occurred: %r"
                                          % (ex,), {"causes": [{"message": repr(ex)}]}))
            except OSError:
                self.close_connection = True
        finally:
            if verb != "control":
                api.stats.count(verb, resource, self._code)
            if api.opts.verbose:
                sys.stderr.write("apiserver: %s %s %s -> %s ua=%s\n" % (
                    self.command, self.path, verb, self._code or "dropped",
                    (self.headers.get("User-Agent") or "-").replace(" ", "_")))

    def _abort(self):
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _authorized(self):
        api = self.server.api
        want = api.opts.token
        if want.startswith("@"):
            try:
                with open(want[1:]) as fh:
                    want = fh.read().strip()
            except OSError:
                return False
        got = self.headers.get("Authorization") or ""
        if got == "Bearer " + want:
            return True
        if getattr(self.connection, "getpeercert", None) and api.opts.client_ca:
            return bool(self.connection.getpeercert())
        return False

    def _route(self, path, q, body, dry_verb=False):
        """Routes a request; with dry_verb only classifies it as (verb, resource)."""
        api = self.server.api
        m = self.command
        parts = [p for p in path.split("/") if p]
        if not parts:
            if dry_verb:
                return "discovery", None, None
            return self._json({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez",
                                         "/openapi/v2", "/openapi/v3", "/readyz", "/version"]})
        head = parts[0]
        if head in ("healthz", "livez", "readyz", "version", "openapi") or \
                (head in ("api", "apis") and len(parts) <= (2 if head == "api" else 3)):
            if dry_verb:
                return "discovery", None, None
            if m not in ("GET", "HEAD"):
                raise err_method()
            if head in ("healthz", "livez", "readyz"):
                return self._send(200, b"ok", "text/plain; charset=utf-8")
            if head == "version":
                return self._json(SERVER_VERSION)
            if head == "openapi":
                return self._openapi(parts)
            if head == "api":
                if len(parts) == 1:
                    return self._json(api.api_versions())
                return self._json(api.resource_list("", parts[1]))
            if len(parts) == 1:
                return self._json(api.api_group_list())
            if len(parts) == 2:
                return self._json(api.api_group(parts[1]))
            return self._json(api.resource_list(parts[1], parts[2]))
        if head == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif head == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            if dry_verb:
                return "unknown", None, None
            raise err_path()
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (
                len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns = rest[1]
            rest = rest[2:]
        if len(rest) > 3:
            if dry_verb:
                return "unknown", None, None
            raise err_path()
        resource = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        watch = q.get("watch", "").lower() in ("1", "true")
        if m in ("GET", "HEAD"):
            verb = "get" if name else ("watch" if watch else "list")
        elif m == "POST":
            verb = "create"
        elif m == "PUT":
            verb = "update"
        elif m == "PATCH":
            verb = "patch"
        elif m == "DELETE":
            verb = "delete" if name else "deletecollection"
        else:
            verb = m.lower()
        if dry_verb:
            return verb, resource, name
        with api.store.lock:
            rt = api.store.types.get((group, version, resource))
        if rt is None:
            raise err_path()
        if ns is not None and not rt.namespaced:
            raise err_path()
        if sub == "binding" and rt.gr == POD_RT_KEY and name is not None:
            if m != "POST":
                raise err_method()
            obj = self._decode(body, ("application/json", "application/yaml"))
            self._ok(api.bind(rt, ns, name, obj), 201)
            return "create", resource
        if sub is not None:
            if sub != "status" or not rt.status_sub or m not in ("GET", "HEAD", "PUT", "PATCH"):
                raise err_path() if sub != "status" or not rt.status_sub else err_method()
        if name is not None and rt.namespaced and ns is None:
            raise err_path()
        warnings = []
        if verb == "get":
            raw = api.get(rt, ns, name)
            self._ok(table(rt, [json.loads(raw)], None) if self._wants_table() else raw)
        elif verb == "list":
            raw = api.list(rt, ns, q)
            if self._wants_table():
                lst = json.loads(raw)
                raw = table(rt, lst["items"], lst["metadata"])
            self._ok(raw)
        elif verb == "watch":
            self._watch(rt, ns, q)
        elif verb == "create":
            if name is not None:
                raise err_method()
            if rt.namespaced and ns is None:
                raise err_method()
            obj = self._decode(body, ("application/json", "application/yaml"))
            raw = api.create(rt, ns, obj, q, self.headers.get("User-Agent"), warnings)
            self._ok(raw, 201, warnings)
        elif verb == "update":
            obj = self._decode(body, ("application/json", "application/yaml"))
            self._ok(api.update(rt, ns, name, sub, obj, q, self.headers.get("User-Agent"),
                                warnings), 200, warnings)
        elif verb == "patch":
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype == "application/apply-patch+yaml":
                raw, code = api.apply(rt, ns, name, sub, body, q, warnings)
                self._ok(raw, code, warnings)
            else:
                self._ok(api.patch(rt, ns, name, sub, ctype, body, q,
                                   self.headers.get("User-Agent"), warnings), 200, warnings)
        elif verb == "delete":
            opts = None
            if body.strip():
                opts = self._decode(body, ("application/json", "application/yaml"))
            self._ok(api.delete(rt, ns, name, opts, q))
        elif verb == "deletecollection":
            self._ok(api.delete_collection(rt, ns, q))
        else:
            raise err_method()
        return verb, resource

    def _decode(self, body, accepted):
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        ctype = ctype.lower()
        if ctype not in accepted and ctype != "*/*":
            raise err_media(list(accepted))
        if ctype == "application/yaml":
            return parse_yaml_or_json(body)
        try:
            return json.loads(body)
        except ValueError as ex:
            raise err_bad_request("json: %s" % ex) from None

    def _wants_table(self):
        acc = self.headers.get("Accept") or ""
        first = acc.split(",")[0]
        return "as=Table" in first and "g=meta.k8s.io" in first

    def _accepts_json(self):
        acc = self.headers.get("Accept") or "*/*"
        for part in acc.split(","):
            t = part.split(";")[0].strip().lower()
            if t in ("*/*", "application/*", "application/json", "application/yaml", ""):
                return True
        return False

    def _ok(self, raw, code=200, warnings=None):
        if self._fail_after is not None and code in (200, 201):
            # The write has taken effect; the client is told it failed.
            self.server.api.stats.fault("after" + str(self._fail_after.code))
            raise self._fail_after
        if not self._accepts_json():
            raise ApiError(406, "NotAcceptable", "only the following media types are accepted: "
                           "application/json, application/yaml")
        headers = {}
        if warnings:
            headers["Warning"] = ['299 - %s' % json.dumps(w) for w in warnings]
        self._send(code, raw, headers=headers)

    def _json(self, obj):
        self._ok(dumps(obj))

    def _openapi(self, parts):
        api = self.server.api
        if len(parts) >= 2 and parts[1] == "v2":
            ver = SERVER_VERSION["gitVersion"]
            if openapiv2.wants_protobuf(self.headers.get("Accept")):
                return self._send(200, openapiv2.document_protobuf("Kubernetes", ver),
                                  ctype=openapiv2.PROTOBUF_RETURNED_TYPE)
            return self._json(openapiv2.document("Kubernetes", ver))
        if len(parts) == 2 and parts[1] == "v3":
            return self._json(api.openapi_v3_root())
        if len(parts) >= 3 and parts[1] == "v3":
            rest = parts[2:]
            if rest[0] == "api" and len(rest) == 2:
                return self._ok(api.openapi_v3_doc("", rest[1]))
            if rest[0] == "apis" and len(rest) == 3:
                return self._ok(api.openapi_v3_doc(rest[1], rest[2]))
        raise err_path()

    # -- watch

    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _watch(self, rt, ns, q):
        api = self.server.api
        st = api.store
        f = api.faults
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(rt, q.get("fieldSelector", ""), q.get("labelSelector", ""))
        try:
            timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else \
                1800.0 * (1.0 + random.random())
        except ValueError:
            raise err_bad_request("timeoutSeconds: invalid value") from None
        bookmarks = q.get("allowWatchBookmarks", "").lower() in ("1", "true")
        rvq = q.get("resourceVersion", "")
        initial_events = q.get("sendInitialEvents", "").lower() in ("1", "true")
        srt = rt.storage
        expired = None
        initial = []
        w = Watcher(srt, ns)
        with st.lock:
            log = wlog = st.logs[srt.gr]
            if f.watch_410_rate and random.random() < f.watch_410_rate:
                api.stats.fault("watch410")
                expired = "too old resource version: %s (%d)" % (rvq or "0", st.rv)
            elif rvq and rvq != "0" and not initial_events:
                try:
                    cursor = int(rvq)
                except ValueError:
                    raise err_bad_request("resourceVersion: Invalid value: %r" % rvq) from None
                if cursor < log.floor:
                    expired = "too old resource version: %d (%d)" % (cursor, log.floor + 1)
            else:
                cursor = st.rv
                for key in sorted(st.objs[srt.gr]):
                    if ns is not None and key[0] != ns:
                        continue
                    initial.append(st.objs[srt.gr][key])
            if expired is None:
                st.watchers.add(w)
                api.stats.watches_started += 1
        if expired is not None:
            api.stats.watches_expired += 1
            if api.expired_mode == "http":
                raise err_expired(expired)
        self._send_watch_headers()
        if expired is not None:
            self._watch_error(expired)
            self._chunk(b"")
            return
        start = time.monotonic()
        deadline = start + timeout
        next_bookmark = start + api.bookmark_interval
        drop_at = None
        if f.watch_drop_seconds:
            drop_at = start + f.watch_drop_seconds * (0.75 + random.random() * 0.5)
        expire_at = start + f.watch_expire_seconds if f.watch_expire_seconds else None
        try:
            for obj, raw in initial:
                if self._passes(lsel, fsel, obj):
                    self._chunk(b'{"type":"ADDED","object":' + raw + b"}\n")
            if initial_events and bookmarks:
                self._bookmark(srt, cursor, initial_end=True)
            while True:
                now = time.monotonic()
                if f.watch_drop_seconds and drop_at is None:
                    drop_at = now + f.watch_drop_seconds * (0.75 + random.random() * 0.5)
                elif not f.watch_drop_seconds:
                    drop_at = None
                if f.watch_expire_seconds and expire_at is None:
                    expire_at = now + f.watch_expire_seconds
                elif not f.watch_expire_seconds:
                    expire_at = None
                wake = min(x for x in (deadline, next_bookmark, drop_at, expire_at) if x)
                with st.lock:
                    # The watch keeps the history it started on: when its CRD is deleted
                    # it still delivers the DELETED events, then ends (w.stop).
                    log = wlog
                    evs = log.since(cursor)
                    if not evs and not (w.stop or w.expire or w.drop) and cursor >= log.floor:
                        st.conds[srt.gr].wait(max(0.0, min(wake - now, 1.0)))
                        evs = log.since(cursor)
                    if st.logs.get(srt.gr) is not wlog:
                        w.stop = True
                    elif cursor < log.floor:
                        w.expire = True
                    cur_rv = st.rv
                if w.drop:
                    api.stats.watches_dropped += 1
                    return self._drop()
                for ev in evs:
                    line = self._event_line(ev, ns, lsel, fsel)
                    cursor = ev[0]
                    if line is not None:
                        self._chunk(line)
                        api.stats.events_sent += 1
                if w.expire:
                    api.stats.watches_expired += 1
                    self._watch_error("too old resource version: %d (%d)" % (cursor, cur_rv))
                    break
                if w.stop:
                    break
                now = time.monotonic()
                if drop_at and now >= drop_at:
                    api.stats.fault("watchdrop")
                    api.stats.watches_dropped += 1
                    return self._drop()
                if expire_at and now >= expire_at:
                    api.stats.fault("watchexpire")
                    api.stats.watches_expired += 1
                    self._watch_error("too old resource version: %d (%d)" % (cursor, cur_rv))
                    break
                if now >= deadline:
                    if bookmarks:
                        self._bookmark(srt, max(cursor, cur_rv))
                    break
                if bookmarks and now >= next_bookmark:
                    with st.lock:
                        if not wlog.since(cursor):
                            cursor = max(cursor, st.rv)
                    self._bookmark(srt, cursor)
                    next_bookmark = now + api.bookmark_interval
            self._chunk(b"")
        finally:
            with st.lock:
                st.watchers.discard(w)

    def _send_watch_headers(self):
        h = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
             "Cache-Control: no-cache, private\r\nDate: %s\r\n"
             "Transfer-Encoding: chunked\r\n\r\n" % self.date_time_string())
        self.wfile.write(h.encode())
        self._code = 200

    def _watch_error(self, msg):
        st = err_expired(msg).status()
        self._chunk(b'{"type":"ERROR","object":' + dumps(st) + b"}\n")

    def _bookmark(self, rt, rv, initial_end=False):
        meta = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
        self._chunk(b'{"type":"BOOKMARK","object":' + dumps(obj) + b"}\n")
        self.server.api.stats.bookmarks_sent += 1

    def _drop(self):
        self.close_connection = True
        self._abort()

    @staticmethod
    def _passes(lsel, fsel, obj):
        if lsel and not label_match(lsel, obj["metadata"].get("labels") or {}):
            return False
        if fsel and not field_match(fsel, obj):
            return False
        return True

    def _event_line(self, ev, ns, lsel, fsel):
        rv, etype, obj, raw, prev = ev
        if ns is not None and obj["metadata"].get("namespace", "") != ns:
            return None
        if not lsel and not fsel:
            return b'{"type":"' + etype.encode() + b'","object":' + raw + b"}\n"
        cur = self._passes(lsel, fsel, obj)
        old = prev is not None and self._passes(lsel, fsel, prev[0])
        if etype == "DELETED":
            return b'{"type":"DELETED","object":' + raw + b"}\n" if cur else None
        if cur and old:
            return b'{"type":"MODIFIED","object":' + raw + b"}\n"
        if cur:
            return b'{"type":"ADDED","object":' + raw + b"}\n"
        if old:
            o = ssa.deepcopy(prev[0])
            o["metadata"]["resourceVersion"] = str(rv)
            return b'{"type":"DELETED","object":' + dumps(o) + b"}\n"
        return None

    # -- control

    def _control(self, path, body):
        srv = self.server
        api = srv.api
        what = path[len("/_control/"):].strip("/")
        m = self.command
        data = {}
        if body.strip():
            try:
                data = json.loads(body)
            except ValueError:
                raise err_bad_request("control: body must be JSON") from None
        if what == "faults":
            if m == "GET":
                return self._json(api.faults.as_dict())
            if m in ("POST", "PUT", "PATCH"):
                api.faults.update(data)
                return self._json(api.faults.as_dict())
            if m == "DELETE":
                api.faults.reset()
                api.down_until = 0.0
                return self._json(api.faults.as_dict())
            raise err_method()
        if m not in ("GET", "POST"):
            raise err_method()
        if what == "workload-api":
            if m == "POST":
                try:
                    api.store.set_workload_api(data.get("release"))
                except ValueError as ex:
                    raise err_bad_request(str(ex)) from None
            return self._json({"release": api.store.workload_release})
        if what == "stats":
            if m == "POST" and data.get("reset"):
                api.stats.reset()
            return self._json(self._stats())
        if what == "compact":
            with api.store.lock:
                api.store.compact(data.get("resourceVersion"))
                rv = api.store.rv
            return self._json({"compactedTo": rv})
        if what == "expire-watches":
            n = self._signal_watchers("expire")
            return self._json({"expired": n})
        if what == "drop-watches":
            n = self._signal_watchers("drop")
            return self._json({"dropped": n})
        if what == "restart":
            return self._restart(data)
        if what == "save":
            fn = data.get("path") or api.opts.state_file
            if not fn:
                raise err_bad_request("control: no state file configured")
            save_state(api, fn)
            return self._json({"saved": fn})
        if what == "settings":
            if "bookmark_interval" in data:
                api.bookmark_interval = float(data["bookmark_interval"])
            if "history" in data:
                with api.store.lock:
                    api.store.window = int(data["history"])
                    for log in api.store.logs.values():
                        log.trim(api.store.window)
            if "expired_watch" in data:
                if data["expired_watch"] not in ("http", "event"):
                    raise err_bad_request("control: expired_watch is http or event")
                api.expired_mode = data["expired_watch"]
            if "gc_delay" in data:
                api.store.gc_delay = float(data["gc_delay"])
            if "schema_defaults" in data:
                api.schema_defaults = bool(data["schema_defaults"])
            return self._json({"bookmark_interval": api.bookmark_interval,
                               "history": api.store.window, "expired_watch": api.expired_mode,
                               "gc_delay": api.store.gc_delay,
                               "schema_defaults": api.schema_defaults})
        raise err_path()

    def _signal_watchers(self, what):
        api = self.server.api
        with api.store.lock:
            ws = list(api.store.watchers)
            for w in ws:
                setattr(w, what, True)
            api.store.wake_all()
        return len(ws)

    def _restart(self, data):
        """Drop every connection, compact history, optionally refuse service for a while."""
        api = self.server.api
        down = float(data.get("downSeconds", 0) or 0)
        keep = data.get("keepState", True)
        with api.store.lock:
            if not keep:
                fresh = Store(history=api.store.window, gc_delay=api.store.gc_delay)
                st = fresh.state()
                st["resourceVersion"] = api.store.rv
                for w in api.store.watchers:
                    w.drop = True
                api.store.load_state(st)
            # A restart loses the watch cache: no resourceVersion seen before it can be
            # watched from again, so every client has to relist.
            api.store.rv += 1
            api.store.compact()
            for w in api.store.watchers:
                w.drop = True
            api.store.wake_all()
            api.down_until = time.time() + down
        body = dumps({"restarted": True, "resourceVersion": str(api.store.rv),
                      "downSeconds": down})
        self.close_connection = True
        self._send(200, body)
        me = self.connection
        with self.server.conns_lock:
            conns = [c for c in self.server.conns if c is not me]
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        api.stats.fault("restart")

    def _stats(self):
        api = self.server.api
        st = api.store
        s = api.stats
        with st.lock:
            objects = {("%s/%s" % gr if gr[0] else gr[1]): len(t) for gr, t in st.objs.items()}
            history = {("%s/%s" % gr if gr[0] else gr[1]): {"events": len(log.events),
                                                            "floor": log.floor}
                       for gr, log in st.logs.items()}
            watchers = len(st.watchers)
            rv = st.rv
        with s.lock:
            return {"resourceVersion": str(rv), "requests": dict(s.requests),
                    "codes": dict(s.codes), "resources": {k: dict(v) for k, v in
                                                          s.resources.items()},
                    "faults": dict(s.faults), "watchers": watchers,
                    "watchesStarted": s.watches_started, "watchesDropped": s.watches_dropped,
                    "watchesExpired": s.watches_expired, "eventsSent": s.events_sent,
                    "bookmarksSent": s.bookmarks_sent, "objects": objects,
                    "history": history, "connections": len(self.server.conns)}


def injected_error(code, retry_after):
    if code == 403:
        # What RBAC answers a user without the verb on the resource.
        return ApiError(403, "Forbidden", "the user cannot access this resource (injected fault)")
    if code == 429:
        return ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                        {"retryAfterSeconds": retry_after},
                        headers={"Retry-After": str(retry_after)})
    if code == 503:
        return ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the "
                        "request (injected fault)", {"retryAfterSeconds": retry_after},
                        headers={"Retry-After": str(retry_after)})
    if code == 504:
        return ApiError(504, "Timeout", "the server was unable to return a response in the time "
                        "allotted, but may still be processing the request (injected fault)",
                        {"retryAfterSeconds": retry_after}, headers={"Retry-After":
                                                                     str(retry_after)})
    if code == 502:
        return ApiError(502, "InternalError", "Internal error occurred: bad gateway (injected "
                        "fault)")
    return ApiError(500, "InternalError", "Internal error occurred: injected fault",
                    {"causes": [{"message": "injected fault"}]})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024

    def __init__(self, addr, api):
        self.api = api
        self.conns = set()
        self.conns_lock = threading.Lock()
        super().__init__(addr, Handler)


def save_state(api, fn):
    with api.store.lock:
        st = api.store.state()
        data = json.dumps(st, separators=(",", ":"))
    tmp = fn + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(data)
    os.replace(tmp, fn)


class Options:
    def __init__(self, **kw):
        self.host = "127.0.0.1"
        self.port = 0
        self.state_file = None
        self.history = 10000
        self.bookmark_interval = 10.0
        self.expired_watch = "http"
        self.gc_delay = 0.0
        self.verbose = False
        self.token = None
        self.tls_cert = None
        self.tls_key = None
        self.client_ca = None
        self.crds = []
        self.no_defaults = False
        self.address = ""
        self.workload_api = "none"
        self.__dict__.update(kw)


def install_crds(api, path):
    """Server-side apply (manager "kubectl", force) every CRD in a YAML file or directory."""
    files = [path]
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.endswith((".yaml", ".yml", ".json")))
    crt = api.store.by_gr[CRD_RT_KEY]
    for fn in files:
        with open(fn, "rb") as fh:
            data = fh.read()
        try:
            docs = [d for d in yaml.load_all(data, Loader=_K8sYamlLoader) if d]
        except yaml.YAMLError as ex:
            raise ValueError("%s: %s" % (fn, str(ex).replace("\n", " "))) from None
        for d in docs:
            if not isinstance(d, dict) or d.get("kind") != "CustomResourceDefinition":
                raise ValueError("%s: not a CustomResourceDefinition" % fn)
            name = (d.get("metadata") or {}).get("name", "")
            try:
                api.apply(crt, None, name, None, dumps(d),
                          {"fieldManager": "kubectl", "force": "true"}, [])
            except ApiError as ex:
                raise ValueError("%s: %s" % (fn, ex.message)) from None


def start(opts, faults=None):
    """Start a server in background threads; returns (server, url).  For in-process tests."""
    api = Api(opts)
    if faults:
        api.faults.update(faults)
    if opts.state_file and os.path.exists(opts.state_file):
        with open(opts.state_file) as fh:
            st = json.load(fh)
        with api.store.lock:
            api.store.load_state(st)
    for path in opts.crds or ():
        install_crds(api, path)
    api.store.set_workload_api(getattr(opts, "workload_api", "none"))
    srv = Server((opts.host, opts.port), api)
    scheme = "http"
    if opts.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(opts.tls_cert, opts.tls_key)
        if opts.client_ca:
            ctx.load_verify_locations(opts.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True,
                                     do_handshake_on_connect=False)
        scheme = "https"
    host, port = srv.server_address[:2]
    host = opts.host if opts.host not in ("0.0.0.0", "::") else "127.0.0.1"
    url = "%s://%s:%d" % (scheme, "[%s]" % host if ":" in host else host, port)
    opts.address = "%s:%d" % (host, port)
    th = threading.Thread(target=srv.serve_forever, name="http", daemon=True)
    th.start()
    return srv, url


def stop(srv):
    srv.shutdown()
    srv.server_close()
    with srv.conns_lock:
        conns = list(srv.conns)
    for c in conns:
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    srv.api.store.gcq.put(("stop",))


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="tests/apiserver/run",
                                 description="Stand-in Kubernetes API server for tests.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--state-file", help="load state from it at start, save to it at exit")
    ap.add_argument("--history", type=int, default=10000,
                    help="watch history window, events per resource (default 10000)")
    ap.add_argument("--bookmark-interval", type=float, default=10.0,
                    help="seconds between BOOKMARK events (default 10)")
    ap.add_argument("--expired-watch", choices=("http", "event"), default="http",
                    help="answer a watch from a too-old RV with HTTP 410 (default) or an "
                         "in-stream ERROR event")
    ap.add_argument("--gc-delay", type=float, default=0.0,
                    help="seconds the garbage collector waits before each item")
    ap.add_argument("--no-defaults", action="store_true",
                    help="do not apply CRD schema defaults (a deviation from real servers)")
    ap.add_argument("--crd", action="append", default=[], metavar="PATH",
                    help="install the CRDs of this YAML file or directory at start "
                         "(repeatable)")
    ap.add_argument("--workload-api", default="none", metavar="RELEASE",
                    help="serve the scheduling.k8s.io Workload API of Kubernetes 1.35, 1.36 or "
                         "1.37 (GenericWorkload on), or none (the gate's default: off)")
    ap.add_argument("--token", help="require this bearer token (@FILE: read FILE per request)")
    ap.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    ap.add_argument("--tls-key", help="private key for --tls-cert")
    ap.add_argument("--client-ca", help="accept client certificates signed by this CA")
    ap.add_argument("--error-rate", type=float, default=0.0,
                    help="fraction of API requests answered with an injected error")
    ap.add_argument("--error-codes", default="500,503,429",
                    help="comma-separated codes for --error-rate (default 500,503,429)")
    ap.add_argument("--error-verbs", help="comma-separated verbs the errors apply to")
    ap.add_argument("--error-after-write-rate", type=float, default=0.0,
                    help="fraction of writes applied and then answered with an injected error")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="added latency per request")
    ap.add_argument("--latency-jitter-ms", type=float, default=0.0,
                    help="extra random latency, uniform in [0, N) ms")
    ap.add_argument("--watch-drop-seconds", type=float, default=0.0,
                    help="cut every watch abruptly after about N seconds")
    ap.add_argument("--watch-410-rate", type=float, default=0.0,
                    help="fraction of watch requests answered with 410 Expired")
    ap.add_argument("--watch-expire-seconds", type=float, default=0.0,
                    help="end every watch with an in-stream 410 after N seconds")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every request to stderr")
    a = ap.parse_args(argv)
    if bool(a.tls_cert) != bool(a.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    opts = Options(host=a.host, port=a.port, state_file=a.state_file, history=a.history,
                   bookmark_interval=a.bookmark_interval, expired_watch=a.expired_watch,
                   gc_delay=a.gc_delay, crds=a.crd, no_defaults=a.no_defaults,
                   verbose=a.verbose or os.environ.get("GB_APISERVER_VERBOSE") == "1",
                   token=a.token, tls_cert=a.tls_cert, workload_api=a.workload_api,
                   tls_key=a.tls_key, client_ca=a.client_ca)
    faults = {"error_rate": a.error_rate, "latency_ms": a.latency_ms,
              "error_after_write_rate": a.error_after_write_rate,
              "latency_jitter_ms": a.latency_jitter_ms,
              "watch_drop_seconds": a.watch_drop_seconds, "watch_410_rate": a.watch_410_rate,
              "watch_expire_seconds": a.watch_expire_seconds}
    try:
        faults["error_codes"] = [int(c) for c in a.error_codes.split(",") if c.strip()]
        if a.error_verbs:
            faults["error_verbs"] = [v.strip() for v in a.error_verbs.split(",") if v.strip()]
        srv, url = start(opts, faults)
    except (ApiError, ValueError, OSError) as ex:
        msg = ex.message if isinstance(ex, ApiError) else str(ex)
        sys.stderr.write("apiserver: %s\n" % msg)
        return 2
    sys.stdout.write(url + "\n")
    sys.stdout.flush()
    done = threading.Event()

    def on_signal(signum, frame):
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not done.wait(3600):
        pass
    stop(srv)
    if opts.state_file:
        try:
            save_state(srv.api, opts.state_file)
        except OSError as ex:
            sys.stderr.write("apiserver: cannot save state: %s\n" % ex)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
