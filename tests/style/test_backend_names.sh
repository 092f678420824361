#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A scheduler backend is one concept (docs/internals/backend.md): its API group, kinds and the
# keys its pods and group objects carry are named only in its own file,
# gangcalc/gc_backend_<name>.c.  This check fails when any of them appears anywhere else in
# product code (bridge/, gangcalc/, topology/: code and comments; tests and docs may name
# them).  The names checked are read from the backend files themselves: every `.group` and
# legacy group, and every string literal that is a qualified key (a DNS name, or a DNS prefix
# and a "/name": labels, annotations, apiVersions).  The groups of the backends that existed
# when this check was written are checked even without their files, so that the check also
# fails on a tree that has no descriptors at all.  A group matches as a whole DNS name (also
# inside a CRD name such as podgroups.<group>, or before "/<version>"); a key matches as
# written.  proto/ is not
# searched: calculator.proto's Backend enum documents the wire values (one per backend, the
# descriptor's `proto`).
# Usage: tests/style/test_backend_names.sh [ROOT [NAMES_ROOT]]
#   ROOT: the tree searched (default: this checkout); NAMES_ROOT: the tree whose backend files
#   give the names (default: ROOT), e.g. to search an older tree for today's names.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="${1:-${GB_SRC:-$(cd "$HERE/../.." && pwd)}}"
NAMES_ROOT="${2:-$ROOT}"

python3 - "$ROOT" "$NAMES_ROOT" <<'PY'
import os, re, sys

root, names_root = sys.argv[1], sys.argv[2]
SEED = {"scheduling.volcano.sh", "scheduling.x-k8s.io", "scheduling.sigs.k8s.io"}
QUALIFIED = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+"
                       r"(/[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?$")
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')

def backend_files(root):
    d = os.path.join(root, "gangcalc")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join("gangcalc", f) for f in os.listdir(d)
                  if re.fullmatch(r"gc_backend_[a-z0-9_]+\.[ch]", f))

# name -> the backend file(s) allowed to hold it ("" for the seed: no file may).
owner = {g: set() for g in SEED}
groups = set(SEED)
for rel in backend_files(names_root):
    text = open(os.path.join(names_root, rel), encoding="utf-8", errors="replace").read()
    for m in re.finditer(r'\.(group|legacy_groups)\s*=\s*\{?\s*((?:"[^"]*"\s*,?\s*)+)', text):
        for g in re.findall(r'"([^"]+)"', m.group(2)):
            groups.add(g)
    for lit in STRING.findall(text):
        if QUALIFIED.match(lit) and ("/" in lit or lit in groups or lit.count(".") >= 2):
            owner.setdefault(lit, set()).add(rel)
    for g in groups:
        if g in text:
            owner.setdefault(g, set()).add(rel)

# A group matches alone, as "<group>/<version>" or inside "<resource>.<group>"; "<group>/<name>"
# with a name that is no version is a key under the group's DNS prefix (Volcano's
# scheduling.k8s.io/group-name is not the upstream scheduling.k8s.io API), checked as a key.
VERSION = r"v[0-9]+(?:(?:alpha|beta)[0-9]+)?(?![A-Za-z0-9-])"

def pattern(name):
    if name in groups:
        return re.compile(r"(?<![A-Za-z0-9-])" + re.escape(name) + r"(?![A-Za-z0-9-])(?!/(?!" +
                          VERSION + r"))")
    return re.compile(r"(?<![A-Za-z0-9.-])" + re.escape(name) + r"(?![A-Za-z0-9._-])")

checks = [(n, pattern(n)) for n in sorted(owner)]
bad = []
for top in ("bridge", "gangcalc", "topology"):
    for d, dirs, files in os.walk(os.path.join(root, top)):
        dirs.sort()
        for f in sorted(files):
            if not (f.endswith((".c", ".h", ".in")) or f == "CMakeLists.txt"):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)
            lines = open(os.path.join(d, f), encoding="utf-8", errors="replace").read().split("\n")
            for name, rx in checks:
                if rel in owner[name]:
                    continue
                for i, line in enumerate(lines, 1):
                    if rx.search(line):
                        bad.append("%s:%d: names %s, which belongs in %s" % (
                            rel, i, name, " or ".join(sorted(owner[name])) or
                            "its backend's gangcalc/gc_backend_<name>.c"))
for b in bad:
    print(b)
if bad:
    print("FAIL: %d place(s) name a scheduler backend's group or keys outside its backend file "
          "(docs/internals/backend.md)" % len(bad))
    sys.exit(1)
print("backend names: %d names of %d backend file(s) checked; none outside them"
      % (len(checks), len(backend_files(names_root))))
PY
