#!/bin/sh
# A fused object lives only while its owner runs on the representative
# (issue 9, finding 2). Owner: tagged level 1, tax 0.01, fused on {0,1};
# a spinner pinned to CPU 1 waits there. (a) An RT task takes CPU 0; (b) the
# owner's affinity moves it to CPU 2. Either way CPU 1 must stop being lent:
# its spinner runs and CPU 1 is not idle (/proc/stat's absolute idle,
# schedstat).
. /opt/chameleon/guest/lib.sh

# window WHAT: over 2 s, CPU 1's idle share (absolute idle time) and its
# spinner's CPU time (schedstat), in one window; the owner's too, printed.
# Not lent, CPU 1 runs its spinner: idle at most 20 %, the spinner at least
# half the window. (No accounts_for: CPU 1, not lent, runs anyone who comes,
# the agent and the shell's forks too.)
window() {
	what=$1
	shares w 2000 $b $a cpu1
	set -- $w
	still_running $a $b
	ok "$what: CPU 1 idle $3 ‰ of 2 s, its spinner ran $1 ‰, the owner $2 ‰"
	[ "$3" -le 200 ] || fail "$what: CPU 1 still idle $3 ‰ (lent with no owner running)"
	[ "$1" -ge 500 ] || fail "$what: CPU 1's spinner ran only $1 ‰ of 2 s"
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
