#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the three places a user reads serve's configuration keys against the layers' key
tables, which `gangbridge serve --print-keys` prints (path, type, default, flag, layer):

1. docs/operating.md, "Every key": one row per key, no key the tables do not have, each with
   the table's flag and default (written as the table writes it, `""` for empty);
2. deploy/configmap.yaml's config.yaml: every key appears, no other; a value that is not the
   default (compared as `serve --print-config` prints both) carries `# default: X` on its line;
3. `gangbridge serve --help`: every key with its default.

It fails when a key is added to a table and not to the docs or the ConfigMap (issue 20: today
`webhook.denyOnPodGroupMismatch` and `placement.starvationGuardMax` are missing from the
ConfigMap), or documented with another default.
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

SRC = os.environ.get("GB_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.environ.get("GANGBRIDGE") or os.path.join(SRC, "build", "gangbridge")
errors = []


def err(msg):
    errors.append(msg)


def run(*args):
    p = subprocess.run([BIN, "serve"] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("gangbridge serve %s: status %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p.stdout


def shown(default):
    return default if default else '""'


# ---- the tables ----------------------------------------------------------------------------
keys = {}
for line in run("--print-keys").splitlines():
    path, typ, default, flag, layer = line.split("\t")
    if path in keys:
        err("--print-keys: %s twice" % path)
    keys[path] = {"type": typ, "default": default, "flag": flag, "layer": layer}
if len(keys) < 50:
    sys.exit("--print-keys printed %d keys: not the tables" % len(keys))

# ---- 1. docs/operating.md ------------------------------------------------------------------
doc = open(os.path.join(SRC, "docs", "operating.md"), encoding="utf-8").read()
start = doc.find("### Every key")
end = doc.find("\n### ", start + 1)
if start < 0 or end < 0:
    sys.exit("docs/operating.md: no \"### Every key\" section")
rows = {}
for no, line in enumerate(doc[start:end].splitlines()):
    if not line.startswith("| `"):
        continue
    cols = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cols) < 4:
        err("operating.md: Every key: row %r has %d columns" % (line[:60], len(cols)))
        continue
    names = re.findall(r"`([^`]+)`", cols[0])
    if len(names) != 1:
        err("operating.md: Every key: one key per row, not %s" % names)
        continue
    rows[names[0]] = cols
for path, k in keys.items():
    cols = rows.get(path)
    if not cols:
        err("operating.md: Every key: %s (bridge/%s/) is missing" % (path, k["layer"]))
        continue
    flags = re.findall(r"`--([^`]+)`", cols[1])
    if flags != ([k["flag"]] if k["flag"] else []):
        err("operating.md: %s: flag %s, the table says %r" % (path, cols[1] or "none", k["flag"]))
    defaults = re.findall(r"`([^`]*)`", cols[2])
    if defaults != [shown(k["default"])]:
        err("operating.md: %s: default %s, the table says `%s`" % (path, cols[2], shown(k["default"])))
for path in rows:
    if path not in keys:
        err("operating.md: Every key: %s is not a key of any table" % path)

# ---- 2. deploy/configmap.yaml --------------------------------------------------------------
cms = [d for d in yaml.safe_load_all(open(os.path.join(SRC, "deploy", "configmap.yaml")))
       if d and d.get("kind") == "ConfigMap"]
text = cms[0]["data"]["config.yaml"] if cms else ""
if not text:
    sys.exit("deploy/configmap.yaml: no ConfigMap with data.config.yaml")
lines = text.splitlines()


def flat_nodes(node, prefix=""):
    """(path, value node) of every leaf of a composed YAML mapping."""
    for knode, vnode in node.value:
        path = prefix + knode.value
        if isinstance(vnode, yaml.MappingNode):
            yield from flat_nodes(vnode, path + ".")
        else:
            yield path, knode


given = dict(flat_nodes(yaml.compose(text)))
for path in keys:
    if path not in given:
        err("deploy/configmap.yaml: config.yaml lacks %s (bridge/%s/, default %s)"
            % (path, keys[path]["layer"], shown(keys[path]["default"])))
for path in given:
    if path not in keys:
        err("deploy/configmap.yaml: config.yaml sets %s, which no table has" % path)


def flat(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flat(v, prefix + k + ".")
        else:
            yield prefix + k, v


with tempfile.TemporaryDirectory() as tmp:
    cfg_path = os.path.join(tmp, "config.yaml")
    open(cfg_path, "w").write(text)
    effective = dict(flat(yaml.safe_load(run("--config", cfg_path, "--print-config"))))
defaults = dict(flat(yaml.safe_load(run("--print-config"))))
for path, knode in given.items():
    if path not in keys or effective.get(path) == defaults.get(path):
        continue
    line = lines[knode.start_mark.line]
    want = "# default: %s" % shown(keys[path]["default"])
    if not line.rstrip().endswith(want):
        err("deploy/configmap.yaml: config.yaml line %d: %s is not the default: end the line "
            "with '%s'" % (knode.start_mark.line + 1, path, want))

# ---- 3. serve --help -----------------------------------------------------------------------
help_text = run("--help")
for path, k in keys.items():
    if not re.search(r"^  %s  .*, default %s(,|$)" % (re.escape(path), re.escape(shown(k["default"]))),
                     help_text, re.M):
        err("serve --help: no line for %s with default %s" % (path, shown(k["default"])))

if errors:
    print("\n".join("FAIL: " + e for e in errors))
    sys.exit(1)
print("%d keys in %d layers: docs/operating.md, deploy/configmap.yaml and serve --help agree "
      "(%d ConfigMap values differ from the default, each marked)"
      % (len(keys), len({k["layer"] for k in keys.values()}),
         sum(1 for p in given if p in keys and effective.get(p) != defaults.get(p))))
