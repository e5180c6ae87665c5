#!/usr/bin/env bash
# make demo: build, boot the stock sched_ext kernel in QEMU, load scx_chameleon,
# run a short mixed workload and show the scheduler's events and a summary.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/build.sh"
exec "$repo/tests/vm/run" --no-build --timeout 180 -- demo.sh
