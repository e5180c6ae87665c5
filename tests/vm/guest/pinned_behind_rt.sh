#!/bin/sh
# A task that can run on one CPU only waits there while an RT task holds that
# CPU, as under EEVDF, and the scheduler is not ejected for it. The kernel
# ejects a scheduler that re-enqueues a task more than 256 times without it
# running (7.3: "reenqueued 257 times without running"); every re-enqueue of
# a local queue (cpu_release, the guard's drain of a queue a higher class
# holds) comes back through enqueue(), which must not put it straight back
# into the same local queue.
# Here: an RT task pinned to CPU 1 spins 6 s; a task pinned to CPU 1 wakes
# every 20 ms for 1 ms of work. Asserted: the scheduler is still enabled after
# the RT task, the pinned task runs again after it (schedstat), and the
# kernel counted (SCX_EV_REENQ_REPEAT) at most a few re-enqueues of a task
# that had been re-enqueued already without running: 125 when enqueue() put
# them back into the local queue (the guard re-enqueued it every 10 ms), 0
# since; 6 s is too short for 256, a longer RT task would trip the kernel's
# watchdog on the pinned task first (as for any scx scheduler).
. /opt/chameleon/guest/lib.sh

taskset -p 0x9 $$ >/dev/null || fail "cannot pin the test shell"
rt_throttling_off
# The pinned task (and kworker/1:N) wait for the RT task as under EEVDF.
WATCHDOG_MS=10000

start_agent --events
spin -c 1 -b 1:20 $LONG >/dev/null &
p=$!
sleep 1
spin -f 10 -c 1 6 >/dev/null &
hog=$!
wait $hog
before=$(run_ns $p)
sleep 1
after=$(run_ns $p)
restore
repeat=$(scx_event SCX_EV_REENQ_REPEAT)
ok "pinned task: ran $(( (after - before) / 1000000 )) ms in the second after the RT task; kernel's SCX_EV_REENQ_REPEAT: $repeat"
# Older kernels have no such counter: there the other checks stand alone
# (the matrix showed it absent on 6.16); from 7.1 on it must be there.
if [ -n "$repeat" ]; then
	[ "$repeat" -le 10 ] || fail "the kernel counted $repeat repeated re-enqueues: a re-enqueued task went back into the local queue"
else
	case $(uname -r) in
	[0-6].*|7.0.*) ok "kernel $(uname -r) has no SCX_EV_REENQ_REPEAT: the re-enqueue count is not checked here" ;;
	*) fail "no SCX_EV_REENQ_REPEAT in /sys/kernel/sched_ext/root/events on $(uname -r)" ;;
	esac
fi
[ "$(state)" = enabled ] || fail "scheduler ejected: $(grep -m1 'reenqueued\|EXIT' "$AGENT_LOG")"
[ "$after" -gt "$before" ] || fail "the pinned task did not run after the RT task"
end_tasks $p
stop_agent
pass
