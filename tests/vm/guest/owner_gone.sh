#!/bin/sh
# A fused object lives only while its owner runs on the representative
# (issue 9, finding 2). Owner: tagged level 1, tax 0.01, fused on {0,1};
# a spinner pinned to CPU 1 waits there. (a) An RT task takes CPU 0; (b) the
# owner's affinity moves it to CPU 2. Either way CPU 1 must stop being lent:
# its spinner runs and CPU 1 is not idle (/proc/stat, schedstat).
. /opt/chameleon/guest/lib.sh

# window WHAT: CPU 1's idle share and its spinner's CPU time over 2 s.
window() {
	i0=$(cpu_jiffies 1) b0=$(run_ns $b)
	sleep 2
	i1=$(cpu_jiffies 1) b1=$(run_ns $b)
	still_running $a $b
	idle=$(idle_pct "$i0" "$i1") bms=$(( (b1 - b0) / 1000000 ))
	ok "$1: CPU 1 idle $idle% of 2 s, its spinner ran $bms ms"
	[ "$idle" -le 20 ] || fail "$1: CPU 1 still idle $idle% (lent with no owner running)"
	[ "$bms" -ge 1000 ] || fail "$1: CPU 1's spinner ran only $bms ms of 2 s"
}

make_cgroup seq
start_agent --events --tag seq=level:1,tax:0.01
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
wait_log "fuse cpu=0 pid=$a " 5000 "the owner never fused"
spin -c 1 $LONG >/dev/null &
b=$!
sleep 1

# (a) SCHED_FIFO spinner on the representative for 3.5 s.
spin -f 50 -c 0 $LONG >/dev/null &
r=$!
usleep 700000
window "RT task on the representative"
end_tasks $r
sleep 1

# (b) the owner may no longer run on its representative.
taskset -p 0x4 $a >/dev/null || fail "taskset failed"
usleep 500000
window "owner moved to CPU 2"
end_tasks $a $b
[ "$(state)" = enabled ] || fail "scheduler ejected"
stop_agent
pass
