#!/bin/sh
# Benchmark (not a test): where a pinned pipe's time goes, per struct_ops
# program. Driven by bench/pipe_profile.
#   bench_pipe_prof.sh ROUNDS SCHEDULERS...
# Each round times `taskset -c 1 perf bench sched pipe -l PIPE_LOOPS` under
# EEVDF and each scheduler in turn (kernel.bpf_stats_enabled off), in each
# of PIPE_MODES (default "processes threads": perf's default, and -T, two
# threads of one process, whose switches keep the address space); in the
# last round each BPF scheduler's run is repeated with bpf_stats on, and the
# programs' run time and count over it are printed per program and per
# round trip (the loop):
#   BENCH time ROUND SCHED MODE SECONDS
#   BENCH bpf SCHED MODE PROG NS CNT NS_PER_CALL NS_PER_LOOP
#   BENCH bpf SCHED MODE TOTAL NS_PER_LOOP
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_pipe_prof
rounds=${1:-2}
shift
L=${PIPE_LOOPS:-20000}
modes=${PIPE_MODES:-processes threads}
pinned() {
	[ "$1" = threads ] && _t=-T || _t=
	taskset -c 1 perf bench sched pipe $_t -l "$L" 2>&1 | sed -n 's/.*Total time: *\([0-9.]*\).*/\1/p'
}
r=1
while [ $r -le "$rounds" ]; do
	for m in $modes; do
		echo "BENCH time $r eevdf $m $(pinned $m)"
	done
	for s in "$@"; do
		start_sched "$s"
		for m in $modes; do
			echo "BENCH time $r $s $m $(pinned $m)"
			[ $r = "$rounds" ] || continue
			echo 1 >/proc/sys/kernel/bpf_stats_enabled
			bpf_progs >/tmp/b0
			pinned $m >/dev/null
			bpf_progs >/tmp/b1
			echo 0 >/proc/sys/kernel/bpf_stats_enabled
			awk -v s="$s" -v m="$m" -v L="$L" 'NR == FNR { t[$1] = $2; c[$1] = $3; next }
				{ dt = $2 - t[$1]; dc = $3 - c[$1]
				  if (dc > 0) { printf "BENCH bpf %s %s %s %d %d %d %.0f\n", s, m, $1, dt, dc, dt / dc, dt / L; tot += dt } }
				END { printf "BENCH bpf %s %s TOTAL %.0f\n", s, m, tot / L }' /tmp/b0 /tmp/b1
		done
		stop_sched "$s"
	done
	r=$((r + 1))
done
echo "PASS $TEST"
