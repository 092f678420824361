#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 17, defect 8: gated pods are never stranded.  Against the stand-in API server, with the
# real kubectl:
# - `gangbridge placement status --kubeconfig` lists, from the API, every pod carrying the
#   gangbridge.io/placement gate (table and JSON: gang, every gate, the gate's index), with no
#   serve running at all, and says so when there is none;
# - the release command of docs/deploy.md ("Uninstall"), run exactly as written (the block
#   between the release-gates markers, kubectl being the real one with the test's kubeconfig),
#   removes only gangbridge's gate: a pod with [kueue, ours] keeps [kueue], one with [ours] has
#   none left, one with [kueue] only and a pod without gates are not touched; run again it
#   changes nothing; and its JSON Patch `test` refuses a pod whose gate moved since it was
#   listed instead of removing another controller's gate.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../.." && pwd)}"
GANGBRIDGE="${GANGBRIDGE:-$SRC/build/gangbridge}"
# shellcheck source=../common/apiserver.sh
source "$SRC/tests/common/apiserver.sh"

WORK="$(mktemp -d)"
trap 'apiserver_stop; rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

apiserver_start

cat >"$WORK/pods.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: team-g}
---
apiVersion: v1
kind: Pod
metadata:
  name: both
  namespace: team-g
  labels: {jobset.sigs.k8s.io/jobset-name: llama, jobset.sigs.k8s.io/replicatedjob-name: node}
spec:
  schedulingGates: [{name: kueue.x-k8s.io/admission}, {name: gangbridge.io/placement}]
  containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Pod
metadata: {name: ours, namespace: team-g}
spec:
  schedulingGates: [{name: gangbridge.io/placement}]
  containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Pod
metadata: {name: kueue, namespace: team-g}
spec:
  schedulingGates: [{name: kueue.x-k8s.io/admission}]
  containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Pod
metadata: {name: free, namespace: default}
spec:
  containers: [{name: c, image: i}]
EOF
k apply -f "$WORK/pods.yaml" >/dev/null || fail "apply pods"

gates() { k get pod -n "$1" "$2" -o jsonpath='{range .spec.schedulingGates[*]}{.name}{","}{end}'; }

# ---- status from the API, no serve anywhere ----
"$GANGBRIDGE" placement status --kubeconfig "$WORK/kubeconfig" >"$WORK/status.txt" ||
  fail "placement status: $(cat "$WORK/status.txt")"
grep -q '^team-g  *both  *llama  *kueue.x-k8s.io/admission,gangbridge.io/placement$' "$WORK/status.txt" ||
  fail "status table: $(cat "$WORK/status.txt")"
grep -q '^team-g  *ours  *-  *gangbridge.io/placement$' "$WORK/status.txt" || fail "status: no 'ours'"
grep -q '^2 pod(s) held by gangbridge.io/placement$' "$WORK/status.txt" || fail "status count"
if grep -q '^team-g  *kueue ' "$WORK/status.txt"; then fail "a pod without gangbridge's gate is listed"; fi
"$GANGBRIDGE" placement status --kubeconfig "$WORK/kubeconfig" -n team-g -o json >"$WORK/status.json"
python3 - "$WORK/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = {p["name"]: (p["gateIndex"], p["gates"], p["gang"]) for p in d["pods"]}
want = {"both": (1, ["kueue.x-k8s.io/admission", "gangbridge.io/placement"], "llama"),
        "ours": (0, ["gangbridge.io/placement"], "")}
assert got == want, got
PY
if "$GANGBRIDGE" placement status --url http://127.0.0.1:1 --kubeconfig "$WORK/kubeconfig" \
    >/dev/null 2>&1; then fail "--url with --kubeconfig accepted"; fi

# ---- the documented release command, exactly as docs/deploy.md prints it ----
sed -n '/<!-- release-gates:begin/,/<!-- release-gates:end/p' "$SRC/docs/deploy.md" |
  sed '1,2d;$d' | sed '$d' >"$WORK/release.sh"
grep -q 'kubectl patch pod' "$WORK/release.sh" || fail "no release block in docs/deploy.md"
grep -q 'schedulingGates: *null\|"schedulingGates":null' "$WORK/release.sh" &&
  fail "the documented command must not null the gates"
run_doc() { (kubectl() { k "$@"; }; source "$WORK/release.sh") >"$WORK/release.out" 2>&1; }
run_doc || fail "release command: $(cat "$WORK/release.out")"
[ "$(grep -c 'patched' "$WORK/release.out")" = 2 ] || fail "release output: $(cat "$WORK/release.out")"
[ "$(gates team-g both)" = "kueue.x-k8s.io/admission," ] || fail "both: $(gates team-g both)"
[ "$(gates team-g ours)" = "" ] || fail "ours: $(gates team-g ours)"
[ "$(gates team-g kueue)" = "kueue.x-k8s.io/admission," ] || fail "kueue: $(gates team-g kueue)"
[ "$(gates default free)" = "" ] || fail "free: $(gates default free)"
run_doc || fail "second run: $(cat "$WORK/release.out")"
[ ! -s "$WORK/release.out" ] || fail "second run did something: $(cat "$WORK/release.out")"
"$GANGBRIDGE" placement status --kubeconfig "$WORK/kubeconfig" >"$WORK/status.txt"
grep -q '^No pod carries the gangbridge.io/placement scheduling gate.$' "$WORK/status.txt" ||
  fail "status after release: $(cat "$WORK/status.txt")"

# ---- the `test` guard: the index was read, then the gates changed ----
cat >"$WORK/moved.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: moved, namespace: team-g}
spec:
  schedulingGates: [{name: gangbridge.io/placement}, {name: kueue.x-k8s.io/admission}]
  containers: [{name: c, image: i}]
EOF
k apply -f "$WORK/moved.yaml" >/dev/null
# A listing taken when gangbridge's gate was second, applied after the pod changed: the
# patch names index 1, which now holds Kueue's gate; the `test` refuses the whole patch.
if k patch pod -n team-g moved --type=json -p '[{"op":"test","path":"/spec/schedulingGates/1/name","value":"gangbridge.io/placement"},{"op":"remove","path":"/spec/schedulingGates/1"}]' \
    >"$WORK/stale.out" 2>&1; then
  fail "a stale index removed another gate: $(gates team-g moved)"
fi
[ "$(gates team-g moved)" = "gangbridge.io/placement,kueue.x-k8s.io/admission," ] ||
  fail "moved: $(gates team-g moved)"
echo "ok: placement status from the API, and the documented release command removes only gangbridge's gate"
