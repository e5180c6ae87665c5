#!/usr/bin/env bash
# make demo: build, boot the stock sched_ext kernel in QEMU, load scx_chameleon
# with the module's emulated dynamic processor, and show what tagging buys: a
# tagged sequential task's work next to its untagged twin's, then the
# scheduler's events and a summary (tests/vm/guest/demo.sh).
#
# Multi-threaded TCG (--mttcg: a host thread per vCPU): the headline is a
# ratio of two spinners' own loop counts, which means something only if a
# vCPU runs guest code at one speed whatever the other vCPUs do. Under
# single-threaded TCG they share one host thread: two untagged spinners at
# the same 50 % duty on CPUs 0 and 2 got the same CPU time (schedstat, 0.99x)
# but did 0.55x the work of each other, and the tagged task's work ratio read
# 1.01-1.36x where its CPU time ratio read 1.43-1.52x. Multi-threaded, the
# same pair's work ratio read 1.54x and 1.66x for CPU time ratios of 1.51x and
# 1.50x.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/scripts/build.sh"
exec "$repo/tests/vm/run" --no-build --mttcg --timeout 180 -- demo.sh
