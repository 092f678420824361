#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates Kubernetes objects against the structural schemas of CRDs.

Usage: crdcheck.py --crds DIR [--crds DIR...] FILE...

Each FILE holds YAML or JSON: single objects, multi-document streams, or v1
Lists.  Every object whose apiVersion/kind a CRD defines is checked against
that version's openAPIV3Schema with the rules the API server applies to
what gangbridge emits: type, required, enum, minimum/maximum, minLength/
maxLength, pattern, maxItems/minItems, minProperties/maxProperties (the
unions of built-in kinds), additionalProperties,
x-kubernetes-int-or-string, anyOf of simple types, and unknown fields
(which the API server would prune, so emitting one is a bug).  Metadata is
checked for the name/namespace rules and the ownerReference shape.  Prints
one line per violation as "FILE: KIND NS/NAME: path: message" and exits 1
if there was any.  Objects of kinds no CRD defines are an error too, so a
typo in apiVersion cannot pass silently.

KAI's PodGroup (scheduling.run.ai) also gets the rules KAI's validating
webhook and scheduler apply that the schema cannot say
(docs/developer/designs/min-subgroups, subgroup_info/factory.go):
minMember and minSubGroup exclusive at every level, unique sub-group
names, every parent defined, a leaf with minMember, a minSubGroup only
where there are children and at most their number.
"""
import argparse
import glob
import json
import os
import re
import sys

import yaml

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def load_crds(dirs):
    schemas = {}
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "**", "*.yaml"), recursive=True)):
            with open(path) as f:
                for doc in yaml.safe_load_all(f):
                    if not doc or doc.get("kind") != "CustomResourceDefinition":
                        continue
                    spec = doc["spec"]
                    group, kind = spec["group"], spec["names"]["kind"]
                    for v in spec["versions"]:
                        schemas[(f"{group}/{v['name']}", kind)] = (
                            v["schema"]["openAPIV3Schema"], spec.get("scope", "Namespaced"))
    return schemas


def type_ok(value, t):
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    return True


def check(value, schema, path, errs):
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            errs.append(f"{path}: must be an integer or a string")
            return
    elif "anyOf" in schema and "type" not in schema:
        if not any(type_ok(value, alt.get("type")) for alt in schema["anyOf"]):
            errs.append(f"{path}: does not match any of {schema['anyOf']}")
            return
    t = schema.get("type")
    if t and not type_ok(value, t):
        errs.append(f"{path}: must be of type {t}, got {type(value).__name__}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in enum {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(f"{path}: {value} is below minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(f"{path}: {value} is above maximum {schema['maximum']}")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(f"{path}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append(f"{path}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append(f"{path}: more than {schema['maxItems']} items")
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append(f"{path}: fewer than {schema['minItems']} items")
        items = schema.get("items")
        if items:
            for i, item in enumerate(value):
                check(item, items, f"{path}[{i}]", errs)
    if isinstance(value, dict):
        # Unions of the built-in kinds ("exactly one of") are written as these.
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            errs.append(f"{path}: fewer than {schema['minProperties']} fields")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errs.append(f"{path}: more than {schema['maxProperties']} fields (a union)")
        props = schema.get("properties", {})
        for req in schema.get("required", []):
            if req not in value:
                errs.append(f"{path}.{req}: required")
        addl = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        for k, v in value.items():
            sub = f"{path}.{k}" if path else k
            if k in props:
                check(v, props[k], sub, errs)
            elif isinstance(addl, dict):
                check(v, addl, sub, errs)
            elif addl is True or preserve:
                continue
            elif props or addl is False:
                errs.append(f"{sub}: unknown field (the API server would drop it)")


def check_metadata(obj, scope, errs):
    md = obj.get("metadata")
    if not isinstance(md, dict):
        errs.append("metadata: required")
        return
    name = md.get("name")
    if not isinstance(name, str) or not name:
        errs.append("metadata.name: required")
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        errs.append(f"metadata.name: {name!r} is not a DNS-1123 subdomain")
    ns = md.get("namespace")
    if scope == "Namespaced":
        if not isinstance(ns, str) or not DNS1123_LABEL.match(ns) or len(ns) > 63:
            errs.append(f"metadata.namespace: {ns!r} is not a DNS-1123 label")
    for field in ("labels", "annotations"):
        m = md.get(field, {})
        if not isinstance(m, dict) or not all(isinstance(v, str) for v in m.values()):
            errs.append(f"metadata.{field}: values must be strings")
    for i, ref in enumerate(md.get("ownerReferences", []) or []):
        for req in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref.get(req), str) or not ref.get(req):
                errs.append(f"metadata.ownerReferences[{i}].{req}: required")
        for b in ("controller", "blockOwnerDeletion"):
            if b in ref and not isinstance(ref[b], bool):
                errs.append(f"metadata.ownerReferences[{i}].{b}: must be a boolean")


def check_kai(spec, errs):
    """KAI's own rules for a scheduling.run.ai PodGroup spec."""
    if not isinstance(spec, dict):
        return
    sgs = spec.get("subGroups") or []
    names = [sg.get("name") for sg in sgs if isinstance(sg, dict)]
    children = {}
    for sg in sgs:
        if isinstance(sg, dict):
            children.setdefault(sg.get("parent"), []).append(sg.get("name"))
    if "minMember" in spec and "minSubGroup" in spec:
        errs.append("spec: minMember and minSubGroup are mutually exclusive")
    if "minSubGroup" in spec and not (0 < spec["minSubGroup"] <= len(children.get(None, []))):
        errs.append(f"spec.minSubGroup: {spec['minSubGroup']} must be 1..{len(children.get(None, []))}"
                    " (the root's direct sub-groups)")
    for i, sg in enumerate(sgs):
        if not isinstance(sg, dict):
            continue
        p = f"spec.subGroups[{i}]"
        name = sg.get("name")
        if names.count(name) > 1:
            errs.append(f"{p}.name: {name!r} is not unique")
        if sg.get("parent") is not None and sg["parent"] not in names:
            errs.append(f"{p}.parent: {sg['parent']!r} names no sub-group")
        if "minMember" in sg and "minSubGroup" in sg:
            errs.append(f"{p}: minMember and minSubGroup are mutually exclusive")
        kids = children.get(name, [])
        if not kids and "minMember" not in sg:
            errs.append(f"{p}.minMember: required on a leaf sub-group (KAI refuses the PodGroup)")
        if "minSubGroup" in sg and not (0 < sg["minSubGroup"] <= len(kids)):
            errs.append(f"{p}.minSubGroup: {sg['minSubGroup']} must be 1..{len(kids)} (its children)")


def objects_in(path):
    with open(path) as f:
        text = f.read()
    docs = list(yaml.safe_load_all(text))
    for d in docs:
        if not d:
            continue
        if d.get("kind") == "List" and isinstance(d.get("items"), list):
            yield from d["items"]
        else:
            yield d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--crds", action="append", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    schemas = load_crds(args.crds)
    bad = 0
    checked = 0
    for path in args.files:
        for obj in objects_in(path):
            key = (obj.get("apiVersion"), obj.get("kind"))
            md = obj.get("metadata") or {}
            who = f"{key[1]} {md.get('namespace', '')}/{md.get('name', '')}"
            errs = []
            if key not in schemas:
                errs.append(f"no CRD defines {key[0]} {key[1]}")
            else:
                schema, scope = schemas[key]
                body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
                check(body, {k: v for k, v in schema.items() if k != "properties"} |
                      {"properties": {k: v for k, v in schema.get("properties", {}).items()
                                      if k not in ("apiVersion", "kind", "metadata")}},
                      "", errs)
                check_metadata(obj, scope, errs)
                if key[0].startswith("scheduling.run.ai/"):
                    check_kai(obj.get("spec"), errs)
            checked += 1
            for e in errs:
                print(f"{path}: {who}: {e}")
            bad += len(errs)
    print(f"crdcheck: {checked} objects checked, {bad} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
