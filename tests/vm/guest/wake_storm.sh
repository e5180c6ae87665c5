#!/bin/sh
# A waker of many (tests/run boots 8 CPUs, one LLC): wakestorm wakes 5
# tasks in turn through their pipes (sync wakeups), after rounds that make
# it known as a waker of many (sync_flags()), and each woken task then
# spins. Until the storm the tasks run only on CPUs 1-2, which two pinned
# spinners keep busy: the CPU each woken task last ran on is not idle, and
# CPUs 3-7 are. The kernel's idle search then answers with the waker's CPU
# while nothing waits in that CPU's *local* queue; ours queues the wakee
# in the CPU's own queue, which that test does not see. Asserted,
# from the tasks' schedstat over 2 s starting 0.2 s after the last wake,
# under EEVDF and then ours: each task ran >= 60 % of a CPU and >= 70 % of
# the least EEVDF gave any of them: the wakees were spread over the idle
# CPUs, not queued behind their waker.
. /opt/chameleon/guest/lib.sh

N=5
FAIR=1000
taskset -p 0x1 $$ >/dev/null || fail "cannot pin the test shell"

# storm VAR: the N tasks' shares (per mille of one CPU) in VAR.
storm() {
	rm -f /tmp/storm.out
	taskset 0x6 spin $LONG >/dev/null &
	_s1=$!
	taskset 0x6 spin $LONG >/dev/null &
	_s2=$!
	taskset 0xf9 wakestorm $N 1-2 >/tmp/storm.out 2>&1 &
	_w=$!
	_i=0
	until grep -q '^wakestorm pids' /tmp/storm.out 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -le 300 ] || fail "wakestorm printed no pids: $(cat /tmp/storm.out)"
		usleep 20000
	done
	_pids=$(sed -n 's/^wakestorm pids //p' /tmp/storm.out)
	usleep 200000
	shares "$1" 2000 $_pids
	end_tasks $_pids $_s1 $_s2
	wait $_w 2>/dev/null
}

storm eevdf
least=$(echo $eevdf | tr ' ' '\n' | sort -n | head -1)
ok "EEVDF: $N tasks woken in turn: $eevdf per mille (least $least)"

start_agent
storm ours
ok "ours: $ours per mille"
for s in $ours; do
	[ $(( s * 100 )) -ge $(( FAIR * 60 )) ] || fail "a task got $s per mille, < 60 % of a fair $FAIR ($ours)"
	[ $(( s * 100 )) -ge $(( least * 70 )) ] || fail "a task got $s per mille, < 70 % of EEVDF's least $least ($ours)"
done
[ "$(state)" = enabled ] || fail "scheduler ejected"
stop_agent
pass
