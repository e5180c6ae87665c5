#!/bin/sh
# Benchmark (not a test): scheduling overhead against EEVDF and two scx peers,
# in one VM boot, in interleaved rounds. Driven by bench/overhead.
#   bench_overhead.sh ROUNDS WORKLOADS SCHEDULERS...
# WORKLOADS: "all", or a comma-separated subset of pipe, pipe-pinned,
# messaging, hackbench, switch (a quick look at one of them). SCHEDULERS from: eevdf chameleon chameleon-tags (a level-1 tag on an empty
# cgroup: tags present but idle) scx_cosmos scx_bpfland. Each round runs every
# scheduler in turn (the order rotates each round), each through the same
# workloads; every result is printed as
#   BENCH row ROUND SCHED WORKLOAD VALUE UNIT
# ("s" lower is better; "ops/s" higher is better). The timed rounds run with
# kernel.bpf_stats_enabled off, as users run: on, it reads the clock twice
# around every BPF program, which EEVDF never pays. A profile pass after them
# runs each BPF scheduler through the workloads once more with it on (its
# times are not rows) and prints the struct_ops programs' run time and count
# over the whole set as
#   BENCH bpf p SCHED PROG RUN_NS RUN_CNT
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_overhead
rounds=$1
wanted=,$2,
shift 2
scheds=$*
echo "BENCH header $(uname -r)"

# The workloads: small enough that a round of five schedulers stays within
# minutes under TCG, large enough (>= ~2 s each) that one tick is noise.
PIPE_LOOPS=${PIPE_LOOPS:-20000}
MSG_LOOPS=${MSG_LOOPS:-40}
HB_LOOPS=${HB_LOOPS:-60}
SWITCH_S=${SWITCH_S:-4}

echo 0 >/proc/sys/kernel/bpf_stats_enabled || fail "no bpf_stats_enabled"
make_cgroup idle

start_sched() {
	case $1 in
	eevdf) return 0 ;;
	chameleon) start_agent ;;
	chameleon-tags) start_agent --tag idle=level:1,tax:1 ;;
	scx_*) start_peer "$1" ;;
	*) fail "unknown scheduler $1" ;;
	esac
}
stop_sched() {
	case $1 in
	eevdf) ;;
	chameleon*) stop_agent ;;
	scx_*) stop_peer "$1" ;;
	esac
}


# seconds from perf's "Total time: X [sec]" / hackbench's "Time: X"
total_time() { sed -n 's/.*Total time: *\([0-9.]*\).*/\1/p; s/^Time: *\([0-9.]*\).*/\1/p' | tail -n 1; }

row() { echo "BENCH ${profile:+prof}${profile:-row} $round $sched $1 $2 $3"; }
profile=
want() { [ "$wanted" = ,all, ] || case $wanted in *,$1,*) return 0 ;; *) return 1 ;; esac; }

workloads() {
	if want pipe; then
		v=$(perf bench sched pipe -l "$PIPE_LOOPS" 2>&1 | total_time)
		row pipe "${v:--}" s
	fi
	if want pipe-pinned; then
		v=$(taskset -c 1 perf bench sched pipe -l "$PIPE_LOOPS" 2>&1 | total_time)
		row pipe-pinned "${v:--}" s
	fi
	if want messaging; then
		v=$(perf bench sched messaging -g 4 -l "$MSG_LOOPS" 2>&1 | total_time)
		row messaging "${v:--}" s
	fi
	if want hackbench; then
		v=$(hackbench -g 4 -l "$HB_LOOPS" 2>&1 | total_time)
		row hackbench "${v:--}" s
	fi
	# stress-ng's context-switch stressor: switches per second (bogo ops/s, real time).
	if want switch; then
		v=$(stress-ng --switch 2 --timeout "${SWITCH_S}s" --metrics-brief 2>&1 |
			awk '$3 == "switch" || $4 == "switch" { for (i = 1; i <= NF; i++) if ($i == "switch") { print $(i + 5); exit } }')
		row switch "${v:--}" ops/s
	fi
}

round=1
while [ $round -le "$rounds" ]; do
	# Rotate the order: no scheduler always runs first (cold) or last.
	set -- $scheds
	k=$(( (round - 1) % $# ))
	while [ $k -gt 0 ]; do
		first=$1; shift; set -- "$@" "$first"; k=$((k - 1))
	done
	for sched in "$@"; do
		start_sched $sched
		workloads
		stop_sched $sched
		# A detach leaves the machine settling (kthreads, RCU): let it.
		sleep 1
	done
	round=$((round + 1))
done

# The profile pass: BPF cost per program, with the stats on.
round=p profile=1
for sched in $scheds; do
	[ $sched = eevdf ] && continue
	start_sched $sched
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	bpf_progs >/tmp/bpf.before
	workloads
	bpf_progs >/tmp/bpf.after
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
	awk -v r=$round -v s=$sched 'NR == FNR { t[$1] = $2; c[$1] = $3; next }
		{ dt = $2 - t[$1]; dc = $3 - c[$1]; if (dc > 0) print "BENCH bpf", r, s, $1, dt, dc }' \
		/tmp/bpf.before /tmp/bpf.after
	stop_sched $sched
	sleep 1
done
pass
