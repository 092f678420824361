#!/usr/bin/env bash
# Builds gangbridge and runs every test (unit, golden, malformed-input,
# integration, and the benchmarks in their short mode).
# Usage: scripts/test.sh [--sanitize]   (--sanitize: the same under ASan+UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh ${1:-}
dir=build
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cd "$dir"
ctest --output-on-failure -j "$(nproc)" --timeout 900
