#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gangbridge serve` has ONE flag parser for the controller and --offline: the same flag takes
# the same values and gives the same error in both modes.  --grace-period takes a duration
# ("5s", "1m30s") or plain seconds online and offline alike; a value out of range is refused
# with the same message and status; the offline-only flags (--cluster, --levels) are refused
# without --offline.
set -u
bin=${GANGBRIDGE:?}
pass=0 fail=0
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
ok() { pass=$((pass+1)); }
bad() { echo "FAIL $1"; [ -f "$tmp/err" ] && sed 's/^/    /' "$tmp/err" | head; fail=$((fail+1)); }

# Online: --grace-period 5s is a duration.
if "$bin" serve --grace-period 5s --print-config >"$tmp/out" 2>"$tmp/err" &&
   grep -q 'gracePeriod' "$tmp/out"; then ok; else bad "online --grace-period 5s"; fi

# Offline: the same value is accepted, and the server stops with that grace.
"$bin" serve --offline --grpc-addr 127.0.0.1:0 --grace-period 5s >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do grep -q "listening" "$tmp/err" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -TERM "$pid" 2>/dev/null
got=alive
for _ in $(seq 100); do
  if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; got=$?; break; fi
  sleep 0.1
done
pid=
if [ "$got" = 0 ] && grep -qF "grace 5000 ms" "$tmp/err"; then ok; else
  bad "offline --grace-period 5s: status $got"; fi

# Out of range: the same status and the same message in both modes.
"$bin" serve --grace-period 2h --print-config >"$tmp/on.out" 2>"$tmp/on.err"; on=$?
"$bin" serve --offline --grpc-addr 127.0.0.1:0 --grace-period 2h >"$tmp/off.out" 2>"$tmp/off.err"; off=$?
cp "$tmp/off.err" "$tmp/err"
if [ "$on" != 0 ] && [ "$on" = "$off" ] && cmp -s "$tmp/on.err" "$tmp/off.err" &&
   grep -q -- '--grace-period' "$tmp/off.err"; then ok; else
  bad "--grace-period 2h: online status $on, offline $off; stderr online: $(cat "$tmp/on.err")"; fi

# Offline-only flags need --offline.
"$bin" serve --cluster "$tmp/none.yaml" --print-config >"$tmp/out" 2>"$tmp/err"; st=$?
if [ "$st" = 2 ] && grep -q -- '--offline' "$tmp/err"; then ok; else bad "--cluster without --offline: status $st"; fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
