#!/bin/sh
# Chameleon Figure 7 (under-provisioned): four pinned untagged spinners (the
# parallel program) on CPUs 1, 2, 3, 3 and one tagged level-1 sequential task,
# which has CPU 0. No CPU is idle (5 runnable tasks on 4 CPUs), yet the task
# gets its object {0,1} and the tax decides at run time
# how often it takes CPU 1 from its spinner. Measured from the kernel's
# accounting: CPU 1's idle time in /proc/stat (a borrowed CPU idles) and the
# tasks' CPU time in /proc/<pid>/schedstat. Expected: tax 0.01 keeps CPU 1
# idle a large part of the time, tax 100 almost never, tax 1 in between; the
# spinner on CPU 1 still runs regularly at every tax.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
res=
for tax in 0.01 1 100; do
	start_agent --tag seq=level:1,tax:$tax
	n=0
	for c in 1 2 3 3; do
		spin -c $c $LONG >/dev/null &
		eval p$n=$!
		n=$((n + 1))
	done
	usleep 300000
	spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
	a=$!
	# The agent counts the untagged load once a second (3 in a row before it
	# takes CPUs from objects): past that, the object must still be there.
	wait_log "untagged load=[4-9]" 10000 "tax $tax: the agent never saw the 4 spinners as untagged load"
	sleep 1
	grep -q "^assign pid=$a cpus=\[0, 1\]" "$AGENT_LOG" || fail "tax $tax: no object for the sequential task"
	tail -n 5 "$AGENT_LOG" | grep -q "^unassign pid=$a" && fail "tax $tax: object withdrawn under full load"
	i0=$(cpu_jiffies 1) a0=$(run_ns $a) b0=$(run_ns $p0)
	sleep 6
	i1=$(cpu_jiffies 1) a1=$(run_ns $a) b1=$(run_ns $p0)
	grep "pid=$a" "$AGENT_LOG" | grep -q "^unassign" && fail "tax $tax: object withdrawn under full load"
	idle=$(idle_pct "$i0" "$i1")
	ams=$(( (a1 - a0) / 1000000 )) bms=$(( (b1 - b0) / 1000000 ))
	ok "tax $tax: CPU 1 idle $idle% of 6 s (/proc/stat); sequential task ran $ams ms, CPU 1's spinner $bms ms (schedstat)"
	# Not starved, as a ratio of the two tasks' times in the same window
	# (TCG stretches time): the lending bound gives CPU 1's spinner a slice
	# per bound waited, 1.5-6 % of the sequential task's time at tax 0.01
	# in 4 runs; 0 before the bound existed.
	[ "$bms" -gt 0 ] && [ $(( bms * 100 )) -ge "$ams" ] ||
		fail "tax $tax: the spinner on CPU 1 got $bms ms, under 1% of the sequential task's $ams ms"
	res="$res $idle"
	end_tasks $a $p0 $p1 $p2 $p3
	[ "$(state)" = enabled ] || fail "scheduler ejected at tax $tax"
	stop_agent
done
set -- $res
ok "CPU 1 idle at tax 0.01 / 1 / 100: $1% / $2% / $3%"
[ "$1" -ge 50 ] || fail "tax 0.01: CPU 1 idle only $1% (< 50%): the object hardly borrowed it"
[ "$3" -le 5 ] || fail "tax 100: CPU 1 idle $3% (> 5%): the object preempted its neighbour"
[ "$2" -ge $(( $3 + 10 )) ] && [ "$2" -le $(( $1 - 10 )) ] || fail "tax 1 ($2%) is not clearly between tax 100 ($3%) and tax 0.01 ($1%)"
pass
