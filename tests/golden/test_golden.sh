#!/usr/bin/env bash
# Golden tests: runs every case in tests/golden/cases.txt and compares stdout,
# stderr and the exit status with tests/golden/expected/NAME.{out,err,exit}.
# Every PodGroup a successful render prints is also validated against the
# upstream CRD schemas (tests/shared/crds, copied unchanged from upstream) and the built-in
# scheduling.k8s.io kinds as the stand-in API server knows them (tests/apiserver/builtin).
# GB_GOLDEN_UPDATE=1 rewrites the expected files instead (review the diff!).
set -u
cd "${GB_SRC:?}"
bin=${GANGBRIDGE:?}
I=tests/golden/inputs U=$I/upstream S=$I/seeds T=$I/trainjobs
exp=tests/golden/expected
mkdir -p "$exp"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 rendered=()
while read -r name args; do
  case "$name" in ''|'#'*) continue ;; esac
  eval "set -- $args"
  timeout 30 "$bin" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  echo $? >"$tmp/$name.exit"
  if grep -qE 'Sanitizer|runtime error' "$tmp/$name.err"; then
    echo "FAIL $name: sanitizer report"; cat "$tmp/$name.err"; fail=$((fail+1)); continue
  fi
  if [ "$1" = render ] && [ "$(cat "$tmp/$name.exit")" = 0 ] && [ -s "$tmp/$name.out" ]; then
    rendered+=("$tmp/$name.out")
  fi
  if [ "${GB_GOLDEN_UPDATE:-0}" = 1 ]; then
    cp "$tmp/$name.out" "$tmp/$name.err" "$tmp/$name.exit" "$exp/"
    echo "updated $name"; pass=$((pass+1)); continue
  fi
  ok=1
  for ext in exit out err; do
    if [ ! -f "$exp/$name.$ext" ]; then
      echo "FAIL $name: missing $exp/$name.$ext"; ok=0; continue
    fi
    if ! diff -u "$exp/$name.$ext" "$tmp/$name.$ext" >"$tmp/diff"; then
      echo "FAIL $name: $ext differs (- expected, + got)"; sed 's/^/    /' "$tmp/diff" | head -60; ok=0
    fi
  done
  if [ $ok = 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); fi
done < tests/golden/cases.txt
if [ ${#rendered[@]} -gt 0 ]; then
  if /usr/bin/python3 tests/golden/crdcheck.py --crds tests/shared/crds --crds tests/apiserver/builtin "${rendered[@]}" >"$tmp/crd" 2>&1; then
    tail -1 "$tmp/crd"
  else
    cat "$tmp/crd"; echo "FAIL crd-validation"; fail=$((fail+1))
  fi
fi
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
