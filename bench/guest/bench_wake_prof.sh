#!/bin/sh
# Benchmark (not a test): where the CPU time of wakeup_bench goes, kernel
# and BPF included, under EEVDF and each scheduler. Driven by
# bench/wake_profile.
#   bench_wake_prof.sh SCHEDULERS...
# For each (EEVDF first): wakeup_bench (2 message threads x 4 workers) under
# `perf record -a -e cpu-clock` (TCG has no PMU: a timer samples), then the
# symbols with the most samples (JITed BPF programs show as bpf_prog_*):
#   BENCH prof SCHED PCT SYMBOL
#   BENCH bench SCHED wakeup_p99_ns=... rps=...
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_wake_prof
S=${WAKEUP_S:-4}
SPIN=${WAKEUP_SPIN:-10000}
TOP=${PROF_TOP:-40}

prof() {
	perf record -q -a -e cpu-clock -F 4000 -o /tmp/wp.data -- \
		wakeup_bench -m 2 -w 4 -r "$S" -s "$SPIN" >/tmp/wp.out 2>/tmp/wp.err ||
		fail "perf record: $(tail -n 3 /tmp/wp.err | tr '\n' '|')"
	echo "BENCH bench $1 $(cat /tmp/wp.out)"
	perf report -i /tmp/wp.data --no-children --sort sym --stdio 2>/dev/null |
		awk -v s="$1" -v top="$TOP" '/^ *[0-9.]+%/ && n < top { p = $1; sub(/%/, "", p);
			$1 = ""; $2 = ""; sub(/^ +/, ""); printf "BENCH prof %s %s %s\n", s, p, $0; n++ }'
}

prof eevdf
for s in "$@"; do
	start_sched "$s"
	prof "$s"
	stop_sched "$s"
done
echo "PASS $TEST"
