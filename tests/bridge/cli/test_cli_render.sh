#!/usr/bin/env bash
# The render/explain command line: exit codes (0 ok, 1 input errors, 2 usage),
# help, stdin input, every error reported, output formats.
set -u
cd "${GB_SRC:?}"
bin=${GANGBRIDGE:?}
U=tests/golden/inputs/upstream
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # description, wanted exit, command...
  local what=$1 want=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" = "$want" ]; then pass=$((pass+1)); else
    echo "FAIL $what: exit $got, want $want"; sed 's/^/    /' "$tmp/err" | head; fail=$((fail+1)); fi
}
has() { # description, file, fixed string
  if grep -qF -- "$3" "$2"; then pass=$((pass+1)); else
    echo "FAIL $1: '$3' not in $2:"; sed 's/^/    /' "$2" | head -20; fail=$((fail+1)); fi
}

expect "no args" 2 "$bin"
expect "unknown command" 2 "$bin" frobnicate
has "unknown command named" "$tmp/err" "unknown command 'frobnicate'"
expect "help" 0 "$bin" --help
has "help lists render" "$tmp/out" "render"
expect "render help" 0 "$bin" render --help
has "render help shows -o" "$tmp/out" "--output FORMAT"
expect "render without -f" 2 "$bin" render
has "render without -f says so" "$tmp/err" "no input"
expect "bad scheduler" 2 "$bin" render --scheduler slurm -f $U
has "bad scheduler named" "$tmp/err" "'slurm'"
expect "bad scope" 2 "$bin" render --gang-scope some -f $U
expect "bad output" 2 "$bin" render -o xml -f $U
expect "explain has no -o" 2 "$bin" explain -o json -f $U
expect "stray argument" 2 "$bin" render $U
expect "missing file" 1 "$bin" render -f does/not/exist.yaml
has "missing file named" "$tmp/err" "does/not/exist.yaml"
expect "no trainjob" 1 "$bin" render -f $U/runtimes
has "no trainjob message" "$tmp/err" "no TrainJob"

# Several bad inputs: every one is reported, and good ones still render.
printf 'a: [1, 2\n' >"$tmp/bad1.yaml"
printf 'kind: TrainJob\napiVersion: trainer.kubeflow.org/v1alpha1\nmetadata: {name: x}\nspec:\n  runtimeRef: {name: nope}\n' >"$tmp/bad2.yaml"
expect "two bad files and a good one" 1 "$bin" render -f "$tmp/bad1.yaml" -f "$tmp/bad2.yaml" -f $U/runtimes -f $U/examples/01-multi-node.yaml
has "syntax error with position" "$tmp/err" "$tmp/bad1.yaml:"
has "missing runtime named" "$tmp/err" '"nope"'
has "good job still rendered" "$tmp/out" "name: multi-node-example"

# stdin
expect "stdin" 0 sh -c "cat $U/runtimes/torch_distributed.yaml $U/examples/01-multi-node.yaml | sed 's/^apiVersion/---\napiVersion/' | $bin render -f -"
has "stdin rendered" "$tmp/out" "minMember: 3"

# JSON is a v1 List that python can read; YAML is multi-document.
expect "json" 0 "$bin" render -o json -f $U/runtimes -f $U/examples
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kind"]=="List" and d["apiVersion"]=="v1" and len(d["items"])==5, d' "$tmp/out" \
  && pass=$((pass+1)) || { echo "FAIL json list"; fail=$((fail+1)); }
expect "yaml" 0 "$bin" render -f $U/runtimes -f $U/examples
/usr/bin/python3 -c 'import yaml,sys; d=[x for x in yaml.safe_load_all(open(sys.argv[1])) if x]; assert len(d)==5 and all(x["kind"]=="PodGroup" for x in d), d' "$tmp/out" \
  && pass=$((pass+1)) || { echo "FAIL yaml stream"; fail=$((fail+1)); }

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
