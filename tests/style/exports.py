#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The export rules of docs/internals/conventions.md ("Modules"), checked on the built libraries.

Run by tests/style/test_style.sh (not a test by itself: its name does not match test_*).
Usage: exports.py [--prefix] [--unused] SRC BUILD (neither flag: both checks).  Every product library is checked: libgangcalc.a, libtopology.a and
one library per bridge/ layer, found from the gb_layer(...) line of each bridge/*/CMakeLists.txt,
so that a new layer is covered without editing this file.  Each problem is printed as
file:line: message and the exit status is 1 when there is any.

1. Prefix: every exported symbol (nm types T, D, B, R) carries its folder's prefix (gc_, tp_,
   gb_) and its module's prefix.  A module is a header and the .c files that implement it; its
   name is the header's stem without an `_int` or `_test` suffix (gb_plan.h, gb_plan_int.h,
   gb_plan.c, gb_plan_durable.c are the module gb_plan).  A symbol belongs to the module whose
   header declares it, and its name starts with the module's name and `_`, or with the name of
   a type (struct, union, enum, typedef) a header of the module defines and `_` (gc_value.h
   defines struct gc_map, so gc_map_get is gc_value's; libuv's uv_loop_init is uv.h's).  A
   symbol declared in no header is an offender too: it should be static.
2. Unused: every exported function (nm type T) of a product library is referenced by another
   product object file (the libraries' members and gb_main.c's object), unless it is declared in
   a test-only header (`<module>_test.h`) or listed in tests/style/exports-allowlist.txt (entry
   points).  An export that only its own .c calls should be static; one that nothing calls is
   dead; one that only tests call belongs in a test-only header, which says so at its top and
   which no product file includes except the module's own .c files (checked too).

Symbols the sanitizers and coverage add in an ASan or fuzz build are not ours and are skipped.
"""
import glob
import os
import re
import subprocess
import sys

SKIP = re.compile(r"^__(odr_asan|asan_|ubsan_|sancov|sanitizer_)")
EXPORT_TYPES = set("TDBR")
DECL_SUFFIXES = ("_int", "_test")


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


def file_scope(text):
    """The header's text at brace depth 0 without preprocessor lines: its declarations, not the
    bodies of its inline functions or the members of its structs (newlines kept)."""
    out, depth, directive = [], 0, False
    for ln in blank(text).split("\n"):
        if depth == 0 and (directive or ln.lstrip().startswith("#")):
            directive = ln.rstrip().endswith("\\")
            out.append("")
            continue
        kept = []
        for ch in ln:
            if ch == "{":
                depth += 1
                kept.append(" ")
            elif ch == "}":
                depth -= 1
                kept.append(" ")
            else:
                kept.append(ch if depth == 0 else " ")
        out.append("".join(kept))
    return out


def module_of(stem):
    for suffix in DECL_SUFFIXES:
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


class Header:
    TYPE = re.compile(r"\b(?:struct|union|enum)\s+(\w+)\s*\{")
    ENUM = re.compile(r"\benum\s+\w+\s*\{([^}]*)\}")
    TYPEDEF = re.compile(r"\btypedef\b[^;]*?\(?\s*\*?\s*(\w+)\s*\)?\s*(?:\([^;]*\))?\s*;", re.S)
    WORD = re.compile(r"\b[A-Za-z_]\w*\b")

    def __init__(self, rel, path):
        self.rel = rel
        self.stem = os.path.basename(rel)[:-2]
        self.module = module_of(self.stem)
        self.test_only = self.stem.endswith("_test")
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        self.types = set(self.TYPE.findall(blank(text)))
        scope = file_scope(text)
        self.types |= {m.group(1) for m in self.TYPEDEF.finditer("\n".join(scope))}
        # The kinds of a tagged type are types too: gc_value.h's enum gc_type has GC_MAP and
        # GC_SEQ, so gc_map_get and gc_seq_push are gc_value's.
        for body in self.ENUM.findall(blank(text)):
            self.types |= {m.group(1).lower() for m in re.finditer(r"\b([A-Z][A-Z0-9_]*)\b", body)}
        self.declared = {}
        for no, ln in enumerate(scope, 1):
            for m in self.WORD.finditer(ln):
                # A tag (struct gb_sched_stats) is not the function of the same name.
                if not re.search(r"\b(?:struct|union|enum)\s+$", ln[:m.start()]):
                    self.declared.setdefault(m.group(0), no)


def product_libs(src, build):
    """(folder, library path, folder prefix) of every product library."""
    libs = [("gangcalc", "gangcalc/libgangcalc.a", "gc_"),
            ("topology", "topology/libtopology.a", "tp_")]
    for cm in sorted(glob.glob(os.path.join(src, "bridge", "*", "CMakeLists.txt"))):
        folder = os.path.relpath(os.path.dirname(cm), src)
        with open(cm, encoding="utf-8") as f:
            m = re.search(r"^\s*gb_layer\(\s*(\w+)", f.read(), re.M)
        if m:
            libs.append((folder, f"{folder}/lib{m.group(1)}.a", "gb_"))
    return [(d, os.path.join(build, lib), p) for d, lib, p in libs]


def nm(path):
    """{member: (defined {name: type}, undefined set)} of an archive or object file."""
    res = subprocess.run(["nm", "-g", path], capture_output=True, text=True, check=True)
    members, cur = {}, os.path.basename(path)
    for line in res.stdout.split("\n"):
        if line.endswith(":"):
            cur = line[:-1]
            continue
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            members.setdefault(cur, ({}, set()))[1].add(parts[1])
        elif len(parts) == 3:
            members.setdefault(cur, ({}, set()))[0][parts[2]] = parts[1]
    return members


def def_line(path, sym):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for no, ln in enumerate(f, 1):
                if re.search(rf"(^|[^\w]){re.escape(sym)}\s*(\(|\[|=|;)", ln):
                    return no
    except OSError:
        pass
    return 1


def main():
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    src, build = [a for a in sys.argv[1:] if not a.startswith("--")]
    check_prefix = "--prefix" in flags or not flags
    check_unused = "--unused" in flags or not flags
    bad, notes = [], []
    libs = product_libs(src, build)
    objects = []  # (folder, member, defined, undefined)
    for folder, lib, _ in libs:
        if not os.path.isfile(lib):
            bad.append(f"{lib}: library not built (set GB_BUILD to a configured build directory)")
            continue
        for member, (defined, undefined) in sorted(nm(lib).items()):
            objects.append((folder, member, defined, undefined))
    main_objs = glob.glob(os.path.join(build, "bridge", "cli", "CMakeFiles", "*", "gb_main.c.o"))
    referenced = {}  # symbol -> set of (folder, member) that reference it
    for folder, member, _, undefined in objects:
        for sym in undefined:
            referenced.setdefault(sym, set()).add((folder, member))
    for path in main_objs:
        for _, (_, undefined) in nm(path).items():
            for sym in undefined:
                referenced.setdefault(sym, set()).add(("bridge/cli", "gb_main.c.o"))

    headers, owned = {}, {}
    for folder, _, _ in libs:
        for h in sorted(glob.glob(os.path.join(src, folder, "*.h"))):
            hdr = Header(os.path.relpath(h, src), h)
            headers.setdefault(folder, []).append(hdr)
            owned.setdefault((folder, hdr.module), set()).update(hdr.types)

    def c_module(folder, cfile):
        """The module a .c file implements: the longest module name its stem starts with."""
        stem = cfile[:-2] if cfile.endswith(".c") else cfile
        names = [h.module for h in headers.get(folder, [])
                 if stem == h.module or stem.startswith(h.module + "_")]
        return max(names, key=len) if names else stem

    # An opaque type (declared in the header, completed in a .c) is its module's type too.
    for folder, _, _ in libs:
        for c in sorted(glob.glob(os.path.join(src, folder, "*.c"))):
            with open(c, encoding="utf-8", errors="replace") as f:
                types = set(Header.TYPE.findall(blank(f.read())))
            owned.setdefault((folder, c_module(folder, os.path.basename(c))), set()).update(types)

    # A test-only header is included by tests and by its own module's .c files only.
    for folder, _, _ in libs:
        for c in sorted(glob.glob(os.path.join(src, folder, "*.[ch]"))):
            with open(c, encoding="utf-8", errors="replace") as f:
                for no, ln in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s*"(\w+)_test\.h"', ln)
                    if m and (c.endswith(".h") or c_module(folder, os.path.basename(c)) != m.group(1)):
                        bad.append(f"{os.path.relpath(c, src)}:{no}: includes the test-only header "
                                   f"{m.group(1)}_test.h (only tests and {m.group(1)}'s .c may)")

    allow_path = os.path.join(src, "tests", "style", "exports-allowlist.txt")
    allow = set()
    with open(allow_path, encoding="utf-8") if os.path.exists(allow_path) else open(os.devnull) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                allow.add(line)

    prefix_of = {folder: p for folder, _, p in libs}
    n_exports = n_prefix = n_unused = 0
    for folder, member, defined, _ in objects:
        cfile = member[:-2] if member.endswith(".o") else member
        crel = f"{folder}/{cfile}"
        for sym, typ in sorted(defined.items()):
            if typ not in EXPORT_TYPES or SKIP.match(sym):
                continue
            n_exports += 1
            decls = [h for h in headers.get(folder, []) if sym in h.declared]
            # A header that declares it under its own prefix wins over one that only mentions it.
            decls.sort(key=lambda h: not sym.startswith(h.module + "_"))
            hdr = decls[0] if decls else None
            module = hdr.module if hdr else c_module(folder, cfile)
            # The file rule holds too: a symbol may carry the prefix of the .c that defines it.
            modules = sorted({module, c_module(folder, cfile)})
            users = referenced.get(sym, set()) - {(folder, member)}
            where = f"{hdr.rel}:{hdr.declared[sym]}" if hdr else \
                f"{crel}:{def_line(os.path.join(src, crel), sym)}"
            prefix = prefix_of[folder]
            types = sorted({t for m in modules for t in owned.get((folder, m), ())
                            if t.startswith(prefix)})
            if not check_prefix:
                pass
            elif not sym.startswith(prefix):
                bad.append(f"{where}: exported symbol {sym} (nm type {typ}, {crel}) lacks the "
                           f"{prefix} prefix of {folder}/ (make it static or rename it)")
                n_prefix += 1
            elif not (any(sym == m or sym.startswith(m + "_") for m in modules) or
                      any(sym.startswith(t + "_") for t in types)):
                tlist = ", ".join(t + "_" for t in types) or "none"
                bad.append(f"{where}: exported symbol {sym} (nm type {typ}, {crel}) lacks its "
                           f"module's prefix {module}_ (or a prefix of a type {module} defines: "
                           f"{tlist}): rename it or move it to the module whose prefix it "
                           "carries")
                n_prefix += 1
            elif hdr is None and any(u[0] != folder or c_module(folder, u[1][:-2]) != module
                                     for u in users):
                # Only its own module's other .c files may share a symbol no header declares
                # (gc_backend.c's table names each gc_backend_<name>.c's descriptor).
                bad.append(f"{where}: exported symbol {sym} (nm type {typ}) is used outside "
                           f"its module {module} but declared in no header of {folder}/ "
                           "(declare it in its module's header)")
                n_prefix += 1
            if not check_unused or typ != "T" or sym in allow or (hdr and hdr.test_only):
                continue
            if not users:
                bad.append(f"{where}: exported function {sym}() ({crel}) is called by no other "
                           "product object: make it static, remove it, or (tests only) declare "
                           f"it in a test-only header {module}_test.h")
                n_unused += 1
    for b in bad:
        print(b)
    print(f"exports: {len(libs)} libraries, {n_exports} exported symbols"
          + (f", {n_prefix} without their module's prefix" if check_prefix else "")
          + (f", {n_unused} unused by product code" if check_unused else ""))
    for n in notes:
        print(n)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
