#!/usr/bin/env bash
# Every command that prints a diagnostics list ends a cut list with
# "... and N more problems" (gb_diagprint): the list keeps 1000 messages, and
# `call` used to drop that line, so a reader took the cut list for the whole.
# 1005 documents that are not objects make 1005 errors before any network
# call, so no server is needed.
set -u
cd "${GB_SRC:?}"
bin=${GANGBRIDGE:?}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for i in $(seq 1005); do echo "--- $i"; done >"$tmp/many.yaml"

check() { # description, wanted exit, command...
  local what=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $what: exit $got, want $want"; tail -3 "$tmp/err" | sed 's/^/    /'; fail=$((fail+1))
  elif [ "$(tail -1 "$tmp/err")" != "... and 5 more problems" ]; then
    echo "FAIL $what: last line '$(tail -1 "$tmp/err")', want '... and 5 more problems'"
    fail=$((fail+1))
  elif [ "$(grep -c 'document is not an object' "$tmp/err")" != 1000 ]; then
    echo "FAIL $what: not 1000 messages printed"; fail=$((fail+1))
  else
    pass=$((pass+1))
  fi
}

check "render" 1 "$bin" render -f "$tmp/many.yaml"
check "call calculate" 1 "$bin" call calculate -f "$tmp/many.yaml" --addr 127.0.0.1:1
check "call evaluate" 1 "$bin" call evaluate -f "$tmp/many.yaml" --addr 127.0.0.1:1

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
