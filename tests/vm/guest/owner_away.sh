#!/bin/sh
# An object's owner that runs away from its representative goes back to it.
# A tagged level-1 task fuses on its object; it is then pinned to a CPU
# outside the object for 20 ms (the kernel moves it there) and unpinned
# again, before the agent sees the affinity (it keeps the object). On the
# CPU it was moved to it is not kept running past its slice (dispatch's
# renew() is for an owner on its fused representative only): its next
# enqueue sends it to its representative. By the kernel's account
# (/proc/PID/stat's task CPU, sampled for 2 s after each of 4 rounds) it
# runs there, and it fuses again (events).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
scx_chameleon tag seq --level 1 >/dev/null || fail "tag failed"
start_agent --events
spin -g /sys/fs/cgroup/seq 30 >/dev/null &
a=$!
until_ok 5000 "pid $a has a level-1 object" has_pair $a
rep=$PAIR_REP lent=$PAIR_LENT
ok "pid $a has the object [$rep, $lent]"
# A CPU outside the object, on another core.
away=$(( (rep / 2 * 2 + 2) % $(nproc) ))
on_rep() { [ "$(task_cpu $a $rep 1 1)" = "1 1" ]; }
on=0 n=0
for round in 1 2 3 4; do
	until_ok 5000 "pid $a runs on its representative $rep" on_rep
	m0=$(log_mark)
	taskset -p $(( 1 << away )) $a >/dev/null || fail "cannot pin pid $a to CPU $away"
	usleep 20000
	taskset -p 0xf $a >/dev/null || fail "cannot unpin pid $a"
	set -- $(task_cpu $a $rep 40 50)
	on=$(( on + $1 )) n=$(( n + $2 ))
	f=$(tail -n +$(( m0 + 1 )) "$AGENT_LOG" | grep -c "^event  *fuse .*pid=$a ")
	ok "round $round: moved to CPU $away for 20 ms; then on CPU $rep in $1 of $2 samples over 2 s, $f fuses"
	[ "$f" -gt 0 ] || fail "round $round: pid $a did not fuse again after it was moved away"
done
[ "$(object $a)" = "$rep, $lent" ] || fail "pid $a's object changed to [$(object $a)]: the agent saw the pin"
ok "pid $a on its representative in $on of $n samples after being moved away"
[ "$on" -ge $(( n * 3 / 4 )) ] || fail "pid $a ran on its representative (CPU $rep) in only $on of $n samples"
end_tasks $a
stop_agent
pass
