#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CI run of the service benchmark (tests/bench/bench_controller.py) in its short mode:
# `gangbridge serve` as a separate process against the stand-in; prints figures, asserts only
# that serve converges and exits cleanly (ctest globs bench_*.c only, hence this wrapper).
set -euo pipefail
exec /usr/bin/python3 "${GB_SRC:-$(dirname "$0")/../..}/tests/bench/bench_controller.py" --short
