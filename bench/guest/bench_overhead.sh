#!/bin/sh
# Benchmark (not a test): scheduling overhead and wakeup latency against
# EEVDF and the scx peers, in one VM boot, in interleaved rounds. Driven by
# bench/overhead.
#   bench_overhead.sh ROUNDS WORKLOADS SCHEDULERS...
# WORKLOADS: "all", or a comma-separated subset of pipe, pipe-pinned,
# pipe-pinned-threads, messaging, hackbench, switch, wakeup, cyclictest (a quick look at some of
# them). SCHEDULERS from: eevdf chameleon chameleon-tags (a level-1 tag on an
# empty cgroup: tags present but idle), chameleon@OPTION=VALUE (one option
# changed, for an A/B), the peers scx_cosmos scx_bpfland scx_lavd scx_p2dq
# (each with its default flags) and bench/floor's scx_floor scx_floor_vtime
# (the framework's own cost). Each round runs every
# scheduler in turn (the order rotates each round), each through the same
# workloads; every result is printed as
#   BENCH row ROUND SCHED WORKLOAD VALUE UNIT
# ("s", "ns" and "us" lower is better; "ops/s" higher is better). The timed
# rounds run with kernel.bpf_stats_enabled off, as users run: on, it reads the
# clock twice around every BPF program, which EEVDF never pays. A profile pass
# after them runs each BPF scheduler through the workloads once more with it
# on (its times are not rows) and prints the struct_ops programs' run time and count
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
# pipe-pinned-threads: the same ping-pong between two threads of one
# process, so that no switch changes the address space. Under TCG every
# change of CR3 empties the emulated TLB, kernel (global) pages included,
# which a CPU with PGE and PCID never does; each scheduler then pays its
# kernel and BPF pages' refills at every switch of the process row (bench/
# README.md). Threads switch ~3x faster: 3x the loops.
PIPE_T_LOOPS=${PIPE_T_LOOPS:-60000}
MSG_LOOPS=${MSG_LOOPS:-40}
HB_LOOPS=${HB_LOOPS:-60}
SWITCH_S=${SWITCH_S:-4}
# wakeup: wakeup_bench's 2 message threads x 4 workers, no think time.
WAKEUP_S=${WAKEUP_S:-5}
WAKEUP_SPIN=${WAKEUP_SPIN:-10000}
# cyclictest: its run, timer interval and histogram range (us; a sample past
# it counts as an overflow: p99 is then "-"). p99 was 9-23 ms in the first
# runs (TCG, 4 busy vCPUs); cyclictest writes a row per us of the range
# after the run, while the load still runs: 100 ms took ~10 s more.
CT_S=${CT_S:-8}
CT_INTERVAL=${CT_INTERVAL:-1000}
CT_HIST=${CT_HIST:-50000}
ncpu=$(nproc)

echo 0 >/proc/sys/kernel/bpf_stats_enabled || fail "no bpf_stats_enabled"


# seconds from perf's "Total time: X [sec]" / hackbench's "Time: X"
total_time() { sed -n 's/.*Total time: *\([0-9.]*\).*/\1/p; s/^Time: *\([0-9.]*\).*/\1/p' | tail -n 1; }

row() {
	echo "BENCH ${profile:+prof}${profile:-row} $round $sched $1 $2 $3"
	sys_after "$1"
}

# The kernel's own account of each workload, read around it (not rows: no
# ratio is held to them): rescheduling and function-call IPIs sent
# (/proc/interrupts RES, CAL), context switches and the idle share of CPU
# time (/proc/stat), so that a difference in time can be told apart as more
# switches, more cross-CPU wakeups or more idle vCPUs.
#   BENCH sys ROUND SCHED WORKLOAD RES CAL CTXT IDLE_PERMILLE
sys_read() {
	awk '$1 == "RES:" || $1 == "CAL:" { n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i
			v[$1] = n }
		END { printf "%d %d ", v["RES:"], v["CAL:"] }' /proc/interrupts
	awk '$1 == "ctxt" { c = $2 } $1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; idle = $5 + $6 }
		END { printf "%d %d %d\n", c, t, idle }' /proc/stat
}
sys_before() { sys_read >/tmp/sys.before; }
sys_after() {
	[ -s /tmp/sys.before ] || return 0
	sys_read | awk -v r="$round" -v s="$sched" -v w="$1" 'NR == FNR { for (i = 1; i <= NF; i++) b[i] = $i; next }
		{ t = $4 - b[4]; printf "BENCH sys %s %s %s %d %d %d %d\n", r, s, w, $1 - b[1], $2 - b[2],
			$3 - b[3], (t > 0 ? 1000 * ($5 - b[5]) / t : 0) }' /tmp/sys.before -
	rm -f /tmp/sys.before
}
profile=
want() { [ "$wanted" = ,all, ] || case $wanted in *,$1,*) return 0 ;; *) return 1 ;; esac; }

# cyclictest's histogram file (-h: a row per us of latency with a count per
# thread, then a summary) -> "P99 MAX" in us, p99 over every thread's samples;
# P99 is "-" when it lies past the histogram (among the overflows). Only the
# lines with a count other than 0 are kept, by grep first: awk over all the
# rows of zeros takes seconds under TCG.
ct_p99_max() {
	grep -E '[[:space:]]0*[1-9]' | awk 'BEGIN { n = 0; max = 0 }
		/^[0-9]/ { k++; lat[k] = $1 + 0; for (i = 2; i <= NF; i++) cnt[k] += $i }
		/^# Total:/ { for (i = 3; i <= NF; i++) n += $i }
		/^# Histogram Overflows:/ { for (i = 4; i <= NF; i++) n += $i }
		/^# Max Latencies:/ { for (i = 4; i <= NF; i++) if ($i + 0 > max) max = $i + 0 }
		END {
			if (!n) { print "- -"; exit }
			rank = int(n * 0.99); if (rank < n * 0.99) rank++
			p = "-"
			for (j = 1; j <= k; j++) { cum += cnt[j]; if (cum >= rank) { p = lat[j]; break } }
			print p, max
		}'
}

workloads() {
	if want pipe; then
		sys_before
		v=$(perf bench sched pipe -l "$PIPE_LOOPS" 2>&1 | total_time)
		row pipe "${v:--}" s
	fi
	if want pipe-pinned; then
		sys_before
		v=$(taskset -c 1 perf bench sched pipe -l "$PIPE_LOOPS" 2>&1 | total_time)
		row pipe-pinned "${v:--}" s
	fi
	if want pipe-pinned-threads; then
		sys_before
		v=$(taskset -c 1 perf bench sched pipe -T -l "$PIPE_T_LOOPS" 2>&1 | total_time)
		row pipe-pinned-threads "${v:--}" s
	fi
	if want messaging; then
		sys_before
		v=$(perf bench sched messaging -g 4 -l "$MSG_LOOPS" 2>&1 | total_time)
		row messaging "${v:--}" s
	fi
	if want hackbench; then
		sys_before
		v=$(hackbench -g 4 -l "$HB_LOOPS" 2>&1 | total_time)
		row hackbench "${v:--}" s
	fi
	# stress-ng's context-switch stressor: switches per second (bogo ops/s, real time).
	if want switch; then
		sys_before
		v=$(stress-ng --switch 2 --timeout "${SWITCH_S}s" --metrics-brief 2>&1 |
			awk '$3 == "switch" || $4 == "switch" { for (i = 1; i <= NF; i++) if ($i == "switch") { print $(i + 5); exit } }')
		row switch "${v:--}" ops/s
	fi
	# wakeup_bench (tests/vm/tools): a message thread's futex wake of a
	# worker -> the worker running, p99 in ns; requests completed per second.
	if want wakeup; then
		sys_before
		wakeup_bench -m 2 -w 4 -r "$WAKEUP_S" -s "$WAKEUP_SPIN" >/tmp/wakeup.out 2>&1
		cat /tmp/wakeup.out
		v=$(sed -n 's/.*wakeup_p99_ns=\([0-9]*\).*/\1/p' /tmp/wakeup.out)
		row wakeup-p99 "${v:--}" ns
		v=$(sed -n 's/.*rps=\([0-9.]*\).*/\1/p' /tmp/wakeup.out)
		row wakeup-rps "${v:--}" ops/s
	fi
	# cyclictest (rt-tests): timer wakeup latency of SCHED_OTHER threads, one
	# per CPU (not pinned: where they wake is the scheduler's choice), while
	# stress-ng keeps every CPU busy; p99 (from its histogram) and max in us.
	if want cyclictest; then
		# cyclictest keeps its live stats in POSIX shared memory.
		[ -d /dev/shm ] || { mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm; }
		stress-ng --cpu "$ncpu" --timeout $((CT_S + 60))s >/dev/null 2>&1 &
		load=$!
		sleep 1
		rm -f /tmp/ct.hist
		cyclictest -q -t --policy=other -i "$CT_INTERVAL" -D "$CT_S" -h "$CT_HIST" \
			--histfile=/tmp/ct.hist --default-system >/tmp/ct.log 2>&1 ||
			echo "cyclictest failed: $(tail -n 3 /tmp/ct.log | tr '\n' '|')"
		kill -INT $load
		wait $load
		v=$(ct_p99_max </tmp/ct.hist 2>/dev/null)
		v=${v:-- -}
		row cyclictest-p99 "${v% *}" us
		row cyclictest-max "${v#* }" us
	fi
}

round=1
while [ $round -le "$rounds" ]; do
	set -- $(sched_order "$round" $scheds)
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
