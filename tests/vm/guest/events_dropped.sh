#!/bin/sh
# Events dropped from the ring buffer must not leave a task without its object
# nor the CPU list wrong. The agent is stopped (SIGSTOP) while 5000 short-lived
# tagged processes fill the ring buffer (a demand and an exit each); then a
# tagged CPU-bound task X starts, its DEMAND dropped with the rest, and CPU 3
# goes offline, that event dropped too. After SIGCONT: the drops are counted,
# X gets an object (it asks again once it sees events were lost) and the node
# manager, reconciled with the kernel's CPU list, no longer places objects on
# CPU 3; once CPU 3 is back (its event delivered), it does again.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
kill -STOP "$AGENT_PID" || fail "cannot stop the agent"
# (A subshell each, as in demand_storm.sh: a fork without an exec, half the
# cost under TCG, with the same DEMAND and task_exit.)
sh -c 'echo $$ >/sys/fs/cgroup/seq/cgroup.procs; i=0; while [ $i -lt 5000 ]; do (:); i=$((i + 1)); done'
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
x=$!
echo 0 >/sys/devices/system/cpu/cpu3/online || fail "cannot offline cpu3"
sleep 1
kill -CONT "$AGENT_PID"
wait_log "DEBUG assign pid=$x " 5000 "pid $x never got an object after its DEMAND was dropped"
ok "pid $x, whose DEMAND was dropped, got an object: $(grep -m1 "DEBUG assign pid=$x " "$AGENT_LOG")"
# manager_cpus: the CPUs the node manager places objects on, per its status.
manager_cpus() { scx_chameleon status | sed -n 's/^node manager places objects on cpus //p'; }
t0=$(now_ms)
until [ "$(manager_cpus)" = "[0, 1, 2]" ]; do
	[ $(( $(now_ms) - t0 )) -lt 3000 ] || fail "the node manager still places objects on $(manager_cpus) with cpu3 offline"
	usleep 100000
done
ok "cpu3 offline, its event dropped: the node manager places objects on $(manager_cpus) within $(( $(now_ms) - t0 )) ms"
echo 1 >/sys/devices/system/cpu/cpu3/online || fail "cannot online cpu3"
t0=$(now_ms)
until [ "$(manager_cpus)" = "[0, 1, 2, 3]" ]; do
	[ $(( $(now_ms) - t0 )) -lt 3000 ] || fail "cpu3 back, but the node manager places objects on $(manager_cpus)"
	usleep 100000
done
ok "cpu3 back: $(manager_cpus)"
end_tasks $x
stop_agent
dropped=$(sed -n 's/^summary .* dropped=\([0-9]*\) .*/\1/p' "$AGENT_LOG")
[ "${dropped:-0}" -gt 0 ] || fail "no event was dropped: the test's premise failed ($(grep '^summary' "$AGENT_LOG"))"
ok "$dropped events dropped while the agent was stopped"
pass
