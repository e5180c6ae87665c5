#!/bin/sh
# Lost events do not feed their own loss (issue 29, finding 4). While the
# agent is stopped (SIGSTOP) the ring buffer fills; a tagged task whose
# DEMAND was lost asks again, but at most every CHAMELEON_REDEMAND_NS
# (20 ms), not at each wake and sleep: otherwise every drop invalidated every
# task's request, each request was dropped in turn, and a few tagged tasks
# that wake often filled the buffer with thousands of drops a second for as
# long as the agent was behind.
# Two rounds, each: the agent started, stopped, the ring buffer filled by
# 5000 short-lived tagged processes, then 1 s (round 1) or 1 s with four
# tagged tasks waking every ~2 ms (round 2), the agent continued and
# stopped; its summary says how many events were dropped. The wakers' share
# of round 2's drops (round 2 minus round 1) is bounded by what their
# re-requests at one per 20 ms each can drop, with a margin for TCG time:
# four tasks over the 1 s window, 4 x 50 x 4 = 800. Before the fix it was one
# per wake and per sleep: thousands.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
# round WAKERS: the events dropped in that round, in $dropped.
round() {
	start_agent --events --tag seq=level:1,tax:1
	kill -STOP "$AGENT_PID" || fail "cannot stop the agent"
	# A subshell each, not /bin/true: a fork without an exec is half the
	# cost under TCG, and it sends the same DEMAND and task_exit.
	sh -c 'echo $$ >/sys/fs/cgroup/seq/cgroup.procs; i=0; while [ $i -lt 5000 ]; do (:); i=$((i + 1)); done'
	ws=
	k=0
	while [ $k -lt "$1" ]; do
		spin -g /sys/fs/cgroup/seq -b 1:1 $LONG >/dev/null &
		ws="$ws $!"
		k=$(( k + 1 ))
	done
	sleep 1
	[ -z "$ws" ] || end_tasks $ws
	kill -CONT "$AGENT_PID"
	sleep 1
	stop_agent
	dropped=$(sed -n 's/^summary .* dropped=\([0-9]*\) .*/\1/p' "$AGENT_LOG")
	[ -n "$dropped" ] || fail "no summary line in the agent's log"
}
round 0
d1=$dropped
round 4
d2=$dropped
ok "events dropped: $d1 with the ring buffer filled alone, $d2 with four tagged wakers beside"
[ "$d1" -gt 0 ] || fail "no event was dropped: the test's premise failed"
extra=$(( d2 - d1 ))
[ "$extra" -le 800 ] || fail "four tagged wakers added $extra drops in 1 s while the agent was stopped: lost DEMANDs re-sent at each wake and sleep"
ok "the wakers added $extra drops (at most 800: one re-request per 20 ms each)"
pass
