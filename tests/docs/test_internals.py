#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/internals/ names only what exists; README's layout table lists every folder.

The internals pages are read as instructions ("gb_placer_run_once() takes the pass lock"), so a
name that no longer exists sends the reader into a wall.  This test reads every page of
docs/internals/ and fails, printing `page:line: message` for each problem, when

  - a call `name()` names no identifier of the tree's code (C with comments and strings
    blanked, so a name left only in a comment does not count; Python, shell and CMake as
    text), unless it is one of EXTERNAL's names of other projects;
  - an identifier with the project's prefixes (gb_, gc_, tp_) names nothing: no identifier in
    the code and no module (file stem); one ending in `_` (`gb_cmd_*.c`) must start one;
  - a file path (`x.c`, `bridge/model/gb_plan.h`, `model/gb_plan.c`, `tests/**/test_*.c`,
    `gb_leader.[ch]`, `../placement.md`, `deploy/configmap.yaml`) matches no file: a path with
    a folder is tried from the repository root, the page's folder, bridge/ and tests/; a bare
    file name anywhere in the tree; globs must match at least one file;

and when README.md's "Layout" table does not list every top-level folder, every bridge/
layer (a folder with a CMakeLists.txt) and every tests/ folder, each as `path/` in the first
column, or lists a folder, or links a file, that does not exist.

A pending note, a block quote whose first line starts with `> **After <branch>`, describes a
sibling branch's structure before it lands on main: its names are not checked (they may not
exist yet); the test prints where each one is so it is easy to fold in once the branch lands.
Paragraphs of the main text that such a branch changes carry `[<branch>]`: when one of their
names disappears, the message points at the note that replaces it.
"""

import fnmatch
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("GB_SRC") or os.path.abspath(os.path.join(HERE, "..", ".."))

# Calls written as `name()` that belong to other projects (libc, libraries, Go, client-go).
# Each names where it comes from; anything else must exist in this tree.
EXTERNAL = {
    "tryAcquireOrRenew": "client-go leaderelection",
    "String": "apimachinery's Quantity.String (quantity.md)",
    "prefix_noun_verb": "the naming pattern itself (conventions.md)",
}

# Paths that are not files of this tree, by prefix, and why.
OUTSIDE = {
    "../shared/reference/": "the team's reference notes beside the repository",
    "x.yaml": "a file name in an example error message (loader.md)",
}

SKIP_DIRS = {".git", "__pycache__", "node_modules"}
CODE_DIRS = ("gangcalc", "topology", "bridge", "tests", "proto", "scripts")
PREFIXED = re.compile(r"(?<![\w/.-])((?:gb|gc|tp)_[A-Za-z0-9_]*)")
CALL = re.compile(r"(?<![\w.:/>$-])([A-Za-z_]\w*)\(\)")
EXT = r"(?:h\.in|c|h|py|sh|proto|md|yaml|txt|\[ch\])"
PATH = re.compile(r"(?<![\w./*\[-])((?:[\w*.-]+/)*[\w*-]+\." + EXT + r")(?!\.?[\w/])")
URL = re.compile(r"https?://\S+")
PENDING = re.compile(r"^>\s*\*\*After ([\w-]+)")
TAG = re.compile(r"\[(i\d+[a-z]?)\]")


def blank_c(text):
    """C comments and string/char literals replaced by spaces (identifiers in code stay)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" ")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def index_tree():
    """(every file's repository path, identifiers of the code, file stems)."""
    files, idents, stems = [], set(), set()
    for root, dirs, names in os.walk(SRC):
        rel_root = os.path.relpath(root, SRC)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not
                         (rel_root == "." and (d.startswith(".") or d.startswith("build"))))
        for name in names:
            rel = os.path.normpath(os.path.join(rel_root, name))
            files.append(rel)
            stems.add(name.split(".", 1)[0])
            top = rel.split(os.sep, 1)[0]
            if top not in CODE_DIRS and name != "CMakeLists.txt":
                continue
            if not re.search(r"\.(c|h|py|sh|proto|in|txt|cmake)$", name):
                continue
            if os.path.join(root, name) == os.path.abspath(__file__):
                continue  # its self-test page's wrong names must stay wrong
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            if name.endswith((".c", ".h", ".in")):
                text = blank_c(text)
            idents.update(re.findall(r"[A-Za-z_]\w*", text))
    return files, idents, stems


def blocks(lines):
    """Yields (first line number, lines, pending branch or None, tag or None) per block:
    fenced code, a block quote, or a paragraph/list separated by blank lines."""
    i, n = 0, len(lines)
    while i < n:
        if not lines[i].strip():
            i += 1
            continue
        start = i
        if lines[i].lstrip().startswith("```"):
            i += 1
            while i < n and not lines[i].lstrip().startswith("```"):
                i += 1
            i += 1
        elif lines[i].startswith(">"):
            while i < n and lines[i].startswith(">"):
                i += 1
        else:
            while i < n and lines[i].strip() and not lines[i].lstrip().startswith("```") \
                    and not lines[i].startswith(">"):
                i += 1
        chunk = lines[start:i]
        m = PENDING.match(chunk[0])
        tag = TAG.search(" ".join(chunk))
        yield start + 1, chunk, m.group(1) if m else None, tag.group(1) if tag else None


def path_exists(token, page_dir, files, fileset):
    """A path token (maybe a glob) matches a file of the tree."""
    glob = any(c in token for c in "*[")
    if "/" not in token:
        names = {os.path.basename(f) for f in files}
        return any(fnmatch.fnmatch(b, token) for b in names) if glob else token in names
    rel_page = os.path.relpath(page_dir, SRC)
    bases = ["", rel_page, "bridge", "tests"]
    for base in bases:
        cand = os.path.normpath(os.path.join(base, token))
        if glob:
            if any(fnmatch.fnmatch(f, cand) for f in files):
                return True
        elif cand in fileset or os.path.isdir(os.path.join(SRC, cand)):
            return True
    return False


def check_page(path, files, fileset, idents, stems, bad, notes):
    page_dir = os.path.dirname(path)
    rel = os.path.relpath(path, SRC)
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for first, chunk, pending, tag in blocks(lines):
        if pending:
            notes.append(f"{rel}:{first}: pending note (after {pending}) not checked")
            continue
        hint = f" (this paragraph is marked [{tag}]: its pending note says what replaces it)" \
            if tag else ""
        for k, raw in enumerate(chunk):
            no = first + k
            line = URL.sub(" ", raw)
            for m in CALL.finditer(line):
                name = m.group(1)
                if name not in idents and name not in EXTERNAL:
                    bad.append(f"{rel}:{no}: {name}() is not a function of this tree{hint}")
            for m in PREFIXED.finditer(line):
                name = m.group(1)
                if name.endswith("_"):
                    ok = any(i.startswith(name) for i in idents) or \
                        any(s.startswith(name) for s in stems)
                else:
                    ok = name in idents or name in stems
                if not ok:
                    bad.append(f"{rel}:{no}: {name} names nothing in the tree{hint}")
            for m in PATH.finditer(line):
                token = m.group(1)
                base = os.path.basename(token)
                stem = base[:-5] if base.endswith(".h.in") else base.rsplit(".", 1)[0]
                if "." in stem:
                    continue  # a domain (scheduling.volcano.sh), not a file
                if any(token.startswith(o) for o in OUTSIDE):
                    continue
                if not path_exists(token, page_dir, files, fileset):
                    bad.append(f"{rel}:{no}: {token}: no such file{hint}")


def layout_rows(readme):
    """The first-column code spans of README's Layout table, with their line numbers."""
    with open(readme, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    rows, inside = [], False
    for no, line in enumerate(lines, 1):
        if line.startswith("## "):
            inside = line.strip() == "## Layout"
            continue
        if inside and line.startswith("|"):
            cell = line.split("|")[1].strip()
            m = re.fullmatch(r"`([^`]+)`", cell)
            if m:
                rows.append((no, m.group(1), line))
    return rows


def check_layout(files, fileset, bad):
    readme = os.path.join(SRC, "README.md")
    rows = layout_rows(readme)
    listed = {p for _, p, _ in rows}
    for no, p, line in rows:
        if not os.path.isdir(os.path.join(SRC, p)):
            bad.append(f"README.md:{no}: layout table lists {p}, which is not a folder")
        for m in PATH.finditer(URL.sub(" ", line)):
            if not path_exists(m.group(1), SRC, files, fileset):
                bad.append(f"README.md:{no}: {m.group(1)}: no such file")
    want = []
    for d in sorted(os.listdir(SRC)):
        if os.path.isdir(os.path.join(SRC, d)) and not d.startswith((".", "build")):
            want.append(d + "/")
    for d in sorted(os.listdir(os.path.join(SRC, "bridge"))):
        if os.path.isfile(os.path.join(SRC, "bridge", d, "CMakeLists.txt")):
            want.append(f"bridge/{d}/")
    for d in sorted(os.listdir(os.path.join(SRC, "tests"))):
        if os.path.isdir(os.path.join(SRC, "tests", d)) and d != "__pycache__":
            want.append(f"tests/{d}/")
    for p in want:
        if p not in listed:
            bad.append(f"README.md: the layout table has no row for `{p}`")
    return len(rows)


SELFTEST = """# A page with three wrong names

`gb_plan_decide()` in `bridge/model/gb_plan_decide.c` and `model/gb_plan.c` exist, as do
`gb_cmd_*.c` and `gb_leader.[ch]`; `gb_no_such_function()` does not [i20c].

The module `gb_nothing_here` and the file `bridge/model/gb_nope.c` do not either.

> **After i20c:** `gb_pending_name()` in `placement/gb_pending.c` is not checked.
"""


def selftest(files, fileset, idents, stems):
    """The checks find what they must on a page written to fail (so a broken pattern cannot
    make the test pass by finding nothing)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "selftest.md")
        with open(page, "w", encoding="utf-8") as fh:
            fh.write(SELFTEST)
        bad, notes = [], []
        check_page(page, files, fileset, idents, stems, bad, notes)
    found = sorted(re.sub(r"^.*?:\d+: ", "", b) for b in bad)
    want = ["bridge/model/gb_nope.c: no such file",
            "gb_no_such_function names nothing in the tree (this paragraph is marked [i20c]: "
            "its pending note says what replaces it)",
            "gb_no_such_function() is not a function of this tree (this paragraph is marked "
            "[i20c]: its pending note says what replaces it)",
            "gb_nothing_here names nothing in the tree"]
    if found != want or len(notes) != 1:
        print("self-test failed: the checks found", found, "and", len(notes), "pending notes")
        return 1
    return 0


def main():
    files, idents, stems = index_tree()
    fileset = set(files)
    if selftest(files, fileset, idents, stems):
        return 1
    pages_dir = os.path.join(SRC, "docs", "internals")
    pages = sorted(os.path.join(pages_dir, p) for p in os.listdir(pages_dir) if p.endswith(".md"))
    bad, notes = [], []
    for page in pages:
        check_page(page, files, fileset, idents, stems, bad, notes)
    n_rows = check_layout(files, fileset, bad)
    for n in notes:
        print("note: " + n)
    for b in bad:
        print(b)
    print(f"{len(pages)} internals pages, {n_rows} layout rows, {len(notes)} pending notes, "
          f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
