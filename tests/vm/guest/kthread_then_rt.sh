#!/bin/sh
# A task that a per-CPU kthread pushed off its CPU is not left behind when an
# RT task takes that CPU next. The kernel tells the scheduler once that a
# higher class took a CPU (ops.cpu_release) and again only when the CPU comes
# back (ops.cpu_acquire): if the first taker is a kthread bound there (here
# the emulation's idle injection, every 10 ms; elsewhere the stopper) and an
# RT task follows it directly, whatever was left in the CPU's local queue
# waits for the RT task to end. (CI, rt_hog on 7.3.4: `cut`, allowed on every
# CPU, waited 13 s in CPU 1's local queue behind an RT hog, then the
# watchdog.)
# Here: tasks X and Y may run on CPUs 1 and 2; CPU 2 runs a spinner pinned
# there; an RT task pinned to CPU 1 spins 1 s and sleeps 30 ms, over and over,
# so X or Y gets CPU 1 in the gaps, and when the RT task wakes during an
# injection the kthread hands CPU 1 straight to it. X and Y must be served by
# CPU 2 meanwhile, as under EEVDF: asserted from their schedstat, neither
# waits a whole RT burst (not a third of one, plus the sampler's longest gap:
# a stall of the whole VM on the host stops the clock's readers, not the
# clock, and shows as a stretch of that length). Before the fix, with X alone
# 3 runs of 6 saw it wait 630-1010 ms; with X and Y, 3 runs of 3 saw one of
# them wait 460-540 ms.
. /opt/chameleon/guest/lib.sh

# The shell and its samplers on CPUs 0 and 3, out of the way.
taskset -p 0x9 $$ >/dev/null || fail "cannot pin the test shell"
rt_throttling_off
# As rt_hog: kworker/1:N waits for the RT bursts as under EEVDF.
WATCHDOG_MS=10000

insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
start_agent --events --emulate high
grep -q "processor proxies on" "$AGENT_LOG" || fail "the policy did not bind the module's kfuncs"

spin -c 2 $LONG >/dev/null &
s2=$!
spin -c 1 $LONG >/dev/null &
x=$!
spin -c 1 $LONG >/dev/null &
y=$!
usleep 300000
taskset -p 0x6 $x >/dev/null && taskset -p 0x6 $y >/dev/null || { restore; fail "taskset failed"; }
spin -f 10 -c 1 -b 1000:30 $LONG >/dev/null &
hog=$!
usleep 500000
wait_watch $y 14000 >/tmp/stall.y &
sy=$!
get r wait_watch $x 14000
wait $sy || fail "wait_watch $y"
set -- $r
still_running $s2 $x $y $hog
end_tasks $hog
restore
end_tasks $s2 $x $y
ok "X (CPUs 1-2) beside an RT task on CPU 1 (1 s bursts) and idle injection: ran $2 ms of 14 s, longest wait $1 ms (bound 300 ms + the sampler's longest gap, $5 ms)"
[ "$(state)" = enabled ] || fail "scheduler ejected"
[ "$1" -lt $(( 300 + $5 )) ] || fail "X waited $1 ms without running (the sampler's longest gap $5 ms): left in CPU 1's local queue behind the RT task"
[ "$2" -ge 300 ] || fail "X ran only $2 ms of 14 s"
set -- $(cat /tmp/stall.y)
ok "Y, the same: ran $2 ms of 14 s, longest wait $1 ms (the sampler's longest gap $5 ms)"
[ "$1" -lt $(( 300 + $5 )) ] || fail "Y waited $1 ms without running (the sampler's longest gap $5 ms): left in CPU 1's local queue behind the RT task"
[ "$2" -ge 300 ] || fail "Y ran only $2 ms of 14 s"
stop_agent
pass
