#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI run of the idle-serve measurement (tests/bench/bench_serve_idle.py) in its short mode
# with --check: `gangbridge serve` with deploy/'s configuration against the stand-in prints
# its threads, RSS and the LIST/WATCH requests per resource and selector, and fails when a
# resource is listed or watched more than once, or under two selectors (two informers, two
# caches of the same objects: what issue 20 removed).  ctest globs bench_*.c only, hence this
# wrapper.
set -euo pipefail
exec /usr/bin/python3 "${GB_SRC:-$(dirname "$0")/../..}/tests/bench/bench_serve_idle.py" --short --check
