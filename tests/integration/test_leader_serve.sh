#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two real `gangbridge serve` replicas (leader election on, short timings 3/2/0.5 s) against the
# stand-in API server with the Trainer and Volcano CRDs and the deploy/examples objects:
# exactly one holds the Lease (named by POD_NAME) and shows gangbridge_leader 1, the other 0;
# the leader creates the example's PodGroup; SIGKILL of the leader hands the Lease to the
# standby (printed: "leader-figure serve kill handover"), which then writes a PodGroup for a
# new TrainJob; SIGTERM of the last replica exits 0 and releases the Lease (holder "").
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../.." && pwd)}"
SHARED="${GB_SHARED:-$SRC/../shared}"
GANGBRIDGE="${GANGBRIDGE:-$SRC/build/gangbridge}"
KUBECTL="${GB_KUBECTL:-${KUBECTL:-/usr/bin/kubectl}}"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/replica-*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  exit 1
}
[ -x "$GANGBRIDGE" ] || fail "gangbridge binary not found at $GANGBRIDGE"

"$SRC/tests/apiserver/run" --port 0 --bookmark-interval 1 >"$WORK/url" 2>"$WORK/server.log" &
SERVER_PID=$!
PIDS+=("$SERVER_PID")
for _ in $(seq 1 200); do [ -s "$WORK/url" ] && break; sleep 0.05; done
URL="$(head -n1 "$WORK/url")"
case "$URL" in http://*) ;; *) fail "server printed no URL";; esac
cat >"$WORK/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: standin, cluster: {server: "$URL"}}]
contexts: [{name: standin, context: {cluster: standin, user: tester, namespace: default}}]
current-context: standin
users: [{name: tester, user: {token: not-checked}}]
EOF
k() { "$KUBECTL" --kubeconfig "$WORK/kubeconfig" --cache-dir "$WORK/cache" --request-timeout=20s "$@"; }
k apply --server-side -f "$SHARED/crds/trainer/" -f "$SHARED/crds/volcano/" >/dev/null || fail "CRDs"
cat >"$WORK/ns.yaml" <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: gangbridge-system}
EOF
k apply -f "$WORK/ns.yaml" -f "$SRC/deploy/examples/namespace.yaml" >/dev/null || fail "namespaces"
k apply -f "$SRC/deploy/examples/runtime.yaml" >/dev/null || fail "runtime"

free_port() { python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import controller_helpers as c; print(c.free_port())' "$SRC/tests/integration"; }
declare -A PORT PID
start_replica() {
  local name="$1"
  PORT[$name]="$(free_port)"
  cat >"$WORK/$name.yaml" <<EOF
kube: {kubeconfig: "$WORK/kubeconfig"}
log: {level: info}
grpc: {address: ""}
http: {address: "127.0.0.1:${PORT[$name]}"}
webhook: {address: ""}
scheduling: {backend: auto}
leaderElection:
  enabled: true
  namespace: gangbridge-system
  name: gangbridge
  leaseDuration: 3s
  renewDeadline: 2s
  retryPeriod: 0.5s
EOF
  POD_NAME="$name" POD_NAMESPACE=gangbridge-system "$GANGBRIDGE" serve --config "$WORK/$name.yaml" \
    >"$WORK/$name.out" 2>"$WORK/$name.log" &
  PID[$name]=$!
  PIDS+=("${PID[$name]}")
  for _ in $(seq 1 200); do
    curl -fsS "http://127.0.0.1:${PORT[$name]}/readyz" >/dev/null 2>&1 && return 0
    kill -0 "${PID[$name]}" 2>/dev/null || fail "$name exited at start"
    sleep 0.1
  done
  fail "$name never became ready"
}
metric() { # replica name -> value of gangbridge_leader
  curl -fsS "http://127.0.0.1:${PORT[$1]}/metrics" | awk '$1 == "gangbridge_leader" {print $2}'
}
holder() {
  k get -n gangbridge-system lease gangbridge -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true
}
wait_holder() { # name, seconds -> prints elapsed seconds
  python3 - "$1" "$2" "$WORK/kubeconfig" "$WORK/cache" "$KUBECTL" <<'PY'
import subprocess, sys, time
want, limit, kc, cache, kubectl = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
t0 = time.monotonic()
while time.monotonic() - t0 < limit:
    r = subprocess.run([kubectl, "--kubeconfig", kc, "--cache-dir", cache, "get", "-n",
                        "gangbridge-system", "lease", "gangbridge", "-o",
                        "jsonpath={.spec.holderIdentity}"], capture_output=True, text=True)
    if r.returncode == 0 and r.stdout == want:
        print("%.3f" % (time.monotonic() - t0))
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
PY
}
wait_podgroup() { # name
  for _ in $(seq 1 100); do
    k get -n ml-team podgroups.scheduling.volcano.sh "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "PodGroup ml-team/$1 not created"
}

start_replica replica-a
wait_holder replica-a 10 >/dev/null || fail "replica-a never took the Lease (holder '$(holder)')"
start_replica replica-b
sleep 2
[ "$(holder)" = replica-a ] || fail "the Lease moved to '$(holder)' while replica-a was healthy"
[ "$(metric replica-a)" = 1 ] || fail "replica-a: gangbridge_leader $(metric replica-a)"
[ "$(metric replica-b)" = 0 ] || fail "replica-b: gangbridge_leader $(metric replica-b)"

# The leader writes the example's PodGroup.
k apply -f "$SRC/deploy/examples/trainjob.yaml" >/dev/null || fail "trainjob"
wait_podgroup mnist-gang
k get -n ml-team podgroups.scheduling.volcano.sh mnist-gang -o jsonpath='{.spec.minMember}' >"$WORK/mm"
[ "$(cat "$WORK/mm")" = 4 ] || fail "minMember $(cat "$WORK/mm")"

# Only the leader wrote: the standby reconciled nothing successfully (it skips, not leading).
sleep 1
curl -fsS "http://127.0.0.1:${PORT[replica-b]}/metrics" >"$WORK/b.metrics"
curl -fsS "http://127.0.0.1:${PORT[replica-a]}/metrics" >"$WORK/a.metrics"
count() { awk -v m="$2" '$1 == m {s += $2} END {print s + 0}' "$1"; }
A_OK="$(count "$WORK/a.metrics" 'gangbridge_reconciles_total{result="success"}')"
B_OK="$(count "$WORK/b.metrics" 'gangbridge_reconciles_total{result="success"}')"
[ "$A_OK" -ge 1 ] || fail "the leader shows no successful reconcile"
[ "$B_OK" = 0 ] || fail "the standby shows $B_OK successful reconciles"

# SIGKILL the leader: no release; the standby waits out the lease.
kill -9 "${PID[replica-a]}"
{ wait "${PID[replica-a]}"; } 2>/dev/null || true
# The safety property is measured on the Lease, not on the wall clock of this
# script: on a loaded machine replica-a's last renewal may come late, so the
# time from the kill to the handover says nothing on its own.  replica-b must
# not acquire before LeaseDuration has passed since the last renewal it saw.
LAST_RENEW="$(k get -n gangbridge-system lease gangbridge -o jsonpath='{.spec.renewTime}')"
T="$(wait_holder replica-b 20)" || fail "replica-b did not take over within 20 s (holder '$(holder)')"
ACQUIRED="$(k get -n gangbridge-system lease gangbridge -o jsonpath='{.spec.acquireTime}')"
echo "leader-figure serve kill handover ${T} s after the kill (lease 3 s, renew 2 s, retry 0.5 s)"
python3 - "$LAST_RENEW" "$ACQUIRED" <<'PY' || fail "replica-b acquired the Lease at $ACQUIRED, less than LeaseDuration (3 s) after replica-a's last renewal at $LAST_RENEW"
import sys
from datetime import datetime
def ts(s):
    return datetime.strptime(s.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
gap = (ts(sys.argv[2]) - ts(sys.argv[1])).total_seconds()
print("leader-figure serve kill: acquired %.3f s after the last renewal" % gap)
sys.exit(0 if gap >= 3.0 - 0.05 else 1)
PY
for _ in $(seq 1 50); do [ "$(metric replica-b)" = 1 ] && break; sleep 0.1; done
[ "$(metric replica-b)" = 1 ] || fail "replica-b: gangbridge_leader $(metric replica-b) after taking the Lease"

# The new leader writes.
sed 's/name: mnist-gang/name: mnist-gang-2/' "$SRC/deploy/examples/trainjob.yaml" >"$WORK/tj2.yaml"
k apply -f "$WORK/tj2.yaml" >/dev/null || fail "trainjob 2"
wait_podgroup mnist-gang-2

# A clean stop releases the Lease.
kill -TERM "${PID[replica-b]}"
STATUS=0
wait "${PID[replica-b]}" || STATUS=$?
[ "$STATUS" = 0 ] || fail "replica-b exited with $STATUS on SIGTERM"
[ -z "$(holder)" ] || fail "the Lease still names '$(holder)' after a clean stop"
echo "serve leader election: one leader, PodGroups written, kill hand-over ${T} s, release on SIGTERM"
