#!/bin/sh
# A queue its CPU no longer serves is served by the others: task X, allowed
# on CPUs H and D, runs alone on CPU H when an RT hog takes CPU H for good
# (RT throttling off), which puts X back in CPU H's queue; CPU D is kept busy
# by two tasks pinned there (its own queue is never empty, so it never
# steals), as are the other two CPUs. Under EEVDF the load balancer moves X
# to CPU D; here hotplug_guard drains the queue of a CPU a higher class has
# held for 50 ms (preempt.h), and no placement puts X back on CPU H while the
# RT task is queued there (cpu_held).
# Asserted from X's schedstat over 6 s (wait_watch): it gets >= 20 % of a
# CPU (a third of CPU D is its fair share there), and its mean wait per turn
# on a CPU (run_delay / timeslices) and its longest stretch without running
# stay within the design's bound for a queue its CPU does not serve: drained
# by hotplug_guard once nothing has dispatched there for RESCUE = 200 ms
# (CHAMELEON_RESCUE_NS, bpf/hotplug.bpf.c), checked every guard period
# (10 ms), then X waits behind CPU D's two tasks (a slice of 20 ms each).
# H is the CPU the guard timer runs on (read from /proc/timer_list with every
# CPU busy, so that the timer stays put): the guard's softirqs that overrun
# there go to ksoftirqd, an scx task the hog starves, and the guard stops
# with them unless a tick elsewhere restarts it (guard_watch).
# TCG allowance: x2 (late timer ticks, kicks to busy vCPUs); the longest
# stretch may exceed it by the sampler's own longest gap (wait_watch: its
# resolution). A tenfold longer rescue (RELEASE 500 ms, RESCUE 2 s) fails
# the longest stretch.
. /opt/chameleon/guest/lib.sh
RESCUE_MS=200 GUARD_MS=10 SLICE_MS=20
BOUND_MS=$(( 2 * (RESCUE_MS + GUARD_MS + 2 * SLICE_MS) ))
# The kernel's watchdog at its default: a kthread bound to CPU H (a per-CPU
# kworker) waits for the hog as long as the hog runs, under EEVDF too with
# RT throttling off; the wait this test bounds is X's, from its schedstat.
WATCHDOG_MS=10000

rt_throttling_off

start_agent --events
# Every CPU busy while the guard timer's CPU is read: an idle CPU's timer
# moves to a busy one when it re-arms.
probes=
for c in 0 1 2 3; do spin -c $c $LONG >/dev/null & probes="$probes $!"; done
sleep 1
H=$(awk '/^cpu: /{c=$2} /bpf_timer_cb/{print c; exit}' /proc/timer_list 2>/dev/null)
case $H in [0-3]) ;; *) H=1 ;; esac
D=$(( (H + 1) % 4 )) A=$(( (H + 2) % 4 )) B=$(( (H + 3) % 4 ))
echo "the guard timer runs on CPU $H: the hog takes it, X may run on CPUs $H and $D"
spin -c $A $LONG >/dev/null &
s0=$!
spin -c $D $LONG >/dev/null &
s2=$!
spin -c $D $LONG >/dev/null &
s22=$!
spin -c $B $LONG >/dev/null &
s3=$!
spin -c $H $LONG >/dev/null &
x=$!
end_tasks $probes
sleep 1
# X may now run on CPU D as well; it keeps running on CPU H, alone there.
taskset -p $(printf %x $(( (1 << H) | (1 << D) ))) $x >/dev/null || { restore; fail "taskset failed"; }
# The hog takes CPU H 1 s into the window, so that X's whole wait in CPU H's
# queue (from the hog's start to the drain) is inside it.
(usleep 1000000; exec spin -f 50 -c $H $LONG) >/dev/null &
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
ok "X (CPUs $H,$D, CPU $H held by an RT hog): ran $ran ms of 6 s in $turns turns, mean wait per turn $mean ms (bound $BOUND_MS), longest stretch without running $longest ms (bound $BOUND_MS + the sampler's longest gap, $gap ms)"
[ "$ran" -ge 1200 ] || fail "X ran only $ran ms of 6 s while its CPU was held by an RT task"
[ "$mean" -le "$BOUND_MS" ] || fail "X waited $mean ms per turn on average (bound: 2 x (rescue $RESCUE_MS + guard $GUARD_MS + 2 slices of $SLICE_MS) = $BOUND_MS ms)"
[ "$longest" -le $(( BOUND_MS + gap )) ] || fail "X went $longest ms without running (bound $BOUND_MS ms + the sampler's gap of $gap ms)"
[ "$(state)" = enabled ] || fail "scheduler ejected"
stop_agent
pass
