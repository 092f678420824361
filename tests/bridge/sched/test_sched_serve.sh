#!/usr/bin/env bash
# `gangbridge serve --sched-addr` against the stand-in API server: the
# scheduler endpoints listen on their own port, answer 503 until the plan is
# read back (a restart), then answer Volcano's predicate
# and onSessionOpen and kube-scheduler's filter in the protocols' shapes,
# refuse a malformed body with 400 naming the place, expose
# gangbridge_sched_* metrics, and stop with serve.
set -u
SRC=${GB_SRC:?}
bin=${GANGBRIDGE:?}
WORK=$(mktemp -d)
pass=0 failed=0
fail() { echo "FAIL: $*"; failed=$((failed+1)); }
ok() { pass=$((pass+1)); }
. "$SRC/tests/common/apiserver.sh"
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null
  apiserver_stop
  rm -rf "$WORK"
}
trap cleanup EXIT
apiserver_start
# The Trainer and Volcano CRDs: until serve's caches have synced and it has read the placement
# decisions back, the endpoints answer 503 (a restarted replica must not answer from an empty
# plan).
SHARED="${GB_SHARED:-$SRC/../shared}"
k apply --server-side -f "$SHARED/crds/trainer/" -f "$SHARED/crds/volcano/" >/dev/null ||
  fail "CRDs"

"$bin" serve --kubeconfig "$WORK/kubeconfig" --http-addr 127.0.0.1:0 --webhook-addr "" \
  --sched-addr 127.0.0.1:0 --log-level info >"$WORK/out" 2>"$WORK/err" &
serve_pid=$!
port=""
for _ in $(seq 200); do
  port=$(grep -o 'sched endpoints listening.*port=[0-9]*' "$WORK/err" | grep -o 'port=[0-9]*' |
         head -n1 | cut -d= -f2)
  [ -n "$port" ] && break
  sleep 0.05
done
[ -n "$port" ] || { sed 's/^/    /' "$WORK/err" | head -20; fail "no 'sched endpoints listening' line"; }

post() { curl -s -o "$WORK/body" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary "$2" "http://127.0.0.1:$port$1"; }

if [ -n "$port" ]; then
  # Until its placement controller has read every gang back (the model synced, one pass), serve
  # answers 503 saying so; then it answers.
  for _ in $(seq 200); do
    code=$(post /volcano/predicate '{"task":{"UID":"u","Job":"default/x","Namespace":"default"},"node":{"Name":"n1","Tasks":{}}}')
    [ "$code" = 503 ] || break
    grep -q 'reading the placement decisions back' "$WORK/body" || fail "503: $(cat "$WORK/body")"
    sleep 0.05
  done
  [ "$code" = 200 ] && [ "$(cat "$WORK/body")" = '{"status":"","code":0}' ] && ok ||
    fail "predicate: $code $(cat "$WORK/body")"
  code=$(post /volcano/onSessionOpen '{"Jobs":{},"Nodes":{},"Queues":{},"NamespaceInfo":{},"RevocableNodes":{},"NodeList":null}')
  [ "$code" = 200 ] && [ "$(cat "$WORK/body")" = '{}' ] && ok || fail "onSessionOpen: $code"
  code=$(post /kube/filter '{"Pod":{"metadata":{"namespace":"default","name":"p"}},"NodeNames":["n1","n2"]}')
  [ "$code" = 200 ] && [ "$(cat "$WORK/body")" = '{"Nodes":null,"NodeNames":["n1","n2"],"FailedNodes":{},"FailedAndUnresolvableNodes":{},"Error":""}' ] && ok ||
    fail "filter: $code $(cat "$WORK/body")"
  code=$(post /volcano/jobEnqueueable '{"job":{"Name":"x","Namespace":"default","Tasks":{}}}')
  [ "$code" = 200 ] && [ "$(cat "$WORK/body")" = '{"status":0}' ] && ok || fail "enqueue: $code"
  code=$(post /volcano/predicate '{"task":{"UID":1}}')
  [ "$code" = 400 ] && grep -qF 'volcano predicate: body:1:16: task.UID: expected a string' "$WORK/body" &&
    ok || fail "malformed: $code $(cat "$WORK/body")"
  hport=$(grep -o 'probes.*port=[0-9]*\|listening.*server=probes.*' "$WORK/err" | grep -o 'port=[0-9]*' | head -n1 | cut -d= -f2)
  if [ -n "$hport" ]; then
    curl -s "http://127.0.0.1:$hport/metrics" >"$WORK/metrics"
    grep -q 'gangbridge_sched_requests_total{protocol="volcano",verb="predicate",code="200"} 1' "$WORK/metrics" &&
      grep -q 'gangbridge_sched_decisions_total{protocol="volcano",verb="predicate",decision="invalid"} 1' "$WORK/metrics" &&
      ok || fail "metrics: $(grep gangbridge_sched "$WORK/metrics" | head -5)"
  else
    fail "no probes port in the log"
  fi
fi

kill -TERM "$serve_pid"
for _ in $(seq 100); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$serve_pid" 2>/dev/null; then fail "serve did not stop"; else
  wait "$serve_pid"; st=$?; [ "$st" = 0 ] && ok || fail "serve exit status $st"; fi
serve_pid=""

echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
