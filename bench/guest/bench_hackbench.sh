#!/bin/sh
# Benchmark (not a test): hackbench under each scheduler in turn, in one VM
# boot, in interleaved rounds (the order rotates each round, so that neither
# always runs first). Driven by bench/scale128 (128 vCPUs).
#   bench_hackbench.sh ROUNDS SCHEDULERS...
# SCHEDULERS as bench_lib.sh's start_sched names them (eevdf: the kernel's
# fair class, nothing attached; chameleon). HB_ARGS: hackbench's arguments,
# the same for all. Printed per run:
#   BENCH hb ROUND SCHED SECONDS
# kernel.bpf_stats_enabled stays off (on, it reads the clock around every BPF
# program, which EEVDF never pays). TCG inflates every absolute: only the
# ratios of one round are read.
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_hackbench
rounds=$1
shift
scheds=$*
HB_ARGS=${HB_ARGS:-"-g 8 -l 60"}
# Attaching at 128 vCPUs took 17-24 s: a liveness bound.
AGENT_START_MS=${AGENT_START_MS:-300000}
echo "BENCH header kernel=$(uname -r) cpus=$(nproc) hackbench=[$HB_ARGS] rounds=$rounds"
echo 0 >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null || true
round=1
while [ $round -le "$rounds" ]; do
	set -- $(sched_order "$round" $scheds)
	for sched in "$@"; do
		start_sched $sched
		# Let the attach settle (the agent's first reconcile) first.
		sleep 2
		# shellcheck disable=SC2086
		v=$(hackbench $HB_ARGS 2>&1 | sed -n 's/^Time: *\([0-9.]*\).*/\1/p' | tail -n 1)
		[ -n "$v" ] || fail "$sched: hackbench printed no time"
		echo "BENCH hb $round $sched $v"
		[ "$sched" = eevdf ] || [ "$(state)" = enabled ] || fail "$sched: scheduler '$(state)' after the run"
		stop_sched $sched
		# A detach leaves the machine settling (kthreads, RCU): let it.
		sleep 1
	done
	round=$((round + 1))
done
pass
