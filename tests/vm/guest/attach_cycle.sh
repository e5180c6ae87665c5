#!/bin/sh
# Attach and detach under load, CYCLES times (default 2: one detach by
# SIGTERM, one by kill -9; CYCLES=8 by hand for more): stress-ng on every
# CPU (cpu, fork and context-switch workers: tasks created and exiting while
# the kernel switches every task in and out of sched_ext), a background loop
# churning cgroups (create, move a task in and out, remove), a task tagged
# level 1 that fuses, and spinners. Each cycle the agent attaches, runs until
# the tagged task has fused, then a random 0.2-2 s more (so that the detach
# finds CPUs fused and lent at different moments), and goes: SIGTERM and
# kill -9 in turn (the agent's own exit and the kernel's on the link's
# release).
# Asserted from the kernel's side, each cycle:
#   - attached: state "enabled", root/ops ours, and the kernel has tasks in
#     the ext class (/proc/PID/task/TID/sched "ext.enabled 1": positive
#     control for the check below);
#   - detached: state "disabled", and no thread left in the ext class;
#   - every spinner got CPU time in the cycle (schedstat).
# At the end stress-ng, stopped by SIGINT, reports a successful run (exit 0);
# tests/vm/run fails the run on a kernel WARN, oops, sched_ext error, hung
# task, soft lockup or RCU stall.
# Under multi-threaded TCG (tests/vm/run --mttcg) the vCPUs run at the same
# instant, so the enable and disable paths race real forks, exits, cgroup
# moves and fuses: that is where this test is meant to run.
. /opt/chameleon/guest/lib.sh

cycles=${CYCLES:-2}
ncpu=$(nproc)
# Loading the policy under this load takes tens of seconds of TCG time
# (soak.sh: ~50 s on 4 vCPUs under a heavier load): a liveness bound.
AGENT_START_MS=$(( 120000 * ncpu / 4 ))

# ext_tasks: the threads the kernel has in the ext class now, one line each
# ("comm (pid, #threads: n)"). A thread that exits while read is skipped.
ext_tasks() {
	cat /proc/[0-9]*/task/[0-9]*/sched 2>/dev/null |
		awk '/#threads:/ { who = $0 } $1 == "ext.enabled" && $NF == 1 { print who }'
}
grep -q '^ext\.enabled' /proc/self/sched ||
	fail "no ext.enabled line in /proc/self/sched: this kernel does not say which tasks are in sched_ext"

# No huge-page collapsing, as in soak.sh: khugepaged (nice 19) preempted by
# the fork workers inside an RCU read section under EEVDF, before the first
# attach, stalled RCU for 21 s (scx_enable waits for a grace period).
echo never >/sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true
make_cgroup seq
stress-ng -c "$ncpu" -f "$ncpu" --switch "$ncpu" --timeout 3600 >/tmp/stress.log 2>&1 &
load=$!
spin -g /sys/fs/cgroup/seq 3600 >/dev/null & a=$!
spin 3600 >/dev/null & s1=$!
spin -n 10 3600 >/dev/null & s2=$!
spin -c $(( ncpu - 1 )) 3600 >/dev/null & s3=$!
watched="$a $s1 $s2 $s3"
# Cgroup churn: a short task created in a new cgroup each turn, moved back
# to the root, the cgroup removed.
(
	i=0
	while :; do
		i=$(( i + 1 ))
		d=/sys/fs/cgroup/churn$i
		mkdir $d || exit 1
		usleep 200000 &
		c=$!
		echo $c >$d/cgroup.procs 2>/dev/null
		echo $c >/sys/fs/cgroup/cgroup.procs 2>/dev/null
		wait $c
		rmdir $d || exit 1
	done
) &
churn=$!
ok "load: stress-ng ($ncpu cpu, $ncpu fork, $ncpu switch workers), cgroup churn, a tagged level-1 task, 3 spinners"

rnd() { od -An -N2 -tu2 /dev/urandom | tr -d ' '; }
i=0 terms=0 kills=0
while [ $i -lt "$cycles" ]; do
	i=$(( i + 1 ))
	for p in $watched; do eval "r0_$p=$(run_ns $p)"; done
	# Loading the policy is CPU time the load would take 5 to 1 (31 s an
	# attach at nice 0 under multi-threaded TCG): the agent loads at nice
	# -10, as a service given its CPU would, while the load races the
	# attach all the same.
	START_AGENT_NICE=-10 start_agent --events --tag seq=level:1,tax:0.01
	until_ok 30000 "cycle $i: the tagged task (pid $a) never fused" \
		grep -qE "^event +fuse .*pid=$a " "$AGENT_LOG"
	n=$(ext_tasks | wc -l)
	[ "$n" -gt 0 ] || fail "cycle $i: attached, but no thread in the ext class"
	ms=$(( $(rnd) % 1800 + 200 ))
	usleep $(( ms * 1000 ))
	[ "$(state)" = enabled ] && ops_is_chameleon || fail "cycle $i: state '$(state)', ops '$(ops)' under load"
	if [ $(( i % 2 )) = 1 ]; then
		stop_agent
		terms=$(( terms + 1 )) how=SIGTERM
	else
		kill -9 "$AGENT_PID"
		wait "$AGENT_PID" 2>/dev/null
		wait_state disabled 30000 >/dev/null || fail "cycle $i: state '$(state)' 30 s after kill -9"
		kills=$(( kills + 1 )) how="kill -9"
	fi
	left=$(ext_tasks)
	[ -z "$left" ] || fail "cycle $i: detached ($how), but $(echo "$left" | wc -l) threads still in the ext class: $(echo "$left" | head -n 5 | tr '\n' '|')"
	for p in $watched; do
		eval "r0=\$r0_$p"
		[ "$(run_ns $p)" -gt "$r0" ] || fail "cycle $i: pid $p ($(cat /proc/$p/comm)) got no CPU time in the cycle"
	done
	ok "cycle $i: attached ($n threads in the ext class, the tagged task fused), detached by $how $ms ms later; no thread left in the ext class, every spinner ran"
done
kill -0 $churn 2>/dev/null || fail "the cgroup churn loop stopped"
kill $churn
wait $churn 2>/dev/null
still_running $watched $load
kill -INT $load
wait $load
rc=$?
[ "$rc" = 0 ] && grep -q "successful run completed" /tmp/stress.log ||
	{ tail -n 20 /tmp/stress.log; fail "stress-ng exited $rc without a successful run"; }
end_tasks $watched
ok "$cycles cycles ($terms by SIGTERM, $kills by kill -9) under load; stress-ng completed its run"
pass
