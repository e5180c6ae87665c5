#!/bin/sh
# A queue its CPU no longer serves is served by the others: an RT hog takes
# CPU 1 for good (RT throttling off) while task X, allowed on CPUs 1 and 2,
# waits in CPU 1's queue, and CPU 2 is kept busy by two tasks pinned there
# (its own queue is never empty, so it never steals), as are CPUs 0 and 3. Under EEVDF the load balancer moves X to CPU 2;
# here hotplug_guard drains the queue of a CPU a higher class has held for
# 50 ms (preempt.h).
# Asserted from X's schedstat: it gets >= 20 % of a CPU over 6 s and never
# waits 2 s without running.
. /opt/chameleon/guest/lib.sh
# The kernel's watchdog at its default: a kthread bound to CPU 1 (a per-CPU
# kworker) waits for the hog as long as the hog runs, under EEVDF too with
# RT throttling off; the wait this test bounds is X's, from its schedstat.
WATCHDOG_MS=10000

rt_throttling_off

start_agent --events
spin -c 0 $LONG >/dev/null &
s0=$!
spin -c 2 $LONG >/dev/null &
s2=$!
spin -c 2 $LONG >/dev/null &
s22=$!
spin -c 3 $LONG >/dev/null &
s3=$!
spin -c 1 $LONG >/dev/null &
x=$!
sleep 1
spin -f 50 -c 1 $LONG >/dev/null &
hog=$!
usleep 300000
# X may now run on CPU 2 as well; it stays queued on CPU 1 (still allowed).
taskset -p 0x6 $x >/dev/null || { restore; fail "taskset failed"; }
set -- $(longest_stall $x 6)
still_running $s0 $s2 $s22 $s3 $x $hog
end_tasks $hog
restore
end_tasks $s0 $s2 $s22 $s3 $x
ok "X (CPUs 1-2, CPU 1 held by an RT hog): ran $2 ms of 6 s, longest wait $1 ms"
[ "$2" -ge 1200 ] || fail "X ran only $2 ms of 6 s while its CPU was held by an RT task"
[ "$1" -lt 2000 ] || fail "X waited $1 ms without running"
[ "$(state)" = enabled ] || fail "scheduler ejected"
stop_agent
pass
