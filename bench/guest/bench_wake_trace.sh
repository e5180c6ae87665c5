#!/bin/sh
# Benchmark (not a test): where a wakeup's latency goes, from the kernel's
# own tracepoints. Driven by bench/wake_trace.
#   bench_wake_trace.sh ROUNDS SCHEDULERS...
# Each round runs wakeup_bench (2 message threads x 4 workers, as
# bench/overhead) under EEVDF and each scheduler in turn, traced with
# `perf record` (sched_waking, sched_wakeup, sched_switch). Every
# wakeup of a wakeup_bench thread is matched with its next switch-in and
# sorted by the CPU the wakeup chose (sched_wakeup's target_cpu, after
# select_cpu): was it idle then, and did the task run there or elsewhere.
#   BENCH wake ROUND SCHED CLASS N SHARE_PCT P50_US P99_US MEAN_US
#   BENCH bench ROUND SCHED wakeup_p99_ns=... rps=...
#   BENCH idle ROUND SCHED PCT   (the CPUs' idle share over the run)
#   BENCH switches ROUND SCHED SWITCHES PREEMPTED   (over the traced run)
#   BENCH bpf ROUND SCHED PROG NS_PER_REQUEST CALLS_PER_REQUEST   (untraced
#     run, kernel.bpf_stats_enabled: each program's cost per request)
# CLASS: idle-same, idle-moved, busy-same, busy-moved, all. The tracing
# slows every scheduler alike (TCG); compare within a round only.
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_wake_trace
rounds=${1:-1}
shift
S=${WAKEUP_S:-3}
SPIN=${WAKEUP_SPIN:-10000}

# perf script lines (-F cpu,time,event,trace) -> the classes above.
classify() {
	awk -v r="$1" -v s="$2" '
	function field(key,   i) {
		for (i = 1; i <= NF; i++) if (index($i, key "=") == 1) return substr($i, length(key) + 2)
		return ""
	}
	function add(c, d,   b) {
		b = int(d); if (b > 200000) b = 200000
		h[c, b]++; n[c]++; sum[c] += d; if (b > mx[c]) mx[c] = b
	}
	function pct(c, q,   b, acc, want) {
		want = q * n[c]; acc = 0
		for (b = 0; b <= mx[c]; b++) { acc += h[c, b]; if (acc >= want) return b }
		return mx[c]
	}
	{
		cpu = substr($1, 2, length($1) - 2) + 0	# [002]
		t = $2; sub(/:$/, "", t); t = t * 1000000	# us
		ev = $3
	}
	# waking: the wake begins (the waker, before select_cpu); wakeup: the
	# task is queued on target_cpu (after it). The latency runs from the
	# first, the class by the second.
	ev ~ /sched_waking:$/ {
		if (field("comm") == "wakeup_bench") wk[field("pid")] = t
		next
	}
	ev ~ /sched_wakeup:$/ {
		p = field("pid")
		if (!(p in wk)) next
		tgt = field("target_cpu") + 0
		wt[p] = wk[p]; wtgt[p] = tgt; widle[p] = (cur[tgt] == 0)
		delete wk[p]
		next
	}
	ev ~ /sched_switch:$/ {
		np = field("next_pid")
		nsw++; if (field("prev_state") ~ /^R/) npre++
		# idle time: from a switch to the idle task to the next switch
		if ((cpu in since) && cur[cpu] == 0) idle += t - since[cpu]
		since[cpu] = t; if (!t0) t0 = t; t1 = t; cpus[cpu] = 1
		cur[cpu] = np
		if (!(np in wt)) next
		c = (widle[np] ? "idle" : "busy") "-" (cpu == wtgt[np] ? "same" : "moved")
		add(c, t - wt[np]); add("all", t - wt[np])
		delete wt[np]
	}
	END {
		nc = 0; for (c in cpus) nc++
		printf "BENCH switches %s %s %d %d\n", r, s, nsw, npre
		if (t1 > t0) printf "BENCH idle %s %s %.1f\n", r, s, 100 * idle / (nc * (t1 - t0))
		split("idle-same idle-moved busy-same busy-moved all", cs, " ")
		for (i = 1; i <= 5; i++) {
			c = cs[i]; if (!n[c]) continue
			printf "BENCH wake %s %s %s %d %.1f %d %d %.1f\n", r, s, c, n[c],
				100 * n[c] / n["all"], pct(c, 0.5), pct(c, 0.99), sum[c] / n[c]
		}
	}'
}

traced() {
	perf record -q -a -e sched:sched_waking -e sched:sched_wakeup -e sched:sched_switch \
		-o /tmp/ws.data -- \
		wakeup_bench -m 2 -w 4 -r "$S" -s "$SPIN" >/tmp/ws.out 2>/tmp/ws.err ||
		fail "perf sched record: $(tail -n 3 /tmp/ws.err | tr '\n' '|')"
	echo "BENCH bench $1 $2 $(cat /tmp/ws.out)"
	perf script -i /tmp/ws.data -F cpu,time,event,trace 2>/dev/null | classify "$1" "$2"
	[ "$2" = eevdf ] && return
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	bpf_progs >/tmp/b0
	wakeup_bench -m 2 -w 4 -r "$S" -s "$SPIN" >/tmp/ws.out 2>&1
	bpf_progs >/tmp/b1
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
	echo "BENCH bench-untraced $1 $2 $(cat /tmp/ws.out)"
	nreq=$(sed -n 's/.*rps=\([0-9.]*\).*/\1/p' /tmp/ws.out | awk -v s="$S" '{ printf "%d", $1 * s }')
	awk -v r="$1" -v s="$2" -v N="$nreq" 'NR == FNR { t[$1] = $2; c[$1] = $3; next }
		{ dt = $2 - t[$1]; dc = $3 - c[$1]
		  if (dc > 0 && N > 0) { printf "BENCH bpf %s %s %s %.0f %.2f\n", r, s, $1, dt / N, dc / N; tot += dt } }
		END { if (N > 0) printf "BENCH bpf %s %s TOTAL %.0f 0\n", r, s, tot / N }' /tmp/b0 /tmp/b1
}

r=1
while [ $r -le "$rounds" ]; do
	traced $r eevdf
	for s in "$@"; do
		start_sched "$s"
		traced $r "$s"
		stop_sched "$s"
	done
	r=$((r + 1))
done
echo "PASS $TEST"
