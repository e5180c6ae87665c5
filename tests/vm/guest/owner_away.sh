#!/bin/sh
# An object's owner that runs away from its representative goes back to it.
# A tagged level-1 task fuses on its object; it is then pinned to a CPU
# outside the object for 20 ms (the kernel moves it there) and unpinned
# again. On the CPU it was moved to it is not kept running past its slice
# (dispatch's renew() is for an owner on its fused representative only): its
# next enqueue sends it to its representative. By the kernel's account
# (/proc/PID/stat's task CPU, sampled for 2 s after each round) it runs
# there, and it fuses again (events). A round in which the agent saw the pin
# and gave the task another object is not counted (under the emulator the
# 20 ms can stretch past the agent's look); 4 rounds are.
# OWNER_SPIN: spin's options for the owner (owner_nomigrate.sh: -M).
# After every round the scheduler is still attached.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
scx_chameleon tag seq --level 1 >/dev/null || fail "tag failed"
start_agent --events
spin ${OWNER_SPIN:-} -g /sys/fs/cgroup/seq 60 >/dev/null &
a=$!
on=0 n=0 counted=0
for round in 1 2 3 4 5 6 7 8; do
	until_ok 5000 "pid $a has a level-1 object" has_pair $a
	rep=$PAIR_REP lent=$PAIR_LENT
	# A CPU outside the object, on another core.
	away=$(( (rep / 2 * 2 + 2) % $(nproc) ))
	until_ok 5000 "pid $a runs on its representative $rep" \
		eval '[ "$(task_cpu $a $rep 1 1)" = "1 1" ]'
	m0=$(log_mark)
	taskset -p $(( 1 << away )) $a >/dev/null || fail "cannot pin pid $a to CPU $away"
	usleep 20000
	taskset -p 0xf $a >/dev/null || fail "cannot unpin pid $a"
	set -- $(task_cpu $a $rep 40 50)
	[ "$(state)" = enabled ] && agent_alive ||
		fail "round $round: the scheduler was ejected (state $(state))"
	if [ "$(object $a)" != "$rep, $lent" ]; then
		ok "round $round: the agent saw the pin (object now [$(object $a)]): not counted"
		continue
	fi
	f=$(tail -n +$(( m0 + 1 )) "$AGENT_LOG" | grep -c "^event  *fuse .*pid=$a ")
	ok "round $round: moved to CPU $away for 20 ms; then on CPU $rep in $1 of $2 samples over 2 s, $f fuses"
	[ "$f" -gt 0 ] || fail "round $round: pid $a did not fuse again after it was moved away"
	on=$(( on + $1 )) n=$(( n + $2 )) counted=$(( counted + 1 ))
	[ $counted = 4 ] && break
done
[ $counted = 4 ] || fail "only $counted of 8 rounds kept the object"
ok "pid $a on its representative in $on of $n samples after being moved away"
[ "$on" -ge $(( n * 3 / 4 )) ] || fail "pid $a ran on its representative in only $on of $n samples"
end_tasks $a
stop_agent
pass
