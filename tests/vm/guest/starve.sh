#!/bin/sh
# Bounded waits (issue 9, finding 1): a tagged nice -20 owner at tax 0.01
# borrows CPU 1 almost all the time; a nice 19 task pinned to CPU 1 must
# still get CPU regularly. By the vtime rule alone it would wait about
# 43 s per slice; the lending bound gives the CPU back after --lend-wait-ms.
# Measured from /proc/<pid>/schedstat over 12 s (wait_watch): the waiter's
# mean wait per turn on the CPU (run_delay / timeslices), its longest stretch
# without CPU time, and its CPU time.
#
# Bounds from the design: the waiter waits at most W = --lend-wait-ms (the
# agent's default, 50 ms: src/agent/opts.rs) plus two guard periods (10 ms
# each: the tick's backstop, lend_due() in bpf/main.bpf.c), then the CPU is
# not lent for the waiter's turn (CHAMELEON_SHORT_SLICE_NS, 5 ms: not a whole
# slice), so it runs. TCG allowance: x2 on that wait
# (late timer ticks, a kick to a busy vCPU waits ~4 ms for the emulator);
# the longest stretch may exceed it by the sampler's own longest gap (its
# resolution). A tenfold longer lending bound (--lend-wait-ms 500) fails.
. /opt/chameleon/guest/lib.sh

LEND_WAIT_MS=50 GUARD_MS=10 TURN_MS=5
BOUND_MS=$(( 2 * (LEND_WAIT_MS + 2 * GUARD_MS) ))
make_cgroup seq
# CPUs 0 and 1 are the owner's and the waiter's alone: this shell, its
# samplers and the agent stay on 2-3, so nothing else splits the object.
taskset -p 0xc $$ >/dev/null || fail "cannot pin the test shell"
start_agent --events --tag seq=level:1,tax:0.01
taskset 0x3 spin -n -20 -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
wait_log "fuse cpu=0 pid=$a " 5000 "the owner never fused"
spin -n 19 -c 1 $LONG >/dev/null &
w=$!
usleep 500000
get ww wait_watch $w 12000
end_tasks $a $w
set -- $ww
longest=$1 ran=$2 turns=$3 gap=$5
[ "$turns" -gt 0 ] || fail "the waiter never ran in 12 s"
mean=$(( $4 / turns ))
reasons=$(grep -E "split cpu=0 pid=$a " "$AGENT_LOG" | sed -n 's/.*reason=\([a-z]*\).*/\1/p' | sort | uniq -c | tr -s ' \n' ' ')
ok "pinned nice-19 waiter on the lent CPU, 12 s: $ran ms of CPU in $turns turns, mean wait per turn $mean ms (bound $BOUND_MS), longest stretch without any $longest ms (bound $BOUND_MS + the sampler's longest gap, $gap ms); owner's splits by reason:$reasons"
[ "$(state)" = enabled ] || fail "scheduler ejected"
[ "$mean" -le "$BOUND_MS" ] || fail "the waiter waited $mean ms per turn on average (bound: 2 x (lend wait $LEND_WAIT_MS + 2 guards of $GUARD_MS) = $BOUND_MS ms)"
[ "$longest" -le $(( BOUND_MS + gap )) ] || fail "the waiter went $longest ms without CPU (bound $BOUND_MS ms + the sampler's gap of $gap ms)"
# At least a turn per bounded wait: 12 s / (BOUND + turn) turns.
min=$(( 12000 * TURN_MS / (BOUND_MS + TURN_MS) ))
[ "$ran" -ge "$min" ] || fail "the waiter got $ran ms of CPU in 12 s (a turn of $TURN_MS ms per bounded wait: >= $min ms)"
grep -q "split cpu=0 pid=$a .*reason=bound" "$AGENT_LOG" || fail "no split for the wait bound"
stop_agent
pass
