#!/bin/sh
# AASH's cost of rotating fast contexts (bench, never asserted): three
# level-1 requesters of equal weight on 4 CPUs (pairs for two), so that at
# every accounting period one of them moves. Work done (spin's loops, summed
# over the three) in about WINDOW_S seconds, with the agent rotating every
# PERIOD ms, for each PERIOD given (default 30, AASH's and ours, and 1000),
# interleaved ROUNDS times in this one boot, the order turning each round (TCG
# drifts: only ratios within a round count). Migrations from the kernel
# (/proc/PID/sched se.nr_migrations), the CPUs' idle share (/proc/stat, %
# of one CPU) and the agent's own CPU time over the window (its threads'
# utime + stime from /proc/PID/stat, ms: the agent runs on these 4 CPUs, so
# what a rotation costs it is taken from the spinners) are printed beside it.
#   bench_aash.sh [ROUNDS] [WINDOW_S] [PERIOD_MS...]
# Prints "aash round=R period_ms=P loops=N migrations=M idle_pm=I agent_ms=A".
. /opt/chameleon/guest/lib.sh
TEST=bench_aash
CG=/sys/fs/cgroup
rounds=${1:-3} window=${2:-8}
if [ $# -ge 2 ]; then shift 2; else set --; fi
periods=${*:-30 1000}

# CPU time of the agent, all threads, in ms (USER_HZ 100: 10 ms a tick).
agent_ms() {
	awk '{ sub(/.*\) /, ""); t += $12 + $13 } END { print t * 10 }' /proc/$AGENT_PID/task/*/stat 2>/dev/null || echo 0
}

migrations() {
	sed -n 's/^se.nr_migrations *: *//p' /proc/$1/sched 2>/dev/null || echo 0
}

one() {
	r=$1 period=$2
	start_agent --share-period-ms "$period" >/dev/null
	pids= outs=
	for g in a b c; do
		make_cgroup ba_$g
		scx_chameleon tag ba_$g --level 1 >/dev/null || fail "cannot tag ba_$g"
	done
	for g in a b c; do
		# Running past the window's end: its last reads see them alive.
		spin -g $CG/ba_$g $(( window + 3 )) >/tmp/ba_$g.out &
		pids="$pids $!"
	done
	# The first second settles (objects granted), then the window.
	sleep 1
	m0=0; for p in $pids; do m0=$(( m0 + $(migrations $p) )); done
	i0=0; for c in 0 1 2 3; do i0=$(( i0 + $(cpu_jiffies $c | cut -d' ' -f1) )); done
	a0=$(agent_ms)
	t0=$(now_ms)
	sleep "$window"
	a1=$(agent_ms)
	m1=0; for p in $pids; do m1=$(( m1 + $(migrations $p) )); done
	i1=0; for c in 0 1 2 3; do i1=$(( i1 + $(cpu_jiffies $c | cut -d' ' -f1) )); done
	idle=$(( (i1 - i0) * 1000 / ($(now_ms) - t0) ))
	wait $pids
	loops=0
	for g in a b c; do
		l=$(sed -n 's/.*loops=\([0-9]*\).*/\1/p' /tmp/ba_$g.out)
		loops=$(( loops + ${l:-0} ))
		scx_chameleon untag ba_$g >/dev/null
	done
	stop_agent >/dev/null
	echo "aash round=$r period_ms=$period loops=$loops migrations=$(( m1 - m0 )) idle_pm=$idle agent_ms=$(( a1 - a0 ))"
}

r=1
set -- $periods
while [ $r -le "$rounds" ]; do
	# Turn the order each round, so a drift does not favour one period.
	for p in "$@"; do one $r "$p"; done
	first=$1; shift; set -- "$@" "$first"
	r=$(( r + 1 ))
done
pass
