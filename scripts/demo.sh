#!/usr/bin/env bash
# The main job on the bundled examples, no cluster needed: builds gangbridge,
# then renders and explains the PodGroups for the TrainJobs in examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
set -x
./build/gangbridge render -f examples/runtimes/ -f examples/trainjobs/
./build/gangbridge explain -f examples/runtimes/ -f examples/trainjobs/
