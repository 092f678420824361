# SPDX-License-Identifier: Apache-2.0
"""Server-side apply for the stand-in API server: field sets, merge, managedFields.

This module owns the field-ownership model of server-side apply (SSA) as the real
kube-apiserver implements it with structured-merge-diff, reduced to what a test server
needs.  A *path* is a tuple of FieldsV1 path elements, spelled exactly as they appear in
`metadata.managedFields[].fieldsV1`: `f:name` (a struct field or map key),
`k:{"name":"x"}` (an element of an associative list, keyed by its list-map-keys, keys
sorted) and `v:"x"` (an element of a set list).  A *field set* is a Python set of paths.

Which values are leaves ("members") follows structured-merge-diff's ToFieldSet: scalars,
atomic lists and maps, associative-list elements, keys of maps that are not declared
struct fields, and null or empty-map values.  Schemas are CRD openAPIV3Schema nodes;
`None` means "deduced" (granular maps, atomic lists), as the real server uses for
x-kubernetes-preserve-unknown-fields subtrees.
"""

import json

# Metadata as the real server types it for SSA: labels and annotations are granular maps,
# ownerReferences is a list map keyed by uid, finalizers a set.
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
META_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "generateName": {"type": "string"},
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
        "finalizers": {"type": "array", "items": {"type": "string"},
                       "x-kubernetes-list-type": "set"},
        "ownerReferences": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
            "items": {"type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "name": {"type": "string"}, "uid": {"type": "string"},
                "controller": {"type": "boolean"},
                "blockOwnerDeletion": {"type": "boolean"}}},
        },
    },
}

# A node whose content is unknown: maps are granular, lists atomic.
DEDUCED = {"x-kubernetes-preserve-unknown-fields": True}

# Paths the real field manager never tracks (exact paths, not subtrees).
STRIPPED = frozenset([
    ("f:apiVersion",), ("f:kind",), ("f:metadata",),
    ("f:metadata", "f:name"), ("f:metadata", "f:namespace"),
    ("f:metadata", "f:creationTimestamp"), ("f:metadata", "f:selfLink"),
    ("f:metadata", "f:uid"), ("f:metadata", "f:clusterName"),
    ("f:metadata", "f:generation"), ("f:metadata", "f:managedFields"),
    ("f:metadata", "f:resourceVersion"),
    # The server sets these itself; a client never owns them.
    ("f:metadata", "f:deletionTimestamp"), ("f:metadata", "f:deletionGracePeriodSeconds"),
])

_CONTAINER = object()   # marks a member whose value is compared through its children


def root_schema(crd_schema):
    """The schema used for SSA and validation of a whole object."""
    if crd_schema is None:
        props = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                 "metadata": META_SCHEMA}
        return {"type": "object", "properties": props,
                "x-kubernetes-preserve-unknown-fields": True}
    s = dict(crd_schema)
    props = dict(s.get("properties") or {})
    props["metadata"] = META_SCHEMA
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    s["properties"] = props
    return s


def _dumps(v):
    return json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _kind(s, v):
    """How structured-merge-diff treats value v under schema node s."""
    if isinstance(v, dict):
        if s is None:
            return "map"
        if s.get("x-kubernetes-map-type") == "atomic":
            return "atomic"
        if s.get("properties"):
            return "struct"
        return "map"
    if isinstance(v, list):
        if s is None:
            return "atomic"
        lt = s.get("x-kubernetes-list-type")
        if lt == "map" and s.get("x-kubernetes-list-map-keys"):
            return "assoc"
        if lt == "set":
            return "set"
        return "atomic"
    return "scalar"


def _child(s, key):
    """Schema of field `key` under object schema s, and whether it is a declared field."""
    if s is None:
        return None, False
    props = s.get("properties")
    if props and key in props:
        return props[key], True
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        return ap, False
    return None, False


def _items(s):
    if s is None:
        return None
    it = s.get("items")
    return it if isinstance(it, dict) else None


def key_element(item, keys):
    kv = {}
    for k in keys:
        if k in item:
            kv[k] = item[k]
    return "k:" + _dumps(kv)


def _walk(v, s, path, out):
    kind = _kind(s, v)
    if kind in ("scalar", "atomic"):
        out[path] = v
        return
    if kind in ("struct", "map"):
        for key, cv in v.items():
            cs, declared = _child(s, key)
            p = path + ("f:" + key,)
            _walk(cv, cs, p, out)
            if cv is None or (isinstance(cv, dict) and not cv):
                out[p] = cv
            elif not declared and p not in out:
                out[p] = _CONTAINER
        return
    if kind == "assoc":
        keys = s["x-kubernetes-list-map-keys"]
        its = _items(s)
        for item in v:
            if not isinstance(item, dict):
                continue
            p = path + (key_element(item, keys),)
            _walk(item, its, p, out)
            if p not in out:
                out[p] = _CONTAINER
        return
    if kind == "set":
        for item in v:
            out[path + ("v:" + _dumps(item),)] = item


def members(obj, schema, ignored=()):
    """Map of member path -> value (or _CONTAINER) for obj, without untracked paths."""
    out = {}
    _walk(obj, schema, (), out)
    for p in STRIPPED:
        out.pop(p, None)
    if ignored:
        for p in [p for p in out if p[:1] in ignored]:
            del out[p]
    return out


def compare(old_m, new_m):
    """(added, removed, modified) between two member maps."""
    added = set(new_m.keys() - old_m.keys())
    removed = set(old_m.keys() - new_m.keys())
    modified = set()
    for p in old_m.keys() & new_m.keys():
        a = old_m[p]
        b = new_m[p]
        if a is _CONTAINER or b is _CONTAINER:
            if (a is _CONTAINER) != (b is _CONTAINER):
                modified.add(p)
            continue
        if type(a) is not type(b) or a != b:
            modified.add(p)
    return added, removed, modified


# ---------------------------------------------------------------- path access

def _find_list(lst, elem):
    if elem.startswith("k:"):
        want = json.loads(elem[2:])
        for i, it in enumerate(lst):
            if isinstance(it, dict) and all(k in it and it[k] == v for k, v in want.items()):
                return i
        return -1
    if elem.startswith("v:"):
        want = json.loads(elem[2:])
        for i, it in enumerate(lst):
            if it == want and type(it) is type(want):
                return i
        return -1
    if elem.startswith("i:"):
        i = int(elem[2:])
        return i if 0 <= i < len(lst) else -1
    return -1


def remove_path(obj, path):
    """Remove the value at path from obj (in place).  Missing paths are ignored."""
    cur = obj
    for elem in path[:-1]:
        if isinstance(cur, dict) and elem.startswith("f:"):
            cur = cur.get(elem[2:])
        elif isinstance(cur, list):
            i = _find_list(cur, elem)
            cur = cur[i] if i >= 0 else None
        else:
            return False
        if cur is None:
            return False
    last = path[-1]
    if isinstance(cur, dict) and last.startswith("f:"):
        return cur.pop(last[2:], _CONTAINER) is not _CONTAINER
    if isinstance(cur, list):
        i = _find_list(cur, last)
        if i >= 0:
            del cur[i]
            return True
    return False


def get_path(obj, path):
    cur = obj
    for elem in path:
        if isinstance(cur, dict) and elem.startswith("f:"):
            if elem[2:] not in cur:
                return False, None
            cur = cur[elem[2:]]
        elif isinstance(cur, list):
            i = _find_list(cur, elem)
            if i < 0:
                return False, None
            cur = cur[i]
        else:
            return False, None
    return True, cur


def path_string(path):
    """A path as the real server prints it in conflict messages: .spec.x[name="y"]."""
    parts = []
    for elem in path:
        if elem.startswith("f:"):
            parts.append("." + elem[2:])
        elif elem.startswith("k:"):
            kv = json.loads(elem[2:])
            parts.append("[" + ",".join("%s=%s" % (k, json.dumps(v))
                                        for k, v in sorted(kv.items())) + "]")
        elif elem.startswith("v:"):
            parts.append("[=" + elem[2:] + "]")
        elif elem.startswith("i:"):
            parts.append("[" + elem[2:] + "]")
        else:
            parts.append(elem)
    return "".join(parts)


# ---------------------------------------------------------------- FieldsV1

def set_to_fields(paths):
    root = {}
    for p in paths:
        node = root
        for e in p:
            node = node.setdefault(e, {})
        node["."] = {}
    return _finish(root)


def _finish(node):
    out = {}
    keys = sorted(node.keys())
    for k in keys:
        if k == ".":
            continue
        out[k] = _finish(node[k])
    if "." in node and out:
        res = {".": {}}
        res.update(out)
        return res
    return out


def fields_to_set(fields, prefix=(), out=None):
    if out is None:
        out = set()
    if not isinstance(fields, dict):
        return out
    if not fields and prefix:
        out.add(prefix)
        return out
    for k, child in fields.items():
        if k == ".":
            out.add(prefix)
            continue
        p = prefix + (k,)
        if isinstance(child, dict) and child:
            fields_to_set(child, p, out)
        else:
            out.add(p)
    return out


# ---------------------------------------------------------------- merge

def merge(live, cfg, s):
    """Merge an applied configuration into the live value (new value; inputs untouched)."""
    if isinstance(live, dict) and isinstance(cfg, dict):
        kind = _kind(s, cfg)
        if kind in ("struct", "map"):
            res = dict(live)
            for k, v in cfg.items():
                cs, _ = _child(s, k)
                if v is None:
                    res.pop(k, None)
                elif k in live:
                    res[k] = merge(live[k], v, cs)
                else:
                    res[k] = v
            return res
        return cfg
    if isinstance(live, list) and isinstance(cfg, list):
        kind = _kind(s, cfg)
        if kind == "assoc":
            keys = s["x-kubernetes-list-map-keys"]
            return _merge_items(live, cfg, lambda x: key_element(x, keys)
                                if isinstance(x, dict) else None, _items(s))
        if kind == "set":
            return _merge_items(live, cfg, lambda x: "v:" + _dumps(x), None)
    return cfg


def _merge_items(live, cfg, key, its):
    """Merge keyed list items the way structured-merge-diff orders them.

    Items of both lists follow the configuration's order; items only in the live list keep
    their place relative to them; new items come where the configuration puts them.
    """
    lpe = [key(x) for x in live]
    rpe = [key(x) for x in cfg]
    lmap = {}
    for pe, x in zip(lpe, live):
        lmap.setdefault(pe, x)
    rmap = {}
    for pe, x in zip(rpe, cfg):
        rmap.setdefault(pe, x)
    shared = [pe for pe in rpe if pe in lmap]
    si = 0

    def take_next():
        nonlocal si
        si += 1
        return shared[si - 1] if si - 1 < len(shared) else None

    next_shared = take_next()
    merged = set()
    out = []
    li = ri = 0
    while li < len(lpe) or ri < len(rpe):
        if li < len(lpe) and ri < len(rpe):
            pe = lpe[li]
            if pe == rpe[ri] and pe is not None:
                merged.add(pe)
                out.append(merge(lmap[pe], rmap[pe], its))
                li += 1
                ri += 1
                next_shared = take_next()
                continue
            if pe in rmap and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lpe):
            pe = lpe[li]
            if pe is None or pe not in rmap:
                out.append(live[li])
                li += 1
                continue
            if pe in merged:
                li += 1
                continue
        if ri < len(rpe):
            pe = rpe[ri]
            ri += 1
            if pe is None:
                out.append(cfg[ri - 1])
                continue
            if pe in merged:
                continue
            merged.add(pe)
            out.append(merge(lmap[pe], rmap[pe], its) if pe in lmap else rmap[pe])
            if next_shared is not None and next_shared == pe:
                next_shared = take_next()
    return out


def named_ancestors(paths):
    """Field-name ancestors of paths (structured-merge-diff's EnsureNamedFieldsAreMembers)."""
    out = set()
    for p in paths:
        for i in range(1, len(p)):
            if p[i - 1].startswith("f:"):
                out.add(p[:i])
    return out


def prune(merged, last_set, owned):
    """Remove fields the applier applied last time, no longer applies and nobody owns.

    `owned` is the union of every manager's current set (the applier's new set included).
    Parents emptied by the removal are removed too when nobody owns anything below them.
    Returns merged itself when nothing goes, else a modified deep copy (merged may share
    containers with the stored object, which must never change).
    """
    if not last_set:
        return merged
    owned_all = set(owned) | named_ancestors(owned)
    gone = [p for p in last_set if p not in owned_all]
    if not gone:
        return merged
    merged = _deepcopy(merged)
    # Parents first: removing a list item by its key must happen before its key fields go.
    for p in sorted(gone, key=len):
        remove_path(merged, p)
    parents = sorted(named_ancestors(gone) - owned_all, key=len, reverse=True)
    for p in parents:
        if p in STRIPPED or len(p) < 1 or p == ("f:metadata",):
            continue
        found, v = get_path(merged, p)
        if found and (v == {} or v == [] or v is None):
            remove_path(merged, p)
    return merged


# ---------------------------------------------------------------- managedFields

class Managers:
    """managedFields of one object, keyed like the real server.

    Keys are (manager, operation, subresource); sets are field paths (see module doc).
    """

    def __init__(self, entries):
        self.sets = {}
        self.meta = {}
        self.orig = {}      # key -> (set, fieldsV1) as read, to reuse unchanged serialisations
        for e in entries or ():
            if not isinstance(e, dict):
                continue
            key = (e.get("manager", ""), e.get("operation", ""), e.get("subresource", ""))
            fv = e.get("fieldsV1") or {}
            self.sets[key] = fields_to_set(fv)
            self.orig[key] = (self.sets[key], fv)
            self.meta[key] = {"apiVersion": e.get("apiVersion", ""), "time": e.get("time")}

    def entries(self):
        out = []
        for key, paths in self.sets.items():
            if not paths:
                continue
            m = self.meta.get(key, {})
            e = {"manager": key[0], "operation": key[1], "apiVersion": m.get("apiVersion", "")}
            if m.get("time"):
                e["time"] = m["time"]
            e["fieldsType"] = "FieldsV1"
            o = self.orig.get(key)
            e["fieldsV1"] = o[1] if o is not None and o[0] == paths else set_to_fields(paths)
            if key[2]:
                e["subresource"] = key[2]
            out.append(e)
        out.sort(key=lambda e: (e["operation"], e.get("time") or "", e["manager"],
                                e["apiVersion"], e.get("subresource", "")))
        return out


def manager_label(key, api_version):
    """How the real server names a manager in conflict messages (printManager)."""
    s = json.dumps(key[0])
    if key[2]:
        s += " with subresource %s" % json.dumps(key[2])
    if key[1] == "Update":
        s += " using %s" % api_version
    return s


class ApplyConflict(Exception):
    def __init__(self, conflicts):
        super().__init__("apply conflict")
        self.conflicts = conflicts   # list of (manager_label, path)

    def message(self):
        c = self.conflicts
        if len(c) == 1:
            return "Apply failed with 1 conflict: conflict with %s: %s" % (
                c[0][0], path_string(c[0][1]))
        by = {}
        for label, p in c:
            by.setdefault(label, []).append(p)
        msgs = []
        for label in sorted(by):
            msgs.append("conflicts with %s:" % label)
            for p in sorted(by[label]):
                msgs.append("- %s" % path_string(p))
        return "Apply failed with %d conflicts: %s" % (len(c), "\n".join(msgs))

    def causes(self):
        return [{"type": "FieldManagerConflict", "message": "conflict with %s" % label,
                 "field": path_string(p)} for label, p in self.conflicts]


def _take(mgrs, me, old_m, new_m, force):
    """Structured-merge-diff's update(): strip changed fields from other managers."""
    added, removed, modified = compare(old_m, new_m)
    changed = added | modified
    conflicts = []
    if changed or removed:
        for key, paths in mgrs.sets.items():
            if key == me:
                continue
            hit = paths & changed
            if hit:
                label = manager_label(key, mgrs.meta.get(key, {}).get("apiVersion", ""))
                conflicts.extend((label, p) for p in hit)
    if conflicts and not force:
        conflicts.sort(key=lambda c: (c[0], c[1]))
        raise ApplyConflict(conflicts)
    if changed or removed:
        for key in list(mgrs.sets):
            if key == me:
                continue
            mgrs.sets[key] = mgrs.sets[key] - changed - removed
            if not mgrs.sets[key]:
                del mgrs.sets[key]
                mgrs.meta.pop(key, None)
    return added, removed, modified


def apply(live, cfg, schema, manager, subresource, api_version, force, ignored, now):
    """Server-side apply of cfg over live (live may be None).  Returns (new object, Managers).

    `ignored` is a tuple of top-level path prefixes the endpoint resets (status on the main
    resource of a CRD with a status subresource; spec and metadata on /status).
    Raises ApplyConflict without force when another manager owns a changed field.
    """
    mgrs = Managers(live.get("metadata", {}).get("managedFields") if live else None)
    me = (manager, "Apply", subresource)
    base = live if live is not None else {}
    # merge() builds new containers along the configuration's paths and shares the rest
    # with the live object and the configuration; callers only replace top-level and
    # metadata entries, and prune() copies before it removes anything.
    merged = merge(base, cfg, schema)
    cfg_set = set(members(cfg, schema, ignored).keys())
    last = mgrs.sets.get(me, set())
    mgrs.sets[me] = cfg_set
    mgrs.meta[me] = {"apiVersion": api_version, "time": (mgrs.meta.get(me) or {}).get("time")}
    if last:
        owned = set()
        for paths in mgrs.sets.values():
            owned |= paths
        merged = prune(merged, last, owned)
    old_m = members(base, schema, ignored)
    new_m = members(merged, schema, ignored)
    added, removed, modified = _take(mgrs, me, old_m, new_m, force)
    if added or removed or modified or not live:
        mgrs.meta[me]["time"] = now
    if not cfg_set:
        mgrs.sets.pop(me, None)
    return merged, mgrs


def update(live, new, schema, manager, subresource, api_version, ignored, now):
    """Ownership after a non-apply write (create, update, patch).  Returns Managers."""
    mgrs = Managers(live.get("metadata", {}).get("managedFields") if live else None)
    me = (manager, "Update", subresource)
    old_m = members(live, schema, ignored) if live else {}
    new_m = members(new, schema, ignored)
    added, removed, modified = _take(mgrs, me, old_m, new_m, True)
    mine = (mgrs.sets.get(me, set()) - removed) | added | modified
    if added or modified:
        mgrs.meta[me] = {"apiVersion": api_version, "time": now}
    if mine:
        mgrs.sets[me] = mine
        mgrs.meta.setdefault(me, {"apiVersion": api_version, "time": now})
    else:
        mgrs.sets.pop(me, None)
        mgrs.meta.pop(me, None)
    return mgrs


def _deepcopy(v):
    if isinstance(v, dict):
        return {k: _deepcopy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_deepcopy(x) for x in v]
    return v


deepcopy = _deepcopy
