#!/bin/sh
# Benchmark (not a test): the guest's side of bench/insn_cost/run. The VM
# runs under multi-threaded TCG with the insn_cost plugin loaded
# (tests/vm/run --mttcg --plugin), which counts the instructions of every
# call made from BPF JIT code inside a window that insn_mark opens and
# closes. For each scheduler in turn: attach, bpf_stats on, the JIT's
# symbols and the kernel functions BPF calls from /proc/kallsyms (the JIT
# addresses are this attach's), then per load a window around it, with
# every BPF program's run_cnt read just before the window opens and just
# after it closes (insn_mark run).
#   bench_insn_cost.sh SCHEDULERS...
# INSN_LOADS (default "hackbench pipe"): hackbench = hackbench -p -g G -f 10
# -l INSN_HB_LOOPS (default 2000), G = INSN_HB_GROUPS (default vCPUs / 2, at
# least 1), in messages (G x 10 senders x 10 receivers x loops); pipe =
# perf bench sched pipe -l INSN_PIPE_LOOPS (default 20000), in round trips;
# idle = sleep INSN_IDLE_S (default 5) on the idle machine, in seconds (the
# guard timer's cost at rest); and bench/overhead's rows, for their cost
# in instructions where its times are the emulator's (bench/README.md):
# messaging = perf bench sched messaging -g 4 -l INSN_MSG_LOOPS (default
# 40), in messages (4 x 20 x 20 x loops); hackbench4 = hackbench -g 4 -l
# INSN_HB4_LOOPS (default 60), sockets, in messages (4 x 20 x 20 x loops);
# wakeup = wakeup_bench -m 2 -w 4 -r INSN_WAKEUP_S (default 5) -s 10000,
# in requests completed.
# Printed:
#   INSN header cpus=N kernel=K
#   INSN ksym SCHED ADDR NAME                 (one per symbol kept)
#   INSN window ID SCHED LOAD UNITS UNIT SECONDS
#   INSN runcnt ID TAG NAME RUN_CNT           (the delta over the window)
#   INSN scx_events ID SCHED NAME=DELTA...    (the kernel's sched_ext event
#     counters that moved over the window: a bypass, for one, is time the
#     kernel scheduled without the BPF scheduler, and no callback counted)
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_insn_cost
loads=${INSN_LOADS:-"hackbench pipe"}
cpus=$(nproc)
groups=${INSN_HB_GROUPS:-$((cpus / 2))}
[ "$groups" -ge 1 ] || groups=1
hb_loops=${INSN_HB_LOOPS:-2000}
pipe_loops=${INSN_PIPE_LOOPS:-20000}
idle_s=${INSN_IDLE_S:-5}
msg_loops=${INSN_MSG_LOOPS:-40}
hb4_loops=${INSN_HB4_LOOPS:-60}
wakeup_s=${INSN_WAKEUP_S:-5}
# Our agent's watchdog at the kernel's longest (lib.sh's 5 s is for tests):
# 64 vCPUs on 2 host cores with the plugin starve the watchdog's own work
# (64 vCPUs: "watchdog failed to check in for 5.2s" after the pipe load).
WATCHDOG_MS=${WATCHDOG_MS:-30000}
echo "INSN header cpus=$cpus kernel=$(uname -r)"
# JIT images named in kallsyms, with their addresses shown.
echo 1 >/proc/sys/net/core/bpf_jit_kallsyms || fail "no bpf_jit_kallsyms"
echo 0 >/proc/sys/kernel/kptr_restrict || fail "no kptr_restrict"
echo 0 >/proc/sys/kernel/bpf_stats_enabled || fail "no bpf_stats_enabled"

# The symbols a report needs: everything at or above the JIT base (BPF
# programs, trampolines, modules) and the kernel functions BPF code calls
# (kfuncs, helpers, the trampolines' enter/exit, map and storage code).
ksyms() {
	awk -v s="$1" '{ a = $1; n = $3 }
		a >= "ffffffffc0000000" || n ~ /bpf|scx|^htab_|^array_map|^percpu_|^task_storage|^cgroup_storage|^__rcu|^rcu_read|^migrate_|^_raw_spin|^raw_spin|^queued_spin|^native_queued|^cpumask|^__x86_return|^__x86_indirect|^jiffies/ {
			print "INSN ksym", s, a, n }' /proc/kallsyms
}

w=0
for sched in "$@"; do
	start_sched "$sched"
	# Let the attach settle (first reconcile, the peers' topology pass).
	sleep 2
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	ksyms "$sched"
	for load in $loads; do
		w=$((w + 1))
		[ "$w" -le 63 ] || fail "more than 63 windows"
		case $load in
		hackbench)
			set -- hackbench -p -g "$groups" -f 10 -l "$hb_loops"
			units=$((groups * 100 * hb_loops)) unit=message ;;
		pipe)
			set -- perf bench sched pipe -l "$pipe_loops"
			units=$pipe_loops unit=round_trip ;;
		idle)
			set -- sleep "$idle_s"
			units=$idle_s unit=second ;;
		messaging)
			set -- perf bench sched messaging -g 4 -l "$msg_loops"
			units=$((4 * 400 * msg_loops)) unit=message ;;
		hackbench4)
			set -- hackbench -g 4 -l "$hb4_loops"
			units=$((4 * 400 * hb4_loops)) unit=message ;;
		wakeup)
			set -- wakeup_bench -m 2 -w 4 -r "$wakeup_s" -s 10000
			units= unit=request ;;
		*) fail "unknown load $load" ;;
		esac
		# insn_mark reads every program's run_cnt right before the window
		# opens and right after it closes (tests/vm/tools/insn_mark.c).
		cat /sys/kernel/sched_ext/root/events >/tmp/events.0 2>/dev/null || : >/tmp/events.0
		insn_mark run "$w" /tmp/mark.out "$@" >/tmp/load.out 2>&1 ||
			fail "$sched $load: $(tail -n 3 /tmp/load.out | tr '\n' '|')"
		[ -n "$units" ] || units=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' /tmp/load.out)
		[ -n "$units" ] || fail "$sched $load: no count of its work in its output"
		echo "INSN scx_events $w $sched $(cat /sys/kernel/sched_ext/root/events 2>/dev/null |
			awk 'NR == FNR { v[$1] = $2; next } $2 != v[$1] { printf "%s=%d ", $1, $2 - v[$1] }' /tmp/events.0 -)"
		echo "INSN window $w $sched $load $units $unit $(sed -n "s/^INSN time $w //p" /tmp/mark.out)"
		grep '^INSN runcnt ' /tmp/mark.out
	done
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
	# eevdf: nothing attached, the guest instructions per unit of work
	# without sched_ext (no BPF counted).
	[ "$sched" = eevdf ] || [ "$(state)" = enabled ] ||
		fail "$sched: scheduler '$(state)' after the loads"
	stop_sched "$sched"
	sleep 1
done
pass
