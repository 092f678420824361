#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The version a build reports is the project's (CMakeLists.txt `project(VERSION)`), the same in
# the three places it shows: `gangbridge --version`, the `gangbridge_build_info` metric and the
# User-Agent of every request to the API server.  None may say "dev".
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="${GB_SRC:-$(cd "$HERE/../.." && pwd)}"
SHARED="${GB_SHARED:-$SRC/tests/shared}"
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
fail() { echo "FAIL: $*" >&2; [ -f "$WORK/serve.log" ] && tail -n 20 "$WORK/serve.log" >&2; exit 1; }
[ -x "${GANGBRIDGE:-}" ] || fail "gangbridge binary not found at ${GANGBRIDGE:-}"

want="$(sed -nE 's/^project\(gangbridge VERSION ([0-9.]+) .*/\1/p' "$SRC/CMakeLists.txt")"
[ -n "$want" ] || fail "no project(VERSION) in CMakeLists.txt"

# 1. --version: "gangbridge X.Y.Z", optionally followed by the git description.
"$GANGBRIDGE" --version >"$WORK/version.txt"
grep -Eq "^gangbridge $want( \(git [^)]+\))?\$" "$WORK/version.txt" \
  || fail "--version says '$(cat "$WORK/version.txt")', want 'gangbridge $want'"

# 2. and 3. A running service: its build_info metric and the User-Agent the API server sees.
GB_APISERVER_VERBOSE=1 "$SRC/tests/apiserver/run" --port 0 --crd "$SHARED/crds/trainer" \
  --crd "$SHARED/crds/volcano" >"$WORK/url" 2>"$WORK/server.log" &
PIDS+=("$!")
for _ in $(seq 1 200); do [ -s "$WORK/url" ] && break; sleep 0.05; done
URL="$(head -n1 "$WORK/url")"
case "$URL" in http://*) ;; *) fail "server printed no URL";; esac
cat >"$WORK/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: standin, cluster: {server: "$URL"}}]
contexts: [{name: standin, context: {cluster: standin, user: tester, namespace: default}}]
current-context: standin
users: [{name: tester, user: {token: not-checked}}]
KC
port="$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import controller_helpers as c; print(c.free_port())' "$SRC/tests/integration")"
cat >"$WORK/serve.yaml" <<CFG
kube: {kubeconfig: "$WORK/kubeconfig"}
grpc: {address: ""}
http: {address: "127.0.0.1:$port"}
webhook: {address: ""}
scheduling: {backend: volcano}
leaderElection: {enabled: false}
CFG
"$GANGBRIDGE" serve --config "$WORK/serve.yaml" >"$WORK/serve.out" 2>"$WORK/serve.log" &
PIDS+=("$!")
ready=0
for _ in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && { ready=1; break; }
  sleep 0.1
done
[ "$ready" = 1 ] || fail "service never became ready"
curl -fsS "http://127.0.0.1:$port/metrics" >"$WORK/metrics.txt"
grep -q "^gangbridge_build_info{version=\"$want\"} 1\$" "$WORK/metrics.txt" \
  || fail "build_info: $(grep build_info "$WORK/metrics.txt")"
grep -q "ua=gangbridge/$want" "$WORK/server.log" || fail "User-Agent: $(grep -o 'ua=[^ ]*' "$WORK/server.log" | sort -u)"
if grep -o 'ua=gangbridge/[^ ]*' "$WORK/server.log" | grep -v "ua=gangbridge/$want\$"; then
  fail "a request with another gangbridge version"
fi
echo "version $want: --version, build_info and User-Agent agree"
