#!/usr/bin/env bash
# Configures and builds gangbridge.  Usage: scripts/build.sh [--sanitize|--fuzz]
# Plain builds go to build/ (the binary is build/gangbridge); sanitizer builds
# to build-asan/; libFuzzer builds (clang) to build-fuzz/.  Warnings are errors here
# (-DGB_WERROR=ON): the project's own scripts and CI hold the code to that; a plain cmake
# build does not.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=build
args=(-DGB_WERROR=ON)
case "${1:-}" in
  --sanitize) dir=build-asan; args+=(-DGB_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug) ;;
  --fuzz) dir=build-fuzz; args+=(-DGB_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug) ;;
  "") ;;
  *) echo "usage: scripts/build.sh [--sanitize|--fuzz]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
