#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mechanical checks of docs/internals/conventions.md over gangcalc/, topology/ and bridge/, in
# the spirit of curl's checksrc.  Each violation is printed as file:line: message, and the test
# fails when there is any:
#   - banned functions (sprintf, strcpy, strcat, strtok, atoi, gets, system) are not called;
#   - every .c/.h starts with an SPDX line followed by a header comment saying what it is;
#   - gangcalc/ and topology/ stay pure: no json-c, curl, gRPC, protobuf-c, microhttpd or yaml
#     includes, and no printf/fprintf/exit( (library code never prints or exits);
#   - every symbol exported by libgangcalc.a, libtopology.a and each bridge/ layer's library
#     (every bridge/*/CMakeLists.txt's gb_layer(...), so a new layer is covered; nm on the
#     libraries under $GB_BUILD) carries its directory's prefix (gc_, tp_, gb_) and its module's
#     prefix (tests/style/exports.py says how a module is found);
#   - no function body is longer than 120 lines, except the offenders listed (with their
#     length when the budget was set) in tests/style/function-length-allowlist.txt, which may
#     only shrink: a listed function that grows fails, and so does any new long one.
#     GB_STYLE_PRINT_LENGTHS=1 prints every function over the limit as "file:function lines".
# Comments and string literals are blanked before the call checks, so prose may name them.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../.." && pwd)}"
BUILD="${GB_BUILD:-$SRC/build}"

fail=0

# ---- source checks (python3 standard library) -------------------------------------------
python3 - "$SRC" <<'PY' || fail=1
import os, re, sys

src = sys.argv[1]
bad = []

# One comment/literal blanker for both checks: exports.py owns it.
sys.path.insert(0, os.path.join(src, "tests", "style"))
from exports import blank  # noqa: E402

BANNED = re.compile(r"(?<![\w.>])(sprintf|strcpy|strcat|strtok|atoi|gets|system)\s*\(")
PRINTS = re.compile(r"(?<![\w.>])(printf|fprintf|exit)\s*\(")
IMPURE = re.compile(r"^\s*#\s*include\s*[<\"]\s*(json-c/|json\.h|json_|curl/|grpc|protobuf-c|"
                    r"microhttpd|yaml\.h)")
SPDX = re.compile(r"^/\* SPDX-License-Identifier: \S+")

def sources(exts):
    """(rel, path) of every source under the checked folders, bridge/'s layers included."""
    for d in ("gangcalc", "topology", "bridge"):
        for root, dirs, names in sorted(os.walk(os.path.join(src, d))):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(exts):
                    path = os.path.join(root, name)
                    yield os.path.relpath(path, src), path

for rel, path in sources((".c", ".h")):
        d = rel.split("/")[0]
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.split("\n")
        # Header: SPDX on line 1, then the same comment goes on to say what the file is.
        if not SPDX.match(lines[0]):
            bad.append(f"{rel}:1: first line is not '/* SPDX-License-Identifier: ...'")
        else:
            end = text.find("*/")
            body = text[len(lines[0]):end if end >= 0 else len(text)]
            words = re.sub(r"[\s*]+", " ", body).strip()
            if end < 0 or len(words) < 10:
                bad.append(f"{rel}:2: the SPDX line is not followed by a header comment "
                           "saying what the module is")
        code = blank(text).split("\n")
        pure = d in ("gangcalc", "topology")
        for no, (raw, ln) in enumerate(zip(lines, code), 1):
            for m in BANNED.finditer(ln):
                bad.append(f"{rel}:{no}: banned function {m.group(1)}()")
            if pure:
                for m in PRINTS.finditer(ln):
                    bad.append(f"{rel}:{no}: library code calls {m.group(1)}() "
                               "(it never prints or exits)")
                if IMPURE.match(raw):
                    bad.append(f"{rel}:{no}: library code includes an I/O dependency: "
                               f"{raw.strip()}")

# ---- function length: at most 120 lines, except the listed offenders, which may only shrink
LIMIT = 120
allow_path = os.path.join(src, "tests", "style", "function-length-allowlist.txt")
allow = {}
with open(allow_path, encoding="utf-8") as f:
    for no, line in enumerate(f, 1):
        line = line.split("#", 1)[0].strip()
        if line:
            where, lines = line.split()
            allow[where] = int(lines)
DEF_NAME = re.compile(r"(\w+)\s*\(")
seen = {}
for rel, path in sources((".c",)):
        with open(path, encoding="utf-8", errors="replace") as f:
            code = blank(f.read())
        # A function body is a `{` at depth 0 right after a `)`; its name is the first
        # identifier followed by `(` since the previous top-level `;`, `}` or directive.
        depth, start, fname, head = 0, 0, None, 0
        lines = code.split("\n")
        for no, ln in enumerate(lines, 1):
            if depth == 0 and ln.lstrip().startswith("#"):
                head = no
                continue
            for i, ch in enumerate(ln):
                if ch == "{":
                    if depth == 0:
                        before = "\n".join(lines[head:no - 1] + [ln[:i]]).rstrip()
                        m = DEF_NAME.search(before) if before.endswith(")") else None
                        fname, start = (m.group(1), no) if m else (None, no)
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        if fname:
                            seen[f"{rel}:{fname}"] = (no - start + 1, start)
                        fname, head = None, no
                elif ch == ";" and depth == 0:
                    head = no
for where, (n, line) in sorted(seen.items()):
    rel, fname = where.split(":")
    if where in allow:
        if n > allow[where]:
            bad.append(f"{rel}:{line}: {fname}() has {n} lines, more than the {allow[where]} "
                       f"it is allowed in {os.path.basename(allow_path)} (it may only shrink)")
        elif n < allow[where]:
            print(f"note: {rel}:{line}: {fname}() shrank to {n} lines: lower its entry in "
                  f"{os.path.basename(allow_path)}" + (" (or remove it)" if n <= LIMIT else ""))
    elif n > LIMIT:
        bad.append(f"{rel}:{line}: {fname}() has {n} lines (at most {LIMIT}; split it)")
for where in sorted(set(allow) - set(seen)):
    print(f"note: {where}: listed in {os.path.basename(allow_path)} but gone: remove the entry")
if os.environ.get("GB_STYLE_PRINT_LENGTHS"):
    for where, (n, line) in sorted(seen.items(), key=lambda x: -x[1][0]):
        if n > LIMIT:
            print(f"{where} {n}")

for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

# ---- exported symbols carry their module's prefix (tests/style/exports.py) ----------------
python3 "$HERE/exports.py" "$SRC" "$BUILD" || fail=1

if [ "$fail" -ne 0 ]; then
  echo "FAIL: style violations above (docs/internals/conventions.md)"
  exit 1
fi
echo "style: gangcalc/ topology/ bridge/ clean"
