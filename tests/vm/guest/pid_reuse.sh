#!/bin/sh
# A pid reused after the agent missed the exit of the task that had it
# (issue 32, finding 4). --no-exit-notice stands for task_exit events lost
# (ring buffer full). The kernel is made to give a newcomer the pid of a
# task just killed (ns_last_pid).
#   a: a tagged spinner holds an object; killed, its pid goes at once to a
#      newcomer in the same tagged cgroup: the newcomer gets an object of
#      its own and fuses (the agent took it for a new task, not the old one);
#   b: that one killed, its pid goes to an untagged newcomer (root cgroup):
#      the object is not kept for it. The agent finds the old task gone by
#      its pidfd within its reconcile (1 s), where /proc/PID names the
#      newcomer; the status lists no object for the pid, the agent logs
#      its unassign, and the newcomer never fuses.
#   c: a tagged task's DEMAND read only after the task was killed and its
#      pid given to an untagged newcomer (the agent stopped meanwhile, as
#      a busy agent is late): the agent must not hold the newcomer for the
#      task that asked (issue 45, item 16: it opened a pidfd by the pid and
#      gave the newcomer an object). The DEMAND carries the task's start
#      time; the agent logs the reused pid, and the newcomer gets no object.
. /opt/chameleon/guest/lib.sh
TEST=pid_reuse

# as_pid PID CMD...: run CMD in the background as process PID (the kernel
# gives the next fork ns_last_pid + 1; another fork may come first: retry).
# Sets NEW to the pid CMD got.
as_pid() {
	_want=$1
	shift
	_try=0
	while :; do
		echo $((_want - 1)) >/proc/sys/kernel/ns_last_pid || fail "cannot write ns_last_pid"
		"$@" &
		NEW=$!
		[ "$NEW" = "$_want" ] && return 0
		kill -9 "$NEW" 2>/dev/null
		wait "$NEW" 2>/dev/null
		_try=$((_try + 1))
		[ $_try -lt 50 ] || fail "pid $_want was never given again in 50 tries (last $NEW)"
	done
}

make_cgroup seq
start_agent --events --no-exit-notice --tag seq=level:1
spin -g /sys/fs/cgroup/seq 60 >/dev/null &
p=$!
wait_log "fuse cpu=[0-9]* pid=$p " 10000 "pid $p never fused"
ok "a tagged spinner (pid $p) fused"

# a: a tagged newcomer under the pid.
kill -9 $p
wait $p 2>/dev/null
m=$(log_mark)
as_pid $p spin -g /sys/fs/cgroup/seq 60
ok "a: pid $p killed and given to a tagged newcomer"
wait_log_after "$m" "fuse cpu=[0-9]* pid=$p " 10000 "a: the tagged newcomer under pid $p never fused"
has_pair $p || fail "a: the tagged newcomer under pid $p has no object: [$(object $p)]"
ok "a: the newcomer fused, object [$(object $p)]"

# b: an untagged newcomer under the pid.
kill -9 $p
wait $p 2>/dev/null
m=$(log_mark)
as_pid $p spin 30
grep -q "^0::/$" /proc/$p/cgroup || fail "b: the newcomer is not in the root cgroup: $(cat /proc/$p/cgroup)"
ok "b: pid $p killed and given to an untagged newcomer"
t0=$(now_ms)
until [ -z "$(object $p)" ]; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] ||
		fail "b: pid $p, now an untagged newcomer's, still holds [$(object $p)] 5 s later (the old task's exit was missed)"
	usleep 100000
done
ok "b: no object for pid $p after $(( $(now_ms) - t0 )) ms"
wait_log_after "$m" "DEBUG.*unassign pid=$p " 2000 "b: no unassign of pid $p logged"
sleep 2
tail -n +$((m + 1)) "$AGENT_LOG" | grep -q "fuse cpu=[0-9]* pid=$p " && fail "b: the untagged newcomer under pid $p fused"
[ -z "$(object $p)" ] || fail "b: pid $p holds [$(object $p)] again"
kill $p
wait $p 2>/dev/null

# c: the DEMAND read after its pid went to a newcomer.
kill -STOP "$AGENT_PID"
spin -g /sys/fs/cgroup/seq 60 >/dev/null &
q=$!
sleep 1	# it runs in the tagged cgroup: its DEMAND waits in the ring buffer
kill -9 $q
wait $q 2>/dev/null
as_pid $q spin 30
grep -q "^0::/$" /proc/$q/cgroup || { kill -CONT "$AGENT_PID"; fail "c: the newcomer is not in the root cgroup: $(cat /proc/$q/cgroup)"; }
m=$(log_mark)
kill -CONT "$AGENT_PID"
ok "c: tagged pid $q asked and was killed, its pid given to an untagged newcomer, while the agent was stopped"
wait_log_after "$m" "DEBUG.*reused pid=$q:" 5000 "c: the agent did not tell the DEMAND of pid $q from the newcomer (no 'reused pid=$q'); object [$(object $q)]"
sleep 2
[ -z "$(object $q)" ] || fail "c: pid $q, an untagged newcomer's, holds [$(object $q)]"
tail -n +$((m + 1)) "$AGENT_LOG" | grep -q " assign pid=$q \|fuse cpu=[0-9]* pid=$q " && fail "c: the untagged newcomer under pid $q was given an object or fused"
ok "c: $(tail -n +$((m + 1)) "$AGENT_LOG" | grep -m1 -o "reused pid=$q:.*"); no object for the newcomer"
kill $q
agent_alive || fail "agent died"
stop_agent
pass
