#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the files that hold a scheduler backend's own knowledge: what adding
a backend (or changing one) has to touch.  Issue 20 measures it before and
after the backend descriptor (gangcalc/gc_backend*.c).

Knowledge is: the backends' API groups (scheduling.volcano.sh,
scheduling.x-k8s.io and the old scheduling.sigs.k8s.io), the keys a pod joins
a group by (scheduling.k8s.io/group-name, scheduling.x-k8s.io/pod-group,
pod-group.scheduling.sigs.k8s.io), Volcano's own keys (volcano.sh/...,
sla-waiting-time, queue-name), the group objects' backend fields
(scheduleTimeoutSeconds), backend enum values and macros
(any upper-case identifier containing VOLCANO or COSCHED, include guards
aside), `volcano`/`cosched...` identifiers (is_volcano, int volcano) and the
backend names as string literals ("volcano", "coscheduling").  HyperNodes
(topology.volcano.sh) are Volcano's topology API, which gangbridge's
placement reads whatever the backend: not counted.

Product code (bridge/, gangcalc/, topology/, proto/) is searched with
comments removed; tests/ and docs (docs/, README.md, deploy/) as they are.

Usage: scripts/backend-files.py [--root DIR] [--all]
  prints one line per product file ("folder/file  hits"), then the counts;
  --all also lists the test and doc files.
"""
import os
import re
import sys

GROUPS = [r"scheduling\.volcano\.sh", r"scheduling\.x-k8s\.io", r"scheduling\.sigs\.k8s\.io"]
KEYS = [r"scheduling\.k8s\.io/group-name", r"pod-group\.scheduling", r"(?<![\w.])volcano\.sh/",
        r"sla-waiting-time", r"queue-name", r"scheduleTimeoutSeconds"]
ENUMS = [r"\b[A-Z0-9_]*(?:VOLCANO|COSCHED)[A-Z0-9_]*\b"]
IDENTS = [r"\bis_volcano\b", r"\bvolcano\b", r"\bcosched\w*\b"]  # outside strings
NAMES = [r'"(?:volcano|coscheduling|cosched\.)"']

KNOWLEDGE = re.compile("|".join(GROUPS + KEYS))
ENUM_RE = re.compile("|".join(ENUMS))
IDENT_RE = re.compile("|".join(IDENTS))
NAME_RE = re.compile("|".join(NAMES))
GUARD_RE = re.compile(r"_H$")

PRODUCT = ["bridge", "gangcalc", "topology", "proto"]
TESTS = ["tests"]
DOCS = ["docs", "README.md", "deploy"]
SKIP_DIRS = {"build", "build-asan", "build-fuzz", ".git", "corpus", "__pycache__"}
CODE_EXT = (".c", ".h", ".proto", ".in")
TEXT_EXT = CODE_EXT + (".py", ".sh", ".md", ".yaml", ".yml", ".json", ".txt", ".cmake", ".golden",
                       ".out", ".html", ".tsv", ".csv")


def strip_comments(text, proto):
    """Removes /* */ and // comments, keeping string and char literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def hits_in_code(text, proto=False):
    code = strip_comments(text, proto)
    nostr = STRING_RE.sub('""', code)
    n = len(KNOWLEDGE.findall(code)) + len(NAME_RE.findall(code))
    n += sum(1 for m in ENUM_RE.finditer(nostr) if not GUARD_RE.search(m.group(0)))
    n += len(IDENT_RE.findall(nostr))
    return n


def hits_in_text(text):
    return len(KNOWLEDGE.findall(text)) + len(ENUM_RE.findall(text)) + \
        len(re.findall(r"\bis_volcano\b", text))


def walk(root, tops):
    for top in tops:
        p = os.path.join(root, top)
        if os.path.isfile(p):
            yield top
            continue
        for d, dirs, files in os.walk(p):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
            for f in sorted(files):
                yield os.path.relpath(os.path.join(d, f), root)


def scan(root, tops, code):
    found = []
    for rel in walk(root, tops):
        if not rel.endswith(TEXT_EXT) and os.path.basename(rel) != "CMakeLists.txt":
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if code and rel.endswith(CODE_EXT):
            n = hits_in_code(text, rel.endswith(".proto"))
        elif code:
            n = len(KNOWLEDGE.findall(strip_comments(text, False))) if rel.endswith(".txt") else 0
        else:
            n = hits_in_text(text)
        if n:
            found.append((rel, n))
    return found


def main(argv):
    root = "."
    show_all = False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--all":
            show_all = True
        else:
            print(__doc__, file=sys.stderr)
            return 2
    product = scan(root, PRODUCT, True)
    tests = scan(root, TESTS, False)
    docs = scan(root, DOCS, False)
    for rel, n in product:
        print(f"{rel}  {n}")
    if show_all:
        for rel, n in tests + docs:
            print(f"{rel}  {n}")
    folders = sorted({os.path.dirname(r) for r, _ in product})
    print(f"product files: {len(product)} in {len(folders)} folders ({', '.join(folders)})")
    print(f"test files: {len(tests)}; doc files: {len(docs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
