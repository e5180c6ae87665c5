#!/bin/sh
# AASH's cost of rotating fast contexts (bench, never asserted): three
# level-1 requesters of equal weight on 4 CPUs (pairs for two), so that at
# every accounting period one of them moves. Work done (spin's loops, summed
# over the three, counted from a mark at the window's start to one at its
# end) in WINDOW_S seconds, with the agent rotating every
# PERIOD ms, for each PERIOD given (default 30, AASH's and ours, and 1000),
# interleaved ROUNDS times in this one boot, the order turning each round (TCG
# drifts: only ratios within a round count). Migrations from the kernel
# (/proc/PID/sched se.nr_migrations), the CPUs' idle time (/proc/stat's
# absolute idle over the window, summed: per mille of one CPU) and the agent's own CPU time over the window (its threads'
# utime + stime from /proc/PID/stat, ms: the agent runs on these 4 CPUs, so
# what a rotation costs it is taken from the spinners) are printed beside it.
#   bench_aash.sh [ROUNDS] [WINDOW_S] [PERIOD_MS...]
# The lines the agent logged over the window and the events it read over its
# run (its summary) say how busy its loop was.
# Prints "aash round=R period_ms=P loops=N migrations=M idle_pm=I agent_ms=A
# log_lines=L events=E".
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

# Per agent thread: "TID:COMM:USER_MS:SYS_MS" so far, one awk.
agent_threads() {
	awk '{ tid = $1; c = $0; sub(/^[^(]*\(/, "", c); sub(/\).*/, "", c); gsub(/ /, "", c)
		sub(/.*\) /, ""); printf "%s:%s:%d:%d\n", tid, c, $12 * 10, $13 * 10 }' /proc/$AGENT_PID/task/*/stat 2>/dev/null
}

# The agent's main thread as the kernel counts it: "MIGRATIONS INVOLUNTARY
# VOLUNTARY" switches so far.
agent_sched() {
	awk '$1 == "se.nr_migrations" { m = $3 } $1 == "nr_involuntary_switches" { i = $3 }
		$1 == "nr_voluntary_switches" { v = $3 } END { print m + 0, i + 0, v + 0 }' /proc/$AGENT_PID/sched 2>/dev/null
}

# The kernel's count of migration-disabled tasks it queued without asking
# the scheduler (sched_ext's ENQ_SKIP_MIGRATION_DISABLED): each one a task
# preempted inside migrate_disable(), as the agent was 22,000 times a
# second when lent CPUs kicked it.
skip_md() {
	awk '$1 == "SCX_EV_ENQ_SKIP_MIGRATION_DISABLED" { n = $2 } END { print n + 0 }' /sys/kernel/sched_ext/root/events 2>/dev/null || echo 0
}

# A spinner gone before its last read would count 0 (or a new process's
# count under its reused pid): the sum came out negative (issue 32).
migrations() {
	_m=$(sed -n 's/^se.nr_migrations *: *//p' /proc/$1/sched 2>/dev/null)
	[ -n "$_m" ] || fail "pid $1 gone before its migrations were read"
	echo "$_m"
}

one() {
	r=$1 period=$2
	# No decision lines (an agent in service logs none; an older build
	# prints them on stdout whatever the level).
	start_agent --share-period-ms "$period" --log-level info >/dev/null
	pids= outs=
	for g in a b c; do
		make_cgroup ba_$g
		scx_chameleon tag ba_$g --level 1 >/dev/null || fail "cannot tag ba_$g"
	done
	for g in a b c; do
		# Running well past the window's end (the reads around it take
		# seconds under TCG): its last reads and marks see them alive.
		spin -g $CG/ba_$g $(( window + 60 )) >/tmp/ba_$g.out &
		pids="$pids $!"
	done
	# The first second settles (objects granted), then the window.
	sleep 1
	m0=0; for p in $pids; do get _m migrations $p; m0=$(( m0 + _m )); done
	agent_threads >/tmp/th0
	set -- $(agent_sched); am0=$1 ai0=$2 av0=$3
	md0=$(skip_md)
	l0=$(wc -l <"$AGENT_LOG")
	a0=$(agent_ms)
	# The four CPUs' idle time over the window, per mille each.
	# The work over the window: each spinner's count at its start and end
	# (SIGUSR1 prints it at once), not its whole run's.
	kill -USR1 $pids
	shares s $(( window * 1000 )) cpu0 cpu1 cpu2 cpu3
	kill -USR1 $pids
	a1=$(agent_ms)
	m1=0; for p in $pids; do get _m migrations $p; m1=$(( m1 + _m )); done
	agent_threads >/tmp/th1
	set -- $(agent_sched); am=$(( $1 - am0 )) ai=$(( $2 - ai0 )) av=$(( $3 - av0 ))
	md=$(( $(skip_md) - md0 ))
	l1=$(wc -l <"$AGENT_LOG")
	idle=0; for v in $s; do idle=$(( idle + v )); done
	end_tasks $pids
	loops=0
	for g in a b c; do
		l=$(awk '$3 == "mark" { sub(/loops=/, "", $4); m[++n] = $4 } END { if (n == 2) print m[2] - m[1] }' /tmp/ba_$g.out)
		[ -n "$l" ] || fail "spinner of ba_$g: no two marks around the window: $(cat /tmp/ba_$g.out)"
		loops=$(( loops + l ))
		scx_chameleon untag ba_$g >/dev/null
	done
	stop_agent >/dev/null
	ev=$(sed -n 's/^summary events=\([0-9]*\) .*/\1/p' "$AGENT_LOG")
	# BPF's counters over the agent's run: kicks, steals, splits.
	bpfc=$(sed -n 's/^summary .* \(steal=[0-9]*\) \(kick=[0-9]*\) .* \(split=[0-9]*\) .*/\1 \2 \3/p' "$AGENT_LOG")
	# Each busy thread's share of agent_ms: comm:user+sys ms.
	th=$(awk -F: 'NR == FNR { u0[$1] = $3; s0[$1] = $4; next }
		{ u = $3 - u0[$1]; s = $4 - s0[$1]; if (u + s > 0) printf "%s:%d+%d ", $2, u, s }' /tmp/th0 /tmp/th1)
	echo "aash round=$r period_ms=$period loops=$loops migrations=$(( m1 - m0 )) idle_pm=$idle agent_ms=$(( a1 - a0 )) log_lines=$(( l1 - l0 )) events=${ev:-0} agent_mig=$am agent_invol=$ai agent_vol=$av skip_md=$md $bpfc threads=$th"
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
