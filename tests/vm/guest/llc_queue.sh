#!/bin/sh
# LLC queues (bpf/llc_queue.bpf.c, --llc-queues), on 4 CPUs in 2 sockets (two LLCs of one
# core each: tests/run boots it with --sockets 2):
#   a) six untagged CPU-bound tasks started on socket 0 (CPUs 0-1), then let
#      run anywhere: they join LLC 0's queue, and socket 1's CPUs take from
#      it (another LLC's queue when their own is empty). Measured from the
#      tasks' schedstat over the same window under EEVDF first, then under
#      ours: each task's share >= 60 % of a fair sixth of the machine and
#      >= 70 % of the least EEVDF gave any of them; the policy's counters
#      say tasks were queued in and taken from LLC queues, some across LLCs.
#   b) the same six, CPU 3 taken offline: LLC 1 is no longer whole, so its
#      queue takes nothing and what was in it moves to per-CPU queues
#      (the guard); over 3 s each task's share >= 60 % of a fair sixth of
#      three CPUs and >= 70 % of the least EEVDF gave any of them in the same
#      boot, and the scheduler is not ejected. (Objects, the other way an LLC stops taking tasks
#      into its queue, are every fuse test's.)
#   c) without --llc-queues (the default) the same load as (a) queues
#      nothing in LLC queues.
. /opt/chameleon/guest/lib.sh

FAIR=$(( 4000 / 6 ))
make_cgroup seq
taskset -p 0x1 $$ >/dev/null || fail "cannot pin the test shell"
[ "$(cat /sys/devices/system/cpu/cpu2/cache/index3/id 2>/dev/null)" != \
  "$(cat /sys/devices/system/cpu/cpu0/cache/index3/id 2>/dev/null)" ] ||
	fail "CPUs 0 and 2 share an L3: boot with --sockets 2"

# spawn_six MASK: six CPU-bound spinners on the CPUs of MASK, pids in _pids.
spawn_six() {
	_pids=
	for _i in 1 2 3 4 5 6; do
		taskset "$1" spin $LONG >/dev/null &
		_pids="$_pids $!"
	done
}
# six SHARES_VAR: six spinners on socket 0, then anywhere; their shares
# (per mille of one CPU) over 4 s, in SHARES_VAR.
six() {
	spawn_six 0x3
	usleep 300000
	for _p in $_pids; do taskset -p 0xf "$_p" >/dev/null || fail "cannot widen $_p"; done
	usleep 500000
	shares "$1" 4000 $_pids
	end_tasks $_pids
}
counter() { scx_chameleon status | sed -n "s/^counters: .* $1=\([0-9]*\).*/\1/p"; }

# offline SHARES_VAR: six spinners anywhere, CPU 3 taken offline; their
# shares over 3 s, then CPU 3 back.
FAIR_B=$(( 3000 / 6 ))
offline() {
	spawn_six 0xf
	usleep 500000
	echo 0 >/sys/devices/system/cpu/cpu3/online || fail "cannot take CPU 3 offline"
	usleep 300000
	shares "$1" 3000 $_pids
	echo 1 >/sys/devices/system/cpu/cpu3/online || fail "cannot bring CPU 3 back"
	wait_online 0-3
	end_tasks $_pids
}

six eevdf
least=$(echo $eevdf | tr ' ' '\n' | sort -n | head -1)
ok "EEVDF: six tasks on two LLCs: $eevdf per mille (least $least)"
offline eevdf_b
least_b=$(echo $eevdf_b | tr ' ' '\n' | sort -n | head -1)
ok "EEVDF: six tasks, CPU 3 offline: $eevdf_b per mille (least $least_b)"

# a)
start_agent --llc-queues
grep -q "LLC queues: 2" "$AGENT_LOG" || fail "the agent did not set up two LLC queues: $(grep -m1 'LLC' "$AGENT_LOG")"
six ours
ok "ours: $ours per mille; counters: llc_queued=$(counter llc_queued) llc_taken=$(counter llc_taken) llc_far=$(counter llc_far)"
for s in $ours; do
	[ $(( s * 100 )) -ge $(( FAIR * 60 )) ] || fail "a task got $s per mille, < 60 % of a fair $FAIR ($ours)"
	[ $(( s * 100 )) -ge $(( least * 70 )) ] || fail "a task got $s per mille, < 70 % of EEVDF's least $least ($ours)"
done
[ "$(counter llc_queued)" -gt 0 ] || fail "nothing was queued in an LLC queue"
[ "$(counter llc_taken)" -gt 0 ] || fail "nothing was taken from an LLC queue"
[ "$(counter llc_far)" -gt 0 ] || fail "no CPU took from the other LLC's queue"
[ "$(state)" = enabled ] || fail "scheduler ejected in (a)"

# b)
offline ours_b
ok "CPU 3 offline (LLC 1 no longer whole, its queue moved out): $ours_b per mille (EEVDF: $eevdf_b)"
for s in $ours_b; do
	[ $(( s * 100 )) -ge $(( FAIR_B * 60 )) ] || fail "(b) a task got $s per mille, < 60 % of a fair $FAIR_B ($ours_b)"
	[ $(( s * 100 )) -ge $(( least_b * 70 )) ] || fail "(b) a task got $s per mille, < 70 % of EEVDF's least $least_b ($ours_b)"
done
[ "$(state)" = enabled ] || fail "scheduler ejected in (b)"
stop_agent

# c)
start_agent
grep -q "LLC queues" "$AGENT_LOG" && fail "without --llc-queues the agent still set up LLC queues"
six off
ok "without --llc-queues: $off per mille; llc_queued=$(counter llc_queued)"
[ "$(counter llc_queued)" = 0 ] || fail "without --llc-queues $(counter llc_queued) tasks were queued in LLC queues"
stop_agent
pass
