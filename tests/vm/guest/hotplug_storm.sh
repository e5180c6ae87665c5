#!/bin/sh
# Hotplug storm under load: every CPU but 0 goes offline and comes back at
# random, every 100-500 ms, for STORM_S seconds (default 20), while stress-ng
# keeps every CPU busy and a tagged level-1 task fuses (representatives and
# lent CPUs go away under it). The kernel's watchdog ejecting us while a
# hotplug waits for a per-CPU kthread (cpuhp/N, ksoftirqd/N) is what this
# catches. Asserts, from the kernel's side: still enabled and ours after every
# step, the agent alive, at least one offline done (a refused one is counted
# and reported), every CPU online at the end, no stall in the kernel log
# (tests/vm/run fails the run on a sched_ext error), and stress-ng completing
# its run with status 0 (stopped by SIGINT once the checks below are done,
# as attach_cycle.sh stops its own). That the tagged task fuses: fuse events for it during
# the storm, and afterwards, stress-ng still on every CPU, its object's lent
# CPU idling (/proc/stat), which no CPU does while stress-ng can run there
# unless it is lent.
# On a failure the whole agent log is printed: the exit dump is in it.
. /opt/chameleon/guest/lib.sh

storm_s=${STORM_S:-20}
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || fail "needs 2 CPUs, has $ncpu"

storm_fail() {
	echo "--- full agent log ---"
	cat "$AGENT_LOG"
	echo "--- kernel log (tail) ---"
	dmesg | tail -n 60
	# sched_ext's own dump (SysRq-D, into the sched_ext_dump tracepoint):
	# what each CPU runs now and our state (roles, queues), for a failure
	# whose state lasts, e.g. a lent CPU kept busy.
	_T=/sys/kernel/tracing
	{ [ -d $_T/events ] || mount -t tracefs nodev $_T; } 2>/dev/null &&
		echo 1 >$_T/events/sched_ext/sched_ext_dump/enable 2>/dev/null && : >$_T/trace &&
		echo D >/proc/sysrq-trigger && usleep 500000 &&
		{ echo "--- SysRq-D ---"; grep -v '^#' $_T/trace | sed 's/.*sched_ext_dump: //' | head -n 400; }
	fail "$@"
}

make_cgroup storm
scx_chameleon tag storm --level 1 --tax 1 >/dev/null || fail "cannot tag storm"
start_agent --events

stress-ng --cpu "$ncpu" --timeout $(( storm_s + 30 )) >/tmp/stress.log 2>&1 &
load=$!
spin -g /sys/fs/cgroup/storm $(( storm_s + 90 )) >/dev/null &
tagged=$!

# A pseudo-random stream from the kernel (busybox has no $RANDOM in every build).
rnd() { od -An -N2 -tu2 /dev/urandom | tr -d ' '; }

end=$(( $(now_ms) + storm_s * 1000 ))
steps=0 offs=0 refused=0
while [ "$(now_ms)" -lt "$end" ]; do
	cpu=$(( $(rnd) % (ncpu - 1) + 1 ))
	f=/sys/devices/system/cpu/cpu$cpu/online
	if [ "$(cat $f)" = 1 ]; then
		if echo 0 >"$f" 2>/dev/null; then offs=$(( offs + 1 )); else refused=$(( refused + 1 )); fi
	else
		echo 1 >"$f" || storm_fail "cannot online cpu$cpu"
	fi
	steps=$(( steps + 1 ))
	usleep $(( ($(rnd) % 400 + 100) * 1000 ))
	[ "$(state)" = enabled ] || storm_fail "state '$(state)' after step $steps (cpu$cpu)"
	agent_alive || storm_fail "agent exited after step $steps"
done
for f in /sys/devices/system/cpu/cpu[1-9]*/online; do
	[ "$(cat "$f")" = 1 ] || echo 1 >"$f" || storm_fail "cannot bring back ${f%/online}"
done
ok "storm: $steps steps, $offs CPUs offlined ($refused offlines refused by the kernel), over ${storm_s} s under load"
[ "$offs" -gt 0 ] || storm_fail "no offline succeeded in $steps steps ($refused refused): no storm happened"
[ "$(state)" = enabled ] || storm_fail "state '$(state)' after the storm"
ops_is_chameleon || storm_fail "root/ops '$(ops)' after the storm"
[ "$(grep -c . /sys/devices/system/cpu/online)" = 1 ] &&
	[ "$(cat /sys/devices/system/cpu/online)" = "0-$(( ncpu - 1 ))" ] ||
	storm_fail "CPUs online at the end: $(cat /sys/devices/system/cpu/online)"
dmesg | grep -E "failed to run for|hung_task|rcu.*stall|soft lockup" &&
	storm_fail "the kernel log has a stall"
storm_fuses=$(grep -c "^event  *fuse .*pid=$tagged " "$AGENT_LOG")
ok "the tagged task (pid $tagged) fused $storm_fuses times during the storm (events)"
[ "$storm_fuses" -gt 0 ] || storm_fail "the tagged task never fused during the storm"
# The kernel's side, every CPU back and stress-ng still running everywhere.
kill -0 "$load" 2>/dev/null || storm_fail "stress-ng ended before the fuse check (timeout $(( storm_s + 30 )) s)"
# (storm_fail's diagnostics, so not until_ok)
t0=$(now_ms)
until has_pair $tagged; do
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || storm_fail "the tagged task has no level-1 object 10 s after the storm: [$(object $tagged)]"
	usleep 100000
done
lent=$PAIR_LENT
shares k 2000 "$tagged" "cpu$lent"
set -- $k
ok "after the storm: pid $tagged on [$PAIR_REP, $PAIR_LENT] ran $1 ‰ of 2 s; its lent CPU $lent idled $2 ‰ with stress-ng runnable on every CPU"
[ "$2" -ge 100 ] || storm_fail "CPU $lent idled $2 ‰ with stress-ng runnable there: the object is not fused in the kernel's accounting"
still_running "$tagged"
# Its run ends here, as at its timeout (which only bounds it: the checks
# above need it running): SIGINT, and it reports as a timed run does. Waiting
# out the timeout instead idled ~25 s of every run.
kill -INT "$load"
wait "$load"
rc=$?
[ "$rc" = 0 ] || { tail -n 20 /tmp/stress.log; storm_fail "stress-ng exited $rc"; }
grep -q "successful run completed" /tmp/stress.log || { tail -n 20 /tmp/stress.log; storm_fail "stress-ng did not complete its run"; }
ok "stress-ng completed its run (status 0)"
end_tasks "$tagged"
stop_agent
n_off=$(count_events cpu_offline)
[ "$n_off" -ge "$offs" ] || fail "agent saw $n_off cpu_offline events, $offs offlines done"
ok "agent saw $n_off cpu_offline events for $offs offlines"
pass
