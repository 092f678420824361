#!/usr/bin/env bash
# Malformed-input corpus: every tests/malformed/cases/NAME.expect names its
# input NAME.yaml|yml|json (or a directory NAME/).  The .expect file's first
# line is "exit: N"; every other non-empty line is an exact stderr line.
# Error lines must match the expected set exactly (order aside); expected
# "warning: " lines must be present.  Any crash, sanitizer report or hang
# (20 s) fails the case.
set -u
cd "${GB_SRC:?}"
bin=${GANGBRIDGE:?}
cases=tests/malformed/cases
fail=0 total=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for expect in "$cases"/*.expect; do
  name=$(basename "$expect" .expect)
  input=""
  for ext in yaml yml json; do
    [ -e "$cases/$name.$ext" ] && input="$cases/$name.$ext"
  done
  [ -d "$cases/$name" ] && input="$cases/$name"
  total=$((total+1))
  if [ -z "$input" ]; then
    echo "FAIL $name: no input file next to $expect"; fail=$((fail+1)); continue
  fi
  want_exit=$(head -1 "$expect" | sed -n 's/^exit: *//p')
  timeout 20 "$bin" render -f "$input" >"$tmp/out" 2>"$tmp/err"
  got_exit=$?
  if [ "$got_exit" -ge 124 ] || grep -qE 'Sanitizer|runtime error|AddressSanitizer' "$tmp/err"; then
    echo "FAIL $name: crashed or hung (exit $got_exit)"; sed 's/^/    /' "$tmp/err" | head -20
    fail=$((fail+1)); continue
  fi
  tail -n +2 "$expect" | grep -v '^$' | grep -v '^warning: ' | sort >"$tmp/want_err"
  tail -n +2 "$expect" | grep '^warning: ' | sort >"$tmp/want_warn"
  grep -v '^warning: ' "$tmp/err" | sort >"$tmp/got_err"
  grep '^warning: ' "$tmp/err" | sort >"$tmp/got_warn"
  ok=1
  [ "$got_exit" = "$want_exit" ] || { echo "FAIL $name: exit $got_exit, want $want_exit"; ok=0; }
  if ! diff -u "$tmp/want_err" "$tmp/got_err" >"$tmp/diff"; then
    echo "FAIL $name: stderr differs (- expected, + got)"; sed 's/^/    /' "$tmp/diff"; ok=0
  fi
  if [ -n "$(comm -23 "$tmp/want_warn" "$tmp/got_warn")" ]; then
    echo "FAIL $name: missing warnings:"; comm -23 "$tmp/want_warn" "$tmp/got_warn" | sed 's/^/    /'; ok=0
  fi
  if [ $ok = 1 ]; then echo "ok   $name"; else fail=$((fail+1)); fi
done
echo "malformed: $((total-fail)) passed, $fail failed"
[ "$total" -gt 0 ] && [ "$fail" -eq 0 ]
