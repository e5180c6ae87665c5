#!/bin/sh
# A task that leaves SCHED_FIFO while it runs (the agent once attached, a PI
# boost ending) gives its CPU back to us: no switch from a higher class
# follows such a change, and a CPU still counted as held by one refuses
# every task placed after it until some real-time turn there (the kernel's
# watchdog stopper visits each CPU every few seconds). Each round a task
# pinned to CPU 0 is switched in there at SCHED_FIFO, drops to SCHED_OTHER
# 100 ms later and ends; then a tagged level-1 task starts (CPU 1 busy with
# a pinned task, so it starts on CPU 2 or 3) and gets the object [0, 1]:
# by the kernel's account (/proc/PID/stat's task CPU, sampled for 1 s) it
# runs on its representative, CPU 0, from then on.
. /opt/chameleon/guest/lib.sh

[ "$(nproc)" = 4 ] || fail "needs 4 CPUs, has $(nproc)"
make_cgroup seq
scx_chameleon tag seq --level 1 >/dev/null || fail "tag failed"
start_agent
spin -c 1 60 >/dev/null &
b=$!
on=0 n=0
for round in 1 2 3 4; do
	spin -c 0 -f 1 -F 100 0.3 >/dev/null || fail "the SCHED_FIFO task failed"
	spin -g /sys/fs/cgroup/seq 5 >/dev/null &
	a=$!
	until_ok 5000 "pid $a has a level-1 object" has_pair $a
	if [ "$PAIR_REP" != 0 ]; then
		ok "round $round: pid $a has [$PAIR_REP, $PAIR_LENT], not on CPU 0: not counted"
	else
		set -- $(task_cpu $a 0 20 50)
		on=$(( on + $1 )) n=$(( n + $2 ))
		ok "round $round: pid $a, object [0, 1], on CPU 0 in $1 of $2 samples over 1 s"
	fi
	end_tasks $a
done
[ "$n" -ge 40 ] || fail "only $(( n / 20 )) rounds gave an object on CPU 0"
[ "$on" -ge $(( n * 3 / 4 )) ] || fail "the tagged tasks ran on their representative (CPU 0) in $on of $n samples: CPU 0 still counted as held"
ok "on the representative in $on of $n samples"
end_tasks $b
[ "$(state)" = enabled ] || fail "scheduler not enabled at the end"
stop_agent
pass
