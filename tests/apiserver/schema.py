# SPDX-License-Identifier: Apache-2.0
"""Structural-schema validation and pruning of custom resources, and metadata checks.

This module owns what the stand-in API server checks before it stores an object: the
CRD openAPIV3Schema (types, required, enum, numeric and length bounds, patterns, item
counts, nullable, int-or-string, preserve-unknown-fields, embedded resources) and the
ObjectMeta rules every object follows (name format, labels, annotation size, owner
references).  Errors are (field, type, body) triples formatted like apimachinery's
field.Error; unknown fields are collected so the caller can prune, warn or reject them
as fieldValidation asks.  CEL rules (x-kubernetes-validations) are not evaluated.
"""

import json
import re

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
                   "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                   "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                   "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
QUALIFIED_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                 "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                 "or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")

TOTAL_ANNOTATION_LIMIT = 256 * 1024


def fmt_value(v):
    """A value as Go's %#v/%q shows it in 'Invalid value: X' messages."""
    if isinstance(v, str):
        return json.dumps(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return json.dumps(v, separators=(",", ":"))[:256]


class FieldError:
    def __init__(self, field, etype, body):
        self.field = field
        self.type = etype
        self.body = body

    def text(self):
        return "%s: %s" % (self.field, self.body) if self.field else self.body

    def cause(self):
        return {"reason": self.type, "message": self.body, "field": self.field}


def required(field, detail=""):
    return FieldError(field, "FieldValueRequired",
                      "Required value" + (": " + detail if detail else ""))


def invalid(field, value, detail):
    return FieldError(field, "FieldValueInvalid",
                      "Invalid value: %s: %s" % (fmt_value(value), detail))


def too_long(field, limit):
    return FieldError(field, "FieldValueTooLong", "Too long: must have at most %d bytes" % limit)


def _type_name(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _type_ok(t, v):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "boolean":
        return isinstance(v, bool)
    return True


_pattern_cache = {}


def _pattern(p):
    r = _pattern_cache.get(p)
    if r is None:
        try:
            r = re.compile(p)
        except re.error:
            r = False
        _pattern_cache[p] = r
    return r


def validate(v, s, path, errs, unknown, defaults=True):
    """Validate v against schema node s; returns v with unknown fields pruned.

    path is the dotted field path ("spec.trainer"); errs gets FieldErrors; unknown gets the
    dotted paths of fields the schema does not declare (they are dropped from the result).
    With defaults, absent properties that declare a `default` get it first (structural
    defaulting happens after pruning and before validation, as in the real server).
    """
    if s is None:
        return v
    if v is None:
        if s.get("nullable"):
            return v
        t = s.get("type")
        if t:
            errs.append(FieldError(path, "FieldValueTypeInvalid",
                                   'Invalid value: "null": %s in body must be of type %s: "null"'
                                   % (path, t)))
        return v
    if s.get("x-kubernetes-int-or-string"):
        if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
            errs.append(FieldError(path, "FieldValueTypeInvalid",
                                   'Invalid value: "%s": %s in body must be of type '
                                   'integer,string: "%s"' % (_type_name(v), path, _type_name(v))))
        return v
    t = s.get("type")
    if t and not _type_ok(t, v):
        errs.append(FieldError(path, "FieldValueTypeInvalid",
                               'Invalid value: "%s": %s in body must be of type %s: "%s"'
                               % (_type_name(v), path, t, _type_name(v))))
        return v
    if "enum" in s and v not in s["enum"]:
        errs.append(FieldError(path, "FieldValueNotSupported",
                               "Unsupported value: %s: supported values: %s"
                               % (fmt_value(v), ", ".join(fmt_value(e) for e in s["enum"]))))
    if isinstance(v, str):
        if "maxLength" in s and len(v) > s["maxLength"]:
            errs.append(FieldError(path, "FieldValueTooLong",
                                   "Too long: may not be more than %d bytes" % s["maxLength"]))
        if "minLength" in s and len(v) < s["minLength"]:
            errs.append(invalid(path, v, "%s in body should be at least %d chars long"
                                % (path, s["minLength"])))
        if "pattern" in s:
            r = _pattern(s["pattern"])
            if r and not r.search(v):
                errs.append(invalid(path, v, "%s in body should match '%s'" % (path, s["pattern"])))
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        if "minimum" in s:
            excl = s.get("exclusiveMinimum") is True
            if v < s["minimum"] or (excl and v == s["minimum"]):
                errs.append(invalid(path, v, "%s in body should be greater than %s%s" % (
                    path, "" if excl else "or equal to ", fmt_value(s["minimum"]))))
        if "maximum" in s:
            excl = s.get("exclusiveMaximum") is True
            if v > s["maximum"] or (excl and v == s["maximum"]):
                errs.append(invalid(path, v, "%s in body should be less than %s%s" % (
                    path, "" if excl else "or equal to ", fmt_value(s["maximum"]))))
    elif isinstance(v, list):
        if "maxItems" in s and len(v) > s["maxItems"]:
            errs.append(FieldError(path, "FieldValueTooMany", "Too many: %d: must have at most "
                                   "%d items" % (len(v), s["maxItems"])))
        if "minItems" in s and len(v) < s["minItems"]:
            errs.append(invalid(path, len(v), "%s in body should have at least %d items"
                                % (path, s["minItems"])))
        its = s.get("items")
        if isinstance(its, dict):
            v = [validate(x, its, "%s[%d]" % (path, i), errs, unknown, defaults)
                 for i, x in enumerate(v)]
        lt = s.get("x-kubernetes-list-type")
        if lt == "map":
            keys = s.get("x-kubernetes-list-map-keys") or []
            seen = set()
            for i, x in enumerate(v):
                if isinstance(x, dict):
                    k = json.dumps([x.get(k) for k in keys])
                    if k in seen:
                        dup = json.dumps({k: x.get(k) for k in keys}, separators=(",", ":"))
                        errs.append(FieldError("%s[%d]" % (path, i), "FieldValueDuplicate",
                                               "Duplicate value: %s" % dup))
                    seen.add(k)
        elif lt == "set":
            seen = set()
            for i, x in enumerate(v):
                k = json.dumps(x, sort_keys=True)
                if k in seen:
                    errs.append(FieldError("%s[%d]" % (path, i), "FieldValueDuplicate",
                                           "Duplicate value: %s" % fmt_value(x)))
                seen.add(k)
    elif isinstance(v, dict):
        props = s.get("properties")
        ap = s.get("additionalProperties")
        preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = s.get("x-kubernetes-embedded-resource") is True
        out = {}
        if defaults and props:
            v = dict(v)
            for k, ps in props.items():
                if k not in v and isinstance(ps, dict) and "default" in ps:
                    v[k] = json.loads(json.dumps(ps["default"]))
        for k, x in v.items():
            cp = "%s.%s" % (path, k) if path else k
            if props and k in props:
                out[k] = validate(x, props[k], cp, errs, unknown, defaults)
            elif isinstance(ap, dict):
                out[k] = validate(x, ap, cp, errs, unknown, defaults)
            elif ap is True or preserve or (embedded and k in ("apiVersion", "kind", "metadata")):
                out[k] = x
            else:
                unknown.append(cp)
        for r in s.get("required") or ():
            if r not in v:
                errs.append(required("%s.%s" % (path, r) if path else r))
        if "minProperties" in s and len(v) < s["minProperties"]:
            errs.append(FieldError(path, "FieldValueRequired", "Required value: must have at "
                                   "least %d items" % s["minProperties"]))
        if "maxProperties" in s and len(v) > s["maxProperties"]:
            errs.append(FieldError(path, "FieldValueTooMany", "Too many: %d: must have at most "
                                   "%d items" % (len(v), s["maxProperties"])))
        v = out
    return v


def validate_object(obj, crd_schema, errs, unknown, defaults=True):
    """Validate a custom resource's non-metadata fields; returns the pruned, defaulted object."""
    if crd_schema is None:
        return obj
    props = crd_schema.get("properties") or {}
    out = {}
    for k, x in obj.items():
        if k in ("apiVersion", "kind", "metadata"):
            out[k] = x
        elif k in props:
            out[k] = validate(x, props[k], k, errs, unknown, defaults)
        elif crd_schema.get("x-kubernetes-preserve-unknown-fields") is True:
            out[k] = x
        else:
            unknown.append(k)
    for r in crd_schema.get("required") or ():
        if r not in obj and r not in ("apiVersion", "kind", "metadata"):
            errs.append(required(r))
    return out


def _qualified_key(field, key, errs):
    if "/" in key:
        prefix, name = key.split("/", 1)
        if not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix):
            errs.append(invalid(field, key, "prefix part " + SUBDOMAIN_MSG))
            return
    else:
        name = key
    if not name:
        errs.append(invalid(field, key, "name part must be non-empty"))
    elif len(name) > 63:
        errs.append(invalid(field, key, "name part must be no more than 63 characters"))
    elif not QUALIFIED_MSG or not QUALIFIED_NAME.match(name):
        errs.append(invalid(field, key, QUALIFIED_MSG))


def validate_meta(meta, namespaced, name_is_label, errs):
    """ObjectMeta rules every object follows."""
    if not isinstance(meta, dict):
        errs.append(FieldError("metadata", "FieldValueTypeInvalid",
                               "Invalid value: must be an object"))
        return
    name = meta.get("name")
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    elif not isinstance(name, str):
        errs.append(invalid("metadata.name", name, "must be a string"))
    elif name_is_label:
        if len(name) > 63 or not DNS1123_LABEL.match(name):
            errs.append(invalid("metadata.name", name, LABEL_MSG))
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        errs.append(invalid("metadata.name", name, SUBDOMAIN_MSG))
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, dict):
            errs.append(invalid("metadata.labels", labels, "must be a map of strings"))
        else:
            for k, v in labels.items():
                _qualified_key("metadata.labels", k, errs)
                if not isinstance(v, str):
                    errs.append(invalid("metadata.labels", v, "must be a string"))
                elif len(v) > 63:
                    errs.append(invalid("metadata.labels", v, "must be no more than 63 characters"))
                elif not LABEL_VALUE.match(v):
                    errs.append(invalid("metadata.labels", v, LABEL_VALUE_MSG))
    ann = meta.get("annotations")
    if ann is not None:
        if not isinstance(ann, dict):
            errs.append(invalid("metadata.annotations", ann, "must be a map of strings"))
        else:
            total = 0
            for k, v in ann.items():
                _qualified_key("metadata.annotations", k, errs)
                if not isinstance(v, str):
                    errs.append(invalid("metadata.annotations", v, "must be a string"))
                    continue
                total += len(k.encode()) + len(v.encode())
            if total > TOTAL_ANNOTATION_LIMIT:
                errs.append(too_long("metadata.annotations", TOTAL_ANNOTATION_LIMIT))
    refs = meta.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            errs.append(invalid("metadata.ownerReferences", refs, "must be a list"))
        else:
            controllers = 0
            for i, r in enumerate(refs):
                f = "metadata.ownerReferences[%d]" % i
                if not isinstance(r, dict):
                    errs.append(invalid(f, r, "must be an object"))
                    continue
                for k in ("apiVersion", "kind", "name", "uid"):
                    if not r.get(k):
                        errs.append(required("%s.%s" % (f, k) if k != "uid" else "%s.uid" % f,
                                             "" if k != "uid" else "uid must not be empty"))
                if r.get("controller") is True:
                    controllers += 1
            if controllers > 1:
                errs.append(invalid("metadata.ownerReferences", refs,
                                    "Only one reference can have Controller set to true"))
    fins = meta.get("finalizers")
    if fins is not None and not isinstance(fins, list):
        errs.append(invalid("metadata.finalizers", fins, "must be a list"))
