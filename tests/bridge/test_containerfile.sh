#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The image Containerfile builds cannot miss a library, and runs as deploy/deployment.yaml
# expects.  No registry is reachable here, so instead of building the image this checks:
#   1. every shared object the built binary loads (ldd) belongs to a Debian package (dpkg -S)
#      that the runtime stage installs, or that comes with one of those (their Depends,
#      transitively), or that the bookworm-slim base has (Essential or Priority required);
#   2. the runtime stage's user, exposed ports, entrypoint and command match the Deployment's
#      securityContext, containerPorts, command and args; the build stage installs the binary
#      where the entrypoint looks for it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../.." && pwd)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "${GANGBRIDGE:-}" ] || fail "gangbridge binary not found at ${GANGBRIDGE:-}"
command -v dpkg-query >/dev/null || fail "dpkg-query not found (Debian only)"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# Shared objects -> owning packages.  /usr-merge: the path ldd prints, the resolved one, or
# that without /usr.
ldd "$GANGBRIDGE" | awk '/=> \// {print $3}' >"$WORK/libs"
[ -s "$WORK/libs" ] || fail "ldd found no shared objects"
: >"$WORK/owners"
# One dpkg -S for all of them (paths as ldd prints them and resolved), then match each.
mapfile -t libs <"$WORK/libs"
cands=()
for so in "${libs[@]}"; do real="$(readlink -f "$so")"; cands+=("$so" "$real" "${real#/usr}"); done
dpkg -S "${cands[@]}" 2>/dev/null | sed -E 's/^([^:,]+)(:[^:]+)?: /\1 /' >"$WORK/dpkg" || true
for so in "${libs[@]}"; do
  real="$(readlink -f "$so")"
  pkg="$(awk -v a="$so" -v b="$real" -v c="${real#/usr}" '$2 == a || $2 == b || $2 == c {print $1; exit}' "$WORK/dpkg")"
  [ -n "$pkg" ] || fail "$so: no Debian package owns it"
  echo "$so $pkg" >>"$WORK/owners"
done

python3 - "$SRC/Containerfile" "$SRC/deploy/deployment.yaml" "$WORK/owners" <<'PY'
import re, shlex, subprocess, sys
import json
import yaml

cf_path, dep_path, owners_path = sys.argv[1:4]
errors = []

# ---- the Containerfile's stages
text = re.sub(r"\\\n", " ", open(cf_path).read())
stages, cur = [], None
for line in text.splitlines():
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    word, _, rest = line.partition(" ")
    word = word.upper()
    if word == "FROM":
        cur = {"from": rest.split()[0], "run": [], "instr": {}}
        stages.append(cur)
    elif cur is not None:
        if word == "RUN":
            cur["run"].append(rest)
        else:
            cur["instr"][word] = rest.strip()
if len(stages) < 2:
    sys.exit("FAIL: Containerfile: want a build stage and a runtime stage, found %d" % len(stages))
build, runtime = stages[0], stages[-1]
if not runtime["from"].endswith("debian:bookworm-slim"):
    errors.append("runtime stage is FROM %s, want debian:bookworm-slim" % runtime["from"])


def apt_packages(stage):
    pkgs = set()
    for cmd in stage["run"]:
        for part in re.split(r"&&|;", cmd):
            w = shlex.split(part)
            if "apt-get" in w and "install" in w:
                pkgs.update(x for x in w[w.index("install") + 1:] if not x.startswith("-"))
    return pkgs


installed = apt_packages(runtime)
if not installed:
    errors.append("the runtime stage installs no package")
dev = sorted(p for p in installed if p.endswith("-dev") or p in ("build-essential", "cmake"))
if dev:
    errors.append("the runtime stage installs build-only packages: %s" % ", ".join(dev))

# ---- the installed packages' dependency graph (dpkg's, offline)
out = subprocess.run(["dpkg-query", "-W", "-f",
                      "${Package}\t${Status}\t${Essential}\t${Priority}\t${Provides}\t"
                      "${Pre-Depends}, ${Depends}\n"],
                     capture_output=True, text=True, check=True).stdout
deps, base, provider = {}, set(), {}
for line in out.splitlines():
    name, status, essential, priority, provides, depends = line.split("\t")
    if not status.endswith("installed"):
        continue
    if essential == "yes" or priority == "required":
        base.add(name)
    for p in provides.split(","):
        p = p.strip().split(" ")[0]
        if p:
            provider.setdefault(p, []).append(name)
    alts = []
    for clause in depends.split(","):
        names = [a.strip().split(" ")[0].split(":")[0] for a in clause.split("|")]
        names = [n for n in names if n]
        if names:
            alts.append(names)
    deps[name] = alts

# An ASan/UBSan build (scripts/test.sh --sanitize) links differently from the image's Release
# binary: it loads the sanitizer runtimes, and libatomic, which the linker's --as-needed drops
# from a normal build.  Its libraries say nothing about the image, so they are not checked;
# the normal build's run of this test checks them.
owners = [line.split() for line in open(owners_path)]
if any(re.match(r"lib(asan|ubsan|lsan|tsan)\d+$", pkg) for _, pkg in owners):
    print("sanitizer build: the library check is left to the normal build")
    owners = []
closure, todo = set(), list(installed)
while todo:
    p = todo.pop()
    if p in closure:
        continue
    if p not in deps and p in provider:
        todo.extend(provider[p])
        continue
    closure.add(p)
    for names in deps.get(p, []):
        # An alternative: whichever of them is installed here is what apt would pick.
        real = [n for n in names if n in deps] or [q for n in names for q in provider.get(n, [])]
        todo.extend(real[:1])

for so, pkg in owners:
    if pkg not in closure and pkg not in base:
        errors.append("%s (package %s) is neither installed by the runtime stage, nor a "
                      "dependency of what it installs, nor in the base image" % (so, pkg))

# ---- agreement with the Deployment
dep = next(d for d in yaml.safe_load_all(open(dep_path)) if d and d.get("kind") == "Deployment")
pod = dep["spec"]["template"]["spec"]
c = pod["containers"][0]
user = runtime["instr"].get("USER", "")
want_user = "%s:%s" % (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"])
if user != want_user:
    errors.append("USER %r, the Deployment runs as %s" % (user, want_user))
exposed = sorted(int(p.split("/")[0]) for p in runtime["instr"].get("EXPOSE", "").split())
ports = sorted(p["containerPort"] for p in c["ports"])
if exposed != ports:
    errors.append("EXPOSE %s, the Deployment's containerPorts are %s" % (exposed, ports))
entry = json.loads(runtime["instr"].get("ENTRYPOINT", "null"))
cmd = json.loads(runtime["instr"].get("CMD", "null"))
if entry != c["command"]:
    errors.append("ENTRYPOINT %s, the Deployment's command is %s" % (entry, c["command"]))
if cmd != c["args"]:
    errors.append("CMD %s, the Deployment's args are %s" % (cmd, c["args"]))
copy = runtime["instr"].get("COPY", "")
if not copy.endswith(" " + entry[0]):
    errors.append("the runtime stage does not COPY the binary to %s: %r" % (entry[0], copy))
build_run = " ".join(build["run"])
if "-DCMAKE_INSTALL_PREFIX=/usr/local" not in build_run or "cmake --install" not in build_run:
    errors.append("the build stage does not cmake --install into /usr/local")
if "-DBUILD_TESTING=OFF" not in build_run:
    errors.append("the build stage builds the tests")

if errors:
    for e in errors:
        print("FAIL: Containerfile: " + e, file=sys.stderr)
    sys.exit(1)
print("Containerfile: %d shared objects covered by %d runtime packages; user %s, ports %s"
      % (len(owners), len(installed), user, ports))
PY
