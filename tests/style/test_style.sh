#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mechanical checks of docs/internals/conventions.md over gangcalc/, topology/ and bridge/, in
# the spirit of curl's checksrc.  Each violation is printed as file:line: message, and the test
# fails when there is any:
#   - banned functions (sprintf, strcpy, strcat, strtok, atoi, gets, system) are not called;
#   - every .c/.h starts with an SPDX line followed by a header comment saying what it is;
#   - gangcalc/ and topology/ stay pure: no json-c, curl, gRPC, protobuf-c, microhttpd or yaml
#     includes, and no printf/fprintf/exit( (library code never prints or exits);
#   - every symbol exported by libgangcalc.a, libtopology.a and libgbcore.a (nm --defined-only
#     -g on the libraries under $GB_BUILD) carries its directory's prefix (gc_, tp_, gb_).
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

def blank(text):
    """Comments and string/char literals replaced by spaces, newlines kept (lines stay put)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + (c if j - 1 > i else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)

BANNED = re.compile(r"(?<![\w.>])(sprintf|strcpy|strcat|strtok|atoi|gets|system)\s*\(")
PRINTS = re.compile(r"(?<![\w.>])(printf|fprintf|exit)\s*\(")
IMPURE = re.compile(r"^\s*#\s*include\s*[<\"]\s*(json-c/|json\.h|json_|curl/|grpc|protobuf-c|"
                    r"microhttpd|yaml\.h)")
SPDX = re.compile(r"^/\* SPDX-License-Identifier: \S+")

for d in ("gangcalc", "topology", "bridge"):
    root = os.path.join(src, d)
    for name in sorted(os.listdir(root)):
        if not name.endswith((".c", ".h")):
            continue
        rel = f"{d}/{name}"
        with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
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

for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY

# ---- exported symbols carry their directory's prefix --------------------------------------
for spec in gangcalc:libgangcalc.a:gc_ topology:libtopology.a:tp_ bridge:libgbcore.a:gb_; do
  IFS=: read -r dir lib prefix <<<"$spec"
  path="$BUILD/$dir/$lib"
  if [ ! -f "$path" ]; then
    echo "$path: library not built (set GB_BUILD to a configured build directory)"
    fail=1
    continue
  fi
  # Lines "file.o:" name the member; "addr TYPE name" are defined global symbols.  Symbols
  # the sanitizers add in an ASan/fuzz build (__odr_asan.*, __asan_*, __sancov_*) are not ours.
  offenders="$(nm --defined-only -g "$path" | awk -v p="$prefix" '
    /:$/ { obj = substr($0, 1, length($0) - 1); next }
    NF >= 3 && $3 ~ /^__(odr_asan|asan_|ubsan_|sancov|sanitizer_)/ { next }
    NF >= 3 && index($3, p) != 1 { src = obj; sub(/\.o$/, "", src); print src, $3, $2 }')"
  while read -r src sym type; do
    [ -n "$sym" ] || continue
    # Point at the first line of the source that declares or defines the symbol.
    line="$(grep -n -E "(^|[^[:alnum:]_])${sym}[[:space:]]*(\(|\[|=|;)" "$SRC/$dir/$src" 2>/dev/null \
      | head -n1 | cut -d: -f1 || true)"
    echo "$dir/$src:${line:-1}: exported symbol $sym (nm type $type) lacks the ${prefix} prefix" \
      "(make it static or rename it)"
    fail=1
  done <<<"$offenders"
done

if [ "$fail" -ne 0 ]; then
  echo "FAIL: style violations above (docs/internals/conventions.md)"
  exit 1
fi
echo "style: gangcalc/ topology/ bridge/ clean"
