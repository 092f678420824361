#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gangbridge place` under valgrind memcheck on clusters whose node count leaves a
# partial last block in the capacity kernel (401 and 403 nodes, mixed gang, so the
# integer path's set-minimum runs): no read of memory that was never written.
# ASan cannot see such reads; a wrong capacity from one would go unnoticed.
set -euo pipefail
: "${GANGBRIDGE:?}" "${GB_SRC:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is not installed (scripts/install-deps.sh installs it)"
# An AddressSanitizer build cannot run under valgrind; it then runs alone and ASan
# checks what it can (as integration/test_controller_valgrind.py does).
run=(valgrind -q --error-exitcode=9)
# nm's output is read whole: with pipefail, `nm | grep -q` fails when grep stops early.
syms="$(nm -D "$GANGBRIDGE" 2>/dev/null; nm "$GANGBRIDGE" 2>/dev/null)" || true
if [[ "$syms" == *__asan_init* ]]; then
  run=()
  echo "checker: AddressSanitizer (this build); valgrind cannot run ASan binaries"
fi
for n in 401 403; do
  python3 - "$n" >"$T/c$n.yaml" <<'PY'
import sys
n = int(sys.argv[1])
for i in range(n):
    print("---\napiVersion: v1\nkind: Node\nmetadata: {name: n%d, labels: {rack: r%d}}\n"
          "status:\n  allocatable: {cpu: \"64\", memory: 256Gi, nvidia.com/gpu: \"8\", pods: \"110\"}"
          % (i, i % 7))
PY
  rc=0
  "${run[@]}" "$GANGBRIDGE" place --cluster "$T/c$n.yaml" \
    -f "$GB_SRC/tests/topology/data/gang-mixed.yaml" --levels rack >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$T/err" >&2; fail "$n nodes: the memory checker reported errors (exit $rc)"; }
  grep -q '^FEASIBLE' "$T/out" || { cat "$T/out" >&2; fail "$n nodes: not placed"; }
done
echo "place: 401 and 403 nodes clean under ${run[0]:-AddressSanitizer}"
