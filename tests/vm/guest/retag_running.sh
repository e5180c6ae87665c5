#!/bin/sh
# A task that never sleeps, alone on its CPU, is retagged when it moves
# into a tagged cgroup, at its next slice end: dispatch renews its slice
# without an enqueue, and checks its tag first. Each of 6 rounds moves an
# untagged spinner into a tagged cgroup (echo PID > cgroup.procs), waits
# 1 s without a process of its own running (a poller would land on the
# spinner's CPU and hide the missing check), then reads when the agent
# assigned its object (the assign line's ts_ns, the clock now_ns reads) and
# moves it back. The retag takes a slice (20 ms), the agent's demand round
# trip a few more: at least 5 of the 6 rounds are assigned within 300 ms of
# the move (a liveness bound 10x what it takes; without the check, a
# retag waited for another task to land on the CPU: 60-1,824 ms, 3 of 8
# rounds within 300 ms).
. /opt/chameleon/guest/lib.sh

make_cgroup plain
make_cgroup tagged
scx_chameleon tag tagged --level 1 >/dev/null || fail "tag failed"
start_agent
spin -g /sys/fs/cgroup/plain 60 >/dev/null &
a=$!
sleep 1
quick=0
for r in 1 2 3 4 5 6; do
	m0=$(log_mark)
	t0=$(now_ns)
	echo $a >/sys/fs/cgroup/tagged/cgroup.procs || fail "cannot move pid $a"
	sleep 1
	ts=$(tail -n +$(( m0 + 1 )) "$AGENT_LOG" | sed -n "s/.*DEBUG assign pid=$a .*ts_ns=\([0-9]*\).*/\1/p" | head -n 1)
	if [ -n "$ts" ]; then
		ms=$(( (ts - t0) / 1000000 ))
		[ "$ms" -le 300 ] && quick=$(( quick + 1 ))
		ok "round $r: assigned $ms ms after the move"
	else
		ok "round $r: not assigned within 1 s of the move"
	fi
	m0=$(log_mark)
	echo $a >/sys/fs/cgroup/plain/cgroup.procs || fail "cannot move pid $a back"
	wait_log_after $m0 "DEBUG unassign pid=$a " 5000 "round $r: object not withdrawn after the move back"
done
[ "$quick" -ge 5 ] || fail "only $quick of 6 rounds assigned within 300 ms of the move: the running task's tag is not checked at its slice end"
ok "$quick of 6 rounds assigned within 300 ms of the move"
end_tasks $a
stop_agent
pass
