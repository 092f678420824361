#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang and runs each.
# Usage: scripts/fuzz.sh [--short] [SECONDS]   (--short: 20 s per target)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=300
[ "${1:-}" = "--short" ] && { secs=20; shift; }
[ -n "${1:-}" ] && secs=$1
bash scripts/build.sh --fuzz
shopt -s nullglob
ran=0
for f in build-fuzz/fuzz/fuzz_*; do
  name=$(basename "$f")
  corpus=tests/fuzz/corpus/${name#fuzz_}
  work=$(mktemp -d)
  seeds=()
  [ -d "$corpus" ] && seeds=("$corpus")
  echo "fuzz: $name for ${secs}s"
  "$f" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 "$work" "${seeds[@]}" \
    >"$work.log" 2>&1 || { tail -50 "$work.log"; exit 1; }
  grep -E '^(Done|#[0-9]+ +DONE)' "$work.log" | tail -1
  rm -rf "$work" "$work.log"
  ran=$((ran+1))
done
echo "fuzz: $ran targets ran clean"
