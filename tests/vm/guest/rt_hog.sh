#!/bin/sh
# A queue its CPU no longer serves is served by the others: task X, allowed
# on CPUs 1 and 2, runs alone on CPU 1 when an RT hog takes CPU 1 for good
# (RT throttling off), which puts X back in CPU 1's queue; CPU 2 is kept busy
# by two tasks pinned there (its own queue is never empty, so it never
# steals), as are CPUs 0 and 3. Under EEVDF the load balancer moves X to
# CPU 2; here hotplug_guard drains the queue of a CPU a higher class has held
# for 50 ms (preempt.h).
# Asserted from X's schedstat over 6 s (wait_watch): it gets >= 20 % of a
# CPU (a third of CPU 2 is its fair share there), and its mean wait per turn
# on a CPU (run_delay / timeslices) and its longest stretch without running
# stay within the design's bound for a queue its CPU does not serve: drained
# by hotplug_guard once nothing has dispatched there for RESCUE = 200 ms
# (CHAMELEON_RESCUE_NS, bpf/hotplug.bpf.c), checked every guard period
# (10 ms), then X waits behind CPU 2's two tasks (a slice of 5 ms each).
# (The 50 ms drain of a CPU the kernel reported taken, CHAMELEON_RELEASE_NS,
# is not what serves X in this scenario today: the bound is the one that does.)
# TCG allowance: x2 (late timer ticks, kicks to busy vCPUs); the longest
# stretch may exceed it by the sampler's own longest gap (wait_watch: its
# resolution). A tenfold longer rescue (RELEASE 500 ms, RESCUE 2 s) fails
# the longest stretch.
. /opt/chameleon/guest/lib.sh
RESCUE_MS=200 GUARD_MS=10 SLICE_MS=5
BOUND_MS=$(( 2 * (RESCUE_MS + GUARD_MS + 2 * SLICE_MS) ))
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
# X may now run on CPU 2 as well; it keeps running on CPU 1, alone there.
taskset -p 0x6 $x >/dev/null || { restore; fail "taskset failed"; }
# The hog takes CPU 1 1 s into the window, so that X's whole wait in CPU 1's
# queue (from the hog's start to the drain) is inside it.
(usleep 1000000; exec spin -f 50 -c 1 $LONG) >/dev/null &
hog=$!
get ww wait_watch $x 6000
# The hog runs at RT priority 50 (/proc/PID/stat field 18: -1 - 50).
[ "$(cut -d' ' -f18 /proc/$hog/stat)" = -51 ] || { restore; fail "the hog is not RT: $(cut -d' ' -f2,18 /proc/$hog/stat)"; }
still_running $s0 $s2 $s22 $s3 $x $hog
end_tasks $hog
restore
end_tasks $s0 $s2 $s22 $s3 $x
set -- $ww
longest=$1 ran=$2 turns=$3 gap=$5
[ "$turns" -gt 0 ] || fail "X never ran in 6 s while CPU 1 was held by an RT task"
mean=$(( $4 / turns ))
ok "X (CPUs 1-2, CPU 1 held by an RT hog): ran $ran ms of 6 s in $turns turns, mean wait per turn $mean ms (bound $BOUND_MS), longest stretch without running $longest ms (bound $BOUND_MS + the sampler's longest gap, $gap ms)"
[ "$ran" -ge 1200 ] || fail "X ran only $ran ms of 6 s while its CPU was held by an RT task"
[ "$mean" -le "$BOUND_MS" ] || fail "X waited $mean ms per turn on average (bound: 2 x (rescue $RESCUE_MS + guard $GUARD_MS + 2 slices of $SLICE_MS) = $BOUND_MS ms)"
[ "$longest" -le $(( BOUND_MS + gap )) ] || fail "X went $longest ms without running (bound $BOUND_MS ms + the sampler's gap of $gap ms)"
[ "$(state)" = enabled ] || fail "scheduler ejected"
stop_agent
pass
