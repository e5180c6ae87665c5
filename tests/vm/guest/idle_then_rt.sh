#!/bin/sh
# A task put into an idle CPU's local queue is not left there when an RT task
# wakes on that CPU at the same moment. The kernel calls cpu_release() when a
# higher class takes a CPU from a running scx task; a CPU that was idle had
# none, so nobody is told, and the RT task picks before the task the wakeup
# put there (the same without a word: a running task that becomes RT itself).
# On 7.1+ the guard timer re-enqueues a local queue no scx task has served
# for 50 ms (preempt.h: chameleon_local_linger).
# Here (wakepair): W, allowed on CPUs 1 and 2, sleeps; each round the parent
# (on CPU 0) wakes W, which last ran on idle CPU 1, and right after it H, an
# RT task pinned to CPU 1 that then spins 600 ms; CPU 2 runs a spinner. W's
# wait per round from its schedstat (run_delay). First under EEVDF for
# reference, then under the policy, asserted: W never waits half a burst.
. /opt/chameleon/guest/lib.sh

taskset -p 0x9 $$ >/dev/null || fail "cannot pin the test shell"
rt_throttling_off
# As rt_hog: kworker/1:N waits for the RT bursts as under EEVDF.
WATCHDOG_MS=10000

# phase ROUNDS: prints "MAX_WAIT_MS ROUNDS_OVER_HALF_A_BURST"; fails (run
# it with get) if wakepair fails or does not report both figures.
phase() {
	spin -c 2 $LONG >/dev/null &
	_s=$!
	_out=$(taskset 0x1 wakepair -r 1 -w 6 -b 600 -n "$1" 2>&1) || { restore; fail "wakepair: $_out"; }
	end_tasks $_s
	_fig=$(echo "$_out" | sed -n 's/.*max_wait_ms=\([0-9][0-9]*\).* over_half=\([0-9][0-9]*\).*/\1 \2/p')
	[ -n "$_fig" ] || { restore; fail "wakepair did not report max_wait_ms and over_half: $_out"; }
	echo "$_fig"
}

get r phase 8
set -- $r
ok "EEVDF (reference): W's longest wait $1 ms, $2 of 8 rounds over 300 ms"
start_agent --events
get r phase 15
set -- $r
restore
ok "scx_chameleon: W's longest wait $1 ms, $2 of 15 rounds over 300 ms"
[ "$(state)" = enabled ] || fail "scheduler ejected"
[ "$2" = 0 ] || fail "W waited $1 ms behind the RT task in CPU 1's local queue ($2 rounds of 15 over half a burst)"
stop_agent
pass
