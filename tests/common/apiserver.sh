# SPDX-License-Identifier: Apache-2.0
# Sourced by shell tests that talk to the stand-in API server (tests/apiserver/run) with the
# real kubectl.  The caller sets SRC (source tree), WORK (a scratch directory it removes) and
# defines fail().  The kubectl used is $GB_KUBECTL (.ci/run points it at Debian's kubectl 1.20
# to run the kubectl tests a second time), else $KUBECTL, else /usr/bin/kubectl.
#   apiserver_start [run options...]  starts the server on a free port (its URL in $WORK/url,
#                                     its log in $WORK/server.log), waits up to 10 s for the
#                                     URL, sets APISERVER_PID and URL, and writes
#                                     $WORK/kubeconfig (context "standin", namespace default,
#                                     a bearer token the stand-in does not check)
#   apiserver_stop                    kills and reaps the server (nothing when not started)
#   k ARGS...                         kubectl with that kubeconfig, a discovery cache of this
#                                     run's own (kubectl caches discovery per host:port) and a
#                                     20 s request timeout
#   SHOW_MANAGED_FIELDS                 the flag that makes `kubectl get -o json` print
#                                     managedFields (kubectl 1.21 added it and hid them by
#                                     default; 1.20 always prints them and has no such flag)

APISERVER_PID=""
URL=""
KUBECTL="${GB_KUBECTL:-${KUBECTL:-/usr/bin/kubectl}}"
SHOW_MANAGED_FIELDS=""
if "$KUBECTL" get --help 2>/dev/null | grep -q -- --show-managed-fields; then
  SHOW_MANAGED_FIELDS=--show-managed-fields
fi

apiserver_start() {
  "$SRC/tests/apiserver/run" --port 0 "$@" >"$WORK/url" 2>"$WORK/server.log" &
  APISERVER_PID=$!
  for _ in $(seq 1 200); do
    [ -s "$WORK/url" ] && break
    sleep 0.05
  done
  URL="$(head -n1 "$WORK/url")"
  case "$URL" in http://*) ;; *) cat "$WORK/server.log" >&2; fail "server printed no URL";; esac
  cat >"$WORK/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: standin, cluster: {server: "$URL"}}]
contexts: [{name: standin, context: {cluster: standin, user: tester, namespace: default}}]
current-context: standin
users: [{name: tester, user: {token: not-checked}}]
KUBECONFIG
}

apiserver_stop() {
  if [ -n "$APISERVER_PID" ]; then
    kill "$APISERVER_PID" 2>/dev/null || true
    wait "$APISERVER_PID" 2>/dev/null || true
    APISERVER_PID=""
  fi
}

k() { "$KUBECTL" --kubeconfig "$WORK/kubeconfig" --cache-dir "$WORK/cache" --request-timeout=20s "$@"; }
