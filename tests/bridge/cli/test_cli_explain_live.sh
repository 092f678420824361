#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gangbridge explain NAMESPACE/NAME` against the stand-in API server: the TrainJob, its runtime
# and its Namespace are read from the API (--kubeconfig or $KUBECONFIG) and explained exactly
# as `explain -f` explains the same files; a missing object, a forbidden read and an
# unreachable server are clear errors (exit 1); a malformed reference is a usage error (exit 2).
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../../.." && pwd)}"
SHARED="${GB_SHARED:-$SRC/../shared}"
bin=${GANGBRIDGE:?}
U="$SRC/tests/golden/inputs/upstream"
# shellcheck source=../common/apiserver.sh
source "$SRC/tests/common/apiserver.sh"

WORK="$(mktemp -d)"
trap 'apiserver_stop; rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass=0 failed=0

expect() { # description, wanted exit, command...
  local what=$1 want=$2; shift 2
  "$@" >"$WORK/out" 2>"$WORK/err"
  local got=$?
  if [ "$got" = "$want" ]; then pass=$((pass+1)); else
    echo "FAIL $what: exit $got, want $want"; sed 's/^/    /' "$WORK/err" | head; failed=$((failed+1)); fi
}
has() { # description, file, fixed string
  if grep -qF -- "$3" "$2"; then pass=$((pass+1)); else
    echo "FAIL $1: '$3' not in $2:"; sed 's/^/    /' "$2" | head -20; failed=$((failed+1)); fi
}
same() { # description, file, file
  if cmp -s "$2" "$3"; then pass=$((pass+1)); else
    echo "FAIL $1: live and file explanations differ:"; diff "$2" "$3" | head -30; failed=$((failed+1)); fi
}

apiserver_start
k apply --server-side -f "$SHARED/crds/trainer/" >/dev/null || fail "CRDs"
cat >"$WORK/ns.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  annotations:
    gangbridge.io/gang-scope: all
EOF
k apply -f "$WORK/ns.yaml" >/dev/null || fail "namespace"
k apply -f "$U/runtimes/torch_distributed.yaml" >/dev/null || fail "cluster runtime"
k apply -n team-a -f "$U/examples/05-multi-step.yaml" -f "$U/examples/01-multi-node.yaml" \
  >/dev/null || fail "TrainJobs"
cat >"$WORK/orphan.yaml" <<EOF
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: orphan, namespace: team-a}
spec:
  runtimeRef: {name: no-such-runtime, kind: TrainingRuntime, apiGroup: trainer.kubeflow.org}
EOF
k apply -f "$WORK/orphan.yaml" >/dev/null || fail "orphan TrainJob"

# Live and file explanations are the same, byte for byte (TrainingRuntime, and
# ClusterTrainingRuntime through $KUBECONFIG).
expect "live multi-step" 0 "$bin" explain --kubeconfig "$WORK/kubeconfig" team-a/multi-step-example
cp "$WORK/out" "$WORK/live1"
expect "file multi-step" 0 "$bin" explain -n team-a -f "$WORK/ns.yaml" -f "$U/examples/05-multi-step.yaml"
same "multi-step" "$WORK/live1" "$WORK/out"
has "namespace annotation reached the explanation" "$WORK/live1" "TrainJob team-a/multi-step-example"
expect "live multi-node" 0 env KUBECONFIG="$WORK/kubeconfig" "$bin" explain team-a/multi-node-example
cp "$WORK/out" "$WORK/live2"
expect "file multi-node" 0 "$bin" explain -n team-a -f "$WORK/ns.yaml" \
  -f "$U/runtimes/torch_distributed.yaml" -f "$U/examples/01-multi-node.yaml"
same "multi-node" "$WORK/live2" "$WORK/out"
has "cluster runtime named" "$WORK/live2" "ClusterTrainingRuntime torch-distributed"

# Errors name the object and the cause.
expect "no such TrainJob" 1 "$bin" explain --kubeconfig "$WORK/kubeconfig" team-a/nope
has "not found names the TrainJob" "$WORK/err" "TrainJob team-a/nope: not found"
expect "NAME alone uses the context's namespace" 1 "$bin" explain --kubeconfig "$WORK/kubeconfig" multi-node-example
has "context namespace" "$WORK/err" "TrainJob default/multi-node-example: not found"
expect "missing runtime" 1 "$bin" explain --kubeconfig "$WORK/kubeconfig" team-a/orphan
has "missing runtime named as for files" "$WORK/err" "no-such-runtime"
curl -sf -X POST -H 'Content-Type: application/json' \
  -d '{"error_rate":1.0,"error_codes":[403],"error_resources":["trainjobs"]}' \
  "$URL/_control/faults" >/dev/null || fail "faults"
expect "forbidden" 1 "$bin" explain --kubeconfig "$WORK/kubeconfig" team-a/multi-node-example
has "forbidden said" "$WORK/err" "TrainJob team-a/multi-node-example: forbidden"
curl -sf -X DELETE "$URL/_control/faults" >/dev/null || fail "faults off"
sed "s|$URL|http://127.0.0.1:1|" "$WORK/kubeconfig" >"$WORK/down.kubeconfig"
expect "unreachable" 1 "$bin" explain --kubeconfig "$WORK/down.kubeconfig" team-a/multi-node-example
has "unreachable said" "$WORK/err" "cannot reach the API server http://127.0.0.1:1"
expect "missing kubeconfig" 1 "$bin" explain --kubeconfig "$WORK/none" team-a/x
has "missing kubeconfig named" "$WORK/err" "$WORK/none"

# Usage errors.
expect "two slashes" 2 "$bin" explain --kubeconfig "$WORK/kubeconfig" a/b/c
has "bad name said" "$WORK/err" "'a/b/c' is not NAMESPACE/NAME or NAME"
expect "bad name before a bad kubeconfig" 2 "$bin" explain --kubeconfig "$WORK/none" /x
expect "live and -f together" 2 "$bin" explain -f "$WORK/ns.yaml" team-a/multi-node-example
expect "two names" 2 "$bin" explain team-a/a team-a/b
expect "render takes no name" 2 "$bin" render team-a/multi-node-example
expect "explain help mentions live" 0 "$bin" explain --help
has "help shows NAMESPACE/NAME" "$WORK/out" "NAMESPACE/NAME"

echo "explain-live: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
