#!/bin/sh
# Benchmark (not a test): what each scheduler's struct_ops programs cost per
# hackbench run, in one VM boot, for scx_chameleon and the peers scx_cosmos
# and scx_bpfland in turn, with the kernel's own scheduler (eevdf: no
# struct_ops, the same hackbench) as the reference for how busy the CPUs
# are. Driven by bench/struct_ops_cost (once per vCPU count: the growth from
# 4 to 32 vCPUs is the question).
#   bench_scale.sh REPS SCHEDULERS...
# For each scheduler: attach, kernel.bpf_stats_enabled=1, REPS hackbench runs
# (HB_ARGS, the same for all), each bracketed by a read of every struct_ops
# program's run_time_ns and run_cnt (bpftool prog show), stats off, detach.
# Printed per run:
#   BENCH hb SCHED REP SECONDS
#   BENCH prog SCHED REP PROG RUN_NS RUN_CNT      (the deltas over that run)
#   BENCH sys SCHED REP IDLE_PERMILLE CTXT        (/proc/stat over that run)
# The idle share says how many vCPUs a scheduler keeps busy for the same
# work. Under single-threaded TCG only one vCPU executes at a time, so a
# program's clock time also counts the turns of the other busy vCPUs that
# fall inside it: the more vCPUs a scheduler keeps busy, the dearer each of
# its calls reads. Compare per-call costs with that in mind.
# bpf_stats times each program from entry to exit with the clock, so the
# figures include the kfuncs the programs call (the kernel's DSQ work done on
# their behalf) but not bpf_timer callbacks (run outside the stats) nor the
# kernel's own scheduling path around them. TCG inflates every absolute:
# compare schedulers within one boot, and one boot's ratios with another's.
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_scale
reps=$1
shift
scheds=$*
HB_ARGS=${HB_ARGS:-"-g 4 -l 60"}
echo "BENCH header kernel=$(uname -r) cpus=$(nproc) hackbench=[$HB_ARGS] reps=$reps"
echo 0 >/proc/sys/kernel/bpf_stats_enabled || fail "no bpf_stats_enabled"



# "IDLE TOTAL CTXT": jiffies of all CPUs from /proc/stat (idle + iowait;
# every field) and context switches since boot; a run compares two.
cpu_sys() {
	awk '$1 == "cpu" { i = $5 + $6; t = 0; for (k = 2; k <= NF; k++) t += $k }
		$1 == "ctxt" { c = $2 } END { print i, t, c }' /proc/stat
}

for sched in $scheds; do
	start_sched $sched
	# Let the attach settle (the agent's first reconcile, the peers' first
	# topology pass) before the first measured run.
	sleep 2
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	rep=1
	while [ $rep -le "$reps" ]; do
		bpf_progs >/tmp/bpf.before
		[ -s /tmp/bpf.before ] || [ "$sched" = eevdf ] ||
			fail "$sched: no struct_ops programs with stats (bpftool)"
		sys_before=$(cpu_sys)
		# shellcheck disable=SC2086
		v=$(hackbench $HB_ARGS 2>&1 | sed -n 's/^Time: *\([0-9.]*\).*/\1/p' | tail -n 1)
		bpf_progs >/tmp/bpf.after
		sys_after=$(cpu_sys)
		[ -n "$v" ] || fail "$sched: hackbench printed no time"
		echo "BENCH hb $sched $rep $v"
		echo "$sys_before $sys_after" | awk -v s="$sched" -v r="$rep" '{
			printf "BENCH sys %s %s %d %d\n", s, r,
				($5 > $2 ? 1000 * ($4 - $1) / ($5 - $2) : 0), $6 - $3 }'
		awk -v s=$sched -v r=$rep 'NR == FNR { t[$1] = $2; c[$1] = $3; next }
			{ dt = $2 - t[$1]; dc = $3 - c[$1]; if (dc > 0) print "BENCH prog", s, r, $1, dt, dc }' \
			/tmp/bpf.before /tmp/bpf.after
		rep=$((rep + 1))
	done
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
	[ "$sched" = eevdf ] || [ "$(state)" = enabled ] || fail "$sched: scheduler '$(state)' after the runs"
	stop_sched $sched
	# A detach leaves the machine settling (kthreads, RCU): let it.
	sleep 1
done
pass
