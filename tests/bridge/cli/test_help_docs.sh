#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The installed binary's --help is its manual (no man page is installed), so it must match the
# README's command table, which users read first: every command `gangbridge --help` lists is in
# the table and vice versa, and every option the table shows for a command is in that
# command's --help.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../../.." && pwd)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "${GANGBRIDGE:-}" ] || fail "gangbridge binary not found at ${GANGBRIDGE:-}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$GANGBRIDGE" --help >"$WORK/help.txt"
awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1}' "$WORK/help.txt" | sort >"$WORK/cmds"
[ -s "$WORK/cmds" ] || fail "gangbridge --help lists no commands"
for c in $(cat "$WORK/cmds"); do
  "$GANGBRIDGE" "$c" --help >"$WORK/$c.help" 2>&1 || fail "gangbridge $c --help exits non-zero"
done

python3 - "$SRC/README.md" "$WORK" <<'PY'
import os, re, sys
readme, work = sys.argv[1], sys.argv[2]
cmds = open(os.path.join(work, "cmds")).read().split()
text = open(readme).read()
table = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
rows = re.findall(r"^\| `gangbridge ([a-z]+)([^`]*)` \|", table, re.M)
errors = []
documented = sorted({c for c, _ in rows})
if documented != sorted(cmds):
    errors.append("README's command table has %s, gangbridge --help lists %s"
                  % (documented, sorted(cmds)))
for c, usage in rows:
    if c not in cmds:
        continue
    help_text = open(os.path.join(work, c + ".help")).read()
    for opt in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", usage):
        if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", help_text):
            errors.append("README shows `gangbridge %s ... %s`, which `gangbridge %s --help` "
                          "does not mention" % (c, opt, c))
for e in errors:
    print("FAIL: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
echo "help: $(wc -l <"$WORK/cmds") commands, README table and --help agree"
